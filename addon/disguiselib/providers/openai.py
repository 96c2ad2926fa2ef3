"""OpenAI Chat Completions and Responses: what to mask, how to reverse.

Chat: https://platform.openai.com/docs/api-reference/chat (chunks: `choices[].delta`
with `content`, `refusal`, `tool_calls[].function.{name,arguments}`, `finish_reason`,
then a usage chunk and `data: [DONE]`). Responses:
https://platform.openai.com/docs/api-reference/responses-streaming (typed events with a
`sequence_number`). Both on any host, so OpenAI-compatible providers work too; their
reasoning fields (`reasoning_content`, `reasoning`) pass untouched, like thinking.
"""

from __future__ import annotations

import json
import re

from .. import jsonspan
from ..errors import StreamError
from ..holdback import Window
from ..jsonspan import JSON_TEXT, PROSE, SKIP, VALUES, Arr, Either, Obj, Rule, Typed
from ..rules import Restorer, json_escape
from ..sse import Event, parse_event
from .base import SSEStream, restore_doc, restore_fn
from .common import GENERIC, SCHEMA, Vocabulary, _obj, clean_alternatives

# Channels (choice x content/refusal/tool call; item x content part) one stream may
# open. Real streams have a handful; a stream past this is refused with an explicit
# error rather than merging channels or growing state without bound.
MAX_CHANNELS = 256


class _DataUrl(Rule):
    """An image or file URL: a `data:` URL is base64 payload (never touched); any other
    URL is masked like text."""

    string = True

    def resolve(self, value: object) -> Rule:
        if isinstance(value, str) and value[:5].lower() == "data:":
            return SKIP
        return VALUES


DATA_URL = _DataUrl()
_REASONING = {"reasoning_content": SKIP, "reasoning": SKIP, "reasoning_details": SKIP}

# -- Chat Completions requests --------------------------------------------------------

_CHAT_PART = Typed(
    {
        "text": _obj({"text": VALUES}),
        "image_url": _obj({"image_url": _obj({"url": DATA_URL, "detail": SKIP})}),
        "input_audio": _obj({"input_audio": SKIP}),
        "file": _obj({"file": _obj({"file_data": SKIP, "file_id": SKIP, "filename": VALUES})}),
        "refusal": _obj({"refusal": VALUES}),
    },
    default=GENERIC,
)
_CHAT_CONTENT = Either(VALUES, Arr(_CHAT_PART))
_FUNCTION_CALL = _obj({"name": VALUES, "arguments": JSON_TEXT})
_CHAT_TOOL_CALL = _obj(
    {"id": SKIP, "function": _FUNCTION_CALL, "custom": _obj({"name": VALUES, "input": VALUES})}
)
_CHAT_MESSAGE = Obj(
    {
        "role": SKIP, "content": _CHAT_CONTENT, "name": VALUES, "refusal": VALUES,
        "tool_calls": Arr(_CHAT_TOOL_CALL), "tool_call_id": SKIP, "function_call": _FUNCTION_CALL,
        "audio": SKIP, **_REASONING,
    },
    default=GENERIC,
)  # fmt: skip
_FUNCTION_DEF = _obj(
    {"name": VALUES, "description": VALUES, "parameters": SCHEMA, "output_schema": SCHEMA, "strict": SKIP}
)
_CHAT_TOOL = _obj({"function": _FUNCTION_DEF, "custom": _obj({"name": VALUES, "description": VALUES})})
_TOOL_CHOICE = Either(
    Vocabulary(("auto", "none", "required")),  # anything else is masked
    _obj({"function": _obj({"name": VALUES}), "custom": _obj({"name": VALUES}), "name": VALUES,
          "mode": SKIP, "tools": GENERIC}),
)  # fmt: skip
_JSON_SCHEMA_FORMAT = _obj({"name": VALUES, "description": VALUES, "schema": SCHEMA, "strict": SKIP})

