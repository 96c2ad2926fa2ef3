"""spanwalk.members: where each member of a JSON object's text begins, and its key, as
written (base/prompt.py numbers placeholders by it). The reference (py_members) and the
compiled one (wire/_spanwalk.pyx) against the places the text was built with, in every
spelling: escapes and backslash runs before a quote, brackets and commas inside strings,
non-ASCII of each width, whitespace, nesting, repeated keys."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib import engine
from disguiselib.wire import spanwalk

needs_c = pytest.mark.skipif(spanwalk.c_members is None, reason=f"no compiled span walk ({engine.describe()})")
IMPLS = [spanwalk.py_members] + ([spanwalk.c_members] if spanwalk.c_members is not None else [])

_chars = st.characters(blacklist_categories=("Cs",)) | st.sampled_from('"\\/\n\té€😀\x00{}[]:,')
_text = st.text(_chars, max_size=8)
_json = st.recursive(
    st.one_of(_text, st.integers(), st.none(), st.booleans()),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(_text, c, max_size=3)),
    max_leaves=12,
)
_space = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def objects(draw) -> tuple[str, list[int], list[str]]:  # noqa: ANN001
    """An object's text, written member by member: (text, each member's start, keys)."""
    ascii_ = draw(st.booleans())
    members = draw(st.lists(st.tuples(_text, _json), max_size=5))
    if members and draw(st.booleans()):
        members.append(members[0])  # a key written twice
    out, starts = ["{", draw(_space)], []
    for n, (k, v) in enumerate(members):
        if n:
            out += [draw(_space), ",", draw(_space)]
        starts.append(sum(map(len, out)))
        out += [json.dumps(k, ensure_ascii=ascii_), draw(_space), ":", draw(_space), json.dumps(v, ensure_ascii=ascii_)]
    out += [draw(_space), "}"]
    return "".join(out), starts, [k for k, _ in members]


@pytest.mark.parametrize("members", IMPLS)
@given(objects())
@example(('{"a\\\\": "\\\\\\"}", "b": [{"c": "]"}], "\\"": 1}', [1, 17, 36], ["a\\", "b", '"']))
@example(("{}", [], []))
@example(('{"😀": "é", "x": {"y": {"z": []}}}', [1, 11], ["😀", "x"]))
def test_members_are_where_the_text_puts_them(members, case: tuple[str, list[int], list[str]]) -> None:  # noqa: ANN001
    text, starts, keys = case
    json.loads(text)  # (the strategy writes JSON)
    got_starts, got_keys = members(text)
    assert list(got_starts) == starts
    assert got_keys == keys


@pytest.mark.parametrize("members", IMPLS)
def test_not_an_object_has_no_members(members) -> None:  # noqa: ANN001
    for text in ('["a", "b"]', '"a"', "1", " [ {\"a\": 1} ]"):
        starts, keys = members(text)
        assert list(starts) == [] and keys == []


@needs_c
@given(st.text(_chars, max_size=40))
def test_compiled_and_reference_agree_on_any_text(text: str) -> None:
    """On text that is not JSON too (neither is asked to judge it): the same answer."""
    a, b = spanwalk.py_members(text), spanwalk.c_members(text)
    assert (list(a[0]), a[1]) == (list(b[0]), b[1])
