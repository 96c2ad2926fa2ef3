"""The Guard (mitm/guard.py): last in the chain, once per process; refuses what no working
Disguise handled, closes a body that would stream past the addon, rechecks what leaves."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import taddons, tflow, tutils

from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.guard import GONE, Guard
from disguiselib.state import Phase

BODY = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp"}]}).encode()


@contextlib.contextmanager
def context(*addons):
    with taddons.context(Proxyserver(), *addons) as tctx:
        try:
            yield tctx
        finally:
            tctx.master.event_loop.close()


def flow(path: str = "/v1/messages", host: str = "api.anthropic.com", body: bytes | None = BODY, reverse: bool = False):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = path
    f.request.host = host
    if body is not None:
        f.request.content = body
    if reverse:
        f.client_conn.proxy_mode = ProxyMode.parse("reverse:https://upstream.example")
    return f


def broken_disguise(tctx) -> Disguise:
    """A Disguise with no valid rule set (a reloaded script whose configuration was
    refused, in a process where none was ever valid: mitmproxy runs it anyway)."""
    a = Disguise()
    tctx.master.addons.add(a)
    a.config = a.guard.config = None
    return a


def test_reverse_mode_without_a_valid_configuration_refuses_a_non_llm_path() -> None:
    """In reverse mode the upstream is the provider: without a valid rule set every
    request is refused, an LLM path or not (here: /health on an unknown host)."""
    with context() as tctx:
        a = broken_disguise(tctx)
        g = a.guard
        for f in (flow("/health", "upstream.example", b"{}", reverse=True),
                  flow("/v1/messages", "upstream.example", reverse=True)):  # fmt: skip
            a.requestheaders(f)
            g.requestheaders(f)
            a.request(f)
            g.request(f)
            assert f.response is not None and f.response.status_code == 503, f.request.path
            assert b"no valid disguise configuration" in f.response.content
        # the Guard alone (no Disguise hook ran) decides the same
        f = flow("/health", "upstream.example", b"{}", reverse=True)
        g.request(f)
        assert f.response is not None and f.response.status_code == 503
        # not reverse mode, not an LLM path, not a known host: not ours to refuse
        f = flow("/health", "upstream.example", b"{}")
        a.requestheaders(f)
        a.request(f)
        g.request(f)
        assert f.response is None


def test_a_flow_recorded_at_requestheaders_whose_request_hook_never_ran_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("literals: {Acme Corp: Zenith Labs}")
    a = Disguise()
    with context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
        g = a.guard
        f = flow()
        a.requestheaders(f)  # the record exists; Disguise.request never runs (its script went away)
        g.requestheaders(f)
        g.request(f)
        assert f.response is not None and f.response.status_code == 503
        assert json.loads(f.response.content)["type"] == "error"
        assert f.id not in g.records
        # the same flow with its request hook: masked, and let through
        f = flow()
        a.requestheaders(f)
        a.request(f)
        g.request(f)
        assert f.response is None and b"Zenith Labs" in f.request.content
        assert g.records[f.id].phase is Phase.MASKED


@pytest.mark.parametrize("length", [None, "5000"])
def test_stream_large_bodies_without_a_disguise_kills_a_protected_request_at_requestheaders(length) -> None:
    """No Disguise loaded (only the Guard, as after a script was dropped) and mitmproxy
    would stream the body upstream as it arrives: the connection is closed before any
    byte goes (a refusal cannot be sent while the request streams)."""
    g = Guard()
    with context(g) as tctx:
        tctx.options.update(stream_large_bodies="1k")
        f = flow(body=None)
        f.request.headers.pop("content-length", None)
        if length is None:
            f.request.headers["transfer-encoding"] = "chunked"
        else:
            f.request.headers["content-length"] = length
        g.requestheaders(f)
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE
        # a short body with its length known does not stream: left to the request hook
        small = flow()
        g.requestheaders(small)
        assert small.error is None
        # a request that is not protected is not touched
        other = tflow.tflow()
        other.request.headers.pop("content-length", None)
        g.requestheaders(other)
        assert other.error is None


def test_a_replayed_flow_that_cannot_be_killed_is_refused_instead() -> None:
    g = Guard()
    with context(g) as tctx:
        tctx.options.update(stream_large_bodies="1k")
        f = flow(body=None)
        f.request.headers.pop("content-length", None)
        f.live = False  # not killable
        g.requestheaders(f)
        assert f.response is not None and f.response.status_code == 503 and f.request.stream is False


def test_one_guard_per_master_and_it_outlives_a_reload() -> None:
    with context() as tctx:
        g = Guard.install(tctx.master)
        assert Guard.install(tctx.master) is g
        assert sum(isinstance(x, Guard) for x in tctx.master.addons.chain) == 1
        assert tctx.master.addons.get("disguise_guard") is g


def test_a_response_no_disguise_restored_is_replaced_by_an_error(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("literals: {Acme Corp: Zenith Labs}")
    a = Disguise()
    with context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
        g = a.guard
        f = flow()
        a.requestheaders(f)
        a.request(f)
        g.request(f)
        f.response = tutils.tresp(content=b'{"content": [{"type": "text", "text": "Zenith Labs"}]}')
        f.response.headers["content-type"] = "application/json"
        # Disguise's response hooks never run (its script went away mid-flow)
        g.responseheaders(f)
        assert f.response.status_code == 502 and f.response.stream
        g.response(f)
        assert f.id not in g.records
        f2 = flow()
        a.requestheaders(f2)
        a.request(f2)
        f2.response = tutils.tresp(content=b'{"content": "Zenith Labs"}')
        g.response(f2)  # whole body, no Disguise restored it
        assert f2.response.status_code == 502 and GONE.encode() in f2.response.content
        assert b"Zenith Labs" not in f2.response.content
