"""Which API a request belongs to, and the per-API pieces (sans I/O)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .jsonspan import Rule
from .providers import anthropic, bedrock, google, openai
from .providers.base import BodyStream, SSEStream, restore_body
from .providers.common import GENERIC
from .sse import is_json_type
from .rules import Restorer


@dataclass(frozen=True)
class Api:
    name: str
    request_rule: Rule | None  # None: the request carries no model input (a retrieval)
    response_rule: Rule
    stream: Callable[[Restorer], SSEStream]
    error_body: Callable[[str], bytes]
    # A stream class of the API's own for this request path and response content type,
    # which then reads the body itself (Gemini's streamed JSON array arrives labelled
    # `application/json`); None, or unset: the body is told by its content (BodyStream).
    streams: Callable[[str, str], Callable[[Restorer], SSEStream] | None] | None = None

    def body_stream(
        self, restorer: Restorer, content_type: str, path: str = "", buffered: bool = False
    ) -> BodyStream | SSEStream | None:
        """The response body's reverser: an event stream or a whole body, told by its
        content. None (unless buffered, i.e. the body is already whole): a body labelled
        JSON that is best buffered and restored whole at its end."""
        if self.streams is not None:
            cls = self.streams(path, content_type)
            if cls is not None:
                return cls(restorer)
        if not buffered and is_json_type(content_type):
            return None
        rule = self.response_rule
        return BodyStream(
            self.stream(restorer),
            lambda body: restore_body(body, rule, restorer),
            self.error_body,
            content_type,
        )


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
    "openai.chat", openai.CHAT_REQUEST, openai.CHAT_RESPONSE, openai.ChatStream, openai.error_body
)
OPENAI_CHAT_STORED = Api(
    "openai.chat.stored", None, openai.CHAT_RESPONSE, openai.ChatStream, openai.error_body
)
OPENAI_CHAT_UPDATE = Api(  # POST /chat/completions/{id}: new metadata, the stored completion back
    "openai.chat.update", openai.CHAT_REQUEST, openai.CHAT_RESPONSE, openai.ChatStream, openai.error_body
)
OPENAI_CHAT_LIST = Api(
    "openai.chat.list", None, openai.CHAT_LIST, openai.ChatStream, openai.error_body
)
OPENAI_CHAT_MESSAGES = Api(
    "openai.chat.messages", None, openai.CHAT_STORED_MESSAGES, openai.ChatStream, openai.error_body
)
OPENAI_RESPONSES = Api(
    "openai.responses",
    openai.RESPONSES_REQUEST,
    openai.RESPONSE_OBJECT,
    openai.ResponsesStream,
    openai.error_body,
)
OPENAI_RESPONSES_STORED = Api(  # GET /responses/{id} (also ?stream=true), POST .../cancel
    "openai.responses.stored",
    None,
    openai.RESPONSE_OBJECT,
    openai.ResponsesStream,
    openai.error_body,
)
OPENAI_RESPONSES_INPUT_ITEMS = Api(
    "openai.responses.input_items",
    None,
    openai.INPUT_ITEMS_LIST,
    openai.ResponsesStream,
    openai.error_body,
)

# Google: the Gemini API (generativelanguage) and Vertex AI share the body shapes.
GOOGLE_GEMINI = Api(
    "google.gemini", google.GENERATE_REQUEST, google.RESPONSE, google.GeminiStream, google.error_body,
    google.stream_for,
)  # fmt: skip
VERTEX_GEMINI = Api(
    "vertex.gemini", google.GENERATE_REQUEST, google.RESPONSE, google.GeminiStream, google.error_body,
    google.stream_for,
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
# AWS Bedrock signs request bodies (SigV4): recognised only to be refused.
AWS_BEDROCK = Api("aws.bedrock", bedrock.REQUEST, GENERIC, bedrock.no_stream, bedrock.error_body)

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
    # AWS Bedrock Runtime: /model/{modelId}/invoke, /converse, and their streams
    (re.compile(r"(?:^|/)model/[^/]+/(?:invoke|invoke-with-response-stream|converse|converse-stream)\Z"),
     AWS_BEDROCK),
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
        ("POST", r"/responses", OPENAI_RESPONSES),
        ("POST", r"/responses/input_tokens", OPENAI_RESPONSES),
        ("POST", r"/responses/compact", OPENAI_RESPONSES),
        ("GET", rf"/responses/{_ID}", OPENAI_RESPONSES_STORED),
        ("POST", rf"/responses/{_ID}/cancel", OPENAI_RESPONSES_STORED),
        ("GET", rf"/responses/{_ID}/input_items", OPENAI_RESPONSES_INPUT_ITEMS),
    )
)


def recognise(method: str, path: str) -> Api | None:
    """The API of an LLM request, by method and path (query ignored); None otherwise."""
    m = method.upper()
    p = path.split("?", 1)[0].rstrip("/")
    if m == "POST":
        for rx, api in _PATTERN_ROUTES:
            if rx.search(p) is not None:
                return api
    for methods, rx, api in _ROUTES:
        if m in methods and rx.search(p):
            return api
    return None
