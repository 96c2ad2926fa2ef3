"""Google's Gemini API and Vertex AI (Gemini models): what to mask, how to reverse.

Requests follow GenerateContentRequest
(https://ai.google.dev/api/generate-content#request-body; Vertex AI uses the same
body: https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.endpoints/generateContent):
`contents[].parts[]`, `systemInstruction`, `tools[].functionDeclarations`, `toolConfig`,
`generationConfig`, `safetySettings`, `cachedContent`; countTokens also takes a whole
`generateContentRequest`. The API parses request JSON as proto3 JSON, which accepts
both lowerCamelCase and the proto field names (`system_instruction`, `inline_data`,
`thought_signature`: the recorded requests mix them), so every known field is known in
both spellings.

Responses are GenerateContentResponse objects: `candidates[]` (`content.parts[]`,
`finishReason`, `index`), `promptFeedback`, `usageMetadata`. Streamed, each chunk is
one such object: with `alt=sse` as SSE events (`data: {...}` and CRLF line ends, as
the API sends them), without it as the elements of one JSON array that arrives piece
by piece (jsonarray.ArrayFramer).

Stream channels: one hold-back window per candidate for its text (the parts a client
concatenates into `response.text`); thought parts (`"thought": true`) and
`thoughtSignature` pass byte-identical; a function call arrives whole in one part and is
restored whole (name, and args keys and values). A candidate's held tail goes out in the
chunk that carries its `finishReason`: appended to its last text part there, or in a
text part put first into its parts. A stream that ends before it ends (no finishReason,
no closing `]`) gets its held tails and then an explicit error in Google's own shape,
`{"error": {"code", "message", "status"}}`, which the google-genai SDK raises.
"""

from __future__ import annotations

import json
import re

from ..core.jsonspan import PROSE, SKIP, USER, VALUES, Arr, Either, Obj, Rule
from .fields import GENERIC, SCHEMA

# Candidates one stream may hold text for at once (candidateCount is at most 8 on
# today's models); past this the stream ends with an explicit error.
MAX_CHANNELS = 256

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _both(fields: dict[str, Rule]) -> dict[str, Rule]:
    """fields, each also under its proto field name (systemInstruction -> system_instruction)."""
    out = dict(fields)
    for k, v in fields.items():
        out.setdefault(_CAMEL.sub(lambda m: "_" + m.group(1).lower(), k), v)
    return out


def _obj(fields: dict[str, Rule], default: Rule = GENERIC) -> Obj:
    return Obj(_both(fields), default=default)


class _Part(Rule):
    """A part: a thought (`"thought": true`) passes whole, like a thinking block."""

    string = True

    def __init__(self, part: Rule) -> None:
        self.part = part

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and (value.get("thought") is True):
            return SKIP
        return self.part


# -- requests ---------------------------------------------------------------------------

_FUNCTION_CALL = _obj({"id": SKIP, "name": VALUES, "args": USER, "willContinue": SKIP})
_PART_FIELDS: dict[str, Rule] = {
    "text": VALUES,
    "thought": SKIP,
    "thoughtSignature": SKIP,  # signed by the provider: byte-identical or rejected
    "inlineData": SKIP,  # base64 media
    "fileData": SKIP,  # a file URI the provider resolves
    "videoMetadata": SKIP,
    "mediaResolution": SKIP,
    "functionCall": _FUNCTION_CALL,
    "executableCode": _obj({"id": SKIP, "language": SKIP, "code": VALUES}),
    "codeExecutionResult": _obj({"id": SKIP, "outcome": SKIP, "output": VALUES}),
}
_REQ_PART = _Part(_obj({}))  # fields below (functionResponse parts are parts too)
_FUNCTION_RESPONSE = _obj(
    {"id": SKIP, "name": VALUES, "response": USER, "parts": Arr(_REQ_PART), "willContinue": SKIP, "scheduling": SKIP}
)
_REQ_PART.part = _obj({**_PART_FIELDS, "functionResponse": _FUNCTION_RESPONSE})
CONTENT = _obj({"role": SKIP, "parts": Arr(_REQ_PART)})

