"""The Guard (mitm/guard.py): last in the chain, once per process; refuses what no working
Disguise handled, closes a body that would stream past the addon, rechecks what leaves."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

import pytest
from mitmproxy import flow as mflow
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.http import Headers
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import taddons, tflow, tutils

from disguiselib.inspect.record import META
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.guard import GONE, Guard
from disguiselib.pipeline import OFF_LOOP_BYTES
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


# --- what each refusal says, and the Guard's part in a flow's life (mutation survivors) ---

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
WHY = "no valid disguise configuration is active (see the error logged above)"


@contextlib.contextmanager
def configured(tmp_path: Path, **opts):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_defaults=False, **opts)
        yield a, tctx


def errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def failed(f) -> str:
    """What mitmweb, `disguise show` and the flow list say of the flow."""
    return f.metadata[META]["failed"]


def masked(a: Disguise, body: bytes = BODY, path: str = "/v1/messages", host: str = "api.anthropic.com", tctx=None):
    f = flow(path, host, body)
    f.request.headers["content-type"] = "application/json"
    f.live = tctx is not None  # a large body is masked off the loop only in a live flow
    a.requestheaders(f)
    a.guard.requestheaders(f)
    pending = a.request(f)
    if pending is not None:
        tctx.master.event_loop.run_until_complete(pending)
    return f


def test_a_stream_risk_no_disguise_handled_is_logged_by_its_place_never_its_text(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, tctx):
        tctx.options.update(stream_large_bodies="1k")
        f = flow("/v1/files/Acme%20Corp", body=None)
        f.request.headers.pop("content-length", None)
        a.guard.requestheaders(f)  # Disguise's own hook never ran for it
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE
        assert errors(caplog) == [f"disguise: POST /v1/files/<original>: {WHY} (connection closed)"]
        assert failed(f) == f"request refused: {WHY} (connection closed)"


def test_a_request_no_disguise_handled_is_logged_by_its_place_and_host(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, _):
        f = flow("/v1/files/Acme%20Corp", body=b"{}")
        a.guard.request(f)
        assert f.response is not None and f.response.status_code == 503
        assert errors(caplog) == [f"disguise: request refused: {WHY} (POST /v1/files/<original> on api.anthropic.com)"]
        assert failed(f) == f"request refused: {WHY}"


def test_the_web_ui_refusal_says_what_it_closed(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, tctx):
        tctx.options.add_option("web_port", int, 8081, "")
        tctx.options.add_option("web_host", str, "127.0.0.1", "")
        f = tflow.tflow()
        f.request.host, f.request.port, f.request.path = "127.0.0.1", 8081, "/flows"
        a.guard.requestheaders(f)
        assert f.error is not None
        assert errors(caplog) == [
            "disguise: a request through the proxy for mitmweb's own web UI was refused (connection closed)"
        ]
        assert failed(f) == "request refused: mitmweb's web UI is not reachable through the proxy (connection closed)"


def test_streaming_switched_on_after_disguise_is_closed_and_says_so(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, _):
        f = flow()
        a.requestheaders(f)
        f.request.stream = True  # another addon, after the script
        a.guard.requestheaders(f)
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE
        assert errors(caplog) == ["disguise: api: the request body would be streamed unmasked (connection closed)"]
        assert failed(f) == "request refused: the request body would be streamed unmasked (connection closed)"


def test_a_streamed_body_disguise_already_closed_is_refused_once(tmp_path: Path, caplog) -> None:
    """A body mitmproxy would stream (stream_large_bodies) whose headers hold an original:
    Disguise's own hook closes the connection and says why. The Guard's hook after it
    did it again: a second line with another reason in the log ("the request body would
    be streamed unmasked"), and a 503 response set on the closed flow."""
    with configured(tmp_path) as (a, tctx):
        tctx.options.update(stream_large_bodies="1k")
        f = flow(body=None)
        f.request.headers["content-type"] = "application/json"
        f.request.headers["content-length"] = "6000"
        f.request.headers["x-note"] = "Acme Corp"
        f.request.stream = True  # mitmproxy's own StreamBodies, before the scripts
        a.requestheaders(f)
        a.guard.requestheaders(f)
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE and f.response is None
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "refused" in r.getMessage()]
        assert said == ["disguise: request refused (connection closed): POST /v1/messages: an original (literal in "
                        "header x-note) would have left unmasked"], said  # fmt: skip
        assert failed(f) == "request refused: POST /v1/messages: an original (literal in header x-note) would have left unmasked"


