"""Bedrock InvokeModel and InvokeModelWithResponseStream per model family (sans I/O).

The two operations carry the model's own body: what a request, a response and each
streamed `chunk` hold depends on the model, named by the `modelId` path segment. Each
family Bedrock documents for them is declared here once, as data
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters.html):

- `prefixes`: the model ids it covers (after a geography's inference-profile prefix,
  `us.`, `eu.`, `apac.`, `global.`, ..., and inside a foundation-model or
  inference-profile ARN);
- `request` / `response`: the field rules of the body and of the answer;
- `chunk`: the JSON each stream chunk's base64 `bytes` decode to (`ChunkModel`), its
  channels (where the streamed text is, and how a channel is keyed) and its terminal
  condition (a member that stops being null: Llama's `stop_reason`, Titan's
  `completionReason`, Nova's `messageStop`, Cohere's `is_finished`, ...). None: the
  family streams Anthropic's Messages events (bedrock_stream.InvokeStream).

Every family answers an error as Bedrock does (`{"message": ...}`, the type in
`x-amzn-ErrorType`; mid-stream an exception frame): bedrock.error_body and
bedrock_stream.exception_frame. A model id whose family is not declared here (a
provisioned or imported model's ARN, a model Bedrock added later) is refused, naming
its family prefix where neither it nor the id holds an original (errors.QuotingMaskError,
read by the pipeline with the rules), rather than read as another family's body.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from ...base.fields import GENERIC, ID, MEDIA, META, SETTING, media_text
from ...base.wirespec import EVENT_STREAM, JSON, Channel, ChunkModel, WireSpec
from ...errors import QuotingMaskError
from ...wire.jsonspan import PROSE, USER, VALUES, Arr, Obj, Rule
from ..openai import chat as openai_chat
from . import runtime as bedrock
from . import stream as bedrock_stream
from .stream import EXCEPTION_TYPE


@dataclass(frozen=True)
class Family:
    name: str
    prefixes: tuple[str, ...]
    request: Rule
    response: Rule
    chunk: ChunkModel | None  # None: Anthropic's Messages stream
    doc: str  # the AWS page that documents the body


_DOCS = "https://docs.aws.amazon.com/bedrock/latest/userguide/"

# -- Meta Llama: prompt in, generation out ----------------------------------------------
LLAMA = Family(
    "meta.llama",
    ("meta.llama",),
    Obj({"prompt": VALUES, "images": Arr(MEDIA), "temperature": META, "top_p": META, "max_gen_len": META},
        default=GENERIC),
    Obj({"generation": PROSE, "prompt_token_count": META, "generation_token_count": META, "stop_reason": META},
        default=GENERIC),
    ChunkModel((Channel(("generation",)),), (("stop_reason",),)),
    _DOCS + "model-parameters-meta.html",
)  # fmt: skip

# -- Mistral AI: text completion (prompt -> outputs[]) and chat completion (messages ->
# choices[]); the body, not the model id, says which.
_CHAT_FIELDS = openai_chat.CHAT_REQUEST.fields  # type: ignore[attr-defined]
MISTRAL = Family(
    "mistral",
    ("mistral.",),
    Obj({**_CHAT_FIELDS, "prompt": VALUES, "stop": VALUES, "top_k": META}, default=GENERIC),
    Obj({**openai_chat.CHAT_RESPONSE.fields,  # type: ignore[attr-defined]
         "outputs": Arr(Obj({"text": PROSE, "stop_reason": META}, default=GENERIC))}, default=GENERIC),
    ChunkModel(
        (Channel(("outputs", "*", "text")), Channel(("choices", "*", "message", "content")),
         Channel(("choices", "*", "delta", "content")),
         Channel(("choices", "*", "message", "tool_calls", "*", "function", "arguments"), JSON),
         Channel(("choices", "*", "delta", "tool_calls", "*", "function", "arguments"), JSON)),
        (("outputs", "*", "stop_reason"), ("choices", "*", "stop_reason"), ("choices", "*", "finish_reason")),
    ),
    _DOCS + "model-parameters-mistral-chat-completion.html",
)  # fmt: skip

# -- Amazon Nova (messages-v1: Converse's shapes) and Titan Text --------------------------
NOVA = Family(
    "amazon.nova",
    ("amazon.nova-micro", "amazon.nova-lite", "amazon.nova-pro", "amazon.nova-premier", "amazon.nova-2-lite",
     "amazon.nova-2-pro"),
    Obj({**bedrock.CONVERSE_REQUEST.fields, "schemaVersion": META}, default=GENERIC),  # type: ignore[attr-defined]
    bedrock.CONVERSE_RESPONSE,
    bedrock_stream.NOVA_CHUNKS,
    "https://docs.aws.amazon.com/nova/latest/userguide/using-invoke-api.html",
)  # fmt: skip
TITAN = Family(
    "amazon.titan-text",
    ("amazon.titan-text", "amazon.titan-tg1"),
    Obj({"inputText": VALUES,
         "textGenerationConfig": Obj({"temperature": META, "topP": META, "maxTokenCount": META,
                                      "stopSequences": VALUES}, default=GENERIC)}, default=GENERIC),
    Obj({"inputTextTokenCount": META,
         "results": Arr(Obj({"tokenCount": META, "outputText": PROSE, "completionReason": META}, default=GENERIC))},
        default=GENERIC),
    ChunkModel((Channel(("outputText",)),), (("completionReason",),)),
    _DOCS + "model-parameters-titan-text.html",
)  # fmt: skip

# -- Cohere Command R / R+ (chat) and Command (generate) -----------------------------------
_COHERE_STREAM = ChunkModel(
    (Channel(("text",)), Channel(("tool_call_delta", "parameters"), JSON)),
    (("is_finished",),),
)
_PARAM_DEFS = Obj({}, default=Obj({"description": VALUES, "type": META, "required": META}, default=GENERIC),
                  keys=True)  # fmt: skip
_COHERE_TOOL = Obj({"name": VALUES, "description": VALUES, "parameter_definitions": _PARAM_DEFS}, default=GENERIC)
_COHERE_CALL = Obj({"name": VALUES, "parameters": USER, "generation_id": ID}, default=GENERIC)
COHERE_CHAT = Family(
    "cohere.command-r",
    ("cohere.command-r",),
    Obj({"message": VALUES, "preamble": VALUES,
         "chat_history": Arr(Obj({"role": META, "message": VALUES, "tool_calls": Arr(_COHERE_CALL)}, default=GENERIC)),
         "documents": Arr(USER), "tools": Arr(_COHERE_TOOL),
         "tool_results": Arr(Obj({"call": _COHERE_CALL, "outputs": Arr(USER)}, default=GENERIC)),
         "stop_sequences": VALUES, "search_queries_only": META, "max_tokens": META, "temperature": META,
         "p": META, "k": META, "prompt_truncation": META, "frequency_penalty": META, "presence_penalty": META,
         "seed": META, "return_prompt": META, "raw_prompting": META}, default=GENERIC),
    Obj({"response_id": ID, "generation_id": ID, "text": PROSE, "finish_reason": META,
         "tool_calls": Arr(_COHERE_CALL), "meta": META}, default=GENERIC),
    _COHERE_STREAM,
    _DOCS + "model-parameters-cohere-command-r-plus.html",
)  # fmt: skip
COHERE_GENERATE = Family(
    "cohere.command",
    ("cohere.command-text", "cohere.command-light-text"),
    Obj({"prompt": VALUES, "stop_sequences": VALUES, "temperature": META, "p": META, "k": META,
         "max_tokens": META, "return_likelihoods": META, "stream": META, "num_generations": META,
         "logit_bias": SETTING, "truncate": META}, default=GENERIC),
    Obj({"id": ID, "prompt": VALUES,
         "generations": Arr(Obj({"id": ID, "text": PROSE, "finish_reason": META, "likelihood": META,
                                 "is_finished": META, "index": META}, default=GENERIC))}, default=GENERIC),
    _COHERE_STREAM,
    _DOCS + "model-parameters-cohere-command.html",
)  # fmt: skip

# -- AI21 Labs: Jamba (OpenAI-like chat) and Jurassic-2 (no streaming) ---------------------
_OPENAI_LIKE_STREAM = ChunkModel(
    (Channel(("choices", "*", "delta", "content")), Channel(("choices", "*", "delta", "reasoning_content")),
     Channel(("choices", "*", "delta", "tool_calls", "*", "function", "arguments"), JSON)),
    (("choices", "*", "finish_reason"),),
)  # fmt: skip
JAMBA = Family(
    "ai21.jamba",
    ("ai21.jamba",),
    Obj({**_CHAT_FIELDS, "documents": Arr(USER), "stop": VALUES}, default=GENERIC),
    openai_chat.CHAT_RESPONSE,
    _OPENAI_LIKE_STREAM,
    _DOCS + "model-parameters-jamba.html",
)
_J2_TOKENS = Arr(Obj({"generatedToken": Obj({"token": VALUES}, default=META), "textRange": META}, default=GENERIC))
JURASSIC = Family(
    "ai21.j2",
    ("ai21.j2",),
    Obj({"prompt": VALUES, "stopSequences": VALUES, "maxTokens": META, "temperature": META, "topP": META,
         "countPenalty": META, "presencePenalty": META, "frequencyPenalty": META}, default=GENERIC),
    Obj({"id": ID, "prompt": Obj({"text": VALUES, "tokens": _J2_TOKENS}, default=GENERIC),
         "completions": Arr(Obj({"data": Obj({"text": PROSE, "tokens": _J2_TOKENS}, default=GENERIC),
                                 "finishReason": META}, default=GENERIC))}, default=GENERIC),
    ChunkModel((Channel(("completions", "*", "data", "text")),), (("completions", "*", "finishReason"),)),
    _DOCS + "model-parameters-jurassic2.html",
)  # fmt: skip

# -- DeepSeek R1: prompt in, choices[].text out -------------------------------------------
DEEPSEEK = Family(
    "deepseek.r1",
    ("deepseek.r1",),
    Obj({"prompt": VALUES, "stop": VALUES, "temperature": META, "top_p": META, "max_tokens": META}, default=GENERIC),
    Obj({"choices": Arr(Obj({"text": PROSE, "stop_reason": META}, default=GENERIC))}, default=GENERIC),
    ChunkModel((Channel(("choices", "*", "text")),), (("choices", "*", "stop_reason"),)),
    _DOCS + "model-parameters-deepseek.html",
)  # fmt: skip

# -- OpenAI gpt-oss: the Chat Completions body and chunks ----------------------------------
GPT_OSS = Family(
    "openai.gpt-oss",
    ("openai.gpt-oss",),
    openai_chat.CHAT_REQUEST,
    openai_chat.CHAT_RESPONSE,
    _OPENAI_LIKE_STREAM,
    _DOCS + "model-parameters-openai.html",
)

# -- Embeddings: text in, vectors out (no stream) -----------------------------------------
# A model that does not stream: its chunk model has no channel and no last chunk, so an
# event stream for it ends with an exception frame rather than being read as another's.
NO_STREAM = ChunkModel((), ())
TITAN_EMBED = Family(
    "amazon.titan-embed",
    ("amazon.titan-embed-text", "amazon.titan-embed-g1-text"),
    Obj({"inputText": VALUES, "dimensions": META, "normalize": META, "embeddingTypes": SETTING}, default=GENERIC),
    Obj({"embedding": META, "embeddingsByType": META, "inputTextTokenCount": META}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-titan-embed-text.html",
)
COHERE_EMBED = Family(
    "cohere.embed",
    ("cohere.embed-",),
    Obj({"texts": VALUES, "images": Arr(MEDIA), "input_type": META, "truncate": META, "embedding_types": SETTING},
        default=GENERIC),
    Obj({"embeddings": META, "id": ID, "response_type": META, "texts": VALUES}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-embed.html",
)  # fmt: skip

# -- Images: prompts in, base64 images out (no stream) ------------------------------------
# The prompt texts are masked; an image (request or answer) is bytes, passed as is.
_TITAN_PARAMS = Obj({"text": VALUES, "negativeText": VALUES, "maskPrompt": VALUES, "image": MEDIA, "images": Arr(MEDIA),
                     "maskImage": MEDIA, "conditionImage": MEDIA, "referenceImage": MEDIA, "controlMode": META,
                     "controlStrength": META, "returnMask": META, "outPaintingMode": META,
                     "similarityStrength": META, "colors": SETTING}, default=GENERIC)  # fmt: skip
TITAN_IMAGE = Family(
    "amazon.titan-image",
    ("amazon.titan-image-generator", "amazon.nova-canvas"),  # Nova Canvas: the same request schema
    Obj({"taskType": META, "textToImageParams": _TITAN_PARAMS, "inPaintingParams": _TITAN_PARAMS,
         "outPaintingParams": _TITAN_PARAMS, "imageVariationParams": _TITAN_PARAMS,
         "colorGuidedGenerationParams": _TITAN_PARAMS, "backgroundRemovalParams": _TITAN_PARAMS,
         "imageGenerationConfig": SETTING}, default=GENERIC),
    Obj({"images": Arr(MEDIA), "maskImage": MEDIA, "error": PROSE}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-titan-image.html",
)  # fmt: skip
STABILITY_SDXL = Family(
    "stability.sdxl",
    ("stability.stable-diffusion-xl",),
    Obj({"text_prompts": Arr(Obj({"text": VALUES, "weight": META}, default=GENERIC)), "init_image": MEDIA,
         "mask_image": MEDIA, "height": META, "width": META, "cfg_scale": META, "clip_guidance_preset": META,
         "sampler": META, "samples": META, "seed": META, "steps": META, "style_preset": META, "extras": GENERIC,
         "init_image_mode": META, "image_strength": META, "mask_source": META}, default=GENERIC),
    Obj({"result": META, "artifacts": Arr(Obj({"seed": META, "base64": MEDIA, "finishReason": META},
                                              default=GENERIC))}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-diffusion-1-0-text-image.html",
)  # fmt: skip
STABILITY = Family(
    "stability.sd3",
    ("stability.sd3", "stability.stable-image"),
    Obj({"prompt": VALUES, "negative_prompt": VALUES, "image": MEDIA, "mask": MEDIA, "mode": META,
         "strength": META, "aspect_ratio": META, "output_format": META, "seed": META, "style_preset": META,
         "cfg_scale": META}, default=GENERIC),
    Obj({"seeds": META, "finish_reasons": VALUES, "images": Arr(MEDIA)}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-diffusion-3-text-image.html",
)  # fmt: skip

# -- Rerank: a query and documents in, indices and scores out (documents echoed when asked)
COHERE_RERANK = Family(
    "cohere.rerank",
    ("cohere.rerank",),
    Obj({"query": VALUES, "documents": Arr(USER), "top_n": META, "max_tokens_per_doc": META, "api_version": META,
         "rank_fields": VALUES, "return_documents": META}, default=GENERIC),
    Obj({"id": ID, "results": Arr(Obj({"index": META, "relevance_score": META, "document": USER}, default=GENERIC)),
         "meta": META}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-cohere-rerank.html",
)  # fmt: skip

# -- Titan Multimodal Embeddings: text and an image in, a vector out ----------------------
TITAN_EMBED_IMAGE = Family(
    "amazon.titan-embed-image",
    ("amazon.titan-embed-image",),
    Obj({"inputText": VALUES, "inputImage": MEDIA, "embeddingConfig": SETTING}, default=GENERIC),
    Obj({"embedding": META, "inputTextTokenCount": META, "message": PROSE}, default=GENERIC),
    NO_STREAM,
    _DOCS + "model-parameters-titan-embed-mm.html",
)

# -- Nova Multimodal Embeddings (SINGLE_EMBEDDING, the synchronous schema) ----------------
# A text given as a file's bytes is read as text; an image's, audio's, video's bytes pass.
_NOVA_SOURCE = Obj({"bytes": MEDIA, "s3Location": GENERIC}, default=GENERIC)
_NOVA_MEDIA = Obj({"format": META, "detailLevel": META, "embeddingMode": META, "source": _NOVA_SOURCE}, default=GENERIC)
NOVA_EMBED = Family(
    "amazon.nova-embed",
    ("amazon.nova-2-multimodal-embeddings",),
    Obj({"schemaVersion": META, "taskType": META,
         "singleEmbeddingParams": Obj({
             "embeddingPurpose": META, "embeddingDimension": META,
             "text": Obj({"truncationMode": META, "value": VALUES,
                          "source": Obj({"bytes": media_text("text/plain"), "s3Location": GENERIC}, default=GENERIC)},
                         default=GENERIC),
             "image": _NOVA_MEDIA, "audio": _NOVA_MEDIA, "video": _NOVA_MEDIA}, default=GENERIC)}, default=GENERIC),
    Obj({"embeddings": Arr(Obj({"embeddingType": META, "embedding": META, "truncatedCharLength": META},
                               default=GENERIC))}, default=GENERIC),
    NO_STREAM,
    "https://docs.aws.amazon.com/nova/latest/userguide/embeddings-schema.html",
)  # fmt: skip

# -- Anthropic Claude: Messages (and the legacy Text Completions of claude-v2/instant) -----
CLAUDE_TEXT = Family(
    "anthropic.claude-v2",
    ("anthropic.claude-v2", "anthropic.claude-instant"),
    Obj({"prompt": VALUES, "stop_sequences": VALUES, "max_tokens_to_sample": META, "temperature": META,
         "top_p": META, "top_k": META, "anthropic_version": META}, default=GENERIC),
    Obj({"completion": PROSE, "stop_reason": META, "stop": VALUES}, default=GENERIC),
    ChunkModel((Channel(("completion",)),), (("stop_reason",),)),
    _DOCS + "model-parameters-anthropic-claude-text-completion.html",
)  # fmt: skip
CLAUDE = Family(
    "anthropic.claude",
    ("anthropic.",),
    bedrock.INVOKE_REQUEST,
    bedrock.INVOKE_RESPONSE,
    None,
    _DOCS + "model-parameters-anthropic-claude-messages.html",
)

# Most specific prefix first (claude-v2 before every other Claude).
FAMILIES: tuple[Family, ...] = (
    CLAUDE_TEXT, CLAUDE, LLAMA, MISTRAL, NOVA, TITAN, TITAN_EMBED, COHERE_CHAT, COHERE_GENERATE, COHERE_EMBED,
    JAMBA, JURASSIC, DEEPSEEK, GPT_OSS, TITAN_IMAGE, STABILITY_SDXL, STABILITY, COHERE_RERANK, TITAN_EMBED_IMAGE,
    NOVA_EMBED,
)  # fmt: skip



def _spec(fam: Family) -> WireSpec:
    """A family's stream vocabulary (base/wirespec.py): event-stream frames whose
    `chunk` carries the model's JSON; its terminal members are its stop members."""
    assert fam.chunk is not None
    return WireSpec(
        f"aws.bedrock.invoke.{fam.name}",
        ("apis.bedrock.models", "apis.bedrock.chunks"),
        (EVENT_STREAM,),
        # Nova's chunks are ConverseStream's events (messages-v1): that API's words
        inner=bedrock_stream.CONVERSE_SPEC if fam.chunk is bedrock_stream.NOVA_CHUNKS else None,
        error_event=EXCEPTION_TYPE,
        type_member=None,
        stop_members=tuple(dict.fromkeys(p[-1] for p in fam.chunk.stop)),
    )


