"""OpenAI Responses: what to mask, how to reverse (sans I/O).

https://platform.openai.com/docs/api-reference/responses-streaming (typed events with a
`sequence_number`). Reasoning items and `encrypted_content` pass untouched, like thinking.
"""

from __future__ import annotations

import json
import re

from ..core import jsonspan
from ..core.holdback import Window
from ..core.jsonspan import JSON_TEXT, PROSE, SKIP, VALUES, Arr, Either, Obj, Rule, Typed, escaped_name
from ..core.rules import Restorer
from ..core.sse import Event, Framer, parse_event
from ..errors import StreamError
from .channels import Chan, ChannelStream
from .channels import dumps_bytes as _dumps
from .fields import GENERIC, SCHEMA, _obj
from .logprobs import clean_alternatives
from .openai_chat import _FUNCTION_DEF, _JSON_SCHEMA_FORMAT, _STR, _TOOL_CHOICE, DATA_URL
from .restore import restore_doc
from .stream import StreamState

# -- Responses requests ----------------------------------------------------------------

_IN_PART = Typed(
    {
        "input_text": _obj({"text": VALUES}),
        "output_text": _obj({"text": VALUES, "annotations": GENERIC, "logprobs": SKIP}),
        "input_image": _obj({"image_url": DATA_URL, "file_id": SKIP, "detail": SKIP}),
        "input_file": _obj({"file_data": SKIP, "file_id": SKIP, "filename": VALUES, "file_url": VALUES}),
        "input_audio": _obj({"input_audio": SKIP}),
        "refusal": _obj({"refusal": VALUES}),
        "summary_text": _obj({"text": VALUES}),
    },
    default=GENERIC,
)  # fmt: skip
_IN_CONTENT = Either(VALUES, Arr(_IN_PART))
# A tool an MCP server lists: its input_schema is a JSON Schema (property names are keys).
_MCP_TOOL = _obj({"name": VALUES, "description": VALUES, "input_schema": SCHEMA, "annotations": GENERIC})
_MESSAGE_ITEM = _obj({"id": SKIP, "role": SKIP, "status": SKIP, "content": _IN_CONTENT})
_INPUT_ITEM = Typed(
    {
        "message": _MESSAGE_ITEM,
        "function_call": _obj({"id": SKIP, "call_id": SKIP, "name": VALUES, "arguments": JSON_TEXT}),
        "function_call_output": _obj({"id": SKIP, "call_id": SKIP, "output": _IN_CONTENT}),
        "custom_tool_call": _obj({"id": SKIP, "call_id": SKIP, "name": VALUES, "input": VALUES}),
        "custom_tool_call_output": _obj({"id": SKIP, "call_id": SKIP, "output": _IN_CONTENT}),
        # Reasoning items carry encrypted_content and go back exactly as they came.
        "reasoning": SKIP,
        "item_reference": SKIP,
        "compaction": SKIP,  # encrypted_content only
        "mcp_call": _obj({"id": SKIP, "name": VALUES, "server_label": VALUES, "arguments": JSON_TEXT,
                          "approval_request_id": SKIP}),
        "mcp_approval_request": _obj({"id": SKIP, "name": VALUES, "server_label": VALUES,
                                      "arguments": JSON_TEXT}),
        "mcp_approval_response": _obj({"id": SKIP, "approval_request_id": SKIP}),
        "mcp_list_tools": _obj({"id": SKIP, "server_label": VALUES, "tools": Arr(_MCP_TOOL)}),
    },
    default=GENERIC,
)  # fmt: skip


class _Item(Rule):
    """An input item; one without a `type` is a message ({"role", "content"})."""

    string = True

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and "type" not in value:
            return _MESSAGE_ITEM
        return _INPUT_ITEM.resolve(value)


