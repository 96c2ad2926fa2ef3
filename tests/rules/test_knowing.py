"""The rule set the leak guard and the audit read a masked text with (rules/knowing.py):
what the disguises in it make is not an original; what the client wrote beside them,
enough for a rule alone, still is."""

from __future__ import annotations

import ahocorasick_rs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.rules import mappings
from disguiselib.rules.knowing import Knowing, Spans, _matches, knowing, of_session, union
from disguiselib.rules.rules import Rules
from disguiselib.rules.session import Session

CTX = ('"token": "', '"')
PW = ('"password": "', '"')


@pytest.fixture
def rules(acme_rules: Rules) -> Rules:
    return acme_rules  # (tests/rules/conftest.py)


def _session(rules: Rules, *texts: str) -> Session:
    s = Session()
    for t in texts:
        rules.mask(t, s)
    return s


def test_without_disguises_the_rules_are_the_rules() -> None:
    plain = Rules(mappings.from_dict({"patterns": [{"name": "NUM", "regex": "[0-9]{6,}"}]}))
    assert knowing(plain, ()) is plain and of_session(plain, None) is plain and of_session(plain, Session()) is plain
    with_literal = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    assert isinstance(of_session(with_literal, None), Knowing)  # a literal's disguise is one


def test_what_a_placeholder_makes_is_no_original(rules: Rules) -> None:
    """`:bob@corp.example.com` is no token (too short without a digit); `:[EMAIL_1]` is one
    to SECRET, by the placeholder's digit. The rules alone refuse it; knowing the request
    does not. A token beside the placeholder, and the client's own e-mail beside it, are
    refused."""
    k = of_session(rules, _session(rules, "bob@corp.example.com"))
    for v, ctx in ((":", CTX), ("mailto:", CTX), ("ref:", CTX), (": ", PW)):
        assert rules.find(ctx[0] + v + "bob@corp.example.com" + ctx[1])[0][0] == "EMAIL", v  # as it is masked
        assert leakguard.first(rules, v + "[EMAIL_1]", ctx) is not None, v
        assert leakguard.first(k, v + "[EMAIL_1]", ctx) is None, v
    for sep in ":/-@":
        assert leakguard.first(k, f"Xy7kP9qLm2Zt{sep}[EMAIL_1]", CTX) == "SECRET", sep
    assert leakguard.first(k, "[EMAIL_1] and bob@corp.example.com") == "EMAIL"


def test_a_literals_disguise_is_no_password_but_what_follows_it_is(rules: Rules) -> None:
    """`"password": "Acme Corp"` goes out as `Zenith Labs`, which PASSWORD finds alone: not
    refused, nor with a space, a digit or a stop after it. A password written on after
    the literal (the literal won the place, so PASSWORD did not mask it) is."""
    k = of_session(rules, None)  # the literals' disguises are known without a session
    for rest in ("", " ", "9", ".", ";", "; "):
        assert leakguard.first(rules, "Zenith Labs" + rest, PW) == "PASSWORD"
        assert leakguard.first(k, "Zenith Labs" + rest, PW) is None, rest
    assert leakguard.first(k, "Zenith Labs Hunter2xyz9", PW) == "PASSWORD"
    assert leakguard.first(k, "Hunter2xyz9", PW) == "PASSWORD"  # no disguise: as the rules say


def test_a_fake_is_no_original_and_a_span_equal_to_one_is_dropped_at_once() -> None:
    rules = Rules(mappings.from_dict({"patterns": [{"name": "NUM", "regex": "[0-9]{6,}"}]}))
    s = Session()
    s.placeholders["123456"] = "987654"  # a fake (as disguise_fakes makes them)
    k = of_session(rules, s)
    assert rules.find("id 123456") and k.find("id 123456") == []
    assert k.find("id 123456 and 555555") == [("NUM", 14, 20)]
    # a span reaching past the fake into the client's own digits: an original where those
    # are enough for the rule alone, not where they are not
    assert k.find("id 123456777777") == [("NUM", 3, 15)]
    assert rules.find("id 123456777") and k.find("id 123456777") == []


