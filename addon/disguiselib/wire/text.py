"""Text helpers the forward and the reverse matchers share (sans I/O): JSON string
bodies, UTF-8 with lone surrogates carried through, byte and character offsets, JSON
text in decoded space."""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator

try:
    from ._tokenmap import char_offsets as c_char_offsets  # type: ignore[import-not-found]
except ImportError:  # the Python engine: py_char_offsets
    c_char_offsets = None

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
    """Character offsets of increasing byte offsets into b (UTF-8, surrogatepass), in one
    pass: a typed one (wire/_tokenmap.pyx) where the compiled engine runs and every
    offset is at a character's start, else py_char_offsets (the reference)."""
    if c_char_offsets is not None and type(b) is bytes:
        offsets = offsets if type(offsets) is list else list(offsets)
        got = c_char_offsets(b, offsets)
        if got is not None:
            return got  # type: ignore[no-any-return]
    return py_char_offsets(b, offsets)


def py_char_offsets(b: bytes, offsets: Iterable[int]) -> list[int]:
    """char_offsets by decoding each stretch between two offsets."""
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


# -- JSON text in decoded space (the reverse matcher's, rules/restorer.py) ---------------------

# What an escape spells takes part in a match only if it is ASCII other than `"`, `\\`
# and controls (a disguise, fake or placeholder is made of those: rules/mappings.py). The
# others, every character of them _OPAQUE (one C pass each, nothing to map back): a
# short escape (`\\n`, `\\"`, `\\\\`...; not `\\/`) and a `\\u` escape past U+007F (a
# surrogate too).
_SHORT_ESC = re.compile(r"\\[^u/]", re.S)
_WIDE_U = re.compile(r"\\u(?:[1-9a-fA-F][0-9a-fA-F]{3}|0[1-9a-fA-F][0-9a-fA-F]{2}|00[89a-fA-F][0-9a-fA-F])")
_HEX = frozenset("0123456789abcdefABCDEF")
_OPAQUE = "\x00"  # in no disguise, fake or placeholder


def json_text_decoded(buf: str, esc: int, final: bool) -> tuple[str, list[int], list[int], int]:
    """JSON text (tool arguments) in decoded space, where a disguise is found however its
    characters were written (`Tom\\u0026Jerry` is `Tom&Jerry`; Go's encoding/json writes
    `&<>` so, PHP `/` as `\\/`).

    Returns (dec, at, shift, end): dec, the decoded text of buf[:end]: an escape that
    spells what a match may hold (`\\u0026`, `\\/`) one character, every character of
    the others _OPAQUE (above), as every character of a `\\u` without four hex digits and
    what begins buf inside an escape (esc != 0). at[k] is the index in dec of the k-th
    escape spelled as one character, shift[k] how many characters of buf those through
    it saved (raw_offset maps back). end is where an escape begins that buf cuts short (a
    window holds it for the next piece: decoded whole, a disguise may go through it);
    len(buf) when there is none, or when final (that escape is then opaque)."""
    n = len(buf)
    lead = min(n, esc if esc > 0 else (5 if buf[:1] == "u" else 1)) if esc else 0
    flat = buf[lead:] if lead else buf
    if "\\" in flat:
        # escaped backslashes first: then every backslash left begins an escape
        flat = flat.replace("\\\\", _OPAQUE * 2)
        if "\\u" in flat:
            flat = _WIDE_U.sub(_OPAQUE * 6, flat)
        flat = _SHORT_ESC.sub(_OPAQUE * 2, flat)
    if lead:  # the rest of an escape whose beginning went before buf
        flat = _OPAQUE * lead + flat
    # flat is buf character for character; a backslash left in it begins `\\/`, a `\\u`
    # escape of an ASCII character, a `\\u` without four hex digits, or ends buf
    parts: list[str] = []
    at: list[int] = []
    shift: list[int] = []
    i = d = saved = 0
    end = n
    while True:
        k = flat.find("\\", i)
        if k < 0:
            break
        if k + 1 >= n:  # a backslash ends buf
            end = k
            break
        if flat[k + 1] == "/":
            ch, w = "/", 2
        elif k + 6 > n:  # `\\u` with fewer than four characters after it
            end = k
            break
        else:
            hx = flat[k + 2 : k + 6]
            if not _HEX.issuperset(hx):
                parts.append(flat[i:k] + _OPAQUE * 6)
                d += k - i + 6
                i = k + 6
                continue
            ch, w = chr(int(hx, 16)), 6
        parts.append(flat[i:k])
        parts.append(ch)
        d += k - i
        at.append(d)
        d += 1
        saved += w - 1
        shift.append(saved)
        i = k + w
    parts.append(flat[i:end])
    if end < n and final:  # the escape buf cuts short: opaque
        parts.append(_OPAQUE * (n - end))
        end = n
    return "".join(parts), at, shift, end


def raw_offset(at: list[int], shift: list[int], j: int) -> int:
    """The offset in the JSON text of index j of its decoded text (json_text_decoded)."""
    k = bisect_left(at, j)
    return j + shift[k - 1] if k else j


class LeftOut:
    """A list of a parsed body (items, n elements long) every element of which is a
    string the masker's walk left out whole, read with rule: written without escapes,
    read as it is and alone, no span a scan of the body's raw bytes marked reaching into
    it (rules/rawscan.py). The walk lists it among the texts it left out in their place
    (spanwalk.py_collect's `seen`), not its n texts: a tool input of a million short
    elements costs no Python object an element, and the leak guard, whose walk meets the
    same list read with the same rule, leaves it out whole (base/fieldwalk.py)."""

    __slots__ = ("items", "rule", "n")

    def __init__(self, items: list, rule: object, n: int) -> None:
        self.items, self.rule, self.n = items, rule, n

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LeftOut):
            return False
        return other.items is self.items and other.rule is self.rule and other.n == self.n

    def __hash__(self) -> int:
        return id(self.items)

    def __repr__(self) -> str:
        return f"LeftOut(<{self.n} elements>)"


def left_out_texts(seen: list) -> list[str]:
    """The texts of seen (a walk's, LeftOut among them: each its items in its place)."""
    if not any(type(t) is LeftOut for t in seen):
        return seen
    return [x for t in seen for x in (t.items if type(t) is LeftOut else (t,))]
