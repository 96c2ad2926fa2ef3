"""(standalone) The changed tokens' canonical check (wire/tokenmap.py: a string token with
many escapes, changed, has its edits placed in its raw text when that text is what
encoding its value writes): the calls one request's masking makes to it, on
bench/stages.py's 1 MB Claude-Code-shaped body (1,000 literals + the shipped patterns),
recorded once and replayed, the compiled pass (wire/_tokenmap.pyx) beside the Python
reference, each call's answer compared. CPU time of this thread, least and median of
--runs, each run the recorded calls replayed --reps times.

    python bench/tokenmap.py [--runs 7] [--reps 30]
    python bench/tokenmap.py --before /work/main   # this tree's compiled pass and TREE's, processes alternated

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import common  # noqa: E402,F401  (puts addon/ on sys.path: DISGUISE_BENCH_ADDON's, else this tree's)


def recorded(seed: int) -> tuple[list[tuple], int]:
    """The canonical_edits calls masking the 1 MB body makes (its arguments), and the body's length."""
    import bodies
    from material import Material, make_literals
    from proxies import mappings_dir, tmpdir

    from disguiselib import pipeline
    from disguiselib.apis.registry import recognise
    from disguiselib.config import build_config
    from disguiselib.wire import tokenmap

    rng = random.Random(seed)
    lits = make_literals(random.Random(seed), 1000)
    cfg = build_config([str(mappings_dir(tmpdir(), "lit", lits))], True, [])
    body, _ = bodies.build_request(seed + 900, 1_000_000, Material(rng, lits))
    calls: list[tuple] = []
    real = tokenmap.canonical_edits

    def record(*a: object) -> object:
        calls.append(a)
        return real(*a)

    tokenmap.canonical_edits = record
    try:
        pipeline.mask_request(recognise("POST", "/v1/messages"), body, cfg, "/v1/messages", [("content-type", "application/json")])
    finally:
        tokenmap.canonical_edits = real
    return calls, len(body)


def timed(fn: object, calls: list[tuple], runs: int, reps: int) -> list[float]:
    """CPU seconds of one replay of the calls, each run (the least and the median are read)."""
    got = []
    for _ in range(runs):
        t0 = time.thread_time()
        for _ in range(reps):
            for a in calls:
                fn(*a)  # type: ignore[operator]
        got.append((time.thread_time() - t0) / reps)
    return got


def measure(seed: int, runs: int, reps: int) -> dict:
    from disguiselib import engine
    from disguiselib.wire import tokenmap

    calls, size = recorded(seed)
    chars = sum(len(a[0]) for a in calls)
    two = sum(len(a[0]) for a in calls if a[0] and max(a[0]) > "\xff")
    out = {"engine": engine.describe(), "calls": len(calls), "chars": chars, "two_byte": two, "body": size,
           "spans": sum(len(a[2]) for a in calls)}  # fmt: skip
    ref = [tokenmap.py_canonical_edits(*a[:5]) for a in calls]
    if tokenmap.c_canonical_edits is not None:
        assert [tokenmap.c_canonical_edits(*a) for a in calls] == ref, "the compiled pass differs from the reference"
        out["compiled"] = timed(tokenmap.c_canonical_edits, calls, runs, reps)
    out["reference"] = timed(lambda *a: tokenmap.py_canonical_edits(*a[:5]), calls, runs, max(1, reps // 10))
    out["none"] = sum(r is None for r in ref)
    return out


def show(r: dict, label: str = "") -> None:
    def ms(xs: list[float]) -> str:
        return f"least {min(xs) * 1e3:.2f} ms, median {statistics.median(xs) * 1e3:.2f} ms ({min(xs) / r['chars'] * 1e9:.2f} ns a character)"

    print(f"  {label}{r['calls']} tokens, {r['chars']:,} characters ({r['two_byte'] / max(1, r['chars']) * 100:.0f} % in "
          f"two-byte text), {r['spans']} spans, {r['none']} not canonical; body {r['body']:,} B; {r['engine']}")  # fmt: skip
    if "compiled" in r:
        print(f"    compiled (wire/_tokenmap.pyx): {ms(r['compiled'])}")
    print(f"    reference (tokenmap.py_canonical_edits): {ms(r['reference'])}"
          + (f"; {min(r['reference']) / min(r['compiled']):.0f}x the compiled pass" if "compiled" in r else ""))


def before_after(before: Path, runs: int, reps: int, seed: int) -> None:
    trees = {"before": before.resolve() / "addon", "after": HERE.parent / "addon"}
    got: dict[str, list[dict]] = {k: [] for k in trees}
    for i in range(runs):
        for k in trees if i % 2 == 0 else reversed(list(trees)):
            env = {**os.environ, "DISGUISE_BENCH_ADDON": str(trees[k]), "PYTHONDONTWRITEBYTECODE": "1"}
            cmd = [sys.executable, __file__, "--json", "--runs", "3", "--reps", str(reps), "--seed", str(seed)]
            got[k].append(json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout))
    print(f"(tokenmap) the compiled pass, least of 3 a process, medians of {runs} processes a tree, alternated "
          f"(before: {before}; load average {os.getloadavg()[0]:.1f})")
    for k in trees:
        xs = [min(r["compiled"]) for r in got[k] if "compiled" in r]
        if not xs:
            print(f"  {k}: not compiled ({got[k][0]['engine']})")
            continue
        print(f"  {k:>6}: {statistics.median(xs) * 1e3:.2f} ms a body ({statistics.median(xs) / got[k][0]['chars'] * 1e9:.2f} ns a "
              f"character; each process: {', '.join(f'{x * 1e3:.2f}' for x in xs)})")  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--before", type=Path, default=None, metavar="TREE")
    ap.add_argument("--json", action="store_true", help="this tree's figures, as JSON (what --before reads)")
    a = ap.parse_args()
    if a.before is not None:
        before_after(a.before, a.runs, a.reps, a.seed)
    elif a.json:
        print(json.dumps(measure(a.seed, a.runs, a.reps)))
    else:
        print(f"(tokenmap) the 1 MB body's changed tokens, replayed {a.reps} times a run, {a.runs} runs")
        show(measure(a.seed, a.runs, a.reps))
