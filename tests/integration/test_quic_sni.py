"""A QUIC handshake's server name (SNI) upstream, end to end: a real mitmdump running the
addon in reverse mode to HTTP/3 (`reverse:http3://`, and `reverse:quic://`, which relays
the QUIC streams as they are) with keep_host_header, an aioquic HTTP/3 upstream that
records the server name of every handshake it gets, and an aioquic HTTP/3 client whose
ClientHello names a host.

With keep_host_header mitmproxy leaves the upstream server's name unset, and its
TlsConfig.quic_start_server then gives it the client's: a ClientHello naming an original
sent that name upstream in the clear, before any request (the request itself, its
:authority clean, went through). Disguise.quic_start_server is tls_start_server: a name
holding an original is replaced by the host connected to (here an address, so no server
name at all); a clean one goes on as the client gave it. The TLS counterpart is
test_authority.test_a_tls_server_name_holding_an_original_names_the_host_connected_to_instead."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from pathlib import Path

import pytest

# aioquic: mitmproxy's own QUIC and HTTP/3, installed with it
from aioquic import tls
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import QuicServer
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, QuicEvent

from h2_util import self_signed
from integration_util import MITMDUMP, Mitmdump, mitmdump_cmd, write_mappings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

HOST = "build.internal.acme.io"
CLEAN = "api.example.test"
MAPPINGS = {"literals": {HOST: "host-one.example.test", "Acme Corp": "Zenith Labs"}}
MODELS = json.dumps({"object": "list", "data": [{"id": "claude-x", "object": "model"}]}).encode()


class _Upstream(QuicConnectionProtocol):
    """An HTTP/3 server's connection: every request is answered 200 with MODELS; heads
    gets each request's headers."""

    def __init__(self, quic: QuicConnection, heads: list[dict[bytes, bytes]]) -> None:
        super().__init__(quic)
        self._h3 = H3Connection(self._quic)
        self.heads = heads

    def quic_event_received(self, event: QuicEvent) -> None:
        for ev in self._h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self.heads.append(dict(ev.headers))
            if isinstance(ev, HeadersReceived | DataReceived) and ev.stream_ended:
                self._h3.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-type", b"application/json"),
                                                     (b"content-length", str(len(MODELS)).encode())])  # fmt: skip
                self._h3.send_data(ev.stream_id, MODELS, end_stream=True)
        self.transmit()


class _Client(QuicConnectionProtocol):
    """An HTTP/3 client of one request: `get` gives (its status, its body)."""

    def __init__(self, quic: QuicConnection) -> None:
        super().__init__(quic)
        self._h3 = H3Connection(self._quic)
        self._done: asyncio.Future[tuple[int, bytes]] | None = None  # (made by get: its end or the connection's)
        self._status, self._body = 0, b""

    async def get(self, authority: str, path: str) -> tuple[int, bytes]:
        self._done = asyncio.get_running_loop().create_future()
        sid = self._quic.get_next_available_stream_id()
        self._h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()),
                                    (b":path", path.encode())], end_stream=True)  # fmt: skip
        self.transmit()
        return await self._done

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated):
            self._end(ConnectionError(f"closed: {event.error_code} {event.reason_phrase}"))
        evs: list[H3Event] = self._h3.handle_event(event)
        for ev in evs:
            if isinstance(ev, HeadersReceived):
                self._status = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, DataReceived):
                self._body += ev.data
            if isinstance(ev, HeadersReceived | DataReceived) and ev.stream_ended:
                self._end((self._status, self._body))

    def _end(self, outcome: tuple[int, bytes] | Exception) -> None:
        if self._done is None or self._done.done():
            return
        if isinstance(outcome, Exception):
            self._done.set_exception(outcome)
        else:
            self._done.set_result(outcome)


async def _request(port: int, name: str) -> tuple[int, bytes]:
    """GET /v1/models through mitmdump's UDP port, the ClientHello naming name, the
    request's :authority CLEAN. (Not aioquic's connect: it binds a dual-stack socket on
    every interface, which needs IPv6.)"""
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=name, verify_mode=ssl.CERT_NONE)
    transport, client = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: _Client(QuicConnection(configuration=cfg)), local_addr=("127.0.0.1", 0))  # fmt: skip
    try:
        client.connect(("127.0.0.1", port))
        await client.wait_connected()
        return await client.get(CLEAN, "/v1/models")
    finally:
        client.close()
        await client.wait_closed()
        transport.close()


def _sni_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, name: str
) -> tuple[list, list, int, bytes, str]:
    """Reverse mode (reverse:<scheme>://) to an HTTP/3 upstream, keep_host_header: one
    request from a client whose ClientHello names name. (The server names upstream's
    handshakes carried, the requests it got, the answer's status and body, mitmdump's
    output.)"""
    names: list[str | None] = []
    pull = tls.pull_client_hello

    def recording(buf: Buffer) -> tls.ClientHello:  # aioquic's server reads each ClientHello with it (tls.Context)
        hello = pull(buf)
        names.append(hello.server_name)
        return hello

    monkeypatch.setattr(tls, "pull_client_hello", recording)  # (this process: only the upstream reads one)
    heads: list[dict[bytes, bytes]] = []
    crt, key = self_signed(tmp_path)
    scfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    scfg.load_cert_chain(crt, key)
    loop = asyncio.new_event_loop()
    transport, server = loop.run_until_complete(loop.create_datagram_endpoint(
        lambda: QuicServer(configuration=scfg, create_protocol=lambda quic, **_: _Upstream(quic, heads)),
        local_addr=("127.0.0.1", 0)))  # fmt: skip
    port = transport.get_extra_info("sockname")[1]
    serving = threading.Thread(target=loop.run_forever, daemon=True)
    serving.start()
    try:
        cmd = mitmdump_cmd(port, tmp_path / "conf", write_mappings(tmp_path, MAPPINGS),
                           "--set", "keep_host_header=true", "--set", "ssl_insecure=true")  # fmt: skip
        cmd[cmd.index("--mode") + 1] = f"reverse:{scheme}://127.0.0.1:{port}"
        md = Mitmdump(cmd)
        try:
            assert md.port is not None
            status, body = asyncio.run(asyncio.wait_for(_request(md.port, name), 60))
            md.saw("client disconnect")  # (after http3's flow line; quic's relays no flow)
        finally:
            md.stop()
            print(md.output[-4000:])  # (pytest shows it with a failing test's report)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        serving.join(20)
        server.close()  # (its connections, then its socket: closed on the loop's next turn)
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
    return names, heads, status, body, md.output


@pytest.mark.parametrize("name", [HOST, CLEAN])
@pytest.mark.parametrize("scheme", ["http3", "quic"])
def test_a_quic_server_name_holding_an_original_names_the_host_connected_to_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, name: str
) -> None:
    """HTTP/3 in reverse mode with keep_host_header: the upstream's QUIC handshake takes
    the client's server name unless the addon sets one (Disguise.quic_start_server). One
    holding an original is replaced by the host connected to, an address (no server name
    at all); a clean one goes on as the client gave it. The request, clean, goes through
    (reverse:quic:// relays it as QUIC stream bytes, unread by the addon: a mode the addon
    refuses at load for a protected target; here the target is an address, unprotected)."""
    names, heads, status, body, log = _sni_through(tmp_path, monkeypatch, scheme, name)
    assert (status, json.loads(body)) == (200, json.loads(MODELS)), (status, body[:200], log[-3000:])
    assert [h[b":authority"] for h in heads] == [CLEAN.encode()], heads
    assert HOST not in names and HOST not in log, (names, log[-3000:])
    assert names == ([None] if name == HOST else [CLEAN]), names
