"""What a first scan costs: `Rules.find` on text the rule set has not met (the scan
memo, `rules/found.Found`, off), against a memo hit (the same text again), on prose, code
and a Claude-Code-shaped request; and where a first scan's time goes, rule by rule.

    PYTHONPATH=addon python bench/firstscan.py [--runs 7]

A conversation re-sends its history (memo hits), but every new tool result, file read or
command output is a first scan: that is the figure the target (≤ 20 ms/MB on prose and
code, median of cold runs) is about. Each cold run scans with a memo that keeps nothing
(the rule set's automata are built and warm, as in a running proxy); the median of
`--runs` is printed, and the least for comparison. Times are CPU time of the scanning
thread (`time.thread_time`): on a shared 2-core machine under load, wall time measures
the other processes (4x at a load of 8).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "addon"))

import bodies  # noqa: E402
import material  # noqa: E402
import precision  # noqa: E402

from disguiselib.rules import mappings  # noqa: E402
from disguiselib.rules.found import Found  # noqa: E402
from disguiselib.rules.rules import Rules  # noqa: E402

TARGET_MS_PER_MB = 20.0


def texts(seed: int = 1) -> dict[str, list[str]]:
    """prose: 1 MB of assistant prose (material.py); code: the source files of the
    real-text corpus (Python, Go, JavaScript, TypeScript), one text each, as a Read tool
    returns them; Claude Code request: the string values of a 1 MB request (bodies.py)."""
    mat = material.Material(random.Random(seed), material.make_literals(random.Random(seed), 1000))
    raw, _ = bodies.build_request(seed, 1_000_000, mat)
    code = [t for k, _, t in precision.load_real() if k.startswith("source-")]
    return {"prose": [material.prose(random.Random(seed + 1), 1_000_000)], "code": code,
            "Claude Code request": bodies.string_values(json.loads(raw), [])}


def _mb(ts: list[str]) -> float:
    return sum(len(t.encode()) for t in ts) / 1e6


def first_scans(rules: Rules, ts: list[str], runs: int) -> list[float]:
    """ms/MB of each cold run (a memo that keeps nothing)."""
    rules.found = Found(limit=0)
    out = []
    for _ in range(runs):
        t0 = time.thread_time()
        for t in ts:
            rules.find(t)
        out.append(1000 * (time.thread_time() - t0) / _mb(ts))
    return out


def memo_hits(rules: Rules, ts: list[str], runs: int) -> list[float]:
    rules.found = Found()
    for t in ts:
        rules.find(t)
    out = []
    for _ in range(runs):
        t0 = time.thread_time()
        for t in ts:
            rules.find(t)
        out.append(1000 * (time.thread_time() - t0) / _mb(ts))
    return out


def where_it_goes(rules: Rules, ts: list[str], runs: int) -> tuple[float, list[tuple[float, str, int]]]:
    """(prefilter ms/MB, [(exact-search ms/MB, rule, texts it was named for)]): the
    prefilter's pass over every text, then each rule's exact search (with its options) on
    the texts the prefilter named it for, alone; medians."""
    pf = rules._prefilter
    bs = [t.encode() for t in ts]
    mb = _mb(ts)
    pre = []
    for _ in range(runs):
        t0 = time.thread_time()
        named = [pf.match(b, utf8=True) for b in bs]
        pre.append(1000 * (time.thread_time() - t0) / mb)
    by_rule: dict[int, list[int]] = {}
    for j, ids in enumerate(named):
        for i in ids:
            by_rule.setdefault(i, []).append(j)
    out = []
    for i, js in by_rule.items():
        p = rules._patterns[i]
        one = Rules(mappings.MappingSet(patterns=(rules.mappings.patterns[i],)))
        one.found = Found(limit=0)
        got = []
        for _ in range(max(1, runs // 2)):
            t0 = time.thread_time()
            for j in js:
                one._find_bytes(bs[j], ([], [0]))
            got.append(1000 * (time.thread_time() - t0) / mb)
        out.append((statistics.median(got), p.name, len(js)))
    out.sort(reverse=True)
    return statistics.median(pre), out


def skip_side_by_side(rules: Rules, ts: list[str], runs: int) -> str:
    """Each rule with a skip regex (accept.skip_regex), its exact search on the texts the
    prefilter named it for, with the skip and without it (every candidate searched and
    accept()ed whole, as before it), alternated in one run; medians, ms/MB; the spans
    are checked to be the same."""
    pf = rules._prefilter
    bs = [t.encode() for t in ts]
    mb = _mb(ts)
    out = []
    for i, p in enumerate(rules._patterns):
        if p.skip is None:
            continue
        one = Rules(mappings.MappingSet(patterns=(rules.mappings.patterns[i],)), streams=False)
        one.found = Found(limit=0)
        fast = one._patterns[0]
        opts = copy.copy(fast.opts)
        opts.min_bytes = 1  # type: ignore[union-attr]
        slow = dataclasses.replace(fast, skip=None, opts=opts)
        named = [b for b in bs if i in pf.match(b, utf8=True)]
        got: dict[str, list[float]] = {"with": [], "without": []}
        spans: dict[str, list] = {}
        for _ in range(runs):
            for label, pat in (("with", fast), ("without", slow)):
                one._patterns = (pat,)
                t0 = time.thread_time()
                spans[label] = [one._find_bytes(b, ([], [0])) for b in named]
                got[label].append(1000 * (time.thread_time() - t0) / mb)
        same = "same spans" if spans["with"] == spans["without"] else "SPANS DIFFER"
        out.append(f"{p.name} {statistics.median(got['with']):.1f} with its skip regex, "
                   f"{statistics.median(got['without']):.1f} without ({len(named)} texts, {same})")  # fmt: skip
    return "; ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--mappings", default=str(HERE.parent / "mappings"))
    args = ap.parse_args(argv)
    rules = Rules(mappings.load(args.mappings))
    print(f"Rules.find, CPU ms per MB ({len(rules.pattern_names)} patterns); first scan = memo off, median of "
          f"{args.runs} (least); memo hit = the same texts again; target ≤ {TARGET_MS_PER_MB:g} ms/MB first scan")
    for name, ts in texts().items():
        cold = first_scans(rules, ts, args.runs)
        hot = memo_hits(rules, ts, args.runs)
        med = statistics.median(cold)
        verdict = "PASS" if med <= TARGET_MS_PER_MB else "MISS"
        print(f"  {name:22} {_mb(ts):5.2f} MB in {len(ts):5} texts: first scan {med:6.1f} ({min(cold):5.1f}) {verdict};"
              f" memo hit {statistics.median(hot):5.1f}")
        pre, rows = where_it_goes(rules, ts, args.runs)
        top = ", ".join(f"{n} {t:.1f} ({k})" for t, n, k in rows[:6])
        print(f"    prefilter {pre:.1f}; exact searches of the rules it named, costliest (ms/MB, texts): {top}")
        if any(p.skip is not None for p in rules._patterns):
            print(f"    side by side: {skip_side_by_side(rules, ts, args.runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
