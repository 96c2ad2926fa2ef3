"""AWS Bedrock Runtime: what to mask in a request, how to restore a response (sans I/O).

Four ways to reach Claude (https://docs.aws.amazon.com/bedrock/latest/APIReference/):

- InvokeModel `POST /model/{modelId}/invoke`: the body is the Anthropic Messages body
  (with `anthropic_version: "bedrock-2023-05-31"`, the model in the path), the answer a
  Messages response: anthropic.py's tables.
- InvokeModelWithResponseStream `/invoke-with-response-stream`: the same body; the answer
  an event stream whose `chunk` events carry `{"bytes": "<base64 of one Anthropic
  stream event>"}` (bedrock_stream.InvokeStream).
- Converse `/converse` and ConverseStream `/converse-stream`: Bedrock's own shape, the
  tables below (content blocks are unions keyed by member name, not by `type`).
- CountTokens `/count-tokens`: `{"input": {"converse": {...}}}` (masked like Converse) or
  `{"input": {"invokeModel": {"body": "<base64>"}}}` (a Messages body inside base64: not
  masked here, refused).

`modelId` is one path segment: a model id (`anthropic.claude-...-v1:0`, the `:` often
sent as `%3A`), an inference profile (`us.anthropic...`) or a URL-encoded ARN.

Bedrock signs each request over its body (SigV4): a masked body goes out only re-signed
(resign.py) or, with a bearer API key, as it is. Errors are `{"message": ...}` with the
type in the `x-amzn-ErrorType` header (and, for older clients, `__type`).
"""

from __future__ import annotations

import json

from ..core.jsonspan import PROSE, SKIP, USER, VALUES, Arr, Obj, Rule
from ..errors import MaskError
from . import anthropic
from .fields import GENERIC, SCHEMA, media_text
from .wirespec import MASKED, REFUSED, SCANNED, Endpoint, Provider

# AWS Bedrock Runtime (`bedrock-runtime.{region}.amazonaws.com`, FIPS and VPC endpoint
# names): SigV4 in Authorization, with temporary credentials (SSO, assumed roles,
# instance and container roles) their session token in x-amz-security-token; a Bedrock
# API key as a bearer token. Re-signing (resign.py) replaces the signing headers.
PROVIDER = Provider(
    "aws.bedrock", hosts=("amazonaws.com",),
    headers=frozenset({"authorization", "x-amz-security-token"}),
    signing=frozenset({"authorization", "x-amz-date", "x-amz-security-token", "date", "x-amz-content-sha256"}),
)  # fmt: skip

# A bidirectional stream (Nova Sonic's speech-to-speech) sends its input events for as long
# as the session lasts: no body to mask or scan before it leaves.
BIDIRECTIONAL_REFUSED = (
    "InvokeModelWithBidirectionalStream sends its input as an event stream for as long as the session lasts: "
    "nothing in it can be masked or checked before it leaves (or set disguise_allow_unknown to forward it)"
)

# Every operation of botocore's `bedrock-runtime` service model (tests/inventory/
# bedrock_runtime.json), with what disguise does with it (providers/registry.py routes the
# transformed ones; tests/providers/test_inventory.py checks every operation is here).
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("POST", "/model/{modelId}/converse", MASKED),
    Endpoint("POST", "/model/{modelId}/converse-stream", MASKED),
    Endpoint("POST", "/model/{modelId}/count-tokens", MASKED),
    Endpoint("POST", "/model/{modelId}/invoke", MASKED, "the model family's body (bedrock_models.py)"),
    Endpoint("POST", "/model/{modelId}/invoke-with-response-stream", MASKED),
    Endpoint("POST", "/model/{modelId}/invoke-with-bidirectional-stream", REFUSED, BIDIRECTIONAL_REFUSED),
    # a guardrail reads the text it is given: scanned, refused with an original
    Endpoint("POST", "/guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply", SCANNED),
    Endpoint("POST", "/guardrail-checks/invoke", SCANNED),
    # an asynchronous invocation (video models): its modelInput is scanned, not masked
    Endpoint("GET POST", "/async-invoke", SCANNED),
    Endpoint("GET", "/async-invoke/{invocationArn}", SCANNED),
)

# -- requests ----------------------------------------------------------------------------

INVOKE_REQUEST: Rule = anthropic.MESSAGES_REQUEST
INVOKE_RESPONSE: Rule = anthropic.MESSAGE_RESPONSE


