"""The field vocabulary every provider shares (base/fields.py): the fail-closed
generic rule, the envelope keys, JSON Schema, shape and vocabulary dispatch. (The field
audit against the SDKs is test_fields_coverage.py and its siblings.)"""

from __future__ import annotations

import base64
import json

from fields_probe import RULES
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib.base import fields, masking
from disguiselib.base.fields import GENERIC, SCHEMA, As, Shape, Vocabulary, obj, plain, read, texts
from disguiselib.rules.rules import Session
from disguiselib.wire import jsonspan
from disguiselib.wire.jsonspan import SKIP, VALUES, Arr, Obj, transform


def upper(rule_root, doc) -> dict:
    """Every string the rule selects, upper-cased (keys too where the rule says)."""
    new, _ = transform(json.dumps(doc), doc, rule_root, lambda v, rule: v.upper())
    return json.loads(new)


def test_generic_masks_every_key_and_value_whatever_it_is_called() -> None:
    """An unknown field is read as whatever it holds (issue 15 case 1): `data`, `id` and
    `type` included, and its keys too (a member's name may be an original)."""
    doc = {"type": "t", "id": "i", "text": "x", "nested": [{"call_id": "c", "note": "n"}],
           "blob": {"type": "image", "data": "b64"}, "key": "v"}  # fmt: skip
    got = upper(GENERIC, doc)
    assert got == {"TYPE": "T", "ID": "I", "TEXT": "X", "NESTED": [{"CALL_ID": "C", "NOTE": "N"}],
                   "BLOB": {"TYPE": "IMAGE", "DATA": "B64"}, "KEY": "V"}  # fmt: skip
    assert upper(GENERIC, {"data": "d"}) == {"DATA": "D"}


def test_an_object_with_known_fields_skips_type_and_cache_control_not_unknown_members() -> None:
    rule = obj({"text": VALUES})
    got = upper(rule, {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}, "other": "b"})
    assert got == {"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}, "OTHER": "B"}  # unknown: key too


def test_schema_masks_names_and_prose_not_vocabulary() -> None:
    schema = {"type": "object", "title": "t", "description": "d", "format": "email",
              "properties": {"name": {"type": "string", "enum": ["a", {"k": "v"}], "description": "x"}},
              "required": ["name"], "items": [{"type": "string", "default": "dv"}],
              "dependencies": {"name": ["other"], "p2": {"properties": {"q": {"type": "string"}}}}}  # fmt: skip
    got = upper(SCHEMA, schema)
    assert got["type"] == "object" and got["format"] == "email"
    assert got["title"] == "T" and got["description"] == "D"
    assert list(got["properties"]) == ["NAME"] and got["properties"]["NAME"]["type"] == "string"
    assert got["properties"]["NAME"]["enum"] == ["A", {"K": "V"}]  # user JSON: keys too
    assert got["required"] == ["NAME"] and got["items"] == [{"type": "string", "default": "DV"}]
    assert got["dependencies"] == {"NAME": ["OTHER"], "P2": {"properties": {"Q": {"type": "string"}}}}


def test_shape_dispatches_on_the_json_type() -> None:
    rule = Obj({"f": Shape(Obj({"a": SKIP}, default=VALUES), Arr(SKIP), VALUES)})
    assert upper(rule, {"f": {"a": "x", "b": "y"}}) == {"f": {"a": "x", "b": "Y"}}
    assert upper(rule, {"f": ["x"]}) == {"f": ["x"]}
    assert upper(rule, {"f": "x"}) == {"f": "X"}


def test_vocabulary_leaves_the_apis_words_and_masks_anything_else() -> None:
    rule = Obj({"choice": Vocabulary(("auto", "none"))})
    assert upper(rule, {"choice": "auto"}) == {"choice": "auto"}
    assert upper(rule, {"choice": "my_tool"}) == {"choice": "MY_TOOL"}


# -- one reader of a string (fields.read): the masker, the leak guard and the audit -------

_ORIG = "bob@corp.example.com"
_B64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
SHAPES = {  # a string in each shape, its rule, how read() reads it
    "text": (lambda t: t, jsonspan.VALUES, None),
    "json": (lambda t: json.dumps({"to": t, "cc": [t]}), jsonspan.JSON_TEXT, As.JSON),
    "loose": (lambda t: '{"to": "' + t.replace("@", "\\u0040") + '", "cc": ', jsonspan.JSON_TEXT, As.LOOSE),
    "base64": (lambda t: _B64(t * 2), GENERIC, As.MEDIA),
    "data-url": (lambda t: "data:text/plain;base64," + _B64(t), GENERIC, As.MEDIA),
    "data-url-json": (lambda t: "data:application/json;base64," + _B64(json.dumps({"to": t})), GENERIC, As.MEDIA),
    "declared": (lambda t: _B64(t), fields.media_text("text/plain"), As.MEDIA),
    "binary": (lambda t: base64.b64encode(b"\x81\xff" + t.encode()).decode(),
               fields.MediaText(fields.base64_codec("application/x-unknown")), As.BINARY),  # fmt: skip
}


def _read_by_texts(v: str, rule) -> list[str]:
    return [t for _, t, _ in texts(v, rule)]


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), before=st.text("ab ,:", max_size=6), after=st.text("ab ,.", max_size=6))
def test_one_reader_read_three_ways(shape: str, before: str, after: str) -> None:
    """read() decides how a string is read; the masker (masking.reads: what its one scan
    looks at, mask_fn: what it masks) and texts() (the leak guard, the audit) follow it:
    the scan looks at every text texts() reports, and what mask_fn leaves holds none."""
    make, rule, how = SHAPES[shape]
    v = make(before + _ORIG + after)
    if how is None:
        assert plain(v, rule)
    else:
        assert not plain(v, rule) and read(v, rule).how is how
    pieces: list[str] = []
    masking.reads(v, rule, None, pieces)
    for t in _read_by_texts(v, rule):
        assert any(t in p for p in pieces), (shape, t, pieces)
    found = [t for t in _read_by_texts(v, rule) if RULES.find(t)]
    masked = masking.as_text(v, masking.mask_fn(RULES, Session())(v, rule, None))
    assert (masked != v) == bool(found), shape
    assert not [t for t in _read_by_texts(masked, rule) if RULES.find(t)], shape
