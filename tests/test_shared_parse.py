"""One parse for the masker and the leak guard (issue 29): the masker hands the guard the
masked body's document (masking.masked_doc) instead of the guard parsing what it produced
again. The document must be exactly what parsing the masked bytes gives, whatever the
masker did; and the guard, walking it with its own walk, must still refuse an original a
sabotaged masker left in."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.base import masking
from disguiselib.base.fields import Dup, loads
from disguiselib.config import Config
from disguiselib.errors import LeakError
from disguiselib.rules.mappings import MappingSet
from strategies import make_rules

RULES = make_rules()
CFG = Config(RULES, (), (), False, (), None)


def canon(doc: object) -> object:
    """A document with its types made visible (Num against str, Dup's pairs)."""
    if isinstance(doc, dict):
        pairs = doc.pairs if type(doc) is Dup else list(doc.items())
        return ("dup" if type(doc) is Dup else "obj", [(k, canon(v)) for k, v in pairs])
    if isinstance(doc, list):
        return ("arr", [canon(v) for v in doc])
    return (type(doc).__name__, doc)


_piece = st.one_of(
    st.sampled_from(["Acme Corp", "alice@example.com", "session_id", 'C:\\Users\\a "b"', "Ünïcødé GmbH", "acme_lookup",
                     "[EMAIL_1]", "Zenith Labs", " ", '"', "\\", "é", "\U0001f600", "{", "}"]),
    st.text(max_size=8),
)  # fmt: skip
_text = st.lists(_piece, max_size=8).map("".join)
_value = st.recursive(
    st.one_of(_text, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=10,
)


@st.composite
def body(draw) -> bytes:
    blocks = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "tool_use", "tool_result", "json"]))
        if kind == "text":
            blocks.append({"type": "text", "text": draw(_text)})
        elif kind == "tool_use":
            blocks.append({"type": "tool_use", "id": f"t{i}", "name": draw(_text), "input": draw(
                st.dictionaries(_text, _value, max_size=3))})  # fmt: skip
        elif kind == "tool_result":
            blocks.append({"type": "tool_result", "tool_use_id": f"t{i}", "content": draw(_text)})
        else:
            blocks.append({"type": "text", "text": json.dumps(draw(_value))})
    doc = {"model": "m", "max_tokens": 5, "system": draw(_text), "metadata": {"user_id": draw(_text)},
           "messages": [{"role": "user", "content": blocks or draw(_text)}]}  # fmt: skip
    return json.dumps(doc, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))).encode()


def _repeats_a_key(doc: object) -> bool:
    if isinstance(doc, dict):
        return type(doc) is Dup or any(_repeats_a_key(v) for v in doc.values())
    return isinstance(doc, list) and any(_repeats_a_key(v) for v in doc)


@settings(max_examples=300, deadline=None)
@given(raw=body())
@example(raw=b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use", '
             b'"id": "t1", "name": "", "input": {"Acme Corp": null, "Zenith Labs": {}}}]}]}')  # fmt: skip
def test_the_shared_document_is_the_parse_of_the_masked_body(raw: bytes) -> None:
    parsed: list = []
    masked, _ = masking.mask_body(raw, MESSAGES_REQUEST, RULES, {}, parsed)
    assert masked == masking.mask_body(raw, MESSAGES_REQUEST, RULES)[0]  # sharing changes nothing masked
    if not parsed:
        # a key masked onto another key of its object (a collision: loads keeps both
        # pairs, a Dup) is not shared, by design (the test below); nothing else
        assert _repeats_a_key(loads(masked.decode())), "a plain JSON body always shares its document"
        return
    got, doc = parsed[0]
    assert got is masked
    assert canon(doc) == canon(loads(masked.decode()))


def test_a_repeated_key_or_a_collision_is_not_shared() -> None:
    raw = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_use", ' \
          b'"id": "t", "name": "n", "input": {"k": "Acme Corp", "k": "Acme Corp"}}]}]}'  # fmt: skip
    parsed: list = []
    masked, _ = masking.mask_body(raw, MESSAGES_REQUEST, RULES, {}, parsed)
    assert b"Acme Corp" not in masked and parsed == []  # the guard parses it itself
    raw = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_use", ' \
          b'"id": "t", "name": "n", "input": {"Acme Corp": 1, "Zenith Labs": 2}}]}]}'  # fmt: skip
    masked, _ = masking.mask_body(raw, MESSAGES_REQUEST, RULES, {}, parsed)
    assert parsed == []  # a key masked onto another: loads would keep both (Dup)


