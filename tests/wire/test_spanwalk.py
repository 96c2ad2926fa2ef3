"""The compiled span walk (wire/_spanwalk.pyx) against its reference, jsonspan.walk:
the same edits, marks, string places and document places on every text, in every
spelling (escapes, non-ASCII of each width, indentation), with every rule shape the
field model uses, and the same errors. Where the compiled part is not built (no
compiler, DISGUISE_ENGINE=python) the reference runs and there is nothing to compare."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disguiselib import engine
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat, responses
from disguiselib.base import fields
from disguiselib.errors import MaskError
from disguiselib.wire import jsonspan, spanwalk
from disguiselib.wire.jsonspan import SKIP, USER, VALUES, Arr, Either, Obj, Typed
from disguiselib.wire.text import LeftOut, left_out_texts

# An object's string values alone (VALUES itself reads an object's keys too: Rule.tree)
TEXTS = Obj({}, default=VALUES)

needs_c = pytest.mark.skipif(spanwalk.c_walk is None, reason=f"no compiled span walk ({engine.describe()})")

_chars = st.characters(blacklist_categories=("Cs",)) | st.sampled_from('"\\/\n\té€😀\x00{}[]:,')
_text = st.text(_chars, max_size=8)
_scalars = st.one_of(_text, st.integers(), st.floats(allow_nan=False), st.none(), st.booleans())
_json = st.recursive(
    _scalars,
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "type", "t\\", "é"]) | _text, c, max_size=4)),
    max_leaves=24,
)
class _ByValue(jsonspan.Rule):
    """Each element's rule told by the element itself (a resolve of its own): a string of
    odd length is not read, and an array's strings are read by one or the other in turn
    (what the compiled walk reads once for a run of one rule must not carry over)."""

    def resolve(self, value: object) -> jsonspan.Rule:
        return SKIP if isinstance(value, str) and len(value) % 2 else VALUES

    def child(self, key: str | int) -> jsonspan.Rule:
        return self


_rules = st.sampled_from([
    _ByValue(), Arr(_ByValue()),
    VALUES, USER, SKIP,
    Obj({"a": SKIP, "b": USER}, default=VALUES),
    Obj({"a": VALUES}, default=SKIP, keys=True),
    Arr(Obj({}, default=VALUES, keys=True)),
    Typed({"x": Obj({"b": SKIP}, default=USER)}, default=VALUES),
    Either(VALUES, Arr(USER)),
    anthropic.MESSAGES_REQUEST, chat.CHAT_REQUEST, responses.RESPONSES_REQUEST,
])  # fmt: skip


def run(walk, s: str, doc: object, rule) -> tuple:
    """Everything a walk hands out: its edits, marks, where, at (containers by identity)
    and every (value, rule) fn was called with; or the error it raised."""
    calls: list = []
    where: list = []
    at: list = []
    marks: list = []

    def fn(v: str, r) -> str | jsonspan.Spans:
        calls.append((v, r))
        if len(v) % 3 == 1:
            return jsonspan.Spans([(0, 1, "[X_1]")])
        return v.upper() if len(v) % 3 == 2 else v

    try:
        edits = walk(s, doc, rule, fn, marks=marks, where=where, at=at)
    except (MaskError, KeyError, IndexError, TypeError) as e:
        return ("error", type(e), len(calls))
    return edits, marks, where, [(id(o), k, is_key) for o, k, is_key in at], calls


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _rules, st.sampled_from([None, 1]), st.booleans(), st.booleans())
@example(["ab", "abc", "abcd", "x"], Arr(_ByValue()), None, True, False)  # one rule, strings read or not in turn
def test_compiled_walk_is_the_reference(doc, rule, indent, ascii, parsed_by_fields) -> None:
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    d = fields.loads(s) if parsed_by_fields else json.loads(s)
    assert run(spanwalk.c_walk, s, d, rule) == run(spanwalk.py_walk, s, d, rule)


@needs_c
@pytest.mark.parametrize(
    "s",
    [
        '{"a": "x", "a": ["y"]}',  # a repeated key of another shape: both raise alike
        '{"a": "x", "a": "yy"}',
        '{"a": "xy", "a": "yz"}',  # the document holds the last: the first is read from the text
        '{"k\\u00e9y": "v\\"\\\\", "b": [[["deep"]], {"c": "\\ud83d\\ude00"}]}',
        '  [ "a" , [ ] , { } , "b\\n" ]  ',
        '"top"',
        '{"thinking": {"skip": "[{\\"}"}, "x": 1}',
    ],
)
def test_compiled_walk_is_the_reference_on_edges(s: str) -> None:
    for rule in (USER, VALUES, Obj({"thinking": SKIP}, default=USER)):
        for d in (json.loads(s), fields.loads(s)):
            assert run(spanwalk.c_walk, s, d, rule) == run(spanwalk.py_walk, s, d, rule)


@needs_c
@pytest.mark.parametrize("stop", ['"', "\\", "\u2022", "\u5c22", "\u225c"])  # the last three: neither, in one lane
def test_a_string_in_two_byte_text_ends_where_the_reference_says_at_every_place(stop: str) -> None:
    """A body with a character above 0xFF (read in a loop typed for two-byte text): a
    quote or a backslash (escaped, in the text) at each place of strings of every length
    to 13, before another string and inside a subtree a rule skips: the compiled walk is
    the reference's. (Read four characters a word, the walk was no faster: 2.2-2.4 ms the
    1 MB body either way.)"""
    for n in range(13):
        for at in range(n + 1):
            v = "\u20ac" * (at % 2) + "a" * at + stop + "b" * (n - at)
            s = json.dumps({"k": v, "thinking": [v, {"x": v}], "z": "\u20ac" + v}, ensure_ascii=False)
            d = json.loads(s)
            for rule in (USER, Obj({"thinking": SKIP}, default=USER)):
                assert run(spanwalk.c_walk, s, d, rule) == run(spanwalk.py_walk, s, d, rule), (n, at)


@needs_c
def test_a_string_value_is_handed_over_as_the_documents_own_string() -> None:
    """No copy of a string value the document holds already (a 200 MB body's one
    string is not held twice); a value that differs from the document's is read from
    the text."""
    big = "Acme " * 1000
    doc = {"a": big, "b": "x"}
    s = json.dumps(doc)
    seen: list = []
    spanwalk.c_walk(s, doc, TEXTS, lambda v, r: seen.append(v) or v)
    assert seen[0] is big and seen == [big, "x"]
    seen.clear()
    for other in ("other", big.replace("A", "B"), big.replace("A", "\u0100")):
        seen.clear()
        spanwalk.c_walk(s, {"a": other, "b": "x"}, TEXTS, lambda v, r: seen.append(v) or v)
        assert seen == [big, "x"]


# text with every escape json writes: quotes, backslashes, controls, non-ASCII, lone and
# paired surrogates (json.dumps writes \\u escapes for them with ensure_ascii, and keeps
# a lone one as \\u escape always)
_escapable = st.text(st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f a\u00e9\u0100\u20ac\U0001f600\ud800\udfff\udbff\udc00'), max_size=12)


@needs_c
@settings(max_examples=300, deadline=None)
@given(_escapable, st.booleans(), st.integers(0, 11), st.sampled_from(["x", "\n", "\ud800", "", "\U0001f600"]))
def test_a_string_with_escapes_is_handed_over_as_the_documents_own_when_it_is_its_text(text, ascii, at, other) -> None:
    """A string token with escapes, decoded in place and compared with the document's
    string: that very object where it is the token's text (no second copy of a tool
    result's source code); otherwise (the document's string differs by one character,
    is longer or shorter) the token's text as json reads it, never the document's."""
    s = json.dumps({"k": text}, ensure_ascii=ascii)
    doc = json.loads(s)
    seen: list = []
    spanwalk.c_walk(s, doc, TEXTS, lambda v, r: seen.append(v) or v)
    read = doc["k"]  # the token's text as json reads it (two lone surrogates written apart: one code point)
    assert seen == [read] and (seen[0] is read or "\\" not in s)
    for wrong in {read[:at] + other + read[at + 1 :], read + other, read[:-1]} - {read}:
        seen.clear()
        spanwalk.c_walk(s, {"k": wrong}, TEXTS, lambda v, r: seen.append(v) or v)
        assert seen == [read]  # (the token's text, not the document's, which differs from it)


@needs_c
@pytest.mark.parametrize("wide", ["", "\u00e9", "\u20ac", "\U0001f600"])  # the body's width (a character elsewhere in it)
@pytest.mark.parametrize("own", ["", "\u00e9", "\u20ac", "\U0001f600"])  # the string's own width
def test_a_long_run_between_escapes_is_compared_with_the_documents_string_at_every_place(wide: str, own: str) -> None:
    """A string with escapes whose runs between them are long (source code: a line, then
    `\\n`), in a body of each width holding a string of each width: handed over as the
    document's own string where it is the token's text; where the document's differs in
    any one character of a run, or is one longer or shorter, the token's text as json
    reads it, never the document's."""
    text = "x" * 17 + own + "\n" + "y" * 23 + "\t" + "z" * 9
    s = json.dumps({"w": wide, "k": text}, ensure_ascii=False)
    doc = json.loads(s)
    read = doc["k"]
    seen: list = []
    spanwalk.c_walk(s, doc, TEXTS, lambda v, r: seen.append(v) or v)
    assert seen[1] is read
    for at in range(len(read)):
        for other in {"q", "\u0101", "\U0001f601"} - {read[at]}:
            for wrong in (read[:at] + other + read[at + 1 :], read[:at] + read[at + 1 :], read[:at] + other + read[at:]):
                seen.clear()
                spanwalk.c_walk(s, {"w": doc["w"], "k": wrong}, TEXTS, lambda v, r: seen.append(v) or v)
                assert seen[1] == read and seen[1] is not wrong, (at, other)


