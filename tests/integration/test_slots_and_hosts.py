"""End to end, issue 26: a credential in the slot its provider reads it from is not an
original, the same value anywhere else is; and every host form a provider documents is
the provider's (an endpoint no spec knows there is scanned, and refused when it holds
an original).

Real mitmdump processes with the shipped patterns in force (OPENAI_KEY, GOOGLE_API_KEY
and AWS_SESSION_TOKEN among them): WebSocket upgrades through reverse mode to a fake
realtime upstream (the `websockets` library); provider hosts through regular mode (the
host does not resolve here: a request that is not refused fails to connect, 502) and
upstream-proxy mode (a fake upstream proxy records what left). Bedrock with temporary
credentials: tests/integration/test_bedrock.py (every test, long-term and temporary).
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings
from realtime_util import FakeRealtime, Peer

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect as ws_connect  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}}
OPENAI_KEY = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ"
GOOGLE_KEY = "AIza" + "SyD3x7Qk9mN2pL5vR8tW1zB4cF6hJ0aE_gU"
BOB = "bob@corp.example.com"
LIVE = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


# -- WebSocket credentials: reverse mode to a fake realtime upstream ------------------------------


class Realtime:
    def __init__(self, up: FakeRealtime, md: Mitmdump) -> None:
        self.up = up
        self.md = md
        self.url = f"ws://127.0.0.1:{md.port}"
        self.upgrades: list[dict[str, str]] = []  # the upgrade requests' headers upstream saw

    def scenario(self, peer: Peer) -> None:
        """Record the upgrade's headers and one client event, answer, close."""
        self.upgrades.append({k.lower(): v for k, v in peer.ws.request.headers.raw_items()})
        if getattr(peer, "first", None) is not None:  # Gemini: the setup came first
            peer.send({"setupComplete": {}}, binary=True)
        peer.recv()
        peer.close(1000, "bye")


@pytest.fixture(scope="module")
def realtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realtime]:
    d = tmp_path_factory.mktemp("slots-realtime")
    with FakeRealtime() as up:
        md = Mitmdump(mitmdump_cmd(up.port, d, write_mappings(d, MAPPINGS)))
        try:
            rt = Realtime(up, md)
            for model in ("slot-openai", "slot-gemini"):
                up.on(model, rt.scenario)
            yield rt
        finally:
            md.stop()
        assert not up.errors, up.errors


async def _talk(url: str, first: dict, event: dict, **kw) -> None:
    async with ws_connect(url, **kw) as ws:
        await ws.send(json.dumps(first))
        if "setup" in first:
            await ws.recv()
            await ws.send(json.dumps(event))
        try:
            await ws.recv()
        except websockets.ConnectionClosed:
            pass


def _refused(coro) -> http.client.HTTPResponse:
    with pytest.raises(websockets.InvalidStatus) as e:
        run(coro)
    return e.value.response


def test_openai_realtime_key_as_a_browser_subprotocol(realtime: Realtime) -> None:
    """`Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.<key>` is OpenAI's
    browser authentication: the key goes upstream as it is, the session is masked."""
    protos = ["realtime", f"openai-insecure-api-key.{OPENAI_KEY}", "openai-beta.realtime-v1"]
    ev = {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                                       "content": [{"type": "input_text", "text": "Acme Corp"}]}}
    n = len(realtime.upgrades)
    run(_talk(f"{realtime.url}/v1/realtime?model=slot-openai", ev, ev, subprotocols=protos))
    assert len(realtime.upgrades) == n + 1, "the connection did not reach upstream"
    assert realtime.upgrades[-1]["sec-websocket-protocol"] == ", ".join(protos)
    sent = realtime.up.frames("model=slot-openai")[-1][1].decode()
    assert "Zenith Labs" in sent and "Acme Corp" not in sent


def test_openai_key_outside_its_slot_is_refused(realtime: Realtime) -> None:
    before = len(realtime.up.received)
    resp = _refused(_talk(f"{realtime.url}/v1/realtime?model=slot-openai", {}, {},
                          additional_headers={"x-debug": OPENAI_KEY}))
    assert resp.status_code == 400 and b"OPENAI_KEY in header x-debug" in resp.body
    resp = _refused(_talk(f"{realtime.url}/v1/realtime?model=slot-openai", {}, {},
                          subprotocols=["realtime", f"openai-note.{OPENAI_KEY}"]))
    assert resp.status_code == 400 and b"OPENAI_KEY in header sec-websocket-protocol" in resp.body
    assert OPENAI_KEY.encode() not in resp.body
    assert len(realtime.up.received) == before


