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
`thoughtSignature` pass byte-identical; a function call that arrives whole in one part is
restored whole (name, and args keys and values); Vertex's streamed arguments
(`partialArgs`) get a window per call and jsonPath (calls.py). A candidate's held tail goes out in the
chunk that carries its `finishReason`: appended to its last text part there, or in a
text part put first into its parts. A stream that ends before it ends (no finishReason,
no closing `]`) gets its held tails and then an explicit error in Google's own shape,
`{"error": {"code", "message", "status"}}`, which the google-genai SDK raises.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable

from ...base.exempt import COUNTERS, MODEL, SIGNED
from ...base.fields import ANSWER, GENERIC, ID, MEDIA, META, OPAQUE, SCHEMA, Media
from ...base.logprobs import holds_disguise, overlapping, register
from ...base.offsets import Cited
from ...base.offsets import register as register_cited
from ...base.wirespec import Provider
from ...rules.rules import Restorer
from ...wire.jsonspan import USER, VALUES, Arr, Either, JsonAnswer, Obj, Rule, Typed

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub(lambda m: "_" + m.group(1).lower(), name)


def _both(fields: dict[str, Rule]) -> dict[str, Rule]:
    """fields, each also under its proto field name (systemInstruction -> system_instruction)."""
    out = dict(fields)
    for k, v in fields.items():
        out.setdefault(_snake(k), v)
    return out


def obj(
    fields: dict[str, Rule], default: Rule = GENERIC, prompt: tuple[str, ...] = (), state: tuple[str, ...] = (),
    json_answer: JsonAnswer = (),
) -> Obj:
    """An object of the API (fields under both spellings); prompt, state, json_answer: see
    jsonspan.Rule.prompt, .state and .json_answer (under both spellings too: each member
    of a json_answer path under either)."""
    answer = tuple((p, v) for path, v in json_answer for p in itertools.product(*(_both_names((k,)) for k in path)))
    return Obj(_both(fields), default=default, prompt=_both_names(prompt), state=_both_names(state),
               json_answer=answer)  # fmt: skip


def _both_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x for k in names for x in dict.fromkeys((k, _snake(k))))


class _Part(Rule):
    """A part: a thought (`"thought": true`) passes whole, like a thinking block, where
    the model wrote it (thought: SIGNED); in a user turn, a system instruction or a tool's
    response no signature can be valid (thought: None), and it is read as any part."""

    string = True

    def __init__(self, part: Rule, thought: Rule | None = SIGNED) -> None:
        self.part = part
        self.thought = thought

    def resolve(self, value: object) -> Rule:
        if self.thought is not None and isinstance(value, dict) and (value.get("thought") is True):
            return self.thought
        return self.part


# -- requests ---------------------------------------------------------------------------

# partialArgs: a streamed call's arguments in pieces (JSON paths and values): every
# string masked and restored, as unknown
_FUNCTION_CALL = obj({"id": ID, "name": VALUES, "args": USER, "willContinue": META, "partialArgs": GENERIC})
# Base64 media with its MIME type: a binary type passes untouched, text (text/plain,
# text/csv, application/json, text/markdown, ...) is decoded, masked and encoded again.
_INLINE_DATA = Media("data", ("mimeType", "mime_type"), _both({"displayName": VALUES}))
_PART_FIELDS: dict[str, Rule] = {
    "text": VALUES,
    "thought": META,
    "thoughtSignature": OPAQUE,  # signed by the provider: byte-identical or rejected
    "inlineData": _INLINE_DATA,
    # a file the provider fetches: its URI is the client's words (a bucket, a path, a file
    # name), masked like every URL a client sends (Anthropic's url source, OpenAI's
    # file_url, Bedrock's S3 uri); an uploaded file's URI holds only the API's id
    "fileData": obj({"fileUri": VALUES, "mimeType": META, "displayName": VALUES}),
    "videoMetadata": META,
    "mediaResolution": META,
    "functionCall": _FUNCTION_CALL,
    "executableCode": obj({"id": ID, "language": META, "code": VALUES}),
    "codeExecutionResult": obj({"id": ID, "outcome": META, "output": VALUES}),
    # metadata, no payload of the client's: unknown by design (string values masked on the
    # way out, restored on the way in); so are a server-side tool's call and response,
    # left to the default (their names are Gemini Live's messages: google/live.py's words)
    **dict.fromkeys(("partMetadata", "audioTranscription", "mediaProcessing", "speechMetadata", "documentMetadata",
                     "spreadsheetMetadata", "audioMetadata"), GENERIC),
}
_USER_PART = _Part(obj({}), None)  # fields below (functionResponse parts are parts too)
_FUNCTION_RESPONSE = obj(
    {"id": ID, "name": VALUES, "response": USER, "parts": Arr(_USER_PART), "willContinue": META, "scheduling": META}
)
_USER_PART.part = obj({**_PART_FIELDS, "functionResponse": _FUNCTION_RESPONSE})
_REQ_PART = _Part(_USER_PART.part)  # in the model's turn: its thoughts pass whole
USER_CONTENT = obj({"role": META, "parts": Arr(_USER_PART)})
CONTENT = Typed({"model": obj({"role": META, "parts": Arr(_REQ_PART)})}, default=USER_CONTENT, field="role")