_PIECE = st.text("ab é😀", max_size=4)


@settings(max_examples=400, deadline=None)
@given(_PIECE, _PIECE, _PIECE, st.booleans(), st.sampled_from(["[^ ]+", r"[1qéa][^ \]q]*", "[abé😀]{2,}"]))
def test_a_span_is_an_original_where_the_rule_finds_it_with_the_disguises_taken_out(
    before: str, mid: str, after: str, swap: bool, rx: str
) -> None:
    """A rule over text in one-, two- and four-byte characters holding two disguises
    (`[X_1]`, `Zq`; side by side or apart): a span holding a disguise is an original
    exactly when the rule alone finds something overlapping what is left of it in the
    text with the disguises taken out; a span holding none is kept; a span that is one
    is dropped."""
    rules = Rules(mappings.from_dict({"patterns": [{"name": "R", "regex": rx}]}))
    d1, d2 = ("Zq", "[X_1]") if swap else ("[X_1]", "Zq")
    text = before + d1 + mid + d2 + after
    t1 = len(before)
    t2 = t1 + len(d1) + len(mid)
    places = [(t1, t1 + len(d1)), (t2, t2 + len(d2))]
    left = before + mid + after

    def place(p: int) -> int:  # where p of text is in left (inside a disguise: where it was)
        if p <= t1:
            return p
        if p <= t1 + len(d1):
            return t1
        if p <= t2:
            return p - len(d1)
        return t2 - len(d1) if p <= t2 + len(d2) else p - len(d1) - len(d2)

    kept = knowing(rules, [d1, d2]).find(text)
    for _, a, b in rules.find(text):
        if text[a:b] in (d1, d2):
            want = False
        elif not any(a < e and b > s for s, e in places):
            want = True
        else:
            ua, ub = place(a), place(b)
            want = any(x < ub and y > ua for x, y in rules.rule_spans("R", left))
        assert (("R", a, b) in kept) == want, (text, a, b)


def test_spans_are_answered_by_place_touching_is_not_overlapping() -> None:
    """Spans: overlapping spans are joined, touching ones are not; a span that ends where
    the asked range begins, or begins where it ends, is not in it."""
    s = Spans([(2, 4), (0, 2), (6, 9), (7, 8)])
    assert (s.starts, s.ends) == ([0, 2, 6], [2, 4, 9])
    assert s.any_in(1, 3) and s.any_in(3, 7) and not s.any_in(4, 6) and s.any_in(8, 20)
    assert not Spans([(6, 8)]).any_in(4, 6) and not Spans([(2, 4)]).any_in(4, 6) and not Spans([]).any_in(0, 9)


def test_a_literals_disguise_and_a_placeholder_side_by_side_are_both_taken_out(rules: Rules) -> None:
    """The literals' disguises (the rules' automaton) and the request's placeholders (its
    own) are found together, the longest at a place, none overlapping."""
    k = of_session(rules, _session(rules, "bob@corp.example.com"))
    assert k.disguises_in("x Zenith Labs[EMAIL_1] [EMAIL_1]") == [(2, 13), (13, 22), (23, 32)]
    assert leakguard.first(rules, "Zenith Labs:[EMAIL_1]", PW) == "PASSWORD"
    assert leakguard.first(k, "Zenith Labs:[EMAIL_1]", PW) is None
    assert leakguard.first(k, "Zenith Labs:[EMAIL_1] Hunter2xyz9", PW) == "PASSWORD"
    # own disguises that overlap the literal's: the leftmost, the longest there, then on
    # from its end (what one automaton of them all would find)
    both = knowing(rules, ["Zenith", "Labs:[EMAIL_1]", "[EMAIL_1]"])
    assert both.disguises_in("Zenith Labs:[EMAIL_1]") == [(0, 11), (12, 21)]
    assert both.disguises_in("Zenith Labs: Labs:[EMAIL_1]") == [(0, 11), (13, 27)]


