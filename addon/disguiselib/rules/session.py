"""One request's disguises (sans I/O): its placeholders, numbered by first appearance,
and with disguise_fakes its fakes (rules/fakes.py), and what was masked."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import fakes

LITERALS = "literals"  # the label of every literal in counts and find()

# A placeholder's spelling: `[NAME_n]`, n from 1, decimal, at most PH_MAX_DIGITS digits
# (a billion placeholders of one rule in one request: never reached). Spelled here; the
# restorer's regex, the hold-back and the load's checks (rules.py, mappings.py,
# overlaps.py) are made from these.
PH_OPEN, PH_SEP, PH_CLOSE = "[", "_", "]"
PH_MAX_DIGITS = 9
PH_NUMBER = f"[1-9][0-9]{{0,{PH_MAX_DIGITS - 1}}}"


# The numbers of a request that continues state the provider keeps (Session.keyed): nine
# digits, never one a request numbered from 1 reaches (a hundred million placeholders of
# one rule)
KEYED_FIRST = 10 ** (PH_MAX_DIGITS - 1)
KEYED_COUNT = 10**PH_MAX_DIGITS - KEYED_FIRST


def keyed_number(key: bytes, name: str, original: str) -> int:
    """original's number under rule name in a request numbered with key (Session.keyed)."""
    msg = name.encode() + b"\0" + original.encode("utf-8", "surrogatepass")
    return KEYED_FIRST + int.from_bytes(hmac.digest(key, msg, hashlib.sha256)[:8], "big") % KEYED_COUNT


def spelled(name: str, n: int) -> str:
    """Rule name's n-th placeholder."""
    return f"{PH_OPEN}{name}{PH_SEP}{n}{PH_CLOSE}"


def ph_head(name: str) -> str:
    """What every placeholder of rule name begins with, up to its number."""
    return PH_OPEN + name + PH_SEP


def ph_regex(names: Iterable[str]) -> str:
    """A regex of every placeholder of these rule names (the longest names first)."""
    alts = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return f"{re.escape(PH_OPEN)}(?:{alts}){re.escape(PH_SEP)}{PH_NUMBER}{re.escape(PH_CLOSE)}"


