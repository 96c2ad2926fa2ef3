"""(readcost) What the addon spends per network read of a stream, in this process (issue
29: the Chat stream's CPU per delta through mitmdump): (a)'s Chat stream (~2,750 deltas, 60
split placeholders) and (b)'s dense stream (every delta restores), one event a read, fed
to the stream's own feed, to the adapter's callable (mitm/callables.StreamCall) and to
that callable inside the capture's Tee (inspect/tee.py), as mitmproxy calls it. The
difference of the last two is the capture's cost per read (its copies of both sides and
their compression). CPU time of this thread, median of the rounds, the three
interleaved.

    python bench/bench.py --only readcost [--quick]
    python bench/readcost.py [--before /work/main] [--runs 5] [--cold]

The Chat stream is read with the rules (a) runs mitmdump with (the shipped mappings:
few reads change) and with (b)'s 1,000 literals (half the reads change); the dense
stream with (b)'s ordinary-word disguises (every read changes). With --before TREE, this
tree and TREE's addon (its engine built) run in processes of their own, alternated,
--runs each: medians side by side.

--cold: also each read timed alone, after other memory is written before it: 4 MiB (the
CPU's L1 and L2 caches evicted, as mitmproxy's own work between two reads of a stream
evicts them: ~16 µs of its CPU a delta in bench (a)), then 16 MiB (half the shared L3
too, as the client and the upstream on the other core do). Warm, the capture costs (a)'s
Chat stream 0.4 µs a read, and through mitmdump (a) measures about 2 µs: what a read
costs through the proxy is what it costs cold. Each cold figure holds the timer's own
cost (printed), the same in every column; the capture column is a difference.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import common  # noqa: E402,F401  (puts addon/ on sys.path)

N_DENSE = 3_000
WAYS = ("feed", "StreamCall", "Tee+StreamCall")
# bytes written between two reads (--cold): twice the L2 caches of this machine's 2
# cores, then half its L3 (32 MiB, shared)
COLDS = (4 << 20, 16 << 20)
_junk = bytearray(0)
_ones = b""


def evict(n: int) -> None:
    """Write one byte in every 64 of n bytes (a cache line each)."""
    global _junk, _ones
    if len(_junk) != n:
        _junk, _ones = bytearray(n), b"\x01" * (n // 64)
    _junk[::64] = _ones


def timer_cost() -> float:
    """Seconds the cold way's timer adds to each read (two thread_time_ns calls)."""
    got = []
    for _ in range(2001):
        t0 = time.thread_time_ns()
        got.append(time.thread_time_ns() - t0)
    return statistics.median(got) / 1e9


def per_read(new, events: list[bytes], rounds: int, cold: int = 0) -> dict[str, float]:
    """Median CPU seconds per event of each way of feeding events to a stream new() makes
    (cold: each read timed alone, that many bytes written before it)."""
    from disguiselib.inspect.record import Tee  # (its home before inspect/tee.py: main's too)
    from disguiselib.mitm.callables import StreamCall

    def once(way: str) -> float:
        s = new()
        f = s.feed if way == "feed" else StreamCall(s) if way == "StreamCall" else Tee(StreamCall(s), 8 << 20)
        gc.collect()
        if cold:
            took = 0
            for e in events:
                evict(cold)
                t0 = time.thread_time_ns()
                f(e)
                took += time.thread_time_ns() - t0
            evict(cold)
            t0 = time.thread_time_ns()
            f(b"") if way != "feed" else s.flush()
            return (took + time.thread_time_ns() - t0) / 1e9
        w0 = time.thread_time()
        for e in events:
            f(e)
        f(b"") if way != "feed" else s.flush()
        return time.thread_time() - w0

    got: dict[str, list[float]] = {w: [] for w in WAYS}
    for r in range(rounds + 1):
        for w in WAYS if r % 2 else reversed(WAYS):
            t = once(w)
            if r:  # the first round warms up
                got[w].append(t)
    return {w: statistics.median(v) / len(events) for w, v in got.items()}


def chat_stream(c) -> tuple[list[bytes], dict[str, str]]:
    """(a)'s Chat stream: its events, and the placeholders the addon issued for its request."""
    import sec_a_proxies

    _, emails, st = sec_a_proxies.issue_stream(c)
    return st["events"], {f"[EMAIL_{i + 1}]": e for i, e in enumerate(emails)}


def measure(c, rounds: int, cold: int = 0) -> dict[str, dict[str, float]]:
    import streams

    from disguiselib.apis.anthropic import messages as anthropic
    from disguiselib.apis.openai import chat

    chat_events, ph = chat_stream(c)
    disg = [(d, o) for o, d in c.ordinary.items()]
    st_dense = streams.build_dense_stream(c.seed + 21, N_DENSE, disg)
    return {
        "Chat stream (a), shipped rules, µs/delta": per_read(
            lambda: chat.ChatStream(c.R_default.restorer(dict(ph))), chat_events, rounds, cold
        ),
        "Chat stream (a), 1,000 literals, µs/delta": per_read(
            lambda: chat.ChatStream(c.R_lit.restorer(dict(ph))), chat_events, rounds, cold
        ),
        "dense stream (b), µs per event": per_read(
            lambda: anthropic.AnthropicStream(c.R_ordinary.restorer({})), st_dense["events"], rounds, cold
        ),
    }


