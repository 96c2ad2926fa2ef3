"""HTTP as plain mitmdump speaks it, through a real mitmdump, for a masked flow (probe P).

- A response that has no body by its status (204, 304) keeps its headers and gets none,
  so the client's next request on the same keep-alive connection reads its own answer.
  With `transfer-encoding: chunked` added to a 204, mitmproxy sent the chunked end
  `0\\r\\n\\r\\n` after it, and httpx read it as the next response's status line
  ("illegal status line").
- A compressed stream whose container upstream left unfinished after the API's last
  event ends as an uncompressed stream cut there does, cleanly: its error after
  `message_stop` made the anthropic SDK raise on a complete message.
- The addon's own 502 in place of a successful answer it cannot restore says
  `x-should-retry: false`: the official SDKs retry every 5xx twice otherwise, sending the
  same request upstream (answered, and billed, each time) for the same failure.
  Upstream's own errors keep what upstream said.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import anthropic
import brotli
import httpx
import openai
import pytest

from integration_util import MITMDUMP, Compressor, Proxy, Recorded, Reply, http_post, running_proxy, sse

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


def stacked(doc: dict) -> bytes:
    """doc as a body with `content-encoding: gzip, br` (which disguise does not decode)."""
    return brotli.compress(gzip.compress(json.dumps(doc).encode()))


STACKED = {"Content-Type": "application/json", "Content-Encoding": "gzip, br"}


def sse_labelled_json(rec: Recorded) -> Reply:
    events = [{"type": "message_start", "message": {**MESSAGE, "content": []}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Zenith Labs"}},
              {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]  # fmt: skip
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    return Reply([body], headers={"Content-Type": "application/json"}, framing="length")


def test_the_addons_own_502_is_not_retried_by_the_sdks(proxy: Proxy) -> None:
    proxy.upstream.on("undecodable", lambda rec: Reply([stacked(MESSAGE)], headers=STACKED, framing="length"))
    proxy.upstream.on("labelled-json", sse_labelled_json)
    http = anthropic.DefaultHttpxClient(trust_env=False)
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key="k", max_retries=2, http_client=http)
    ask = {"max_tokens": 5, "messages": [{"role": "user", "content": "Hello Acme Corp"}]}
    with pytest.raises(anthropic.APIStatusError) as e:
        client.messages.create(model="undecodable", **ask)
    assert e.value.status_code == 502 and e.value.response.headers["x-should-retry"] == "false"
    with pytest.raises(anthropic.APIStatusError) as e, client.messages.stream(model="labelled-json", **ask) as s:
        "".join(s.text_stream)
    assert e.value.status_code == 502 and "event stream labelled" in str(e.value.message)
    chat = openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="k", max_retries=2,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # fmt: skip
    proxy.upstream.on("chat-undecodable", lambda rec: Reply([stacked({"choices": []})], headers=STACKED, framing="length"))
    with pytest.raises(openai.APIStatusError) as e2:
        chat.chat.completions.create(model="chat-undecodable", messages=[{"role": "user", "content": "Acme Corp"}])
    assert e2.value.status_code == 502
    # an endpoint that never streams, labelled an event stream: refused at its headers
    proxy.upstream.on("embed-sse", lambda rec: Reply([b'{"data": []}'], framing="length",
                                                     headers={"Content-Type": "text/event-stream"}))  # fmt: skip
    with pytest.raises(openai.APIStatusError) as e2:
        chat.embeddings.create(model="embed-sse", input="Acme Corp")
    assert e2.value.status_code == 502 and e2.value.response.headers["x-should-retry"] == "false"
    for model in ("undecodable", "labelled-json", "chat-undecodable", "embed-sse"):
        assert len(proxy.upstream.for_model(model)) == 1, model
    http.close()
    chat.close()


def test_upstreams_own_error_that_cannot_be_restored_is_still_retried(proxy: Proxy) -> None:
    """An overloaded 529 is upstream's word that a retry may succeed (nothing was billed):
    its 502 in the addon's words keeps upstream's retry headers and is retried."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    proxy.upstream.on("overloaded", lambda rec: Reply([stacked(error)], status=529, framing="length",
                                                      headers={**STACKED, "retry-after-ms": "10"}))  # fmt: skip
    with anthropic.DefaultHttpxClient(trust_env=False) as http:
        client = anthropic.Anthropic(base_url=proxy.base_url, api_key="k", max_retries=2, http_client=http)
        with pytest.raises(anthropic.APIStatusError) as e:
            client.messages.create(model="overloaded", max_tokens=5, messages=[{"role": "user", "content": "Acme Corp"}])
    assert e.value.status_code == 502 and "x-should-retry" not in e.value.response.headers
    assert len(proxy.upstream.for_model("overloaded")) == 3


