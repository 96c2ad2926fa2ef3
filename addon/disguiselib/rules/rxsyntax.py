"""Strip-rule regexes rewritten for streaming: a bounded form and its prefix closure.

A strip rule is matched inside a running stream, so the hold-back window must know
whether the end of the text so far could still grow into a match. With a backtracking
engine that is `partial=True` matching; with a linear-time engine (RE2, which has no
partial mode) it is an ordinary search for a second regex: the *proper-prefix closure*
P(R) = {u : uv matches R for some non-empty v}, built here from R's syntax tree.

    P(c)          = {ε}                    one character (literal, class, `.`)
    P(x y)        = P(x) ∪ x·P(y)
    P(x | y)      = P(x) ∪ P(y)
    P(x{m,n})     = x{0,n-1}·P(x)          n ≥ 1; for n = 0, ∅

Every unbounded repetition (`*`, `+`, `{n,}`) is first bounded to MAX_REPEAT, so every
strip match has a maximum length (`Bounded.width`) and a window never holds more than
that: past it, held text is released as text. Refused: anchors to the start or end of
the text (`^ $ \\A \\Z`: no meaning inside a stream), word boundaries (`\\b \\B`: they
would need the character before a held tail, which was already released), and what the
linear-time engine cannot run (backreferences, lookaround, possessive and atomic groups).

The tree comes from Python's own regex parser (`re._parser`), so strip rules use the
syntax RE2 and Python share: no `\\p{..}` classes, `[[:alpha:]]` or `\\Q..\\E`. The
rewritten text is compiled by RE2 — both the match and its closure — so the two agree
on what `\\w`, `\\s` and `.` mean (RE2: ASCII classes).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from ..errors import unquoted
from . import linear

try:  # Python 3.11+: the parser is private but stable across 3.11-3.13
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser as P  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

# What an unbounded repetition in a strip rule becomes. Reply-routing tags and the
# like are short; 256 keeps RE2's programs small (it refuses counts over 1,000).
MAX_REPEAT = 256
# The longest strip match a window ever holds back for (after bounding).
MAX_WIDTH = 4096
# A regex that matches nothing (RE2 has no lookahead for `(?!)`).
NEVER = r"[^\x00-\x{10ffff}]"


class SyntaxRefused(ValueError):
    """The regex cannot be used as a strip rule; the message says why."""


@dataclass(frozen=True)
class Bounded:
    regex: str  # R with every unbounded repetition bounded (RE2 syntax)
    closure: str  # P(R) (RE2 syntax); may match the empty string
    width: int  # the longest match of `regex`, in characters


_CATEGORY = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip
_FLAGS = ((C.SRE_FLAG_IGNORECASE, "i"), (C.SRE_FLAG_MULTILINE, "m"), (C.SRE_FLAG_DOTALL, "s"))
_REFUSED_AT = {
    C.AT_BEGINNING: "^", C.AT_BEGINNING_STRING: r"\A", C.AT_END: "$", C.AT_END_STRING: r"\Z",
}  # fmt: skip
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ !\"#%&',/:;<=>@`~")


def _char(c: int, in_class: bool = False) -> str:
    ch = chr(c)
    if ch in _PLAIN and not (in_class and ch in "-"):
        return ch
    if 0x20 < c < 0x7F:
        return "\\" + ch  # punctuation: escaped, which RE2 accepts for any of it
    return f"\\x{{{c:x}}}"


def _flag_text(flags: int) -> str:
    return "".join(letter for bit, letter in _FLAGS if flags & bit)


# RE2 syntax that Python's parser (which builds a strip rule's streaming form) does not
# read, or reads otherwise: what a strip rule writes instead.
_PYTHON_READS_OTHERWISE = {
    "bad escape \\p": "Unicode classes (\\p{..}) are not supported in strip rules: list the characters as a "
                       "class, e.g. [A-Za-z\u00c0-\u00ff] written with the characters themselves",
    "bad escape \\P": "Unicode classes (\\P{..}) are not supported in strip rules: list the characters as a "
                       "negated class, [^...]",
    "bad escape \\Q": "\\Q...\\E is not supported in strip rules: escape each special character with \\",
    "bad escape \\z": "anchors have no meaning inside a stream (strip rules are matched in running text)",
    "bad escape \\C": "\\C is not supported in strip rules: write . for any character",
    "incomplete escape \\x": "\\x{...} is not supported in strip rules: write the character itself, or \\xhh",
    "unknown extension ?U": "the U flag is not supported in strip rules: write lazy repetitions (*?, +?) instead",
    "unknown extension ?<": "write a named group as (?P<name>...) in strip rules",
}  # fmt: skip


class _Rewriter:
    def __init__(self, rx: str) -> None:
        opened = -1
        for i, c in linear.syntax_chars(rx):
            if c == "[":
                opened = i
            elif c == "]" and opened >= 0:
                # Python reads `[[:alpha:]]` as a class of `[:alph` and a `]`: another rule.
                if re.search(r"\[:\^?[a-z]+:\]", rx[opened + 1 : i]):
                    raise SyntaxRefused(
                        f"POSIX classes ([[:name:]], at character {opened}) are not supported in strip rules: "
                        "write the class out, e.g. [A-Za-z] for [[:alpha:]]"
                    )
                opened = -1
        try:
            with warnings.catch_warnings():
                # `[[` in a class: "possible nested set" in some future Python; read as a
                # `[` today, as RE2 reads it.
                warnings.simplefilter("ignore", FutureWarning)
                self.tree = P.parse(rx)
        except re.error as e:
            why = next((v for k, v in _PYTHON_READS_OTHERWISE.items() if str(e).startswith(k)), None)
            raise SyntaxRefused(why or f"does not parse: {unquoted(str(e))}") from None

    # -- emit: the (bounded) regex text of a node sequence ------------------------------

    def seq(self, items) -> str:
        return "".join(self.node(op, av) for op, av in items)

    def node(self, op, av) -> str:
        if op is C.LITERAL:
            return _char(av)
        if op is C.NOT_LITERAL:
            return "[^" + _char(av, True) + "]"
        if op is C.ANY:
            return "."
        if op is C.IN:
            return self.cls(av)
        if op is C.AT:
            if av in _REFUSED_AT:
                raise SyntaxRefused(
                    f"anchor {_REFUSED_AT[av]} has no meaning inside a stream (strip rules are matched in running text)"
                )
            # \b would need the character before a held tail, which a window has already
            # released: not supported in strip rules (yet), rather than half supported.
            raise SyntaxRefused(r"word boundaries (\b, \B) are not supported in strip rules")
        if op is C.BRANCH:
            return "(?:" + "|".join(self.seq(b) for b in av[1]) + ")"
        if op is C.SUBPATTERN:
            _group, add, delete, sub = av
            return "(?" + _flag_text(add) + ("-" + _flag_text(delete) if delete else "") + ":" + self.seq(sub) + ")"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            hi = MAX_REPEAT if hi is C.MAXREPEAT else hi
            if lo > MAX_REPEAT or hi > 1000:
                raise SyntaxRefused(f"repetition count over {max(MAX_REPEAT, 1000)}")
            lo = min(lo, hi)
            q = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            return "(?:" + self.seq(sub) + ")" + q + ("?" if op is C.MIN_REPEAT else "")
        raise SyntaxRefused(_unsupported(op))

    def cls(self, items) -> str:
        out = []
        neg = False
        for op, av in items:
            if op is C.NEGATE:
                neg = True
            elif op is C.LITERAL:
                out.append(_char(av, True))
            elif op is C.RANGE:
                out.append(_char(av[0], True) + "-" + _char(av[1], True))
            elif op is C.CATEGORY:
                if av not in _CATEGORY:
                    raise SyntaxRefused(_unsupported(av))
                out.append(_CATEGORY[av])
            else:
                raise SyntaxRefused(_unsupported(op))
        return "[" + ("^" if neg else "") + "".join(out) + "]"

    # -- width: the longest match of a node sequence, after bounding ------------------

    def width(self, items) -> int:
        total = 0
        for op, av in items:
            if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
                total += 1
            elif op is C.BRANCH:
                total += max(self.width(b) for b in av[1])
            elif op is C.SUBPATTERN:
                total += self.width(av[3])
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
                lo, hi, sub = av
                total += (MAX_REPEAT if hi is C.MAXREPEAT else hi) * self.width(sub)
        return total

    # -- closure: P(node sequence) as regex text; None for the empty set ---------------

    def closure(self, items) -> str | None:
        items = list(items)
        if not items:
            return None
        (op, av), rest = items[0], items[1:]
        head = self.node_closure(op, av)
        tail = self.closure(rest)
        alts = []
        if head is not None:
            alts.append(head)
        if tail is not None:
            alts.append(self.node(op, av) + "(?:" + tail + ")")
        if not alts:
            return None
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    def node_closure(self, op, av) -> str | None:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return ""
        if op is C.BRANCH:
            alts = [c for b in av[1] if (c := self.closure(b)) is not None]
            return None if not alts else "(?:" + "|".join(alts) + ")"
        if op is C.SUBPATTERN:
            _group, add, delete, sub = av
            inner = self.closure(sub)
            if inner is None:
                return None
            return "(?" + _flag_text(add) + ("-" + _flag_text(delete) if delete else "") + ":" + inner + ")"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            _lo, hi, sub = av
            hi = MAX_REPEAT if hi is C.MAXREPEAT else hi
            inner = self.closure(sub)
            if hi == 0 or inner is None:
                return None
            prefix = "" if hi == 1 else "(?:" + self.seq(sub) + f"){{0,{hi - 1}}}"
            return prefix + "(?:" + inner + ")"
        raise SyntaxRefused(_unsupported(op))


def _unsupported(op: object) -> str:
    name = str(op).lower()
    if "groupref" in name:
        return "backreferences cannot run in linear time"
    if "assert" in name:
        return "lookaround cannot run in linear time"
    if "possessive" in name or "atomic" in name:
        return "possessive quantifiers and atomic groups are not supported"
    return f"unsupported construct ({name})"


def bounded(rx: str) -> Bounded:
    """The streaming form of a strip rule. Raises SyntaxRefused."""
    rw = _Rewriter(rx)
    flags = rw.tree.state.flags
    if flags & C.SRE_FLAG_VERBOSE:
        flags &= ~C.SRE_FLAG_VERBOSE  # the parser already dropped the whitespace
    prefix = _flag_text(flags)
    prefix = f"(?{prefix})" if prefix else ""
    body = rw.seq(rw.tree)
    closure = rw.closure(list(rw.tree))
    width = rw.width(rw.tree)
    if width > MAX_WIDTH:
        raise SyntaxRefused(
            f"a match can be {width} characters long (more than {MAX_WIDTH}, with each unbounded "
            f"repetition counted as {MAX_REPEAT}); bound the repetitions"
        )
    return Bounded(prefix + body, prefix + (closure if closure is not None else NEVER), width)
