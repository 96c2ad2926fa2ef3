"""Which API a request belongs to, and the per-API pieces (sans I/O).

Three answers for a request: an API this addon transforms (`recognise`), a path that
looks like an LLM API it does not transform (`llm_shaped`: on a protected host such a
request is scanned for originals instead), or neither. `scope` normalises the
`disguise_hosts` option and says which hosts are protected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .errors import ScopeError
from .jsonspan import Rule
from .providers import anthropic, legacy, openai
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
# POST /v1/responses/input_tokens and /v1/responses/compact take the same body as
# creating a response (input, instructions, tools); compact answers with output items.
OPENAI_RESPONSES_INPUT_TOKENS = Api(
    "openai.responses.input_tokens", openai.RESPONSES_REQUEST, openai.RESPONSE_OBJECT,
    openai.ResponsesStream, openai.error_body,
)  # fmt: skip
OPENAI_RESPONSES_COMPACT = Api(
    "openai.responses.compact", openai.RESPONSES_REQUEST, openai.RESPONSE_OBJECT,
    openai.ResponsesStream, openai.error_body,
)  # fmt: skip
OPENAI_COMPLETIONS = Api(
    "openai.completions", legacy.COMPLETIONS_REQUEST, legacy.COMPLETIONS_RESPONSE,
    legacy.CompletionsStream, openai.error_body,
)  # fmt: skip
OPENAI_EMBEDDINGS = Api(
    "openai.embeddings", legacy.EMBEDDINGS_REQUEST, legacy.EMBEDDINGS_RESPONSE,
    legacy.CompletionsStream, openai.error_body,
)  # fmt: skip

# Matched on the end of the path, so gateways that mount an API under a prefix
# (`/anthropic/v1/messages`, `/openai/deployments/x/chat/completions`) are recognised too.
# Longer suffixes first: `/chat/completions` before `/completions`.
_ROUTES: tuple[tuple[str, Api], ...] = (
    ("/v1/messages", ANTHROPIC_MESSAGES),
    ("/v1/messages/count_tokens", ANTHROPIC_MESSAGES),
    ("/v1/messages/batches", ANTHROPIC_BATCHES),
    # OpenAI, OpenRouter (/api/v1/...), vLLM, DeepSeek, Azure deployment paths
    # (/openai/deployments/NAME/chat/completions?api-version=...)
    ("/chat/completions", OPENAI_CHAT),
    ("/responses", OPENAI_RESPONSES),
    ("/responses/input_tokens", OPENAI_RESPONSES_INPUT_TOKENS),
    ("/responses/compact", OPENAI_RESPONSES_COMPACT),
    ("/completions", OPENAI_COMPLETIONS),
    ("/embeddings", OPENAI_EMBEDDINGS),
)

APIS: tuple[str, ...] = tuple(dict.fromkeys(api.name for _, api in _ROUTES))


def _path(path: str) -> str:
    return path.split("?", 1)[0].split("#", 1)[0].rstrip("/")


def recognise(method: str, path: str) -> Api | None:
    """The API of an LLM request, by method and path (query ignored); None otherwise."""
    if method.upper() != "POST":
        return None
    p = _path(path)
    for suffix, api in _ROUTES:
        if p.endswith(suffix):
            return api
    return None


# LLM API families this addon does not transform: Gemini (`models/x:generateContent`),
# Bedrock (`/model/x/invoke`), Cohere (`/v1/chat`, `/v2/chat`), OpenAI's other
# endpoints (assistants, threads, batches, files, audio, images, realtime, ...), the
# stored-response reads of Responses, Ollama (`/api/chat`, `/api/generate`).
_LLM_SHAPED = re.compile(
    r":(?:stream)?generatecontent|:counttokens|:(?:batch)?embedcontents?|:predict"
    r"|/model/[^/]+/(?:invoke|converse)"
    r"|/v[0-9][a-z0-9]*/(?:chat|generate|embed|rerank|messages|responses|completions|assistants|threads"
    r"|batches|files|uploads|audio|images|realtime|conversations|vector_stores|moderations|models|fine_tuning)\b"
    r"|/api/(?:chat|generate|embed|embeddings)\b"
    r"|/openai/deployments/"
)


def llm_shaped(path: str) -> bool:
    """A path of an LLM API, transformed here or not (any method)."""
    return bool(_LLM_SHAPED.search(_path(path).lower()))


# -- scope -------------------------------------------------------------------------------

# With `disguise_hosts` empty, requests on unknown paths are scanned on these hosts (and
# on every request that arrives in reverse mode, whose upstream is the provider).
KNOWN_HOSTS: tuple[str, ...] = (
    "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com", "openrouter.ai", "api.deepseek.com", "api.mistral.ai",
    "api.groq.com", "api.together.xyz", "api.fireworks.ai", "api.x.ai", "api.cohere.com",
    "api.cohere.ai", "api.perplexity.ai", "openai.azure.com", "amazonaws.com", "chatgpt.com",
)  # fmt: skip
_HOST = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\Z")


@dataclass(frozen=True)
class HostRule:
    host: str  # lower case, no trailing dot; an IPv6 address without brackets
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        return self.host == host and (self.port is None or self.port == port)

    def __str__(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return h if self.port is None else f"{h}:{self.port}"


def norm_host(host: str) -> str:
    """A host as compared here: lower case, no trailing dot, no IPv6 brackets."""
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def parse_hosts(entries: Iterable[str]) -> tuple[HostRule, ...]:
    """`disguise_hosts` entries -> rules. Each entry may be a comma-separated list;
    case, a trailing dot and `host:port` (`[v6]:port`) are normalised. Raises
    ScopeError naming the entry for anything else (a URL, a path, a wildcard, a bad
    port): a mistyped scope must not silently match nothing."""
    out: list[HostRule] = []
    for entry in entries:
        for raw in str(entry).split(","):
            item = raw.strip()
            if not item:
                continue
            h, port = item, None
            if h.startswith("["):  # [v6] or [v6]:port
                end = h.find("]")
                rest = h[end + 1 :] if end > 0 else "x"
                if rest and not rest.startswith(":"):
                    raise ScopeError(f"disguise_hosts: {item!r} is not a host or host:port")
                port_s = rest[1:] if rest else None
                h = h[1:end]
            elif h.count(":") == 1:
                h, port_s = h.split(":")
            else:
                port_s = None
            if port_s is not None:
                if not port_s.isdigit() or not 0 < int(port_s) < 65536:
                    raise ScopeError(f"disguise_hosts: {item!r} has a bad port")
                port = int(port_s)
            h = norm_host(h)
            ok = _HOST.match(h) or (":" in h and re.fullmatch(r"[0-9a-f:.]+", h))
            if not ok:
                raise ScopeError(
                    f"disguise_hosts: {item!r} is not a host name or address "
                    "(give host or host:port, no scheme, path or wildcard)"
                )
            out.append(HostRule(h, port))
    return tuple(dict.fromkeys(out))


def in_hosts(rules: tuple[HostRule, ...], host: str, port: int, pretty_host: str = "") -> bool:
    """Does a request to host:port match one of the rules? pretty_host (the Host
    header's host, without port) is tried too: in reverse mode `host` is the upstream."""
    h = norm_host(host)
    ph = norm_host(pretty_host)
    return any(r.matches(h, port) or (ph and r.matches(ph, port)) for r in rules)


def known_host(host: str) -> bool:
    """A host of a well-known LLM provider (or a subdomain of one)."""
    h = norm_host(host)
    return any(h == k or h.endswith("." + k) for k in KNOWN_HOSTS)
