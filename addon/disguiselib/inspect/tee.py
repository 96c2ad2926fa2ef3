"""The capture of a stream (issue 29: its per-read cost): `Tee` wraps the adapter's
stream callable and keeps what upstream sent and what the client got, each bounded
(`Kept`: the pieces by reference, compressed a chunk at a time). While every read goes
out as it came, both sides are one body, kept once; once some read goes out changed,
the client's side is kept as upstream's with the changed reads in place of theirs
(`Patched`): a read that goes out as it came costs the client's side nothing, and no
byte of it is kept or compressed twice; the changed reads' bytes are packed in batches
as they grow. Only where the changes are dense (over 1/SPARSE of upstream's bytes: a
stream dense with restores), or upstream's copy reaches its limit, is the client's side
kept apart (a Kept of its own). Where the compiled engine runs, a read that only adds
to the sides costs no Python code of the Tee (`CTee`, inspect/_teeread.pyx)."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..apis.registry import SPECS
from ..wire.jsonspan import escaped_name
from ..wire.sse import Framer
from .packing import FAST, LEVEL, ON_LOOP, Spans, _Chunks, _Spliced, batched, pack, spliced, unpack_all

# A stream's side under way is compressed each time this many bytes came (bench/ section
# e measures it: 8 KiB chunks compress the burst's SSE streams 7.5x-14x, one call per
# chunk).
CHUNK = 4 << 10  # (was 8 KiB: with PATCH_MAX, 500 streams under way held ~3.5 MiB more RSS)
# A side past LONG bytes (a long stream: bench (e)'s are 30-60 KB) is compressed
# LONG_CHUNK at a time from then on. A zstd call costs ~2.5 us whatever its size (a frame,
# its tables) beside ~0.4 ns a byte: on (a)'s Chat stream (905 kB, ~330 bytes a delta)
# 4 KiB chunks took 0.37 us a delta, 16 KiB ones 0.17, and hold 12x less than the bytes
# against 7x (zstandard 0.23, 2026-12-07): a long side, kept in these chunks once it ends
# (past packing.ON_LOOP), holds less too. Under way it holds less than LONG_CHUNK as it came.
LONG, LONG_CHUNK = 128 << 10, 16 << 10
# The changed reads' bytes a Patched client side keeps as they came, at most (half what a
# Kept holds before it compresses a chunk: bench (e)'s flows under way held 1.3-2.0 KiB
# less each than at CHUNK, the capture's CPU a read the same, bench/readcost.py): past it
# they are packed, or the side is kept apart (a stream dense with restores). At the
# stream's end they are compressed (zipped).
PATCH_MAX = CHUNK // 2
# Past PATCH_MAX the changed reads' bytes are packed (Patched.sparse) while they are at
# most 1/SPARSE of upstream's; a stream denser with changes keeps the client's side apart.
SPARSE = 4


class Kept:
    """A bounded copy of a body: the first `limit` bytes, and how many there were.
    The pieces are kept as they come, by reference (bytes never change: nothing is
    copied per read); each time they reach CHUNK bytes they are joined and compressed
    (pack: one call, no compressor kept per stream: a compressor's state is 38 KiB to
    256 KiB, more than most streams hold) and let go, so that a stream under
    way holds less than CHUNK bytes of its side as it came (LONG_CHUNK past LONG). `buf` gives it back whole."""

    __slots__ = ("pending", "npend", "chunks", "kept", "size", "limit")

    def __init__(self, limit: int) -> None:
        self.pending: list[bytes] = []  # the pieces since the last chunk, as they came
        self.npend = 0  # their bytes
        self.chunks: list[bytes] = []  # the earlier bytes, CHUNK a chunk (LONG_CHUNK past LONG), each compressed
        self.kept = 0
        self.size = 0
        self.limit = limit

    def add(self, data: bytes) -> None:
        n = len(data)
        self.size += n
        kept = self.kept
        if kept + n > self.limit:  # (the bytes past the limit are counted, not kept)
            room = self.limit - kept
            if room <= 0:
                return
            data, n = data[:room], room
        elif type(data) is not bytes:  # (held by reference: only what cannot change)
            data = bytes(data)
        if n:
            self.pending.append(data)
            self.kept = kept + n
            self.npend += n
            if self.npend >= (CHUNK if self.kept < LONG else LONG_CHUNK):
                self.chunks.append(pack(b"".join(self.pending), FAST))
                self.pending, self.npend = [], 0

    def took(self, pieces: list[bytes], n: int) -> None:
        """pieces, n bytes of bytes objects within the limit (the compiled read counted
        them: _teeread.pyx), as `add` would take them one by one but for where a chunk
        is cut: the list taken as it is (by reference, nothing joined but the chunk)."""
        self.size += n
        self.kept += n
        self.pending += pieces
        self.npend += n
        if self.npend >= (CHUNK if self.kept < LONG else LONG_CHUNK):
            self.chunks.append(pack(b"".join(self.pending), FAST))
            self.pending, self.npend = [], 0

    def copy(self) -> Kept:
        """The same copy, to go on apart."""
        k = Kept(self.limit)
        k.pending, k.npend, k.chunks = list(self.pending), self.npend, list(self.chunks)
        k.kept, k.size = self.kept, self.size
        return k

    @property
    def buf(self) -> bytes:
        """The kept bytes, as they came (joined once: the same object until more come)."""
        if self.chunks or len(self.pending) > 1:
            whole = b"".join([unpack_all(self.chunks), *self.pending])
            self.chunks, self.pending, self.npend = [], [whole], len(whole)  # one piece until more come
        return self.pending[0] if self.pending else b""

    def zipped(self) -> _Chunks:
        """The kept bytes compressed, for a Side to hold once the stream ended, kept from
        then on (so that asking twice compresses nothing twice). Shorter than ON_LOOP:
        compressed again as one frame at LEVEL, since CHUNK-sized frames at FAST hold about
        twice what one frame holds (bench (e)'s streams of 30-60 KB: 4.7-6.8x against
        8.4-17.7x), for 35-70 us of the loop once (bench/capturemem.py --whole). Longer:
        the chunks as they are, and the bytes since as one more."""
        if self.kept < ON_LOOP and len(self.chunks) + (len(self.pending) > 0) > 1:
            whole = b"".join([unpack_all(self.chunks), *self.pending])
            self.chunks, self.pending, self.npend = [pack(whole, LEVEL)], [], 0
        elif self.pending:
            self.chunks.append(pack(b"".join(self.pending), FAST))
            self.pending, self.npend = [], 0
        return _Chunks(self.chunks)

    def drop(self) -> None:
        self.pending, self.npend, self.chunks = [], 0, []

    @property
    def cut(self) -> bool:
        return self.size > self.kept


class Patched:
    """What the client got, as upstream's copy (`base`, a Kept: not cut while this is in
    use) with the reads that went out changed in place of theirs: for each, (start, end in
    base, the bytes of the pieces that went out for base[start:end]) in `spans` (Spans:
    three machine integers an edit) and the pieces themselves in `pieces`, in order (a
    tuple, two ints and a list an edit held ~190 bytes beside its pieces: 2.6 KiB a Chat
    stream under way of bench (e)'s burst). Read like a Kept. Once the pieces hold
    PATCH_MAX bytes they are packed as a batch (`batches`: their ranges, and the pieces
    compressed together), where the changes are sparse: their bytes at most 1/SPARSE of
    upstream's (a stream that changes a read here and there keeps one copy, compressed
    once, however long it runs); otherwise the side is kept apart (tee._took)."""

    __slots__ = ("base", "spans", "pieces", "delta", "held", "batches", "changed")

    def __init__(self, base: Kept) -> None:
        self.base = base
        self.spans: Spans = array("q")  # the edits since the last batch: (start, end, bytes of their pieces)
        self.pieces: list[bytes] = []  # their pieces, in order
        self.delta = 0  # the client's bytes less upstream's
        self.held = 0  # bytes of the edits' pieces
        self.batches: list[tuple[Spans, bytes]] = []  # packing.packed's, in order
        self.changed = 0  # bytes of every edit's pieces, the packed ones too

    def edit(self, start: int, end: int, pieces: list[bytes]) -> None:
        n = 0
        for p in pieces:
            n += len(p)
        self.spans.extend((start, end, n))
        self.pieces += pieces
        self.delta += n - (end - start)
        self.held += n
        self.changed += n

    def sparse(self) -> bool:
        """Past PATCH_MAX: the edits packed as a batch where the changes are sparse (True),
        else nothing done (False: the side goes apart)."""
        if self.changed * SPARSE > self.base.size:
            return False
        joined = b"".join(self.pieces)
        self.batches.append((self.spans, pack(joined, FAST) if joined else b""))
        self.spans, self.pieces, self.held = array("q"), [], 0
        return True

    @property
    def size(self) -> int:
        return self.base.size + self.delta

    @property
    def limit(self) -> int:
        return self.base.limit

    @property
    def cut(self) -> bool:
        return self.size > self.base.limit

    @property
    def buf(self) -> bytes:
        k = self.base
        done, blobs = batched(self.batches)  # the packed batches' edits come first
        return spliced(b"".join([unpack_all(k.chunks), *k.pending]), done + self.spans,
                       unpack_all(blobs) + b"".join(self.pieces), k.limit)  # fmt: skip

    def zipped(self) -> _Spliced:
        return _Spliced(self.base.zipped(), self.spans, b"".join(self.pieces), self.base.limit,
                        min(self.size, self.base.limit), self.batches)  # fmt: skip

    def apart(self) -> Kept:
        """The same bytes as a Kept of their own (compressed as they come from then on)."""
        k = Kept(self.base.limit)
        k.add(self.buf)
        k.size = self.size
        return k

    def drop(self) -> None:
        self.spans, self.pieces, self.delta, self.held, self.batches = array("q"), [], 0, 0, []


# A stream's final event as its API's spec names it (base/wirespec.py): a terminal
# type in the member that names an event's type, or a data line that ends the stream.
# Inside a JSON string the quotes would be escaped, so text that talks about them can't
# match. (Streams whose final event no byte pattern tells, Gemini's and Bedrock's, are
# told by their reverser: Tee.final_sent.)
_FINAL_BY_MEMBER = {(spec.type_member, t) for spec in SPECS if spec.type_member is not None for t in spec.terminal}
_FINAL_EVENT = re.compile(
    b"|".join(
        [rb'"' + re.escape(m.encode()) + rb'": ?"' + re.escape(t.encode()) + rb'"' for m, t in sorted(_FINAL_BY_MEMBER)]
        + [rb"^data: ?" + re.escape(done.encode()) for done in sorted({s.done for s in SPECS if s.done is not None})]
    ),
    re.M,
)
# The last pieces the client got that the Tee keeps (final_sent reads them, in any
# order): a list of at most this many, written round (`at`: where the next piece goes,
# over the oldest once it is full). (A deque's block alone is 624 bytes a stream; a list
# cut back after each read ran CPython's slice deletion a read: ~30 of the capture's ~150
# cache lines of a cold read, callgrind, issue 29.)
LAST = 8


def _final_parsed(piece: bytes) -> bool:
    """_FINAL_EVENT, read as JSON reads it: some whole event of piece is a final one."""
    for ev in Framer().feed(piece):
        try:
            doc = json.loads(ev.data) if ev.data is not None else None
        except ValueError:
            continue
        if isinstance(doc, dict) and any(doc.get(m) == t for m, t in _FINAL_BY_MEMBER):
            return True
    return False


class _Tee:
    """Wraps the adapter's stream callable: keeps what upstream sent (wire bytes, before
    content decoding) and what the client got, each bounded, and the last few pieces
    the client got (did the final event go out?). Returns the inner callable's pieces
    as a list without empty pieces (an empty piece mid-stream would end a chunked
    body). Costs a list append or two per call, nothing copied (Kept holds the pieces by
    reference): it runs on the event loop.

    `same` stays true while every piece went out as it came (the very object upstream
    sent: a stream with nothing to restore): then both sides are one body, kept once.
    Then the client's side is a Patched of upstream's (see the module's docstring).

    `final`: set at `release`, from `final_sent`. The inner callable's reverser (the
    adapter's StreamCall.stream) says whether it went past its API's last event, as that
    API tells it (every Gemini candidate finished, a Bedrock messageStop frame: its
    `past_final`): the output of that call carried it to the client. It is asked at the
    end, not after each read (through a BodyStream that was a Python property call a
    read: ~0.8 us of a cold read, issue 29). A read that raised (not an Exception the
    StreamCall answers: a BaseException through it) sent nothing: the reverser is no
    longer asked, the pieces that went out tell (`last`).

    The methods of both Tees: `PyTee` (this read in Python: the reference) and `CTee`
    (its read compiled where a read goes out as it came, _teeread.pyx; every other read
    this one's `_py_after`)."""

    if not TYPE_CHECKING:  # the subclasses name the slots; mypy reads the annotations
        __slots__ = ()
    inner: Callable[[bytes], object]
    up: Kept
    down: Kept | Patched
    last: list[bytes]
    at: int
    same: bool
    reverser: Any  # the adapter's StreamCall.stream (its `state`), or None
    final: bool
    released: bool

    def __init__(self, inner, limit: int) -> None:
        self.inner = inner
        self.up = Kept(limit)
        self.down = self.up  # its own copy once a piece went out changed (`same` false)
        self.last = []  # at most LAST, written round
        self.at = 0
        self.same = True
        self.reverser = getattr(inner, "stream", None)
        self.final = False
        self.released = False

    def _py_call(self, data: bytes) -> list[bytes]:
        """The read (the reference)."""
        try:
            out = self.inner(data)
        except BaseException:
            self._took(data, [])  # nothing went out for it
            self.reverser = None  # (past its last event in this read, maybe: its output is lost)
            raise
        return self._py_after(data, out)

    def _py_after(self, data: bytes, out: object) -> list[bytes]:
        """The read once the inner callable gave out for data."""
        pieces: list[bytes]
        if type(out) is list and len(out) == 1 and out[0] is data and type(data) is bytes and data:
            pieces = out  # the read went out as it came (the common read): kept by reference
            if self.same:
                self.up.add(data)
            else:
                self._took(data, None)
            self._sent(data)
        else:
            if type(out) is list and len(out) == 1 and type(out[0]) is bytes and out[0]:
                pieces = out  # one piece, changed (the common changed read)
            else:
                got: Any = [out] if isinstance(out, (bytes, bytearray)) else out
                pieces = [p if type(p) is bytes else bytes(p) for p in got if p]
            if self.same and not (len(pieces) == 1 and pieces[0] is data or not (pieces or data)):
                self.same = False
                # what the client got so far: what came so far
                self.down = Patched(self.up) if not self.up.cut else self.up.copy()
            if self.same:
                self.up.add(data)
            else:
                self._took(data, pieces)
            for p in pieces:
                self._sent(p)
        return pieces

    def _sent(self, piece: bytes) -> None:
        """piece among the last LAST the client got (over the oldest)."""
        last, at = self.last, self.at
        if len(last) < LAST:
            last.append(piece)
        else:
            last[at if at < LAST else 0] = piece
        self.at = at + 1 if at + 1 < LAST else 0

    def _took(self, data: bytes, pieces: list[bytes] | None) -> None:
        """A read once the sides differ (pieces: what went out for it; None: data itself)."""
        up, down = self.up, self.down
        if down is up:  # a read that raised while both sides are one: from now on they differ
            self.same = False
            self.down = down = Patched(up) if not up.cut else up.copy()
        if isinstance(down, Patched):
            if up.kept + len(data) <= up.limit and (down.held <= PATCH_MAX or down.sparse()):
                start = up.size
                up.add(data)
                if pieces is not None:
                    down.edit(start, up.size, pieces)
                return
            self.down = down = down.apart()  # upstream's copy is full, or the changes hold much
        up.add(data)
        if pieces is None:
            down.add(data)
        else:
            for p in pieces:
                down.add(p)

    @property
    def down_buf(self) -> bytes:
        """What the client got (bounded): the upstream copy itself when `same` (`down`
        is `up` until a piece goes out changed)."""
        return self.down.buf

    def release(self) -> None:
        """The stream ended and its sides are kept elsewhere (the flow's metadata, the
        response): let go of the pieces (the last few read once: whether the final event
        went out)."""
        self.final = self.final_sent
        self.last, self.at = [], 0
        self.up.drop()
        self.down.drop()
        self.released = True

    @property
    def final_sent(self) -> bool:
        """Did the stream's final event go out? The adapter emits whole events, so the
        final event sits whole in one of the last pieces (a comment may follow it). A
        piece that may spell a name with escapes (`"message_st\\u006fp"`) is read parsed."""
        if self.final or getattr(self.reverser, "past_final", False):
            return True
        return any(_FINAL_EVENT.search(p) is not None or (escaped_name(p) and _final_parsed(p)) for p in self.last)

    @property
    def dead(self) -> bool:
        """The inner callable failed closed (it sent the client an error event)."""
        return bool(getattr(self.inner, "dead", False))


class PyTee(_Tee):
    """The Tee in Python: the reference."""

    __slots__ = ("inner", "up", "down", "last", "at", "same", "reverser", "final", "released")

    __call__ = _Tee._py_call


try:  # the compiled engine's part (engine.NATIVE); absent or stale: ImportError
    from ._teeread import Read as _CRead  # type: ignore[import-not-found]
except ImportError:
    _CRead = None

CTee: type[_Tee] | None = None
if _CRead is not None:

    class CTee(_CRead, _Tee):  # type: ignore[no-redef]
        """The Tee whose read is compiled (_teeread.pyx) where it goes out as it came."""

        __slots__ = ()

        def __init__(self, inner, limit: int) -> None:
            _Tee.__init__(self, inner, limit)
            self._states(LAST)

        def _fast_room(self) -> tuple[int, int, bool, int, bool, int]:
            """What the compiled read may queue as the reference would add it, with no
            other work: (upstream's side's room, the client's side's room, whether the
            client's side is a Kept of its own, CHUNK, whether it is a Patched, PATCH_MAX).
            A room of 0: every read the reference's way (a change to make first: a Patched
            past PATCH_MAX, a side full)."""
            up, down = self.up, self.down
            room = max(up.limit - up.kept, 0)
            if self.same:
                return room, 0, False, CHUNK, False, PATCH_MAX
            if down is up or (isinstance(down, Patched) and down.held > PATCH_MAX):
                return 0, 0, False, CHUNK, False, PATCH_MAX
            if isinstance(down, Patched):
                return room, 0, False, CHUNK, True, PATCH_MAX
            return room, max(down.limit - down.kept, 0), True, CHUNK, False, PATCH_MAX


# Chosen once, at import (as CPython's json chooses its scanner)
Tee: type[_Tee] = CTee or PyTee