def test_gemini_live_key_in_the_query(realtime: Realtime) -> None:
    """`wss://...BidiGenerateContent?key=API_KEY`, Google's raw WebSocket example."""
    setup = {"setup": {"model": "models/slot-gemini"}}
    content = {"clientContent": {"turns": [{"role": "user", "parts": [{"text": f"Acme Corp, {BOB}"}]}],
                                 "turnComplete": True}}
    n = len(realtime.upgrades)
    run(_talk(f"{realtime.url}{LIVE}?key={GOOGLE_KEY}", setup, content))
    assert len(realtime.upgrades) == n + 1, "the connection did not reach upstream"
    frames = realtime.up.frames(f"key={GOOGLE_KEY}")
    assert frames, "the key did not reach upstream as it was"
    sent = frames[-1][1].decode()
    assert "Zenith Labs" in sent and "Acme Corp" not in sent and BOB not in sent


def test_google_key_outside_its_slot_is_refused(realtime: Realtime) -> None:
    before = len(realtime.up.received)
    resp = _refused(_talk(f"{realtime.url}{LIVE}?key=x&note={GOOGLE_KEY}", {"setup": {}}, {}))
    assert resp.status_code == 400 and b"GOOGLE_API_KEY in url" in resp.body
    resp = _refused(_talk(f"{realtime.url}{LIVE}", {"setup": {}}, {}, additional_headers={"x-note": GOOGLE_KEY}))
    assert resp.status_code == 400 and b"GOOGLE_API_KEY in header x-note" in resp.body
    assert len(realtime.up.received) == before


# -- provider hosts: regular and upstream-proxy mode ----------------------------------------------

VERTEX = "us-central1-aiplatform.googleapis.com"
MISTRAL = "/v1/projects/p/locations/us-central1/publishers/mistralai/models/mistral-large-2411:"
VERTEX_PATHS = [  # publishers whose bodies no spec declares: scanned
    "/v1/projects/p/locations/us-central1/publishers/meta/models/llama-4-maverick:rawPredict",
    "/v1/projects/p/locations/us-central1/publishers/ai21/models/jamba-1.5-large:streamRawPredict",
    "/v1/projects/p/locations/us-central1/publishers/ai21/models/jamba-1.5-large:newMethod",  # no spec knows it
]
AZURE = [
    ("acme-res.cognitiveservices.azure.com", "/openai/threads?api-version=2024-05-01-preview"),
    ("acme-res.cognitiveservices.azure.com", "/openai/threads/thread_1/messages?api-version=2024-05-01-preview"),
    ("acme-res.services.ai.azure.com", "/openai/assistants?api-version=2024-05-01-preview"),
    ("acme-res.services.ai.azure.com", "/openai/threads/thread_1/runs?api-version=2024-05-01-preview"),
    ("acme-res.services.ai.azure.com", "/api/projects/p/unknown-endpoint"),  # no spec knows it
]
CASES = [(VERTEX, p) for p in VERTEX_PATHS] + AZURE


