"""rules/prescan.py: Rules.prescan's memo (the whole path: tests/base/test_masking_scan.py,
tests/rules/test_rules.py)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.rules import found, mappings, prescan
from disguiselib.rules.found import Memo
from disguiselib.rules.rules import Rules


def test_a_text_a_literal_reaches_out_of_is_found_in_full_not_from_the_memo() -> None:
    """prescan joins the texts by a NUL: a literal holding one can match from a text into
    the next. Both are marked, and neither gets a memo entry, so that find() scans them
    whole (the first also holds a match of its own, which the memo would have hidden as
    "nothing found" had the crossing text been taken for a clean one)."""
    r = Rules(mappings.from_dict({"literals": {"a\x00b": "AB"}}))
    for pieces in (["a\x00b a", "b"], ["x", "a\x00b a", "b", "y"], ["z" * 40 + "a\x00b a", "b" + "z" * 40]):
        hot, memo = r.prescan(pieces)
        k = next(i for i, p in enumerate(pieces) if p.startswith(("a", "z" * 40)))
        assert {k, k + 1} <= hot and pieces[k] not in memo and pieces[k + 1] not in memo
        at = pieces[k].index("a")
        assert r.find(pieces[k], memo) == r.find(pieces[k]) == [("literals", at, at + 3)]


def _literals_by_bisect(r: Rules, bs: list[bytes], join_max: int = 1 << 62) -> tuple[dict, set]:
    """prescan._literals as it was (a bisect per match): the reference of the walk that
    looks a text up once per text. A text of join_max bytes or more is read alone (when
    one is, the others are joined without it)."""
    import bisect
    from itertools import accumulate

    lits: dict[int, list] = {}
    crossing: set[int] = set()
    alone = [j for j, x in enumerate(bs) if len(x) >= join_max]
    for j in alone:
        found = list(r._lit_ac.find_matches_as_indexes(bs[j]))  # type: ignore[union-attr]
        if found:
            lits[j] = found
    small = [j for j in range(len(bs)) if j not in alone]
    got = r._lit_ac.find_matches_as_indexes(b"\x00".join(bs[j] for j in small))  # type: ignore[union-attr]
    starts = [a + q for q, a in enumerate(accumulate((len(bs[j]) for j in small), initial=0))]
    for m in got:
        q = bisect.bisect_right(starts, m[1]) - 1
        j = small[q]
        if m[2] <= starts[q] + len(bs[j]):
            lits.setdefault(j, []).append((m[0], m[1] - starts[q], m[2] - starts[q]))
        else:
            crossing.add(j)
            crossing.add(small[bisect.bisect_right(starts, m[2] - 1) - 1])
    return lits, crossing


_NUL_RULES = Rules(mappings.from_dict({"literals": {"a\x00b": "AB", "ab": "CD", "b": "E", "\x00\x00": "F", "aa": "G"}}))


@given(st.lists(st.text(alphabet="ab\x00 ", max_size=6), min_size=1, max_size=12), st.sampled_from([None, 3]))
@example(["a", "b", "ab", "", "a"], None)
@example(["", "", "a"], None)
@example(["ab", "aab", "b", "ab"], 3)  # one text read alone, the others joined round it
def test_the_literals_of_joined_texts_are_those_a_bisect_per_match_gives(texts: list[str], join_max: int | None) -> None:
    """join_max: texts from this many bytes on are read alone (prescan.JOIN_MAX: 64 KiB;
    here a few bytes, so that both ways meet in one call)."""
    bs = [t.encode() for t in texts]
    lits: dict = {}
    crossing: set[int] = set()
    was = prescan.JOIN_MAX
    prescan.JOIN_MAX = join_max or was
    try:
        prescan._literals(_NUL_RULES, bs, lits, crossing)
    finally:
        prescan.JOIN_MAX = was
    lits = {j: list(v) for j, v in lits.items()}
    assert (lits, crossing) == _literals_by_bisect(_NUL_RULES, bs, join_max or was)


# -- many short texts (a long array's elements): all scanned, joined once ------------------

_SHORT_RULES = [
    _NUL_RULES,
    Rules(mappings.from_dict({
        "literals": {"é\x00a": "X1", "ab": "X2", "çé": "X3", "b\x00\x00a": "X4"},
        "patterns": [{"name": "NUM", "regex": "[0-9]{3}"}, {"name": "AT", "regex": "^a[a-z]*@"}],
    })),
]  # fmt: skip


_SHORT = st.text(alphabet="ab\x00 é@ç0123\n\ud800", max_size=10) | st.sampled_from(["a", "b", "é", "\x00a", "b\x00", "123", ""])


# (which rule set, the texts, dedup, split): what the short-texts properties are given
_SHORT_CASES = (
    st.sampled_from(range(len(_SHORT_RULES))),
    st.lists(_SHORT | st.text(alphabet="ab\x00 é", min_size=30, max_size=40), min_size=1, max_size=300),
    st.booleans(),
    st.booleans(),
)


@given(*_SHORT_CASES)
@example(1, ["é", "a", "çé", "ab", "b", "a@", "1234"], False, False)
@example(1, ["b", "", "a", "é", "a"], False, False)
@example(1, ["b", "\x00a", "b", "é", "b\x00", "\x00a", "a"], True, False)
@example(0, ["a", "a\x00b" + "a" * 30, "b", "ab" * 20, "a\x00", "b"], False, True)
def test_short_texts_joined_once_give_what_find_gives_alone(which: int, texts: list[str], dedup: bool, split: bool) -> None:
    """Texts all shorter than REMEMBER_MIN bytes (a long array's elements) are scanned
    together: their literals in the UTF-8 of their str join (not a join of each one's
    bytes). The memo must say for each text what find() says of it alone, across
    non-ASCII characters, NULs a literal reaches over, and lone surrogates (then the
    texts are found one by one). A text the prescan leaves out of `hot` has no span.
    dedup: a text said again is scanned once (from DEDUP_MIN texts on, when a sample
    shows repeats; here from 2, always), its every place hot when it is marked.
    split: the short ASCII texts are scanned apart from the others (from SPLIT_MIN of
    them on; here from 1), in another order, so that a NUL a literal holds reaches
    between other neighbours."""
    r = _SHORT_RULES[which]
    r.found.clear()
    was = prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN
    prescan.DEDUP_MIN, prescan._repeats = (2, lambda _: True) if dedup else (1 << 30, was[1])
    prescan.SPLIT_MIN = 1 if split else 1 << 30
    try:
        hot, memo = r.prescan(texts)
        r.found.clear()
        # clean=False (the warning pass reads only hot): the same texts hot, the memo
        # without the texts where nothing was found
        hot2, memo2 = r.prescan(texts, clean=False)
        assert hot2 == hot
        assert memo2 == {t: v for t, v in memo.items() if v is not prescan.NOTHING}
    finally:
        prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN = was
    for k, t in enumerate(texts):
        alone = r.find(t)
        assert r.find(t, memo) == alone, (t, memo.get(t))
        assert k in hot or not alone, t
    r.found.clear()
    # a bound on the texts' length that the caller knows (the split's short ones: under
    # REMEMBER_MIN), however loose, scans as the texts' own longest does
    exact = prescan._scan(r, texts, None, {}, True)
    r.found.clear()
    for slack in (0, 1, prescan.REMEMBER_MIN, 1 << 20):
        assert prescan._scan(r, texts, None, {}, True, max(map(len, texts)) + slack) == exact, slack
        r.found.clear()


def _subsequence(run: list[str], texts: list[str]) -> bool:
    it = iter(texts)
    return all(any(t is r for t in it) for r in run)


@given(*_SHORT_CASES)
@example(1, ["é", "a", "çé", "ab", "b", "a@", "1234"], False, False)
@example(0, ["a", "a\x00b" + "a" * 30, "b", "ab" * 20, "a\x00", "b"], False, True)
@example(1, ["a", "a", "b", "ab", "zz", "a"], True, False)
@example(1, ["x", "y", "x", "y"], True, False)  # said again, nothing marked: the run at each place
def test_a_memos_run_lists_exactly_the_short_texts_found_clean_in_the_order_scanned(
    which: int, texts: list[str], dedup: bool, split: bool
) -> None:
    """Into a Memo, from RUN_MIN short texts found clean (here from 1), prescan lists them
    in its run instead of an entry each: the run holds exactly the texts the entries
    would have held as NOTHING (what find() finds nothing in), none of them also an
    entry, in the order the texts came, at each place (a text said again, scanned once:
    at each place too, unless long texts were scanned apart), the other entries and hot
    unchanged; and no run where a literal reached from a text into the
    next (the texts then get entries, as without a run)."""
    r = _SHORT_RULES[which]
    was = prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN, prescan.RUN_MIN
    prescan.DEDUP_MIN, prescan._repeats = (2, lambda _: True) if dedup else (1 << 30, was[1])
    prescan.SPLIT_MIN = 1 if split else 1 << 30
    try:
        r.found.clear()
        hot, entries = r.prescan(texts)
        r.found.clear()
        prescan.RUN_MIN = 1
        memo = Memo()
        hot2, got = r.prescan(texts, into=memo)
    finally:
        prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN, prescan.RUN_MIN = was
        r.found.clear()
    assert got is memo and hot2 == hot
    nothing = {t for t, v in entries.items() if v is prescan.NOTHING}
    run = memo.run or []
    assert set(run) | {t for t, v in memo.items() if v is prescan.NOTHING} == nothing
    assert not set(run) & memo.keys()
    assert {t: v for t, v in memo.items() if t not in nothing} == {t: v for t, v in entries.items() if t not in nothing}
    assert all(not r.find(t) for t in run)
    assert _subsequence(run, texts)
    if memo.run is not None and not split:  # every place of each text, or (split: long ones apart) its first
        assert run == [t for t in texts if t in set(run)]


def test_no_run_below_run_min_nor_in_a_plain_dict() -> None:
    r = _SHORT_RULES[1]
    texts = ["x" + "".join(chr(99 + i // d % 20) for d in (1, 20, 400)) for i in range(prescan.RUN_MIN)]
    for into, run in ((Memo(), True), ({}, False)):
        r.found.clear()
        _, memo = r.prescan(texts, into=into)
        assert (getattr(memo, "run", None) == texts) is run
        assert len(memo) == (0 if run else len(set(texts)))
    r.found.clear()
    _, memo = r.prescan(texts[1:], into=Memo())
    assert memo.run is None and len(memo) == len(set(texts[1:]))


# Texts of REMEMBER_MIN bytes or more, which the rules remember (Rules.found): a literal,
# an e-mail, non-ASCII text, and text in which nothing is found.
_PART = st.sampled_from(["Acme Corp", " bob@corp.example.com ", "déjà vu ", "the quick brown fox ", "\n"])
_LONG = st.builds(lambda parts: "".join(parts).ljust(prescan.REMEMBER_MIN + 2, "."), st.lists(_PART, max_size=4))


@given(st.lists(st.tuples(_LONG, st.booleans()), min_size=1, max_size=6), st.booleans())
@example([("Acme Corp".ljust(34, "."), True), ("the quick brown fox ".ljust(34, "."), False)], True)
@example([("Acme Corp".ljust(34, "."), True), ("the quick brown fox ".ljust(34, "."), True)], True)
@example([(" bob@corp.example.com ".ljust(34, "."), True), ("x" * 34, False), ("Acme Corp".ljust(34, "."), False)], False)
def test_texts_met_before_are_in_the_memo_as_find_found_them(acme_rules: Rules, texts: list, memo_run: bool) -> None:
    """A text the rules met before (find() at an earlier request: Rules.found) is not
    scanned again; the memo holds what was found in it (Known), or that nothing was
    (NOTHING, or the clean memory). Whatever else the scan finds or does not find in
    the texts met for the first time beside it, find() with the memo must say of each
    text what it says alone, and every text with a span must be hot: a memo entry that
    says "nothing" for a text met before with an original in it is an original sent in
    clear, and the leak guard, which reads the same memo, would not see it."""
    r = acme_rules
    r.found.clear()
    alone = {t: r.find(t) for t, _ in texts}
    r.found.clear()
    for t, met in texts:
        if met:
            r.find(t)  # an earlier request's reading: remembered
    pieces = [t for t, _ in texts]
    hot, memo = r.prescan(pieces, into=Memo() if memo_run else None)
    for k, t in enumerate(pieces):
        assert r.find(t, memo) == alone[t], (t, memo.get(t))
        assert k in hot or not alone[t], t
    r.found.clear()


def _reads(monkeypatch, r: Rules) -> tuple[list[bytes], list[bytes]]:
    """What the scan reads from here on: (the texts the literals' automaton and the
    prefilter are given, the bytes a digest is taken of)."""
    scanned: list[bytes] = []
    digested: list[bytes] = []
    lit, many, dg = prescan._literals, type(r._prefilter).match_many, found.Found.digest

    def literals(rules, bs, *a):  # noqa: ANN001, ANN202
        scanned.extend(b.encode() if type(b) is str else bytes(b) for b in bs)
        return lit(rules, bs, *a)

    def match_many(self, bs, *a):  # noqa: ANN001, ANN202
        scanned.extend(b.encode() if type(b) is str else bytes(b) for b in bs)
        return many(self, bs, *a)

    def digest(b):  # noqa: ANN001, ANN202
        digested.append(bytes(b))
        return dg(b)

    monkeypatch.setattr(prescan, "_literals", literals)
    monkeypatch.setattr(type(r._prefilter), "match_many", match_many)
    monkeypatch.setattr(found.Found, "digest", staticmethod(digest))
    return scanned, digested


def test_a_text_met_before_is_not_scanned_again_and_a_digest_handed_on_is_not_taken_again(monkeypatch, acme_rules: Rules) -> None:
    """What makes a conversation's next turn cheap (bench/stages.py: its texts were
    all met at the turn before). A text met before is not scanned again: one with an
    original is looked up by its digest and its memo entry holds what find() found
    (Known, with that digest), one where nothing was found is known by its text (the
    clean memory) and not even digested; find() with the memo then neither scans nor
    digests either. A digest another rule set's memo of the same texts holds (the
    warning pass reads masking's memo: pipeline) is not taken again."""
    r = acme_rules
    r.found.clear()
    dirty, clean, fresh = "Acme Corp".ljust(40, "."), "the quick brown fox ".ljust(40, "."), "nothing here ".ljust(40, "-")
    assert r.find(dirty) and not r.find(clean)  # an earlier request's reading: remembered
    scanned, digested = _reads(monkeypatch, r)
    hot, memo = r.prescan([dirty, clean, fresh])
    assert hot == {0}
    assert scanned == [fresh.encode()] * 2  # the literals' automaton and the prefilter: the new text only
    assert digested == [dirty.encode(), fresh.encode()]
    assert type(memo[dirty]) is found.Known and memo[dirty].digest == found.Found.digest(dirty.encode())
    assert memo[clean] is prescan.NOTHING
    del digested[:], scanned[:]
    assert r.find(dirty, memo) == [("literals", 0, 9)] and not r.find(clean, memo) and not r.find(fresh, memo)
    assert digested == scanned == []
    # another rule set's prescan of the same texts, handed this memo: no digest taken again
    # of a text the memo holds one of (Known, or a new match's entry); a text where nothing
    # was found has none (NOTHING: the clean memory knows it by its text)
    new = "Acme Corp and more ".ljust(40, ".")
    hot, memo = r.prescan([dirty, new, fresh, clean])
    assert type(memo[dirty]) is found.Known and len(memo[new]) == 3 and memo[fresh] is prescan.NOTHING
    for met_clean in (False, True):  # (the other rule set met one text clean before: the rest looked up apart)
        r.found.clear()
        if met_clean:
            r.find(clean)
        del digested[:]
        hot2, memo2 = r.prescan([dirty, new, fresh, clean], digests=memo)
        assert hot2 == hot == {0, 1}
        assert digested == [fresh.encode()] + [clean.encode()] * (not met_clean)
        assert memo2[fresh] is memo2[clean] is prescan.NOTHING
    # the same where the texts said again are scanned once (DEDUP_MIN) and where short
    # ASCII texts are scanned apart from the long ones (SPLIT_MIN): the digests handed on
    pieces = [dirty, new, fresh, clean, "zz", dirty, "zz"]
    was = prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN
    try:
        for dedup, split in ((True, False), (False, True)):
            prescan.DEDUP_MIN, prescan._repeats = (2, lambda _: True) if dedup else (1 << 30, was[1])
            prescan.SPLIT_MIN = 1 if split else 1 << 30
            r.found.clear()
            hot, memo = r.prescan(pieces)
            r.found.clear()
            del digested[:]
            hot2, memo2 = r.prescan(pieces, digests=memo)
            assert hot2 == hot == {0, 1, 5}
            assert digested == [fresh.encode(), clean.encode()], (dedup, split)
            assert memo2[fresh] is memo2[clean] is memo2["zz"] is prescan.NOTHING
    finally:
        prescan.DEDUP_MIN, prescan._repeats, prescan.SPLIT_MIN = was
    r.found.clear()