def test_a_flow_disguise_handled_passes_every_guard_hook_and_is_forgotten_at_its_end(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a)
        assert f.error is None and f.response is None
        g.request(f)
        assert f.response is None and b"Zenith Labs" in f.request.content and b"Acme" not in f.request.content
        f.response = tutils.tresp(content=b'{"content": [{"type": "text", "text": "Zenith Labs"}]}')
        f.response.headers["content-type"] = "application/json"
        a.responseheaders(f)
        g.responseheaders(f)
        assert f.response.status_code == 200
        a.response(f)
        g.response(f)
        assert f.response.status_code == 200 and b"Acme Corp" in f.response.content
        assert f.id not in g.records


def test_hooks_for_a_flow_the_guard_never_recorded_change_nothing(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = tflow.tflow(resp=True)  # GET http://address:22/path, answered: not ours
        before = f.response.content
        g.request(f)
        g.responseheaders(f)
        g.response(f)
        g.error(f)
        g.websocket_end(f)
        assert f.response.content == before and f.response.status_code == 200 and not f.marked
        ws = tflow.twebsocketflow()  # a WebSocket not ours
        g.response(ws)
        g.websocket_message(ws)
        assert not any(m.dropped for m in ws.websocket.messages)


def test_a_masked_request_answered_by_a_later_addon_is_still_restored(tmp_path: Path) -> None:
    """A later addon (server-side replay, a mock) answers the masked request before the
    Guard: the answer holds placeholders and is restored all the same."""
    with configured(tmp_path) as (a, _):
        f = masked(a)
        f.response = tutils.tresp(content=b'{"content": [{"type": "text", "text": "Zenith Labs"}]}')
        f.response.headers["content-type"] = "application/json"
        a.guard.request(f)
        a.response(f)
        a.guard.response(f)
        assert b"Acme Corp" in f.response.content and b"Zenith" not in f.response.content


def test_a_request_disguise_refused_is_forgotten_and_its_refusal_kept(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a, b"{not json")
        assert f.response is not None and f.response.status_code == 400
        refusal = f.response.content
        g.request(f)
        assert f.id not in g.records
        a.response(f)
        g.response(f)
        assert f.response.content == refusal


def test_a_request_whose_script_went_away_on_an_unprotected_host_is_let_through(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        f = flow("/index.html", "example.com", b"hello")
        a.requestheaders(f)  # not protected: Disguise skips it; its request hook never runs
        a.guard.request(f)
        assert f.response is None


def test_a_host_from_disguise_hosts_is_protected_by_the_guard_too(tmp_path: Path, caplog) -> None:
    """A host only disguise_hosts names (no LLM path, no known provider host): the Guard
    protects it as Disguise does."""
    with configured(tmp_path, disguise_hosts=["llm.internal"]) as (a, tctx):
        g = a.guard

        def internal(body: bytes | None):
            f = flow("/status", "llm.internal", body)
            f.request.port = 443
            return f

        f = internal(b"{}")
        g.request(f)  # no Disguise hook ran
        assert f.response is not None and f.response.status_code == 503
        tctx.options.update(stream_large_bodies="1k")
        f = internal(None)
        f.request.headers.pop("content-length", None)
        g.requestheaders(f)
        assert f.error is not None
        other = flow("/status", "example.com", None)  # not protected: left alone
        other.request.headers.pop("content-length", None)
        g.requestheaders(other)
        g.request(other)
        assert other.error is None and other.response is None
        # a request let through as not ours, rewritten to that host by a later addon
        f = flow("/index.html", "example.com", b"hello")
        a.requestheaders(f)
        a.request(f)
        rec = g.records[f.id]
        f.request.host, f.request.port, f.request.path = "llm.internal", 443, "/status"
        g.request(f)
        assert f.response is not None and b"rewritten" in f.response.content
        msg = "disguise: request refused: its target was rewritten to a protected endpoint after masking"
        assert msg in errors(caplog) and failed(f) == msg.removeprefix("disguise: ")
        assert rec.phase is Phase.REFUSED and f.id not in g.records


def test_a_flow_that_errors_is_forgotten(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        f = masked(a)
        assert f.id in a.guard.records
        a.guard.error(f)
        assert f.id not in a.guard.records


def test_the_guard_joins_the_chain_even_when_registering_it_fails(monkeypatch) -> None:
    """Registering runs the other addons' deferred options; one of them may be bad: the
    Guard is in the chain, and found by name, all the same."""
    from mitmproxy import exceptions

    with context() as tctx:
        def bad(*addons):
            raise exceptions.OptionsError("another addon's option")

        monkeypatch.setattr(tctx.master.addons, "add", bad)
        g = Guard.install(tctx.master)
        assert tctx.master.addons.chain[-1] is g and tctx.master.addons.get("disguise_guard") is g
        assert sum(isinstance(x, Guard) for x in tctx.master.addons.chain) == 1


def test_a_fail_open_flow_passes_the_guard_as_it_is(tmp_path: Path) -> None:
    with configured(tmp_path, disguise_fail_open=True) as (a, _):
        f = masked(a, b"{not json")
        assert f.response is None
        a.guard.request(f)
        assert f.response is None and f.request.content == b"{not json"


def test_a_leak_guard_refusal_is_final_and_says_which_rule(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a)
        rec = g.records[f.id]
        f.request.content = f.request.content.replace(b"Zenith Labs", b"Acme Corp")  # another addon
        g.request(f)
        msg = "disguise: request refused by the leak guard: an original (literal in body $.messages[0].content) would have left unmasked"
        assert json.loads(f.response.content)["error"]["message"] == msg
        assert errors(caplog) == [msg] and failed(f) == msg.removeprefix("disguise: ")
        assert rec.phase is Phase.REFUSED and rec.reason == msg.removeprefix("disguise: ")  # what metrics count
        assert f.id not in g.records
        a.response(f)
        g.response(f)  # the response hooks leave the refusal as it is
        assert json.loads(f.response.content)["error"]["message"] == msg


def test_the_recheck_does_not_refuse_what_the_masker_produced(tmp_path: Path) -> None:
    """A later addon changes another part of a masked body: the Guard scans it again
    with the flow's own placeholders known (a realistic fake e-mail is not an e-mail to
    refuse) and through the API's table (a field the table exempts is not looked at)."""
    key = tmp_path / "fakes.key"
    with configured(tmp_path, disguise_fakes=True, disguise_fakes_key=str(key)) as (a, _):
        body = json.dumps({"model": "carol@corp.example.com", "temperature": 1,
                           "messages": [{"role": "user", "content": "bob@corp.example.com"}]}).encode()  # fmt: skip
        f = masked(a, body, "/v1/chat/completions")
        assert f.response is None
        assert b"bob@corp" not in f.request.content and b"carol@corp" in f.request.content
        assert b"@" in json.loads(f.request.content)["messages"][0]["content"].encode()  # a fake e-mail
        f.request.content = f.request.content.replace(b'"temperature": 1', b'"temperature": 0.5')  # another addon
        a.guard.request(f)
        assert f.response is None


@pytest.mark.parametrize("coding", ["gzip", "x-unknown"])
def test_a_changed_body_that_cannot_be_decoded_is_refused(tmp_path: Path, coding: str) -> None:
    """Another addon labels the masked body with a coding it does not have (or one nobody
    decodes): its coded bytes are never scanned as they stand; it is refused, even when
    the bytes as sent hold no original."""
    with configured(tmp_path) as (a, _):
        f = masked(a)
        clean = f.request.content.replace(b"Zenith Labs", b"Zenith Lab")
        f.request.headers["content-encoding"] = coding
        f.request.raw_content = clean
        a.guard.request(f)
        assert f.response is not None
        assert b"changed after masking and cannot be read" in f.response.content


def test_a_recheck_that_fails_names_the_error_not_the_text(tmp_path: Path, monkeypatch) -> None:
    from disguiselib.mitm import guard as guard_mod

    with configured(tmp_path) as (a, _):
        f = masked(a)
        f.request.content = f.request.content.replace(b"Zenith Labs", b"Zenith Lab")

        def broken(*args, **kw):
            raise RecursionError("Acme Corp")

        monkeypatch.setattr(guard_mod, "leak_scan", broken)
        a.guard.request(f)
        assert json.loads(f.response.content)["error"]["message"] == (
            "disguise: request refused by the leak guard: an original (internal error in RecursionError) "
            "would have left unmasked"
        )


@pytest.mark.parametrize("leak", [True, False])
def test_a_large_changed_body_is_rechecked_off_the_loop(tmp_path: Path, leak: bool) -> None:
    with configured(tmp_path) as (a, tctx):
        g = a.guard
        filler = "x " * OFF_LOOP_BYTES
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp " + filler}]})
        f = masked(a, body.encode(), tctx=tctx)
        assert f.response is None
        rec = g.records[f.id]
        signed = []
        rec.signer = type("S", (), {"apply": lambda self, req: signed.append(req)})()
        changed = f.request.content.replace(b"Zenith Labs", b"Acme Corp" if leak else b"Zenith Labs ")
        f.request.content = changed
        pending = g.request(f)
        assert asyncio.iscoroutine(pending)
        tctx.master.event_loop.run_until_complete(pending)
        if leak:
            assert f.response is not None and b"literal in body $.messages[0].content" in f.response.content
            assert rec.phase is Phase.REFUSED and signed == []
        else:
            assert f.response is None and signed == [f.request]


def test_a_scan_off_the_loop_that_fails_refuses(tmp_path: Path, monkeypatch) -> None:
    from disguiselib.mitm import guard as guard_mod

    with configured(tmp_path) as (a, tctx):
        f = masked(a, json.dumps({"model": "m", "max_tokens": 5,
                                  "messages": [{"role": "user", "content": "y " * OFF_LOOP_BYTES}]}).encode(), tctx=tctx)  # fmt: skip
        f.request.content = f.request.content.replace(b'"max_tokens": 5', b'"max_tokens": 6')

        def broken(*args, **kw):
            raise RecursionError("Acme Corp")

        monkeypatch.setattr(guard_mod, "leak_scan", broken)
        tctx.master.event_loop.run_until_complete(a.guard.request(f))
        assert json.loads(f.response.content)["error"]["message"] == (
            "disguise: request refused by the leak guard: an original (internal error in RecursionError) "
            "would have left unmasked"
        )


def test_the_checked_request_is_signed_last_and_a_signing_failure_refuses(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a)
        signed = []
        g.records[f.id].signer = type("S", (), {"apply": lambda self, req: signed.append(req)})()
        g.request(f)
        assert f.response is None and signed == [f.request]

        class Broken:
            def apply(self, req) -> None:
                raise RuntimeError("AKIDSECRET")

        f = masked(a)
        rec = g.records[f.id]
        rec.signer = Broken()
        g.request(f)
        msg = "disguise: request refused: it could not be signed again (RuntimeError)"
        assert f.response is not None and json.loads(f.response.content)["error"]["message"] == msg
        assert errors(caplog) == ["disguise: re-signing: internal error (RuntimeError)"]
        assert rec.phase is Phase.REFUSED and rec.reason == msg.removeprefix("disguise: ")
        assert f.id not in g.records and "AKIDSECRET" not in f.response.text


def test_a_response_no_disguise_restored_says_why_in_the_flow(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a)
        g.request(f)
        f.response = tutils.tresp(content=b'{"content": "Zenith Labs"}')
        g.responseheaders(f)  # Disguise's hooks never run (its script went away)
        assert failed(f) == GONE
        f2 = masked(a)
        g.request(f2)
        f2.response = tutils.tresp(content=b'{"content": "Zenith Labs"}')
        g.response(f2)
        assert failed(f2) == GONE


def test_a_websocket_message_no_disguise_handled_is_dropped_and_said_once(tmp_path: Path, caplog) -> None:
    """A realtime connection whose script went away: its messages can be neither masked
    nor restored, so none is forwarded; the error is logged once per connection. A
    message Disguise handled passes."""
    from mitmproxy import websocket as mws

    with configured(tmp_path) as (a, tctx):
        def inject(flow: mflow.Flow, to_client: bool, message: bytes, is_text: bool = True) -> None:
            pass

        tctx.master.commands.add("inject.websocket", inject)
        g = a.guard
        f = tflow.twebsocketflow(messages=False)
        f.request.method, f.request.host, f.request.path = "GET", "api.openai.com", "/v1/realtime?model=gpt-realtime"
        f.request.headers["upgrade"] = "websocket"
        f.response = None
        a.requestheaders(f)
        a.request(f)
        f.response = tutils.tresp(status_code=101)
        a.responseheaders(f)
        g.responseheaders(f)
        assert g.records[f.id].phase is Phase.STREAMING
        ok = mws.WebSocketMessage(1, True, b'{"type": "input_audio_buffer.commit"}')
        f.websocket.messages.append(ok)
        a.websocket_message(f)
        g.websocket_message(f)
        assert not ok.dropped
        g.response(f)  # a realtime connection's record lives until the WebSocket ends
        assert f.id in g.records
        sent = []
        for text in (b'{"type": "a"}', b'{"type": "b"}'):
            m = mws.WebSocketMessage(1, True, text)
            f.websocket.messages.append(m)
            g.websocket_message(f)  # Disguise's hook never ran
            sent.append(m)
        assert all(m.dropped for m in sent)
        assert errors(caplog) == ["disguise: WebSocket message dropped: the disguise addon is no longer loaded"]
        g.websocket_end(f)
        assert f.id not in g.records
        f.live = False  # a replayed or ended flow: nothing to drop
        g.websocket_message(f)


# -- request trailers (HTTP/2; chunked HTTP/1.1): mitmproxy sends them after the request hook --------


def _trailers(f, value: str) -> None:
    f.request.trailers = Headers([(b"x-org", value.encode())])


def test_a_trailer_holding_an_original_is_dropped_and_the_request_refused(tmp_path: Path, caplog) -> None:
    with configured(tmp_path) as (a, _):
        g = a.guard
        f = masked(a)
        rec = g.records[f.id]
        _trailers(f, "Acme Corp")
        g.request(f)
        msg = "disguise: request refused by the leak guard: an original (literal in trailer x-org) would have left unmasked"
        assert f.response is not None and json.loads(f.response.content)["error"]["message"] == msg
        assert f.request.trailers is None and errors(caplog) == [msg]
        assert rec.phase is Phase.REFUSED and f.id not in g.records


def test_a_clean_trailer_leaves_as_it_came(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        f = masked(a)
        _trailers(f, "Zenith Labs, 7")
        a.guard.request(f)
        assert f.response is None and f.request.trailers is not None and f.request.trailers["x-org"] == "Zenith Labs, 7"


def test_a_trailer_after_a_streamed_body_closes_the_connection(tmp_path: Path, caplog) -> None:
    """Its headers and body went already (mitmproxy streamed them): a response now would
    break mitmproxy's HTTP layer; the trailers are dropped and the connection closed."""
    with configured(tmp_path) as (a, tctx):
        tctx.options.update(stream_large_bodies="1k")
        f = flow(body=None)
        f.request.headers["content-type"] = "application/json"
        f.request.headers["content-length"] = "6000"
        f.request.stream = True
        a.requestheaders(f)
        a.guard.requestheaders(f)
        assert f.error is None and f.request.stream
        rec = a.guard.records[f.id]
        _trailers(f, "Acme Corp")
        a.guard.request(f)
        assert f.request.trailers is None and f.response is None
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE
        assert "literal in trailer x-org" in failed(f) and rec.phase is Phase.REFUSED


def test_an_unprotected_flows_trailers_are_not_ours(tmp_path: Path) -> None:
    with configured(tmp_path) as (a, _):
        f = flow("/health", "example.com", b"{}")
        a.requestheaders(f)
        a.request(f)
        _trailers(f, "Acme Corp")
        a.guard.request(f)
        assert f.response is None and f.request.trailers is not None


@pytest.mark.parametrize("allowed", [False, True])
def test_a_trailer_of_an_unknown_endpoint_follows_disguise_allow_unknown(tmp_path: Path, caplog, allowed: bool) -> None:
    with configured(tmp_path, disguise_allow_unknown=allowed) as (a, _):
        f = flow("/v1/batches", body=b"{}")
        a.requestheaders(f)
        a.request(f)
        assert f.response is None
        _trailers(f, "Acme Corp")
        a.guard.request(f)
        assert (f.response is None and f.request.trailers is not None) is allowed
    assert "literal in trailer x-org" in caplog.text
    assert ("forwarded (disguise_allow_unknown)" in caplog.text) is allowed


def _ended(tctx, f) -> None:  # noqa: ANN001
    """mitmproxy's error hook, as its chain runs it (the Guard's first addon first)."""
    from mitmproxy.proxy.layers.http import HttpErrorHook

    tctx.master.addons.trigger(HttpErrorHook(f))


def test_the_guards_look_at_an_error_is_first_in_mitmproxys_chain(tmp_path: Path) -> None:
    """Before any other addon's error hook (mitmdump's Dumper prints the flow's line in its
    own), and once however often the Guard is looked up (a script reload)."""
    with configured(tmp_path) as (a, tctx):
        assert type(tctx.master.addons.chain[0]).__name__ == "_First"
        assert tctx.master.addons.chain[0].guard is a.guard and Guard.install(tctx.master) is a.guard
        assert sum(type(x).__name__ == "_First" for x in tctx.master.addons.chain) == 1


def test_a_flow_ending_in_an_error_before_its_request_left_has_its_url_and_error_withheld(tmp_path: Path) -> None:
    """What mitmdump's line for a flow that ends in an error prints (the Guard's look comes
    before the Dumper's hook): its URL where the request never left (the client gave up
    during its body: requestheaders ran, the request hook never did), its error's message
    always (an HTTP/2 protocol error quoting a header of another stream)."""
    with configured(tmp_path) as (a, tctx):
        f = flow("/v1/messages?org=Acme%20Corp")
        a.requestheaders(f)
        a.guard.requestheaders(f)
        f.error = mflow.Error("HTTP/2 protocol error: Received header value surrounded by whitespace b' Acme Corp '")
        _ended(tctx, f)
        assert f.request.path == "/v1/messages?org=<original>"
        assert f.error.msg == "HTTP/2 protocol error: Received header value surrounded by whitespace b'<original>'"
        a.guard.error(f)
        assert f.id not in a.guard.records


def test_a_flow_ending_in_an_error_after_its_request_left_keeps_the_url_it_left_with(tmp_path: Path) -> None:
    with configured(tmp_path, disguise_allow_unknown=True) as (a, tctx):
        f = masked(a, b"{}", path="/v1/files?org=Acme%20Corp")  # forwarded as it came (disguise_allow_unknown)
        assert f.response is None
        f.error = mflow.Error("Client disconnected.")
        _ended(tctx, f)
        assert f.request.path == "/v1/files?org=Acme%20Corp" and f.error.msg == "Client disconnected."


def test_an_unprotected_flow_ending_in_an_error_keeps_its_url(tmp_path: Path) -> None:
    with configured(tmp_path, disguise_hosts=["api.anthropic.com"]) as (a, tctx):
        f = flow("/search?q=Acme%20Corp", host="example.org")
        a.requestheaders(f)
        f.error = mflow.Error("Client disconnected.")
        _ended(tctx, f)
        assert f.request.path == "/search?q=Acme%20Corp"
