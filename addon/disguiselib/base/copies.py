"""Copies of an original a rule found only by its context (sans I/O).

Some rules find a value by what stands beside it: PASSWORD and SECRET by a key or an
assignment (`db_password = "hunter2xyz9Q"`), a national phone number by a keyword, an
e-mail by where its domain ends. The same value elsewhere in the request, without that
context, is no match: a tool result that prints the password, or, every turn, the
model's own `[PASSWORD_1]` restored in the client's history and sent back as text
(`Your value hunter2xyz9Q is weak`, `bob@corp-mail.com-related`). It left in clear.

So a request is masked once more when its masked text still spells an original one of
its rules found: that time every copy of each such original, in any text masking reads,
is replaced with the original's disguise (the same placeholder or fake); and the leak
guard then reads every text of the request knowing those originals (pipeline), so that
a copy no reading found (one spelled with `\\u` escapes) is refused. A copy where masking
reads nothing (a thinking block, an id: the provider's own, sent back as it came) stays.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Iterable
from typing import Any

import ahocorasick_rs

from ..errors import MaskError
from ..rules import leftmost
from ..rules.knowing import Originals, as_originals, char_spans
from ..rules.session import Session
from .present import ASCII_ESCAPE_DIGITS

_DFA = ahocorasick_rs.Implementation.DFA
# Escapes no JSON writer makes (a printable ASCII character as `\\u00..`, `\\/`): text spelled
# with them may hold a copy of an original that no search of the written text finds
_ODD = [b"\\/", *(f"\\u00{d}".encode() for d in ASCII_ESCAPE_DIGITS)]


# How many times a request is masked again for the copies of what masking found (more)
COPY_ROUNDS = 4


def more(s: str, edits: Any, session: Session, known: Originals, raw: bytes | None = None) -> Originals | None:
    """The originals the JSON text s, masked with edits in session, is to be masked again
    with, every copy of each masked too: known and those session's rules found by their
    context that the masked text still spells (left_over), where there is one known does
    not hold; else None. What masking a copy reveals may be one (`+1 415 555 267110.1.2.3`:
    the phone's copy masked, the address after it is found, and its copy elsewhere is
    one). MaskError where session is the COPY_ROUNDS-th masking again (its `copied`). raw: s's
    UTF-8 bytes, where the caller holds them (the body s was decoded from: not encoded again)."""
    found = left_over(s, edits, session, raw) if session.placeholders else {}
    if found.keys() <= known.keys():
        return None
    if session.copied >= COPY_ROUNDS:
        raise MaskError("masking the copies of originals revealed more originals, round after round")
    return Originals({**known, **found})


@functools.lru_cache(maxsize=4096)
def spellings(original: str) -> tuple[str, ...]:
    """How JSON text may spell original as it is: written as it is, and ASCII-escaped
    (json.dumps' two styles). Other spellings are the leak guard's to find."""
    a, b = json.dumps(original, ensure_ascii=False)[1:-1], json.dumps(original)[1:-1]
    return (a,) if a == b else (a, b)


def left_over(s: str, edits: Iterable[tuple[int, int, Any]], session: Session, raw: bytes | None = None) -> Originals:
    """The originals session's rules found (original -> the rule's name) that the JSON
    text s, masked with edits ((start, end, replacement) in s, in order; a replacement a
    str or a big text's token: tokenmap.Token), still spells outside them, or in a
    replacement (a token encoded again whole); all of them where s holds an escape no
    JSON writer makes (a copy may be spelled with it). raw: s's UTF-8 bytes (surrogatepass),
    where the caller holds them; else s is encoded."""
    found = Originals(session.found())
    if not found:
        return found
    starts: list[int] = []
    ends: list[int] = []
    texts: list[str] = []
    for a, b, r in edits:
        inner = getattr(r, "edits", None)
        if inner is None:
            starts.append(a)
            ends.append(b)
            if len(r) > 64:  # (a disguise is no copy: a token encoded again whole may hold one)
                texts.append(r)
        else:  # a big text's token: its own edits, in its value (no escape in it: where they are in s)
            for x, y, _ in inner:
                starts.append(r.start + x)
                ends.append(r.start + y)
    # one pass over the text's bytes for every spelling of every original, and the odd escapes
    forms = [(form, o) for o in found for form in spellings(o)]
    if raw is None:
        raw = s.encode("utf-8", "surrogatepass")
    patterns = (*(f.encode("utf-8", "surrogatepass") for f, _ in forms), *_ODD)
    search = _search(patterns) if len(raw) >= Places.SHORT else Places(list(patterns), lazy=True)
    matches = search.places(raw)
    if any(k >= len(forms) for k, _, _ in matches):
        return found
    left: dict[str, str] = {}
    for k, i, j in char_spans(s, raw, matches):
        e = bisect.bisect_right(starts, i) - 1
        if e < 0 or ends[e] < j:
            left[forms[k][1]] = found[forms[k][1]]
    for text in texts:
        for k, _, _ in search.places(text.encode("utf-8", "surrogatepass")):
            if k >= len(forms):
                return found
            left[forms[k][1]] = found[forms[k][1]]
    return Originals(left)


class Places:
    """Every place each of several byte strings is in a text, overlapping ones too: the
    short ones by a Hyperscan literal database (rules/leftmost.py: every match, some five
    times faster than the automaton over a 1 MB body), or where there is none or matches
    are dense, by an Aho–Corasick automaton (the reference); each of LONG bytes or more by
    bytes.find. A database or an automaton costs to build in proportion to its strings'
    length (a request's private key of 1.9 kB: half a millisecond, more than the scan of
    the 1 MB body it is built for), while a long string is found at memory speed; either
    is built when a text first needs it. lazy: a text under SHORT bytes is searched string
    by string, the same places in the same order (a next turn's 1 kB of new messages and
    the ~40 originals a conversation's rules found: 14 us, where the automaton took 0.26
    ms to build)."""

    __slots__ = ("_keys", "_ac", "_scan", "_short", "_long", "_few")

    LONG = 64
    SHORT = 16 << 10

    def __init__(self, patterns: list[bytes], lazy: bool = False) -> None:
        short = [k for k, p in enumerate(patterns) if len(p) < self.LONG]
        self._short = short if len(short) < len(patterns) else None  # the automaton's k -> patterns' k
        self._long = [(k, p) for k, p in enumerate(patterns) if len(p) >= self.LONG]
        self._keys = [patterns[k] for k in short]
        self._few = list(enumerate(self._keys)) if lazy and all(self._keys) else None  # (an empty one: the automaton's)
        self._scan: leftmost.Scanner | None | bool = False  # (made when first needed: False till then)
        self._ac: ahocorasick_rs.BytesAhoCorasick | None = None  # (likewise)

    def _automaton(self) -> ahocorasick_rs.BytesAhoCorasick:
        if self._ac is None:
            self._ac = ahocorasick_rs.BytesAhoCorasick(self._keys, implementation=_DFA)
        return self._ac

    def _scanner(self) -> leftmost.Scanner | None:
        if self._scan is False:
            db = leftmost.database(self._keys)
            self._scan = leftmost.Scanner(self._keys, db) if db is not None else None
        return self._scan  # type: ignore[return-value]

    def places(self, b: bytes) -> list[tuple[int, int, int]]:
        """(k, start, end) of every place pattern k is in b, in order of start (then end;
        those of LONG bytes or more after the others, in their order)."""
        got: list[tuple[int, int, int]] | None = None
        if not self._keys:
            got = []
        elif self._few is not None and len(b) < self.SHORT:
            got = sorted(_find_each(self._few, b), key=_automatons)
        elif (scan := self._scanner()) is not None and (found := scan.all(b, leftmost.too_many(b))) is not None:
            got = [(k, i, j) for i, j, k in sorted(found)]
        if got is None:  # (one start and one end: one string, the strings being distinct)
            got = sorted(self._automaton().find_matches_as_indexes(b, overlapping=True), key=_place)
        if self._short is not None:
            got = [(self._short[k], i, j) for k, i, j in got]
        got += _find_each(self._long, b)
        got.sort(key=_start)
        return got


def _find_each(patterns: list[tuple[int, bytes]], b: bytes) -> list[tuple[int, int, int]]:
    """(k, start, end) of every place each (k, pattern) is in b, overlapping ones too."""
    got = []
    for k, p in patterns:
        i = b.find(p)
        while i >= 0:
            got.append((k, i, i + len(p)))
            i = b.find(p, i + 1)
    return got


def _place(m: tuple[int, int, int]) -> tuple[int, int]:
    return m[1], m[2]


def _start(m: tuple[int, int, int]) -> int:
    return m[1]


def _automatons(m: tuple[int, int, int]) -> tuple[int, int, int]:
    # the automaton's order, once sorted by start: it reports each place at its end, a
    # longer one before a shorter, the same string's in pattern order
    return m[1], m[2], m[0]


def odd_escapes(b: bytes) -> list[int]:
    """Where the UTF-8 JSON text b holds an escape no JSON writer makes, in order: the
    places where left_over, finding any, takes every original for a copy (turns.py)."""
    return sorted({i for _, i, _ in _odd_places().places(b)})


@functools.cache
def _odd_places() -> Places:
    return Places(_ODD)


@functools.lru_cache(maxsize=8)
def _search(patterns: tuple[bytes, ...]) -> Places:
    """Places of patterns, made once for a conversation's turns (they find the same
    originals turn after turn: an automaton of hundreds costs more than its search)."""
    return Places(list(patterns))


def holding(pieces: list[str], known: dict[str, str]) -> list[int]:
    """The indexes of the pieces that hold one of known's originals, in order (one pass
    over them all: Originals.holding)."""
    return as_originals(known).holding(pieces)


def add(text: str, edits: list, known: dict[str, str], session: Session, faker: Any = None) -> list:
    """edits ((start, end, replacement) masking text, in order, disjoint) with every copy
    of a known original in text that none of them touches replaced too: by the
    original's disguise in session (the rule that found it names it). Original by
    original in known's order, each one's copies from the left, none overlapping the
    one before it; a copy overlapping an edit made before it is left (one pass over
    text for them all: Originals.matches)."""
    known = as_originals(known)
    originals, names = list(known), known.names()
    more: list[tuple[int, int, str]] = []
    taken = [(a, b) for a, b, _ in edits]
    after = [0] * len(originals)  # per original: where its copy before ended
    for o, i, j in known.matches(text):
        if i < after[o]:
            continue  # overlaps the copy of it before
        after[o] = j
        k = bisect.bisect_left(taken, (j,))  # the edits that begin before j
        if k == 0 or taken[k - 1][1] <= i:
            more.append((i, j, session.placeholder(names[o], originals[o], faker)))
            session.count(names[o])  # (a pattern's: no literal)
            bisect.insort(taken, (i, j))
    if not more:
        return edits
    return sorted([*edits, *more], key=lambda e: e[0])


__all__ = ["COPY_ROUNDS", "Originals", "Places", "add", "holding", "left_over", "more", "odd_escapes", "spellings"]
