"""Citations a request sends back (base/citeback.py): the offsets an answer's citations
carry, moved to the client's text on the way back, are moved to the masked text on the
way out, so the provider gets its own citations as it wrote them; only their numbers
change."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import pipeline
from disguiselib.apis import registry
from disguiselib.base import citeback
from disguiselib.base.offsets import Offsets, masking_edits
from disguiselib.config import build_config

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
BOB = "bob@corp.example.com"
DOC = f"Acme Corp was founded in 1990. Acme Corp makes anvils. Contact {BOB} for sales."


@pytest.fixture(scope="module")
def cfg():
    d = Path(tempfile.mkdtemp())
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], False, [])


def _span(text: str, frag: str) -> tuple[int, int]:
    a = text.index(frag)
    return a, a + len(frag)


def anthropic_body(doc: str, cited: list[str], *, indent: int | None = None) -> bytes:
    """A next turn: the document, the answer's text block citing it at the client's offsets."""
    cites = [{"type": "char_location", "cited_text": f, "document_index": 0, "document_title": "d",
              "start_char_index": _span(doc, f)[0], "end_char_index": _span(doc, f)[1]} for f in cited]  # fmt: skip
    return json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": [
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": doc},
             "citations": {"enabled": True}},
            {"type": "text", "text": "What do they make?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Anvils.", "citations": cites}]},
        {"role": "user", "content": "And who sells them?"},
    ]}, indent=indent).encode()  # fmt: skip


@pytest.mark.parametrize("indent", [None, 2])
def test_a_document_citation_sent_back_counts_the_masked_document(cfg, indent) -> None:
    raw = anthropic_body(DOC, ["Acme Corp makes anvils.", f"Contact {BOB} for sales."], indent=indent)
    m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, raw, cfg, "/v1/messages", []).unwrap()
    up = json.loads(m.body)
    masked = up["messages"][0]["content"][0]["source"]["data"]
    for c in up["messages"][1]["content"][0]["citations"]:
        assert masked[c["start_char_index"] : c["end_char_index"]] == c["cited_text"]
    # only those numbers changed: the body is masking's, byte for byte, but for them
    plain = raw.replace(b"Acme Corp", b"Zenith Labs").replace(BOB.encode(), b"[EMAIL_1]")
    assert len(m.body) == len(plain) and m.body != plain
    assert [i for i in range(len(plain)) if m.body[i] != plain[i]]  # digits, nothing else
    assert all(chr(m.body[i]).isdigit() for i in range(len(plain)) if m.body[i] != plain[i])


def test_a_bound_inside_an_original_widens_to_its_disguise(cfg) -> None:
    doc = f"Write to {BOB} now."
    cites = [{"type": "char_location", "cited_text": "corp", "document_index": 0, "document_title": "d",
              "start_char_index": doc.index("corp"), "end_char_index": doc.index("corp") + 4}]  # fmt: skip
    body = json.loads(anthropic_body(doc, []))
    body["messages"][1]["content"][0]["citations"] = cites
    m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, json.dumps(body).encode(), cfg, "/v1/messages", []).unwrap()
    c = json.loads(m.body)["messages"][1]["content"][0]["citations"][0]
    masked = json.loads(m.body)["messages"][0]["content"][0]["source"]["data"]
    assert masked[c["start_char_index"] : c["end_char_index"]] == "[EMAIL_1]"


def test_a_batch_s_documents_are_not_taken_for_the_body_s(cfg) -> None:
    """A batch counts documents per request in it: the second request's document 0 is not
    the first's (the session counts them over the body), so its citations are left as
    they came rather than moved by another document's edits."""
    one = json.loads(anthropic_body(DOC, ["Acme Corp makes anvils."]))
    two = json.loads(anthropic_body("Plain text, nothing to mask here at all, none.", ["nothing to mask"]))
    raw = json.dumps({"requests": [{"custom_id": "a", "params": one}, {"custom_id": "b", "params": two}]}).encode()
    m = pipeline.mask_request(registry.ANTHROPIC_BATCHES, raw, cfg, "/v1/messages/batches", []).unwrap()
    up = json.loads(m.body)["requests"]
    c2 = up[1]["params"]["messages"][1]["content"][0]["citations"][0]
    assert (c2["start_char_index"], c2["end_char_index"]) == _span(two["messages"][0]["content"][0]["source"]["data"],
                                                                   "nothing to mask")  # fmt: skip


