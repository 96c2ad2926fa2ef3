"""Cohere's v2 Chat API (`POST /v2/chat`): who serves it, what to mask in a request, how
to restore a whole response, its error shape (sans I/O). Its stream is cohere/stream.py.

The field model follows the official `cohere` Python SDK's types (`cohere.v2` and
`cohere.types`: V2ChatRequest, ChatMessageV2 by `role`, its content parts by `type`,
ToolV2, Document, ResponseFormatV2, Thinking, V2ChatResponse, Citation, Source) and
https://docs.cohere.com/reference/chat. A request member, message role or content part
type the model does not know is refused, naming where it is (never its text): a new
Cohere field fails closed until it is declared here. Responses are restored, never
refused: a member they do not know is restored whole (GENERIC).
"""

from __future__ import annotations

import json

from ...base.exempt import COUNTERS, SIGNED
from ...base.fields import ANSWER, CLIENT_ID, DATA_URL, ECHO, GENERIC, ID, META, SCHEMA, Vocabulary
from ...base.offsets import Offsets
from ...base.restore import dumps, restore_body
from ...base.wirespec import Provider
from ...errors import MaskError
from ...rules.rules import Restorer
from ...wire.jsonspan import JSON_TEXT, PROSE, USER, VALUES, Arr, Either, JsonAnswer, Obj, Rule, Typed

# Cohere's API: the key as a bearer token in Authorization. The SDK's default base URL is
# https://api.cohere.com (`cohere.environment.ClientEnvironment.PRODUCTION`); the older
# api.cohere.ai still answers.
PROVIDER = Provider("cohere", hosts=("api.cohere.com", "api.cohere.ai"), headers=frozenset({"authorization"}))

_NAME = "Cohere v2 Chat"


class Closed(Obj):
    """An object of the request whose members are all declared: one it does not know is
    refused (MaskError naming `where`, never the member's name: it may be an original)."""

    def __init__(self, where: str, fields: dict[str, Rule], json_answer: JsonAnswer = ()) -> None:
        super().__init__(fields, default=GENERIC, json_answer=json_answer)
        self.where = where

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and not value.keys() <= self.fields.keys():
            n = len(value.keys() - self.fields.keys())
            raise MaskError(
                f"{_NAME}: {self.where} has {n} member{'s' if n > 1 else ''} disguise does not know "
                f"(known: {', '.join(sorted(self.fields))}); refused rather than sent unread"
            )
        if value is not None and not isinstance(value, dict):
            return GENERIC.resolve(value)  # a string where an object was expected: masked
        return self


class ClosedTyped(Typed):
    """An object dispatched on its `type` (a message on its `role`), refused when the
    type is not declared."""

    def __init__(self, where: str, table: dict[str, Rule], field: str = "type") -> None:
        super().__init__(table, GENERIC, field)
        self.where = where

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict):
            t = value.get(self.field)
            if not isinstance(t, str) or t not in self.table:
                raise MaskError(
                    f"{_NAME}: {self.where} of a {self.field} disguise does not know "
                    f"(known: {', '.join(sorted(self.table))}); refused rather than sent unread"
                )
        return super().resolve(value)


def _part(where: str, fields: dict[str, Rule]) -> Closed:
    return Closed(where, {"type": META, **fields})


# Document: `data` is a map the model reads keys and values of ("both the key name and
# the value will be passed to the model"); its `id` is the client's, cited back: an
# identifier the client chose (fields.CLIENT_ID), masked here and restored in citations.
_DOCUMENT = Closed("a document", {"id": CLIENT_ID, "data": USER})
_DOCUMENTS = Arr(Either(VALUES, _DOCUMENT))  # a document is a string or a Document
_TEXT_PART = _part("a text content part", {"text": VALUES})
_IMAGE = Closed("an image_url", {"url": DATA_URL, "detail": META})
_USER_PARTS = ClosedTyped(
    "a user content part",
    {
        "text": _TEXT_PART,
        "image_url": _part("an image_url content part", {"image_url": _IMAGE}),
        "document": _part("a document content part", {"document": _DOCUMENT}),
    },
)
_SYSTEM_PARTS = ClosedTyped("a system content part", {"text": _TEXT_PART})
_TOOL_PARTS = ClosedTyped(
    "a tool content part",
    {"text": _TEXT_PART, "document": _part("a document content part", {"document": _DOCUMENT})},
)
# Thinking in history is masked like any text the model reads: nothing signs it (an
# answer's thinking reaches the client as the model wrote it, disguised, and comes back so).
_ASSISTANT_PARTS = ClosedTyped(
    "an assistant content part",
    {"text": _TEXT_PART, "thinking": _part("a thinking content part", {"thinking": ECHO})},
)

