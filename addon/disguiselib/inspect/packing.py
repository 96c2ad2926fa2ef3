"""How the capture compresses what it keeps (record.Kept's chunks, a finished Side's body).

zstd through zstandard (mitmproxy 11's own; a dependency of ours since mitmproxy 12
ships backports.zstd instead, whose decompressor reads one frame and is made anew for
each, ~10 us: a finished Chat stream's 221 chunks, read back at its end for mitmdump's
flow line, took 2.3 ms against 0.16 read as one run of frames, `unpack_all`); else
backports.zstd, or compression.zstd. One compression context per
thread and level, kept for the process, not one per stream (a context is hundreds of
KiB: more than most streams hold): on SSE in 8 KiB chunks it is 3-4x faster than a zlib
call per chunk at the same ratio, and the chunk's share of each read was the capture's
largest cost per delta (issue 29). A stream's chunks, compressed on the event loop as
its reads come, at level -1 (FAST: on the bench's SSE streams 1.5-2.2x as fast as level
1, for 1.2-1.3x the bytes: bench/packlevel.py); a body kept for as long as its flow (a
finished Side's) at level 1. zlib at level 1 where no zstd imports. Compressed forms
live in this process only (a flow file holds a body as it came); unpack tells the two
apart by a zstd frame's magic number.
"""

from __future__ import annotations

import threading
import zlib
from array import array
from collections.abc import Callable
from typing import Any, TypeAlias

from ..wire.decoding import stdlib_zstd

LEVEL = 1  # a finished side's body (record.Side, a small stream's at its end): kept as long as its flow
FAST = -1  # a stream's chunks as its reads come (tee.Kept, tee.Patched): on the event loop
# A body kept for its flow's life is compressed on the event loop when shorter than this:
# a side set whole (record.Side; from this size on, in a worker thread) and a stream's
# side at its end, compressed again as one frame (tee.Kept.zipped; from this size on it
# keeps its chunks). ~0.3 ms of the loop at most (bench/capturemem.py --whole).
ON_LOOP = 256 << 10
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_local = threading.local()


_Api = tuple[Callable[[int], Callable[[bytes], bytes]], Callable[[bytes], bytes], Callable[[bytes], bytes]]


def _zstd_api() -> _Api | None:
    """(a new compressor's one-shot function at a level, the decompressing function of one
    frame, and of frames one after another) of zstd, or None: zstandard's, else the
    standard library's (compression.zstd, or its backport)."""
    return _zstandard() or _stdlib_zstd()


def _zstandard() -> _Api | None:
    try:
        import zstandard

        def dctx() -> Any:  # a decompression context per thread too (a new one: 10x the time)
            d = getattr(_local, "unzip", None)
            if d is None:
                d = _local.unzip = zstandard.ZstdDecompressor()
            return d

        def unzip(z: bytes) -> bytes:
            return dctx().decompressobj().decompress(z)  # type: ignore[no-any-return]

        def unzip_all(z: bytes) -> bytes:
            return dctx().decompressobj(read_across_frames=True).decompress(z)  # type: ignore[no-any-return]

        def unzip_each(z: bytes) -> bytes:  # a zstandard before 0.22 (a checkout run in another environment)
            out: list[bytes] = []
            while z:
                o = dctx().decompressobj()
                out.append(o.decompress(z))
                z = o.unused_data
            return b"".join(out)

        def fitted(level: int) -> Callable[[bytes], bytes]:
            compress = zstandard.ZstdCompressor(level=level).compress
            # zstandard's compress() allocates its result for the worst case (ZSTD_compressBound:
            # a little more than the input) and only shortens the object's length: held as it
            # came, each compressed chunk took the memory of the bytes it was made from (8 KiB
            # a chunk, whatever it compressed to). A copy holds only its own length.
            return lambda data: bytes(memoryview(compress(data)))

        two = zstandard.ZstdCompressor().compress(b"a") + zstandard.ZstdCompressor().compress(b"b")
        try:
            run = unzip_all if unzip_all(two) == b"ab" else unzip_each
        except TypeError:  # no read_across_frames
            run = unzip_each
        return fitted, unzip, run
    except ImportError:
        return None


