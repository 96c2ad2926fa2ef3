"""OpenAI Realtime over WebSocket: what to mask in client events, how to restore server
events (sans I/O). The connection machinery is realtime.py's.

`GET /v1/realtime?model=...` upgraded to a WebSocket (Azure:
`/openai/realtime?api-version=...&deployment=...`, `/openai/v1/realtime?model=...`).
One JSON event per text message, `{"type": ..., "event_id": ..., ...}`:
https://platform.openai.com/docs/api-reference/realtime-client-events and
realtime-server-events. Both the GA names (`response.output_text.delta`,
`response.output_audio_transcript.delta`, `conversation.item.added`) and the beta ones
(`response.text.delta`, `response.audio_transcript.delta`, `conversation.item.created`)
are known; the shapes were read from the official SDK's types (`openai.types.realtime`
and `openai.types.beta.realtime`).

Client events: `session.update` (instructions, tools with their parameter schemas,
the transcription prompt, prompt variables), `conversation.item.create` (message
parts, function calls and their JSON `arguments`, function outputs), `response.create`
(instructions, input items, tools). `input_audio_buffer.append` carries base64 audio
(MEDIA). Any other field of a known event is masked (values); an unknown event is
scanned (realtime.Connection).

Server events: a hold-back window per channel, keyed (response_id, item_id,
output_index, content_index, field): output text, the output audio transcript and
function-call (and MCP call) arguments, the last as JSON text (restored originals are
JSON-escaped). The user's input transcription has a window per (item_id,
content_index). A channel's held tail goes out as a synthetic delta right before the
event that ends the channel: its `.done`, `response.content_part.done`,
`response.output_item.done` or `response.done` (the transcription's `.completed` or
`.failed`). A delta whose text is held whole is not sent at all. Snapshots
(`session.created`/`.updated`, item and part events, `response.created`/`.done`) are
restored whole with the client events' own tables; audio deltas pass byte-identical;
any other event has its strings restored whole.
"""

from __future__ import annotations

import json
import re

from ...base.channels import channel_index
from ...base.fields import GENERIC, MEDIA, SCHEMA, names, obj
from ...base.holdback import Window
from ...base.logprobs import clean_alternatives
from ...base.realtime import Protocol
from ...base.restore import decode_field, dumps, reencode_field, restore_doc, restore_fn
from ...base.wirespec import WEBSOCKET, WireSpec
from ...rules.rules import Restorer
from ...wire import jsonspan
from ...wire.jsonspan import JSON_TEXT, PROSE, SKIP, VALUES, Arr, Either, Obj, Rule, Typed
from .chat import _TOOL_CHOICE, DATA_URL

# -- the tables ----------------------------------------------------------------------------

# Keys that only identify or order things: never masked, never restored.
_IDS = ("type", "event_id", "response_id", "item_id", "output_index", "content_index", "call_id",
        "previous_item_id", "object", "id", "status")  # fmt: skip


def _ids(fields: dict[str, Rule]) -> Obj:
    return Obj({**{k: SKIP for k in _IDS}, **fields}, default=GENERIC)


