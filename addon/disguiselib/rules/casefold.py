"""Does a case-insensitive regex name a non-ASCII character that has a case?

The prefilter (linear.Prefilter) must name every pattern RE2 may match. With `(?i)`,
RE2 and Hyperscan fold ASCII letters alike (both also take `ſ` for `s` and the Kelvin
sign for `k`), but non-ASCII letters may be folded differently, so such a pattern is
searched always, every text, every string of a body. A non-ASCII character WITHOUT a
case (the no-break space, U+2000..U+200A, the ideographic space: the shipped
secret-assignment rules name them in their whitespace classes) is read alike by both
with or without `(?i)`: those patterns go through the prefilter like any other. The
7 shipped patterns that name them were searched exactly in every string (issue 27: a
1M-element tool input spent most of its time there).

Conservative: a character counts as cased when any of its case mappings differs from
it or it is a letter or a mark at all; a range counts as cased when any character in
it does (a range wider than _RANGE_MAX: cased); `\\p`, `\\P`, `\\C` and an escape not
read here count as cased.
"""

from __future__ import annotations

import functools
import unicodedata

_RANGE_MAX = 0x3000
_HEX = frozenset("0123456789abcdefABCDEF")


@functools.lru_cache(maxsize=4096)
def _cased(cp: int) -> bool:
    c = chr(cp)
    if cp < 0x80:
        return False  # ASCII: both engines fold it alike
    if c.lower() != c or c.upper() != c or c.casefold() != c or c.title() != c:
        return True
    return unicodedata.category(c)[0] in "LM"


def _atoms(p: str) -> list[int] | None:
    """The code points p names, in order (a range's ends as they come, with -1 for a `-`
    between two of them), or None where an escape names an unknown set."""
    out: list[int] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            e = p[i + 1]
            if e in "pPC":
                return None
            if e == "Q":  # \Q...\E: the characters as they are
                j = p.find("\\E", i + 2)
                j = n if j < 0 else j
                out.extend(map(ord, p[i + 2 : j]))
                i = j + 2
                continue
            if e == "x":
                if p.startswith("{", i + 2):
                    j = p.find("}", i + 3)
                    h = p[i + 3 : j] if j > 0 else ""
                    if not h or not set(h) <= _HEX:
                        return None
                    out.append(int(h, 16))
                    i = j + 1
                    continue
                h = p[i + 2 : i + 4]
                if len(h) != 2 or not set(h) <= _HEX:
                    return None
                out.append(int(h, 16))
                i += 4
                continue
            if e in "01234567":
                j = i + 1
                while j < n and j < i + 4 and p[j] in "01234567":
                    j += 1
                out.append(int(p[i + 1 : j], 8))
                i = j
                continue
            out.append(ord(e) if not e.isascii() else 0)  # \n, \w, \.: ASCII
            i += 2
            continue
        out.append(-1 if c == "-" else ord(c))
        i += 1
    return out


def names_cased_non_ascii(p: str) -> bool:
    """Does p name a non-ASCII character with a case (a range: one in it), or a set this
    reading does not know? (See the module's docstring.)"""
    atoms = _atoms(p)
    if atoms is None:
        return True
    for k, cp in enumerate(atoms):
        if cp >= 0x80 and _cased(cp):
            return True
        if cp == -1 and 0 < k < len(atoms) - 1 and atoms[k - 1] >= 0 and atoms[k + 1] >= 0x80:
            lo, hi = max(atoms[k - 1], 0x80), atoms[k + 1]
            if hi - lo > _RANGE_MAX or any(_cased(x) for x in range(lo, hi + 1)):
                return True
    return False
