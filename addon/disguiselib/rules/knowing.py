"""The leak guard's rule set for one request's masked text (sans I/O): what the request's
own disguises make is not an original.

The guard reads the masked body again with the rules (leakguard.py). A disguise is text
the rules may well find something in, alone or with what stands beside it:
- a fake is made to look like an original (a Luhn-valid card number, a token with its
  format's prefix);
- a placeholder's digit turns `:bob@corp.example.com`, no token (SECRET wants a digit in a
  value that short), into `:[EMAIL_1]`, which is one;
- a literal's disguise is a value like any other: `{"password": "Acme Corp"}` goes out as
  `{"password": "Zenith Labs"}`, which PASSWORD finds.

So a span the guard finds that holds a disguise is an original only when both hold:
- in the text as the client wrote it (each disguise near the span back to its
  original), the span's rule alone (as if no other rule were there to win before it:
  Rules.rule_spans) finds something there that reaches outside the originals: some of
  what the client wrote is left in the masked text for the rule;
- in the masked text with the disguises blanked (NULs), the rule alone still finds
  something there: what the client wrote is enough for the rule without the
  disguises' characters (`Zenith Labs ` under `password` leaves a space, no password).
A password written after a literal (`Zenith Labs Hunter2xyz9`: the literal won the
place, so PASSWORD did not mask it) is refused; what only the disguises make
(`:[EMAIL_1]`), or what lies wholly in what was masked, is not.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

import ahocorasick_rs

if TYPE_CHECKING:
    from .session import Session


class Knowing:
    """rules (find() as the guard asks it) for one request whose disguises (disguise ->
    original) are known: find() without the spans those disguises make (module docstring)."""

    __slots__ = ("_rules", "_originals", "_disguises", "_ac")

    def __init__(self, rules: Any, originals: dict[str, str]) -> None:
        self._rules = rules
        self._originals = originals
        self._disguises = list(originals)
        self._ac: ahocorasick_rs.AhoCorasick | None = None  # made when a span first holds more than one disguise

    def find(self, text: str, memo: dict | None = None) -> list[tuple[str, int, int]]:
        found = self._rules.find(text, memo)
        if not found:
            return found
        originals = self._originals
        out = [sp for sp in found if text[sp[1] : sp[2]] not in originals]  # a span that is one: dropped at once
        return Client(self, text).originals(out) if out else out

    def disguises_in(self, text: str) -> list[tuple[int, int]]:
        """Every disguise in text: (start, end) in characters, in order, none overlapping
        (the longest at a place)."""
        if self._ac is None:
            self._ac = ahocorasick_rs.AhoCorasick(self._disguises, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
        return [(s, e) for _, s, e in self._ac.find_matches_as_indexes(text)]

    def __getattr__(self, name: str) -> object:
        return getattr(self._rules, name)


class Client:
    """One masked text and the text as the client wrote it: every disguise in it back to
    its original (made once, for the spans of one find(); each span is then answered in
    logarithmic time: a text of many spans is read in n log n)."""

    __slots__ = ("knowing", "text", "at", "starts", "client", "shifts", "theirs", "found")

    def __init__(self, knowing: Knowing, text: str) -> None:
        self.knowing, self.text = knowing, text
        self.at = knowing.disguises_in(text)
        self.starts = [s for s, _ in self.at]
        originals = knowing._originals
        parts: list[str] = []
        self.shifts: list[int] = []  # per disguise: how much longer the client's text is after it
        theirs: list[list[int]] = []  # the originals' places in the client's text (touching ones joined)
        pos = shift = 0
        for s, e in self.at:
            o = originals[text[s:e]]
            parts += [text[pos:s], o]
            cs = s + shift
            if theirs and theirs[-1][1] == cs:
                theirs[-1][1] = cs + len(o)
            else:
                theirs.append([cs, cs + len(o)])
            shift += len(o) - (e - s)
            self.shifts.append(shift)
            pos = e
        parts.append(text[pos:])
        self.client = "".join(parts)
        self.theirs = theirs
        self.found: dict[tuple[str, bool], Spans] = {}  # per rule: what it finds in the client's text, blanked

    def originals(self, found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Those of found (label, start, end in text) that are originals."""
        return [sp for sp in found if self.original(*sp)]

    def original(self, label: str, a: int, b: int) -> bool:
        """Is text[a:b], which label found, an original (module docstring)?"""
        j = bisect.bisect_left(self.starts, b)  # the disguises that begin before b
        if j == 0 or self.at[j - 1][1] <= a:
            return True  # no disguise in it: the client's own text
        if not self.spans(label, False).any_in(self.place(a, False), self.place(b, True)):
            return False
        # and what the client wrote there is enough for the rule with the disguises blanked
        # (`Zenith Labs ` under `password`: a space is left, no password)
        return self.spans(label, True).any_in(a, b)

    def spans(self, label: str, blanked: bool) -> Spans:
        """What label alone finds in the client's text (each span marked for whether it
        holds some of the client's own characters), or in the text blanked."""
        got = self.found.get((label, blanked))
        if got is None:
            rules = self.knowing._rules
            if blanked:
                got = Spans(rules.rule_spans(label, self.blanked()), None)
            else:
                got = Spans(rules.rule_spans(label, self.client), self.theirs)
            self.found[(label, blanked)] = got
        return got

    def blanked(self) -> str:
        """The masked text with every disguise in it blanked (NULs, its offsets kept)."""
        text, pos = self.text, 0
        parts: list[str] = []
        for s, e in self.at:
            parts += [text[pos:s], "\0" * (e - s)]
            pos = e
        parts.append(text[pos:])
        return "".join(parts)

    def place(self, p: int, end: bool) -> int:
        """Where the masked text's offset p is in the client's text (inside a disguise:
        its original's start, or its end for a span's end)."""
        k = bisect.bisect_right(self.starts, p) - 1  # the last disguise that begins at or before p
        if k < 0:
            return p
        s, e = self.at[k]
        before = self.shifts[k - 1] if k else 0
        if s < p < e:
            return s + before + (len(self.knowing._originals[self.text[s:e]]) if end else 0)
        return p + (self.shifts[k] if p >= e else before)


