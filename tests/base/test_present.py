"""What the client's request already holds (base/present.py): the placeholders and the
fakes a request's text holds as the client's own."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.registry import recognise
from disguiselib.base import present
from disguiselib.base.masking import mask_body
from disguiselib.base.present import (
    Held,
    fakes_in,
    placeholders_in,
    present_placeholders,
    py_placeholders_in,
    py_present_placeholders,
)
from disguiselib.config import build_config
from disguiselib.rules import mappings, rawscan
from disguiselib.rules.found import Memo
from disguiselib.rules.rules import Rules, Session
from disguiselib.wire import spanwalk
from strategies import RULES

_NAMES = ("A", "A_1", "KEY", "EMAIL", "US_SSN")
_SHAPE_RULES = Rules(mappings.from_dict({"patterns": [{"name": n, "regex": f"{n.lower()}[0-9]{{3}}"} for n in _NAMES]}))


_SHAPED = st.builds("[{}_{}]".format, st.sampled_from([*_NAMES, "B", "A_B", "KEY_1_2"]), st.integers(0, 12))
_JUNK = st.sampled_from(["[", "]", "_", "1", "0", "9", *_NAMES, "B", "\\u005b", "\\u005d", "x", '"'])


@given(st.lists(st.one_of(_SHAPED, _JUNK), max_size=20))
def test_placeholders_the_client_wrote_are_the_ones_an_alternation_of_the_names_finds(parts: list[str]) -> None:
    """present_placeholders reads any name-shaped placeholder and looks its name up; the
    reference is the alternation of the names it replaced (3.5 ms a megabyte)."""
    s = "".join(parts)
    rx = re.compile(r"\[(?:" + "|".join(map(re.escape, _NAMES)) + r")_[1-9][0-9]*\]")
    want = set(rx.findall(s))
    if "\\u" in s:
        want.update(rx.findall(re.sub(r"\\u00([2-7][0-9a-fA-F])", lambda m: chr(int(m.group(1), 16)), s)))
    assert present_placeholders(s, _SHAPE_RULES) == want


# the compiled scan's alphabet: every character its matcher decides on, escapes that
# decode to printable ASCII and others, characters that make a text of 2 and 4 bytes a
# code point (the scan's loops are typed for each width), a backslash before a `\u00`
_BYTES_WIDE = st.sampled_from(["[", "]", "_", "0", "1", "9", "A", "Z", "a", "\\", "u", "\\u005b", "\\u005d",
                               "\\u0041", "\\u00e9", "\\u007", "\\\\u005b", "é", "€", "😀", " ", *_NAMES])  # fmt: skip


@pytest.mark.skipif(spanwalk.c_shapes is None, reason="the compiled engine is not built (DISGUISE_ENGINE=python)")
@given(st.lists(st.one_of(_SHAPED, _SHAPED.map(lambda p: "\\u005b" + p[1:]), _BYTES_WIDE), max_size=30))
def test_the_compiled_scan_for_placeholders_finds_what_the_reference_finds(parts: list[str]) -> None:
    s = "".join(parts)
    assert present_placeholders(s, _SHAPE_RULES) == py_present_placeholders(s, _SHAPE_RULES)


def test_the_compiled_scan_leaves_a_text_with_an_escaped_ascii_character_to_the_reference() -> None:
    if spanwalk.c_shapes is None:
        pytest.skip("the compiled engine is not built (DISGUISE_ENGINE=python)")
    names = frozenset(_NAMES)
    assert spanwalk.c_shapes("[A_1] \\u005bKEY_2]", names) is None
    got = spanwalk.c_shapes("[A_1] \\u00e9 [KEY_02] [KEY_2] [B_3] [A_1_7] [a_1] [A_] [_1]", names)
    assert got == {"[A_1]", "[KEY_2]", "[A_1_7]"}
    assert spanwalk.c_shapes("😀[US_SSN_10]€[A_9", names) == {"[US_SSN_10]"}


def test_placeholders_the_client_wrote_only_with_escapes_are_found() -> None:
    """No `[` in the text at all: a placeholder spelled wholly with \\u escapes is still
    the client's own."""
    assert present_placeholders('{"a": "\\u005bEMAIL_2\\u005d"}', RULES) == {"[EMAIL_2]"}
    assert present_placeholders('{"a": "\\u00e9"}', RULES) == frozenset()


