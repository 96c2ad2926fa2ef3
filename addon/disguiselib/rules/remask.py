"""What masking made of a text it met before (sans I/O), replayed in a new session.

A conversation is sent whole at every turn, so nearly every text masking changes in a
request it changed in the one before. What `Rules.mask_spans` makes of a text (and the
context around it) is a function of the rule set, the text, and the disguises the
request's session hands out for the originals it meets, in order; so each text's
masking is remembered by the text's digest (prescan's: found.Found; for a text read
with the context around it, the digest of both and the context's lengths) as its edits and
the session calls it made, each original by its place in the text (never the text
itself: no original is kept). Met again, the calls are made again in the new session,
in the same order, placeholders first: where each gives back the disguise it gave
before, every step of masking went as it went then, and so do its edits; then the
counts are made, in their order. Where one gives another disguise (another numbering:
a placeholder the client's text holds, one numbered before), the text is masked
anew; the calls made so far were the first ones that masking makes, and a session
hands out the same disguise for the same original again without counting it, so the
session ends as masking alone leaves it.

And where the string's JSON token was read by one typed pass that found its raw text
to be exactly what encoding its value writes (tokenmap.escaped_edits) and it holds no
`\\u`, the edits it made in the raw text: a token of the same value and the same length
is that same text, so the same edits are spliced in at the same places, with no pass
over it (`raw_edits`). For each character of the value that text is the shortest
spelling there is (the character as it is, or its two-character escape where it has
one), and the only one of its length: `\\u` is six characters, `\\/` two for a `/`, and
the one way to be shorter, a character below 0x20 written as it is, is no JSON the
parser takes (fields.loads: json's strict parser; tests/rules/test_remask.py holds it).

Bounded as Found is: two generations, the older dropped when the newer holds `limit`
texts, `edit_limit` edits and session calls (a literal counted one call) or
`char_limit` characters of masked tokens and strings (Masking.read). By default
20,000 texts, 50,000 edits and calls and 4 Mi characters a generation: some 10 MB of
edits and calls, and at most 2 x 4 Mi characters of masked text, each one the rule
set remembers finding nothing in (Found.holds_clean). Only texts of fewer than
bigtext.BIG characters. Emptied with the rule set's memory (Found.clear); a rule set
reloaded starts with none. Shared by every flow's thread as Found is (a dict's get and
set are atomic; the counts may at worst be off by a racing put).
"""

from __future__ import annotations

from typing import Any

from ..wire import jsonspan, tokenmap
from .bigtext import BIG

# (label, start, end, disguise): session.placeholder(label, text[start:end]) gave the
# disguise, then session.count(label); (None, (start, end, ...)): count_literals of
# the originals at those places
Op = tuple
# a text read alone: its digest; read in a context: (the digest of the context and the
# text together, the context's lengths before and after it)
Key = bytes | tuple[bytes, int, int]


class Masking:
    """What mask_spans made of one text: its edits and the session's calls, in order;
    `raw`: (the token's length between its quotes, its edits relative to the token's
    first character) where a canonical token held it (raw_edits); `read`: (the masked
    token's text between its quotes, the string json's scanner read in it), which the
    masked document takes for a token of exactly that text (masking.masked_doc: no
    second scan, and the one str whose hash the leak guard's look-up has kept)."""

    __slots__ = ("edits", "ops", "raw", "read")

    def __init__(self, edits: tuple, ops: tuple) -> None:
        self.edits = edits
        self.ops = ops
        self.raw: tuple[int, tuple] | None = None
        self.read: tuple[str, str] | None = None

    def chars(self) -> int:
        return len(self.read[0]) + len(self.read[1]) if self.read is not None else 0


class Remembered:
    """Key -> Masking, two generations (module docstring)."""

    __slots__ = ("limit", "edit_limit", "char_limit", "_new", "_old", "_edits", "_chars", "hits")

    def __init__(self, limit: int = 20_000, edit_limit: int = 50_000, char_limit: int = 1 << 22) -> None:
        self.limit = limit
        self.edit_limit = edit_limit
        self.char_limit = char_limit
        self._new: dict[Key, Masking] = {}
        self._old: dict[Key, Masking] = {}
        self._edits = 0
        self._chars = 0  # the characters of the reads (Masking.read) counted in _new
        self.hits = 0  # texts whose masking was replayed (bench, tests)

    def get(self, d: Key) -> Masking | None:
        got = self._new.get(d)
        if got is None:
            got = self._old.get(d)
            if got is not None:
                self.put(d, got)
        return got

    def put(self, d: Key, m: Masking) -> None:
        n, c = len(m.edits) + sum(len(op[1]) // 2 if op[0] is None else 1 for op in m.ops), m.chars()  # edits and calls
        if self.limit <= 0 or n > self.edit_limit or c > self.char_limit:
            return
        if len(self._new) >= self.limit or self._edits + n > self.edit_limit or self._chars + c > self.char_limit:
            self._old, self._new, self._edits, self._chars = self._new, {}, 0, 0
        self._new[d] = m
        self._edits += n
        self._chars += c

    def keep_read(self, m: Masking, token: str, value: str) -> None:
        """m.read set (Masking), where the characters of the newer generation's reads
        stay within char_limit (a text whose masking was got or put since the last swap:
        in the newer one)."""
        c = len(token) + len(value)
        if m.read is None and self._chars + c <= self.char_limit:
            m.read = (token, value)
            self._chars += c

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def clear(self) -> None:
        self._new, self._old, self._edits, self._chars = {}, {}, 0, 0


def worth(text: str) -> bool:
    """Is text's masking remembered (by its digest, with a list of edits: not a big text's)?"""
    return len(text) < BIG


def replay(m: Masking, text: str, session: Any, faker: Any) -> list | None:
    """m's session calls made again on text (whose digest m is remembered by) in
    session; its edits, or None where a placeholder came out another (module docstring:
    the session is then as masking's first calls leave it)."""
    ops = m.ops
    for op in ops:
        if op[0] is not None and session.placeholder(op[0], text[op[1] : op[2]], faker) != op[3]:
            return None
    for op in ops:
        if op[0] is None:
            at = op[1]
            session.count_literals([text[at[k] : at[k + 1]] for k in range(0, len(at), 2)])
        else:
            session.count(op[0], text[op[1] : op[2]])
    return list(m.edits)


def raw_edits(m: Masking, s: str, i: int, end: int, v: str, new: list) -> list | None:
    """The edits of s that apply new (v's edits, v the value of the string token
    s[i:end], its digest the one m is remembered by) to the token, exactly as
    jsonspan.apply makes them: m's where new is m's edits and the token is as long as
    the one they were made in (module docstring); else those tokenmap.escaped_edits
    makes, noted in m where it made them in a token with no `\\u` (and where it found the
    token not canonical: not tried again); None where neither is (jsonspan.apply then)."""
    if m.raw is not None:
        size, rel = m.raw
        if end - i - 2 == size and tuple(new) == m.edits:
            base = i + 1
            return [(base + a, base + b, r) for a, b, r in rel]
        return None
    if s.count("\\", i + 1, end - 1) <= jsonspan._SPLICE_MAX_ESCAPES or tuple(new) != m.edits:
        return None
    seen: list[bool] = []
    got = tokenmap.escaped_edits(s, i, end, v, new, seen)
    base = i + 1
    if got is None:
        m.raw = (-1, ())  # not canonical: a size no token has, not tried again
    elif seen == [False]:  # (a `\\u` in it: not noted)
        m.raw = (end - i - 2, tuple((a - base, b - base, r) for a, b, r in got))
    return got
