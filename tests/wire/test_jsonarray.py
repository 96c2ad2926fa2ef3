"""The streamed-JSON-array framer: exact bytes, whole elements, at any fragmentation."""

from __future__ import annotations

import json

import pytest
from google_util import GEMINI_FIXTURES
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.errors import StreamError
from disguiselib.wire.jsonarray import ELEMENT, END, SEP, ArrayError, ArrayFramer
from strategies import byte_splits

# Strings full of what a scanner could mistake for structure: brackets, braces, quotes,
# backslashes, commas, colons, and characters whose UTF-8 or escapes span several bytes.
_CHARS = list('ab{}[]",:\\/ \n\t') + ["é", "😀", "\u2028", "\x00", "\ud83d"]
json_str = st.lists(st.sampled_from(_CHARS), max_size=8).map("".join)
scalars = (
    st.none() | st.booleans() | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | json_str
)  # fmt: skip
values = st.recursive(
    scalars, lambda ch: st.lists(ch, max_size=3) | st.dictionaries(json_str, ch, max_size=3), max_leaves=10
)
objects = st.dictionaries(json_str, values, max_size=4)
ws = st.text(alphabet=" \t\r\n", max_size=3)


@st.composite
def arrays(draw) -> tuple[bytes, list[dict]]:
    """A JSON array of objects in a random but valid layout, and its objects."""
    objs = draw(st.lists(objects, max_size=5))
    ascii_ = draw(st.booleans())
    indent = draw(st.sampled_from([None, 0, 2]))
    parts = [draw(ws), "["]
    for i, o in enumerate(objs):
        if i:
            parts += [draw(ws), ",", draw(ws)]
        else:
            parts.append(draw(ws))
        parts.append(json.dumps(o, ensure_ascii=ascii_, indent=indent))
    parts += [draw(ws), "]", draw(ws)]
    text = "".join(parts)
    return text.encode("utf-8", "surrogatepass"), objs


def frame(pieces: list[bytes]) -> tuple[list[tuple[int, bytes]], bytes]:
    f = ArrayFramer()
    out = []
    for p in pieces:
        out.extend(f.feed(p))
    return out, f.flush()


def elements(out: list[tuple[int, bytes]]) -> list[bytes]:
    return [raw for kind, raw in out if kind == ELEMENT]


def loads(raw: bytes) -> object:
    return json.loads(raw.decode("utf-8", "surrogatepass"))


@given(arrays(), st.data())
@example((b'[{"a": "]}\\"[{"}\n,\r\n{"b": [1, {"c": "\\\\"}]}\n]', [{"a": ']}"[{'}, {"b": [1, {"c": "\\"}]}]), None)
def test_pieces_are_the_input_and_elements_are_whole_at_any_fragmentation(arr, data) -> None:
    body, objs = arr
    cuts = [body] if data is None else data.draw(byte_splits(body, 40))
    out, rest = frame(cuts)
    assert rest == b""
    assert b"".join(raw for _, raw in out) == body  # nothing lost, nothing added, in order
    assert [loads(e) for e in elements(out)] == objs
    assert [k for k, _ in out].count(END) == 1
    assert all(k == SEP for k, _ in out[[k for k, _ in out].index(END) + 1 :])
    for kind, raw in out:
        if kind == SEP:
            assert set(raw) <= set(b" \t\r\n[,"), raw


@given(arrays())
def test_one_byte_at_a_time_gives_the_same_elements(arr) -> None:
    body, objs = arr
    out, _ = frame([body[i : i + 1] for i in range(len(body))])
    whole, _ = frame([body])
    assert elements(out) == elements(whole)
    assert b"".join(raw for _, raw in out) == body


def test_recorded_stream_one_byte_at_a_time() -> None:
    body = (GEMINI_FIXTURES / "stream_json_array.json").read_bytes()
    out, rest = frame([body[i : i + 1] for i in range(len(body))])
    assert rest == b"" and b"".join(raw for _, raw in out) == body
    assert [loads(e) for e in elements(out)] == json.loads(body)


# Every way a byte stream can fail to be an array of objects is refused, and whenever the
# framer accepts a stream to its end and each element parses, the whole is valid JSON.
_TOKENS = ["[", "]", "{", "}", ",", " ", "\r\n", '"', '"x"', '"]"', '"\\"', "1", "{}", '{"a":1}', '{"a":"}"}', "null", "x"]