def before_after(before: Path, runs: int, quick: bool, cold: bool = False) -> None:
    """This tree and before's, each in processes of its own, alternated: medians."""
    import json
    import os
    import subprocess

    trees = {"before": before.resolve() / "addon", "after": HERE.parent / "addon"}
    got: dict[str, list[dict]] = {k: [] for k in trees}
    for i in range(runs):
        for k in trees if i % 2 == 0 else reversed(list(trees)):
            env = {**os.environ, "DISGUISE_BENCH_ADDON": str(trees[k]), "PYTHONDONTWRITEBYTECODE": "1"}
            cmd = [sys.executable, __file__, "--json"] + (["--quick"] if quick else []) + (["--cold"] if cold else [])
            got[k].append(json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout))
    print(f"(readcost) per network read, CPU µs{f' (cold: {COLDS[-1] >> 20} MiB)' if cold else ''}, medians of {runs} processes per tree, "
          f"alternated (before: {before}; load average {os.getloadavg()[0]:.1f})")
    print(f"  {'':44} {'way':>15} {'before':>8} {'after':>8}")
    for label in got["after"][0]:
        for w in (*WAYS, "capture"):
            def val(r: dict, w: str = w, label: str = label) -> float:
                v = r[label]
                return (v["Tee+StreamCall"] - v["StreamCall"]) if w == "capture" else v[w]

            b, a = (statistics.median(val(r) for r in got[k]) * 1e6 for k in ("before", "after"))
            print(f"  {label:44} {w:>15} {b:8.2f} {a:8.2f}")


def held_read(c, rounds: int) -> float:
    """Median CPU seconds to read (a)'s Chat stream back whole once it ended, as the client
    got it (inspect/held.py: mitmdump's flow line reads a finished stream's body at its end):
    its chunks decompressed and its changed reads spliced in."""
    from disguiselib.apis.openai import chat
    from disguiselib.inspect.record import Tee
    from disguiselib.mitm.callables import StreamCall

    events, ph = chat_stream(c)
    tee = Tee(StreamCall(chat.ChatStream(c.R_default.restorer(dict(ph)))), 8 << 20)
    for e in events:
        tee(e)
    tee(b"")
    body = tee.down.zipped()
    got = []
    for _ in range(rounds):
        t0 = time.thread_time()
        body.plain()
        got.append(time.thread_time() - t0)
    return statistics.median(got)


def run(c, cold: bool = False) -> None:
    import report

    from disguiselib import engine

    print(f"(readcost) The addon's cost per network read, in this process ({engine.describe()})")
    rounds = 7 if c.quick else 21
    for n in (0, *COLDS) if cold else (0,):
        rows = measure(c, rounds, n)
        if n:
            print(f"  cold: each read alone, {n >> 20} MiB written before it; the timer's own "
                  f"{timer_cost() * 1e6:.2f} µs a read is in each figure")  # fmt: skip
        print(f"  {'':44} {'feed':>8} {'StreamCall':>11} {'+Tee':>8} {'capture':>8}")
        for label, v in rows.items():
            cap = v["Tee+StreamCall"] - v["StreamCall"]
            print(f"  {label:44} {v['feed'] * 1e6:8.2f} {v['StreamCall'] * 1e6:11.2f} {v['Tee+StreamCall'] * 1e6:8.2f} {cap * 1e6:8.2f}")
            tag = f", cold ({n >> 20} MiB)" if n else ""
            report.figure("readcost", f"{label}, StreamCall inside the Tee{tag}", f"{v['Tee+StreamCall'] * 1e6:.2f} µs")
            report.figure("readcost", f"{label}, the capture's share{tag}", f"{cap * 1e6:.2f} µs")
    h = held_read(c, rounds)
    print(f"  Chat stream (a) read back whole at its end (what mitmdump's flow line reads): {h * 1e3:.3f} ms a stream")
    report.figure("readcost", "Chat stream (a) read back whole at its end", f"{h * 1e3:.3f} ms")


if __name__ == "__main__":
    import argparse
    import json

    from context import Ctx

    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, default=None, metavar="TREE")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true", help="this tree's rows, as JSON (what --before reads)")
    ap.add_argument("--cold", action="store_true", help="also each read alone with the CPU caches evicted before it")
    a = ap.parse_args()
    ctx = Ctx(argparse.Namespace(quick=True, seed=20250101, profile=False, budget=3.0))
    if a.before is not None:
        before_after(a.before, a.runs, a.quick, a.cold)
    elif a.json:
        print(json.dumps(measure(ctx, 7 if a.quick else 21, COLDS[-1] if a.cold else 0)))
    else:
        run(ctx, a.cold)
