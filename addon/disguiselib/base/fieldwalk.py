"""The leak guard's walk of a parsed body (leakguard.scan_json): fields.walk, less the
strings the masker's one scan already showed clean, each field left handed to a visit
function in document order until it answers (no list of fields: a body of a million
strings, none in the memo, is walked in constant memory as fields.walk's generator
was); compiled (wire/_spanwalk.pyx `first_unread`) or this module's reference, chosen
once at import as spanwalk chooses.

The guard stays an independent check: it walks the document itself, along the table
(not the masker's walk, not the masker's list of strings), and leaves out only a string
read as it is whose text — as the guard reads it, with its key around it where it has
one — is in the memo of the masker's scan (Rules.prescan) as NOTHING: the scan's word
that no literal and no pattern can match that exact text, which is what the guard's own
find() would answer from the same memo. A string the masker changed, read otherwise
(JSON text, media), or never read, is not in the memo as NOTHING and is kept; so is
every number. The compiled walk makes no Python call per string it leaves out
(tests/base/test_fieldwalk.py: the same fields as the reference, on every document).

A memo's run, and its raw run (the texts a scan of the body's raw bytes left out of the
masker's walk: rules/rawscan.py), are read alike. A memo's run (rules/found.Memo: short
texts the scan found nothing in, listed in the
order it scanned them, not entered) is read a text after the other: a text the guard
reads is clean when it is one of the next AHEAD texts of the run, or of the BEHIND
before them (the same object, or equal: what a look-up by key tests), and the run goes
on after it. The masker lists an object's members key, value, key, value; the guard
reads its keys first, then its values, which the texts behind hold. A text that is not
there is looked up as before; one the memo holds no entry for is scanned again, until
MISS_MAX such texts were met: from then on the run is looked up as a set (as its
entries would have been). So a text is left out only where the memo says the scan
found nothing in it, as before; the run only costs a scan again where the walks' orders
part further (an object whose values hold more than BEHIND texts; a text said again).

A list the masker's walk left out whole (wire/text.LeftOut in the raw run: every element
a string written without escapes, read as it is and alone with one rule, that the raw
scan marked nothing in) is looked for among the raw run's entries as a text is, when the
walk reaches a list: the same list object, as long, each element's rule that one. It is
then not walked into (no Python object read an element: a tool input of a million short
elements); else its elements are read one by one, and, the run not naming them, scanned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..rules.found import NOTHING, Memo
from ..wire.text import LeftOut
from .fields import KEY, NAME, NUMBER, Dup, Field, Num, Rule, key_context, plain, walk

try:
    from ..wire._spanwalk import first_unread as _c_first  # type: ignore[import-not-found]
except ImportError:
    _c_first = None

T = TypeVar("T")

# A memo's run: how many of its next texts a text is looked for among, then how many of
# the texts before (an object's values, which the guard reads after all its keys), and
# how many texts the memo holds no entry for are scanned again before the run is looked
# up as a set.
AHEAD = 8
BEHIND = 16
MISS_MAX = 256
# what the compiled walk is handed: the field model's types and readings, the memo's
KINDS = (Num, Dup, NUMBER, KEY, NAME, Field, plain, key_context, NOTHING, Memo, AHEAD, BEHIND, MISS_MAX)


class Clean:
    """For one walk: does memo show the scan found nothing in what the guard reads of a
    field? (A memo's run is read in order: the module's docstring.)"""

    __slots__ = ("memo", "run", "at", "raw", "raw_at", "misses", "runset")

    def __init__(self, memo: dict) -> None:
        self.memo = memo
        self.run: list[str] | None = getattr(memo, "run", None) or None
        self.at = 0  # where in the run the next text is looked for
        self.raw: list[str] | None = getattr(memo, "raw", None) or None  # (Memo.raw: read as the run is)
        self.raw_at = 0
        self.misses = 0
        self.runset: set[str] | None = None

    def __call__(self, f: Field) -> bool:
        v = f.value
        if f.rule is NUMBER or not plain(v, f.rule):
            return False
        if f.key is None:
            return self.said_nothing(v)
        before, after = key_context(f.key)
        return self.said_nothing(before + v + after)

    def said_nothing(self, text: str) -> bool:
        if self.run is not None and (j := _in_run(self.run, self.at, text)) >= 0:
            self.at = j + 1
            return True
        if self.raw is not None and (j := _in_run(self.raw, self.raw_at, text)) >= 0:
            self.raw_at = j + 1
            return True
        got = self.memo.get(text)
        if got is NOTHING:
            return True
        if got is not None or (self.run is None and self.raw is None):
            return False
        if self.runset is None:  # no entry: scanned again, or looked for in the runs as a set
            self.misses += 1
            if self.misses <= MISS_MAX:
                return False
            self.runset = set(self.run or ()) | set(self.raw or ())
        return text in self.runset

    def left_out(self, v: list, rule: Rule) -> bool:
        """Is v (read with rule) a list the raw run holds as a LeftOut, among its next
        AHEAD entries or the BEHIND before them, each of its elements read with the rule
        the masker's walk read them with? (The run goes on after it.)"""
        raw = self.raw
        if raw is None:
            return False
        at = self.raw_at
        for j in (*range(at, min(at + AHEAD, len(raw))), *range(at - 1, max(at - BEHIND, 0) - 1, -1)):
            m = raw[j]
            if type(m) is LeftOut and m.items is v and m.n == len(v):
                if not all(rule.child(i).resolve(x) is m.rule for i, x in enumerate(v)):
                    return False
                self.raw_at = j + 1
                return True
        return False


def _in_run(run: list[str], at: int, text: str) -> int:
    """Where text is among run's next AHEAD texts from at, or the BEHIND before them; -1."""
    for j in range(at, min(at + AHEAD, len(run))):  # the texts next
        r = run[j]
        if r is text or r == text:
            return j
    for j in range(at - 1, max(at - BEHIND, 0) - 1, -1):  # and those before them
        r = run[j]
        if r is text or r == text:
            return j
    return -1


def clean(f: Field, memo: dict) -> bool:
    """Does memo show the scan found nothing in what the guard reads of f? (A memo
    without a run: Clean reads one.)"""
    return Clean(memo)(f)


def py_first_unread(doc: object, root: Rule, memo: dict | None, visit: Callable[[Field], T | None]) -> T | None:
    """visit(f) for each field of fields.walk(doc, root) memo does not show clean
    (Clean), in document order: the first answer that is not None, or None."""
    runs = memo is not None and (getattr(memo, "run", None) or getattr(memo, "raw", None))
    is_clean = Clean(memo) if memo is not None and (memo or runs) else None
    whole = is_clean.left_out if is_clean is not None and is_clean.raw is not None else None
    for f in walk(doc, root, whole=whole):
        if is_clean is None or not is_clean(f):
            got = visit(f)
            if got is not None:
                return got
    return None


def c_first_unread(doc: object, root: Rule, memo: dict | None, visit: Callable[[Field], T | None]) -> T | None:
    return _c_first(doc, root, memo, visit, KINDS)  # type: ignore[no-any-return,misc]


first_unread = c_first_unread if _c_first is not None else py_first_unread

__all__ = [
    "AHEAD", "BEHIND", "KINDS", "MISS_MAX", "Clean", "c_first_unread", "clean", "first_unread", "py_first_unread",
]
