"""A fork server for the tests' mitmdumps: mitmproxy imported once, each mitmdump forked
from it (integration_util.Mitmdump and run_mitmdump start theirs here).

Why: a mitmdump's start is about 1.2 s of CPU, most of it importing mitmproxy, and the
suite starts a few hundred of them on each interpreter (CI's 15 minutes, .ci/run). Here
mitmproxy is imported once; each mitmdump is a fork of this process that runs mitmproxy's
own `mitmdump()` entry point with its command line, working folder, environment and
standard streams, and loads the addon (`-s addon/disguise.py`) itself, as a new
process does: nothing of disguise is imported here. It is a real mitmdump process of its
own (its own pid, signals, exit status, output), only not exec'd.

Protocol (one Unix stream socket, the test process's end; this process is single-threaded):
- request: a length-prefixed JSON {"argv", "env", "cwd"} with two descriptors (stdin, and
  stdout+stderr) beside it; answer {"pid": n} (or {"error": text});
- whenever a child ends: {"exit": pid, "code": returncode} (-N: killed by signal N, as
  subprocess says it).
When the test process goes away (the socket ends) the children still running are killed
and this process exits.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import sys

HEADER = struct.Struct("!I")


def send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [HEADER.pack(len(data)) + data], fds)
    else:
        sock.sendall(HEADER.pack(len(data)) + data)


def _read_exact(sock: socket.socket, n: int, first: bytes = b"") -> bytes:
    buf = first
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv(sock: socket.socket, maxfds: int = 0) -> tuple[dict, list[int]]:
    """One message (and the descriptors that came with its first bytes)."""
    if maxfds:
        data, fds, _, _ = socket.recv_fds(sock, 65536, maxfds)
        if not data:
            raise EOFError
    else:
        data, fds = b"", []
    head = _read_exact(sock, HEADER.size, data[: HEADER.size])
    (n,) = HEADER.unpack(head)
    body = _read_exact(sock, n, data[HEADER.size :])
    return json.loads(body), list(fds)


def _child(req: dict, fds: list[int], ctl: socket.socket, wake: int) -> None:
    """In the fork: become the mitmdump the request describes. Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        ctl.close()
        os.close(wake)
        stdin, out = fds
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(stdin)
        os.close(out)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        argv = req["argv"]
        sys.argv = [argv[0].removesuffix(".exe"), *argv[1:]]
        sys.path[0] = os.path.dirname(argv[0])  # as the console script's own folder
        from mitmproxy.tools.main import mitmdump

        code = mitmdump() or 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    # as the interpreter ends a process: atexit handlers, non-daemon threads, flushed streams
    raise SystemExit(code)


def serve(ctl: socket.socket) -> None:
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ, "ctl")
    sel.register(r, selectors.EVENT_READ, "chld")
    while True:
        for key, _ in sel.select():
            if key.data == "chld":
                os.read(r, 4096)
                while children:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    children.discard(pid)
                    send(ctl, {"exit": pid, "code": os.waitstatus_to_exitcode(status)})
                continue
            try:
                req, fds = recv(ctl, maxfds=2)
            except (EOFError, OSError):
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                return
            pid = os.fork()
            if pid == 0:
                sel.close()
                os.close(r)
                _child(req, fds, ctl, w)
            for fd in fds:
                os.close(fd)
            children.add(pid)
            send(ctl, {"pid": pid})


def main() -> None:
    # what a mitmdump's own start imports first, and the libraries the addon imports
    # (pyproject's dependencies); nothing of disguise itself
    import ahocorasick_rs  # noqa: F401
    import hyperscan  # noqa: F401
    import mitmproxy.tools.dump  # noqa: F401
    import mitmproxy.tools.main  # noqa: F401
    import phonenumbers  # noqa: F401
    import re2  # noqa: F401
    import yaml  # noqa: F401

    ctl = socket.socket(fileno=int(sys.argv[1]))
    send(ctl, {"ready": os.getpid()})
    serve(ctl)


if __name__ == "__main__":
    main()
