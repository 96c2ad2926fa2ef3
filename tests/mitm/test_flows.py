"""Flow facts (mitm/flows.py): what a request is, whether it is protected without a
configuration, how a refusal or an error reaches the client in its provider's shape, and
the headers of a body whose length changes."""

from __future__ import annotations

import contextlib
import gzip
import json

import pytest
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import taddons, tflow, tutils

from disguiselib.apis import registry
from disguiselib.errors import MaskError
from disguiselib.inspect.record import FAILED_MARK
from disguiselib.mitm import flows
from disguiselib.mitm.callables import Refused
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from disguiselib.scope import parse_hosts
from strategies import RULES


@contextlib.contextmanager
def options(**opts):
    with taddons.context(Proxyserver()) as tctx:
        try:
            if opts:
                tctx.options.update(**opts)
            yield tctx
        finally:
            tctx.master.event_loop.close()


def req(path: str = "/v1/messages", host: str = "api.anthropic.com", method: str = "POST"):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = method, path, host
    return f


def test_facts_of_a_request() -> None:
    f = req()
    assert flows.target(f) == ("POST", "http", "api.anthropic.com", 22, "/v1/messages")
    assert not flows.reverse_mode(f) and not flows.websocket(f)
    f.client_conn.proxy_mode = ProxyMode.parse("reverse:https://api.example")
    f.request.headers["upgrade"] = "WebSocket"
    assert flows.reverse_mode(f) and flows.websocket(f)


def test_fallback_protection_without_a_configuration() -> None:
    assert flows.fallback_protected(req(), ())  # an API path
    assert flows.fallback_protected(req("/v1/files", "example.com"), ())  # LLM-shaped
    assert flows.fallback_protected(req("/health", "api.openai.com"), ())  # a known host
    assert not flows.fallback_protected(req("/health", "example.com"), ())
    assert flows.fallback_protected(req("/health", "example.com"), parse_hosts(["example.com"]))
    f = req("/health", "example.com")
    f.client_conn.proxy_mode = ProxyMode.parse("reverse:https://example.com")
    assert flows.fallback_protected(f, ())


def test_errors_take_the_shape_of_the_provider_the_request_was_for() -> None:
    assert flows.error_api(req("/v1/responses")) is registry.OPENAI_RESPONSES
    assert flows.error_api(req("/something")) is registry.OPENAI_CHAT
    assert json.loads(flows.error_body_for(req(), "m"))["type"] == "error"
    assert json.loads(flows.error_body_for(req("/x/messages/y", "h"), "m"))["type"] == "error"  # Anthropic-like
    assert json.loads(flows.error_body_for(req("/x", "anthropic.example"), "m"))["type"] == "error"
    assert json.loads(flows.error_body_for(req("/x", "h"), "m"))["error"]["message"] == "m"  # OpenAI's shape
    g = json.loads(flows.error_body_for(req("/v1beta/models/g:generateContent", "h"), "m"))
    assert g["error"]["status"] == "INVALID_ARGUMENT"
    # the provider the host or the credential headers name (registry.error_body_for)
    assert json.loads(flows.error_body_for(req("/v1/models/x", "api.openai.com", "GET"), "m"))["error"]["type"]
    f = req("/v1/files", "127.0.0.1")
    f.request.headers["x-api-key"] = "k"
    assert json.loads(flows.error_body_for(f, "m"))["type"] == "error"  # Anthropic's, not OpenAI Files'


def test_refuse_answers_in_the_providers_shape_and_says_so() -> None:
    f = req()
    flows.refuse(f, "disguise: no", 400, rules=RULES)
    assert f.response is not None and f.response.status_code == 400
    assert f.response.headers["x-disguise"] == "refused"
    assert f.comment == "disguise unknown endpoint: FAILED CLOSED (request refused: no): never sent"
    assert f.marked == FAILED_MARK
    assert json.loads(f.response.content)["error"]["message"] == "disguise: no"
    f = req("/x", "h")
    flows.refuse(f, "m", 503, registry.GOOGLE_GEMINI, rules=RULES)
    assert json.loads(f.response.content)["error"]["status"] == "INVALID_ARGUMENT"


def test_stop_kills_a_live_flow_and_refuses_a_replayed_one() -> None:
    f = req()
    flows.stop(f, "why", rules=RULES)
    assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE
    f = req()
    f.live = False
    f.request.stream = True
    flows.stop(f, "why", rules=RULES)
    assert f.response is not None and f.response.status_code == 503 and f.request.stream is False
    assert b"request refused: why" in f.response.content