def test_the_guard_walks_the_shared_document(monkeypatch) -> None:
    """The guard does not parse the masked body when the masker shared its document."""
    raw = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Acme Corp, alice@example.com"}]}'
    calls = []
    real = leakguard.loads
    monkeypatch.setattr(leakguard, "loads", lambda s: calls.append(1) or real(s))
    pipeline.mask_request(ANTHROPIC_MESSAGES, raw, CFG, "/v1/messages", [])
    assert calls == []


# -- sabotaged masker: the guard still refuses ------------------------------------------------

BODY = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "text", "text": ' \
       b'"write to alice@example.com"}, {"type": "tool_use", "id": "t", "name": "n", "input": {"org": "Acme Corp"}}]}]}'  # fmt: skip


def test_a_masker_that_masks_nothing_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(masking, "mask_fn", lambda rules, session, memo=None, known=None: lambda v, rule, k: v)
    with pytest.raises(LeakError):
        pipeline.mask_request(ANTHROPIC_MESSAGES, BODY, CFG, "/v1/messages", []).unwrap()


def test_a_masker_that_skips_a_field_is_refused(monkeypatch) -> None:
    """The masker's walk misses the tool input's values; the guard's own walk reads them."""
    real = masking.mask_fn

    def blind(rules, session, memo=None, known=None):
        fn = real(rules, session, memo)
        return lambda v, rule, k: v if "Acme" in v else fn(v, rule, k)

    monkeypatch.setattr(masking, "mask_fn", blind)
    with pytest.raises(LeakError, match="literal"):
        pipeline.mask_request(ANTHROPIC_MESSAGES, BODY, CFG, "/v1/messages", []).unwrap()


def test_a_splice_that_loses_an_edit_is_refused(monkeypatch) -> None:
    """The masked text is not what the edits say (the last edit lost): the shared document
    cannot be shown to be its parse, so the guard parses the bytes that leave, and finds
    the original."""
    real = masking._splice  # the masked text made of the edits (masking.mask_body)
    monkeypatch.setattr(masking, "_splice", lambda s, edits: real(s, edits[:-1]))
    parsed: list = []
    masked, _ = masking.mask_body(BODY, MESSAGES_REQUEST, RULES, {}, parsed)
    assert b"Acme Corp" in masked and parsed == []
    with pytest.raises(LeakError):
        pipeline.mask_request(ANTHROPIC_MESSAGES, BODY, CFG, "/v1/messages", []).unwrap()


def test_a_splice_that_shifts_an_edit_is_refused(monkeypatch) -> None:
    real = masking._splice
    monkeypatch.setattr(masking, "_splice", lambda s, edits: real(s, [(a + 1, b + 1, r) for a, b, r in edits]))
    parsed: list = []
    masking.mask_body(BODY, MESSAGES_REQUEST, RULES, {}, parsed)
    assert parsed == []  # not shared: the guard reads the bytes that leave
    try:
        out = pipeline.mask_request(ANTHROPIC_MESSAGES, BODY, CFG, "/v1/messages", []).unwrap()
    except LeakError:
        return
    assert b"Acme Corp" not in out.body and b"alice@example.com" not in out.body


def test_an_empty_rule_set_shares_the_unchanged_document() -> None:
    empty = make_rules.__globals__["rules"].Rules(MappingSet())
    parsed: list = []
    masked, _ = masking.mask_body(BODY, MESSAGES_REQUEST, empty, {}, parsed)
    assert masked is BODY and parsed and parsed[0][0] is BODY


def _sabotaged_splice(monkeypatch, old: str, new: str) -> None:
    """A masker bug planted in the splice: the masked text with `old` written as `new`
    (the same length: every edit still lands where the trace says)."""
    assert len(old) == len(new)
    real = masking._splice
    monkeypatch.setattr(masking, "_splice", lambda s, edits: real(s, edits).replace(old, new))


def _messages(*texts: str) -> bytes:
    blocks = [{"type": "text", "text": t} for t in texts]
    return json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": blocks}]}).encode()


def test_a_masker_that_changes_text_it_did_not_mask_is_refused(monkeypatch) -> None:
    """Bytes between the masked tokens differ from the client's: the document cannot be
    shown to be the parse of what leaves, so the guard parses the bytes that leave."""
    raw = _messages("abcdefghi", "write to alice@example.com")
    assert isinstance(pipeline.mask_request(ANTHROPIC_MESSAGES, raw, CFG, "/v1/messages", []), pipeline.Masked)
    _sabotaged_splice(monkeypatch, '"abcdefghi"', '"Acme Corp"')
    with pytest.raises(LeakError, match="literal"):
        pipeline.mask_request(ANTHROPIC_MESSAGES, raw, CFG, "/v1/messages", []).unwrap()


