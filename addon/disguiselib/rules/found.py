"""What a rule set remembers of texts it met before (sans I/O): `Rules.find` is a
function of the rule set and the text alone, and a conversation sends its history
again at every turn, so what was found in a text is kept by the text's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from itertools import compress
from operator import or_

from .bigtext import Ascii
from .remask import Remembered

# Entries of Rules.prescan's memo (text -> what find() needs of it): NOTHING, Known, or
# (its literal matches, the patterns that may match, its digest or None) to search.
NOTHING: tuple = ((), ())  # no literal in it, and no pattern may match
# The longest text remembered by itself when nothing was found in it (Found.add_clean);
# a longer one is remembered by its digest (a 200 MB string is not kept).
CLEAN_MAX = 1 << 18
# A request's headers the leak guard read and found nothing in (Found.add_clean_headers): at
# most this many remembered, a value of at most HEADER_MAX characters (a long cookie is
# read again each time: ~2 us).
HEADERS = 256
HEADER_MAX = 1024
# From this many short texts in which one scan found nothing (a long array's elements),
# Rules.prescan lists them in a Memo's run rather than giving each an entry.
RUN_MIN = 4096


class Memo(dict):
    """Rules.prescan's memo where its caller keeps it (masking's `scanned`): text -> what
    find() needs of it, as a dict, and `run`: short texts in which the scan found nothing,
    in the order it scanned them (the body's order), each as NOTHING would say it, but
    listed, not entered. A million entries took 0.2 us a text to make and as much to look
    up, the table's memory read at random (issue 27: a tool input of a million short
    elements); the leak guard, which walks the body in the same order, reads the run a
    text after the other (base/fieldwalk.Clean). Whatever else looks a text up by key
    finds no entry for a text of the run and scans it: never less safe. Only prescan
    sets a run, once (a text is an entry or in the run, never both).

    `raw`: the texts a scan of the body's raw bytes showed clean and the masker's walk
    left out (rules/rawscan.py), in the body's order: read by the guard as the run is
    (it may list a text the run or an entry names too). `read`, set with it: the texts
    the walk did read (its pieces): what the disguises' warning pass reads (texts()),
    the raw scan having looked for the disguises in the others; let go once that pass
    has read them (masking.forget_changed, pipeline).

    `spent`: the digest of each text whose entry masking spent (a string it changed:
    its entry None, its matches let go), which the warning pass reads as it reads an
    entry's (Rules.prescan's digests: the texts masking changed, nearly all of a 1 MB
    body's characters, not digested twice); let go with the texts (forget_changed)."""

    __slots__ = ("run", "raw", "read", "spent")

    def __init__(self) -> None:
        super().__init__()
        self.run: list[str] | None = None
        self.raw: list[str] | None = None
        self.read: list[str] | None = None
        self.spent: dict[str, bytes] = {}

    def clear(self) -> None:
        self.run = self.raw = self.read = None
        self.spent = {}
        super().clear()


def digest_of(entry: object) -> bytes | None:
    """The digest a memo entry holds (Known's, a prescan entry's third), or None."""
    if type(entry) is Known:
        return entry.digest
    return entry[2] if type(entry) is tuple and len(entry) == 3 else None


def texts(memo: dict) -> list[str]:
    """Every text memo speaks of that a rule set's scan of the body's texts has to read:
    its keys, then its run (a Memo's); a Memo's `read` where it has one."""
    read = getattr(memo, "read", None)
    if read is not None:
        return read
    run = getattr(memo, "run", None)
    return list(memo) + run if run else list(memo)


class Known:
    """What find() found in this text when it was met before (Found), and the text's
    digest (another rule set's prescan of the same text reads it: Rules.prescan)."""

    __slots__ = ("spans", "digest")

    def __init__(self, spans: tuple, digest: bytes | None = None) -> None:
        self.spans = spans
        self.digest = digest


