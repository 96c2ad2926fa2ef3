"""URLs read decoded (sans I/O): their `%XX` escapes (RFC 3986), and `+` for a space as a
form's query writes it.

A URL in a request body is fetched by the provider, which decodes it: an image's
`https://host/a.png?who=Acme%20Corp`, a document's `?q=Acme+Corp` carry "Acme Corp" as
surely as the text does (the leak guard read the request's own URL decoded, not a URL in
its body). So is a URL in a message when the model has a tool that fetches (Gemini's URL
context, a web fetch tool), and the model reads `mailto:bob%40corp.example.com` as the
address. So a string with a URL in it (all of it after the scheme when it begins as one,
else each run after `://` or `mailto:` up to whitespace) that holds an escape or a `+` is
read a second time, its URLs decoded (fields.read's PERCENT), by the masker and the
leak guard alike; the masker's edits of the decoded text are put back where their
characters were written, each replacement in a URL escaped where it would end the URL
or read otherwise (`transform`, `encode`): every other character stays as it came. Text
outside a URL is read as written only: source code's `printf("%3d")` or `a + b` is not
decoded.

Escapes are decoded a run at a time as UTF-8; a byte that is not part of a UTF-8
character is read as the lone surrogate `surrogateescape` makes of it (the rules read
such a text through its bytes), so that every character of the decoded text comes from
a known run of the written one (`decode`'s offsets).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import quote, quote_plus

# What a URL holds after `://` (or `mailto:`): all up to whitespace, ASCII's (runs).
_SPACE = re.compile(r"[\t\n\x0b\x0c\r ]")
# A string that begins as a URL (a field that holds one): all of it after the scheme is
# the URL's, a space too (a client may leave one as it is; a fetcher encodes it).
_WHOLE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://|mailto:")  # (a scheme of 32 characters at most)
# What a URL may hold encoded: an escape, a form's `+`.
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}|\+")
# A run of escapes (decoded together: a character of several UTF-8 bytes), or a `+`.
_CODED = re.compile(r"(?:%[0-9A-Fa-f]{2})+|\+")


def runs(value: str) -> list[tuple[int, int]]:
    """Where value's URLs are read decoded: all after the scheme of a value that begins
    as a URL; else each (start, end) after a `://` or `mailto:`, up to whitespace."""
    if "://" not in value and "mailto:" not in value:
        return []
    whole = _WHOLE.match(value)
    if whole is not None:
        return [(whole.end(), len(value))]
    # found by str.find (the regex `(?:://|mailto:)([^\t\n\x0b\x0c\r ]*)` tried at
    # every character of a MB of markdown took 7 ms a call): the nearest `://` or
    # `mailto:`, then the whitespace that ends its run
    # (each found once: the next of each kind is looked for again only once the runs
    # have passed it, so a lone `mailto:` at the end is not searched to at every `://`)
    out: list[tuple[int, int]] = []
    find, n, pos = value.find, len(value), 0
    a = find("://")
    b = find("mailto:")
    while True:
        if 0 <= a < pos:
            a = find("://", pos)
        if 0 <= b < pos:
            b = find("mailto:", pos)
        if b >= 0 and (a < 0 or b < a):
            start = b + 7
        elif a >= 0:
            start = a + 3
        else:
            return out
        end = _SPACE.search(value, start)
        stop = end.start() if end is not None else n
        out.append((start, stop))
        pos = stop


def py_coded(value: str) -> bool:
    """Does a URL in value (runs) hold an escape or a `+`: read otherwise decoded. (The
    compiled walk's one pass, wire/_spanwalk.pyx, where it is built: `coded`.)"""
    if "%" not in value and "+" not in value:
        return False
    return any(_ENCODED.search(value, a, b) is not None for a, b in runs(value))


try:
    from ._spanwalk import coded as c_coded  # type: ignore[import-not-found]
    from ._spanwalk import decoded as c_decoded  # type: ignore[import-not-found]
except ImportError:
    c_coded = c_decoded = None

coded = c_coded or py_coded


def _width(c: str) -> int:
    """How many UTF-8 bytes (so escapes) wrote c, a character decoded by decode."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return 1  # a byte that was no UTF-8 character, as surrogateescape reads it
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def _decoded_match(m: re.Match[str]) -> str:
    """One match of _CODED decoded: a `+` a space, a run of escapes its UTF-8 characters."""
    s = m.group()
    return " " if s == "+" else bytes.fromhex(s.replace("%", "")).decode("utf-8", "surrogateescape")


def py_decoded(value: str) -> str:
    """value with each run of escapes in its URLs (runs) decoded as UTF-8
    (surrogateescape) and each `+` there a space; every other character itself. What
    the masker and the leak guard read a second time (decode: with where each character
    was written)."""
    out: list[str] = []
    pos = 0
    for a, b in runs(value):
        if _ENCODED.search(value, a, b) is None:
            continue  # nothing in this URL reads otherwise
        out.append(value[pos:a])
        out.append(_CODED.sub(_decoded_match, value[a:b]))
        pos = b
    if not out:
        return value
    out.append(value[pos:])
    return "".join(out)


decoded = c_decoded or py_decoded


class Offsets:
    """Where each character of decode's text was written in value: `at[i]`, i from 0 to
    len(text) (then len(value)). Kept as breakpoints, not a number a character (a MB of
    markdown with encoded links: a list of a million ints was 40 MiB and 0.1 s to make):
    one where a run written as it is begins, one for each character an escape or a `+`
    wrote (its own run of one)."""

    __slots__ = ("_t", "_v", "_n")

    def __init__(self, t: list[int], v: list[int], n: int) -> None:
        self._t, self._v, self._n = t, v, n  # breakpoints in text, in value; len(text) + 1

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect.bisect_right(self._t, i) - 1
        return self._v[k] + (i - self._t[k])

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        return (self[i] for i in range(self._n))


def decode(value: str) -> tuple[str, Offsets]:
    """(decoded(value), at): at[i] is where the decoded text's character i begins in
    value, and at[len(text)] == len(value)."""
    out: list[str] = []
    tb: list[int] = []
    vb: list[int] = []
    t = pos = 0
    for m in (m for r0, r1 in runs(value) for m in _CODED.finditer(value, r0, r1)):
        a, b = m.span()
        if a > pos:
            tb.append(t)
            vb.append(pos)
            out.append(value[pos:a])
            t += a - pos
        piece = _decoded_match(m)
        out.append(piece)
        plus = value[a] == "+"
        j = a
        for c in piece:
            tb.append(t)
            vb.append(j)
            t += 1
            j += 1 if plus else 3 * _width(c)
        pos = b
    if pos < len(value):
        tb.append(t)
        vb.append(pos)
        out.append(value[pos:])
        t += len(value) - pos
    tb.append(t)
    vb.append(len(value))
    return "".join(out), Offsets(tb, vb, t + 1)


def encode(rep: str) -> str:
    """A replacement as it is written in a URL: what would end the URL or read otherwise
    decoded (whitespace, `%`, `+`) or change its parts (`&`, `=`, `?`, `#`, `/`, quotes)
    escaped; letters, digits, `-._~` and a placeholder's brackets as they are, so that
    `[EMAIL_1]` in a URL reads as it did and the answer's copy of it is restored."""
    return quote(rep, safe="[]")


def in_urls(reverse: dict[str, str], forward: dict[str, str]) -> dict[str, str]:
    """What the restorer turns back besides the disguises as they are (reverse: each
    disguise's original; forward: each original's disguise): each disguise as a URL
    holds it, to its original written the same way. `encode` is how the masker writes a
    replacement in a URL, so the answer's copy of `?who=Zenith%20Labs` comes back
    `?who=Acme%20Corp`; a form's `+` for a space (`?q=Zenith+Labs`, as a model writing a
    search URL may) comes back `?q=Acme+Corp`. Only where the URL's writing differs from
    the disguise as it is (a space, a `/`, a character beyond ASCII: a one-word disguise
    has none) and is neither a disguise nor an original of its own (the mapping's word
    stands)."""
    out: dict[str, str] = {}
    for d, o in reverse.items():
        for write in (encode, _form):
            try:
                w, wo = write(d), write(o)
            except UnicodeEncodeError:  # a lone surrogate: no URL holds it so
                continue
            if w != d and w not in reverse and w not in forward and w not in out:
                out[w] = wo
    return out


def _form(rep: str) -> str:
    """rep as a form's query writes it: encode, with `+` for a space."""
    return quote_plus(rep, safe="[]")


def transform(value: str, edits_of: Callable[[str], Iterable[tuple[int, int, str]]]) -> str:
    """value with the edits edits_of makes of its decoded text (start, end, replacement
    there, in order and apart) put where their characters were written (put); value
    itself when there are none."""
    edits = list(edits_of(decoded(value)))
    if not edits:
        return value  # (the usual: the text's originals were masked as written)
    _, at = decode(value)
    return put(value, [(at[a], at[b], rep) for a, b, rep in edits])


def put(value: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """value with the edits (start, end, replacement in value, in order and apart) made,
    each replacement that begins in a URL or at its end (runs) escaped (encode), one
    outside them as it is: a URL keeps reading as one (a disguise's space written as it
    is would end it, and what follows would no longer be read decoded)."""
    spans = runs(value)
    k = 0
    out: list[str] = []
    pos = 0
    for a, b, rep in edits:
        out.append(value[pos:a])
        pos = b
        while k < len(spans) and spans[k][1] < a:  # (edits in order: each run passed once)
            k += 1
        if not (k < len(spans) and spans[k][0] <= a):
            out.append(rep)  # (as the text's own masking puts it)
            continue
        coded = encode(rep)
        stray = _STRAY.search(out[-1])  # (a replacement never ends in one: encode)
        if stray and coded and coded[0] in _HEX:
            # a `%` written before it that is no escape (`100%`, `%4`) would make one
            # with the replacement's first characters: that one written as its escape
            # (a placeholder's `[` makes none: it stays as it is)
            coded = "".join(f"%{x:02X}" for x in rep[0].encode("utf-8", "surrogateescape")) + encode(rep[1:])
        elif stray and not coded:
            # nothing in its place (no disguise is empty, but): the `%` would meet what
            # is written after it; written as its own escape, it reads the same
            c = stray.start()
            out[-1] = out[-1][:c] + "%25" + out[-1][c + 1 :]
        out.append(coded)
    out.append(value[pos:])
    return "".join(out)


# Text that ends in a `%` that begins no escape yet: one written after it could complete it.
_STRAY = re.compile(r"%[0-9A-Fa-f]?\Z")
_HEX = frozenset("0123456789ABCDEFabcdef")


__all__ = [
    "Offsets", "c_coded", "c_decoded", "coded", "decode", "decoded", "encode", "in_urls", "put", "py_coded",
    "py_decoded", "runs", "transform",
]  # fmt: skip
