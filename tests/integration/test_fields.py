"""End to end for the field audit (issue 7): a real mitmdump with the addon, a fake
upstream, the official SDKs. Bodies not labelled as streams, streams that end before
their last event, several gzip members, retrievals."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, Proxy, Reply, http_post, running_proxy
from integration_util import sse as asse

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"},
            "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}]}  # fmt: skip




@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-fields"), MAPPINGS) as p:
        yield p


def message_events(model: str, pieces: list[str], stop: bool = True) -> list[bytes]:
    out = [asse({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                 "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {"input_tokens": 1, "output_tokens": 1}}}),
           asse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]  # fmt: skip
    out += [asse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
            for p in pieces]  # fmt: skip
    if stop:
        out += [asse({"type": "content_block_stop", "index": 0}),
                asse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                      "usage": {"output_tokens": 3}}),
                asse({"type": "message_stop"})]  # fmt: skip
    return out


def texts_of(body: bytes) -> tuple[str, list[dict]]:
    ds = [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]
    return "".join(d["delta"].get("text", "") for d in ds if d["type"] == "content_block_delta"), ds


@pytest.mark.parametrize("ctype", ["text/plain", "application/octet-stream", None])
def test_stream_not_labelled_as_one_fails_closed(proxy: Proxy, ctype: str | None) -> None:
    """The endpoint and the label decide what a body is: an event stream labelled as
    something else is not guessed at, it ends with an explicit error and no disguise."""
    model = f"scn-label-{ctype}"
    headers = {"Content-Type": ctype} if ctype else {}
    proxy.upstream.on(model, lambda rec: Reply(message_events(model, ["Hi Zen", "ith Labs"]), headers=headers))
    body = json.dumps({"model": model, "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "Acme Corp"}]}).encode()  # fmt: skip
    status, _, out = http_post(proxy.port, "/v1/messages", body)
    assert b"Zen" not in out and b"event stream labelled" in out
    # an error event: its client reads events (an error document read as events was none:
    # the SDK raised an AssertionError, the openai SDK read an empty stream that succeeded)
    assert out.startswith(b"event: error\n") and json.loads(out.split(b"data: ", 1)[1])["type"] == "error"
    with anthropic.Anthropic(base_url=proxy.base_url, api_key="t", max_retries=0, timeout=20.0) as client:
        with pytest.raises(anthropic.APIStatusError, match="event stream labelled"):
            with client.messages.stream(model=model, max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
                list(s.text_stream)


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_stream_ending_before_message_stop_ends_with_an_error_in_the_sdk(proxy: Proxy, framing: str) -> None:
    model = f"scn-nostop-{framing}"

    def handler(rec):
        ph = json.loads(rec.body)["messages"][0]["content"].split()[-1]  # the placeholder the request got
        return Reply(message_events(model, ["Hello Zenith Labs, mail ", ph[:4]], stop=False),
                     headers={"Content-Type": "text/event-stream"}, framing=framing)  # fmt: skip

    proxy.upstream.on(model, handler)
    got: list[str] = []
    with anthropic.Anthropic(base_url=proxy.base_url, api_key="t", max_retries=0, timeout=20.0) as client:
        with pytest.raises(anthropic.APIStatusError) as exc:
            with client.messages.stream(model=model, max_tokens=5,
                                        messages=[{"role": "user", "content": "mail bob@corp.example.com"}]) as s:  # fmt: skip
                got.extend(s.text_stream)
    assert "".join(got) == "Hello Acme Corp, mail [EMA"  # what was held, then the error
    assert "message_stop" in str(exc.value)


def test_gzip_stream_of_several_members(proxy: Proxy) -> None:
    model = "scn-gzip-members"
    events = message_events(model, ["Hi Zen", "ith Labs"])
    proxy.upstream.on(model, lambda rec: Reply([gzip.compress(e) for e in events],
                                               headers={"Content-Type": "text/event-stream",
                                                        "Content-Encoding": "gzip"}))  # fmt: skip
    body = json.dumps({"model": model, "max_tokens": 5, "stream": True, "messages": []}).encode()
    status, headers, out = http_post(proxy.port, "/v1/messages", body)
    text, ds = texts_of(out)
    assert "content-encoding" not in headers
    assert text == "Hi Acme Corp" and ds[-1]["type"] == "message_stop"


def test_retrieved_response_restores_literals(proxy: Proxy) -> None:
    stored = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt",
              "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": "Zenith Labs, [EMAIL_1]", "annotations": []}]}],
              "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip
    proxy.upstream.on("/v1/responses/resp_1", lambda rec: Reply([json.dumps(stored).encode()], framing="length",
                                                                headers={"Content-Type": "application/json"}))  # fmt: skip
    with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="t", max_retries=0, timeout=20.0) as client:
        got = client.responses.retrieve("resp_1")
    # a literal is restored; the placeholder's request is gone, so it stays as it is
    assert got.output_text == "Acme Corp, [EMAIL_1]"
