"""The API registry: which API a request belongs to, and each API's pieces (sans I/O).

Three answers for a request: an API this addon transforms (`recognise`), a path that
looks like an LLM API it does not transform (`llm_shaped`: on a protected host such a
request is scanned for originals instead), or neither. Each `Api` names its request and
response field rules, its stream class and its error shape; pipeline.py puts them to
work.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.jsonspan import Rule
from ..core.rules import Restorer
from . import anthropic, bedrock, bedrock_stream, google, legacy, openai_chat, openai_responses
from .gemini_array import stream_for as google_stream_for
from .gemini_live import GeminiLive
from .gemini_stream import GeminiStream
from .openai_realtime import OpenAIRealtime
from .realtime import Protocol
from .stream import SSEStream


@dataclass(frozen=True)
class Api:
    name: str
    request_rule: Rule | None  # None: the request carries no model input (a retrieval)
    response_rule: Rule
    stream: Callable[[Restorer], SSEStream]
    error_body: Callable[[str], bytes]
    # A stream class of the API's own for this request path and response content type,
    # which then reads the body itself (Gemini's streamed JSON array arrives labelled
    # `application/json`); None, or unset: the body is told by its content.
    streams: Callable[[str, str], Callable[[Restorer], SSEStream] | None] | None = None
    # The client signs the body (AWS SigV4): a masked body must be signed again before
    # it leaves (resign.py), or, without a way to sign, refused.
    signed: bool = False


ANTHROPIC_MESSAGES = Api(
    "anthropic.messages",
    anthropic.MESSAGES_REQUEST,
    anthropic.MESSAGE_RESPONSE,
    anthropic.AnthropicStream,
    anthropic.error_body,
)
ANTHROPIC_BATCHES = Api(
    "anthropic.batches",
    anthropic.BATCH_REQUEST,
    anthropic.GENERIC,
    anthropic.AnthropicStream,
    anthropic.error_body,
)
# Retrievals return model output from an earlier request: literals are global and are
# restored; that request's placeholders are gone with it and cannot be.
ANTHROPIC_BATCH_RESULTS = Api(
    "anthropic.batch_results",
    None,
    anthropic.BATCH_RESULT,
    anthropic.AnthropicStream,
    anthropic.error_body,
)

OPENAI_CHAT = Api(
    "openai.chat", openai_chat.CHAT_REQUEST, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_CHAT_STORED = Api(
    "openai.chat.stored", None, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_CHAT_UPDATE = Api(  # POST /chat/completions/{id}: new metadata, the stored completion back
    "openai.chat.update", openai_chat.CHAT_REQUEST, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream,
    openai_chat.error_body,
)  # fmt: skip
OPENAI_CHAT_LIST = Api(
    "openai.chat.list", None, openai_chat.CHAT_LIST, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_CHAT_MESSAGES = Api(
    "openai.chat.messages", None, openai_chat.CHAT_STORED_MESSAGES, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_RESPONSES = Api(
    "openai.responses",
    openai_responses.RESPONSES_REQUEST,
    openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream,
    openai_chat.error_body,
)
# POST /v1/responses/input_tokens and /v1/responses/compact take the same body as
# creating a response (input, instructions, tools); compact answers with output items.
OPENAI_RESPONSES_INPUT_TOKENS = Api(
    "openai.responses.input_tokens", openai_responses.RESPONSES_REQUEST, openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream, openai_chat.error_body,
)  # fmt: skip
OPENAI_RESPONSES_COMPACT = Api(
    "openai.responses.compact", openai_responses.RESPONSES_REQUEST, openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream, openai_chat.error_body,
)  # fmt: skip
OPENAI_COMPLETIONS = Api(
    "openai.completions", legacy.COMPLETIONS_REQUEST, legacy.COMPLETIONS_RESPONSE,
    legacy.CompletionsStream, openai_chat.error_body,
)  # fmt: skip
OPENAI_EMBEDDINGS = Api(
    "openai.embeddings", legacy.EMBEDDINGS_REQUEST, legacy.EMBEDDINGS_RESPONSE,
    legacy.CompletionsStream, openai_chat.error_body,
)  # fmt: skip

OPENAI_RESPONSES_STORED = Api(  # GET /responses/{id} (also ?stream=true), POST .../cancel
    "openai.responses.stored",
    None,
    openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream,
    openai_chat.error_body,
)
OPENAI_RESPONSES_INPUT_ITEMS = Api(
    "openai.responses.input_items",
    None,
    openai_responses.INPUT_ITEMS_LIST,
    openai_responses.ResponsesStream,
    openai_chat.error_body,
)

# Google: the Gemini API (generativelanguage) and Vertex AI share the body shapes.
GOOGLE_GEMINI = Api(
    "google.gemini", google.GENERATE_REQUEST, google.RESPONSE, GeminiStream, google.error_body,
    google_stream_for,
)  # fmt: skip
VERTEX_GEMINI = Api(
    "vertex.gemini", google.GENERATE_REQUEST, google.RESPONSE, GeminiStream, google.error_body,
    google_stream_for,
)  # fmt: skip
# Claude on Vertex AI: the Messages body (with `anthropic_version`, the model in the
# path) and the Messages stream.
VERTEX_ANTHROPIC = Api(
    "vertex.anthropic",
    anthropic.MESSAGES_REQUEST,
    anthropic.MESSAGE_RESPONSE,
    anthropic.AnthropicStream,
    anthropic.error_body,
)
# AWS Bedrock Runtime (bedrock.py): SigV4 signs the body, so a masked one is re-signed.
BEDROCK_INVOKE = Api(
    "aws.bedrock.invoke", bedrock.INVOKE_REQUEST, bedrock.INVOKE_RESPONSE, anthropic.AnthropicStream,
    bedrock.error_body, bedrock_stream.stream_for, signed=True,
)  # fmt: skip
BEDROCK_CONVERSE = Api(
    "aws.bedrock.converse", bedrock.CONVERSE_REQUEST, bedrock.CONVERSE_RESPONSE, anthropic.AnthropicStream,
    bedrock.error_body, bedrock_stream.stream_for, signed=True,
)  # fmt: skip
BEDROCK_COUNT_TOKENS = Api(
    "aws.bedrock.count_tokens", bedrock.COUNT_TOKENS_REQUEST, bedrock.COUNT_TOKENS_RESPONSE,
    anthropic.AnthropicStream, bedrock.error_body, bedrock_stream.stream_for, signed=True,
)  # fmt: skip

# Paths whose model name sits inside them; checked before the suffixes below. `:` may
# arrive percent-encoded.
_COLON = r"(?::|%3[aA])"
_PATTERN_ROUTES: tuple[tuple[re.Pattern[str], Api], ...] = (
    # Vertex AI: /v1/projects/P/locations/L/publishers/anthropic/models/M:streamRawPredict
    # (count tokens: .../models/count-tokens:rawPredict)
    (re.compile(r"/publishers/anthropic/models/[^/]+" + _COLON + r"(?:rawPredict|streamRawPredict)\Z"),
     VERTEX_ANTHROPIC),
    # Vertex AI: .../publishers/google/models/M:generateContent, tuned-model endpoints
    # (.../endpoints/E:generateContent); also the express-mode /v1/publishers/google/...
    (re.compile(r"/(?:publishers/google/models|endpoints)/[^/]+" + _COLON
                + r"(?:generateContent|streamGenerateContent|countTokens|computeTokens)\Z"), VERTEX_GEMINI),
    # Gemini API: /v1beta/models/M:streamGenerateContent, /v1beta/tunedModels/M:...
    (re.compile(r"/(?:models|tunedModels)/[^/]+" + _COLON
                + r"(?:generateContent|streamGenerateContent|countTokens)\Z"), GOOGLE_GEMINI),
    # AWS Bedrock Runtime: /model/{modelId}/invoke, /converse, their streams, count-tokens
    # (modelId one segment: an id, a profile, or a URL-encoded ARN)
    (re.compile(r"(?:^|/)model/[^/]+/(?:invoke|invoke-with-response-stream)\Z"), BEDROCK_INVOKE),
    (re.compile(r"(?:^|/)model/[^/]+/(?:converse|converse-stream)\Z"), BEDROCK_CONVERSE),
    (re.compile(r"(?:^|/)model/[^/]+/count-tokens\Z"), BEDROCK_COUNT_TOKENS),
)  # fmt: skip

# Matched on the end of the path, so gateways that mount an API under a prefix
# (`/anthropic/v1/messages`, `/openai/deployments/x/chat/completions`) are recognised too.
# OpenAI, OpenRouter (/api/v1/...), vLLM, DeepSeek, Azure deployment paths
# (/openai/deployments/NAME/chat/completions?api-version=...). An id is one path segment.
_ID = r"[^/]+"
_ROUTES: tuple[tuple[frozenset[str], re.Pattern[str], Api], ...] = tuple(
    (frozenset(methods.split()), re.compile(rx + r"\Z"), api)
    for methods, rx, api in (
        ("POST", r"/v1/messages", ANTHROPIC_MESSAGES),
        ("POST", r"/v1/messages/count_tokens", ANTHROPIC_MESSAGES),
        ("POST", r"/v1/messages/batches", ANTHROPIC_BATCHES),
        ("GET", rf"/v1/messages/batches/{_ID}/results", ANTHROPIC_BATCH_RESULTS),
        ("POST", r"/chat/completions", OPENAI_CHAT),
        ("GET", r"/chat/completions", OPENAI_CHAT_LIST),
        ("GET", rf"/chat/completions/{_ID}", OPENAI_CHAT_STORED),
        ("POST", rf"/chat/completions/{_ID}", OPENAI_CHAT_UPDATE),
        ("GET", rf"/chat/completions/{_ID}/messages", OPENAI_CHAT_MESSAGES),
        # the legacy endpoints (after /chat/completions, which also ends in /completions)
        ("POST", r"/completions", OPENAI_COMPLETIONS),
        ("POST", r"/embeddings", OPENAI_EMBEDDINGS),
        ("POST", r"/responses", OPENAI_RESPONSES),
        ("POST", r"/responses/input_tokens", OPENAI_RESPONSES_INPUT_TOKENS),
        ("POST", r"/responses/compact", OPENAI_RESPONSES_COMPACT),
        ("GET", rf"/responses/{_ID}", OPENAI_RESPONSES_STORED),
        ("POST", rf"/responses/{_ID}/cancel", OPENAI_RESPONSES_STORED),
        ("GET", rf"/responses/{_ID}/input_items", OPENAI_RESPONSES_INPUT_ITEMS),
    )
)


# -- realtime APIs over WebSocket (realtime.py) ---------------------------------------------


@dataclass(frozen=True)
class RealtimeApi:
    name: str
    protocol: Callable[[Restorer], Protocol]  # the API's half of a realtime.Connection
    error_body: Callable[[str], bytes]  # an HTTP error body, to refuse the upgrade itself


OPENAI_REALTIME = RealtimeApi("openai.realtime", OpenAIRealtime, openai_chat.error_body)
GOOGLE_LIVE = RealtimeApi("google.live", GeminiLive, google.error_body)
VERTEX_LIVE = RealtimeApi("vertex.live", GeminiLive, google.error_body)
_WS_ROUTES: tuple[tuple[re.Pattern[str], RealtimeApi], ...] = (
    # OpenAI /v1/realtime?model=...; Azure /openai/realtime?api-version=...&deployment=...
    # and /openai/v1/realtime?model=...; gateways that mount it under a prefix
    (re.compile(r"/realtime\Z"), OPENAI_REALTIME),
    # Gemini API: /ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent
    # (v1alpha too; ...Constrained with an ephemeral token)
    (re.compile(r"/ws/google\.ai\.generativelanguage\.v[0-9a-z]+\.GenerativeService\."
                r"BidiGenerateContent(?:Constrained)?\Z"), GOOGLE_LIVE),
    # Vertex AI: /ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent
    (re.compile(r"/ws/google\.cloud\.aiplatform\.v[0-9a-z]+\.LlmBidiService/BidiGenerateContent\Z"), VERTEX_LIVE),
)  # fmt: skip


def recognise_ws(path: str) -> RealtimeApi | None:
    """The realtime API of a WebSocket upgrade request, by path (query ignored)."""
    p = _path(path)
    for rx, api in _WS_ROUTES:
        if rx.search(p) is not None:
            return api
    return None


APIS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(api.name for _, _, api in _ROUTES),
            *(api.name for _, api in _PATTERN_ROUTES),
            *(api.name for _, api in _WS_ROUTES),
        ]
    )
)


def _path(path: str) -> str:
    return path.split("?", 1)[0].split("#", 1)[0].rstrip("/")


def recognise(method: str, path: str) -> Api | None:
    """The API of an LLM request, by method and path (query ignored); None otherwise."""
    m = method.upper()
    p = _path(path)
    if m == "POST":
        for rx, api in _PATTERN_ROUTES:
            if rx.search(p) is not None:
                return api
    for methods, rx, api in _ROUTES:
        if m in methods and rx.search(p):
            return api
    return None


# LLM API families this addon does not transform: Gemini (`models/x:generateContent`),
# Bedrock (`/model/x/invoke`), Cohere (`/v1/chat`, `/v2/chat`), OpenAI's other
# endpoints (assistants, threads, batches, files, audio, images, realtime, ...), the
# stored-response reads of Responses, Ollama (`/api/chat`, `/api/generate`).
_LLM_SHAPED = re.compile(
    r":(?:stream)?generatecontent|:counttokens|:(?:batch)?embedcontents?|:predict"
    r"|/model/[^/]+/(?:invoke|converse|count-tokens)"
    r"|/v[0-9][a-z0-9]*/(?:chat|generate|embed|rerank|messages|responses|completions|assistants|threads"
    r"|batches|files|uploads|audio|images|realtime|conversations|vector_stores|moderations|models|fine_tuning)\b"
    r"|/api/(?:chat|generate|embed|embeddings)\b"
    r"|/openai/deployments/"
)


def llm_shaped(path: str) -> bool:
    """A path of an LLM API, transformed here or not (any method)."""
    return bool(_LLM_SHAPED.search(_path(path).lower()))

