"""Where in a JSON body's raw bytes a rule set may find anything, in one pass of each
engine over the whole body (sans I/O; issue 27: a tool input of a million short array
elements).

Masking reads a body string by string: the walk lists each string, the scan of pieces
(Rules.prescan) joins and scans them, the disguises' warning pass scans them again,
some 0.35 us a string in Python around the engines. But a string written without
escapes is its own bytes in the body, between two quotes. So the engines are run once
over the body as it stands: the literals and the disguises' (one Hyperscan literal
database: every match of each, overlapping ones too; where Hyperscan is not there, one
automaton, leftmost-longest: a match inside a string is found, or a match overlapping
it is, so the string is marked either way), and the patterns' gate over the body with each quote
a line break (each such string is then one line of it, as match_many joins texts;
regions() narrows down where the gate finds something). What they mark is
`hot`: spans of the body's text. The walk (wire/spanwalk.py, collect) leaves out every
string read as it is and alone, written without escapes, that no span of hot reaches
into: nothing can be found in it. The others are read and scanned as before.

`hot` is None where the pass is not worth it or cannot speak for the patterns: a body of
few or long strings (its texts are mostly long and escaped: nothing left out, and the
scans over its bytes cost more than they save), a rule set with patterns the gate does
not take, a gate that finds something nearly everywhere.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import ahocorasick_rs

from ..wire.text import char_offsets, utf8
from . import leftmost
from .rules import Rules, automaton

# The body must hold at least this many strings, at most this many bytes a string on
# average (measured on a sample of it), for the pass to be made.
STRINGS_MIN = 4096
BYTES_PER_STRING = 48
# The sample: this many slices of this many bytes, spread over the body.
SAMPLES, SAMPLE_BYTES = 16, 4096
# regions: the blocks it scans first, at most this large; a range where the gate finds
# something is not cut below this size; no pass where the gate finds something in more
# than 1/REGION_DENSE of the body's blocks.
REGION_BLOCK, REGION_MIN, REGION_DENSE = 1 << 16, 512, 4
# Narrowing down where the gate finds something scans at most this many times the body;
# the literals' matches are at most one for this many strings (more: no pass).
GATE_BUDGET = 3
MATCHES_PER_STRING = 8
# Where the gate finds something in most blocks, the end of each match marks its string:
# at most this many ends a string (more: no pass).
ENDS_PER_STRING = 2

_QUOTE_TO_LINE = bytes.maketrans(b'"', b"\n")


def _strings(s: str) -> int:
    """About how many strings s holds, when that is many short ones (a sample's quotes
    that are not escaped: JSON text inside a string is read as before, not left out);
    else 0."""
    n = len(s)
    if n < 2 * STRINGS_MIN:
        return 0
    step = max(n // SAMPLES, SAMPLE_BYTES)
    quotes = sampled = 0
    for a in range(0, n, step):
        e = a + SAMPLE_BYTES
        quotes += s.count('"', a, e) - s.count('\\"', a, e)  # (JSON text in a string: not)
        sampled += min(SAMPLE_BYTES, n - a)
    strings = int(quotes / 2 * n / sampled)
    return strings if strings >= STRINGS_MIN and n <= BYTES_PER_STRING * strings else 0


def regions(pf: Any, b: bytes, cuts: bytes, budget: int) -> list[tuple[int, int]] | None:
    """Where in b the patterns' prefilter pf may find something within one of b's lines:
    byte ranges (start, end), in order, outside which its gate found nothing; None where
    the gate cannot say for every pattern (Prefilter.gated), where it finds something
    in more than a quarter of b's blocks, or where narrowing down scanned more than
    budget bytes. b is UTF-8 whose lines are the texts asked about (a JSON body with
    each quote a line break); cuts is b as it was before, whose `"` bytes are where b
    may be cut (each a line break of b: a string of no line break is never cut). b is
    scanned in 64 blocks (REGION_BLOCK bytes at most, 8 * REGION_MIN at least); a range
    where the gate finds something is cut in two at such a place near its middle and
    each half scanned again, down to REGION_MIN bytes: a pattern that may match in a
    text alone may match in its line (Prefilter.match_many), and in any range of whole
    lines holding it."""
    if not pf.gated:
        return None
    view = memoryview(b)
    n = len(b)
    block = max(8 * REGION_MIN, min(REGION_BLOCK, n // 64))
    todo: list[tuple[int, int]] = []
    a = 0
    while a < n:
        e = cuts.find(b'"', a + block) + 1 or n  # just after a quote, or b's end
        if pf.gate_finds(view[a:e]):
            todo.append((a, e))
        a = e
    budget -= n
    if REGION_DENSE * sum(e - a for a, e in todo) > n:
        return None
    out: list[tuple[int, int]] = []
    todo.reverse()
    while todo:
        a, e = todo.pop()
        mid = (a + e) // 2
        p = cuts.rfind(b'"', a + 1, mid + 1)
        if p < 0:
            p = cuts.find(b'"', mid, e - 1)
        if e - a <= REGION_MIN or p < 0:
            out.append((a, e))
            continue
        budget -= e - a
        if budget < 0:
            return None
        # the line break at p ends the left half
        right, left = pf.gate_finds(view[p + 1 : e]), pf.gate_finds(view[a : p + 1])
        if right:
            todo.append((p + 1, e))
        if left:
            todo.append((a, p + 1))
    return out


class Literals:
    """The literals of a rule set and of its disguises' set, found in raw bytes: spans()
    lists where each match is. One Hyperscan literal database (leftmost.Scanner: every
    match of every literal, overlapping ones too, each a byte string matched exactly),
    some 5x faster than the automaton over a body of short strings; where Hyperscan is
    not there or does not take them (leftmost.database: a literal holding a NUL; more
    than leftmost.MAX_LITERALS, whose build grows faster than the automaton's: 10,000
    ~0.17 s and 17 MB, 20,000 ~0.9 s and 37 MB; the automaton 20,000 in 35 ms), the
    automaton (leftmost-longest: a match inside a string is found, or one overlapping it
    is)."""

    __slots__ = ("_scan", "_ac")

    def __init__(self, keys: list[bytes]) -> None:
        db = leftmost.database(keys) if len(keys) <= leftmost.MAX_LITERALS else None
        self._scan = leftmost.Scanner(keys, db) if db is not None else None
        self._ac: Any = None
        if self._scan is None:
            self._ac = automaton(ahocorasick_rs.BytesAhoCorasick, keys, sum(map(len, keys)))

    def spans(self, raw: bytes, most: int) -> list[tuple[int, int]] | None:
        """(start, end) in raw of each match, at most `most` of them (more: None)."""
        if self._ac is not None:
            found = self._ac.find_matches_as_indexes(raw)
            return None if len(found) > most else [(m[1], m[2]) for m in found]
        got = self._scan.all(raw, most)  # type: ignore[union-attr]
        return None if got is None else [(m[0], m[1]) for m in got]


def _literals(rules: Rules, disguises: Rules | None) -> Literals | None:
    """rules' literals and disguises' (Literals), made when first asked and kept on rules
    for that disguises' set (a rule set is never changed: a reload builds new ones; two
    threads asking at once build it twice, harmlessly)."""
    got = rules._raw_literals
    if got is not None and got[0] is disguises:
        return got[1]  # type: ignore[return-value]
    keys = list(rules.lit_forward) + (list(disguises.lit_forward) if disguises is not None else [])
    lits = Literals([utf8(k) for k in keys]) if keys else None
    rules._raw_literals = (disguises, lits)
    return lits


def merged(spans: list[tuple[int, int]]) -> list[int]:
    """spans (start, end) as their union: disjoint, in order, (start, end) after one
    another in one list."""
    spans.sort()
    flat: list[int] = []
    for a, e in spans:
        if flat and a <= flat[-1]:
            if e > flat[-1]:
                flat[-1] = e
        else:
            flat += (a, e)
    return flat


def hot(raw: bytes | None, s: str, rules: Rules, disguises: Rules | None = None) -> array[int] | None:
    """The spans of s (raw decoded, exactly; raw None: s encoded when the pass is made)
    in which rules (and disguises, the warning pass's literals) may find something,
    merged, in order, as (start, end) after one another in characters; None where the
    pass is not made (the module's docstring). Every match of a literal, every line of
    a range where the gate found something, is in a span."""
    if rules.is_empty or (disguises is not None and disguises._prefilter is not None):
        return None  # (the warning pass reads literals alone: one with patterns reads every text)
    strings = _strings(s)
    if not strings:
        return None
    if raw is None:
        raw = s.encode("utf-8")
    spans: list[tuple[int, int]] = []
    pf = rules._prefilter
    if pf is not None:
        lines = raw.translate(_QUOTE_TO_LINE)
        got = regions(pf, lines, raw, GATE_BUDGET * len(raw))
        if got is None:
            # the gate finds something nearly everywhere (a million hex ids, the all-digit
            # ones a phone number's prefilter's): where each match ends marks its string
            ends = pf.gate_ends(lines, ENDS_PER_STRING * strings)  # (None where not gated)
            if ends is None:
                return None
            got = [(max(e - 1, 0), e) for e in ends]  # (an empty match's: the quote before)
        del lines
        spans.extend(got)
    lits = _literals(rules, disguises)
    if lits is not None:
        found = lits.spans(raw, strings // MATCHES_PER_STRING if MATCHES_PER_STRING > 0 else sys.maxsize)
        if found is None:
            return None  # literals nearly everywhere: the strings are read as before
        spans.extend(found)
    flat = merged(spans)
    if len(s) != len(raw) and flat:
        flat = char_offsets(raw, flat)
    return array("q", flat)