_FUNCTION_DECLARATION = obj(
    {
        "name": VALUES, "description": VALUES, "behavior": META,
        "parameters": SCHEMA, "parametersJsonSchema": SCHEMA,
        "response": SCHEMA, "responseJsonSchema": SCHEMA,
    }
)  # fmt: skip
# Built-in tools (googleSearch, codeExecution, urlContext, retrieval, ...) carry
# configuration, no prose: their string values are masked like any unknown field (an MCP
# server's URL and headers too). A tool google-genai adds fails tests/apis/test_inventory.py.
_BUILTIN_TOOLS = (
    "retrieval", "computerUse", "fileSearch", "googleSearch", "googleMaps", "codeExecution", "enterpriseWebSearch",
    "googleSearchRetrieval", "parallelAiSearch", "urlContext", "mcpServers", "exaAiSearch",
)  # fmt: skip
_TOOL = obj({"functionDeclarations": Arr(_FUNCTION_DECLARATION), **dict.fromkeys(_BUILTIN_TOOLS, GENERIC)})
_TOOL_CONFIG = obj(
    {"functionCallingConfig": obj({"mode": META, "allowedFunctionNames": VALUES, "streamFunctionCallArguments": META}),
     "retrievalConfig": obj({"latLng": META, "languageCode": META}), "includeServerSideToolInvocations": META}
)  # fmt: skip
_GENERATION_SKIPPED = (
    "temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "seed", "presencePenalty",
    "frequencyPenalty", "responseLogprobs", "logprobs", "responseMimeType", "responseModalities",
    "thinkingConfig", "imageConfig", "mediaResolution", "routingConfig",
    "modelSelectionConfig", "audioTimestamp", "enableAffectiveDialog", "enableEnhancedCivicAnswers",
)  # fmt: skip
# Text to speech: the voices are the API's names (untouched), a speaker's name is the
# client's words, masked as text: the prompt's "Acme Corp: ..." lines are masked too, and a
# literal gets the same disguise in both, so the speaker still meets its voice. A replicated
# voice's sample and consent are audio (base64, untouched); its consent signature the
# server's (byte-identical). Anything else here: unknown, masked (fail closed).
_REPLICATED_VOICE = Media(
    "voiceSampleAudio", ("mimeType", "mime_type"),
    _both({"consentAudio": MEDIA, "voiceConsentSignature": obj({"signature": OPAQUE})}),
)  # fmt: skip
_VOICE_CONFIG = obj({"prebuiltVoiceConfig": obj({"voiceName": META}), "voice": META,
                     "replicatedVoiceConfig": _REPLICATED_VOICE})  # fmt: skip
_SPEAKER = obj({"speaker": VALUES, "voiceConfig": _VOICE_CONFIG})
SPEECH_CONFIG = obj({"voiceConfig": _VOICE_CONFIG, "languageCode": META,
                     "multiSpeakerVoiceConfig": obj({"speakerVoiceConfigs": Arr(_SPEAKER)})})  # fmt: skip