_CHAT_SKIPPED = (
    "model", "stream", "n", "temperature", "top_p", "max_tokens", "max_completion_tokens",
    "seed", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
    "service_tier", "store", "parallel_tool_calls", "reasoning_effort", "stream_options",
    "modalities", "audio", "verbosity",
)  # fmt: skip
# End-user identifiers (`user`, `safety_identifier`, `prompt_cache_key`) are not in the
# skipped lists: like Anthropic `metadata.user_id` they are masked (values), so an
# identifier that is an original (an e-mail as user id) never leaves; see docs/fields.md.
CHAT_REQUEST = Obj(
    {
        **{k: SKIP for k in _CHAT_SKIPPED},
        "messages": Arr(_CHAT_MESSAGE),
        "tools": Arr(_CHAT_TOOL),
        "functions": Arr(_FUNCTION_DEF),
        "tool_choice": _TOOL_CHOICE,
        "function_call": _TOOL_CHOICE,
        "response_format": _obj({"json_schema": _JSON_SCHEMA_FORMAT}),
        "prediction": _obj({"content": _CHAT_CONTENT}),
    },
    default=GENERIC,
)

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

# -- whole responses -------------------------------------------------------------------

_TOOL_CALL_OUT = _obj({"id": SKIP, "function": _obj({"name": VALUES, "arguments": JSON_TEXT}),
                       "custom": _obj({"name": VALUES, "input": VALUES})})
# Compatible providers (Mistral) send content as parts; thinking parts pass untouched.
_CHAT_OUT_PART = Typed({"text": _obj({"text": PROSE}), "thinking": SKIP}, default=GENERIC)
_AUDIO_OUT = _obj({"id": SKIP, "data": SKIP, "expires_at": SKIP, "transcript": PROSE})
CHAT_RESPONSE = Obj(
    {
        **{k: SKIP for k in ("id", "object", "created", "model", "system_fingerprint", "service_tier", "usage")},
        "choices": Arr(Obj({
            "index": SKIP, "finish_reason": SKIP, "logprobs": SKIP,
            "message": Obj({
                "role": SKIP, "content": Either(PROSE, Arr(_CHAT_OUT_PART)), "refusal": PROSE,
                "tool_calls": Arr(_TOOL_CALL_OUT),
                "function_call": _obj({"name": VALUES, "arguments": JSON_TEXT}),
                "audio": _AUDIO_OUT, "annotations": GENERIC, **_REASONING,
            }, default=GENERIC),
        }, default=GENERIC)),
    },
    default=GENERIC,
)  # fmt: skip

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

# -- retrievals (stored completions and responses: literals only, see engine.py) -------

CHAT_LIST = Obj({"object": SKIP, "first_id": SKIP, "last_id": SKIP, "data": Arr(CHAT_RESPONSE)}, default=GENERIC)
_STORED_MESSAGE = Obj(
    {
        "id": SKIP, "role": SKIP, "content": Either(PROSE, Arr(_CHAT_OUT_PART)), "refusal": PROSE,
        "content_parts": Arr(_CHAT_PART), "name": VALUES, "tool_calls": Arr(_TOOL_CALL_OUT),
        "function_call": _obj({"name": VALUES, "arguments": JSON_TEXT}), "audio": _AUDIO_OUT,
        "annotations": GENERIC, **_REASONING,
    },
    default=GENERIC,
)  # fmt: skip
CHAT_STORED_MESSAGES = Obj(
    {"object": SKIP, "first_id": SKIP, "last_id": SKIP, "data": Arr(_STORED_MESSAGE)}, default=GENERIC
)


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

# -- Chat Completions streams ----------------------------------------------------------


class _Chan(Rule):
    """A string that belongs to a stream channel: it goes through that channel's window."""

    string = True

    def __init__(self, key: tuple, mode: int, parts: bool = False) -> None:
        self.key = key
        self.mode = mode
        self.parts = parts  # the text arrives in an array of content parts (Mistral)


