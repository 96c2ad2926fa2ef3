"""Cohere's v2 Chat stream (`POST /v2/chat` with `"stream": true`): its wire vocabulary
and its reverser (sans I/O).

Events (the SDK's `V2ChatStreamResponse`, told by the `type` member of each event's JSON,
which the `event:` line repeats; https://docs.cohere.com/docs/streaming):
message-start, then per content `index` content-start / content-delta / content-end
(`delta.message.content.text`, or `.thinking` for a reasoning model's thoughts),
tool-plan-delta (`delta.message.tool_plan`), per tool call `index` tool-call-start /
tool-call-delta / tool-call-end (`delta.message.tool_calls.function.arguments`, JSON
text), citation-start / citation-end, debug, and message-end, the last one (its
`delta.error` says when generation failed).
"""

from __future__ import annotations

import json
import re

from ...base.channels import Chan, ChannelStream, channel_index
from ...base.exempt import COUNTERS
from ...base.fields import GENERIC, ID, META, OPAQUE
from ...base.holdback import MAX_CHANNELS, Window
from ...base.offsets import Offsets, TrackedWindow
from ...base.restore import dumps
from ...base.stream import StreamState
from ...base.wirespec import JSON, SSE, TEXT, WireSpec, frozen
from ...base.wirespec import OPAQUE as OPAQUE_TEXT
from ...rules.rules import json_escape
from ...wire import jsonspan
from ...wire.jsonspan import VALUES, Obj, Rule
from ...wire.sse import Event
from ...wire.text import is_utf8
from .chat import CITATION, LOGPROB, TOOL_CALL, cited, moved_citation

_CONTENT, _TOOL, _PLAN = "content", "tool", "plan"  # channel keys: (kind, index)
_START, _DELTA, _END = "content-start", "content-delta", "content-end"
_CALL_START, _CALL_DELTA, _CALL_END = "tool-call-start", "tool-call-delta", "tool-call-end"
_PLAN_DELTA = "tool-plan-delta"
_CITATION, _CITATION_END = "citation-start", "citation-end"
_LAST = "message-end"


def _message(fields: dict[str, Rule]) -> Rule:
    """`delta.message` with these members (anything else in it restored whole)."""
    return Obj({"message": Obj(fields, default=GENERIC)}, default=GENERIC)


def _content(i: object) -> Rule:
    # the answer's text through the content index's window (JSON text where the request
    # asked for JSON: Window.OUTPUT); thinking passes byte-identical
    return Obj({"type": META, "text": Chan((_CONTENT, i), Window.OUTPUT), "thinking": OPAQUE}, default=GENERIC)


def _index(doc: dict) -> int:
    """An event's `index` as a channel key part (base/channels.channel_index)."""
    return channel_index(doc.get("index", 0))


def _event(fields: dict[str, Rule]) -> Rule:
    return Obj({"type": META, "index": META, "id": ID, **fields}, default=GENERIC)


class _Event(Rule):
    """One event's JSON, bound to its `index` so that its strings find their windows."""

    string = True
    kind = "unknown"

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        t = value.get("type")
        if t in (_START, _DELTA):
            return _event({"delta": _message({"content": _content(_index(value))}), "logprobs": LOGPROB})
        if t in (_CALL_START, _CALL_DELTA):
            fn = Obj({"name": VALUES, "arguments": Chan((_TOOL, _index(value)), Window.JSON)}, default=GENERIC)
            call = Obj({"id": ID, "type": META, "function": fn}, default=GENERIC)
            return _event({"delta": _message({"tool_calls": call})})
        if t == _PLAN_DELTA:
            return _event({"delta": _message({"tool_plan": Chan((_PLAN,), Window.TEXT)})})
        return EVENTS.get(t, GENERIC) if isinstance(t, str) else GENERIC  # type: ignore[return-value]


# Each event by its type, for every reader (the stream binds the deltas to their windows;
# the audit and the views read these).
_DELTAS_READ = _event({"delta": _message({"content": Obj({"type": META, "text": VALUES, "thinking": OPAQUE},
                                                          default=GENERIC), "tool_plan": VALUES,
                                           "tool_calls": TOOL_CALL}), "logprobs": LOGPROB})  # fmt: skip
