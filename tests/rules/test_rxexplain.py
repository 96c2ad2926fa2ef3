"""rules/rxexplain.py: RE2's refusal of a pattern, as a person can act on it (the path
through a rule's compile: tests/rules/test_config_messages.py)."""

from __future__ import annotations

import pytest
import re2._re2 as _re2  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.rules import linear
from disguiselib.rules.rxexplain import explain


def refusal(pattern: str) -> str:
    """RE2's own words for why it refuses pattern."""
    err = _re2.RE2(pattern.encode(), linear._options()).error()
    assert err, pattern
    return err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("a(?=b)", "lookahead (?=...) at character 1 is not supported (RE2 runs every rule in linear time, which "
                   "this construct cannot be); instead, match what must follow as part of the regex; put the part "
                   "to mask in a capture group and name it with the rule's `group` option"),
        ("(a)\\1", "backreference \\1 at character 3 is not supported (RE2 runs every rule in linear time, which this "
                   "construct cannot be); instead, write the alternatives out, e.g. '[^']*'|\"[^\"]*\" for a quoted text"),
        ("a*+", "possessive quantifier *+ at character 1 is not supported (RE2 runs every rule in linear time, which "
                "this construct cannot be); instead, drop the last +: RE2 never backtracks, so it gains nothing"),
        ("[ab", "a [ at character 0 is never closed"),
        ("a{1001}", "a repetition count over 1000, or a minimum over the maximum, at character 1"),
    ],
)  # fmt: skip
def test_a_refusal_says_the_construct_where_it_is_and_what_to_write(pattern: str, said: str) -> None:
    assert explain(pattern, refusal(pattern)) == said


def test_a_refusal_it_does_not_know_keeps_re2s_kind_and_the_place() -> None:
    assert explain("ab(", "something new: (") == "something new at character 2"
    assert explain("ab", "something new") == "something new"


@given(st.sampled_from(["(?=x)", "(?!x)", "(?<=x)", "(?<!x)", "(x)\\1", "x++", "[x", "(x", "x{2000}", "\\p{Nope}"]),
       st.text(alphabet="ABCDEFGHIJKLMNOP", min_size=4, max_size=12), st.booleans())  # fmt: skip
def test_only_the_construct_is_quoted_never_the_rest_of_the_pattern(construct: str, name: str, before: bool) -> None:
    """A rule may spell out a name it exists to mask: the explanation quotes the refused
    construct alone."""
    pattern = name + construct if before else construct + name
    msg = explain(pattern, refusal(pattern))
    assert name not in msg, msg
