"""Bytes -> SSE events (each keeping its exact raw bytes), sans I/O.

Framing follows the WHATWG EventSource spec: "Lines must be separated by either a
U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair, a single U+000A LINE
FEED (LF) character, or a single U+000D CARRIAGE RETURN (CR) character." An event ends
at a blank line. Events are cut from a byte buffer, so a UTF-8 character split across
reads is whole by the time an event is decoded. Nothing is ever dropped: every input
byte belongs to exactly one `Event.raw`.
"""

from __future__ import annotations

import bisect
import enum
import re
from dataclasses import dataclass

from ..errors import StreamError

# An event's largest size. Web-search result blocks run to tens of KB; a whole-message
# snapshot (the last event of a Responses stream) can reach a few MB with long outputs.
# Above this the stream ends with an explicit error instead of buffering without bound.
MAX_EVENT_BYTES = 16 * 1024 * 1024

# A line end followed by a line end: a blank line, i.e. the end of an event. The first
# CR must not be the start of a CRLF pair. A final lone CR at the end of the buffer
# ends the event at once; if an LF follows in the next read it is passed on by itself.
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
_LINE = re.compile(r"\r\n|\r|\n")


@dataclass(slots=True)
class Event:
    raw: bytes  # exactly the bytes that arrived, terminating blank line included
    name: str | None = None  # the `event:` field
    data: str | None = None  # the `data:` lines joined with "\n"; None without any
    text: str = ""  # raw decoded as UTF-8
    span: tuple[int, int] | None = None  # where data sits in text (one data line only)
    bad: bool = False  # raw is not UTF-8: nothing in it can be read (or passed in order)

    def with_data(self, data: str) -> bytes:
        """This event's bytes with its data replaced and every other line kept. Data with
        a line break (a restored original can hold one) becomes one `data:` line per line."""
        if self.span is not None and "\n" not in data and "\r" not in data:
            a, b = self.span
            return (self.text[:a] + data + self.text[b:]).encode("utf-8")
        lines = _LINE.split(self.text)
        out = [ln for ln in lines if ln and not _is_data(ln)]
        out.extend("data: " + d for d in _LINE.split(data))
        return ("\n".join(out) + "\n\n").encode("utf-8")


def _is_data(line: str) -> bool:
    return line == "data" or line.startswith("data:")


def parse_event(raw: bytes) -> Event:
    """Parse one complete event's raw bytes. Undecodable bytes give an event without
    data and with `bad` set: it cannot be reversed, so a stream that holds text must not
    let it pass (it would overtake the held text)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Event(raw, bad=True)
    ev = Event(raw, text=text)
    # Fast path for the shape every provider sends: "event: X\ndata: {...}\n\n" or
    # "data: {...}\n\n".
    if text.startswith("event: "):
        nl = text.find("\n")
        if nl > 0 and text.startswith("data: ", nl + 1) and text.endswith("\n\n"):
            end = len(text) - 2
            if text.find("\n", nl + 1, end) < 0 and "\r" not in text:
                ev.name = text[7:nl]
                ev.data = text[nl + 7 : end]
                ev.span = (nl + 7, end)
                return ev
    elif text.startswith("data: ") and text.endswith("\n\n"):
        end = len(text) - 2
        if text.find("\n", 0, end) < 0 and "\r" not in text:
            ev.data = text[6:end]
            ev.span = (6, end)
            return ev
    data: list[str] = []
    pos = 0
    span = None
    ends = [(m.start(), m.end()) for m in _LINE.finditer(text)]
    if not ends or ends[-1][1] < len(text):  # an unterminated last line (stream end)
        ends.append((len(text), len(text)))
    for line_end, next_start in ends:
        line = text[pos:line_end]
        start = pos
        pos = next_start
        if not line or line[0] == ":":
            continue
        field, colon, value = line.partition(":")
        skip = 1 if value.startswith(" ") else 0
        if not colon:
            value = ""
        else:
            value = value[skip:]
        if field == "data":
            data.append(value)
            vstart = start + len(field) + (1 + skip if colon else 0)
            # (a bare `data` line has no value to replace in place: with_data rebuilds it)
            span = (vstart, vstart + len(value)) if len(data) == 1 and colon else None
        elif field == "event":
            ev.name = value
    if data:
        ev.data = "\n".join(data)
        ev.span = span
    return ev


def paired(buf: bytes) -> bool:
    """Are buf's line ends LF or CRLF only (no lone CR, none at the end)? Then an event
    ends after every `\\n\\n` and every `\\n\\r\\n` (the pairs of line ends), and
    nowhere else but after a blank line at an event's start: boundaries can be found
    with find and rfind instead of the framer's regex."""
    if 13 not in buf:
        return True
    return buf[-1] != 13 and buf.count(b"\r") == buf.count(b"\r\n")