def test_a_responses_annotation_sent_back_counts_the_masked_text(cfg) -> None:
    text = f"Acme Corp makes anvils (ask {BOB} or see the docs)."
    a, b = _span(text, "docs")
    raw = json.dumps({"model": "m", "input": [
        {"role": "user", "content": "What does Acme Corp make?"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": text, "annotations": [
                {"type": "url_citation", "start_index": a, "end_index": b, "url": "https://example.org/d", "title": "D"},
                {"type": "file_citation", "index": b, "file_id": "file_1", "filename": "d.txt"}]}]},
        {"role": "user", "content": "more"}]}).encode()  # fmt: skip
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, raw, cfg, "/v1/responses", []).unwrap()
    part = json.loads(m.body)["input"][1]["content"][0]
    url, file = part["annotations"]
    assert part["text"][url["start_index"] : url["end_index"]] == "docs"
    assert file["index"] == url["end_index"]


def test_a_chat_message_s_annotations_sent_back_count_the_masked_text(cfg) -> None:
    text = f"Acme Corp: see docs, or {BOB}."
    a, b = _span(text, "docs")
    raw = json.dumps({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": text, "annotations": [
            {"type": "url_citation", "url_citation": {"start_index": a, "end_index": b, "url": "https://e.org", "title": "t"}}]},
        {"role": "user", "content": "more"}]}).encode()  # fmt: skip
    m = pipeline.mask_request(registry.OPENAI_CHAT, raw, cfg, "/v1/chat/completions", []).unwrap()
    msg = json.loads(m.body)["messages"][1]
    u = msg["annotations"][0]["url_citation"]
    assert msg["content"][u["start_index"] : u["end_index"]] == "docs"


def test_a_body_without_citations_is_masking_s_own_bytes(cfg) -> None:
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"Acme Corp {BOB}"}],
                      "metadata": {"start_index": 3}}).encode()  # fmt: skip
    m = pipeline.mask_request(registry.OPENAI_CHAT, raw, cfg, "/v1/chat/completions", []).unwrap()
    assert m.body == raw.replace(b"Acme Corp", b"Zenith Labs").replace(BOB.encode(), b"[EMAIL_1]")


def test_splice_numbers_keeps_every_other_character_and_refuses_to_guess() -> None:
    s = '{"a": [{"start_index" :  5, "x": {"start_index": 7}}, {"start_index":9.0}], "start_index": -1}'
    doc = json.loads(s)
    fixes = {("a", 0, "start_index"): 50, ("a", 0, "x", "start_index"): 70, ("start_index",): 10}
    assert citeback.splice_numbers(s, doc, fixes) == (
        '{"a": [{"start_index" :  50, "x": {"start_index": 70}}, {"start_index":9.0}], "start_index": 10}'
    )
    # a key written with an escape: the number tokens cannot be paired with the members
    t = '{"start_index": 1, "start_ind\\u0065x2": 2, "b": {"start_ind\\u0065x": 3}}'
    assert citeback.splice_numbers(t, json.loads(t), {("start_index",): 4}) is None
    # a string that spells the key is no member
    u = '{"s": "\\"start_index\\": 1", "start_index": 2}'
    assert citeback.splice_numbers(u, json.loads(u), {("start_index",): 3}) == '{"s": "\\"start_index\\": 1", "start_index": 3}'


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6), st.integers(1, 6)), max_size=6))
def test_back_is_at_s_inverse_outside_the_edits(spec) -> None:
    """Offsets.back: where a restored offset lands in the disguised text; at of that is
    the offset again wherever it is not inside an edit, and a bound inside one widens to
    it whole (back(end) >= at's preimage, back(start) <= it). An original is never empty,
    nor is a disguise."""
    text, edits, pos = "", [], 0
    for gap, old, new in spec:
        text += "." * gap
        pos += gap
        edits.append((pos, pos + old, "R" * new))
        text += "D" * old
        pos += old
    text += ".."
    o = masking_edits(text, [(a, b, r) for a, b, r in edits]) if edits else Offsets()
    if not edits:
        o.length = len(text)
    # o: the masked text (each D-run replaced by an R-run) -> the client's (D-runs)
    masked = text
    for a, b, r in reversed(edits):
        masked = masked[:a] + r + masked[b:]
    assert o.length == len(masked) and o.restored_length == len(text)
    for v in range(len(masked) + 1):
        w = o.at(v)
        assert o.back(w) <= v <= o.back(o.at(v, True), True)
    for w in range(len(text) + 1):
        assert o.at(o.back(w)) <= w <= o.at(o.back(w, True), True)