def test_fakes_the_client_typed_are_found_where_they_overlap() -> None:
    """Two fakes sharing letters in the client's text ("Zenith Labs Inc"): both are the
    client's own, each reserved (one Aho-Corasick pass reporting overlapping matches)."""
    session = Session()
    session.placeholders.update({"Zenith Labs": "Acme Corp", "Labs Inc": "Foo GmbH", "[EMAIL_1]": "a@b.example"})
    assert fakes_in(["Zenith Labs Inc"], session) == {"Zenith Labs", "Labs Inc"}


# -- where the client's own disguises are read: where masking reads, and only there -------

ANTHROPIC = recognise("POST", "/v1/messages").request_rule
RESPONSES = recognise("POST", "/v1/responses").request_rule
FAKES = build_config([], True, [], b"0123456789abcdef0123456789abcdef").rules
MAIL = "alice.smith@contoso.com"


def _user(text: object) -> dict:
    return {"role": "user", "content": text}


def _anthropic(*messages: dict) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 5, "messages": list(messages)}).encode()


def _mask(raw: bytes, rules: Rules = RULES, root: object = ANTHROPIC, scanned: dict | None = None) -> tuple[dict, Session]:
    out, session = mask_body(raw, root, rules, scanned)  # type: ignore[arg-type]
    return json.loads(out), session


def _turn_two(rules: Rules, echo: object) -> tuple[bytes, bytes]:
    """Turn 1 (the original in the first user message) masked, and turn 2: the
    conversation sent back with a thinking block (echo(disguise): its text) and a text
    block as the client got them, then a new user message; both masked, as bytes."""
    first = _user(f"my mail is {MAIL}")
    out1, s1 = mask_body(_anthropic(first), ANTHROPIC, rules)
    (d,) = s1.placeholders
    thinking = {"type": "thinking", "thinking": echo(d), "signature": "c2lnbmF0dXJl"}
    answer = {"role": "assistant", "content": [thinking, {"type": "text", "text": f"Writing to {MAIL}"}]}
    out2, _ = mask_body(_anthropic(first, answer, _user("go on")), ANTHROPIC, rules)
    return out1, out2


@pytest.mark.parametrize("rules", [RULES, FAKES], ids=["placeholders", "fakes"])
def test_a_disguise_in_thinking_is_ours_and_the_prefix_masks_alike_every_turn(rules: Rules) -> None:
    """H1: the model's thinking names the disguise it was given and comes back as it
    went; the next turn's first message gets the same disguise (the prefix's bytes do
    not change: prompt caching), not a new one as if the client had typed the first."""
    out1, out2 = _turn_two(rules, lambda d: f"The user's address is {d}.")
    assert out2.startswith(out1[:-2])  # (turn 1 less its closing `]}`)


def test_a_disguise_in_a_responses_reasoning_summary_is_ours() -> None:
    """Responses reasoning items (summary, encrypted_content) go back as they came: the
    placeholder in their summary is not the client's."""
    first = {"role": "user", "content": f"my mail is {MAIL}"}
    body1 = {"model": "m", "input": [first]}
    out1, _ = _mask(json.dumps(body1).encode(), RULES, RESPONSES)
    assert out1["input"][0]["content"] == "my mail is [EMAIL_1]"
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "ZW5j",
                 "summary": [{"type": "summary_text", "text": "Mail [EMAIL_1] back."}]}  # fmt: skip
    body2 = {"model": "m", "input": [first, reasoning, {"role": "user", "content": "go on"}]}
    out2, s2 = _mask(json.dumps(body2).encode(), RULES, RESPONSES)
    assert out2["input"][0] == out1["input"][0] and s2.placeholders == {"[EMAIL_1]": MAIL}


@pytest.mark.parametrize("url", ["https://crm.test/contact?to={}", "https://crm.test/u/{}/card", "mailto:{}",
                                 "https://crm.test/u/{}!twice"])  # fmt: skip
