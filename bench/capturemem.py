"""Capture's memory for streams under way (issue 29), in-process: 500 Tees (inspect/record.py)
fed the burst's three mixed streams ((e): Anthropic, Chat, Responses, ~190 events each)
event by event, each piece restored into a new object as the engine does; the memory
held once every stream is at its last event (tracemalloc, and RSS), by CHUNK:

    PYTHONPATH=addon python bench/capturemem.py [CHUNK ...]    # default: 4096 8192 16384 and 1 GiB (no chunking)

Each size runs in a process of its own (RSS). Measured on 2 cores (load 8): 8 KiB
chunks 9.5 MiB traced / 16 MiB RSS; no chunking (1 GiB) 50 / 59 MiB; the pieces held
as they came (inspect/record.py before issue 29's chunks) 53 / 74 MiB; 22 MiB fed a side.
Later (mitmproxy 11's zstandard, whose compress() returned each chunk in an object sized
for the worst case, 8.3 KiB, until packing.py copied it to its own length): 8 KiB chunks
47.1 MiB traced / 47.0 MiB RSS before that copy, 9.0 / 21.8 after (4 KiB 9.5 / 20.4,
16 KiB 14.2 / 30.1, no chunking 52.6 / 73.8); Python 3.12's backports.zstd 9.0 / 20.5."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "addon"))


def _rss() -> float:
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith("VmRSS"):
                return int(ln.split()[1]) / 1024
    return 0.0


def one(chunk: int, n: int = 500) -> None:
    import streams

    from disguiselib.inspect import record, tee

    tee.CHUNK = chunk
    ph = [("[EMAIL_1]", "a@b.c"), ("Zenith Labs", "Acme")]
    evs = []
    for build, chars in ((streams.build_stream, 4400), (streams.build_chat_stream, 1100), (streams.build_responses_stream, 1100)):
        b = build(7, chars, ph, 2, tool=False)["bytes"]
        evs.append([e + b"\n\n" for e in b.split(b"\n\n") if e])
    tracemalloc.start()
    r0, t0 = _rss(), tracemalloc.get_traced_memory()[0]
    tees = [record.Tee(lambda d: bytes(bytearray(d)), 8 << 20) for _ in range(n)]
    last = min(map(len, evs))
    for j in range(last):
        for i, t in enumerate(tees):
            t(bytes(bytearray(evs[i % 3][j])))
    gc.collect()
    fed = sum(sum(map(len, e[:last])) for e in evs) * n / 3 / 2**20
    print(f"  CHUNK {chunk:>10}: {n} streams at event {last}: traced {(tracemalloc.get_traced_memory()[0] - t0) / 2**20:5.1f} MiB, "
          f"RSS +{_rss() - r0:5.1f} MiB ({fed:.1f} MiB fed a side)")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one(int(sys.argv[2]))
    else:
        for c in sys.argv[1:] or ["4096", "8192", "16384", str(1 << 30)]:
            subprocess.run([sys.executable, __file__, "--one", c], check=True)
