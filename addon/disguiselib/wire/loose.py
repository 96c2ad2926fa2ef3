"""JSON text that does not parse (truncated tool arguments, say) read the way JSON text
is (sans I/O): the masker, the leak guard and the audit call transform_loose, through
jsonspan, which re-exports it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from .text import json_literal

_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_QUOTE = re.compile(r'"')
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")


def transform_loose(s: str, fn: Callable[[str], str]) -> str:
    """JSON text that does not parse (truncated tool arguments, say), transformed the
    way JSON text is: every string literal decoded, passed through fn and re-encoded in
    its own style, and the text between literals passed through fn as it is. An
    unterminated last literal is decoded up to its end (an escape cut in half stays as
    it came). So an original spelled with escapes (`C:\\\\Users`, `M\\u00fcller`) is seen
    decoded, as it is in JSON that parses."""
    out: list[str] = []
    pos = 0
    n = len(s)
    while pos < n:
        m = _QUOTE.search(s, pos)
        if m is None:
            out.append(fn(s[pos:]))
            break
        q = m.start()
        if q > pos:
            out.append(fn(s[pos:q]))
        try:
            v, end = _scanstring(s, q + 1)
        except ValueError:  # unterminated, or a bad escape: decode what can be decoded
            body = s[q + 1 :]
            cut = _PARTIAL_ESCAPE.search(body)
            keep = body[cut.start() :] if cut else ""
            body = body[: cut.start()] if cut else body
            try:
                v, _ = _scanstring(body + '"', 0)
            except ValueError:
                out.append(fn(s[q:]))  # not even that: masked as plain text
                break
            new = fn(v)
            out.append(s[q:] if new == v else json_literal(new, body.isascii())[:-1] + keep)
            break
        new = fn(v)
        out.append(s[q:end] if new == v else json_literal(new, s[q:end].isascii()))
        pos = end
    return "".join(out)
