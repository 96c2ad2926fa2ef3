"""The AWS event-stream codec: the encoder checked against botocore's decoder, the
reader on real recorded Bedrock streams cut at random, every corruption refused."""

from __future__ import annotations

import struct
from pathlib import Path
from zlib import crc32

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.errors import StreamError
from disguiselib.wire import eventstream
from strategies import byte_splits

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "bedrock"
RECORDED = sorted(FIX.glob("*.eventstream"))

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda s: len(s.encode()) <= 255
)
_values = st.one_of(st.text(st.characters(codec="utf-8"), max_size=40), st.binary(max_size=40))
_headers = st.dictionaries(_names, _values, max_size=6).map(lambda d: list(d.items()))


@given(_headers, st.binary(max_size=3000))
def test_encoder_against_botocores_decoder(headers, payload) -> None:
    frame = eventstream.encode(headers, payload)
    buf = EventStreamBuffer()
    buf.add_data(frame)
    msg = next(buf)
    assert msg.payload == payload
    assert msg.headers == dict(headers)
    assert msg.prelude.total_length == len(frame)
    # and the reader here gives back the same bytes and values
    (fr,) = eventstream.Decoder().feed(frame)
    assert fr.raw == frame and fr.payload == payload and fr.headers == dict(headers)
    assert eventstream.reframe(fr.header_block, payload) == frame


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_recorded_streams_reframe_byte_identical(path: Path) -> None:
    body = path.read_bytes()
    d = eventstream.Decoder()
    frames = d.feed(body)
    d.end()
    assert b"".join(f.raw for f in frames) == body
    assert all(eventstream.reframe(f.header_block, f.payload) == f.raw for f in frames)
    assert all(f.message_type == "event" for f in frames)


@given(st.sampled_from(RECORDED), st.data())
def test_any_fragmentation_gives_the_same_frames(path: Path, data) -> None:
    body = path.read_bytes()
    d = eventstream.Decoder()
    frames = [f for piece in data.draw(byte_splits(body, 60)) for f in d.feed(piece)]
    d.end()
    assert [f.raw for f in frames] == [f.raw for f in eventstream.Decoder().feed(body)]


def test_every_single_byte_flip_is_refused_or_changes_nothing_silently() -> None:
    """A flipped bit anywhere in a recorded frame: the reader refuses the frame (a
    checksum) rather than hand on bytes that differ from what was sent."""
    frame = RECORDED[0].read_bytes()
    first = eventstream.Decoder().feed(frame)[0].raw
    for i in range(len(first)):
        bad = bytearray(first)
        bad[i] ^= 0x40
        d = eventstream.Decoder()
        with pytest.raises(StreamError):
            d.feed(bytes(bad))
            d.end()


def test_a_body_cut_inside_a_frame_is_an_error() -> None:
    body = RECORDED[0].read_bytes()
    d = eventstream.Decoder()
    d.feed(body[:-5])
    with pytest.raises(StreamError, match="ends inside a frame"):
        d.end()


def test_impossible_lengths_with_a_valid_prelude_checksum() -> None:
    prelude = struct.pack(">II", 10, 0)  # shorter than a prelude and a checksum
    with pytest.raises(StreamError, match="impossible lengths"):
        eventstream.Decoder().feed(prelude + struct.pack(">I", crc32(prelude)))
    huge = struct.pack(">II", eventstream.MAX_FRAME_BYTES + 1, 0)
    with pytest.raises(StreamError, match="exceeds"):
        eventstream.Decoder().feed(huge + struct.pack(">I", crc32(huge)))


def test_a_broken_reader_stays_broken() -> None:
    d = eventstream.Decoder()
    with pytest.raises(StreamError):
        d.feed(b"\x00" * 16)
    with pytest.raises(StreamError):
        d.feed(RECORDED[0].read_bytes())


def test_a_corrupt_length_is_refused_at_once_not_waited_for() -> None:
    """The prelude checksum is checked before its length is believed: a flipped bit in
    the total length would otherwise make the reader wait for bytes that never come."""
    frame = bytearray(eventstream.Decoder().feed(RECORDED[0].read_bytes())[0].raw)
    frame[1] ^= 0x10  # total length + 1 MiB
    with pytest.raises(StreamError, match="prelude checksum"):
        eventstream.Decoder().feed(bytes(frame))


