"""(idlemem) Where the addon's idle RSS goes (issue 29: most of what the burst of section
(e) holds above plain mitmdump is there before any stream). Two parts:

1. mitmdump idle, no flow yet, plain (stream=True) beside the addon (and --before TREE's):
   VmRSS, what it maps by name (/proc/PID/smaps: the libraries the addon loads, its
   compiled modules together, `[heap]`, `[anon]`) less plain's, the threads, and the
   allocators' slack at that point: obmalloc's (Python's small objects: pools unused and
   blocks free in arenas still held) and glibc's (bytes free in its arenas, which RSS
   keeps where a page is not wholly free). A run of its own with tracemalloc on
   (PYTHONTRACEMALLOC=1; its RSS is not compared) gives the Python allocations.
2. In one fresh process per tree, the steps that build it: mitmproxy imported (as
   mitmdump imports it), the addon's modules (what `-s addon/disguise.py` imports, its
   views), the mappings loaded (YAML), the rules compiled (config.build_config), the
   first small request of three APIs masked (what bench (e)'s warm-up requests add:
   RE2 compiles a pattern at its first search, Hyperscan's scratch, its code paged in).
   Each step: what it added to RSS and to glibc's bytes in use (after gc and
   malloc_trim), and to Python's allocations (tracemalloc, in a second process: its own
   memory would be in the first one's RSS).

    python bench/idlemem.py [--before /work/main] [--runs 3] [--wait 5]

Medians of --runs for part 1 (the variants interleaved). The machine's other load moves
RSS little; obmalloc's arenas (1 MiB) make a step's RSS move in steps.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import common  # noqa: E402  (puts addon/ on sys.path: DISGUISE_BENCH_ADDON's, else this tree's)
from common import fmt_bytes, proc_status, rss_by_mapping  # noqa: E402

# a mitmproxy script: WAIT s after `running`, the process's figures as JSON to OUT
PROBE = '''
import asyncio, ctypes, gc, json, os, re, sys, tempfile, threading, tracemalloc

def slack():
    """(obmalloc's bytes in use, its slack: unused pools + free blocks; glibc's in use, free)"""
    with tempfile.TemporaryFile("w+") as t:
        fd = os.dup(2)
        os.dup2(t.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(fd, 2)
            os.close(fd)
        t.seek(0)
        s = t.read()
    num = lambda pat: int(m.group(1).replace(",", "")) if (m := re.search(pat, s)) else 0
    used = num(r"bytes in allocated blocks\\s*=\\s*([\\d,]+)")  # (0 when tracemalloc wraps the allocator)
    waste = num(r"(\\d+) unused pools") * 16384 + num(r"bytes in available blocks\\s*=\\s*([\\d,]+)")
    class MI2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MI2
    m = libc.mallinfo2()
    return used, waste, m.uordblks + m.hblkhd, m.fordblks

def report():
    gc.collect()
    ob, ob_slack, c_used, c_free = slack()
    out = {"traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None,
           "threads": sorted(t.name for t in threading.enumerate()), "obmalloc": ob, "obmalloc_slack": ob_slack,
           "malloc": c_used, "malloc_free": c_free,
           "modules": sum(1 for m in sys.modules if m.startswith("disguiselib"))}
    with open(os.environ["BENCH_IDLEMEM_FILE"], "w") as f:
        json.dump(out, f)

class Probe:
    def running(self):
        asyncio.get_running_loop().call_later(float(os.environ.get("BENCH_IDLEMEM_WAIT", "5")), report)

addons = [Probe()]
'''


def idle(tmp: Path, variant: str, wait: float, traced: bool) -> dict:
    """One mitmdump of variant, idle: its figures (PROBE's, VmRSS, by mapping)."""
    import proxies

    probe = tmp / "idleprobe.py"
    probe.write_text(PROBE)
    out = tmp / f"idle-{variant}-{time.monotonic_ns()}.json"
    env = {"BENCH_IDLEMEM_FILE": str(out), "BENCH_IDLEMEM_WAIT": str(wait)}
    if traced:
        env["PYTHONTRACEMALLOC"] = "1"
    md = proxies.Mitmdump(9, [*proxies.variant_args(tmp, variant), "-s", str(probe)], tmp, f"idle-{variant}", env=env)
    try:
        md.wait()
        t_end = time.monotonic() + wait + 60
        while not out.exists() and time.monotonic() < t_end and md.proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.2)
        got = json.loads(out.read_text())
        got["rss"] = proc_status(md.pid, "VmRSS")
        got["maps"] = rss_by_mapping(md.pid)
        return got
    finally:
        md.stop()


