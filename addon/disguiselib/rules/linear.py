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

import ctypes
import functools
import hashlib
import re
import threading
from collections.abc import Callable, Sequence

import re2._re2 as _re2  # type: ignore[import-untyped]

from . import casefold, hscache
from .rxexplain import RegexError, explain

try:
    import hyperscan  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - a platform without its wheel: every pattern is searched
    hyperscan = None  # type: ignore[assignment]

UNANCHORED = _re2.RE2.Anchor.UNANCHORED
ANCHOR_START = _re2.RE2.Anchor.ANCHOR_START
ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH

# RE2's memory budget per regex. Its DFA cache lives within it; the default (8 MiB)
# is plenty for single rules, a set of many rules gets more.
_MAX_MEM = 64 << 20


def _options(longest: bool = False, max_mem: int = _MAX_MEM, capture: bool = True):
    o = _re2.RE2.Options()
    o.log_errors = False  # errors are raised, not printed on stderr
    o.max_mem = max_mem
    o.longest_match = longest
    o.never_capture = not capture
    return o


class Regex:
    """One compiled regex over UTF-8 bytes.

    `search(b, pos, end)` returns the (start, end) byte span of the leftmost match
    starting at or after pos (Perl's leftmost-first semantics), or None; `groups` the
    spans of every group too. Bytes before pos and after end are context for `\\b`.
    """

    __slots__ = ("pattern", "_opts", "_match", "groupindex", "ngroups")

    def __init__(self, pattern: str, longest: bool = False, capture: bool = True) -> None:
        """capture=False: groups are read as (?:...) (search() alone is wanted: RE2 then
        finds a match's span with its automata only, without the submatch engine).
        Compiled here to refuse what RE2 refuses, then let go until the first search (`_first`):
        most patterns are never searched in a process (the shipped set compiled: ~2 MiB)."""
        self.pattern = pattern
        self._opts = _options(longest, capture=capture)
        rx = _re2.RE2(pattern.encode("utf-8"), self._opts)
        if not rx.ok():
            err = rx.error()
            raise RegexError(explain(pattern, err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)))
        self.ngroups = rx.NumberOfCapturingGroups()
        self.groupindex = {k.decode("utf-8"): v for k, v in rx.NamedCapturingGroups()}
        self._match = self._first

    def _first(self, anchor, b: bytes, pos: int, end: int):  # noqa: ANN001, ANN202 - RE2's own types
        """The first search: compiled again, its Match kept (two racing threads: either)."""
        rx = _re2.RE2(self.pattern.encode("utf-8"), self._opts)
        if not rx.ok():  # compiled in __init__ with the same options: never; if so, no search passes unmade
            raise RegexError(explain(self.pattern, str(rx.error())))
        self._match = rx.Match
        return rx.Match(anchor, b, pos, end)

    compiled = property(lambda self: self._match != self._first, doc="Searched once: holds a compiled regex.")

    def search(self, b: bytes, pos: int = 0, end: int = -1) -> tuple[int, int] | None:
        s, e = self._match(UNANCHORED, b, pos, len(b) if end < 0 else end)[0]
        return None if s < 0 else (s, e)

    def groups(self, b: bytes, pos: int = 0, end: int = -1) -> list[tuple[int, int]] | None:
        """Spans of the whole match and of every group ((-1, -1) for one that did not
        take part), or None."""
        spans = self._match(UNANCHORED, b, pos, len(b) if end < 0 else end)
        return None if spans[0][0] < 0 else spans

    def groups_at(self, b: bytes, pos: int) -> list[tuple[int, int]] | None:
        """groups() of the match that starts at pos itself (the one a search from pos or
        before returns when it starts at pos), or None."""
        spans = self._match(ANCHOR_START, b, pos, len(b))
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
    `\\d`, `\\b` (no UCP flag) are RE2's; its `\\s` also holds the vertical tab, which
    RE2's does not (`[^\\s]` would take `\\x0b` in RE2 and not in Hyperscan: a secret
    after a vertical tab went unnamed), so `\\s` and `\\S` are spelled as RE2's classes
    for Hyperscan (`re2_spaces`). Its prefilter mode only widens what it cannot run
    exactly. Always searched instead: a pattern it refuses, and one that folds
    case (`(?i)`) while naming non-ASCII characters that have a case (the engines fold
    those differently; casefold.py: a no-break space in a class is read alike).
    Text that is not UTF-8 (a lone surrogate carried through) is searched by every
    pattern. tests/test_rules.py checks the superset on random texts.
    """

    __slots__ = ("_db", "_always", "_n", "_local", "_gate", "_patterns", "_located")

    def __init__(self, patterns: list[str]) -> None:
        self._n = len(patterns)
        self._patterns = tuple(patterns)
        self._located: tuple | threading.Thread | None = None  # gate_ends': (database, always searched)
        self._local = threading.local()  # a scratch space per thread
        # match_many's gate: the patterns read line by line (`^`, `$` at each line; None if
        # one anchors on the whole text, `\A`, `\z`), each reported once; match()'s too: `^`,
        # `$` at every line only widen what may match (none is negated), one database held.
        self._gate = None
        if not any(_WHOLE_TEXT_ANCHOR.search(p) for p in patterns):
            self._db, self._always = _hyperscan(tuple(patterns), gate=True)
            self._gate = self._db
        else:
            self._db, self._always = _hyperscan(tuple(patterns))

    def match_many(self, bs: list[bytes] | list[bytes | memoryview], longest: int = -1) -> list[Sequence[int]]:
        """[sorted(match(b, utf8=True)) if b else () for b in bs] (each b UTF-8), with
        far fewer scans: short texts are taken _GATE_PIECES at a time, joined by line
        breaks, and the gate scans the block once; a block where no pattern may match is
        answered for all its texts at once (only the patterns always searched), any
        other text by match(). A pattern that may match in a text alone may match in its
        line of the block (`^` and `$` hold at a line break as at a text's ends, `\\b` as
        well, and nothing else of a pattern the gate takes looks past its line): a
        superset still, and linear (each byte is scanned at most twice). A call a text
        cost 1–3 µs: the 1M-element tool input of issue 27. longest: none is longer, or -1."""
        always = tuple(sorted(self._always))  # one object for every text of a clean block
        longest = max(map(len, bs), default=0) if longest < 0 else longest  # (a pass: 0.02 us a text)
        if self._gate is not None and bs and all(bs) and longest * _GATE_PIECES <= _GATE_BYTES:
            return self._blocks(bs, b"\n".join)
        out: list[Sequence[int]] = [()] * len(bs)
        block: list[int] = []
        size = 0

        def flush() -> None:
            hits: set[int] = set()
            self._gate.scan(b"\n".join([bs[j] for j in block]), match_event_handler=_collect, context=hits,  # type: ignore[union-attr]
                            scratch=self._scratch(gate=True))  # fmt: skip
            for j in block:
                out[j] = sorted(self.match(bs[j], utf8=True)) if hits else always

        for j, b in enumerate(bs):
            if not b:
                continue
            if self._gate is None or len(b) >= _GATE_BYTES:
                out[j] = sorted(self.match(b, utf8=True))
                continue
            block.append(j)
            size += len(b)
            if len(block) >= _GATE_PIECES or size >= _GATE_BYTES:
                flush()
                block, size = [], 0
        if block:
            flush()
        return out

    def match_many_ascii(self, texts: list[str], longest: int) -> list[Sequence[int]]:
        """match_many of ASCII texts, none longer than longest (their bytes are their
        characters): where they are cut in blocks, each block is encoded as it is
        scanned, not each text (a million array elements: a million bytes objects)."""
        if self._gate is not None and texts and all(texts) and longest * _GATE_PIECES <= _GATE_BYTES:
            return self._blocks(texts, lambda part: "\n".join(part).encode())
        return self.match_many(list(map(str.encode, texts)), longest)

    def _blocks(self, items: list, join: Callable[[list], bytes]) -> list[Sequence[int]]:
        """Short texts only (a long array's elements): blocks of _GATE_PIECES in a row, none
        larger than _GATE_BYTES, each joined by a line break (join) and scanned by the
        gate, cut without a Python step per text; a text of a block where something may
        match is asked alone (bytes, or an ASCII str encoded)."""
        always = tuple(sorted(self._always))
        out: list[Sequence[int]] = [always] * len(items)
        for a in range(0, len(items), _GATE_PIECES):
            hits: set[int] = set()
            self._gate.scan(join(items[a : a + _GATE_PIECES]), match_event_handler=_collect, context=hits,  # type: ignore[union-attr]
                            scratch=self._scratch(gate=True))  # fmt: skip
            if hits:
                for j in range(a, min(a + _GATE_PIECES, len(items))):
                    b = items[j]
                    out[j] = sorted(self.match(b.encode() if type(b) is str else b, utf8=True))
        return out

    @property
    def gated(self) -> bool:
        """Does the gate alone say where no pattern may match (a gate, nothing always
        searched)? Then gate_finds speaks for every pattern."""
        return self._gate is not None and not self._always

    def gate_finds(self, b: bytes | memoryview) -> bool:
        """May a pattern match in some line of b (UTF-8)? (Only where gated.)"""
        hits: set[int] = set()
        self._gate.scan(b, match_event_handler=_collect, context=hits, scratch=self._scratch(gate=True))  # type: ignore[union-attr]
        return bool(hits)

    def gate_ends(self, b: bytes, limit: int, wait: float = 0) -> list[int] | None:
        """Where in b (UTF-8) each match the gate's patterns may make in one of its lines
        ends: every end offset (the same patterns without HS_FLAG_SINGLEMATCH); None where
        not gated, past limit ends (the scan stopped), or while that database is made.
        The first call loads it from the disk cache (milliseconds), else starts making it
        in a thread of its own and waits at most wait seconds: compiling takes seconds for
        the shipped set, which a body masked on the event loop would stall every stream
        for (Hyperscan lets the GIL go meanwhile)."""
        if not self.gated:
            return None
        if self._located is None:
            with _LOCATING:
                if self._located is None:
                    self._located = _hyperscan(self._patterns, gate=True, located=True, stored=True)
                if self._located is None:
                    self._located = threading.Thread(target=self._locate, name="disguise-prefilter", daemon=True)
                    self._located.start()
        located = self._located
        if isinstance(located, threading.Thread):
            located.join(wait)
            located = self._located
        if not isinstance(located, tuple) or located[0] is None or located[1]:
            return None  # (not made yet; or apart, a pattern it refuses is searched always)
        db, ends = located[0], []
        try:  # (the handler's True stops the scan)
            db.scan(b, match_event_handler=lambda i, a, e, f, c: ends.append(e) or len(ends) > limit,  # type: ignore[func-returns-value]
                    scratch=self._scratch(located=db))  # fmt: skip
        except hyperscan.ScanTerminated:
            return None
        return ends

    def _locate(self) -> None:
        try:
            self._located = _hyperscan(self._patterns, gate=True, located=True)
        except Exception:  # noqa: BLE001 - never made: the raw pass is not made where it is needed
            self._located = (None, ())

    def _scratch(self, gate: bool = False, located=None):  # noqa: ANN202, ANN001 - a hyperscan.Scratch
        name = "located" if located is not None else "gate" if gate and self._gate is not self._db else "scratch"
        scratch = getattr(self._local, name, None)
        if scratch is None:
            scratch = hyperscan.Scratch(located if located is not None else self._gate if gate else self._db)
            setattr(self._local, name, scratch)
        return scratch

    def match(self, b: bytes | memoryview, utf8: bool = False) -> list[int]:
        """Indices of the patterns that may match in b (UTF-8; anything else: all;
        utf8: the caller encoded b from text). Without Hyperscan on this platform every
        pattern is named: each is then searched exactly (slower, never wrong). An RE2
        set is no substitute: when its automaton runs out of memory it answers "no
        match"."""
        if self._db is None:
            return list(range(self._n))
        if not utf8:
            try:
                str(b, "utf-8")  # bytes or a view alike
            except UnicodeDecodeError:
                return list(range(self._n))
        hits: set[int] = set(self._always)
        self._db.scan(b, match_event_handler=_collect, context=hits, scratch=self._scratch())
        return list(hits)


def _collect(pid: int, start: int, end: int, flags: int, hits: set[int]) -> None:
    hits.add(pid)


# a case-insensitive flag, (?i) or (?mi:...): with it, a cased non-ASCII character the
# pattern names (casefold.py) is folded differently by the two engines
_CASELESS = re.compile(r"\(\?[a-zA-Z-]*i")


# gate_ends' database: one thread starts making it.
_LOCATING = threading.Lock()
# A block of match_many: at most this many texts, each shorter than this many bytes.
_GATE_PIECES, _GATE_BYTES = 128, 4096
# An anchor on the whole text, which no line of a block can stand for.
_WHOLE_TEXT_ANCHOR = re.compile(r"\\[AzZG]")


# Compiled databases kept in memory (by _hyperscan's arguments: a pattern set has up to
# three, its line gate and gate_ends' two): a rule set loaded again with the same patterns
# (a reload that changes literals only) takes its database from here, others load it from
# the disk cache in milliseconds (hscache). Each is 1.5-3 MB for the shipped patterns, and a
# Prefilter holds its own: 32 kept ~90 MB of databases of pattern sets long replaced in a
# proxy whose patterns were edited now and then (probe Q).
HS_KEEP = 8


@functools.lru_cache(maxsize=HS_KEEP)
def _hyperscan(patterns: tuple[str, ...], gate: bool = False, located: bool = False, stored: bool = False):
    """(database, indices always searched); (None, ...) when Hyperscan is unavailable;
    stored: the one on disk, or None (nothing compiled).

    Compiling takes seconds for the shipped set (more on a busy machine), so a compiled
    database is kept on disk (`cache_dir()`), named by a hash of Hyperscan's version,
    the flags and what Hyperscan is given: each expression as re2_spaces spelled it,
    with its index, and the indices always searched. A change in how a pattern is
    spelled for Hyperscan (a fix in re2_spaces or casefold) names another entry: a
    database compiled from the old spelling is never loaded for the new one (keyed by
    the patterns alone, it was, and a prefilter that no longer names every match lets
    a pattern go unsearched). A mitmdump that starts with the same rules loads it in
    milliseconds. A cache entry that does not load is compiled again."""
    if hyperscan is None or not patterns:
        return None, ()
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_UTF8 | (0 if located else hyperscan.HS_FLAG_SINGLEMATCH)
    if gate:
        flags |= hyperscan.HS_FLAG_MULTILINE
    always: list[int] = []
    ids: list[int] = []
    exprs: list[bytes] = []
    for i, p in enumerate(patterns):
        hs = re2_spaces(p)
        if hs is None or (_CASELESS.search(p) is not None and casefold.names_cased_non_ascii(p)):
            always.append(i)
        else:
            ids.append(i)
            exprs.append(hs.encode("utf-8"))
    key = hashlib.sha256(repr((getattr(hyperscan, "__version__", "?"), flags, exprs, ids, always)).encode()).hexdigest()
    cached = hscache.load(key)
    if cached is not None or stored:
        return cached
    db = _compile(exprs, ids, flags)
    if db is None and exprs:
        # one pattern Hyperscan refuses fails the whole set: find which, search those always
        keep = [k for k, e in enumerate(exprs) if _compile([e], [0], flags) is not None]
        always = sorted([*always, *(ids[k] for k in range(len(ids)) if k not in keep)])
        exprs, ids = [exprs[k] for k in keep], [ids[k] for k in keep]
        db = _compile(exprs, ids, flags)
    release_memory()
    if db is None:
        return None, tuple(range(len(patterns)))
    hscache.store(key, db, tuple(always))
    return db, tuple(always)


_RE2_SPACE = "\\t\\n\\f\\r "  # RE2's \\s: no vertical tab (Hyperscan's, PCRE's has it)


def re2_spaces(p: str) -> str | None:
    """p with `\\s` and `\\S` spelled as RE2 reads them (`[\\t\\n\\f\\r ]`, its
    complement), for Hyperscan; None where that cannot be said (`\\S` inside a class):
    such a pattern is always searched. One pass over p."""
    out: list[str] = []
    i, n, in_class = 0, len(p), False
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            e = p[i + 1]
            if e == "s":
                out.append(_RE2_SPACE if in_class else f"[{_RE2_SPACE}]")
            elif e == "S":
                if in_class:
                    return None
                out.append(f"[^{_RE2_SPACE}]")
            else:
                out.append(p[i : i + 2])
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            if i < n and p[i] == "]":  # a `]` first in a class is itself
                out.append("]")
                i += 1
            continue
        if in_class and c == "[" and p.startswith("[:", i):  # [[:alpha:]]
            j = p.find(":]", i + 2)
            if j != -1:
                out.append(p[i : j + 2])
                i = j + 2
                continue
        if in_class and c == "]":
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _compile(exprs: list[bytes], ids: list[int], flags: int):
    if not exprs:
        return None
    db = hyperscan.Database()
    try:
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=[flags] * len(exprs))
    except Exception:  # noqa: BLE001 - any refusal: the caller narrows it down
        return None
    return db