def _stdlib_zstd() -> _Api | None:
    zstd = stdlib_zstd()
    if zstd is None:
        return None

    def new(level: int) -> Callable[[bytes], bytes]:
        c = zstd.ZstdCompressor(level=level)
        flush = c.FLUSH_FRAME
        return lambda data: c.compress(data, flush)  # type: ignore[no-any-return]

    return new, zstd.decompress, zstd.decompress  # (a frame at a time, each a new context)


_ZSTD = _zstd_api()


def pack(data: bytes | bytearray | memoryview, level: int = LEVEL) -> bytes:
    """data compressed at level (LEVEL or FAST): one zstd frame (one zlib stream at level
    1 where there is no zstd)."""
    if _ZSTD is None:
        return zlib.compress(data, 1)
    packers: Any = getattr(_local, "packers", None)
    if packers is None:
        packers = _local.packers = {}
    f = packers.get(level)
    if f is None:
        f = packers[level] = _ZSTD[0](level)
    return f(data)  # type: ignore[no-any-return]


def unpack(z: bytes) -> bytes:
    """pack's inverse."""
    if z[:4] == _ZSTD_MAGIC and _ZSTD is not None:
        return _ZSTD[1](z)
    return zlib.decompress(z)


def unpack_all(zs: list[bytes] | tuple[bytes, ...]) -> bytes:
    """The contents of packed pieces joined: b"".join(map(unpack, zs)), zstd frames read as
    one run (one call, one context: a stream's chunks)."""
    if len(zs) > 1 and _ZSTD is not None and all([z[:4] == _ZSTD_MAGIC for z in zs]):
        return _ZSTD[2](b"".join(zs))
    return b"".join([unpack(z) for z in zs])


class _Chunks(tuple):
    """A body, compressed in chunks (tee.Kept.zipped), where a Side or a held response
    keeps it: each chunk is one compressed piece (pack), the body is their contents joined."""

    __slots__ = ()

    def plain(self) -> bytes:
        return unpack_all(self)

    def nbytes(self) -> int:
        """The bytes it holds (compressed)."""
        return sum(map(len, self))


# A large client request's side is kept in pieces of this many bytes of its body, at
# fixed offsets (the last one shorter), each one zstd frame at LEVEL (`chunked`): a
# conversation's next turn is the turn before with a tail more, and its side takes the
# pieces of the one before that hold its bytes (each compared: with the body before, or
# decompressed) and compresses only the rest. On bench (d)'s 1 MB Anthropic body
# (bench/capturemem.py --turns; shared machine): 16 KiB 1.19x the bytes of one frame,
# 32 KiB 1.13x, 64 KiB 1.08x, 128 KiB 1.04x, 256 KiB 1.01x; what a next turn compresses
# again is the piece where the two bodies part, and what follows it.
PIECE = 64 << 10


def chunked(body: bytes, like: _Chunks | tuple[bytes, ...] = (), known: int = 0) -> tuple[_Chunks, int]:
    """body packed at LEVEL in PIECE-byte pieces at fixed offsets (a _Chunks), and how many
    of its bytes came from like: like's leading pieces, each while it decompresses to
    PIECE bytes that are body's at its place, taken as they are (the very objects: held
    once), the rest of body packed. like is another body's pieces (chunked's, or any
    packed pieces: one that does not hold PIECE bytes ends what is taken). known: how many
    of like's first pieces the caller compared already (chunked's pieces of a body whose
    first known * PIECE bytes are body's): taken without being decompressed."""
    n = len(body)
    out: list[bytes] = list(like[:known])
    at = known * PIECE
    for z in like[known:]:
        d = unpack(z)
        if len(d) != PIECE or at + PIECE > n or not body.startswith(d, at):
            break
        out.append(z)
        at += PIECE
    taken = at
    mv = memoryview(body)
    while at < n:
        out.append(pack(mv[at : at + PIECE]))
        at += PIECE
    return _Chunks(out), taken


