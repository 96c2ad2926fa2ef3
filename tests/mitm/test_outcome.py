"""What the pipeline said, applied to a flow (mitm/outcome.py): one function for a body
masked in the request hook and one taken whole from mitmproxy's stream; the verdicts
are plain data (a worker process can send them back)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from mitmproxy.test import taddons, tflow

from disguiselib import pipeline
from disguiselib.apis import registry
from disguiselib.config import build_config
from disguiselib.errors import LeakError, MaskError, NeverForward
from disguiselib.mitm import outcome
from disguiselib.mitm.addon import Disguise
from disguiselib.pipeline import NotOurs, Refusal, Refused
from disguiselib.state import FlowRecord, Kind, Passed, Phase

BODY = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp"}]}).encode()


@pytest.fixture
def ctx(tmp_path: Path):
    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(tmp_path / "m.yaml")], False, [])
    with taddons.context(Disguise()) as tctx:
        try:
            yield cfg, tctx
        finally:
            tctx.master.event_loop.close()


def flow_and_record(cfg):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", "/v1/messages", "api.anthropic.com"
    f.request.content = BODY
    rec = FlowRecord(Kind.API, ("POST", "https", "api.anthropic.com", 443, "/v1/messages"), cfg,
                     registry.ANTHROPIC_MESSAGES)  # fmt: skip
    return f, rec


def test_verdicts_are_plain_data_that_pickle(ctx) -> None:
    cfg, _ = ctx
    api = registry.ANTHROPIC_MESSAGES
    m = pipeline.mask_request(api, BODY, cfg, "/v1/messages", [])
    assert isinstance(m, pipeline.Masked)
    back = pickle.loads(pickle.dumps(m))
    assert back.body == m.body and back.session.placeholders == m.session.placeholders == {}
    assert b"Zenith Labs" in back.body and back.session.counts == {"literals": 1}
    for v in (pipeline.mask_request(api, b"{not json", cfg, "/v1/messages", []),
              pipeline.mask_request(api, BODY, cfg, "/v1/messages?u=Acme%20Corp", []),
              NotOurs("a file upload that is no batch")):  # fmt: skip
        assert pickle.loads(pickle.dumps(v)) == v
    assert pipeline.mask_request(api, BODY, cfg, "/v1/messages?u=Acme Corp", []).refusal is Refusal.LEAK


def test_an_internal_error_is_a_refusal_that_never_fails_open(ctx, monkeypatch) -> None:
    cfg, _ = ctx

    def boom(*a, **k):
        raise KeyError("Acme Corp")

    monkeypatch.setattr(pipeline, "mask_request_body", boom)
    v = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, BODY, cfg, "/v1/messages", [])
    assert v == Refused("internal error (KeyError)", Refusal.INTERNAL) and not v.may_fail_open


@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize(
    ("verdict", "error"),
    [
        (Refused("cannot parse", Refusal.UNMASKABLE), MaskError),
        (Refused("an original (literal in body) would have left unmasked", Refusal.LEAK), LeakError),
        (Refused("signed", Refusal.NEVER), NeverForward),
        (Refused("internal error (KeyError)", Refusal.INTERNAL), MaskError),
    ],
)
def test_live_and_streamed_agree(ctx, verdict: Refused, error: type, fail_open: bool) -> None:
    """The same verdict gives the same record, whichever way the body came: forwarded as
    it came (fail-open, only for a body that could not be masked), or refused."""
    cfg, tctx = ctx
    tctx.options.disguise_fail_open = fail_open
    live, rec = flow_and_record(cfg)
    assert outcome.apply(live, rec, BODY, verdict, lambda: None) is None
    streamed, srec = flow_and_record(cfg)
    opened = fail_open and verdict.refusal is Refusal.UNMASKABLE
    if opened:
        assert outcome.apply(streamed, srec, BODY, verdict, lambda: None, streamed=True) is None
    else:
        with pytest.raises(error, match=verdict.reason.replace("(", r"\(").replace(")", r"\)")):
            outcome.apply(streamed, srec, BODY, verdict, lambda: None, streamed=True)
    if opened:
        for r in (rec, srec):
            assert r.phase is Phase.PASSED and r.passed is Passed.FAIL_OPEN and r.reason == verdict.reason
        assert live.response is None and live.request.content == BODY
    else:
        assert rec.phase is Phase.REFUSED and live.response is not None and live.response.status_code == 400
        assert srec.phase is Phase.CLASSIFIED  # the adapter replaces upstream's answer (Disguise._request)


def test_masked_and_not_ours(ctx) -> None:
    cfg, _ = ctx
    f, rec = flow_and_record(cfg)
    seen: list = []
    rec.observer = lambda r: seen.append((r.phase, r.client_body))
    m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, BODY, cfg, "/v1/messages", [])
    assert outcome.apply(f, rec, BODY, m, lambda: None) == m.body
    assert rec.phase is Phase.MASKED and b"Zenith Labs" in f.request.content and rec.checked_body == f.request.raw_content
    assert seen == [(Phase.MASKED, BODY)] and rec.restorer is not None
    assert rec.client_body is None  # its observers kept it: the record lets go of the copy
    f, rec = flow_and_record(cfg)
    called = []
    assert outcome.apply(f, rec, BODY, NotOurs("x"), lambda: called.append(1) or b"raw", streamed=True) == b"raw"
    assert called == [1] and rec.kind is Kind.UNKNOWN and rec.api is None
