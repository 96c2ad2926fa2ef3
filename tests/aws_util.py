"""AWS helpers for the Bedrock tests: the SigV4 check a fake Bedrock makes (botocore
computes the expected signature), event-stream frames, a fake Bedrock upstream."""

from __future__ import annotations

import base64
import copy
import hmac
import json
import re
from pathlib import Path

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from disguiselib.apis.bedrock import models as bedrock_models
from disguiselib.apis.bedrock.chunks import is_last
from disguiselib.wire import eventstream

_AUTH = re.compile(
    r"\AAWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})\Z"
)


def check_sigv4(method: str, url: str, headers: dict[str, str], body: bytes,
                creds: ReadOnlyCredentials) -> str | None:
    """None if the request carries a valid SigV4 signature by creds over exactly these
    bytes; else why not (what AWS would answer with a 403). headers: lower-case names."""
    auth = headers.get("authorization", "")
    m = _AUTH.match(auth)
    if m is None:
        return "missing or malformed Authorization"
    akid, day, region, service, signed, signature = m.groups()
    if akid != creds.access_key:
        return "The security token included in the request is invalid."
    amz_date = headers.get("x-amz-date", "")
    if not amz_date.startswith(day):
        return "x-amz-date does not match the credential scope"
    if creds.token and headers.get("x-amz-security-token") != creds.token:
        return "The security token included in the request is invalid."
    names = signed.split(";")
    if "host" not in names:
        return "host is not signed"
    missing = [n for n in names if n not in headers]
    if missing:
        return f"signed header(s) {missing} not received"
    req = AWSRequest(method=method, url=url, data=body, headers={n: headers[n] for n in names})
    signer = SigV4Auth(creds, service, region)
    req.context["timestamp"] = amz_date
    expected = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    if "x-amz-content-sha256" in names:
        import hashlib

        if headers["x-amz-content-sha256"] != hashlib.sha256(body).hexdigest():
            return "x-amz-content-sha256 does not match the body"
    if not hmac.compare_digest(expected, signature):
        return ("The request signature we calculated does not match the signature you provided. "
                "Check your AWS Secret Access Key and signing method.")
    return None


def chunk_frame(event: dict | str, pad: str = "abcdefgh") -> bytes:
    """An InvokeModelWithResponseStream chunk carrying one Anthropic stream event."""
    data = event if isinstance(event, str) else json.dumps(event, separators=(",", ":"))
    payload = {"bytes": base64.b64encode(data.encode()).decode(), "p": pad}
    return eventstream.encode([(":event-type", "chunk"), (":content-type", "application/json"),
                               (":message-type", "event")], json.dumps(payload, separators=(",", ":")).encode())


def converse_frame(event_type: str, payload: dict) -> bytes:
    return eventstream.encode([(":event-type", event_type), (":content-type", "application/json"),
                               (":message-type", "event")], json.dumps(payload, separators=(",", ":")).encode())


def frames_of(body: bytes) -> list[eventstream.Frame]:
    d = eventstream.Decoder()
    out = d.feed(body)
    d.end()
    return out


def anthropic_events_of(body: bytes) -> list[dict]:
    """The Anthropic events inside an InvokeModelWithResponseStream body (chunks only)."""
    out = []
    for fr in frames_of(body):
        if fr.event_type == "chunk":
            out.append(json.loads(base64.b64decode(json.loads(fr.payload)["bytes"])))
    return out


# -- InvokeModel per model family (fixtures/real/bedrock/models) ----------------------------------

MODELS = Path(__file__).resolve().parent / "fixtures" / "real" / "bedrock" / "models"
# Where each fixture's chunks carry their text (the test's own reading of the documents)
TEXT_AT: dict[str, tuple] = {
    "meta.llama": ("generation",),
    "mistral": ("outputs", 0, "text"),
    "mistral.chat": ("choices", 0, "message", "content"),
    "amazon.nova": ("contentBlockDelta", "delta", "text"),
    "amazon.titan-text": ("outputText",),
    "cohere.command-r": ("text",),
    "cohere.command": ("text",),
    "ai21.jamba": ("choices", 0, "delta", "content"),
    "deepseek.r1": ("choices", 0, "text"),
    "openai.gpt-oss": ("choices", 0, "delta", "content"),
    "anthropic.claude-v2": ("completion",),
}


