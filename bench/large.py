"""Large inputs (issue 27): what one large request costs, beside plain mitmdump.

1. A request body of --mb MB (one user message of prose with an original every line)
   through a real mitmdump running the addon and through plain mitmdump, each in front of
   a fake upstream on 127.0.0.1: the proxy's peak RSS (VmHWM from /proc) above its idle
   RSS, as a multiple of the body (issue 27's target: at most 4; it was 14 at 200 MB,
   plain 0.8 GB), and the time the request took.
2. A tool input with N short array elements (N doubling to --elements), masked
   in-process by pipeline.mask_request: seconds, growth per doubling (2 is linear) and
   microseconds per element beside json.loads of the same body.

    python bench/large.py                   # 200 MB and 1M elements (several GB, minutes)
    python bench/large.py --mb 50 --elements 250000

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests")]

from disguiselib import pipeline  # noqa: E402
from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Recorded, Reply, http_post, mitmdump_cmd  # noqa: E402

UNIT = "Acme Corp wrote a long line of words for the record, see ticket 12. "


def status_mb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return 0


def small(rec: Recorded) -> Reply:
    body = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    return Reply([json.dumps(body).encode()], headers={"content-type": "application/json"}, framing="length")


def through(tmp: Path, mb: int, addon: bool) -> None:
    text = UNIT * (mb * 1_000_000 // len(UNIT))
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
    del text
    m = tmp / "local.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    with FakeUpstream() as up:
        up.on("m", small)
        cmd = mitmdump_cmd(up.port, tmp / "conf", m, "--set", "body_size_limit=2g")
        if not addon:  # plain mitmdump: the same command without the script
            i = cmd.index("-s")
            cmd = cmd[:i] + cmd[i + 4 :]
        proxy = Mitmdump(cmd)
        try:
            assert proxy.port is not None
            idle = status_mb(proxy.proc.pid, "VmRSS")
            t = time.monotonic()
            status, _, _ = http_post(proxy.port, "/v1/messages", body, timeout=900)
            took = time.monotonic() - t
            peak = status_mb(proxy.proc.pid, "VmHWM")
            up.requests.clear()
            over = (peak - idle) * 1024 * 1024 / len(body)
            print(f"{'disguise' if addon else 'plain':>9} {len(body) / 1e6:>8.0f} {status:>6} {took:>7.1f} {idle:>8}"
                  f" {peak:>8} {over:>13.1f}")  # fmt: skip
        finally:
            proxy.stop()


def elements(top: int) -> None:
    m = Path(tempfile.mkdtemp()) / "m.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(m)], True, [])
    api = recognise("POST", "/v1/messages")
    assert api is not None
    print(f"\n{'elements':>9} {'seconds':>8} {'growth':>7} {'us/element':>11} {'json.loads us/el':>17} {'ratio':>6}")
    n, prev = max(1000, top // 8), None
    while n <= top:
        tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": [f"a{i % 97}" for i in range(n)]}}
        doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"},
                                                           {"role": "assistant", "content": [tool]}]}  # fmt: skip
        body = json.dumps(doc).encode()
        t = time.perf_counter()
        json.loads(body)
        jl = time.perf_counter() - t
        t = time.perf_counter()
        pipeline.mask_request(api, body, cfg, "/v1/messages", [("content-type", "application/json")])
        s = time.perf_counter() - t
        growth = f"{s / prev:.2f}" if prev else ""
        print(f"{n:>9} {s:>8.2f} {growth:>7} {s / n * 1e6:>11.2f} {jl / n * 1e6:>17.2f} {s / jl:>6.0f}")
        prev = s
        n *= 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--elements", type=int, default=1_000_000)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-large-", dir=os.environ.get("TMPDIR")))
    print(f"load average {os.getloadavg()[0]:.1f}; {MITMDUMP}")
    print(f"{'proxy':>9} {'body MB':>8} {'status':>6} {'seconds':>7} {'idle MB':>8} {'peak MB':>8} {'(peak-idle)/body':>13}")
    for addon in (False, True):
        through(tmp, a.mb, addon)
    elements(a.elements)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