def test_a_masked_token_that_does_not_read_back_as_one_string_is_refused(monkeypatch) -> None:
    """A masked string whose token ends early in what leaves (a quote in its text: a
    member injected after it) is not taken for the string the edits meant."""
    raw = _messages("write to alice@example.com 0123456789abcdef")
    _sabotaged_splice(monkeypatch, '0123456789abcdef"', '","k":"Acme Corp"')
    with pytest.raises(LeakError, match="literal"):
        pipeline.mask_request(ANTHROPIC_MESSAGES, raw, CFG, "/v1/messages", []).unwrap()


def test_keys_masked_in_several_objects_are_renamed_in_each() -> None:
    """The shared document of a body whose keys were masked in two objects: each object
    renamed as parsing the masked body gives it, and the guard passes it."""
    tool = {"type": "tool_use", "id": "t", "name": "n", "input": {"Acme Corp": 1, "b": {"alice@example.com": 2}}}
    raw = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [tool]}]}).encode()
    parsed: list = []
    masked, _ = masking.mask_body(raw, MESSAGES_REQUEST, RULES, {}, parsed)
    assert parsed and parsed[0][0] is masked
    assert canon(parsed[0][1]) == canon(loads(masked.decode()))
    assert b"Acme Corp" not in masked and b"alice@example.com" not in masked
    assert isinstance(pipeline.mask_request(ANTHROPIC_MESSAGES, raw, CFG, "/v1/messages", []), pipeline.Masked)


# -- what the masker's exact search found nothing in, the guard does not search again ----------


def _ids_body(ids: list[str]) -> bytes:
    tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"ids": ids}}
    return json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [tool]}]}).encode()


def _counting(monkeypatch) -> tuple[Config, list[bytes]]:
    """A rule set whose pattern's candidates (16 digits) its validator mostly rejects, remembering
    nothing between texts (Found off: a million ids are more than it keeps); the texts
    each exact search reads."""
    from disguiselib.rules.rules import Rules

    rules = make_rules(patterns=[{"name": "CARD", "regex": r"\b\d{16}\b", "validator": "card"}])
    monkeypatch.setattr(rules.found, "limit", 0)
    monkeypatch.setattr(rules.found, "char_limit", 0)
    searched: list[bytes] = []
    real = Rules._find_bytes
    monkeypatch.setattr(
        Rules, "_find_bytes", lambda self, b, *a, **k: searched.append(bytes(b)) or real(self, b, *a, **k)
    )
    return Config(rules, (), (), False, (), None), searched


def test_the_guard_does_not_search_again_a_text_the_masker_found_nothing_in(monkeypatch) -> None:
    """Each candidate id is searched once, by the masker: find() leaves NOTHING in the
    request's memo for it, and the guard reads that (a million hex ids, a twentieth of
    them all digits: 2.0 -> 1.3 s). The string holding an original is changed, and the
    guard searches its masked text itself."""
    cfg, searched = _counting(monkeypatch)
    ids = [f"{4_000_000_000_000_000 + 7 * i:016d}" for i in range(80)] + ["abcdef", "Acme Corp"]
    got = pipeline.mask_request(ANTHROPIC_MESSAGES, _ids_body(ids), cfg, "/v1/messages", [])
    assert isinstance(got, pipeline.Masked) and b"Acme Corp" not in got.body
    kept = [x.encode() for x in ids if x.isdigit() and f'"{x}"'.encode() in got.body]
    assert len(kept) > 40  # (the card validator's Luhn check takes a tenth)
    assert sorted(b for b in searched if b in kept) == sorted(kept)  # each once


def test_a_masker_that_finds_an_original_and_keeps_its_string_is_refused(monkeypatch) -> None:
    """find() marks a text NOTHING only where it found nothing: a masker that asks it,
    is told of the original, and keeps the string as it was, has the guard search that
    string again and refuse it (the ids beside it: each still searched once, by the
    masker)."""
    cfg, searched = _counting(monkeypatch)
    real = masking.mask_fn

    def deaf(rules, session, memo=None, known=None):  # noqa: ANN001, ANN202
        fn = real(rules, session, memo)
        return lambda v, rule, k: (fn(v, rule, k), v)[1]

    monkeypatch.setattr(masking, "mask_fn", deaf)
    body = _ids_body(["4000000000000007", "Acme Corp", "4000000000000014"])
    with pytest.raises(LeakError, match="literal"):
        pipeline.mask_request(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", []).unwrap()
    with pytest.raises(LeakError, match="EMAIL"):
        pipeline.mask_request(ANTHROPIC_MESSAGES, BODY, CFG, "/v1/messages", []).unwrap()
