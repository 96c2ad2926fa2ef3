"""Anthropic Messages API: what to mask in a request, how to reverse a response.

Request fields follow https://docs.anthropic.com/en/api/messages. Streams follow
https://docs.anthropic.com/en/docs/build-with-claude/streaming: message_start,
content_block_start / _delta / _stop per content block `index`, message_delta, message_stop, ping and error.
"""

from __future__ import annotations

import json
import re

from ...base import readpass
from ...base.channels import channel_index
from ...base.exempt import COUNTERS, MODEL, SIGNED
from ...base.fields import ANSWER, CLIENT_ID, GENERIC, ID, META, OPAQUE, SCHEMA, SETTING, Media, Shape, Within, obj
from ...base.holdback import Window
from ...base.offsets import CITED_TEXT, DOCUMENT, Quoted, register_quoted
from ...base.restore import restore_json
from ...base.stream import SSEStream, StreamState
from ...base.wirespec import HOSTED, JSON, MASKED, RESTORED, SCANNED, SSE, TEXT, Endpoint, Provider, WireSpec, frozen
from ...base.wirespec import OPAQUE as OPAQUE_TEXT
from ...rules.rules import Restorer, json_escape
from ...wire import jsonspan
from ...wire.jsonspan import PROSE, USER, VALUES, Arr, Either, Obj, Rule, Typed
from ...wire.sse import Event
from ...wire.text import is_utf8

# Citations in history: cited text and titles are read; the index into encrypted
# search results is the API's own, file ids are ids.
# Server tools' results in history, by block type (their content: _SERVER_RESULT).
SERVER_RESULTS = (
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
)  # fmt: skip
_CITATION = Within({"type": META, "encrypted_index": OPAQUE, "file_id": ID})
_SOURCE = Typed(
    {
        "base64": Media("data", ("media_type",), {"type": META}),  # binary media untouched, text decoded
        "text": obj({"data": VALUES, "media_type": META}),
        "url": obj({"url": VALUES}),
        "file": obj({"file_id": ID}),
    },
    default=GENERIC,
)
# A container: its id, or {id, skills: [{skill_id, type, version}]} (+ expires_at, answers)
_CONTAINER = Shape(obj({"id": ID, "expires_at": META, "skills": Arr(obj({"skill_id": ID, "version": ID}))}),
                   GENERIC, ID)  # fmt: skip
_CONTENT_ARR = Arr(GENERIC)  # filled below (recursive through tool_result)
CONTENT = Either(VALUES, _CONTENT_ARR)
_TOOL_USE = obj({"id": ID, "name": VALUES, "input": USER})
# What server tools (web search and fetch, code execution, tool search) returned: read by
# the model, so masked, except the API's ids and encrypted results.
_SERVER_RESULT = Within(
    {"type": META, "tool_use_id": ID, "file_id": ID, "encrypted_content": OPAQUE, "encrypted_index": OPAQUE}
)
_SERVER_RESULT.fields["source"] = _SOURCE  # a fetched document (web_fetch): base64, text or content
_TEXT = obj({"text": VALUES, "citations": Arr(_CITATION)})
# A document block: one of the request's documents (`document_index` counts them); its
# plain text is what `char_location` citations count characters of (base/offsets.py).
_DOC_SOURCE = Typed({**_SOURCE.table, "text": obj({"data": CITED_TEXT, "media_type": META})}, default=GENERIC)
_DOCUMENT = obj({"source": _DOC_SOURCE, "title": VALUES, "context": VALUES, "citations": META})
_DOCUMENT.mark = DOCUMENT
_TEXTS = Either(VALUES, Arr(Typed({"text": _TEXT}, default=_TEXT)))  # text blocks only (system)
_BLOCK = Typed(
    {
        "text": _TEXT,
        "image": obj({"source": _SOURCE}),
        "document": _DOCUMENT,
        "search_result": obj({"source": VALUES, "title": VALUES, "content": _TEXTS, "citations": META}),
        "tool_use": _TOOL_USE,
        # Server tools have fixed names ("web_search"); renaming one breaks it.
        "server_tool_use": obj({"id": ID, "name": META, "input": USER}),
        "mcp_tool_use": obj({"id": ID, "name": VALUES, "server_name": VALUES, "input": USER}),
        "tool_result": obj({"tool_use_id": ID, "content": CONTENT, "is_error": META}),
        "mcp_tool_result": obj({"tool_use_id": ID, "content": CONTENT, "is_error": META}),
        "container_upload": obj({"file_id": ID}),
        **dict.fromkeys(SERVER_RESULTS, _SERVER_RESULT),
    },
    default=GENERIC,
)  # fmt: skip
_SOURCE.table["content"] = _DOC_SOURCE.table["content"] = obj({"content": CONTENT})
register_quoted(Quoted("char_location", "document_index", ("start_char_index", "end_char_index")))
# Thinking, in an assistant turn only (text, signature: byte-identical; other members unknown);
# elsewhere (a user turn, a tool result) no signature can be valid: unknown content.
_ASSISTANT_BLOCK = Typed({**_BLOCK.table, "thinking": obj({"thinking": OPAQUE, "signature": OPAQUE}),
                          "redacted_thinking": obj({"data": OPAQUE})}, default=GENERIC)  # fmt: skip


