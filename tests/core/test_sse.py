"""The SSE framer: exact for any fragmentation; no byte is ever lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.core.sse import Framer, parse_event
from disguiselib.errors import StreamError
from strategies import byte_splits


def frame(pieces: list[bytes]) -> list:
    f = Framer()
    events = []
    for p in pieces:
        events.extend(f.feed(p))
    events.extend(f.flush())
    return events


def summary(events) -> list:
    return [(e.name, e.data) for e in events if e.data is not None]


_line_end = st.sampled_from([b"\n", b"\r\n", b"\r"])
_field = st.one_of(
    st.tuples(st.sampled_from([b"data: ", b"data:", b"event: ", b"id: ", b"retry: ", b": "]),
              st.text(alphabet='ab{}":é😀 \t', max_size=8).map(lambda t: t.encode())),
)


@st.composite
def streams(draw) -> bytes:
    out = b""
    for _ in range(draw(st.integers(0, 6))):
        for name, value in draw(st.lists(_field, min_size=1, max_size=4)):
            out += name + value + draw(_line_end)
        out += draw(_line_end)
    return out


@given(streams(), st.data())
def test_chunk_invariance_and_no_byte_lost(stream: bytes, data) -> None:
    pieces = data.draw(byte_splits(stream))
    whole = frame([stream])
    cut = frame(pieces)
    assert b"".join(e.raw for e in cut) == stream
    assert summary(cut) == summary(whole)


@given(streams())
def test_one_byte_at_a_time(stream: bytes) -> None:
    cut = frame([stream[i : i + 1] for i in range(len(stream))])
    assert b"".join(e.raw for e in cut) == stream
    assert summary(cut) == summary(frame([stream]))


def test_line_ends_and_fields() -> None:
    s = b"event: a\r\ndata: 1\r\ndata:2\r\n\r\n: comment\rdata: x\r\rdata: y\n\n"
    assert summary(frame([s])) == [("a", "1\n2"), (None, "x"), (None, "y")]


def test_utf8_split_across_reads() -> None:
    s = 'data: {"t":"é😀"}\n\n'.encode()
    for i in range(1, len(s)):
        assert summary(frame([s[:i], s[i:]])) == [(None, '{"t":"é😀"}')]


def test_with_data_keeps_other_lines() -> None:
    ev = parse_event(b"event: x\ndata: old\n\n")
    assert ev.with_data("new") == b"event: x\ndata: new\n\n"
    ev = parse_event(b"id: 7\r\nevent: x\r\ndata: old\r\n\r\n")
    assert ev.with_data("new") == b"id: 7\r\nevent: x\r\ndata: new\r\n\r\n"
    ev = parse_event(b"data: a\ndata: b\n\n")
    assert parse_event(ev.with_data("c\nd")).data == "c\nd"


def test_event_over_limit_is_an_error_not_a_truncation() -> None:
    f = Framer(max_event_bytes=100)
    f.feed(b"data: " + b"x" * 50)
    try:
        f.feed(b"x" * 100)
    except StreamError as e:
        assert "exceeds 100 bytes" in str(e)
    else:
        raise AssertionError("no error")


def test_unterminated_last_event_is_passed_on() -> None:
    events = frame([b"data: 1\n\ndata: [DONE]"])
    assert b"".join(e.raw for e in events) == b"data: 1\n\ndata: [DONE]"
    assert summary(events)[-1] == (None, "[DONE]")


def test_a_changed_event_that_came_with_several_data_lines_keeps_its_blank_line() -> None:
    """with_data of an event whose data spans several `data:` lines rebuilds its lines;
    it still ends with the blank line that ends an event, so the event after it stays an
    event of its own (and the other fields stay)."""
    for raw in (b"data: a\ndata: b\n\n", b"event: x\r\nid: 3\r\ndata: a\r\ndata: b\r\n\r\n", b"data:a\rdata:b\r\r"):
        ev = parse_event(raw)
        assert ev.span is None and ev.data == "a\nb"
        out = ev.with_data("c\nd")
        assert out.endswith(b"\n\n"), out
        after = b"data: next\n\n"
        evs = frame([out + after])
        assert [(e.name, e.data) for e in evs] == [(ev.name, "c\nd"), (None, "next")]
        one = frame([ev.with_data("single") + after])
        assert [e.data for e in one] == ["single", "next"]