def family_fixture(name: str) -> dict:
    """A model family's documented bodies (fixtures/real/bedrock/models/NAME.json)."""
    return json.loads((MODELS / f"{name}.json").read_text(encoding="utf-8"))


def get(doc, at):
    for k in at:
        if isinstance(doc, dict) and k in doc or isinstance(doc, list) and isinstance(k, int) and k < len(doc):
            doc = doc[k]
        else:
            return None
    return doc


def put(doc, at, v):
    for k in at[:-1]:
        doc = doc[k]
    doc[at[-1]] = v


def chunks_with(name: str, pieces: list[str]) -> list[dict]:
    """The fixture's stream with its text replaced by pieces: the first text chunk's shape
    for each piece but the last, which goes in the terminal chunk when it has text."""
    f = family_fixture(name)
    model = next(m for m in bedrock_models.FAMILIES if m.name == f["family"]).chunk
    at = TEXT_AT[name]
    stream = f["stream"]
    idx = [i for i, c in enumerate(stream) if isinstance(get(c, at), str)]
    first, last = idx[0], idx[-1]
    term = next(i for i, c in enumerate(stream) if is_last(model, c))
    body_pieces = pieces
    out = [copy.deepcopy(c) for c in stream[:first]]
    tail = None
    if isinstance(get(stream[term], at), str) and pieces:
        body_pieces, tail = pieces[:-1], pieces[-1]
    for p in body_pieces:
        c = copy.deepcopy(stream[first])
        put(c, at, p)
        out.append(c)
    for c in stream[max(last, first) + 1 if term > last else term:]:
        c = copy.deepcopy(c)
        if c is not None and isinstance(get(c, at), str):
            put(c, at, tail if tail is not None else "")
            tail = None
        out.append(c)
    return out



# The API's own words and identifiers: not model text (never masked, nothing injected)
MEDIA_KEYS = ("images", "image", "maskImage", "base64", "inputImage", "bytes")
META_KEYS = {"role", "schemaVersion", "return_likelihoods", "type", "anthropic_version", "tool_choice", "model",
             "id", "tool_call_id", "stop_reason", "completionReason", "finish_reason", "stopReason", "object",
             "response_id", "generation_id", "reason", "event_type", "truncate", "prompt_truncation", "input_type",
             "response_type", "embedding_types", "embeddingTypes",
             # the image families: their words, and the images (bytes, passed as they are)
             "taskType", "quality", "mode", "aspect_ratio", "output_format", "clip_guidance_preset", "sampler",
             "style_preset", "result", "finishReason", "embeddingPurpose", "truncationMode", "detailLevel", "format",
             "embeddingType", *MEDIA_KEYS}  # fmt: skip


def images_of(doc: object, key: str | None = None) -> list[str]:
    """The base64 images (MEDIA_KEYS strings) in a body, in order."""
    if isinstance(doc, dict):
        return [x for k, v in doc.items() for x in images_of(v, k)]
    if isinstance(doc, list):
        return [x for v in doc for x in images_of(v, key)]
    return [doc] if isinstance(doc, str) and key in MEDIA_KEYS else []


def inject(doc: object, add: str, key: str | None = None) -> object:
    """doc with add appended to every string that is model text (not META_KEYS)."""
    if isinstance(doc, dict):
        return {k: inject(v, add, k) for k, v in doc.items()}
    if isinstance(doc, list):
        return [inject(v, add, key) for v in doc]
    if isinstance(doc, str) and key not in META_KEYS and key != "arguments":
        return doc + add
    return doc
