"""The masker's second look at what it made (rules/settle.py): what masking one original
revealed is masked too, widened to the whole replacements it touches, and what the
client wrote is what the new placeholder restores to."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.config import build_config
from disguiselib.rules import mappings, settle
from disguiselib.rules.knowing import of_session
from disguiselib.rules.rules import LITERALS, Rules
from disguiselib.rules.session import Session
from disguiselib.wire.text import splice

PW = ('"password": "', '"')


@pytest.fixture
def rules(acme_rules: Rules) -> Rules:
    return acme_rules  # (tests/rules/conftest.py)


@pytest.mark.parametrize(
    ("text", "context", "out"),
    [
        ("+1 415 555 2671 10.1.2.3", None, "[PHONE_1] [PRIVATE_IP_1]"),
        ("Acme Corp Hunter2xyz9", PW, "[PASSWORD_1]"),
        ("vault:bob@corp.example.com", PW, "[PASSWORD_1]"),
        ("x Acme Corp Hunter2xyz9 y", None, "x Zenith Labs Hunter2xyz9 y"),  # no key: no password
        ("Acme Corp", PW, "Zenith Labs"),  # the literal's disguise alone is none
    ],
)
def test_the_masked_text_is_what_the_guard_lets_out(rules: Rules, text: str, context, out: str) -> None:
    s = Session()
    got = splice(text, rules.mask_spans(text, s, context))
    assert got == out
    assert leakguard.first(of_session(rules, s), got, context) is None
    assert rules.restorer(s.placeholders).text(got) == text


def test_a_text_nothing_was_replaced_in_is_not_read_again(rules: Rules, monkeypatch) -> None:
    def fail(*a):  # noqa: ANN002, ANN202
        raise AssertionError("read again")

    monkeypatch.setattr(settle, "settle", fail)
    assert rules.mask_spans("nothing to mask here", Session()) == []


def test_a_text_of_longest_or_more_is_not_read_again(rules: Rules, monkeypatch) -> None:
    """(Its result read whole again would be one more copy of a big text held.)"""
    text = "Acme Corp Hunter2xyz9"
    monkeypatch.setattr(settle, "LONGEST", len(text))
    assert splice(text, rules.mask_spans(text, Session(), PW)) == "Zenith Labs Hunter2xyz9"
    monkeypatch.setattr(settle, "LONGEST", len(text) + 1)
    assert splice(text, rules.mask_spans(text, Session(), PW)) == "[PASSWORD_1]"


def test_after_its_rounds_the_text_is_left_as_it_is(rules: Rules, monkeypatch) -> None:
    """Each round masks more; a text that still shows an original after ROUNDS is left
    for the guard to refuse (here: no round at all)."""
    monkeypatch.setattr(settle, "ROUNDS", 0)
    s = Session()
    got = splice("Acme Corp Hunter2xyz9", rules.mask_spans("Acme Corp Hunter2xyz9", s, PW))
    assert got == "Zenith Labs Hunter2xyz9"
    assert leakguard.first(of_session(rules, s), got, PW) == "PASSWORD"


def test_rounds_go_on_while_each_finds_more(monkeypatch) -> None:
    """A find() that shows one more original each time it reads the text: masked in as
    many rounds as it takes, up to ROUNDS, and no more reads."""
    r = Rules(mappings.from_dict({"patterns": [{"name": "N", "regex": "z"}]}))
    reads: list[str] = []
    real = Rules.find

    def find(self, text: str, memo=None, new=False):  # noqa: ANN001, ANN202
        reads.append(text)
        return real(self, text, memo, new)[:1]  # one original a read: the others wait

    monkeypatch.setattr(Rules, "find", find)
    s = Session()
    assert splice("z z z", r.mask_spans("z z z", s)) == "[N_1] [N_1] [N_1]"  # one original, one placeholder
    assert len(reads) == 4  # the first find, then one a round till none is left
    reads.clear()
    assert splice("z z z z z z z", r.mask_spans("z z z z z z z", Session())).count("[N_") == 1 + settle.ROUNDS
    assert len(reads) == 1 + settle.ROUNDS


def test_a_literal_found_in_the_result_is_left_to_the_guard(monkeypatch) -> None:
    """No replacement makes a literal's original; were one found, there would be no
    placeholder to give it: the edits stay as they are."""
    r = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [{"name": "N", "regex": "[0-9]+"}]}))
    calls = []
    real = Rules.find

    def find(self, text: str, memo=None, new=False):  # noqa: ANN001, ANN202
        calls.append(text)
        return real(self, text, memo, new) if len(calls) == 1 else [(LITERALS, 0, 2), ("N", 3, 4)]

    monkeypatch.setattr(Rules, "find", find)
    assert r.mask_spans("12 Acme Corp", Session()) == [(0, 2, "[N_1]"), (3, 12, "Zenith Labs")]


# -- widened: what a span found in the result is in the text -----------------------------


def _reference(text: str, edits: list, found: list) -> list:
    """widened by brute force: each character of the result traced to where it came
    from (a character of text, or edit k's replacement)."""
    src: list[tuple[int, int]] = []  # per character of the result: its range in text
    pos = 0
    for a, b, rep in edits:
        src += [(i, i + 1) for i in range(pos, a)]
        src += [(a, b)] * len(rep)
        pos = b
    src += [(i, i + 1) for i in range(pos, len(text))]
    regions: list[list] = []
    for label, x, y in found:
        ta, tb = min(src[p][0] for p in range(x, y)), max(src[p][1] for p in range(x, y))
        if regions and ta < regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], tb)
        else:
            regions.append([ta, tb, label])
    kept = [e for e in edits if not any(e[0] < tb and ta < e[1] for ta, tb, _ in regions)]
    return sorted(kept + [(ta, tb, f"<{label}:{text[ta:tb]}>") for ta, tb, label in regions])