class _Block(Rule):
    """A content block; one without a `type` is read as a text block (its other members
    unknown: masked), one of an unknown type is unknown (everything masked)."""

    string = True
    kind = "unknown"

    def __init__(self, table: Rule) -> None:
        self.table = table

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and "type" not in value:
            return _TEXT.resolve(value)
        return self.table.resolve(value)


_CONTENT_ARR.item = _Block(_BLOCK)
_ASSISTANT = Obj({"role": META, "content": Either(VALUES, Arr(_Block(_ASSISTANT_BLOCK)))}, default=GENERIC)
_TURN = Typed({"assistant": _ASSISTANT}, default=Obj({"role": META, "content": CONTENT}, default=GENERIC), field="role")

# input_examples: example inputs, user-defined JSON like tool_use input (keys and values)
_CUSTOM_TOOL = obj({"name": VALUES, "description": VALUES, "input_schema": SCHEMA, "input_examples": Arr(USER)})
_SERVER_TOOL = obj({"name": META, "input_examples": Arr(USER)})


class _Tool(Rule):
    """Custom tools (no type, or "custom") are masked whole; server tools
    ("web_search_20250305", "bash_20250124", ...) keep their fixed names."""

    string = True

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and value.get("type", "custom") not in ("custom", None):
            return _SERVER_TOOL
        return _CUSTOM_TOOL


# The request's settings: masked as settings (numbers pass, words only where they hold
# an original); the model name is untouched.
_SETTINGS = (
    "max_tokens", "stream", "temperature", "top_p", "top_k", "thinking",
    "service_tier", "anthropic_version", "anthropic_beta",
)  # fmt: skip

_FORMAT = obj({"schema": SCHEMA})  # structured outputs: a JSON Schema (property names are keys)
MESSAGES_REQUEST = Obj(
    {
        "model": MODEL, **dict.fromkeys(_SETTINGS, SETTING), "container": _CONTAINER, "system": _TEXTS,
        "messages": Arr(_TURN), "tools": Arr(_Tool()),
        "tool_choice": obj({"name": VALUES, "disable_parallel_tool_use": META}),
        "output_config": obj({"format": _FORMAT, "effort": META}), "output_format": _FORMAT,  # (the beta's)
        # server-held state (the beta's Threads, anthropic 2's tool runner): create, or continue (only the new turn)
        "thread": obj({"previous_message_id": ID}),
    },
    default=GENERIC,
    prompt=("tools", "system", "messages"),  # the prompt's order, and its cache's (build-with-claude/prompt-caching)
    # what continues state the server keeps (keyed numbers, base/prompt.py): a container reused
    # (code execution: files earlier requests wrote), a thread continued (the turns it holds)
    state=("container", "thread"),
    # an answer asked for as JSON (base/jsonanswer.py)
    json_answer=tuple((p, frozenset({"json_schema"})) for p in (("output_config", "format", "type"),
                                                                ("output_format", "type"))),
)  # fmt: skip
BATCH_REQUEST = Obj(
    {"requests": Arr(Obj({"custom_id": CLIENT_ID, "params": MESSAGES_REQUEST}, default=GENERIC))},
    default=GENERIC,
)