EVENTS: dict[str, Rule] = {
    "message-start": _event({"delta": _message({"role": META, "content": META, "tool_plan": VALUES,
                                                "tool_calls": META, "citations": META})}),
    _START: _DELTAS_READ, _DELTA: _DELTAS_READ, _END: META,
    _PLAN_DELTA: _DELTAS_READ,
    _CALL_START: _DELTAS_READ, _CALL_DELTA: _DELTAS_READ, _CALL_END: META,
    _CITATION: _event({"delta": _message({"citations": CITATION})}),
    _CITATION_END: META,
    "debug": _event({"prompt": VALUES}),
    # the last event: why it stopped, usage, and `error` when generation failed
    _LAST: _event({"delta": Obj({"finish_reason": META, "usage": COUNTERS, "error": VALUES}, default=GENERIC)}),
}  # fmt: skip
STREAM_EVENT: Rule = _Event()  # one event of a stream (restored by the stream; the audit reads it)


def _member(doc: object, *path: str) -> dict:
    """The object at path in doc ({} where there is none)."""
    for k in path:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc if isinstance(doc, dict) else {}


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one event (inspect/sseview.Builder): a channel per content
    `index` (text or thinking), per tool call `index` (arguments), and the tool plan; a
    message-end with an `error` is the stream's error."""
    t = doc.get(SPEC.type_member)
    if t not in SPEC.events:
        return False
    i = doc.get("index", 0)
    msg = _member(doc, "delta", "message")
    if t in (_START, _DELTA):
        c = _member(msg, "content")
        for fld, kind in (("text", "text"), ("thinking", "thinking")):
            v = c.get(fld)
            if isinstance(v, str) and v:
                b.add(ev, f"content {i} {fld}", kind, v, f"delta.message.content.{fld}")
    elif t == _PLAN_DELTA and isinstance(msg.get("tool_plan"), str):
        b.add(ev, "tool plan", "text", msg["tool_plan"], "delta.message.tool_plan")
    elif t in (_CALL_START, _CALL_DELTA):
        fn = _member(msg, "tool_calls", "function")
        ch = b.channel(f"tool_call {i} arguments", "json")
        name, args = fn.get("name"), fn.get("arguments")
        if isinstance(name, str) and name:
            ch.name = ev.note = name
        if isinstance(args, str) and args:
            b.add(ev, ch.key, "json", args, "delta.message.tool_calls.function.arguments")
    elif t == _LAST:
        d = _member(doc, "delta")
        if d.get("error"):
            b.errors.append(str(d["error"]))
        ev.note = str(d.get("finish_reason") or "")
    return True


# The v2 Chat stream's wire vocabulary, for every reader (base/wirespec.py). Its
# failure is told inside its last event (message-end's `delta.error`), not by an event
# of its own: error_event stays None so that no reader counts every message-end as one.
SPEC = WireSpec(
    "cohere.chat",
    ("apis.cohere.chat", "apis.cohere.stream"),
    (SSE,),
    events=frozenset(EVENTS),
    terminal=frozenset({_LAST}),
    members=frozenset({"tool_plan"}),
    stop_members=("finish_reason",),
    deltas=frozen({_DELTA: ("text", TEXT), _CALL_DELTA: ("arguments", JSON), _PLAN_DELTA: ("tool_plan", TEXT)}),
    blocks=frozen({"text": TEXT, "thinking": OPAQUE_TEXT}),
    view=view,
)

# The synthetic delta that carries a channel's held tail, per channel kind: its type and
# the JSON around the text.
_TAIL = {
    _CONTENT: (_DELTA, '{{"message":{{"content":{{"text":"{}"}}}}}}'),
    _TOOL: (_CALL_DELTA, '{{"message":{{"tool_calls":{{"function":{{"arguments":"{}"}}}}}}}}'),
    _PLAN: (_PLAN_DELTA, '{{"message":{{"tool_plan":"{}"}}}}'),
}


