"""Which API a request belongs to, and the per-API pieces (sans I/O)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .jsonspan import Rule
from .providers import anthropic, bedrock, google, openai
from .providers.base import SSEStream
from .providers.common import GENERIC
from .rules import Restorer


@dataclass(frozen=True)
class Api:
    name: str
    request_rule: Rule
    response_rule: Rule
    stream: Callable[[Restorer], SSEStream]
    error_body: Callable[[str], bytes]
    # Which stream class reverses a response, by request path and response content type
    # (None: the body is restored whole). Unset: SSE (`text/event-stream`) is `stream`.
    streams: Callable[[str, str], Callable[[Restorer], SSEStream] | None] | None = None

    def stream_for(self, path: str, content_type: str) -> Callable[[Restorer], SSEStream] | None:
        """The stream class for this response, or None when it is a whole body."""
        if self.streams is not None:
            return self.streams(path, content_type)
        return self.stream if "text/event-stream" in content_type.lower() else None


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

OPENAI_CHAT = Api(
    "openai.chat", openai.CHAT_REQUEST, openai.CHAT_RESPONSE, openai.ChatStream, openai.error_body
)
OPENAI_RESPONSES = Api(
    "openai.responses",
    openai.RESPONSES_REQUEST,
    openai.RESPONSE_OBJECT,
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
_ROUTES: tuple[tuple[str, Api], ...] = (
    ("/v1/messages", ANTHROPIC_MESSAGES),
    ("/v1/messages/count_tokens", ANTHROPIC_MESSAGES),
    ("/v1/messages/batches", ANTHROPIC_BATCHES),
    # OpenAI, OpenRouter (/api/v1/...), vLLM, DeepSeek, Azure deployment paths
    # (/openai/deployments/NAME/chat/completions?api-version=...)
    ("/chat/completions", OPENAI_CHAT),
    ("/responses", OPENAI_RESPONSES),
)


def recognise(method: str, path: str) -> Api | None:
    """The API of an LLM request, by method and path (query ignored); None otherwise."""
    if method.upper() != "POST":
        return None
    p = path.split("?", 1)[0].rstrip("/")
    for rx, api in _PATTERN_ROUTES:
        if rx.search(p) is not None:
            return api
    for suffix, api in _ROUTES:
        if p.endswith(suffix):
            return api
    return None
