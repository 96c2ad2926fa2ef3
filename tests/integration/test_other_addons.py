"""disguise beside other addons, through real mitmdump/mitmweb processes: what another
addon (a script loaded after disguise, mitmproxy's own modify_body, map_local,
mitmweb's intercept) does to a flow after disguise handled it must not let an original
leave nor a disguise reach the client (contract §4, §5 "Leak guard", §6)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration_util import (
    MITMDUMP,
    FakeUpstream,
    Mitmdump,
    Reply,
    free_port,
    http_post,
    mitmdump_cmd,
    sse,
    write_mappings,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MITMWEB = MITMDUMP.parent / "mitmweb"
MAPPING = {"literals": {"Acme Corp": "Zenith Labs"}}


def messages(text: str = "Hello from Acme Corp", model: str = "s", stream: bool = False) -> bytes:
    doc: dict = {"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": text}]}
    if stream:
        doc["stream"] = True
    return json.dumps(doc).encode()


def stream_events(*pieces: str) -> list[bytes]:
    """An Anthropic stream whose text deltas are pieces."""
    out = [
        sse({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "s",
             "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]  # fmt: skip
    out += [sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}) for p in pieces]
    return out + [
        sse({"type": "content_block_stop", "index": 0}),
        sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        sse({"type": "message_stop"}),
    ]


def whole(text: str) -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "w",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()  # fmt: skip


@pytest.fixture
def up() -> Iterator[FakeUpstream]:
    with FakeUpstream() as u:
        u.on("s", lambda r: Reply(stream_events("Hi Zenith", " Labs here"), headers={"content-type": "text/event-stream"}))
        u.on("w", lambda r: Reply([whole("Hi Zenith Labs here")], headers={"content-type": "application/json"},
                                  framing="length"))  # fmt: skip
        u.on("/v1/files", lambda r: Reply([b'{"id": "file_1"}'], headers={"content-type": "application/json"},
                                          framing="length"))  # fmt: skip
        yield u


def leaked(up: FakeUpstream) -> bool:
    return any(b"Acme Corp" in r.raw or "Acme Corp" in str(r.headers) for r in up.requests)


def proxy(up: FakeUpstream, tmp: Path, *extra: str) -> Mitmdump:
    return Mitmdump(mitmdump_cmd(up.port, tmp / "conf", write_mappings(tmp, MAPPING), *extra))


STREAMS = {
    "true": "def responseheaders(flow):\n    flow.response.stream = True\n",
    "false": "def responseheaders(flow):\n    flow.response.stream = False\n",
    "callable": "def responseheaders(flow):\n    flow.response.stream = lambda data: data.replace(b'Hi', b'Oh')\n",
}


@pytest.mark.parametrize("setting", sorted(STREAMS))
def test_a_later_addon_setting_the_response_stream_does_not_pass_it_on_unrestored(
    up: FakeUpstream, tmp_path: Path, setting: str
) -> None:
    """A script after disguise sets `flow.response.stream` (the mitmproxy docs' "stream
    everything" snippet; False; a callable of its own): disguise's restoring stream stays,
    another addon's callable runs on the restored bytes."""
    script = tmp_path / "stream_all.py"
    script.write_text(STREAMS[setting])
    m = proxy(up, tmp_path, "-s", str(script))
    try:
        for model in ("s", "w"):
            status, _, body = http_post(m.port, "/v1/messages", messages(model=model, stream=model == "s"))
            assert status == 200
            assert b"Zenith" not in body, body
            assert b"Acme Corp here" in body, body
            if setting == "callable":
                assert b"Oh" in body and b"Hi" not in body, body
        assert m.saw("restored 1 original")
    finally:
        m.stop()
    assert not leaked(up)


def test_an_event_stream_a_later_addon_answers_with_is_restored(up: FakeUpstream, tmp_path: Path) -> None:
    """A script after disguise answers the masked request itself (a cache of the
    provider's answers), as an event stream: mitmproxy never calls a stream callable for
    such a response, so it is restored whole, as a server-replayed one is."""
    script = tmp_path / "cache.py"
    body = b"".join(stream_events("Hi Zenith", " Labs here"))
    script.write_text(
        "from mitmproxy import http\n"
        f"BODY = {body!r}\n"
        "def request(flow):\n"
        "    flow.response = http.Response.make(200, BODY, {'content-type': 'text/event-stream'})\n"
    )
    m = proxy(up, tmp_path, "-s", str(script))
    try:
        status, _, got = http_post(m.port, "/v1/messages", messages(stream=True))
    finally:
        m.stop()
    assert status == 200 and b"Zenith" not in got and b"Acme Corp here" in got, got
    assert not up.requests


def test_a_scanned_request_a_later_addon_changes_is_scanned_again(up: FakeUpstream, tmp_path: Path) -> None:
    """An endpoint disguise does not transform, scanned clean; then mitmproxy's
    modify_body (which runs after scripts) writes an original into it: refused."""
    m = proxy(up, tmp_path, "--modify-body", "/~q/hello/Acme Corp")
    try:
        status, headers, body = http_post(m.port, "/v1/files", b"hello world", {"content-type": "text/plain"})
        assert status == 400 and headers.get("x-disguise") == "refused", body
        assert b"changed after disguise scanned it" in body and b"Acme Corp" not in body
        status, _, _ = http_post(m.port, "/v1/files", b"good day", {"content-type": "text/plain"})
        assert status == 200  # unchanged: passes as before
    finally:
        m.stop()
    assert not leaked(up) and len(up.requests) == 1


def _web(port: int, method: str, path: str, data: object = None) -> bytes:
    """mitmweb's REST API (its token on 12; 11 has none) with tornado's XSRF pair."""
    r = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                               data=None if data is None else json.dumps(data).encode())  # fmt: skip
    for k, v in (("Authorization", "Bearer t0ken"), ("Content-Type", "application/json"),
                 ("Cookie", "_xsrf=xsrf-test-value; _mitmproxy_xsrf=xsrf-test-value"),
                 ("X-XSRFToken", "xsrf-test-value")):  # fmt: skip
        r.add_header(k, v)
    with urllib.request.urlopen(r, timeout=20) as resp:
        return resp.read()


