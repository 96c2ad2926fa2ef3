"""Bytes -> SSE events (each keeping its exact raw bytes), sans I/O.

Framing follows the WHATWG EventSource spec: "Lines must be separated by either a
U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair, a single U+000A LINE
FEED (LF) character, or a single U+000D CARRIAGE RETURN (CR) character." An event ends
at a blank line. Events are cut from a byte buffer, so a UTF-8 character split across
reads is whole by the time an event is decoded. Nothing is ever dropped: every input
byte belongs to exactly one `Event.raw`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import StreamError

# An event's largest size. Anthropic web-search result blocks run to tens of KB; a
# whole-message snapshot (OpenAI `response.completed`) can reach a few MB with long
# outputs. Above this the stream ends with an explicit error instead of buffering
# without bound.
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


class Framer:
    """Incremental framer: `feed(bytes) -> [Event]`, `flush() -> [Event]`."""

    __slots__ = ("_buf", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self.max_event_bytes = max_event_bytes

    def feed(self, data: bytes) -> list[Event]:
        return [parse_event(raw) for raw in self.feed_raw(data)]

    def feed_raw(self, data: bytes) -> list[bytes]:
        """The raw bytes of every event that data completes (blank lines included)."""
        buf = self._buf + data if self._buf else data
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
        self._buf = buf[pos:]
        if len(self._buf) > self.max_event_bytes:
            raise StreamError(
                f"an SSE event exceeds {self.max_event_bytes} bytes without ending"
            )
        return events

    def flush(self) -> list[Event]:
        """The stream ended: whatever is left is an unterminated event, passed on."""
        return [parse_event(raw) for raw in self.flush_raw()]

    def flush_raw(self) -> list[bytes]:
        rest, self._buf = self._buf, b""
        return [rest] if rest else []

    @property
    def pending(self) -> int:
        return len(self._buf)


# -- telling a stream from a whole body ---------------------------------------------------

# What an event stream's first line can start with: a field the spec names, or a comment.
# ("If the line starts with a U+003A COLON character (:) ... Ignore the line.")
_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":", b"data\n", b"data\r")
_BOM = b"\xef\xbb\xbf"


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
