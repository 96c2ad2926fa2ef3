"""Cohere v2 citations' `start`/`end` (characters of the text the model wrote, disguised)
point at the cited text in the restored answer: whole (chat.restore_response) and
streamed (CohereStream), through one reading of what restoring moved (base/offsets.py).
A streamed citation whose end lies in text its channel still holds waits for it."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from conftest import REPO
from disguiselib.apis.cohere import stream as stream_module
from disguiselib.apis.cohere.chat import restore_response
from disguiselib.apis.cohere.stream import CohereStream
from disguiselib.base.offsets import Offsets
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)
SHAPES = REPO / "tests" / "fixtures" / "shapes" / "cohere"


def _answer(text: str, plan: str, spans: list[tuple[int, int]], plan_span: tuple[int, int]) -> dict:
    cites = [{"start": s, "end": e, "text": text[s:e], "type": "TEXT_CONTENT", "content_index": 1,
              "sources": [{"type": "document", "id": "d1", "document": {"title": "Zenith Labs"}}]} for s, e in spans]
    cites.append({"start": plan_span[0], "end": plan_span[1], "text": plan[plan_span[0]:plan_span[1]], "type": "PLAN"})
    cites.append({"start": 0, "end": 6, "text": "Zenith", "type": "THINKING_CONTENT"})  # thoughts: as they came
    return {"id": "c1", "finish_reason": "COMPLETE",
            "message": {"role": "assistant", "tool_plan": plan,
                        "content": [{"type": "thinking", "thinking": "Zenith Labs asked"}, {"type": "text", "text": text}],
                        "citations": cites}}  # fmt: skip


def test_whole_answer_citations_point_at_the_restored_text() -> None:
    text = "Zenith Labs ordered; write to [EMAIL_1] or nova today."
    plan = "Ask Zenith Labs first."
    spans = [(0, 11), (30, 39), (43, 53), (12, 19)]
    out = json.loads(restore_response(json.dumps(_answer(text, plan, spans, (4, 15))).encode(), R))
    m = out["message"]
    restored, cites = m["content"][1]["text"], m["citations"]
    assert [restored[c["start"] : c["end"]] for c in cites[:4]] == [
        "Acme Corp", "bob@corp.example.com", "nova-internal today", "ordered"]  # fmt: skip
    assert [c["text"] for c in cites[:4]] == [restored[c["start"] : c["end"]] for c in cites[:4]]
    assert m["tool_plan"][cites[4]["start"] : cites[4]["end"]] == "Acme Corp" == cites[4]["text"]
    assert (cites[5]["start"], cites[5]["end"]) == (0, 6)


def test_whole_answer_without_a_move_is_byte_identical() -> None:
    body = json.dumps(_answer("plain words", "plain plan", [(0, 5)], (0, 5))).replace("Zenith Labs", "x").encode()
    assert restore_response(body, R) is body


def test_recorded_shape_stream_moves_its_citation() -> None:
    """The reference's stream (a thinking content 0, text content 1, a citation without
    content_index: the first text content)."""
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    docs = _docs(s.feed((SHAPES / "chat_stream.sse").read_bytes()) + s.flush())
    text = "".join(d["delta"]["message"]["content"].get("text", "") for d in docs if d["type"] == "content-delta")
    (c,) = [d["delta"]["message"]["citations"] for d in docs if d["type"] == "citation-start"]
    assert text[c["start"] : c["end"]] == c["text"] == "Acme Corp"


# -- streamed: the same offsets as the whole answer, however the stream is cut -------------

_WORDS = ["Zenith Labs", "[EMAIL_1]", "[EMAIL_2]", "WINPATH", "nova", "nova.cloud", "Unicode Ltd", "crm_lookup",
          "the", "order", "é😀", "x", "[EMA", "Zen"]  # fmt: skip


def _event(doc: dict, compact: bool) -> bytes:
    seps = (",", ":") if compact else (", ", ": ")
    data = json.dumps(doc, separators=seps, ensure_ascii=False)
    try:
        return f"event: {doc['type']}\ndata: {data}\n\n".encode()
    except UnicodeEncodeError:  # a lone surrogate: \u escapes, as the API would send
        return f"event: {doc['type']}\ndata: {json.dumps(doc, separators=seps)}\n\n".encode()


def _docs(out: bytes) -> list[dict]:
    docs = []
    for raw in out.split(b"\n\n")[:-1]:
        lines = raw.decode("utf-8").split("\n")
        doc = json.loads("\n".join(ln.removeprefix("data: ") for ln in lines[1:]))
        assert doc["type"] == lines[0].removeprefix("event: ")
        docs.append(doc)
    return docs


@st.composite
def answers(draw):
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10))
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    text = " ".join(words)
    pieces = draw(splits(text))
    cites = []
    for _ in range(draw(st.integers(1, 3))):
        i, j = sorted(draw(st.lists(st.integers(0, len(words) - 1), min_size=2, max_size=2)))
        cites.append((starts[i], starts[j] + len(words[j])))  # from a word's start to a word's end
    return text, pieces, cites


@given(answers(), st.data())
@example(("order nova", ["order ", "nova"], [(6, 10)]), None)
def test_streamed_citations_move_as_the_whole_answers(answer, data) -> None:
    text, pieces, cites = answer
    compact = data.draw(st.booleans()) if data else True
    evs = [{"id": "m1", "type": "message-start", "delta": {"message": {"role": "assistant", "citations": []}}},
           {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}},
           {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "Zenith [EMAIL_1]"}}}},
           {"type": "content-end", "index": 0},
           {"type": "content-start", "index": 1, "delta": {"message": {"content": {"type": "text", "text": ""}}}}]  # fmt: skip
    deltas = [{"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": p}}}} for p in pieces]
    sent = 0
    seen = []  # the disguised length after each delta
    for d in deltas:
        sent += len(d["delta"]["message"]["content"]["text"])
        seen.append(sent)
    later: dict[int, list[dict]] = {}
    for n, (s, e) in enumerate(cites):
        # a citation comes after the delta that completes its text (maybe later), before content-end
        first = next(i for i, k in enumerate(seen) if k >= e)
        at = data.draw(st.integers(first, len(deltas) - 1)) if data else len(deltas) - 1
        c = {"start": s, "end": e, "text": text[s:e], "type": "TEXT_CONTENT", "content_index": 1, "sources": []}
        later.setdefault(at, []).extend([{"type": "citation-start", "index": n, "delta": {"message": {"citations": c}}},
                                         {"type": "citation-end", "index": n}])  # fmt: skip
    for i, d in enumerate(deltas):
        evs += [d, *later.get(i, [])]
    evs += [{"type": "content-end", "index": 1}, {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}]
    body = b"".join(_event(ev, compact) for ev in evs)
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    docs = _docs(b"".join(s.feed(p) for p in (data.draw(byte_splits(body, 30)) if data else [body])) + s.flush())

    restored = "".join(d["delta"]["message"]["content"].get("text", "") for d in docs if d["type"] == "content-delta")
    assert restored == R.text(text)
    whole = Offsets.of(text, R)
    got = {d["index"]: d["delta"]["message"]["citations"] for d in docs if d["type"] == "citation-start"}
    assert {n: (c["start"], c["end"]) for n, c in got.items()} == {
        n: (whole.at(s), whole.at(e, True)) for n, (s, e) in enumerate(cites)}  # fmt: skip
    for n, (s, e) in enumerate(cites):
        assert restored[got[n]["start"] : got[n]["end"]] == R.text(text[s:e]) == got[n]["text"]
    order = [(d["type"], d["index"]) for d in docs if d["type"].startswith("citation")]
    assert all(order.index(("citation-start", n)) < order.index(("citation-end", n)) for n in range(len(cites)))
    ends = [i for i, d in enumerate(docs) if d["type"] == "content-end" and d["index"] == 1]
    assert all(i < ends[0] for i, d in enumerate(docs) if d["type"].startswith("citation"))


@given(st.lists(texts, min_size=1, max_size=6), st.integers(0, 3))
def test_text_passed_unparsed_is_counted_as_the_windows_count_it(pieces: list[str], index: int) -> None:
    """What passes unparsed is counted from its bytes: the C-speed count of a read of
    one content's deltas, and the per-delta one, both equal the decoded characters."""
    block = b"".join(_event({"type": "content-delta", "index": index, "delta": {"message": {"content": {"text": p}}}},
                            True) for p in pieces)  # fmt: skip
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    want = {("content", index): sum(len(p) for p in pieces)}
    assert s._count(block, 0, len(block)) == want
    assert stream_module._same_deltas(block, 0, len(block)) in (None, want)
