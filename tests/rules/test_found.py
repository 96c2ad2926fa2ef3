"""What a rule set remembers of texts it met (rules/found.py): Rules.find on a text met
before answers what a scan of it answers, the memory is bounded and keeps the newest.
The masking side (a body met again is masked as the first time) is in
tests/base/test_masking_scan.py."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.rules import mappings
from disguiselib.rules.found import Found
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
