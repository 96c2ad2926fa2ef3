"""rules/bigtext.py: a big text's literals found window by window, kept in columns (the
whole path with columns: tests/base/test_masking_scan.py)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.rules import bigtext
from disguiselib.wire.text import Columns


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["ab", "abc", "bca", "aaa", "c", "abcab", "é"]), min_size=1, max_size=5, unique=True),
       st.lists(st.sampled_from(["a", "b", "c", "ab", "é", "x"]), max_size=40).map("".join), st.integers(1, 9),
       st.integers(0, 6))  # fmt: skip
@example(["ab", "abcab"], "xabcab", 1, 0)  # a match at a window's end, whose longer one reaches past it
def test_literals_found_window_by_window_are_the_automatons_own(lits: list, text: str, window: int, start: int) -> None:
    """lit_matches reads a big text in windows and returns what the automaton returns
    for the whole of it (leftmost-longest, from `start`), overlapping literals and
    matches across a window's end included."""
    import ahocorasick_rs

    b = text.encode()
    pats = [x.encode() for x in lits]
    ac = ahocorasick_rs.BytesAhoCorasick(pats, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
    start = min(start, len(b))
    want = [(k, s + start, e + start) for k, s, e in ac.find_matches_as_indexes(b[start:])]
    saved, bigtext.BIG = bigtext.BIG, 0
    try:
        got = bigtext.lit_matches(ac, b, max(map(len, pats)), start, window)
    finally:
        bigtext.BIG = saved
    assert isinstance(got, Columns) and list(got) == want and got[:] == want
