"""Requests mitmproxy itself refuses before any addon's hook reads them, end to end (a real
mitmdump, a fake upstream): nothing reaches upstream, and nothing of an original is
printed at mitmdump's default level. Before (found by a review, 2026-12-07) mitmdump
printed it twice over: its flow line of a request its header validation refuses (two
Content-Lengths, one beside Transfer-Encoding) showed the URL as the client wrote it (the
error hook comes after every requestheaders hook, the addon's request hook never), and
its protocol layer's log line quoted the bytes of a malformed request line or header
line, or of a head a client gave up on half-way. Now the Guard's requestheaders withholds
the URL of a flow mitmproxy refused, and a filter on mitmproxy's connection log withholds
what holds an original (mitm/logfilter.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from integration_util import MITMDUMP, FakeUpstream, Reply, running_proxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs", "KESTRELNINE": "FALCONFORTY"}}
BODY = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()


def _head(port: int, line: str, extra: str = "") -> bytes:
    return (f"{line}\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\nx-api-key: k\r\n"
            f"anthropic-version: 2023-06-01\r\n{extra}content-length: {len(BODY)}\r\nconnection: close\r\n\r\n"
            ).encode() + BODY  # fmt: skip


# (the request, what mitmdump prints once it has dealt with it)
CASES = {
    "transfer-encoding beside content-length": (
        lambda port: _head(port, "POST /v1/messages?org=KESTRELNINE HTTP/1.1", "transfer-encoding: chunked\r\n"), "<<"),
    "two content-lengths": (lambda port: _head(port, "POST /v1/KESTRELNINE/messages HTTP/1.1", "content-length: 9\r\n"), "<<"),
    "a space in the target": (lambda port: _head(port, "POST /v1/messages?org=Acme Corp HTTP/1.1"), "Bad HTTP request line"),
    "a header line without a colon": (
        lambda port: _head(port, "POST /v1/messages HTTP/1.1", "x-org KESTRELNINE\r\n"), "Invalid header line"),
}  # fmt: skip


def _exchange(port: int, data: bytes, close_early: bool = False) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(data)
        if close_early:
            return b""
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return got


@pytest.mark.parametrize("case", list(CASES))
def test_a_request_mitmproxy_refuses_before_the_hooks_prints_no_original(tmp_path: Path, case: str) -> None:
    make, printed = CASES[case]
    with FakeUpstream() as up:
        up.on("m", lambda rec: Reply([b"{}"], headers={"content-type": "application/json"}, framing="length"))
        with running_proxy(tmp_path, MAPPINGS, upstream=up) as p:
            answer = _exchange(p.port, make(p.port))
            assert p.mitm.saw(printed), p.mitm.output[-3000:]
            log = p.mitm.output
        assert answer.startswith(b"HTTP/1.1 400") and not up.heads, (answer[:100], up.heads)
    assert not [ln for ln in log.splitlines() if "KESTRELNINE" in ln or "Acme Corp" in ln], log[-3000:]


def test_a_client_closing_before_its_head_is_complete_prints_no_original(tmp_path: Path) -> None:
    """A client that gives up half-way through its request head (a timeout, a cancelled
    call): mitmproxy logs the bytes it had, at info."""
    with FakeUpstream() as up, running_proxy(tmp_path, MAPPINGS, upstream=up) as p:
        _exchange(p.port, b"POST /v1/messages?org=KESTRELNINE HTTP/1.1\r\nHost: x\r\nx-org: Acme Corp\r\n", close_early=True)
        assert p.mitm.saw("before completing request headers"), p.mitm.output[-3000:]
        log = p.mitm.output
        assert not up.heads
    assert not [ln for ln in log.splitlines() if "KESTRELNINE" in ln or "Acme Corp" in ln], log[-3000:]