# -- responses -------------------------------------------------------------------------

_RESP_BLOCK = Typed(
    {
        "text": obj({"text": ANSWER, "citations": Arr(_CITATION)}),
        "tool_use": obj({"id": ID, "name": VALUES, "input": USER}),
        "server_tool_use": obj({"id": ID, "name": VALUES, "input": USER}),
        "mcp_tool_use": obj({"id": ID, "name": VALUES, "server_name": VALUES, "input": USER}),
        "mcp_tool_result": obj({"tool_use_id": ID, "content": CONTENT, "is_error": META}),
        "container_upload": obj({"file_id": ID}),
        "thinking": SIGNED,
        "redacted_thinking": SIGNED,
        **dict.fromkeys(SERVER_RESULTS, _SERVER_RESULT),
    },
    default=GENERIC,
)
_MESSAGE = Obj(
    {
        **dict.fromkeys(("type", "role", "model", "stop_reason"), META), "usage": COUNTERS,
        "id": ID,
        "container": _CONTAINER,
        "content": Arr(_RESP_BLOCK),
        "stop_sequence": VALUES,
    },
    default=GENERIC,
)
MESSAGE_RESPONSE: Rule = _MESSAGE  # also error bodies: {"type":"error","error":{...}}
# One line of a batch's results (JSON lines): `result` holds a whole Message.
BATCH_RESULT = Obj(
    {"custom_id": CLIENT_ID, "result": Obj({"type": META, "message": _MESSAGE, "error": GENERIC}, default=GENERIC)},
    default=GENERIC,
)
_START = Obj({"type": META, "index": META, "content_block": _RESP_BLOCK}, default=GENERIC)
_MESSAGE_START = Obj({"type": META, "message": _MESSAGE}, default=GENERIC)
_MESSAGE_DELTA = Obj(
    {"type": META, "usage": COUNTERS, "delta": Obj({"stop_reason": META, "stop_sequence": VALUES,
                                                "container": obj({"id": ID})}, default=GENERIC)},
    default=GENERIC,
)  # fmt: skip
_DELTA_TYPES = Typed(
    {
        "text_delta": obj({"text": PROSE}),
        "input_json_delta": obj({"partial_json": PROSE}),
        "thinking_delta": SIGNED,
        "signature_delta": SIGNED,
        "citations_delta": obj({"citation": _CITATION}),
    },
    default=GENERIC,
)
_DELTA = Obj({"type": META, "index": META, "delta": _DELTA_TYPES}, default=GENERIC)
# Each event of a stream by its type (the stream below restores with these; the audit
# and the views read them too).
EVENTS: dict[str, Rule] = {
    "message_start": _MESSAGE_START,
    "content_block_start": _START,
    "content_block_delta": _DELTA,
    "content_block_stop": META,
    "message_delta": _MESSAGE_DELTA,
    "message_stop": META,
    "ping": META,
    "error": Obj({"type": META, "error": VALUES}, default=GENERIC),
}
STREAM_EVENT: Rule = Typed(EVENTS, default=GENERIC)


def delta_kind(delta_type: str) -> str:
    """The kind of a content_block_delta's text by its delta type (fields.KINDS)."""
    return _DELTA_TYPES.table.get(delta_type, GENERIC).kind


