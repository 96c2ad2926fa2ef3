"""A readable account of an LLM body, sans I/O: an SSE stream as its events and the
reassembled text of each channel; a JSON body pretty-printed.

Used by the contentviews (views.py), the audit (a disguise split across two deltas is
found in the channel text, not in either event) and the offline replay report. It only
reads: nothing here changes a body.

Channels follow the providers' stream docs, tolerantly (an unknown event is listed,
never an error):
- Anthropic: one channel per content block `index` (text, tool input JSON, thinking);
  signatures are counted, not shown.
- OpenAI Chat: per choice `index`, `content`, `refusal`, reasoning, and per tool call
  `index` its `arguments`.
- OpenAI Responses: every `*.delta` event with a string `delta`, per (kind,
  output_index, content_index or summary_index).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..core.jsonspan import Rule
from ..core.sse import Framer, parse_event, sniff
from ..providers import anthropic, fields, openai_chat, openai_responses

# Events whose arrival means the provider said everything it had to say.
TERMINAL_TYPES = frozenset({"message_stop", "response.completed", "response.incomplete", "response.failed"})


@dataclass
class Piece:
    event: int  # 1-based event number in the stream
    start: int  # offset of this piece in the channel text
    path: str  # where in the event's JSON it was found (for reports)


@dataclass
class Channel:
    key: str  # e.g. "block 0 text", "choice 0 tool_call 1 arguments"
    kind: str  # "text" | "json" | "thinking"
    name: str = ""  # a tool's name, when the stream gave one
    parts: list[str] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    length: int = 0

    def add(self, text: str, event: int, path: str) -> None:
        self.pieces.append(Piece(event, self.length, path))
        self.parts.append(text)
        self.length += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def label(self) -> str:
        return f"{self.key} ({self.name})" if self.name else self.key


@dataclass
class SSEEvent:
    number: int  # 1-based
    name: str | None
    data: str | None
    doc: object = None  # data parsed as JSON, None when it is not JSON
    raw: bytes = b""


@dataclass
class Stream:
    events: list[SSEEvent]
    channels: dict[str, Channel]
    terminal: bool  # a final event ([DONE], message_stop, response.completed...) was seen
    errors: list[str]  # error events' messages


def looks_like_sse(body: bytes, content_type: str = "") -> bool:
    """True for an event stream, told as the reversers tell it (core.sse.sniff)."""
    return sniff(body[:4096], content_type, final=True) is True


def parse_stream(body: bytes) -> Stream:
    """Split an SSE body into events and reassemble each channel. Never raises for
    malformed input: undecodable or non-JSON events are kept as they are."""
    framer = Framer(max_event_bytes=len(body) + 1)
    raws = framer.feed_raw(body) + framer.flush_raw()
    events: list[SSEEvent] = []
    channels: dict[str, Channel] = {}
    names: dict[tuple, str] = {}  # (provider, indices) -> tool name seen at item start
    terminal = False
    errors: list[str] = []
    for raw in raws:
        ev = parse_event(raw)
        if ev.data is None and ev.name is None:
            continue  # blank lines and comments
        n = len(events) + 1
        doc = None
        if ev.data is not None:
            if ev.data.strip() == "[DONE]":
                terminal = True
            else:
                try:
                    doc = json.loads(ev.data)
                except ValueError:
                    doc = None
        events.append(SSEEvent(n, ev.name, ev.data, doc, raw))
        if isinstance(doc, dict):
            t = doc.get("type")
            if t in TERMINAL_TYPES or ev.name in TERMINAL_TYPES:
                terminal = True
            if t == "error" or ev.name == "error":
                err = doc.get("error")
                msg = err.get("message") if isinstance(err, dict) else None
                errors.append(str(msg if msg is not None else err))
            _channels(doc, n, channels, names)
    return Stream(events, channels, terminal, errors)


def _chan(channels: dict[str, Channel], key: str, kind: str) -> Channel:
    c = channels.get(key)
    if c is None:
        c = channels[key] = Channel(key, kind)
    return c


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


_CHAT_FIELDS = tuple(
    (f, "thinking" if openai_chat.delta_kind(f) == "opaque" else "text")
    for f in ("content", "refusal", "reasoning_content", "reasoning")
)


def _channels(doc: dict, n: int, channels: dict[str, Channel], names: dict) -> None:
    t = doc.get("type")
    # -- Anthropic ---------------------------------------------------------------------
    if t == "content_block_start":
        i = doc.get("index")
        block = doc.get("content_block") or {}
        btype = block.get("type", "?")
        c = _chan(channels, f"block {i} {btype}", _block_kind(str(btype)))
        if isinstance(block.get("name"), str):
            c.name = block["name"]
        if isinstance(block.get("text"), str) and block["text"]:
            c.add(block["text"], n, "content_block.text")
        names[("a", i)] = c.key
        return
    if t == "content_block_delta":
        i = doc.get("index")
        d = doc.get("delta") or {}
        spec = _ANTHROPIC_DELTAS.get(str(d.get("type")))
        if spec is None:
            return  # signature_delta, citations_delta: not text
        fld, kind = spec
        v = d.get(fld)
        if isinstance(v, str):
            key = names.get(("a", i)) or f"block {i} {kind}"
            _chan(channels, key, kind).add(v, n, f"delta.{fld}")
        return
    # -- OpenAI Chat -------------------------------------------------------------------
    choices = doc.get("choices")
    if isinstance(choices, list) and doc.get("object", "chat.completion.chunk") == "chat.completion.chunk":
        for ci, ch in enumerate(choices):
            if not isinstance(ch, dict):
                continue
            idx = ch.get("index", ci)
            d = ch.get("delta")
            if not isinstance(d, dict):
                continue
            for fld, kind in _CHAT_FIELDS:
                v = d.get(fld)
                if isinstance(v, str) and v:
                    _chan(channels, f"choice {idx} {fld}", kind).add(v, n, f"choices[{ci}].delta.{fld}")
            for ti, tc in enumerate(d.get("tool_calls") or ()):
                if not isinstance(tc, dict):
                    continue
                j = tc.get("index", ti)
                fn = tc.get("function") or {}
                c = _chan(channels, f"choice {idx} tool_call {j} arguments", "json")
                if isinstance(fn.get("name"), str) and fn["name"]:
                    c.name = fn["name"]
                args = fn.get("arguments")
                if isinstance(args, str) and args:
                    c.add(args, n, f"choices[{ci}].delta.tool_calls[{ti}].function.arguments")
        return
    # -- OpenAI Responses --------------------------------------------------------------
    if isinstance(t, str) and t.startswith("response."):
        if t == "response.output_item.added":
            item = doc.get("item") or {}
            if isinstance(item.get("name"), str):
                names[("r", doc.get("output_index"))] = item["name"]
            return
        if t.endswith(".delta") and isinstance(doc.get("delta"), str):
            kind_name = t[len("response.") : -len(".delta")]
            oi = doc.get("output_index")
            sub = doc.get("content_index", doc.get("summary_index"))
            key = f"output {oi} {kind_name}" + (f" [{sub}]" if sub is not None else "")
            kind = "thinking" if openai_responses.event_rule(t, doc).kind == "opaque" else (
                "json" if "arguments" in kind_name or kind_name.endswith("input") else "text"
            )
            c = _chan(channels, key, kind)
            name = names.get(("r", oi))
            if name:
                c.name = name
            c.add(doc["delta"], n, "delta")


# -- rendering ---------------------------------------------------------------------------

MAX_EVENT_CHARS = 2000  # per event line in the view; the whole body is one view away (Raw)


def render_stream(body: bytes) -> str:
    """Text for a contentview: each channel's reassembled text, then every event."""
    s = parse_stream(body)
    out: list[str] = []
    ch = list(s.channels.values())
    out.append(f"{len(s.events)} events, {len(ch)} channels" + ("" if s.terminal else ", no final event"))
    for msg in s.errors:
        out.append(f"error event: {msg}")
    for c in ch:
        out.append("")
        out.append(f"── {c.label} · {c.kind} · {len(c.pieces)} pieces ──")
        text = c.text
        if c.kind == "json":
            try:
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            except ValueError:
                pass
        out.append(text)
    out.append("")
    out.append("── events ──")
    for e in s.events:
        name = e.name or ""
        if not name and isinstance(e.doc, dict):
            name = str(e.doc.get("type", ""))
        data = e.data if e.data is not None else ""
        if len(data) > MAX_EVENT_CHARS:
            data = data[:MAX_EVENT_CHARS] + f"… ({len(e.data or '')} chars)"
        out.append(f"{e.number:>4} {name:<26} {data}")
    return "\n".join(out)


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


def render_body(body: bytes, content_type: str = "", table: Rule | None = None) -> str:
    """Whatever the body is: SSE, JSON, or text (undecodable bytes replaced). With the
    API's table, a JSON body is followed by the fields it exempts by design."""
    if looks_like_sse(body, content_type):
        return render_stream(body)
    pretty = render_json(body)
    if pretty is not None:
        if table is not None:
            try:
                extra = untouched(fields.loads(body.decode("utf-8")), table)
            except (UnicodeDecodeError, ValueError, RecursionError):
                extra = []
            if extra:
                return pretty + "\n\n" + "\n".join(extra)
        return pretty
    return body.decode("utf-8", "replace")
