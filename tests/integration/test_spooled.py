"""A request body declared large (disguise_stream_bytes, here 64 KiB) is handed to the
masking worker as it arrives (mitm/streamed.Spooled), through real mitmdump: mitmproxy
never holds it whole (its headers go upstream first, chunked), upstream gets it masked
exactly as the in-process path masks it, the capture keeps only its first
disguise_capture_limit bytes (marked cut, its whole size said), a verdict that forwards
it as it came (disguise_fail_open) gets it back from the worker byte for byte, and a
worker killed while the body arrives gets the request refused, never sent. Event-driven:
nothing here times the machine."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from mitmproxy import io as mio

from integration_util import MITMDUMP, FakeUpstream, Proxy, Recorded, Reply, running_proxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}}
STARTED = re.compile(r"masking worker started \(pid (\d+)\)")
SMALL = ("--set", "disguise_offload_bytes=65536", "--set", "disguise_stream_bytes=65536")


def _reply(rec: Recorded) -> Reply:
    said = "Zenith Labs" if b"Zenith Labs" in rec.body else "nothing"
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "big", "stop_reason": "end_turn",
           "content": [{"type": "text", "text": f"You said {said}."}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        up.on("big", _reply)
        yield up


@pytest.fixture(scope="module")
def proxies(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proxy]]:
    """spool: bodies from 64 KiB fed to the worker as they arrive; whole: the same rules,
    masked in-process."""
    with (
        running_proxy(tmp_path_factory.mktemp("spool"), MAPPINGS, *SMALL, upstream=upstream) as spool,
        running_proxy(tmp_path_factory.mktemp("whole"), MAPPINGS, "--set", "disguise_offload_bytes=0",
                      upstream=upstream) as whole,
    ):  # fmt: skip
        yield {"spool": spool, "whole": whole}


def _messages(n: int) -> list[dict]:
    words = ["Acme Corp", "ships", "the", "order", "to", "é", "\\path", '"q"', "\n", "Acme", "Corp."]
    text = " ".join(words[(i * 7) % len(words)] for i in range(n // 5))
    return [{"role": "user", "content": text}]


def _wait(pred, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_a_large_body_goes_to_the_worker_as_it_arrives_and_leaves_masked(proxies, upstream) -> None:
    got: dict[str, Recorded] = {}
    for key in ("spool", "whole"):
        before = len(upstream.requests)
        with anthropic.Anthropic(base_url=proxies[key].base_url, api_key="t", max_retries=0, timeout=120.0,
                                 http_client=anthropic.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
            msg = client.messages.create(model="big", max_tokens=5, messages=_messages(400_000))  # type: ignore[arg-type]
        assert msg.content[0].text == "You said Acme Corp."  # type: ignore[union-attr]
        (got[key],) = upstream.requests[before:]
    spool, whole = got["spool"], got["whole"]
    assert spool.body == whole.body and b"Acme Corp" not in spool.body
    # streamed: the headers left before the body, whose length was not known then
    assert spool.headers.get("transfer-encoding") == "chunked" and "content-length" not in spool.headers
    assert "content-length" in whole.headers


def test_upstream_hears_of_a_body_fed_to_the_worker_only_once_it_is_masked(tmp_path: Path) -> None:
    """mitmproxy would connect upstream and send the headers as the body starts to arrive:
    the provider would wait a minute for a 200 MB body being masked (and cut it). Part of
    a body in the worker: upstream has read no request yet; once it is whole, it leaves
    masked, in pieces (more than one: worker.PIECE) sent in order."""
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(5_000_000)}).encode()
    assert len(body) > 4 << 20
    with FakeUpstream() as up:
        up.on("big", _reply)
        heard: list[str] = []  # request lines upstream read
        handler = up.server.RequestHandlerClass
        parse = handler.parse_request
        handler.parse_request = lambda h: (heard.append(h.raw_requestline), parse(h))[1]  # type: ignore[method-assign]
        with running_proxy(tmp_path, MAPPINGS, *SMALL, upstream=up) as proxy:
            _wait(lambda: "masking worker ready" in proxy.mitm.output)
            (pid,) = [int(x) for x in STARTED.findall(proxy.mitm.output)]
            s = socket.create_connection(("127.0.0.1", proxy.port))
            read0 = _read(pid)
            s.sendall(_head(len(body)) + body[: 2 * 1024 * 1024 + 10])
            _wait(lambda: _read(pid) >= read0 + 1024 * 1024)  # the first piece reached the worker
            with pytest.raises(AssertionError):  # what mitmproxy would have sent at once: a second to arrive
                _wait(lambda: bool(heard), timeout=1.0)
            s.sendall(body[2 * 1024 * 1024 + 10 :])
            status, answer = _read_answer(s)
            assert status == 200, answer
            (rec,) = up.requests
            want = json.loads(body)["messages"][0]["content"].replace("Acme Corp", "Zenith Labs")
            assert json.loads(rec.body)["messages"][0]["content"] == want


def _head(n: int | None) -> bytes:
    """A request's head for a body of n bytes (None: chunked)."""
    length = "transfer-encoding: chunked" if n is None else f"content-length: {n}"
    return (f"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-api-key: t\r\n"
            f"anthropic-version: 2023-06-01\r\n{length}\r\n\r\n").encode()  # fmt: skip


