"""The API registry: which API a request belongs to, and each API's pieces (sans I/O).

Three answers for a request: an API this addon transforms (`recognise`), a path that
looks like an LLM API it does not transform (`llm_shaped`: on a protected host such a
request is scanned for originals instead), or neither. Each `Api` names its request and
response field rules, its stream class and its error shape; pipeline.py puts them to
work.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..base.bodies import Reading
from ..base.fields import GENERIC
from ..base.realtime import Protocol
from ..base.stream import SSEStream
from ..base.wirespec import DOCUMENT, FILE, STREAMS, Destination, Provider, Slots, TextHeader, WireSpec
from ..rules.rules import Restorer, Rules, Session
from ..wire.jsonspan import Rule
from . import slots
from .anthropic import messages as anthropic  # fmt: skip
from .bedrock import chunks as bedrock_chunks
from .bedrock import models as bedrock_models
from .bedrock import runtime as bedrock  # fmt: skip
from .bedrock import stream as bedrock_stream
from .cohere import chat as cohere  # fmt: skip
from .cohere import stream as cohere_stream
from .google import codeassist
from .google import gemini as google
from .google import live as gemini_live  # fmt: skip
from .google import stream as gemini_stream
from .google.array import stream_for as google_stream_for
from .google.live import GeminiLive
from .google.stream import GeminiStream
from .inventory import DOCUMENTED
from .inventory import INVENTORIES as INVENTORIES  # re-exported: the registry is where callers look
from .inventory import refused as refused
from .openai import assistants as openai_assistants
from .openai import batch, legacy, responses_fields  # fmt: skip
from .openai import chat as openai_chat
from .openai import realtime as openai_realtime
from .openai import responses as openai_responses
from .openai import stored as openai_stored
from .openai.realtime import OpenAIRealtime
from .slots import PROVIDERS as PROVIDERS  # re-exported: the registry is where callers look

# Every API's wire vocabulary (base/wirespec.py), for those who read any stream:
# the views, the recorder. A new API's spec is registered here.
SPECS: tuple[WireSpec, ...] = (
    anthropic.SPEC, openai_chat.SPEC, legacy.SPEC, openai_responses.SPEC, gemini_stream.SPEC,
    bedrock_stream.CONVERSE_SPEC, bedrock_stream.INVOKE_SPEC, *bedrock_models.SPECS, batch.SPEC,
    openai_realtime.SPEC, gemini_live.SPEC, openai_assistants.SPEC, cohere_stream.SPEC, codeassist.SPEC,
)  # fmt: skip


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
    # A body that is not one JSON document (a multipart upload): its own model, which
    # masks it (mask) and tells the leak guard what it holds (readings); request_rule
    # is then the table of the documents inside it.
    request_body: BodyModel | None = None
    # One event of the API's stream (SSE data, a streamed array's element), for those
    # who read recorded streams (audit, views); None: the response rule.
    events: Rule | None = None
    # A whole response body restored otherwise than by response_rule (a downloaded file:
    # batch.restore_results); None: restore.restore_body with response_rule.
    whole_body: Callable[[bytes, Restorer], bytes] | None = None
    # What the endpoint answers with (wirespec.STREAMS, DOCUMENT, FILE): with the
    # response's Content-Type, the one thing that decides how its body is read
    # (bodystream.BodyStream); a body's first bytes never do.
    answers: str = DOCUMENT
    # The request headers its clients fill with their own text (wirespec.TextHeader):
    # masked with the body's session (pipeline.mask_request); any other header holding
    # an original is refused.
    headers: tuple[TextHeader, ...] = ()
    # Its clients send their whole conversation at every turn (the request rule's last
    # prompt member, an array), the new messages appended: a request's next turn is
    # masked from the one before, only its new messages read (turns.py).
    turns: bool = False

    @property
    def event_rule(self) -> Rule:
        return self.events if self.events is not None else self.response_rule


class BodyModel(typing.Protocol):
    def mask(self, body: bytes, content_type: str, rules: Rules) -> tuple[bytes, Session]: ...

    def readings(self, body: bytes, content_type: str) -> Iterator[Reading]: ...


ANTHROPIC_MESSAGES = Api(
    "anthropic.messages",
    anthropic.MESSAGES_REQUEST,
    anthropic.MESSAGE_RESPONSE,
    anthropic.AnthropicStream,
    anthropic.error_body,
    events=anthropic.STREAM_EVENT,
    answers=STREAMS,
    turns=True,
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
    "openai.chat", openai_chat.CHAT_REQUEST, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream, openai_chat.error_body,
    events=openai_chat.STREAM_EVENT, answers=STREAMS, turns=True,
)  # fmt: skip
OPENAI_CHAT_STORED = Api(
    "openai.chat.stored", None, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_CHAT_UPDATE = Api(  # POST /chat/completions/{id}: new metadata, the stored completion back
    "openai.chat.update", openai_chat.CHAT_REQUEST, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream,
    openai_chat.error_body, events=openai_chat.STREAM_EVENT,
)  # fmt: skip
OPENAI_CHAT_LIST = Api("openai.chat.list", None, openai_chat.CHAT_LIST, openai_chat.ChatStream, openai_chat.error_body)
OPENAI_CHAT_MESSAGES = Api(
    "openai.chat.messages", None, openai_chat.CHAT_STORED_MESSAGES, openai_chat.ChatStream, openai_chat.error_body
)
OPENAI_RESPONSES = Api(
    "openai.responses",
    openai_responses.RESPONSES_REQUEST,
    openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream,
    openai_chat.error_body,
    events=openai_responses.STREAM_EVENT,
    answers=STREAMS,
    headers=responses_fields.REQUEST_HEADERS,
)
# POST /v1/responses/input_tokens and /v1/responses/compact take the same body as
# creating a response (input, instructions, tools); compact answers with output items.
OPENAI_RESPONSES_INPUT_TOKENS = Api(
    "openai.responses.input_tokens", openai_responses.RESPONSES_REQUEST, openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream, openai_chat.error_body, headers=responses_fields.REQUEST_HEADERS,
)  # fmt: skip
OPENAI_RESPONSES_COMPACT = Api(
    "openai.responses.compact", openai_responses.RESPONSES_REQUEST, openai_responses.RESPONSE_OBJECT,
    openai_responses.ResponsesStream, openai_chat.error_body, headers=responses_fields.REQUEST_HEADERS,
)  # fmt: skip
OPENAI_COMPLETIONS = Api(
    "openai.completions", legacy.COMPLETIONS_REQUEST, legacy.COMPLETIONS_RESPONSE,
    legacy.CompletionsStream, openai_chat.error_body, answers=STREAMS,
)  # fmt: skip
OPENAI_EMBEDDINGS = Api(
    "openai.embeddings", legacy.EMBEDDINGS_REQUEST, legacy.EMBEDDINGS_RESPONSE,
    legacy.CompletionsStream, openai_chat.error_body,
)  # fmt: skip

OPENAI_RESPONSES_STORED = Api(  # GET /responses/{id} (also ?stream=true), POST .../cancel
    "openai.responses.stored",
    None,
    openai_responses.RESPONSE_OBJECT,
    openai_responses.StoredResponsesStream,  # a JSON answer as its response object says
    openai_chat.error_body,
    events=openai_responses.STREAM_EVENT,
    answers=STREAMS,
    whole_body=responses_fields.restore_stored,  # a JSON answer as its own text.format says
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
    google_stream_for, answers=STREAMS, turns=True,
)  # fmt: skip
VERTEX_GEMINI = Api(
    "vertex.gemini", google.GENERATE_REQUEST, google.RESPONSE, GeminiStream, google.error_body,
    google_stream_for, answers=STREAMS, turns=True,
)  # fmt: skip
# Gemini Code Assist (Gemini CLI logged in with Google): Gemini's bodies in a wrapper.
GOOGLE_CODE_ASSIST = Api(
    "google.code_assist", codeassist.REQUEST, codeassist.RESPONSE, codeassist.CodeAssistStream, google.error_body,
    events=codeassist.EVENT, answers=STREAMS,
)  # fmt: skip
# Embeddings (Gemini API and Vertex AI): the text masked, the answer numbers.
GOOGLE_EMBED = Api("google.embed", google.EMBED_REQUEST, google.EMBED_RESPONSE, GeminiStream, google.error_body)
VERTEX_EMBED = Api("vertex.embed", google.EMBED_REQUEST, google.EMBED_RESPONSE, GeminiStream, google.error_body)
VERTEX_EMBED_PREDICT = Api(
    "vertex.embed.predict", google.EMBED_PREDICT_REQUEST, google.EMBED_RESPONSE, GeminiStream, google.error_body
)
# The Gemini API's Batch Mode: a batch of generateContent requests, and reading it back.
GOOGLE_BATCH = Api("google.batch", google.BATCH_REQUEST, google.BATCH_OPERATION, GeminiStream, google.error_body)
GOOGLE_BATCH_READ = Api("google.batch.read", None, google.BATCH_OPERATION, GeminiStream, google.error_body)
GOOGLE_BATCH_LIST = Api("google.batch.list", None, google.BATCH_LIST, GeminiStream, google.error_body)
# Claude on Vertex AI: the Messages body (with `anthropic_version`, the model in the
# path) and the Messages stream.
VERTEX_ANTHROPIC = Api(
    "vertex.anthropic",
    anthropic.MESSAGES_REQUEST,
    anthropic.MESSAGE_RESPONSE,
    anthropic.AnthropicStream,
    anthropic.error_body,
    events=anthropic.STREAM_EVENT,
    answers=STREAMS,
    turns=True,
)
# Mistral's models on Vertex AI (`publishers/mistralai/models/M:rawPredict`, and
# `:streamRawPredict` for a stream): Mistral's chat API, OpenAI's Chat Completions body
# and stream (`data: [DONE]`); a Mistral field Chat does not know is masked whole.
VERTEX_MISTRAL = Api(
    "vertex.mistral", openai_chat.CHAT_REQUEST, openai_chat.CHAT_RESPONSE, openai_chat.ChatStream, google.error_body,
    events=openai_chat.STREAM_EVENT, answers=STREAMS, turns=True,
)  # fmt: skip
# Gemini explicit caching: a CachedContent is created (POST) or updated (PATCH) with what
# a generateContent request carries, masked the same way; reading one back restores it.
GOOGLE_CACHED_CONTENTS = Api(
    "google.cached_contents", google.CACHED_CONTENT, google.CACHED_CONTENT, GeminiStream, google.error_body,
)  # fmt: skip
GOOGLE_CACHED_CONTENTS_READ = Api(
    "google.cached_contents.read", None, google.CACHED_CONTENT, GeminiStream, google.error_body,
)  # fmt: skip
GOOGLE_CACHED_CONTENTS_LIST = Api(
    "google.cached_contents.list", None, google.CACHED_CONTENT_LIST, GeminiStream, google.error_body,
)  # fmt: skip

# OpenAI Batch: the input file (POST /v1/files, purpose=batch) masked line by line with
# each line's API table; its results (GET /v1/files/{id}/content) restored line by line.
# The upload's answer is the file's object (openai/stored.py, as GET /v1/files/{id}).


def _line_api(method: str, url: str) -> Rule | None:
    api = recognise(method, url)
    return api.request_rule if api is not None and api.request_body is None else None


BATCH_LINE = batch.BatchLine(_line_api)
OPENAI_FILES = Api(
    "openai.files", BATCH_LINE, openai_stored.FILE_OBJECT, openai_chat.ChatStream, openai_chat.error_body,
    request_body=batch.BatchUpload(BATCH_LINE),
)  # fmt: skip
OPENAI_FILE_CONTENT = Api(
    "openai.files.content", None, batch.RESULT_LINE, openai_chat.ChatStream, openai_chat.error_body,
    whole_body=batch.restore_results, answers=FILE,
)  # fmt: skip


def _stored(e: openai_stored.Stored) -> Api:
    """The Api of an endpoint that answers with stored text (apis/openai/stored.py)."""
    if e.answers == FILE:  # a downloaded file, as /v1/files/{id}/content
        return Api(e.name, None, batch.RESULT_LINE, openai_chat.ChatStream, openai_chat.error_body,
                   whole_body=batch.restore_results, answers=FILE)  # fmt: skip
    assert e.rule is not None
    if e.answers == STREAMS:  # a run: JSON, or the Assistants stream (openai/assistants.py)
        return Api(e.name, None, e.rule, openai_assistants.AssistantStream, openai_assistants.error_body,
                   events=openai_assistants.STREAM_EVENT, answers=STREAMS)  # fmt: skip
    return Api(e.name, None, e.rule, openai_chat.ChatStream, openai_chat.error_body, answers=e.answers)


OPENAI_STORED: tuple[tuple[str, str, Api], ...] = tuple(
    (e.methods, e.path, _stored(e)) for e in openai_stored.ENDPOINTS
)

# AWS Bedrock Runtime (bedrock.py): SigV4 signs the body, so a masked one is re-signed.
# InvokeModel's body is the model's own: one Api per model family (bedrock/models.py).


def _invoke_api(fam: bedrock_models.Family) -> Api:
    """InvokeModel for one model family (bedrock/models.py): its body's rules, and its
    chunks' stream on the streaming path (Claude's: Anthropic events, InvokeStream)."""
    if fam.chunk is None:
        return Api("aws.bedrock.invoke", fam.request, fam.response, anthropic.AnthropicStream,
                   bedrock.error_body, bedrock_stream.stream_for, signed=True, answers=STREAMS,
                   events=anthropic.STREAM_EVENT, turns=True)  # fmt: skip
    chunks = bedrock_chunks.stream(fam.chunk)

    def streams(path: str, content_type: str) -> Callable[[Restorer], SSEStream] | None:
        return chunks if bedrock_stream.stream_for(path, content_type) is not None else None

    # Nova's chunks are ConverseStream's events (bedrock_stream.NOVA_CHUNKS)
    events = bedrock.CONVERSE_STREAM_EVENT if fam.chunk is bedrock_stream.NOVA_CHUNKS else None
    return Api(f"aws.bedrock.invoke.{fam.name}", fam.request, fam.response, anthropic.AnthropicStream,
               bedrock.error_body, streams, signed=True, answers=STREAMS, events=events)  # fmt: skip


BEDROCK_FAMILIES: dict[str, Api] = {f.name: _invoke_api(f) for f in bedrock_models.FAMILIES}
BEDROCK_INVOKE = BEDROCK_FAMILIES[bedrock_models.CLAUDE.name]


def _unknown_family(prefix: str, model: str = "") -> Api:
    """InvokeModel for a model whose family is not declared: refused, naming it (where
    that is no original: bedrock_models.Unknown)."""
    return Api("aws.bedrock.invoke.unknown", bedrock_models.Unknown(prefix, model), GENERIC, anthropic.AnthropicStream,
               bedrock.error_body, bedrock_stream.stream_for, signed=True, answers=STREAMS)  # fmt: skip


def bedrock_invoke(path: str) -> Api:
    """The InvokeModel API of the model the path names (its family's body)."""
    mid = bedrock_models.model_id(path)
    fam = bedrock_models.family_of(mid)
    return BEDROCK_FAMILIES[fam.name] if fam is not None else _unknown_family(bedrock_models.family_prefix(mid), mid)


BEDROCK_CONVERSE = Api(
    "aws.bedrock.converse", bedrock.CONVERSE_REQUEST, bedrock.CONVERSE_RESPONSE, anthropic.AnthropicStream,
    bedrock.error_body, bedrock_stream.stream_for, signed=True, answers=STREAMS, events=bedrock.CONVERSE_STREAM_EVENT,
    turns=True,
)  # fmt: skip
BEDROCK_COUNT_TOKENS = Api(
    "aws.bedrock.count_tokens", bedrock.COUNT_TOKENS_REQUEST, bedrock.COUNT_TOKENS_RESPONSE,
    anthropic.AnthropicStream, bedrock.error_body, bedrock_stream.stream_for, signed=True, answers=STREAMS,
)  # fmt: skip

# Cohere's v2 Chat (cohere/chat.py, cohere/stream.py): a document, or its own event stream.
COHERE_CHAT = Api(
    "cohere.chat", cohere.CHAT_REQUEST, cohere.CHAT_RESPONSE, cohere_stream.CohereStream, cohere.error_body,
    events=cohere_stream.STREAM_EVENT, answers=STREAMS, whole_body=cohere.restore_response,
)  # fmt: skip

# Paths whose model name sits inside them; checked before the suffixes below. `:` may
# arrive percent-encoded.
_COLON = google.COLON
_PATTERN_ROUTES: tuple[tuple[re.Pattern[str], Api], ...] = (
    # Vertex AI: /v1/projects/P/locations/L/publishers/anthropic/models/M:streamRawPredict
    # (count tokens: .../models/count-tokens:rawPredict)
    (re.compile(r"/publishers/anthropic/models/[^/]+" + _COLON + r"(?:rawPredict|streamRawPredict)\Z"),
     VERTEX_ANTHROPIC),
    # Mistral on Vertex AI: .../publishers/mistralai/models/M:rawPredict, :streamRawPredict
    (re.compile(r"/publishers/mistralai/models/[^/]+" + _COLON + r"(?:rawPredict|streamRawPredict)\Z"),
     VERTEX_MISTRAL),
    # Vertex AI's and the Gemini API's generate methods (google.py)
    (google.VERTEX_PATH, VERTEX_GEMINI),
    (google.GEMINI_PATH, GOOGLE_GEMINI),
    (google.VERTEX_EMBED_PATH, VERTEX_EMBED),
    (google.VERTEX_EMBED_PREDICT_PATH, VERTEX_EMBED_PREDICT),
    (google.GEMINI_EMBED_PATH, GOOGLE_EMBED),
    (google.GEMINI_BATCH_PATH, GOOGLE_BATCH),
    (codeassist.PATH, GOOGLE_CODE_ASSIST),
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
        ("POST", r"(?:/v1|/openai)/files", OPENAI_FILES),
        ("GET", rf"(?:/v1|/openai)/files/{_ID}/content", OPENAI_FILE_CONTENT),
        *OPENAI_STORED,  # Conversations, container files, vector stores, Assistants
        # Gemini API /v1beta/cachedContents, Vertex /v1/projects/P/locations/L/cachedContents
        ("POST", r"/cachedContents", GOOGLE_CACHED_CONTENTS),
        ("PATCH", rf"/cachedContents/{_ID}", GOOGLE_CACHED_CONTENTS),
        ("GET", rf"/cachedContents/{_ID}", GOOGLE_CACHED_CONTENTS_READ),
        ("GET", r"/cachedContents", GOOGLE_CACHED_CONTENTS_LIST),
        ("GET", google.GEMINI_BATCHES + rf"/{_ID}", GOOGLE_BATCH_READ),
        ("GET", google.GEMINI_BATCHES, GOOGLE_BATCH_LIST),
        ("POST", r"/v2/chat", COHERE_CHAT),
    )
)