# A message's content part. Input parts are the user's (values); output parts are the
# model's text (PROSE: strip rules apply on the way back, as for every model text).
_PART = Typed(
    {
        "input_text": obj({"text": VALUES}),
        "input_audio": obj({"audio": MEDIA, "transcript": VALUES, "format": SKIP}),
        "input_image": obj({"image_url": DATA_URL, "detail": SKIP}),
        "output_text": obj({"text": PROSE}),
        "output_audio": obj({"audio": MEDIA, "transcript": PROSE, "format": SKIP}),
        "text": obj({"text": PROSE}),  # beta: an assistant message's text
        "audio": obj({"audio": MEDIA, "transcript": PROSE, "format": SKIP}),  # beta
        "item_reference": obj({"id": SKIP}),  # beta
    },
    default=GENERIC,
)
_MCP_LISTED_TOOL = obj({"name": VALUES, "description": VALUES, "input_schema": SCHEMA, "annotations": GENERIC})
_ITEM = Typed(
    {
        "message": _ids({"role": SKIP, "content": Arr(_PART)}),
        "function_call": _ids({"name": VALUES, "arguments": JSON_TEXT}),
        "function_call_output": _ids({"output": VALUES}),  # JSON text is told and masked as JSON
        "mcp_call": _ids({"server_label": VALUES, "name": VALUES, "arguments": JSON_TEXT, "output": VALUES,
                          "error": GENERIC, "approval_request_id": SKIP}),
        "mcp_list_tools": _ids({"server_label": VALUES, "tools": Arr(_MCP_LISTED_TOOL)}),
        "mcp_approval_request": _ids({"server_label": VALUES, "name": VALUES, "arguments": JSON_TEXT}),
        "mcp_approval_response": _ids({"approval_request_id": SKIP, "approve": SKIP, "reason": VALUES}),
        "item_reference": _ids({}),
    },
    default=GENERIC,
)  # fmt: skip
_FUNCTION_TOOL = obj({"name": VALUES, "description": VALUES, "parameters": SCHEMA})
# A tool without a `type` is a function (the beta sessions leave it out); an MCP tool's
# labels, URL, headers and authorization are the client's configuration: masked like
# any unknown field, as the Responses API's MCP tools are.
_TOOL = Typed({"function": _FUNCTION_TOOL}, default=_FUNCTION_TOOL)
_TOOL.table["mcp"] = GENERIC
# a reusable prompt: its variables' names are the stored prompt's, sent as written (the
# leak guard reads each, fields.NAME: one that holds an original is refused)
_PROMPT = obj({"id": SKIP, "version": SKIP, "variables": names(Either(VALUES, _PART))})
_TRANSCRIPTION = obj({"model": SKIP, "language": SKIP, "prompt": VALUES})
_AUDIO_OUT = obj({"format": SKIP, "voice": SKIP, "speed": SKIP})
_SESSION_SKIPPED = (
    "type", "object", "id", "model", "expires_at", "output_modalities", "modalities", "max_output_tokens",
    "max_response_output_tokens", "temperature", "speed", "voice", "input_audio_format", "output_audio_format",
    "input_audio_noise_reduction", "turn_detection", "include", "truncation",
    "client_secret",  # beta: the server's ephemeral key, echoed in session.created
)  # fmt: skip
SESSION = Obj(
    {
        **{k: SKIP for k in _SESSION_SKIPPED},
        "instructions": VALUES,
        "tools": Arr(_TOOL),
        "tool_choice": _TOOL_CHOICE,
        "prompt": _PROMPT,
        "audio": obj(
            {
                "input": obj({"format": SKIP, "noise_reduction": SKIP, "turn_detection": SKIP,
                               "transcription": _TRANSCRIPTION}),
                "output": _AUDIO_OUT,
            }
        ),  # fmt: skip
        "input_audio_transcription": _TRANSCRIPTION,  # beta
        "tracing": GENERIC,  # "auto", or a workflow name, group id and metadata of the client's
    },
    default=GENERIC,
)
RESPONSE_PARAMS = Obj(
    {
        **{k: SKIP for k in ("conversation", "output_modalities", "modalities", "max_output_tokens",
                             "max_response_output_tokens", "voice", "output_audio_format", "temperature")},
        "input": Arr(_ITEM),
        "instructions": VALUES,
        "metadata": GENERIC,
        "prompt": _PROMPT,
        "tool_choice": _TOOL_CHOICE,
        "tools": Arr(_TOOL),
        "audio": obj({"output": _AUDIO_OUT}),
    },
    default=GENERIC,
)  # fmt: skip

CLIENT_EVENTS: dict[str, Rule] = {
    "session.update": _ids({"session": SESSION}),
    "transcription_session.update": _ids({"session": SESSION}),  # beta
    "conversation.item.create": _ids({"item": _ITEM}),
    "conversation.item.retrieve": _ids({}),
    "conversation.item.truncate": _ids({"audio_end_ms": SKIP}),
    "conversation.item.delete": _ids({}),
    "input_audio_buffer.append": _ids({"audio": MEDIA}),
    "input_audio_buffer.commit": _ids({}),
    "input_audio_buffer.clear": _ids({}),
    "output_audio_buffer.clear": _ids({}),
    "response.create": _ids({"response": RESPONSE_PARAMS}),
    "response.cancel": _ids({}),
}

