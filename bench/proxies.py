"""The mitmdump runs: the fake provider process, mitmdump processes (plain, identity
callable, the addon), a keep-alive HTTP/1.1 client, and interleaved timing of them."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from common import ADDON, BENCH, MAPPINGS, REPO, proc_cpu

MITMDUMP = Path(sys.executable).parent / "mitmdump"

PLAIN_SCRIPT = (
    "def responseheaders(flow):\n"
    "    # plain mitmdump buffers SSE unless streamed: stream it, like the addon does\n"
    "    flow.response.stream = True\n"
)
# plain mitmdump given the accept queue the addon gives mitmproxy's listeners: the
# project's own ListenQueue (addon/disguiselib/mitm/listen.py), nothing else of the addon
QUEUE_SCRIPT = (
    "import sys\n"
    f"sys.path.insert(0, {str(ADDON)!r})\n"
    "from disguiselib.mitm.listen import ListenQueue\n"
    "addons = [ListenQueue()]\n"
)
IDENT_SCRIPT = (
    "def responseheaders(flow):\n"
    "    # a stream callable that does nothing: mitmproxy's cost of calling one\n"
    "    flow.response.stream = lambda data: data\n"
)


def tmpdir() -> Path:
    """A fresh folder under $TMPDIR for this run's files, removed when the run ends
    (keep it with DISGUISE_BENCH_KEEP=1, e.g. to read mitmdump's logs)."""
    d = Path(tempfile.mkdtemp(prefix="disguise-bench-"))
    if not os.environ.get("DISGUISE_BENCH_KEEP"):
        atexit.register(shutil.rmtree, d, True)
    return d


def mappings_dir(tmp: Path, name: str, literals: dict[str, str] | None) -> Path:
    """A mappings folder: the shipped default.yaml plus literals (if any)."""
    d = tmp / f"mappings-{name}"
    d.mkdir()
    shutil.copy(MAPPINGS / "default.yaml", d / "default.yaml")
    if literals:
        (d / "literals.yaml").write_text(yaml.safe_dump({"literals": literals}, allow_unicode=True))
    return d


def variant_args(tmp: Path, key: str, mappings: Path | None = None) -> list[str]:
    """mitmdump arguments of a variant: "plain" (stream=True), "plain-queue" (plain with
    the addon's accept queue), "ident" (identity stream callable), "addon" (-s
    addon/disguise.py on mappings, the shipped folder by default), "addon-nocapture"."""
    if key in ("plain", "plain-queue"):
        f = tmp / "stream_only.py"
        f.write_text(PLAIN_SCRIPT)
        args = ["-s", str(f)]
        if key == "plain-queue":
            q = tmp / "listen_queue.py"
            q.write_text(QUEUE_SCRIPT)
            args += ["-s", str(q)]
        return args
    if key == "ident":
        f = tmp / "stream_identity.py"
        f.write_text(IDENT_SCRIPT)
        return ["-s", str(f)]
    before = key in ("before", "before-nocapture") and BEFORE is not None
    script = str(BEFORE / "addon" / "disguise.py") if before else "addon/disguise.py"  # type: ignore[operator]
    args = ["-s", script, "--set", f"disguise_mappings={mappings or 'mappings'}"]
    if key in ("addon-nocapture", "before-nocapture"):  # the engine alone: no copy of either side kept for inspection
        args += ["--set", "disguise_capture_limit=0"]
    return args


# Another tree whose addon runs beside this one's as the variant "before" (bench.py --before)
BEFORE: Path | None = None


def variants(*keys: str) -> tuple[str, ...]:
    """keys, and "before" after "addon" when bench.py was given --before."""
    return tuple(k for key in keys for k in ((key, "before") if key == "addon" and BEFORE is not None else (key,)))


VARIANT_LABELS = {
    "plain": "plain mitmdump, stream=True",
    "plain-queue": "plain mitmdump, stream=True, the addon's accept queue",
    "ident": "mitmdump, identity callable",
    "addon": "mitmdump -s addon/disguise.py",
    "before": "the --before tree's addon",
}


class Upstream:
    """The fake provider (bench/upstream.py) as a child process."""

    def __init__(self, routes: list[str], per_write: int = 8, threaded: bool = False) -> None:
        mode = ["--threaded"] if threaded else []
        self.proc = subprocess.Popen([sys.executable, str(BENCH / "upstream.py"), *mode, str(per_write), *routes],
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError("the fake provider did not start")
        self.port = int(line)

    def last_body(self) -> bytes:
        """The last POST body the provider received."""
        c = Client(self.port)
        try:
            return c.request(b"", method="GET", path="/_bench/last")[2]
        finally:
            c.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Mitmdump:
    """mitmdump --mode reverse:http://127.0.0.1:UPSTREAM on 127.0.0.1, port from its log.

    Its output goes to a file, not a pipe: mitmdump prints a few lines per connection
    with a blocking write, so a pipe that the bench process drains too slowly (its
    thread starved of the GIL by a busy client loop) stalls mitmdump's event loop for
    seconds. That was an artefact of the first load harness (bench/README.md, (e))."""

    def __init__(self, upstream_port: int, extra: list[str], tmp: Path, name: str, env: dict[str, str] | None = None,
                 pipe: bool = False) -> None:
        conf = tmp / f"conf-{name}"
        conf.mkdir(exist_ok=True)
        cmd = [
            str(MITMDUMP), "--mode", f"reverse:http://127.0.0.1:{upstream_port}",
            "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={conf}", *extra,
        ]  # fmt: skip
        self.name = name
        self.logfile = tmp / f"mitmdump-{name}.log"
        self.pipe = pipe
        if pipe:  # the first harness: a pipe, drained line by line by a thread of this process
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})  # fmt: skip
            threading.Thread(target=self._drain, daemon=True).start()
        else:
            with open(self.logfile, "wb") as out:
                self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             env={**os.environ, **(env or {})})  # fmt: skip
        self.pid = self.proc.pid
        self.port: int | None = None

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        with open(self.logfile, "wb") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()

    @property
    def log(self) -> list[str]:
        try:
            return self.logfile.read_text(errors="replace").splitlines()
        except OSError:
            return []

    def wait(self, timeout: float = 60) -> int:
        t_end = time.monotonic() + timeout
        while self.port is None and time.monotonic() < t_end and self.proc.poll() is None:
            m = re.search(r"listening at 127\.0\.0\.1:(\d+)", "\n".join(self.log))
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError(f"mitmdump ({self.name}) did not start:\n" + "\n".join(self.log[-20:]))
        return self.port

    def worker_ready(self, timeout: float = 120) -> float:
        """Seconds waited until the addon's masking worker is ready (its log says so): it is
        started, and its rules built, in the background once mitmdump listens (~1 s on 2
        loaded cores with 1,000 literals). A large body sent before is masked in a thread
        of mitmdump instead, beside the worker's build: not what a figure of the worker's
        path should time. Raises when it is not ready in time."""
        t0 = time.monotonic()
        while not any("masking worker ready" in ln for ln in self.log):
            if time.monotonic() - t0 > timeout or self.proc.poll() is not None:
                raise RuntimeError(f"mitmdump ({self.name}): no masking worker ready:\n" + "\n".join(self.log[-20:]))
            time.sleep(0.02)
        return time.monotonic() - t0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Client:
    """One keep-alive connection; POSTs a body and reads the whole response."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, body: bytes, per_write: int = 8, path: str = "/v1/messages", headers: dict[str, str] | None = None,
             gaps: list[float] | None = None) -> tuple[float, float, bytes]:  # fmt: skip
        """(wall time, time to the first body byte, dechunked body). gaps, if given,
        receives the time between successive reads (the longest pause a client saw)."""
        h = {"x-bench-per-write": str(per_write), **(headers or {})}
        return self.request(body, path=path, headers=h, gaps=gaps)

    def request(self, body: bytes, method: str = "POST", path: str = "/v1/messages", headers: dict[str, str] | None = None,
                gaps: list[float] | None = None) -> tuple[float, float, bytes]:  # fmt: skip
        hk = {k.lower() for k in headers or {}}
        if "authorization" in hk or "x-api-key" in hk:
            auth = ""
        elif path.endswith("/messages"):
            auth = "anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\n"
        else:
            auth = "authorization: Bearer sk-bench\r\n"
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        req = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
            f"{auth}accept: text/event-stream\r\naccept-encoding: identity\r\n{extra}content-length: {len(body)}\r\n\r\n"
        ).encode() + body
        sock = self.sock
        t0 = time.perf_counter()
        sock.sendall(req)
        buf = bytearray()
        hdr = -1
        chunked = False
        clen = -1
        t_first = 0.0
        t_last = t0
        while True:
            d = sock.recv(1 << 18)
            if not d:
                raise RuntimeError("connection closed before the response ended")
            if gaps is not None:
                now = time.perf_counter()
                gaps.append(now - t_last)
                t_last = now
            buf += d
            if hdr < 0:
                hdr = buf.find(b"\r\n\r\n")
                if hdr < 0:
                    continue
                head = bytes(buf[:hdr]).decode("latin-1").lower()
                if not head.startswith("http/1.1 200"):
                    raise RuntimeError("unexpected response: " + head.split("\r\n")[0])
                chunked = "transfer-encoding: chunked" in head
                m = re.search(r"content-length: *(\d+)", head)
                clen = int(m.group(1)) if m else -1
            if not t_first and len(buf) > hdr + 4:
                t_first = time.perf_counter() - t0
            if chunked:
                if len(buf) > hdr + 9 and buf.endswith(b"\r\n0\r\n\r\n"):
                    break
            elif clen >= 0 and len(buf) >= hdr + 4 + clen:
                break
        t = time.perf_counter() - t0
        body_raw = bytes(buf[hdr + 4 :])
        return t, t_first, dechunk(body_raw) if chunked else body_raw

    def close(self) -> None:
        self.sock.close()


def dechunk(b: bytes) -> bytes:
    out = []
    i = 0
    while True:
        j = b.index(b"\r\n", i)
        n = int(b[i:j].split(b";")[0], 16)
        if n == 0:
            assert b[j + 2 :] == b"\r\n", "trailing bytes after the last chunk"
            return b"".join(out)
        out.append(b[j + 2 : j + 2 + n])
        assert b[j + 2 + n : j + 4 + n] == b"\r\n"
        i = j + 4 + n


def interleaved(clients: dict[str, Client], pids: dict[str, int], runs: int, post) -> dict[str, dict[str, list[float]]]:
    """Time runs rounds of post(client) on every variant, the order rotated and reversed
    every other round. Returns per variant: wall, first (byte), cpu (proxy process CPU
    seconds of each request, from /proc)."""
    keys = list(clients)
    out: dict[str, dict[str, list[float]]] = {k: {"wall": [], "first": [], "cpu": []} for k in keys}
    for i in range(runs):
        order = keys[i % len(keys) :] + keys[: i % len(keys)]
        if i % 2:
            order.reverse()
        for k in order:
            c0 = proc_cpu(pids[k]) if pids.get(k) else 0.0
            t, tf, _ = post(clients[k])
            out[k]["cpu"].append((proc_cpu(pids[k]) - c0) if pids.get(k) else float("nan"))
            out[k]["wall"].append(t)
            out[k]["first"].append(tf)
    return out