class Spans:
    """One rule's spans in a text (Rules.rule_spans), those that overlap joined, in
    order; each marked True when it holds a character outside theirs (sorted places, or
    None: every span is marked)."""

    __slots__ = ("starts", "ends", "marks")

    def __init__(self, spans: list[tuple[int, int]], theirs: list[list[int]] | None) -> None:
        joined: list[list[int]] = []
        for x, y in sorted(spans):
            if joined and x < joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], y)
            else:
                joined.append([x, y])
        self.starts = [x for x, _ in joined]
        self.ends = [y for _, y in joined]
        if theirs is None:
            self.marks = [True] * len(joined)
        else:
            t_starts = [x for x, _ in theirs]
            self.marks = []
            for x, y in joined:
                k = bisect.bisect_right(t_starts, x) - 1
                self.marks.append(k < 0 or theirs[k][1] < y)  # not wholly inside one of theirs

    def any_in(self, a: int, b: int) -> bool:
        """Does a marked span overlap [a, b)?"""
        return any(self.marks[bisect.bisect_right(self.ends, a) : bisect.bisect_left(self.starts, b)])


def knowing(rules: Any, session: Session | None) -> Any:
    """rules, knowing one request's disguises (session: its placeholders and fakes, and
    the disguises of the literals it replaced): Knowing. Rules itself when it has none
    (every check as before)."""
    if session is None or not (session.placeholders or session.literals):
        return rules
    originals = {rules.lit_forward[o]: o for o in session.literals}
    originals.update(session.placeholders)
    return Knowing(rules, originals)