def test_a_fake_the_client_wrote_percent_encoded_in_a_url_is_its_own(url: str) -> None:
    """H3: masking reads a URL decoded; so does the look for the client's own fakes: an
    original in the same request never gets the fake the client's URL holds (encoded
    twice: decoded once, it is the fake as a URL writes it, which the restorer reads too)."""
    x = FAKES.mask(MAIL, Session())
    coded = urllib.parse.quote(x, safe="")
    if url.endswith("!twice"):
        url, coded = url.removesuffix("!twice"), urllib.parse.quote(coded, safe="")
    text = "see " + url.format(coded) + f" and {MAIL}"
    out, s = _mask(_anthropic(_user(text)), FAKES)
    mine = out["messages"][0]["content"].split(" and ")[1]
    assert x not in s.placeholders and mine != x and s.placeholders[mine] == MAIL


def test_a_text_holding_a_lone_surrogate_is_searched_for_the_clients_fakes_too() -> None:
    """A JSON string may hold half a surrogate pair (`\\ud83d`), which the str automaton
    cannot encode: with disguise_fakes the look for the client's own fakes raised and the
    request was refused. Read as bytes, text by text: the fake the client wrote beside it
    is still found, and the original gets another."""
    x = FAKES.mask(MAIL, Session())
    session = Session()
    session.placeholders[x] = MAIL
    assert fakes_in([f"typed {x} \ud83d", "other"], session) == {x}
    assert fakes_in(["\ud83d alone"], session) == frozenset()
    raw = json.dumps({"model": "m", "max_tokens": 5, "messages": [_user(f"id {x} \ud83d and {MAIL}")]}).encode()
    out, s = _mask(raw, FAKES)
    mine = out["messages"][0]["content"].split(" and ")[1]
    assert x not in s.placeholders and mine != x and s.placeholders[mine] == MAIL


def test_a_fake_the_client_wrote_as_a_url_writes_it_is_its_own_outside_a_url_too() -> None:
    """`local%40post.example` outside a URL is read as written, but the restorer turns
    that form of a fake back too (percent.in_urls): it is the client's, reserved."""
    x = FAKES.mask(MAIL, Session())
    out, s = _mask(_anthropic(_user(f"id {urllib.parse.quote(x, safe='')} and {MAIL}")), FAKES)
    assert x not in s.placeholders and s.placeholders[out["messages"][0]["content"].split(" and ")[1]] == MAIL


def test_a_placeholder_the_client_wrote_percent_encoded_in_a_url_is_skipped() -> None:
    out, s = _mask(_anthropic(_user(f"see https://crm.test/q?who=%5BEMAIL_1%5D and {MAIL}")))
    assert out["messages"][0]["content"].endswith(" and [EMAIL_2]") and s.placeholders == {"[EMAIL_2]": MAIL}


