"""The rule set the leak guard and the audit read a masked text with (sans I/O): what the
disguises in it make is not an original.

The guard reads the masked body again with the rules (leakguard.py), and the audit reads
what went upstream (inspect/audit.py). A disguise is text the rules may well find
something in, alone or with what stands beside it:
- a fake is made to look like an original (a Luhn-valid card number, a token with its
  format's prefix);
- a placeholder's digit turns `:bob@corp.example.com`, no token (SECRET wants a digit in a
  value that short), into `:[EMAIL_1]`, which is one;
- a literal's disguise is a value like any other: `{"password": "Acme Corp"}` goes out as
  `{"password": "Zenith Labs"}`, which PASSWORD finds.

So a span that holds a disguise (a placeholder or fake the request was given, or any
literal's disguise) is an original only when its rule, alone (Rules.rule_spans), still
finds something there in the text with every disguise taken out: what the client wrote
beside the disguises is enough for the rule without them. `Zenith Labs ` or
`Zenith Labs9` under `password` leave a space or a digit, no password; `:[EMAIL_1]`
under `token` leaves `:`; `Zenith Labs Hunter2xyz9` (the literal won the place, so
PASSWORD did not mask what follows) leaves one, and is refused. A span that is exactly
a disguise is none; a span that holds none is what the rules say. Taking the disguises
out needs no original, so the audit, which has none, reads a text as the guard does.
(Taken out, not blanked: a blank of NULs or spaces is read as part of a value, and
`:[EMAIL_1] ` under `password` would be a password of NULs.)

A literal's original is exempt from none of this: it is exact text, and where the bytes
spell it the provider reads it, whatever made it. A disguise joined with the client's
text beside it can spell one (`Acme Corp Inc` masked to `Zenith Labs Inc` under a rule
`Labs Inc`): such a span, overlapping a disguise, is an original (G6; the load refuses
the sets whose disguises join ordinary words into one: mappings.py). A span that is a
disguise whole is none (no literal's original is a disguise: refused at load).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ahocorasick_rs

from ..wire.text import char_offsets
from .session import LITERALS

_SURROGATE = re.compile("[\ud800-\udfff]")

if TYPE_CHECKING:
    from .session import Session


class Knowing:
    """rules (find() as the guard asks it) knowing the disguises a masked text may hold
    (the literals' and own: a request's placeholders and fakes): find() without the
    spans those disguises make (module docstring)."""

    __slots__ = ("_rules", "_own", "_ac", "_longest", "_originals")

    def __init__(self, rules: Any, own: frozenset[str], originals: dict[str, str] | None = None) -> None:
        self._rules = rules
        self._own = own
        # originals the request's rules found (-> the rule's name): every copy of one is
        # an original, whatever stands beside it (base/copies.py)
        self._originals = as_originals(originals or {})
        self._ac: ahocorasick_rs.AhoCorasick | None = None  # made when a span first needs it
        self._longest = 0  # own's longest

    @property
    def base(self) -> Any:
        """The rule set (Rules.base)."""
        return self._rules.base

    @property
    def copies(self) -> bool:
        """Does find() find copies of the request's originals besides what the rules find
        (of_session(copies=True))? Else its spans are some of the rules' (Rules.copies)."""
        return bool(self._originals)

    def holding(self, texts: list[str]) -> list[int]:
        """The indexes of texts that hold a copy of one of the request's originals (none
        without copies), in order."""
        return self._originals.holding(texts)

    def prescan(self, pieces: list[str], *args: Any, **kwargs: Any) -> tuple[set[int], dict[str, object]]:
        """Rules.prescan, what find() may find besides marked too: the pieces holding a
        copy of one of the request's originals (a copy no rule finds: the rules' scan
        alone left a header holding one unread)."""
        hot, memo = self._rules.prescan(pieces, *args, **kwargs)
        if self._originals:
            hot = hot | set(self._originals.holding(pieces))
        return hot, memo

    def find(self, text: str, memo: dict | None = None, new: bool = False) -> list[tuple[str, int, int]]:
        found = self._rules.find(text, memo, new)
        if self._originals:
            names = self._originals.names()
            copies = [(names[k], i, j) for k, i, j in self._originals.matches(text)]
            if copies:
                return sorted([*self.find_known(text, found), *copies], key=lambda sp: sp[1])
        return self.find_known(text, found)

    def find_known(self, text: str, found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Those of found (the rules' spans in the masked text) that are originals."""
        if not found:
            return found
        own, theirs = self._own, self._rules.lit_reverse
        out = [sp for sp in found if (d := text[sp[1] : sp[2]]) not in own and d not in theirs]  # one: dropped at once
        if all(sp[0] == LITERALS for sp in out):  # a literal's original is one whatever stands beside it
            return out
        return Blanked(self, text).originals(out)

    def disguises_in(self, text: str) -> list[tuple[int, int]]:
        """Every disguise in text: (start, end) in characters, in order, none overlapping
        (the longest at a place, over the literals' and own together: `union`). The
        literals' automaton is the rule set's own (made once); own's, when a span first
        needs it (a text with no match, or whose matches are disguises whole, never
        does)."""
        if self._ac is None and self._own:
            self._ac = ahocorasick_rs.AhoCorasick(list(self._own), matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
            self._longest = max(map(len, self._own))
        searches: list[tuple[Search, int]] = []
        if self._rules.lit_reverse:
            searches.append((functools.partial(self._rules.disguises_from, text), self._rules.dis_longest))
        if self._ac is not None:
            searches.append((functools.partial(_matches, self._ac, text), self._longest))
        return union(len(text), searches)

    def __getattr__(self, name: str) -> object:
        return getattr(self._rules, name)


class Blanked:
    """One masked text and what is left of it with every disguise in it taken out (made
    once, for the spans of one find(); each span is then answered in logarithmic time:
    a text of many spans is read in n log n)."""

    __slots__ = ("knowing", "text", "at", "starts", "gone", "found")

    def __init__(self, knowing: Knowing, text: str) -> None:
        self.knowing, self.text = knowing, text
        self.at = knowing.disguises_in(text)
        self.starts = [s for s, _ in self.at]
        self.gone = [0]  # per disguise: how much was taken out before it (and, last, in all)
        for s, e in self.at:
            self.gone.append(self.gone[-1] + e - s)
        self.found: dict[str, Spans] = {}  # per rule: what it finds in what is left

    def originals(self, found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Those of found (label, start, end in text) that are originals."""
        return [sp for sp in found if self.original(*sp)]

    def original(self, label: str, a: int, b: int) -> bool:
        """Is text[a:b], which label found, an original (module docstring)?"""
        if label == LITERALS:
            return True  # exact text: the provider reads it, whichever disguise it overlaps
        j = bisect.bisect_left(self.starts, b)  # the disguises that begin before b
        if j == 0 or self.at[j - 1][1] <= a:
            return True  # no disguise in it: the client's own text
        got = self.found.get(label)
        if got is None:
            got = self.found[label] = Spans(self.knowing._rules.rule_spans(label, self.left()))
        return got.any_in(self.place(a), self.place(b))

    def left(self) -> str:
        """The text with every disguise in it taken out."""
        text, pos = self.text, 0
        parts: list[str] = []
        for s, e in self.at:
            parts.append(text[pos:s])
            pos = e
        parts.append(text[pos:])
        return "".join(parts)

    def place(self, p: int) -> int:
        """Where the text's offset p is in what is left (inside a disguise: where it was)."""
        k = bisect.bisect_right(self.starts, p) - 1  # the last disguise that begins at or before p
        if k < 0:
            return p
        s, e = self.at[k]
        return s - self.gone[k] if p < e else p - self.gone[k + 1]


class Spans:
    """One rule's spans in a text (Rules.rule_spans), those that overlap joined, in order."""

    __slots__ = ("starts", "ends")

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        joined: list[list[int]] = []
        for x, y in sorted(spans):
            if joined and x < joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], y)
            else:
                joined.append([x, y])
        self.starts = [x for x, _ in joined]
        self.ends = [y for _, y in joined]

    def any_in(self, a: int, b: int) -> bool:
        """Does a span overlap [a, b)?"""
        return bisect.bisect_right(self.ends, a) < bisect.bisect_left(self.starts, b)


def _matches(ac: ahocorasick_rs.AhoCorasick, text: str, pos: int, end: int | None) -> list[tuple[int, int]]:
    """ac's leftmost-longest matches in text[pos:end]: (start, end) in text."""
    part = text[pos:end] if pos or end is not None else text
    try:
        return [(s + pos, e + pos) for _, s, e in ac.find_matches_as_indexes(part)]
    except UnicodeEncodeError:  # a lone surrogate, in no disguise: read as a NUL (one character for one)
        return _matches(ac, _SURROGATE.sub("\0", text), pos, end)


# search(pos, end): an automaton's leftmost-longest matches in text[pos:end] (end None:
# to the text's end), as (start, end) in text
Search = Callable[[int, int | None], list[tuple[int, int]]]
_NONE = (1 << 62, 1 << 62)  # no match from here on


def union(n: int, searches: list[tuple[Search, int]]) -> list[tuple[int, int]]:
    """The leftmost-longest matches in a text of n characters over the union of several
    automata's patterns: at each place the leftmost match of any, the longest there.
    From each automaton's search (above) and its longest pattern.

    Each automaton's own matches from the text's start are its matches from any place
    that falls between two of them (no match of its begins in a gap it passed over).
    Where a match of another cut one of them, it may have passed over a match of its
    own behind it: it is searched again from there, in a window of twice its longest
    pattern, doubled until the first match found is one no text past the window could
    change (it begins a longest pattern or more before the window's end). So each
    place is read a bounded number of times: linear in the text."""
    if len(searches) == 1:
        return searches[0][0](0, None)
    lists = [search(0, None) for search, _ in searches]
    at = [0] * len(lists)
    ahead: list[tuple[int, int] | None] = [None] * len(lists)  # each one's next match from pos

    def next_from(k: int, pos: int) -> tuple[int, int]:
        got, i = lists[k], at[k]
        while i < len(got) and got[i][0] < pos:
            i += 1
        at[k] = i
        if i == 0 or got[i - 1][1] <= pos:  # pos between two of its matches
            return got[i] if i < len(got) else _NONE
        search, longest = searches[k]
        w = max(2 * longest, 16)
        while True:
            end = pos + w
            found = search(pos, end if end < n else None)
            if end >= n:
                return found[0] if found else _NONE
            if found and found[0][0] + longest <= end:
                return found[0]
            w *= 2

    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        best = _NONE
        for k in range(len(lists)):
            m = ahead[k]
            if m is None or m[0] < pos:
                m = ahead[k] = next_from(k, pos)
            if m[0] < best[0] or (m[0] == best[0] and m[1] > best[1]):
                best = m
        if best is _NONE:
            return out
        out.append(best)
        pos = best[1]


def knowing(rules: Any, disguises: Iterable[str], originals: dict[str, str] | None = None) -> Any:
    """rules, knowing the disguises a masked text may hold besides the literals' (rules'
    own): Knowing. Rules itself when there are none (every check as before). originals:
    see Knowing."""
    own = frozenset(disguises)
    return Knowing(rules, own, originals) if own or rules.lit_reverse or originals else rules


def of_session(rules: Any, session: Session | None, copies: bool = False) -> Any:
    """knowing() for one request masked with session: its placeholders and fakes; with
    copies, every copy of an original its rules found is one too (base/copies.py)."""
    if session is None:
        return knowing(rules, ())
    return knowing(rules, session.placeholders, session.found() if copies else None)


# Originals looked for in at most this many bytes times their number are searched one by
# one (bytes.find): no automaton made for a URL or headers (a DFA of 40 took 0.8 ms to make,
# and one kept for each flow's life held 9 MiB more at bench (e)'s burst of 500)
SMALL = 1 << 19


class Originals(dict):
    """Originals (-> the name of the rule that found them) looked for all at once: one
    Aho–Corasick automaton over their UTF-8 bytes (a lone surrogate's too), made when
    first needed, reads a text once whatever their number (a request that copied a
    thousand of them: each text read once, not once an original); a short text is
    searched for each (SMALL). Not changed once made."""

    __slots__ = ("_ac", "_names", "_raw")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._ac: ahocorasick_rs.BytesAhoCorasick | None = None
        self._names: list[str] = list(self.values())
        self._raw: list[bytes] | None = None

    def names(self) -> list[str]:
        """The rules' names, in the originals' order (a match's k)."""
        return self._names

    def _automaton(self) -> ahocorasick_rs.BytesAhoCorasick:
        if self._ac is None:
            self._ac = ahocorasick_rs.BytesAhoCorasick([o.encode("utf-8", "surrogatepass") for o in self])
        return self._ac

    def _raws(self) -> list[bytes]:
        if self._raw is None:
            self._raw = [o.encode("utf-8", "surrogatepass") for o in self]
        return self._raw

    def _every(self, raw: bytes) -> list[tuple[int, int, int]]:
        """Every place of each original in raw, overlapping ones too, as (k, start, end) in
        bytes: the automaton's, or where raw is short (SMALL) a search for each."""
        if len(raw) * len(self) > SMALL:
            return self._automaton().find_matches_as_indexes(raw, overlapping=True)  # type: ignore[no-any-return]
        out = []
        for k, b in enumerate(self._raws()):
            i = raw.find(b)
            while i >= 0:
                out.append((k, i, i + len(b)))
                i = raw.find(b, i + 1)
        return out

    def matches(self, text: str) -> list[tuple[int, int, int]]:
        """Every place each original is in text, overlapping ones too, as (k, start, end)
        in characters, k the original's place in order; sorted by k, then start."""
        if not self:
            return []
        raw = text.encode("utf-8", "surrogatepass")
        return sorted(char_spans(text, raw, self._every(raw)))

    def holding(self, texts: list[str]) -> list[int]:
        """The indexes of the texts that hold an original, in order: one pass over them
        all, joined by a byte no UTF-8 holds (0xFF), so that no match spans two."""
        if not self or not texts:
            return []
        parts = [t.encode("utf-8", "surrogatepass") for t in texts]
        ends = list(itertools.accumulate(len(b) + 1 for b in parts))  # each one's end, its separator after
        joined = b"\xff".join(parts)
        del parts
        if len(joined) * len(self) > SMALL:  # (one pass, no overlapping matches: which texts, not where)
            found = self._automaton().find_matches_as_indexes(joined)
            return sorted({bisect.bisect_right(ends, i) for _, i, _ in found})
        out: set[int] = set()
        for b in self._raws():
            i = joined.find(b)
            while i >= 0:  # (a text found holding one: the search goes on after its end)
                k = bisect.bisect_right(ends, i)
                out.add(k)
                i = joined.find(b, ends[k])
        return sorted(out)


def as_originals(originals: dict[str, str]) -> Originals:
    """originals as Originals (itself when it is one)."""
    return originals if isinstance(originals, Originals) else Originals(originals)


def char_spans(s: str, b: bytes, matches: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Matches in b (s's UTF-8 bytes, surrogatepass) as (pattern, start, end) in s's
    characters, in order of start: one pass over b."""
    if s.isascii() or not matches:
        return matches
    ms = sorted(matches, key=lambda m: m[1])
    offs = sorted({x for _, i, j in ms for x in (i, j)})
    at = dict(zip(offs, char_offsets(b, offs), strict=True))  # (wire.text: a typed pass where compiled)
    return [(k, at[i], at[j]) for k, i, j in ms]
