"""patterns.next_match: one pattern rule's next accepted match in a text's bytes, the
search Rules.find runs per pattern (tests/rules/test_rules.py checks find() as a whole
against its reference)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.errors import MaskError
from disguiselib.rules import mappings
from disguiselib.rules.patterns import Pattern, next_match
from disguiselib.rules.rules import Rules


def _pattern(**p: str) -> Pattern:
    (pat,) = Rules(mappings.from_dict({"patterns": [{"name": "P", **p}]}))._patterns
    return pat


def _all(p: Pattern, text: str) -> list[tuple[int, int]]:
    b, got, pos, spent = text.encode(), [], 0, [0, 16 * len(text.encode()) + 65536, 0]
    while (m := next_match(p, b, pos, text if text.isascii() else None, spent)) is not None:
        got.append(m)
        pos = max(m[1], m[0] + 1)
    return got


@given(st.text(alphabet="ab1 ", max_size=40))
def test_a_pattern_without_options_is_its_regex_leftmost_first(text: str) -> None:
    p = _pattern(regex="a+1?")
    assert p.opts is None
    assert _all(p, text) == [m.span() for m in re.finditer("a+1?", text)]


def test_a_rejected_candidate_is_searched_again_one_character_on_never_inside_a_character() -> None:
    card = "4539148803436467"
    p = _pattern(regex=r"\S[0-9]{15}", validator="card")
    for before in ("1", "é"):
        text = f"pay {before}{card} now"
        start = len(f"pay {before}".encode())
        assert _all(p, text) == [(start, start + len(card))]


def test_a_group_is_what_is_masked() -> None:
    p = _pattern(regex=r"key=(?P<v>[a-z]{4,})", group="v")
    assert _all(p, "x key=abcd key=ab key=efghi") == [(6, 10), (22, 27)]


def test_rejected_candidates_past_the_linear_bound_refuse_the_text() -> None:
    p = _pattern(regex=r"(?:^|[^A-Za-z0-9])(?P<k>y[0-3]_[A-Za-z0-9_-]{55,})", group="k", validator="mixed")
    text = "_y0_abcdefgh" * 2000
    with pytest.raises(MaskError, match="P: .* linear time"):
        _all(p, text)
    # a bound never reached: nothing found, nothing refused
    assert _all(p, "x_y0_abc " * 2000) == []
