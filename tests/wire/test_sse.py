"""The SSE framer: exact for any fragmentation; no byte is ever lost."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.errors import StreamError
from disguiselib.wire.sse import Framer, Shape, is_json_type, parse_event, sniff
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


# -- one event against the spec, in the plainest code -------------------------------------

_LINES = re.compile(r"\r\n|\r|\n")


def ref_event(text: str) -> tuple[str | None, str | None]:
    """(event name, data) of one event's text by the WHATWG rules: a line starting with
    `:` is a comment; `field:value` (one leading space of value dropped), a line without
    a colon is the field with an empty value; data lines joined with LF."""
    name, data = None, []
    for line in _LINES.split(text):
        if not line or line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return name, ("\n".join(data) if data else None)


_any_field = st.sampled_from(["data", "data", "event", "id", "retry", "", "dat", "datas", "Data", " data", "data "])
_value = st.text(alphabet=": ab\té{}\"", max_size=6)


@st.composite
def one_event(draw) -> str:
    out = ""
    for _ in range(draw(st.integers(1, 5))):
        field = draw(_any_field)
        sep = draw(st.sampled_from([":", ": ", ":  ", ""]))
        out += (":" + draw(_value) if field == "" else field + sep + draw(_value)) + draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return out + draw(st.sampled_from(["\n", "\r\n", "\r", ""]))


@given(one_event())
@example("data\n\n")
@example("data:a:b\n\n")
@example(":comment\ndata: x\n\n")
@example("event\ndata: y\n\n")
@example("data: x")
@example("data\n\n")
@example("event: e\ndata: a\rb\n\n")
@example("data: a\rb\n\n")
@example("x\ndata: y\n\n")
def test_parse_event_is_the_spec(text: str) -> None:
    ev = parse_event(text.encode())
    assert (ev.name, ev.data) == ref_event(text)
    assert ev.text == text and not ev.bad
    data_lines = [ln for ln in _LINES.split(text) if ln == "data" or ln.startswith("data:")]
    assert (ev.span is not None) == (data_lines[:1] != ["data"] and len(data_lines) == 1)  # its value sits there
    if ev.span is not None:
        a, b = ev.span
        assert text[a:b] == ev.data
    if ev.data is not None:
        for value in ("n:é\nw", "plain"):
            new = parse_event(ev.with_data(value))
            assert (new.name, new.data) == (ev.name, value)


def test_the_fast_paths_and_the_general_path_agree() -> None:
    for text in ("event: e\ndata: {\"a\": 1}\n\n", "data: {\"a\": 1}\n\n", "event: e\ndata: x\ndata: y\n\n",
                 "event: e\r\ndata: x\r\n\r\n", "data: a\nid: 1\n\n", "event: e\ndata: x\n"):  # fmt: skip
        ev = parse_event(text.encode())
        assert (ev.name, ev.data) == ref_event(text), text
    ev = parse_event(b"event: e\ndata: x\n\n")
    assert ev.span == (15, 16) and ev.with_data("yz") == b"event: e\ndata: yz\n\n"


def test_an_event_that_is_not_utf8_is_bad_and_keeps_its_bytes() -> None:
    ev = parse_event(b"data: \xff\n\n")
    assert ev.bad and ev.data is None and ev.raw == b"data: \xff\n\n"


# -- sniff: the one place that tells a stream from a whole body ----------------------------


@pytest.mark.parametrize(
    ("head", "ctype", "final", "array", "want"),
    [
        (b"data: x", "", False, False, True), (b"event: e", "", False, False, True), (b"id: 1", "", False, False, True),
        (b"retry: 5", "", False, False, True), (b": ping", "", False, False, True), (b"data\n", "", False, False, True),
        (b"data\r", "", False, False, True), (b"\n\ndata: x", "", False, False, True),
        (b"\xef\xbb\xbfdata: x", "", False, False, True), (b"  \t\r\n{", "text/event-stream", False, False, False),
        (b"[1]", "", False, False, False), (b"[{", "", False, True, True), (b"{", "", False, True, False),
        (b"d", "", False, False, None), (b"dat", "", False, False, None), (b"eve", "", False, False, None),
        (b"dat", "", True, False, False), (b"dat", "text/event-stream", True, False, True),
        (b"", "", False, False, None), (b"   ", "", False, False, None), (b"   ", "", True, False, False),
        (b"   ", "TEXT/EVENT-STREAM; charset=utf-8", True, False, True), (b" " * 65, "", False, False, False),
        (b" " * 64, "", False, False, None), (b"hello", "", False, False, False),
        (b"hello", "text/event-stream", False, False, True), (b"\xef\xbb\xbf", "", False, False, None),
    ],
)  # fmt: skip
def test_sniff(head: bytes, ctype: str, final: bool, array: bool, want: bool | None) -> None:
    assert sniff(head, ctype, final=final, array=array) is want


def test_is_json_type() -> None:
    assert is_json_type("application/json") and is_json_type("Application/JSON; charset=utf-8")
    assert is_json_type("application/problem+json") and not is_json_type("text/event-stream")
    assert not is_json_type("application/jsonl") and not is_json_type("")


def test_framer_cuts_every_kind_of_blank_line_and_passes_stray_line_ends_on() -> None:
    f = Framer()
    assert f.feed_raw(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n\ndata: d") == [
        b"data: a\r\n\r\n", b"data: b\r\r", b"data: c\n\n", b"\n"]  # fmt: skip
    assert f.pending == len(b"data: d") and f.flush_raw() == [b"data: d"] and f.flush_raw() == []
    f = Framer()
    assert f.feed_raw(b"data: a\r") == [] and f.feed_raw(b"\r") == [b"data: a\r\r"]
    assert f.feed_raw(b"\n") == [b"\n"]  # the LF of a CRLF whose CR ended the event: on its own
    f = Framer(max_event_bytes=10)
    assert f.feed_raw(b"data: 0123") == []
    with pytest.raises(StreamError):
        f.feed_raw(b"4")


def test_new_data_with_a_line_break_stays_one_event() -> None:
    """A changed event whose new data holds a line break (a restored original with one,
    in an event that is not JSON) is written as one `data:` line per line: the client
    reads the whole value, and the next event stays separate."""
    for raw in (b"data: [KEY_1]\n\n", b"event: x\r\ndata: [KEY_1]\r\n\r\n", b"data: [KEY_1]"):
        ev = parse_event(raw)
        for new in ("-----BEGIN KEY-----\nabc\n-----END KEY-----", "a\r\nb", "a\rb"):
            out = ev.with_data(new)
            evs = frame([out + b"data: next\n\n"])
            assert [(e.name, e.data) for e in evs] == [(ev.name, new.replace("\r\n", "\n").replace("\r", "\n")),
                                                       (None, "next")], (raw, new)  # fmt: skip


def test_blank_lines_at_an_event_start_are_events_of_their_own_in_the_same_read() -> None:
    for lead in (b"\n", b"\r", b"\r\n"):
        f = Framer()
        assert f.feed_raw(lead + b"data: x\n\n" + lead + b"data: y\n\n") == [
            lead, b"data: x\n\n", lead, b"data: y\n\n"]  # fmt: skip
        assert f.pending == 0


def test_the_label_decides_only_for_text_that_is_neither() -> None:
    assert sniff(b"[1]", "text/event-stream") is False  # JSON, whatever the label
    assert sniff(b"X{", "text/event-stream") is True and sniff(b"X{", "") is False
    assert is_json_type("application/json; charset=utf-8; q=1") and not is_json_type("text/plain; a=application/json")


# -- Framer.whole: linear however an event is cut (issue 27: one 4 MiB event cost 2.8 s) -----


def _reference(pieces: list[bytes]) -> list[bytes]:
    """What whole() gave read by read when it joined and searched the whole unfinished
    event every time (quadratic, but plainly right)."""
    from disguiselib.wire.sse import _cut, last_end

    out, rest = [], b""
    for p in pieces:
        buf = rest + p
        k = last_end(buf) if buf else 0
        if buf and (k < 0 or (k == 0 and buf[0] in (10, 13))):
            _, k = _cut(buf)
        out.append(buf[:k])
        rest = buf[k:]
    return out + [rest]


@given(streams(), st.data())
def test_whole_gives_what_it_gave_when_it_searched_everything(stream: bytes, data) -> None:
    pieces = data.draw(byte_splits(stream))
    f = Framer()
    got = [f.whole(p) for p in pieces] + [b"".join(f.flush_raw())]
    assert got == _reference(pieces)


@given(st.lists(st.sampled_from([b"data: x", b"\n", b"y", b"\n\n", b"\r\n", b"event: e\n"]), max_size=30))
def test_whole_read_by_read_on_line_ends_alone(parts: list[bytes]) -> None:
    f = Framer()
    got = [f.whole(p) for p in parts] + [b"".join(f.flush_raw())]
    assert got == _reference(parts)


def ref_stream(text: str) -> list[tuple[str | None, str | None]]:
    """(event name, data) of every event of a whole stream by the WHATWG rules (lines
    end at CRLF, LF or CR; a blank line dispatches), an unterminated last event passed on
    as the framer does; events without data are not dispatched."""
    events, cur = [], []
    lines = _LINES.split(text)
    for i, line in enumerate(lines):
        if i == len(lines) - 1:  # what follows the last line end
            if line:
                cur.append(line)
        elif line:
            cur.append(line)
        elif cur:
            events.append(ref_event("\n".join(cur)))
            cur = []
    if cur:
        events.append(ref_event("\n".join(cur)))
    return [e for e in events if e[1] is not None]


@given(streams(), st.data())
def test_framing_is_the_spec_for_every_line_end_and_fragmentation(stream: bytes, data) -> None:
    """Random streams with CRLF, CR and LF line ends, cut into random reads: the events
    the framer gives (read by read, both ways it frames) are the spec's for the whole
    stream, and every byte is in exactly one of them."""
    pieces = data.draw(byte_splits(stream))
    want = ref_stream(stream.decode())
    cut = frame(pieces)
    assert b"".join(e.raw for e in cut) == stream
    assert summary(cut) == want
    f = Framer()
    blocks = [f.whole(p) for p in pieces] + [b"".join(f.flush_raw())]
    from disguiselib.wire.sse import split

    raws = [r for b in blocks if b for r in split(b)]
    assert b"".join(raws) == stream
    assert summary(parse_event(r) for r in raws) == want


@pytest.mark.parametrize("sep", [b"\n\n", b"\r\n\r\n", b"\r\r", b"\n\r\n"])
@pytest.mark.parametrize("way", ["whole", "feed"])
def test_each_byte_is_searched_a_bounded_number_of_times_whatever_the_line_ends(
    monkeypatch, sep: bytes, way: str
) -> None:
    """Counting work, not time: a 200 kB event cut into 1 kB reads, CRLF and CR line
    ends included (which used to join and search the whole unfinished event at every
    read: n²). What the framer's searches are handed is a small multiple of the stream."""
    from disguiselib.wire import sse

    seen = [0]
    real_end, real_cut, real_rx = sse.last_end, sse._cut, sse._EVENT_END

    def counting_end(buf: bytes) -> int:
        seen[0] += len(buf)
        return real_end(buf)

    def counting_cut(buf: bytes) -> tuple[list[bytes], int]:
        seen[0] += len(buf)
        return real_cut(buf)

    class CountingRx:
        def search(self, buf: bytes, pos: int = 0):  # type: ignore[no-untyped-def]
            seen[0] += len(buf) - pos
            return real_rx.search(buf, pos)

    monkeypatch.setattr(sse, "last_end", counting_end)
    monkeypatch.setattr(sse, "_cut", counting_cut)
    monkeypatch.setattr(sse, "_EVENT_END", CountingRx())
    line = sep[: len(sep) // 2]
    event = b"event: response.completed" + line + b"data: " + b"x" * 200_000 + sep
    stream = event * 3
    f = Framer()
    pieces = [stream[i : i + 1000] for i in range(0, len(stream), 1000)]
    if way == "whole":
        assert b"".join(f.whole(p) for p in pieces) == stream
    else:
        assert b"".join(r for p in pieces for r in f.feed_raw(p)) == stream
    assert seen[0] <= 6 * len(stream), seen[0]


@pytest.mark.parametrize("sep", [b"\n\n", b"\r\n\r\n"])
def test_whole_looks_at_each_byte_a_bounded_number_of_times(monkeypatch, sep: bytes) -> None:
    """Counting work, not time: what last_end is handed over a long event cut into many
    reads is a small multiple of the event (it was handed the whole unfinished event at
    every read: n²)."""
    from disguiselib.wire import sse

    seen = [0]
    real = sse.last_end

    def counting(buf: bytes) -> int:
        seen[0] += len(buf)
        return real(buf)

    monkeypatch.setattr(sse, "last_end", counting)
    event = b"event: response.completed\ndata: " + b"x" * 200_000 + sep
    stream = event * 3
    f = Framer()
    pieces = [stream[i : i + 1000] for i in range(0, len(stream), 1000)]
    assert b"".join(f.whole(p) for p in pieces) == stream
    if sep == b"\n\n":
        assert seen[0] <= 3 * len(stream), seen[0]


def test_a_body_shape_is_one_of_three_named_states() -> None:
    """sniff's answer as the state a reverser keeps (GeminiStream: undecided until its
    first bytes tell)."""
    assert Shape.of(sniff(b"dat", "")) is Shape.UNDECIDED
    assert Shape.of(sniff(b"data: {}\n\n", "")) is Shape.STREAM
    assert Shape.of(sniff(b'{"a": 1}', "text/event-stream")) is Shape.DOCUMENT