@pytest.mark.parametrize("path", ["/v1/x/Acme%20Corp/y?a=1", "/v1/messages?q=Acme+Corp", "/v1/models/Acme Corp"])
@pytest.mark.parametrize("how", ["refuse", "stop", "stop replayed"])
def test_a_refused_requests_url_is_withheld_where_it_holds_an_original(path: str, how: str) -> None:
    # mitmdump's flow line prints the flow's URL at the default log level after the
    # request hook; mitmweb's list and a saved flow show it too
    f = req(path)
    if how == "stop replayed":
        f.live = False
    if how == "refuse":
        flows.refuse(f, "m", 400, rules=RULES)
    else:
        flows.stop(f, "why", rules=RULES)
    assert "Acme" not in f.request.path and "Acme" not in f.request.url
    assert "<original>" in f.request.path and f.request.path.startswith("/v1/")


@pytest.mark.parametrize("how", ["refuse", "stop"])
def test_a_refused_requests_authority_host_and_method_are_withheld_where_they_hold_an_original(how: str) -> None:
    """What leaves of a request's head beside its path (an HTTP/2 :authority, an absolute-form
    target's, the Host header, the method) shows <original> where it holds one (mitmweb's
    list and a saved flow show the authority and the host; mitmdump's flow line, the method)."""
    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs", "KESTRELNINE": "FALCONFORTY"}}))
    f = req(method="KESTRELNINE")
    f.request.authority = "Acme Corp.example:443"
    f.request.headers["host"] = "Acme Corp.example"
    (flows.refuse(f, "m", 400, rules=rules) if how == "refuse" else flows.stop(f, "why", rules=rules))
    r = f.request
    assert "Acme" not in r.authority and "Acme" not in r.headers["host"] and "KESTREL" not in r.method
    assert "<original>" in r.authority and "<original>" in r.headers["host"] and r.method == "<ORIGINAL>"
    f = req()  # clean: as they came
    f.request.authority, f.request.headers["host"] = "api.anthropic.com", "api.anthropic.com"
    flows.refuse(f, "m", 400, rules=rules)
    assert (f.request.authority, f.request.headers["host"], f.request.method) == ("api.anthropic.com",) * 2 + ("POST",)


def test_the_headers_the_guard_reads_are_every_header_then_the_method_and_an_authority() -> None:
    f = req()
    f.request.headers["x-a"] = "1"
    assert flows.leaving_headers(f.request)[-2:] == [("x-a", "1"), (":method", "POST")]
    f.request.authority = "api.anthropic.com"
    assert flows.leaving_headers(f.request)[-2:] == [(":method", "POST"), (":authority", "api.anthropic.com")]
    assert ":method" not in f.request.headers and ":authority" not in f.request.headers  # (read, never written)


def test_a_refused_requests_clean_url_stays_and_without_rules_none_of_it_is_shown() -> None:
    f = req("/v1/messages?beta=true")
    flows.refuse(f, "m", 400, rules=RULES)
    assert f.request.path == "/v1/messages?beta=true"
    f = req("/v1/messages?beta=true")
    flows.refuse(f, "m", 400, rules=None)
    assert f.request.path == "/<not shown: no rules in force>"


def test_stream_risk_follows_stream_large_bodies_and_the_length() -> None:
    with options():
        f = req()
        assert not flows.stream_risk(f) and not flows.streams_large_bodies()
        f.request.stream = True
        assert flows.stream_risk(f)
    with options(stream_large_bodies="1k"):
        assert flows.streams_large_bodies()
        small = req()
        small.request.headers["content-length"] = "1024"
        assert not flows.stream_risk(small)
        big = req()
        big.request.headers["content-length"] = "1025"
        assert flows.stream_risk(big)
        unknown = req()
        del unknown.request.headers["content-length"]
        assert flows.stream_risk(unknown)  # chunked: its length is not known


def test_body_limit() -> None:
    with options():
        assert flows.body_limit() is None
    with options(body_size_limit="2k"):
        assert flows.body_limit() == 2048


def test_headers_of_a_body_whose_length_changes() -> None:
    r = tutils.tresp()
    r.headers["content-encoding"] = "gzip"
    flows.fix_headers(r)
    assert "content-length" not in r.headers and r.headers["transfer-encoding"] == "chunked"
    assert "content-encoding" not in r.headers
    r2 = tutils.tresp()
    r2.http_version = "HTTP/2.0"
    flows.chunked(r2)
    assert "content-length" not in r2.headers and "transfer-encoding" not in r2.headers