@pytest.mark.skipif(not MITMWEB.exists(), reason="no mitmweb")
def test_a_request_edited_while_intercepted_is_looked_at_after_the_resume(up: FakeUpstream, tmp_path: Path) -> None:
    """mitmweb with `intercept`: the user edits the masked request and resumes it.
    mitmproxy waits for the resume after every addon's hook; the leak guard waits too."""
    wport = free_port()
    cmd = mitmdump_cmd(up.port, tmp_path / "conf", write_mappings(tmp_path, MAPPING), "--set", "intercept=~q",
                       "--web-host", "127.0.0.1", "--web-port", str(wport), "--no-web-open-browser",
                       "--set", "web_password=t0ken")  # fmt: skip
    cmd[0] = str(MITMWEB)
    m = Mitmdump(cmd)
    got: dict = {}
    try:
        assert m.saw("Web server listening", timeout=60)
        for text, edited, want in (("Hello there", "Hello from Acme Corp", 400), ("Hi", "Hi again", 200)):
            body = messages(text, "w")
            t = threading.Thread(target=lambda b=body: got.update(r=http_post(m.port, "/v1/messages", b)))
            t.start()
            fid = None
            deadline = time.monotonic() + 20
            while fid is None and time.monotonic() < deadline:
                time.sleep(0.1)
                fid = next((f["id"] for f in json.loads(_web(wport, "GET", "/flows")) if f.get("intercepted")), None)
            assert fid is not None, "no intercepted flow"
            _web(wport, "PUT", f"/flows/{fid}", {"request": {"content": messages(edited, "w").decode()}})
            _web(wport, "POST", f"/flows/{fid}/resume")
            t.join(30)
            assert got["r"][0] == want, got["r"]
    finally:
        m.stop()
    assert not leaked(up)
    assert [r.json["messages"][0]["content"] for r in up.requests] == ["Hi again"]


def _realtime_scenario(peer) -> None:
    """Greets, then records up to two client events (FakeRealtime keeps them)."""
    peer.send({"type": "session.created", "event_id": "e1",
               "session": {"type": "realtime", "id": "s", "model": "m", "instructions": ""}})  # fmt: skip
    for _ in range(2):
        try:
            peer.recv(timeout=5)
        except Exception:  # noqa: BLE001 - the proxy closed the connection
            return


def test_a_realtime_client_event_a_later_addon_changes_is_looked_at_again(tmp_path: Path) -> None:
    """A script after disguise edits a realtime client event after disguise masked it:
    an original it wrote ends the connection (an error event, then 1008) and never
    leaves; an edit without one goes on."""
    websockets = pytest.importorskip("websockets")
    from websockets.asyncio.client import connect

    from realtime_util import FakeRealtime

    script = tmp_path / "edit_ws.py"
    script.write_text(
        "def websocket_message(flow):\n"
        "    m = flow.websocket.messages[-1]\n"
        "    if m.from_client:\n"
        "        m.content = m.content.replace(b'hello', b'Acme Corp').replace(b'howdy', b'hi there')\n"
    )

    def item(text: str) -> str:
        return json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": text}]}})  # fmt: skip

    async def session(port: int, text: str) -> tuple[list, object]:
        got: list = []
        async with connect(f"ws://127.0.0.1:{port}/v1/realtime?model=rec", open_timeout=10) as ws:
            got.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            await ws.send(item(text))
            try:
                while True:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), 3)))
            except websockets.ConnectionClosed as e:
                return got, e.rcvd
            except TimeoutError:
                return got, None

    with FakeRealtime() as up:
        up.on("rec", _realtime_scenario)
        m = Mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", write_mappings(tmp_path, MAPPING), "-s", str(script)))
        try:
            got, close = asyncio.run(asyncio.wait_for(session(m.port, "hello world"), 30))
            assert close is not None and close.code == 1008, (got, close)
            assert got[-1]["type"] == "error" and "another addon changed" in got[-1]["error"]["message"], got
            got, close = asyncio.run(asyncio.wait_for(session(m.port, "howdy"), 30))
            assert close is None and [e["type"] for e in got] == ["session.created"], (got, close)
        finally:
            m.stop()
        frames = [d for _, _, d in up.received]
    assert not any(b"Acme Corp" in d for d in frames), frames
    assert any(b"hi there" in d for d in frames), frames
