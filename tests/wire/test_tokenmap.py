"""A string token with many escapes, changed (jsonspan.apply, wire/tokenmap.py): its
edits spliced into its raw text give exactly the token encoded again whole (the way it
was changed before, `encode_like`), in every spelling of its value, canonical or not;
and the compiled offsets (wire/_tokenmap.pyx) are the reference's. Where the compiled
part is not built the reference runs and there is nothing to compare."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disguiselib import engine
from disguiselib.wire import jsonspan, tokenmap
from disguiselib.wire.text import json_escape, splice

needs_c = pytest.mark.skipif(tokenmap.c_canonical_edits is None, reason=f"not compiled ({engine.describe()})")

_chars = st.characters(max_codepoint=0x1F700) | st.sampled_from('"\\/\n\r\t\b\f\x00\x1f\x7f é€😀\ud800\udfff')


def _spellings(c: str) -> list[str]:
    """Every way JSON may write the character c inside a string token."""
    out = []
    if c not in '"\\' and ord(c) >= 0x20 and not 0xD800 <= ord(c) <= 0xDFFF:
        out.append(c)
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
    if c in short:
        out.append(short[c])
    units = [ord(c)] if ord(c) < 0x10000 else [0xD800 + ((ord(c) - 0x10000) >> 10), 0xDC00 + ((ord(c) - 0x10000) & 0x3FF)]
    out.append("".join(f"\\u{u:04x}" for u in units))
    out.append("".join(f"\\u{u:04X}" for u in units))
    return out


_PAIRED = re.compile("([\ud800-\udbff])(?=[\udc00-\udfff])")


@st.composite
def _tokens(draw: st.DrawFn) -> tuple[str, str, list]:
    """(raw token text between its quotes, its value, spans to apply): the value ends in
    enough line breaks to take the many-escapes path; each character spelled as the
    encoder would (often: the canonical text) or any other way JSON allows."""
    # a high half beside a low one is one character once written (json.loads reads
    # `\ud800\udc00` as U+10000): no value json.loads gives holds them side by side
    head = _PAIRED.sub("\\1x", draw(st.text(_chars, max_size=12)))
    lines = "\n" * (jsonspan._SPLICE_MAX_ESCAPES + 1)
    v = head + lines + _PAIRED.sub("\\1x", draw(st.text(_chars, max_size=12)))
    style = draw(st.sampled_from(["ascii", "utf8", "any"]))
    if style == "ascii":
        body = json.dumps(v)[1:-1]
    elif style == "utf8":
        body = json_escape(v)
    else:  # as one encoder writes it but for one character, spelled any way JSON allows
        ascii_token = draw(st.booleans())
        pieces = [tokenmap.encode(c, ascii_token) for c in v]
        k = draw(st.integers(0, len(v) - 1).filter(lambda k: v[k] != "\n") | st.just(len(head)))
        pieces[k] = draw(st.sampled_from(_spellings(v[k])))
        body = "".join(pieces)
    cuts = sorted(draw(st.lists(st.integers(0, len(v)), max_size=8)))
    reps = st.sampled_from(["[EMAIL_1]", "Zenith Labs", 'q"\\', "é", "😀", "\x01", "", "\ud800"])
    spans = [(a, b, draw(reps)) for a, b in zip(cuts[::2], cuts[1::2], strict=False)]
    return body, v, spans


@given(_tokens(), st.sampled_from(["", '{"a": ']))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_a_changed_token_with_many_escapes_reads_as_the_token_encoded_again_whole(tok: tuple, before: str) -> None:
    body, v, spans = tok
    token = '"' + body + '"'
    assert json.loads(token) == v
    s = before + token + ("}" if before else "")
    i, end = len(before), len(before) + len(token)
    edits: list = []
    jsonspan.apply(s, i, end, v, jsonspan.Spans(spans), edits)
    new = splice(v, spans)
    whole = jsonspan.encode_like(new, token) if new != v else token  # unchanged: no edit
    assert splice(s, edits) == s[:i] + whole + s[end:]


@needs_c
@given(_tokens(), st.booleans())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_the_compiled_edits_are_the_reference(tok: tuple, ascii_token: bool) -> None:
    body, v, spans = tok
    for sp in (spans, spans[::-1]):  # in order, and (when two or more) not
        c_seen: list[bool] = []
        py_seen: list[bool] = []
        c = tokenmap.c_canonical_edits(body, v, sp, ascii_token, 7, tokenmap.encode, c_seen)
        assert c == tokenmap.py_canonical_edits(body, v, sp, ascii_token, 7, tokenmap.encode, py_seen)
        assert c_seen == py_seen  # (whether a `\u` escape is in it: said with edits)
        assert c_seen == ([] if c is None else [re.search(r"\\u", body.replace("\\\\", "")) is not None])


@needs_c
def test_a_canonical_token_is_spliced_in_place_and_another_spelling_is_not() -> None:
    v = "C:\\Users\n" * 70 + "Acme"
    body = json.dumps(v)[1:-1]
    n = len(body)
    edit = [(len(v) - 4, len(v), "Zenith")]
    assert tokenmap.c_canonical_edits(body, v, edit, True, 1, tokenmap.encode) == [(n - 3, n + 1, "Zenith")]
    assert tokenmap.c_canonical_edits(body.replace("\\n", "\\u000a", 1), v, edit, True, 1, tokenmap.encode) is None
    assert tokenmap.c_canonical_edits(body + "\\/", v + "/", edit, True, 1, tokenmap.encode) is None


_SPECIAL = '"\\/\n\r\t\b\f\x00\x1f\x7f aé€😀\ud800\udfff'


@pytest.mark.parametrize("ascii_token", [True, False])
def test_every_spelling_of_each_kind_of_character_reads_as_the_token_encoded_again_whole(ascii_token: bool) -> None:
    lines = "\n" * (jsonspan._SPLICE_MAX_ESCAPES + 1)
    for c in _SPECIAL:
        v = "é" + c + lines + "Acme"
        for spelled in _spellings(c):
            token = '"' + tokenmap.encode("é", ascii_token) + spelled + tokenmap.encode(lines + "Acme", ascii_token) + '"'
            assert json.loads(token) == v
            edits: list = []
            jsonspan.apply(token, 0, len(token), v, jsonspan.Spans([(len(v) - 4, len(v), "Zenith")]), edits)
            assert splice(token, edits) == jsonspan.encode_like(v[:-4] + "Zenith", token), (c, spelled)


# Characters at each edge of what the compiled pass reads eight (one-byte text) or four
# (two-byte text) characters at a time: a backslash, below 0x20, a quote, above 0x7E in
# an ASCII token, a surrogate; and their neighbours, which it passes.
_EDGES = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x2F, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0xDC, 0xFF,
          0x100, 0x2022, 0x5C5C, 0x2222, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xF800, 0xFFFF]  # fmt: skip


@needs_c
@pytest.mark.parametrize("kind", ["ascii", "latin-1", "two-byte"])
@pytest.mark.parametrize("ascii_token", [True, False])
def test_the_compiled_edits_are_the_reference_for_each_edge_character_at_every_place_in_a_word(
    kind: str, ascii_token: bool
) -> None:
    """Each edge character at each of 20 places of a 40-character run (every place in a
    word of eight and of four, and past the run's last whole word), written as it is and
    as an encoder writes it, in text of each width: the compiled edits are the
    reference's (None alike where the text is not canonical)."""
    lead = {"ascii": "", "latin-1": "é", "two-byte": "€"}[kind]
    for u in _EDGES:
        c = chr(u)
        if kind == "ascii" and u > 0x7F or kind == "latin-1" and u > 0xFF:
            continue  # (text of that width cannot hold it)
        for at in range(20):
            v = lead + "x" * at + c + "y" * (39 - at)
            for body in {lead + "x" * at + c + "y" * (39 - at), tokenmap.encode(v, ascii_token)}:
                for spans in ([(len(v) - 3, len(v), "[EMAIL_1]")], [(1, 2, "Zenith"), (len(v) - 1, len(v), "")]):
                    c_got = tokenmap.c_canonical_edits(body, v, spans, ascii_token, 3, tokenmap.encode)
                    assert c_got == tokenmap.py_canonical_edits(body, v, spans, ascii_token, 3), (kind, hex(u), at, body)