_GENERATION_CONFIG = obj(
    {
        **dict.fromkeys(_GENERATION_SKIPPED, META),
        "speechConfig": SPEECH_CONFIG,
        "responseSchema": SCHEMA, "responseJsonSchema": SCHEMA, "_responseJsonSchema": SCHEMA,
        "stopSequences": VALUES,  # the model stops at the disguised text it writes
        # the output's formats: a text format's JSON schema read as one; where a video goes
        "responseFormat": Arr(obj({"text": obj({"mimeType": META, "schema": SCHEMA}), "audio": META, "image": META,
                                    "video": obj({"duration": META, "resolution": META, "gcsUri": VALUES})})),
        # words the transcriber is told to expect (a customer's name): masked
        "audioTranscriptionConfig": obj({"languageCodes": META, "languageHints": META, "adaptationPhrases": VALUES,
                                          "customVocabulary": VALUES, "sourceText": VALUES}),
        "translationConfig": obj({"targetLanguageCode": META}),
    }
)  # fmt: skip

_GENERATE_FIELDS: dict[str, Rule] = {
    "model": MODEL,
    "contents": Arr(CONTENT),
    "systemInstruction": Either(VALUES, USER_CONTENT),
    "tools": Arr(_TOOL),
    "toolConfig": _TOOL_CONFIG,
    "generationConfig": _GENERATION_CONFIG,
    "safetySettings": META,  # categories and thresholds (enums)
    "cachedContent": ID,  # a resource name ("cachedContents/..."): a reference, untouched
    "serviceTier": META,
    "labels": GENERIC,  # billing labels: keys and values the client chose
}
# the prompt (and what a cache holds): the system instruction, the tools, then the
# conversation (google-genai writes contents first)
PROMPT = ("systemInstruction", "tools", "toolConfig", "contents")
# a request that uses a cache continues what it holds: numbered by a key (rules/session.py)
# an answer asked for as JSON (structured output: base/jsonanswer.py)
JSON_ANSWER: JsonAnswer = ((("generationConfig", "responseMimeType"), frozenset({"application/json"})),)
GENERATE_REQUEST = obj(_GENERATE_FIELDS, prompt=PROMPT, state=("cachedContent",), json_answer=JSON_ANSWER)
# countTokens: {"contents": [...]} or {"generateContentRequest": {...}}
GENERATE_REQUEST.fields["generateContentRequest"] = GENERATE_REQUEST
GENERATE_REQUEST.fields["generate_content_request"] = GENERATE_REQUEST

# Explicit caching: a CachedContent carries what a generateContent request would
# (contents, systemInstruction, tools, toolConfig) and is masked the same way, once, when
# it is created (POST .../cachedContents) or updated (PATCH .../cachedContents/{id}).
# https://ai.google.dev/api/caching#CachedContent
_CACHE_META = ("ttl", "expireTime", "createTime", "updateTime", "usageMetadata")
# name: the API's ("cachedContents/..."); the client's key (Vertex: encryptionSpec's
# kmsKeyName), a resource name that holds its project and key ring
# (projects/{p}/locations/{l}/keyRings/{r}/cryptoKeys/{k}): masked where it holds an original
# and otherwise byte-identical (as an unknown member it was read with its key, and the
# secret patterns took every key name for a secret: the provider got [SECRET_1])
CACHED_CONTENT = obj(
    {**_GENERATE_FIELDS, **dict.fromkeys(_CACHE_META, META), "name": ID, "kmsKeyName": VALUES,
     "encryptionSpec": obj({"kmsKeyName": VALUES}), "displayName": VALUES},
    prompt=PROMPT,
)  # fmt: skip
CACHED_CONTENT_LIST = obj({"cachedContents": Arr(CACHED_CONTENT), "nextPageToken": ID})