# -- server events -------------------------------------------------------------------------

RESPONSE = _ids(
    {
        "output": Arr(_ITEM),
        "usage": SKIP,
        "conversation_id": SKIP,
        "output_modalities": SKIP,
        "modalities": SKIP,
        "max_output_tokens": SKIP,
        "audio": obj({"output": _AUDIO_OUT}),
        "metadata": GENERIC,
        "status_details": GENERIC,
    }
)
_ITEM_EVENT = _ids({"item": _ITEM})
SNAPSHOTS: dict[str, Rule] = {
    "session.created": _ids({"session": SESSION}),
    "session.updated": _ids({"session": SESSION}),
    "transcription_session.created": _ids({"session": SESSION}),
    "transcription_session.updated": _ids({"session": SESSION}),
    "conversation.item.created": _ITEM_EVENT,  # beta
    "conversation.item.added": _ITEM_EVENT,
    "conversation.item.done": _ITEM_EVENT,
    "conversation.item.retrieved": _ITEM_EVENT,
    "response.output_item.added": _ITEM_EVENT,
    "response.output_item.done": _ITEM_EVENT,
    "response.content_part.added": _ids({"part": _PART}),
    "response.content_part.done": _ids({"part": _PART}),
    "response.created": _ids({"response": RESPONSE}),
    "response.done": _ids({"response": RESPONSE}),
}
# Base64 audio: byte-identical, never parsed past its type.
OPAQUE = frozenset({"response.output_audio.delta", "response.audio.delta"})
# Events with no channel and no table of their own: ids, states, errors, rate limits, a
# diarized transcript segment. Their strings are restored whole (GENERIC), like any
# event this module does not know; listed so that the SDK-derived test
# (tests/base/test_realtime_coverage.py) tells a new event type from a known one.
GENERIC_EVENTS = frozenset(
    {
        "error", "rate_limits.updated", "conversation.created", "conversation.item.deleted",
        "conversation.item.truncated", "conversation.item.input_audio_transcription.segment",
        "input_audio_buffer.cleared", "input_audio_buffer.committed", "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped", "input_audio_buffer.timeout_triggered",
        "input_audio_buffer.dtmf_event_received", "output_audio_buffer.started", "output_audio_buffer.stopped",
        "output_audio_buffer.cleared", "mcp_list_tools.in_progress", "mcp_list_tools.completed",
        "mcp_list_tools.failed", "response.mcp_call.in_progress", "response.mcp_call.completed",
        "response.mcp_call.failed", "response.output_audio.done", "response.audio.done",
    }
)  # fmt: skip

# delta event -> (channel field, window mode). The input transcription is keyed by its
# item alone (it belongs to no response).
DELTAS: dict[str, tuple[str, int]] = {
    "response.output_text.delta": ("text", Window.TEXT),
    "response.text.delta": ("text", Window.TEXT),  # beta
    "response.output_audio_transcript.delta": ("transcript", Window.TEXT),
    "response.audio_transcript.delta": ("transcript", Window.TEXT),  # beta
    "response.function_call_arguments.delta": ("arguments", Window.JSON),
    "response.mcp_call_arguments.delta": ("arguments", Window.JSON),
    "conversation.item.input_audio_transcription.delta": ("input", Window.TEXT),
}
# done event -> (its delta event, the field holding the whole text, that field's rule)
DONES: dict[str, tuple[str, str, Rule]] = {
    "response.output_text.done": ("response.output_text.delta", "text", PROSE),
    "response.text.done": ("response.text.delta", "text", PROSE),
    "response.output_audio_transcript.done": ("response.output_audio_transcript.delta", "transcript", PROSE),
    "response.audio_transcript.done": ("response.audio_transcript.delta", "transcript", PROSE),
    "response.function_call_arguments.done": ("response.function_call_arguments.delta", "arguments", JSON_TEXT),
    "response.mcp_call_arguments.done": ("response.mcp_call_arguments.delta", "arguments", JSON_TEXT),
    "conversation.item.input_audio_transcription.completed": (
        "conversation.item.input_audio_transcription.delta", "transcript", PROSE),
    "conversation.item.input_audio_transcription.failed": (
        "conversation.item.input_audio_transcription.delta", "", PROSE),
}  # fmt: skip
# the fields a synthetic delta copies from its channel's last delta, in the API's order
_WHERE = ("response_id", "item_id", "output_index", "content_index", "call_id")