@pytest.mark.parametrize("enc", ["gzip", "br"])
def test_a_stream_whose_compression_is_left_unfinished_after_message_stop_is_complete(proxy: Proxy, enc: str) -> None:
    events = [{"type": "message_start", "message": {**MESSAGE, "content": []}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi Zen"}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ith Labs"}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
              {"type": "message_stop"}]  # fmt: skip

    def unfinished(rec: Recorded) -> Reply:
        c = Compressor(enc)  # each event flushed, the container never ended (no c.finish())
        return Reply([c.piece(sse(e)) for e in events], headers={"Content-Type": "text/event-stream",
                                                                 "Content-Encoding": enc})  # fmt: skip

    proxy.upstream.on(f"unfinished-{enc}", unfinished)
    with anthropic.DefaultHttpxClient(trust_env=False) as http:
        client = anthropic.Anthropic(base_url=proxy.base_url, api_key="k", max_retries=0, http_client=http)
        with client.messages.stream(model=f"unfinished-{enc}", max_tokens=5,
                                    messages=[{"role": "user", "content": "Hello Acme Corp"}]) as s:  # fmt: skip
            text = "".join(s.text_stream)
            final = s.get_final_message()
    assert text == "Hi Acme Corp" and final.stop_reason == "end_turn"


@pytest.mark.parametrize(("charset", "text", "sent"), [
    ("utf-7", "Hello +AEE-cme Corp", False),  # aiohttp's request.json() reads "Hello Acme Corp"
    ("UTF-7", "Hello Acme+ACA-Corp", False),
    ("acme-unknown", "Hello", False),
    ("iso-8859-1", "Hello Acme Corp", True),  # ASCII reads the same: masked as ever
])  # fmt: skip
def test_a_body_that_reads_otherwise_in_its_declared_charset_is_refused(proxy: Proxy, charset: str, text: str,
                                                                       sent: bool) -> None:  # fmt: skip
    """Probe R: a receiver that decodes JSON by the Content-Type's charset (aiohttp, an
    OpenAI-compatible server built on it) read the original the masker, reading UTF-8, never
    saw: `charset=utf-7` with `+AEE-cme Corp` went upstream as it came."""
    before = len(proxy.upstream.requests)
    body = json.dumps({"model": "ok", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
    status, _, data = http_post(proxy.port, "/v1/messages", body, {"content-type": f"application/json; charset={charset}"})
    if not sent:
        assert status == 400 and b"send it as UTF-8" in data, (status, data[:300])
        assert len(proxy.upstream.requests) == before
        return
    assert status == 200
    assert proxy.upstream.requests[-1].raw.decode(charset) == body.decode().replace("Acme Corp", "Zenith Labs")


def test_a_second_content_type_naming_such_a_charset_is_read_too(proxy: Proxy) -> None:
    before = len(proxy.upstream.requests)
    body = json.dumps({"model": "ok", "max_tokens": 5, "messages": [{"role": "user", "content": "+AEE-cme Corp"}]})
    headers = [("content-type", "application/json"), ("content-type", "application/json; charset=utf-7")]
    status = httpx.post(f"{proxy.base_url}/v1/messages", content=body.encode(), headers=headers).status_code
    assert status == 400 and len(proxy.upstream.requests) == before