def test_only_a_span_that_holds_a_disguise_and_is_none_costs_a_second_search(monkeypatch) -> None:
    """What knowing costs: a span that is a disguise whole is dropped without the text's
    disguises being looked for; a span that holds none (one that ends where a disguise
    begins, or begins where one ends, included) is kept without a second search; the
    rest cost one search of what is left per rule, whatever their number; memo is what
    the rules' find() reads."""
    from disguiselib.rules.found import NOTHING

    rules = Rules(mappings.from_dict({"patterns": [{"name": "W", "regex": "[a-z]+"}]}))
    k = knowing(rules, ["zq", "xy"])
    calls: list[str] = []
    real = rules.rule_spans

    def counted(label: str, text: str) -> list[tuple[int, int]]:
        calls.append(text)
        return real(label, text)

    monkeypatch.setattr(rules, "rule_spans", counted)
    monkeypatch.setattr(Knowing, "disguises_in", lambda self, t: pytest.fail("looked for disguises"))
    assert k.find("zq xy") == []  # each span a disguise whole
    monkeypatch.undo()
    monkeypatch.setattr(rules, "rule_spans", counted)
    text = "zq ab xy cd zqef"  # disguises at 0, 6, 12; `ab`, `cd` hold none; `zqef` holds one
    assert k.find(text) == [("W", 3, 5), ("W", 9, 11), ("W", 12, 16)] and calls == [" ab  cd ef"]
    calls.clear()
    assert k.find("zqab cdxy efzq gh") == [("W", 0, 4), ("W", 5, 9), ("W", 10, 14), ("W", 15, 17)]
    assert calls == ["ab cd ef gh"]  # one search for the three spans holding a disguise
    assert rules.find("ab") and k.find("ab", {"ab": NOTHING}) == []
    calls.clear()
    k2 = knowing(rules, ["[D]"])
    assert k2.find("[D]ab cd[D]") == [("W", 3, 5), ("W", 6, 8)] and calls == []  # touching: none held
    assert k.find("ab zqcd") == [("W", 0, 2), ("W", 3, 7)] and calls == ["ab cd"]
    assert k.lit_reverse is rules.lit_reverse  # anything else: the rules' own


def test_a_span_is_placed_in_what_is_left_after_each_disguise() -> None:
    """A rule that finds a disguise's tail with what follows (`X_1]b`) but not what is left
    (`ab`): the span is dropped, wherever the disguise lies (first or second in the text),
    even where what is left holds the rule's match further on."""
    rules = Rules(mappings.from_dict({"patterns": [{"name": "R", "regex": r"X_1\]b|Q_2\]b|zzz"}]}))
    k = knowing(rules, ["[X_1]", "[Q_2]"])
    assert rules.find("a[X_1]b zzz") == [("R", 2, 7), ("R", 8, 11)]
    assert k.find("a[X_1]b zzz") == [("R", 8, 11)]
    assert rules.find("[X_1] a[Q_2]b zzz")[0] == ("R", 8, 13)
    assert k.find("[X_1] a[Q_2]b zzz") == [("R", 14, 17)]
    assert k.find("[X_1]  a[Q_2]b ab zzz") == [("R", 18, 21)]
    assert k.find("zzz a[X_1]b") == [("R", 0, 3)]  # a span begun inside a disguise: placed at its start
    assert k.find("zzz[X_1]b") == [("R", 0, 3)]  # there, not before it: `zzz` in what is left ends there


# -- union: leftmost-longest over several automata --------------------------------------


def _ll(patterns: list[str]) -> ahocorasick_rs.AhoCorasick:
    return ahocorasick_rs.AhoCorasick(patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)


