"""A JSON document as the tables read it (base/document.py): numbers as their text, a
repeated key's pairs kept, and an object repeating a key with values that differ noted
in the one parse."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.document import Dup, Num, differing, loads, path_to, repeated, same
from disguiselib.base.fields import path_text
from disguiselib.errors import MaskError, PlacedMaskError


def test_numbers_keep_their_text_and_a_repeated_key_its_pairs() -> None:
    doc = loads('{"n": 1.50, "a": "x", "a": "y"}')
    assert type(doc) is Dup and doc.pairs == [("n", "1.50"), ("a", "x"), ("a", "y")]
    assert type(doc.pairs[0][1]) is Num
    assert type(loads('{"a": 1}')) is dict


def test_clashes_are_noted_only_where_a_repeated_keys_values_differ() -> None:
    cases = {
        '{"type": "text", "type": "thinking"}': ["type"],
        '{"a": "1", "a": 1}': ["a"],  # a string against a number with the same text
        '{"a": 1, "a": 1.0}': ["a"],  # two numbers written differently
        '{"a": {"x": 1, "y": 2}, "a": {"y": 2, "x": 1}}': ["a"],  # members in another order
        '{"a": [1, 2], "a": [1]}': ["a"],
        '{"a": {"b": 1, "b": 2}, "a": {"b": 1, "b": 2}}': ["b", "b"],  # each inner object, innermost first
        '{"a": {"b": 1, "b": 1}, "a": {"b": 1}}': ["a"],  # a repeat inside against none
        '{"a": null, "a": false}': ["a"],
    }
    for text, keys in cases.items():
        clashes: list = []
        loads(text, clashes)
        assert [k for _, k in clashes] == keys, text
    for text in ('{"a": 1}', '{"a": "x", "a": "x"}', '{"a": {"b": [1, {"c": true}]}, "a": {"b": [1, {"c": true}]}}',
                 '{"a": {"b": 1, "b": 1}, "a": {"b": 1, "b": 1}}', '[{"t": null, "t": null}]'):  # fmt: skip
        clashes = []
        loads(text, clashes)
        assert clashes == [], text


def test_same_reads_deep_values_without_recursion() -> None:
    def nest(leaf: object) -> list:
        out = [leaf]
        for _ in range(100_000):
            out = [out]
        return out

    assert same(nest(None), nest(None))
    assert not same(nest(None), nest(Num("1")))


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
                    max_leaves=8),
       st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
                    max_leaves=8))  # fmt: skip
def test_same_is_equality_of_the_text_written_canonically(x: object, y: object) -> None:
    """Two parsed values are the same exactly where they are written alike (keys in
    their order, numbers by their text, no type taken for another)."""
    tx, ty = json.dumps(x), json.dumps(y)
    assert same(loads(tx), loads(ty)) == (tx == ty)
    assert differing({"k": loads(ty)}, [("k", loads(tx)), ("k", loads(ty))]) == (None if tx == ty else "k")


def test_the_refusal_names_the_place_only_through_its_namer() -> None:
    clashes: list = []
    doc = loads('{"messages": [{"content": [{"type": "text", "type": "thinking", "text": "Acme Corp"}]}]}', clashes)
    e = repeated(doc, clashes, "body")
    assert isinstance(e, PlacedMaskError) and isinstance(e, MaskError)
    assert str(e) == "body repeats the key at $ (the path not shown) with values that differ"
    assert (
        e.at(lambda p: "$." + path_text(p))
        == "body repeats the key at $.messages[0].content[0].type with values that differ"
    )
    assert path_to(doc, doc) is None and path_to(doc, object()) is None
