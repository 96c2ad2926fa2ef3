"""Two of the load's refusals (contract §2, sans I/O): a rule set whose disguises, next to
the text around them, make an original or a placeholder.

Masking replaces each original where it stands; the text beside it stays. So what goes
out is a disguise joined with the client's own words, and the provider reads the joint:
- `Acme Corp -> Zenith Labs` beside a rule `Labs Inc`: the client's "Acme Corp Inc" goes
  out as "Zenith Labs Inc", and the provider reads the original `Labs Inc` (likewise
  `Team Zenith` from "Team Acme Corp"). The answer's "Zenith Labs Inc" is ambiguous too.
  Refused (`joined`) where a disguise's proper end is the beginning of an original, or
  its proper start is the end of one, both cut at a word's edge (between a letter or
  digit and another character) in the disguise and in the original: whole words of one
  are whole words of the other. A joint in the middle of a word (`Zenith Labs` +
  `ession_id` spells `session_id`; `TOKEN_A` + `cme Corp` spells `Acme Corp`) needs the
  client to write the rest of an original glued to a disguise: left to the leak guard,
  which refuses any original in the bytes that leave (knowing.py).
- `Bobby -> [EMAIL_1]` under a rule EMAIL: Bobby and the request's first e-mail leave
  under one token; `Alice -> [EMAIL`: the model's `[EMAIL_1]` comes back as `Alice_1]`.
  Refused (`placeholder_shaped`) where a disguise holds a placeholder of a pattern of
  the set, or begins or ends with a piece of one (the placeholder's spelling:
  session.py).

Messages name the rules, never a disguise or an original. Both checks are linear in the
set's size: the originals' pieces cut at their word edges are looked up from each word
edge of each disguise; a disguise without `[` or `]` is no placeholder's neighbour.
"""

from __future__ import annotations

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
    # an original's pieces cut at its own word edges: the beginnings (text after the
    # disguise would complete them) and the ends (text before it would)
    heads: dict[str, int] = {}
    tails: dict[str, int] = {}
    for k, lit in enumerate(literals):
        o = lit.original
        for m in runs(o, 1):
            heads.setdefault(o[: m.start()], k)
            tails.setdefault(o[m.start() :], k)
    for lit, at in edged:
        d = lit.disguise
        for i in at:
            h = heads.get(d[i:])  # d[i:] begins an original up to one of its word edges
            if h is not None:
                _refuse(lit, literals[h], "followed by")
            t = tails.get(d[:i])  # d[:i] ends an original from one of its word edges
            if t is not None:
                _refuse(lit, literals[t], "after")


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