_RESPONSES_TOOL = Typed(
    {
        "function": _FUNCTION_DEF,
        "custom": _obj({"name": VALUES, "description": VALUES, "format": GENERIC}),
        "tool_search": _obj({"description": VALUES, "parameters": SCHEMA}),
    },
    default=_obj({"name": SKIP}),  # built-in tools (web_search, file_search, ...)
)
# a namespace groups the client's own tools under a name of the client's
_RESPONSES_TOOL.table["namespace"] = _obj({"name": VALUES, "description": VALUES, "tools": Arr(_RESPONSES_TOOL)})
# input items that carry tool definitions
_INPUT_ITEM.table["additional_tools"] = _obj({"id": SKIP, "tools": Arr(_RESPONSES_TOOL)})
_INPUT_ITEM.table["tool_search_output"] = _obj({"id": SKIP, "call_id": SKIP, "tools": Arr(_RESPONSES_TOOL)})
_TEXT_CONFIG = _obj({"format": _JSON_SCHEMA_FORMAT, "verbosity": SKIP})
_INPUT_ITEM.table["configuration_update"] = _obj({"id": SKIP, "text": _TEXT_CONFIG})
_RESPONSES_SKIPPED = (
    "model", "stream", "temperature", "top_p", "max_output_tokens", "max_tool_calls",
    "parallel_tool_calls", "previous_response_id", "include", "store", "reasoning",
    "service_tier", "truncation", "background", "prompt_cache_retention",
    "top_logprobs", "stream_options", "conversation",
)  # fmt: skip
# A reusable prompt: its variables are substituted into what the model reads.
_PROMPT = _obj({"id": SKIP, "version": SKIP, "variables": Obj({}, default=Either(VALUES, _IN_PART))})
RESPONSES_REQUEST = Obj(
    {
        **{k: SKIP for k in _RESPONSES_SKIPPED},
        "prompt": _PROMPT,
        "instructions": Either(VALUES, Arr(_Item())),
        "input": Either(VALUES, Arr(_Item())),
        "tools": Arr(_RESPONSES_TOOL),
        "tool_choice": _TOOL_CHOICE,
        "text": _TEXT_CONFIG,
    },
    default=GENERIC,
)

_OUT_PART = Typed(
    {
        "output_text": _obj({"text": PROSE, "annotations": GENERIC, "logprobs": SKIP}),
        "refusal": _obj({"refusal": PROSE}),
        "reasoning_text": SKIP,  # reasoning: untouched, like thinking
    },
    default=GENERIC,
)
_OUT_ITEM = Typed(
    {
        "message": _obj({"id": SKIP, "role": SKIP, "status": SKIP, "content": Arr(_OUT_PART)}),
        "function_call": _obj({"id": SKIP, "call_id": SKIP, "name": VALUES, "arguments": JSON_TEXT}),
        "custom_tool_call": _obj({"id": SKIP, "call_id": SKIP, "name": VALUES, "input": VALUES}),
        "mcp_call": _obj({"id": SKIP, "name": VALUES, "server_label": VALUES, "arguments": JSON_TEXT,
                          "approval_request_id": SKIP}),
        "mcp_approval_request": _obj({"id": SKIP, "name": VALUES, "server_label": VALUES,
                                      "arguments": JSON_TEXT}),
        "mcp_list_tools": _obj({"id": SKIP, "server_label": VALUES, "tools": Arr(_MCP_TOOL)}),
        "image_generation_call": _obj({"id": SKIP, "result": SKIP}),  # base64 image
        "additional_tools": _obj({"id": SKIP, "tools": Arr(_RESPONSES_TOOL)}),
        "tool_search_output": _obj({"id": SKIP, "call_id": SKIP, "tools": Arr(_RESPONSES_TOOL)}),
        # outputs of calls, listed back: their file parts are base64 (never touched)
        "function_call_output": _obj({"id": SKIP, "call_id": SKIP, "output": _IN_CONTENT}),
        "custom_tool_call_output": _obj({"id": SKIP, "call_id": SKIP, "output": _IN_CONTENT}),
        "mcp_approval_response": _obj({"id": SKIP, "approval_request_id": SKIP}),
        "compaction": SKIP,
        "reasoning": SKIP,
    },
    default=GENERIC,
)
RESPONSE_OBJECT = Obj(
    {
        **{k: SKIP for k in _RESPONSES_SKIPPED if k not in ("reasoning",)},
        **{k: SKIP for k in ("id", "object", "created_at", "completed_at", "status", "usage", "reasoning")},
        "output": Arr(_OUT_ITEM),
        # the request's own fields, echoed back: restored like the request was masked
        "prompt": _PROMPT,
        "instructions": Either(VALUES, Arr(_Item())),
        "tools": Arr(_RESPONSES_TOOL),
        "tool_choice": _TOOL_CHOICE,
        "text": _TEXT_CONFIG,
    },
    default=GENERIC,
)  # fmt: skip


