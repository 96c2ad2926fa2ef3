"""How the capture compresses (inspect/packing.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib.inspect import tee
from disguiselib.inspect.tee import Kept


def test_the_capture_compresses_with_the_zstd_mitmproxy_ships_one_context_per_thread(monkeypatch) -> None:
    """inspect/packing.py: a kept chunk is a zstd frame (mitmproxy 11's zstandard, 12's
    backports.zstd: the capture's per-read share, 3-4x less than zlib's); a compressor
    per thread, so that the capture's worker thread and the event loop never share one;
    zlib where no zstd imports, and a zlib chunk still reads back (unpack tells them
    apart)."""
    import threading

    from disguiselib.inspect import packing

    body = b"".join(b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(2_000))
    k = Kept(1 << 20)
    for i in range(0, len(body), 97):
        k.add(body[i : i + 97])
    assert k.chunks and all(c[:4] == b"\x28\xb5\x2f\xfd" for c in k.chunks)
    assert k.buf == body
    got: dict[str, bytes] = {}

    def work(name: str) -> None:
        got[name] = packing.unpack(packing.pack(body + name.encode()))

    ts = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == {f"t{i}": body + f"t{i}".encode() for i in range(4)}
    monkeypatch.setattr(packing, "_ZSTD", None)
    z = packing.pack(body)
    assert z[:1] == b"\x78" and packing.unpack(z) == body


def test_a_kept_side_holds_its_chunks_compressed_not_the_bytes_they_came_from() -> None:
    """A side under way keeps its earlier bytes as compressed chunks: their memory is
    what they compressed to. zstandard's compress() (mitmproxy 11) allocates its result
    for the worst case, more than the chunk it compresses, and only shortens the object's
    length, so every chunk held as it came took 8 KiB whatever it compressed to: the
    capture held as much as the stream it kept (bench (e)'s burst). Measured in traced
    allocations: 256 KiB of SSE held in 32 chunks."""
    import tracemalloc

    from disguiselib.inspect import packing

    body = b"".join(b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(5_000))[: 256 << 10]
    packing.pack(body[:100])  # this thread's compressor made before the measurement
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        t0 = tracemalloc.get_traced_memory()[0]
        k = Kept(1 << 20)
        for i in range(0, len(body), 97):
            k.add(body[i : i + 97])
        held = tracemalloc.get_traced_memory()[0] - t0
    finally:
        if not was_tracing:
            tracemalloc.stop()
    stored = sum(map(len, k.chunks)) + k.npend
    assert len(k.chunks) >= 30 and stored < len(body) // 4
    # the chunks, the pieces since the last one (each a bytes object) and the lists: not 8 KiB a chunk
    assert held < stored + 60 * len(k.pending) + (16 << 10), (held, stored)
    assert k.buf == body


def test_a_streams_chunks_are_packed_fast_and_a_kept_body_at_the_level_it_is_kept_at(monkeypatch) -> None:
    """A stream's chunks are compressed on the event loop as its reads come: at FAST
    (zstd's level -1: the capture's share of a read ~25 % less, bench/readcost.py); a
    finished side's body, kept as long as its flow, at LEVEL (1). Each level has its own
    compressor in a thread, and both read back."""
    import threading

    from disguiselib.inspect import packing, record
    from disguiselib.inspect.tee import Patched

    if packing._ZSTD is None:
        import pytest

        pytest.skip("no zstd here: zlib at level 1 for both")
    made: list[int] = []
    real = packing._ZSTD[0]

    def new(level: int):  # noqa: ANN202
        made.append(level)
        return real(level)

    monkeypatch.setattr(packing, "_ZSTD", (new, *packing._ZSTD[1:]))
    body = b"".join(b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(400))
    got: dict[str, object] = {}

    def work() -> None:  # a thread of its own: no compressor made in it yet
        k = Kept(1 << 20)
        k.add(body[:5000])
        got["after a chunk"] = list(made)
        p = Patched(k)
        p.edit(0, 10, [b"x" * 5000])
        assert p.sparse() is False  # (dense: nothing packed)
        p.base.add(body[5000:])
        p.edit(5000, 5010, [b"y" * 10])
        assert p.sparse() is True
        got["after a batch"] = list(made)
        s = record.Side()
        s["content"] = body
        got["after a body"] = list(made)
        got["side"], got["kept"] = s["content"], k.buf

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert got["after a chunk"] == [packing.FAST]
    assert got["after a batch"] == [packing.FAST]  # the edits' batch: the same compressor
    assert got["after a body"] == [packing.FAST, packing.LEVEL]
    assert got["side"] == body and got["kept"] == body


def test_the_capture_compresses_with_zstandard_on_every_supported_mitmproxy() -> None:
    """zstandard is a dependency of disguise (pyproject.toml): mitmproxy 11 ships it,
    mitmproxy 12 ships backports.zstd instead, whose decompressor reads one frame and is
    made anew for each (~10 us): a finished Chat stream's 221 chunks read back for
    mitmdump's flow line took 2.3 ms of the event loop against 0.16 (bench/readcost.py)."""
    import zstandard

    from disguiselib.inspect import packing

    assert packing._ZSTD is not None
    assert packing._ZSTD[2].__name__ == "unzip_all"  # zstandard's, 0.22 or later: a run of frames in one call
    assert zstandard.frame_header_size(packing.pack(b"x" * 100, packing.FAST)) > 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=12), st.lists(st.sampled_from(["zstd", "zlib"]), min_size=12, max_size=12))
