"""A readable account of an LLM body, sans I/O: a stream as its events and the
reassembled text of each channel; a JSON body pretty-printed.

Used by the contentviews (views.py, rendering in streamrender.py), the audit (a
disguise split across two deltas is found in the channel text, not in either event)
and the offline replay report. It only reads: nothing here changes a body.

Two tables make it extensible, and each provider adds one entry to each:
- `FRAMINGS`: body -> events (an `SSEEvent` per SSE event, per element of a streamed
  JSON array, ...). A framing answers None for a body that is not in its framing. For
  AWS event-stream frames (Bedrock), one more function here turns the frames into
  events with their JSON payload as `doc`.
- `READERS`: one event's JSON document -> the channel text it carries. Each reader
  answers False for a document that is not its provider's; the first that answers
  True wins. A new provider (Bedrock's `contentBlockDelta`, the realtime APIs' server
  events) adds a reader. `stream_of(events)` reassembles any events, whatever carried
  them (a WebSocket's messages too).

Channels follow the providers' stream docs, tolerantly (an unknown event is listed,
never an error):
- Anthropic: one channel per content block `index` (text, tool input JSON, thinking);
  signatures are counted, not shown.
- OpenAI Chat: per choice `index`, `content`, `refusal`, reasoning, and per tool call
  `index` its `arguments`.
- OpenAI Responses: every `*.delta` event with a string `delta`, per (kind,
  output_index, content_index or summary_index).
- Gemini: per candidate `index` its text parts, its thought parts, and each function
  call (which arrives whole: name and `args` as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..core.jsonarray import ELEMENT, ArrayFramer
from ..core.jsonspan import Rule
from ..core.sse import Framer, parse_event, sniff
from ..errors import StreamError
from ..providers import anthropic, fields, openai_chat, openai_responses

# Characters of one event shown in a view (render.py's rows, wsview's messages); the
# whole event is one view away (Raw).
MAX_EVENT_CHARS = 2000

# Events whose arrival means the provider said everything it had to say.
TERMINAL_TYPES = frozenset({"message_stop", "response.completed", "response.incomplete", "response.failed"})


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
        if self.data is not None and self.data.strip() == "[DONE]":
            return "[DONE]"
        return "chunk" if self.data is not None else "comment"


@dataclass
class Stream:
    events: list[SSEEvent]
    channels: dict[str, Channel]
    terminal: bool  # a final event ([DONE], message_stop, response.completed...) was seen
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
            if data.strip() == "[DONE]":
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
            if t == "error" or name == "error" or isinstance(err, dict):
                msg = err.get("message") if isinstance(err, dict) else None
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


_GEMINI_CHUNK_KEYS = ("candidates", "usageMetadata", "promptFeedback", "error")


def parse_array(body: bytes) -> Stream | None:
    """A streamed JSON array of response chunks (Gemini `streamGenerateContent`
    without `alt=sse`), cut or whole, as events; None for any other body."""
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
    if not isinstance(first, dict) or not any(k in first for k in _GEMINI_CHUNK_KEYS):
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


# body, content type -> a Stream, or None when the body is not in that framing. Tried in
# order; an HTTP body that none of them takes is shown as JSON or text.
FRAMINGS: list[Callable[[bytes, str], Stream | None]] = [_sse_framing, _array_framing]


def parse_any(body: bytes, content_type: str = "") -> Stream | None:
    """The body as a stream, by the first framing that takes it; None for none."""
    for framing in FRAMINGS:
        s = framing(body, content_type)
        if s is not None:
            return s
    return None


# -- readers: one event's JSON -> channel text ---------------------------------------------

Reader = Callable[[dict, SSEEvent, Builder], bool]

# Which channels are opaque (thinking, reasoning: passed byte-identical) is the APIs'
# field tables' to say (providers/fields.py), not this module's.
_ANTHROPIC_DELTAS = {
    t: (fld, "thinking" if anthropic.delta_kind(t) == "opaque" else kind)
    for t, fld, kind in (("text_delta", "text", "text"), ("input_json_delta", "partial_json", "json"),
                         ("thinking_delta", "thinking", "text"))
}  # fmt: skip


def _block_kind(btype: str) -> str:
    if anthropic.block_kind(btype) == "opaque":
        return "thinking"
    return "text" if btype == "text" else "json"


def read_anthropic(doc: dict, ev: SSEEvent, b: Builder) -> bool:
    t = doc.get("type")
    if t == "content_block_start":
        i = doc.get("index")
        block = doc.get("content_block") or {}
        btype = block.get("type", "?")
        c = b.channel(f"block {i} {btype}", _block_kind(str(btype)))
        if isinstance(block.get("name"), str):
            c.name = block["name"]
        ev.note = str(btype) + (f" {c.name}" if c.name else "")
        if isinstance(block.get("text"), str) and block["text"]:
            b.add(ev, c.key, c.kind, block["text"], "content_block.text")
        b.names[("a", i)] = c.key
        return True
    if t == "content_block_delta":
        i = doc.get("index")
        d = doc.get("delta") or {}
        spec = _ANTHROPIC_DELTAS.get(str(d.get("type")))
        if spec is None:
            ev.note = str(d.get("type"))  # signature_delta, citations_delta: not text
            return True
        fld, kind = spec
        v = d.get(fld)
        if isinstance(v, str):
            key = b.names.get(("a", i)) or f"block {i} {kind}"
            b.add(ev, key, kind, v, f"delta.{fld}")
        return True
    return t in ("message_start", "message_delta", "message_stop", "content_block_stop", "ping")


_CHAT_FIELDS = tuple(
    (f, "thinking" if openai_chat.delta_kind(f) == "opaque" else "text")
    for f in ("content", "refusal", "reasoning_content", "reasoning")
)


def read_openai_chat(doc: dict, ev: SSEEvent, b: Builder) -> bool:
    """Chat Completions chunks, and legacy Completions chunks (`text_completion`:
    per choice its `text`)."""
    choices = doc.get("choices")
    obj = doc.get("object", "chat.completion.chunk")
    if not isinstance(choices, list) or obj not in ("chat.completion.chunk", "text_completion"):
        return False
    notes = []
    for ci, ch in enumerate(choices):
        if not isinstance(ch, dict):
            continue
        idx = ch.get("index", ci)
        if ch.get("finish_reason"):
            notes.append(f"choice {idx} finish_reason {ch['finish_reason']}")
        if obj == "text_completion":
            if isinstance(ch.get("text"), str) and ch["text"]:
                b.add(ev, f"choice {idx} text", "text", ch["text"], f"choices[{ci}].text")
            continue
        d = ch.get("delta")
        if not isinstance(d, dict):
            continue
        for fld, kind in _CHAT_FIELDS:
            v = d.get(fld)
            if isinstance(v, str) and v:
                b.add(ev, f"choice {idx} {fld}", kind, v, f"choices[{ci}].delta.{fld}")
            elif v == "":
                ev.empty.append(f"choice {idx} {fld}")
        for ti, tc in enumerate(d.get("tool_calls") or ()):
            if not isinstance(tc, dict):
                continue
            j = tc.get("index", ti)
            fn = tc.get("function") or {}
            c = b.channel(f"choice {idx} tool_call {j} arguments", "json")
            if isinstance(fn.get("name"), str) and fn["name"]:
                c.name = fn["name"]
                notes.append(f"tool_call {j} {c.name}")
            args = fn.get("arguments")
            if isinstance(args, str) and args:
                b.add(ev, c.key, "json", args, f"choices[{ci}].delta.tool_calls[{ti}].function.arguments")
    ev.note = "; ".join(notes)
    return True


def read_openai_responses(doc: dict, ev: SSEEvent, b: Builder) -> bool:
    t = doc.get("type")
    if not isinstance(t, str) or not t.startswith("response."):
        return False
    if t == "response.output_item.added":
        item = doc.get("item") or {}
        if isinstance(item.get("name"), str):
            b.names[("r", doc.get("output_index"))] = item["name"]
        ev.note = " ".join(str(x) for x in (item.get("type"), item.get("name")) if isinstance(x, str))
        return True
    if t.endswith(".delta") and isinstance(doc.get("delta"), str):
        kind_name = t[len("response.") : -len(".delta")]
        oi = doc.get("output_index")
        sub = doc.get("content_index", doc.get("summary_index"))
        key = f"output {oi} {kind_name}" + (f" [{sub}]" if sub is not None else "")
        kind = "thinking" if openai_responses.event_rule(t, doc).kind == "opaque" else (
            "json" if "arguments" in kind_name or kind_name.endswith("input") else "text"
        )  # fmt: skip
        c = b.add(ev, key, kind, doc["delta"], "delta")
        name = b.names.get(("r", oi))
        if name:
            c.name = name
    return True


def read_gemini(doc: dict, ev: SSEEvent, b: Builder) -> bool:
    """A GenerateContentResponse chunk: per candidate its text, thoughts and calls. The
    stream is complete when every candidate it named gave its finishReason (or the
    prompt was blocked)."""
    cands = doc.get("candidates")
    feedback = doc.get("promptFeedback")
    if not isinstance(cands, list) and not isinstance(feedback, dict) and "usageMetadata" not in doc:
        return False
    notes = []
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        notes.append(f"blockReason {feedback['blockReason']}")
        b.terminal = True
    for ci, cand in enumerate(cands if isinstance(cands, list) else ()):
        if not isinstance(cand, dict):
            continue
        k = cand.get("index", 0)
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for pi, part in enumerate(parts if isinstance(parts, list) else ()):
            if not isinstance(part, dict):
                continue
            path = f"candidates[{ci}].content.parts[{pi}]"
            if isinstance(part.get("text"), str) and part["text"]:
                thought = part.get("thought") is True
                kind = "thinking" if thought else "text"
                b.add(ev, f"candidate {k} {'thought' if thought else 'text'}", kind, part["text"], f"{path}.text")
            call = part.get("functionCall") or part.get("function_call")
            if isinstance(call, dict):  # arrives whole: one channel per call
                n = b.counts.get(("g calls", k), 0)
                b.counts[("g calls", k)] = n + 1
                c = b.add(ev, f"candidate {k} call {n}", "json", json.dumps(call.get("args", {}), ensure_ascii=False),
                          f"{path}.functionCall.args")  # fmt: skip
                if isinstance(call.get("name"), str):
                    c.name = call["name"]
        reason = cand.get("finishReason") or cand.get("finish_reason")
        if reason:
            notes.append(f"candidate {k} finishReason {reason}")
            b.open.discard(("g", k))
            b.finished.add(("g", k))
        elif ("g", k) not in b.finished:
            b.open.add(("g", k))
        b.terminal = not b.open
    ev.note = "; ".join(notes)
    return True


# Tried in order for each event's JSON document; the first that returns True wins.
READERS: list[Reader] = [read_anthropic, read_openai_chat, read_openai_responses, read_gemini]


_NOTE_KEYS = ("stop_reason", "finish_reason", "finishReason", "status", "blockReason")


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
    """The fields of a document its API's table exempts by design (providers/fields.py:
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
