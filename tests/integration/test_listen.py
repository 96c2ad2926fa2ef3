"""mitmproxy's listeners hold a burst of connections (mitm/listen.py): a real mitmdump
with the addon listens with a queue of 4096 (or the kernel's cap), where plain
mitmdump keeps asyncio's 100."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from disguiselib.mitm.listen import BACKLOG
from integration_util import MITMDUMP, Mitmdump, mitmdump_cmd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("ss") is None, reason="needs Linux's ss"),
]


def listen_queue(port: int) -> int | None:
    """The accept queue a socket listening on 127.0.0.1:port was given (`ss` shows it
    as Send-Q: inet_diag's sk_max_ack_backlog; /proc/net/tcp does not show it)."""
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"LISTEN\s+\d+\s+(\d+)", out)
    return int(m.group(1)) if m else None


def settled(port: int, want: int) -> int | None:
    """The queue once the addon had its `running` hook (it runs after the listener is up)."""
    deadline = time.monotonic() + 15
    got = listen_queue(port)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.1)
        got = listen_queue(port)
    return got


def somaxconn() -> int:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except OSError:
        return BACKLOG


def test_the_addon_listens_with_a_queue_that_holds_a_burst(tmp_path: Path) -> None:
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    mitm = Mitmdump(mitmdump_cmd(upstream.getsockname()[1], tmp_path / "conf", REPO / "mappings"))
    try:
        assert settled(mitm.port, min(BACKLOG, somaxconn())) == min(BACKLOG, somaxconn()), mitm.output[-2000:]
    finally:
        mitm.stop()
        upstream.close()


def test_plain_mitmdump_listens_with_asyncios_queue(tmp_path: Path) -> None:
    """What the addon changes: without it, 100 (asyncio.start_server's default)."""
    mitm = Mitmdump([str(MITMDUMP), "--mode", "reverse:http://127.0.0.1:9", "--listen-host", "127.0.0.1",
                     "--listen-port", "0", "--set", f"confdir={tmp_path / 'conf'}"])  # fmt: skip
    try:
        assert settled(mitm.port, 100) == 100
    finally:
        mitm.stop()