def test_many_packed_pieces_read_back_as_one_run_give_each_ones_contents_joined(pieces, kinds) -> None:
    """unpack_all(zs) == b"".join(unpack(z) for z in zs): zstd frames one after another
    (empty ones too) read in one call; a zlib piece among them (the fallback's) read
    piece by piece."""
    import zlib

    from disguiselib.inspect import packing

    zs = [zlib.compress(p, 1) if k == "zlib" else packing.pack(p, packing.FAST) for p, k in zip(pieces, kinds)]
    assert packing.unpack_all(zs) == b"".join(pieces) == b"".join([packing.unpack(z) for z in zs])
    assert packing.unpack_all(tuple(zs)) == b"".join(pieces)


def test_a_streams_chunks_are_read_back_in_one_decompression_call(monkeypatch) -> None:
    """A kept side's chunks (a Chat stream: tens of 4 KiB and 16 KiB zstd frames) are
    decompressed as one run of frames, with one context, not one call (and, under
    backports.zstd, one new context) per chunk; the body read back is the one kept."""
    from disguiselib.inspect import packing

    body = b"".join(b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(6_000))
    k = Kept(1 << 22)
    for i in range(0, len(body), 97):
        k.add(body[i : i + 97])
    chunks = k.zipped()
    assert len(chunks) > 40
    assert packing._ZSTD is not None
    one, run = packing._ZSTD[1], packing._ZSTD[2]
    calls = {"one": 0, "run": 0}

    def count(key: str, f):  # noqa: ANN001, ANN202
        def g(z: bytes) -> bytes:
            calls[key] += 1
            return f(z)

        return g

    monkeypatch.setattr(packing, "_ZSTD", (packing._ZSTD[0], count("one", one), count("run", run)))
    assert chunks.plain() == body
    assert calls == {"one": 0, "run": 1}
    assert k.buf == body
    assert calls == {"one": 0, "run": 2}


