"""rules/leftmost.py: the literals' leftmost-longest matches by Hyperscan, held to the
automaton's (the reference) on generated literals and texts; where it steps aside."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import ahocorasick_rs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.rules import leftmost, mappings
from disguiselib.rules.rules import Rules

pytestmark = pytest.mark.skipif(leftmost.hyperscan is None, reason="Hyperscan is not installed on this platform")


def _literals(keys: list[bytes]) -> leftmost.Literals:
    ac = ahocorasick_rs.BytesAhoCorasick(keys, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
    return leftmost.Literals(keys, ac)


@contextmanager
def every_set() -> Iterator[None]:
    """Hyperscan for any set and any text, however small or dense."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(leftmost, "MIN_LITERALS", 1)
        mp.setattr(leftmost, "SMALL", 0)
        mp.setattr(leftmost, "DENSE", 1)
        mp.setattr(leftmost, "LEAST", 1 << 30)
        yield


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["ab", "abc", "bca", "aaa", "a", "c", "abcab", "é", "bé", "ca"]), min_size=1,
                max_size=6, unique=True),
       st.lists(st.sampled_from(["a", "b", "c", "ab", "é", "x", "\x00"]), max_size=60).map("".join))  # fmt: skip
@example(["ab", "abcab"], "xabcab")  # a longer literal at the start of a shorter one
@example(["abc", "bca", "c"], "abca")  # the match after one taken starts inside it: passed over
@example(["aaa", "a"], "aaaaa")  # a literal's matches overlapping each other
def test_hyperscan_gives_the_automatons_leftmost_longest_matches(lits: list[str], text: str) -> None:
    """Every match of every literal, made into the leftmost-longest chain, is what the
    automaton returns: nested, overlapping and repeated literals, non-ASCII bytes, NULs."""
    keys = [x.encode() for x in lits]
    with every_set():
        found = _literals(keys)
        assert found.hyperscan
        b = text.encode()
        want = found.ac.find_matches_as_indexes(b)
        assert found.find_matches_as_indexes(b) == want
        assert found.find_matches_as_indexes(memoryview(b)) == want


def test_dense_matches_stop_the_scan_and_the_automaton_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """More matches than one in DENSE bytes: the scan stops (its calls would cost more than
    the automaton) and the automaton's answer is given; sparse ones are Hyperscan's."""
    found = _literals([f"w{i:03d}".encode() for i in range(leftmost.MIN_LITERALS)])
    assert found.hyperscan
    calls = []
    real = leftmost.Scanner.all

    def counted(self: leftmost.Scanner, b: object, most: int) -> object:
        got = real(self, b, most)
        calls.append(got is None)
        return got

    monkeypatch.setattr(leftmost.Scanner, "all", counted)
    sparse = (b"." * 1000 + b"w007 ") * 20
    dense = b"w001 w002 " * 2000
    for b, stopped in ((sparse, False), (dense, True)):
        calls.clear()
        assert found.find_matches_as_indexes(b) == found.ac.find_matches_as_indexes(b)
        assert calls == [stopped]


def test_where_hyperscan_steps_aside() -> None:
    """A set holding a NUL (the wrapper reads a literal as a C string), a small set and a
    short text are the automaton's."""
    many = [f"w{i:03d}".encode() for i in range(leftmost.MIN_LITERALS)]
    assert not _literals([*many, b"a\x00b"]).hyperscan
    assert not _literals(many[:-1]).hyperscan
    found = _literals(many)
    short = b"w001 " * 10
    assert len(short) < leftmost.SMALL and found.find_matches_as_indexes(short) == found.ac.find_matches_as_indexes(short)


def test_a_rule_set_of_many_literals_reads_long_texts_with_hyperscan() -> None:
    """Rules' literals (the masker's scan, its second look, the warning pass's set) go
    through leftmost.Literals: many of them, by Hyperscan; and find() is what it was."""
    lits = {f"Orig{i:03d} Corp": f"Dis{i:03d} Labs" for i in range(100)}
    r = Rules(mappings.from_dict({"literals": lits}))
    assert isinstance(r._lit_ac, leftmost.Literals) and r._lit_ac.hyperscan
    text = ("lorem ipsum " * 400 + "Orig007 Corp and Orig042 Corp ") * 3
    assert len(text) > leftmost.SMALL
    spans = r.find(text)
    assert [text[a:b] for _, a, b in spans] == ["Orig007 Corp", "Orig042 Corp"] * 3