class _ChatChoice(Rule):
    """A streamed choice, bound to its `index` so that its strings find their windows."""

    string = True

    def resolve(self, value: object) -> Rule:
        k = value.get("index", 0) if isinstance(value, dict) else 0
        parts = Typed({"text": _obj({"text": _Chan((k, "content"), Window.TEXT, parts=True)}), "thinking": SKIP},
                      default=GENERIC)  # fmt: skip
        delta = Obj({
            "role": SKIP,
            "content": Either(_Chan((k, "content"), Window.TEXT), Arr(parts)),
            "refusal": _Chan((k, "refusal"), Window.TEXT),
            "audio": _obj({"id": SKIP, "data": SKIP, "expires_at": SKIP,
                           "transcript": _Chan((k, "transcript"), Window.TEXT)}),
            "tool_calls": Arr(_ChatToolCall(k)),
            "function_call": _obj({"name": VALUES, "arguments": _Chan((k, "fc"), Window.JSON)}),
            **_REASONING,
        }, default=GENERIC)  # fmt: skip
        delta.mark = k  # where held tails can be inserted when this choice finishes
        return Obj({"index": SKIP, "finish_reason": SKIP, "logprobs": SKIP, "delta": delta}, default=GENERIC)


class _ChatToolCall(Rule):
    string = True

    def __init__(self, choice: object) -> None:
        self.choice = choice

    def resolve(self, value: object) -> Rule:
        j = value.get("index", 0) if isinstance(value, dict) else 0
        return _obj(
            {
                "index": SKIP, "id": SKIP,
                "function": _obj({"name": VALUES, "arguments": _Chan((self.choice, "tool", j), Window.JSON)}),
            }
        )  # fmt: skip


_CHUNK = Obj(
    {k: SKIP for k in ("id", "object", "created", "model", "system_fingerprint", "service_tier", "usage")}
    | {"obfuscation": SKIP, "choices": Arr(_ChatChoice())},
    default=GENERIC,
)  # fmt: skip

# The shapes nearly every streamed token has: one choice, content only; or one choice,
# one tool call, arguments only. `"choices":[` can only be the real key: a quote inside
# a string is escaped.
_STR = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_FAST_CHAT = re.compile(
    r'"choices":\[\{"index":(\d+),"delta":\{"content":' + _STR + r'\},'
    r'"logprobs":null,"finish_reason":null\}\]'
)
_FAST_CHAT_ARGS = re.compile(
    r'"choices":\[\{"index":(\d+),"delta":\{"tool_calls":\[\{"index":(\d+),'
    r'"function":\{"arguments":' + _STR + r'\}\}\]\},"logprobs":null,"finish_reason":null\}\]'
)


class _Channels(SSEStream):
    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.parts: set = set()  # channels whose text came as content parts
        self.touched: set = set()  # channels whose text the current event changed or held

    def window(self, key: tuple, mode: int) -> Window:
        w = self.windows.get(key)
        if w is None:
            if len(self.windows) >= MAX_CHANNELS:
                # an empty window is the same as a new one: forget those first
                self.windows = {k: v for k, v in self.windows.items() if v.held or v.escaped}
                if len(self.windows) >= MAX_CHANNELS:
                    raise StreamError(
                        f"the stream holds text in more than {MAX_CHANNELS} channels at once"
                    )
            w = self.windows[key] = Window(self.r, mode)
        return w

    def channel_fn(self, finishing: frozenset = frozenset()):
        """fn for jsonspan: a channel's string through its window; a channel of a choice
        that finishes in this very event is flushed into it as well. Every channel whose
        text this event changes or holds is noted in `touched` (its logprobs go)."""
        restore = restore_fn(self.r)
        self.touched = set()

        def fn(v: str, rule: Rule) -> str:
            if isinstance(rule, _Chan):
                w = self.window(rule.key, rule.mode)
                held = w.held
                out = w.feed(v)
                if rule.parts:
                    self.parts.add(rule.key)
                if rule.key[0] in finishing:
                    out += w.flush()
                    del self.windows[rule.key]
                if out != v or held or w.held:
                    self.touched.add(rule.key)
                return out
            return restore(v, rule)

        return fn


