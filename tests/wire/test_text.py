"""Text helpers (wire/text.py) against the plainest definitions: a JSON string body that
json.loads reads back (UTF-8 kept, lone surrogates escaped), UTF-8 that carries lone
surrogates through, and byte offsets turned into character offsets."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import engine
from disguiselib.wire import text
from disguiselib.wire.text import char_offsets, decode, is_utf8, json_escape, json_literal, utf8

# Every code point, lone surrogates included (a delta may end with half of a pair).
ANY = st.characters(codec=None, categories=None)
any_text = st.text(ANY, max_size=30)
# The characters the helpers treat specially, often.
_special = st.sampled_from(['"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "/", "é", "€", "😀", "\ud83d", "\ude00", "\u2028"])
texts = st.lists(st.one_of(_special, ANY, st.text(alphabet="ab ", max_size=3)), max_size=20).map("".join)


# -- json_escape -------------------------------------------------------------------------


@given(st.one_of(texts, any_text))
@example("\ud83d")  # half of a pair, alone
@example("\ude00\ud83d")  # the halves in the wrong order: two lone surrogates
@example('say "C:\\x"\n')
@example("\ud83d\ude00")  # two halves in order, each alone: JSON can only say them as one pair
def test_json_escape_is_read_back_by_json(s: str) -> None:
    body = json_escape(s)
    # A high half followed by a low half reads back as the character they make (a pair
    # cut between two deltas and held together is the character the provider sent).
    joined = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    assert json.loads('"' + body + '"') == joined
    body.encode("utf-8")  # strict: no surrogate is left raw
    assert '"' not in body.replace('\\"', "").replace("\\\\", "")


@given(texts)
def test_json_escape_keeps_utf8_and_escapes_only_what_json_must(s: str) -> None:
    body = json_escape(s)
    if not any(0xD800 <= ord(c) < 0xE000 for c in s):
        assert body == json.dumps(s, ensure_ascii=False)[1:-1]
    for c in s:
        if ord(c) >= 0x80 and not 0xD800 <= ord(c) < 0xE000:
            assert c in body  # non-ASCII stays itself, not a \\u escape


@given(st.lists(st.tuples(texts, st.integers(0, 300), st.booleans(), st.booleans()), max_size=12))
def test_json_literal_is_the_literal_of_its_text_in_either_style(calls) -> None:
    """json_literal's memo (by identity, for texts of LITERAL_MEMO_SIZES) gives what
    encoding gives, whichever texts and styles came before, equal texts of another
    identity included."""
    made: list[str] = []
    for t, times, ascii_only, again in calls:
        v = made[-1] if again and made else "".join([t] * times) or t
        made.append(v)
        want = json.dumps(v) if ascii_only else '"' + json_escape(v) + '"'
        assert json_literal(v, ascii_only) == want
        assert json_literal(v, ascii_only) == want
        assert json_literal(v + "", not ascii_only) == (json.dumps(v) if not ascii_only else '"' + json_escape(v) + '"')


def test_json_literal_encodes_a_long_text_said_again_once() -> None:
    v = "é Acme " * 100
    first = json_literal(v, False)
    assert json_literal(v, False) is first  # remembered (a Responses text said four times)
    assert json_literal(v, True) == json.dumps(v)
    small, huge = "é" * 10, "é" * (text.LITERAL_MEMO_SIZES[1] + 1)
    assert json_literal(small, False) is not json_literal(small, False)  # too short to hold
    assert json_literal(huge, False) is not json_literal(huge, False)  # too long to hold


def test_json_escape_examples() -> None:
    assert json_escape('a"b\\c\nd\te') == 'a\\"b\\\\c\\nd\\te'
    assert json_escape("\x00\x1f") == "\\u0000\\u001f"
    assert json_escape("é😀/") == "é😀/"  # UTF-8 as it is; `/` needs no escape
    assert json_escape("x\ud83d") == "x\\ud83d"  # a lone surrogate: as a \u escape, lower case
    assert json_escape("\ude00y") == "\\ude00y"
    assert json_escape("😀"[0]) == "😀"[0]  # a whole astral character is not a surrogate
    assert json_escape("") == ""


# -- utf8 / decode ----------------------------------------------------------------------


@given(st.one_of(texts, any_text))
@example("\ud83d")
def test_utf8_round_trips_every_text_lone_surrogates_included(s: str) -> None:
    b = utf8(s)
    assert decode(b) == s
    if not any(0xD800 <= ord(c) < 0xE000 for c in s):
        assert b == s.encode("utf-8")
        assert decode(b) == b.decode("utf-8")


def test_a_lone_surrogate_is_its_three_byte_form() -> None:
    assert utf8("\ud83d") == b"\xed\xa0\xbd"
    assert utf8("a\ude00") == b"a\xed\xb8\x80"
    assert decode(b"\xed\xa0\xbd") == "\ud83d"
    # the two halves, each alone, are not the pair's 4-byte form (and not joined to it)
    assert utf8("\ud83d\ude00") == b"\xed\xa0\xbd\xed\xb8\x80" != utf8("😀") == b"\xf0\x9f\x98\x80"
    assert decode(b"\xed\xa0\xbd\xed\xb8\x80") == "\ud83d\ude00"


# -- char_offsets -----------------------------------------------------------------------


@given(st.one_of(texts, any_text), st.data())
def test_char_offsets_is_the_character_count_before_each_byte_offset(s: str, data) -> None:
    """For character positions (increasing, repeats allowed), their byte offsets map
    back to them."""
    chars = sorted(data.draw(st.lists(st.integers(0, len(s)), max_size=8)))
    b = utf8(s)
    byte_offs = [len(utf8(s[:i])) for i in chars]
    assert char_offsets(b, byte_offs) == chars


def test_char_offsets_examples() -> None:
    b = utf8("aé😀\ud83db")  # 1 + 2 + 4 + 3 + 1 bytes
    assert char_offsets(b, [0, 1, 3, 7, 10, 11]) == [0, 1, 2, 3, 4, 5]
    assert char_offsets(b, [3, 3, 7]) == [2, 2, 3]  # repeats: one pass still
    assert char_offsets(b, iter([7, 11])) == [3, 5]  # any iterable
    assert char_offsets(b"", []) == []
    assert char_offsets(b"abc", [2]) == [2]


@pytest.mark.skipif(text.c_char_offsets is None, reason=f"not compiled ({engine.describe()})")
@settings(max_examples=300)
@given(st.one_of(texts, any_text), st.data())
@example("ab€" * 3 + "😀", None)  # eight bytes at a time, then one by one
def test_the_typed_char_offsets_are_the_references(s: str, data) -> None:
    """The compiled pass (wire/_tokenmap.pyx: continuation bytes counted eight at a time)
    gives the reference's offsets at every character's start; any other offset
    (decreasing, inside a character, past the end) it leaves to the reference, which
    answers or raises as before."""
    b = utf8(s)
    starts = [len(utf8(s[:i])) for i in range(len(s) + 1)]
    offs = sorted(data.draw(st.lists(st.sampled_from(starts), max_size=12))) if data else starts
    assert text.c_char_offsets(b, offs) == text.py_char_offsets(b, offs) == char_offsets(b, offs)
    inside = [i for i in range(len(b)) if i not in set(starts)]
    for odd in ([*offs[1:], 0] if len(offs) > 1 and offs[-1] > 0 else [], inside[:1], [len(b) + 1]):
        if not odd:
            continue
        assert text.c_char_offsets(b, odd) is None
        try:
            want: object = text.py_char_offsets(b, odd)
        except UnicodeDecodeError as e:
            want = type(e)
        try:
            got: object = char_offsets(b, odd)
        except UnicodeDecodeError as e:
            got = type(e)
        assert got == want


@pytest.mark.skipif(text.c_char_offsets is None, reason=f"not compiled ({engine.describe()})")
def test_char_offsets_takes_the_typed_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the compiled engine runs, char_offsets is the typed pass (the find()s of the
    texts that are not ASCII, left_over's places: ~0.6 ms of the 1 MB body's first
    request by decoding)."""
    calls: list[int] = []
    real = text.c_char_offsets
    monkeypatch.setattr(text, "c_char_offsets", lambda b, o: calls.append(1) or real(b, o))
    assert char_offsets(utf8("aé😀b"), [0, 1, 3, 7]) == [0, 1, 2, 3] and calls == [1]