def test_a_known_header_block_still_has_its_checksum_checked() -> None:
    """Frames whose header bytes were read before skip botocore's header parse, never
    the message checksum: a flipped bit in any later frame is refused."""
    frames = eventstream.Decoder().feed(RECORDED[0].read_bytes())
    assert len({f.header_block for f in frames}) < len(frames)  # header blocks repeat
    for k in range(1, len(frames)):
        for i in (12, len(frames[k].raw) // 2, len(frames[k].raw) - 5):  # a header, the payload, the CRC
            bad = bytearray(frames[k].raw)
            bad[i] ^= 0x02
            d = eventstream.Decoder()
            with pytest.raises(StreamError, match="checksum"):
                d.feed(b"".join(f.raw for f in frames[:k]) + bytes(bad))


# -- rewriting string headers ------------------------------------------------------------------

# One header of each type botocore reads, as raw bytes (name, type byte, value).
_TYPED = st.one_of(
    st.sampled_from([(0, b""), (1, b"")]),
    st.tuples(st.just(2), st.binary(min_size=1, max_size=1)),
    st.tuples(st.just(3), st.binary(min_size=2, max_size=2)),
    st.tuples(st.just(4), st.binary(min_size=4, max_size=4)),
    st.tuples(st.just(5), st.binary(min_size=8, max_size=8)),
    st.tuples(st.just(8), st.binary(min_size=8, max_size=8)),
    st.tuples(st.just(9), st.binary(min_size=16, max_size=16)),
    st.tuples(st.just(6), st.binary(max_size=30).map(lambda b: struct.pack(">H", len(b)) + b)),
    st.tuples(st.just(7), st.text(st.characters(codec="utf-8"), max_size=30).map(
        lambda s: struct.pack(">H", len(s.encode())) + s.encode())),
)  # fmt: skip
_NAMES = st.sampled_from([":error-message", ":error-code", ":message-type", "x", "ünï"])


def _block(headers: list[tuple[str, tuple[int, bytes]]]) -> bytes:
    return b"".join(bytes([len(n.encode())]) + n.encode() + bytes([t]) + v for n, (t, v) in headers)


@given(st.lists(st.tuples(_NAMES, _TYPED), max_size=8, unique_by=lambda h: h[0]), st.text(max_size=20))
def test_rewrite_strings_changes_the_named_string_headers_only(headers, suffix) -> None:
    """Any mix of header types: the named string headers get fn's value, every other
    header botocore reads as before, and the frame passes botocore's checks."""
    block = _block(headers)
    names = frozenset({":error-message", "ünï"})
    new = eventstream.rewrite_strings(block, names, lambda v: v.upper() + suffix)
    before = _botocore(eventstream.reframe(block, b"{}")).headers
    after = _botocore(eventstream.reframe(new, b"{}")).headers
    types = {n: t for n, (t, _) in headers}
    assert after == {k: v.upper() + suffix if k in names and types[k] == 7 else v for k, v in before.items()}
    if after == before:
        assert new is block  # nothing changed: the very bytes


def _botocore(frame: bytes):
    buf = EventStreamBuffer()
    buf.add_data(frame)
    return next(buf)


def test_rewrite_strings_refuses_a_value_too_long_for_a_header() -> None:
    block = eventstream.headers_block([(":error-message", "x")])
    with pytest.raises(StreamError, match="':error-message'.*65535"):
        eventstream.rewrite_strings(block, frozenset({":error-message"}), lambda v: v * 70000)


def test_botocore_is_imported_when_a_frame_is_first_read_and_its_absence_fails_closed(monkeypatch) -> None:
    """botocore is loaded when the first frame's headers are read, not with the module (a
    proxy that never sees a Bedrock stream does not hold it); where it cannot be imported
    the reader raises StreamError naming it, and stays broken."""
    import subprocess
    import sys

    code = ("import sys; from disguiselib.wire import eventstream; print('botocore' in sys.modules); "
            "eventstream.Decoder().feed(eventstream.encode([(':event-type', 'x')], b'{}')); print('botocore' in sys.modules)")  # fmt: skip
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(Path(eventstream.__file__).parents[2])}).stdout.split()  # fmt: skip
    assert got == ["False", "True"]
    monkeypatch.setattr(eventstream, "_BOTOCORE", None)
    monkeypatch.setitem(sys.modules, "botocore.eventstream", None)  # import fails
    d = eventstream.Decoder()
    with pytest.raises(StreamError, match="botocore does not import"):
        d.feed(eventstream.encode([(":event-type", "x")], b"{}"))
    with pytest.raises(StreamError):
        d.feed(b"")
