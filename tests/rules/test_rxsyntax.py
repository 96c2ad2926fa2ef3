"""Strip rules rewritten for streaming (rules/rxsyntax.py): the bounded form, its width,
and the prefix closure, checked against partial matching (the `regex` module)."""

from __future__ import annotations

import re

import pytest
import regex  # test-only oracle: partial matching
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.rules import linear, rxsyntax
from strategies import STRIP

STRIP_RULES = [
    STRIP, r"<(?:tag|t)>", r"\{\{[a-z]{1,4}\}\}", r"x(?:ab)*y", r"(?i)ZZ[0-9]+z", r"q(?:r|rs|rst)t", r"\[\[", r"[ab]{2,3}c",
]  # fmt: skip
ALPHA_STRIP = "[]<>{}tagxyzZ09_rsqabc:reply_to :"


@given(st.sampled_from(STRIP_RULES), st.text(alphabet=ALPHA_STRIP, max_size=14))
@example(STRIP, "[[reply_to:")
@example(STRIP, "[[reply_to_current]")
@example(r"q(?:r|rs|rst)t", "qrs")
def test_prefix_closure_is_partial_matching(rule: str, t: str) -> None:
    b = rxsyntax.bounded(rule)
    closure = linear.Regex(b.closure)
    # the same bounded rule for the oracle (RE2 writes a code point \x{a}; regex \U0000000a)
    text = re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m.group(1), 16):08x}", b.regex)
    oracle = regex.compile(f"(?:{text})(?!)")
    assert closure.fullmatch(t.encode()) == (oracle.fullmatch(t, partial=True) is not None)


def test_bounded_rule_width_and_refusals() -> None:
    assert rxsyntax.bounded(STRIP).width < rxsyntax.MAX_WIDTH
    assert rxsyntax.bounded("abc").width == 3
    for bad, why in [
        ("^x", "anchor"), ("x$", "anchor"), (r"\bx", "word boundar"), ("a(?=b)", "lookaround"),
        (r"(a)\1", "backreference"), ("a++", "possessive"), ("(?:[ab]{1,900}){1,900}", "characters long"),
    ]:  # fmt: skip
        with pytest.raises(rxsyntax.SyntaxRefused, match=why):
            rxsyntax.bounded(bad)


def test_the_bounded_form_matches_what_the_rule_matches_up_to_the_bound() -> None:
    b = rxsyntax.bounded(r"<t>[a-z]+</t>")
    rx = linear.Regex(b.regex)
    assert rx.fullmatch(b"<t>" + b"a" * rxsyntax.MAX_REPEAT + b"</t>")
    assert not rx.fullmatch(b"<t>" + b"a" * (rxsyntax.MAX_REPEAT + 1) + b"</t>")
    assert b.width == 3 + rxsyntax.MAX_REPEAT + 4
    assert rxsyntax.bounded("a{2,5}").width == 5 and rxsyntax.bounded("(?:ab|c)x?").width == 3
    assert rxsyntax.bounded("a*?b").regex.endswith("b") and "?" in rxsyntax.bounded("a*?b").regex  # lazy kept


def test_flags_classes_and_escapes_survive_the_rewrite() -> None:
    for rule, yes, no in [
        ("(?i)tag", "TaG", "tax"), (r"[^\]x]+!", "ab!", "]!"), (r"\d\s\w", "1 a", "a 1"),
        (r"a.b", "a-b", "a\nb"), ("(?s)a.b", "a\nb", "ab"), (r"\.\*", ".*", "a*"), ("é+", "éé", "e"),
    ]:  # fmt: skip
        b = rxsyntax.bounded(rule)
        rx = linear.Regex(b.regex)
        assert rx.fullmatch(yes.encode()), rule
        assert not rx.fullmatch(no.encode()), rule


def test_a_closure_of_nothing_never_matches() -> None:
    b = rxsyntax.bounded("x{0}")
    assert b.closure.endswith(rxsyntax.NEVER) and b.width == 0
    assert not linear.Regex(b.closure).search(b"anything x")