@given(st.binary(max_size=12))
@example(b"plain ascii")
@example("é😀".encode())
@example(b"\xff")
@example("\ud83d".encode("utf-8", "surrogatepass"))  # a lone surrogate's 3 bytes: not UTF-8
def test_is_utf8_is_decoding_without_error(b: bytes) -> None:
    try:
        b.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    assert is_utf8(b) is ok


def test_a_left_out_list_reads_as_its_texts_in_its_place() -> None:
    """left_out_texts: each LeftOut its list's texts, where it is; seen itself where it
    holds none. A LeftOut is equal to another of the same list object (not an equal list),
    rule and length, and is hashed by its list (a guard's run may be made a set)."""
    items = ["a", "b"]
    whole = text.LeftOut(items, "rule", 2)
    seen = ["k", whole, "z"]
    assert text.left_out_texts(seen) == ["k", "a", "b", "z"]
    plain = ["k", "z"]
    assert text.left_out_texts(plain) is plain
    assert whole == text.LeftOut(items, "rule", 2) and whole != text.LeftOut(["a", "b"], "rule", 2)
    assert whole != text.LeftOut(items, "other", 2) and whole != text.LeftOut(items, "rule", 3) and whole != "a"
    assert {whole, text.LeftOut(items, "rule", 2)} == {whole} and "a" not in repr(whole)