def test_decode_request() -> None:
    assert flows.decode_body(b"raw", "") == b"raw" and flows.decode_body(b"raw", " identity") == b"raw"
    assert flows.decode_body(gzip.compress(b"body"), "gzip") == b"body"
    with pytest.raises(MaskError, match="'gzip'"):
        flows.decode_body(b"not gzip", "gzip", RULES)
    with pytest.raises(MaskError, match="'<original>'"):  # client text: never quoted as it is (issue 27)
        flows.decode_body(b"not gzip", "Acme Corp", RULES)


def test_replace_with_error_and_finish_error() -> None:
    f = req()
    f.response = tutils.tresp(content=b"upstream")
    f.response.headers["content-encoding"] = "gzip"
    flows.replace_with_error(f, registry.ANTHROPIC_MESSAGES, "gone", 502)
    r = f.response
    assert r.status_code == 502 and r.headers["x-disguise"] == "refused" and "content-encoding" not in r.headers
    assert isinstance(flows.inner(r.stream), Refused)
    assert r.stream(b"upstream") == [registry.ANTHROPIC_MESSAGES.error_body("disguise: gone")]
    flows.finish_error(f, registry.ANTHROPIC_MESSAGES, "again")  # already replaced: left as it is
    assert isinstance(flows.inner(r.stream), Refused)
    g = req()
    g.response = tutils.tresp(content=b"whole upstream body")
    flows.finish_error(g, registry.ANTHROPIC_MESSAGES, "gone")
    assert g.response.status_code == 502 and b"disguise: gone" in g.response.content
    assert b"upstream" not in g.response.content
    h = req()
    h.response = tutils.tresp(status_code=429, content=b"x")
    flows.finish_error(h, registry.ANTHROPIC_MESSAGES, "gone")
    assert h.response.status_code == 429  # an error status stays


def test_inner_unwraps_a_tee() -> None:
    class Tee:
        inner = "the callable"

    assert flows.inner(Tee()) == "the callable" and flows.inner("plain") == "plain"


def test_a_body_leaves_as_it_came_unless_its_container_carries_more() -> None:
    """flows.leaving: raw as it came where the container holds only its payload; else
    the checked body encoded again (x-gzip as gzip; brotli at BROTLI_QUALITY: the
    library's default took 1.3 s a megabyte)."""
    import gzip

    import brotli

    body = b'{"x": "clean"}' * 100
    plain = gzip.compress(body)
    named = plain[:3] + bytes([plain[3] | 0x08]) + plain[4:10] + b"Acme Corp\0" + plain[10:]
    assert flows.leaving(plain, body, "gzip") is plain
    for enc in ("gzip", "x-gzip"):
        out = flows.leaving(named, body, enc)
        assert b"Acme" not in out and gzip.decompress(out) == body
    br = brotli.compress(body, quality=11)
    assert flows.leaving(br, body, "br") == brotli.compress(body, quality=flows.BROTLI_QUALITY)
    assert flows.leaving(body, body, "identity") is body


@pytest.mark.parametrize(
    ("path", "status"),
    [
        # an API disguise masks over HTTP: 426, which a client (Codex) answers with HTTP at once
        ("/backend-api/codex/responses", 426),
        ("/v1/responses", 426),
        ("/v1/chat/completions?x=1", 426),
        # a WebSocket with no HTTP form disguise masks: refused as before
        ("/v1/some/socket", 400),
    ],
)
def test_a_websocket_disguise_cannot_mask_is_refused_with_the_status_that_says_use_http(path: str, status: int) -> None:
    msg, got = flows.websocket_refused("GET " + path, path)
    assert got == status
    assert msg.startswith("disguise: request refused: GET ") and "WebSocket traffic cannot be masked" in msg
    assert ("over HTTP" in msg) == (status == 426)


def test_withhold_url_withholds_the_host_a_request_was_for_and_leaves_clean_headers_as_they_came() -> None:
    """An absolute-form target's host (or a CONNECT's) is what mitmdump's flow line prints
    the URL from: withheld where it holds an original; the Host header and authority are
    read on their own (a clean one is kept as the client wrote it)."""
    rules = Rules(mappings.from_dict({"literals": {"build.internal.acme.io": "host.example.net"}}))
    f = tflow.tflow()
    f.request.host, f.request.path = "build.internal.acme.io", "/v1/chat/completions"
    f.request.headers["host"] = "proxy.example.org"
    flows.withhold_url(f, rules)
    assert f.request.host == "<original>" and f.request.headers["host"] == "proxy.example.org"
    assert f.request.url == "http://<original>:22/v1/chat/completions"
    clean = tflow.tflow()
    flows.withhold_url(clean, rules)
    assert clean.request.host == tflow.tflow().request.host
