"""Anthropic `char_location` citations count characters of the document the provider read
(the request's document, masked): moved to the document the client sent, in whole
messages and in `citations_delta` events alike (base/offsets.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from anthropic_util import sse
from disguiselib import pipeline
from disguiselib.apis import registry
from disguiselib.base.masking import mask_request_body
from disguiselib.wire.sse import Framer
from strategies import LITERALS, RULES, byte_splits, make_rules

API = registry.ANTHROPIC_MESSAGES
SEP = "|"  # in no original, disguise or word below: where the masked document may be cut
ORIGINALS = [*LITERALS, "bob@corp.example.com", "x.y@mail.example.org"]
_piece = st.one_of(
    st.sampled_from(ORIGINALS), st.text(alphabet='xyz é😀\n"\\', max_size=5), st.just("")
)
documents_ = st.lists(_piece, max_size=8).map(SEP.join)


def request(docs: list[str | None], stream: bool = False) -> bytes:
    """A Messages request with these documents (None: a Files API document) before a question."""
    blocks = [
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}, "citations": {"enabled": True}}
        if d is None else
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": d},
         "title": "doc", "citations": {"enabled": True}}
        for d in docs
    ]  # fmt: skip
    blocks.append({"type": "text", "text": "Summarise with citations"})
    body = {"model": "claude", "max_tokens": 10, "stream": stream, "messages": [{"role": "user", "content": blocks}]}
    return json.dumps(body).encode()


def masked(docs: list[str | None], rules=RULES, api=API) -> tuple[list[str | None], pipeline.Masked]:
    """The documents as the provider reads them, and the request masked."""
    body, session = mask_request_body(request(docs), api, rules)
    got = json.loads(body)["messages"][0]["content"]
    return [b["source"].get("data") for b in got[: len(docs)]], pipeline.Masked(body, session)


def cite(doc: int, masked_doc: str, start: int, end: int) -> dict:
    return {"type": "char_location", "cited_text": masked_doc[start:end], "document_index": doc,
            "document_title": "doc", "start_char_index": start, "end_char_index": end}  # fmt: skip


def whole(m: pipeline.Masked, cites: list[dict], rules=RULES, api=API) -> list[dict]:
    out = {"id": "m", "type": "message", "role": "assistant", "model": "c", "stop_reason": "end_turn",
           "content": [{"type": "text", "text": "Cited.", "citations": cites}]}  # fmt: skip
    body = pipeline.restore_whole(api, m.restorer(rules), json.dumps(out).encode(), "application/json")
    return json.loads(body)["content"][0]["citations"]


def streamed(m: pipeline.Masked, cites: list[dict], cut=lambda b: [b], rules=RULES) -> list[dict]:
    evs = [sse("message_start", {"type": "message_start", "message": {
               "id": "m", "type": "message", "role": "assistant", "content": [], "model": "c"}}),
           sse("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": "", "citations": []}})]  # fmt: skip
    evs += [sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "citations_delta", "citation": c}}) for c in cites]  # fmt: skip
    evs += [sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": "Cited."}}),
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse("message_stop", {"type": "message_stop"})]  # fmt: skip
    rev = pipeline.reverser_for(API, m.restorer(rules), "text/event-stream")
    assert rev is not None
    out = b"".join(rev.feed(p) for p in cut(b"".join(evs))) + rev.flush()
    f = Framer()
    datas = [json.loads(e.data) for e in f.feed(out) + f.flush() if e.data is not None]
    return [d["delta"]["citation"] for d in datas if d.get("delta", {}).get("type") == "citations_delta"]


def test_the_probe_s_citations_point_into_the_client_s_document() -> None:
    doc = "Acme Corp is great. Other text here."
    (m_doc,), m = masked([doc])
    assert m_doc == "Zenith Labs is great. Other text here."
    cites = [cite(0, m_doc, 0, 21), cite(0, m_doc, 22, 38)]
    for got in (whole(m, cites), streamed(m, cites)):
        assert [(c["start_char_index"], c["end_char_index"]) for c in got] == [(0, 19), (20, 36)]
        assert [doc[c["start_char_index"] : c["end_char_index"]] for c in got] == [c["cited_text"] for c in got]


def test_a_citation_with_nothing_to_restore_is_read_in_a_stream_too() -> None:
    # one literal: nothing in the citation's event could begin a disguise, so it would
    # pass unparsed (whole, in one read with the events around it) but for its type
    rules = make_rules(literals={"Acme Corp": "Zenith Labs"}, patterns=[], strip=[])
    doc = "Acme Corp is great. Other text here."
    (m_doc,), m = masked([doc], rules)
    got = streamed(m, [cite(0, m_doc, 22, 38)], rules=rules)  # type: ignore[arg-type]
    assert (got[0]["start_char_index"], got[0]["end_char_index"]) == (20, 36)


@pytest.mark.parametrize("api", [registry.VERTEX_ANTHROPIC, registry.BEDROCK_INVOKE], ids=lambda a: a.name)
def test_the_apis_that_take_the_messages_body_move_them_too(api: registry.Api) -> None:
    doc = "Acme Corp is great. Other text here."
    (m_doc,), m = masked([doc], api=api)
    got = whole(m, [cite(0, m_doc, 22, 38)], api=api)  # type: ignore[arg-type]
    assert (got[0]["start_char_index"], got[0]["end_char_index"]) == (20, 36)


def test_a_bound_inside_a_disguise_widens_to_its_whole_original() -> None:
    doc = "see Acme Corp now"
    (m_doc,), m = masked([doc])
    assert m_doc == "see Zenith Labs now"
    for got in (whole(m, [cite(0, m_doc, 6, 12)]), streamed(m, [cite(0, m_doc, 6, 12)])):
        assert (got[0]["start_char_index"], got[0]["end_char_index"]) == (4, 13)  # "Acme Corp"


def test_document_index_counts_every_document_of_the_request() -> None:
    # Anthropic: "0-indexed from the list of all document content blocks in the request
    # (spanning across all messages)"; a Files API document counts, is not moved
    docs = ["Acme Corp.", None, "a bob@corp.example.com b"]
    m_docs, m = masked(docs)
    m2 = m_docs[2]
    assert m2 == "a [EMAIL_1] b"
    cites = [cite(2, m2, 12, 13), cite(1, "x" * 40, 12, 13), cite(0, m_docs[0], 11, 12)]  # type: ignore[arg-type]
    for got in (whole(m, cites), streamed(m, cites)):
        assert [(c["start_char_index"], c["end_char_index"]) for c in got] == [(23, 24), (12, 13), (9, 10)]
        assert got[0]["cited_text"] == "b" and docs[2][23:24] == "b"  # type: ignore[index]


def test_no_moved_document_no_change_and_no_parsing() -> None:
    doc = "Nothing masked here."
    (m_doc,), m = masked([doc])
    assert m.session.documents == {} and not m.restorer(RULES).documents
    c = [cite(0, m_doc, 8, 14)]
    assert whole(m, c) == c and streamed(m, c) == c


def test_an_index_past_the_masked_document_or_of_no_document_stays() -> None:
    (m_doc,), m = masked(["Acme Corp"])
    cites = [cite(0, m_doc, 0, 99), cite(5, m_doc, 11, 11), {**cite(0, m_doc, 11, 11), "document_index": True}]
    assert [(c["start_char_index"], c["end_char_index"]) for c in whole(m, cites)] == [(0, 99), (11, 11), (11, 11)]


@given(st.lists(documents_, min_size=1, max_size=3), st.data())
@example(["Acme Corp|xy|bob@corp.example.com|é"], None)
def test_whole_and_streamed_citations_agree_and_point_at_their_cited_text(docs: list[str], data) -> None:
    m_docs, m = masked(docs)  # type: ignore[arg-type]
    cites, aligned = [], []
    for k, md in enumerate(m_docs):
        assert md is not None
        cuts = [0, *(i for i, ch in enumerate(md) if ch == SEP), *(i + 1 for i, ch in enumerate(md) if ch == SEP)]
        cuts = sorted({*cuts, len(md)})
        for _ in range(2):
            if data is None:
                a, b = 0, len(md)
            else:
                a, b = sorted(data.draw(st.lists(st.sampled_from(cuts), min_size=2, max_size=2)))
            cites.append(cite(k, md, a, b))
            aligned.append(True)
        if data is not None:  # a span cut anywhere, a disguise's inside included
            a, b = sorted(data.draw(st.lists(st.integers(0, len(md)), min_size=2, max_size=2)))
            cites.append(cite(k, md, a, b))
            aligned.append(False)
    w = whole(m, cites)
    cut = (lambda b: data.draw(byte_splits(b, 30))) if data is not None else (lambda b: [b])
    assert streamed(m, cites, cut) == w
    for c, ok in zip(w, aligned, strict=True):
        doc = docs[c["document_index"]]
        assert 0 <= c["start_char_index"] <= c["end_char_index"] <= len(doc)
        if ok:
            assert doc[c["start_char_index"] : c["end_char_index"]] == c["cited_text"]