class Session:
    """One request's placeholders, numbered by first appearance (contract §2), and with
    disguise_fakes its fakes (rules/fakes.py): both in `placeholders`, disguise -> original
    (a placeholder begins with `[`, a fake never holds one).

    keyed: a request that continues state the provider keeps (a stored response, a
    conversation, a cache: base/prompt.numbers_key) is numbered by a keyed function of
    each original instead (keyed_number: nine digits), so that its placeholders are none
    of those the stored part was given, numbered from 1 by requests before it: the
    model's answer quoting one of those is left as it is, never restored as this
    request's original of that number. The same key (the same state) gives the same
    original the same number."""

    __slots__ = (
        "placeholders", "_by_key", "_count", "masked", "counts", "reserved", "literals", "fakes", "cited", "documents",
        "copied", "keyed", "json_out",
    )  # fmt: skip

    def __init__(self, reserved: frozenset[str] = frozenset(), keyed: bytes | None = None, copied: int = 0) -> None:
        # Placeholder strings (and fakes) the request already holds as the client's own
        # text: never issued, or the response would "restore" the client's text into an
        # original.
        self.reserved = reserved
        self.placeholders: dict[str, str] = {}  # "[EMAIL_1]" (or a fake) -> original
        self._by_key: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}
        self.masked = 0  # how many replacements were made (for the flow comment)
        # replacements per rule: a pattern's name, or LITERALS for every literal
        self.counts: dict[str, int] = {}
        self.literals: set[str] = set()  # the literals' originals that were replaced
        self.fakes = 0  # how many of the placeholders are fakes
        # The request's documents an answer may cite by character offsets, masking's edits
        # of each (base/offsets.py): while masking, by the place of the document's token in
        # the body (cited); then by the document's index in the request (documents).
        self.cited: list[tuple[int, Any]] = []
        self.documents: dict[int, Any] = {}
        # the request copied an original a rule found where no rule finds it: the how
        # manyth masking again this is, every copy masked too (base/copies.py; 0: none);
        # the leak guard then reads every text
        self.copied = copied
        self.keyed = keyed
        # the request asks for its answer as JSON (base/jsonanswer.py): its text is
        # restored as JSON text
        self.json_out = False

    def after(self, reserved: frozenset[str] = frozenset(), keyed: bytes | None = None, copied: int = 0) -> Session:
        """A session that continues this one (its disguises kept, its numbering going
        on), reserving `reserved` too: a request whose headers left before its body was
        masked (mitm/streamed.py) masks its body after them, so that one placeholder never
        stands for two originals in one request. Documents are the body's own: none.
        keyed: the body's numbering key (Session.keyed), where this one has none."""
        s = Session(self.reserved | reserved, self.keyed or keyed, copied)
        s.placeholders, s._by_key, s._count = dict(self.placeholders), dict(self._by_key), dict(self._count)
        s.masked, s.counts, s.literals, s.fakes = self.masked, dict(self.counts), set(self.literals), self.fakes
        return s

    def copy(self) -> Session:
        """This session as it stands, apart: every disguise, count and mark of it, in a
        session the one's further masking does not change (turns.py keeps one where a
        conversation's element begins)."""
        s = self.after(copied=self.copied)
        s.reserved, s.keyed, s.json_out = self.reserved, self.keyed, self.json_out
        s.cited, s.documents = list(self.cited), dict(self.documents)
        return s

    def back_to(self, earlier: Session, copied: int) -> Session:
        """This session set back to earlier (its copy, taken before this one went on), in
        place, the copied-th masking again (base/copies.py): the placeholders stay the same
        dict object, holding earlier's in earlier's order (a realtime connection's restorer
        reads that dict: base/realtime.py masks an event again from where the connection
        stood before it)."""
        again, held = earlier.copy(), self.placeholders  # (every field, apart from earlier's)
        for name in self.__slots__:
            setattr(self, name, getattr(again, name))
        held.clear()
        held.update(again.placeholders)
        self.placeholders, self.copied = held, copied
        return self

    def count(self, label: str, original: str | None = None) -> None:
        self.masked += 1
        self.counts[label] = self.counts.get(label, 0) + 1
        if label == LITERALS and original is not None:
            self.literals.add(original)

    def count_literals(self, originals: list[str]) -> None:
        """count(LITERALS, o) for each o of originals, at once."""
        self.masked += len(originals)
        self.counts[LITERALS] = self.counts.get(LITERALS, 0) + len(originals)
        self.literals.update(originals)

    def placeholder(self, name: str, original: str, faker: fakes.Faker | None = None) -> str:
        """The disguise of original matched by rule name: its fake when faker makes one
        (the first candidate that is no other original's disguise in this request and no
        text the client sent: deterministic, by first appearance), else `[NAME_n]`."""
        key = (name, original)
        ph = self._by_key.get(key)
        if ph is None:
            ph = self._fake(name, original, faker) if faker is not None else None
            if ph is None and self.keyed is not None:
                n = keyed_number(self.keyed, name, original)
                ph = spelled(name, n)
                while ph in self.reserved or ph in self.placeholders:  # (two originals of one number: the next)
                    n = KEYED_FIRST + (n - KEYED_FIRST + 1) % KEYED_COUNT
                    ph = spelled(name, n)
            elif ph is None:
                n = self._count.get(name, 0) + 1
                ph = spelled(name, n)
                while ph in self.reserved:
                    n += 1
                    ph = spelled(name, n)
                self._count[name] = n
            else:
                self.fakes += 1
            self._by_key[key] = ph
            self.placeholders[ph] = original
        return ph

    @property
    def finds(self) -> int:
        """How many originals patterns found in this request (by rule): found() is empty
        when none."""
        return len(self._by_key)

    def found(self) -> dict[str, str]:
        """Each original a pattern found in this request, with the name of the rule that
        found it (the first one), in order of first appearance."""
        out: dict[str, str] = {}
        for name, original in self._by_key:
            out.setdefault(original, name)
        return out

    def _fake(self, name: str, original: str, faker: fakes.Faker) -> str | None:
        for attempt in range(_FAKE_ATTEMPTS):
            f = faker.make(name, original, attempt)
            if f is None:
                return None
            if f not in self.placeholders and f not in self.reserved and faker.clean(f):
                return f
        return None


# Candidates tried for one original before its placeholder is used instead.
_FAKE_ATTEMPTS = 8
