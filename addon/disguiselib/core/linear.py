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

import functools
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

import re2._re2 as _re2  # type: ignore[import-untyped]

try:
    import hyperscan  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - a platform without its wheel: every pattern is searched
    hyperscan = None  # type: ignore[assignment]

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
    """Which of several regexes may match somewhere in a text, in one pass for all of
    them; a superset, never fewer (the exact search follows for those named).

    Hyperscan (the `hyperscan` package) in its prefilter mode: patterns compiled ahead
    of time into one automaton that scans at memory speed whatever the text. An RE2
    set does the same job, but it builds its automaton lazily and, on text it has not
    seen, with many patterns counting runs of broad classes, its cache thrashes: 0.4 s
    a megabyte of random base64 for the 57 shipped patterns, against 5 ms (bench).

    A superset needs the two engines to read a pattern alike. Hyperscan's ASCII `\\w`,
    `\\d`, `\\s`, `\\b` (no UCP flag) are RE2's; its prefilter mode only widens what it
    cannot run exactly. Always searched instead: a pattern it refuses, and one that folds
    case (`(?i)`) while naming non-ASCII characters (the engines fold those differently).
    Text that is not UTF-8 (a lone surrogate carried through) is searched by every
    pattern. tests/test_rules.py checks the superset on random texts.
    """

    __slots__ = ("_db", "_always", "_n", "_local")

    def __init__(self, patterns: list[str]) -> None:
        self._n = len(patterns)
        self._db, self._always = _hyperscan(tuple(patterns))
        self._local = threading.local()  # a scratch space per thread

    def match(self, b: bytes) -> list[int]:
        """Indices of the patterns that may match in b (UTF-8; anything else: all).
        Without Hyperscan on this platform every pattern is named: each is then searched
        exactly (slower, never wrong). An RE2 set is no substitute: when its automaton
        runs out of memory it answers "no match"."""
        if self._db is None:
            return list(range(self._n))
        try:
            b.decode("utf-8")
        except UnicodeDecodeError:
            return list(range(self._n))
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        hits: set[int] = set(self._always)
        self._db.scan(b, match_event_handler=_collect, context=hits, scratch=scratch)
        return list(hits)


def _collect(pid: int, start: int, end: int, flags: int, hits: set[int]) -> None:
    hits.add(pid)


# code points written as escapes, and Unicode classes: with (?i), folded differently
_NON_ASCII_SYNTAX = re.compile(r"\\x\{|\\[pP]")


@functools.lru_cache(maxsize=32)
def _hyperscan(patterns: tuple[str, ...]):
    """(database, indices always searched); (None, ...) when Hyperscan is unavailable.

    Compiling takes seconds for the shipped set (more on a busy machine), so a compiled
    database is kept on disk (`cache_dir()`), named by a hash of Hyperscan's version,
    the flags and every pattern: a mitmdump that starts with the same rules loads it in
    milliseconds. A cache entry that does not load is compiled again."""
    if hyperscan is None or not patterns:
        return None, ()
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH
    key = hashlib.sha256(
        repr((getattr(hyperscan, "__version__", "?"), flags, patterns)).encode("utf-8", "surrogatepass")
    ).hexdigest()
    cached = _load_cached(key)
    if cached is not None:
        return cached
    always: list[int] = []
    ids: list[int] = []
    exprs: list[bytes] = []
    for i, p in enumerate(patterns):
        if "(?i" in p and (not p.isascii() or _NON_ASCII_SYNTAX.search(p) is not None):
            always.append(i)
        else:
            ids.append(i)
            exprs.append(p.encode("utf-8"))
    db = _compile(exprs, ids, flags)
    if db is None and exprs:
        # one pattern Hyperscan refuses fails the whole set: find which, search those always
        keep = [k for k, e in enumerate(exprs) if _compile([e], [0], flags) is not None]
        always = sorted([*always, *(ids[k] for k in range(len(ids)) if k not in keep)])
        exprs, ids = [exprs[k] for k in keep], [ids[k] for k in keep]
        db = _compile(exprs, ids, flags)
    if db is None:
        return None, tuple(range(len(patterns)))
    _store_cached(key, db, tuple(always))
    return db, tuple(always)


def _compile(exprs: list[bytes], ids: list[int], flags: int):
    if not exprs:
        return None
    db = hyperscan.Database()
    try:
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=[flags] * len(exprs))
    except Exception:  # noqa: BLE001 - any refusal: the caller narrows it down
        return None
    return db


def cache_dir() -> Path:
    """Where compiled prefilter databases are kept: $DISGUISE_CACHE, else
    $XDG_CACHE_HOME/disguise, else ~/.cache/disguise."""
    if os.environ.get("DISGUISE_CACHE"):
        return Path(os.environ["DISGUISE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "disguise"


def _load_cached(key: str):
    path = cache_dir() / f"prefilter-{key}.hsdb"
    try:
        raw = path.read_bytes()
        n = int.from_bytes(raw[:4], "big")
        always = tuple(int(x) for x in raw[4 : 4 + n].decode("ascii").split(",") if x)
        return hyperscan.loadb(raw[4 + n :], hyperscan.HS_MODE_BLOCK), always
    except Exception:  # noqa: BLE001 - no entry, or a broken one: compile
        return None


def _store_cached(key: str, db, always: tuple[int, ...]) -> None:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        head = ",".join(map(str, always)).encode("ascii")
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".prefilter-")
        with os.fdopen(fd, "wb") as f:
            f.write(len(head).to_bytes(4, "big") + head + hyperscan.dumpb(db))
        os.replace(tmp, d / f"prefilter-{key}.hsdb")
    except OSError:
        pass  # a read-only home: compiled again next time, nothing else changes


def check(pattern: str) -> Regex:
    """Compile a user rule, refusing what the contract refuses. Raises RegexError."""
    rx = Regex(pattern)
    if rx.can_match_empty():
        raise RegexError("can match the empty string")
    return rx