_FUNCTION_DECLARATION = _obj(
    {
        "name": VALUES, "description": VALUES, "behavior": SKIP,
        "parameters": SCHEMA, "parametersJsonSchema": SCHEMA,
        "response": SCHEMA, "responseJsonSchema": SCHEMA,
    }
)  # fmt: skip
# Built-in tools (googleSearch, codeExecution, urlContext, retrieval, ...) carry
# configuration, no prose: their string values are masked like any unknown field.
_TOOL = _obj({"functionDeclarations": Arr(_FUNCTION_DECLARATION)})
_TOOL_CONFIG = _obj(
    {"functionCallingConfig": _obj({"mode": SKIP, "allowedFunctionNames": VALUES, "streamFunctionCallArguments": SKIP})}
)
_GENERATION_SKIPPED = (
    "temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "seed", "presencePenalty",
    "frequencyPenalty", "responseLogprobs", "logprobs", "responseMimeType", "responseModalities",
    "thinkingConfig", "speechConfig", "imageConfig", "mediaResolution", "routingConfig",
    "modelSelectionConfig", "audioTimestamp", "enableAffectiveDialog", "enableEnhancedCivicAnswers",
)  # fmt: skip
_GENERATION_CONFIG = _obj(
    {
        **{k: SKIP for k in _GENERATION_SKIPPED},
        "responseSchema": SCHEMA, "responseJsonSchema": SCHEMA, "_responseJsonSchema": SCHEMA,
        "stopSequences": VALUES,  # the model stops at the disguised text it writes
    }
)  # fmt: skip

GENERATE_REQUEST = _obj(
    {
        "model": SKIP,
        "contents": Arr(CONTENT),
        "systemInstruction": Either(VALUES, CONTENT),
        "tools": Arr(_TOOL),
        "toolConfig": _TOOL_CONFIG,
        "generationConfig": _GENERATION_CONFIG,
        "safetySettings": SKIP,  # categories and thresholds (enums)
        "cachedContent": SKIP,  # a resource name ("cachedContents/..."): a reference, untouched
        "serviceTier": SKIP,
    }
)
# countTokens: {"contents": [...]} or {"generateContentRequest": {...}}
GENERATE_REQUEST.fields["generateContentRequest"] = GENERATE_REQUEST
GENERATE_REQUEST.fields["generate_content_request"] = GENERATE_REQUEST

# -- whole responses -----------------------------------------------------------------------

_RESP_PART = _Part(_obj({**_PART_FIELDS, "text": PROSE, "functionResponse": _FUNCTION_RESPONSE}))
_CANDIDATE_FIELDS: dict[str, Rule] = _both(
    {
        "index": SKIP, "finishReason": SKIP, "safetyRatings": SKIP, "tokenCount": SKIP,
        "avgLogprobs": SKIP,
        # Token by token: a disguise split over two tokens cannot be restored in place
        # (OpenAI's logprobs are passed the same way).
        "logprobsResult": SKIP,
        "finishMessage": VALUES,
    }
)  # fmt: skip
_CANDIDATE = Obj({**_CANDIDATE_FIELDS, "content": _obj({"role": SKIP, "parts": Arr(_RESP_PART)})}, default=GENERIC)
_RESPONSE_FIELDS: dict[str, Rule] = _both(
    {
        "usageMetadata": SKIP, "modelVersion": SKIP, "responseId": SKIP, "createTime": SKIP,
        "promptFeedback": _obj({"blockReason": SKIP, "safetyRatings": SKIP}),
    }
)  # fmt: skip
GENERATE_RESPONSE = Obj({**_RESPONSE_FIELDS, "candidates": Arr(_CANDIDATE)}, default=GENERIC)


class _ObjectOrArray(Rule):
    """A response body: one object, or the JSON array of a stream that arrived whole."""

    string = True

    def __init__(self, item: Rule) -> None:
        self.item = item
        self.arr = Arr(item)

    def resolve(self, value: object) -> Rule:
        return self.arr if isinstance(value, list) else self.item.resolve(value)


RESPONSE: Rule = _ObjectOrArray(GENERATE_RESPONSE)  # also countTokens and error bodies



def _dumps(obj: object) -> str:
    """Compact JSON, UTF-8; \\u escapes where a lone surrogate cannot be UTF-8."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = json.dumps(obj, separators=(",", ":"))
    return s


def error_chunk(message: str, code: int = 500, status: str = "INTERNAL") -> str:
    """A chunk in Google's error shape (google.rpc.Status), as the API sends mid-stream."""
    return _dumps({"error": {"code": code, "message": message, "status": status}})


def error_body(message: str) -> bytes:
    """A response body in the shape Google's APIs use for errors (a refused request)."""
    return json.dumps({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}).encode()

