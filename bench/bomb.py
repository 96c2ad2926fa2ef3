"""A compressed JSON bomb through a real mitmdump (issue 27): 1 GiB of zeros compressed
(gzip, deflate, br, zstd) answered as `application/json`, while another stream runs
through the same proxy (an event every 20 ms). Per coding: how long the bomb took to be
refused (the client gets the 502 naming disguise_decoded_limit), the running stream's
longest pause meanwhile beside its longest pause before, and mitmdump's peak RSS
(VmHWM, /proc). A whole body is decoded in a worker thread; it used to be decoded in the
response hook on the event loop (the stream stopped 0.37 s at the 64 MiB default).

    python bench/bomb.py                     # default limit (64 MiB)
    python bench/bomb.py --limit 268435456   # a decode on the loop would pause seconds

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from test_shared_proxy import FULL, _bomb, read_timed, start, ticking, vm_hwm_mb  # noqa: E402

from integration_util import FakeUpstream, Reply, http_post, zstd_available  # noqa: E402


def _gap(arrivals: list[float], t0: float, t1: float) -> float:
    inside = [a for a in arrivals if t0 <= a <= t1]
    return max((b - a for a, b in zip(inside, inside[1:], strict=False)), default=0.0)


def one(tmp: Path, encoding: str, limit: int) -> None:
    bomb = _bomb(encoding, b'{"pad": "')
    m = tmp / "local.yaml"
    m.write_text(FULL)
    with FakeUpstream() as up:
        up.on("bomb", lambda rec: Reply([bomb[i : i + 65536] for i in range(0, len(bomb), 65536)],
                                        headers={"content-type": "application/json", "content-encoding": encoding},
                                        framing="length", delay=0.0))  # fmt: skip
        up.on("tick", ticking)
        proxy = start(up, tmp, m, "--set", f"disguise_decoded_limit={limit}")
        try:
            port = proxy.port
            assert port is not None
            arrivals: list[float] = []
            t = threading.Thread(target=read_timed, args=(port, arrivals, []))
            t.start()
            time.sleep(0.8)
            req = b'{"model": "bomb", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp"}]}'
            b0 = time.monotonic()
            status, _, answer = http_post(port, "/v1/messages", req, timeout=120)
            b1 = time.monotonic()
            t.join(60)
            before = _gap(arrivals, arrivals[0] + 0.1, b0) if arrivals else 0.0
            during = _gap(arrivals, b0 - 0.05, b1 + 0.05)
            ok = status == 502 and b"disguise_decoded_limit" in answer
            print(f"{encoding:>8} {len(bomb) / 1e3:>8.1f} {b1 - b0:>9.2f} {before * 1000:>11.0f} {during * 1000:>11.0f}"
                  f" {vm_hwm_mb(proxy.proc.pid):>9} {'502 limit' if ok else status:>10}")  # fmt: skip
        finally:
            proxy.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=64 << 20)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-bomb-", dir=os.environ.get("TMPDIR")))
    print(f"load average {os.getloadavg()[0]:.1f}; disguise_decoded_limit {a.limit >> 20} MiB; 1 GiB of zeros as JSON")
    print(f"{'coding':>8} {'kB sent':>8} {'refused s':>9} {'gap before':>11} {'gap during':>11} {'peak MB':>9} {'answer':>10}")
    for enc in ("gzip", "deflate", "br", "zstd"):
        if enc == "zstd" and not zstd_available():
            print(f"{enc:>8} (no zstd decoder in this environment)")
            continue
        one(tmp, enc, a.limit)
    print("(gaps: the running stream's longest pause in ms, before the bomb and while it was decoded)")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
