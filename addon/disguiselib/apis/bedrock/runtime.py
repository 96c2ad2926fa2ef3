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

from ...base.exempt import SIGNED
from ...base.fields import ANSWER, GENERIC, SCHEMA, media_text, names
from ...base.wirespec import MASKED, REFUSED, SCANNED, Endpoint, Provider
from ...errors import MaskError
from ...wire.jsonspan import JSON_TEXT, SKIP, USER, VALUES, Obj, Rule, Skip
from ..anthropic import messages as anthropic
from . import shapes as bedrock_shapes
from .shapes import Shapes

# AWS Bedrock Runtime (`bedrock-runtime.{region}.amazonaws.com`, FIPS and VPC endpoint
# names): SigV4 in Authorization, with temporary credentials (SSO, assumed roles,
# instance and container roles) their session token in x-amz-security-token; a Bedrock
# API key as a bearer token. Re-signing (resign.py) replaces the signing headers.
PROVIDER = Provider(
    "aws.bedrock", hosts=("amazonaws.com",),
    headers=frozenset({"authorization", "x-amz-security-token"}),
    signing=frozenset({"authorization", "x-amz-date", "x-amz-security-token", "date", "x-amz-content-sha256"}),
    signature="aws4-hmac-sha256",
)  # fmt: skip

# A bidirectional stream (Nova Sonic's speech-to-speech) sends its input events for as long
# as the session lasts: no body to mask or scan before it leaves.
BIDIRECTIONAL_REFUSED = (
    "InvokeModelWithBidirectionalStream sends its input as an event stream for as long as the session lasts: "
    "nothing in it can be masked or checked before it leaves (or set disguise_allow_unknown to forward it)"
)

# Every operation of botocore's `bedrock-runtime` service model (tests/inventory/
# bedrock_runtime.json), with what disguise does with it (apis/registry.py routes the
# transformed ones; tests/apis/test_inventory.py checks every operation is here).
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("POST", "/model/{modelId}/converse", MASKED),
    Endpoint("POST", "/model/{modelId}/converse-stream", MASKED),
    Endpoint("POST", "/model/{modelId}/count-tokens", MASKED),
    Endpoint("POST", "/model/{modelId}/invoke", MASKED, "the model family's body (bedrock/models.py)"),
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


# -- Converse: the field model derived from botocore's shapes (bedrock/shapes.py) ----------

_MODEL = bedrock_shapes.load()

# A document's bytes are base64 of a file in `format`. The model reads the text formats
# decoded (an original in a .txt must not leave): those are decoded, masked and encoded
# again; the binary ones are never touched; a format Bedrock may add later is read as an
# unknown field (decoded when its bytes are UTF-8 text).
_DOC_MIME = {"txt": "text/plain", "csv": "text/csv", "md": "text/markdown", "html": "text/html"}
_DOC_BINARY = frozenset({"pdf", "doc", "docx", "xls", "xlsx"})


