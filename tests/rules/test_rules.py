"""The matchers against plain reference implementations of their semantics.

The engine finds literals with Aho-Corasick and patterns with RE2 behind a set
prefilter. Each test here states the semantics in the simplest code there is (Python's
`re`, character by character) and checks the engine against it on random inputs. The
reverse matchers (the Restorer) are tested the same way in tests/rules/test_restorer.py.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.errors import MappingError
from disguiselib.rules import accept, linear, mappings, validators
from disguiselib.rules.rules import LITERALS, Rules, Session

# -- forward: find() == the definition ------------------------------------------------

ALPHA = "ab c@.é_"
# Patterns whose meaning is the same in RE2 and in Python's re (no \w, \s, \b).
PATTERNS = [
    "a+b", "[ab]{2,3}", "c[a-c]*?@", "(?:ab|a)c", "é+", "b.a", "[^ ]+@[^ ]+", "a|ab|abc",
    "c@[.a]+", "[a-c]{3,}", "_[^_]*_",
]  # fmt: skip
_lit = st.text(alphabet="ab c@.é", min_size=1, max_size=4)  # no "_": it occurs in every placeholder


def ref_find(text: str, literals: list[str], patterns: list[str]) -> list[tuple[str, int, int]]:
    """The contract in the plainest code: from pos, every rule's next match (a literal:
    the longest at the leftmost start; a pattern: its own leftmost-first match); the
    leftmost wins, a literal before a pattern, an earlier pattern before a later one;
    then on from its end."""
    out = []
    pos = 0
    compiled = [re.compile(p) for p in patterns]
    while pos <= len(text):
        best = None
        for i in range(pos, len(text)):
            hits = [w for w in literals if text.startswith(w, i)]
            if hits:
                w = max(hits, key=len)
                best = (LITERALS, i, i + len(w))
                break
        for name, rx in zip(patterns, compiled, strict=True):
            m = rx.search(text, pos)
            if m is not None and m.end() > m.start() and (best is None or m.start() < best[1]):
                best = (name, m.start(), m.end())
        if best is None:
            break
        out.append(best)
        pos = best[2]
    return out


@st.composite
def rule_sets(draw):
    lits = draw(st.lists(_lit, max_size=5, unique=True))
    pats = draw(st.lists(st.sampled_from(PATTERNS), max_size=4, unique=True))
    return lits, pats


def build(lits: list[str], pats: list[str]) -> Rules:
    names = {p: f"P{i}" for i, p in enumerate(pats)}
    doc = {
        "literals": {w: f"Q{i}" for i, w in enumerate(lits)},
        "patterns": [{"name": names[p], "regex": p} for p in pats],
    }
    return Rules(mappings.from_dict(doc))


@given(rule_sets(), st.text(alphabet=ALPHA, max_size=40))
@example((["a"], ["a+b"]), "aaaab")  # a literal wins at the same start; the pattern goes on after it
@example(([], ["[^ ]+@[^ ]+", "c@[.a]+"]), "xc@a.a b@")
@example((["é"], ["é+"]), "aééé b")
def test_find_is_the_definition(rs, text: str) -> None:
    lits, pats = rs
    R = build(lits, pats)
    names = {p: f"P{i}" for i, p in enumerate(pats)}
    want = [(names.get(label, label), s, e) for label, s, e in ref_find(text, lits, pats)]
    assert R.find(text) == want


def test_literal_wins_over_pattern_at_the_same_position() -> None:
    R = build(["ab"], ["[ab]{2,3}"])
    assert R.find("abab") == [(LITERALS, 0, 2), (LITERALS, 2, 4)]
    assert R.mask("aba!", Session()) == "Q0a!"  # the pattern's "aba" lost to the literal's "ab"


def test_mask_counts_per_rule() -> None:
    R = build(["ab"], ["c@[.a]+"])
    s = Session()
    assert R.mask("ab c@a. ab", s) == "Q0 [P0_1] Q0"
    assert s.counts == {LITERALS: 2, "P0": 1}
    assert s.masked == 3


def test_offsets_are_characters_with_non_ascii_and_lone_surrogates() -> None:
    R = build(["b"], ["é+"])
    text = "\ud83dé😀b éé"
    assert R.find(text) == [("P0", 1, 2), (LITERALS, 3, 4), ("P0", 5, 7)]
    assert R.mask(text, Session()) == "\ud83d[P0_1]😀Q0 [P0_2]"


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"patterns": [{"name": "X", "regex": "a(?=b)"}]}, "does not compile"),
        ({"patterns": [{"name": "X", "regex": r"(a)b\1"}]}, "does not compile"),
        ({"patterns": [{"name": "X", "regex": r"\b"}]}, "empty string"),
        ({"strip": [{"regex": "^tag"}]}, "strip rule refused"),
        ({"strip": [{"regex": r"\[\[\w+"}]}, None),
    ],
)
def test_mapping_refuses_what_cannot_run_in_linear_time(doc, why) -> None:
    if why is None:
        mappings.from_dict(doc)
        return
    with pytest.raises(MappingError, match=why):
        mappings.from_dict(doc)


# -- the masking prefilter never names fewer patterns than match -------------------------

_SHIPPED = mappings.load(mappings.Path(__file__).resolve().parents[2] / "mappings")
_SHIPPED_RX = [linear.Regex(p.regex) for p in _SHIPPED.patterns]
_PREFILTER = linear.Prefilter([accept.prefilter_regex(p) for p in _SHIPPED.patterns])
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _may_mask(i: int, t: str, data: bytes) -> bool:
    """Rule i can mask something in t: its regex matches, and a keyword rule's keyword
    occurs in t (its window lies in t; ASCII keywords are matched with ASCII case folded)."""
    p = _SHIPPED.patterns[i]
    if _SHIPPED_RX[i].search(data) is None:
        return False
    low = t.translate(_FOLD) if all(k.isascii() for k in p.keywords) else t.lower()
    return not p.keywords or any(k in low for k in p.keywords)
_CORPUS = [
    json.loads(line)["text"]
    for line in (mappings.Path(__file__).resolve().parents[1] / "corpus" / "positives.jsonl").read_text().splitlines()
]
_noise = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


@given(st.sampled_from(_CORPUS), st.integers(0, 400), st.integers(0, 400), _noise, _noise, st.booleans())
def test_prefilter_is_a_superset_of_the_exact_matches(text: str, a: int, b: int, pre: str, post: str, upper: bool) -> None:
    t = pre + text[min(a, b) : max(a, b) + 40] + post
    if upper:
        t = t.upper()
    data = t.encode("utf-8")
    exact = {i for i in range(len(_SHIPPED_RX)) if _may_mask(i, t, data)}
    assert exact <= set(_PREFILTER.match(data))


def test_prefilter_passes_everything_for_text_that_is_not_utf8() -> None:
    assert set(_PREFILTER.match("\ud83d a@b.example.com".encode("utf-8", "surrogatepass"))) == set(range(len(_SHIPPED_RX)))


def test_prefilter_without_hyperscan_names_every_pattern(monkeypatch) -> None:
    """Where Hyperscan cannot be imported every pattern is searched exactly: slower,
    never a silent "no match"."""
    monkeypatch.setattr(linear, "hyperscan", None)
    linear._hyperscan.cache_clear()
    try:
        p = linear.Prefilter(["a+b", "c"])
        assert sorted(p.match(b"nothing here")) == [0, 1]
    finally:
        linear._hyperscan.cache_clear()


# -- behaviours a hand mutation sample found unchecked (issue 14) ----------------------


def _opt_rules(*patterns: dict) -> Rules:
    return Rules(mappings.from_dict({"patterns": list(patterns)}))


@pytest.mark.parametrize("before", ["1", "é"])
def test_a_rejected_candidate_gives_way_to_a_valid_match_one_character_later(before: str) -> None:
    """A candidate the validator rejects is searched again from its start + 1: a valid
    match that starts one character later (inside the rejected one) is masked. With a
    non-ASCII first character the next search starts at the next character, not inside
    its UTF-8 bytes."""
    card = "4539148803436467"
    r = _opt_rules({"name": "CARD", "regex": r"\S[0-9]{15}", "validator": "card"})
    text = f"pay {before}{card} now"
    assert not validators.card(before + card[:15], 0, 16)  # the first candidate is rejected
    assert [(n, text[a:b]) for n, a, b in r.find(text)] == [("CARD", card)]
    assert r.mask(text, Session()) == f"pay {before}[CARD_1] now"


@pytest.mark.parametrize("pad", ["", "—"])
def test_a_keyword_exactly_window_characters_away_counts_one_further_does_not(pad: str) -> None:
    """keywords/window: the keyword must lie within `window` characters either side of
    the match. Exactly `window` characters before the match's start (or after its end)
    counts; one character further does not. Characters, not bytes (pad: non-ASCII; not a
    letter, or "pin" would not be a word)."""
    w = 12
    item = {"name": "K", "regex": r"[a-z]{3}[0-9]{5}", "keywords": ["pin"], "window": w}
    r = _opt_rules(item)
    tok = "abc12345"
    gap = (pad + "-" * w)[: w - 3]  # "pin" + gap == exactly w characters
    assert len("pin" + gap) == w
    assert r.find("pin" + gap + tok) == [("K", w, w + len(tok))]
    assert r.find("pin" + gap + "-" + tok) == []
    assert r.find(tok + gap + "pin") == [("K", 0, len(tok))]
    assert r.find(tok + gap + "-" + "pin") == []
    # in a longer text the window is counted from the match, not from the text's start
    assert r.find("x" * 30 + " pin" + gap + tok) == [("K", 34 + len(gap), 34 + len(gap) + len(tok))]


def test_patterns_that_are_always_searched_are_found_beside_ordinary_ones() -> None:
    """The prefilter names a pattern it cannot read like RE2 (`(?i)` with non-ASCII
    letters; a pattern Hyperscan refuses) always; mixed with patterns it does read, each
    is still found, alone in a text or beside the others."""
    r = _opt_rules(
        {"name": "MAIL", "regex": r"[a-z]+@[a-z]+\.example"},
        {"name": "STREET", "regex": r"(?i)straße [0-9]+"},
        {"name": "REF", "regex": r"ref-[0-9]{4}"},
    )
    pre = r._prefilter
    assert pre is not None and 1 in pre.match(b"nothing here")  # always named
    assert [n for n, _, _ in r.find("at STRASSE 5 or STRAßE 7")] == ["STREET"]
    assert [n for n, _, _ in r.find("bob@corp.example, Straße 12, ref-1234")] == ["MAIL", "STREET", "REF"]
    assert [n for n, _, _ in r.find("only ref-9876 here")] == ["REF"]


def test_a_pattern_hyperscan_refuses_is_still_found_beside_ordinary_ones(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    real = linear._compile

    def refuse(exprs, ids, flags):
        return None if any(b"zz" in e for e in exprs) else real(exprs, ids, flags)

    monkeypatch.setattr(linear, "_compile", refuse)
    linear._hyperscan.cache_clear()
    try:
        r = _opt_rules({"name": "A", "regex": r"aa[0-9]+"}, {"name": "Z", "regex": r"zz[0-9]+"},
                       {"name": "B", "regex": r"bb[0-9]+"})  # fmt: skip
        assert [n for n, _, _ in r.find("x zz12 y")] == ["Z"]
        assert [n for n, _, _ in r.find("aa1 zz2 bb3")] == ["A", "Z", "B"]
        assert [n for n, _, _ in r.find("bb7")] == ["B"]
    finally:
        linear._hyperscan.cache_clear()


def test_rejected_candidates_reaching_far_are_refused_not_scanned_in_quadratic_time() -> None:
    """Every `y0_` of `_y0_abcdefgh...` starts a candidate of an unbounded rule whose
    match reaches the end of the run, and each is rejected (no upper case): searching
    again one character further each time took 3 s for 24 kB and 45 s for 96 kB with the
    shipped Yandex rule as it was. Past a limit (16 bytes of rejected candidates per byte
    of text) the text is refused instead."""
    import time

    from disguiselib.errors import MaskError

    rules = _opt_rules({"name": "OAUTH", "regex": r"(?:^|[^A-Za-z0-9])(?P<k>y[0-3]_[A-Za-z0-9_-]{55,})",
                        "group": "k", "validator": "mixed"})  # fmt: skip
    t = time.perf_counter()
    with pytest.raises(MaskError, match="OAUTH: .* linear time"):
        rules.find("_y0_abcdefgh" * 2000)
    assert time.perf_counter() - t < 30  # refused, not scanned for minutes (reverted: no raise)
    # rejected candidates that do not reach far are searched as before
    assert rules.find("x_y0_abc " * 2000) == []


def test_the_shipped_yandex_rule_is_bounded() -> None:
    """The shipped rule bounds what a token may be (512 characters): the run above holds
    no candidate at all, and a base64url run that holds `y0_` is not masked to its end."""
    from disguiselib.config import build_config

    rules = build_config([], True, []).rules
    assert [x for x in rules.find("_y0_abcdefgh" * 2000) if x[0] == "YANDEX_CLOUD_KEY"] == []
    token = "y0_AgAAAAAAbcDeFgHiJkLmNoPqRsTuVwXyZ0123456789AbCdEfGhIjKlMnOp"
    assert rules.find(f"token: {token}\n") == [("YANDEX_CLOUD_KEY", 7, 7 + len(token))]
    run = "x" + "aB3-" * 20_000
    assert [x for x in rules.find(f"y0_{run} ") if x[0] == "YANDEX_CLOUD_KEY"] == []


def test_a_large_text_is_scanned_on_its_own_without_copies() -> None:
    """Rules.prescan scans a text of JOIN_MAX bytes or more on its own: no joined copy of
    it and no shifted copy of its literal matches (a 200 MB body with an original every
    line holds millions of them); what it finds is what find() finds in each text."""
    import tracemalloc

    from disguiselib.rules import prescan

    r = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    big = "Acme Corp wrote a line. " * (1_200_000 // 24)
    pieces = ["x Acme Corp", big, "y"]
    assert len(big) >= prescan.JOIN_MAX
    tracemalloc.start()
    try:
        hot, memo = r.prescan(pieces)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert hot == {0, 1}
    assert [(k, s, e) for k, s, e in memo[big][0]] == [(0, s, e) for _, s, e in r.find(big)]
    assert memo["x Acme Corp"][0] == [(0, 2, 11)]
    # its UTF-8 bytes and the automaton's matches (a tuple and two integers, ~130 bytes
    # each); the joined copy and the shifted copies took as much again
    n = len(memo[big][0])
    assert peak < 2 * len(big) + 160 * n, (peak, len(big), n)


def test_a_short_text_is_scanned_again_rather_than_remembered() -> None:
    """A digest, a look-up and an entry of the scan memory cost more than scanning a
    short text again in a block (Prefilter.match_many): a 1M-element array of short
    strings is not remembered string by string."""
    from disguiselib.rules.found import Found

    r = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    r.found = Found()
    long = "a text long enough to be remembered (by itself: nothing in it)"
    hot, memo = r.prescan(["a1", long, "Acme Corp"])
    assert hot == {2} and memo["a1"] == memo[long] == ((), ())
    assert memo["Acme Corp"][2] is None  # no digest: it is not remembered
    assert r.found.clean(long) and not r.found.clean("a1") and r.found.get(Found.digest(b"a1")) is None


_CHEAP = ("FACEBOOK_TOKEN", "AUTH_HEADER", "PASSWORD", "CARD_NUMBER", "IBAN", "US_SSN", "SESSION_COOKIE", "MAILGUN_KEY", "PHONE")
_CHEAP_IDX = [i for i, p in enumerate(_SHIPPED.patterns) if p.name in _CHEAP]
_PIECES = st.sampled_from(["0", "4111", "1111", "536", "22", "8190", "-", " ", "|", "%7C", "EAA", "Ab9", "DE", "GB82", "WEST", "1234", "=",
                           ":", '"', "Authorization", "x-api-key", "Bearer ", "password", "mysql -p", "'", "PHPSESSID",
                           "key-", "deadbeef", "a1b2c3d4e5f6a7b8", "\\n", "\n", "Secret", "q7Zx9Lm2Pw4Rt6Yv", "+", "+1", "(", ")", ".", "a"])  # fmt: skip


# what each of them matches, with random text around it
_SHAPES = (
    r"[0-9]{3}-[0-9]{2}-[0-9]{4}", r"4[0-9]{12,18}", r"[0-9]{4}[ -][0-9]{4}[ -][0-9]{4}[ -][0-9]{1,4}", r"3[0-9]{3}[ -][0-9]{6}[ -][0-9]{4,5}",
    r"[A-Z]{2}[0-9]{2}(?:[ -]?[A-Z0-9]{4}){2,7}", r"EAA[A-Za-z0-9]{100,104}", r"[0-9]{15,16}(?:\||%7[Cc])[A-Za-z0-9_-]{27,40}",
    r"key-[a-f0-9]{32}", r"[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}", r"(?i:phpsessid|_[a-z]{1,4}_session|koa\.sess)=[A-Za-z0-9]{8,12}",
    r"(?i:authorization|x-api-key)[\"']?[ :=]{1,3}(?:Bearer )?[A-Za-z0-9._~+/=-]{12,20}",
    r"(?i:db_password|passwd|_pwd)[ :=\"]{1,3}[A-Za-z0-9!]{8,16}", r"mysql -u root -p'[A-Za-z0-9]{6,12}'",
    r"\+[1-9](?:[ .()-]{0,2}[0-9]){6,14}",
)  # fmt: skip
_EDGE = st.sampled_from(["", " ", "\n", '"', "=", "|", "\\n", "\\t"])  # (\\n: a JSON escape the contexts name)


@pytest.mark.parametrize("shape", _SHAPES)
@settings(max_examples=20)
@given(data=st.data())
def test_the_cheaper_prefilters_name_their_rule_wherever_it_matches(shape: str, data) -> None:  # noqa: ANN001
    """9 shipped rules name a part of every match of theirs as their `prefilter:` (the
    whole regex, with its context and counts, cost 5 ms a MB of the prefilter's 9;
    PHONE's counted digits and separators 1.2 of 6.5 more)."""
    pre, post = data.draw(st.lists(_PIECES, max_size=8)), data.draw(st.lists(_PIECES, max_size=8))
    t = "".join(pre) + data.draw(_EDGE) + data.draw(st.from_regex(shape, fullmatch=True)) + data.draw(_EDGE) + "".join(post)
    data = t.encode("utf-8")
    exact = {i for i in _CHEAP_IDX if _SHIPPED_RX[i].search(data) is not None}
    assert exact <= set(_PREFILTER.match(data))


def test_a_prescan_reads_the_digests_another_rule_sets_prescan_took() -> None:
    """The warning pass (pipeline) scans the texts masking scanned with another rule set,
    reading their digests from masking's memo: what it remembers is under each text's own
    digest, and it finds what a scan that digests each text finds."""
    from disguiselib.rules.found import Found

    texts = ["a text long enough to be remembered: Acme Corp", "another long text, with Zenith Labs in it", "Acme", "x" * 40]
    masker = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    turned = Rules(mappings.from_dict({"literals": {"Zenith Labs": "Acme Corp"}}))
    masker.found, turned.found = Found(), Found()
    _, memo = masker.prescan(texts)
    masker.prescan(texts)  # met before now: Known entries carry the digest too
    hot, _ = turned.prescan(texts, memo)
    assert hot == {1}
    for t in texts:
        if len(t) >= 32 and t != texts[1]:  # clean for it: remembered by themselves
            assert turned.found.clean(t) and turned.found.get(Found.digest(t.encode())) is None
    assert turned.find(texts[1]) == [("literals", 24, 35)] and turned.found.get(Found.digest(texts[1].encode())) is not None
    _, known = masker.prescan(texts)
    assert turned.prescan(texts, known)[0] == {1}


def test_rule_spans_is_one_rule_as_if_alone() -> None:
    """Rules.rule_spans (the leak guard's knowing.py): what one rule finds when no other
    is there to win first, in characters over non-ASCII text; a literal's place, which
    find() gives the literal, is a pattern's too."""
    r = Rules(mappings.from_dict({
        "literals": {"Acme Corp": "Zenith Labs"},
        "patterns": [{"name": "WORD", "regex": "[A-Za-z]+[0-9]"}, {"name": "NUM", "regex": "[0-9]{3}"}]}))  # fmt: skip
    text = "é😀 Acme Corp9 x7 123456 Acme Corp"
    assert r.find(text) == [(LITERALS, 3, 12), ("WORD", 14, 16), ("NUM", 17, 20), ("NUM", 20, 23), (LITERALS, 24, 33)]
    assert r.rule_spans("WORD", text) == [(8, 13), (14, 16)]  # `Corp9`: the literal's place in find()
    assert r.rule_spans(LITERALS, text) == [(3, 12), (24, 33)]
    assert r.rule_spans("NUM", text) == [(17, 20), (20, 23)]
    assert r.rule_spans("NONE", text) == [] and r.rule_spans("WORD", "") == []
    assert Rules(mappings.from_dict({"patterns": [{"name": "NUM", "regex": "[0-9]"}]})).rule_spans(LITERALS, "a1") == []