class Found:
    """What a rule set found in texts it met before: the digest (BLAKE2b, 128 bits) of a
    text's UTF-8 bytes -> the spans `Rules.find` found in it, in characters as it returns
    them (a tuple, empty for none), so that a text met again is not scanned again, nor
    encoded and its byte offsets mapped to characters again (a text that is not ASCII).

    A conversation is sent whole at every turn (a Claude Code request repeats the
    history before it), so nearly every string of a request was in the one before. What
    find() returns is a function of the rule set and the text alone, so remembering it
    changes no answer; a digest stands for the text (never the text itself: no original
    is kept), and two texts with one digest is a 2^-128 chance. Bounded: two
    generations, the older dropped when the newer holds `limit` texts or `span_limit`
    spans (about 100 bytes a text and 80 a span: some 10 MB at most by default), and
    clean texts (below: two generations of at most `char_limit` characters, 1M by default). Shared
    by every flow's thread: a dict's get and set are atomic, and the swap can at worst
    forget some.

    A text in which nothing was found is remembered by itself instead (`clean`, `cleans`,
    `add_clean`): it holds no original of this rule set, so keeping it keeps none, and
    a text is its own exact key (no chance of two texts taken for one). Looking it up
    takes the hash the str keeps, no UTF-8 copy and no digest: perf put BLAKE2b and the
    UTF-8 encoder at 9 % and 11 % of a 1 MB conversation's next turn, 3 % and 8 % after
    (nearly all its texts are clean ones met before). Bounded by characters: two
    generations, the older dropped when the newer holds `char_limit`; a text over
    CLEAN_MAX characters is remembered by its digest."""

    __slots__ = (
        "limit", "span_limit", "_new", "_old", "_spans", "hits", "char_limit", "_cnew", "_cold", "_chars", "masked",
        "turns", "_headers",
    )  # fmt: skip

    def __init__(self, limit: int = 20_000, span_limit: int = 50_000, char_limit: int = 1 << 20) -> None:
        self.limit = limit
        self.span_limit = span_limit
        self._new: dict[bytes, tuple] = {}
        self._old: dict[bytes, tuple] = {}
        self._spans = 0  # spans held by _new
        self.hits = 0  # texts answered from memory (bench, tests)
        self.char_limit = char_limit if limit > 0 else 0  # (no memory: none of either kind)
        self._cnew: dict[str, None] = {}  # clean texts, by themselves
        self._cold: dict[str, None] = {}
        self._chars = 0  # characters held by _cnew
        # what masking made of texts it met before, by digest (rules/remask.py)
        self.masked = Remembered() if limit > 0 else Remembered(0)
        # the last requests of conversations, masked: their next turns cut from them (turns.py)
        self.turns: object = None
        # (name, value) of headers nothing was found in (leakguard.scan_headers)
        self._headers: dict[tuple[str, str], None] = {}

    @staticmethod
    def digest(b: bytes | Ascii) -> bytes:
        if isinstance(b, Ascii):  # the same digest, of the bytes a window at a time
            h = hashlib.blake2b(digest_size=16)
            for w in b.windows():
                h.update(w)
            return h.digest()
        return hashlib.blake2b(b, digest_size=16).digest()

    def get(self, d: bytes) -> tuple | None:
        got = self._new.get(d)
        if got is None:
            got = self._old.get(d)
            if got is None:
                return None
            self.put(d, got)
        self.hits += 1
        return got

    def put(self, d: bytes, spans: tuple) -> None:
        if self.limit <= 0 or len(spans) > self.span_limit:
            return  # a text holding more spans than the whole memory may hold: not kept
        if len(self._new) >= self.limit or self._spans >= self.span_limit:
            self._old, self._new, self._spans = self._new, {}, 0
        self._new[d] = spans
        self._spans += len(spans)

    def clean(self, text: str) -> bool:
        """Was nothing found in text when it was met before?"""
        if text in self._cnew:
            self.hits += 1
            return True
        if text in self._cold:
            self.add_clean((text,))  # met again: new again
            self.hits += 1
            return True
        return False

    def holds_clean(self, text: str) -> bool:
        """Is text one this memory keeps as one nothing was found in (no hit counted, no
        generation changed)?"""
        return text in self._cnew or text in self._cold

    def cleans(self, texts: list[str]) -> list[bool] | None:
        """clean() of each of texts, in C loops (a body's texts at once); None where
        none is."""
        new, old = self._cnew, self._cold
        if not new and not old:
            return None
        met = list(map(new.__contains__, texts))
        if old:
            again = list(map(old.__contains__, texts))
            if True in again:
                self.add_clean(compress(texts, again))
                met = list(map(or_, met, again))
        n = met.count(True)
        if not n:
            return None
        self.hits += n
        return met

    def add_clean(self, texts: Iterable[str]) -> None:
        """Remember texts in which nothing was found (one over CLEAN_MAX characters: the
        caller keeps its digest instead)."""
        limit = self.char_limit
        if limit <= 0:
            return
        new, chars = self._cnew, self._chars
        for t in texts:
            n = len(t)
            if n > CLEAN_MAX:
                continue
            if chars + n > limit:
                self._cold, new, chars = new, {}, 0
                self._cnew = new
            new[t] = None
            chars += n
        self._chars = chars

    def unmet_headers(self, read: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """Those of read ((lower-case name, name, value) of each header, leakguard's) not
        remembered as headers nothing was found in, in their order."""
        known = self._headers
        return [h for h in read if (h[1], h[2]) not in known] if known else read

    def add_clean_headers(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Remember headers ((name, value)) in each text of which (leakguard's reading:
        the value, the name, the value percent- and base64-decoded) `Rules.find` found
        nothing: a header's verdict is its own, a function of the rule set and the pair
        alone. The oldest half is dropped when HEADERS are held."""
        if self.limit <= 0:
            return
        known = self._headers
        for pair in pairs:
            if len(pair[1]) <= HEADER_MAX:
                if len(known) >= HEADERS:
                    for k in list(known)[: HEADERS // 2]:
                        known.pop(k, None)
                known[pair] = None

    def clear(self) -> None:
        self._headers = {}
        self._new, self._old, self._spans = {}, {}, 0
        self._cnew, self._cold, self._chars = {}, {}, 0
        self.masked.clear()
        self.turns = None
