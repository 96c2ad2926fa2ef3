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
from .providers import anthropic, bedrock, google, legacy, openai
from .providers.base import BodyStream, SSEStream, restore_body
from .providers.common import GENERIC
from .rules import Restorer
from .sse import is_json_type


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

APIS: tuple[str, ...] = tuple(
    dict.fromkeys([*(api.name for _, _, api in _ROUTES), *(api.name for _, api in _PATTERN_ROUTES)])
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
