"""patterns.next_match: one pattern rule's next accepted match in a text's bytes, the
search Rules.find runs per pattern (tests/rules/test_rules.py checks find() as a whole
against its reference)."""

from __future__ import annotations

import functools
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


@functools.cache
def _secret() -> Pattern:
    """The shipped SECRET rule (the defaults built once: not once an example)."""
    from disguiselib.config import build_config

    (p,) = [p for p in build_config([], True, []).rules._patterns if p.name == "SECRET"]
    assert p.skip is not None  # the shipped rule the skip regex is made for (accept.skip_regex)
    return p


_PIECES = ["api_key = ", "secret: ", "token=", '"', "'", " ", "\n", "x1", "Hx7qZ9wKp2mV", "abc", "12345678",
           "passphrase", "é", "db_password = ", "Q7zX9lM2pW4rT6yV8n", "API_KEY=x1 ", "=", ":"]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_the_skip_regex_finds_what_the_rule_alone_finds(pieces: list[str]) -> None:
    """The skip regex only says where the rule's own search need not look: with it and
    without it next_match gives the same matches (its candidates rejected past
    _SKIP_WASTE places: searched without it from there)."""
    import dataclasses

    p = _secret()
    text = "".join(pieces)
    assert _all(p, text) == _all(dataclasses.replace(p, skip=None), text)


def test_past_the_skip_waste_a_secret_is_still_found() -> None:
    import dataclasses

    from disguiselib.rules.patterns import _SKIP_WASTE

    p = _secret()
    for n in (_SKIP_WASTE - 1, _SKIP_WASTE, _SKIP_WASTE + 1, 3 * _SKIP_WASTE):
        text = "API_KEY=x1 " * n + 'api_key = "Q7zX9lM2pW4rT6yV8n"\n'
        got = _all(p, text)
        assert got == _all(dataclasses.replace(p, skip=None), text)
        assert [text.encode()[a:b] for a, b in got] == [b"Q7zX9lM2pW4rT6yV8n"]


@pytest.mark.parametrize("text", ["pay 5", "pay é5", "5"])
def test_a_rejected_candidate_at_the_last_character_ends_the_search(text: str) -> None:
    """The search goes on one character past a rejected candidate: past the text's last
    byte it stops (it does not read a byte that is not there)."""
    p = _pattern(regex="[0-9]+", validator="card")
    assert _all(p, text) == []