def _union(members: dict[str, Rule]) -> Obj:
    """A Converse union (exactly one member set); an unknown member fails closed."""
    return Obj(members, default=GENERIC)


_S3 = Obj({"uri": VALUES, "bucketOwner": SKIP}, default=GENERIC)
# Media bytes are base64 (a JSON blob); like Anthropic's base64 sources, never touched.
_MEDIA_SOURCE = _union({"bytes": SKIP, "s3Location": _S3})
_IMAGE = Obj({"format": SKIP, "source": _MEDIA_SOURCE}, default=GENERIC)
_VIDEO = Obj({"format": SKIP, "source": _MEDIA_SOURCE}, default=GENERIC)
_DOC_SOURCE = _union(
    {"bytes": SKIP, "s3Location": _S3, "text": VALUES, "content": Arr(_union({"text": VALUES}))}
)
# A document's bytes are base64 of a file in `format`. The model reads the text formats
# decoded (an original in a .txt must not leave): those are decoded, masked and encoded
# again; the binary ones are never touched; a format Bedrock may add later is read as an
# unknown field (decoded when its bytes are UTF-8 text).
_DOC_MIME = {"txt": "text/plain", "csv": "text/csv", "md": "text/markdown", "html": "text/html"}
_DOC_BINARY = frozenset({"pdf", "doc", "docx", "xls", "xlsx"})


class _Document(Rule):
    """A Converse document block, its source's `bytes` read by the block's `format`."""

    string = True
    kind = "unknown"

    def __init__(self) -> None:
        fields = {"format": SKIP, "name": VALUES, "context": VALUES, "citations": SKIP}
        by = {"": GENERIC, **{f: SKIP for f in _DOC_BINARY}, **{f: media_text(m) for f, m in _DOC_MIME.items()}}
        self._by = {
            f: Obj({**fields, "source": _union({**_DOC_SOURCE.fields, "bytes": r})}, default=GENERIC)
            for f, r in by.items()
        }
        self.fields = self._by["pdf"].fields  # the members (for the service-model test)

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        fmt = value.get("format")
        return self._by.get(fmt if isinstance(fmt, str) and fmt in self._by else "", self._by[""]).resolve(value)

    def __repr__(self) -> str:
        return "Document"