@needs_c
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _rules, st.sampled_from([None, 1]), st.booleans())
def test_transform_through_the_compiled_walk_is_jsonspan_transform(doc, rule, indent, ascii) -> None:
    """spanwalk.transform (what whole-text events are restored with, base/restore.py)
    gives the bytes jsonspan.transform gives, with the fn run() uses (values, Spans)."""
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    d = json.loads(s)

    def fn(v: str, r) -> str | jsonspan.Spans:
        if len(v) % 3 == 1:
            return jsonspan.Spans([(0, 1, "[X_1]")])
        return v.upper() * 100 if len(v) % 3 == 2 else v  # long: through text.json_literal's memo

    try:
        want = jsonspan.transform(s, d, rule, fn)
    except (MaskError, KeyError, IndexError, TypeError) as e:
        with pytest.raises(type(e)):
            spanwalk.transform(s, d, rule, fn)
        return
    assert spanwalk.transform(s, d, rule, fn) == want


@needs_c
def test_a_whole_text_event_is_restored_through_the_compiled_walk() -> None:
    """restore_doc hands the restorer the document's own long string (no second decode
    of a 16 kB `*.done` text): the compiled walk, not jsonspan.walk compiled as Python."""
    from disguiselib.base import restore

    big = "Acme \u00e9 " * 100
    doc = {"type": "response.output_text.done", "text": big}
    s = json.dumps(doc, ensure_ascii=False)
    seen: list = []

    class Spy:
        documents: dict = {}  # no request document to move citations into (base/offsets.py)

        def text(self, v: str) -> str:
            seen.append(v)
            return v

        value = json_text = text

    restore.restore_doc(s, doc, Obj({"text": jsonspan.PROSE}, default=SKIP), Spy())  # type: ignore[arg-type]
    assert seen and seen[0] is big