# -- retrievals (stored responses: literals only, see registry.py) ---------------------

class _AnyItem(Rule):
    """An item listed back by input_items: an input item, or an output item (a message
    with output_text parts, a call the model made)."""

    string = True

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and value.get("type") in _OUT_ITEM.table and value.get("role") == "assistant":
            return _OUT_ITEM.resolve(value)
        return _Item().resolve(value)


INPUT_ITEMS_LIST = Obj(
    {"object": SKIP, "first_id": SKIP, "last_id": SKIP, "data": Arr(_AnyItem())}, default=GENERIC
)

# -- Responses streams -----------------------------------------------------------------

_SEQ = re.compile(r'(?<!\\)"sequence_number"\s*:\s*(\d+)')
_SEQ_VALUE = re.compile(rb"\s*:\s*(\d+)")


def _seq_span(data: str) -> tuple[int, int] | None:
    """Where the event's own sequence number (its top-level `sequence_number`, an
    integer) is in data, the key read as JSON reads it. The regex finds the plain
    spelling; a spelling with escapes (`"sequence_n\\u0075mber"`), or a second such key
    (nested, or repeated), is found by walking the top level of the event instead."""
    if not escaped_name(data):
        m = _SEQ.search(data)
        if m is None:
            return None
        if data.find('"sequence_number"', m.end()) < 0:
            return m.span(1)
    span = jsonspan.member_span(data, "sequence_number")
    if span is None or not data[span[0] : span[1]].isdigit():
        return None
    return span
# delta event type -> (channel field, window mode, the matching done event's field)
_DELTAS = {
    "response.output_text.delta": ("text", Window.TEXT),
    "response.refusal.delta": ("refusal", Window.TEXT),
    "response.function_call_arguments.delta": ("args", Window.JSON),
    "response.custom_tool_call_input.delta": ("input", Window.VALUE),
    "response.mcp_call_arguments.delta": ("args", Window.JSON),
    "response.code_interpreter_call_code.delta": ("code", Window.VALUE),
    "response.shell_call_command.delta": ("command", Window.VALUE),
    "response.audio.transcript.delta": ("transcript", Window.TEXT),
}
_DONES = {
    "response.output_text.done": ("response.output_text.delta", "text", PROSE),
    "response.refusal.done": ("response.refusal.delta", "refusal", PROSE),
    "response.function_call_arguments.done": ("response.function_call_arguments.delta", "arguments", JSON_TEXT),
    "response.custom_tool_call_input.done": ("response.custom_tool_call_input.delta", "input", VALUES),
    "response.mcp_call_arguments.done": ("response.mcp_call_arguments.delta", "arguments", JSON_TEXT),
    "response.code_interpreter_call_code.done": ("response.code_interpreter_call_code.delta", "code", VALUES),
    "response.shell_call_command.done": ("response.shell_call_command.delta", "command", VALUES),
    "response.audio.transcript.done": ("response.audio.transcript.delta", "", VALUES),  # no text of its own
}  # fmt: skip
_SNAPSHOT = {
    "response.output_item.added": Obj({"item": _OUT_ITEM}, default=GENERIC),
    "response.output_item.done": Obj({"item": _OUT_ITEM}, default=GENERIC),
    "response.content_part.added": Obj({"part": _OUT_PART}, default=GENERIC),
    "response.content_part.done": Obj({"part": _OUT_PART}, default=GENERIC),
}
_FAST_TYPE = re.compile(
    r'\{"type":"(response\.(?:output_text|refusal|function_call_arguments)\.delta)"'
)
_FAST_FIELDS = {
    "delta": re.compile(r'"delta":' + _STR),
    "item_id": re.compile(r'"item_id":"([^"\\]*)"'),
    "output_index": re.compile(r'"output_index":(\d+)'),
    "content_index": re.compile(r'"content_index":(\d+)'),
}
_RESPONSE_EVENT = Obj({"response": RESPONSE_OBJECT}, default=GENERIC)
_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OPAQUE = frozenset({"response.audio.delta", "response.image_generation_call.partial_image"})