_DOCUMENT = _Document()
_TOOL_USE = Obj({"toolUseId": SKIP, "name": VALUES, "input": USER, "type": SKIP}, default=GENERIC)
_TOOL_RESULT_BLOCK = _union(
    {"text": VALUES, "json": USER, "image": _IMAGE, "document": _DOCUMENT, "video": _VIDEO}
)
_TOOL_RESULT = Obj(
    {"toolUseId": SKIP, "status": SKIP, "type": SKIP, "content": Arr(_TOOL_RESULT_BLOCK)}, default=GENERIC
)
_GUARD = _union(
    {"text": Obj({"text": VALUES, "qualifiers": SKIP}, default=GENERIC),
     "image": Obj({"format": SKIP, "source": _union({"bytes": SKIP})}, default=GENERIC)}
)  # fmt: skip
_CITATIONS_CONTENT = Obj(
    {"content": Arr(_union({"text": VALUES})), "citations": GENERIC}, default=GENERIC
)
CONTENT_BLOCK = _union(
    {
        "text": VALUES,
        "image": _IMAGE,
        "document": _DOCUMENT,
        "video": _VIDEO,
        "toolUse": _TOOL_USE,
        "toolResult": _TOOL_RESULT,
        "guardContent": _GUARD,
        "cachePoint": SKIP,
        # Signed by the model (reasoningText.signature) or opaque (redactedContent):
        # must go back byte-identical, as Anthropic thinking blocks.
        "reasoningContent": SKIP,
        "citationsContent": _CITATIONS_CONTENT,
    }
)
_MESSAGE = Obj({"role": SKIP, "content": Arr(CONTENT_BLOCK)}, default=GENERIC)
_SYSTEM_BLOCK = _union({"text": VALUES, "guardContent": _GUARD, "cachePoint": SKIP})
_TOOL_SPEC = Obj(
    {"name": VALUES, "description": VALUES, "inputSchema": _union({"json": SCHEMA}), "strict": SKIP},
    default=GENERIC,
)
_TOOL = _union({"toolSpec": _TOOL_SPEC, "cachePoint": SKIP, "systemTool": Obj({"name": SKIP}, default=GENERIC)})
_TOOL_CONFIG = Obj(
    {
        "tools": Arr(_TOOL),
        "toolChoice": _union({"auto": SKIP, "any": SKIP, "tool": Obj({"name": VALUES}, default=GENERIC)}),
    },
    default=GENERIC,
)
_INFERENCE = Obj(
    {"maxTokens": SKIP, "temperature": SKIP, "topP": SKIP, "stopSequences": VALUES}, default=GENERIC
)
# `additionalModelRequestFields` is the model's own request JSON: for Claude the
# Messages fields Converse has no name for (`thinking`, `top_k`, `anthropic_beta`).
_ADDITIONAL = Obj(
    {"thinking": SKIP, "top_k": SKIP, "anthropic_beta": SKIP, "reasoning_config": SKIP,
     "output_config": Obj({"effort": SKIP}, default=GENERIC)},
    default=GENERIC,
)  # fmt: skip
_CONVERSE_FIELDS: dict[str, Rule] = {
    "messages": Arr(_MESSAGE),
    "system": Arr(_SYSTEM_BLOCK),
    "toolConfig": _TOOL_CONFIG,
    "inferenceConfig": _INFERENCE,
    "additionalModelRequestFields": _ADDITIONAL,
    # JSON Pointers into the model's response (`/stop_sequence`): the model's vocabulary
    "additionalModelResponseFieldPaths": SKIP,
    "guardrailConfig": Obj({"guardrailIdentifier": SKIP, "guardrailVersion": SKIP, "trace": SKIP,
                            "streamProcessingMode": SKIP}, default=GENERIC),  # fmt: skip
    "promptVariables": Obj({}, default=_union({"text": VALUES}), keys=False),
    # free text key/value pairs for invocation logs (keys the client chose): keys and values masked
    "requestMetadata": GENERIC,
    "performanceConfig": SKIP,
    "serviceTier": SKIP,
}
CONVERSE_REQUEST: Rule = Obj(_CONVERSE_FIELDS, default=GENERIC)


class _RefusedInvokeBody(Rule):
    """CountTokens' `input.invokeModel.body`: a whole Messages body in base64 that
    nothing here decodes; refused rather than sent unread."""

    string = True

    def resolve(self, value: object) -> Rule:
        raise MaskError(
            "Bedrock CountTokens with input.invokeModel (a base64 body) cannot be masked; "
            "count with input.converse instead"
        )


COUNT_TOKENS_REQUEST: Rule = Obj(
    {
        "input": _union(
            {
                "converse": Obj(_CONVERSE_FIELDS, default=GENERIC),
                "invokeModel": Obj({"body": _RefusedInvokeBody()}, default=GENERIC),
            }
        )
    },
    default=GENERIC,
)

# -- responses ---------------------------------------------------------------------------

_RESP_BLOCK = _union(
    {
        "text": PROSE,
        "toolUse": _TOOL_USE,
        "toolResult": _TOOL_RESULT,
        "reasoningContent": SKIP,
        "citationsContent": _CITATIONS_CONTENT,
        "image": _IMAGE,
        "document": _DOCUMENT,
        "video": _VIDEO,
    }
)
CONVERSE_RESPONSE: Rule = Obj(
    {
        "output": Obj({"message": Obj({"role": SKIP, "content": Arr(_RESP_BLOCK)}, default=GENERIC)},
                      default=GENERIC),
        "stopReason": SKIP, "usage": SKIP, "metrics": SKIP, "performanceConfig": SKIP, "serviceTier": SKIP,
        "additionalModelResponseFields": GENERIC,
        "trace": GENERIC,
        # error bodies ({"message": ...}) use the same rule
        "message": VALUES,
    },
    default=GENERIC,
)  # fmt: skip
COUNT_TOKENS_RESPONSE: Rule = Obj({"inputTokens": SKIP, "message": VALUES}, default=GENERIC)

# -- errors ------------------------------------------------------------------------------

REFUSED_TYPE = "ValidationException"


def error_body(message: str, kind: str = REFUSED_TYPE) -> bytes:
    """An error body as Bedrock sends it (rest-json: `message`, the type in `__type`;
    the adapter also sets `x-amzn-ErrorType`)."""
    return json.dumps({"message": message, "__type": kind}).encode()
