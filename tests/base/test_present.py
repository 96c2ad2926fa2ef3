"""What the client's request already holds (base/present.py): the placeholders and the
fakes a request's text holds as the client's own."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.present import present_fakes, present_placeholders, py_present_placeholders
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules, Session
from disguiselib.wire import spanwalk
from strategies import RULES

_NAMES = ("A", "A_1", "KEY", "EMAIL", "US_SSN")
_SHAPE_RULES = Rules(mappings.from_dict({"patterns": [{"name": n, "regex": f"{n.lower()}[0-9]{{3}}"} for n in _NAMES]}))


_SHAPED = st.builds("[{}_{}]".format, st.sampled_from([*_NAMES, "B", "A_B", "KEY_1_2"]), st.integers(0, 12))
_JUNK = st.sampled_from(["[", "]", "_", "1", "0", "9", *_NAMES, "B", "\\u005b", "\\u005d", "x", '"'])


@given(st.lists(st.one_of(_SHAPED, _JUNK), max_size=20))
def test_placeholders_the_client_wrote_are_the_ones_an_alternation_of_the_names_finds(parts: list[str]) -> None:
    """present_placeholders reads any name-shaped placeholder and looks its name up; the
    reference is the alternation of the names it replaced (3.5 ms a megabyte)."""
    s = "".join(parts)
    rx = re.compile(r"\[(?:" + "|".join(map(re.escape, _NAMES)) + r")_[1-9][0-9]*\]")
    want = set(rx.findall(s))
    if "\\u" in s:
        want.update(rx.findall(re.sub(r"\\u00([2-7][0-9a-fA-F])", lambda m: chr(int(m.group(1), 16)), s)))
    assert present_placeholders(s, _SHAPE_RULES) == want


# the compiled scan's alphabet: every character its matcher decides on, escapes that
# decode to printable ASCII and others, characters that make a text of 2 and 4 bytes a
# code point (the scan's loops are typed for each width), a backslash before a `\u00`
_BYTES_WIDE = st.sampled_from(["[", "]", "_", "0", "1", "9", "A", "Z", "a", "\\", "u", "\\u005b", "\\u005d",
                               "\\u0041", "\\u00e9", "\\u007", "\\\\u005b", "é", "€", "😀", " ", *_NAMES])  # fmt: skip


@pytest.mark.skipif(spanwalk.c_shapes is None, reason="the compiled engine is not built (DISGUISE_ENGINE=python)")
@given(st.lists(st.one_of(_SHAPED, _SHAPED.map(lambda p: "\\u005b" + p[1:]), _BYTES_WIDE), max_size=30))
def test_the_compiled_scan_for_placeholders_finds_what_the_reference_finds(parts: list[str]) -> None:
    s = "".join(parts)
    assert present_placeholders(s, _SHAPE_RULES) == py_present_placeholders(s, _SHAPE_RULES)


def test_the_compiled_scan_leaves_a_text_with_an_escaped_ascii_character_to_the_reference() -> None:
    if spanwalk.c_shapes is None:
        pytest.skip("the compiled engine is not built (DISGUISE_ENGINE=python)")
    names = frozenset(_NAMES)
    assert spanwalk.c_shapes("[A_1] \\u005bKEY_2]", names) is None
    got = spanwalk.c_shapes("[A_1] \\u00e9 [KEY_02] [KEY_2] [B_3] [A_1_7] [a_1] [A_] [_1]", names)
    assert got == {"[A_1]", "[KEY_2]", "[A_1_7]"}
    assert spanwalk.c_shapes("😀[US_SSN_10]€[A_9", names) == {"[US_SSN_10]"}


def test_placeholders_the_client_wrote_only_with_escapes_are_found() -> None:
    """No `[` in the text at all: a placeholder spelled wholly with \\u escapes is still
    the client's own."""
    assert present_placeholders('{"a": "\\u005bEMAIL_2\\u005d"}', RULES) == {"[EMAIL_2]"}
    assert present_placeholders('{"a": "\\u00e9"}', RULES) == frozenset()


def test_fakes_the_client_typed_are_found_where_they_overlap() -> None:
    """Two fakes sharing letters in the client's text ("Zenith Labs Inc"): both are the
    client's own, each reserved (one Aho-Corasick pass reporting overlapping matches)."""
    session = Session()
    session.placeholders.update({"Zenith Labs": "Acme Corp", "Labs Inc": "Foo GmbH", "[EMAIL_1]": "a@b.example"})
    assert present_fakes('{"a": "Zenith Labs Inc"}', session) == {"Zenith Labs", "Labs Inc"}