def test_the_walk_is_chosen_once_by_the_engine() -> None:
    assert spanwalk.walk is (spanwalk.c_walk or spanwalk.py_walk)
    assert (spanwalk.c_walk is not None) == (engine.NAME == "compiled")


# -- collect: the masker's first walk, in bulk ------------------------------------------

# strings each reading of fields.read meets: JSON text, text that only begins like it,
# text media and base64 (sniffed in an unknown field), `data:` URLs, percent-encoded text
# (an escape, one cut short or not hex, a URL's `+`, a `+` or `://` alone), plain text
_readings = st.sampled_from([
    '{"k": "Acme Corp"}', ' [1, "x"]', "[C:\\Users", "{", "data:text/plain;base64,QWNtZSBDb3Jw",
    "DATA:image/png;base64,iVBORw0KGgo=", "QWNtZSBDb3JwIHdyb3RlIGl0", "QWNtZSBDb3JwIHdyb3RlIGl0IQ==",
    "abcdefghijklmnop_-", "dog days", "Écrit", "a b", "",
    "https://x.example/a?who=Acme%20Corp", "Acme%2fCorp", "100%", "50%2", "%zz", "%C3%A9t%E9",
    "https://x.example/?q=Acme+Corp", "C++ rocks", "see http://x", "a:/+/b", "%41",
])  # fmt: skip
_json_r = st.recursive(
    st.one_of(_text, _readings, st.integers(), st.none()),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "data"]) | _readings | _text, c, max_size=4)),
    max_leaves=16,
)