def test_the_capture_keeps_only_the_first_bytes_of_a_body_fed_to_the_worker(tmp_path: Path) -> None:
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(300_000)}).encode()
    flows = tmp_path / "flows"
    with FakeUpstream() as up:
        up.on("big", _reply)
        with running_proxy(tmp_path, MAPPINGS, *SMALL, "--set", "disguise_capture_limit=4096", "-w", str(flows),
                           upstream=up) as proxy:  # fmt: skip
            status, _ = _post(proxy.port, body)
            assert status == 200 and up.requests[-1].headers.get("transfer-encoding") == "chunked"
    with flows.open("rb") as f:  # written whole once mitmdump stopped (mitmproxy 11 writes at exit)
        (fl,) = list(mio.FlowReader(f).stream())
    side = dict(fl.metadata["disguise_sides"]["client_request"])
    assert side["size"] == len(body) and side["cut"] is True
    assert bytes(side["content"]) == body[:4096]


def _post(port: int, body: bytes, chunked: bool = False) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        headers = {"content-type": "application/json", "x-api-key": "t", "anthropic-version": "2023-06-01"}
        if chunked:
            conn.request("POST", "/v1/messages", body=iter([body[:70_000], body[70_000:]]), headers=headers,
                         encode_chunked=True)  # fmt: skip
        else:
            conn.request("POST", "/v1/messages", body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_a_chunked_body_is_fed_to_the_worker_too(proxies, upstream) -> None:
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(200_000)}).encode()
    before = len(upstream.requests)
    status, answer = _post(proxies["spool"].port, body, chunked=True)
    assert status == 200, answer
    (rec,) = upstream.requests[before:]
    assert b"Acme Corp" not in rec.body and b"Zenith Labs" in rec.body
    assert json.loads(rec.body)["messages"][0]["content"] == json.loads(body)["messages"][0]["content"].replace(
        "Acme Corp", "Zenith Labs")  # fmt: skip


def test_a_body_forwarded_as_it_came_is_sent_back_by_the_worker(tmp_path: Path) -> None:
    """disguise_fail_open and a body that cannot be masked (not JSON): forwarded unchanged,
    so the worker, which alone held it, sends it back whole."""
    body = b'{"model": "big", "messages": [' + b"Acme Corp, " * 20_000
    with FakeUpstream() as up:
        with running_proxy(tmp_path, MAPPINGS, *SMALL, "--set", "disguise_fail_open=true", upstream=up) as proxy:
            _post(proxy.port, body)  # the fake upstream's answer to a body it cannot read either: not asserted
            assert [r.body for r in up.requests] == [body]
            assert proxy.mitm.saw("forwarded unchanged: disguise_fail_open")
            assert proxy.mitm.saw(STARTED)


def test_a_worker_killed_while_the_body_arrives_gets_it_refused(tmp_path: Path) -> None:
    """The worker holds the first pieces of a body still arriving and is killed: the rest
    goes to a fresh worker, which cannot have the whole body: the request is refused (the
    body sent empty, the answer replaced by the error), and nothing of it goes upstream."""
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(3_000_000)}).encode()
    assert len(body) > 2 * 1024 * 1024  # more than one piece (offload.PIECE) goes before the end
    with FakeUpstream() as up:
        up.on("big", _reply)
        with running_proxy(tmp_path, MAPPINGS, *SMALL, upstream=up) as proxy:
            _wait(lambda: "masking worker ready" in proxy.mitm.output)
            (pid,) = [int(x) for x in STARTED.findall(proxy.mitm.output)]
            s = socket.create_connection(("127.0.0.1", proxy.port))
            read0 = _read(pid)
            s.sendall(_head(len(body)) + body[: 2 * 1024 * 1024 + 10])
            _wait(lambda: _read(pid) >= read0 + 1024 * 1024)  # the first piece reached the worker
            os.kill(pid, signal.SIGKILL)
            s.sendall(body[2 * 1024 * 1024 + 10 :])
            status, answer = _read_answer(s)
            assert status == 400 and b"masking worker failed" in answer, answer[:300]
            assert not any(b"Acme Corp" in r.body for r in up.requests)
            assert all(r.body == b"" for r in up.requests)
            _wait(lambda: len(STARTED.findall(proxy.mitm.output)) >= 2)
            status, _ = _post(proxy.port, body)
            assert status == 200 and b"Acme Corp" not in up.requests[-1].body and len(up.requests[-1].body) > len(body)


