"""AWS Bedrock in the adapter: may a signed request be masked, and signing it last.

A Bedrock request signed with SigV4 is masked only when `disguise_aws_resign` is on and
the proxy has AWS credentials of its own; it then leaves signed by them. The signature
is computed by the Guard, last in the addon chain, after the leak check passed on the
very bytes that leave: only a completely masked and checked body is ever signed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from mitmproxy import ctx, http

from .. import pipeline, resign
from ..errors import NeverForward
from ..leakguard import place
from ..state import FlowRecord, Phase
from .flows import stop

log = logging.getLogger("disguise")

OPTION = "disguise_aws_resign"


@dataclass
class Signer:
    """How one flow's request is signed before it leaves."""

    auth: resign.ClientAuth
    credentials: object  # botocore ReadOnlyCredentials; never logged

    def apply(self, req: http.Request) -> None:
        """Sign req as it will be sent: its method, URL, headers and wire body."""
        headers = list(req.headers.items(multi=True))
        new = pipeline.sign_request(self.auth, self.credentials, req.method, req.url, headers, req.raw_content or b"")
        req.headers = http.Headers([(k.encode("utf-8"), v.encode("utf-8")) for k, v in new])


def client_auth(flow: http.HTTPFlow) -> resign.ClientAuth:
    """How the client authenticated; raises NeverForward for what cannot be re-signed."""
    r = flow.request
    return resign.client_auth(r.url, list(r.headers.items(multi=True)))


def refused_off() -> NeverForward:
    return NeverForward(
        "this AWS Bedrock request is signed with SigV4 over its body, and a masked body must be "
        f"signed again by the proxy's own AWS credentials: {OPTION} is off (set {OPTION}=true; see the "
        "README); not forwarded"
    )


def refused_no_credentials(why: str) -> NeverForward:
    return NeverForward(
        f"this AWS Bedrock request is signed with SigV4 and must be signed again after masking, but {why} "
        f"({OPTION} is on; give mitmdump AWS credentials: environment, profile or SSO); not forwarded"
    )


class Credentials:
    """The proxy's identity (resign.Identity), with a log line the first time it is
    found or missing; the log names where credentials came from, never a key."""

    def __init__(self) -> None:
        self.identity = resign.Identity()
        self._said: str | None = None

    def get(self) -> tuple[object | None, str]:
        creds, why = self.identity.get()
        said = "found" if creds is not None else why
        if said != self._said:
            self._said = said
            if creds is not None:
                log.info("disguise: AWS credentials for re-signing Bedrock requests found (%s)", self.identity.method)
            else:
                log.warning("disguise: %s: signed Bedrock requests are refused", why)
        return creds, why


class Disguise(Protocol):
    """What of the Disguise addon this module uses (no import: addon.py imports this)."""

    aws: Credentials

    def _mask(self, flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None: ...

    def _unmaskable(self, flow: http.HTTPFlow, rec: FlowRecord, e: Exception, fail_open: bool = True) -> None: ...


def stop_streamed(flow: http.HTTPFlow, rec: FlowRecord) -> None:
    """A signed request whose body mitmproxy would stream: its headers would leave
    before the body is masked, so nothing could sign it. The connection is closed."""
    why = "a signed AWS request whose body mitmproxy streams (stream_large_bodies) cannot be re-signed"
    rules = rec.config.rules if rec.config is not None else None
    log.error("disguise: %s: %s (connection closed)", place(flow.request.method, flow.request.path, rules), why)
    stop(flow, why, rules=rules)
    rec.to(Phase.REFUSED, why)


def mask_signed(d: Disguise, flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None:
    """A request whose body the client signed: masked only when the proxy can sign it
    again (SigV4 and the option on, credentials found), or when nothing signs the body
    (a bearer API key, no Authorization); refused otherwise, even with
    disguise_fail_open. The Guard signs it, after the last leak check."""
    try:
        auth = client_auth(flow)
        if auth.kind == resign.SIGV4 and not ctx.options.disguise_aws_resign:
            raise refused_off()
    except NeverForward as e:
        d._unmaskable(flow, rec, e, fail_open=False)
        return None
    if auth.kind != resign.SIGV4:
        return d._mask(flow, rec)
    return _mask_and_sign(d, flow, rec, auth)


async def _mask_and_sign(d: Disguise, flow: http.HTTPFlow, rec: FlowRecord, auth: resign.ClientAuth) -> None:
    try:  # credentials may come from a process, SSO or the instance metadata service
        creds, why = await asyncio.to_thread(d.aws.get)
    except Exception as e:  # noqa: BLE001 - the thread machinery failing
        creds, why = None, f"internal error ({type(e).__name__})"
    if creds is None:
        d._unmaskable(flow, rec, refused_no_credentials(why), fail_open=False)
        return
    later = d._mask(flow, rec)
    if later is not None:
        await later
    if rec.phase is Phase.MASKED and flow.response is None:
        rec.signer = Signer(auth, creds)
