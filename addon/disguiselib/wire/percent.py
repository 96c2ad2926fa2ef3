"""URLs read decoded (sans I/O): their `%XX` escapes (RFC 3986), and `+` for a space as a
form's query writes it.

A URL in a request body is fetched by the provider, which decodes it: an image's
`https://host/a.png?who=Acme%20Corp`, a document's `?q=Acme+Corp` carry "Acme Corp" as
surely as the text does (the leak guard read the request's own URL decoded, not a URL in
its body). So is a URL in a message when the model has a tool that fetches (Gemini's URL
context, a web fetch tool), and the model reads `mailto:bob%40corp.example.com` as the
address. So a string with a URL in it (a run after `://` or `mailto:` up to whitespace)
that holds an escape or a `+` is read a second time, its URLs decoded (fields.read's
PERCENT), by the masker and the leak guard alike; the masker's edits of the decoded text
are put back where their characters were written, each replacement in a URL
percent-encoded (`transform`): every other character stays as it came. Text outside a
URL is read as written only: source code's `printf("%3d")` or `a + b` is not decoded.

Escapes are decoded a run at a time as UTF-8; a byte that is not part of a UTF-8
character is read as the lone surrogate `surrogateescape` makes of it (the rules read
such a text through its bytes), so that every character of the decoded text comes from
a known run of the written one (`decode`'s offsets).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import quote

# What a URL holds after `://` (or `mailto:`): all up to whitespace.
_RUN = re.compile(r"(?:://|mailto:)([^\t\n\x0b\x0c\r ]*)")
# A string that begins as a URL (a field that holds one): all of it after the scheme is
# the URL's, a space too (a client may leave one as it is; a fetcher encodes it).
_WHOLE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|mailto:")
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
    return [m.span(1) for m in _RUN.finditer(value)]


def coded(value: str) -> bool:
    """Does a URL in value (runs) hold an escape or a `+`: read otherwise decoded."""
    return any(_ENCODED.search(value, a, b) is not None for a, b in runs(value))


def _width(c: str) -> int:
    """How many UTF-8 bytes (so escapes) wrote c, a character decoded by decode."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return 1  # a byte that was no UTF-8 character, as surrogateescape reads it
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def decode(value: str) -> tuple[str, list[int]]:
    """(text, at): value with each run of escapes in its URLs (runs) decoded as UTF-8
    (surrogateescape) and each `+` there a space; at[i] is where text's character i
    begins in value, and at[len(text)] == len(value). Every other character is itself."""
    out: list[str] = []
    at: list[int] = []
    pos = 0
    for m in (m for r0, r1 in runs(value) for m in _CODED.finditer(value, r0, r1)):
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
    there, in order and apart) put where their characters were written (put); value
    itself when there are none."""
    text, at = decode(value)
    edits = list(edits_of(text))
    if not edits:
        return value
    return put(value, [(at[a], at[b], rep) for a, b, rep in edits])


def put(value: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """value with the edits (start, end, replacement in value, in order and apart) made,
    each replacement that begins in a URL or at its end (runs) percent-encoded, one
    outside them as it is: a URL keeps reading as one (a disguise's space written as it
    is would end it, and what follows would no longer be read decoded)."""
    spans = runs(value)
    out: list[str] = []
    pos = 0
    for a, b, rep in edits:
        out.append(value[pos:a])
        pos = b
        if not any(r0 <= a <= r1 for r0, r1 in spans):  # (written at a URL's end, it is the URL's)
            out.append(rep)  # (as the text's own masking puts it)
            continue
        coded = encode(rep)
        stray = _STRAY.search(out[-1])  # (a replacement never ends in one: encode)
        if stray and rep:
            # a `%` written before it that is no escape (`100%`, `%4`) would make one
            # with the replacement's first characters: that one written as its escape
            coded = "".join(f"%{x:02X}" for x in rep[0].encode("utf-8", "surrogateescape")) + encode(rep[1:])
        elif stray:
            # nothing in its place (no disguise is empty, but): the `%` would meet what
            # is written after it; written as its own escape, it reads the same
            k = stray.start()
            out[-1] = out[-1][:k] + "%25" + out[-1][k + 1 :]
        out.append(coded)
    out.append(value[pos:])
    return "".join(out)


# Text that ends in a `%` that begins no escape yet: one written after it could complete it.
_STRAY = re.compile(r"%[0-9A-Fa-f]?\Z")


__all__ = ["coded", "decode", "encode", "put", "runs", "transform"]