@pytest.mark.parametrize("on_loop", [0, 256 << 10])
def test_the_standard_librarys_zstd_still_packs_and_reads_back_where_zstandard_is_missing(monkeypatch, on_loop) -> None:
    """The fallback a Python without zstandard takes (mitmproxy 12's backports.zstd, or
    3.14's compression.zstd): a kept stream's chunks (a long side's, kept as they are) or
    its one frame at its end (a short side's), and a finished side's body, go through it
    and read back byte for byte, one frame at a time (it makes a context per frame).
    Where neither imports (mitmproxy 11's Python 3.11) there is nothing of it to run."""
    import threading

    from disguiselib.inspect import packing

    api = packing._stdlib_zstd()
    if api is None:
        pytest.skip("no compression.zstd or backports.zstd in this Python (mitmproxy 11's environment)")
    monkeypatch.setattr(packing, "_ZSTD", api)
    monkeypatch.setattr(tee, "ON_LOOP", on_loop)
    body = b"".join(b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(3_000))
    got: dict[str, object] = {}

    def work() -> None:  # a thread of its own: its compressors are the standard library's
        k = Kept(1 << 22)
        for i in range(0, len(body), 97):
            k.add(body[i : i + 97])
        chunks = k.zipped()
        got["chunks"] = len(chunks)
        got["plain"] = chunks.plain()
        got["buf"] = k.buf
        got["side"] = packing.unpack(packing.pack(body))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert got["chunks"] > 10 if not on_loop else got["chunks"] == 1  # type: ignore[operator]
    assert got["plain"] == got["buf"] == got["side"] == body


def test_a_zstandard_that_cannot_read_across_frames_reads_a_run_of_them_one_at_a_time(monkeypatch) -> None:
    """zstandard reads a run of frames in one call from 0.22 (what pyproject asks for); a
    checkout run under an older one (mitmproxy 11 takes 0.15 on) is found out at import and
    reads the run frame by frame: the same bytes, never an error where a view reads a body."""
    import sys
    import threading
    import types

    import zstandard

    from disguiselib.inspect import packing

    class Older:  # zstandard's decompressor as before 0.22: decompressobj() takes no read_across_frames
        def __init__(self) -> None:
            self.d = zstandard.ZstdDecompressor()

        def decompressobj(self):  # noqa: ANN202
            return self.d.decompressobj()

    monkeypatch.setitem(sys.modules, "zstandard", types.SimpleNamespace(ZstdDecompressor=Older, ZstdCompressor=zstandard.ZstdCompressor))
    monkeypatch.setattr(packing, "_local", threading.local())
    api = packing._zstandard()
    assert api is not None and api[2].__name__ == "unzip_each"
    pieces = [b"first ", b"", b"second ", b"x" * 5000]
    assert api[2](b"".join(packing.pack(p, packing.FAST) for p in pieces)) == b"".join(pieces)
    monkeypatch.setattr(packing, "_ZSTD", api)
    assert packing.unpack_all([packing.pack(p) for p in pieces]) == b"".join(pieces)


def _splice(base: bytes, edits: list[tuple[int, int, list[bytes]]], limit: int) -> bytes:
    """The reference: base with each edit's range replaced by its pieces, the first limit bytes."""
    out: list[bytes] = []
    at = 0
    for a, b, pieces in edits:
        out += [base[at:a], *pieces]
        at = b
    return b"".join([*out, base[at:]])[:limit]