# Embeddings: the text to embed is the client's, masked like a prompt (a literal becomes
# its disguise on every request, so a document and the query that should find it still
# meet); the answer is numbers. https://ai.google.dev/api/embeddings
# :embedContent (the Gemini API; Vertex's Gemini embedding models) and :batchEmbedContents
# (the Gemini API: what google-genai's embed_content sends), one body holding the other.
_EMBED_CONFIG = obj(
    {"taskType": META, "title": VALUES, "outputDimensionality": META, "autoTruncate": META, "documentOcr": META,
     "audioTrackExtraction": META}
)  # fmt: skip
EMBED_CONTENT = obj(
    {"model": MODEL, "content": CONTENT, "taskType": META, "title": VALUES, "outputDimensionality": META,
     "embedContentConfig": _EMBED_CONFIG}
)  # fmt: skip
EMBED_REQUEST = obj({**EMBED_CONTENT.fields, "requests": Arr(EMBED_CONTENT)})
# Vertex's :predict of a text or multimodal embedding model (text-embedding-005,
# multimodalembedding@001): instances of text (`content`, `text`) with their settings
EMBED_PREDICT_REQUEST = obj(
    {"instances": Arr(obj({"content": VALUES, "text": VALUES, "title": VALUES, "task_type": META, "mimeType": META})),
     "parameters": META}
)  # fmt: skip
_EMBED_ANSWER = ("embedding", "embeddings", "predictions", "metadata", "usageMetadata", "deployedModelId", "model",
                 "modelDisplayName", "modelVersionId")  # fmt: skip
EMBED_RESPONSE = obj(dict.fromkeys(_EMBED_ANSWER, META))  # numbers and the API's words; an error: unknown (restored)

# -- whole responses -----------------------------------------------------------------------

_RESP_PART = _Part(obj({**_PART_FIELDS, "text": ANSWER, "functionResponse": _FUNCTION_RESPONSE}))
_CANDIDATE_FIELDS: dict[str, Rule] = _both(
    {
        "index": META, "finishReason": META, "safetyRatings": META, "tokenCount": META,
        "avgLogprobs": META,
        # Its tokens are laid over the candidate's text afterwards (logprobs.gemini_whole,
        # GeminiStream._logprobs): entries over a disguise go.
        "logprobsResult": META,
        "finishMessage": VALUES,
        # what grounding and URL tools cite: titles, URLs, snippets (unknown by design)
        "citationMetadata": GENERIC, "groundingMetadata": GENERIC, "urlContextMetadata": GENERIC,
        "continuationToken": GENERIC,
    }
)  # fmt: skip
_CANDIDATE = Obj({**_CANDIDATE_FIELDS, "content": obj({"role": META, "parts": Arr(_RESP_PART)})}, default=GENERIC)
_RESPONSE_FIELDS: dict[str, Rule] = _both(
    {
        "usageMetadata": COUNTERS, "modelVersion": META, "responseId": ID, "createTime": META,
        "promptFeedback": obj({"blockReason": META, "safetyRatings": META, "blockReasonMessage": VALUES}),
        "modelStatus": GENERIC,
    }
)  # fmt: skip
GENERATE_RESPONSE = Obj({**_RESPONSE_FIELDS, "candidates": Arr(_CANDIDATE)}, default=GENERIC)

# What a candidate cites counts UTF-8 bytes of its text, as the model wrote it (disguised):
# a grounding support's `segment` "Start index in the given Part, measured in bytes" (and
# its exclusive end) of the part `partIndex` names (absent: part 0, proto3 JSON leaves
# zeros out, `startIndex` too); a citation source's `startIndex`/`endIndex` are bytes of
# "the response" and name no part, so they are moved only in a candidate of one part.
# Moved to the restored text in whole responses (base/offsets.py: restore_doc, so also a
# stream that arrived as one document and Batch Mode's inlined responses). A stream's
# chunks are not read so (GeminiStream: their offsets count the whole streamed text).
register_cited(Cited(("groundingMetadata", "groundingSupports"), ("content", "parts"), ("startIndex", "endIndex"),
                     inner=("segment",), utf8=True, part=("partIndex", "text")))  # fmt: skip
register_cited(Cited(("citationMetadata", "citationSources"), ("content", "parts"), ("startIndex", "endIndex"),
                     utf8=True, part=("", "text")))  # fmt: skip


