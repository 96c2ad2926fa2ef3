"""Where the masking worker's memory peaks on one large body (issue 27), in-process.

The body of bench/large.py (one user message of prose, an original every line) is fed
to worker.Worker in pieces as the proxy sends it ("chunk"s, then "end"), and masked
with the rules of bench/large.py. Printed: the worker's VmHWM above its state before
"end" (/proc/self/clear_refs resets it), as a multiple of the body; with --trace, each
stage's Python allocations (tracemalloc: live before, live after, peak inside), as
multiples of the body. Figures are printed, never asserted.

    python bench/workerpeak.py --mb 50            # VmHWM only
    python bench/workerpeak.py --mb 20 --trace    # per stage (tracemalloc: ~3x slower)
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon")]

from disguiselib import leakguard, pipeline, worker  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from disguiselib.rules.rules import Rules  # noqa: E402
from disguiselib.wire import jsonspan, spanwalk  # noqa: E402

UNIT = "Acme Corp wrote a long line of words for the record, see ticket 12. "


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def traced(owner: object, name: str, n: int) -> None:
    """owner.name wrapped: its allocations printed as multiples of n bytes."""
    f = getattr(owner, name)

    @functools.wraps(f)
    def g(*a, **k):  # noqa: ANN002, ANN003, ANN202 - any callable
        cur0, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        r = f(*a, **k)
        cur, peak = tracemalloc.get_traced_memory()
        print(f"  {name:>14}: before {cur0 / n:.2f}x  after {cur / n:.2f}x  peak inside {peak / n:.2f}x", flush=True)
        return r

    setattr(owner, name, g)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--trace", action="store_true")
    a = ap.parse_args()
    text = UNIT * (a.mb * 1_000_000 // len(UNIT))
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
    del text
    m = Path(tempfile.mkdtemp(prefix="disguise-bench-wpeak-")) / "local.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    w = worker.Worker()
    w.built[1] = worker.build(worker.Spec.of(build_config([str(m)], True, [])))
    for i in range(0, len(body), worker.PIECE):
        w.handle(("chunk", 0, 7), body[i : i + worker.PIECE])
    n = len(body)
    del body
    gc.collect()
    base = status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    if a.trace:
        tracemalloc.start()
        for owner, name in [(masking, "_parse"), (spanwalk, "collect"), (Rules, "prescan"), (jsonspan, "apply"),
                            (jsonspan, "splice"), (masking, "mask_doc"), (masking, "masked_doc"),
                            (masking, "mask_body"), (leakguard, "scan_request"), (pipeline, "mask_request"),
                            (worker, "encode")]:  # fmt: skip
            traced(owner, name, n)
    t, c = time.monotonic(), time.process_time()
    job = worker.Job("anthropic.messages", "/v1/messages", [("content-type", "application/json")])
    answer = w.handle(("end", 1, 7, job, n))
    assert answer is not None
    reply, blobs = answer
    wall, cpu = time.monotonic() - t, time.process_time() - c
    hwm = (status_kb("VmHWM") - base) * 1024 / n
    out = hashlib.sha256(b"".join(blobs)).hexdigest()[:16]
    print(f"body {n / 1e6:.0f} MB: {type(reply[3][1]).__name__}, {wall:.1f} s wall, {cpu:.1f} s CPU;"
          f" worker VmHWM above its state before 'end': {hwm:.2f}x the body; output sha256 {out}")  # fmt: skip
    if a.trace:
        print(f"tracemalloc peak: {tracemalloc.get_traced_memory()[1] / n:.2f}x the body")


if __name__ == "__main__":
    main()