def _search(patterns: list[str], text: str) -> tuple:
    ac = _ll(patterns)
    return (lambda pos, end=None: [(s + pos, e + pos) for _, s, e in ac.find_matches_as_indexes(text[pos:end])]), max(map(len, patterns))


_PATS = st.lists(st.text("ab", min_size=1, max_size=4), min_size=1, max_size=5)


@settings(max_examples=1000, deadline=None)
@given(st.text("abc", max_size=120), _PATS, _PATS, _PATS)  # (c: in no pattern, a gap a window may fall in)
@example("aab", ["ab"], ["aa"], ["b"])  # one automaton's match cut by another's, behind which it passed one
@example("abba", ["b"], ["abb"], ["a"])
@example("ab", ["a"], ["ab"], ["b"])  # at one place, the longer of two automata's
@example("a" * 40 + "b", ["a" * 4], ["aab"], ["ab"])  # searched again in windows, doubled
@example("aab" + "c" * 40 + "ab", ["ab"], ["aa"], ["b"])  # a window with nothing in it, short of the end
@example("aab" + "c" * 13 + "abbbb", ["ab"], ["aa"], ["b", "abbbb"])  # a window's first match not yet certain
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


def _counting(patterns: list[str], text: str, calls: list) -> tuple:
    search, longest = _search(patterns, text)

    def f(pos: int, end: int | None = None) -> list:
        calls.append((pos, end))
        return search(pos, end)

    return f, longest


def test_matches_side_by_side_are_read_from_each_automatons_first_search() -> None:
    """Where no match of one cuts another's, each automaton is searched once, from the
    text's start."""
    calls: list = []
    text = "ab" * 5
    assert union(len(text), [_counting(["a"], text, calls), _counting(["b"], text, calls)]) == [
        (i, i + 1) for i in range(10)
    ]
    assert calls == [(0, None), (0, None)]


def test_a_cut_match_is_searched_again_in_a_window_of_twice_the_longest_pattern() -> None:
    """A match of the other automaton cuts `bc…`: the cut one is searched again from
    the cut's end, over twice its longest pattern (at least 16 characters), and once."""
    text = "ab" + "c" * 20 + "bc" + "x" * 60
    calls: list = []
    got = union(len(text), [_counting(["ab"], text, []), _counting(["b" + "c" * 20, "bc"], text, calls)])
    assert got == [(0, 2), (22, 24)]
    assert calls == [(0, None), (2, 2 + 2 * 21)]
    calls.clear()
    text = "abc" + "x" * 40
    assert union(len(text), [_counting(["ab"], text, []), _counting(["bc"], text, calls)]) == [(0, 2)]
    assert calls == [(0, None), (2, 18), (2, 34), (2, None)]  # 16 at least, doubled while nothing is found
    for pad, want, searched in (
        (15, [(0, 2)], [(0, None), (2, None)]),  # the first window reaches the text's end: to its end, once
        (12, [(0, 2), (15, 20)], [(0, None), (2, 18), (2, 34)]),  # `x` first, `xyyyy` past the window: doubled
        (10, [(0, 2), (13, 18)], [(0, None), (2, 18)]),  # `xyyyy` ends where the window does: certain
    ):
        text = "abc" + "-" * pad + ("xyyyy" + "-" * 30 if pad < 15 else "")  # (pad 15: 18 characters in all)
        calls.clear()
        assert union(len(text), [_counting(["ab"], text, []), _counting(["bc", "x", "xyyyy"], text, calls)]) == want, pad
        assert calls == searched, pad
    # a cut match that stays cut while the other's matches are taken inside it: searched again once
    text = "abccc"
    calls.clear()
    assert union(len(text), [_counting(["ab", "c"], text, []), _counting(["bccc"], text, calls)]) == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert calls == [(0, None), (2, None)]