class _ObjectOrArray(Rule):
    """A response body: one object, or the JSON array of a stream that arrived whole."""

    string = True

    def __init__(self, item: Rule) -> None:
        self.item = item
        self.arr = Arr(item)

    def resolve(self, value: object) -> Rule:
        return self.arr if isinstance(value, list) else self.item.resolve(value)


RESPONSE: Rule = _ObjectOrArray(GENERATE_RESPONSE)  # also countTokens and error bodies

# -- Batch Mode (the Gemini API) -------------------------------------------------------------
# POST models/{m}:batchGenerateContent: GenerateContentRequests inline, each with the
# client's metadata (its key for the result: keys and values masked, as a batch request's
# custom_id is), or an uploaded JSONL file by name (an upload is scanned as an unknown
# endpoint). The batch is a long-running operation; reading it (GET batches/{id}) gives
# the responses inline, restored as generateContent's. https://ai.google.dev/api/batch-mode
_BATCH_INPUT = obj({"requests": obj({"requests": Arr(obj({"request": GENERATE_REQUEST, "metadata": GENERIC}))}),
                    "fileName": ID})  # fmt: skip
BATCH_REQUEST = obj(
    {"batch": obj({"displayName": VALUES, "model": MODEL, "inputConfig": _BATCH_INPUT, "priority": META})}
)
_BATCH_OUTPUT = obj(
    {"@type": META, "responsesFile": ID,
     "inlinedResponses": obj({"inlinedResponses": Arr(obj({"response": GENERATE_RESPONSE, "metadata": GENERIC,
                                                           "error": GENERIC}))})}
)  # fmt: skip
_BATCH = obj(
    {"@type": META, "name": ID, "model": MODEL, "displayName": VALUES, "state": META, "createTime": META,
     "endTime": META, "updateTime": META, "batchStats": META, "priority": META, "inputConfig": _BATCH_INPUT,
     "output": _BATCH_OUTPUT, **_BATCH_OUTPUT.fields}
)  # fmt: skip
BATCH_OPERATION = obj({"name": ID, "done": META, "metadata": _BATCH, "response": _BATCH, "error": GENERIC})
BATCH_LIST = obj({"operations": Arr(BATCH_OPERATION), "nextPageToken": ID})



