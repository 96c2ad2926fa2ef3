"""Where an offset of the text as the model wrote it lands in the restored text
(base/offsets.py): built whole, or piece by piece by a window, the same."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis import registry
from disguiselib.apis.openai import assistants as openai_assistants
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses_fields as openai_responses
from disguiselib.apis.openai import stored as openai_stored
from disguiselib.base.holdback import Window
from disguiselib.base.masking import mask_request_body
from disguiselib.base.offsets import Offsets, TrackedWindow, masking_edits, quote_fixes
from disguiselib.base.restore import restore_doc
from disguiselib.wire.jsonspan import Spans
from strategies import LITERALS, PLACEHOLDERS, RULES, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def test_an_offset_moves_by_what_was_restored_before_it() -> None:
    text = "Zenith Labs at [EMAIL_1] now"
    o = Offsets.of(text, R)
    assert R.text(text) == "Acme Corp at bob@corp.example.com now"
    assert [o.at(i) for i in (0, 11, 12, 15, 24, 25)] == [0, 9, 10, 13, 33, 34]
    # a bound inside a disguise widens to its whole original
    assert (o.at(3), o.at(3, end=True), o.at(18), o.at(18, end=True)) == (0, 9, 13, 33)
    assert not Offsets.of("nothing to restore", R).moved
    # a strip match is removed: what follows moves back
    assert Offsets.of("a [[reply_to_current]] b", R).at(23) == 3


@given(texts, st.data())
def test_a_tracked_window_notes_what_whole_text_restoring_moves(text: str, data) -> None:
    o = Offsets()
    w = TrackedWindow(R, Window.TEXT, o)
    out = "".join(w.feed(p) for p in data.draw(splits(text))) + w.flush()
    assert out == R.text(text)  # a window still
    whole = Offsets.of(text, R)
    assert o.length == len(text)
    for i in range(len(text) + 1):
        assert (o.at(i), o.at(i, True)) == (whole.at(i), whole.at(i, True)), i


def test_skipped_text_counts_toward_the_offsets() -> None:
    o = Offsets()
    w = TrackedWindow(R, Window.TEXT, o)
    o.skip(4)  # "abc " passed unparsed
    assert w.feed("Zenith Labs x") + w.flush() == "Acme Corp x"
    assert (o.at(4), o.at(15), o.at(17)) == (4, 13, 15)


# -- citations into a document's own text (offsets.citation_fixes, through restore_doc) --------
#
# OpenAI's annotations count characters of the text the model wrote (the disguised one):
# a Chat message's content, a Responses output_text part's text, an Assistants text's
# value. The tables are the APIs' own; a text is made of pieces, each restored on its own
# (a disguise, a strip tag, a word), joined by spaces, and a citation covers whole pieces:
# in the restored document it must cover exactly those pieces restored.

_PIECES = [*LITERALS.values(), "[EMAIL_1]", "[EMAIL_2]", "[EMAIL_9]", "[[reply_to_current]]", "the", "é", "😀", "x"]


def _chat(text: str, cites: list[tuple[int, int]]) -> tuple[dict, object, Callable[[dict], tuple[str, list]]]:
    doc = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
           "annotations": [{"type": "url_citation", "url_citation": {"start_index": s, "end_index": e,
                                                                       "url": "https://zenith.example/", "title": "Zenith Labs"}}
                           for s, e in cites]}}]}  # fmt: skip

    def read(out: dict) -> tuple[str, list]:
        m = out["choices"][0]["message"]
        return m["content"], [(a["url_citation"]["start_index"], a["url_citation"]["end_index"]) for a in m["annotations"]]

    return doc, openai_chat.CHAT_RESPONSE, read


def _responses(text: str, cites: list[tuple[int, int]]) -> tuple[dict, object, Callable[[dict], tuple[str, list]]]:
    part = {"type": "output_text", "text": text, "logprobs": [],
            "annotations": [{"type": "url_citation", "start_index": s, "end_index": e, "url": "https://x/",
                             "title": "Zenith Labs"} for s, e in cites]}  # fmt: skip
    doc = {"id": "resp_1", "object": "response", "status": "completed",
           "output": [{"id": "msg_1", "type": "message", "role": "assistant", "content": [part]}]}  # fmt: skip

    def read(out: dict) -> tuple[str, list]:
        p = out["output"][0]["content"][0]
        return p["text"], [(a["start_index"], a["end_index"]) for a in p["annotations"]]

    return doc, openai_responses.RESPONSE_OBJECT, read


def _responses_points(text: str, cites: list[tuple[int, int]]) -> tuple[dict, object, Callable[[dict], tuple[str, list]]]:
    # file_citation and file_path count one position each (`index`): a span's start as one,
    # its end as the other
    anns = [a for s, e in cites for a in ({"type": "file_citation", "file_id": "file-1", "filename": "Zenith Labs.pdf",
                                           "index": s}, {"type": "file_path", "file_id": "file-2", "index": e})]  # fmt: skip
    part = {"type": "output_text", "text": text, "annotations": anns}
    doc = {"id": "resp_1", "object": "response", "status": "completed",
           "output": [{"id": "msg_1", "type": "message", "role": "assistant", "content": [part]}]}  # fmt: skip

    def read(out: dict) -> tuple[str, list]:
        p = out["output"][0]["content"][0]
        at = [a["index"] for a in p["annotations"]]
        return p["text"], list(zip(at[::2], at[1::2], strict=True))

    return doc, openai_responses.RESPONSE_OBJECT, read


def _assistants(text: str, cites: list[tuple[int, int]]) -> tuple[dict, object, Callable[[dict], tuple[str, list]]]:
    doc = {"id": "msg_1", "object": "thread.message", "role": "assistant", "content": [{"type": "text", "text": {
        "value": text, "annotations": [{"type": "file_citation", "text": "[1]", "start_index": s, "end_index": e,
                                        "file_citation": {"file_id": "file-1"}} for s, e in cites]}}]}  # fmt: skip

    def read(out: dict) -> tuple[str, list]:
        t = out["content"][0]["text"]
        return t["value"], [(a["start_index"], a["end_index"]) for a in t["annotations"]]

    return doc, openai_stored.THREAD_MESSAGE, read


SHAPES = {"chat": _chat, "responses": _responses, "responses_points": _responses_points, "assistants": _assistants}


@pytest.mark.parametrize("shape", SHAPES)
@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10), data=st.data())
def test_citations_cover_the_same_pieces_once_restored(shape: str, pieces: list[str], data) -> None:
    starts = [sum(len(p) + 1 for p in pieces[:i]) for i in range(len(pieces) + 1)]
    spans = data.draw(st.lists(st.tuples(st.integers(0, len(pieces)), st.integers(0, len(pieces))).map(sorted),
                               max_size=4))  # fmt: skip
    text = " ".join(pieces)
    bound = lambda i, end: min(starts[i] - (1 if end and i else 0), len(text))  # noqa: E731 - a piece's end, no space
    cites = [(bound(i, False), bound(j, True) if j > i else bound(i, False)) for i, j in spans]
    doc, rule, read = SHAPES[shape](text, cites)
    raw = json.dumps(doc, ensure_ascii=False)
    out = json.loads(restore_doc(raw, json.loads(raw), rule, R))
    restored, moved = read(out)
    back = [R.text(p) for p in pieces]
    assert restored == " ".join(back)
    for (i, j), (s, e) in zip(spans, moved):
        assert restored[s:e] == " ".join(back[i:j]), (i, j)


def test_a_citation_cut_by_a_disguise_widens_to_its_original_and_deltas_stay() -> None:
    text = "Zenith Labs [[reply_to_current]] mailed [EMAIL_1]."
    doc, rule, read = _responses(text, [(3, 8), (33, 39), (40, 49), (0, len(text))])
    raw = json.dumps(doc)
    restored, moved = read(json.loads(restore_doc(raw, doc, rule, R)))
    assert restored == "Acme Corp  mailed bob@corp.example.com."
    assert [restored[s:e] for s, e in moved] == ["Acme Corp", "mailed", "bob@corp.example.com", restored]
    # a streamed piece (a delta's text) counts characters of the whole text: left as it came
    delta = {"id": "msg_1", "object": "thread.message.delta", "delta": {"content": [{"index": 0, "type": "text",
             "text": {"value": "Zenith Labs", "annotations": [{"type": "file_citation", "start_index": 0,
                                                               "end_index": 11}]}}]}}  # fmt: skip
    raw = json.dumps(delta)
    out = json.loads(restore_doc(raw, delta, openai_assistants.STREAM_EVENT, R))
    ann = out["delta"]["content"][0]["text"]["annotations"][0]
    assert (ann["start_index"], ann["end_index"]) == (0, 11)
    assert out["delta"]["content"][0]["text"]["value"] == "Acme Corp"


@given(texts, st.data())
def test_in_utf8_bytes_a_tracked_window_moves_offsets_as_characters_do(text: str, data) -> None:
    o = Offsets(utf8=True)
    w = TrackedWindow(R, Window.TEXT, o)
    out = "".join(w.feed(p) for p in data.draw(splits(text))) + w.flush()
    whole = Offsets.of(text, R)
    assert o.length == len(text.encode("utf-8", "surrogatepass"))
    nb = lambda s: len(s.encode("utf-8", "surrogatepass"))  # noqa: E731
    for i in range(len(text) + 1):
        for end in (False, True):
            assert o.at(nb(text[:i]), end) == nb(out[: whole.at(i, end)]), (i, end)


# -- citations into the request's own documents (offsets.masking_edits, documents, quote_fixes) --


def test_masking_edits_say_where_each_disguise_is_in_the_masked_text() -> None:
    o = masking_edits("see Acme Corp now", Spans([(4, 13, "Zenith Labs")]))
    assert o is not None and o.length == len("see Zenith Labs now") and o.moved
    assert [o.at(i) for i in (0, 4, 15, 19)] == [0, 4, 13, 17]
    # a bound inside the disguise: the original's start, or its end for an end
    assert (o.at(6), o.at(6, end=True), o.at(15, end=True)) == (4, 13, 13)
    assert masking_edits("same", "same") is None and masking_edits("x", Spans()) is None
    assert not masking_edits("a session_id", Spans([(2, 12, "thread_idX")])).moved  # type: ignore[union-attr]
    # a new value without its edits (a text read as loose JSON or media): one edit from the
    # first character that changed to the last
    o = masking_edits("[x Acme Corp y", "[x Zenith Labs y")
    assert o is not None and (o.at(3), o.at(14), o.at(16), o.at(5, end=True)) == (3, 12, 14, 12)


def test_documents_are_counted_in_the_request_s_order_tool_results_included() -> None:
    doc = lambda d: {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": d}}  # noqa: E731
    body = {"model": "c", "messages": [
        {"role": "user", "content": [doc("Acme Corp."), {"type": "document", "source": {"type": "file", "file_id": "f"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [doc("no original")]},
                                     doc("x bob@corp.example.com"), doc("Acme Corp")]},
    ]}  # fmt: skip
    _, session = mask_request_body(json.dumps(body).encode(), registry.ANTHROPIC_MESSAGES, RULES)
    assert sorted(session.documents) == [0, 3, 4]
    assert session.documents[3].at(len("x [EMAIL_1]")) == len("x bob@corp.example.com")


def test_quote_fixes_move_only_bounds_of_a_moved_document() -> None:
    o = masking_edits("Acme Corp is", Spans([(0, 9, "Zenith Labs")]))
    assert o is not None
    cites = {"content": [{"type": "text", "citations": [
        {"type": "char_location", "document_index": 0, "start_char_index": 12, "end_char_index": 14},
        {"type": "char_location", "document_index": 1, "start_char_index": 12, "end_char_index": 14},
        {"type": "char_location", "document_index": True, "start_char_index": 12, "end_char_index": 14},
        {"type": "page_location", "document_index": 0, "start_char_index": 12, "end_char_index": 14},
        {"type": "char_location", "document_index": 0, "start_char_index": 15, "end_char_index": True},
    ]}]}  # fmt: skip
    fixes = quote_fixes(cites, {0: o})
    assert sorted(fixes) == [(("content", 0, "citations", 0, "end_char_index"), 12),
                             (("content", 0, "citations", 0, "start_char_index"), 10)]  # fmt: skip
