"""The load test: many concurrent streams through one proxy, from one asyncio client, with
what the kernel and the proxy process show meanwhile (listen overflows, the listener's
accept queue, RSS)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import children, proc_pss, proc_status
from proxies import dechunk


@dataclass
class Job:
    body: bytes
    path: str
    headers: dict[str, str]
    key: str  # which stream (for the check)


@dataclass
class Outcome:
    ok: int = 0
    wrong: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    connect_s: list[float] = field(default_factory=list)  # connect() time per stream
    first_s: list[float] = field(default_factory=list)
    wall: float = 0.0
    problems: list[str] = field(default_factory=list)


async def _one(port: int, job: Job, timeout: float) -> tuple[bytes, float, float]:
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t_conn = time.perf_counter() - t0
    try:
        auth = ("anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\n" if job.path.endswith("/messages")
                else "authorization: Bearer sk-bench\r\n")  # fmt: skip
        extra = "".join(f"{k}: {v}\r\n" for k, v in job.headers.items())
        writer.write((f"POST {job.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n{auth}"
                      f"accept-encoding: identity\r\n{extra}content-length: {len(job.body)}\r\n\r\n").encode() + job.body)  # fmt: skip
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        t_first = time.perf_counter() - t0
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("status " + head.split(b"\r\n", 1)[0].decode("latin-1"))
        buf = bytearray()
        while not buf.endswith(b"\r\n0\r\n\r\n") or len(buf) < 5:
            d = await asyncio.wait_for(reader.read(1 << 16), timeout)
            if not d:
                raise ConnectionAbortedError("closed before the end of the body")
            buf += d
        return dechunk(bytes(buf)), t_conn, t_first
    finally:
        writer.close()


async def _run(port: int, jobs: list[Job], check, timeout: float, ramp_s: float) -> Outcome:
    res = Outcome()

    async def go(i: int, job: Job) -> None:
        if ramp_s:
            await asyncio.sleep(ramp_s * i / len(jobs))
        try:
            out, tc, tf = await _one(port, job, timeout)
        except Exception as e:  # noqa: BLE001 - every failure is counted by its kind
            kind = type(e).__name__
            if isinstance(e, OSError) and e.errno is not None:
                kind += f"(errno {e.errno})"
            elif isinstance(e, RuntimeError):
                kind = str(e)[:60]
            res.errors[kind] = res.errors.get(kind, 0) + 1
            return
        res.connect_s.append(tc)
        res.first_s.append(tf)
        problems = check(job.key, out)
        if problems:
            res.wrong += 1
            res.problems += problems[:1]
        else:
            res.ok += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(go(i, j) for i, j in enumerate(jobs)))
    res.wall = time.perf_counter() - t0
    return res


def run_streams(port: int, jobs: list[Job], check, timeout: float = 60, ramp_s: float = 0.0) -> Outcome:
    """All jobs at once (or spread over ramp_s seconds) from one asyncio loop; each
    response read to its end and checked with check(key, body) -> problems."""
    return asyncio.run(_run(port, jobs, check, timeout, ramp_s))


# -- what the kernel and the proxy show -------------------------------------------------------


def netstat(*names: str) -> dict[str, int]:
    """TcpExt counters from /proc/net/netstat (ListenOverflows, ListenDrops, ...),
    system-wide: anything else on the machine counts too."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    out: dict[str, int] = {}
    for a, b in zip(lines[::2], lines[1::2], strict=False):
        if a.startswith("TcpExt:"):
            for k, v in zip(a.split()[1:], b.split()[1:], strict=False):
                if k in names:
                    out[k] = int(v)
    return out


def accept_queue(port: int) -> int | None:
    """Connections waiting in the accept queue of the socket listening on 127.0.0.1:port
    (/proc/net/tcp rx_queue of a LISTEN socket is its accept backlog)."""
    hexport = f"{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[1].endswith(":" + hexport) and f[3] == "0A":  # 0A = LISTEN
            return int(f[4].split(":")[1], 16)
    return None