class ChatStream(_Channels):
    """One Chat Completions stream: a window per (choice, content | refusal | tool call)."""

    TERMINAL = "data: [DONE]"
    TERMINAL_MARKERS = (b"[DONE]", b'"error"')

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.last: dict = {}  # id, created, model of the latest chunk (for drain chunks)

    def is_terminal(self, ev: Event) -> bool:
        if ev.data is None:
            return False
        if ev.data.strip() == "[DONE]":
            return True
        try:
            obj = json.loads(ev.data)
        except ValueError:
            return False
        return isinstance(obj, dict) and "error" in obj

    def on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        if data.strip() == "[DONE]":
            self.terminated = True
            out = self.drain()
            out.append(ev.raw)
            return out
        if not self.last:  # once: what a drained tail's own chunk needs to be valid
            self._remember(data)
        m = _FAST_CHAT.search(data)
        if m is not None:
            w = self.window((int(m.group(1)), "content"), Window.TEXT)
            return self.window_field(ev, w, m.start(2), m.end(2))
        m = _FAST_CHAT_ARGS.search(data)
        if m is not None:
            w = self.window((int(m.group(1)), "tool", int(m.group(2))), Window.JSON)
            return self.window_field(ev, w, m.start(3), m.end(3))
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            return self.not_object(ev)
        if not isinstance(obj, dict):
            return self.not_object(ev)
        if "error" in obj:
            # A mid-stream error (OpenRouter's may carry a finish_reason too): the SDK
            # raises at it, so every held tail goes out in its own chunk first.
            self.terminated = True
            out = self.drain()
            new, changed = jsonspan.transform(data, obj, GENERIC, restore_fn(self.r))
            out.append(ev.with_data(new) if changed else ev.raw)
            return out
        choices = obj.get("choices")
        deltas = {
            c.get("index", 0): c.get("delta")
            for c in (choices if isinstance(choices, list) else [])
            if isinstance(c, dict) and c.get("finish_reason") is not None
        }
        # Held text rides inside the chunk that finishes its choice: a client that parses
        # the arguments at finish_reason sees them whole. A channel with a field in this
        # chunk is flushed into that field; the others are inserted into the delta.
        marks: list[tuple[object, int]] = []
        edits = jsonspan.walk(data, obj, _CHUNK, self.channel_fn(frozenset(deltas)), marks)
        tails = {k: t for k in deltas if (t := self._flush_choice(k))}
        merge = False
        if tails:
            where = dict(marks)
            inserts = [(where[k] + 1, where[k] + 1, _insertion(t, deltas[k], self._parted(k)))
                       for k, t in tails.items() if k in where]  # fmt: skip
            if len(inserts) == len(tails) and all(i[2] for i in inserts):
                edits = sorted(edits + inserts)
            else:  # a field present but null, or tool calls named otherwise: rebuild
                merge = True
        lps = self._logprobs(choices)
        if merge or lps:
            doc = json.loads(jsonspan.splice(data, edits))
            for c in doc["choices"]:
                if not isinstance(c, dict):
                    continue
                k = c.get("index", 0)
                if merge and k in tails:
                    _merge_tails(c.setdefault("delta", {}), tails[k], self._parted(k))
                if k in lps:
                    c["logprobs"] = lps[k]
            self.events_changed += 1
            return [ev.with_data(_dumps(doc).decode("utf-8"))]
        if not edits:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(jsonspan.splice(data, edits))]

    def _parted(self, k: object) -> bool:
        return (k, "content") in self.parts

    def _logprobs(self, choices: object) -> dict:
        """Per choice of a chunk, its logprobs where they must change: the entries of a
        channel whose text this chunk changed or held are removed (common.py, logprobs),
        alternatives holding a whole disguise dropped from the others."""
        out: dict = {}
        for c in choices if isinstance(choices, list) else []:
            lp = c.get("logprobs") if isinstance(c, dict) else None
            if not isinstance(lp, dict):
                continue
            k = c.get("index", 0)
            new = dict(lp)
            for field in ("content", "refusal"):
                entries = lp.get(field)
                if not isinstance(entries, list) or not entries:
                    continue
                if (k, field) in self.touched:
                    new[field] = []
                else:
                    cleaned = clean_alternatives(entries, self.r)
                    if cleaned is not None:
                        new[field] = cleaned
            if new != lp:
                out[k] = new
        return out

    def _remember(self, data: str) -> None:
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self.last = {k: obj[k] for k in ("id", "object", "created", "model") if k in obj}

    def _flush_choice(self, k: object) -> dict:
        tails: dict = {}
        for key in [key for key in self.windows if key[0] == k]:
            w = self.windows.pop(key)
            tail = w.flush()
            if tail:
                tails[key[1:]] = tail
        return tails

    def drain(self) -> list[bytes]:
        out = []
        for k in sorted({key[0] for key in self.windows}, key=repr):
            tails = self._flush_choice(k)
            if tails:
                delta: dict = {}
                _merge_tails(delta, tails, self._parted(k))
                chunk = {**self.last, "choices": [{"index": k, "delta": delta, "finish_reason": None}]}
                chunk.setdefault("object", "chat.completion.chunk")
                out.append(b"data: " + _dumps(chunk) + b"\n\n")
        return out

    def error_event(self, message: str) -> bytes:
        err = json.dumps({"error": {"message": message, "type": "disguise_error"}})
        return f"data: {err}\n\ndata: [DONE]\n\n".encode()