def block_kind(block_type: str) -> str:
    """The kind of a response content block by its type (thinking: opaque)."""
    return _RESP_BLOCK.table.get(block_type, GENERIC).kind

def view(doc: dict, ev, b) -> bool:
    """A view's reader of one stream event (inspect/sseview.Builder): one channel per
    content block `index` (text, tool input JSON, thinking); signatures are counted, not
    shown."""
    t = doc.get("type")
    if t == "content_block_start":
        i = doc.get("index")
        block = doc.get("content_block") or {}
        btype = block.get("type", "?")
        c = b.channel(f"block {i} {btype}", _view_kind(str(btype)))
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
        dtype = str(d.get("type"))
        if dtype not in SPEC.deltas or dtype == "signature_delta":
            ev.note = dtype  # signature_delta, citations_delta: not text
            return True
        fld, kind = SPEC.deltas[dtype]
        v = d.get(fld)
        if isinstance(v, str):
            shown = "thinking" if delta_kind(dtype) == "opaque" else kind
            key = b.names.get(("a", i)) or f"block {i} {shown}"
            b.add(ev, key, shown, v, f"delta.{fld}")
        return True
    return t in SPEC.events and t != SPEC.error_event


def _view_kind(btype: str) -> str:
    return "thinking" if block_kind(btype) == "opaque" else "text" if SPEC.blocks.get(btype) == TEXT else "json"


# The Messages stream's wire vocabulary, for every reader (base/wirespec.py).
# Anthropic's API: the key in x-api-key (an OAuth token in Authorization).
PROVIDER = Provider(
    "anthropic", hosts=("api.anthropic.com",),
    headers=frozenset({"x-api-key", "anthropic-api-key", "authorization"}),
)  # fmt: skip

# Every endpoint the `anthropic` SDK calls (tests/inventory/anthropic.json; the batch
# results are fetched from the `results_url` a batch names), with what disguise does with
# it (apis/registry.py routes the transformed ones; tests/apis/test_inventory.py
# checks every call of the installed SDK is here and routed as it says).
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("POST", "/v1/messages", MASKED),
    Endpoint("POST", "/v1/messages/count_tokens", MASKED),
    Endpoint("POST", "/v1/messages/batches", MASKED),
    Endpoint("GET", "/v1/messages/batches", SCANNED),
    Endpoint("GET DELETE", "/v1/messages/batches/{id}", SCANNED),
    Endpoint("POST", "/v1/messages/batches/{id}/cancel", SCANNED),
    Endpoint("GET", "/v1/messages/batches/{id}/results", RESTORED),
    # the legacy Text Completions API: its prompt is scanned, not masked
    Endpoint("POST", "/v1/complete", SCANNED),
    # the Files API shares OpenAI's paths: an upload is read by batch.BatchUpload, a
    # download restored as a file, a file's metadata as OpenAI's file object (its
    # `filename` restored)
    Endpoint("POST", "/v1/files", MASKED),
    Endpoint("GET", "/v1/files", RESTORED),
    Endpoint("GET", "/v1/files/{id}", RESTORED),
    Endpoint("DELETE", "/v1/files/{id}", SCANNED),
    Endpoint("GET", "/v1/files/{id}/content", RESTORED),
    Endpoint("GET", "/v1/models", SCANNED),
    Endpoint("GET", "/v1/models/{id}", SCANNED),
    # Skills and Managed Agents (beta): system prompts, a session's events, memories
    Endpoint("GET POST DELETE", "/v1/skills/**", SCANNED),
    Endpoint("GET POST", "/v1/agents/**", SCANNED),
    Endpoint("GET POST DELETE", "/v1/sessions/**", SCANNED),
    Endpoint("GET POST DELETE", "/v1/memory_stores/**", SCANNED),
    Endpoint("GET POST", "/v1/dreams/**", SCANNED),
    # infrastructure and administration: scanned on Anthropic's hosts
    Endpoint("GET POST DELETE", "/v1/environments/**", HOSTED),
    Endpoint("GET POST", "/v1/deployments/**", HOSTED),
    Endpoint("GET", "/v1/deployment_runs/**", HOSTED),
    Endpoint("GET POST", "/v1/tunnels/**", HOSTED),
    Endpoint("GET POST DELETE", "/v1/vaults/**", HOSTED),
    Endpoint("GET POST DELETE", "/v1/user_profiles/**", HOSTED),
    Endpoint("GET POST DELETE", "/v1/organizations/**", HOSTED),
    Endpoint("GET POST", "/v1/compliance/**", HOSTED),
)