def collected(collect, s: str, doc: object, rule) -> tuple:
    from disguiselib.base import masking

    pieces: list = []
    owner = array("q")
    try:
        t = collect(s, doc, rule, pieces, masking.reads, fields.plain, fields.key_context, owner, True)
    except (MaskError, KeyError, IndexError, TypeError) as e:
        return ("error", type(e))
    return (t.vals, t.rules, t.keys, t.spans, [id(o) for o in t.owners], t.slots, pieces, owner)


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json | _json_r, _rules | st.just(fields.GENERIC), st.sampled_from([None, 1]), st.booleans(), st.booleans())
@example(["ab", "abc", "abcd", "x"], Arr(_ByValue()), None, True, False)
def test_compiled_collect_is_the_reference(doc, rule, indent, ascii, parsed_by_fields) -> None:
    """The same strings, keys, places, pieces read and owners; the compiled one answers
    fields.plain itself for the plain strings (JSON-looking, `data:` and base64 strings
    are here to tell it wrong)."""
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    d = fields.loads(s) if parsed_by_fields else json.loads(s)
    assert collected(spanwalk.c_collect, s, d, rule) == collected(spanwalk.py_collect, s, d, rule)


def _hot(s: str, marks: list[int]) -> array:
    """Spans of s (rules/rawscan.hot's form): each mark a start, the next its end."""
    cuts = sorted({m % (len(s) + 1) for m in marks})
    return array("q", cuts[: len(cuts) // 2 * 2])


def collected_cold(collect, s: str, doc: object, rule, hot: array) -> tuple:
    seen: list = []
    from disguiselib.base import masking

    pieces: list = []
    owner = array("q")
    try:
        t = collect(s, doc, rule, pieces, masking.reads, fields.plain, fields.key_context, owner, True, hot, seen)
    except (MaskError, KeyError, IndexError, TypeError) as e:
        return ("error", type(e))
    return (t.vals, t.rules, t.keys, t.spans, [id(o) for o in t.owners], t.slots, pieces, owner, seen)


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json | _json_r, _rules | st.just(fields.GENERIC), st.sampled_from([None, 1]), st.booleans(),
       st.lists(st.integers(0, 1 << 16), max_size=12))  # fmt: skip
@example(["ab", "a\nb", "x"], VALUES, None, True, [])
@example({"k": "v", "w": ["x"]}, USER, None, True, [1, 4])
@example({"k": ["a", "b"], "w": [["x", "y"], "z"], "v": ["d", "e\n"]}, USER, None, True, [])
@example([["ab", "cd"], ["ab", "c"]], Arr(Arr(_ByValue())), 1, True, [])
def test_compiled_collect_leaves_out_what_the_reference_leaves_out(doc, rule, indent, ascii, marks) -> None:
    """With a raw scan's marks: the same strings left out (their texts in seen, in
    order), the same tokens, keys, pieces and owners for the rest."""
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    d = fields.loads(s)
    hot = _hot(s, marks)
    assert collected_cold(spanwalk.c_collect, s, d, rule, hot) == collected_cold(spanwalk.py_collect, s, d, rule, hot)


@pytest.mark.parametrize("collect", [spanwalk.py_collect, spanwalk.c_collect], ids=["python", "compiled"])
def test_a_string_is_left_out_only_when_it_is_read_as_it_stands_alone_and_unmarked(collect) -> None:
    """Left out: a key and an element no mark reaches into. Kept: a marked string (a
    mark touching its quote), one with an escape, one read with its key, JSON text."""
    if collect is None:
        pytest.skip(f"no compiled collect ({engine.describe()})")
    doc = {"k": ["plain", "marked", "esc\n", "[1]"], "w": "keyed"}
    s = json.dumps(doc)
    d = fields.loads(s)
    m = s.index('"marked"')
    hot = array("q", [m, m + 1])  # only its opening quote
    got = collected_cold(collect, s, d, USER, hot)
    assert got[0] == ["marked", "esc\n", "[1]", "keyed"]
    assert got[-1] == ["k", "plain", "w"]


@pytest.mark.parametrize("collect", [spanwalk.py_collect, spanwalk.c_collect], ids=["python", "compiled"])
def test_an_array_all_of_whose_strings_are_left_out_is_one_left_out(collect) -> None:
    """An array every element of which is a string left out (no mark reaching into it, no
    escape, read as it is alone), read with one rule, is listed in seen as one LeftOut of
    the document's own list, in its place: not one text an element. An array holding a
    marked, escaped, JSON-looking or non-string element lists the texts left out, as
    before; an inner array left out whole is one, the array holding it not."""
    if collect is None:
        pytest.skip(f"no compiled collect ({engine.describe()})")
    doc = {"k": ["ab", "cd", "ef"], "m": ["ab", "marked"], "e": ["ab", "c\n"], "j": ["ab", "[1]"],
           "n": ["ab", 5], "x": [["ab"], "cd"], "z": [], "w": ["v"]}  # fmt: skip
    s = json.dumps(doc)
    d = fields.loads(s)
    m = s.index('"marked"')
    got = collected_cold(collect, s, d, USER, array("q", [m, m + 1]))
    whole = [t for t in got[-1] if type(t) is LeftOut]
    assert [(t.items, t.n, t.rule) for t in whole] == [(d["k"], 3, USER), (d["x"][0], 1, USER), (d["w"], 1, USER)]
    assert all(a.items is b for a, b in zip(whole, (d["k"], d["x"][0], d["w"]), strict=True))
    assert [t if type(t) is str else "<whole>" for t in got[-1]] == [
        "k", "<whole>", "m", "ab", "e", "ab", "j", "ab", "n", "ab", "x", "<whole>", "cd", "z", "w", "<whole>"]  # fmt: skip
    assert left_out_texts(got[-1])[:5] == ["k", "ab", "cd", "ef", "m"]


@pytest.mark.parametrize("collect", [spanwalk.py_collect, spanwalk.c_collect], ids=["python", "compiled"])
def test_an_array_whose_elements_rules_are_told_each_is_left_out_whole_by_the_same_rule(collect) -> None:
    """Elements whose rule their own resolve tells (no rule fixed for the array: read one
    by one): left out whole where each is read, left out, with one rule; not where one
    is not read at all (an odd length: SKIP)."""
    if collect is None:
        pytest.skip(f"no compiled collect ({engine.describe()})")
    doc = {"k": ["ab", "cd"], "o": ["ab", "c"]}
    s = json.dumps(doc)
    d = fields.loads(s)
    got = collected_cold(collect, s, d, Obj({}, default=Arr(_ByValue())), array("q"))
    assert got[-1] == [LeftOut(d["k"], VALUES, 2), "ab"]


def test_collect_is_chosen_once_by_the_engine() -> None:
    assert spanwalk.collect is (spanwalk.c_collect or spanwalk.py_collect)
    assert (spanwalk.c_collect is not None) == (engine.NAME == "compiled")


def _guard_keys(doc: object, rule) -> list:
    """The leak guard's reading (fields.walk): each selected value, with its key or None
    (not the keys: those the masker masks, and those it sends as written, fields.NAME)."""
    return [(f.value, f.key) for f in fields.walk(doc, rule) if f.rule not in (fields.NUMBER, jsonspan.KEY, fields.NAME)]


def _masker_keys(collect, s: str, doc: object, rule) -> list:
    from disguiselib.base import masking

    t = collect(s, doc, rule, [], masking.reads, fields.plain, fields.key_context, array("q"), False)
    return [(v, k) for v, r, k in zip(t.vals, t.rules, t.keys, strict=True) if r is not jsonspan.KEY]


@pytest.mark.parametrize("collect", [spanwalk.py_collect, spanwalk.c_collect], ids=["python", "compiled"])
def test_a_key_is_read_with_its_members_string_value_only(collect) -> None:
    """`"password": ["a", "b"]`: no element is read with the key (the guard reads each
    alone), nor is the string of a known member that follows a member of another kind."""
    if collect is None:
        pytest.skip(f"no compiled collect ({engine.describe()})")
    doc = {"password": ["a1", "b2"], "n": 1, "type": "t", "m": {"x": "y"}, "z": [1, "w"], "token": "v"}
    s = json.dumps(doc)
    d = fields.loads(s)
    rule = Obj({"type": VALUES}, default=USER)
    want = [("a1", None), ("b2", None), ("t", None), ("y", "x"), ("w", None), ("v", "token")]
    assert _masker_keys(collect, s, d, rule) == want == _guard_keys(d, rule)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _rules | st.just(fields.GENERIC), st.sampled_from([None, 1]), st.booleans())
@example({"k": ["a", "b"]}, USER, None, True)
@example({"k": 1, "type": "x"}, Obj({"type": VALUES}, default=USER), None, True)
def test_the_masker_reads_each_string_with_the_key_the_guard_reads_it_with(doc, rule, indent, ascii) -> None:
    """What the masker's scan reads of a string (with its key around it, or alone) is
    what the leak guard reads of it: its memo answers the guard, and a text the masker
    read otherwise is not one the guard finds something in that the masker did not."""
    s = json.dumps(doc, indent=indent, ensure_ascii=ascii)
    d = fields.loads(s)
    try:
        want = _guard_keys(d, rule)
    except (KeyError, IndexError, TypeError):
        return  # a document the rule does not fit (the walks' errors: the tests above)
    for collect in (spanwalk.py_collect, spanwalk.c_collect):
        if collect is not None:
            try:
                got = _masker_keys(collect, s, d, rule)
            except (MaskError, KeyError, IndexError, TypeError):
                continue
            assert got == want
