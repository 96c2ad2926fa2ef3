"""Several disguise instances behind HAProxy, on one machine (docs/deploy.md).

    python deploy/balance.py --instances 3 --listen 127.0.0.1:8080 \\
        --mode reverse:https://api.anthropic.com -- --set disguise_mappings=/srv/disguise/mappings

starts N `mitmdump -s deploy/health.py -s addon/disguise.py` instances on 127.0.0.1 (one
shared confdir, so one CA), writes an HAProxy configuration in front of them and runs
HAProxy in the foreground until interrupted; then stops everything. Arguments after
`--` go to every instance (the same mappings folder for all: a change there is picked
up by each instance at its next request). `--print-config` prints the configuration
for the given instance ports and exits (a starting point for a hand-kept one).

Reverse mode is balanced per request (HAProxy in HTTP mode: `x-disguise-instance` in
each response names the instance); regular mode per connection (TCP mode: the client's
CONNECT tunnel and everything in it stay on one instance, which holds the shared CA).
Instances are checked with `GET /.well-known/disguise/health` (deploy/health.py), which
each answers itself and never forwards.

Each instance is one process started with mitmdump directly; once the installed
`disguise run` command exists it takes the same arguments (`--mitmdump "disguise run"`).

What it prints, for scripts and tests: one line per instance (`instance d1: pid 123,
127.0.0.1:40001`), then `listening at HOST:PORT` once HAProxy accepts connections.
Standard library only: any `python3` runs it. The CA is created once with mitmproxy's
certificate store by the Python that runs mitmdump (its script's `#!` line). A mappings
path that does not exist, or an instance that does not start, ends it with one line
saying so (the instance's log says why), not a traceback.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADDON = REPO / "addon" / "disguise.py"
HEALTH = Path(__file__).resolve().parent / "health.py"
HEALTH_PATH = "/.well-known/disguise/health"
INSTANCE_HEADER = "x-disguise-instance"

# HAProxy timeouts, and why each value:
# - client/server 10m: an LLM stream can be silent for a long time between events
#   (a long thinking phase); the providers' keep-alive pings come well inside that.
# - tunnel 1h: CONNECT tunnels (regular mode) and WebSockets (realtime APIs) live long.
# - check 2s every 1s, down after 2 failures: a dead instance leaves the rotation within
#   about 2 s; until then a refused connection is sent to another instance (redispatch).
TIMEOUTS = {"connect": "5s", "client": "10m", "server": "10m", "tunnel": "1h", "http-request": "30s", "check": "2s"}
CHECK = "check inter 1s fall 2 rise 2"


@dataclass
class Server:
    name: str
    host: str
    port: int


def haproxy_config(listen_host: str, listen_port: int, servers: list[Server], mode: str = "reverse",
                   maxconn: int = 4096, tls: tuple[str, int, str] | None = None) -> str:  # fmt: skip
    """An HAProxy configuration: one frontend on listen_host:listen_port balancing over
    servers, each health-checked through deploy/health.py. mode "reverse" balances HTTP
    requests; "regular" balances TCP connections (CONNECT tunnels). tls: (host, port,
    PEM with certificate and key) for a second, TLS-terminating bind (reverse mode)."""
    http_mode = mode == "reverse"
    check_host = "disguise-health"
    # Regular mode takes proxy requests: the check is one, in absolute form.
    uri = HEALTH_PATH if http_mode else f"http://{check_host}{HEALTH_PATH}"
    lines = [
        "# written by deploy/balance.py; see docs/deploy.md",
        "global",
        f"    maxconn {maxconn}",
        "",
        "defaults",
        f"    mode {'http' if http_mode else 'tcp'}",
        *(f"    timeout {k} {v}" for k, v in TIMEOUTS.items() if http_mode or k != "http-request"),
        # A request is sent again only when it never reached an instance (connection
        # refused): an LLM request that did reach one is never repeated.
        "    retries 2",
        "    option redispatch",
        "",
        "frontend disguise_in",
        f"    bind {listen_host}:{listen_port}",
        *([f"    bind {tls[0]}:{tls[1]} ssl crt {tls[2]} alpn http/1.1"] if tls else []),
        "    default_backend disguise_instances",
        "",
        "backend disguise_instances",
        "    balance leastconn",  # streams are long and uneven: fewest open ones first
        "    option httpchk",
        f"    http-check send meth GET uri {uri} ver HTTP/1.1 hdr host {check_host}",
        "    http-check expect status 200",
    ]
    if http_mode:
        lines.append(f"    http-response set-header {INSTANCE_HEADER} %s")
    lines.append(f"    default-server {CHECK}")
    lines += [f"    server {s.name} {s.host}:{s.port}" for s in servers]
    return "\n".join(lines) + "\n"


_MAKE_CA = "import sys; from mitmproxy.certs import CertStore; CertStore.from_store(sys.argv[1], 'mitmproxy', 2048)"


def ensure_ca(confdir: Path, mitmdump: list[str]) -> None:
    """Create mitmproxy's CA in confdir once, before the instances start: started
    together on an empty confdir, each would make its own and clients would trust only
    one of them. Made by the Python that runs mitmdump (the shebang of its script): the
    Python running this file needs no mitmproxy (`python3 deploy/balance.py ...`).
    Raises RuntimeError naming what is missing."""
    confdir.mkdir(parents=True, exist_ok=True)
    python = _interpreter(mitmdump)
    if python is None:
        try:
            from mitmproxy.certs import CertStore
        except ImportError:
            raise RuntimeError(
                f"cannot create mitmproxy's CA: neither this Python ({sys.executable}) has mitmproxy nor is "
                f"{shlex.join(mitmdump)} a mitmdump script whose Python is known; run this file with the Python "
                "disguise is installed with (e.g. .venv/bin/python deploy/balance.py ...) or give --mitmdump"
            ) from None
        CertStore.from_store(str(confdir), "mitmproxy", 2048)
        return
    r = subprocess.run([python, "-c", _MAKE_CA, str(confdir)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"cannot create mitmproxy's CA in {confdir} with {python}: {last}")


def _interpreter(mitmdump: list[str]) -> str | None:
    """The Python of a mitmdump console script (its `#!` line), or None."""
    exe = shutil.which(mitmdump[0]) if mitmdump else None
    if exe is None or len(mitmdump) != 1:
        return None
    try:
        with open(exe, "rb") as f:
            first = f.readline(1024)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words and "python" in Path(words[0]).name else None


def missing_mappings(extra: list[str]) -> list[str]:
    """The `disguise_mappings=` paths among the instances' arguments that do not exist
    (each instance would stop at start with an error of its own)."""
    out = []
    for i, arg in enumerate(extra):
        if arg.startswith("--set="):
            value = arg.partition("=")[2]
        else:
            value = extra[i + 1] if arg == "--set" and i + 1 < len(extra) else ""
        name, eq, path = value.partition("=")
        if name == "disguise_mappings" and eq and not Path(path).expanduser().exists():
            out.append(path)
    return out


def _ephemeral() -> tuple[int, int]:
    """The range the kernel takes a connection's own port from (Linux's default where
    it cannot be read)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


