"""What a rule set remembers of texts it met before (sans I/O): `Rules.find` is a
function of the rule set and the text alone, and a conversation sends its history
again at every turn, so what was found in a text is kept by the text's digest."""

from __future__ import annotations

import hashlib

from .bigtext import Ascii

# Entries of Rules.prescan's memo (text -> what find() needs of it): NOTHING, Known, or
# (its literal matches, the patterns that may match, its digest or None) to search.
NOTHING: tuple = ((), ())  # no literal in it, and no pattern may match


class Known:
    """What find() found in this text when it was met before (Found), and the text's
    digest (another rule set's prescan of the same text reads it: Rules.prescan)."""

    __slots__ = ("spans", "digest")

    def __init__(self, spans: tuple, digest: bytes | None = None) -> None:
        self.spans = spans
        self.digest = digest


class Found:
    """What a rule set found in texts it met before: the digest (BLAKE2b, 128 bits) of a
    text's UTF-8 bytes -> the byte spans `Rules.find` found in it (a tuple, empty for
    none), so that a text met again is not scanned again.

    A conversation is sent whole at every turn (a Claude Code request repeats the
    history before it), so nearly every string of a request was in the one before. What
    find() returns is a function of the rule set and the text alone, so remembering it
    changes no answer; a digest stands for the text (never the text itself: no original
    is kept), and two texts with one digest is a 2^-128 chance. Bounded: two
    generations, the older dropped when the newer holds `limit` texts or `span_limit`
    spans (about 100 bytes a text and 80 a span: some 10 MB at most by default). Shared
    by every flow's thread: a dict's get and set are atomic, and the swap can at worst
    forget some."""

    __slots__ = ("limit", "span_limit", "_new", "_old", "_spans", "hits")

    def __init__(self, limit: int = 20_000, span_limit: int = 50_000) -> None:
        self.limit = limit
        self.span_limit = span_limit
        self._new: dict[bytes, tuple] = {}
        self._old: dict[bytes, tuple] = {}
        self._spans = 0  # spans held by _new
        self.hits = 0  # texts answered from memory (bench, tests)

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

    def clear(self) -> None:
        self._new, self._old, self._spans = {}, {}, 0
