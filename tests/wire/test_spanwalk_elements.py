"""spanwalk.elements: where each element of a JSON array's text begins, and where it
closes (turns.py cuts a conversation there). The reference (py_elements) and the
compiled one (wire/_spanwalk.pyx) against the places the text was built with, in every
spelling: escapes and backslash runs before a quote, brackets and commas inside strings,
scalars of every kind, non-ASCII of each width, whitespace, nesting."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib import engine
from disguiselib.wire import spanwalk

IMPLS = [spanwalk.py_elements] + ([spanwalk.c_elements] if spanwalk.c_elements is not None else [])

_chars = st.characters(blacklist_categories=("Cs",)) | st.sampled_from('"\\/\n\té€😀\x00{}[]:,')
_text = st.text(_chars, max_size=8)
_json = st.recursive(
    st.one_of(_text, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.none(), st.booleans()),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(_text, c, max_size=3)),
    max_leaves=12,
)
_space = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def arrays(draw) -> tuple[str, int, list[int], int]:  # noqa: ANN001
    """An array's text inside a member, written element by element: (text, where its `[`
    is, each element's start, where its `]` is)."""
    ascii_ = draw(st.booleans())
    items = draw(st.lists(_json, max_size=5))
    out = ['{"a\\"[": "]", "messages":', draw(_space), "["]
    at = len(out[0]) + len(out[1])
    out.append(draw(_space))
    starts = []
    for n, v in enumerate(items):
        if n:
            out += [draw(_space), ",", draw(_space)]
        starts.append(sum(map(len, out)))
        out.append(json.dumps(v, ensure_ascii=ascii_))
    out.append(draw(_space))
    close = sum(map(len, out))
    out += ["]", draw(_space), ', "z": [1]}']
    return "".join(out), at, starts, close


@pytest.mark.parametrize("elements", IMPLS)
@given(arrays())
@example(('{"messages":[1,"]\\\\",{"b":[2]},[3],true,null,-1.5e3]}', 12, [13, 15, 21, 31, 35, 40, 45], 51))
@example(('{"messages":[]}', 12, [], 13))
def test_elements_are_where_the_text_puts_them(elements, case: tuple[str, int, list[int], int]) -> None:  # noqa: ANN001
    text, at, starts, close = case
    json.loads(text)  # (the strategy writes JSON)
    got, end = elements(text, at)
    assert (list(got), end) == (starts, close)


@pytest.mark.parametrize("elements", IMPLS)
def test_an_array_cut_short_has_no_end(elements) -> None:  # noqa: ANN001
    got, end = elements("[1, [2", 0)
    assert (list(got), end) == ([1, 4], -1)


@pytest.mark.parametrize("elements", IMPLS)
def test_it_reads_from_the_bracket_it_is_given(elements) -> None:  # noqa: ANN001
    got, end = elements('[[0], ["x", 1]]', 6)
    assert (list(got), end) == ([7, 12], 13)


def test_the_compiled_one_is_there_with_the_engine() -> None:
    if engine.describe().startswith("engine: compiled"):
        assert spanwalk.elements is spanwalk.c_elements
    else:
        assert spanwalk.elements is spanwalk.py_elements
