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
from typing import TYPE_CHECKING

from mitmproxy import ctx, http

from .. import resign
from ..config import Config
from ..errors import NeverForward
from ..pipeline import mask_work
from ..providers.registry import Api

if TYPE_CHECKING:
    from .addon import Disguise

log = logging.getLogger("disguise")

OPTION = "disguise_aws_resign"


@dataclass
class Signer:
    """How one flow's request is signed before it leaves."""

    auth: resign.ClientAuth
    credentials: object  # botocore ReadOnlyCredentials; never logged

    def apply(self, req: http.Request) -> None:
        """Sign req as it will be sent: its method, URL, headers and wire body."""
        headers = [(k, v) for k, v in req.headers.items(multi=True)]
        new = resign.resign(
            req.method, req.url, headers, req.raw_content or b"", self.credentials, self.auth  # type: ignore[arg-type]
        )
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


def mask_signed(d: Disguise, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes) -> Awaitable[None] | None:
    """A request whose body the client signed: masked only when the proxy can sign it
    again (SigV4 and the option on, credentials found), or when nothing signs the body
    (a bearer API key, no Authorization); refused otherwise, even with
    disguise_fail_open. The Guard signs it, after the leak check."""
    try:
        auth = client_auth(flow)
        if auth.kind == resign.SIGV4 and not ctx.options.disguise_aws_resign:
            raise refused_off()
    except NeverForward as e:
        d._unmaskable(flow, api, e, fail_open=False)
        return None
    if auth.kind != resign.SIGV4:
        d._masked(flow, api, cfg, raw, mask_work(raw, api, cfg))
        return None
    return _mask_and_sign(d, flow, api, cfg, raw, auth)


async def _mask_and_sign(d: Disguise, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes,
                         auth: resign.ClientAuth) -> None:  # fmt: skip
    try:  # credentials may come from a process, SSO or the instance metadata service
        creds, why = await asyncio.to_thread(d.aws.get)
        result = await asyncio.to_thread(mask_work, raw, api, cfg) if creds is not None else None
    except Exception as e:  # noqa: BLE001 - the thread machinery failing
        creds, why, result = None, f"internal error ({type(e).__name__})", None
    if creds is None:
        d._unmaskable(flow, api, refused_no_credentials(why), fail_open=False)
        return
    d._masked(flow, api, cfg, raw, result)
    st = d.guard.flows.get(flow.id)
    if st is not None and flow.response is None:
        st.signer = Signer(auth, creds)