def last_end(buf: bytes) -> int:
    """Where the last event that buf (starting at an event's start) completes ends: 0
    if none; -1 when only the framer's regex can tell (lone CRs)."""
    j = buf.rfind(b"\n\n")
    k = j + 2 if j >= 0 else 0
    if 13 not in buf:
        return k
    if not paired(buf):
        return -1
    j = buf.rfind(b"\n\r\n")
    return max(k, j + 3) if j >= 0 else k


def _cut(buf: bytes) -> tuple[list[bytes], int]:
    """buf, starting at an event's start, cut into the events it completes; and where
    the unfinished rest begins."""
    events: list[bytes] = []
    pos = 0
    n = len(buf)
    while pos < n:
        c = buf[pos]
        if c == 10 or c == 13:  # a blank line at an event start (or the LF of a CRLF
            # whose CR ended the previous event): pass it on by itself
            end = pos + 2 if buf.startswith(b"\r\n", pos) else pos + 1
            events.append(buf[pos:end])
            pos = end
            continue
        m = _EVENT_END.search(buf, pos)
        if m is None:
            break
        events.append(buf[pos : m.end()])
        pos = m.end()
    return events, pos


def split(block: bytes) -> list[bytes]:
    """A block of whole events (Framer.whole, or a part of one that starts and ends
    where events do) cut into them."""
    events, pos = _cut(block)
    if pos < len(block):  # cannot happen for a block from whole(); kept, never dropped
        events.append(block[pos:])
    return events


class Framer:
    """Incremental framer: `feed(bytes) -> [Event]`, `flush() -> [Event]`.

    Linear in the stream, however an event is cut into reads and whatever its line ends
    (LF, CRLF, CR): the bytes of an unfinished event are kept as the reads that brought
    them (`_more`) and joined once, when a read ends the event. Those bytes are known to
    hold no event end, so a read that does not end one is looked at alone, with the
    three bytes before it (`_tail`: an event end, `\r\n\r\n` at most, may begin
    there). Joining and searching the whole unfinished event at every read cost one 4 MiB
    event 2.8 s (quadratic); now a few ms per MiB."""

    __slots__ = ("_buf", "_more", "_size", "_tail", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self._more: list[bytes] = []  # reads after _buf, not joined yet (see whole)
        self._size = 0  # len(_buf) + the lengths of _more
        self._tail = b""  # the last 3 bytes kept
        self.max_event_bytes = max_event_bytes

    def _joined(self) -> bytes:
        if self._more:
            self._buf = b"".join([self._buf, *self._more])
            self._more = []
        return self._buf

    def _keep(self, rest: bytes) -> None:
        self._buf, self._more, self._size, self._tail = rest, [], len(rest), rest[-3:]

    def _kept(self, data: bytes) -> bool:
        """Is data, after the kept bytes, still inside their unfinished event? Then it
        is kept as it came. Kept bytes hold no event end, and no match of _EVENT_END lies
        in them once more bytes follow (a following LF only takes a lone CR's match
        away): an end that data completes begins at most 3 bytes before it."""
        if not self._size or self._buf[0] in (10, 13):  # nothing kept, or a blank line
            return False
        tail = self._tail
        if 13 not in data and 13 not in tail:  # LF only: an event ends only at `\n\n`
            ends = b"\n\n" in tail[-1:] + data[:1] or b"\n\n" in data
        else:
            ends = _EVENT_END.search(tail + data) is not None
        if ends:
            return False
        self._more.append(data)
        self._size += len(data)
        self._tail = (tail + data[-3:])[-3:]
        self._check()
        return True

    def feed(self, data: bytes) -> list[Event]:
        return [parse_event(raw) for raw in self.feed_raw(data)]

    def feed_raw(self, data: bytes) -> list[bytes]:
        """The raw bytes of every event that data completes (blank lines included)."""
        if not data or self._kept(data):
            return []
        pending = self._joined()
        buf = pending + data if pending else data
        events, pos = _cut(buf)
        self._keep(buf[pos:])
        self._check()
        return events

    def whole(self, data: bytes) -> bytes:
        """Every event data completes, as one block of bytes (b"" if none); what
        follows the last of them is kept for the next read. Reads that end where an
        event ends (a provider that writes one event at a time) come back as the same
        object. The block starts and ends where the events feed_raw would give start
        and end (`split` cuts it into them)."""
        if not data or self._kept(data):  # (kept bytes hold no event end: nothing to give)
            return b""
        pending = self._joined()
        buf = pending + data if pending else data
        k = last_end(buf)
        if k < 0 or (k == 0 and buf[0] in (10, 13)):
            # lone CRs, or a blank line at an event start: the framer's own rules
            _, k = _cut(buf)
        if k == len(buf):
            self._keep(b"")
            return buf
        self._keep(buf[k:])
        self._check()
        return buf[:k]

    def _check(self) -> None:
        if self._size > self.max_event_bytes:
            raise StreamError(f"an SSE event exceeds {self.max_event_bytes} bytes without ending")

    def flush(self) -> list[Event]:
        """The stream ended: whatever is left is an unterminated event, passed on."""
        return [parse_event(raw) for raw in self.flush_raw()]

    def flush_raw(self) -> list[bytes]:
        rest = self._joined()
        self._keep(b"")
        return [rest] if rest else []

    @property
    def pending(self) -> int:
        return self._size


# -- telling a stream from a whole body ---------------------------------------------------

# What an event stream's first line can start with: a field the spec names, or a comment.
# ("If the line starts with a U+003A COLON character (:) ... Ignore the line.")
_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":", b"data\n", b"data\r")
_BOM = b"\xef\xbb\xbf"