def _at(doc: dict, member: str) -> int | None:
    v = doc.get(member)  # (absent where the event has no such position: a call's arguments)
    return None if v is None else channel_index(v, member)


def _key(t: str, doc: dict) -> tuple:
    field = DELTAS[t][0]
    if field == "input":
        return ("input", doc.get("item_id"), _at(doc, "content_index"))
    return (doc.get("response_id"), doc.get("item_id"), _at(doc, "output_index"), _at(doc, "content_index"), field)


def view(doc: dict, n: int, chan) -> bool:
    """A view's reader of one server event (inspect/wsview.py; chan(key, kind) is a
    Channel): every text delta per (response, item, output, content) channel, as the
    connection keys them, and the input transcription per item."""
    t = doc.get("type")
    if not isinstance(t, str):
        return False
    if t in DELTAS and isinstance(doc.get("delta"), str):
        key = _key(t, doc)
        label = "input transcription " + " ".join(map(str, key[1:])) if key[0] == "input" else (
            f"response {key[0]} item {key[1]} output {key[2]}"
            + (f" content {key[3]}" if key[3] is not None else "") + f" {key[4]}"
        )  # fmt: skip
        chan(label, "json" if key[-1] == "arguments" else "text").add(doc["delta"], n, "delta")
    return True


# OpenAI Realtime's server events (base/wirespec.py).
SPEC = WireSpec(
    "openai.realtime",
    ("apis.openai.realtime",),
    (WEBSOCKET,),
    events=frozenset({*SNAPSHOTS, *OPAQUE, *GENERIC_EVENTS, *DELTAS, *DONES}),
    error_event="error",
    view=view,
)


class _Delta(Rule):
    """The `delta` string of a delta event: through its channel's window."""

    string = True


_DELTA = _Delta()
_DELTA_RULE = _ids({"delta": _DELTA, "logprobs": SKIP, "obfuscation": SKIP})
# A text, transcript or arguments delta exactly as the API sends it (compact, these keys
# in this order): its fields are read by this regex alone, its delta spliced in place.
# Anything else (another order, spaces, more fields) takes the parsing path; both give
# the same output (tests/apis/openai/test_realtime.py).
_ID = r'"([^"\\]*)"'
_FAST = re.compile(
    r'\{"type":"(response\.(?:output_text|text|output_audio_transcript|audio_transcript|function_call_arguments)'
    r'\.delta)","event_id":' + _ID + ',"response_id":' + _ID + ',"item_id":' + _ID + r',"output_index":(\d+),'
    r'(?:"content_index":(\d+)|"call_id":' + _ID + r'),"delta":"((?:[^"\\]|\\.)*)"\}\Z'
)


