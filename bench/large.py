"""Large inputs (issue 27): what one large request costs, beside plain mitmdump.

1. A request body of --mb MB (one user message of prose with an original every line)
   through a real mitmdump running the addon and through plain mitmdump, each in front of
   a fake upstream on 127.0.0.1: the memory of the proxy's processes (mitmdump and the
   masking worker it starts, read from /proc every 5 ms: the peak of their summed RSS
   above their summed idle RSS) as a multiple of the body (issue 27's target: at most 4;
   it was 14 at 200 MB, plain 0.8 GB), and the time the request took. Beside it the sum
   of each process's own peak (VmHWM, read while it lives: a worker recycled after a huge
   body takes its own with it), an upper bound the sampling cannot miss.
2. A tool input with N short array elements (N doubling to --elements), once with 97
   distinct values repeated and once with every element unique, masked in-process by
   pipeline.mask_request (the faster of 2 runs): CPU seconds, growth per doubling (2 is linear)
   and microseconds per element beside json.loads of the same body (its fastest of 3),
   and their ratio.

    python bench/large.py                   # 200 MB and 1M elements (several GB, minutes)
    python bench/large.py --mb 50 --elements 250000
    python bench/large.py --addon DIR --elements 0   # DIR's addon (another checkout) beside

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests")]

from disguiselib import pipeline  # noqa: E402
from disguiselib.apis.registry import Api, recognise  # noqa: E402
from disguiselib.config import Config, build_config  # noqa: E402
from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Recorded, Reply, http_post, mitmdump_cmd  # noqa: E402

UNIT = "Acme Corp wrote a long line of words for the record, see ticket 12. "


def status_mb(pid: int, field: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return 0


def tree(pid: int) -> list[int]:
    """pid and its descendants (the masking worker is mitmdump's child)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out


class Sampler(threading.Thread):
    """The summed RSS of a process tree every 5 ms: its peak, and the sum of each process's
    own VmHWM (the last read of each pid)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.hwm = pid, 0, {}  # type: ignore[var-annotated]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.005):
            total = 0
            for p in tree(self.pid):
                total += status_mb(p, "VmRSS")
                self.hwm[p] = max(self.hwm.get(p, 0), status_mb(p, "VmHWM"))
            self.peak = max(self.peak, total)


def small(rec: Recorded) -> Reply:
    body = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    return Reply([json.dumps(body).encode()], headers={"content-type": "application/json"}, framing="length")


def through(tmp: Path, mb: int, addon: bool, script: Path | None = None) -> None:
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
        elif script is not None:
            cmd[cmd.index("-s") + 1] = str(script)
        proxy = Mitmdump(cmd)
        try:
            assert proxy.port is not None
            pid = proxy.proc.pid
            if addon:  # the worker starts in the background: idle once it is ready
                t_end = time.monotonic() + 120
                while "masking worker ready" not in proxy.output and time.monotonic() < t_end:
                    time.sleep(0.1)
            time.sleep(0.5)
            idle = sum(status_mb(p, "VmRSS") for p in tree(pid))
            idle_p = status_mb(pid, "VmRSS")
            procs = len(tree(pid))
            sampler = Sampler(pid)
            sampler.start()
            t = time.monotonic()
            status, _, _ = http_post(proxy.port, "/v1/messages", body, timeout=900)
            took = time.monotonic() - t
            time.sleep(0.05)
            sampler.stop.set()
            sampler.join()
            got = up.requests[-1].body if up.requests else b""
            masked = b"Acme Corp" not in got and b"Zenith Labs" in got
            up.requests.clear()
            over = (sampler.peak - idle) * 1024 * 1024 / len(body)
            hwm = sum(sampler.hwm.values())
            name = ("plain" if not addon else "disguise" if script is None else "addon@" + script.parents[1].name)[:14]
            print(f"{name:>14} {len(body) / 1e6:>8.0f} {status:>6} {'yes' if masked else 'no':>6} {took:>7.1f}"
                  f" {procs:>5} {idle:>8} {sampler.peak:>8} {over:>13.2f} {(hwm - idle) * 1024 * 1024 / len(body):>12.2f}"
                  f"   mitmdump {(sampler.hwm.get(pid, 0) - idle_p) / len(body) * 2**20:.2f}, workers "
                  + " ".join(f"{v / len(body) * 2**20:.2f}" for k, v in sampler.hwm.items() if k != pid))  # fmt: skip
        finally:
            proxy.stop()


def cpu(fn) -> float:  # noqa: ANN001 - a callable
    """fn's CPU time in this thread (the load of other processes does not count)."""
    t = time.thread_time()
    fn()
    return time.thread_time() - t


def elements(top: int) -> None:
    m = Path(tempfile.mkdtemp()) / "m.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(m)], True, [])
    api = recognise("POST", "/v1/messages")
    assert api is not None
    for kind in ("repeated", "unique"):
        _elements(top, kind, api, cfg)


def _elements(top: int, kind: str, api: Api, cfg: Config) -> None:
    """kind "repeated": 97 distinct short values over and over (a memo scans each once);
    "unique": every element a different short value (each one scanned)."""
    print(f"\n{kind + ' elements':>18} {'seconds':>8} {'growth':>7} {'us/element':>11} {'json.loads us/el':>17} {'ratio':>6}")
    n, prev = max(1000, top // 8), None
    while n <= top:
        items = [f"a{i % 97}" for i in range(n)] if kind == "repeated" else [f"v{i:x}q" for i in range(n)]
        tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}
        doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"},
                                                           {"role": "assistant", "content": [tool]}]}  # fmt: skip
        body = json.dumps(doc).encode()
        jl = min(cpu(lambda b=body: json.loads(b)) for _ in range(3))
        # the faster of 2: one run alone counted the first touch of a million strings' pages
        # (1M unique: 1.62 µs an element once, 0.92-0.98 after), which read as growth
        s = min(cpu(lambda b=body: pipeline.mask_request(api, b, cfg, "/v1/messages", [("content-type", "application/json")]))
                for _ in range(2))  # fmt: skip
        growth = f"{s / prev:.2f}" if prev else ""
        print(f"{n:>18} {s:>8.2f} {growth:>7} {s / n * 1e6:>11.2f} {jl / n * 1e6:>17.2f} {s / jl:>6.0f}")
        prev = s
        n *= 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200, help="0: skip the request body")
    ap.add_argument("--elements", type=int, default=1_000_000, help="0: skip the tool input")
    ap.add_argument("--addon", type=Path, action="append", default=[],
                    help="a checkout whose addon runs beside this one's (before/after in one run)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-large-", dir=os.environ.get("TMPDIR")))
    print(f"load average {os.getloadavg()[0]:.1f}; {MITMDUMP}")
    if a.mb:  # --mb 0: the tool input alone
        print(f"{'proxy':>14} {'body MB':>8} {'status':>6} {'masked':>6} {'seconds':>7} {'procs':>5} {'idle MB':>8}"
              f" {'peak MB':>8} {'(peak-idle)/body':>13} {'(sum HWM-idle)/body':>12}   each process's HWM/body"
              " (mitmdump: above its idle)")  # fmt: skip
        through(tmp, a.mb, False)
        for d in a.addon:
            through(tmp, a.mb, True, d.resolve() / "addon" / "disguise.py")
        through(tmp, a.mb, True)
    if a.elements:
        elements(a.elements)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
