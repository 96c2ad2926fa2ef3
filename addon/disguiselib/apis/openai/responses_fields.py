"""OpenAI Responses: the field tables of requests, responses and retrievals (sans I/O).

https://platform.openai.com/docs/api-reference/responses: input items (messages, calls
and their outputs, reasoning), tools, the response object. What each field is (text, an
id, opaque reasoning, media, ...) is declared here in the field model's kinds
(base/fields.py), and the stream events' tables (which member of a delta or `.done` is its
channel's, which the envelope's; any other string is restored); openai/responses.py streams
with these tables.
"""

from __future__ import annotations

import json
import mimetypes

from ...base.exempt import COUNTERS, MODEL, SIGNED
from ...base.fields import (
    ANSWER,
    DATA_URL,
    ECHO,
    GENERIC,
    ID,
    MEDIA,
    META,
    SCHEMA,
    SETTING,
    Media,
    Shape,
    Within,
    media_text,
    names,
    obj,
)
from ...base.holdback import Window
from ...base.jsonanswer import answers_json
from ...base.offsets import Cited
from ...base.offsets import register as register_cited
from ...base.restore import restore_body
from ...base.wirespec import TextHeader
from ...rules.restorer import JSON, TEXT, Restorer
from ...wire.jsonspan import JSON_TEXT, PROSE, SKIP, VALUES, Arr, Either, Obj, Rule, Typed
from .chat import _FUNCTION_DEF, _JSON_SCHEMA_FORMAT, _TOOL_CHOICE, IDENTIFIERS

# -- Responses requests ----------------------------------------------------------------

# Annotations (citations) of output text: titles, URLs and file names are read; ids are ids.
_ANNOTATION = obj({"file_id": ID, "container_id": ID})
# An output_text part's citations count characters of its text: `url_citation` and
# `container_file_citation` a span (`start_index`, `end_index`), `file_citation` and
# `file_path` the one place the citation sits (`index`; the reference calls it "the index
# of the file in the list of files", but it is a character position in the text:
# openai-python#2512). Moved to the restored text in whole documents, snapshots included
# (`content_part.done`, `output_item.done`, `response.completed`; base/offsets.py). The
# marks: `"index"` alone would be found in every Chat or Gemini body.
register_cited(
    Cited("annotations", "text", ("start_index", "end_index"), points=("index",), pieces="delta",
          marks=("start_index", "end_index", "file_citation", "file_path"))
)  # fmt: skip


class _InputFile(Rule):
    """An input_file part: `file_data` is a data: URL (told by its MIME type) or bare
    base64, whose type the file name tells (`notes.txt`: text, decoded and masked)."""

    string = True
    kind = "unknown"

    def resolve(self, value: object) -> Rule:
        data = value.get("file_data") if isinstance(value, dict) else None
        if isinstance(data, str) and not data[:5].lower() == "data:":
            name = value.get("filename") if isinstance(value, dict) else None
            mime = mimetypes.guess_type(name)[0] if isinstance(name, str) else None
            return _input_file(media_text(mime or ""))
        return _INPUT_FILE_URL


def _input_file(data: Rule) -> Rule:
    return obj({"file_data": data, "file_id": ID, "filename": VALUES, "file_url": VALUES})


_INPUT_FILE_URL = _input_file(DATA_URL)

_IN_PART = Typed(
    {
        "input_text": obj({"text": VALUES}),
        "output_text": obj({"text": VALUES, "annotations": Arr(_ANNOTATION), "logprobs": META}),
        "input_image": obj({"image_url": DATA_URL, "file_id": ID, "detail": META}),
        # file_data: a data: URL, or bare base64 (its type then told by the file name)
        "input_file": _InputFile(),
        "input_audio": obj({"input_audio": obj({"data": MEDIA, "format": META})}),
        "refusal": obj({"refusal": VALUES}),
        "summary_text": obj({"text": VALUES}),
        # an answer's reasoning_text part (untouched there: _OUT_PART) sent back as it came
        "reasoning_text": obj({"text": ECHO}),
    },
    default=GENERIC,
)  # fmt: skip
_IN_CONTENT = Either(VALUES, Arr(_IN_PART))
# A tool an MCP server lists: its input_schema is a JSON Schema (property names are keys).
_MCP_TOOL = obj({"name": VALUES, "description": VALUES, "input_schema": SCHEMA, "annotations": GENERIC})
_MESSAGE_ITEM = obj({"id": ID, "role": META, "status": META, "content": _IN_CONTENT})
_IDS = {"id": ID, "call_id": ID, "approval_request_id": ID}


