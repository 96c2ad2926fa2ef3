"""(flowcost) Where the Chat stream's CPU through mitmdump goes, per flow and per delta
(issue 29): (a)'s Chat stream whole (~2,750 deltas) and its first 50 deltas, through
plain mitmdump and the addon (with its capture, without it, and with mitmdump's flow
line off: `flow_detail=0`), interleaved; mitmdump's CPU a request from its threads'
schedstat (common.proc_cpu). The short stream's CPU is what a flow costs whatever its
length; the slope between the two, what a delta costs.

    python bench/flowcost.py [--before /work/main] [--runs 21] [--repeat 5] [--hooks [--hooks-on full]]

--hooks: then, through one more mitmdump with the addon (capture on) and bench/hookcost.py,
the short stream (`--hooks-on full`: the whole one) --runs times: the thread CPU a flow of each hook of each addon (the
addon's and mitmproxy's own, Dumper's flow line among them) and of a few named steps of
the addon's hooks (masking, the mapping files looked at, the summary and its info line).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import common  # noqa: E402,F401  (puts addon/ on sys.path)

SHORT = 50


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, default=None, metavar="TREE", help="TREE's addon too (proxies.BEFORE)")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="the whole measurement K times, each with new mitmdumps; then the median over plain of the K")
    ap.add_argument("--hooks", action="store_true", help="then the CPU a flow of each hook (bench/hookcost.py)")
    ap.add_argument("--hooks-on", choices=("short", "full"), default="short", help="--hooks' stream: the short one (default) or the whole")
    a = ap.parse_args()
    import proxies
    import sec_a_proxies
    from common import proc_cpu
    from context import Ctx
    from proxies import Client, Mitmdump, Upstream, tmpdir, variant_args

    if a.before is not None:
        proxies.BEFORE = a.before.resolve()
    c = Ctx(argparse.Namespace(quick=True, seed=20250101, profile=False, budget=3.0))
    body, _, st = sec_a_proxies.issue_stream(c)
    n = len(st["events"])
    tmp = tmpdir()
    (tmp / "full.sse").write_bytes(st["bytes"])
    (tmp / "short.sse").write_bytes(b"".join(st["events"][:SHORT]) + b"data: [DONE]\n\n")
    up = Upstream([f"full={tmp / 'full.sse'}", f"short={tmp / 'short.sse'}"], per_write=1)
    fd0 = ["--set", "flow_detail=0"]
    variants = {"plain": variant_args(tmp, "plain"), "addon": variant_args(tmp, "addon"),
                "addon, flow_detail=0": variant_args(tmp, "addon") + fd0,
                "addon, no capture": variant_args(tmp, "addon-nocapture")}  # fmt: skip
    if a.before is not None:
        variants["before"] = variant_args(tmp, "before")
        variants["before, flow_detail=0"] = variant_args(tmp, "before") + fd0
    overs: dict[str, list[float]] = {k: [] for k in variants}
    md: dict[str, Mitmdump] = {}
    try:
        for rep in range(a.repeat):  # each repeat with new mitmdumps: a process's own luck (its layout) varies too
            md = {k: Mitmdump(up.port, v, tmp, f"flow-{rep}-{i}") for i, (k, v) in enumerate(variants.items())}
            cl = {k: Client(m.wait()) for k, m in md.items()}
            got: dict[tuple[str, str], list[float]] = {(k, w): [] for k in md for w in ("short", "full")}
            for i in range(a.runs + 1):
                order = list(md) if i % 2 else list(md)[::-1]
                for w in ("short", "full"):
                    for k in order:
                        c0 = proc_cpu(md[k].pid)
                        cl[k].post(body, 1, "/v1/chat/completions", headers={"x-bench-stream": w})
                        if i:  # the first round warms up
                            got[(k, w)].append(proc_cpu(md[k].pid) - c0)
            med = {kw: statistics.median(v) for kw, v in got.items()}
            print(f"(flowcost) Chat stream (a) through mitmdump: CPU a request, {SHORT} and {n:,} deltas; medians of "
                  f"{a.runs}, interleaved (load average {os.getloadavg()[0]:.1f})"
                  + (f"; repeat {rep + 1} of {a.repeat}" if a.repeat > 1 else ""))  # fmt: skip
            print(f"  {'':24} {'short':>9} {'whole':>9} {'a delta':>9} {'over plain':>11}")
            for k in md:
                s, f = med[(k, "short")], med[(k, "full")]
                over = (f - med[("plain", "full")]) / n
                overs[k].append(over)
                print(f"  {k:24} {s * 1e3:7.2f}ms {f * 1e3:7.2f}ms {(f - s) / (n - SHORT) * 1e6:7.2f}µs {over * 1e6:+9.2f}µs")
            for m in md.values():
                m.stop()
        if a.repeat > 1:
            print(f"  CPU a delta over plain, the {a.repeat} repeats' median (least, most):")
            for k, v in overs.items():
                if k != "plain":
                    print(f"  {k:24} {statistics.median(v) * 1e6:+7.2f}µs ({min(v) * 1e6:+.2f}, {max(v) * 1e6:+.2f})")
        if a.hooks:
            hooks(up.port, tmp, body, a.runs, a.hooks_on)
    finally:
        for m in md.values():
            m.stop()
        up.stop()


def hooks(port: int, tmp: Path, body: bytes, runs: int, which: str = "short") -> None:
    """The short stream (which="full": the whole one) through the addon (capture on) with
    bench/hookcost.py: each hook's and each named step's thread CPU a flow, the largest first."""
    import json

    from proxies import Client, Mitmdump, variant_args

    out = tmp / "hookcost.json"
    md = Mitmdump(port, ["-s", str(HERE / "hookcost.py")] + variant_args(tmp, "addon"), tmp, "hookcost",
                  env={"HOOKCOST_OUT": str(out)})  # fmt: skip
    try:
        cl = Client(md.wait())
        cl.post(body, 1, "/v1/chat/completions", headers={"x-bench-stream": which})  # the first flow: imports, caches
        for i in range(runs):
            reset = {"x-bench-hookcost": "reset"} if i == 0 else {}
            cl.post(body, 1, "/v1/chat/completions", headers={"x-bench-stream": which, **reset})
        cl.close()
    finally:
        md.stop()
    got = json.loads(out.read_text(encoding="utf-8"))
    flows = runs  # the first flow (imports, caches) is not in the sums
    print(f"  (hooks) the addon's mitmdump, {SHORT if which == 'short' else 'all its'} deltas, {flows} flows after a first one: thread CPU a flow of "
          f"each hook and named step (nested in the hook above it), ≥ 5 µs")  # fmt: skip
    for label, (ns, calls) in sorted(got.items(), key=lambda kv: -kv[1][0]):
        if ns / flows >= 5e3:
            print(f"    {label:62} {ns / flows / 1e3:8.1f} µs  ({calls} calls)")


if __name__ == "__main__":
    main()