# The exact shape the API sends for a delta (compact JSON, the reference's key order), so
# that nearly every event costs no json.loads: the event type, the index, and the one
# string of the delta. Anything else takes the slow path (a key spelled with escapes
# cannot match: the keys are literal here).
_STR = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_SHAPE = (
    r'\{"type":"(content-delta|tool-call-delta|tool-plan-delta)"(?:,"index":(0|[1-9][0-9]*))?,"delta":\{"message":\{'
    r'(?:"content":\{"(text|thinking)":' + _STR + r"\}"
    r'|"tool_calls":\{"function":\{"arguments":' + _STR + r"\}\}"
    r'|"tool_plan":' + _STR + r")\}\}\}"
)
_FAST = re.compile(_SHAPE + r"\Z")
# A text delta in the API's own shape, anywhere in whole events: what CohereStream counts
# of the text that passes unparsed.
_TEXT_DELTA = re.compile(
    (r'\{"type":"(content-delta|tool-plan-delta)"(?:,"index":(0|[1-9][0-9]*))?,"delta":\{"message":\{'
     r'(?:"content":\{"text":' + _STR + r"\}|" + r'"tool_plan":' + _STR + r")\}\}\}").encode()
)
# The same shape as a whole event's bytes, for on_raw: parse_event's one-data-line shape
# (no CR anywhere, no line break in the data), the string bodies narrowed to what cannot
# be a line break. Whatever it matches, _FAST matches in the parsed data with the same groups.
_RAW = re.compile(
    rb"event: [^\r\n]*\ndata: "
    + _SHAPE.replace(r'[^"\\]*(?:\\.[^"\\]*)*', r'[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*').encode()
    + rb"\n\n\Z"
)


def _same_deltas(block: bytes, start: int, end: int) -> dict[tuple, int] | None:
    """The common read, counted at C speed: whole events that are all text deltas of one
    content index in the API's own shape, their strings without `\\u` or `\\\\` escapes
    (so each other escape is two bytes for one character). A string holds no raw line
    break, and a `"` only after a backslash, so the counts below cannot be fooled by text.
    None otherwise (or not UTF-8)."""
    if not block.startswith(_DELTA_HEAD, start):
        return None
    if block.find(b"\\u", start, end) >= 0 or block.find(b"\\\\", start, end) >= 0:
        return None
    i = start + len(_DELTA_HEAD)
    j = block.find(b",", i, end)
    index = block[i:j]
    if not index.isdigit():
        return None
    head = _DELTA_HEAD + index + b',"delta":{"message":{"content":{"text":"'
    n = block.count(b"\n\n", start, end)
    if block.count(head, start, end) != n or block.count(_DELTA_TAIL, start, end) != n:
        return None
    try:
        chars = len(block[start:end].decode("utf-8"))
    except UnicodeDecodeError:
        return None
    return {(_CONTENT, int(index)): chars - n * (len(head) + len(_DELTA_TAIL)) - block.count(b"\\", start, end)}


_DELTA_HEAD = b'event: content-delta\ndata: {"type":"content-delta","index":'
_DELTA_TAIL = b'"}}}}\n\n'


def _length(body: bytes) -> int:
    """The characters of a JSON string body (raw bytes, escapes undone as JSON reads them)."""
    if 92 not in body:
        return len(body.decode("utf-8"))
    return len(json.loads(b'"' + body + b'"'))


def _fast_key(m: re.Match) -> tuple[tuple, int, int] | None:
    """(channel key, group of the string, window mode) of a delta in the fast shape; a
    thinking delta passes as it came ((), ...); None where the type and its member
    disagree (the slow path reads it as the type says)."""
    t = m.group(1) if isinstance(m.group(1), str) else m.group(1).decode()
    i = int(m.group(2)) if m.group(2) is not None else 0
    if m.start(4) >= 0:
        if t != _DELTA:
            return None
        field = m.group(3) if isinstance(m.group(3), str) else m.group(3).decode()
        return ((_CONTENT, i), 4, Window.OUTPUT) if field == "text" else ((), 4, Window.TEXT)
    if m.start(5) >= 0:
        return ((_TOOL, i), 5, Window.JSON) if t == _CALL_DELTA else None
    return ((_PLAN,), 6, Window.TEXT) if t == _PLAN_DELTA else None


