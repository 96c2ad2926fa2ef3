"""An HTTP/2 fake upstream for the integration tests: TLS on 127.0.0.1 (a self-signed
certificate made at start; mitmdump runs with `ssl_insecure`), ALPN h2 only, built on the
`h2` library. It records each stream (headers, body, trailers) and answers from a
handler, in a thread per stream, so that several streams' answers interleave on one
connection. A mitmdump in reverse mode in front of it (`reverse:https://...`) speaks
HTTP/2 to it when the client speaks HTTP/2 to mitmdump.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions


@dataclass
class Stream:
    """One request as upstream received it."""

    headers: dict[str, str]  # pseudo-headers included (":path")
    body: bytes = b""
    trailers: dict[str, str] = field(default_factory=dict)


@dataclass
class Answer:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)  # each a DATA frame
    trailers: list[tuple[str, str]] | None = None
    delay: float = 0.002


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, written into folder."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    crt, pem = folder / "upstream.crt", folder / "upstream.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))  # fmt: skip
    return crt, pem


class H2Upstream:
    """handler(stream) -> Answer, for every request; `streams` holds what arrived."""

    def __init__(self, folder: Path, handler: Callable[[Stream], Answer]) -> None:
        self.handler = handler
        self.streams: list[Stream] = []
        crt, key = self_signed(folder)
        self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._ctx.load_cert_chain(crt, key)
        self._ctx.set_alpn_protocols(["h2"])
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]

    def __enter__(self) -> H2Upstream:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                s, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            s = self._ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        lock = threading.Lock()
        open_: dict[int, Stream] = {}
        with s:
            with lock:
                conn.initiate_connection()
                s.sendall(conn.data_to_send())
            while True:
                try:
                    data = s.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                with lock:
                    for ev in conn.receive_data(data):
                        if isinstance(ev, h2.events.RequestReceived):
                            open_[ev.stream_id] = st = Stream(dict(ev.headers))  # type: ignore[arg-type]
                            self.streams.append(st)
                        elif isinstance(ev, h2.events.DataReceived):
                            open_[ev.stream_id].body += ev.data
                            conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                        elif isinstance(ev, h2.events.TrailersReceived):
                            open_[ev.stream_id].trailers = dict(ev.headers)  # type: ignore[arg-type]
                        if isinstance(ev, h2.events.StreamEnded):
                            args = (s, conn, lock, ev.stream_id, open_.pop(ev.stream_id))
                            threading.Thread(target=self._answer, args=args, daemon=True).start()
                    out = conn.data_to_send()
                    if out:
                        s.sendall(out)

    def _answer(self, s: ssl.SSLSocket, conn: h2.connection.H2Connection, lock: threading.Lock, sid: int,
                st: Stream) -> None:  # fmt: skip
        a = self.handler(st)
        steps: list[Callable[[], None]] = [
            lambda: conn.send_headers(sid, [(":status", str(a.status)), *a.headers],
                                      end_stream=not a.pieces and a.trailers is None)  # fmt: skip
        ]
        for i, p in enumerate(a.pieces):
            last = i == len(a.pieces) - 1 and a.trailers is None
            steps.append(lambda p=p, last=last: conn.send_data(sid, p, end_stream=last))
        if a.trailers is not None:
            steps.append(lambda: conn.send_headers(sid, a.trailers, end_stream=True))
        try:
            for step in steps:
                with lock:
                    step()
                    s.sendall(conn.data_to_send())
                time.sleep(a.delay)
        except (OSError, h2.exceptions.H2Error):  # the proxy went away, or reset the stream
            pass
