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
3. --through N,...: a tool input of N unique short array elements (as 2.) through a real
   mitmdump running the addon and through plain mitmdump (bench/proxies.py, the variants
   interleaved, --runs rounds, medians), while a paced stream (one event every 5 ms, read
   by a process of its own: bench/offload.py) goes through the same mitmdump: the CPU of
   the proxy's processes (mitmdump and its masking worker, /proc schedstat, every 5 ms)
   over the request, the addon's above plain's per element and as a ratio to json.loads
   of the same body (its fastest of 3 in this process), the wall time, the peak of the
   processes' summed RSS above their RSS just before (and its ratio to the body), and the
   stream's longest wait while the body was in flight. The body the provider received is
   checked to be the body sent (nothing in it to mask).

    python bench/large.py                   # 200 MB and 1M elements (several GB, minutes)
    python bench/large.py --mb 0 --elements 0 --through 1000000,2000000 --runs 3
    python bench/large.py --mb 50 --elements 250000
    python bench/large.py --addon DIR --elements 0   # DIR's addon (another checkout) beside

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
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

    def __init__(self, pid: int, cpu_of=None) -> None:  # noqa: ANN001 - common.proc_cpu
        super().__init__(daemon=True)
        self.pid, self.peak, self.hwm = pid, 0, {}  # type: ignore[var-annotated]
        self.cpu_of, self.cpu = cpu_of, {}  # type: ignore[var-annotated]
        self.stop = threading.Event()

    def run(self) -> None:
        while True:
            stopped = self.stop.wait(0.005)
            total = 0
            for p in tree(self.pid):
                total += status_mb(p, "VmRSS")
                self.hwm[p] = max(self.hwm.get(p, 0), status_mb(p, "VmHWM"))
                if self.cpu_of is not None:  # each process's last CPU read (a worker that ends keeps its own)
                    c = self.cpu_of(p)
                    if c == c:
                        self.cpu[p] = c
            self.peak = max(self.peak, total)
            if stopped:
                return


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


