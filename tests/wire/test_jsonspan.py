"""The span scanner, cross-checked against json.loads; untouched bytes stay identical."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.errors import MaskError
from disguiselib.wire import jsonspan
from disguiselib.wire.jsonspan import SKIP, USER, VALUES, Arr, Obj, Skip, Typed


def upper(v: str, _prose: bool) -> str:
    return v.upper()


def run(s: str, rule, fn=upper) -> str:
    return jsonspan.transform(s, json.loads(s), rule, fn)[0]


def apply(doc, rule, fn=str.upper):
    """The reference: the same rule applied to the parsed value."""
    rule = rule.resolve(doc)
    if isinstance(doc, str):
        return fn(doc) if rule.string else doc
    if rule.skip:
        return doc
    if isinstance(doc, dict):
        return {(fn(k) if rule.keys else k): apply(v, rule.child(k), fn) for k, v in doc.items()}
    if isinstance(doc, list):
        return [apply(v, rule.child(i), fn) for i, v in enumerate(doc)]
    return doc


_scalars = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.none(), st.booleans())
_json = st.recursive(
    _scalars,
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=5), c, max_size=4)),
    max_leaves=20,
)
_rules = st.sampled_from([VALUES, USER, SKIP, Obj({"a": SKIP, "b": USER}, default=VALUES),
                          Arr(Obj({}, default=VALUES, keys=True))])


@given(_json, _rules, st.sampled_from([None, 2]), st.booleans())
def test_matches_json_loads_reference(doc, rule, indent, ascii) -> None:
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    out = run(s, rule)
    assert json.loads(out) == apply(doc, rule)


def test_unchanged_bytes_stay_identical() -> None:
    s = '{ "n": [1.0, 1e3, 12345678901234567890, -0.0],\n  "x": "\\u0041\\/b", "t": "keep", "c": "mask me" }'
    out = run(s, Obj({"c": VALUES}, default=SKIP))
    assert out == s.replace('"mask me"', '"MASK ME"')


def test_decoys() -> None:
    # "content" inside a string, braces and escaped quotes inside strings, a meta
    # object with its own content key before the real one, system after messages
    s = (
        '{"meta": {"content": "meta {stays}"}, "messages": [{"role": "user", '
        '"content": "say \\"content\\": {x} ]"}], "system": "sys"}'
    )
    whole = Skip("metadata", whole=True)  # (an exemption of one value is for no container: SKIP's)
    rule = Obj({"meta": whole, "messages": Arr(Obj({"role": SKIP, "content": VALUES})), "system": VALUES})
    out = json.loads(run(s, rule))
    assert out == {"meta": {"content": "meta {stays}"},
                   "messages": [{"role": "user", "content": 'SAY "CONTENT": {X} ]'}], "system": "SYS"}


def test_typed_dispatch_does_not_depend_on_key_order() -> None:
    rule = Arr(Typed({"thinking": Skip("opaque", whole=True)}, default=Obj({}, default=VALUES)))
    s = '[{"signature": "sig", "thinking": "t", "type": "thinking"}, {"text": "t", "type": "text"}]'
    assert json.loads(run(s, rule)) == [
        {"signature": "sig", "thinking": "t", "type": "thinking"},
        {"text": "T", "type": "TEXT"},
    ]


def test_reencoding_keeps_the_token_style() -> None:
    assert run('["a\\u00e9"]', VALUES, lambda v, p: v + "é") == '["A\\u00e9\\u00e9"]'.replace("A", "a")
    assert run('["aé"]', VALUES, lambda v, p: v + "é") == '["aéé"]'


def test_lone_surrogate_survives() -> None:
    s = '["\\ud83d x"]'
    assert run(s, VALUES) == '["\\ud83d X"]'


def test_parse_errors() -> None:
    with pytest.raises(MaskError, match="not valid JSON"):
        jsonspan.parse(b'{"a": ')
    with pytest.raises(MaskError, match="not UTF-8"):
        jsonspan.parse(b'{"a": "\xff"}')


# -- edits spliced inside a string token (jsonspan.token_edits) ------------------------

import random as _random  # noqa: E402


def _encode_variants(v: str, seed: int) -> str:
    """A JSON string token for v in one of the ways encoders write it: UTF-8 or \\u
    escapes, `\\/` for slashes, escapes for letters now and then."""
    rnd = _random.Random(seed)
    out = []
    for ch in v:
        r = rnd.random()
        if ch == "/" and r < 0.5:
            out.append("\\/")
        elif ch.isascii() and ch.isalpha() and r < 0.2:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(json.dumps(ch, ensure_ascii=r < 0.5)[1:-1])
    return '"' + "".join(out) + '"'


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from("/\\\"\n😀é"), max_size=30),
       st.integers(0, 10**6), st.data())
def test_token_edits_apply_the_decoded_edits(v: str, seed: int, data) -> None:
    token = _encode_variants(v, seed)
    assert json.loads(token) == v
    cuts = sorted(data.draw(st.lists(st.integers(0, len(v)), max_size=6)))
    pairs = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
    spans = [(a, b, data.draw(st.text(max_size=4))) for a, b in pairs]
    want, pos = [], 0
    for a, b, rep in spans:
        want.append(v[pos:a] + rep)
        pos = b
    want.append(v[pos:])
    doc = '{"k": ' + token + "}"
    out = jsonspan.splice(doc, jsonspan.token_edits(doc, 6, 6 + len(token), spans))
    assert json.loads(out) == {"k": "".join(want)}
    # what lies outside the edits keeps its bytes
    if not spans:
        assert out == doc


@given(st.lists(st.tuples(st.text(st.sampled_from("ab é😀"), max_size=3), st.text(st.sampled_from('xy"\\é\n'), max_size=3)),
                min_size=70, max_size=90), st.booleans())
def test_many_edits_in_a_token_are_one_edit_of_the_same_bytes(parts, ascii) -> None:
    """A token without escapes with more edits than _SPLICE_MAX_ESCAPES gets one edit
    holding its new text (a tuple per edit cost more than the text: a 200 MB string with
    an original every line), spelled as the per-edit splice spells it."""
    v = "".join(keep + "Acme" for keep, _ in parts)
    spans, pos = [], 0
    for (keep, rep) in parts:
        pos += len(keep)
        spans.append((pos, pos + 4, rep))
        pos += 4
    token = json.dumps(v, ensure_ascii=ascii)
    doc = '{"k": ' + token + "}"
    edits = jsonspan.token_edits(doc, 6, 6 + len(token), spans)
    assert json.loads(jsonspan.splice(doc, edits)) == {"k": jsonspan.splice(v, spans)}
    if "\\" not in token:
        assert edits == [(7, 5 + len(token), edits[0][2])]
        style = token[1:-1].isascii()  # each replacement in the token's own style
        one_by_one = jsonspan.splice(token[1:-1], [(a, b, json.dumps(r, ensure_ascii=style)[1:-1]) for a, b, r in spans])
        assert edits[0][2] == one_by_one
