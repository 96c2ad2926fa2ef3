"""The per-body pass in-process, in CPU time (issue 29's per-body figures and issue 27's
large inputs without mitmdump around them): what masking a request body costs against
`json.loads` of it, read with `time.thread_time` (on the shared 2-core machine wall time
measures the other processes; CPU time much less).

1. A 1 MB Claude-Code-shaped body (bench/bodies.py), 1,000 literals + the shipped
   patterns, a new body each run with the scan memory cleared (a first scan):
   `mask_body` alone, and `pipeline.mask_request` (masking and the leak guard); then the
   conversation's next turn (that body + one exchange) after the body before it.
2. A tool input of N short array elements (distinct: `a0`, `a1`, ...), N doubling to
   --elements: µs an element and growth per doubling beside `json.loads`.
3. A conversation of N turns, each holding a password found by its key
   (`db_password = "..."`) and the model's answer naming it without its key: every
   original is copied, so the request is masked twice (base/copies.py) with N originals
   over 2N texts; N doubling to --copies: growth per doubling (linear: 2).
4. One --mb MB string with an original every line, masked by `pipeline.mask_request`
   in a child process: its peak RSS above the RSS before, as a multiple of the body.

    PYTHONPATH=addon python bench/bodypass.py [--runs 5] [--elements 250000] [--copies 4000] [--mb 50]
    PYTHONPATH=/elsewhere/addon python bench/bodypass.py   # another tree's code, the same inputs

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from disguiselib import engine, pipeline  # noqa: E402
from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.config import build_config  # noqa: E402

API = recognise("POST", "/v1/messages")
HEADERS = [("content-type", "application/json")]
UNIT = "Acme Corp wrote a long line of words for the record, see ticket 12. "


def cpu(f) -> float:  # noqa: ANN001
    t = time.thread_time()
    f()
    return time.thread_time() - t


def claude_code(runs: int) -> None:
    import bodies
    import sec_d_linear
    from context import Ctx
    from proxies import mappings_dir, tmpdir

    c = Ctx(argparse.Namespace(quick=True, seed=1, profile=False, literals=None))
    mat = c.mat
    cfg = build_config([str(mappings_dir(tmpdir(), "lit", c.literals))], True, [])
    raws = [bodies.build_request(2 + i, 1_000_000, mat)[0] for i in range(runs)]
    loads = statistics.median(cpu(lambda r=r: json.loads(r)) for r in raws for _ in range(3))

    def first(f) -> float:  # noqa: ANN001
        out = []
        for r in raws:
            cfg.rules.found.clear()
            out.append(cpu(lambda r=r: f(r)))
        return statistics.median(out)

    mask = first(lambda r: masking.mask_body(r, API.request_rule, cfg.rules))
    whole = first(lambda r: pipeline.mask_request(API, r, cfg, "/v1/messages", HEADERS))

    nexts = []
    for r in raws:
        cfg.rules.found.clear()
        nxt = sec_d_linear.next_turn(c, r)
        pipeline.mask_request(API, r, cfg, "/v1/messages", HEADERS)
        nexts.append(cpu(lambda n=nxt: pipeline.mask_request(API, n, cfg, "/v1/messages", HEADERS)))
    nxt_t = statistics.median(nexts)
    print(f"  1 MB Claude-Code-shaped body, 1000 literals + defaults, CPU medians of {runs} bodies:")
    print(f"    json.loads                 {loads * 1e3:7.2f} ms")
    for label, t in (("mask_body (first scan)", mask), ("mask_request (+ leak guard)", whole), ("next turn, mask_request", nxt_t)):
        print(f"    {label:<27}{t * 1e3:7.1f} ms  {t / loads:6.1f}× json.loads")


def elements(top: int) -> None:
    m = Path(tempfile.mkdtemp()) / "m.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(m)], True, [])
    print(f"  tool input of N distinct short array elements (CPU):\n    {'N':>8} {'s':>7} {'growth':>6} {'µs/el':>7} {'loads µs/el':>11} {'×loads':>7}")
    n, prev = max(1000, top // 8), None
    while n <= top:
        tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": [f"a{i}" for i in range(n)]}}
        doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"},
                                                           {"role": "assistant", "content": [tool]}]}  # fmt: skip
        body = json.dumps(doc).encode()
        jl = min(cpu(lambda b=body: json.loads(b)) for _ in range(3))
        cfg.rules.found.clear()
        s = cpu(lambda b=body: pipeline.mask_request(API, b, cfg, "/v1/messages", HEADERS))
        growth = f"{s / prev:.2f}" if prev else ""
        print(f"    {n:>8} {s:>7.2f} {growth:>6} {s / n * 1e6:>7.2f} {jl / n * 1e6:>11.3f} {s / jl:>7.0f}")
        prev = s
        n *= 2


def copied(top: int) -> None:
    cfg = build_config([], True, [])
    print(f"  a conversation copying N passwords found by their key (CPU):\n    {'N':>8} {'KB':>6} {'ms':>7} {'growth':>6}")
    n, prev = max(125, top // 16), None
    while n <= top:
        msgs = []
        for i in range(n):
            v = f"Hx{i:06d}qZ7wKp"
            msgs += [{"role": "user", "content": f'config line: db_password = "{v}"'},
                     {"role": "assistant", "content": f"Your value {v} is weak."}]  # fmt: skip
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}).encode()
        cfg.rules.found.clear()
        v = None

        def run(b: bytes = body) -> None:
            nonlocal v
            v = pipeline.mask_request(API, b, cfg, "/v1/messages", HEADERS)

        s = cpu(run)
        assert isinstance(v, pipeline.Masked) and v.session.copied and b"Hx000001qZ7wKp" not in v.body
        growth = f"{s / prev:.2f}" if prev else ""
        print(f"    {n:>8} {len(body) // 1000:>6} {s * 1e3:>7.0f} {growth:>6}")
        prev = s
        n *= 2


def memory(mb: int) -> None:
    code = f"""
import json, tempfile
from pathlib import Path
from disguiselib import pipeline
from disguiselib.apis.registry import recognise
from disguiselib.config import build_config
m = Path(tempfile.mkdtemp()) / "m.yaml"
m.write_text("literals:\\n  Acme Corp: Zenith Labs\\n")
cfg = build_config([str(m)], True, [])
text = {UNIT!r} * ({mb} * 1_000_000 // {len(UNIT)})
body = json.dumps({{"model": "m", "max_tokens": 5, "messages": [{{"role": "user", "content": text}}]}}).encode()
del text
def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS")
v = pipeline.mask_request(recognise("POST", "/v1/messages"), body, cfg, "/v1/messages", {HEADERS!r})
print(type(v).__name__, (status("VmHWM") - before) / len(body))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=1800)
    verdict, ratio = out.stdout.split()
    print(f"  one {mb} MB string, an original every line, pipeline.mask_request in a child process: {verdict}, "
          f"peak RSS above the start {float(ratio):.1f}× the body")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--elements", type=int, default=250_000)
    ap.add_argument("--copies", type=int, default=4000)
    ap.add_argument("--mb", type=int, default=50)
    a = ap.parse_args()
    print(f"{engine.describe()}; {Path(masking.__file__).parents[2]}; load average {os.getloadavg()[0]:.1f}")
    claude_code(a.runs)
    elements(a.elements)
    copied(a.copies)
    memory(a.mb)
    print(f"load average {os.getloadavg()[0]:.1f}; max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
