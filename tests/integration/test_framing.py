"""HTTP framing of a masked flow's answer, through a real mitmdump, as plain mitmdump
frames it (probe P): a response that has no body by its status (204, 304) keeps its
headers and gets none, so the client's next request on the same keep-alive connection
reads its own answer. With `transfer-encoding: chunked` added to a 204, mitmproxy sent
the chunked end `0\\r\\n\\r\\n` after it, and httpx read it as the next response's status
line ("illegal status line")."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from integration_util import MITMDUMP, Proxy, Recorded, Reply, running_proxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
           "content": [{"type": "text", "text": "Back: Zenith Labs"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-framing"), MAPPINGS) as p:
        p.upstream.on("ok", lambda rec: Reply([json.dumps(MESSAGE).encode()],
                                              headers={"Content-Type": "application/json"}, framing="length"))  # fmt: skip
        yield p


def empty(status: int, ctype: str | None) -> object:
    headers = {"ETag": '"1"'} | ({"Content-Type": ctype} if ctype else {})
    return lambda rec: Reply([], status=status, headers=headers, framing="length")


def request(model: str, stream: bool = False) -> bytes:
    return json.dumps({"model": model, "max_tokens": 5, "stream": stream,
                       "messages": [{"role": "user", "content": "Hello Acme Corp"}]}).encode()  # fmt: skip


@pytest.mark.parametrize(("status", "ctype", "stream"), [
    (204, None, False), (204, "text/event-stream", True), (304, None, False), (304, "text/event-stream", True),
    (204, "application/json", False),
])  # fmt: skip
def test_a_bodiless_answer_leaves_the_connection_usable(proxy: Proxy, status: int, ctype: str | None, stream: bool) -> None:
    model = f"empty-{status}-{ctype}"
    proxy.upstream.on(model, empty(status, ctype))
    with httpx.Client(base_url=proxy.base_url, timeout=20, trust_env=False) as client:
        first = client.post("/v1/messages", content=request(model, stream), headers={"content-type": "application/json"})
        assert first.status_code == status and first.content == b""
        assert "transfer-encoding" not in first.headers
        assert first.headers.get("content-type") == ctype  # its headers as upstream sent them
        second = client.post("/v1/messages", content=request("ok"), headers={"content-type": "application/json"})
        assert second.status_code == 200 and second.json()["content"][0]["text"] == "Back: Acme Corp"
    assert b"Acme Corp" not in proxy.upstream.for_model(model)[-1].raw


def test_a_conditional_get_of_a_stored_response_answered_304(proxy: Proxy) -> None:
    """A stored Responses object read again with If-None-Match: the 304 goes out as it came."""

    def stored(rec: Recorded) -> Reply:
        if "if-none-match" in rec.headers:
            return Reply([], status=304, headers={"ETag": '"1"'}, framing="length")
        doc = {"id": "resp_1", "object": "response", "status": "completed", "output": []}
        return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json", "ETag": '"1"'},
                     framing="length")  # fmt: skip

    proxy.upstream.on("/v1/responses/resp_1", stored)
    with httpx.Client(base_url=proxy.base_url, timeout=20, trust_env=False) as client:
        first = client.get("/v1/responses/resp_1", headers={"if-none-match": '"1"'})
        assert first.status_code == 304 and "transfer-encoding" not in first.headers
        second = client.post("/v1/messages", content=request("ok"), headers={"content-type": "application/json"})
        assert second.status_code == 200 and second.json()["content"][0]["text"] == "Back: Acme Corp"
