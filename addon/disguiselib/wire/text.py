"""Text helpers the forward and the reverse matchers share (sans I/O): JSON string
bodies, UTF-8 with lone surrogates carried through, byte and character offsets."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Iterable, Iterator

_SURROGATE = re.compile("[\ud800-\udfff]")


def json_escape(s: str) -> str:
    """The body of a JSON string literal for s (UTF-8 kept; lone surrogates escaped)."""
    out = json.dumps(s, ensure_ascii=False)[1:-1]
    if out.isascii():
        return out
    try:  # strict UTF-8 fails on a surrogate alone: 2-3x faster than searching a long text for one
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


# json_literal's last literals of long texts, by the text's identity: a Responses stream
# says each text whole up to four times (Restorer.remember hands back the same restored
# str each time), and encoding 16 kB of non-ASCII text costs ~15-50 us a saying. Each
# entry holds its text, so no other str can take its id while it is there; texts outside
# LITERAL_MEMO_SIZES are not held (memory: at most LITERAL_MEMO_N of 64 k characters).
LITERAL_MEMO_SIZES = (256, 65536)
LITERAL_MEMO_N = 4
_literals: list[tuple[str, bool, str] | None] = [None] * LITERAL_MEMO_N
_literal_next = [0]


def json_literal(value: str, ascii_only: bool) -> str:
    """A JSON string literal for value: ASCII-only (`\\u` escapes) or UTF-8."""
    n = len(value)
    if LITERAL_MEMO_SIZES[0] <= n <= LITERAL_MEMO_SIZES[1]:
        for e in _literals:
            if e is not None and e[0] is value and e[1] == ascii_only:
                return e[2]
    out = json.dumps(value) if ascii_only else '"' + json_escape(value) + '"'
    if LITERAL_MEMO_SIZES[0] <= n <= LITERAL_MEMO_SIZES[1]:
        k = _literal_next[0] % LITERAL_MEMO_N
        _literal_next[0] = k + 1
        _literals[k] = (value, ascii_only, out)  # one store: a reader sees a whole entry
    return out


def utf8(s: str) -> bytes:
    # A decoded JSON string can hold a lone surrogate (half of a pair cut between two
    # deltas); it is carried through as its 3-byte form and decoded back the same way.
    return s.encode("utf-8", "surrogatepass")


def char_offsets(b: bytes, offsets: Iterable[int]) -> list[int]:
    """Character offsets of increasing byte offsets into b, in one pass."""
    out = []
    last_b = last_c = 0
    for off in offsets:
        last_c += len(b[last_b:off].decode("utf-8", "surrogatepass"))
        last_b = off
        out.append(last_c)
    return out


def decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogatepass")


def is_utf8(b: bytes) -> bool:
    """b decodes as UTF-8 (ASCII, the common case, is not decoded to tell)."""
    if b.isascii():
        return True
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def splice(s: str, edits: list[tuple[int, int, str]]) -> str:
    """s with each (start, end, text) edit applied; edits sorted and disjoint. The one
    splice of the masker (rules.Rules.mask) and the JSON transforms (jsonspan)."""
    if not edits:
        return s
    out: list[str] = []
    pos = 0
    for a, b, rep in edits:
        out.append(s[pos:a])
        out.append(rep)
        pos = b
    out.append(s[pos:])
    return "".join(out)


def splice_encoded(body: str, spans: list[tuple[int, int, str]], enc: Callable[[str], str]) -> str:
    """splice(body, spans) with each replacement passed through enc, joined in chunks
    (a list of two slices an edit costs more than the text it holds)."""
    chunks: list[str] = []
    out: list[str] = []
    pos = 0
    for a, b, rep in spans:
        out.append(body[pos:a])
        out.append(enc(rep))
        pos = b
        if len(out) >= 8192:
            chunks.append("".join(out))
            out.clear()
    out.append(body[pos:])
    chunks.append("".join(out))
    del out
    return "".join(chunks)


class Columns:
    """A list of 3-tuples kept as three columns (array('q') for ints, "o": a list): 24
    bytes an item where a list of tuples takes about 130. What a big text's matches,
    spans and edits are held in (a 200 MB string with an original every line has
    millions: rules.bigtext). Read like the list it stands for: len, an index, a slice
    (a list), iteration; built by append."""

    __slots__ = ("cols",)

    def __init__(self, codes: str = "qqq", cols: tuple | None = None) -> None:
        self.cols = cols if cols is not None else tuple([] if c == "o" else array(c) for c in codes)

    def append(self, t: tuple) -> None:
        x, y, z = self.cols
        x.append(t[0])
        y.append(t[1])
        z.append(t[2])

    def extend(self, ts: Iterable[tuple]) -> None:
        for t in ts:
            self.append(t)

    def __len__(self) -> int:
        return len(self.cols[0])

    def __iter__(self) -> Iterator[tuple]:
        return zip(*self.cols, strict=True)

    def __getitem__(self, i: int | slice) -> tuple | list[tuple]:
        x, y, z = self.cols
        if isinstance(i, slice):
            return list(zip(x[i], y[i], z[i], strict=True))
        return x[i], y[i], z[i]