def _item(fields: dict[str, Rule]) -> Obj:
    """An item of the conversation: its ids are ids, the rest as fields say (unknown
    members fail closed)."""
    return obj({**_IDS, **fields})


_SAFETY_CHECKS = Arr(obj({"id": ID}))
# Items that are calls and their outputs, alike in input and output (listed back, echoed).
_CALL_ITEMS: dict[str, Rule] = {
    "function_call": _item({"name": VALUES, "arguments": JSON_TEXT}),
    "function_call_output": _item({"output": _IN_CONTENT}),
    "custom_tool_call": _item({"name": VALUES, "input": VALUES}),
    "custom_tool_call_output": _item({"output": _IN_CONTENT}),
    "mcp_call": _item({"name": VALUES, "server_label": VALUES, "arguments": JSON_TEXT}),
    "mcp_approval_request": _item({"name": VALUES, "server_label": VALUES, "arguments": JSON_TEXT}),
    "mcp_approval_response": _item({}),
    "mcp_list_tools": _item({"server_label": VALUES, "tools": Arr(_MCP_TOOL)}),
    "computer_call": _item({"pending_safety_checks": _SAFETY_CHECKS}),
    "computer_call_output": _item(
        {"acknowledged_safety_checks": _SAFETY_CHECKS, "output": obj({"file_id": ID, "image_url": DATA_URL})}
    ),
    # attribute names of the client's vector store, env variable names: the client's own,
    # which the API matches against nothing (a replayed item is history the model reads;
    # a vector store's attributes went in masked, as the file_search filters' keys do;
    # `command` is masked as text): masked like any JSON key, and restored in an answer
    "file_search_call": _item({"results": Arr(obj({"file_id": ID, "attributes": Obj({}, default=VALUES, keys=True)}))}),
    "local_shell_call": _item({"action": obj({"env": Obj({}, default=VALUES, keys=True)})}),
    "image_generation_call": _item({"result": MEDIA, "error": obj({})}),  # base64 image
    **dict.fromkeys(
        ("web_search_call", "code_interpreter_call", "local_shell_call_output", "shell_call", "shell_call_output",
         "apply_patch_call", "apply_patch_call_output", "program", "program_output", "tool_search_call"),
        _item({}),
    ),  # fmt: skip
    # Reasoning and compaction items carry encrypted_content and go back exactly as they came;
    # so do the two other compaction items the ChatGPT backend sends Codex and Codex replays
    # (codex-rs/protocol models.rs: `compaction_summary`, an alias of `compaction`, and
    # `context_compaction`): as unknown items their ciphertext would be read as text.
    "reasoning": SIGNED,
    "compaction": SIGNED,
    "compaction_summary": SIGNED,
    "context_compaction": SIGNED,
}
_INPUT_ITEM = Typed(
    {
        "message": _MESSAGE_ITEM,
        **_CALL_ITEMS,
        "item_reference": obj({"id": ID}),
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


# HTTP headers an MCP server gets: values masked; the names as written (the server
# matches them), each read by the leak guard (fields.NAME): one that holds an original is refused
_HEADERS = names(VALUES)
_RESPONSES_TOOL = Typed(
    {
        "function": _FUNCTION_DEF,
        "custom": obj({"name": VALUES, "description": VALUES, "format": GENERIC}),
        "tool_search": obj({"description": VALUES, "parameters": SCHEMA}),
    },
    # Built-in tools (web_search, file_search, mcp, shell, ...): their settings (server
    # URLs, domains, authorization) fail closed, their fixed names stay; at any depth, ids
    # of files are ids, header names and a skill's base64 source the client's own.
    default=obj({"name": META, "headers": _HEADERS, "file_id": ID}, Within({
        "type": META, "file_id": ID, "headers": _HEADERS, "source": Media("data", ("media_type",), {"type": META}),
    })),
)  # fmt: skip
# a namespace groups the client's own tools under a name of the client's
_RESPONSES_TOOL.table["namespace"] = obj({"name": VALUES, "description": VALUES, "tools": Arr(_RESPONSES_TOOL)})
# input items that carry tool definitions
_CALL_ITEMS["additional_tools"] = _item({"tools": Arr(_RESPONSES_TOOL)})
_CALL_ITEMS["tool_search_output"] = _item({"tools": Arr(_RESPONSES_TOOL)})
_TEXT_CONFIG = obj({"format": _JSON_SCHEMA_FORMAT, "verbosity": META})
_CALL_ITEMS["configuration_update"] = _item({"text": _TEXT_CONFIG})
_CALL_ITEMS["compaction_trigger"] = _item({})
_INPUT_ITEM.table.update(_CALL_ITEMS)
# The request's settings: masked as settings (numbers pass, words and keys only where
# they hold an original), and restored so where the response object echoes them; the
# model name is untouched.
_RESPONSES_SETTINGS = (
    "stream", "temperature", "top_p", "max_output_tokens", "max_tool_calls",
    "parallel_tool_calls", "include", "store", "reasoning",
    "service_tier", "truncation", "background", "prompt_cache_retention",
    "top_logprobs", "stream_options",
)  # fmt: skip
# A reusable prompt: its variables are substituted into what the model reads; their names
# are the stored prompt's (`{{customer}}`), sent as written (masking one breaks the match),
# each read by the leak guard (fields.NAME): one that holds an original is refused.
_CONVERSATION = Shape(obj({"id": ID}), GENERIC, ID)  # an id, or {"id": ...}; anything else unknown
_PROMPT = obj({"id": ID, "version": ID, "variables": names(Either(VALUES, _IN_PART))})
RESPONSES_REQUEST = Obj(
    {
        "model": MODEL,
        **IDENTIFIERS,
        **dict.fromkeys(_RESPONSES_SETTINGS, SETTING),
        "previous_response_id": ID,
        "conversation": _CONVERSATION,
        "prompt": _PROMPT,
        "instructions": Either(VALUES, Arr(_Item())),
        "input": Either(VALUES, Arr(_Item())),
        "tools": Arr(_RESPONSES_TOOL),
        "tool_choice": _TOOL_CHOICE,
        "text": _TEXT_CONFIG,
        "context_management": Arr(obj({})),
    },
    default=GENERIC,
    # the prompt: instructions and tools before the conversation (the SDK writes input first)
    prompt=("instructions", "tools", "input"),
    # a stored response or a conversation it continues: numbered by a key (rules/session.py)
    state=("previous_response_id", "conversation"),
    # an answer asked for as JSON (base/jsonanswer.py); a stored response says it in the same member
    json_answer=((("text", "format", "type"), frozenset({"json_schema", "json_object"})),),
)
# The request headers that carry the client's own text. Codex (codex-rs `TurnMetadata`)
# sends `x-codex-turn-metadata` on every Responses request
# (`/v1/responses`, chatgpt.com's `/backend-api/codex/responses`, `.../compact`): JSON
# text of the session and turn ids, the working directory, its git branch, remotes and
# last commit, the OS, the terminal; the same text as the body's
# client_metadata["x-codex-turn-metadata"]. Read like that member (JSON text).
REQUEST_HEADERS = (TextHeader("x-codex-turn-metadata", JSON_TEXT),)

_OUT_PART = Typed(
    {
        "output_text": obj({"text": ANSWER, "annotations": Arr(_ANNOTATION), "logprobs": META}),
        "refusal": obj({"refusal": PROSE}),
        "reasoning_text": SIGNED,  # reasoning: untouched, like thinking
    },
    default=GENERIC,
)
_OUT_ITEM = Typed(
    {
        **_CALL_ITEMS,
        "message": _item({"role": META, "status": META, "content": Arr(_OUT_PART)}),
    },
    default=GENERIC,
)
RESPONSE_OBJECT = Obj(
    {
        "model": MODEL,
        **dict.fromkeys(_RESPONSES_SETTINGS, SETTING),
        **dict.fromkeys(("object", "created_at", "completed_at", "status"), META), "usage": COUNTERS,
        "reasoning": SIGNED,  # settings and the summaries of reasoning: untouched, like thinking
        "id": ID,
        "previous_response_id": ID,
        "conversation": _CONVERSATION,
        "error": obj({}),  # its `type` the API's word, its message restored
        "input_transformations": Arr(obj({"id": ID})),
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


def restore_stored(body: bytes, r: Restorer) -> bytes:
    """A stored response as GET /v1/responses/{id} (or its cancel) gives it back, whole:
    the request that asked for a JSON answer is gone, but the response says it in its own
    `text.format` (base/jsonanswer.py): its answer's text is then restored as JSON text."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    r.output = JSON if answers_json(doc, RESPONSES_REQUEST) else TEXT
    return restore_body(body, RESPONSE_OBJECT, r)


class _AnyItem(Rule):
    """An item listed back by input_items: an input item, or an output item (a message
    with output_text parts, a call the model made)."""

    string = True

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and value.get("type") in _OUT_ITEM.table and value.get("role") == "assistant":
            return _OUT_ITEM.resolve(value)
        return _Item().resolve(value)


ANY_ITEM = _AnyItem()  # an item stored in a conversation, or listed back by input_items
INPUT_ITEMS_LIST = Obj(
    {"object": META, "first_id": ID, "last_id": ID, "data": Arr(ANY_ITEM)}, default=GENERIC
)


# -- stream events (openai/responses.py streams with these) ----------------------------

# delta event type -> (channel field, window mode, the matching done event's field)
_DELTAS = {
    "response.output_text.delta": ("text", Window.OUTPUT),
    "response.refusal.delta": ("refusal", Window.TEXT),
    "response.function_call_arguments.delta": ("args", Window.JSON),
    "response.custom_tool_call_input.delta": ("input", Window.VALUE),
    "response.mcp_call_arguments.delta": ("args", Window.JSON),
    "response.code_interpreter_call_code.delta": ("code", Window.VALUE),
    "response.shell_call_command.delta": ("command", Window.VALUE),
    "response.audio.transcript.delta": ("transcript", Window.TEXT),
}
_DONES = {
    "response.output_text.done": ("response.output_text.delta", "text", ANSWER),
    "response.refusal.done": ("response.refusal.delta", "refusal", PROSE),
    "response.function_call_arguments.done": ("response.function_call_arguments.delta", "arguments", JSON_TEXT),
    "response.custom_tool_call_input.done": ("response.custom_tool_call_input.delta", "input", VALUES),
    "response.mcp_call_arguments.done": ("response.mcp_call_arguments.delta", "arguments", JSON_TEXT),
    "response.code_interpreter_call_code.done": ("response.code_interpreter_call_code.delta", "code", VALUES),
    "response.shell_call_command.done": ("response.shell_call_command.delta", "command", VALUES),
    "response.audio.transcript.done": ("response.audio.transcript.delta", "", VALUES),  # no text of its own
}  # fmt: skip
_SNAPSHOT: dict[str, Rule] = {
    "response.output_item.added": Obj({"item": _OUT_ITEM}, default=GENERIC),
    "response.output_item.done": Obj({"item": _OUT_ITEM}, default=GENERIC),
    "response.content_part.added": Obj({"part": _OUT_PART}, default=GENERIC),
    "response.content_part.done": Obj({"part": _OUT_PART}, default=GENERIC),
}
_SNAPSHOT["response.output_text.annotation.added"] = Obj({"annotation": _ANNOTATION, "item_id": ID}, default=GENERIC)
_RESPONSE_EVENT = Obj({"response": RESPONSE_OBJECT}, default=GENERIC)
_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OPAQUE = frozenset({"response.audio.delta", "response.image_generation_call.partial_image"})
# The envelope every event of the stream has (https://platform.openai.com/docs/api-reference/responses-streaming):
# positions and the item's id; anything else in an event this table does not know fails
# closed (restored).
_ENVELOPE_FIELDS: dict[str, Rule] = {
    **dict.fromkeys(("sequence_number", "output_index", "content_index", "summary_index"), META), "item_id": ID,
}
_EVENT_ENVELOPE = obj(_ENVELOPE_FIELDS)
# A channel event's own members: the envelope, the logprobs (the stream's own reading,
# logprobs.py) and padding; any other string in it is restored whole, as in every event.
_CHANNEL_FIELDS: dict[str, Rule] = {**_ENVELOPE_FIELDS, "type": META, "command_index": META, "logprobs": SKIP,
                                    "obfuscation": SKIP}  # fmt: skip
_DONE_RULES = {
    t: obj({**_CHANNEL_FIELDS, **({field: rule} if field else {}), "name": VALUES})
    for t, (_, field, rule) in _DONES.items()
}
_DELTA_RULES = {
    t: obj({**_CHANNEL_FIELDS, "delta": JSON_TEXT if mode == Window.JSON else PROSE})
    for t, (_, mode) in _DELTAS.items()
}


def event_rule(t: object, obj: dict) -> Rule:
    """The table of one stream event by its type: what the stream restores in it (a
    delta's text goes through its channel's window instead), what passes untouched."""
    if not isinstance(t, str):
        return GENERIC
    if t in _DELTA_RULES:
        return _DELTA_RULES[t]  # type: ignore[index]
    if t in _DONE_RULES:
        return _DONE_RULES[t]  # type: ignore[index]
    if t in _SNAPSHOT:
        return _SNAPSHOT[t]  # type: ignore[index]
    if isinstance(t, str) and (t.startswith("response.reasoning") or t in _OPAQUE):
        return SIGNED  # reasoning (like thinking), base64 audio and images
    if t in _ENDS or (isinstance(t, str) and t.startswith("response.") and "response" in obj):
        return _RESPONSE_EVENT
    return _EVENT_ENVELOPE if t.startswith("response.") else GENERIC


class _Event(Rule):
    string = True
    kind = "unknown"

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        return event_rule(value.get("type"), value).resolve(value)


STREAM_EVENT: Rule = _Event()