def _dumps(obj: object) -> str:
    """Compact JSON, UTF-8; \\u escapes where a lone surrogate cannot be UTF-8."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = json.dumps(obj, separators=(",", ":"))
    return s


# Google's APIs: the Gemini API (/v1beta/models/...:generateContent, cachedContents,
# files, uploads), Vertex AI (/v1/projects/P/locations/L/...). On these the API key may
# ride in the query (`?key=AIza...`, Google's own curl examples; a Live WebSocket
# `wss://...BidiGenerateContent?key=...`, an ephemeral token `?access_token=...`): a
# credential in its own place, not a leak.
_GOOGLE_PATH_RX = (
    r"(?:^|/)(?:upload/)?v1(?:alpha|beta)?[0-9]*/(?:projects/[^/]+/locations/[^/]+/)?"
    r"(?:publishers/[^/]+/)?(?:models|tunedModels|cachedContents|files|corpora|batches|operations"
    r"|fileSearchStores|endpoints|generatedFiles|dynamic)(?:/|:|\Z)"
)
_GOOGLE_PATH = re.compile(_GOOGLE_PATH_RX)
# The paths that are Google's and nobody else's (Provider.paths: a `key` there is Google's
# whatever the host): not `/v1/models`, `/v1/files` or `/v1/batches`, which are OpenAI's
# too (a `key` on them is Google's only on Google's hosts).
_GOOGLE_OWN_RX = (
    # a Gemini API version (v1alpha, v1beta, v1beta2, ...)
    r"(?:^|/)(?:upload/)?v1(?:alpha|beta)[0-9]*/(?:models|tunedModels|cachedContents|files|corpora|batches"
    r"|operations|fileSearchStores|generatedFiles|dynamic)(?:/|:|\Z)"
    # Vertex AI's resources: a project's location, a publisher's models
    r"|(?:^|/)v1(?:alpha|beta)?[0-9]*/(?:projects/[^/]+/locations/[^/]+|publishers/[^/]+)(?:/|:|\Z)"
    # what only Google names so in v1, and a model's method (`models/M:generateContent`)
    r"|(?:^|/)(?:upload/)?v1/(?:tunedModels|cachedContents|corpora|fileSearchStores|generatedFiles)(?:/|:|\Z)"
    r"|(?:^|/)v1/(?:models|tunedModels)/[^/:%]+(?::|%3[aA])[a-z][A-Za-z]*\Z"
    # the Live API's WebSockets (registry._WS_ROUTES)
    r"|/ws/google\.(?:ai\.generativelanguage|cloud\.aiplatform)\."
)
GEMINI = Provider(
    "google.gemini", hosts=("generativelanguage.googleapis.com",),
    headers=frozenset({"x-goog-api-key", "authorization"}), params=frozenset({"key", "access_token"}),
    paths=_GOOGLE_OWN_RX,
)  # fmt: skip
# Vertex AI: the global `aiplatform.googleapis.com` and the regional
# `{region}-aiplatform.googleapis.com` (every publisher's models: google, anthropic,
# mistralai, meta, ...); an OAuth token in Authorization, an express-mode key.
VERTEX = Provider(
    "google.vertex", hosts=("aiplatform.googleapis.com",), host_forms=(r"[a-z0-9-]+-aiplatform\.googleapis\.com",),
    headers=frozenset({"authorization", "x-goog-api-key"}), params=frozenset({"key"}), paths=_GOOGLE_OWN_RX,
)  # fmt: skip


# Resumable uploads (the Files API, and every Google upload on these hosts): a `start`
# request carries the file's metadata, then the bytes go in one or more requests, each
# `X-Goog-Upload-Command: upload` at its `X-Goog-Upload-Offset`, the last one
# `upload, finalize`. google-genai cuts a file over 8 MiB into 8 MiB chunks
# (_api_client.CHUNK_SIZE). A chunk is checked alone: an original cut by a chunk boundary
# would pass as two clean halves, and chunks are separate requests that may go to
# different proxy instances (no state is shared). So only a whole file in one request
# may carry bytes: `upload, finalize` at offset 0. Refused like OpenAI's Uploads API parts.
UPLOAD_CHUNK_REFUSED = (
    "a chunk of a resumable upload (X-Goog-Upload-Command other than `upload, finalize` at X-Goog-Upload-Offset "
    "0) cannot be checked alone: an original cut by a chunk boundary would pass as two halves; send the whole "
    "file in one request, `X-Goog-Upload-Command: upload, finalize` with `X-Goog-Upload-Offset: 0` (google-genai "
    "cuts files over 8 MiB into chunks: upload such a file with one request of your own) "
    "(or set disguise_allow_unknown to forward chunks unchecked)"
)


def upload_refused(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request of Google's resumable upload protocol may not leave (it carries a
    chunk of a file: UPLOAD_CHUNK_REFUSED), or None (no bytes of a file in it, or the
    whole file at offset 0). headers: (name, value) pairs, repeated names kept."""
    commands: list[str] = []
    offsets: list[str] = []
    for name, value in headers:
        n = name.lower()
        if n == "x-goog-upload-command":
            commands.append(value)
        elif n == "x-goog-upload-offset":
            offsets.append(value.strip())
    words = [w.strip().lower() for c in commands for w in c.split(",")]
    if "upload" not in words:
        return None  # start, query, cancel: no bytes of the file
    if len(commands) == 1 and sorted(words) == ["finalize", "upload"] and offsets == ["0"]:
        return None
    return UPLOAD_CHUNK_REFUSED