def _document(text: str) -> dict:
    data = base64.b64encode(text.encode()).decode()
    return {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": data}}


@pytest.mark.parametrize("rules", [RULES, FAKES], ids=["placeholders", "fakes"])
def test_a_disguise_in_a_base64_text_document_is_the_clients_own(rules: Rules) -> None:
    """H4: a base64 text/plain document is masked decoded; the disguise its text names
    is the client's, never issued for the original beside it."""
    d = rules.mask(MAIL, Session())
    out, s = _mask(_anthropic(_user([_document(f"Support contact: {d}"), {"type": "text", "text": f"mail {MAIL}"}])), rules)
    mine = out["messages"][0]["content"][1]["text"].removeprefix("mail ")
    assert d not in s.placeholders and mine != d and s.placeholders[mine] == MAIL
    assert base64.b64decode(out["messages"][0]["content"][0]["source"]["data"]).decode() == f"Support contact: {d}"


def test_the_texts_a_raw_pass_left_out_are_read_where_the_body_holds_a_placeholder() -> None:
    """A tool input of many short elements: the raw pass (rules/rawscan.py) leaves the
    clean ones out of the walk; a placeholder among them is still the client's, one in
    thinking still not."""
    items = [f"v{i:x}q" for i in range(6000)]
    thinking = {"type": "thinking", "thinking": "[EMAIL_1] and [EMAIL_2]", "signature": "c2ln"}
    tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": [*items[:3000], "id [EMAIL_2]", *items[3000:]]}}
    raw = _anthropic(_user(f"mail {MAIL}"), {"role": "assistant", "content": [thinking, tool]})
    s = raw.decode()
    assert rawscan.hot(raw, s, RULES, None) is not None  # (the raw pass is made: with a Memo)
    for held, issued in (("[EMAIL_2]", "[EMAIL_1]"), ("[EMAIL_3]", "[EMAIL_1]"), ("[EMAIL_1]", "[EMAIL_2]")):
        memo = Memo()
        out, session = _mask(raw.replace(b'"id [EMAIL_2]"', f'"id {held}"'.encode()), RULES, ANTHROPIC, memo)
        assert session.placeholders == {issued: MAIL} and memo.raw, held


def test_held_reads_the_texts_a_raw_pass_left_out_where_the_body_holds_a_disguise() -> None:
    """Held: the texts a raw pass left out of the walk (seen) are bytes of the body as
    they stand; they are read where the body's text holds a placeholder or a fake (a scan
    of it), and the walk's texts always."""
    x = FAKES.mask(MAIL, Session())
    for s, seen, want in ((f'["id {x}"]', [f"id {x}"], {x}), ('["id"]', [f"id {x}"], set()), (f'["{x}"]', ["id"], set())):
        held, session = Held(), Session()
        held.read(s, [], seen, FAKES, session)
        assert FAKES.mask(MAIL, session) == x and held.clash == frozenset()
        held.done(session)
        assert held.clash == want, s
    for s, seen, want in (('["[EMAIL_2]", "[EMAIL_4]"]', ["[EMAIL_4]"], {"[EMAIL_2]", "[EMAIL_4]"}), ('["x"]', ["[EMAIL_4]"], set())):
        held, session = Held(), Session()
        held.read(s, ["[EMAIL_2]"], seen, RULES, session)
        assert session.reserved == want


def test_held_reads_the_texts_read_decoded_always() -> None:
    """Where the body's text holds no placeholder, the texts the walk read otherwise than
    as they are (those `reads` listed: decoded) are still read."""
    held, session, pieces = Held(), Session(), ["[EMAIL_1] as it is"]
    held.noting(lambda v, rule, key, out: out.append(f"{v} decoded"))("[EMAIL_5]", None, None, pieces)  # type: ignore[arg-type]
    held.read('["x"]', pieces, None, RULES, session)
    assert session.reserved == {"[EMAIL_5]"}


def test_held_every_looks_for_every_fake_the_session_holds() -> None:
    """Held(every=True): the texts are looked at for the session's fakes also where masking
    issued none (a conversation's new elements masked after its earlier ones: turns.py)."""
    session = Session()
    x = FAKES.mask(MAIL, session)  # issued before these texts were masked
    for every, want in ((False, frozenset()), (True, {x})):
        held = Held(every)
        held.read(f'["so {x}"]', [f"so {x}"], None, FAKES, session)
        held.done(session)
        assert held.clash == want


def test_held_shapes_are_every_placeholder_shape_in_the_body_and_its_readings() -> None:
    """Held.shapes: every placeholder shape in the body's text (escaped too) and in the texts
    the walk read (decoded), the client's or an answer's: a superset of what the leak guard
    reads of the body (turns.py)."""
    held, session, pieces = Held(), Session(), ["[EMAIL_1] as it is"]
    held.noting(lambda v, rule, key, out: out.append(f"{v} decoded"))("[EMAIL_5]", None, None, pieces)  # type: ignore[arg-type]
    held.read('["x \\u005bEMAIL_2]"]', pieces, None, RULES, session)
    assert held.shapes == {"[EMAIL_1]", "[EMAIL_2]", "[EMAIL_5]"}


_TEXTS = st.lists(st.lists(st.one_of(_SHAPED, _BYTES_WIDE, st.sampled_from(["\x00", "\\u005bA_1]"])), max_size=8).map("".join), max_size=12)


@given(_TEXTS)
def test_placeholders_in_texts_are_the_references(texts: list[str]) -> None:
    """placeholders_in (the compiled scan over the texts joined) finds what a regex over
    each text finds, escapes read as the characters they are (the texts are decoded)."""
    want = {m.group() for t in texts for m in re.finditer(r"\[(?:A|A_1|KEY|EMAIL|US_SSN)_[1-9][0-9]*\]", t)}
    assert placeholders_in(texts, _SHAPE_RULES) == py_placeholders_in(texts, _SHAPE_RULES) == want


def test_texts_are_scanned_in_chunks_and_a_big_one_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(present, "CHUNK", 3)
    monkeypatch.setattr(present, "JOIN_MAX", 12)
    texts = ["[A_1", "]", "[KEY_2]", "x" * 20, "[A_3]", "", "[US_SSN_4]"]
    assert list(present._joined(texts)) == ["[A_1\x00]\x00[KEY_2]", "x" * 20, "[A_3]", "", "[US_SSN_4]"]
    assert placeholders_in(texts, _SHAPE_RULES) == {"[KEY_2]", "[A_3]", "[US_SSN_4]"}


_ORIGINALS = [f"{u}@{d}" for u in ("alice", "bob.jones", "c.d") for d in ("contoso.com", "fabrikam.org")]
_WORDS = st.sampled_from(["hello", "see", "the", "mail", "and", "[", "]", "x"])


@st.composite
def _conversations(draw: st.DrawFn) -> tuple[Rules, list[str], list[int], list[str]]:
    """(rules, turn 1's user texts, which of turn 1's disguises each thinking block of
    turn 2 echoes, turn 2's new user texts) for random originals among words."""
    rules = draw(st.sampled_from([RULES, FAKES]))
    text = st.lists(st.one_of(_WORDS, st.sampled_from(_ORIGINALS)), min_size=1, max_size=8).map(" ".join)
    first = draw(st.lists(text, min_size=1, max_size=3).filter(lambda ts: any("@" in t for t in ts)))
    echoes = draw(st.lists(st.integers(0, 20), min_size=1, max_size=4))
    return rules, first, echoes, draw(st.lists(text, min_size=1, max_size=2))


@given(_conversations())
def test_a_conversation_whose_thinking_echoes_its_disguises_masks_its_prefix_alike_every_turn(conv: tuple) -> None:
    """Contract §2, §9: turn 1 masked; turn 2 sends it back with the answer's thinking
    (naming turn 1's disguises, as the model was given them: untouched, byte-identical)
    and new user text: the prefix's masked bytes are turn 1's."""
    rules, first, echoes, then = conv
    users = []
    for i, t in enumerate(first):
        users.append(_user(t))
        if i < len(first) - 1:
            users.append({"role": "assistant", "content": "ok"})
    out1, s1 = mask_body(_anthropic(*users), ANTHROPIC, rules)
    issued = list(s1.placeholders) or ["[EMAIL_1]"]
    thinking = " ".join(f"I will write to {issued[k % len(issued)]}." for k in echoes)
    answer = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": thinking, "signature": "c2lnbmF0dXJl"}, {"type": "text", "text": "done"}]}  # fmt: skip
    more = [m for t in then for m in ({"role": "assistant", "content": "ok"}, _user(t))][1:]
    out2, s2 = mask_body(_anthropic(*users, answer, *more), ANTHROPIC, rules)
    assert out2.startswith(out1[:-2])  # (turn 1 less its closing `]}`)
    assert all(s2.placeholders[d] == o for d, o in s1.placeholders.items())


def test_a_rule_sets_pattern_names_are_made_once_and_are_its_own() -> None:
    """present.pattern_names (issue 29: every request read them, ~20 µs): made once a rule
    set, by its patterns tuple; another rule set's are its own, never the last one's."""
    from types import SimpleNamespace

    reads: list[str] = []

    class Named:
        def __init__(self, name: str) -> None:
            self._name = name

        @property
        def name(self) -> str:
            reads.append(self._name)
            return self._name

    def rules_of(*names: str) -> Rules:
        return SimpleNamespace(mappings=SimpleNamespace(patterns=tuple(Named(n) for n in names)))  # type: ignore[return-value]

    one, two = rules_of("EMAIL", "PHONE"), rules_of("TOKEN")
    for _ in range(3):
        assert present_placeholders('{"a":"[EMAIL_1] [TOKEN_2]"}', one) == {"[EMAIL_1]"}
        assert placeholders_in(["[PHONE_3]"], one) == {"[PHONE_3]"}
    assert sorted(reads) == ["EMAIL", "PHONE"]
    assert present_placeholders('{"a":"[EMAIL_1] [TOKEN_2]"}', two) == {"[TOKEN_2]"}
    assert present_placeholders('{"a":"[EMAIL_1] [TOKEN_2]"}', one) == {"[EMAIL_1]"}
