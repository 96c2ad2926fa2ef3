"""Issue 15 through a real mitmdump, with the official SDKs as clients: a stream the addon
ends itself delivers no held text (case 13), and keys written with escapes mean what
they mean (`"sequence_n\\u0075mber"`, the random-stream campaign's one finding)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Reply, mitmdump_cmd, write_mappings

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs", "Bluebird": "Heron"}}
SSE = {"Content-Type": "text/event-stream"}


class Proxy:
    def __init__(self, up: FakeUpstream, m: Mitmdump) -> None:
        self.up = up
        self.m = m
        self.base_url = f"http://127.0.0.1:{m.port}"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    tmp: Path = tmp_path_factory.mktemp("endings")
    with FakeUpstream() as up:
        m = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", write_mappings(tmp, MAPPINGS)))
        try:
            yield Proxy(up, m)
        finally:
            m.stop()
            print(m.output[-4000:])


@contextmanager
def openai_sdk(proxy: Proxy) -> Iterator[openai.OpenAI]:
    http_client = openai.DefaultHttpxClient(trust_env=False)
    try:
        with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                           http_client=http_client) as client:  # fmt: skip
            yield client
    finally:
        http_client.close()


def chat_chunk(delta: dict, finish: str | None = None) -> bytes:
    doc = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt",
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"


# -- case 13: the addon ends the stream -------------------------------------------------------------


def test_too_many_channels_delivers_no_disguise_fragment(proxy: Proxy) -> None:
    """More tool calls holding text than the addon keeps windows for: it used to flush
    each one's held tail first — `{"owner": "Zenith` — then the error."""
    calls = [{"index": j, "id": f"call_{j}", "type": "function", "function": {"name": "f", "arguments": ""}}
             for j in range(300)]  # fmt: skip
    pieces = [chat_chunk({"role": "assistant", "content": "Hello Zen"}), chat_chunk({"tool_calls": calls})]
    pieces += [chat_chunk({"tool_calls": [{"index": j, "function": {"arguments": '{"owner": "Zenith'}}]})
               for j in range(300)]  # fmt: skip
    pieces += [chat_chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    proxy.up.on("too-many", lambda r: Reply(pieces, headers=SSE))
    content, args = [], []
    with openai_sdk(proxy) as client, pytest.raises(openai.APIError) as exc:
        for c in client.chat.completions.create(model="too-many", stream=True,
                                                messages=[{"role": "user", "content": "Acme Corp"}]):  # fmt: skip
            for ch in c.choices:
                content.append(ch.delta.content or "")
                args += [tc.function.arguments or "" for tc in ch.delta.tool_calls or [] if tc.function]
    assert "more than 256 channels" in str(exc.value)
    got = "".join(content) + "".join(args)
    assert "Zen" not in got, f"a held fragment of a disguise reached the client: {got[:200]!r}"
    assert "".join(content) == "Hello "
    assert proxy.up.for_model("too-many")[-1].json["messages"][0]["content"] == "Zenith Labs"


def test_unreadable_event_delivers_no_held_text(proxy: Proxy) -> None:
    def ev(name: str, data: dict) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    pieces = [
        ev("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "model": "c", "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello Zen"}}),
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ith \xff"}}\n\n',
        ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ev("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    proxy.up.on("bad-utf8", lambda r: Reply(pieces, headers=SSE))
    texts: list[str] = []
    http_client = anthropic.DefaultHttpxClient(trust_env=False)
    try:
        with anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=20.0,
                                 http_client=http_client) as client, pytest.raises(anthropic.APIStatusError) as exc:  # fmt: skip
            with client.messages.stream(model="bad-utf8", max_tokens=5,
                                        messages=[{"role": "user", "content": "hi"}]) as stream:  # fmt: skip
                for t in stream.text_stream:
                    texts.append(t)
    finally:
        http_client.close()
    assert "".join(texts) == "Hello "
    assert "not UTF-8" in str(exc.value)


def test_too_many_responses_channels_delivers_no_fragment(proxy: Proxy) -> None:
    def ev(seq: int, **fields: object) -> bytes:
        t = str(fields["type"])
        return f"event: {t}\ndata: {json.dumps({**fields, 'sequence_number': seq})}\n\n".encode()

    pieces = [ev(0, type="response.created", response={"id": "r", "object": "response", "status": "in_progress",
                                                       "output": [], "model": "gpt"})]  # fmt: skip
    pieces += [ev(1 + i, type="response.output_text.delta", item_id=f"msg_{i}", output_index=i, content_index=0,
                  delta="owner Zenith", logprobs=[]) for i in range(300)]  # fmt: skip
    proxy.up.on("resp-many", lambda r: Reply(pieces, headers=SSE))
    deltas: list[str] = []
    seqs: list[int] = []
    with openai_sdk(proxy) as client:
        events = list(client.responses.create(model="resp-many", input="Acme Corp", stream=True))
    for e in events:
        seqs.append(e.sequence_number)
        if e.type == "response.output_text.delta":
            deltas.append(e.delta)
    assert events[-1].type == "error" and "more than 256 channels" in events[-1].message  # the SDK yields it
    assert "Zen" not in "".join(deltas) and "".join(deltas) == "owner " * 256
    assert seqs == list(range(len(seqs)))


# -- keys spelled with escapes ----------------------------------------------------------------------


def test_escaped_sequence_number_is_renumbered_after_a_synthetic_delta(proxy: Proxy) -> None:
    """A Responses stream whose events write `"sequence_n\\u0075mber"` (valid JSON, the
    same key): a held tail that must go out as a delta of its own before
    `output_text.done` (an annotation came between it and the delta that held it back),
    and every later event must be renumbered. The client used to see `…, 5, 5, 7`."""
    text = ["Hello ", "from Zenith"]  # "Zenith" is held: it may grow into "Zenith Labs"
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "Hello from Zenith", "annotations": []}
    resp = {"id": "r", "object": "response", "status": "in_progress", "output": [], "model": "gpt"}
    events = [("response.created", {"response": resp}),
              ("response.output_item.added", {"output_index": 0, "item": msg}),
              ("response.content_part.added", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                               "part": {**part, "text": ""}})]  # fmt: skip
    events += [("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                               "delta": t, "logprobs": []}) for t in text]  # fmt: skip
    events.append(("response.output_text.annotation.added", {
        "item_id": "msg_1", "output_index": 0, "content_index": 0, "annotation_index": 0,
        "annotation": {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://x", "title": "x"}}))
    events += [("response.output_text.done", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                              "text": "Hello from Zenith", "logprobs": []}),
               ("response.content_part.done", {"item_id": "msg_1", "output_index": 0, "content_index": 0, "part": part}),
               ("response.output_item.done", {"output_index": 0, "item": {**msg, "status": "completed", "content": [part]}}),
               ("response.completed", {"response": {**resp, "status": "completed"}})]  # fmt: skip
    pieces = []
    for n, (t, fields) in enumerate(events):
        body = json.dumps({"type": t, "sequence_number": n, **fields}, separators=(",", ":"))
        body = body.replace('"sequence_number"', '"sequence_n\\u0075mber"')
        pieces.append(f"event: {t}\ndata: {body}\n\n".encode())
    proxy.up.on("resp-escaped", lambda r: Reply(pieces, headers=SSE))
    seqs: list[int] = []
    deltas: list[str] = []
    with openai_sdk(proxy) as client:
        for e in client.responses.create(model="resp-escaped", input="hi", stream=True):
            seqs.append(e.sequence_number)
            if e.type == "response.output_text.delta":
                deltas.append(e.delta)
    assert deltas == ["Hello ", "from ", "Zenith"]  # the held tail, as a delta of its own
    assert seqs == list(range(len(events) + 1)), seqs
