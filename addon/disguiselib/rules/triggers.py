"""Which bytes of a response stream can take part in a reverse match (sans I/O).

A stream reads its body a network read at a time. Most reads hold nothing that any
disguise, issued placeholder or strip rule could match, start or continue, and while no
channel holds text back such a read can go to the client as it came: no framing, no
parsing, no re-encoding. `Triggers` decides that with one Aho–Corasick scan of the raw
bytes (ahocorasick-rs, over bytes), and where it finds something, says where: only the
events around those positions are parsed.

The patterns are byte strings that every event which needs work must contain, in its
raw JSON form (an event that needs none may contain them too: that only costs a parse):

- a whole disguise, in its raw JSON form (`raw_text`; a disguise is ASCII without `"`,
  `\\` or controls: the same raw and decoded);
- a proper prefix of a disguise that ends a JSON string value: the prefix, the closing
  quote, and what can follow a value (`,` `}` `]` or whitespace; never `:`, so keys
  such as `"text"` do not count). The next delta of that channel may complete it, so the
  window must hold it back;
- for a disguise with a `%` or `+` past its first character (one as a URL holds it),
  the prefixes before it as above, and its stem through it (`Zenith%`) anywhere: every
  longer prefix holds it;
- for placeholders, `[NAME_` (with any digits after it, a placeholder or the start of
  one) and each proper prefix of it at the end of a value;
- for strip rules (regexes), each two-character start they can begin with, in raw JSON
  form (an escape for `"`, `\\` and controls), a possible first character at the end of
  a value or followed by an escape, or the first character alone where anything may
  follow it; non-ASCII bytes where a rule can begin with a non-ASCII character;
- `\\u` (an escape can spell any character, so any match), `\\/` (a `/` spelled so);
- `\\\\"`: a value whose decoded text ends in a backslash. In JSON text (tool arguments)
  that is an escape cut between two deltas, which the channel's window must see;
- the stream's markers (`Triggers.markers`): events that change the stream's state
  whatever their text (the API's last events, errors, channels opening and closing: the
  stream class passes them in from its API's spec, base/wirespec.py).

Why this is enough, for an event that arrives while no window holds text (the property
tests/base/test_fastpath.py checks it against parsing every event): each of its
strings, decoded, holds no `\\u` or `\\/` escape, so a disguise or placeholder in it
appears in the raw bytes as it is; it holds none whole, and its end is no proper prefix
of one, so a window fed it releases it whole and holds nothing; no strip match can start
in it; JSON text in it does not end inside an escape. So the event comes out as it came
and leaves every window empty, and skipping it changes nothing.

Matches are leftmost-longest and non-overlapping; none contains a line break except as
its last byte (after a value's closing quote), so none spans two events, and an event
that holds an occurrence holds a reported match (an occurrence hidden by an overlapping
match lies in the same event).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Iterator
from itertools import accumulate

import ahocorasick_rs

# What can follow a JSON string value: never `:` (that is a key).
VALUE_END = (b",", b"}", b"]", b" ", b"\t", b"\r", b"\n")
_ESCAPES = (b"\\u", b"\\/", b'\\\\"')
# JSON's short escapes, for the raw form of a strip rule's first characters.
_SHORT = {'"': b'\\"', "\\": b"\\\\", "\b": b"\\b", "\f": b"\\f", "\n": b"\\n", "\r": b"\\r", "\t": b"\\t"}


def raw_forms(c: str) -> list[bytes]:
    """The ways an ASCII character appears in a JSON string on the wire (`\\u` escapes
    aside: they are triggers by themselves)."""
    if c in _SHORT:
        return [_SHORT[c]]
    if c == "/":
        return [b"/", b"\\/"]
    if ord(c) < 0x20:
        return []  # only as \\u00XX
    return [c.encode("ascii")]


def raw_text(d: str) -> bytes:
    """d as it appears in a JSON string on the wire without `\\u` or `\\/` escapes (which
    are triggers by themselves): short escapes for `"`, `\\` and controls, UTF-8 for
    the rest. A shipped disguise is ASCII without those (mappings.py), so this is d."""
    if d.isascii() and d.isprintable() and '"' not in d and "\\" not in d:
        return d.encode("ascii")
    return json.dumps(d, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")


def _stem(b: bytes) -> int:
    """Where a disguise's first `%` or `+` is, past its first byte (0: none). A disguise
    as a URL holds it (percent.in_urls: `Zenith%20Labs`) has one; its prefixes up to
    there are another disguise's (`Zenith Labs`), and each longer one holds the stem
    (`Zenith%`): one pattern for them all, not seven a prefix (1,000 literals, half of
    them of two words: some 7 MiB less, bench/urls.py)."""
    return min((k for k in (b.find(b"%"), b.find(b"+")) if k > 0), default=0)


def _value_end(prefix: bytes) -> list[bytes]:
    return [prefix + b'"' + x for x in VALUE_END]


class Patterns:
    """A rule set's trigger patterns (a set of bytes). `ends`: those that only say a
    value ends in a proper prefix (of a disguise, a placeholder or a strip match), which
    no other kind of trigger also is: only a window reading that value needs them (see
    opaque_end).

    Kept as dicts of bytes, which the cyclic collector does not track (a set it always
    does): 8,000 literals make some 700,000 patterns, and every collection that walked
    their sets held the GIL for tens of ms — a reload built off the loop paused every
    running stream that long when the collector ran after it (bench/reload.py)."""

    __slots__ = ("_all", "ends")

    def __init__(self, patterns: Iterable[bytes] = (), ends: Iterable[bytes] = ()) -> None:
        self._all = dict.fromkeys(patterns)
        self.ends = dict.fromkeys(ends)

    def __contains__(self, p: object) -> bool:
        return p in self._all

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __eq__(self, other: object) -> bool:
        return set(self._all) == other if isinstance(other, (set, frozenset)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


def rule_patterns(
    disguises: list[str],
    names: tuple[str, ...],
    strip_starts: list[tuple[dict[str, frozenset[str] | None], bool]],
) -> Patterns:
    """The trigger patterns of a rule set (without markers). strip_starts: per strip
    rule, its ASCII first characters with the characters that can follow each (None:
    any), and whether it can begin with a non-ASCII character of the BMP."""
    pats: set[bytes] = set(_ESCAPES)
    ends: set[bytes] = set()
    for d in disguises:
        b = raw_text(d)
        pats.add(b)
        j = _stem(b)
        if j:  # its prefixes past the stem hold it: the stem alone says them all
            pats.add(b[: j + 1])
        for i in range(1, j + 1 if j else len(b)):
            ends.update(_value_end(b[:i]))
    for n in names:
        stem = b"[" + n.encode("ascii") + b"_"
        pats.add(stem)
        for i in range(1, len(stem)):
            ends.update(_value_end(stem[:i]))
    nonascii = b""
    for follow, bmp in strip_starts:
        for c1, after in follow.items():
            for r1 in raw_forms(c1):
                if after is None:
                    pats.add(r1)
                    continue
                ends.update(_value_end(r1))
                pats.add(r1 + b"\\")
                for c2 in after:
                    for r2 in raw_forms(c2):
                        pats.add(r1 + r2[:1])
        # Characters past the BMP are not enumerated: their UTF-8 lead bytes count as
        # possible starts. A non-ASCII start in the BMP makes every non-ASCII byte one.
        if bmp or nonascii == b"\x80":
            nonascii = b"\x80"
        else:
            nonascii = b"\xf0"
    if nonascii:
        pats.update(bytes([c]) for c in range(nonascii[0], 0x100 if nonascii == b"\x80" else 0xF5))
    return Patterns(pats | ends, ends - pats)


class Triggers:
    """One rule set's trigger patterns plus a stream's markers, as one automaton.

    `find(buf)` returns the start of every reported match, in order (see the module
    docstring for what an event without one can be trusted with)."""

    __slots__ = ("_ac", "markers", "size", "scan", "longest", "_blob", "_offs", "_ends", "_others")

    def __init__(self, patterns: Patterns | set[bytes], markers: tuple[bytes, ...]) -> None:
        self.markers = markers
        pats = sorted(set(patterns).union(markers))
        self.size = len(pats)
        self.longest = max(map(len, pats), default=1)
        ends = set(getattr(patterns, "ends", ())).difference(markers)
        # the patterns, read by _settle alone: one bytes object and where each begins (the
        # shipped set's 12,000 as bytes objects held 634 KiB for the 139 KiB they spell)
        self._blob = b"".join(pats)
        self._offs = array("I", accumulate(map(len, pats), initial=0))
        # per pattern: 1 a value-end pattern only, 2 one that hides no other kind (_settle)
        self._ends = bytearray(p in ends for p in pats) if ends else bytearray(len(pats))
        self._others: tuple | None = None  # every other pattern and their proper prefixes, when first asked
        # The contiguous NFA: built in a few ms for ten thousand patterns and as fast as
        # the DFA on short reads, at a tenth of its memory.
        self._ac = ahocorasick_rs.BytesAhoCorasick(
            pats,
            matchkind=ahocorasick_rs.MatchKind.LeftmostLongest,
            implementation=ahocorasick_rs.Implementation.ContiguousNFA,
        )

        # scan(buf): every reported match as (pattern, start, end), in order
        self.scan = self._ac.find_matches_as_indexes

    def find(self, buf: bytes) -> list[int]:
        """The start of every reported match, in order."""
        return [s for _, s, _ in self.scan(buf)]

    def any(self, buf: bytes) -> bool:
        return bool(self.scan(buf))

    def kept(self, buf: bytes, k: int, hits: list[tuple[int, int, int]], keys: frozenset[bytes]) -> list[int]:
        """The starts (in buf) of the matches scan(buf[k:]) reported as hits, but for
        those that only say the value of a member named in keys ends in a proper prefix
        (opaque_end) and hide no match of another kind. keys: member names no window of
        the stream reads (ids, model names, padding): a value-end trigger is for a
        window alone (a string restored whole has nothing after it to complete a
        prefix, nor has an event restored whole because it is not JSON). A read of one
        event is parsed for one trigger kept: the rest are not looked at."""
        ends = self._ends
        one = buf.find(b"\n\n") + 2 == len(buf)
        out = []
        # opaque_end's reading, once per `":"` for all the hits after it (the hits come
        # in order): the nearest `":"` before the last hit looked at, the end of the plain
        # body after it, and whether the member it ends is one of keys. Each byte is
        # searched back over once, not once per hit (an array of short strings in one
        # read: quadratic otherwise).
        seen = 0  # where the search back for `":"` stopped last
        q = plain_end = -1
        opaque = False
        for i, s, e in hits:
            s += k
            if ends[i] == 1:
                self._settle(i)
            if ends[i]:
                f = buf.rfind(b'":"', max(0, seen - 2), s)
                seen = s
                if f >= 0 and f != q:
                    q = f
                    plain_end = _PLAIN.match(buf, q + 3).end()  # type: ignore[union-attr]  # `*` always matches
                    a = buf.rfind(b'"', 0, q) if q >= 2 else -1
                    opaque = a > 0 and buf[a - 1] in b"{," and buf[a + 1 : q] in keys
                if opaque and e + k - 2 <= plain_end:
                    continue  # the value-end of an opaque member's plain value
            out.append(s)
            if one:
                break
        return out

    def _pat(self, i: int) -> bytes:
        """Pattern i (its index in the automaton)."""
        return self._blob[self._offs[i] : self._offs[i + 1]]

    def _settle(self, i: int) -> None:
        """Pattern i is a value-end pattern met for the first time: may its match hide a
        match of another kind that overlaps it (a shorter disguise at its start, a
        marker or a strip start at its last byte)? Leftmost-longest reports one of
        overlapping matches, and another that begins under it is a part of it or begins
        with an end of it. If so it is kept wherever it is (_ends[i] 0), else 2."""
        if self._others is None:
            rest = {self._pat(j) for j, end in enumerate(self._ends) if not end}
            self._others = (rest, {p[:j] for p in rest for j in range(1, len(p))})
        rest, heads = self._others
        p = self._pat(i)
        n = len(p)
        inside = any(p[a:b] in rest for a in range(n) for b in range(a + 1, n + 1))
        self._ends[i] = 0 if inside or any(p[a:] in heads for a in range(n)) else 2


class Joined:
    """A rule set's triggers (shared, built once) and a flow's own (its fakes', built per
    flow: a few patterns) as one: two automata, their reported matches merged in order.
    Each reports every occurrence of its own patterns by a match in the same event
    (leftmost-longest, as above), so the union does for both; a value-end match of one
    cannot hide a match of the other, which the other reports itself."""

    __slots__ = ("a", "b", "markers", "size", "longest", "scan")

    def __init__(self, a: Triggers | Joined, b: Triggers) -> None:
        self.a, self.b = a, b
        self.markers: tuple[bytes, ...] = a.markers + b.markers
        self.size: int = a.size + b.size
        self.longest: int = max(a.longest, b.longest)
        self.scan = self._scan

    def _scan(self, buf: bytes) -> list[tuple[int, int, int]]:
        hb = self.b.scan(buf)
        if not hb:
            return self.a.scan(buf)
        n = self.a.size
        return sorted([*self.a.scan(buf), *((i + n, s, e) for i, s, e in hb)], key=lambda h: h[1])

    def find(self, buf: bytes) -> list[int]:
        return [s for _, s, _ in self.scan(buf)]

    def any(self, buf: bytes) -> bool:
        return self.a.any(buf) or self.b.any(buf)

    def kept(self, buf: bytes, k: int, hits: list[tuple[int, int, int]], keys: frozenset[bytes]) -> list[int]:
        n = self.a.size
        ha = [h for h in hits if h[0] < n]
        hb = [(i - n, s, e) for i, s, e in hits if i >= n]
        out = (self.a.kept(buf, k, ha, keys) if ha else []) + (self.b.kept(buf, k, hb, keys) if hb else [])
        return sorted(set(out))


# A string's body with nothing in it that could end it, escape or break a line.
_PLAIN = re.compile(rb'[^"\\\r\n]*')


def opaque_end(buf: bytes, s: int, e: int, keys: frozenset[bytes]) -> bool:
    """(Triggers.kept reads the same, once per `":"`: this is its reference.)
    Does the value-end match buf[s:e] (a prefix, `"`, one byte) end the string value
    of a member named in keys, the match inside that value? On bytes alone, written
    the plain way: `"name":"body"` right after `{` or `,`, the body holding no quote,
    backslash or line break. Then neither quote around the body can be escaped and
    nothing between them can end a string, and the quote after `{` or `,` opens a key
    (one that closed a string would leave the name outside any string, which JSON never
    has). Anything else (an escape in the body, a name spelled with escapes, a space
    around the colon) is not matched: the trigger stays."""
    c = e - 2
    q = buf.rfind(b'":"', 0, s)
    if q < 2 or _PLAIN.fullmatch(buf, q + 3, c) is None:
        return False
    a = buf.rfind(b'"', 0, q)
    return a > 0 and buf[a - 1] in b"{," and buf[a + 1 : q] in keys
