"""How the capture compresses (inspect/packing.py)."""

from __future__ import annotations

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