def _dumps(obj: object) -> bytes:
    """Compact JSON as the APIs send it: UTF-8, or \\u escapes where a lone surrogate
    (half of a pair cut between two deltas) cannot be UTF-8."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


def _insertion(tails: dict, delta: object, parted: bool) -> str:
    """The members to insert at the start of a Chat delta object for held tails, or ""
    when one of them would repeat a key the delta already has. parted: the choice's
    content came as parts, so its tail goes as a text part."""
    if not isinstance(delta, dict):
        return ""
    members = []
    calls = []
    for sub, tail in tails.items():
        esc = '"' + json_escape(tail) + '"'
        if sub in (("content",), ("refusal",)):
            if sub[0] in delta:
                return ""
            if sub == ("content",) and parted:
                esc = '[{"type":"text","text":' + esc + "}]"
            members.append(f'"{sub[0]}":{esc}')
        elif sub == ("transcript",):
            if "audio" in delta:
                return ""
            members.append(f'"audio":{{"transcript":{esc}}}')
        elif sub == ("fc",):
            if "function_call" in delta:
                return ""
            members.append(f'"function_call":{{"arguments":{esc}}}')
        else:
            calls.append(f'{{"index":{json.dumps(sub[1])},"function":{{"arguments":{esc}}}}}')
    if calls:
        if "tool_calls" in delta:
            return ""
        members.append('"tool_calls":[' + ",".join(calls) + "]")
    return ",".join(members) + ("," if delta else "")


def _merge_tails(delta: dict, tails: dict, parted: bool = False) -> None:
    """Append each held tail to its field of a Chat delta, adding an index-only
    tool_calls entry where the delta names none for that tool call; a content tail of a
    choice whose content came as parts goes as a text part."""
    for sub, tail in tails.items():
        if sub == ("content",) and (parted or isinstance(delta.get("content"), list)):
            parts = delta.get("content")
            if isinstance(parts, str):
                parts = [{"type": "text", "text": parts}] if parts else []
            delta["content"] = [*(parts or []), {"type": "text", "text": tail}]
        elif sub in (("content",), ("refusal",)):
            delta[sub[0]] = (delta.get(sub[0]) or "") + tail
        elif sub == ("transcript",):
            audio = delta.get("audio")
            if not isinstance(audio, dict):
                audio = delta["audio"] = {}
            audio["transcript"] = (audio.get("transcript") or "") + tail
        elif sub == ("fc",):
            fc = delta.setdefault("function_call", {})
            fc["arguments"] = (fc.get("arguments") or "") + tail
        else:  # ("tool", j)
            j = sub[1]
            calls = delta.get("tool_calls")
            if not isinstance(calls, list):
                calls = delta["tool_calls"] = []
            entry = next((c for c in calls if isinstance(c, dict) and c.get("index") == j), None)
            if entry is None:
                entry = {"index": j, "function": {}}
                calls.append(entry)
            f = entry.setdefault("function", {})
            f["arguments"] = (f.get("arguments") or "") + tail


# -- Responses streams -----------------------------------------------------------------

_SEQ = re.compile(r'(?<!\\)"sequence_number"\s*:\s*(\d+)')
_SEQ_VALUE = re.compile(rb"\s*:\s*(\d+)")
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


class ResponsesStream(_Channels):
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
            self.terminated = True
        out: list[bytes] = []
        if t in _DELTAS:
            key = _channel(t, obj)
            self.where[key] = {
                k: obj[k] for k in ("item_id", "output_index", "content_index", "command_index") if k in obj
            }
            self.where[key]["type"] = t
            w = self.window(key, _DELTAS[t][1])
            rule = Obj({"delta": _Chan(key, w.mode)}, default=SKIP)
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
            new = restore_doc(data, obj, Obj({field: rule_, "name": VALUES}, default=SKIP), self.r)
            changed = new is not data
        elif t in _SNAPSHOT:
            if t == "response.output_item.done":
                item = obj.get("item")
                item_id = item.get("id") if isinstance(item, dict) else None
                by_pos = ("out", obj.get("output_index"))
                for key in [k for k in self.windows if k[0] == item_id or k[0] == by_pos]:
                    out.extend(self._flush(key, seq))
            new = restore_doc(data, obj, _SNAPSHOT[t], self.r)
            changed = new is not data
        elif isinstance(t, str) and (t.startswith("response.reasoning") or t in _OPAQUE):
            new, changed = data, 0  # reasoning (like thinking), base64 audio and images: untouched
        elif t in _ENDS or (isinstance(t, str) and t.startswith("response.") and "response" in obj):
            if t in _ENDS:
                for key in list(self.windows):
                    out.extend(self._flush(key, seq))
            new = restore_doc(data, obj, _RESPONSE_EVENT, self.r)
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

    def _fast_delta(self, ev: Event, data: str) -> list[bytes] | None:
        """A delta event without json.loads: its fields found by regex (a `"key":` can
        only be a real key), its text through its window; None for anything unusual."""
        m = _FAST_TYPE.match(data)
        if m is None or ('"logprobs":[' in data and '"logprobs":[]' not in data):
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
        seq = _SEQ.search(data)
        if seq is not None:  # noted before anything goes out: a drained tail numbers after it
            self.last_seq = max(self.last_seq, int(seq.group(1)))
        w = self.window(key, _DELTAS[t][1])
        out = self.window_field(ev, w, d.start(1), d.end(1))
        if self.offset and out:
            ev2 = out[0]
            text = ev2.decode("utf-8") if ev2 is not ev.raw else ev.text
            seq = _SEQ.search(text)
            if seq is not None:
                n = int(seq.group(1))
                out = [(text[: seq.start(1)] + str(n + self.offset) + text[seq.end(1) :]).encode("utf-8")]
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
        m = _SEQ.search(data)
        if m is None:
            return ev.with_data(data)
        n = int(m.group(1))
        self.last_seq = max(self.last_seq, n)
        return ev.with_data(data[: m.start(1)] + str(n + self.offset) + data[m.end(1) :])

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


def error_body(message: str, kind: str = "invalid_request_error") -> bytes:
    """A response body in the shape the OpenAI API uses for errors."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


__all__ = [
    "CHAT_REQUEST", "CHAT_RESPONSE", "RESPONSES_REQUEST", "RESPONSE_OBJECT", "ChatStream",
    "ResponsesStream", "error_body",
]  # fmt: skip