class CohereStream(ChannelStream):
    """One v2 Chat stream: a window per content index, per tool call index (its
    arguments, restored as JSON) and for the tool plan. A channel's held tail goes out
    in a delta of its own just before the event that ends it (content-end,
    tool-call-end; the plan ends at the first event that is not a tool-plan-delta).

    A citation's `start`/`end` count characters of the text as the model wrote it: each
    content's and the plan's window notes what restoring changed (base/offsets.py), and
    a citation-start gets its offsets moved to the restored text. One whose `end` lies in
    text its channel still holds waits (with the citation events after it) until the
    channel released that far or ended: then where the held text went is known. Text
    that passes unparsed (no trigger, nothing held) is counted (quiet_range, passed); a
    read that cannot be counted so is parsed."""

    TERMINAL = SPEC.ends
    MARKERS = SPEC.markers

    def __init__(self, restorer) -> None:
        super().__init__(restorer)
        self.offsets: dict[tuple, Offsets] = {}  # (content, index) and (plan,): what restoring moved
        self._counted: tuple[bytes, int, int, dict] | None = None  # quiet_range's count, for passed
        self._waiting: list[tuple[Event, str, int]] = []  # citation events held back, in order

    # -- citations' offsets ------------------------------------------------------------------

    def _offsets(self, key: tuple) -> Offsets:
        o = self.offsets.get(key)
        if o is None:
            o = self.offsets[key] = Offsets()
        return o

    def window(self, key: tuple, mode: int) -> Window:
        if key in self.windows or key[0] == _TOOL:
            return super().window(key, mode)
        super().window(key, mode)  # makes room, or ends the stream when every channel holds text
        w = self.windows[key] = TrackedWindow(self.restorer, mode, self._offsets(key))
        return w

    def window_raw_for(self, key: tuple, mode: int, raw: bytes, start: int, end: int) -> list[bytes] | None:
        if key not in self.windows and key[0] != _TOOL and len(self.windows) < MAX_CHANNELS:
            self.windows[key] = TrackedWindow(self.restorer, mode, self._offsets(key))
        return super().window_raw_for(key, mode, raw, start, end)

    def quiet_range(self, block: bytes, start: int, end: int) -> bool:
        """Whole events that would pass unparsed: each text delta's length is counted
        (passed adds it); a read with a delta not in the API's own shape, or a
        citation-start once restoring moved text, is parsed instead."""
        counts = self._count(block, start, end)
        self._counted = None if counts is None else (block, start, end, counts)
        return counts is not None

    def passed(self, block: bytes, start: int, end: int) -> None:
        got, self._counted = self._counted, None
        counts = got[3] if got is not None and got[0] is block and got[1:3] == (start, end) else None
        for key, n in (counts if counts is not None else self._count(block, start, end) or {}).items():
            self._offsets(key).skip(n)

    def _count(self, block: bytes, start: int, end: int) -> dict[tuple, int] | None:
        """The characters of text each channel gets in the whole events block[start:end],
        read from their bytes; None where that cannot be done so (they are parsed)."""
        if block.find(b"\r", start, end) >= 0 or block.find(b'"content-start"', start, end) >= 0:
            return None
        if block.find(b'"citation-start"', start, end) >= 0 and any(o.moved for o in self.offsets.values()):
            return None
        same = _same_deltas(block, start, end)
        if same is not None:
            return same
        counts: dict[tuple, int] = {}
        n = 0
        for m in _TEXT_DELTA.finditer(block, start, end):
            n += 1
            if m.start(3) >= 0:
                key: tuple = (_CONTENT, int(m.group(2) or 0))
                counts[key] = counts.get(key, 0) + _length(m.group(3))
            else:
                counts[(_PLAN,)] = counts.get((_PLAN,), 0) + _length(m.group(4))
        # every delta that may carry text was read so (a thinking delta carries none); the
        # type's closing quote, whatever the spacing (in a string a `"` is escaped)
        deltas = block.count(b'content-delta"', start, end) + block.count(b'tool-plan-delta"', start, end)
        if deltas != n + block.count(b'"content":{"thinking":', start, end):
            return None
        return counts

    def quiet(self) -> bool:
        return not self._waiting and super().quiet()

    def _channel(self, doc: dict) -> tuple[tuple | None, int]:
        """The channel a citation-start's offsets count characters of, and its `end`."""
        citation = _member(doc, "delta", "message", "citations")
        key = cited(citation) if citation else None
        end = citation.get("end")
        end = end if isinstance(end, int) and not isinstance(end, bool) else 0
        if key is None:
            return None, end
        if key[0] == "plan":
            return (_PLAN,), end
        if key[1] is not None:
            return (_CONTENT, key[1]), end
        # no content_index: the answer's first text content
        first = min((k for k in self.offsets if k[0] == _CONTENT and isinstance(k[1], int)), default=None)
        return first, end

    def _ready(self, data: str) -> bool:
        """Can this citation event go out now: its `end` is in text its channel released
        (or the channel holds nothing)?"""
        try:
            doc = json.loads(data)
        except ValueError:
            return True
        if not isinstance(doc, dict) or doc.get(SPEC.type_member) != _CITATION:
            return True
        key, end = self._channel(doc)
        w = self.windows.get(key) if key is not None else None
        o = self.offsets.get(key) if key is not None else None
        return w is None or not w.held or o is None or end <= o.length

    def _citation(self, data: str) -> str | None:
        """A citation-start event's JSON with its offsets moved (None: they stay)."""
        try:
            doc = json.loads(data)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        key, _ = self._channel(doc)
        moved = moved_citation(_member(doc, "delta", "message", "citations"), self.offsets.get(key) if key else None)
        if moved is None:
            return None
        doc["delta"]["message"]["citations"] = moved
        return dumps(doc)

    def _emit(self, ev: Event, new: str, changed: int) -> bytes:
        if ev.data is not None and self.offsets and _member(json.loads(new), "delta", "message", "citations"):
            moved = self._citation(new)
            if moved is not None:
                new, changed = moved, True
        if not changed:
            return ev.raw
        self.events_changed += 1
        return ev.with_data(new)

    def _release(self, everything: bool = False) -> list[bytes]:
        """The waiting citation events that can go now, in order."""
        out = []
        while self._waiting and (everything or self._ready(self._waiting[0][1])):
            out.append(self._emit(*self._waiting.pop(0)))
        return out

    def on_raw(self, raw: bytes) -> list[bytes] | None:
        """A delta in the API's own shape, from its bytes (SSEStream.on_raw): on_event's
        _FAST path. Declined while the tool plan holds text and the delta is not the plan's
        (on_event sends the plan's tail first). A stream in the API's own shape passes
        byte-identical here where nothing changes."""
        m = _RAW.match(raw)
        if m is None or self._waiting:  # a citation waits: on_event releases it after this delta
            return None
        got = _fast_key(m)
        if got is None or (got[0] != (_PLAN,) and self._plan_held()) or not is_utf8(raw):
            return None  # not UTF-8: parsed, it ends the stream
        key, g, mode = got
        if not key:
            return [raw]
        return self.window_raw_for(key, mode, raw, m.start(g), m.end(g))

    def on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        m = _FAST.match(data)
        got = _fast_key(m) if m is not None else None
        if m is not None and got is not None and (got[0] == (_PLAN,) or not self._plan_held()):
            key, g, mode = got
            if not key:
                return [ev.raw, *self._release()]
            return [*self.window_field(ev, self.window(key, mode), m.start(g), m.end(g)), *self._release()]
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            return self.not_object(ev)  # a `data: [DONE]` after the last event, say
        if not isinstance(obj, dict):
            return self.not_object(ev)
        t = obj.get(SPEC.type_member)
        out = self._tail((_PLAN,)) if t != _PLAN_DELTA and (_PLAN,) in self.windows else []
        if t in SPEC.terminal:
            self.to(StreamState.FINISHING)
            out.extend(self.drain())
        elif t == _END or t == _CALL_END:
            out.extend(self._tail((_CONTENT if t == _END else _TOOL, _index(obj))))
        out.extend(self._release())
        new, changed = jsonspan.transform(data, obj, STREAM_EVENT, self.channel_fn())
        if t in (_CITATION, _CITATION_END) and (self._waiting or not self._ready(new)):
            self._waiting.append((ev, new, changed))  # after the text it points into
            return out
        out.append(self._emit(ev, new, changed) if t == _CITATION else ev.with_data(new) if changed else ev.raw)
        if changed and t != _CITATION:
            self.events_changed += 1
        out.extend(self._release())
        return out

    def _plan_held(self) -> bool:
        """Does the tool plan's window hold text (which goes out before any other delta)?"""
        w = self.windows.get((_PLAN,))
        return w is not None and bool(w.held)

    def _tail(self, key: tuple) -> list[bytes]:
        w = self.windows.pop(key, None)
        tail = w.flush() if w is not None else ""
        if not tail:
            return []
        t, delta = _TAIL[key[0]]
        index = "" if key[0] == _PLAN else f',"index":{json.dumps(key[1])}'
        data = f'{{"type":"{t}"{index},"delta":{delta.format(json_escape(tail))}}}'
        return [f"event: {t}\ndata: {data}\n\n".encode()]

    def drain(self) -> list[bytes]:
        out: list[bytes] = []
        for key in sorted(self.windows, key=repr):
            out.extend(self._tail(key))
        out.extend(self._release(everything=True))
        return out

    def error_event(self, message: str) -> bytes:
        """The stream's end in Cohere's own shape: a message-end whose finish_reason is
        ERROR and whose `error` says why (the SDK yields it like any last event)."""
        body = json.dumps({"type": _LAST, "delta": {"finish_reason": "ERROR", "error": message}})
        return f"event: {_LAST}\ndata: {body}\n\n".encode()
