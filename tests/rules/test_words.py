"""The common words a disguise should not be (rules/words.py): the load-time warning."""

from __future__ import annotations

from disguiselib.rules import mappings
from disguiselib.rules.words import COMMON_WORDS


def test_the_list_is_lower_case_words() -> None:
    assert {"the", "weather", "token", "secret", "user"} <= COMMON_WORDS
    assert all(w.isalpha() and w == w.lower() for w in COMMON_WORDS)


def _warned(disguise: str) -> list[str]:
    ms = mappings.from_dict({"literals": {"Original Name Inc": disguise}})
    return mappings.disguise_warnings(ms)


def test_a_disguise_that_is_or_hides_in_a_common_word_is_warned_about_by_name() -> None:
    (w,) = _warned("token")
    assert "'token'" in w and "is a common word" in w and "Original Name" not in w
    (w,) = _warned("eath")  # inside "weather"
    assert "occurs inside a common word" in w
    (w,) = _warned("Tok")
    assert "shorter than" in w
    assert _warned("Zenith Labs") == [] and _warned("QXV7-ALPHA") == []