BY_NAME: dict[str, Api] = {
    **{api.name: api for _, _, api in _ROUTES},
    **{api.name: api for _, api in _PATTERN_ROUTES},
    **{api.name: api for api in BEDROCK_FAMILIES.values()},
    "aws.bedrock.invoke.unknown": _unknown_family("?"),
}

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


APIS: tuple[str, ...] = tuple(dict.fromkeys([*BY_NAME, *(api.name for _, api in _WS_ROUTES)]))


# -- providers: hosts and credential slots (apis/slots.py) ------------------------------------


def providers_of(api: Api | RealtimeApi) -> tuple[Provider, ...]:
    """The providers that serve an API."""
    return slots.providers_of(api.name)


def slots_for(
    path: str, api: Api | RealtimeApi | None = None, dest: Destination | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Slots:  # fmt: skip
    """Where the credentials of a request to path sit (apis/slots.py): api, the API the
    addon knows it for (None: none); dest, where it goes (None: not known); headers, the
    request's (its Authorization says whether the proxy re-signs it)."""
    served = providers_of(api) if api is not None else ()
    signed = isinstance(api, Api) and api.signed
    return slots.slots_of(_path(path), served, dest or Destination(), headers, signed, isinstance(api, RealtimeApi))


def _path(path: str) -> str:
    return path.split("?", 1)[0].split("#", 1)[0].rstrip("/")


def recognise(method: str, path: str) -> Api | None:
    """The API of an LLM request, by method and path (query ignored); None otherwise."""
    m = method.upper()
    p = _path(path)
    if m == "POST":
        for rx, api in _PATTERN_ROUTES:
            if rx.search(p) is not None:
                return bedrock_invoke(p) if api is BEDROCK_INVOKE else api
    for methods, rx, api in _ROUTES:
        if m in methods and rx.search(p):
            return api
    return None


# LLM API families this addon does not transform: Gemini (`models/x:generateContent`),
# Bedrock (`/model/x/invoke`), Cohere (`/v1/chat`, `/v2/chat`), OpenAI's other
# endpoints (assistants, threads, batches, files, audio, images, realtime, ...), the
# stored-response reads of Responses, Ollama (`/api/chat`, `/api/generate`).
_LLM_SHAPED = re.compile(
    r":(?:stream)?generatecontent|:counttokens|:(?:batch)?embedcontents?|:predict|:(?:stream)?rawpredict"
    r"|/model/[^/]+/(?:invoke|converse|count-tokens)"
    r"|/v[0-9][a-z0-9]*/(?:chat|generate|embed|rerank|messages|responses|completions|assistants|threads"
    r"|batches|files|uploads|audio|images|realtime|conversations|vector_stores|moderations|models|fine_tuning)\b"
    r"|/api/(?:chat|generate|embed|embeddings)\b"
    r"|/openai/(?:deployments|threads|assistants|vector_stores|files|batches|responses|realtime)\b"
)


# Each family's error shape (the families of slots._SERVED_BY), for a request no API of
# the family's was recognised for.
_FAMILY_ERRORS: dict[str, Callable[[str], bytes]] = {
    "anthropic": anthropic.error_body, "openai": openai_chat.error_body, "google": google.error_body,
    "vertex": google.error_body, "aws": bedrock.error_body, "cohere": cohere.error_body,
}  # fmt: skip


def error_body_for(
    method: str, path: str, host: str = "", headers: Iterable[tuple[str, str]] = ()
) -> Callable[[str], bytes]:
    """The error shape of the provider a request was meant for: its API's where one is
    recognised and the provider its host or credential headers name serves it (or none
    is named: slots.families_of); else that provider's; else by the path alone: an API
    it would be with POST, Google's on a Google path, Anthropic's on a Messages path or
    host, OpenAI's otherwise."""
    api = recognise(method, path)
    fams = slots.families_of(host, headers)
    if api is not None and (not fams or api.name.split(".", 1)[0] in fams):
        return api.error_body
    shapes = {_FAMILY_ERRORS[f] for f in fams}
    if len(shapes) == 1:
        return shapes.pop()
    api = api or recognise("POST", path)
    if api is not None:
        return api.error_body
    if google.google_path(path) or "googleapis.com" in host:
        return google.error_body
    if "/messages" in path or "anthropic" in host:
        return anthropic.error_body
    return openai_chat.error_body


def llm_shaped(path: str) -> bool:
    """A path of an LLM API, transformed here or not (any method)."""
    p = _path(path)
    return bool(_LLM_SHAPED.search(p.lower()) or DOCUMENTED.search(p))
