"""AWS helpers for the Bedrock tests: the SigV4 check a fake Bedrock makes (botocore
computes the expected signature), event-stream frames, a fake Bedrock upstream."""

from __future__ import annotations

import base64
import hmac
import json
import re

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from disguiselib.core import eventstream

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
