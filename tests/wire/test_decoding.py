"""Incremental Content-Encoding decoders (wire/decoding.py): every member of a body, fed
in any pieces; a body cut inside a member, data after the end, corrupt data and an
unknown encoding are explicit errors; Decoded drives a reverser through its decoder."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.base.stream import StreamState
from disguiselib.errors import StreamError
from disguiselib.wire.decoding import Decoded, ExpansionError, decode_whole, decoder_for
from strategies import PLACEHOLDERS, RULES, byte_splits

DATA = b"event: x\ndata: " + bytes(range(32, 127)) * 20 + b"\n\n"


def _zstd(data: bytes) -> bytes:
    try:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    except ImportError:
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        return zstd.compress(data)


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data)


ENCODE = {"gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": _deflate, "br": brotli.compress, "zstd": _zstd}
MULTI = ("gzip", "x-gzip", "zstd")  # several members or frames, one after the other


def decode(enc: str, pieces: list[bytes]) -> bytes:
    d = decoder_for(enc)
    assert d is not None
    return b"".join(d.decompress(p) for p in pieces) + d.flush()


@pytest.mark.parametrize("enc", sorted(ENCODE))
@given(data=st.data())
def test_any_pieces_decode_to_the_body(enc: str, data) -> None:
    body = ENCODE[enc](DATA)
    assert decode(enc, data.draw(byte_splits(body, 12))) == DATA


@pytest.mark.parametrize("enc", MULTI)
def test_every_member_of_a_body_is_decoded(enc: str) -> None:
    members = [b"first ", b"second ", b"", b"third"]
    body = b"".join(ENCODE[enc](m) for m in members)
    assert decode(enc, [body]) == b"first second third"
    assert decode(enc, [body[i : i + 1] for i in range(len(body))]) == b"first second third"


@pytest.mark.parametrize("enc", sorted(ENCODE))
def test_a_body_cut_inside_a_member_is_an_error(enc: str) -> None:
    body = ENCODE[enc](DATA)
    d = decoder_for(enc)
    assert d is not None
    d.decompress(body[: len(body) // 2])
    with pytest.raises(StreamError, match="^compressed stream ended before its end marker$"):
        d.flush()
    fresh = decoder_for(enc)
    assert fresh is not None and fresh.flush() == b""  # nothing fed: nothing missing


@pytest.mark.parametrize("enc", ["deflate", "br"])
def test_data_after_the_end_of_a_single_member_stream_is_an_error(enc: str) -> None:
    body = ENCODE[enc](b"one")
    d = decoder_for(enc)
    assert d is not None
    assert d.decompress(body) == b"one"
    with pytest.raises(StreamError, match=f"^data after the end of the {enc} stream$"):
        d.decompress(b"more")


def test_corrupt_data_is_an_error() -> None:
    d = decoder_for("gzip")
    assert d is not None
    with pytest.raises((StreamError, zlib.error)):
        d.decompress(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
    d = decoder_for("gzip")
    assert d is not None
    member = gzip.compress(b"ok")
    with pytest.raises((StreamError, zlib.error)):
        d.decompress(member + b"not gzip at all")


@pytest.mark.parametrize("enc", ["", "identity", " Identity "])
def test_identity_needs_no_decoder(enc: str) -> None:
    assert decoder_for(enc) is None


def test_an_unknown_encoding_is_refused_by_name() -> None:
    with pytest.raises(StreamError, match="'compress'"):
        decoder_for("compress")
    assert decoder_for(" GZIP ") is not None


# -- Decoded: a reverser fed content-encoded bytes -----------------------------------------


BODY = build_stream([("text", ["Zenith Labs and ", "[EMAIL_1]"])])


def decoded(enc: str) -> Decoded:
    d = decoder_for(enc)
    assert d is not None
    return Decoded(AnthropicStream(RULES.restorer(PLACEHOLDERS)), d)


@pytest.mark.parametrize("enc", sorted(ENCODE))
def test_decoded_restores_a_compressed_stream_in_any_pieces(enc: str) -> None:
    body = ENCODE[enc](BODY)
    s = decoded(enc)
    pieces = [s.feed(body[i : i + 7]) for i in range(0, len(body), 7)]
    assert pieces[0] == b""  # a gzip header alone decodes to nothing yet: nothing goes out
    out = b"".join(pieces) + s.flush()
    plain = AnthropicStream(RULES.restorer(PLACEHOLDERS))
    assert out == plain.feed(BODY) + plain.flush()  # exactly what the body restores to, uncompressed
    assert read_stream(out)[0][0]["text"] == "Acme Corp and bob@corp.example.com"
    assert s.state is StreamState.DONE and s.finished
    assert s.events_in == BODY.count(b"\n\n") and s.events_changed >= 1
    assert s.flush() == b"" and s.feed(b"x") == b""  # ended: nothing more


def test_decoded_whole_is_feed_then_flush() -> None:
    s = decoded("gzip")
    out = s.whole(gzip.compress(BODY))
    assert b"Acme Corp" in out and s.state is StreamState.DONE


def test_decoded_says_whether_its_reverser_went_past_its_last_event() -> None:
    """`past_final` is the inner reverser's (the capture asks it at the stream's end)."""
    s = decoded("gzip")
    body = gzip.compress(BODY)
    s.feed(body[:10])
    assert not s.past_final
    s.feed(body[10:])
    assert s.past_final and s.inner.past_final and s.state is StreamState.FINISHING


@pytest.mark.parametrize("enc", ["gzip", "br"])
def test_decoded_cut_or_corrupt_ends_with_the_reversers_error(enc: str) -> None:
    body = ENCODE[enc](BODY)
    s = decoded(enc)
    out = s.feed(body[: len(body) // 2]) + s.flush()
    assert out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].startswith(b"event: error")
    assert s.state is StreamState.FAILED
    s = decoded("deflate")
    out = s.feed(zlib.compress(b"event: x\ndata: {}\n\n") + b"trailing")
    assert b"event: error" in out and b"data after the end" in out and s.state is StreamState.FAILED
    assert s.feed(b"more") == b""


def _unfinished(enc: str, body: bytes) -> bytes:
    """body compressed as a server that flushes every event writes it, without the
    container's end (no gzip trailer, no last brotli block, no zstd frame end)."""
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    if enc == "br":
        c = brotli.Compressor()
        return b"".join(c.process(e) + c.flush() for e in events)
    if enc == "zstd":
        import zstandard

        z = zstandard.ZstdCompressor().compressobj()
        return b"".join(z.compress(e) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) for e in events)
    g = zlib.compressobj(6, zlib.DEFLATED, (16 if enc == "gzip" else 0) + zlib.MAX_WBITS)
    return b"".join(g.compress(e) + g.flush(zlib.Z_SYNC_FLUSH) for e in events)


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
@settings(max_examples=40)
@given(data=st.data())
def test_a_container_left_unfinished_after_the_last_event_ends_cleanly(enc: str, data) -> None:
    """The API's last event came, only the compressed container did not end: the stream
    ends as an uncompressed one cut after its last event does, with nothing after it (an
    error after `message_stop` made the anthropic SDK raise on a complete message). Cut
    before the last event, it still ends with the error, in any pieces."""
    if enc == "zstd":
        pytest.importorskip("zstandard")
    plain = AnthropicStream(RULES.restorer(PLACEHOLDERS))
    expect = plain.feed(BODY) + plain.flush()
    s = decoded(enc)
    out = b"".join(s.feed(p) for p in data.draw(byte_splits(_unfinished(enc, BODY), 12))) + s.flush()
    assert out == expect and s.state is StreamState.DONE and s.flush() == b""
    short = BODY[: BODY.index(b"event: message_stop")]
    s = decoded(enc)
    out = b"".join(s.feed(p) for p in data.draw(byte_splits(_unfinished(enc, short), 12))) + s.flush()
    assert out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].startswith(b"event: error")
    assert b"before its end marker" in out and s.state is StreamState.FAILED


