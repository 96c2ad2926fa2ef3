"""A readable account of an LLM body, sans I/O: a stream as its events and the
reassembled text of each channel; a JSON body pretty-printed.

Used by the contentviews (views.py, rendering in render.py), the audit (a disguise
split across two deltas is found in the channel text, not in either event) and the
offline replay report. It only reads: nothing here changes a body.

It knows no API's words: those are the APIs' specs (base/wirespec.py,
`registry.SPECS`). Two tables:
- `FRAMINGS`: body -> events (an `SSEEvent` per SSE event, per element of a streamed
  JSON array, ...). A framing answers None for a body that is not in its framing.
- `READERS`: one event's JSON document -> the channel text it carries: each spec's
  `view`, in the API's own module. Each answers False for a document that is not its
  API's; the first that answers True wins. `stream_of(events)` reassembles any events,
  whatever carried them.

Channels follow the providers' stream docs, tolerantly (an unknown event is listed,
never an error); each API's reader says which are its channels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..apis.registry import SPECS
from ..base import fields
from ..base.wirespec import EVENT_STREAM, JSON_ARRAY, SSE
from ..errors import StreamError
from ..wire.jsonarray import ELEMENT, ArrayFramer
from ..wire.jsonspan import Rule
from ..wire.sse import Framer, parse_event, sniff

# Characters of one event shown in a view (render.py's rows, wsview's messages); the
# whole event is one view away (Raw).
MAX_EVENT_CHARS = 2000

# Events whose arrival means the provider said everything it had to say, and the data
# lines that end a stream by themselves, from every API's spec.
TERMINAL_TYPES = frozenset(t for spec in SPECS for t in spec.terminal)
DONE_LINES = frozenset(spec.done for spec in SPECS if spec.done is not None)
ERROR_EVENTS = frozenset(spec.error_event for spec in SPECS if spec.error_event is not None)
# The specs whose events a body framed as SSE, a JSON array or AWS event-stream frames
# can carry.
_STREAMED = tuple(spec for spec in SPECS if {SSE, JSON_ARRAY, EVENT_STREAM} & set(spec.framings))
# The readers of framings no text framing reads (AWS event-stream frames), each once.
_FRAMES = tuple(dict.fromkeys(spec.frames for spec in SPECS if spec.frames is not None))
# What a streamed JSON array's first element must have at its top to be a stream.
_ARRAY_MEMBERS = frozenset(m for spec in SPECS if JSON_ARRAY in spec.framings for m in spec.members) | {"error"}


@dataclass
class Piece:
    event: int  # 1-based event number in the stream
    start: int  # offset of this piece in the channel text
    path: str  # where in the event's JSON it was found (for reports)
    length: int = 0  # characters


@dataclass
class Channel:
    key: str  # e.g. "block 0 text", "choice 0 tool_call 1 arguments"
    kind: str  # "text" | "json" | "thinking"
    name: str = ""  # a tool's name, when the stream gave one
    parts: list[str] = field(default_factory=list)  # one per piece, in order
    pieces: list[Piece] = field(default_factory=list)
    length: int = 0
    _joined: str | None = field(default=None, repr=False)

    def add(self, text: str, event: int, path: str) -> Piece:
        p = Piece(event, self.length, path, len(text))
        self.pieces.append(p)
        self.parts.append(text)
        self.length += len(text)
        self._joined = None
        return p

    @property
    def text(self) -> str:
        """The whole text (joined once, until the next add)."""
        if self._joined is None:
            self._joined = "".join(self.parts)
        return self._joined

    @property
    def label(self) -> str:
        return f"{self.key} ({self.name})" if self.name else self.key


@dataclass
class SSEEvent:
    """One event of a stream: an SSE event, or an element of a streamed JSON array."""

    number: int  # 1-based
    name: str | None
    data: str | None
    doc: object = None  # data parsed as JSON, None when it is not JSON
    raw: bytes = b""
    deltas: list[tuple[Channel, Piece]] = field(default_factory=list)  # the channel text it carried
    note: str = ""  # what the event says besides text (stop reasons, tool names, errors)
    empty: list[str] = field(default_factory=list)  # channels it names with an empty text ("content": "")

    @property
    def kind(self) -> str:
        """The event's type as a reader would name it: the SSE `event:` name, else
        the JSON `type`, else "[DONE]" / "chunk" / "comment"."""
        if self.name:
            return self.name
        if isinstance(self.doc, dict) and isinstance(self.doc.get("type"), str):
            return self.doc["type"]
        if self.data is not None and self.data.strip() in DONE_LINES:
            return self.data.strip()
        return "chunk" if self.data is not None else "comment"


@dataclass
class Stream:
    events: list[SSEEvent]
    channels: dict[str, Channel]
    terminal: bool  # a final event (TERMINAL_TYPES, DONE_LINES) was seen
    errors: list[str]  # error events' messages
    framing: str = "sse"  # "sse" | "json array" | whatever a FRAMINGS entry calls itself


class Builder:
    """Accumulates events and channels. Readers call `add` for each piece of channel
    text an event carries and `end` when an event says the stream is complete."""

    def __init__(self) -> None:
        self.events: list[SSEEvent] = []
        self.channels: dict[str, Channel] = {}
        self.names: dict[tuple, str] = {}  # (provider, indices) -> channel key or tool name
        self.open: set = set()  # channels that must still say they finished (Gemini candidates)
        self.finished: set = set()  # channels that said so
        self.counts: dict[tuple, int] = {}  # e.g. function calls per Gemini candidate
        self.terminal = False
        self.errors: list[str] = []

    def channel(self, key: str, kind: str) -> Channel:
        c = self.channels.get(key)
        if c is None:
            c = self.channels[key] = Channel(key, kind)
        return c

    def add(self, ev: SSEEvent, key: str, kind: str, text: str, path: str) -> Channel:
        c = self.channel(key, kind)
        ev.deltas.append((c, c.add(text, ev.number, path)))
        return c

    def event(self, name: str | None, data: str | None, raw: bytes) -> SSEEvent:
        """One more event; its JSON document goes through the readers."""
        doc = None
        if data is not None:
            if data.strip() in DONE_LINES:
                self.terminal = True
            else:
                try:
                    doc = json.loads(data)
                except ValueError:
                    doc = None
        ev = SSEEvent(len(self.events) + 1, name, data, doc, raw)
        self.events.append(ev)
        if isinstance(doc, dict):
            t = doc.get("type")
            if t in TERMINAL_TYPES or name in TERMINAL_TYPES:
                self.terminal = True
            err = doc.get("error")
            if t in ERROR_EVENTS or name in ERROR_EVENTS or isinstance(err, dict):
                msg = err.get("message") if isinstance(err, dict) else None
                inner = doc.get(name) if name else None  # an event-stream exception: {type: {message}}
                if msg is None and isinstance(inner, dict):
                    msg = inner.get("message")
                self.errors.append(str(msg if msg is not None else err))
            for read in READERS:
                if read(doc, ev, self):
                    break
            if not ev.note:
                ev.note = _note(doc)
        return ev

    def stream(self, framing: str) -> Stream:
        return Stream(self.events, self.channels, self.terminal, self.errors, framing)


def stream_of(events: Iterable[tuple[str | None, str | None, bytes]], framing: str = "sse") -> Stream:
    """Reassemble events given as (name, data, raw), whatever carried them."""
    b = Builder()
    for name, data, raw in events:
        b.event(name, data, raw)
    return b.stream(framing)


# -- framings: body -> events ------------------------------------------------------------


def looks_like_sse(body: bytes, content_type: str = "") -> bool:
    """True for an event stream, told as the reversers tell it (core.sse.sniff)."""
    return sniff(body[:4096], content_type, final=True) is True


def parse_stream(body: bytes) -> Stream:
    """Split an SSE body into events and reassemble each channel. Never raises for
    malformed input: undecodable or non-JSON events are kept as they are."""
    framer = Framer(max_event_bytes=len(body) + 1)
    raws = framer.feed_raw(body) + framer.flush_raw()

    def events():
        for raw in raws:
            ev = parse_event(raw)
            if ev.data is not None or ev.name is not None:  # not blank lines and comments
                yield ev.name, ev.data, raw

    return stream_of(events(), "sse")


def parse_array(body: bytes) -> Stream | None:
    """A streamed JSON array of response chunks (an API whose spec has that framing:
    Gemini without `alt=sse`), cut or whole, as events; None for any other body."""
    head = body[:64].lstrip()
    if not head.startswith(b"["):
        return None
    framer = ArrayFramer(max_element_bytes=len(body) + 1)
    try:
        pieces = framer.feed(body)
    except StreamError:
        return None
    elements = [raw for kind, raw in pieces if kind == ELEMENT]
    if not elements:
        return None
    try:
        first = json.loads(elements[0])
    except ValueError:
        return None
    if not isinstance(first, dict) or not any(k in first for k in _ARRAY_MEMBERS):
        return None
    s = stream_of(((None, raw.decode("utf-8", "replace"), raw) for raw in elements), "json array")
    if framer.inside and not framer.done:
        s.terminal = False  # cut inside an element: whatever the last whole one said
    return s


def _sse_framing(body: bytes, content_type: str) -> Stream | None:
    if not looks_like_sse(body, content_type):
        return None
    s = parse_stream(body)
    if not s.events and body.lstrip()[:1] in (b"{", b"["):
        return None  # one JSON document sent as an event stream (Gemini's errors): shown as JSON
    return s


def _array_framing(body: bytes, content_type: str) -> Stream | None:
    return parse_array(body)


def _frames_framing(body: bytes, content_type: str) -> Stream | None:
    """AWS event-stream frames (Bedrock's streams), by the API's own reading of them
    (WireSpec.frames): a frame's events go through the readers as SSE events do."""
    for read in _FRAMES:
        events = read(body, content_type)
        if events is not None:
            return stream_of(events, "event stream")
    return None


# body, content type -> a Stream, or None when the body is not in that framing. Tried in
# order; an HTTP body that none of them takes is shown as JSON or text.
FRAMINGS: list[Callable[[bytes, str], Stream | None]] = [_frames_framing, _sse_framing, _array_framing]


def parse_any(body: bytes, content_type: str = "") -> Stream | None:
    """The body as a stream, by the first framing that takes it; None for none."""
    for framing in FRAMINGS:
        s = framing(body, content_type)
        if s is not None:
            return s
    return None


# -- readers: one event's JSON -> channel text ---------------------------------------------

Reader = Callable[[dict, SSEEvent, Builder], bool]

# Tried in order for each event's JSON document; the first that returns True wins.
READERS: list[Reader] = [spec.view for spec in _STREAMED if spec.view is not None]


_NOTE_KEYS = (*dict.fromkeys(m for spec in SPECS for m in spec.stop_members), "status")


def _note(doc: dict) -> str:
    """What an event no reader explained says, in a few words: its stop reasons and
    status (the envelope itself is one view away, in Raw)."""
    out: list[str] = []
    stack: list[tuple[object, int]] = [(doc, 0)]
    while stack and len(out) < 4:
        x, depth = stack.pop()
        if isinstance(x, dict) and depth < 3:
            for k, v in x.items():
                if k in _NOTE_KEYS and isinstance(v, str | int) and v not in ("", None):
                    out.append(f"{k} {v}")
                elif isinstance(v, dict | list):
                    stack.append((v, depth + 1))
        elif isinstance(x, list) and depth < 3:
            stack.extend((v, depth + 1) for v in x[:8])
    return "; ".join(out)


def render_json(body: bytes) -> str | None:
    """A JSON body pretty-printed (non-ASCII kept); None when it is not JSON."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return json.dumps(doc, indent=2, ensure_ascii=False)


MAX_UNTOUCHED_LINES = 40  # fields listed as untouched by design, per body


def untouched(doc: object, table: Rule) -> list[str]:
    """The fields of a document its API's table exempts by design (base/fields.py:
    identifiers, opaque provider data, binary media), one line each, for the view: what
    went out or came back as it was on purpose. The API's own words (metadata) are
    counted, not listed."""
    lines: list[str] = []
    meta = 0
    for f in fields.walk(doc, table, exempt=True):
        if fields.selected(f) or f.is_key:
            continue
        kind = fields.kind_of(f)
        if kind == "metadata":
            meta += 1
            continue
        if len(lines) < MAX_UNTOUCHED_LINES:
            lines.append(f"{fields.path_text(f.path) or '(body)'}: {kind} ({len(f.value)} chars)")
        else:
            lines[-1] = f"… and more ({kind})"
    if not lines and not meta:
        return []
    head = f"── untouched by design (the API's field table): {len(lines)} fields, {meta} of the API's own words ──"
    return [head, *lines]


def untouched_in(body: bytes, table: Rule | None) -> list[str]:
    """untouched() of a JSON body; [] for anything else or no table."""
    if table is None:
        return []
    try:
        return untouched(fields.loads(body.decode("utf-8")), table)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return []