def test_a_big_text_found_clean_by_the_scan_is_not_scanned_again(monkeypatch, acme_rules: Rules) -> None:
    """A text longer than CLEAN_MAX characters is not kept in the clean memory by its
    text (its str hashed whole for nothing: a file of 200 MB), but by its digest (Found):
    met again, it is looked up, not scanned."""
    r = acme_rules
    r.found.clear()
    big = "the quick brown fox " * (found.CLEAN_MAX // 20 + 1)
    fresh = "nothing here ".ljust(40, "-")
    r.prescan([big, fresh])
    scanned, _ = _reads(monkeypatch, r)
    hot, memo = r.prescan([big, "Acme Corp".ljust(40, ".")])
    assert hot == {1} and memo[big] is prescan.NOTHING
    assert big.encode() not in scanned
    r.found.clear()


@pytest.mark.parametrize(
    ("pieces", "repeats"),
    [(["a", "a"], True), (["a", "b"], False), (["a", "b", "a", "c"], False), (["a", "a", "b", "b"], True), (["a", "b", "c"], False)],
)
def test_repeats_are_half_or_more_of_an_even_sample(pieces: list[str], repeats: bool) -> None:
    """_repeats: do half or more of an even sample of the texts (every one, under
    DEDUP_MIN of them) repeat one another? A guess that decides how much is scanned."""
    assert prescan._repeats(pieces) is repeats


def test_no_run_where_fewer_than_run_min_texts_are_clean() -> None:
    """A memo's run lists the clean short texts only from RUN_MIN of them on: the texts
    marked beside them do not count."""
    r = _SHORT_RULES[1]
    r.found.clear()
    clean = ["x" + "".join(chr(99 + i // d % 20) for d in (1, 20, 400)) for i in range(prescan.RUN_MIN - 1)]
    hot, memo = r.prescan([*clean, "a1234"], into=Memo())
    assert hot == {len(clean)} and memo.run is None and len(memo) == len(clean) + 1
    r.found.clear()