# The paths of the generate methods, as a path ends (`:` may arrive percent-encoded).
# Vertex AI: .../publishers/google/models/M:generateContent, tuned-model endpoints
# (.../endpoints/E:generateContent); also the express-mode /v1/publishers/google/...
# The Gemini API: /v1beta/models/M:streamGenerateContent, /v1beta/tunedModels/M:...
COLON = r"(?::|%3[aA])"
_METHODS = ("generateContent", "streamGenerateContent", "countTokens")
_EMBED_METHODS = ("embedContent", "batchEmbedContents")
VERTEX_PATH = re.compile(
    r"/(?:publishers/google/models|endpoints)/[^/]+" + COLON + "(?:" + "|".join((*_METHODS, "computeTokens")) + r")\Z"
)
GEMINI_PATH = re.compile(r"/(?:models|tunedModels)/[^/]+" + COLON + "(?:" + "|".join(_METHODS) + r")\Z")
# The embedding methods: Vertex's Gemini embedding models (:embedContent) and its text and
# multimodal ones (:predict, whose model names say "embedding": :predict of another model
# is left to unknown-endpoint handling), the Gemini API's (:embedContent, :batchEmbedContents)
VERTEX_EMBED_PATH = re.compile(r"/publishers/google/models/[^/]+" + COLON + r"embedContent\Z")
# (the model's name looked at once, ahead: `[^/:%]*embedding[^/:%]*` backtracked over a
# name spelling `embedding` many times, quadratic in it: 36 kB of path took 0.5 s)
VERTEX_EMBED_PREDICT_PATH = re.compile(r"/publishers/google/models/(?=[^/:%]*embedding)[^/:%]+" + COLON + r"predict\Z")
GEMINI_BATCH_PATH = re.compile(r"/(?:models|tunedModels)/[^/]+" + COLON + r"batchGenerateContent\Z")
# a batch of the Gemini API by name (not OpenAI's /v1/batches/{id}: the version says whose)
GEMINI_BATCHES = r"/v1(?:alpha|beta)[0-9]*/batches"
GEMINI_EMBED_PATH = re.compile(r"/(?:models|tunedModels)/[^/]+" + COLON + "(?:" + "|".join(_EMBED_METHODS) + r")\Z")


def google_path(path: str) -> bool:
    """A path of a Google generative-AI API (its errors take Google's shape)."""
    return bool(_GOOGLE_PATH.search(path.split("?", 1)[0]))


def error_chunk(message: str, code: int = 500, status: str = "INTERNAL") -> str:
    """A chunk in Google's error shape (google.rpc.Status), as the API sends mid-stream."""
    return _dumps({"error": {"code": code, "message": message, "status": status}})


def error_body(message: str) -> bytes:
    """A response body in the shape Google's APIs use for errors (a refused request)."""
    return json.dumps({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}).encode()


# -- logprobs (logprobs.py's rule, in Gemini's shape) ---------------------------------------


def gemini_whole(result: dict, text: str, r: Restorer) -> dict | None:
    """A Gemini candidate's `logprobsResult` over its text (Chat's rule): a chosen token
    that overlaps a match goes, with its `topCandidates` step; an alternative that holds
    a whole disguise goes. None when nothing changes."""
    chosen = result.get("chosenCandidates")
    tops = result.get("topCandidates")
    if not isinstance(chosen, list):
        return None
    drop = overlapping(text, chosen, r)
    new = dict(result)
    if drop:
        new["chosenCandidates"] = [c for i, c in enumerate(chosen) if i not in drop]
        if isinstance(tops, list) and len(tops) == len(chosen):
            tops = [t for i, t in enumerate(tops) if i not in drop]
        elif isinstance(tops, list):  # steps that cannot be paired with the tokens: they go
            tops = []
        new["topCandidates"] = tops
    changed = bool(drop)
    if isinstance(tops, list):
        out = []
        for t in tops:
            alts = t.get("candidates") if isinstance(t, dict) else None
            if isinstance(alts, list):
                kept = [c for c in alts if not (isinstance(c, dict) and holds_disguise(c.get("token"), r))]
                if len(kept) != len(alts):
                    t = {**t, "candidates": kept}
                    changed = True
            out.append(t)
        new["topCandidates"] = out
    return new if changed else None


def candidate_text(cand: dict) -> str:
    """The text a Gemini candidate's tokens spell: its text parts (not thoughts), joined."""
    content = cand.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return "".join(p["text"] for p in parts or () if isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))  # fmt: skip


def _fix_logprobs(cand: dict, result: dict, r: Restorer) -> dict | None:
    return gemini_whole(result, candidate_text(cand), r)


register("logprobsResult", _fix_logprobs)
