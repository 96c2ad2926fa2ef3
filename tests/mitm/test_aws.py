"""AWS Bedrock in the adapter (mitm/aws.py): a SigV4-signed request is masked only when the
proxy may sign it again, and then signed over exactly the bytes that leave; refusals say
why and never name a key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from mitmproxy.test import taddons, tflow

from aws_util import check_sigv4
from disguiselib import resign
from disguiselib.errors import NeverForward
from disguiselib.mitm import aws
from disguiselib.mitm.addon import Disguise
from disguiselib.state import FlowRecord, Kind, Phase

CLIENT = ReadOnlyCredentials("AKIDCLIENT", "client-secret", "client-token")
PROXY = ReadOnlyCredentials("ASIAPROXY", "proxy-secret", "proxy-token")
URL = "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-x-v1%3A0/invoke"
BODY = b'{"anthropic_version": "bedrock-2023-05-31", "messages": [{"role": "user", "content": "Acme Corp"}]}'


def signed_flow(body: bytes = BODY, bearer: bool = False):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.url = URL
    f.request.content = body
    if bearer:
        f.request.headers["authorization"] = "Bearer ABSKkey"
        return f
    req = AWSRequest("POST", URL, data=body, headers={"content-type": "application/json",
                                                     "host": "bedrock-runtime.eu-west-3.amazonaws.com"})  # fmt: skip
    SigV4Auth(CLIENT, "bedrock", "eu-west-3").add_auth(req)
    for k, v in req.headers.items():
        f.request.headers[k] = v
    return f


def test_client_auth_tells_sigv4_from_bearer() -> None:
    assert aws.client_auth(signed_flow()).kind == resign.SIGV4
    assert aws.client_auth(signed_flow(bearer=True)).kind == resign.BEARER


def test_the_signer_signs_exactly_the_bytes_that_leave() -> None:
    f = signed_flow()
    s = aws.Signer(aws.client_auth(f), PROXY)
    f.request.content = BODY.replace(b"Acme Corp", b"Zenith Labs")  # as masked
    s.apply(f.request)
    headers = {k.lower(): v for k, v in f.request.headers.items(multi=True)}
    assert check_sigv4("POST", f.request.url, headers, f.request.raw_content, PROXY) is None
    assert check_sigv4("POST", f.request.url, headers, BODY, PROXY) is not None  # not over the client's body
    assert "AKIDCLIENT" not in f.request.headers["authorization"]


def test_refusals_say_why_and_name_the_option() -> None:
    off = aws.refused_off()
    assert isinstance(off, NeverForward) and "disguise_aws_resign is off" in str(off)
    none = aws.refused_no_credentials("no AWS credentials were found")
    assert "no AWS credentials were found" in str(none) and "not forwarded" in str(none)


def test_credentials_are_looked_up_and_said_once(monkeypatch, caplog) -> None:
    c = aws.Credentials()
    monkeypatch.setattr(c.identity, "get", lambda: (None, "no AWS credentials were found"))
    with caplog.at_level(logging.INFO, logger="disguise"):
        assert c.get() == (None, "no AWS credentials were found")
        c.get()
    assert caplog.text.count("signed Bedrock requests are refused") == 1


class _D:
    """What mask_signed uses of the Disguise addon."""

    def __init__(self, creds) -> None:
        self.aws = aws.Credentials()
        self.aws.get = lambda: (creds, "no AWS credentials were found")  # type: ignore[method-assign]
        self.masked: list = []
        self.refused: list = []

    def _mask(self, flow, rec):
        self.masked.append(flow)
        rec.to(Phase.MASKED)
        return None

    def _unmaskable(self, flow, rec, e, fail_open=True):
        self.refused.append((str(e), fail_open))


def _rec() -> FlowRecord:
    return FlowRecord(Kind.API, ("POST", "https", "h", 443, "/"))


@pytest.mark.parametrize(("option", "creds", "want"), [(False, PROXY, "refused"), (True, None, "refused"),
                                                       (True, PROXY, "signed")])  # fmt: skip
def test_mask_signed_masks_only_what_the_proxy_can_sign_again(tmp_path: Path, option, creds, want) -> None:
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            tctx.configure(a, disguise_aws_resign=option)
            d, f, rec = _D(creds), signed_flow(), _rec()
            later = aws.mask_signed(d, f, rec)
            if later is not None:
                tctx.master.event_loop.run_until_complete(later)
            if want == "refused":
                assert d.masked == [] and len(d.refused) == 1 and d.refused[0][1] is False  # not even fail-open
            else:
                assert d.masked == [f] and isinstance(rec.signer, aws.Signer) and rec.signer.credentials is PROXY
            bearer = _D(None)
            assert aws.mask_signed(bearer, signed_flow(bearer=True), _rec()) is None and len(bearer.masked) == 1
        finally:
            tctx.master.event_loop.close()


def test_a_signed_request_that_would_stream_is_stopped() -> None:
    f, rec = signed_flow(), _rec()
    aws.stop_streamed(f, rec)
    assert f.error is not None and rec.phase is Phase.REFUSED and "cannot be re-signed" in (rec.reason or "")
