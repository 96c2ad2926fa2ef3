"""A mitmproxy script for section (e)'s burst: what the process's Python objects grew by,
by type, from just before the burst to $BENCH_CENSUS_AT seconds into it (default 2.5: the
mixed burst's peak on this machine), and who holds the large bytes then. Loaded after
what is measured:

    BENCH_CENSUS_FILE=/tmp/c.json mitmdump ... -s addon/disguise.py -s bench/census.py

flowmem.py counts what the flows under way reach; this counts everything the collector
knows (gc.get_objects) and what they hold that it does not track (bytes, str, ints:
gc.get_referents), sys.getsizeof each, once before the burst (when bench (e) resets the
loop-lag counters: the request with `x-bench-looplag-reset`) and once at its peak. So it
also sees what no flow reaches: the data mitmproxy's connections hold in their read
buffers and coroutines, the events its layers queue while they wait for a hook, what a
finished flow's capture keeps while its connection is open. For every bytes object of
512 bytes or more (malloc'd, not the small-object allocator's) it names the type of the
object that holds it (a dict: its key). Each census pauses the loop (~0.1-0.3 s for the
burst's ~700,000 objects): the run's RSS and stall figures then include the second.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
from collections import Counter

OUT = os.environ.get("BENCH_CENSUS_FILE", "census.json")
AT = float(os.environ.get("BENCH_CENSUS_AT", "2.5"))
BIG = 512  # bytes from this size on come from malloc, not from Python's small-object allocator


def _name(o: object) -> str:
    t = type(o)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def census() -> tuple[Counter, Counter, Counter, Counter]:
    """(count by type, bytes by type, count of big bytes by holder, their bytes by holder)."""
    n: Counter = Counter()
    size: Counter = Counter()
    big_n: Counter = Counter()
    big: Counter = Counter()
    objs = gc.get_objects()
    seen = {id(o) for o in objs}
    for o in objs:
        k = _name(o)
        n[k] += 1
        size[k] += sys.getsizeof(o)
    for o in objs:
        for r in gc.get_referents(o):
            if gc.is_tracked(r) or id(r) in seen:
                continue
            seen.add(id(r))
            k = _name(r)
            n[k] += 1
            try:
                size[k] += sys.getsizeof(r)
            except TypeError:
                continue
            if type(r) in (bytes, bytearray) and len(r) >= BIG:
                if type(o) is dict:
                    keys = [key for key, v in o.items() if v is r][:1]
                    holder = f"dict[{keys[0]!r}]" if keys else "dict"
                else:
                    holder = _name(o)
                big_n[f"{_name(r)} in {holder}"] += 1
                big[f"{_name(r)} in {holder}"] += len(r)
    del objs, seen
    return n, size, big_n, big


class Census:
    def __init__(self) -> None:
        self.before: tuple[Counter, Counter] | None = None
        self.armed = False
        self.started = False

    def requestheaders(self, flow) -> None:  # noqa: ANN001 - mitmproxy's HTTPFlow
        if flow.request.headers.get("x-bench-looplag-reset"):
            n, size, _, _ = census()
            self.before, self.armed = (n, size), True
        elif self.armed and not self.started:
            self.started = True
            asyncio.get_running_loop().call_later(AT, self.peak)

    def peak(self) -> None:
        t0 = time.perf_counter()
        n, size, big_n, big = census()
        took = time.perf_counter() - t0
        n0, size0 = self.before or (Counter(), Counter())
        grew = {k: (n[k] - n0[k], size[k] - size0[k]) for k in set(size) | set(size0)}
        top = sorted(grew.items(), key=lambda kv: -kv[1][1])[:25]
        out = {
            "at_s": AT,
            "census_s": took,
            "grew": sum(size.values()) - sum(size0.values()),
            "types": [[k, c, b] for k, (c, b) in top],
            "big": [[k, big_n[k], b] for k, b in big.most_common(15)],
        }
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump(out, fh)


addons = [Census()]