class _Named:
    """A session that names a region by its label and original (what widened gave it)."""

    def placeholder(self, label: str, original: str, faker=None) -> str:  # noqa: ANN001
        return f"<{label}:{original}>"

    def count(self, label: str, original: str) -> None:
        pass


class _NoFaker:
    faker = None


@st.composite
def _case(draw):  # noqa: ANN001, ANN202
    text = draw(st.text("ab.", min_size=1, max_size=30))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    edits, last = [], -1
    for a, b in zip(cuts[::2], cuts[1::2]):
        if a > last and b > a:  # apart, each of at least one character, replaced by one or more
            edits.append((a, b, draw(st.text("XY", min_size=1, max_size=5))))
            last = b
    out = splice(text, edits)
    marks = sorted(draw(st.lists(st.integers(0, len(out)), max_size=8)))
    found, last = [], -1
    for x, y in zip(marks[::2], marks[1::2]):
        if x >= last and y > x:
            found.append((draw(st.sampled_from("PQ")), x, y))
            last = y
    return text, edits, found


@settings(max_examples=500, deadline=None)
@given(_case())
@example(("aaaa", [(1, 2, "XXX")], [("P", 0, 2), ("Q", 3, 5)]))  # two spans touching one edit: one region
@example(("aaaa", [(1, 2, "XXX")], [("P", 0, 1), ("Q", 4, 5)]))  # beside it: apart, the edit kept
@example(("aaaa", [], [("P", 0, 2), ("Q", 2, 4)]))  # side by side: two regions
@example(("aaaa", [(0, 1, "XX"), (2, 3, "XXX")], [("P", 2, 4)]))  # ends inside the second edit's replacement
@example(("aaaa", [(0, 1, "X"), (2, 3, "Y")], [("P", 0, 1)]))  # the edit after the region's is kept
def test_a_span_found_in_the_result_is_the_text_under_it_widened_to_whole_edits(case) -> None:
    text, edits, found = case
    got = settle.widened(text, edits, found, _Named(), _NoFaker())  # type: ignore[arg-type]
    assert got == _reference(text, edits, found)
    assert all(a < b <= c for (a, b, _), (c, _, _) in zip(got, got[1:]))  # sorted, apart


def test_a_text_is_read_in_its_context_as_the_masker_and_the_guard_read_it() -> None:
    """A pattern's match reaching into the context is cut at it; where a literal found
    would reach into it, the text is read alone (one reading: settle.in_context)."""
    r = Rules(mappings.from_dict({"literals": {"k: v": "x"}, "patterns": [{"name": "KV", "regex": "key=[a-z]+"}]}))
    assert settle.in_context(r.find, "=abc", ("key", "")) == [("KV", 0, 4)]
    assert settle.in_context(r.find, "abc", ("key=", "def")) == [("KV", 0, 3)]
    assert settle.in_context(r.find, " v key=ab", ("k:", "")) == [("KV", 3, 9)]  # the literal `k: v` reached in
    assert settle.in_context(r.find, "key=ab", None) == [("KV", 0, 6)]


