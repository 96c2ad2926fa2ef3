"""Mapping sets at scale (issue 27): how long a set of N literals takes to load, N
doubling from 2,000 to 100,000 (growth per doubling: 2 is linear), and through a real
mitmdump the longest pause a running stream sees while a set of 8,000 literals is
reloaded (the build runs in a worker thread; it used to run on the event loop: 6-8 s).

    python bench/reload.py                 # both parts, ~3 min on 2 loaded cores
    python bench/reload.py --max 16000     # a shorter load table
    python bench/reload.py --only stream

Figures are printed, never asserted. Files go to $TMPDIR/disguise-bench-reload-*.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "addon"))

from disguiselib.config import build_config  # noqa: E402
from disguiselib.mitm.reload import SETTLE_S  # noqa: E402


def literals_file(path: Path, n: int, extra: int = 0) -> Path:
    lines = ["literals:"]
    for i in range(n + extra):
        lines.append(f'  "Customer {i:06d} Ltd": "Zq{i:06d}xk"')
    path.write_text("\n".join(lines) + "\n")
    return path


def load_table(tmp: Path, top: int) -> None:
    print("load time of a set of N literals (build_config: YAML, checks, compiled rules; no defaults)")
    print(f"{'literals':>9} {'seconds':>8} {'growth per doubling':>20}")
    n, prev = 2000, None
    sizes = []
    while n <= top:
        sizes.append(n)
        n *= 2
    if top >= 100_000 and sizes[-1] != 100_000:
        sizes.append(100_000)
    for n in sizes:
        f = literals_file(tmp / f"lit{n}.yaml", n)
        t = time.perf_counter()
        build_config([str(f)], False, [])
        s = time.perf_counter() - t
        growth = ""
        if prev is not None:
            pn, ps = prev
            # per doubling, whatever the step: (s/ps) ** (1 / log2(n/pn))
            import math

            growth = f"{(s / ps) ** (1 / math.log2(n / pn)):.2f}"
        print(f"{n:>9} {s:>8.2f} {growth:>20}")
        prev = (n, s)
    print("(linear: 2.0 per doubling; the pairwise check it replaced: 4.0, 8k literals 7.3 s of it alone)")


# -- a stream running through mitmdump while the set is reloaded --------------------------------

GAP_S = 0.005  # between the upstream's events


def _event(text: str) -> bytes:
    d = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    return b"event: content_block_delta\ndata: " + json.dumps(d).encode() + b"\n\n"


class _Up(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seconds = 10.0

    def log_message(self, *a: object) -> None:
        pass

    def do_POST(self) -> None:
        doc = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if doc.get("model") != "slow":
            body = json.dumps({"type": "message", "role": "assistant",
                               "content": [{"type": "text", "text": "ok"}]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                 "model": "slow", "content": [], "stop_reason": None, "usage": {"input_tokens": 1}}}  # fmt: skip
        cb = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        pieces = [b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n",
                  b"event: content_block_start\ndata: " + json.dumps(cb).encode() + b"\n\n"]  # fmt: skip
        end = time.monotonic() + self.seconds
        i = 0
        while time.monotonic() < end or pieces:
            chunk = b"".join(pieces) or _event(f"word{i} ")
            pieces = []
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
            i += 1
            time.sleep(GAP_S)
        tail = b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
        self.wfile.write(f"{len(tail):x}\r\n".encode() + tail + b"\r\n0\r\n\r\n")
        self.wfile.flush()


def _stream(port: int, arrivals: list[float]) -> None:
    body = json.dumps({"model": "slow", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "Customer 000001 Ltd"}]}).encode()  # fmt: skip
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
              + f"content-length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
    while True:
        data = s.recv(65536)
        if not data:
            break
        arrivals.append(time.monotonic())
        if b"message_stop" in data and data.endswith(b"0\r\n\r\n"):
            break
    s.close()


def _post(port: int) -> float:
    t = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    c.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json"})
    c.getresponse().read()
    c.close()
    return time.monotonic() - t


def _gaps(arrivals: list[float], t0: float, t1: float) -> list[float]:
    inside = [t for t in arrivals if t0 <= t <= t1]
    return [b - a for a, b in zip(inside, inside[1:], strict=False)]


def _quantiles(gaps: list[float]) -> tuple[float, ...]:
    if not gaps:
        return (0.0, 0.0, 0.0, 0.0)
    g = sorted(gaps)
    return tuple(g[min(len(g) - 1, int(len(g) * q))] * 1000 for q in (0.5, 0.9, 0.99)) + (g[-1] * 1000,)


def stream_pause(tmp: Path, n: int, reloads: int = 5) -> None:
    print(f"\na running stream through mitmdump while {n} literals are reloaded (upstream event every {GAP_S * 1000:.0f} ms)")
    m = literals_file(tmp / "local.yaml", n)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Up)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    mitmdump = Path(sys.executable).parent / "mitmdump"
    cmd = [str(mitmdump), "--mode", f"reverse:http://127.0.0.1:{server.server_address[1]}", "--listen-host",
           "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp / 'conf'}", "-s", str(ROOT / "addon" / "disguise.py"),
           "--set", f"disguise_mappings={m}", "--set", "disguise_defaults=false"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    port = None
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "listening at" in line:
            port = int(re.search(r"listening at (?:http://)?127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
            break
    threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
    try:
        assert port is not None, "".join(lines)
        _post(port)
        arrivals: list[float] = []
        _Up.seconds = 3.0 + 2.5 * reloads
        t = threading.Thread(target=_stream, args=(port, arrivals))
        t.start()
        time.sleep(3.0)
        quiet = (arrivals[0] + 0.5, time.monotonic()) if arrivals else (0, 0)
        windows = []
        for k in range(reloads):
            literals_file(m, n, extra=1 + k)  # a literal added: taken at once, by the next request
            r0 = time.monotonic()
            waited = _post(port)
            r1 = time.monotonic()
            windows.append((r0, r1 + 0.2, waited))
            time.sleep(max(0.0, 2.5 - (r1 - r0)))
        t.join(120)
        before = _gaps(arrivals, *quiet)
        during = [g for r0, r1, _ in windows for g in _gaps(arrivals, r0, r1)]
        time.sleep(0.5)
        reloaded = sum("rules reloaded" in x for x in lines)
        if os.environ.get("BENCH_DEBUG"):
            print("".join(lines[-30:]))
        print(f"  {reloads} reloads (build off the loop), each {', '.join(f'{w:.2f}' for *_, w in windows)} s; "
              f"reloaded {reloaded} times")
        print(f"  gaps between the running stream's reads, ms   {'p50':>5} {'p90':>5} {'p99':>5} {'max':>5}")
        for name, gaps in (("before (no reload)", before), ("during the reloads", during)):
            q = _quantiles(gaps)
            print(f"  {name:<45}{q[0]:>5.0f} {q[1]:>5.0f} {q[2]:>5.0f} {q[3]:>5.0f}")
        worst = [max(_gaps(arrivals, r0, r1), default=0.0) * 1000 for r0, r1, _ in windows]
        print(f"  longest pause per reload, ms: {', '.join(f'{w:.0f}' for w in worst)}")
    finally:
        proc.terminate()
        proc.wait(10)
        server.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=100_000)
    ap.add_argument("--only", choices=("load", "stream"))
    ap.add_argument("--stream-literals", type=int, default=8000)
    ap.add_argument("--reloads", type=int, default=5)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-reload-", dir=os.environ.get("TMPDIR")))
    print(f"load average {os.getloadavg()[0]:.1f}; a set that drops rules is held {SETTLE_S:g} s (not measured here)")
    if a.only in (None, "load"):
        load_table(tmp, a.max)
    if a.only in (None, "stream"):
        stream_pause(tmp, a.stream_literals, a.reloads)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