class OpenAIRealtime(Protocol):
    """One OpenAI Realtime connection's server side (see the module docstring)."""

    name = "openai.realtime"
    SERVER_TEXT = True

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.where: dict[tuple, dict] = {}  # channel -> fields for its synthetic delta
        self.synthetic = 0  # synthetic events sent (their event ids)
        self._restore = restore_fn(restorer)

    def client_rule(self, doc: dict) -> Rule | None:
        t = doc.get("type")
        return CLIENT_EVENTS.get(t) if isinstance(t, str) else None

    def fast(self, s: str) -> list[str] | None:
        m = _FAST.match(s)
        if m is None:
            return None
        t, rid, iid, oi, ci, call = m.group(1, 3, 4, 5, 6, 7)
        mode = DELTAS[t][1]
        if ci is not None:
            where = {"response_id": rid, "item_id": iid, "output_index": int(oi), "content_index": int(ci)}
        else:
            where = {"response_id": rid, "item_id": iid, "output_index": int(oi), "call_id": call}
        key = (rid, iid, int(oi), where.get("content_index"), DELTAS[t][0])
        where["type"] = t
        self.where[key] = where
        w = self.window(key, mode)
        a, b = m.span(8)
        text = decode_field(s, a, b)
        held = w.held
        out = w.feed(text)
        if w.held:
            self.events_held += 1
        if out == text and not held:
            return [s]
        if not out and text:
            return []  # all of it held: it goes out with the channel's next piece
        return [reencode_field(s, a, b, s[a:b], out)]

    def server_event(self, s: str, doc: dict) -> list[str]:
        t = doc.get("type")
        if not isinstance(t, str):
            return [restore_doc(s, doc, GENERIC, self.restorer)]
        if t in OPAQUE:
            return [s]
        if t in DELTAS:
            return self._delta(t, s, doc)
        pre: list[str] = []
        if t in DONES:
            delta_t, fld, rule = DONES[t]
            pre = self._flush(_key(delta_t, doc))
            new = restore_doc(s, doc, _ids({fld: rule, "name": VALUES}) if fld else GENERIC, self.restorer)
            return [*pre, new]
        if t == "response.content_part.done":
            part = (doc.get("response_id"), doc.get("item_id"), doc.get("output_index"), doc.get("content_index"))
            pre = self._flush_where(lambda k: k[:4] == part)
        elif t == "response.output_item.done":
            item = doc.get("item")
            at = (doc.get("response_id"), item.get("id") if isinstance(item, dict) else None, doc.get("output_index"))
            pre = self._flush_where(lambda k: k[:3] == at)
        elif t == "response.done":
            resp = doc.get("response")
            rid = resp.get("id") if isinstance(resp, dict) else None
            pre = self._flush_where(lambda k: k[0] == rid)
        new = restore_doc(s, doc, SNAPSHOTS.get(t, GENERIC), self.restorer)
        return [*pre, new]

    def _delta(self, t: str, s: str, doc: dict) -> list[str]:
        key = _key(t, doc)
        w = self.window(key, DELTAS[t][1])
        where = {k: doc[k] for k in _WHERE if k in doc}
        where["type"] = t
        self.where[key] = where
        touched = False
        released = None

        def fn(v: str, rule: Rule) -> str:
            nonlocal touched, released
            if rule is _DELTA:
                held = w.held
                out = w.feed(v)
                touched = touched or out != v or bool(held) or bool(w.held)
                released = out
                return out
            return self._restore(v, rule)

        new, changed = jsonspan.transform(s, doc, _DELTA_RULE, fn)
        if w.held:
            self.events_held += 1
        if released == "" and doc.get("delta"):
            return []  # all of it held: it goes out with the channel's next piece
        lp = doc.get("logprobs")
        if isinstance(lp, list) and lp:
            # logprobs of text the window changed or held go (logprobs.py)
            cleaned = [] if touched else clean_alternatives(lp, self.restorer)
            if cleaned is not None:
                out = json.loads(new)
                out["logprobs"] = cleaned
                return [dumps(out)]
        return [new if changed else s]

    def _flush(self, key: tuple) -> list[str]:
        w = self.windows.pop(key, None)
        where = self.where.pop(key, {})
        if w is None:
            return []
        tail = w.flush()
        if not tail:
            return []
        self.synthetic += 1
        t = where.pop("type", "response.output_text.delta")
        return [dumps({"type": t, "event_id": f"event_disguise_{self.synthetic}", **where, "delta": tail})]

    def _flush_where(self, pred) -> list[str]:
        out: list[str] = []
        for key in [k for k in self.windows if pred(k)]:
            out.extend(self._flush(key))
        return out

    def drain(self) -> list[str]:
        return self._flush_where(lambda k: True)

    def error_event(self, message: str, refused: dict | None, failed: bool) -> str:
        eid = refused.get("event_id") if refused is not None else None
        self.synthetic += 1
        return dumps(
            {
                "type": "error",
                "event_id": f"event_disguise_{self.synthetic}",
                "error": {
                    "type": "server_error" if failed else "invalid_request_error",
                    "code": "disguise_error" if failed else "disguise_refused",
                    "message": message,
                    "param": None,
                    "event_id": eid if isinstance(eid, str) else None,
                },
            }
        )
