"""Per-rule options of a pattern, applied to each candidate match (sans I/O): the group
whose span is masked, keywords that must occur as words nearby, the validator; and what
the many-pattern prefilter looks for to name a rule (`prefilter_regex`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from ..wire.text import decode
from . import linear, validators
from .mappings import Pattern


class Options:
    """A pattern's per-rule options, resolved for the engine (see _accept)."""

    __slots__ = ("groups", "validator", "keywords", "window", "min_bytes")

    def __init__(self, groups: tuple[int, ...], validator: str | None, keywords: tuple[str, ...], window: int):
        self.groups = groups
        self.validator = validator
        self.keywords = keywords
        self.window = window
        # the validator's least length (validators.SHAPES): a span of fewer bytes has
        # fewer characters, and is rejected before anything else is read
        shape = validators.SHAPES.get(validator) if validator is not None else None
        self.min_bytes = shape.min_chars if shape is not None else 1

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


def skip_regex(
    regex: str, groups: tuple[int | str, ...], groupindex: Mapping[str, int], validator: str | None
) -> str | None:
    """A second regex that says where this rule's candidates can be accepted at all, so
    that find() need not look at the others (`patterns.next_match`), or None.

    A rule whose validator has a shape (validators.SHAPES: at least N characters, none
    of some, a digit when short) and whose masked groups are each one character class
    repeated (`(?P<v>[^"]+)`) gets its regex with each such group in that shape: the
    class C (a negated class also without what the validator never takes) at least N
    times (`[^"]{8,}`), or, where a span shorter than M must hold a digit,
    `(?:C{M,}|C*\\p{N}C*)`. Every candidate the validator can accept starts where this
    regex matches: its path through the rule masks one group (the groups lie in
    different branches of an alternation that is not repeated, so a path takes at most
    one of them, once), and that group's text is in the new form too, so the new regex
    takes that path. So no start where it cannot match needs the rule's own search
    (the SECRET rule: some 650 candidates a megabyte of a coding session, 6 accepted,
    each search some 5 µs). None where that cannot be shown from the regex's text:
    no such validator, a group that is not a class repeated by `+`, two groups one path
    can take, a group inside a repetition."""
    shape = validators.SHAPES.get(validator or "")
    if shape is None or not groups:
        return None
    names = {v: k for k, v in groupindex.items()}
    wanted = {names.get(g) if isinstance(g, int) else g for g in groups}
    if None in wanted:
        return None
    # one pass over the syntax: per group, the path of (construct, branch) to it
    stack: list[list] = [[-1, 0, False]]  # [id, branch, repeated]; -1: the whole regex
    frames: list[list] = [stack[0]]
    paths: dict[str, list[list]] = {}
    where: dict[str, list[tuple[int, int]]] = {}
    bodies: dict[str, int] = {}  # group name -> index of its `(`
    chars = list(linear.syntax_chars(regex))
    for i, c in chars:
        if c == "(":
            frame = [len(frames), 0, False]
            frames.append(frame)
            for prefix in ("(?P<", "(?<"):
                if regex.startswith(prefix, i):
                    name = regex[i + len(prefix) : regex.find(">", i)]
                    if name in wanted:
                        paths[name] = [*stack, frame]  # the frames, for their repetition
                        where[name] = [(f[0], f[1]) for f in paths[name]]  # the branches taken now
                        bodies[name] = i
            stack.append(frame)
        elif c == "|":
            stack[-1][1] += 1
        elif c == ")":
            if len(stack) < 2:
                return None
            frame = stack.pop()
            nxt = regex[i + 1 : i + 2]
            frame[2] = nxt in ("*", "+", "{")
    if set(paths) != wanted:
        return None
    # each group: `(?P<name>[...]+)` and nothing in its path repeated
    edits: list[tuple[int, int]] = []  # per group: its class's `[` and `]`
    for name, at in bodies.items():
        if any(f[2] for f in paths[name]):
            return None
        head = regex.find(">", at) + 1
        cls = [(i, c) for i, c in chars if head <= i and c in "[]"][:2]
        if len(cls) != 2 or cls[0] != (head, "[") or cls[1][1] != "]" or regex[cls[1][0] + 1 : cls[1][0] + 3] != "+)":
            return None
        edits.append((head, cls[1][0]))
    # no path takes two groups: the first construct their paths part in is an
    # alternation (the branches differ)
    group_paths = [where[g] for g in bodies]
    for x in range(len(group_paths)):
        for y in range(x + 1, len(group_paths)):
            a, b = group_paths[x], group_paths[y]
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            if k >= min(len(a), len(b)) or a[k][0] != b[k][0]:
                return None  # one inside the other, or side by side in one branch
    out = regex
    for i, j in sorted(edits, reverse=True):
        # `[...]+` -> the class C (a negated one also without what the validator never
        # takes) in the validator's shape
        c = regex[i:j] + (shape.never if shape.never and regex.startswith("[^", i) else "") + "]"
        if shape.digit_below:
            form = f"(?:{c}{{{shape.digit_below},}}|{c}*\\p{{N}}{c}*)"
        else:
            form = f"{c}{{{shape.min_chars},}}"
        out = out[:i] + form + out[j + 2 :]
    return out


def has_word(raw: str, words: tuple[str, ...]) -> bool:
    """One of words (lower case) occurs in raw, case-insensitively, as a word: not after
    a letter, and not followed by a lower-case letter (`tel` in `telemetry`, `call` in
    `callbacks` are not words; `mobileNumber`, `SSN:` are). An ASCII word is looked for
    with ASCII case folded only, as the prefilter does (prefilter_regex). O(len(raw)) a
    word: each occurrence is looked at once. Where none of the ASCII words occurs at all
    (one search for them all, `_any_of`), only the others are looked for: most
    candidates of a keyword rule have none near them (a million hex ids, a twentieth of
    them a phone number's candidates: 30 words, 30 searches each)."""
    folded = raw.translate(_ASCII_LOWER)
    anywhere, others = _any_of(words)
    if anywhere is not None and anywhere.search(folded) is None:
        if not others:
            return False
        words = others
    return py_has_word(raw, words, folded)


@functools.lru_cache(maxsize=256)
def _any_of(words: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """(one regex finding any of words' ASCII ones, or None; the words that are not ASCII)."""
    plain = [k for k in words if k.isascii()]
    rx = re.compile("|".join(map(re.escape, plain))) if plain else None  # (whether any occurs: no order)
    return rx, tuple(k for k in words if not k.isascii())


def py_has_word(raw: str, words: tuple[str, ...], folded: str | None = None) -> bool:
    """has_word, each word looked for in turn (the reference its one search is held to)."""
    n = len(raw)
    if folded is None:
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
    if e - a < opts.min_bytes:
        return None  # the validator would reject it (validators.SHAPES)
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
