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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from integration_util import ADDON, MITMDUMP, FakeUpstream, Mitmdump, Reply, _env, running_proxy, write_mappings

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


# -- a request that ends in an error before it leaves (found by a review, 2026-12-08) ------------
# mitmdump prints a flow line for every flow that ends in an error: its URL and the error's
# message, at the default level. Before, a request whose body never came whole (the client
# gave up half-way, an HTTP/2 stream reset, a body over body_size_limit) was printed with
# its URL as the client wrote it (the addon's request hook, whose leak guard refuses and
# withholds such a URL, never ran); and an HTTP/2 protocol error on one stream of a
# connection, whose message quotes the header bytes that caused it, ends every other
# stream of the connection with that message, printed as each flow's error.

H2_HEAD = [(":method", "POST"), (":scheme", "https"), (":authority", "api.anthropic.com"), (":path", "/v1/messages"),
           ("content-type", "application/json"), ("x-api-key", "k"), ("anthropic-version", "2023-06-01")]  # fmt: skip


def _no_original(log: str) -> None:
    assert not [ln for ln in log.splitlines() if "KESTRELNINE" in ln or "Acme Corp" in ln], log[-3000:]


def _h2(port: int):  # type: ignore[no-untyped-def]
    """An HTTP/2 connection over TLS to the proxy (the client trusting anything): (socket, h2 connection)."""
    import ssl

    import h2.config
    import h2.connection

    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    tls.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock = tls.wrap_socket(raw, server_hostname="api.anthropic.com")
    assert sock.selected_alpn_protocol() == "h2"
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False,
                                                                normalize_outbound_headers=False))  # fmt: skip
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


@pytest.mark.parametrize("how", ["the client closes", "body_size_limit"])
def test_a_request_whose_body_never_comes_whole_is_printed_without_its_original(tmp_path: Path, how: str) -> None:
    extra = ("--set", "body_size_limit=50") if how == "body_size_limit" else ()
    printed = "body_size_limit" if extra else "without sending complete message body"
    with FakeUpstream() as up, running_proxy(tmp_path, MAPPINGS, *extra, upstream=up) as p:
        declared = f"content-length: {len(BODY)}".encode(), f"content-length: {len(BODY) + 100}".encode()
        data = _head(p.port, "POST /v1/messages?org=KESTRELNINE HTTP/1.1").replace(*declared)
        _exchange(p.port, data, close_early=not extra)
        assert p.mitm.saw(printed), p.mitm.output[-3000:]
        assert p.mitm.saw("/v1/messages?org=<original>"), p.mitm.output[-3000:]
        log = p.mitm.output
        assert not up.heads
    _no_original(log)


def test_an_http2_stream_reset_during_its_body_is_printed_without_its_original(tmp_path: Path) -> None:
    with FakeUpstream() as up, running_proxy(tmp_path, MAPPINGS, upstream=up) as p:
        sock, conn = _h2(p.port)
        with sock:
            conn.send_headers(1, [(k, v + "?org=KESTRELNINE" if k == ":path" else v) for k, v in H2_HEAD])
            conn.send_data(1, BODY[:10])
            sock.sendall(conn.data_to_send())
            assert p.mitm.saw("server connect"), p.mitm.output[-3000:]
            conn.reset_stream(1)
            sock.sendall(conn.data_to_send())
            assert p.mitm.saw("stream reset by client"), p.mitm.output[-3000:]
        log = p.mitm.output
        assert not up.heads
    assert "/v1/messages?org=<original>" in log, log[-3000:]
    _no_original(log)