def listen_backlog(port: int) -> int | None:
    """The backlog a socket listening on 127.0.0.1:port was given (ss shows it as Send-Q)."""
    import subprocess

    try:
        out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"LISTEN\s+\d+\s+(\d+)", out)
    return int(m.group(1)) if m else None


class Sampler:
    """Samples a proxy's RSS, its RSS with its child processes' (the masking worker the
    addon starts: users pay for it too; `tree_max`, the sum of each process's RSS, so
    shared library pages count twice: an upper bound) and the accept queue of each
    listener in `ports` (the proxy's, the provider's) every `every` seconds in a thread,
    while a with-block runs."""

    def __init__(self, pid: int, ports: int | list[int], every: float = 0.01) -> None:
        self.pid, self.every = pid, every
        self.ports = [ports] if isinstance(ports, int) else list(ports)
        self.rss_max = 0
        self.tree_max = 0
        self.pss_tree_max = 0  # the same sum in PSS (shared pages counted once), every tenth sample
        self.queue_max = {p: 0 for p in self.ports}
        self.samples = 0
        self._stop = threading.Event()

    def _loop(self) -> None:
        while not self._stop.is_set():
            rss = proc_status(self.pid, "VmRSS")
            self.rss_max = max(self.rss_max, rss)
            kids = children(self.pid)
            self.tree_max = max(self.tree_max, rss + sum(proc_status(p, "VmRSS") for p in kids))
            if self.samples % 10 == 0:
                self.pss_tree_max = max(self.pss_tree_max, sum(proc_pss(p) for p in [self.pid, *kids]))
            for p in self.ports:
                q = accept_queue(p)
                if q is not None:
                    self.queue_max[p] = max(self.queue_max[p], q)
            self.samples += 1
            self._stop.wait(self.every)

    def __enter__(self) -> Sampler:
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def run_streams_threaded(port: int, jobs: list[Job], check, timeout: float = 60) -> Outcome:
    """The same load from one blocking-socket thread per stream (as a client built on a
    synchronous SDK in a thread pool does); all threads start at once."""
    import socket

    res = Outcome()
    lock = threading.Lock()

    def one(job: Job) -> None:
        try:
            t0 = time.perf_counter()
            s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            tc = time.perf_counter() - t0
            try:
                auth = ("anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\n" if job.path.endswith("/messages")
                        else "authorization: Bearer sk-bench\r\n")  # fmt: skip
                extra = "".join(f"{k}: {v}\r\n" for k, v in job.headers.items())
                s.sendall((f"POST {job.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n{auth}"
                           f"accept-encoding: identity\r\n{extra}content-length: {len(job.body)}\r\n\r\n").encode() + job.body)  # fmt: skip
                buf = bytearray()
                while not (buf.endswith(b"\r\n0\r\n\r\n") and b"\r\n\r\n" in buf):
                    d = s.recv(1 << 16)
                    if not d:
                        raise ConnectionAbortedError("closed before the end of the body")
                    buf += d
            finally:
                s.close()
            head, _, body = bytes(buf).partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError("status " + head.split(b"\r\n", 1)[0].decode("latin-1"))
            problems = check(job.key, dechunk(body))
            with lock:
                res.connect_s.append(tc)
                if problems:
                    res.wrong += 1
                    res.problems += problems[:1]
                else:
                    res.ok += 1
        except Exception as e:  # noqa: BLE001 - every failure is counted by its kind
            kind = type(e).__name__ + (f"(errno {e.errno})" if isinstance(e, OSError) and e.errno else "")
            if isinstance(e, RuntimeError):
                kind = str(e)[:60]
            with lock:
                res.errors[kind] = res.errors.get(kind, 0) + 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(j,), daemon=True) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    res.wall = time.perf_counter() - t0
    return res
