"""Per-rule options of a pattern, applied to each candidate match (sans I/O): the group
whose span is masked, keywords that must occur as words nearby, the validator; and what
the many-pattern prefilter looks for to name a rule (`prefilter_regex`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..wire.text import decode
from . import validators
from .mappings import Pattern


class Options:
    """A pattern's per-rule options, resolved for the engine (see _accept)."""

    __slots__ = ("groups", "validator", "keywords", "window")

    def __init__(self, groups: tuple[int, ...], validator: str | None, keywords: tuple[str, ...], window: int):
        self.groups = groups
        self.validator = validator
        self.keywords = keywords
        self.window = window

    @staticmethod
    def of(p: Pattern, groupindex: Mapping[str, int]) -> Options | None:
        """None when p has no options (the whole match is masked, as it is)."""
        if not (p.group or p.validator or p.keywords):
            return None
        groups = tuple(g if isinstance(g, int) else groupindex[g] for g in p.group)
        return Options(groups, p.validator, p.keywords, p.window)


def boundary(b: bytes, i: int, step: int) -> int:
    """i moved (by step: -1 left, +1 right) to the start of a UTF-8 character."""
    n = len(b)
    while 0 < i < n and (b[i] & 0xC0) == 0x80:
        i += step
    return max(0, min(i, n))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def prefilter_regex(p: Pattern) -> str:
    """What the prefilter looks for to name p: its `prefilter`, else its keywords when
    they are all ASCII (a match counts only with one of them in the same text, and
    _has_word folds ASCII case only for those, as Hyperscan's `(?i)` does), else its
    regex. A keyword is a literal: cheaper to find than a class counted 32 times."""
    if p.prefilter is not None:
        return p.prefilter
    if p.keywords and all(k.isascii() for k in p.keywords):
        return "(?i:" + "|".join(re.escape(k) for k in p.keywords) + ")"
    return p.regex


def has_word(raw: str, words: tuple[str, ...]) -> bool:
    """One of words (lower case) occurs in raw, case-insensitively, as a word: not after
    a letter, and not followed by a lower-case letter (`tel` in `telemetry`, `call` in
    `callbacks` are not words; `mobileNumber`, `SSN:` are). An ASCII word is looked for
    with ASCII case folded only, as the prefilter does (prefilter_regex). O(len(raw)) a
    word: each occurrence is looked at once."""
    n = len(raw)
    folded = raw.translate(_ASCII_LOWER)
    uni: str | None = None
    for k in words:
        if k.isascii():
            low = folded
        else:
            uni = raw.lower() if uni is None else uni
            if len(uni) != n:  # a character whose lower case is longer: containment alone
                if k in uni:
                    return True
                continue
            low = uni
        i = low.find(k)
        while i >= 0:
            j = i + len(k)
            if (i == 0 or not raw[i - 1].isalpha() or not k[0].isalpha()) and (
                j >= n or not raw[j].islower() or not k[-1].isalpha()
            ):
                return True
            i = low.find(k, i + 1)
    return False


def accept(opts: Options, spans: list[tuple[int, int]], b: bytes, text: str | None) -> tuple[int, int] | None:
    """The byte span to mask for one candidate match (spans: the match's and every
    group's byte spans), or None to reject it.

    Semantics (kept from the mapping format's definition, in characters):
    1. Span: with `group`, the span of the first listed group that took part in the match
       (a group that did not take part, or matched empty, is skipped); no such group
       rejects the candidate. Without `group`, the whole match.
    2. Keywords: one of them (lower-cased at load) must occur as a word (has_word) in
       the match with `window` characters either side of it (clipped to the text),
       case-insensitively.
    3. Validator: validators.check(name, text, a, b) on the span must be true.
    The accepted span, not the match, is what find() compares for leftmost selection
    (ties: the earlier rule) and what mask() replaces; the rest of the match (context
    such as `password: `) stays. A rejected candidate makes find() search the same rule
    again from the match's start + 1 character.
    Cost: O(match length + window) per candidate: a validator reads its span and a few
    characters around it; only a slice around the match is decoded, never the text.
    text is the decoded string when it is ASCII (offsets in bytes and characters agree),
    else None.
    """
    ms, me = spans[0]
    if opts.groups:
        for g in opts.groups:
            a, e = spans[g]
            if a >= 0 and e > a:
                break
        else:
            return None
    else:
        a, e = ms, me
    if opts.keywords:
        w = opts.window
        if text is not None:
            raw = text[max(0, ms - w) : me + w]
        else:  # w characters are at most 4w bytes: decode that much, then count characters
            lo = boundary(b, max(0, ms - 4 * w), 1)
            hi = boundary(b, me + 4 * w, -1)
            before = decode(b[lo:ms])[-w:] if w else ""
            raw = before + decode(b[ms:me]) + decode(b[me:hi])[:w]
        if not has_word(raw, opts.keywords):
            return None
    if opts.validator is not None:
        if text is not None:
            ok = validators.check(opts.validator, text, a, e)
        else:  # validators read their span and a few characters around it
            lo = boundary(b, max(0, a - 64), 1)
            hi = boundary(b, e + 64, -1)
            pre = decode(b[lo:a])
            ok = validators.check(opts.validator, pre + decode(b[a:hi]), len(pre), len(pre) + len(decode(b[a:e])))
        if not ok:
            return None
    return a, e
