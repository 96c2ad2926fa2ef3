"""The edits that change a JSON string token with many escapes (jsonspan.apply), spliced
into its raw text where that text is exactly what encoding its value writes, instead of
the token encoded again whole: the result is the same text to the byte, and the
untouched parts of a 1 MB Claude Code body's source files are not encoded again
(~5 ms of its masking: json's encoder writes some 180 MB/s).

`canonical_edits` is compiled (wire/_tokenmap.pyx, one typed pass) or this module's
reference, chosen once, at import, as CPython's json chooses its scanner;
tests/wire/test_tokenmap.py holds the two to the same answers and `escaped_edits` to
the token encoded again whole.

`Token` and `splice`: a big text's many edits, kept as they are and spliced into the
body's text piece by piece once, where its token holds no escape (base/masking.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from .text import Columns, json_escape

try:
    from ._tokenmap import canonical_edits as c_canonical_edits  # type: ignore[import-not-found]
except ImportError:
    c_canonical_edits = None

# Text a JSON string holds as it is, whatever the string's style: printable ASCII but `"`
# and `\\`.
PLAIN = re.compile(r"[ !#-\[\]-~]*\Z")
# A token changed in more places than this is encoded again whole (one edit, not a tuple
# per place: a 200 MB string with an original every line).
MAX_EDITS = 4096


def encode(rep: str, ascii_token: bool) -> str:
    """rep as a string token's text in the token's style (ASCII: json.dumps', else
    json_escape's). Disguises and placeholders are plain ASCII: as they are."""
    if PLAIN.match(rep):
        return rep
    return json.dumps(rep)[1:-1] if ascii_token else json_escape(rep)


def py_canonical_edits(
    body: str, v: str, spans: list, ascii_token: bool, base: int, enc=encode, seen: list | None = None  # noqa: ANN001
) -> list | None:
    """The edits (start, end, enc(rep, ascii_token)) at base + the raw offsets in body (a
    token's text between its quotes, decoding to v) of the spans (start, end, rep) in
    v; None when body is not what encode(v) writes, the spans are not in order or they
    leave the length as it was. seen: gets, with edits, whether a `\\u` escape is in body.
    Encoding is per character, so the prefix v[:d] is body's first len(encode(v[:d]))."""
    wants = [x for a, b, _ in spans for x in (a, b)]
    if not sum(len(rep) - (b - a) for a, b, rep in spans) or wants != sorted(wants) or encode(v, ascii_token) != body:
        return None  # (the same length: perhaps no change at all, which the caller looks for)
    pos = [len(encode(v[:d], ascii_token)) for d in wants]
    if seen is not None:
        seen.append("\\u" in body and _U_ESCAPE.search(body) is not None)  # (the regex where it may be one)
    return [(base + pos[2 * k], base + pos[2 * k + 1], enc(rep, ascii_token)) for k, (_, _, rep) in enumerate(spans)]


# a `\\u` escape: after an even number of backslashes (each pair one escaped backslash)
_U_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u")


canonical_edits = c_canonical_edits or py_canonical_edits


def escaped_edits(
    s: str, i: int, end: int, v: str, spans: list[tuple[int, int, str]], seen: list | None = None
) -> list | None:
    """The edits of s that give the string token s[i:end] (value v) the spans (decoded
    coordinates) applied, exactly as the token encoded again whole would read
    (jsonspan.encode_like); None where its text is not canonical, the spans are too many
    or leave its length as it was (jsonspan.apply then looks whether anything changed).
    seen: see canonical_edits."""
    if len(spans) > MAX_EDITS:
        return None
    body = s[i + 1 : end - 1]
    return canonical_edits(body, v, spans, body.isascii(), i + 1, encode, seen)


class Token:
    """The new text of the string token s[start:end] (no escape in it) with a big text's
    edits (start, end, replacement) in its value applied, each replacement encoded in the
    token's style: what jsonspan.token_edits makes at once (text.splice_encoded), made
    only by splice (masking.mask_doc keeps a big text's edits so). len: that text's length."""

    __slots__ = ("s", "start", "end", "edits", "ascii", "size")

    def __init__(self, s: str, start: int, end: int, edits: Columns, ascii_token: bool) -> None:
        self.s, self.start, self.end, self.edits, self.ascii = s, start, end, edits, ascii_token
        self.size = end - start + sum(len(encode(r, ascii_token)) - (b - a) for a, b, r in edits)

    def __len__(self) -> int:
        return self.size

    def pieces(self) -> Iterator[str]:
        s, base, pos = self.s, self.start, 0
        for a, b, r in self.edits:
            yield s[base + pos : base + a]
            yield encode(r, self.ascii)
            pos = b
        yield s[base + pos : self.end]


def splice(s: str, edits: list) -> str:
    """text.splice(s, edits), a Token's text made piece by piece, joined in chunks (a
    list of two slices an edit costs more than the text it holds)."""
    if not edits:
        return s
    chunks: list[str] = []
    out: list[str] = []
    pos = 0
    for a, b, r in edits:
        out.append(s[pos:a])
        if type(r) is Token:
            for p in r.pieces():
                out.append(p)
                if len(out) >= 8192:
                    chunks.append("".join(out))
                    out.clear()
        else:
            out.append(r)
        pos = b
        if len(out) >= 8192:
            chunks.append("".join(out))
            out.clear()
    out.append(s[pos:])
    chunks.append("".join(out))
    del out
    return chunks[0] if len(chunks) == 1 else "".join(chunks)
