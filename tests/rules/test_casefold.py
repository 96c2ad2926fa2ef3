"""casefold: which case-insensitive patterns name a non-ASCII character with a case
(searched always by the prefilter), and which only caseless ones (prefiltered)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.rules import casefold, linear

CASED = ["(?i)straße", "(?i)[ä-ö]x", r"(?i)\x{e4}x", r"(?i)\xe4x", r"(?i)\344x", r"(?i)\pLx", r"(?i)[\x{80}-\x{2000}]x",
          r"(?mi)é", r"(?i)\Qé\E"]  # fmt: skip
CASELESS = [r"(?i)key[\x{a0}\x{2000}-\x{200a}\x{3000}]*:", r"(?i)a\x{85}b", "(?i)pass\u00a0word", r"(?i)[\x85-\xa0]k",
             r"(?i:token)[\t\x0b\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]+=(\S+)"]  # fmt: skip


def test_a_caseless_pattern_naming_cased_non_ascii_is_searched_always_and_a_no_break_space_is_not() -> None:
    assert all(casefold.names_cased_non_ascii(p) for p in CASED)
    assert not any(casefold.names_cased_non_ascii(p) for p in CASELESS)
    _, always = linear._hyperscan(tuple(CASED + CASELESS))
    assert set(always) >= set(range(len(CASED))) and not set(always) & set(range(len(CASED), len(CASED) + 5))
    _, always = linear._hyperscan(("(?si)é", "é"))
    assert always == (0,)  # the flag read wherever it is set


@given(st.sampled_from(CASELESS), st.text(alphabet="kKpasWORDwtoen\u212a\u017fb:=\t\x0b\x85\xa0\u1680\u2000\u2005\u200a\u3000xX", max_size=24))
def test_the_prefilter_names_a_caseless_pattern_with_no_break_spaces_whenever_re2_finds_it(p: str, text: str) -> None:
    """The 7 shipped secret rules name non-ASCII spaces under (?i): they were searched
    in every string (a 1M-element tool input: 7 RE2 searches an element); through the
    prefilter now, which must still name them wherever RE2 matches (the Kelvin sign and
    the long s fold to k and s in both engines)."""
    if linear.Regex(p).search(text.encode()) is not None:
        assert 0 in linear.Prefilter([p]).match(text.encode())
