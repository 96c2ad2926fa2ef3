"""Credential slots (issue 26): each provider declares where its clients' credentials sit
(base/wirespec.Provider, registry.PROVIDERS). Property: a credential value in its
slot is never refused and never rewritten; the same value anywhere else (another header,
another query parameter or subprotocol, the body) is refused or masked. Real shapes,
the shipped patterns: an OpenAI key, a Google key, an STS session token, an Anthropic
key, random in their tails."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis import registry
from disguiselib.base.wirespec import Destination, Provider
from disguiselib.config import build_config
from disguiselib.errors import LeakError

_TAIL = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=30)
CREDENTIALS = st.one_of(
    _TAIL.map(lambda t: "sk-proj-" + (t * 30)[:24] + t),  # OPENAI_KEY
    _TAIL.map(lambda t: "AIza" + (t * 40)[:35]),  # GOOGLE_API_KEY
    _TAIL.map(lambda t: "IQoJb3JpZ2luX2Vj" + (t * 60)[:60] + t),  # AWS_SESSION_TOKEN
    _TAIL.map(lambda t: "sk-ant-api03-" + (t * 30)[:24]),  # ANTHROPIC_KEY
)

# An API served by each provider (the realtime ones for WebSocket subprotocols), and the
# path a request to it takes.
HTTP = {
    "anthropic": ("/v1/messages", registry.ANTHROPIC_MESSAGES),
    "openai": ("/v1/chat/completions", registry.OPENAI_CHAT),
    "azure": ("/openai/deployments/d/chat/completions", registry.OPENAI_CHAT),
    "openai-compatible": ("/api/v1/chat/completions", registry.OPENAI_CHAT),
    "google.gemini": ("/v1beta/models/gemini-2.5-flash:generateContent", registry.GOOGLE_GEMINI),
    "google.vertex": ("/v1/projects/p/locations/l/publishers/google/models/g:generateContent", registry.VERTEX_GEMINI),
    "google.code_assist": ("/v1internal:streamGenerateContent?alt=sse", registry.GOOGLE_CODE_ASSIST),
    "aws.bedrock": ("/model/m/converse", registry.BEDROCK_CONVERSE),
    "cohere": ("/v2/chat", registry.COHERE_CHAT),
    "proxy": ("/v1/chat/completions", registry.OPENAI_CHAT),
}
WS = {
    "openai": ("/v1/realtime?model=gpt-realtime", registry.OPENAI_REALTIME),
    "azure": ("/openai/realtime?deployment=d", registry.OPENAI_REALTIME),
    "google.gemini": ("/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
                      registry.GOOGLE_LIVE),
}  # fmt: skip
BODY = {"model": "m", "messages": [{"role": "user", "content": [{"text": "hello"}]}]}
# Cohere's field model refuses a content part without its `type`
BODIES = {
    registry.COHERE_CHAT: {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]},
    registry.GOOGLE_CODE_ASSIST: {"model": "m", "request": {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}},
}


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    d = tmp_path_factory.mktemp("slots")
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    return build_config([str(d / "m.yaml")], True, [])  # the shipped patterns in force


def test_every_provider_has_a_case() -> None:
    assert {p.name for p in registry.PROVIDERS} == set(HTTP)
    assert {p.name for p in registry.PROVIDERS if p.subprotocols or p.params or p.ws_params} <= set(WS) | {"google.vertex"}


def _slots(p: Provider) -> list[tuple[str, str]]:
    return [("header", h) for h in sorted(p.headers | p.signing)] + [
        ("param", q) for q in sorted(p.params | p.ws_params)
    ] + [("subprotocol", s) for s in p.subprotocols]


CASES = [(p, kind, name) for p in registry.PROVIDERS for kind, name in _slots(p)]
# A SigV4 Authorization (the proxy re-signs such a request: its signing headers are slots)
SIGV4 = ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20250101/us-east-1/bedrock/aws4_request, "
         "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64)  # fmt: skip
# Where a request goes: not known (the API alone says whose slots it has), but for an
# upstream proxy's credential, a slot only where that proxy reads the request.
DEST = {"proxy": Destination(via_proxy=True)}


def _request(p: Provider, kind: str, name: str, value: str) -> tuple[str, list[tuple[str, str]], object]:
    """A request to an API p serves with value in the slot (kind, name)."""
    if kind == "subprotocol" or (kind == "param" and p.name in WS and p.name != "google.gemini"):
        path, api = WS[p.name]
    else:
        path, api = HTTP[p.name]
    headers = [("content-type", "application/json")]
    if kind == "header":
        if name in p.signing - p.headers:
            headers.append(SIGV4)
        headers.append((name.title() if len(name) % 2 else name, value))  # header names in any case
    elif kind == "param":
        path += ("&" if "?" in path else "?") + f"{name}={value}"
    else:
        headers.append(("Sec-WebSocket-Protocol", f"realtime, {name}{value}"))
    return path, headers, api


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), value=CREDENTIALS)
def test_a_credential_in_its_slot_passes_untouched(cfg, case, value: str) -> None:
    p, kind, name = case
    path, headers, api = _request(p, kind, name, value)
    dest = DEST.get(p.name)
    assert cfg.rules.find(value), "a credential shape the shipped patterns know"
    before = list(headers)
    if isinstance(api, registry.RealtimeApi):
        assert pipeline.leak_scan(path, headers, None, cfg.rules, api, dest=dest) is None
    else:
        raw = json.dumps(BODIES.get(api, BODY)).encode()
        masked = pipeline.mask_request(api, raw, cfg, path, headers, dest).unwrap()  # raises LeakError when refused
        assert masked.body == raw  # nothing else to mask: nothing rewritten
        if kind == "param" and p.name.startswith("google"):  # also on any path of the provider's
            assert leakguard.scan_url(f"/v1beta/cachedContents?{name}={value}", cfg.rules) is None
    assert headers == before


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), value=CREDENTIALS, where=st.sampled_from(["header", "param", "sub", "body"]))
def test_the_same_value_elsewhere_is_refused_or_masked(cfg, case, value: str, where: str) -> None:
    p, kind, name = case
    path, headers, api = _request(p, kind, name, value)
    dest = DEST.get(p.name)
    if where == "body" and isinstance(api, registry.RealtimeApi):
        where = "header"  # an upgrade has no body (its events: tests/providers/test_realtime*.py)
    if where == "header":
        headers.append(("x-note", value))
    elif where == "param":
        path += ("&" if "?" in path else "?") + f"note={value}"
    elif where == "sub":
        headers.append(("Sec-WebSocket-Protocol", f"realtime, note.{value}"))
    if isinstance(api, registry.RealtimeApi) or where != "body":
        hit = pipeline.leak_scan(path, headers, None, cfg.rules, api, dest=dest)
        assert hit is not None and hit.where in ("url", "header x-note", "header sec-websocket-protocol")
        if not isinstance(api, registry.RealtimeApi):
            with pytest.raises(LeakError):
                pipeline.mask_request(api, json.dumps(BODIES.get(api, BODY)).encode(), cfg, path, headers, dest).unwrap()
        return
    body = {"model": "m", "messages": [{"role": "user", "content": [{"text": f"my key: {value}"}]}]}
    if api in (registry.ANTHROPIC_MESSAGES, registry.OPENAI_CHAT, registry.COHERE_CHAT):
        body["messages"][0]["content"] = f"my key: {value}"
    elif api in (registry.GOOGLE_GEMINI, registry.VERTEX_GEMINI):
        body = {"contents": [{"role": "user", "parts": [{"text": f"my key: {value}"}]}]}
    masked = pipeline.mask_request(api, json.dumps(body).encode(), cfg, path, headers, dest).unwrap()
    assert value not in masked.body.decode()


def test_slots_of_an_unknown_endpoint() -> None:
    """No API: any provider's credential headers (but a Cookie); query parameters only on
    a path that is a provider's own (a Google path)."""
    s = registry.slots_for("/v1/something")
    assert {"x-api-key", "authorization", "x-amz-security-token", "api-key"} <= s.headers
    assert "cookie" not in s.headers
    assert not s.params and not s.subprotocols
    assert "key" in registry.slots_for("/v1beta/files/abc").params


