"""(eventcost) Where a stream's per-event time goes, by event type: the 1 MB-class "lit"
streams of bench/context.py (Chat, Responses, Anthropic) fed event by event through the
API's stream class, each feed timed in this thread's CPU time; each engine (and with
--before TREE, that tree's addon too) in processes of its own, alternated, medians.

    python bench/eventcost.py --runs 3                      # this tree, both engines
    python bench/eventcost.py --runs 3 --before /work/main  # and another tree beside
    python bench/eventcost.py --worker --api responses      # one process's figures (JSON)

Per event type it prints the count in one stream, µs an event, and its share of the
stream's time: what the engine's µs/event (bench/engines.py) is made of. The timer's own
cost (two thread_time_ns calls, ~0.2-0.4 µs) is in every figure: compare like with like.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
APIS = ("chat", "responses", "anthropic")


def kind(ev: bytes) -> str:
    i = ev.find(b'"type":"')
    if i < 0:
        return "(no type)" if b"data:" in ev else "(other)"
    return ev[i + 8 : ev.find(b'"', i + 8)].decode("utf-8", "replace")


def worker(api: str, reps: int) -> dict:
    """This process's engine: µs an event by type over reps streams (after one untimed)."""
    import argparse
    import gc
    import time

    sys.path.insert(0, str(HERE))
    import common  # noqa: F401  (puts the addon on sys.path)
    from context import Ctx

    from disguiselib import engine

    c = Ctx(argparse.Namespace(quick=True, seed=20250101, profile=False, budget=3.0))
    evs = c.streams[api]["lit"]["events"]
    kinds = [kind(e) for e in evs]
    per: dict[str, list[int]] = {k: [] for k in kinds}
    for rep in range(reps + 1):
        st = c.new_stream(api, "lit")
        gc.collect()
        got: dict[str, int] = dict.fromkeys(per, 0)
        clock = time.thread_time_ns
        for e, k in zip(evs, kinds, strict=True):
            t0 = clock()
            st.feed(e)
            got[k] += clock() - t0
        st.flush()
        if rep:
            for k, v in got.items():
                per[k].append(v)
    count = {k: kinds.count(k) for k in per}
    return {
        "engine": engine.describe(),
        "events": len(evs),
        "ns": {k: statistics.median(v) for k, v in per.items()},
        "count": count,
    }


def run(args) -> None:
    variants: list[tuple[str, dict]] = []
    for eng in ("compiled", "python"):
        env = {k: v for k, v in os.environ.items() if k not in ("DISGUISE_ENGINE", "DISGUISE_BENCH_ADDON")}
        if eng == "python":
            env["DISGUISE_ENGINE"] = "python"
        variants.append((f"this/{eng}", env))
        if args.before:
            benv = dict(env, DISGUISE_BENCH_ADDON=str(Path(args.before).resolve() / "addon"))
            variants.append((f"before/{eng}", benv))
    for api in args.api.split(","):
        got: dict[str, list[dict]] = {name: [] for name, _ in variants}
        for r in range(args.runs):
            for name, env in variants if r % 2 == 0 else reversed(variants):
                cmd = [sys.executable, __file__, "--worker", "--api", api, "--reps", str(args.reps)]
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
                if p.returncode != 0:
                    raise RuntimeError(f"{name} {api} failed:\n{p.stderr[-3000:]}")
                got[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(f"\n== {api}: µs an event by type, median of {args.runs} processes x {args.reps} streams")
        first = got[variants[0][0]][0]
        kinds = sorted(first["ns"], key=lambda k: -first["ns"][k])
        print(f"{'type':42s} {'n':>5s} " + " ".join(f"{n:>16s}" for n, _ in variants))
        totals = {n: statistics.median(sum(r["ns"].values()) / r["events"] for r in runs) for n, runs in got.items()}
        for k in kinds:
            cells = []
            for n, _ in variants:
                us = statistics.median(r["ns"].get(k, 0) / r["count"].get(k, 1) for r in got[n]) / 1000
                share = statistics.median(r["ns"].get(k, 0) / sum(r["ns"].values()) for r in got[n]) * 100
                cells.append(f"{us:9.2f} {share:4.1f}%")
            print(f"{k[:42]:42s} {first['count'][k]:5d} " + " ".join(f"{c:>16s}" for c in cells))
        print(
            f"{'all events':42s} {first['events']:5d} "
            + " ".join(f"{totals[n] / 1000:9.2f}      " for n, _ in variants)
        )
        for n, runs in got.items():
            print(f"  {n}: {runs[0]['engine']}")


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--api", default=",".join(APIS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--before", default="")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.api, args.reps)))
    else:
        run(args)


if __name__ == "__main__":
    main()
