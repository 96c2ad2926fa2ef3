"""What the client's request already holds (sans I/O): the placeholders and the fakes a
request's text holds as the client's own, which masking must not issue for an original
(its numbering skips them, a fake among them is not used: base/masking.py)."""

from __future__ import annotations

import re

import ahocorasick_rs

from ..rules.rules import Rules, Session
from ..wire import spanwalk


def present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """Placeholder-shaped strings ("[EMAIL_3]") already in a request's JSON text s,
    also where the client wrote them with \\u escapes: the compiled scan
    (spanwalk.c_shapes), or py_present_placeholders where it is not built or s holds an
    escape of printable ASCII (tests/base/test_present.py holds the two to one answer)."""
    names = frozenset(p.name for p in rules.mappings.patterns)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    if spanwalk.c_shapes is not None:
        got = spanwalk.c_shapes(s, names)
        if got is not None:
            return frozenset(got)
    return _present(s, names)


def py_present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """present_placeholders' reference: two regexes and a substring search over s."""
    names = frozenset(p.name for p in rules.mappings.patterns)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    return _present(s, names)


def _present(s: str, names: frozenset[str]) -> frozenset[str]:
    found = {m.group() for m in _PLACEHOLDER_SHAPE.finditer(s) if m.group(1) in names}
    if "\\u00" in s:  # what _ASCII_ESCAPE reads begins so (half the time of looking for `\u`)
        t = _ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)
        found.update(m.group() for m in _PLACEHOLDER_SHAPE.finditer(t) if m.group(1) in names)
    return frozenset(found)


# Any pattern name (mappings: [A-Z][A-Z0-9_]*) with a number: one look at each `[` (an
# alternation of every name was tried at each `[` of a body: 3.5 ms a megabyte), then
# the name is looked up. The number has no `_`, so the name is all up to the last `_`.
_PLACEHOLDER_SHAPE = re.compile(r"\[([A-Z][A-Z0-9_]*)_[1-9][0-9]*\]")
_ASCII_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])")


def present_fakes(s: str, session: Session) -> frozenset[str]:
    """The fakes session issued that a request's JSON text s already holds as the client's
    own text (also where written with \\u escapes): one Aho–Corasick pass over s. A fake
    is ASCII without `"` or `\\` (rules/fakes.py): spelled as it is unless escaped on purpose."""
    fakes = [k for k in session.placeholders if not k.startswith("[")]
    if not fakes:
        return frozenset()
    ac = ahocorasick_rs.AhoCorasick(fakes, matchkind=ahocorasick_rs.MatchKind.Standard)
    texts = [s, _ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)] if "\\u" in s else [s]
    return frozenset(fakes[k] for t in texts for k, _, _ in ac.find_matches_as_indexes(t, overlapping=True))
