"""The literals' leftmost-longest matches in bytes, by a Hyperscan literal database where
that is faster than the automaton, which stays the reference (sans I/O; issue 29).

Aho–Corasick (ahocorasick-rs, `MatchKind.LeftmostLongest`) answers what masking needs of
the literals: the match that starts first (the longest of those that start there), then
the first that starts at or after its end, and so on. With many literals the automaton
reads some 2.2 ns a byte (1,000 literals over the 1 MB body's texts of bench/stages.py:
2.2 ms a pass, and masking makes three: the scan of the texts, the second look at what
masking made, rules/settle.py, and the disguises' warning pass). A Hyperscan literal
database reads the same bytes in a third of that, but reports every match of every
literal, overlapping ones too, each through a Python call. The chain above is made from
those: sorted by start (then end), each start's longest is the last of its run, and a
match is taken when it starts at or after the end of the one taken before. That is the
definition the automaton implements, so both give the same list
(tests/rules/test_leftmost.py holds them to it on generated literals and texts).

Each match costs a Python call here and a tuple in the automaton: where matches are
dense (more than one in DENSE bytes) the calls cost more than Hyperscan saves, so the
scan stops there and the automaton reads the text again (never more than about twice the
automaton's own time). A short text (under SMALL bytes) goes to the automaton: a scan's
setup costs more than the bytes. Where Hyperscan is not there, does not take the literals
(one holding a NUL: the wrapper reads each as a C string), or the set is small (fewer
than MIN_LITERALS: the automaton is fast then) or large (over MAX_LITERALS: the database
takes long to build, 10,000 ~0.17 s), the automaton alone.

`database` and `Scanner` (every match, no chain) serve base/copies.py too: the places of
an original's copies in a body's bytes.
"""

from __future__ import annotations

import threading
from typing import Any

try:
    import hyperscan  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - a platform without its wheel: the automaton
    hyperscan = None  # type: ignore[assignment]

# Hyperscan reads a set from this many literals on (fewer: the automaton is as fast), up
# to this many (more: its build takes too long for a reload).
MIN_LITERALS, MAX_LITERALS = 64, 10_000
# A text shorter than this many bytes is read by the automaton.
SMALL = 4096
# More matches than one in this many bytes (and LEAST): the scan stops and the automaton
# reads the text (measured: a match's Python call and its place in the sort cost what the
# automaton spends on some 150-200 bytes).
DENSE, LEAST = 192, 64


def database(keys: list[bytes]) -> Any:
    """A Hyperscan literal database of keys (each matched exactly, every match reported),
    or None where Hyperscan is not there or does not take them (one holding a NUL)."""
    if hyperscan is None or not keys or any(b"\x00" in k for k in keys):
        return None
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=keys, ids=list(range(len(keys))), elements=len(keys), flags=0, literal=True)
    except Exception:  # noqa: BLE001 - not taken: the caller's automaton finds them
        return None
    return db


class Scanner:
    """Every match of each of keys in bytes, by a Hyperscan literal database (`database`;
    None where there is none): `all`. Read-only once made; a scratch space per thread."""

    __slots__ = ("_db", "_lengths", "_local")

    def __init__(self, keys: list[bytes], db: Any) -> None:
        self._db = db
        self._lengths = [len(k) for k in keys]
        self._local = threading.local()

    def all(self, b: Any, most: int) -> list[tuple[int, int, int]] | None:
        """Every match (start, end, index) in b (bytes, or a view of them), in the order
        Hyperscan reports them; None past `most` of them (the scan stops)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        lengths = self._lengths
        out: list[tuple[int, int, int]] = []
        append = out.append

        def hit(i: int, _a: int, e: int, _f: int, _c: object) -> bool:
            append((e - lengths[i], e, i))
            return len(out) > most  # (True stops the scan)

        try:
            self._db.scan(b, match_event_handler=hit, scratch=scratch)
        except hyperscan.ScanTerminated:
            return None
        return out


def too_many(b: Any) -> int:
    """How many matches in b are dense (module docstring): more than this."""
    return len(b) // DENSE + LEAST


class Literals:
    """find_matches_as_indexes(b) of the automaton `ac` of keys (leftmost-longest:
    (index, start, end) in b, in order), answered by a Hyperscan literal database of the
    same keys where one is made (module docstring)."""

    __slots__ = ("ac", "_scan")

    def __init__(self, keys: list[bytes], ac: Any) -> None:
        self.ac = ac
        db = database(keys) if MIN_LITERALS <= len(keys) <= MAX_LITERALS else None
        self._scan = Scanner(keys, db) if db is not None else None

    @property
    def hyperscan(self) -> bool:
        """Does a Hyperscan database read long texts?"""
        return self._scan is not None

    def find_matches_as_indexes(self, b: Any) -> list[tuple[int, int, int]]:
        """The automaton's leftmost-longest matches (index, start, end) in b (bytes, or a
        view of them)."""
        if self._scan is None or len(b) < SMALL:
            return self.ac.find_matches_as_indexes(b)
        got = self._scan.all(b, too_many(b))
        if got is None:
            return self.ac.find_matches_as_indexes(b)
        return chain(got)


def chain(matches: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The leftmost-longest chain of every match (start, end, index) of a set of distinct
    literals in a text: (index, start, end), in order (module docstring). Two matches
    with one start and one end are one literal (the literals are distinct)."""
    matches.sort()
    out: list[tuple[int, int, int]] = []
    pos, n = 0, len(matches)
    for j in range(n):
        s, e, i = matches[j]
        if s >= pos and (j + 1 == n or matches[j + 1][0] != s):  # the longest that starts at s
            out.append((i, s, e))
            pos = e
    return out