SPEC = WireSpec(
    "anthropic.messages",
    ("apis.anthropic.messages",),
    (SSE,),
    events=frozenset(EVENTS),
    terminal=frozenset({"message_stop"}),
    error_event="error",
    stop_members=("stop_reason",),
    # delta type -> the member holding its text, and the text's kind
    deltas=frozen({"text_delta": ("text", TEXT), "input_json_delta": ("partial_json", JSON),
                   "thinking_delta": ("thinking", OPAQUE_TEXT), "signature_delta": ("signature", OPAQUE_TEXT)}),
    # content block type -> its channel's kind (other blocks have none)
    blocks=frozen({"text": TEXT, "tool_use": JSON, "server_tool_use": JSON, "mcp_tool_use": JSON}),
    view=view,
)  # fmt: skip
_PASS_DELTAS = frozenset(t for t, (_, kind) in SPEC.deltas.items() if kind == OPAQUE_TEXT)
_PASS_DELTAS_RAW = frozenset(t.encode() for t in _PASS_DELTAS)
_MODE = {TEXT: Window.TEXT, JSON: Window.JSON}
_WINDOW_KIND = {b: _MODE[kind] for b, kind in SPEC.blocks.items()}
_DELTA_FOR = {_MODE[kind]: (t, fld) for t, (fld, kind) in SPEC.deltas.items() if kind in _MODE}

# The members a delta's text is in (SPEC.deltas), for the fast shapes below.
_FIELDS = "|".join(fld for fld, _ in SPEC.deltas.values())

# The exact shape the API sends for a delta, so the hot path needs no json.loads. The
# trailing spaces are real (see the recorded streams). Anything else takes the slow path.
_FAST_DELTA = re.compile(
    r'\{\s*"type"\s*:\s*"content_block_delta"\s*,\s*"index"\s*:\s*(\d+)\s*,\s*"delta"\s*:\s*'
    r'\{\s*"type"\s*:\s*"(\w+)"\s*,\s*"(?:' + _FIELDS + r')"\s*:\s*'
    r'"([^"\\]*(?:\\.[^"\\]*)*)"\s*\}\s*\}\s*\Z'
)
# The same shape as a whole event's bytes, for on_raw: parse_event's one-data-line
# shape (no CR anywhere, no line break in the data), whitespace and the string body
# narrowed to what cannot be a line break, digits and names to ASCII. Whatever it
# matches, _FAST_DELTA matches in the parsed event's data with the same groups.
_RAW_DELTA = re.compile(
    rb'event: [^\r\n]*\ndata: \{[ \t\f\v]*"type"[ \t\f\v]*:[ \t\f\v]*"content_block_delta"[ \t\f\v]*,'
    rb'[ \t\f\v]*"index"[ \t\f\v]*:[ \t\f\v]*([0-9]+)[ \t\f\v]*,[ \t\f\v]*"delta"[ \t\f\v]*:[ \t\f\v]*'
    rb'\{[ \t\f\v]*"type"[ \t\f\v]*:[ \t\f\v]*"([A-Za-z0-9_]+)"[ \t\f\v]*,[ \t\f\v]*'
    rb'"(?:' + _FIELDS.encode() + rb')"[ \t\f\v]*:[ \t\f\v]*'
    rb'"([^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*)"[ \t\f\v]*\}[ \t\f\v]*\}[ \t\f\v]*\n\n\Z'
)


