"""What reloads of the mapping files leave in memory: a mitmdump whose mapping file of N
literals is edited E times (a disguise renamed each time: every edit taken at once), a
request after each, and the RSS of the proxy and of its masking worker after the load
and after 1, 2, 4, ... edits. A rule set no flow uses any more is freed; before probe Q the
masking worker's generation table held the last 8 alive (20,000 literals, 2 loaded
cores: 204 MB after the load, 672 MB after 16 edits, against 406-423 now, the same after
64: what the builds' allocations leave in the heap, not rule sets kept).

    python bench/reloadmem.py                       # 20,000 literals, 32 edits (~3 min on 2 loaded cores)
    python bench/reloadmem.py --literals 2000 --edits 200

Figures are printed, never asserted. Files go to $TMPDIR/disguise-bench-reloadmem-*.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class _Up(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                           "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1}}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def literals_file(path: Path, n: int, edit: int) -> None:
    lines = ["literals:"] + [f'  "Customer {i:06d} Ltd": "Zq{i:06d}{"x" if i == edit % n else "k"}"' for i in range(n)]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = Path(f"/proc/{p}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                out.append(int(p))
    return out


def post(port: int, text: str) -> None:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]})
    c.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json", "x-api-key": "k"})
    c.getresponse().read()
    c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--literals", type=int, default=20_000)
    ap.add_argument("--edits", type=int, default=32)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-reloadmem-"))
    m = tmp / "team.yaml"
    literals_file(m, args.literals, -1)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Up)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    mitmdump = Path(sys.executable).parent / "mitmdump"
    cmd = [str(mitmdump), "--mode", f"reverse:http://127.0.0.1:{server.server_address[1]}", "--listen-host",
           "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp / 'conf'}", "--set", "flow_detail=0",
           "-s", str(ROOT / "addon" / "disguise.py"), "--set", f"disguise_mappings={m}"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "DISGUISE_CACHE": str(tmp / "cache")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    lines: list[str] = []
    port = None
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if (found := re.search(r"listening at (?:http://)?127\.0\.0\.1:(\d+)", line)) is not None:
            port = int(found.group(1))
            break
    threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
    try:
        assert port is not None, "".join(lines)
        while "masking worker ready" not in "".join(lines):
            time.sleep(0.2)
        post(port, "Customer 000001 Ltd")
        print(f"RSS after reloads of a mapping file of {args.literals} literals (a disguise renamed each time)")
        print(f"{'edits':>6} {'proxy MB':>9} {'worker MB':>10}")
        marks = {0, *(2**k for k in range(20) if 2**k <= args.edits), args.edits}
        for e in range(args.edits + 1):
            if e:
                literals_file(m, args.literals, e)
                post(port, f"Customer {e % args.literals:06d} Ltd")
            if e in marks:
                time.sleep(1.0)
                kids = children(proc.pid)
                worker = rss_kb(kids[0]) if kids else None
                print(f"{e:>6} {(rss_kb(proc.pid) or 0) / 1024:>9.1f} {(worker or 0) / 1024:>10.1f}", flush=True)
        print(f"reloads logged: {''.join(lines).count('rules reloaded')}")
    finally:
        proc.terminate()
        proc.wait(30)
        server.shutdown()


if __name__ == "__main__":
    main()