def _post(port: int, host: str, path: str, body: dict) -> tuple[int, bytes]:
    """A request through the proxy (absolute form), as a client configured with it sends."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", f"http://{host}{path}", body=json.dumps(body).encode(),
                     headers={"host": host, "content-type": "application/json", "api-key": "azure-key"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "instructions": text}


@pytest.fixture(scope="module")
def regular(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmdump]:
    d = tmp_path_factory.mktemp("hosts-regular")
    cmd = mitmdump_cmd(1, d, write_mappings(d, MAPPINGS))
    cmd[cmd.index("--mode") + 1] = "regular"
    md = Mitmdump(cmd)
    try:
        yield md
    finally:
        md.stop()


@pytest.fixture(scope="module")
def upstream_mode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeUpstream, Mitmdump]]:
    d = tmp_path_factory.mktemp("hosts-upstream")
    with FakeUpstream() as up:
        cmd = mitmdump_cmd(up.port, d, write_mappings(d, MAPPINGS))
        cmd[cmd.index("--mode") + 1] = f"upstream:http://127.0.0.1:{up.port}"
        md = Mitmdump(cmd)
        try:
            yield up, md
        finally:
            md.stop()


@pytest.mark.parametrize(("host", "path"), CASES)
def test_provider_host_in_regular_mode_refuses_an_original(regular: Mitmdump, host: str, path: str) -> None:
    status, data = _post(regular.port, host, path, _body("Ask Acme Corp"))
    assert status == 400, (status, data[:300])
    assert b"request refused" in data and b"Acme" not in data


@pytest.mark.parametrize(("host", "path"), CASES)
def test_provider_host_in_upstream_mode(upstream_mode: tuple[FakeUpstream, Mitmdump], host: str, path: str) -> None:
    """Through an upstream proxy: an original never leaves; a clean request does."""
    up, md = upstream_mode
    up.on("m", lambda rec: Reply([b'{"ok": true}'], headers={"content-type": "application/json"}, framing="length"))
    target = f"http://{host}{path}"
    status, data = _post(md.port, host, path, _body("Ask Acme Corp"))
    assert status == 400 and b"request refused" in data
    assert not [r for r in up.requests if r.path == target], "an original reached the upstream proxy"
    status, data = _post(md.port, host, path, _body("Ask nobody"))
    assert status == 200, (status, data[:300])
    got: list[Recorded] = [r for r in up.requests if r.path == target]
    assert got and got[-1].json["instructions"] == "Ask nobody"


def test_logs_hold_no_credential(realtime: Realtime, regular: Mitmdump) -> None:
    """disguise's own log lines (mitmdump's flow lines show the URL it was given)."""
    for out in (realtime.md.output, regular.output):
        ours = "\n".join(line for line in out.splitlines() if "disguise" in line)
        for secret in (OPENAI_KEY, GOOGLE_KEY, "Acme Corp", BOB):
            assert secret not in ours, "a credential or an original in disguise's log"
        assert "Traceback" not in out



# Mistral on Vertex AI: Mistral's chat API (the Chat Completions body and stream), as its
# documentation shows it (`rawPredict`; `streamRawPredict` with "stream": true).
def _mistral_reply(rec: Recorded) -> Reply:
    body = rec.json
    assert "Acme Corp" not in rec.body.decode() and "Zenith Labs" in body["messages"][0]["content"]
    assert BOB not in rec.body.decode()
    if not body.get("stream"):
        return Reply([json.dumps({
            "id": "cmpl-e5cc70bb28c444948073e77776eb30ef", "object": "chat.completion", "created": 1702256327,
            "model": "mistral-large-2411", "choices": [{"index": 0, "message": {
                "role": "assistant", "content": "Zenith Labs says hi", "tool_calls": None}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 16, "completion_tokens": 34, "total_tokens": 50}}).encode()],
            headers={"content-type": "application/json"}, framing="length")  # fmt: skip
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        c = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1702256327, "model": "mistral-large-2411",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(c).encode() + b"\n\n"

    return Reply([chunk({"role": "assistant", "content": ""}), chunk({"content": "Zen"}),
                  chunk({"content": "ith Labs says hi"}), chunk({"content": ""}, "stop"), b"data: [DONE]\n\n"],
                 headers={"content-type": "text/event-stream"})  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_vertex_mistral_on_a_regional_host_masked_and_restored(
    upstream_mode: tuple[FakeUpstream, Mitmdump], stream: bool
) -> None:
    up, md = upstream_mode
    up.on("mistral-large-2411", _mistral_reply)
    method = "streamRawPredict" if stream else "rawPredict"
    body = {"model": "mistral-large-2411", "messages": [{"role": "user", "content": f"Ask Acme Corp, {BOB}"}],
            "stream": stream}
    status, data = _post(md.port, VERTEX, MISTRAL + method, body)
    assert status == 200, (status, data[:300])
    assert [r for r in up.requests if r.path == f"http://{VERTEX}{MISTRAL}{method}"], "not sent upstream"
    if stream:
        text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content", "")
                       for line in data.decode().split("\n") if line.startswith("data: {"))
        assert data.rstrip().endswith(b"data: [DONE]")
    else:
        text = json.loads(data)["choices"][0]["message"]["content"]
    assert text == "Acme Corp says hi"


# -- whose slot a header or parameter is: the providers the request is for (probe round C) ---------

ANTHROPIC_KEY = "sk-ant-api03-" + "Zq8xW2vB5nM1kL7jH3gF9dS4"
MESSAGES = {"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def _send(port: int, method: str, url: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, url, body=data, headers={"content-type": "application/json", **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("header", ["Date", "X-Amz-Date", "api-key", "x-goog-api-key", "openai-api-key",
                                    "x-amz-security-token", "Proxy-Authorization"])  # fmt: skip
def test_another_providers_slot_is_scanned_on_anthropic(regular: Mitmdump, header: str) -> None:
    """Not Anthropic's slot, so not a slot on its API: an original there is refused;
    Anthropic's own key in its own slot goes on (to a host that does not resolve: 502)."""
    url = "http://api.anthropic.com/v1/messages"
    status, data = _send(regular.port, "POST", url, {"x-api-key": ANTHROPIC_KEY, header: "Acme Corp"}, MESSAGES)
    assert status == 400 and f"literal in header {header.lower()}".encode() in data, (status, data[:300])
    status, data = _send(regular.port, "POST", url, {"x-api-key": ANTHROPIC_KEY}, MESSAGES)
    assert status == 502, (status, data[:300])