def test_an_http2_protocol_error_quoting_a_header_is_printed_without_it_for_every_stream(tmp_path: Path) -> None:
    """Stream 1, a request upstream is answering; stream 3's header value has a space
    around it (h2 refuses it): the connection ends, and stream 1's flow with it, with h2's
    message quoting the value."""
    import threading
    import time

    release = threading.Event()

    def answer() -> Iterator[bytes]:
        release.wait(30)
        yield b"{}"

    with FakeUpstream() as up:
        up.on("m", lambda rec: Reply(answer(), headers={"content-type": "application/json"}))
        with running_proxy(tmp_path, MAPPINGS, upstream=up) as p:
            try:
                sock, conn = _h2(p.port)
                with sock:
                    # (with its length: the fake upstream reads one)
                    conn.send_headers(1, [*H2_HEAD, ("content-length", str(len(BODY)))])
                    conn.send_data(1, BODY, end_stream=True)
                    sock.sendall(conn.data_to_send())
                    deadline = time.monotonic() + 20
                    while not up.for_model("m") and time.monotonic() < deadline:
                        time.sleep(0.02)
                    assert up.for_model("m"), p.mitm.output[-3000:]
                    conn.send_headers(3, [*H2_HEAD, ("x-org", " Acme Corp ")], end_stream=True)
                    sock.sendall(conn.data_to_send())
                    assert p.mitm.saw(" << HTTP/2 protocol error: Received header value surrounded by whitespace"), (
                        p.mitm.output[-3000:])  # fmt: skip
            finally:
                release.set()
            log = p.mitm.output
        assert len(up.heads) == 1
    _no_original(log)


@contextmanager
def _regular(tmp_path: Path, mappings: dict, *extra: str) -> Iterator[Mitmdump]:
    """A mitmdump in regular mode (a client names the host in its request line) running the
    addon, its terminal wide enough for a flow line whole (Dumper cuts it at the width)."""
    cmd = [str(MITMDUMP), "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp_path / 'conf'}",
           "-s", str(ADDON), "--set", f"disguise_mappings={write_mappings(tmp_path, mappings)}",
           "--set", "disguise_offload_warm=false", "--set", "connection_strategy=lazy", *extra]  # fmt: skip
    mitm = Mitmdump(cmd, env={**_env(), "COLUMNS": "250"})
    try:
        yield mitm
    finally:
        mitm.stop()


def _absolute(url: str, host: str) -> bytes:
    """A POST of `{}` in absolute form, its connection closed after the answer."""
    return (f"POST {url} HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n"
            "connection: close\r\n\r\n{}").encode()  # fmt: skip


def test_a_refused_request_to_a_host_named_by_an_original_is_printed_without_it(tmp_path: Path) -> None:
    """Regular mode, an OpenAI-compatible server of one's own whose name is an original
    (`POST http://build.internal.acme.io/v1/chat/completions`): the leak guard refuses it
    (the Host header holds the original), and mitmdump's line for the flow prints its URL
    from the host the request goes to, which was printed as written (found by a review,
    2026-12-08)."""
    mappings = {"literals": {**MAPPINGS["literals"], "build.internal.acme.io": "host.example.net"}}
    with _regular(tmp_path, mappings) as mitm:
        answer = _exchange(mitm.port, _absolute("http://build.internal.acme.io/v1/chat/completions", "build.internal.acme.io"))
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert mitm.saw("POST http://<original>/v1/chat/completions"), mitm.output[-3000:]
    assert "acme" not in mitm.output, mitm.output[-3000:]


def test_a_request_an_earlier_addon_answers_is_printed_without_its_original(tmp_path: Path) -> None:
    """Regular mode with mitmproxy's proxyauth: a request without the proxy's credentials
    is answered 407 by proxyauth, before Disguise's hooks (which leave an answered flow
    alone); nothing leaves, and mitmdump's flow line printed its URL as the client wrote
    it (found by a review, 2026-12-08). The Guard's requestheaders, last, withholds it."""
    with _regular(tmp_path, MAPPINGS, "--set", "proxyauth=user:pass") as mitm:
        answer = _exchange(mitm.port, _absolute("http://api.openai.com/v1/chat/completions?org=KESTRELNINE", "api.openai.com"))
        assert answer.startswith(b"HTTP/1.1 407"), answer[:200]
        assert mitm.saw("407"), mitm.output[-3000:]
    assert "KESTRELNINE" not in mitm.output, mitm.output[-3000:]
