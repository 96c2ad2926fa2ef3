"""Per-rule options (rules/accept.py): keywords as words, and what the prefilter looks for."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.errors import MappingError
from disguiselib.rules import accept, mappings
from disguiselib.rules.rules import Rules


@pytest.mark.parametrize(
    "raw, words, found",
    [
        ("golang.org/x/telemetry v0.0.0-20240521205824", ("tel",), False),
        ("- add callbacks 0.7.0 (2011-10-22)", ("call",), False),
        ("Tel: (415) 555-2671", ("tel",), True),
        ("mobileNumber = '415 555 2671'", ("mobile",), True),
        ("SSN#: 536 22 8190", ("ssn",), True),
        ("lessons 536 22 8190", ("ssn",), False),
        ("TELÉFONO 612 345 678", ("teléfono",), True),
        ("call me", ("text me", "call"), True),
        ("Tel: telemetry", ("tel",), True),  # the first occurrence a word, a later one not
        ("telemetry tel telemetry", ("tel",), True),  # a word between two that are not
        ("SS#x 536 22 8190", ("ss#",), True),  # a word ending in no letter: any letter may follow
        ("İ té 612", ("xé", "té"), True),  # a character whose lower case is longer: containment,
        ("İ tö 612", ("xé", "té"), False),  # word after word
        ("Té: 612", ("ca", "té"), True),  # none of the ASCII words: the others still looked for
    ],
)
def test_keywords_are_words(raw: str, words: tuple[str, ...], found: bool) -> None:
    assert accept.has_word(raw, words) is found


def _pattern(**kw) -> mappings.Pattern:
    return mappings.from_dict({"patterns": [{"name": "X", "regex": "[0-9]{6}", **kw}]}).patterns[0]


def test_prefilter_regex_is_the_option_else_ascii_keywords_else_the_regex() -> None:
    assert accept.prefilter_regex(_pattern()) == "[0-9]{6}"
    assert accept.prefilter_regex(_pattern(keywords=["PIN", "ss#"])) == r"(?i:pin|ss\#)"
    assert accept.prefilter_regex(_pattern(keywords=["pin", "téléphone"])) == "[0-9]{6}"
    assert accept.prefilter_regex(_pattern(prefilter="[0-9]")) == "[0-9]"


def test_a_keyword_rule_is_found_through_its_keyword_prefilter() -> None:
    r = Rules(mappings.from_dict({"patterns": [{"name": "PIN", "regex": "[0-9]{6}", "keywords": ["pin"]}]}))
    assert r.find("PIN 123456") == [("PIN", 4, 10)]
    assert r.find("order 123456") == []
    assert r.find("spin 123456") == []  # "pin" inside a word: the prefilter names it, has_word does not


@pytest.mark.parametrize("pf, why", [("a(?=b)", "does not compile"), (r"\b", "empty string"), (3, "must be a regex")])
def test_a_prefilter_option_is_checked_like_a_regex(pf, why: str) -> None:
    with pytest.raises(MappingError, match=why):
        mappings.from_dict({"patterns": [{"name": "X", "regex": "ab", "prefilter": pf}]})


_letters = st.sampled_from(list("telTELcalCAL #:-_9éÉİßx"))


@settings(max_examples=400, deadline=None)
@given(st.text(_letters, max_size=24), st.lists(st.text(st.sampled_from(list("telca#éß-")), min_size=1, max_size=4), max_size=5))
@example("Tel: 555", ["tel"])
@example("xTEL", ["tel", "té"])
@example("İtel", ["tel"])  # a character whose lower case is longer: containment alone, for the others
@example("ça", ["a", "ça"])
def test_one_search_for_the_ascii_keywords_is_the_search_word_by_word(raw: str, words: list[str]) -> None:
    """has_word's one search for every ASCII keyword (a candidate with none near it is
    rejected at once) answers as looking for each word in turn does."""
    assert accept.has_word(raw, tuple(words)) is accept.py_has_word(raw, tuple(words))


def test_a_keyword_in_a_long_list_is_found_and_a_text_without_one_is_not() -> None:
    words = tuple(f"kw{i}" for i in range(30)) + ("tel",)
    assert accept.has_word("Tel: 415 555 2671", words)
    assert not accept.has_word("a1b2c3", words)
    assert not accept.has_word("telemetry 415", words)  # (found, but not as a word)
