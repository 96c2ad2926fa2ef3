"""What RE2's refusal of a rule's regex means, said so that a person can act on it (sans
I/O): rules/linear.py raises RegexError with this explanation when RE2 will not compile
a pattern (the construct, where it is, what to write instead)."""

from __future__ import annotations

import re


class RegexError(ValueError):
    """A regex RE2 refuses (or that it would read differently from what was meant); the
    message names the construct, where it is, and what to write instead."""


# RE2 names what it refuses by its text alone ("invalid perl operator: (?="), which says
# little to someone who wrote a Python or PCRE regex. The construct at the place RE2
# stopped (longest match first): what it is, what to write instead, and whether RE2 lacks
# it because it cannot run in linear time (else: RE2's syntax spells it otherwise).
_LINEAR = "RE2 runs every rule in linear time, which this construct cannot be"
_SPELLING = "RE2's syntax has no such construct"
_ALTERNATIVES = "write the alternatives out, e.g. '[^']*'|\"[^\"]*\" for a quoted text"
_GROUP = "put the part to mask in a capture group and name it with the rule's `group` option"
_UNSUPPORTED: dict[str, tuple[str, str, bool]] = {
    "(?=": ("lookahead (?=...)", "match what must follow as part of the regex; " + _GROUP, True),
    "(?!": ("negative lookahead (?!...)",
            "exclude what may not follow with a character class ([^...]), or leave the check to a `validator`", True),
    "(?<=": ("lookbehind (?<=...)", "match what must come before as part of the regex; " + _GROUP, True),
    "(?<!": ("negative lookbehind (?<!...)",
             "use \\b or a character class ([^...]) before the part to mask; " + _GROUP, True),
    "(?>": ("atomic group (?>...)", "write (?:...): RE2 never backtracks, so it gains nothing", True),
    "(?P=": ("backreference (?P=name)", _ALTERNATIVES, True),
    "(?P>": ("recursion (?P>name)", "write the nesting out to the depth needed", True),
    "(?R": ("recursion (?R)", "write the nesting out to the depth needed", True),
    "(?(": ("conditional (?(...)...)", "write the alternatives out with |", True),
    "(?#": ("comment (?#...)", "remove it (a YAML comment, # ..., beside the rule works)", False),
    "(?|": ("branch reset (?|...)", "write (?:...|...) and name the group to mask with `group`", False),
    "(?x": ("verbose flag (?x)", "remove the flag and write the regex without spaces or comments", False),
    "(?": ("group flag", "RE2 knows the flags i, m, s and U, e.g. (?i)", False),
    "\\k": ("backreference \\k<name>", _ALTERNATIVES, True),
    "\\g": ("backreference \\g<...>", _ALTERNATIVES, True),
    "\\Z": ("\\Z", "write \\z for the end of the text", False),
    "\\u": ("\\u escape", "write the character itself, or \\x{hhhh}", False),
    "\\U": ("\\U escape", "write the character itself, or \\x{hhhhhh}", False),
    "\\N": ("named character \\N{...}", "write the character itself, or \\x{hhhh}", False),
    "\\G": ("\\G anchor", "anchor with \\A or ^", False),
    "\\K": ("\\K (keep out)", _GROUP, False),
    "\\h": ("\\h", "write [ \\t] for horizontal space", False),
    "\\e": ("\\e", "write \\x1b", False),
    "\\c": ("control escape \\c", "write \\xhh", False),
    "\\R": ("\\R", "write (?:\\r\\n|\\n|\\r)", False),
    "\\X": ("\\X", "write the characters meant as a class", False),
    "\\L": ("case escape \\L", "write (?i) for case-insensitive matching", False),
}  # fmt: skip
_POSSESSIVE = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\})\+")
_BACKREF = re.compile(r"\\[1-9]")
_SYNTAX = {
    "missing ]": "a [ at character {at} is never closed",
    "missing )": "a ( at character {at} is never closed",
    "unexpected )": "a ) with no ( before it",
    "missing argument to repetition operator": "a repetition with nothing before it, at character {at}",
    "no argument for repetition operator": "a repetition with nothing before it, at character {at}",
    "bad repetition operator": "a repetition of a repetition at character {at}: write one",
    "invalid repetition size": "a repetition count over 1000, or a minimum over the maximum, at character {at}",
    "invalid character class range": "an unknown Unicode class or a bad range at character {at} (RE2 knows "
                                     "\\p{L}, \\p{Lu}, \\p{N}, \\p{Greek} and the like; a range goes low-high)",
    "invalid character class": "a bad character class at character {at}",
    "invalid escape sequence": "an escape RE2 does not know at character {at}",
    "trailing \\": "a \\ at the very end",
    "invalid named capture group": "a bad group name at character {at}: write (?P<name>...)",
    "duplicate capture group name": "a group name used twice, at character {at}",
    "invalid UTF-8": "text that is not UTF-8",
}  # fmt: skip


def explain(pattern: str, err: str) -> str:
    """RE2's refusal of pattern (`kind: argument`, the argument being the pattern from
    where RE2 stopped) as a person can act on: which construct, at which character, what
    to write instead. Only the construct is quoted, never the rest of the pattern (a
    rule may spell out a name it exists to mask)."""
    kind, _, arg = err.partition(": ")
    at = pattern.find(arg) if arg else -1
    # RE2 may cut the argument short ("(?P" for `(?P=name)`): of the places that read
    # so, the first that holds a refused construct.
    i = at
    while i >= 0 and kind == "invalid perl operator":
        if any(pattern.startswith(k, i) for k in _UNSUPPORTED if len(k) > 2):
            at = i
            break
        i = pattern.find(arg, i + 1)
    if at >= 0:
        if kind == "bad repetition operator" and (m := _POSSESSIVE.match(pattern, at)) is not None:
            what = f"possessive quantifier {m.group()}"
            return f"{what} at character {at} is not supported ({_LINEAR}); instead, drop the last +: " + (
                "RE2 never backtracks, so it gains nothing"
            )
        if _BACKREF.match(pattern, at):
            what, instead, linear = f"backreference {pattern[at : at + 2]}", _ALTERNATIVES, True
        else:
            key = next((k for k in sorted(_UNSUPPORTED, key=len, reverse=True) if pattern.startswith(k, at)), None)
            if key is None or (key[0] == "(") != (kind == "invalid perl operator"):
                key = None
            if key is not None:
                what, instead, linear = _UNSUPPORTED[key]
        if "what" in locals():
            return f"{what} at character {at} is not supported ({_LINEAR if linear else _SPELLING}); instead, {instead}"
    say = next((v for k, v in _SYNTAX.items() if kind.startswith(k)), None)
    if say is None:
        return kind + (f" at character {at}" if at >= 0 else "")
    return say.replace("{at}", str(max(at, 0)))
