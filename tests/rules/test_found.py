"""What a rule set remembers of texts it met (rules/found.py): Rules.find on a text met
before answers what a scan of it answers, the memory is bounded and keeps the newest.
The masking side (a body met again is masked as the first time) is in
tests/base/test_masking_scan.py."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.rules import mappings
from disguiselib.rules.found import CLEAN_MAX, NOTHING, Found, Memo, texts
from disguiselib.rules.rules import Rules

_SHIPPED = mappings.load(mappings.Path(__file__).resolve().parents[2] / "mappings")
_CORPUS = [
    json.loads(line)["text"]
    for line in (mappings.Path(__file__).resolve().parents[1] / "corpus" / "positives.jsonl").read_text().splitlines()
]
_noise = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)

_SHIPPED_RULES = Rules(_SHIPPED)


@given(st.lists(st.tuples(st.sampled_from(_CORPUS), st.integers(0, 400), _noise, st.booleans()), min_size=1,
                max_size=6), st.integers(0, 3))  # fmt: skip
def test_what_the_rules_remember_of_a_text_is_what_they_find_in_it(parts, limit: int) -> None:
    """Rules.find on texts met before (Rules.found: the digest of a text -> its spans)
    answers what a scan of the text answers, for the shipped rules on the corpus'
    positives, cut, with noise and non-ASCII characters (offsets in characters), each
    text met twice, with generations swapping often."""
    _SHIPPED_RULES.found = Found(limit=limit, span_limit=3 * limit)
    texts = [pre + text[a : a + 60] + ("é" if nonascii else "") for text, a, pre, nonascii in parts]
    for t in texts + texts:
        got = _SHIPPED_RULES.find(t)
        fresh = _SHIPPED_RULES.found
        _SHIPPED_RULES.found = Found(limit=0)
        try:
            assert got == _SHIPPED_RULES.find(t)
        finally:
            _SHIPPED_RULES.found = fresh


def test_a_text_met_again_is_not_scanned_again() -> None:
    r = Rules(_SHIPPED)
    r.found = Found()
    calls = []
    orig = r._find_bytes
    r._find_bytes = lambda b, pre=None, *a: calls.append(b) or orig(b, pre, *a)  # type: ignore[method-assign]
    text = "mail ops-team@example.com today, Müller"
    first = r.find(text)
    assert first and r.find(text) == first and r.find("nothing here") == [] and r.find("nothing here") == []
    assert len(calls) == 2 and r.found.hits == 2


def test_what_the_rules_remember_is_bounded_and_keeps_the_newest() -> None:
    f = Found(limit=2, span_limit=100)
    for i in range(7):
        f.put(bytes([i]), ())
        assert f.get(bytes([i])) == () and f.get(bytes([max(0, i - 1)])) == ()  # the newest two, always
    assert len(f._new) + len(f._old) <= 4 and f.get(bytes([0])) is None
    f.put(b"x", tuple(("EMAIL", 0, 1) for _ in range(60)))
    f.put(b"w", tuple(("EMAIL", 0, 1) for _ in range(60)))  # too many spans: the next put starts a generation
    f.put(b"y", ())
    assert len(f._new) == 1 and f.get(b"w") is not None


def test_a_text_with_more_spans_than_the_memory_holds_is_not_kept() -> None:
    """A 200 MB string with an original every line would hold millions of spans in the
    memory (and its older generation) long after its request."""
    f = Found(limit=2, span_limit=100)
    f.put(b"x", tuple(("EMAIL", 0, 1) for _ in range(101)))
    f.put(b"y", tuple(("EMAIL", 0, 1) for _ in range(100)))
    assert f.get(b"x") is None and f.get(b"y") is not None and f._spans == 100


def test_a_text_is_known_by_a_128_bit_digest() -> None:
    assert len(Found.digest(b"x")) == 16 and Found.digest(b"x") != Found.digest(b"y")


def test_no_memory_remembers_nothing_and_one_a_generation_remembers_the_last_two() -> None:
    none, one = Found(limit=0), Found(limit=1)
    for f in (none, one):
        for x in (b"a", b"b", b"c"):
            f.put(x, ())
    assert none.get(b"c") is None and none.get(b"b") is None
    assert one.get(b"c") == () and one.get(b"b") == () and one.get(b"a") is None


def test_an_old_text_met_again_is_kept_through_the_next_swap() -> None:
    f = Found(limit=2)
    f.put(b"a", ())
    f.put(b"b", ())
    f.put(b"c", ())  # swap: a and b are old
    assert f.get(b"a") == ()  # met again: new again
    f.put(b"d", ())  # swap: new was {c, a}
    assert f.get(b"a") == () and f.get(b"b") is None


def test_spans_count_towards_the_bound_exactly() -> None:
    f = Found(limit=100, span_limit=3)
    f.put(b"a", (("X", 0, 1),))
    f.put(b"b", (("X", 0, 1), ("X", 2, 3)))  # 3 spans held: the bound
    assert f._spans == 3 and len(f._new) == 2
    f.put(b"c", (("X", 0, 1),))  # a new generation
    assert len(f._new) == 1 and f._spans == 1
    f.put(b"d", ())
    assert f._spans == 1 and len(f._new) == 2


def test_clear_forgets_everything() -> None:
    f = Found()
    f.put(b"a", ())
    f.clear()
    assert f.get(b"a") is None and f._spans == 0


# -- clean texts, remembered by themselves (Found.clean) ------------------------------------


def _clean_held(f: Found) -> list[str]:
    return [*f._cnew, *f._cold]


@given(st.lists(st.tuples(st.sampled_from(_CORPUS), st.integers(0, 400), _noise, st.booleans()), min_size=1,
                max_size=8), st.integers(0, 200))  # fmt: skip
def test_a_clean_text_met_again_is_answered_as_a_scan_answers_it(parts, chars: int) -> None:
    """Rules.prescan and Rules.find on texts met before, where the clean ones are
    remembered by themselves (generations of at most `chars` characters, swapping
    often): the same spans as a rule set that remembers nothing, every text with one
    marked (a text the prefilter only suspected is not, once met: nothing was found in
    it), and no text the memory holds has anything a scan finds in it (it keeps no
    original)."""
    r = _SHIPPED_RULES
    r.found = Found(char_limit=chars)
    texts = [pre + text[a : a + 60] + ("é" if nonascii else "") for text, a, pre, nonascii in parts]
    try:
        for _ in range(2):
            hot, memo = r.prescan(texts)
            got = [r.find(t, memo) for t in texts]
            again = [r.find(t) for t in texts]
            fresh, r.found = r.found, Found(limit=0)
            try:
                want_hot, want_memo = r.prescan(texts)
                want = [r.find(t, want_memo) for t in texts]
                assert got == want and again == want
                assert hot <= want_hot and all(k in hot for k, spans in enumerate(want) if spans)
                assert all(r.find(t) == [] for t in _clean_held(fresh))
                assert sum(map(len, fresh._cnew)) <= max(chars, 0) or len(fresh._cnew) == 1
            finally:
                r.found = fresh
    finally:
        r.found = Found()


def test_a_clean_text_met_again_is_neither_encoded_nor_digested_again(monkeypatch) -> None:
    """A conversation's next turn is mostly texts met before with nothing in them: they
    are answered by themselves, without the UTF-8 copy and the digest the texts with an
    original still need (reverting Found.cleans digests every text again)."""
    r = Rules(_SHIPPED)
    clean = [f"line {i}: the build passed on the third try, nothing to report é" for i in range(50)]
    hit = "mail ops-team@example.com about the build that passed on the third try"
    texts = [*clean, hit]
    hot, _ = r.prescan(texts)
    assert hot == {len(clean)}
    digests: list[bytes] = []
    real = Found.digest
    monkeypatch.setattr(Found, "digest", staticmethod(lambda b: digests.append(b) or real(b)))
    hot2, memo = r.prescan(texts)
    assert hot2 == hot and len(digests) == 1 and bytes(digests[0]) == hit.encode()
    assert all(memo[t] is NOTHING for t in clean)
    assert r.find(clean[0]) == [] and len(digests) == 1  # find() too: answered by the text itself
    assert r.find(hit, memo) == r.find(hit) != []


def test_the_clean_memory_is_bounded_by_characters_and_keeps_the_newest() -> None:
    f = Found(char_limit=100)
    texts = [f"{i:02d}" + "x" * 38 for i in range(7)]  # 40 characters each: two a generation
    for i, t in enumerate(texts):
        f.add_clean((t,))
        assert f.clean(t) and (i == 0 or f.clean(texts[i - 1]))  # the newest two, always
        assert sum(map(len, f._cnew)) <= 100 and sum(map(len, f._cold)) <= 100
    assert not f.clean(texts[0]) and f.cleans(texts) is not None
    assert f.cleans(["never met"]) is None


def test_a_clean_text_too_long_to_hold_is_remembered_by_its_digest() -> None:
    """A string over CLEAN_MAX characters in which nothing is found is not held (memory): its digest is."""
    r = Rules(_SHIPPED)
    big = "nothing to see here. " * ((CLEAN_MAX // 21) + 2)
    assert len(big) > CLEAN_MAX
    for _ in range(2):
        hot, _ = r.prescan([big, "a short one"])
        assert hot == set() and r.find(big) == []
    assert big not in _clean_held(r.found) and r.found.get(Found.digest(big.encode())) == ()


def test_no_memory_holds_no_clean_text() -> None:
    f = Found(limit=0)
    f.add_clean(["x" * 40])
    assert not f.clean("x" * 40) and f.cleans(["x" * 40]) is None


def test_a_body_with_a_text_too_long_to_hold_is_looked_up_by_digests(monkeypatch) -> None:
    """Looking a text up by itself hashes it whole: a body holding a text over CLEAN_MAX
    characters (a 200 MB string) is not looked up so, by prescan or find."""
    r = Rules(_SHIPPED)
    big = "nothing to see here. " * ((CLEAN_MAX // 21) + 2)
    small = "a text long enough to be remembered, with nothing in it"
    r.prescan([small])
    asked: list[int] = []
    real = Found.cleans
    monkeypatch.setattr(Found, "cleans", lambda self, texts: asked.append(len(texts)) or real(self, texts))
    monkeypatch.setattr(Found, "clean", lambda self, text: asked.append(len(text)) or False)
    hot, memo = r.prescan([big, small])
    assert hot == set() and asked == [] and r.find(big) == [] and asked == []
    assert r.find(small, memo) == [] and r.prescan([small])[0] == set() and asked == [1]


def test_a_memo_holds_its_run_until_cleared_and_names_every_text_it_speaks_of() -> None:
    """Memo: a dict with a run (prescan's short clean texts, in order); cleared, it holds
    neither, and a run can be listed into it again; texts() names its keys, then its run."""
    memo = Memo()
    assert memo.run is None and texts(memo) == []
    memo["a"] = NOTHING
    memo.run = ["b", "c", "b"]
    assert texts(memo) == ["a", "b", "c", "b"] and list(memo) == ["a"]
    memo.clear()
    assert memo.run is None and not memo and texts(memo) == []
    assert texts({"x": NOTHING, "y": None}) == ["x", "y"]  # a plain dict: its keys
    memo.run = []
    assert texts(memo) == []
