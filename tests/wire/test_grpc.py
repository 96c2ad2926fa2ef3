"""gRPC bodies as a gRPC server reads them (wire/grpc.py): the run of length-prefixed
messages, gRPC-Web's base64, a compressed message by what its data is, and a protobuf
message's length-delimited fields without its schema, nested ones too."""

from __future__ import annotations

import base64
import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.wire import grpc
from disguiselib.wire.grpc import Unreadable, fields, kind, messages, strings, unbase64


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def ld(number: int, data: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def frame(msg: bytes, flag: int = 0) -> bytes:
    return bytes([flag]) + len(msg).to_bytes(4, "big") + msg


# A protobuf message as a tree: each field (number, a string's bytes | a message's fields),
# with varint and fixed fields between them
scalar = st.one_of(
    st.builds(lambda n, v: varint(n << 3) + varint(v), st.integers(1, 2000), st.integers(0, 2**64 - 1)),
    st.builds(lambda n, b: varint(n << 3 | 1) + b, st.integers(1, 2000), st.binary(min_size=8, max_size=8)),
    st.builds(lambda n, b: varint(n << 3 | 5) + b, st.integers(1, 2000), st.binary(min_size=4, max_size=4)),
)
tree = st.recursive(
    st.lists(st.one_of(st.tuples(st.integers(1, 2**29 - 1), st.binary(max_size=40)), scalar), max_size=4),
    lambda inner: st.lists(st.one_of(st.tuples(st.integers(1, 2**29 - 1), inner), scalar), max_size=4),
    max_leaves=20,
)


def encode(t: list) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The message and every string field in it (path, content), in the order written."""
    out, found = b"", []
    for item in t:
        if isinstance(item, bytes):
            out += item
            continue
        number, value = item
        if isinstance(value, list):
            inner, below = encode(value)
            found += [(f"{number}.{p}", c) for p, c in below]
            out += ld(number, inner)
        else:
            found.append((f"{number}", value))
            out += ld(number, value)
    return out, found


def textual(b: bytes) -> bool:
    try:
        return not any(c in b.decode() for c in "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11"
                       "\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f")  # fmt: skip
    except UnicodeDecodeError:
        return False


@given(tree)
def test_every_string_field_is_read_whole_where_it_can_be_text(t: list) -> None:
    """A string field is given whole, with its path, in the order written; one that is no
    text (not UTF-8, a control character in it) and parses as a message may be given as
    that message's fields instead (a receiver reads it as bytes, not text)."""
    msg, found = encode(t)
    got = list(strings(msg))
    it = iter(got)
    for path, content in found:
        if textual(content) or not fields(content):
            assert (path, content) in it, ((path, content), got)
        else:
            assert set(strings(content)) - {("", content)} <= {(p.removeprefix(path + "."), c) for p, c in got}


def test_a_string_that_parses_as_a_message_is_read_whole_an_embedded_message_once() -> None:
    assert fields(b"Acme Corp") == []  # (fixed64 field 8: a message with no string in it)
    assert list(strings(ld(3, b"Acme Corp"))) == [("3", b"Acme Corp")]  # (its tag 0x1a: no text)
    blob = bytes(range(256)) * 4
    part = ld(2, ld(1, b"image/png") + ld(2, blob[:100]))  # Part { inline_data: Blob { mime_type, data } }
    assert list(strings(ld(2, part))) == [("2.2.1", b"image/png"), ("2.2.2", blob[:100])]
    text = ld(1, b"x" * 40)  # "\n(xxx...": a message that reads as text too
    assert list(strings(ld(2, text))) == [("2", text), ("2.1", b"x" * 40)]


@given(st.lists(st.tuples(st.binary(max_size=300), st.booleans()), max_size=5))
def test_a_run_of_messages_compressed_or_not_reads_back(msgs: list[tuple[bytes, bool]]) -> None:
    body = b"".join(frame(gzip.compress(m) if z else m, int(z)) for m, z in msgs)
    assert list(messages(body)) == [(m, False) for m, _ in msgs]


def test_a_compressed_message_is_read_by_what_its_data_is() -> None:
    msg = ld(1, b"Acme Corp")
    for data in (gzip.compress(msg), zlib.compress(msg)):
        assert list(messages(frame(data, 1))) == [(msg, False)]
    for data in (b"\xff\x06\x00\x00sNaPpY" + msg, zlib.compress(msg)[2:], b""):  # snappy; raw deflate
        with pytest.raises(Unreadable, match="coding disguise does not decode"):
            list(messages(frame(data, 1)))
    with pytest.raises(Unreadable, match="does not decode"):
        list(messages(frame(gzip.compress(msg)[:-6], 1)))  # cut
    with pytest.raises(Unreadable, match="expands past 100"):
        list(messages(frame(gzip.compress(b"x" * 1000), 1), limit=100))


def test_a_body_that_is_not_a_whole_run_of_messages_is_unreadable() -> None:
    for body, why in ((frame(b"abc")[:-1], "inside a gRPC message"), (frame(b"abc") + b"\x00\x00", "prefix"),
                      (frame(b"abc", 0x02), "flags 0x02")):  # fmt: skip
        with pytest.raises(Unreadable, match=why):
            list(messages(body))
    assert list(messages(frame(b"k: v\r\n", 0x80))) == [(b"k: v\r\n", True)]  # gRPC-Web's trailers frame


def test_grpc_web_text_is_base64_a_piece_at_a_time() -> None:
    a, b = frame(ld(1, b"one")), frame(ld(1, b"second"))
    assert unbase64(base64.b64encode(a) + b"\r\n" + base64.b64encode(b)) == a + b
    assert unbase64(b"QUJDRA") == b"ABCD"  # the last piece unpadded
    assert unbase64(b"QUI=QUJD") == b"ABABC"  # a padded piece, then another
    for bad in (b"!!!!QUJD", b"QUJD=QUJD", b"QUJDR", b"QUJD=", b"Q==="):
        with pytest.raises(Unreadable, match="not base64"):
            unbase64(bad)


def test_what_is_not_a_message_gives_no_fields() -> None:
    assert fields(b"") == []
    for data in (b"\x00", b"\x0a\x05abc", b"\x08", b"\x0b", b"\x0c", b"\x0e\x00", b"\x0b\x0c\x14"):
        assert fields(data) is None, data  # field 0; cut; varint cut; open group; close without open; type 6; mismatch
    assert fields(b"\x0b\x0a\x01x\x0c") == [(1, 3, 4)]  # a group's fields are the message's


def test_a_message_nested_deeper_than_protobuf_reads_is_unreadable() -> None:
    msg = ld(1, b"x")
    for _ in range(grpc.MAX_DEPTH):
        msg = ld(1, msg)
    with pytest.raises(Unreadable, match="deeper than 100"):
        list(strings(msg))
    ok = ld(1, b"x")
    for _ in range(grpc.MAX_DEPTH - 1):
        ok = ld(1, ok)
    assert list(strings(ok))[-1] == (".".join(["1"] * grpc.MAX_DEPTH), b"x")  # (the innermost string: read)


def test_media_types() -> None:
    assert [kind(t) for t in ("application/grpc", "application/grpc+proto", "application/grpc+json",
                              "application/grpc-web", "application/grpc-web+proto", "application/grpc-web-text",
                              "application/grpc-web-text+proto", "application/x-protobuf", "application/json",
                              "application/grpcx")] == [grpc.GRPC] * 5 + [grpc.WEB_TEXT] * 2 + [grpc.PROTOBUF, None, None]  # fmt: skip


def test_an_error_in_grpcs_shape() -> None:
    """grpc-message is percent-encoded UTF-8 where it is not printable ASCII, and "%"."""
    from urllib.parse import unquote

    h = grpc.error_headers("disguise: 100% refused: Ünïcødé\n(x)", 400)
    assert h["grpc-status"] == "3" and h["grpc-message"] == "disguise: 100%25 refused: %C3%9Cn%C3%AFc%C3%B8d%C3%A9%0A(x)"
    assert unquote(h["grpc-message"]) == "disguise: 100% refused: Ünïcødé\n(x)"
    assert [grpc.error_headers("m", s)["grpc-status"] for s in (403, 500, 503, 418)] == ["7", "13", "14", "2"]
