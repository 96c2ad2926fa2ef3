"""Which API a request belongs to, and the per-API pieces (sans I/O)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .jsonspan import Rule
from .providers import anthropic, openai
from .providers.base import SSEStream
from .rules import Restorer


@dataclass(frozen=True)
class Api:
    name: str
    request_rule: Rule
    response_rule: Rule
    stream: Callable[[Restorer], SSEStream]
    error_body: Callable[[str], bytes]


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
    for suffix, api in _ROUTES:
        if p.endswith(suffix):
            return api
    return None
