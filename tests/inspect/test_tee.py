"""The capture of a stream (inspect/tee.py): Tee keeps both sides exact, the client's as
upstream's with its changed reads in place (Patched) while that is cheaper."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.inspect import tee
from disguiselib.inspect.tee import Kept, Tee

# the reference and the compiled read (tee.CTee, where the compiled engine runs)
TEES = [tee.PyTee] + ([tee.CTee] if tee.CTee is not None else [])


@given(st.lists(st.binary(max_size=200), max_size=20), st.integers(0, 20), st.integers(0, 3000), st.integers(1, 500),
       st.lists(st.sampled_from(["bytes", "list", "changed", "raises", "held"]), min_size=20, max_size=20),
       st.integers(0, 600), st.sampled_from([0, 1, 4, 1000]))  # fmt: skip
@example([b"aaaa", b"bbbb", b"cccc", b"dddd"], 0, 10, 500, ["changed", "held"] + ["list"] * 18, 600, 4)  # past the limit
@example([b"aaaa", b"bbbb"], 0, 100, 500, ["held", "held"] + ["list"] * 18, 600, 4)  # the client got nothing
# a read that raises while both sides are one (the client got nothing for it)
@example([b"", b"", b"\x00"], 1, 10, 500, ["list", "held", "raises"] + ["list"] * 17, 600, 4)
@pytest.mark.parametrize("cls", TEES)
def test_tee_keeps_one_copy_until_a_piece_changes_then_both_exact(cls, data, changed_from, limit, chunk, later, patch_max,
                                                                   sparse) -> None:
    """While every piece goes out as it came, the client's side is the upstream side
    itself (one copy); from the first changed piece on, each side is exact, whether the
    later pieces go out as they came (the very object, alone or in a list), changed, not
    at all (held), or the inner callable raises: kept as upstream's with the changed reads
    in place (tee.Patched) until upstream's copy is full or the changes hold more than
    PATCH_MAX bytes, apart from then on; read whole, and as the compressed form a held
    response keeps (zipped)."""

    def inner(d: bytes):
        inner.n += 1
        if inner.n <= changed_from:
            return d if inner.n % 2 else [d]
        how = later[inner.n - 1]
        if inner.n == changed_from + 1 and how != "held":  # the first change: a changed piece, or none
            how = "changed"
        if how == "raises":
            raise ValueError("inner")
        return d if how == "bytes" else [d] if how == "list" else [] if how == "held" else [d.upper(), b"!"]

    inner.n = 0
    with (mock.patch.object(tee, "CHUNK", chunk), mock.patch.object(tee, "PATCH_MAX", patch_max),
          mock.patch.object(tee, "SPARSE", sparse), mock.patch.object(tee, "LONG", 3 * chunk),
          mock.patch.object(tee, "LONG_CHUNK", 2 * chunk + 5)):  # fmt: skip
        t = cls(inner, limit)
        out = []
        for d in data:
            try:
                out += t(d)
            except ValueError:
                pass
        assert (t.down is t.up) == t.same
        up, down = b"".join(data), b"".join(out)
        assert t.up.buf == up[:limit] and t.down_buf == down[:limit]
        assert (t.up.size, t.down.size, t.up.cut, t.down.cut) == (len(up), len(down), len(up) > limit, len(down) > limit)
        assert t.down.zipped().plain() == down[:limit] and t.up.zipped().plain() == up[:limit]
        assert bool(t.down.zipped()) == bool(down[:limit])


@pytest.mark.parametrize("cls", TEES)
def test_a_stream_under_way_holds_its_last_pieces_in_a_short_list_and_its_edits_as_machine_integers(cls) -> None:
    """What a stream under way holds besides its bytes (bench (e)'s burst: 500 at once):
    the last LAST pieces (final_sent reads them) in a list written round, not a deque
    (whose block is 624 bytes whatever it holds), and each changed read's range as three machine integers
    in the Patched's spans, its pieces in one list (not a tuple, two ints and a list)."""
    import sys

    reads = [b"data: %d\n\n" % i for i in range(300)]
    t = cls(lambda d: [d.upper(), b": x\n\n"] if d.endswith(b"7\n\n") else [d], 1 << 24)
    out = [p for d in reads for p in t(d)]
    assert type(t.last) is list and sorted(t.last) == sorted(out[-tee.LAST :])  # (written round: any order)
    assert sys.getsizeof(t.last) < 200
    n = len(t.last)
    out += t(b"data: last\n\n")  # over the oldest
    assert len(t.last) == n and sorted(t.last) == sorted(out[-tee.LAST :])
    down = t.down
    assert type(down) is tee.Patched and down.spans.itemsize == 8
    assert len(down.spans) == 3 * 30 and len(down.pieces) == 60 and not down.batches
    assert list(down.spans[:3]) == [len(b"".join(reads[:7])), len(b"".join(reads[:8])), len(b"DATA: 7\n\n: x\n\n")]
    assert t.down_buf == b"".join(out)


@pytest.mark.parametrize("cls", TEES)
def test_a_stream_that_changes_a_read_in_ten_holds_at_most_half_a_chunk_of_them_as_they_came(cls) -> None:
    """The changed reads' pieces a stream under way keeps uncompressed (Patched.pieces):
    past PATCH_MAX, half a CHUNK, they are packed (bench (e)'s Chat stream changes about
    one read in ten, each ~330 bytes)."""
    reads = [(b'data: {"choices":[{"delta":{"content":"%05d"}}]}' % i).ljust(328) + b"\n\n" for i in range(1_000)]
    t = cls(lambda d: [d.replace(b"content", b"CONTENT")] if b'3"}}' in d else [d], 1 << 24)
    most = 0
    for d in reads:
        t(d)
        most = max(most, getattr(t.down, "held", 0))
    assert type(t.down) is tee.Patched and t.down.batches
    assert most <= tee.CHUNK // 2 + 330, most


def test_a_stream_that_changes_some_reads_keeps_the_client_side_as_upstreams_with_those_reads() -> None:
    """tee.Patched (issue 29: the capture's per-read cost): once a read went out changed,
    a read that goes out as it came adds nothing to the client's side (no second copy,
    no second compression); a stream that changes every read is kept apart once the
    changes hold PATCH_MAX bytes."""
    reads = [b"data: %d\n\n" % i for i in range(5_000)]
    t = Tee(lambda d: [d.upper()] if d.endswith(b"7\n\n") else [d], 1 << 24)
    out = [p for d in reads for p in t(d)]
    edits = (len(t.down.spans) + sum(len(spans) for spans, _ in t.down.batches)) // 3  # (batched or not; 3 a span)
    assert type(t.down) is tee.Patched and edits == 500 and t.down.held < 20_000
    assert t.down_buf == b"".join(out) and t.up.buf == b"".join(reads)
    dense = Tee(lambda d: [d.upper()], 1 << 24)
    out = [p for d in reads for p in dense(d)]
    assert type(dense.down) is Kept and dense.down.buf == b"".join(out)


@pytest.mark.parametrize("cls", TEES)
def test_a_long_stream_that_changes_a_read_here_and_there_keeps_one_copy_its_changes_packed(cls) -> None:
    """Past PATCH_MAX the changed reads of a sparse stream are packed as batches (issue 29:
    no second compressed copy of what went out as it came, however long the stream);
    a stream denser with changes than 1/SPARSE of its bytes is kept apart."""
    reads = [b"data: %05d %s\n\n" % (i, b"x" * 40) for i in range(20_000)]
    t = cls(lambda d: [d.upper() + b": ok\n\n"] if d[10:11] == b"7" else [d], 1 << 24)
    out = [p for d in reads for p in t(d)]
    assert type(t.down) is tee.Patched and len(t.down.batches) > 5 and t.down.held <= tee.PATCH_MAX
    assert t.down_buf == b"".join(out) and t.down.zipped().plain() == b"".join(out) and t.up.buf == b"".join(reads)
    dense = cls(lambda d: [d.upper()] if d[10:11] in b"0123" else [d], 1 << 24)
    out = [p for d in reads for p in dense(d)]
    assert type(dense.down) is Kept and dense.down.buf == b"".join(out)


def test_a_side_under_way_holds_at_most_4_kib_of_its_bytes_as_they_came() -> None:
    """Issue 29, burst RSS: what each live stream holds uncompressed. A side fed the
    burst's reads (~150-byte events) packs them every 4 KiB (CHUNK and PATCH_MAX): 500
    streams at 8 KiB held 16.3-17.3 MiB RSS, at 4 KiB 12.7-13.9 (no tracemalloc). Its
    first LONG bytes: a long side holds less than LONG_CHUNK from then on."""
    k = Kept(1 << 24)
    most = 0
    for i in range(2_000):
        k.add(b"data: {\"delta\": %d, \"text\": \"%s\"}\n\n" % (i, b"w" * (100 + i % 60)))
        if k.kept < tee.LONG:
            most = max(most, sum(map(len, k.pending)))
        else:
            assert k.npend < tee.LONG_CHUNK
    assert most < 4096 and len(k.chunks) > 40 and k.kept > tee.LONG


@pytest.mark.parametrize("cls", TEES)
def test_a_short_finished_stream_is_held_as_one_frame_a_long_one_in_its_chunks(cls, fixtures, monkeypatch) -> None:
    """Issue 29, what a finished flow keeps: a side shorter than packing.ON_LOOP is
    compressed again as one frame at its end (a real 37 KB Anthropic stream: its 4 KiB
    chunks at FAST hold 1.4x the bytes, its encrypted search results compressing poorly;
    bench (e)'s text streams 1.8-2.6x), its edits' ranges 3 machine integers
    each; a longer side keeps the chunks it was compressed in while it ran. Read back,
    both are exact."""
    from disguiselib.inspect import packing

    body = (fixtures / "anthropic" / "stream_web_search.sse").read_bytes()
    reads = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    assert b"".join(reads) == body and len(reads) > 40
    for on_loop in (packing.ON_LOOP, 4096):
        monkeypatch.setattr(tee, "ON_LOOP", on_loop)
        n = iter(range(1 << 20))
        t = cls(lambda d, n=n: [d.upper()] if next(n) % 5 == 3 and len(d) < 300 else [d], 1 << 24)  # here and there
        out = [p for d in reads for p in t(d)]
        t(b"")
        client = b"".join(out)
        assert client != body and type(t.down) is tee.Patched
        z = t.down.zipped()
        assert z.plain() == client and t.up.zipped().plain() == body and z.base is not None
        edits = len(z.spans) // 3
        assert edits >= 3 and z.spans.itemsize == 8  # (a list of tuples: ~130 bytes an edit)
        chunked = sum(len(packing.pack(body[i : i + tee.CHUNK], packing.FAST)) for i in range(0, len(body), tee.CHUNK))
        if on_loop > len(body):
            assert len(z.base) == 1 and z.base.nbytes() * 4 < chunked * 3
        else:
            assert len(z.base) >= 4  # the chunks it ran in (cut where a read passed CHUNK), none compressed again
