"""rules/prescan.py: Rules.prescan's memo (the whole path: tests/base/test_masking_scan.py,
tests/rules/test_rules.py)."""

from __future__ import annotations

from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules


def test_a_text_a_literal_reaches_out_of_is_found_in_full_not_from_the_memo() -> None:
    """prescan joins the texts by a NUL: a literal holding one can match from a text into
    the next. Both are marked, and neither gets a memo entry, so that find() scans them
    whole (the first also holds a match of its own, which the memo would have hidden as
    "nothing found" had the crossing text been taken for a clean one)."""
    r = Rules(mappings.from_dict({"literals": {"a\x00b": "AB"}}))
    for pieces in (["a\x00b a", "b"], ["x", "a\x00b a", "b", "y"], ["z" * 40 + "a\x00b a", "b" + "z" * 40]):
        hot, memo = r.prescan(pieces)
        k = next(i for i, p in enumerate(pieces) if p.startswith(("a", "z" * 40)))
        assert {k, k + 1} <= hot and pieces[k] not in memo and pieces[k + 1] not in memo
        at = pieces[k].index("a")
        assert r.find(pieces[k], memo) == r.find(pieces[k]) == [("literals", at, at + 3)]