@settings(max_examples=40, deadline=None)
@given(value=st.one_of(CREDENTIALS, st.just("Acme Corp")), api=st.sampled_from(sorted(HTTP.items())))
def test_a_cookie_is_a_slot_only_on_the_apis_of_a_provider_that_reads_one(cfg, value: str, api) -> None:
    """A Cookie holds whatever the sites that set it put there: ChatGPT's backend reads its
    session from one (OpenAI's APIs), no other provider does. Elsewhere an original or a
    credential in it is refused, as in any other header; a Cloudflare cookie an SDK's
    client kept from an answer passes everywhere."""
    name, (path, api) = api
    raw = json.dumps(BODIES.get(api, BODY)).encode()
    reads = any("cookie" in p.headers for p in registry.providers_of(api))
    for cookie in (f"org={value}; theme=dark", f"__cf_bm=x; session={value}"):
        headers = [("content-type", "application/json"), ("Cookie", cookie)]
        if reads:
            assert pipeline.mask_request(api, raw, cfg, path, headers).unwrap().body == raw
        else:
            hit = pipeline.leak_scan(path, headers, None, cfg.rules, api)
            assert hit is not None and hit.where.startswith("header cookie"), (name, hit)
            with pytest.raises(LeakError):
                pipeline.mask_request(api, raw, cfg, path, headers).unwrap()
    cf = "__cf_bm=2kQ8o7bZ3.9xP_xq1aTq5N0O7A6dBvHr8O3Xb6Qm1rw-1733500000-1.0.1.1-AbCdEfGhIjKlMnOp; _cfuvid=Hy7.ZkP2x-0.0.1.1"
    assert pipeline.leak_scan(path, [("cookie", cf)], None, cfg.rules, api) is None