def test_decoded_error_event_and_fail_are_the_reversers() -> None:
    s = decoded("gzip")
    assert s.error_event("x") == s.inner.error_event("x")
    out = s.fail("stop")
    assert b"stop" in out and s.state is StreamState.FAILED and s.fail("again") == b""



@pytest.mark.parametrize(("enc", "name"), [("gzip", "gzip"), ("x-gzip", "gzip"), ("deflate", "deflate"), ("br", "br"),
                                           ("zstd", "zstd")])  # fmt: skip
def test_corrupt_data_is_refused_naming_the_encoding(enc: str, name: str) -> None:
    d = decoder_for(enc)
    assert d is not None
    with pytest.raises(StreamError, match=f"^corrupt {name} stream$"):
        d.decompress(b"\x00\xff" * 40)
    if enc in MULTI:  # a good member, then garbage where the next one should begin
        d = decoder_for(enc)
        assert d is not None
        with pytest.raises(StreamError, match=f"^corrupt {name} stream$"):
            d.decompress(ENCODE[enc](b"ok") + b"\x00\xff" * 40)


# -- what a body may expand to (issue 27: a decompression bomb) -----------------------------

ENCODERS = {"gzip": gzip.compress, "deflate": _deflate, "br": brotli.compress, "zstd": _zstd}