class Shape(enum.Enum):
    """What a response body is, as far as its first bytes tell (sniff)."""

    UNDECIDED = "undecided"  # too few bytes yet
    STREAM = "stream"  # an event stream (or Gemini's streamed array)
    DOCUMENT = "document"  # a whole body: JSON, JSON lines or text

    @classmethod
    def of(cls, sniffed: bool | None) -> Shape:
        return cls.UNDECIDED if sniffed is None else cls.STREAM if sniffed else cls.DOCUMENT


def sniff(head: bytes, content_type: str, final: bool = False, array: bool = False) -> bool | None:
    """Is a response body a stream? The one place that tells (every reverser, the views
    and the audit ask here). Decided by its first bytes, so that a stream labelled
    `text/plain`, `application/octet-stream`, `application/x-ndjson` or not at all is
    still reversed event by event, and a JSON error body labelled `text/event-stream` is
    still restored as JSON.

    head: the body's first bytes (as many as have arrived); final: no more will come;
    array: the API streams a JSON array (Gemini without `alt=sse`), so a `[` starts a
    stream rather than a whole body. Returns True (a stream), False (a whole body: JSON,
    JSON lines or text), or None when head is too short to tell yet.
    """
    labelled = "text/event-stream" in content_type.lower()
    h = head[3:] if head.startswith(_BOM) else head
    h = h.lstrip(b" \t\r\n")  # JSON may begin with whitespace; SSE with blank lines
    if not h:
        return labelled if final or len(head) > 64 else None
    if h[:1] == b"[" and array:
        return True
    if h[:1] in (b"{", b"["):
        return False
    for start in _SSE_STARTS:
        if h.startswith(start):
            return True
        if start.startswith(h) and not final:
            return None  # `dat`: could still become `data:`
    return labelled  # text that is neither: the label decides


def is_json_type(content_type: str) -> bool:
    """Is a body labelled JSON (`application/json`, `application/problem+json`, ...)?
    Such a body is buffered and restored whole; its content is still sniffed."""
    t = content_type.split(";", 1)[0].strip().lower()
    return t == "application/json" or t.endswith("+json")


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of a and b (log n slice compares)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def count_events(block: bytes, start: int, end: int) -> int:
    """About how many events block[start:end] holds (for the flow's counters)."""
    return block.count(b"\n\n", start, end) + block.count(b"\n\r\n", start, end)


class Cuts:
    """Where the events of a block of whole events begin and end, found around a
    position: with find/rfind where its line ends are LF or CRLF (sse.paired), else
    from the framer's cut of the whole block."""

    __slots__ = ("block", "ends")

    def __init__(self, block: bytes) -> None:
        self.block = block
        self.ends: list[int] | None = None
        if not paired(block):
            ends = []
            pos = 0
            for raw in split(block):
                pos += len(raw)
                ends.append(pos)
            self.ends = ends

    def next_end(self, pos: int) -> int:
        """The end of the event that starts at pos."""
        if self.ends is not None:
            return self.ends[bisect.bisect_right(self.ends, pos)]
        b = self.block
        c = b[pos]
        if c == 10:  # a blank line at an event start is an event by itself
            return pos + 1
        if c == 13:
            return pos + 2
        return self.end_of(pos)

    def start_of(self, p: int, lo: int) -> int:
        """The start of the event that holds position p (at least lo, an event start)."""
        if self.ends is not None:
            k = bisect.bisect_right(self.ends, p)
            return max(lo, self.ends[k - 1] if k else 0)
        b = self.block
        j = b.rfind(b"\n\n", lo, p)
        k = b.rfind(b"\n\r\n", lo, p)
        return max(j + 2 if j >= 0 else lo, k + 3 if k >= 0 else lo)

    def end_of(self, p: int) -> int:
        """The end of the event that holds position p (not a line end)."""
        if self.ends is not None:
            return self.ends[bisect.bisect_right(self.ends, p)]
        b = self.block
        j = b.find(b"\n\n", p)
        k = b.find(b"\n\r\n", p)
        if k < 0 or 0 <= j < k:
            return j + 2
        return k + 3