# -- another provider's slot is no slot (probe round C: C1, C9, C7) ---------------------------------

ANTHROPIC_BODY = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}).encode()
FOREIGN = [  # (path, api, header or parameter, where the hit is): an original there leaves
    # SigV4's signing headers, on a request nobody re-signs (C1)
    ("/v1/messages", registry.ANTHROPIC_MESSAGES, "Date", "header date"),
    ("/v1/messages", registry.ANTHROPIC_MESSAGES, "X-Amz-Date", "header x-amz-date"),
    ("/v1/messages", registry.ANTHROPIC_MESSAGES, "X-Amz-Content-Sha256", "header x-amz-content-sha256"),
    ("/v1/chat/completions", registry.OPENAI_CHAT, "Date", "header date"),
    ("/model/m/converse", registry.BEDROCK_CONVERSE, "Date", "header date"),  # a bearer key: not re-signed
    # other providers' credential headers (C9)
    *[("/v1/messages", registry.ANTHROPIC_MESSAGES, h, f"header {h.lower()}") for h in
      ("api-key", "x-goog-api-key", "ocp-apim-subscription-key", "openai-api-key", "x-amz-security-token",
       "Proxy-Authorization")],
    ("/v1/chat/completions", registry.OPENAI_CHAT, "x-goog-api-key", "header x-goog-api-key"),
    ("/v1beta/models/g:generateContent", registry.GOOGLE_GEMINI, "api-key", "header api-key"),
    # Google's and Azure's query parameters where they are not theirs (C7)
    ("/v1/models/x/chat/completions", registry.OPENAI_CHAT, "?key", "url"),
    ("/v1/chat/completions", registry.OPENAI_CHAT, "?api-key", "url"),
    ("/v1/models", None, "?key", "url"),
    ("/v1/batches", None, "?access_token", "url"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "api", "slot", "where"), FOREIGN, ids=lambda x: x if isinstance(x, str) else "")
def test_an_original_in_another_providers_slot_is_refused(cfg, path, api, slot, where) -> None:
    headers = [("content-type", "application/json"), ("Authorization", "Bearer ABSKdummy")]
    if slot.startswith("?"):
        path += f"{slot}=Acme%20Corp"
    else:
        headers.append((slot, "Acme Corp"))
    if api is None:
        hit = pipeline.scan_unknown(path, headers, b"", cfg.rules)
    else:
        hit = pipeline.leak_scan(path, headers, None, cfg.rules, api)
    assert hit is not None and hit.where == where  # (the literal, or SECRET's `key=...` in a URL)


CREDENTIAL_HEADERS = sorted(frozenset().union(*(p.headers | p.signing for p in registry.PROVIDERS)))


@settings(max_examples=80, deadline=None)
@given(api=st.sampled_from(sorted(HTTP.items())), header=st.sampled_from(CREDENTIAL_HEADERS))
def test_a_header_no_provider_of_the_api_reads_is_scanned(cfg, api, header: str) -> None:
    """Every provider's credential header on every API: a slot exactly where a provider
    that serves the API reads it (no request on its path goes to another provider's host
    or path here); anywhere else an original in it is refused."""
    _, (path, a) = api
    readers = frozenset().union(*(p.headers for p in registry.providers_of(a)))
    hit = pipeline.leak_scan(path, [(header, "Acme Corp")], None, cfg.rules, a)
    assert (hit is None) == (header in readers), (path, header, hit)