@pytest.mark.parametrize("enc", sorted(ENCODERS))
def test_a_body_may_expand_to_the_limit_and_not_a_byte_more(enc: str) -> None:
    body = bytes(range(256)) * 64 + b"\0" * 50_000
    packed = ENCODERS[enc](body)
    assert decode_whole(packed, enc, len(body)) == body
    with pytest.raises(ExpansionError, match="disguise_decoded_limit"):
        decode_whole(packed, enc, len(body) - 1)


class Counting:
    """A reverser that counts what reaches it and keeps nothing."""

    finished = False
    failure = None

    def __init__(self) -> None:
        self.got = 0
        self.biggest = 0

    def feed(self, data: bytes) -> bytes:
        self.got += len(data)
        self.biggest = max(self.biggest, len(data))
        return b""

    def fail(self, message: str) -> bytes:
        self.failure = message
        self.finished = True
        return b"error: " + message.encode()


@pytest.mark.parametrize("enc", sorted(ENCODERS))
@given(cuts=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=20))
def test_a_streamed_bomb_ends_with_an_error_at_the_limit_however_it_is_cut(enc: str, cuts: list[int]) -> None:
    packed = _BOMBS[enc]
    limit = 4 << 20
    inner = Counting()
    d = Decoded(inner, decoder_for(enc, limit))
    out, i, k = b"", 0, 0
    while i < len(packed) and not inner.finished:
        n = cuts[k % len(cuts)]
        out += d.feed(packed[i : i + n])
        i, k = i + n, k + 1
    assert inner.failure is not None and "disguise_decoded_limit" in inner.failure
    assert out.startswith(b"error: ")
    assert inner.got <= limit  # nothing past the limit reached the reverser


def _zeros(enc: str, n: int) -> bytes:
    return ENCODERS[enc](b"\0" * n)


# 16 MiB of zeros, four times the streamed test's limit (4 MiB): 16 kB as gzip, far less as br. (64 MiB
# was compressed at every import of this module for nothing: decoding stops at the limit;
# brotli alone took 1.2 s of CPU on it, 0.3 s on these.)
_BOMBS = {enc: _zeros(enc, 16 << 20) for enc in ENCODERS}


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_zlib_is_asked_for_a_few_mib_at_a_time(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """zlib joins what one call produced with the GIL held: a whole body decoded off the
    event loop in one call of 64 MiB held the loop 0.1-0.16 s. Every call asks for at
    most a few MiB, and the body comes out whole, several members included."""
    import zlib as z

    from disguiselib.wire import decoding

    sizes: list[int] = []
    real = decoding._zlib

    class Spy:
        def __init__(self, d) -> None:  # type: ignore[no-untyped-def]
            self.d = d

        def decompress(self, data: bytes, cap: int = 0) -> bytes:
            piece = self.d.decompress(data, cap)
            sizes.append(len(piece))
            return piece

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self.d, name)

    monkeypatch.setattr(decoding, "_zlib", lambda wbits: (lambda: Spy(real(wbits)())))
    plain = b"\0" * (20 << 20) + b"tail"
    wbits = 16 + z.MAX_WBITS if encoding == "gzip" else z.MAX_WBITS
    c = z.compressobj(6, z.DEFLATED, wbits)
    body = c.compress(plain) + c.flush()
    if encoding == "gzip":
        body += body  # two members
        plain += plain
    assert decoding.decode_whole(body, encoding, 64 << 20) == plain
    assert max(sizes) <= 4 << 20