def test_google_key_parameter_is_googles_on_its_host_only(regular: Mitmdump) -> None:
    """`?key=` on /v1/models (OpenAI's path too) is a slot on Google's host, scanned on
    OpenAI's."""
    status, data = _send(regular.port, "GET", f"http://api.openai.com/v1/models?key={GOOGLE_KEY}", {})
    assert status == 400 and b"GOOGLE_API_KEY in url" in data, (status, data[:300])
    status, data = _send(regular.port, "GET", f"http://generativelanguage.googleapis.com/v1/models?key={GOOGLE_KEY}", {})
    assert status == 502, (status, data[:300])


def test_proxy_authorization_is_the_upstream_proxys(upstream_mode: tuple[FakeUpstream, Mitmdump]) -> None:
    """Through an upstream proxy a plain-HTTP request's Proxy-Authorization is that proxy's
    credential (a key-shaped one passes); in regular mode it reaches the server, where it is
    scanned (tests above)."""
    up, md = upstream_mode
    up.on("claude-x", lambda rec: Reply([b'{"ok": true}'], headers={"content-type": "application/json"},
                                        framing="length"))  # fmt: skip
    url = "http://api.anthropic.com/v1/messages"
    status, data = _send(md.port, "POST", url, {"x-api-key": "k", "Proxy-Authorization": OPENAI_KEY}, MESSAGES)
    assert status == 200, (status, data[:300])
    got = [r for r in up.requests if r.path == url]
    assert got and got[-1].headers.get("proxy-authorization") == OPENAI_KEY


@pytest.mark.parametrize("header", ["cf-aig-authorization", "x-litellm-api-key", "x-portkey-api-key", "helicone-auth"])
def test_an_ai_gateways_key_is_the_gateways(upstream_mode: tuple[FakeUpstream, Mitmdump], header: str) -> None:
    """A team's AI gateway (Cloudflare AI Gateway, LiteLLM, Portkey, Helicone) in front of
    the provider reads its own key from a header of its own, beside the provider's: a
    key-shaped value there is that credential, not a leak (it was refused as one); the same key in a header of nobody's is refused."""
    up, md = upstream_mode
    up.on("claude-x", lambda rec: Reply([b'{"ok": true}'], headers={"content-type": "application/json"},
                                        framing="length"))  # fmt: skip
    url = "http://api.anthropic.com/v1/messages"
    status, data = _send(md.port, "POST", url, {"x-api-key": "k", header: f"Bearer {OPENAI_KEY}"}, MESSAGES)
    assert status == 200, (status, data[:300])
    got = [r for r in up.requests if r.path == url]
    assert got and got[-1].headers.get(header) == f"Bearer {OPENAI_KEY}"
    status, data = _send(md.port, "POST", url, {"x-api-key": "k", "x-gateway-key": f"Bearer {OPENAI_KEY}"}, MESSAGES)
    assert status == 400 and b"in header x-gateway-key" in data, (status, data[:300])