def test_what_is_read_in_context_lies_in_the_text() -> None:
    """A match wholly in the context, or touching the text only at its edge, is none of
    the text's; a literal that begins or ends where the text does lies in it (the
    context is still read: a pattern that needs it is found)."""
    r = Rules(mappings.from_dict({"literals": {"k: v": "x"},
                                  "patterns": [{"name": "KEY", "regex": "key="}, {"name": "END", "regex": "END"},
                                               {"name": "Z", "regex": "Z[0-9]{2}"}, {"name": "N", "regex": "[0-9]{2}Y"}]}))  # fmt: skip
    assert settle.in_context(r.find, "ab", ("key=", "")) == []
    assert settle.in_context(r.find, "ab", ("", "END")) == []
    assert settle.in_context(r.find, "ab", ("key=", "END")) == []
    assert settle.in_context(r.find, "k: v Z1", ("", "2")) == [(LITERALS, 0, 4), ("Z", 5, 7)]
    assert settle.in_context(r.find, "1Y k: v", ("9", "")) == [("N", 0, 2), (LITERALS, 3, 7)]


def test_the_memo_reaches_every_find(rules: Rules) -> None:
    """What masking's scan found (the memo) is handed to each find(), in context or not,
    the masker's second look's too."""
    memos: list = []

    def find(text: str, memo=None):  # noqa: ANN001, ANN202
        memos.append(memo)
        return []

    memo = {"x": None}
    settle.in_context(find, "t", ("a", "b"), memo)
    settle.in_context(find, "t", None, memo)
    assert memos == [memo, memo]
    seen: list = []
    real = Rules.find

    def spy(self, text: str, memo=None, new=False):  # noqa: ANN001, ANN202
        seen.append(memo)
        return real(self, text, memo, new)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Rules, "find", spy)
        rules.mask_spans("Acme Corp Hunter2xyz9", Session(), PW, memo)
    assert len(seen) >= 2 and all(m is memo for m in seen)


def test_what_the_second_look_masks_is_counted_and_faked_as_any_original(tmp_path) -> None:
    """The new placeholder is counted under its rule, and with disguise_fakes it is the
    rule's fake, as any other original's."""
    from disguiselib.rules import fakes

    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    text = "x.Acme Corp@corp.example.com"
    plain = build_config([str(tmp_path / "m.yaml")], True, []).rules
    s = Session()
    assert splice(text, plain.mask_spans(text, s)) == "x.[EMAIL_1]"
    assert s.placeholders == {"[EMAIL_1]": "Acme Corp@corp.example.com"} and s.counts == {"literals": 1, "EMAIL": 1}
    faked = build_config([str(tmp_path / "m.yaml")], True, [], fakes.load_key(str(tmp_path / "fakes.key"))).rules
    s = Session()
    got = splice(text, faked.mask_spans(text, s))
    (fake,) = s.placeholders
    assert got == "x." + fake and "@" in fake and "[" not in fake and s.placeholders[fake] == "Acme Corp@corp.example.com"


# -- what the second look reads: the whole result, not the places of its edits ----------


def _id_rules(regex: str) -> Rules:
    return Rules(mappings.from_dict({"literals": {"Acme-Corp": "Zenith Labs"}, "patterns": [{"name": "ID", "regex": regex}]}))


def test_a_match_the_result_makes_may_begin_lines_before_any_edit() -> None:
    """A rule that repeats a class holding line breaks without bound (of the shipped
    patterns, 129 of 158 repeat without bound, 66 name such a class) matches in the
    result from lines nothing was replaced in, unchanged themselves and beside
    unchanged ones: the second look reads the whole result (were it to read again only
    the lines of the edits and their neighbours, keeping the first reading elsewhere, it
    would miss this original)."""
    r = _id_rules(r"ID\s*=\s*[A-Za-z\s]+;")
    text = "ID =\n\n\nfoo\nAcme-Corp;"  # (the hyphen: no match before it is replaced)
    assert r.find(text) == [(LITERALS, 11, 20)]
    s = Session()
    assert r.mask_spans(text, s) == [(0, len(text), "[ID_1]")]  # `foo`, written by the client, lies in it
    assert s.placeholders == {"[ID_1]": text}
    out = "ID =\n\n\nfoo\nZenith Labs;"  # the result read: its spans remembered for the guard
    assert r.found.get(r.found.digest(out.encode())) == (("ID", 0, len(out)),)


def test_a_match_the_result_makes_may_end_lines_after_any_edit() -> None:
    """The same the other way: a match that begins in a replacement and ends lines after
    it is what the guard is told of the result (the rules' memory), though the disguise
    makes it no original (knowing.py) and the edits stay."""
    r = _id_rules(r"[A-Z][a-z]+ [A-Z][a-z]+:[a-z\s]+;")
    text = "Acme-Corp:\nfoo\n\nbar\n;"
    assert r.find(text) == [(LITERALS, 0, 9)]
    assert r.mask_spans(text, Session()) == [(0, 9, "Zenith Labs")]
    out = "Zenith Labs:\nfoo\n\nbar\n;"
    assert r.found.get(r.found.digest(out.encode())) == (("ID", 0, len(out)),)
