"""A mitmproxy script for section (e)'s burst: where the memory of concurrent streams
goes, by allocation site (tracemalloc). Loaded next to what is measured:

    BENCH_TRACEMEM_FILE=/tmp/mem.txt mitmdump ... -s addon/disguise.py -s bench/tracemem.py

Counts the responses under way and takes one snapshot when $BENCH_TRACEMEM_AT of them
are (default 400); once the burst is over (none under way) writes the memory above the
idle snapshot (taken at start-up) grouped by the innermost frame in disguiselib (else
mitmproxy, else any), per response under way. tracemalloc makes mitmproxy several
times slower: the figures are bytes per stream, not times.
"""

from __future__ import annotations

import os
import tracemalloc
from collections import defaultdict

OUT = os.environ.get("BENCH_TRACEMEM_FILE", "tracemem.txt")
AT = int(os.environ.get("BENCH_TRACEMEM_AT", "400"))
_FILTERS = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]


def _site(tb) -> str:
    frames = list(tb)  # oldest first
    for frag in ("disguiselib", "mitmproxy"):
        for f in reversed(frames):
            if frag in f.filename:
                return f"{f.filename.split(frag, 1)[1].lstrip('/')}:{f.lineno} [{frag}]"
    f = frames[-1]
    return f"{f.filename}:{f.lineno}"


def _grouped(snap) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for st in snap.filter_traces(_FILTERS).statistics("traceback"):
        g = out[_site(st.traceback)]
        g[0] += st.size
        g[1] += st.count
    return out


class TraceMem:
    def __init__(self) -> None:
        self.live = 0
        self.base = None
        self.peak = None

    def running(self) -> None:
        tracemalloc.start(12)
        self.base = tracemalloc.take_snapshot()

    def responseheaders(self, flow) -> None:
        self.live += 1
        if self.live == AT and self.peak is None:
            self.peak = tracemalloc.take_snapshot()

    def response(self, flow) -> None:
        self._ended()

    def error(self, flow) -> None:
        self._ended()

    def _ended(self) -> None:
        self.live -= 1
        if self.live == 0 and self.peak is not None:
            self._write()

    def _write(self) -> None:
        base, peak = _grouped(self.base), _grouped(self.peak)
        rows = sorted(((peak[k][0] - base.get(k, [0, 0])[0], peak[k][1] - base.get(k, [0, 0])[1], k) for k in peak),
                      reverse=True)  # fmt: skip
        total = sum(r[0] for r in rows)
        lines = [f"responses under way at the snapshot: {AT}; traced above idle {total / 1e6:.1f} MB, "
                 f"{total / AT:,.0f} B per stream", f"{'B/stream':>10} {'blocks/stream':>14}  site"]  # fmt: skip
        lines += [f"{size / AT:>10,.0f} {count / AT:>14.1f}  {k}" for size, count, k in rows[:70] if size / AT >= 50]
        with open(OUT, "w") as f:
            f.write("\n".join(lines) + "\n")


addons = [TraceMem()]
