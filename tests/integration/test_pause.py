"""No other flow waits while a big body is masked (issue 29), through one real mitmdump
(the worker from 64 KiB, stream_large_bodies=16k): the worker is started and has built
its rules before any body comes; a body mitmproxy streams is masked in the worker while
the event loop serves other requests (a stopped worker holds that body, nothing else),
and a worker that dies meanwhile gets it refused, never sent; the heap alive at start-up
is frozen (bench/stalls.py traced 41-80 ms loop pauses to full collections of it).
Event-driven: no timing of the machine."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Recorded, Reply, running_proxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}}
READY = re.compile(r"masking worker ready")
STARTED = re.compile(r"masking worker started \(pid (\d+)\)")
GC_SCRIPT = (
    "import gc, logging\n"
    "def running():\n"
    "    logging.getLogger('disguise').warning('test: gc frozen %d', gc.get_freeze_count())\n"
)


def _reply(rec: Recorded) -> Reply:
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "big", "stop_reason": "end_turn",
           "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    tmp = tmp_path_factory.mktemp("pause")
    script = tmp / "gc_report.py"
    script.write_text(GC_SCRIPT)
    with FakeUpstream() as up:
        up.on("big", _reply)
        with running_proxy(tmp, MAPPINGS, "--set", "disguise_offload_bytes=65536", "--set",
                           "stream_large_bodies=16k", "-s", str(script), upstream=up) as p:  # fmt: skip
            yield p


def _wait(pred, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _body(n: int) -> bytes:
    text = ("Acme Corp ships the order; " * (n // 27 + 1))[:n]
    return json.dumps({"model": "big", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()


def _send(proxy: Proxy, body: bytes) -> http.client.HTTPConnection:
    """A request sent whole (every byte of it written to the socket); its answer is read
    by _answer."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=300)
    conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json",
                                                              "x-api-key": "k", "anthropic-version": "1"})  # fmt: skip
    return conn


def _answer(conn: http.client.HTTPConnection) -> tuple[int, bytes]:
    try:
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _post(proxy: Proxy, body: bytes) -> tuple[int, bytes]:
    return _answer(_send(proxy, body))


def _in_background(conn: http.client.HTTPConnection) -> tuple[threading.Thread, list[tuple[int, bytes]]]:
    result: list[tuple[int, bytes]] = []
    t = threading.Thread(target=lambda: result.append(_answer(conn)), daemon=True)
    t.start()
    return t, result


def _queues(local: int, remote: int) -> tuple[int, int] | None:
    """A loopback TCP socket's (local port, peer port) send and receive queues: the bytes
    it has not yet sent, and those received that its process has not yet read
    (/proc/net/tcp); None when there is no such socket."""
    with open("/proc/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            f = line.split()
            if int(f[1].split(":")[1], 16) == local and int(f[2].split(":")[1], 16) == remote:
                tx, rx = f[4].split(":")
                return int(tx, 16), int(rx, 16)
    return None


def _read_by_proxy(proxy: Proxy, conn: http.client.HTTPConnection) -> None:
    """Wait until mitmdump has read every byte conn sent (the client's send queue and
    mitmdump's receive queue empty): the body is in mitmproxy's hands, not the kernel's."""
    assert conn.sock is not None
    mine = conn.sock.getsockname()[1]
    _wait(lambda: _queues(mine, proxy.port) == (0, 0) and (_queues(proxy.port, mine) or (0, 1))[1] == 0)


def _worker(proxy: Proxy) -> int:
    _wait(lambda: READY.search(proxy.mitm.output) is not None)
    return int(STARTED.findall(proxy.mitm.output)[-1])


def test_the_worker_is_ready_before_any_body_and_the_startup_heap_is_frozen(proxy: Proxy) -> None:
    """No request has been sent by this test: the worker started and built its rules when
    mitmdump began running (it used to start at the first large body, which waited 2.5-5 s);
    and the objects alive at start-up are frozen out of the collector's full scans."""
    pid = _worker(proxy)
    assert pid > 0
    frozen = re.search(r"test: gc frozen (\d+)", proxy.mitm.output)
    assert frozen is not None and int(frozen.group(1)) > 10_000


def test_a_streamed_body_is_masked_in_the_worker_while_the_loop_serves_others(proxy: Proxy) -> None:
    """A body over stream_large_bodies, masked by the worker (off the event loop): while
    the worker is stopped, that request waits and other requests are served; once it
    runs again, the body goes upstream masked. (Masked on the loop, as before, the
    stopped worker would hold nothing and the streamed request would be done first.)"""
    up = proxy.upstream
    pid = _worker(proxy)
    before = len(up.requests)
    os.kill(pid, signal.SIGSTOP)
    try:
        t, result = _in_background(_send(proxy, _body(200_000)))  # all of it written before the others
        # The small ones (under stream_large_bodies and the worker's threshold) are served
        # meanwhile: each round trip takes the loop through many turns.
        for _ in range(3):
            status, _ = _post(proxy, _body(100))
            assert status == 200
        assert not result, "the streamed body was done while the worker that masks it was stopped"
    finally:
        os.kill(pid, signal.SIGCONT)
    t.join(120)
    assert result and result[0][0] == 200
    bodies = [r.body for r in up.requests[before:]]
    big = [b for b in bodies if len(b) > 100_000]
    assert len(big) == 1 and b"Acme Corp" not in big[0] and b"Zenith Labs" in big[0]


def test_a_worker_that_dies_under_a_streamed_body_gets_it_refused(proxy: Proxy) -> None:
    """The worker killed while it holds a streamed body: the request is refused (an error
    in the provider's shape), upstream gets nothing of the body, and a fresh worker takes
    the next one."""
    up = proxy.upstream
    pid = _worker(proxy)
    before = len(up.requests)
    os.kill(pid, signal.SIGSTOP)
    conn = _send(proxy, _body(200_000))
    t, result = _in_background(conn)
    _read_by_proxy(proxy, conn)  # (every byte read by mitmdump: not a guess of how long that takes)
    _post(proxy, _body(100))  # a round trip: the streamed body is with the worker now
    os.kill(pid, signal.SIGKILL)
    t.join(120)
    assert result, "no answer"
    status, body = result[0]
    assert status == 400 and b"masking worker failed" in body
    assert not any(b"Acme Corp" in r.body for r in up.requests[before:])
    _wait(lambda: len(STARTED.findall(proxy.mitm.output)) >= 2)
    status, _ = _post(proxy, _body(200_000))
    assert status == 200 and b"Acme Corp" not in up.requests[-1].body
