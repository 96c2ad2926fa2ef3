"""Which API a request belongs to, and the per-API pieces (sans I/O)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .jsonspan import Rule
from .providers import anthropic, openai
from .providers.base import BodyStream, SSEStream, restore_body
from .rules import Restorer


@dataclass(frozen=True)
class Api:
    name: str
    request_rule: Rule | None  # None: the request carries no model input (a retrieval)
    response_rule: Rule
    stream: Callable[[Restorer], SSEStream]
    error_body: Callable[[str], bytes]

    def body_stream(self, restorer: Restorer, content_type: str) -> BodyStream:
        """The response body's reverser: an event stream or a whole body, by content."""
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
    for methods, rx, api in _ROUTES:
        if m in methods and rx.search(p):
            return api
    return None
