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


def test_inside_a_common_word_is_any_piece_of_one_and_nothing_across_two() -> None:
    pieces = {w[i:j] for w in COMMON_WORDS for i in range(len(w)) for j in range(i + 1, len(w) + 1)}
    for p in sorted(pieces):
        if len(p) >= mappings.SHORT_DISGUISE and p not in COMMON_WORDS:
            (w,) = _warned(p)
            assert "occurs inside a common word" in w, p
    words = sorted(COMMON_WORDS)
    # the end of one word and the start of the next (in any order the words are kept)
    across = [a[-2:] + b[:2] for a, b in zip(words, words[1:]) if len(a) > 1 and len(b) > 1]
    across = [x for x in across if x not in pieces]
    assert len(across) > 100 and all(_warned(x) == [] for x in across)


def test_the_check_holds_no_set_of_every_piece() -> None:
    # (a frozenset of every piece of every word held ~210 KiB in every process)
    assert not [k for k, v in vars(mappings).items() if isinstance(v, (set, frozenset)) and len(v) > 1000]