def part_idle(args: argparse.Namespace) -> None:
    import proxies

    tmp = proxies.tmpdir()
    variants = ["plain", "addon", *(["before"] if proxies.BEFORE is not None else [])]
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for _ in range(args.runs):
        for v in variants:
            runs[v].append(idle(tmp, v, args.wait, traced=False))
    traced = {v: idle(tmp, v, args.wait, traced=True)["traced"] for v in variants}
    med = {v: sorted(rs, key=lambda r: r["rss"])[len(rs) // 2] for v, rs in runs.items()}
    print(
        f"  mitmdump idle ({args.wait:g} s after it runs, no flow), median of {args.runs}: VmRSS; the others beside plain"
    )
    base = med["plain"]
    for v in variants:
        r = med[v]
        rss = ", ".join(fmt_bytes(x["rss"]) for x in runs[v])
        line = (f"    {v:<7} {fmt_bytes(r['rss']):>10} (runs {rss}); threads {', '.join(r['threads'])}; Python's allocations "
                f"{fmt_bytes(traced[v] or 0)}; obmalloc {fmt_bytes(r['obmalloc'])} + slack {fmt_bytes(r['obmalloc_slack'])}; "
                f"glibc {fmt_bytes(r['malloc'])} + free {fmt_bytes(r['malloc_free'])}; disguiselib modules {r['modules']}")  # fmt: skip
        print(line)
        if v == "plain":
            continue
        maps = {k: r["maps"].get(k, 0) - base["maps"].get(k, 0) for k in set(r["maps"]) | set(base["maps"])}
        top = sorted(maps.items(), key=lambda kv: -kv[1])
        print(f"      above plain {fmt_bytes(r['rss'] - base['rss'])}: " +
              ", ".join(f"{k} {fmt_bytes(b)}" for k, b in top if b >= 96 << 10))  # fmt: skip
        print(f"      of which Python's allocations {fmt_bytes((traced[v] or 0) - (traced['plain'] or 0))}, obmalloc's "
              f"slack {fmt_bytes(r['obmalloc_slack'] - base['obmalloc_slack'])}, glibc's free "
              f"{fmt_bytes(r['malloc_free'] - base['malloc_free'])} (resident where a page is not wholly free)")  # fmt: skip


# -- part 2: in one process --------------------------------------------------------------


def _malloc() -> int:
    class MI2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MI2
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def stages(traced: bool) -> None:
    """Part 2 in this process (a fresh one per tree, one without tracemalloc for RSS and
    glibc, one with it for Python's allocations): one JSON line per step on stdout."""
    import gc
    import tracemalloc

    libc = ctypes.CDLL("libc.so.6")

    def step(name: str) -> None:
        gc.collect()
        libc.malloc_trim(0)
        t = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        print(json.dumps({"step": name, "rss": proc_status(os.getpid(), "VmRSS"), "traced": t, "malloc": _malloc()}))

    step("python")
    import mitmproxy.addons
    import mitmproxy.tools.dump  # noqa: F401
    import mitmproxy.tools.main  # noqa: F401

    mitmproxy.addons.default_addons()
    step("mitmproxy imported")
    if traced:
        tracemalloc.start(1)
    from disguiselib import launch

    launch.addons()
    from disguiselib.inspect import views  # noqa: F401  (Inspector.load imports it)

    step("the addon's modules imported")
    from disguiselib import config
    from disguiselib.rules import mappings

    mappings.load_layers([str(common.MAPPINGS)], True)
    step("the mappings loaded (YAML)")
    cfg = config.build_config([str(common.MAPPINGS)], True, [], None)
    step("the rules compiled (build_config)")
    import base64

    from disguiselib import pipeline
    from disguiselib.apis.registry import recognise

    with open(os.environ["BENCH_IDLEMEM_REQUESTS"], encoding="utf-8") as f:  # (part_stages: bench's own, made there)
        reqs = json.load(f)
    for path, body in reqs.values():
        api = recognise("POST", path)
        pipeline.mask_request(api, base64.b64decode(body), cfg, path, [("content-type", "application/json")])  # type: ignore[arg-type]
    step("a first request of 3 APIs masked")
    del cfg


def part_stages(trees: dict[str, Path]) -> None:
    import base64
    import tempfile

    from context import PATHS, Ctx

    # bench (e)'s warm-up requests, made here: the bench's own modules stay out of the steps
    c = Ctx(argparse.Namespace(seed=20250101, quick=True, budget=3.0))
    reqs = {k: (PATHS[k], base64.b64encode(c.requests[k]).decode()) for k in ("anthropic", "chat", "responses")}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(reqs, f)
    got: dict[str, list[dict]] = {}
    for k, tree in trees.items():
        env = {**os.environ, "DISGUISE_BENCH_ADDON": str(tree), "BENCH_IDLEMEM_REQUESTS": f.name}
        runs = []
        for flag in ("--stages", "--stages-traced"):
            out = subprocess.run([sys.executable, __file__, flag], capture_output=True, text=True, env=env, check=True)
            runs.append([json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")])
        got[k] = [{**plain, "traced": tr["traced"]} for plain, tr in zip(*runs, strict=True)]
    os.unlink(f.name)
    print("  the steps that build it, in a fresh process: what each added to RSS and glibc's bytes in use (after gc and "
          "malloc_trim), and to Python's allocations (the same steps in another process, tracemalloc on)")  # fmt: skip
    for k, rows in got.items():
        print(f"    {k}:")
        prev = None
        for r in rows:
            if prev is not None:
                d = {f: r[f] - prev[f] for f in ("rss", "traced", "malloc")}
                print(f"      {r['step']:<36} RSS {fmt_bytes(r['rss']):>10} (+{fmt_bytes(d['rss']):>9}); Python +{fmt_bytes(d['traced']):>9}; "
                      f"glibc +{fmt_bytes(d['malloc']):>9}")  # fmt: skip
            else:
                print(f"      {r['step']:<36} RSS {fmt_bytes(r['rss']):>10}")
            prev = r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, metavar="TREE", help="TREE's addon too (its engine built)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--wait", type=float, default=5.0, help="seconds after `running` the idle figures are taken")
    ap.add_argument("--stages", action="store_true", help=argparse.SUPPRESS)  # part 2's child processes
    ap.add_argument("--stages-traced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("idle", "stages"), default=None)
    args = ap.parse_args()
    if args.stages or args.stages_traced:
        stages(args.stages_traced)
        return
    import proxies

    if args.before is not None:
        proxies.BEFORE = args.before.resolve()
    print(f"(idlemem) where the addon's idle RSS goes — Python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    if args.only in (None, "idle"):
        part_idle(args)
    if args.only in (None, "stages"):
        trees = {"this tree": common.ADDON, **({"before": args.before.resolve() / "addon"} if args.before else {})}
        part_stages(trees)


if __name__ == "__main__":
    main()
