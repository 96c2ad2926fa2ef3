#!/usr/bin/env python3
"""disguise benchmark: the addon's cost side by side with what it rides on, each figure
printed beside its target (issue 16's).

    cd <repo> && python bench/bench.py            # every section (a few minutes on 2 cores)
    cd <repo> && python bench/bench.py --quick    # fewer repetitions, smaller budgets
    python bench/bench.py --only ab --profile     # some sections; cProfile of hot loops

Sections (inputs generated from --seed; nothing is downloaded):
  a  streams through mitmdump: a Chat stream of ~2,750 1-4-char deltas with 60 split
     placeholders, direct / plain mitmdump / the addon; the three ~1 MB API streams
  b  a stream dense with disguises (every delta carries one), in the engine and through
     mitmdump; the ~1 MB streams in the engine
  c  prose: events delayed (and whether any could not begin a disguise), characters
     held, the engine's cost per event with 1,000 literals
  d  request bodies: masking a 1 MB Claude-Code-shaped body against json.loads, the
     same body through mitmdump, each adversarial input, the pause a concurrent stream sees
  e  memory and a burst: RSS as a stream grows, 500 streams at once (correct count, peak
     RSS, where the event loop's time goes, its longest stall, the listen queue)

See bench/README.md. Other modules join by adding a line to SECTIONS: a module with
`run(ctx)` (ctx: context.Ctx) that prints its figures and records its headline ones
with report.figure / report.check. Done experiments live in bench/archive/.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402,F401  (puts addon/ on sys.path)
import report  # noqa: E402
from context import Ctx  # noqa: E402

# key -> module. Single letters are the sections above; a longer key names a module of
# its own (bench/leakguard.py, bench/gemini.py, bench/detect.py are expected to join
# here); a listed module that does not exist is skipped with a note.
SECTIONS: dict[str, str] = {
    "a": "sec_a_proxies",
    "b": "sec_b_dense",
    "c": "sec_c_prose",
    "d": "sec_d_linear",
    "e": "sec_e_memory",
    "leakguard": "leakguard",
    "gemini": "gemini",
    "detect": "detect",
    "matchers": "archive.matchers",
    "bedrock": "bedrock",
    "realtime": "realtime",
    "prefilter": "prefilter",
    "metrics": "metrics",
    "engines": "engines",
    "readcost": "readcost",
}
DEFAULT = "abcde"


def selected(only: str) -> list[str]:
    """Section keys from --only: comma-separated keys, or a run of single letters ("abd")."""
    keys: list[str] = []
    for tok in (t.strip() for t in only.split(",")):
        if not tok:
            continue
        if tok in SECTIONS:
            keys.append(tok)
        elif all(ch in SECTIONS for ch in tok):
            keys += list(tok)
        else:
            raise SystemExit(f"--only: unknown section {tok!r} (known: {', '.join(SECTIONS)})")
    return keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and smaller time budgets")
    ap.add_argument("--only", default=DEFAULT + ",engines,leakguard,gemini,detect,realtime,bedrock",
                    help="sections to run: letters ('ab') or comma-separated keys ('a,leakguard')")  # fmt: skip
    ap.add_argument("--profile", action="store_true", help="cProfile the engine's hot loops")
    ap.add_argument("--peer", action="store_true",
                    help="(a): also run LLM-Shield-Proxy 1.7.0, as issue 8 compared (bench/archive/peer.py; pip installs it once)")
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds one adversarial measurement may take before it is stopped (default 8, --quick 3)")  # fmt: skip
    ap.add_argument("--streams", type=int, default=500, help="(e): concurrent streams in the load test")
    ap.add_argument("--burst-runs", type=int, default=1, metavar="N",
                    help="(e): run the burst N times, the variants interleaved, and report each one's median peak RSS")
    ap.add_argument("--flowmem", type=int, default=0, metavar="FLOWS",
                    help="(e): at the burst's peak, once FLOWS flows are under way, what they hold by part and type (bench/flowmem.py)")
    ap.add_argument("--census", type=float, default=0.0, metavar="SECONDS",
                    help="(e): what the Python objects grew by, by type, from before the burst to SECONDS into it, and "
                         "who holds the large bytes then (bench/census.py; pauses the loop there)")  # fmt: skip
    ap.add_argument("--tracemem", type=int, default=0, metavar="LINES",
                    help="(e): trace the burst's allocations (bench/tracemem.py) and print the top LINES sites per variant")
    ap.add_argument("--provider", choices=("asyncio", "threaded"), default="asyncio",
                    help="(e): the fake provider of the load test; 'threaded' is the first harness's "
                         "ThreadingHTTPServer (listen backlog 5), which loses streams under load")
    ap.add_argument("--client", choices=("asyncio", "threads"), default="asyncio",
                    help="(e): the load test's client: one asyncio loop, or one blocking thread per stream")
    ap.add_argument("--before", type=Path, default=None, metavar="TREE",
                    help="(a)'s Chat stream and (b)'s dense stream through mitmdump also run TREE's addon "
                         "(e.g. /work/main, its engine built), interleaved with this tree's: before/after in one run")
    ap.add_argument("--stream-runs", type=int, default=5, metavar="N",
                    help="(a)'s Chat stream and (b)'s dense stream through mitmdump: rounds, variants interleaved")
    args = ap.parse_args()
    if args.before is not None:
        import proxies

        proxies.BEFORE = args.before.resolve()
    if args.budget is None:
        args.budget = 3.0 if args.quick else 8.0
    t_start = time.perf_counter()
    import mitmproxy.version
    import regex as regex_mod

    ncpu = os.cpu_count() or 1
    print(
        f"disguise bench — Python {platform.python_version()}, mitmproxy {mitmproxy.version.VERSION}, "
        f"regex {regex_mod.__version__}, {platform.machine()} × {ncpu} cpu{'s' if ncpu > 1 else ''}, "
        f"load average {os.getloadavg()[0]:.1f}{', --quick' if args.quick else ''}"
    )
    c = Ctx(args)
    print()
    for key in selected(args.only):
        try:
            mod = importlib.import_module(SECTIONS[key])
        except ModuleNotFoundError as e:
            if e.name == SECTIONS[key]:
                if key in selected(DEFAULT):
                    print(f"({key}) module bench/{SECTIONS[key]}.py not found\n")
                continue
            raise
        t0 = time.perf_counter()
        mod.run(c)
        print(f"    [{time.perf_counter() - t0:.1f} s]")
        print()
    report.summary()
    print(f"total {time.perf_counter() - t_start:.1f} s (load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
