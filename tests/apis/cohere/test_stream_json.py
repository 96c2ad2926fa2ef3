"""Cohere v2 Chat asking for a JSON answer (`response_format` of type `json_object`): the
answer's text is JSON text, originals JSON-escaped, whole and streamed however the deltas
and the bytes are cut; the tool plan stays prose; `{"type": "text"}` stays text."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.apis.cohere.chat import CHAT_REQUEST, restore_response
from disguiselib.apis.cohere.stream import CohereStream
from disguiselib.base.jsonanswer import answers_json
from disguiselib.base.masking import mask_body
from disguiselib.rules.restorer import JSON, TEXT
from disguiselib.wire.sse import Framer
from strategies import JSON_DISGUISES, RULES, byte_splits, json_answer, json_originals, literal_restorer, splits


def test_cohere_asks_for_json_by_its_response_format() -> None:
    assert answers_json({"response_format": {"type": "json_object"}}, CHAT_REQUEST)
    assert not answers_json({"response_format": {"type": "text"}}, CHAT_REQUEST)
    body = {"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}],
            "response_format": {"type": "json_object", "json_schema": {"type": "object"}}}  # fmt: skip
    assert mask_body(json.dumps(body).encode(), CHAT_REQUEST, RULES)[1].json_out


def ev(doc: dict) -> bytes:
    return f"event: {doc['type']}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def stream(pieces: list[str], plan: str) -> bytes:
    m = lambda **k: {"message": k}  # noqa: E731
    return b"".join([
        ev({"id": "s1", "type": "message-start", "delta": m(role="assistant")}),
        ev({"type": "tool-plan-delta", "delta": m(tool_plan=plan)}),
        ev({"type": "content-start", "index": 0, "delta": m(content={"type": "text", "text": ""})}),
        *(ev({"type": "content-delta", "index": 0, "delta": m(content={"text": p})}) for p in pieces),
        ev({"type": "content-end", "index": 0}),
        ev({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {}}}),
    ])  # fmt: skip


def read(body: bytes) -> tuple[str, str, list[str]]:
    f = Framer()
    evs = [json.loads(e.data) for e in f.feed(body) + f.flush() if e.data is not None]
    text = "".join(e["delta"]["message"]["content"]["text"] for e in evs if e["type"] == "content-delta")
    plan = "".join(e["delta"]["message"]["tool_plan"] for e in evs if e["type"] == "tool-plan-delta")
    return text, plan, [e["type"] for e in evs]


def whole(text: str, restorer) -> str:  # noqa: ANN001
    doc = {"id": "c1", "finish_reason": "COMPLETE", "message": {"role": "assistant",
                                                                 "content": [{"type": "text", "text": text}]}}
    return json.loads(restore_response(json.dumps(doc).encode(), restorer))["message"]["content"][0]["text"]


@settings(max_examples=60, deadline=None)
@given(originals=json_originals, data=st.data())
@example(originals=['C:\\new', 'a "b"', "\x01\t"], data=None)
def test_a_json_answer_streamed_however_it_is_cut(originals: list[str], data) -> None:  # noqa: ANN001
    text = json.dumps(json_answer(JSON_DISGUISES))
    pieces = [text] if data is None else data.draw(splits(text, 12))
    body = stream(pieces, f"look up {JSON_DISGUISES[1]}")
    cuts = [body] if data is None else data.draw(byte_splits(body))
    s = CohereStream(literal_restorer(originals, JSON))
    got, plan, types = read(b"".join(s.feed(c) for c in cuts) + s.flush())
    assert json.loads(got) == json_answer(originals)
    assert got == whole(text, literal_restorer(originals, JSON))  # the whole body's restoration
    assert plan == f"look up {originals[1]}"  # the plan is prose: the original as it is
    assert types[-1] == "message-end"


def test_a_text_answer_stays_text() -> None:
    text = json.dumps(json_answer(JSON_DISGUISES))
    originals = ["C:\\Users", 'a "b"', "c"]
    got, _, _ = read(CohereStream(literal_restorer(originals, TEXT)).whole(stream([text[:7], text[7:]], "x")))
    assert got == whole(text, literal_restorer(originals, TEXT)) == literal_restorer(originals).text(text)
    assert json.loads(whole(text, literal_restorer(originals, JSON))) == json_answer(originals)
