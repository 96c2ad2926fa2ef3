"""Signing a masked AWS request again with SigV4 (sans I/O; botocore does the signing).

AWS Signature Version 4 signs a hash of the body: once a Bedrock body is masked, the
client's signature no longer matches it and AWS answers 403. With `disguise_aws_resign`
the proxy signs the masked request itself, with its own AWS identity (botocore's
credential chain in mitmdump's environment: environment variables, a profile, SSO, a
credential process, container or instance roles), for the region and service the
client named in its own credential scope (`Credential=AKID/20250101/us-east-1/bedrock/
aws4_request`), and for the host and path the request now goes to.

`resign()` is the signing step and nothing else: the caller hands it the bytes that
will leave, after masking and the leak check, so only a completely masked and checked
body is ever signed. No credential is ever logged or put into an error message.

What the client's Authorization says decides what happens (`client_auth`):
- SigV4 (`AWS4-HMAC-SHA256 Credential=...`): re-signed, or refused without the option
  or without credentials;
- a bearer token (Bedrock API keys, `AWS_BEARER_TOKEN_BEDROCK`): the body is not
  signed, so the masked request goes out as it is;
- anything else, or a presigned URL (`X-Amz-Signature` in the query): refused.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .apis.bedrock import runtime as bedrock
from .errors import NeverForward

if TYPE_CHECKING:  # botocore's signer is imported when a request is signed: ~0.3 s less at start-up
    from botocore.credentials import ReadOnlyCredentials

SIGV4 = "sigv4"
BEARER = "bearer"
UNSIGNED = "unsigned"

# Headers a hop may change or drop: never signed (botocore leaves out a few of its own:
# expect, transfer-encoding, user-agent, x-amzn-trace-id).
_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "proxy-connection", "te",
     "trailer", "transfer-encoding", "upgrade", "expect", "user-agent", "x-amzn-trace-id"}
)  # fmt: skip
# The client's identity: replaced, never forwarded beside ours (the signing headers
# Bedrock's declaration names, apis/bedrock/runtime.PROVIDER).
_IDENTITY = bedrock.PROVIDER.signing

_CREDENTIAL = re.compile(
    r"\AAWS4-HMAC-SHA256\s+Credential=[^/,\s]+/(\d{8})/([A-Za-z0-9-]+)/([A-Za-z0-9-]+)/aws4_request\s*,",
)
_SIGNED_HEADERS = re.compile(r"SignedHeaders=([A-Za-z0-9;_-]+)")


@dataclass(frozen=True)
class Scope:
    """The region and service of a SigV4 credential scope."""

    region: str
    service: str


@dataclass(frozen=True)
class ClientAuth:
    kind: str  # SIGV4 | BEARER | UNSIGNED
    scope: Scope | None = None
    signed_headers: tuple[str, ...] = ()


def _get(headers: list[tuple[str, str]], name: str) -> str | None:
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def client_auth(url: str, headers: list[tuple[str, str]]) -> ClientAuth:
    """How the client authenticated this request. Raises NeverForward for a way this
    module cannot re-sign (presigned URLs, another scheme); the message never quotes
    the credential."""
    if "x-amz-signature=" in urlsplit(url).query.lower():
        raise NeverForward("a presigned AWS request (X-Amz-Signature in the URL) cannot be re-signed; not forwarded")
    auth = _get(headers, "authorization")
    if auth is None:
        return ClientAuth(UNSIGNED)
    auth = auth.strip()
    if auth[:7].lower() == "bearer ":
        return ClientAuth(BEARER)
    m = _CREDENTIAL.match(auth)
    if m is None:
        raise NeverForward(
            "the request's Authorization is not an AWS SigV4 signature disguise can re-sign; not forwarded"
        )
    sh = _SIGNED_HEADERS.search(auth)
    signed = tuple(sh.group(1).lower().split(";")) if sh else ()
    return ClientAuth(SIGV4, Scope(m.group(2), m.group(3)), signed)


def resign(
    method: str,
    url: str,
    headers: list[tuple[str, str]],
    body: bytes,
    credentials: ReadOnlyCredentials,
    auth: ClientAuth,
) -> list[tuple[str, str]]:
    """The headers to send with this exact method, url and body, signed with SigV4 by
    credentials for auth's scope.

    url is where the request goes (scheme, host, port, path and query as sent); the
    `host` header, if present, is signed as it is (else the URL's). Signed: the headers
    the client signed that are still there, host, x-amz-date, the session token of
    credentials (if any) and x-amz-content-sha256 (if the client sent one, recomputed).
    The client's Authorization, date and token are replaced; every other header is kept
    as it is, unsigned where the client had not signed it.
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    assert auth.kind == SIGV4 and auth.scope is not None
    keep = [(k, v) for k, v in headers if k.lower() not in _IDENTITY]
    names = {k.lower() for k, _ in keep}
    wanted = (set(auth.signed_headers) | {"host"}) - _HOP - _IDENTITY
    to_sign = [(k, v) for k, v in keep if k.lower() in wanted]
    had_sha = _get(headers, "x-amz-content-sha256") is not None
    if had_sha:
        to_sign.append(("X-Amz-Content-SHA256", hashlib.sha256(body).hexdigest()))
    if "host" not in names:
        to_sign.append(("host", urlsplit(url).netloc))
    req = AWSRequest(method=method.upper(), url=url, data=body, headers=dict(to_sign))
    SigV4Auth(credentials, auth.scope.service, auth.scope.region).add_auth(req)
    new = [(k, v) for k, v in req.headers.items() if k.lower() in _IDENTITY]
    return keep + new


class Identity:
    """The proxy's own AWS credentials, from botocore's chain; temporary ones (SSO,
    assumed roles, instance or container roles) are refreshed by botocore when they
    near their expiry. `get()` may block (a credential process, the instance metadata
    service, a refresh): call it off the event loop."""

    def __init__(self, profile: str | None = None) -> None:
        self._profile = profile
        self._lock = threading.Lock()
        self._creds: Any = None  # botocore Credentials (refreshable or not), once found
        self.method: str | None = None  # where they came from ("env", "sso", ...): safe to log

    def get(self) -> tuple[ReadOnlyCredentials | None, str]:
        """(frozen credentials, "") or (None, why there are none). Looked up again on
        every call until found (a later `aws sso login` is picked up)."""
        import botocore.exceptions
        import botocore.session

        with self._lock:
            try:
                if self._creds is None:
                    session = botocore.session.Session(profile=self._profile)
                    creds = session.get_credentials()
                    if creds is None:
                        return None, "no AWS credentials found in mitmdump's environment"
                    self._creds = creds
                    self.method = getattr(creds, "method", None)
                frozen = self._creds.get_frozen_credentials()
            except botocore.exceptions.BotoCoreError as e:
                return None, f"AWS credentials could not be resolved ({type(e).__name__})"
        if not frozen.access_key or not frozen.secret_key:
            return None, "AWS credentials are incomplete"
        return frozen, ""