@st.composite
def _edited(draw):  # noqa: ANN001, ANN202
    """A body and in-order, non-overlapping edits of it (adjacent ones, empty ranges and
    empty replacements too: a held-back read is an edit with nothing in it), a limit, and
    where the edits are cut into batches (as a Patched packs them)."""
    base = draw(st.binary(max_size=64))
    cuts = sorted(draw(st.lists(st.integers(0, len(base)), max_size=12)))
    edits = [(a, b, draw(st.lists(st.binary(max_size=6), max_size=3))) for a, b in zip(cuts[::2], cuts[1::2])]
    batches = draw(st.integers(0, 3))
    at = [len(edits) * i // (batches + 1) for i in range(batches + 2)]
    return base, edits, draw(st.integers(0, 200)), [edits[a:b] for a, b in zip(at, at[1:])]


@settings(max_examples=300)
@given(_edited())
def test_a_spliced_body_reads_back_as_its_edits_spliced_one_by_one(case) -> None:  # noqa: ANN001
    """What the client got, read back whole (`_Spliced.plain` once the stream ended,
    `Patched.buf` while it runs: one pass over the spans and the pieces joined) is the
    reference's splice of the edits one by one, whatever batches they were packed in."""
    from disguiselib.inspect.packing import _Chunks, _Spliced, flat, pack, packed
    from disguiselib.inspect.tee import Kept, Patched

    base, edits, limit, groups = case
    want = _splice(base, edits, limit)
    assert _Spliced(_Chunks([pack(base)]), *flat(groups[-1]), limit, 0, [packed(g) for g in groups[:-1]]).plain() == want
    kept = Kept(1 << 20)
    kept.add(base)
    live = Patched(kept)
    live.batches = [packed(g) for g in groups[:-1]]
    for a, b, pieces in groups[-1]:
        live.edit(a, b, pieces)
    kept.limit = limit
    assert live.buf == want


def _agreeing(a: bytes, b: bytes, piece: int) -> int:
    """How many of a's whole pieces b holds at their places (what chunked may take)."""
    k = 0
    while (k + 1) * piece <= min(len(a), len(b)) and a[k * piece : (k + 1) * piece] == b[k * piece : (k + 1) * piece]:
        k += 1
    return k


def test_a_body_chunked_from_another_reads_back_at_every_split_point(monkeypatch) -> None:
    """packing.chunked: a body whose first k bytes are another's, for every k and several
    piece sizes: it reads back byte for byte, takes exactly the other's whole pieces it
    holds at their places (the very objects), and packs only the rest; with zlib too."""
    from disguiselib.inspect import packing

    a = b"".join(b"%d," % i for i in range(14))
    packed: list[int] = []
    real = packing.pack
    monkeypatch.setattr(packing, "pack", lambda d, level=1: packed.append(len(d)) or real(d, level))
    for zstd in (True, False):
        if not zstd:
            monkeypatch.setattr(packing, "_ZSTD", None)
        for piece in (1, 2, 3, 5, 8, 64):
            monkeypatch.setattr(packing, "PIECE", piece)
            old, taken = packing.chunked(a)
            assert taken == 0 and old.plain() == a and all(len(packing.unpack(z)) == piece for z in old[:-1])
            for k in range(len(a) + 1):
                for b in (a[:k], a[:k] + b"X" + a[k + 1 :], a[:k] + b"tail" * 3):
                    del packed[:]
                    new, taken = packing.chunked(b, old)
                    n = _agreeing(a, b, piece)
                    assert new.plain() == b and taken == n * piece and sum(packed) == len(b) - taken
                    assert all(x is y for x, y in zip(new[:n], old, strict=False))


@given(st.binary(max_size=600), st.integers(0, 600), st.binary(max_size=200), st.integers(1, 40),
       st.lists(st.integers(1, 50), max_size=12))  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_a_body_chunked_from_any_pieces_reads_back(a: bytes, k: int, tail: bytes, piece: int, cuts: list[int]) -> None:
    """Whatever like holds (chunked's pieces, or pieces cut anywhere, as a Tee's), the body
    chunked from it reads back as it came: a piece is taken only where its contents are
    the body's at its place."""
    from disguiselib.inspect import packing

    b = a[:k] + tail
    real = packing.PIECE
    packing.PIECE = piece
    try:
        old, _ = packing.chunked(a)
        new, taken = packing.chunked(b, old)
        assert new.plain() == b and taken == _agreeing(a, b, piece) * piece
        at, tee_like = 0, []
        for c in cuts:  # a's bytes in pieces of any size: taken while one is PIECE bytes and b's
            tee_like.append(packing.pack(a[at : at + c]))
            at += c
        new, taken = packing.chunked(b, packing._Chunks(tee_like))
        assert new.plain() == b and taken % piece == 0 and b[:taken] == a[:taken]
    finally:
        packing.PIECE = real