def release_memory() -> None:
    """Give freed heap back to the system. Hyperscan's compiler uses some 25 MB for the
    shipped patterns and frees it, but glibc keeps freed pages in the process (measured:
    RSS 26 MB higher after the compile, 8 MB after this), which every proxy process
    would carry for its lifetime. Elsewhere a no-op."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def check(pattern: str) -> Regex:
    """Compile a user rule, refusing what the contract refuses, and what RE2 would read
    otherwise than Python and PCRE do. Raises RegexError."""
    rx = Regex(pattern)
    for i, c in syntax_chars(pattern):
        if c == "{" and (m := _OPEN_MIN.match(pattern, i)) is not None:
            # Python (3.11+) and PCRE2 read `{,n}` as `{0,n}`; RE2 reads it as the text
            # "{,n}", so the rule would quietly match far less than was meant.
            raise RegexError(
                f"{m.group()} at character {i} is the literal text {m.group()} in RE2, not a repetition; "
                f"write {{0,{m.group(1)}}}" + ("" if m.group(1) else " or *")
            )
    if rx.can_match_empty():
        raise RegexError("can match the empty string")
    return rx


_OPEN_MIN = re.compile(r"\{,(\d*)\}")


def syntax_chars(pattern: str):
    """(index, character) of every character of pattern that is syntax: not escaped,
    not inside a character class and not quoted by \\Q...\\E. A class's brackets are
    yielded (its `[` and its closing `]`), its content is not."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
            else:
                i += 2
            continue
        if c == "[":
            yield i, c
            j = i + 1
            if pattern.startswith("^", j):
                j += 1
            if pattern.startswith("]", j):  # a ] first in a class is itself
                j += 1
            while j < n and pattern[j] != "]":
                if pattern[j] == "\\":
                    j += 2
                elif pattern.startswith("[:", j) and (k := pattern.find(":]", j + 2)) >= 0:
                    j = k + 2
                else:
                    j += 1
            if j < n:
                yield j, "]"
            i = j + 1
            continue
        yield i, c
        i += 1