def _read(pid: int) -> int:
    """Bytes the process has read (rchar: from its socket, once its rules are built)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def _read_answer(s: socket.socket) -> tuple[int, bytes]:
    import http.client

    s.settimeout(120)
    resp = http.client.HTTPResponse(s)
    resp.begin()
    try:
        return resp.status, resp.read()
    finally:
        s.close()


PROBE = """
import hashlib, logging, threading
_real = hashlib.sha256
def sha256(data=b"", **kw):
    if len(data) >= 100_000 and threading.current_thread() is threading.main_thread():
        logging.getLogger("disguise").warning("test: sha256 of %d bytes on the event loop", len(data))
    return _real(data, **kw)
hashlib.sha256 = sha256
"""


def test_a_body_masked_in_the_worker_is_hashed_for_the_capture_off_the_event_loop(tmp_path: Path) -> None:
    """The capture's upstream side names the masked body by its SHA-256: 1-3 ms of the
    event loop's per 1 MB body, computed once the request has left, in a thread of its
    own (inspect/record.Digest; hashlib lets the GIL go), and saved with the flow. A probe
    loaded beside the addon says when a large body is hashed on the loop."""
    import hashlib

    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(300_000)}).encode()
    flows = tmp_path / "flows"
    with FakeUpstream() as up:
        up.on("big", _reply)
        with running_proxy(tmp_path, MAPPINGS, "-s", str(probe), "--set", "disguise_offload_bytes=65536",
                           "-w", str(flows), upstream=up) as proxy:  # fmt: skip
            status, _ = _post(proxy.port, body)
            assert status == 200 and proxy.mitm.saw(STARTED)
            sent = up.requests[-1].body
            assert b"Acme Corp" not in sent
        assert "test: sha256" not in proxy.mitm.output
    with flows.open("rb") as f:
        (fl,) = list(mio.FlowReader(f).stream())
    assert fl.metadata["disguise_sides"]["upstream_request_sha256"] == hashlib.sha256(sent).hexdigest()


def test_clients_gone_in_the_middle_of_a_body_fed_to_the_worker_leave_nothing_behind(tmp_path: Path) -> None:
    """A client that goes away before the end of a body the worker is being fed (a chunked
    body: a user's Ctrl-C during a large upload) ends its flow with mitmproxy's error
    hook: before, mitmproxy "crashed" on it (it told a server connection that the paced
    body's held-back headers never made), the hook never ran, and the flow's record and
    the worker's copy of the body were kept for good (probe Q). The next request is
    masked as ever."""
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(3_000_000)}).encode()
    part = 1024 * 1024 + 10  # more than one piece (offload.PIECE): the worker holds some of it
    with FakeUpstream() as up:
        up.on("big", _reply)
        flows = tmp_path / "session.flows"
        with running_proxy(tmp_path, MAPPINGS, *SMALL, "-w", str(flows), upstream=up) as proxy:
            _wait(lambda: "masking worker ready" in proxy.mitm.output)
            (pid,) = [int(x) for x in STARTED.findall(proxy.mitm.output)]
            for i in range(3):
                s = socket.create_connection(("127.0.0.1", proxy.port))
                read0 = _read(pid)
                s.sendall(_head(None) + b"%x\r\n%s\r\n" % (part, body[:part]))
                _wait(lambda read0=read0: _read(pid) >= read0 + 1024 * 1024)  # the body is under way
                if i % 2:  # a reset, then a plain close
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            _wait(lambda: proxy.mitm.output.count("client disconnect") >= 3)
            status, _ = _post(proxy.port, body, chunked=True)
            assert status == 200 and b"Acme Corp" not in up.requests[-1].body
            assert not any(b"Acme Corp" in r.body for r in up.requests)
        assert "has crashed" not in proxy.mitm.output, proxy.mitm.output[-3000:]
        with flows.open("rb") as f:
            cut = [fl for fl in mio.FlowReader(f).stream() if fl.error is not None]
        assert len(cut) == 3  # each ended with mitmproxy's error hook
