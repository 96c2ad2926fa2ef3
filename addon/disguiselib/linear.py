"""The linear-time regex engine behind every user-written rule: RE2 (google-re2).

RE2 runs any regex it accepts in time linear in the input (automata, no
backtracking); what it cannot run that way — backreferences, lookaround — it refuses
to compile. Its syntax is the one gitleaks rules use:
https://github.com/google/re2/wiki/Syntax

The package's `re`-like wrapper re-encodes a `str` on every call (a search from an
offset inside a 1 MB text would encode the megabyte again) and builds a match object
per call (1.8 µs against 0.7 µs, measured). So the core calls the compiled object of
its extension module directly, with UTF-8 bytes and byte offsets. That module is the
wrapper's own implementation layer; pyproject pins the major version.
"""

from __future__ import annotations

import re2._re2 as _re2  # type: ignore[import-untyped]

UNANCHORED = _re2.RE2.Anchor.UNANCHORED
ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH

# RE2's memory budget per regex. Its DFA cache lives within it; the default (8 MiB)
# is plenty for single rules, a set of many rules gets more.
_MAX_MEM = 64 << 20


class RegexError(ValueError):
    """A regex RE2 refuses; the message is RE2's reason."""


def _options(longest: bool = False, max_mem: int = _MAX_MEM):
    o = _re2.RE2.Options()
    o.log_errors = False  # errors are raised, not printed on stderr
    o.max_mem = max_mem
    o.longest_match = longest
    return o


class Regex:
    """One compiled regex over UTF-8 bytes.

    `search(b, pos, end)` returns the (start, end) byte span of the leftmost match
    starting at or after pos (Perl's leftmost-first semantics), or None; `groups` the
    spans of every group too. Bytes before pos and after end are context for `\\b`.
    """

    __slots__ = ("pattern", "_rx", "_match", "groupindex", "ngroups")

    def __init__(self, pattern: str, longest: bool = False) -> None:
        self.pattern = pattern
        rx = _re2.RE2(pattern.encode("utf-8"), _options(longest))
        if not rx.ok():
            err = rx.error()
            raise RegexError(err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err))
        self._rx = rx
        self._match = rx.Match
        self.ngroups = rx.NumberOfCapturingGroups()
        self.groupindex = {k.decode("utf-8"): v for k, v in rx.NamedCapturingGroups()}

    def search(self, b: bytes, pos: int = 0, end: int = -1) -> tuple[int, int] | None:
        s, e = self._match(UNANCHORED, b, pos, len(b) if end < 0 else end)[0]
        return None if s < 0 else (s, e)

    def groups(self, b: bytes, pos: int = 0, end: int = -1) -> list[tuple[int, int]] | None:
        """Spans of the whole match and of every group ((-1, -1) for one that did not
        take part), or None."""
        spans = self._match(UNANCHORED, b, pos, len(b) if end < 0 else end)
        return None if spans[0][0] < 0 else spans

    def fullmatch(self, b: bytes) -> bool:
        return self._match(ANCHOR_BOTH, b, 0, len(b))[0][0] >= 0

    def can_match_empty(self) -> bool:
        """Whether some text gives an empty match (probed: at a text's start and end,
        between word and non-word characters, inside words and spaces)."""
        probes = (b"", b"a", b"a b", b" a", b"a ", b"aa", b"  ", b"0", b"_", b".", b"\n")
        for p in probes:
            for i in range(len(p) + 1):
                m = self._match(_re2.RE2.Anchor.ANCHOR_START, p, i, len(p))[0]
                if m[0] >= 0 and m[0] == m[1]:
                    return True
        return False


class Prefilter:
    """Which of several regexes match somewhere in a text: one pass for all of them
    (an RE2 set). Used to skip the exact per-rule search where nothing can match."""

    __slots__ = ("_set",)

    def __init__(self, patterns: list[str]) -> None:
        s = _re2.Set(UNANCHORED, _options(max_mem=256 << 20))
        for p in patterns:
            if s.Add(p.encode("utf-8")) < 0:
                raise RegexError(f"cannot add {p!r} to a set")
        if not s.Compile():
            raise RegexError("the rule set is too large for one prefilter")
        self._set = s

    def match(self, b: bytes) -> list[int]:
        return self._set.Match(b)


def check(pattern: str) -> Regex:
    """Compile a user rule, refusing what the contract refuses. Raises RegexError."""
    rx = Regex(pattern)
    if rx.can_match_empty():
        raise RegexError("can match the empty string")
    return rx
