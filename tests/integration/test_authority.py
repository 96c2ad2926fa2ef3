"""What of a request's head (and its connection's TLS server name) leaves beside its path
and headers, end to end: a real mitmdump running the addon and a fake upstream that
records every request it gets.

HTTP/2 has no Host header: the authority is its `:authority` pseudo-header, which
mitmproxy keeps in `flow.request.authority`, apart from the headers, and sends on (in
reverse mode with keep_host_header; in regular mode inside a CONNECT tunnel, with no
option at all). An HTTP/1.1 request in absolute form (`POST http://host/path`) keeps its
authority too, and in reverse mode mitmproxy sends the request line on as it came. The
method leaves in the request line. The leak guard read the path and the headers only: an
original in any of these reached upstream (found by a review, 2026-12-07). Now each is
read as a header named by its pseudo-header (`mitm/flows.leaving_headers`) wherever the
headers are scanned: refused, nothing upstream; the same requests with clean values go
through. A ClientHello's server name (SNI) leaves in the clear before any request: one
holding an original that is not the host connected to names that host instead
(Disguise.tls_start_server)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from h2_util import Answer, H2Upstream, Stream
from integration_util import MITMDUMP, Mitmdump, Reply, mitmdump_cmd, running_proxy, write_mappings

httpx = pytest.importorskip("httpx")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

HOST = "build.internal.acme.io"
CLEAN = "api.example.test"
MAPPINGS = {"literals": {HOST: "host-one.example.test", "Acme Corp": "Zenith Labs", "KESTRELNINE": "FALCONFORTY"}}
BODY = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hello Acme Corp"}]}
MESSAGE = {"id": "m", "type": "message", "role": "assistant", "model": "claude-x",
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


def _answer(st: Stream) -> Answer:
    return Answer(headers=[("content-type", "application/json")], pieces=[json.dumps(MESSAGE).encode()])


def _h2(tmp_path: Path, host: str, mode: str, extra: tuple[str, ...], client: Callable[[int, int], dict]) -> tuple:
    """An HTTP/2 POST through mitmdump (mode: "reverse" to the upstream, or "regular"),
    the client's Host (its :authority) host: (the answer, what upstream got)."""
    with H2Upstream(tmp_path, _answer) as up:
        cmd = mitmdump_cmd(up.port, tmp_path / "conf", write_mappings(tmp_path, MAPPINGS), "--set", "ssl_insecure=true", *extra)
        cmd[cmd.index("--mode") + 1] = f"reverse:https://127.0.0.1:{up.port}" if mode == "reverse" else mode
        md = Mitmdump(cmd)
        try:
            with httpx.Client(http2=True, verify=False, timeout=30, **client(md.port, up.port)) as c:
                url = f"https://127.0.0.1:{md.port if mode == 'reverse' else up.port}/v1/messages"
                r = c.post(url, json=BODY, headers={"host": host, **HEADERS})
                md.saw("<<")  # (its flow line)
        finally:
            md.stop()
        assert HOST not in md.output, md.output[-3000:]  # (the default log level: never an original)
        return r, list(up.streams)


@pytest.mark.parametrize("host", [HOST, CLEAN])
def test_an_http2_authority_holding_an_original_is_refused_in_reverse_mode(tmp_path: Path, host: str) -> None:
    """keep_host_header: the client's :authority goes on as it came."""
    r, streams = _h2(tmp_path, host, "reverse", ("--set", "keep_host_header=true"), lambda md, up: {})
    assert r.http_version == "HTTP/2"
    if host == HOST:
        assert r.status_code == 400 and not streams, (r.status_code, [s.headers for s in streams])
        assert HOST not in r.text and ":authority" in r.text
    else:
        assert r.status_code == 200, r.text
        assert [s.headers[":authority"] for s in streams] == [CLEAN]
        assert "Zenith Labs" in streams[0].body.decode() and "Acme Corp" not in streams[0].body.decode()


@pytest.mark.parametrize("host", [HOST, CLEAN])
def test_an_http2_authority_holding_an_original_is_refused_in_a_connect_tunnel(tmp_path: Path, host: str) -> None:
    """Regular mode, no option: CONNECT to the upstream's address, then HTTP/2 inside with
    another :authority."""
    r, streams = _h2(tmp_path, host, "regular", (), lambda md, up: {"proxy": f"http://127.0.0.1:{md}"})
    assert r.http_version == "HTTP/2"
    if host == HOST:
        assert r.status_code == 400 and not streams, (r.status_code, [s.headers for s in streams])
    else:
        assert r.status_code == 200, r.text
        assert [s.headers[":authority"] for s in streams] == [CLEAN]