# A citation: the cited text, its offsets, and the sources it cites (a document the
# client sent, a tool's output): read by the model in history, restored in answers.
_SOURCES_IN = ClosedTyped(
    "a citation source",
    {
        "document": _part("a document source", {"id": CLIENT_ID, "document": USER}),
        "tool": _part("a tool source", {"id": ID, "tool_output": USER}),
    },
)
_CITATION_IN = Closed(
    "a citation",
    {"start": META, "end": META, "text": VALUES, "sources": Arr(_SOURCES_IN), "content_index": META, "type": META},
)
# A tool call: the function name is the masked tool name, its arguments JSON text (keys
# masked as the tool's parameter names are).
_TOOL_CALL_IN = Closed(
    "a tool call",
    {"id": ID, "type": META, "function": Closed("a tool call's function", {"name": VALUES, "arguments": JSON_TEXT})},
)
_MESSAGE = ClosedTyped(
    "a message",
    {
        "system": Closed("a system message", {"role": META, "content": Either(VALUES, Arr(_SYSTEM_PARTS))}),
        "user": Closed("a user message", {"role": META, "content": Either(VALUES, Arr(_USER_PARTS))}),
        "assistant": Closed(
            "an assistant message",
            {
                "role": META, "content": Either(VALUES, Arr(_ASSISTANT_PARTS)), "tool_plan": VALUES,
                "tool_calls": Arr(_TOOL_CALL_IN), "citations": Arr(_CITATION_IN),
            },
        ),
        "tool": Closed(
            "a tool message", {"role": META, "tool_call_id": ID, "content": Either(VALUES, Arr(_TOOL_PARTS))}
        ),
    },
    field="role",
)  # fmt: skip
_TOOL = Closed(
    "a tool",
    {
        "type": META,
        "function": Closed("a tool's function", {"name": VALUES, "description": VALUES, "parameters": SCHEMA}),
    },
)
_RESPONSE_FORMAT = ClosedTyped(
    "response_format",
    {"text": _part("response_format", {}), "json_object": _part("response_format", {"json_schema": SCHEMA})},
)

# The API's own settings: numbers, enums, flags.
_SETTINGS = (
    "model", "stream", "strict_tools", "safety_mode", "max_tokens", "temperature", "seed",
    "frequency_penalty", "presence_penalty", "k", "p", "logprobs", "priority",
)  # fmt: skip
CHAT_REQUEST: Rule = Closed(
    "the request",
    {
        **dict.fromkeys(_SETTINGS, META),
        "messages": Arr(_MESSAGE),
        "tools": Arr(_TOOL),
        "documents": _DOCUMENTS,
        "citation_options": Closed("citation_options", {"mode": META}),
        "response_format": _RESPONSE_FORMAT,
        "stop_sequences": VALUES,  # model text: a stop sequence may hold an original
        "tool_choice": Vocabulary(("REQUIRED", "NONE", "AUTO")),
        "thinking": Closed("thinking", {"type": META, "token_budget": META}),
    },
    # an answer asked for as JSON (base/jsonanswer.py): its text is JSON text
    json_answer=((("response_format", "type"), frozenset({"json_object"})),),
)

# -- responses ------------------------------------------------------------------------

_SOURCES_OUT = Typed(
    {
        "document": Obj({"type": META, "id": CLIENT_ID, "document": USER}),
        "tool": Obj({"type": META, "id": ID, "tool_output": USER}),
    },
    default=GENERIC,
)  # fmt: skip
# The cited text is a piece of the answer: restored like it. `start` and `end` count
# characters of the text the model wrote, disguised: moved to the restored text by
# moved_citation (whole bodies: restore_response; streams: CohereStream).
CITATION: Rule = Obj(
    {"start": META, "end": META, "text": PROSE, "sources": Arr(_SOURCES_OUT), "content_index": META, "type": META},
    default=GENERIC,
)
TOOL_CALL: Rule = Obj(
    {"id": ID, "type": META, "function": Obj({"name": VALUES, "arguments": JSON_TEXT}, default=GENERIC)},
    default=GENERIC,
)
# Thinking passes byte-identical (it goes back in the next request's history as it came).
# The answer's text (ANSWER: JSON text where the request asked for JSON); the tool plan is prose.
_CONTENT_OUT = Typed({"text": Obj({"type": META, "text": ANSWER}, default=GENERIC), "thinking": SIGNED},
                     default=GENERIC)  # fmt: skip
