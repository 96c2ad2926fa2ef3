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
    its original (made once, for the spans of one find())."""

    __slots__ = ("knowing", "text", "at", "starts", "client", "shifts", "shown", "spans")

    def __init__(self, knowing: Knowing, text: str) -> None:
        self.knowing, self.text = knowing, text
        self.at = knowing.disguises_in(text)
        self.starts = [s for s, _ in self.at]
        originals = knowing._originals
        parts: list[str] = []
        self.shifts: list[int] = []  # per disguise: how much longer the client's text is after it
        self.shown: list[tuple[int, int]] = []  # the client's own characters, in the client's text
        pos = shift = 0
        for s, e in self.at:
            o = originals[text[s:e]]
            parts += [text[pos:s], o]
            self.shown.append((pos + shift, s + shift))
            shift += len(o) - (e - s)
            self.shifts.append(shift)
            pos = e
        parts.append(text[pos:])
        self.shown.append((pos + shift, len(text) + shift))
        self.client = "".join(parts)
        self.spans: dict[str, list[tuple[int, int]]] = {}  # per rule: what it finds in the client's text

    def originals(self, found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Those of found (label, start, end in text) that are originals."""
        return [sp for sp in found if self.original(*sp)]

    def original(self, label: str, a: int, b: int) -> bool:
        """Is text[a:b], which label found, an original (module docstring)?"""
        j = bisect.bisect_left(self.starts, b)  # the disguises that begin before b
        i = j
        while i > 0 and self.at[i - 1][1] > a:
            i -= 1
        if i == j:
            return True  # no disguise in it: the client's own text
        ua, ub = self.place(a, False), self.place(b, True)
        spans = self.spans.get(label)
        if spans is None:
            spans = self.spans[label] = self.knowing._rules.rule_spans(label, self.client)
        shown = self.shown
        if not any(x < ub and y > ua and any(x < v1 and y > v0 for v0, v1 in shown if v1 > v0) for x, y in spans):
            return False
        # and what the client wrote there is enough for the rule with the disguises blanked
        # (`Zenith Labs ` under `password`: a space is left, no password)
        left = self.spans.get("\0" + label)
        if left is None:
            left = self.spans["\0" + label] = self.knowing._rules.rule_spans(label, self.blanked())
        return any(x < b and y > a for x, y in left)

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


def knowing(rules: Any, session: Session | None) -> Any:
    """rules, knowing one request's disguises (session: its placeholders and fakes, and
    the disguises of the literals it replaced): Knowing. Rules itself when it has none
    (every check as before)."""
    if session is None or not (session.placeholders or session.literals):
        return rules
    originals = {rules.lit_forward[o]: o for o in session.literals}
    originals.update(session.placeholders)
    return Knowing(rules, originals)
