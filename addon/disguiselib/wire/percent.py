"""A URL read decoded (sans I/O): its `%XX` escapes (RFC 3986), and `+` for a space as a
form's query writes it.

A URL in a request body is fetched by the provider, which decodes it: an image's
`https://host/a.png?who=Acme%20Corp`, a document's `?q=Acme+Corp` carry "Acme Corp" as
surely as the text does (the leak guard read the request's own URL decoded, not a URL in
its body). So a string that is a URL, with an escape or a `+` after its `://`, is read a
second time decoded (fields.read's PERCENT), by the masker and the leak guard alike, and the
masker's edits of the decoded text are put back where their characters were written,
each replacement percent-encoded (`transform`): every other character stays as it came.
Only a string that is a URL as a whole (a field that holds one): text that holds a URL
among other words, or source code with a `%3d` in it, is read as written.

Escapes are decoded a run at a time as UTF-8; a byte that is not part of a UTF-8
character is read as the lone surrogate `surrogateescape` makes of it (the rules read
such a text through its bytes), so that every character of the decoded text comes from
a known run of the written one (`decode`'s offsets).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import quote

# A URL: a scheme, `://`, then no whitespace (the whole string: a field that holds one).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\t\n\x0b\x0c\r ]*\Z")
# What its part after `://` may hold encoded: an escape, a form's `+`.
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}|\+")
# A run of escapes (decoded together: a character of several UTF-8 bytes), or a `+`.
_CODED = re.compile(r"(?:%[0-9A-Fa-f]{2})+|\+")


def _after_scheme(value: str) -> int:
    """Where a URL's part after `://` begins, or -1: value is no URL."""
    return value.find("://") + 3 if _URL.match(value) else -1


def coded(value: str) -> bool:
    """Is value a URL (the whole string) whose part after `://` holds an escape or a
    `+`: read otherwise decoded."""
    k = _after_scheme(value) if "://" in value else -1
    return k >= 0 and _ENCODED.search(value, k) is not None


def _width(c: str) -> int:
    """How many UTF-8 bytes (so escapes) wrote c, a character decoded by decode."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return 1  # a byte that was no UTF-8 character, as surrogateescape reads it
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def decode(value: str) -> tuple[str, list[int]]:
    """(text, at): a URL's part after `://` with each run of escapes decoded as UTF-8
    (surrogateescape) and each `+` a space (value as it is when it is no URL); at[i] is
    where text's character i begins in value, and at[len(text)] == len(value). Every
    other character is itself."""
    out: list[str] = []
    at: list[int] = []
    pos = 0
    k = _after_scheme(value)
    for m in _CODED.finditer(value, k) if k >= 0 else ():
        a, b = m.span()
        if a > pos:
            out.append(value[pos:a])
            at.extend(range(pos, a))
        if value[a] == "+":
            out.append(" ")
            at.append(a)
        else:
            text = bytes.fromhex(value[a:b].replace("%", "")).decode("utf-8", "surrogateescape")
            out.append(text)
            j = a
            for c in text:
                at.append(j)
                j += 3 * _width(c)
        pos = b
    if pos < len(value):
        out.append(value[pos:])
        at.extend(range(pos, len(value)))
    at.append(len(value))
    return "".join(out), at


def encode(rep: str) -> str:
    """A replacement as it is written in percent-encoded text: every character but the
    unreserved ones (letters, digits, `-._~`) escaped (a placeholder's brackets too)."""
    return quote(rep, safe="")


def transform(value: str, edits_of: Callable[[str], Iterable[tuple[int, int, str]]]) -> str:
    """value with the edits edits_of makes of its decoded text (start, end, replacement
    there, in order and apart) applied where their characters were written, each
    replacement encoded; value itself when there are none."""
    text, at = decode(value)
    edits = list(edits_of(text))
    if not edits:
        return value
    out: list[str] = []
    pos = 0
    for a, b, rep in edits:
        out.append(value[pos : at[a]])
        coded = encode(rep)
        if rep and _STRAY.search(out[-1]):  # (a replacement never ends in one: encode)
            # a `%` written before it that is no escape (`100%`, `%4`) would make one
            # with the replacement's first characters: that one written as its escape
            coded = "".join(f"%{x:02X}" for x in rep[0].encode("utf-8", "surrogateescape")) + encode(rep[1:])
        out.append(coded)
        pos = at[b]
    out.append(value[pos:])
    return "".join(out)


# Text that ends in a `%` that begins no escape yet: one written after it could complete it.
_STRAY = re.compile(r"%[0-9A-Fa-f]?\Z")


__all__ = ["coded", "decode", "encode", "transform"]
