"""Legacy Completions and Embeddings: requests masked like their siblings', Completions
streams restored per choice for any cut of the byte stream."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.openai.legacy import CompletionsStream
from disguiselib.apis.registry import recognise
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def chunk(idx: int, text: str, finish: str | None = None) -> bytes:
    doc = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
           "choices": [{"text": text, "index": idx, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(doc)}\n\n".encode()  # ASCII escapes, as for a lone surrogate


def read(body: bytes) -> dict[int, str]:
    out: dict[int, str] = {}
    done = False
    for ev in body.decode("utf-8", "surrogatepass").split("\n\n"):
        if not ev:
            continue
        assert not done, "nothing after [DONE]"
        data = ev.removeprefix("data: ")
        if data == "[DONE]":
            done = True
            continue
        for c in json.loads(data)["choices"]:
            out[c["index"]] = out.get(c["index"], "") + c["text"]
    assert done
    return out


def test_requests_are_masked() -> None:
    api = recognise("POST", "/v1/completions")
    body = json.dumps({"model": "m", "prompt": ["Acme Corp", [1, 2, 3]], "suffix": "bob@x.example.com"}).encode()
    masked, session = mask_body(body, api.request_rule, RULES)
    assert json.loads(masked) == {"model": "m", "prompt": ["Zenith Labs", [1, 2, 3]], "suffix": "[EMAIL_1]"}
    api = recognise("POST", "/v1/embeddings")
    masked, _ = mask_body(json.dumps({"model": "m", "input": "Acme Corp"}).encode(), api.request_rule, RULES)
    assert json.loads(masked)["input"] == "Zenith Labs"


def test_embeddings_answer_is_left_alone() -> None:
    api = recognise("POST", "/v1/embeddings")
    body = json.dumps({"object": "list", "data": [{"embedding": "WINPATHZenith Labs==", "index": 0}]}).encode()
    assert restore_body(body, api.response_rule, R) is body


def test_whole_completions_answer_restored() -> None:
    api = recognise("POST", "/v1/completions")
    body = json.dumps({"choices": [{"text": "Zenith Labs [[reply_to_current]]", "index": 0}]}).encode()
    assert json.loads(restore_body(body, api.response_rule, R))["choices"][0]["text"] == "Acme Corp "


@given(st.lists(texts, min_size=1, max_size=2), st.data())
def test_stream_reassembles_to_the_whole_result(choice_texts: list[str], data) -> None:
    queues = []
    for k, t in enumerate(choice_texts):
        pieces = data.draw(splits(t))
        q = [chunk(k, p) for p in pieces[:-1]] + [chunk(k, pieces[-1], "stop")]
        queues.append(q)
    events = []
    while any(queues):
        i = data.draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        events.append(queues[i].pop(0))
    body = b"".join(events) + b"data: [DONE]\n\n"
    s = CompletionsStream(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(p) for p in data.draw(byte_splits(body))) + s.flush()
    got = read(out)
    for k, t in enumerate(choice_texts):
        assert got.get(k, "") == R.text(t)


def test_stream_cut_before_its_finish_drains_before_done() -> None:
    s = CompletionsStream(RULES.restorer(PLACEHOLDERS))
    out = s.feed(chunk(0, "hello Zen") + b"data: [DONE]\n\n") + s.flush()
    assert read(out) == {0: "hello Zen"}