class _Document(Rule):
    """A Converse document block (its members as the shapes have them), its source's
    `bytes` read by the block's `format`."""

    string = True
    kind = "unknown"

    def __init__(self, block: Obj) -> None:
        source = block.fields["source"]
        assert isinstance(source, Obj)
        by = {"": GENERIC, **{f: SKIP for f in _DOC_BINARY}, **{f: media_text(m) for f, m in _DOC_MIME.items()}}
        self._by = {
            f: Obj({**block.fields, "source": Obj({**source.fields, "bytes": r}, default=GENERIC)}, default=GENERIC)
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


class _RefusedInvokeBody(Rule):
    """CountTokens' `input.invokeModel.body`: a whole Messages body in base64 that
    nothing here decodes; refused rather than sent unread."""

    string = True

    def resolve(self, value: object) -> Rule:
        raise MaskError(
            "Bedrock CountTokens with input.invokeModel (a base64 body) cannot be masked; "
            "count with input.converse instead"
        )


# `additionalModelRequestFields` is the model's own request JSON: for Claude the
# Messages fields Converse has no name for (`thinking`, `top_k`, `anthropic_beta`).
_ADDITIONAL = Obj(
    {"thinking": SKIP, "top_k": SKIP, "anthropic_beta": SKIP, "reasoning_config": SKIP,
     "output_config": Obj({"effort": SKIP}, default=GENERIC)},
    default=GENERIC,
)  # fmt: skip

# What the members are whose botocore type does not say it (bedrock/shapes.py decides the
# rest: strings masked, enums and numbers untouched, ...). Every blob and document member
# is here (tests/apis/bedrock/test_runtime_request.py).
_CLASSIFIED: dict[str, Rule] = {
    # ids, an account number, the names of Bedrock's own tools: untouched
    "ToolUseBlock.toolUseId": SKIP, "ToolResultBlock.toolUseId": SKIP, "S3Location.bucketOwner": SKIP,
    "GuardrailConfiguration.guardrailIdentifier": SKIP, "GuardrailConfiguration.guardrailVersion": SKIP,
    "GuardrailStreamConfiguration.guardrailIdentifier": SKIP, "GuardrailStreamConfiguration.guardrailVersion": SKIP,
    "SystemTool.name": SKIP,
    # base64 media (a JSON blob): like Anthropic's base64 sources, never touched
    "ImageSource.bytes": SKIP, "VideoSource.bytes": SKIP, "AudioSource.bytes": SKIP,
    "GuardrailConverseImageSource.bytes": SKIP, "ImageBlockDelta.source": Skip("media", whole=True),
    # a document's bytes: read by its format (_Document, below)
    "DocumentSource.bytes": GENERIC,
    # signed by the model (reasoningText.signature) or opaque (redactedContent): back
    # byte-identical, as Anthropic thinking blocks
    "ContentBlock.reasoningContent": SIGNED, "ContentBlockDelta.reasoningContent": SIGNED,
    # free JSON: a tool's input and JSON result (the user's), a tool's input schema
    "ToolUseBlock.input": USER, "ToolResultContentBlock.json": USER, "ToolResultBlockDelta.json": USER,
    "ToolInputSchema.json": SCHEMA,
    # a JSON schema held in a string (structured output): masked as JSON
    "JsonSchemaDefinition.schema": JSON_TEXT,
    # the model's own request fields; JSON Pointers into its response (its vocabulary)
    "ConverseRequest.additionalModelRequestFields": _ADDITIONAL,
    "ConverseStreamRequest.additionalModelRequestFields": _ADDITIONAL,
    "ConverseTokensRequest.additionalModelRequestFields": _ADDITIONAL,
    "ConverseRequest.additionalModelResponseFieldPaths": SKIP,
    # the prompt's variables, named in a stored prompt: their names as they are (they were
    # masked: the default's keys), the leak guard reading each (fields.NAME: one that
    # holds an original is refused)
    "ConverseRequest.promptVariables": names(Obj({"text": VALUES}, default=GENERIC)),
    # a base64 Messages body: refused (count with input.converse)
    "InvokeModelTokensRequest.body": _RefusedInvokeBody(),
    # the model's own response fields, free JSON
    "ConverseResponse.additionalModelResponseFields": GENERIC,
    "MessageStopEvent.additionalModelResponseFields": GENERIC,
}  # fmt: skip
_DOCUMENT = _Document(Shapes(_MODEL, _CLASSIFIED).rule("DocumentBlock"))  # type: ignore[arg-type]
# ConverseStream's request is Converse's, its guardrail configuration one member more
_STREAM_GUARDRAIL = Shapes(_MODEL, _CLASSIFIED).rule("GuardrailStreamConfiguration")
REQUEST_CLASSES: dict[str, Rule] = {
    **_CLASSIFIED, "DocumentBlock": _DOCUMENT, "ConverseRequest.guardrailConfig": _STREAM_GUARDRAIL,
}  # fmt: skip
# A response's text is the model's answer (strip rules apply when restoring it; JSON text
# where the request asked for JSON: base/jsonanswer.py).
RESPONSE_CLASSES: dict[str, Rule] = {**REQUEST_CLASSES, "ContentBlock.text": ANSWER}
REQUEST = Shapes(_MODEL, REQUEST_CLASSES)
RESPONSE = Shapes(_MODEL, RESPONSE_CLASSES)

CONTENT_BLOCK = REQUEST.rule("ContentBlock")
_SYSTEM_BLOCK = REQUEST.rule("SystemContentBlock")
_TOOL_RESULT_BLOCK = REQUEST.rule("ToolResultContentBlock")
_TOOL = REQUEST.rule("Tool")
_DOC_SOURCE = REQUEST.rule("DocumentSource")
_CONVERSE_FIELDS: dict[str, Rule] = REQUEST.fields("ConverseRequest")
CONVERSE_REQUEST: Rule = Obj(
    _CONVERSE_FIELDS,
    default=GENERIC,
    # the prompt (and its cache points): the tools, the system prompt, then the messages
    prompt=("toolConfig", "system", "messages"),
    # an answer asked for as JSON (structured outputs: base/jsonanswer.py): its text is JSON text
    json_answer=((("outputConfig", "textFormat", "type"), frozenset({"json_schema"})),),
)
COUNT_TOKENS_REQUEST: Rule = REQUEST.rule("CountTokensRequest")

# -- responses ---------------------------------------------------------------------------

# error bodies ({"message": ...}) use the same rule
CONVERSE_RESPONSE: Rule = Obj({**RESPONSE.fields("ConverseResponse"), "message": VALUES}, default=GENERIC)
COUNT_TOKENS_RESPONSE: Rule = Obj({"inputTokens": SKIP, "message": VALUES}, default=GENERIC)
# One ConverseStream event as a recorded stream's reader gives it (stream.view_events:
# the member of its type, the service model's ConverseStreamOutput union), for the audit.
CONVERSE_STREAM_EVENT: Rule = RESPONSE.rule("ConverseStreamOutput")

# -- errors ------------------------------------------------------------------------------

REFUSED_TYPE = "ValidationException"


def error_body(message: str, kind: str = REFUSED_TYPE) -> bytes:
    """An error body as Bedrock sends it (rest-json: `message`, the type in `__type`;
    the adapter also sets `x-amzn-ErrorType`)."""
    return json.dumps({"message": message, "__type": kind}).encode()