SPECS: tuple[WireSpec, ...] = tuple(_spec(f) for f in FAMILIES if f.chunk is not None and f.chunk.stop)

# -- which family a model id is ----------------------------------------------------------

_ARN = re.compile(r"arn:aws[a-z-]*:bedrock:[^:]*:[^:]*:([a-z-]+)/(.+)\Z")
# ARN resource types that name a model id (a foundation model, a system inference
# profile); any other (provisioned, custom, imported, application profiles, prompt
# routers, marketplace endpoints) names no family.
_MODEL_ARNS = frozenset({"foundation-model", "inference-profile"})
_GEO = re.compile(r"[a-z]{2,6}(?:-[a-z]{2,4})?\.(?=[a-z0-9-]+\.)")
_SAFE = re.compile(r"[^A-Za-z0-9._:-]")


def model_id(path: str) -> str:
    """The modelId segment of an InvokeModel path, URL-decoded."""
    p = path.split("?", 1)[0].rstrip("/")
    seg = p.rsplit("/", 2)[-2] if p.count("/") >= 2 else ""
    return urllib.parse.unquote(seg)


def family_prefix(mid: str) -> str:
    """What names a model id's family in a message: provider and model name without
    version (`amazon.nova-canvas`), or an ARN's resource type (`provisioned-model`)."""
    m = _ARN.match(mid)
    if m is not None:
        if m.group(1) not in _MODEL_ARNS:
            return _SAFE.sub("?", m.group(1))[:40]
        mid = m.group(2)
    mid = _GEO.sub("", mid, count=1) if _GEO.match(mid) else mid
    provider, _, name = mid.partition(".")
    words = []
    for w in name.split("-"):
        if not w or w[0].isdigit() or re.fullmatch(r"v\d.*", w):
            break
        words.append(w)
    return _SAFE.sub("?", f"{provider}.{'-'.join(words)}" if words else provider)[:60]


def family_of(mid: str) -> Family | None:
    """The declared family of a model id (a plain id, a geography's inference profile,
    or a foundation-model / inference-profile ARN); None when it is none of them."""
    m = _ARN.match(mid)
    if m is not None:
        if m.group(1) not in _MODEL_ARNS:
            return None
        mid = m.group(2)
    for cand in (mid, _GEO.sub("", mid, count=1)):
        for fam in FAMILIES:
            if cand.startswith(fam.prefixes):
                return fam
    return None


class Unknown(Rule):
    """The request rule of a model whose family is not declared: refused, naming its
    family where that is no original (the model id is the client's text: a name it
    chose for an imported model, a profile)."""

    string = True
    kind = "unknown"

    def __init__(self, prefix: str, model: str = "") -> None:
        self.prefix = prefix
        self.model = model or prefix

    def resolve(self, value: object) -> Rule:
        raise QuotingMaskError(
            "Bedrock InvokeModel: model family {} is not one disguise knows the body of "
            "(known: " + ", ".join(f.name for f in FAMILIES).replace("{", "{{").replace("}", "}}")
            + "); a text model can be reached through Converse",
            self.prefix,
            self.model,
        )