def _channel(t: str, obj: dict) -> tuple:
    field = _DELTAS[t][0]
    ident = obj.get("item_id")
    if ident is None:  # events that name their item by position only (shell commands, audio)
        ident = ("out", obj.get("output_index"))
    if field in ("text", "refusal"):
        return (ident, obj.get("content_index", 0), field)
    if field == "command":
        return (ident, obj.get("command_index", 0), field)
    return (ident, field)


class ResponsesStream(ChannelStream):
    """One Responses stream: a window per (item, content index, field). Synthetic
    deltas carrying held tails get their own sequence numbers; every later event is
    renumbered so the client sees them strictly increasing and gapless."""

    TERMINAL = "response.completed, response.failed or response.incomplete"
    TERMINAL_MARKERS = (b"response.completed", b"response.failed", b"response.incomplete", b'"error"')

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.offset = 0  # synthetic events inserted so far
        self.last_seq = -1  # the last upstream sequence number seen
        self.where: dict[tuple, dict] = {}  # channel -> fields for its synthetic deltas
        self.seen_response = False  # a response object went out (response.created)

    def is_terminal(self, ev: Event) -> bool:
        try:
            obj = json.loads(ev.data) if ev.data is not None else None
        except ValueError:
            return False
        return isinstance(obj, dict) and (obj.get("type") in _ENDS or obj.get("type") == "error")

    def quiet(self) -> bool:
        # whole runs of events pass unframed only while nothing needs renumbering
        return self.offset == 0 and super().quiet()

    def passed(self, run: bytes, end: int) -> None:
        # Events the client saw unparsed still count: a synthetic or error event at the
        # end must continue their numbering. Sequence numbers only grow, so the last
        # one in the run is the one that matters.
        if escaped_name(run, end):  # a key spelled with escapes: read the events parsed
            for ev in Framer().feed(run[:end]):
                try:
                    obj = json.loads(ev.data) if ev.data is not None else None
                except ValueError:
                    continue
                seq = obj.get("sequence_number") if isinstance(obj, dict) else None
                if isinstance(seq, int):
                    self.last_seq = max(self.last_seq, seq)
            return
        i = run.rfind(b'"sequence_number"', 0, end)
        while i > 0 and run[i - 1] == 0x5C:  # `\"`: inside a string, not a key
            i = run.rfind(b'"sequence_number"', 0, i)
        if i >= 0:
            m = _SEQ_VALUE.match(run, i + 17)
            if m is not None:
                self.last_seq = max(self.last_seq, int(m.group(1)))

    def pass_on(self, raw: bytes) -> bytes:
        if not self.offset:
            self.passed(raw, len(raw))
            return raw
        ev = parse_event(raw)
        if ev.bad:
            raise StreamError("an event is not UTF-8 text")
        return raw if ev.data is None else self._renumbered(ev, ev.data)

    def on_event(self, ev: Event) -> list[bytes]:
        prev = self.last_seq
        try:
            return self._on_event(ev)
        except StreamError:
            self.last_seq = prev  # the event never went out: the error event takes its number
            raise

    def _on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        fast = self._fast_delta(ev, data)
        if fast is not None:
            return fast
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            return self.not_object(ev)
        if not isinstance(obj, dict):
            return self.not_object(ev)
        seq = obj.get("sequence_number")
        if isinstance(seq, int):
            self.last_seq = max(self.last_seq, seq)
        t = obj.get("type")
        if t in _ENDS or t == "error":
            self.to(StreamState.FINISHING)
        out: list[bytes] = []
        if t in _DELTAS:
            key = _channel(t, obj)
            self.where[key] = {
                k: obj[k] for k in ("item_id", "output_index", "content_index", "command_index") if k in obj
            }
            self.where[key]["type"] = t
            w = self.window(key, _DELTAS[t][1])
            rule = Obj({"delta": Chan(key, w.mode)}, default=SKIP)
            new, changed = jsonspan.transform(data, obj, rule, self.channel_fn())
            lp = obj.get("logprobs")
            if isinstance(lp, list) and lp:
                # logprobs of text the window changed or held go (common.py, logprobs)
                cleaned = [] if key in self.touched else clean_alternatives(lp, self.r)
                if cleaned is not None:
                    doc = json.loads(new)
                    doc["logprobs"] = cleaned
                    new, changed = _dumps(doc).decode("utf-8"), changed + 1
            if w.held:
                self.events_held += 1
        elif t in _DONES:
            delta_type, field, rule_ = _DONES[t]
            out.extend(self._flush(_channel(delta_type, obj), seq))
            before = self._counts()
            new = restore_doc(data, obj, Obj({field: rule_, "name": VALUES}, default=SKIP), self.r)
            self._recount(before, restated=True)
            changed = new is not data
        elif t in _SNAPSHOT:
            if t == "response.output_item.done":
                item = obj.get("item")
                item_id = item.get("id") if isinstance(item, dict) else None
                by_pos = ("out", obj.get("output_index"))
                for key in [k for k in self.windows if k[0] == item_id or k[0] == by_pos]:
                    out.extend(self._flush(key, seq))
            before = self._counts()
            new = restore_doc(data, obj, _SNAPSHOT[t], self.r)
            self._recount(before, restated=t.endswith(".done"))
            changed = new is not data
        elif isinstance(t, str) and (t.startswith("response.reasoning") or t in _OPAQUE):
            new, changed = data, 0  # reasoning (like thinking), base64 audio and images: untouched
        elif t in _ENDS or (isinstance(t, str) and t.startswith("response.") and "response" in obj):
            if t in _ENDS:
                for key in list(self.windows):
                    out.extend(self._flush(key, seq))
            before = self._counts()
            new = restore_doc(data, obj, _RESPONSE_EVENT, self.r)
            self._recount(before, restated=self.seen_response, final=t in _ENDS)
            self.seen_response = True
            changed = new is not data
        else:
            new = restore_doc(data, obj, GENERIC, self.r)
            changed = new is not data
        if changed:
            self.events_changed += 1
        if not changed and not self.offset:
            out.append(ev.raw)
        else:
            out.append(self._renumbered(ev, new))
        return out

    # -- counting: each original the client reads, once ----------------------------------
    # A Responses stream says every text several times: in its deltas, then whole in
    # `*.done`, `content_part.done`, `output_item.done` and the final response object
    # (and response.in_progress repeats response.created). Restoring each is needed;
    # counting each made five masked originals read "restored 25". So an original is
    # counted where it first reaches the client — a delta, an `.added` snapshot, the
    # first response object — and the events that restate text are not counted, except
    # that the final response object (which holds every text once) counts when it holds
    # more than the stream counted (text that only a snapshot carried).

    def _counts(self) -> tuple[int, int]:
        return self.r.restored, self.r.stripped

    def _recount(self, before: tuple[int, int], restated: bool, final: bool = False) -> None:
        r = self.r
        if final:
            r.restored = max(before[0], r.restored - before[0])
            r.stripped = max(before[1], r.stripped - before[1])
        elif restated:
            r.restored, r.stripped = before

    def _fast_delta(self, ev: Event, data: str) -> list[bytes] | None:
        """A delta event without json.loads: its fields found by regex (a `"key":` can
        only be a real key), its text through its window; None for anything unusual."""
        m = _FAST_TYPE.match(data)
        if m is None or ('"logprobs":[' in data and '"logprobs":[]' not in data) or escaped_name(data):
            return None
        t = m.group(1)
        d = _FAST_FIELDS["delta"].search(data)
        item = _FAST_FIELDS["item_id"].search(data)
        oi = _FAST_FIELDS["output_index"].search(data)
        ci = _FAST_FIELDS["content_index"].search(data)
        if d is None or item is None or oi is None or data.count('"delta":') != 1:
            return None
        fields = {"item_id": item.group(1), "output_index": int(oi.group(1))}
        if t == "response.function_call_arguments.delta":
            key: tuple = (fields["item_id"], "args")
        elif ci is None:
            return None
        else:
            fields["content_index"] = int(ci.group(1))
            key = (fields["item_id"], fields["content_index"], _DELTAS[t][0])
        fields["type"] = t
        self.where[key] = fields
        span = _seq_span(data)
        if span is not None:  # noted before anything goes out: a drained tail numbers after it
            self.last_seq = max(self.last_seq, int(data[span[0] : span[1]]))
        w = self.window(key, _DELTAS[t][1])
        out = self.window_field(ev, w, d.start(1), d.end(1))
        if self.offset and out:
            ev2 = out[0]
            text = ev2.decode("utf-8") if ev2 is not ev.raw else ev.text
            span = _seq_span(text)
            if span is not None:
                n = int(text[span[0] : span[1]])
                out = [(text[: span[0]] + str(n + self.offset) + text[span[1] :]).encode("utf-8")]
        return out if out else [self._empty_delta(ev, d)]

    def _empty_delta(self, ev: Event, d: re.Match) -> bytes:
        """A delta whose text is all held still goes out (with "") so that the numbering
        needs no gap."""
        data = ev.data
        assert data is not None
        return self._renumbered(ev, data[: d.start(1)] + data[d.end(1) :])

    def _renumbered(self, ev: Event, data: str) -> bytes:
        if not self.offset:
            return ev.raw if data is ev.data else ev.with_data(data)
        span = _seq_span(data)
        if span is None:
            return ev.with_data(data)
        n = int(data[span[0] : span[1]])
        self.last_seq = max(self.last_seq, n)
        return ev.with_data(data[: span[0]] + str(n + self.offset) + data[span[1] :])

    def _flush(self, key: tuple, seq: object) -> list[bytes]:
        w = self.windows.pop(key, None)
        if w is None:
            return []
        tail = w.flush()
        if not tail:
            return []
        fields = dict(self.where.get(key, {}))
        t = fields.pop("type", "response.output_text.delta")
        base = seq if isinstance(seq, int) else self.last_seq + 1
        body = {"type": t, "sequence_number": base + self.offset, **fields, "delta": tail}
        if t == "response.output_text.delta":
            body["logprobs"] = []
        self.offset += 1
        self.events_changed += 1
        return [b"event: " + t.encode() + b"\ndata: " + _dumps(body) + b"\n\n"]

    def drain(self) -> list[bytes]:
        out: list[bytes] = []
        for key in list(self.windows):
            out.extend(self._flush(key, None))
        return out

    def error_event(self, message: str) -> bytes:
        body = {"type": "error", "sequence_number": self.last_seq + self.offset + 1,
                "code": "disguise_error", "message": message, "param": None}  # fmt: skip
        return f"event: error\ndata: {json.dumps(body)}\n\n".encode()