def loads_peak_mb(body: bytes) -> float:
    """RSS (MB) json.loads(body) adds while its document is held, in a forked process
    (the body already there): the floor of any proxy that parses the body."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, write, leave
        os.close(r)
        before = status_mb(os.getpid(), "VmRSS")
        doc = json.loads(body)
        os.write(w, str(status_mb(os.getpid(), "VmRSS") - before).encode())
        del doc
        os._exit(0)
    os.close(w)
    got = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    return float(got or b"nan")


def through_elements(ns: list[int], runs: int) -> None:
    """3. of the docstring: N unique short elements through mitmdump, plain and the addon."""
    sys.path.insert(0, str(ROOT / "bench"))
    import offload  # noqa: PLC0415 - bench/ on the path only for this part
    import proxies  # noqa: PLC0415
    import streams  # noqa: PLC0415
    from common import proc_cpu  # noqa: PLC0415
    from material import prose  # noqa: PLC0415

    tmp = proxies.tmpdir()
    text = prose(random.Random(2), 400_000, brackets=False)
    pieces = streams.pieces(text, streams.cut_points(random.Random(3), text, 5, 40))
    (tmp / "paced.sse").write_bytes(b"".join(streams.anthropic_text_stream(random.Random(4), pieces)))
    up_s = proxies.Upstream([f"paced={tmp / 'paced.sse'}"], per_write=1)
    up = proxies.Upstream([], per_write=1)
    mdir = proxies.mappings_dir(tmp, "shipped", None)
    keys = ("plain", "addon")
    md, ports, sport = {}, {}, {}
    got: dict[tuple[str, int], list[dict]] = {}
    load0 = os.getloadavg()[0]
    try:
        for k in keys:
            second = ["--mode", f"reverse:http://127.0.0.1:{up_s.port}@127.0.0.2:0"]
            md[k] = proxies.Mitmdump(up.port, [*proxies.variant_args(tmp, k, mdir), *second], tmp, f"elements-{k}")
        for k, m in md.items():
            ports[k] = m.wait()
            t_end = time.monotonic() + 120
            while time.monotonic() < t_end and (
                k not in sport or (k == "addon" and not any("masking worker ready" in ln for ln in m.log))
            ):
                found = re.search(r"listening at 127\.0\.0\.2:(\d+)", "\n".join(m.log))
                if found:
                    sport[k] = int(found.group(1))
                time.sleep(0.05)
        for n in ns:
            items = [f"v{i:x}q" for i in range(n)]
            tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}
            doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"},
                                                               {"role": "assistant", "content": [tool]}]}  # fmt: skip
            body = json.dumps(doc).encode()
            del items, tool, doc
            jl = min(cpu(lambda b=body: json.loads(b)) for _ in range(3))
            jl_mb = loads_peak_mb(body)
            for r in range(runs):
                for k in keys if r % 2 == 0 else keys[::-1]:
                    pid = md[k].pid
                    before = {p: proc_cpu(p) for p in tree(pid)}
                    rss0 = sum(status_mb(p, "VmRSS") for p in tree(pid))
                    sampler = Sampler(pid, cpu_of=proc_cpu)
                    sampler.start()
                    res = offload.run_variant(ports[k], [("body", body)], 0.0, sport[k])
                    sampler.stop.set()
                    sampler.join()
                    spent = sum(c - before.get(p, 0.0) for p, c in sampler.cpu.items())
                    same = up.last_body() == body if r == 0 else None
                    got.setdefault((k, n), []).append({
                        "cpu": spent, "wall": res["times"]["body"][0], "peak": sampler.peak - rss0,
                        "wait": max(res["gaps"], default=float("nan")), "same": same, "jl": jl, "len": len(body), "jl_mb": jl_mb})  # fmt: skip
            print(".", end="", flush=True)
    finally:
        for m in md.values():
            m.stop()
        up.stop()
        up_s.stop()
    print(f"\n{runs} runs each, medians; load average {load0:.1f} -> {os.getloadavg()[0]:.1f} (a shared machine)")
    print(f"{'elements':>9} {'body MB':>8} {'proxy':>6} {'CPU s':>7} {'wall s':>7} {'addon-plain':>12}"
          f" {'us/el CPU':>10} {'json.loads us/el':>17} {'ratio':>6} {'us/el wall':>11} {'peak-before MB':>15}"
          f" {'peak/body':>10} {'stream max wait ms':>19} {'body as sent':>13}"
          "   (json.loads of the body alone: its document's RSS/body)")  # fmt: skip
    prev = None
    for n in ns:
        fs = ("cpu", "wall", "peak", "wait")
        med = {k: {f: statistics.median(x[f] for x in got[(k, n)]) for f in fs} for k in keys}
        for k in keys:
            g = got[(k, n)][0]
            m = med[k]
            extra = m["cpu"] - med["plain"]["cpu"]
            wall_el = (m["wall"] - med["plain"]["wall"]) / n * 1e6
            cells = (f"{extra:>12.2f} {extra / n * 1e6:>10.3f} {g['jl'] / n * 1e6:>17.3f} {extra / g['jl']:>6.1f}"
                     f" {wall_el:>11.3f}") if k == "addon" else f"{'':>12} {'':>10} {g['jl'] / n * 1e6:>17.3f} {'':>6} {'':>11}"  # fmt: skip
            print(f"{n:>9} {g['len'] / 1e6:>8.1f} {k:>6} {m['cpu']:>7.2f} {m['wall']:>7.2f} {cells}"
                  f" {m['peak']:>15.0f} {m['peak'] * 2**20 / g['len']:>10.2f} {m['wait'] * 1e3:>19.0f}"
                  f" {'yes' if g['same'] else 'NO':>13}   ({g['jl_mb'] * 2**20 / g['len']:.2f})")  # fmt: skip
        if prev is not None:
            print(f"{'':>9} growth of the addon's CPU above plain over the step before: "
                  f"{(med['addon']['cpu'] - med['plain']['cpu']) / prev:.2f} (2 is linear for a doubling)")  # fmt: skip
        prev = med["addon"]["cpu"] - med["plain"]["cpu"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200, help="0: skip the request body")
    ap.add_argument("--elements", type=int, default=1_000_000, help="0: skip the tool input")
    ap.add_argument("--through", default="", help="N,...: N unique elements through mitmdump, plain and the addon")
    ap.add_argument("--runs", type=int, default=3, help="--through's rounds (medians)")
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
    if a.through:
        through_elements([int(x) for x in a.through.split(",")], a.runs)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