@given(st.lists(st.sampled_from(_TOKENS), max_size=10), st.data())
def test_accepted_streams_are_json_arrays_of_objects(tokens, data) -> None:
    body = "".join(tokens).encode()
    try:
        out, rest = frame(data.draw(byte_splits(body, 8)))
        f_done = any(k == END for k, _ in out)
    except StreamError:
        try:
            doc = json.loads(body)
        except ValueError:
            return
        assert not (isinstance(doc, list) and all(isinstance(o, dict) for o in doc)), body
        return
    assert b"".join(raw for _, raw in out) + rest == body
    els = elements(out)
    parsed = []
    for e in els:
        try:
            parsed.append(json.loads(e))
        except ValueError:
            return  # an element the framer cut but json rejects: its parser refuses it later
    if f_done and not rest:
        assert json.loads(body) == parsed, body
    try:
        doc = json.loads(body)
    except ValueError:
        return
    if isinstance(doc, list) and all(isinstance(o, dict) for o in doc):
        assert f_done and parsed == doc


_TRICKY = [*_TOKENS, '"},{"', '"}\n,\r\n{"', '{"a":"\\"}"}', '{"a":"\\\\"}', "}\n,\r\n{", '"\\u007d"', "[{", "}]", "]"]


def _outcome(pieces: list[bytes]) -> tuple:
    """Element pieces and the error (kind and offset), whatever the cutting."""
    f = ArrayFramer()
    els: list[bytes] = []
    try:
        for p in pieces:
            els.extend(raw for kind, raw in f.feed(p) if kind == ELEMENT)
    except ArrayError as e:
        els.extend(raw for kind, raw in e.pieces if kind == ELEMENT)
        return els, str(e)
    return els, f.flush()


@given(st.lists(st.sampled_from(_TRICKY), max_size=12), st.data())
def test_the_fast_path_and_the_scanner_cut_the_same_even_on_invalid_input(tokens, data) -> None:
    # whole reads take the fast path (an element found at C speed, then checked); one
    # byte at a time always takes the scanner: both must give the same elements and the
    # same error, on any input
    body = ("[" + "".join(tokens)).encode()
    whole = _outcome([body])
    assert whole == _outcome([body[i : i + 1] for i in range(len(body))])
    assert whole == _outcome(data.draw(byte_splits(body, 6)))


@pytest.mark.parametrize(
    ("body", "offset"),
    [(b"x", 0), (b'  {"a":1}', 2), (b"[1]", 1), (b'["a"]', 1), (b"[{},]", 4), (b"[{}{}]", 3),
     (b"[{}] x", 5), (b"[{} ,, {}]", 5), (b"[[{}]]", 1), (b"]", 0)],
)  # fmt: skip
def test_what_is_not_an_array_of_objects_is_refused_with_its_offset(body: bytes, offset: int) -> None:
    for pieces in ([body], [body[i : i + 1] for i in range(len(body))]):
        with pytest.raises(StreamError, match=f"at offset {offset} "):
            frame(pieces)


def test_an_element_cut_short_is_returned_by_flush() -> None:
    f = ArrayFramer()
    assert [k for k, _ in f.feed(b'[{"a": "x"},\n{"b": "[')] == [SEP, ELEMENT, SEP]
    assert f.inside and not f.done
    assert f.flush() == b'{"b": "['


def test_states() -> None:
    f = ArrayFramer()
    assert not f.started
    f.feed(b" [")
    assert f.started and not f.inside
    f.feed(b"{")
    assert f.inside
    f.feed(b"}]")
    assert f.done


def test_an_escape_cut_between_reads_does_not_end_the_string() -> None:
    body = b'[{"a": "x\\"}, {]"}]'
    for i in range(1, len(body)):
        out, _ = frame([body[:i], body[i:]])
        assert [loads(e) for e in elements(out)] == [{"a": 'x"}, {]'}], i


def test_element_limit_is_an_explicit_error() -> None:
    f = ArrayFramer(max_element_bytes=100)
    f.feed(b'[{"a": "' + b"x" * 50)
    with pytest.raises(StreamError, match="exceeds 100 bytes"):
        f.feed(b"x" * 60)