class _Spliced:
    """A body kept as another one with some of its byte ranges replaced (tee.Patched.zipped:
    what the client got, where a stream changed only some of its reads): base (a _Chunks),
    and in order, non-overlapping, (start, end) ranges of base, each replaced by the next
    of the pieces, held compressed (blobs: the packed batches a Patched kept, then one pack
    of the edits since); the result cut at limit bytes (n of them). The ranges are Spans:
    3 machine integers an edit (a tuple of three ints was ~130 bytes an edit: 40 KB for
    the 304 edits of bench (a)'s Chat stream, a third of what its compressed body holds)."""

    __slots__ = ("base", "spans", "blobs", "limit", "n")

    def __init__(self, base: _Chunks, spans: Spans, joined: bytes, limit: int, n: int,
                 batches: list[tuple[Spans, bytes]] = ()) -> None:  # type: ignore[assignment]  # fmt: skip
        """spans and joined: the edits since the batches (flat's)."""
        self.base, self.limit, self.n = base, limit, n
        blob = pack(joined, FAST) if joined else b""
        done, blobs = batched(batches)
        self.spans = done + spans
        self.blobs = blobs + ([blob] if blob else [])
        if len(self.blobs) > 1 and n < ON_LOOP:  # a short side: its edits' pieces one frame too (tee.Kept.zipped)
            self.blobs = [pack(unpack_all(self.blobs), LEVEL)]

    def __bool__(self) -> bool:
        return self.n > 0

    def plain(self) -> bytes:
        return spliced(self.base.plain(), self.spans, unpack_all(self.blobs), self.limit)

    def nbytes(self) -> int:
        """The bytes it holds (compressed)."""
        return self.base.nbytes() + sum(map(len, self.blobs))


# Edits' ranges: (start, end, how many bytes replace them) an edit, flat, in order.
Spans: TypeAlias = "array[int]"


def flat(edits: list[tuple[int, int, list[bytes]]]) -> tuple[Spans, bytes]:
    """edits as Spans, and their pieces joined: what spliced reads."""
    spans = array("q")
    for a, b, ps in edits:
        spans.extend((a, b, sum(map(len, ps))))
    return spans, b"".join([p for _, _, ps in edits for p in ps])


def batched(batches: list[tuple[Spans, bytes]]) -> tuple[Spans, list[bytes]]:
    """Packed batches of edits (packed's, in order) as one: their spans, and their packed
    pieces (those that hold any)."""
    spans = array("q")
    for sp, _ in batches:
        spans.extend(sp)
    return spans, [blob for _, blob in batches if blob]


def packed(edits: list[tuple[int, int, list[bytes]]]) -> tuple[Spans, bytes]:
    """flat(edits), their pieces packed (b"" where there are none)."""
    spans, joined = flat(edits)
    return spans, (pack(joined, FAST) if joined else b"")


def spliced(base: bytes, spans: Spans, pieces: bytes, limit: int) -> bytes:
    """base with each span's range (start, end, k: in order, apart) replaced by the next k
    bytes of pieces, the first limit bytes. One pass that makes no object per edit: a
    finished stream read back whole (mitmdump's flow line reads it at every stream's end)
    has an edit for each read that went out changed or held back (304 in bench (a)'s Chat
    stream)."""
    out: list[bytes] = []
    at = p = 0
    it = iter(spans)
    for a, b, k in zip(it, it, it, strict=True):
        if a > at:
            out.append(base[at:a])
        if k:
            out.append(pieces[p : p + k])
            p += k
        at = b
    out.append(base[at:])
    whole = b"".join(out)
    return whole if len(whole) <= limit else whole[:limit]
