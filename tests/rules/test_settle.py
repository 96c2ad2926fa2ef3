"""The masker's second look at what it made (rules/settle.py): what masking one original
revealed is masked too, widened to the whole replacements it touches, and what the
client wrote is what the new placeholder restores to."""

from __future__ import annotations

import ahocorasick_rs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.config import build_config
from disguiselib.rules import mappings, settle
from disguiselib.rules.knowing import of_session, union
from disguiselib.rules.rules import LITERALS, Rules
from disguiselib.rules.session import Session
from disguiselib.wire.text import splice

PW = ('"password": "', '"')


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Rules:
    """A literal, with the shipped patterns (PASSWORD, PHONE, EMAIL, ...) beside it."""
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    return build_config([str(d / "m.yaml")], True, []).rules


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

    def find(self, text: str, memo=None):  # noqa: ANN001, ANN202
        reads.append(text)
        return real(self, text, memo)[:1]  # one original a read: the others wait

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

    def find(self, text: str, memo=None):  # noqa: ANN001, ANN202
        calls.append(text)
        return real(self, text, memo) if len(calls) == 1 else [(LITERALS, 0, 2), ("N", 3, 4)]

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
def test_a_span_found_in_the_result_is_the_text_under_it_widened_to_whole_edits(case) -> None:
    text, edits, found = case
    got = settle.widened(text, edits, found, _Named(), _NoFaker())  # type: ignore[arg-type]
    assert got == _reference(text, edits, found)
    assert all(a < b <= c for (a, b, _), (c, _, _) in zip(got, got[1:]))  # sorted, apart


# -- union: leftmost-longest over several automata --------------------------------------


def _ll(patterns: list[str]) -> ahocorasick_rs.AhoCorasick:
    return ahocorasick_rs.AhoCorasick(patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)


def _search(patterns: list[str], text: str) -> tuple:
    ac = _ll(patterns)
    return (lambda pos, end=None: [(s + pos, e + pos) for _, s, e in ac.find_matches_as_indexes(text[pos:end])]), max(map(len, patterns))


_PATS = st.lists(st.text("ab", min_size=1, max_size=4), min_size=1, max_size=5)


@settings(max_examples=1000, deadline=None)
@given(st.text("ab", max_size=60), _PATS, _PATS, _PATS)
@example("aab", ["ab"], ["aa"], ["b"])  # one automaton's match cut by another's, behind which it passed one
@example("abba", ["b"], ["abb"], ["a"])
@example("a" * 40 + "b", ["a" * 4], ["aab"], ["ab"])  # searched again in windows, doubled
def test_the_union_of_automata_reads_as_one_automaton_of_their_patterns(text: str, a, b, c) -> None:
    want = [(s, e) for _, s, e in _ll(sorted(set(a + b + c))).find_matches_as_indexes(text)]
    assert union(len(text), [_search(p, text) for p in (a, b, c)]) == want
    assert union(len(text), [_search(a + b, text)]) == [(s, e) for _, s, e in _ll(a + b).find_matches_as_indexes(text)]


def test_the_union_reads_each_place_a_bounded_number_of_times() -> None:
    """A text where one automaton's every match is cut by another's (a literal's disguise
    overlapping each placeholder): the characters read stay proportional to the text,
    not to the text times the cuts."""
    for n in (1_000, 2_000, 4_000):
        text = "xyEMAIL_1]" * n
        read = [0]
        own, lit = _search(["[EMAIL_1]", "yEMAIL_1]"], text), _search(["xyEMA"], text)

        def counted(search, text=text, read=read):  # noqa: ANN001, ANN202
            def f(pos: int, end: int | None = None) -> list:
                read[0] += (len(text) if end is None else end) - pos
                return search(pos, end)

            return f

        got = union(len(text), [(counted(own[0]), own[1]), (counted(lit[0]), lit[1])])
        assert got == [(s, e) for _, s, e in _ll(["[EMAIL_1]", "yEMAIL_1]", "xyEMA"]).find_matches_as_indexes(text)]
        assert read[0] <= 4 * len(text), (n, read[0] / len(text))


def test_a_lone_surrogate_is_read_beside_the_disguises(rules: Rules) -> None:
    """A decoded JSON string may hold half a surrogate pair: the disguises around it are
    still found, at their places."""
    s = Session()
    rules.mask("bob@corp.example.com", s)
    k = of_session(rules, s)
    text = "\ud800Zenith Labs [EMAIL_1]\udc00"
    assert k.disguises_in(text) == [(1, 12), (13, 22)]


def test_a_text_is_read_in_its_context_as_the_masker_and_the_guard_read_it() -> None:
    """A pattern's match reaching into the context is cut at it; where a literal found
    would reach into it, the text is read alone (one reading: settle.in_context)."""
    r = Rules(mappings.from_dict({"literals": {"k: v": "x"}, "patterns": [{"name": "KV", "regex": "key=[a-z]+"}]}))
    assert settle.in_context(r.find, "=abc", ("key", "")) == [("KV", 0, 4)]
    assert settle.in_context(r.find, "abc", ("key=", "def")) == [("KV", 0, 3)]
    assert settle.in_context(r.find, " v key=ab", ("k:", "")) == [("KV", 3, 9)]  # the literal `k: v` reached in
    assert settle.in_context(r.find, "key=ab", None) == [("KV", 0, 6)]