# The ports free_port handed out in this process: never one twice (the walkthroughs' test
# draws every walkthrough's ports before any of them binds one: two drew the same in CI).
_GIVEN: set[int] = set()
# The pool is dealt into this many shares, and a process draws from its own first (by its
# pid), so that processes side by side (CI's two interpreters' suites) seldom draw alike.
_SHARES = 64


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, for a process that will bind it later. Not one the
    kernel would pick for port 0 (`bind(0)`, then close): that one is in the ephemeral
    range, which every outgoing connection on the machine draws its own port from, so it
    can be taken before the process binds it ("Address already in use"; seen in CI with
    two test runs side by side). Ports below that range are only ever taken by a bind
    that names them: one is drawn at random and tried, never one this process was given
    before, from this process's share of them first (another process draws from another)."""
    low, high = _ephemeral()
    pool = range(10000, low) if low > 11000 else range(high + 1, 65536)
    for draw in (pool[os.getpid() % _SHARES :: _SHARES], pool):
        for _ in range(200):
            port = random.choice(draw)
            if port in _GIVEN:
                continue
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            _GIVEN.add(port)
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_listening(host: str, port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{shlex.join(map(str, proc.args))} exited with {proc.returncode}")  # type: ignore[arg-type]
        try:
            socket.create_connection((host, port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")


def wait_healthy(host: str, port: int, proc: subprocess.Popen, regular: bool = False, timeout: float = 120) -> str:
    """Wait until the instance answers its health check with 200; returns the answer.
    Listening is not enough: a fresh instance answers its first requests slowly (imports
    on first use; seen on mitmproxy 12: 1.5-2 s, past HAProxy's check timeout), and until
    its rules are loaded it must get no traffic."""
    import http.client

    wait_listening(host, port, proc, timeout)
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"instance on {host}:{port} exited with {proc.returncode}")
        conn = http.client.HTTPConnection(host, port, timeout=10)
        try:
            # a regular proxy takes requests in absolute form
            conn.request("GET", f"http://disguise-health{HEALTH_PATH}" if regular else HEALTH_PATH,
                         headers={"host": "disguise-health"})  # fmt: skip
            r = conn.getresponse()
            last = r.read().decode("utf-8", "replace").strip()
            if r.status == 200:
                return last
        except OSError as e:
            last = str(e)
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError(f"instance on {host}:{port} not healthy after {timeout} s: {last}")


def instance_cmd(mitmdump: list[str], port: int, confdir: Path, mode: str, extra: list[str]) -> list[str]:
    """One instance: the health check first, then the addon; listening on 127.0.0.1 only
    (HAProxy is the way in). `connection_strategy=lazy`: a health check (a connection
    every second) opens no connection to the provider."""
    return [*mitmdump, "--mode", mode, "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "--set", f"confdir={confdir}", "--set", "connection_strategy=lazy",
            "-s", str(HEALTH), "-s", str(ADDON), *extra]  # fmt: skip


def _default_mitmdump() -> str:
    """mitmdump beside this Python, else the checkout's .venv's, else the one on PATH."""
    for beside in (Path(sys.executable).parent / "mitmdump", REPO / ".venv" / "bin" / "mitmdump"):
        if beside.exists():
            return str(beside)
    return shutil.which("mitmdump") or "mitmdump"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python deploy/balance.py", description=__doc__.split("\n")[0])
    p.add_argument("--instances", type=int, default=2, help="how many mitmdump instances (default 2)")
    p.add_argument(
        "--listen", default="127.0.0.1:8080", help="where HAProxy listens (default 127.0.0.1:8080; port 0: any)"
    )
    p.add_argument("--mode", default="reverse:https://api.anthropic.com",
                   help="mitmproxy mode of every instance: reverse:URL (balanced per request) or regular "
                        "(per connection)")  # fmt: skip
    p.add_argument("--tls-listen", default="", help="HOST:PORT for clients speaking TLS to HAProxy (reverse mode)")
    p.add_argument("--tls-cert", default="", help="PEM file with the certificate and its key, for --tls-listen")
    p.add_argument("--ports", default="", help="the instances' ports, comma-separated (default: free ports)")
    p.add_argument("--confdir", default=str(Path.home() / ".mitmproxy"),
                   help="shared mitmproxy confdir: one CA for every instance (default ~/.mitmproxy)")  # fmt: skip
    p.add_argument("--mitmdump", default=_default_mitmdump(), help="the mitmdump command (default: %(default)s)")
    p.add_argument("--haproxy", default=shutil.which("haproxy") or "haproxy", help="the haproxy binary")
    p.add_argument(
        "--logs",
        default="",
        help="a folder for each process's output (d1.log, ..., haproxy.log); default: this terminal",
    )
    p.add_argument("--print-config", action="store_true", help="print the HAProxy configuration and exit")
    p.add_argument("extra", nargs="*", help="after --: arguments for every instance")
    a = p.parse_args(argv)
    if a.instances < 1:
        p.error("--instances must be 1 or more")
    mode = "reverse" if a.mode.startswith("reverse:") else "regular" if a.mode == "regular" else None
    if mode is None:
        p.error(f"--mode: reverse:URL or regular, not {a.mode!r}")
    host, _, port_text = a.listen.rpartition(":")
    ports = [int(x) for x in a.ports.split(",") if x] or [free_port() for _ in range(a.instances)]
    if len(ports) != a.instances:
        p.error(f"--ports: {len(ports)} ports for {a.instances} instances")
    servers = [Server(f"d{i + 1}", "127.0.0.1", port) for i, port in enumerate(ports)]
    listen_port = int(port_text) or free_port(host)
    tls = None
    if a.tls_listen:
        if mode != "reverse" or not a.tls_cert:
            p.error("--tls-listen: reverse mode only, with --tls-cert")
        tls_host, _, tls_port = a.tls_listen.rpartition(":")
        tls = (tls_host, int(tls_port) or free_port(tls_host), str(Path(a.tls_cert).resolve()))
    config = haproxy_config(host, listen_port, servers, mode, tls=tls)
    if a.print_config:
        print(config, end="")
        return 0
    for path in missing_mappings(a.extra):
        p.error(f"disguise_mappings: {path}: no such file or folder (every instance would refuse to start)")
    confdir = Path(a.confdir).expanduser()
    try:
        ensure_ca(confdir, shlex.split(a.mitmdump))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"{p.prog}: {e}", file=sys.stderr)
        return 1
    try:
        return _run(a, config, servers, mode, host, listen_port, tls, confdir)
    except (RuntimeError, OSError) as e:  # an instance or HAProxy that did not start: its own log says why
        where = f" (logs in {a.logs})" if a.logs else " (its output is above)"
        print(f"{p.prog}: {e}{where}", file=sys.stderr)
        return 1


def _run(a: argparse.Namespace, config: str, servers: list[Server], mode: str, host: str, listen_port: int,
         tls: tuple | None, confdir: Path) -> int:  # fmt: skip
    """Start the instances and HAProxy, watch them until interrupted; stop everything."""
    work = Path(tempfile.mkdtemp(prefix="disguise-balance-"))
    procs: list[subprocess.Popen] = []
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        mitmdump = shlex.split(a.mitmdump)
        logs = Path(a.logs) if a.logs else None
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)

        def out(name: str):
            return open(logs / f"{name}.log", "ab") if logs is not None else None  # noqa: SIM115 - the child owns it

        for s in servers:
            proc = subprocess.Popen(instance_cmd(mitmdump, s.port, confdir, a.mode, a.extra),
                                    stdin=subprocess.DEVNULL, stdout=out(s.name), stderr=subprocess.STDOUT)  # fmt: skip
            procs.append(proc)
            print(f"instance {s.name}: pid {proc.pid}, {s.host}:{s.port}", flush=True)
        for s, proc in zip(servers, procs, strict=True):
            print(f"instance {s.name}: {wait_healthy(s.host, s.port, proc, mode == 'regular')}", flush=True)
        cfg = work / "haproxy.cfg"
        cfg.write_text(config)
        haproxy = subprocess.Popen([a.haproxy, "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL,
                                   stdout=out("haproxy"), stderr=subprocess.STDOUT)  # fmt: skip
        procs.append(haproxy)
        wait_listening(host, listen_port, haproxy)
        if tls is not None:
            wait_listening(tls[0], tls[1], haproxy)
            print(f"TLS listening at {tls[0]}:{tls[1]}", flush=True)
        print(f"listening at {host}:{listen_port} (HAProxy, pid {haproxy.pid})", flush=True)
        gone: set[int] = set()
        while not stopping:
            if haproxy.poll() is not None:
                print(f"HAProxy exited with {haproxy.returncode}", file=sys.stderr, flush=True)
                return 1
            for s, proc in zip(servers, procs, strict=False):
                if proc.pid not in gone and proc.poll() is not None:
                    gone.add(proc.pid)
                    print(f"instance {s.name} exited with {proc.returncode}: HAProxy routes around it",
                          file=sys.stderr, flush=True)  # fmt: skip
            if len(gone) == len(servers):
                print("every instance exited", file=sys.stderr, flush=True)
                return 1
            time.sleep(0.2)
        return 0
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