def test_the_first_look_passes_a_body_that_cites_nothing() -> None:
    """A Claude Code body names `file_path` in every Edit and Read: no citation for it, so
    the body is not parsed again (may_cite: the member listing citations, then a mark)."""
    body = json.dumps({"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": "/src/a.py", "index": 2}}]}]}).encode()  # fmt: skip
    assert not citeback.may_cite(body)
    assert citeback.may_cite(body.replace(b'"index"', b'"annotations": [], "start_index"'))
    assert citeback.may_cite(b'{"citations": [{"type": "char_location"}]}')


def test_may_cite_answers_of_a_body_as_of_the_markers_it_holds() -> None:
    ms = citeback.markers()
    assert ms and all(m.startswith(b'"') and m.endswith(b'"') for m in ms)
    for body in (b'{"citations": [{"type": "char_location"}]}', b'{"annotations": [{"start_index": 1}]}',
                 b'{"annotations": []}', b'{"file_path": "x"}', b"{}"):  # fmt: skip
        held = b"\0".join(m for m in ms if m in body)
        assert citeback.may_cite(held) == citeback.may_cite(body)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(citeback.markers()), st.sampled_from([b"x", b'"', b"index", b"\xc3\xbc", b" "])), max_size=12))
def test_the_markers_held_answer_as_the_body_does(parts: list[bytes]) -> None:
    """may_cite_held of the markers a body holds (held_markers: one automaton's pass, kept
    by turns.py for a body remembered) is may_cite of the body."""
    body = b"".join(parts)
    held = citeback.held_markers(body)
    assert [body[i : i + len(citeback.markers()[k])] for i, k in held] == [citeback.markers()[k] for _, k in held]
    assert citeback.may_cite_held(held) == citeback.may_cite(body)


def test_a_conversations_first_request_is_looked_at_for_citations_once(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The full path of a request whose next turn may be cut from it (turns.note_for) finds
    citeback's markers in the masked body in one pass, whose places turns.remember keeps:
    may_cite is not asked of the whole body besides."""
    from turns_util import API, HDRS, any_size

    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(tmp_path / "m.yaml")], True, [])
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Acme Corp", "citations": []}]},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Acme Corp again"}]  # fmt: skip
    raw = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}).encode()
    passes: list[int] = []
    asked: list[int] = []
    held, may_cite = citeback.held_markers, citeback.may_cite
    monkeypatch.setattr(citeback, "held_markers", lambda b: passes.append(len(b)) or held(b))
    monkeypatch.setattr(citeback, "may_cite", lambda b: asked.append(len(b)) or may_cite(b))
    with any_size():
        v = pipeline.mask_request(API, raw, cfg, "/v1/messages", HDRS)
    assert isinstance(v, pipeline.Masked) and v.session.masked and v.turn is not None
    assert passes == [len(v.body)] and len(v.body) not in asked