def _raw(port: int, head: str, body: bytes = b"") -> bytes:
    """An HTTP/1.1 request written as it stands; the whole answer (the connection closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head.encode() + body)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return got


@pytest.mark.parametrize("host", [HOST, CLEAN])
def test_an_absolute_form_target_holding_an_original_is_refused_in_reverse_mode(tmp_path: Path, host: str) -> None:
    """Reverse mode, default options: `POST http://<host>/v1/messages HTTP/1.1` goes on as
    such a request line; its Host header is clean."""
    with running_proxy(tmp_path, MAPPINGS) as p:
        p.upstream.on("claude-x", lambda rec: Reply([json.dumps(MESSAGE).encode()], framing="length",
                                                    headers={"content-type": "application/json"}))  # fmt: skip
        body = json.dumps(BODY).encode()
        answer = _raw(p.port, f"POST http://{host}/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n"
                              "content-type: application/json\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
                              f"content-length: {len(body)}\r\nconnection: close\r\n\r\n", body)  # fmt: skip
        heads = list(p.upstream.heads)
        p.mitm.saw("<<")
        log = p.mitm.output
    if host == HOST:
        assert answer.startswith(b"HTTP/1.1 400") and not heads, (answer[:80], heads)
        assert HOST.encode() not in answer
        assert HOST not in log, log[-3000:]  # (the default log level: never an original)
    else:
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert [(m, path) for m, path, _ in heads] == [("POST", f"http://{CLEAN}/v1/messages")]


def test_a_method_holding_an_original_is_refused(tmp_path: Path) -> None:
    """The request line's method leaves too (an unknown endpoint's request: scanned)."""
    with running_proxy(tmp_path, MAPPINGS) as p:
        p.upstream.on("/v1/models", lambda rec: Reply([b"{}"], framing="length", headers={"content-type": "application/json"}))
        answer = _raw(p.port, f"KESTRELNINE /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\ncontent-length: 0\r\n"
                              "connection: close\r\n\r\n")  # fmt: skip
        heads = list(p.upstream.heads)
        p.mitm.saw("<<")
        log = p.mitm.output
    assert not heads, heads
    assert answer.startswith(b"HTTP/1.1 4") and b"KESTRELNINE" not in answer, answer[:200]
    assert "KESTRELNINE" not in log, log[-3000:]


def test_a_host_header_holding_an_original_is_refused(tmp_path: Path) -> None:
    """HTTP/1.1, keep_host_header: the Host header leaves as it came. It was refused before
    too (the guard reads every header); mitmdump's output shows nothing of it."""
    with running_proxy(tmp_path, MAPPINGS, "--set", "keep_host_header=true") as p:
        body = json.dumps(BODY).encode()
        answer = _raw(p.port, f"POST /v1/messages HTTP/1.1\r\nHost: {HOST}\r\ncontent-type: application/json\r\n"
                              f"x-api-key: k\r\nanthropic-version: 2023-06-01\r\ncontent-length: {len(body)}\r\n"
                              "connection: close\r\n\r\n", body)  # fmt: skip
        heads = list(p.upstream.heads)
        p.mitm.saw("<<")
        log = p.mitm.output
    assert answer.startswith(b"HTTP/1.1 400") and not heads, (answer[:80], heads)
    assert HOST not in log, log[-3000:]


def _sni_through(tmp_path: Path, name: str) -> tuple[list[str | None], bytes, str]:
    """Regular mode: CONNECT to a TLS upstream's address, then a ClientHello naming name
    and one request inside: (the server names upstream's handshakes carried, the answer,
    mitmdump's output)."""
    import ssl
    import threading

    from h2_util import self_signed

    names: list[str | None] = []
    crt, key = self_signed(tmp_path)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(crt, key)
    sctx.sni_callback = lambda sock, n, c: names.append(n)  # type: ignore[assignment,misc]
    srv = socket.create_server(("127.0.0.1", 0))
    msg = json.dumps(MESSAGE).encode()

    def serve() -> None:
        while True:
            try:
                raw, _ = srv.accept()
            except OSError:
                return
            try:
                with sctx.wrap_socket(raw, server_side=True) as s:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += s.recv(65536)
                    s.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                              b"connection: close\r\n\r\n%s" % (len(msg), msg))  # fmt: skip
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=serve, daemon=True).start()
    port = srv.getsockname()[1]
    cmd = mitmdump_cmd(port, tmp_path / "conf", write_mappings(tmp_path, MAPPINGS), "--set", "ssl_insecure=true")
    cmd[cmd.index("--mode") + 1] = "regular"
    md = Mitmdump(cmd)
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", md.port), timeout=20) as raw:
            raw.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            got = b""
            while b"\r\n\r\n" not in got:
                got += raw.recv(4096)
            cctx = ssl.create_default_context()
            cctx.check_hostname, cctx.verify_mode = False, ssl.CERT_NONE
            with cctx.wrap_socket(raw, server_hostname=name) as s:
                s.sendall(f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n".encode())
                try:
                    while chunk := s.recv(65536):
                        answer += chunk
                except (OSError, ssl.SSLError):
                    pass
        md.saw("<<")
    finally:
        md.stop()
        srv.close()
    return names, answer, md.output


@pytest.mark.parametrize("name", [HOST, CLEAN])
def test_a_tls_server_name_holding_an_original_names_the_host_connected_to_instead(tmp_path: Path, name: str) -> None:
    """Regular mode: a ClientHello naming another host than the CONNECT's. mitmproxy's
    handshake upstream takes the client's server name (SNI), which leaves in the clear
    before any request; one that holds an original is replaced by the host connected to
    (Disguise.tls_start_server), a clean one goes on as the client gave it."""
    names, answer, log = _sni_through(tmp_path, name)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert HOST not in names and HOST not in log, (names, log[-3000:])
    assert names == ([None] if name == HOST else [CLEAN])  # (the host is an address: no server name at all)