def test_an_automatons_matches_are_read_in_its_text_window_alone() -> None:
    ac = ahocorasick_rs.AhoCorasick(["ab"], matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
    assert _matches(ac, "ab ab ab", 0, 4) == [(0, 2)]
    assert _matches(ac, "ab ab ab", 1, 5) == [(3, 5)]
    assert _matches(ac, "ab ab ab", 0, None) == [(0, 2), (3, 5), (6, 8)]
    assert _matches(ac, "\ud800ab ab", 0, 4) == [(1, 3)]  # a lone surrogate: read as one character still
    assert _matches(ac, "\ud800ab ab", 2, None) == [(4, 6)]


def test_own_disguises_are_read_longest_first(rules: Rules) -> None:
    """Own disguises that begin alike (fakes may): the longest at a place."""
    k = Knowing(rules, frozenset({"ab", "abcd"}))
    assert k.disguises_in("xabcdx ab") == [(1, 5), (7, 9)]


# A set the load refuses (mappings.validate: a disguise joined with a word spells an
# original), built here without that check: the guard must stand on its own.
_JOINED = mappings.MappingSet(literals=(
    mappings.Literal("Acme Corp", "Zenith Labs", "m.yaml:2: literal #1"),
    mappings.Literal("Labs Inc", "Qorvexq", "m.yaml:3: literal #2"),
    mappings.Literal("Team Zenith", "Tmqqz", "m.yaml:4: literal #3"),
))  # fmt: skip


@pytest.mark.parametrize(("client", "spelt"), [("Acme Corp Inc", "Labs Inc"), ("Team Acme Corp", "Team Zenith")])
def test_an_original_a_disguise_spells_with_its_neighbour_is_an_original(client: str, spelt: str) -> None:
    """G6: `Acme Corp Inc` went out as `Zenith Labs Inc`, where the provider reads the
    original `Labs Inc`: the guard took the disguise out and found ` Inc`, no original."""
    rules = Rules(_JOINED)
    s = Session()
    out = rules.mask(client, s)
    assert spelt in out  # the masker makes it (and leaves it to the guard: a literal has no placeholder)
    k = of_session(rules, s)
    assert [lab for lab, _, _ in k.find(out)] == ["literals"]
    assert leakguard.first(k, out) == "literal" and leakguard.first(k, out, CTX) == "literal"
    assert leakguard.first(k, "Zenith Labs and Tmqqz") is None  # disguises whole, apart: none


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=8, unique=True), st.text(max_size=80))
@example(["aa", "a"], "xaaa")  # (overlapping places, of one original and of two)
def test_originals_read_alike_searched_or_by_their_automaton(originals: list, text: str) -> None:
    """Originals in a short text, searched for one by one (knowing.SMALL), and in a long
    one, read by their automaton, are found in the same places, as a search of each
    original finds them; holding() names the texts that hold one."""
    from disguiselib.rules import knowing as kn

    raw = text.encode("utf-8", "surrogatepass")
    known = kn.Originals(dict.fromkeys(originals, "R"))
    searched = sorted(known._every(raw))
    assert known._ac is None  # (none made for so little)
    read = sorted(known._automaton().find_matches_as_indexes(raw, overlapping=True))
    want = sorted((k, i, i + len(b)) for k, o in enumerate(originals) if (b := o.encode("utf-8", "surrogatepass"))
                  for i in range(len(raw)) if raw.startswith(b, i))  # fmt: skip
    assert searched == read == want
    texts = [text, originals[0], "", text[::-1]]
    holds = [k for k, t in enumerate(texts) if any(o in t for o in originals)]
    assert known.holding([text, "", text]) == ([0, 2] if want else []) and known.holding(texts) == holds
    big, small = kn.Originals(dict.fromkeys(originals, "R")), kn.SMALL
    try:
        kn.SMALL = -1  # (every text long: the automaton reads it)
        assert big.matches(text) == known.matches(text) and big.holding(texts) == holds and big._ac is not None
    finally:
        kn.SMALL = small