_MESSAGE_OUT = Obj(
    {
        "role": META, "content": Either(ANSWER, Arr(_CONTENT_OUT)), "tool_plan": PROSE,
        "tool_calls": Arr(TOOL_CALL), "citations": Arr(CITATION),
    },
    default=GENERIC,
)  # fmt: skip
# Log probabilities: each token's text (a piece of a disguise at most: restored as a value).
LOGPROB: Rule = Obj({"token_ids": META, "text": VALUES, "logprobs": META}, default=GENERIC)
# A whole answer; an error body (`{"id": ..., "message": "..."}`) has a string message.
CHAT_RESPONSE: Rule = Obj(
    {
        "id": ID, "finish_reason": META, "usage": COUNTERS, "message": Either(VALUES, _MESSAGE_OUT),
        "logprobs": Arr(LOGPROB),
    },
    default=GENERIC,
)  # fmt: skip


def cited(citation: dict) -> tuple[str, object] | None:
    """What a citation's `start`/`end` count characters of: ("plan",) the tool plan,
    ("content", i) the text of content i (None: the answer's first text content), None
    for a thought (passed as it came: its offsets stay)."""
    t = citation.get("type")
    if t == "PLAN":
        return ("plan", None)
    if t == "THINKING_CONTENT":
        return None
    i = citation.get("content_index")
    return ("content", i if isinstance(i, int) and not isinstance(i, bool) else None)


def moved_citation(citation: object, offsets: Offsets | None) -> dict | None:
    """citation with `start` and `end` moved to the restored text (Offsets.at: a bound
    inside a restored original widens to the whole original); None when they stay."""
    if offsets is None or not offsets.moved or not isinstance(citation, dict):
        return None
    new = dict(citation)
    for k, end in (("start", False), ("end", True)):
        v = citation.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            new[k] = offsets.at(v, end)
    return new if new != citation else None


def _texts(message: dict) -> dict[tuple[str, object], str]:
    """The texts of a whole answer's message that citations point into, by cited()'s key."""
    out: dict[tuple[str, object], str] = {}
    if isinstance(message.get("tool_plan"), str):
        out[("plan", None)] = message["tool_plan"]
    content = message.get("content")
    if isinstance(content, str):
        out[("content", None)] = out[("content", 0)] = content
    for i, c in enumerate(content if isinstance(content, list) else ()):
        if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str):
            out[("content", i)] = c["text"]
            out.setdefault(("content", None), c["text"])
    return out


def restore_response(raw: bytes, r: Restorer) -> bytes:
    """A whole v2 Chat answer: restored by CHAT_RESPONSE, then each citation's offsets
    moved to the restored text it points into (re-serialised only where one moves)."""
    new = restore_body(raw, CHAT_RESPONSE, r)
    if new is raw or b'"citations"' not in raw:
        return new
    try:
        doc, out = json.loads(raw), json.loads(new)
    except ValueError:
        return new
    message = doc.get("message") if isinstance(doc, dict) else None
    citations = message.get("citations") if isinstance(message, dict) else None
    if not isinstance(citations, list) or not citations:
        return new
    texts = _texts(message)  # type: ignore[arg-type]
    maps: dict[tuple[str, object], Offsets] = {}
    changed = False
    for n, c in enumerate(citations):
        key = cited(c) if isinstance(c, dict) else None
        if key is None or key not in texts:
            continue
        if key not in maps:
            maps[key] = Offsets.of(texts[key], r)
        moved = moved_citation(c, maps[key])
        if moved is not None:
            out["message"]["citations"][n].update({k: moved[k] for k in ("start", "end") if k in moved})
            changed = True
    return dumps(out).encode("utf-8") if changed else new


def error_body(message: str) -> bytes:
    """A response body in the shape Cohere's API uses for errors (`{"message": ...}`)."""
    return json.dumps({"message": message}).encode()
