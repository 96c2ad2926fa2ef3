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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..rules.found import NOTHING
from .fields import KEY, NUMBER, Dup, Field, Num, Rule, key_context, plain, walk

try:
    from ..wire._spanwalk import first_unread as _c_first  # type: ignore[import-not-found]
except ImportError:
    _c_first = None

T = TypeVar("T")

# what the compiled walk is handed: the field model's types and readings
KINDS = (Num, Dup, NUMBER, KEY, Field, plain, key_context, NOTHING)


def clean(f: Field, memo: dict) -> bool:
    """Does memo show the scan found nothing in what the guard reads of f?"""
    v = f.value
    if f.rule is NUMBER or not plain(v, f.rule):
        return False
    if f.key is None:
        return memo.get(v) is NOTHING
    before, after = key_context(f.key)
    return memo.get(before + v + after) is NOTHING


def py_first_unread(doc: object, root: Rule, memo: dict | None, visit: Callable[[Field], T | None]) -> T | None:
    """visit(f) for each field of fields.walk(doc, root) memo does not show clean
    (clean), in document order: the first answer that is not None, or None."""
    for f in walk(doc, root):
        if not memo or not clean(f, memo):
            got = visit(f)
            if got is not None:
                return got
    return None


def c_first_unread(doc: object, root: Rule, memo: dict | None, visit: Callable[[Field], T | None]) -> T | None:
    return _c_first(doc, root, memo, visit, KINDS)  # type: ignore[no-any-return,misc]


first_unread = c_first_unread if _c_first is not None else py_first_unread

__all__ = ["KINDS", "c_first_unread", "clean", "first_unread", "py_first_unread"]