@given(data=st.data())
@settings(max_examples=50, deadline=None)
def test_the_standard_librarys_zstd_decodes_a_body_as_zstandards_does(data) -> None:
    """decoding._zstd takes zstandard (a dependency) and falls back on the standard
    library's zstd (mitmproxy 12's backports.zstd, 3.14's compression.zstd): the fallback
    decodes the same frames in any pieces, one after the other, and says a body cut
    inside a frame is one. Skipped where neither imports (mitmproxy 11's Python 3.11)."""
    from unittest import mock

    from disguiselib.wire import decoding

    try:
        stdlib = decoding._stdlib_zstd()
    except ImportError:
        pytest.skip("no compression.zstd or backports.zstd in this Python (mitmproxy 11's environment)")
    members = [DATA, b"", b"second frame"]
    body = b"".join(_zstd(m) for m in members)
    with mock.patch.object(decoding, "_zstd", lambda: stdlib):
        assert decode("zstd", data.draw(byte_splits(body, 12))) == b"".join(members)
        d = decoder_for("zstd")
        assert d is not None
        d.decompress(body[: len(body) // 2])
        with pytest.raises(StreamError, match="^compressed stream ended before its end marker$"):
            d.flush()


# -- what a container carries besides its payload (carries_more) ------------------------------


def _gz(body: bytes, flags: int = 0, fields: bytes = b"") -> bytes:
    """One gzip member written by hand: FLG flags, the optional fields as given."""
    import struct

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\x03" + fields
    if flags & 0x02:  # FHCRC: the header's CRC32, its two low bytes
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    return head + c.compress(body) + c.flush() + struct.pack("<II", zlib.crc32(body), len(body))


def _skippable(data: bytes, n: int = 0) -> bytes:
    import struct

    return struct.pack("<II", 0x184D2A50 + n, len(data)) + data


def test_a_container_that_carries_more_than_its_payload_is_told() -> None:
    """E4 (stop 65): `gzip -c Acme.json` stores the name, a comment or an extra field
    can hold anything, a zstd skippable frame too; none of it is in the decoded body
    the guard checks. Brotli's metadata meta-blocks cannot be found without decoding
    them: every brotli body is said to carry more."""
    import struct

    import zstandard

    from disguiselib.wire.decoding import carries_more

    body = b'{"messages": [{"role": "user", "content": "hi there"}]}' * 40
    zs = zstandard.ZstdCompressor()
    plain = {
        "gzip": [gzip.compress(body), gzip.compress(body) + gzip.compress(b""), _gz(body, 0x02),
                 _gz(body, 0x01)],  # FHCRC; FTEXT
        "x-gzip": [gzip.compress(body)],
        "zstd": [zs.compress(body), zs.compress(body) * 2,
                 zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress(body),
                 zstandard.ZstdCompressor(level=19).compress(bytes(range(256)) * 400 + b"a" * 100_000)],
        "deflate": [zlib.compress(body)], "identity": [body], "": [body],
    }  # fmt: skip
    more = {
        "gzip": [_gz(body, 0x08, b"Acme Corp.json\0"), _gz(body, 0x10, b"Acme Corp\0"),
                 _gz(body, 0x04, struct.pack("<H", 13) + b"AC\x09\0Acme Corp"),
                 gzip.compress(body) + _gz(b"", 0x10, b"note\0")],  # a later member's comment
        "zstd": [_skippable(b"Acme Corp") + zs.compress(body), zs.compress(body) + _skippable(b"Acme Corp", 15)],
        "br": [brotli.compress(body)],
    }  # fmt: skip
    for enc, raws in plain.items():
        for raw in raws:
            decode_whole(raw, enc)  # a body that decodes (what carries_more is asked of)
            assert not carries_more(raw, enc), enc
    for enc, raws in more.items():
        for raw in raws:
            assert decode_whole(raw, enc) == body  # the decoder reads past it: only the payload
            assert carries_more(raw, enc), enc
    assert carries_more(b"\x1f\x8b\x08\x00", "gzip")  # what the walk cannot place: more
