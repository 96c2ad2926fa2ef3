"""(standalone) The capture's compression levels side by side (issue 29: its cost per read):
each zstd level over the bench's three streams cut into the capture's chunks
(inspect/tee.CHUNK), with the zstd inspect/packing.py uses (zstandard, a dependency; the
standard library's backports.zstd where it is missing) and zlib at level 1 (the fallback): ns a byte,
best of --runs, and the compression ratio (bytes held under way per byte kept).
inspect/packing.py compresses a stream's chunks at FAST and a finished side's body at
LEVEL; this is how they were chosen.

    python bench/packlevel.py [--levels 3,1,-1,-2,-5] [--runs 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "addon")]

import streams  # noqa: E402

from disguiselib.inspect import packing, tee  # noqa: E402


def compressors(level: int) -> tuple[str, Callable[[bytes], bytes]] | None:
    """(the binding's name, the capture's own one-shot compressor at level: packing's) of
    the zstd packing uses, or None where none imports."""
    if packing._ZSTD is None:
        return None
    binding = "zstandard" if "zstandard" in sys.modules else "backports.zstd"
    return binding, packing._ZSTD[0](level)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="3,1,-1,-2,-5")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    ph = [("[EMAIL_1]", "ada@example.org"), ("Zenith Labs", "Acme Corp")]
    rng = random.Random(7)
    bodies = {
        "chat": streams.build_chat_stream(rng.randrange(1 << 30), 15_000, ph, 40)["bytes"],
        "anthropic": streams.build_stream(rng.randrange(1 << 30), 60_000, ph, 40)["bytes"],
        "responses": streams.build_responses_stream(rng.randrange(1 << 30), 15_000, ph, 40)["bytes"],
    }
    chunk = tee.CHUNK
    print(f"chunks of {chunk} bytes (tee.CHUNK); packing.LEVEL {packing.LEVEL}, packing.FAST {packing.FAST}; "
          f"best of {a.runs}; ns a byte / compression ratio")  # fmt: skip
    kinds: list[tuple[str, Callable[[bytes], bytes]]] = []
    for lv in levels:
        got = compressors(lv)
        if got is not None:
            kinds.append((f"{got[0]} {lv}", got[1]))
    kinds.append(("zlib 1", lambda d: zlib.compress(d, 1)))
    print(f"  {'stream':10} " + " ".join(f"{k:>18}" for k, _ in kinds))
    for name, body in bodies.items():
        pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
        cells = []
        for _, f in kinds:
            best = float("inf")
            for _ in range(a.runs):
                t = time.perf_counter()
                out = [f(p) for p in pieces]
                best = min(best, time.perf_counter() - t)
            cells.append(f"{best / len(body) * 1e9:8.2f} / {len(body) / sum(map(len, out)):5.1f}")
        print(f"  {name:10} " + " ".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
