"""Two of the load's refusals (contract §2, sans I/O): a rule set whose disguises, next to
the text around them, make an original or a placeholder.

Masking replaces each original where it stands; the text beside it stays. So what goes
out is a disguise joined with the client's own words, and the provider reads the joint:
- `Acme Corp -> Zenith Labs` beside a rule `Labs Inc`: the client's "Acme Corp Inc" goes
  out as "Zenith Labs Inc", and the provider reads the original `Labs Inc` (likewise
  `Team Zenith` from "Team Acme Corp"). The answer's "Zenith Labs Inc" is ambiguous too.
  Refused (`joined`) where a disguise's proper end is the beginning of an original, or
  its proper start is the end of one, cut at a word's edge inside the disguise (between
  a letter or digit and another character). A joint in the middle of a
  word of the disguise (`Zenith Labs` + `ession_id` spells `session_id`) needs the
  client to write the rest of an original glued to another one: left to the leak
  guard, which refuses any original in the bytes that leave (knowing.py).
- `Bobby -> [EMAIL_1]` under a rule EMAIL: Bobby and the request's first e-mail leave
  under one token; `Alice -> [EMAIL`: the model's `[EMAIL_1]` comes back as `Alice_1]`.
  Refused (`placeholder_shaped`) where a disguise holds a placeholder of a pattern of
  the set, or begins or ends with a piece of one (the placeholder's spelling:
  session.py).

Messages name the rules, never a disguise or an original. Both checks are linear in the
set's size (up to a log): a sorted list of the originals, and of them reversed, is
searched from each word edge of each disguise; a disguise without `[` or `]` is no
placeholder's neighbour.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from typing import Protocol

from ..errors import MappingError
from .session import PH_CLOSE, PH_MAX_DIGITS, PH_NUMBER, PH_OPEN, PH_SEP, ph_regex


class Literal(Protocol):  # mappings.Literal (frozen; mappings imports this module)
    @property
    def original(self) -> str: ...
    @property
    def disguise(self) -> str: ...
    @property
    def source(self) -> str: ...


class Pattern(Protocol):  # mappings.Pattern
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...


def joined(literals: Sequence[Literal]) -> None:
    """Refuse a set where a disguise, joined at a word's edge with the text beside it,
    can spell an original (module docstring). Raises MappingError naming both rules."""
    runs = _RUN.finditer
    edged = [(lit, [m.start() for m in runs(lit.disguise, 1)]) for lit in literals if not lit.disguise.isalnum()]
    edged = [(lit, at) for lit, at in edged if at]
    if not edged:
        return
    heads, tails = _Ends([lit.original for lit in literals]), _Ends([lit.original[::-1] for lit in literals])
    for lit, at in edged:
        d = lit.disguise
        for i in at:
            k = heads.begun(d[i:])  # d[i:] begins an original: text after d completes it
            if k is not None:
                _refuse(lit, literals[k], "followed by")
            k = tails.begun(d[i - 1 :: -1])  # d[:i] ends an original: text before d begins it
            if k is not None:
                _refuse(lit, literals[k], "after")


class _Ends:
    """Which of some texts (originals, or originals reversed) begins with a given piece
    and is longer: a sorted list searched by bisection, behind a set of every text's
    first two characters that turns most pieces away with one look-up."""

    def __init__(self, texts: list[str]) -> None:
        self.order = sorted(range(len(texts)), key=texts.__getitem__)
        self.keys = [texts[k] for k in self.order]
        self.two = {t[:2] for t in texts}

    def begun(self, piece: str) -> int | None:
        """The index (in the texts given) of one that begins with piece and is longer."""
        if piece[:2] not in self.two and len(piece) > 1:
            return None
        keys = self.keys
        k = bisect.bisect_left(keys, piece)
        while k < len(keys) and keys[k] == piece:  # the whole original: a disguise that holds it, refused before
            k += 1
        return self.order[k] if k < len(keys) and keys[k].startswith(piece) else None


# Where a word begins or ends inside a disguise: between a letter or digit and another
# character, where a run of either begins (after the disguise's first character: its own
# start and end are not edges: a disguise that begins an original, `nova` of
# `nova-internal`, is the rule's own choice, and the guard's). Disguises are ASCII
# (mappings.validate). A regex and str.isalnum, not a loop over characters.
_RUN = re.compile(r"(?<=[A-Za-z0-9])[^A-Za-z0-9]+|(?<=[^A-Za-z0-9])[A-Za-z0-9]+")


def _refuse(lit: Literal, other: Literal, where: str) -> None:
    raise MappingError(
        f"{lit.source}: disguise {where} other text spells the original of {other.source} (a disguise "
        "must not begin or end with part of an original at a word's edge: the provider would read it)"
    )


def placeholder_shaped(literals: Sequence[Literal], patterns: Sequence[Pattern]) -> None:
    """Refuse a literal whose disguise holds a placeholder of one of patterns, or begins
    or ends with a piece of one (module docstring). Raises MappingError naming both."""
    if not literals or not patterns:
        return
    meets = _Shapes([p.name for p in patterns])
    for lit in literals:
        d = lit.disguise
        if (PH_OPEN in d or PH_CLOSE in d) and meets(d):
            p = next(p for p in patterns if _Shapes([p.name])(d))
            raise MappingError(
                f"{lit.source}: disguise holds a placeholder of {p.source} ({PH_OPEN}{p.name}{PH_SEP}n{PH_CLOSE}), "
                "or begins or ends with a piece of one: two originals would share a disguise, or a "
                "placeholder would be restored as this literal"
            )


class _Shapes:
    """Does a text hold a placeholder of these rule names, or begin with the end of
    one, or end with the beginning of one?"""

    def __init__(self, names: list[str]) -> None:
        alts = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
        heads = {n[:k] for n in names for k in range(1, len(n) + 1)}
        ends = {n[k:] for n in names for k in range(len(n))}
        o, s, c = map(re.escape, (PH_OPEN, PH_SEP, PH_CLOSE))
        by_len = lambda xs: "|".join(map(re.escape, sorted(xs, key=len, reverse=True)))  # noqa: E731
        self.whole = re.compile(ph_regex(names))
        # a placeholder's beginning (without its close): `[`, `[EM`, `[EMAIL_`, `[EMAIL_12`
        self.begins = re.compile(f"{o}(?:(?:{alts}){s}(?:{PH_NUMBER})?|{by_len(heads)})?")
        # a placeholder's end: `]`, `2]`, `_12]`, `IL_12]`, `[EMAIL_12]`
        self.ends = re.compile(f"(?:(?:{o}(?:{alts})|{by_len(ends)})?{s}{PH_NUMBER}|[0-9]{{0,{PH_MAX_DIGITS}}}){c}")

    def __call__(self, d: str) -> bool:
        if self.whole.search(d):
            return True
        if any(self.begins.fullmatch(d, i) for i in _all(d, PH_OPEN)):
            return True
        return any(self.ends.fullmatch(d, 0, j + 1) for j in _all(d, PH_CLOSE))


def _all(d: str, c: str) -> Iterator[int]:
    i = d.find(c)
    while i >= 0:
        yield i
        i = d.find(c, i + 1)