class AnthropicStream(SSEStream):
    """One Messages stream. A window per content block index; thinking and redacted
    thinking blocks (and so their signature_delta) pass byte-identical."""

    TERMINAL = SPEC.ends
    # Always parsed: the last event, errors, and where a block's window opens and
    # closes (a block without a window passes its deltas as they came).
    MARKERS = (*SPEC.markers, b'"error"', b"content_block_start", b"content_block_stop")

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        # per block index; None: passed as is (before the pass, which keeps this very dict)
        self.windows: dict[int, Window | None] = {}
        self._texts: set[int] = set()  # text blocks' windows (JSON mode for a JSON answer): _drain_one's delta type
        if readpass.make_pass is not None and type(self) is AnthropicStream:  # (a subclass: its own on_raw)
            self._pass = readpass.make_pass(self, readpass.ANTHROPIC)

    def on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        m = _FAST_DELTA.match(data)
        if m is not None:
            dtype = m.group(2)
            if dtype in _PASS_DELTAS:
                return [ev.raw]
            idx = int(m.group(1))
            w = self._window(idx, dtype)
            if w is None:
                return [ev.raw]
            return self.window_field(ev, w, m.start(3), m.end(3))
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            return self.not_object(ev)
        if not isinstance(obj, dict):
            return self.not_object(ev)
        t = obj.get("type")
        if t == "content_block_delta":
            return self._slow_delta(ev, obj)
        if t == "content_block_start":
            return self._start(ev, obj)
        if t == "content_block_stop":
            stop = channel_index(obj.get("index"))
            out = self._drain_one(stop)
            self.windows.pop(stop, None)
            out.append(ev.raw)
            return out
        if t in SPEC.terminal or t == SPEC.error_event:
            self.to(StreamState.FINISHING)
            out = self.drain()
            out.append(self._restored(ev, VALUES if t == SPEC.error_event else GENERIC))
            return out
        if t == "ping":
            return [ev.raw]
        if t == "message_start":
            return [self._restored(ev, _MESSAGE_START)]
        if t == "message_delta":
            return [self._restored(ev, _MESSAGE_DELTA)]
        return [self._restored(ev, GENERIC)]

    def on_raw(self, raw: bytes) -> list[bytes] | None:
        """A text or JSON delta in the API's own shape, from its bytes (SSEStream.on_raw)."""
        m = _RAW_DELTA.match(raw)
        if m is None:
            return None
        if not is_utf8(raw):
            return None  # parsed: it ends the stream
        dtype = m.group(2)
        if dtype in _PASS_DELTAS_RAW:
            return [raw]
        kind = Window.JSON if dtype == b"input_json_delta" else Window.OUTPUT
        w = self.windows.get(int(m.group(1)), False)
        if w is None:
            return [raw]
        if w is False or ((int(m.group(1)) in self._texts) == (kind == Window.JSON) and not w.held):  # type: ignore[union-attr]
            w = Window(self.restorer, kind)  # as _window makes it, kept only if the delta is read here
            got = self.window_raw(raw, w, m.start(3), m.end(3))
            if got is not None:
                self.windows[int(m.group(1))] = w
                (self._texts.discard if dtype == b"input_json_delta" else self._texts.add)(int(m.group(1)))
            return got
        return self.window_raw(raw, w, m.start(3), m.end(3))  # type: ignore[arg-type]

    def _window(self, idx: int, dtype: str) -> Window | None:
        kind = Window.JSON if dtype == "input_json_delta" else Window.OUTPUT
        w = self.windows.get(idx, False)
        if w is None:  # a block without a window (content_block_start said so)
            return None
        if w is False or ((idx in self._texts) == (kind == Window.JSON) and not w.held):  # type: ignore[union-attr]
            # a delta with no start seen, or of another kind than its block's: treated by
            # its delta type (an empty window is the same as a new one, so what a delta
            # gets never depends on deltas that passed unparsed before it)
            w = self.windows[idx] = Window(self.restorer, kind)
            (self._texts.discard if dtype == "input_json_delta" else self._texts.add)(idx)
        return w  # type: ignore[return-value]

    def _restored(self, ev: Event, rule: Rule) -> bytes:
        new = restore_json(ev.data, rule, self.restorer)  # type: ignore[arg-type]
        if new is None:
            return ev.raw
        self.events_changed += 1
        return ev.with_data(new)

    def _start(self, ev: Event, obj: dict) -> list[bytes]:
        idx = channel_index(obj.get("index"))
        block = obj.get("content_block")
        btype = block.get("type") if isinstance(block, dict) else None
        kind = _WINDOW_KIND.get(btype)  # type: ignore[arg-type]
        w = Window(self.restorer, Window.OUTPUT if kind == Window.TEXT else kind) if kind is not None else None
        self.windows[idx] = w
        (self._texts.add if kind == Window.TEXT else self._texts.discard)(idx)
        if btype in ("thinking", "redacted_thinking"):
            return [ev.raw]
        if w is not None and kind == Window.TEXT:
            # A start that already carries text: that text is the channel's beginning.
            data = ev.data
            assert data is not None
            r = self.restorer
            new, changed = jsonspan.transform(
                data, obj, _START, lambda v, rule: w.feed(v) if rule.prose else r.value(v)
            )
            if changed:
                self.events_changed += 1
                return [ev.with_data(new)]
            return [ev.raw]
        return [self._restored(ev, _START)]

    def _slow_delta(self, ev: Event, obj: dict) -> list[bytes]:
        delta = obj.get("delta")
        dtype = delta.get("type") if isinstance(delta, dict) else None
        if dtype in _PASS_DELTAS:
            return [ev.raw]
        if dtype in ("text_delta", "input_json_delta"):
            idx = channel_index(obj.get("index"))
            w = self._window(idx, dtype)  # type: ignore[arg-type]
            if w is None:
                return [ev.raw]
            data = ev.data
            assert data is not None
            r = self.restorer
            released: list[str] = []

            def fn(v: str, rule: Rule) -> str:
                if not rule.prose:
                    return r.value(v)
                out = w.feed(v)  # type: ignore[union-attr]
                released.append(out)
                return out

            new, changed = jsonspan.transform(data, obj, _DELTA, fn)
            if w.held:
                self.events_held += 1
            if not changed:
                return [ev.raw]
            if released and not released[0]:
                return []  # everything held: the text goes out with a later event
            self.events_changed += 1
            return [ev.with_data(new)]
        return [self._restored(ev, _DELTA)]  # citations_delta and future kinds

    def _drain_one(self, idx: int) -> list[bytes]:
        w = self.windows.get(idx)
        if w is None or not w.held:
            return []
        tail = w.flush()
        if not tail:
            return []
        dtype, field = _DELTA_FOR[Window.TEXT if self.restorer.output and idx in self._texts else w.mode]
        data = (
            f'{{"type":"content_block_delta","index":{idx},'
            f'"delta":{{"type":"{dtype}","{field}":"{json_escape(tail)}"}}}}'
        )
        return [f"event: content_block_delta\ndata: {data}\n\n".encode()]

    def drain(self) -> list[bytes]:
        out: list[bytes] = []
        for idx in sorted(self.windows):
            out.extend(self._drain_one(idx))
        return out

    def error_event(self, message: str) -> bytes:
        body = json.dumps({"type": "error", "error": {"type": "api_error", "message": message}})
        return f"event: error\ndata: {body}\n\n".encode()


def error_body(message: str, kind: str = "invalid_request_error") -> bytes:
    """A response body in the shape the Anthropic API uses for errors."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
