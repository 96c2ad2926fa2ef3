"""The listen queue (mitm/listen.py): mitmproxy's real listeners, started by its own
Proxyserver addon on loopback, hold a burst of BACKLOG connections the event loop has
not accepted yet, at start-up and after the listeners change.

How many connections a listening socket holds is measured, not read back: while the
event loop does not run (nothing accepts), clients connect one after another until
the kernel drops a SYN because the accept queue is full (Linux holds backlog + 1). The
queued connections are then accepted and closed on a duplicate of the listening
descriptor, so mitmproxy never sees them."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys

import pytest
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import taddons

from disguiselib.mitm import listen

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measures Linux's accept queue")

ASYNCIO_DEFAULT = 100  # asyncio.start_server's backlog, which mitmproxy keeps
QUEUE = 160  # listen.BACKLOG for these tests: above the default, cheap to fill


def queue_length(sock, limit: int = QUEUE + 50) -> int:
    """Connections a listener holds unaccepted (up to limit): connect until one times
    out, then accept and close them all (through a duplicate descriptor) and close the
    clients."""
    addr = sock.getsockname()[:2]
    clients = []
    try:
        for _ in range(limit):
            try:
                clients.append(socket.create_connection(addr, timeout=0.25))
            except TimeoutError:
                break
        return len(clients)
    finally:
        with socket.socket(fileno=os.dup(sock.fileno())) as lst:
            lst.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                while True:
                    conn, _ = lst.accept()
                    conn.close()
        for c in clients:
            c.close()


@contextlib.contextmanager
def proxyserver(monkeypatch):
    monkeypatch.setattr(listen, "BACKLOG", QUEUE)
    ps = Proxyserver()
    queue = listen.ListenQueue()
    with taddons.context(ps, queue) as tctx:
        loop = tctx.master.event_loop
        try:
            yield ps, queue, loop
        finally:
            loop.run_until_complete(ps.servers.update([]))
            loop.close()


def listeners(ps) -> list:
    return [sock for inst in ps.servers for server in inst._servers for sock in server.sockets]


def test_mitmproxys_listeners_get_the_queue_at_start_up(monkeypatch) -> None:
    with proxyserver(monkeypatch) as (ps, queue, loop):
        assert loop.run_until_complete(ps.servers.update([ProxyMode.parse("regular@127.0.0.1:0")]))
        (sock,) = listeners(ps)
        assert queue_length(sock) == ASYNCIO_DEFAULT + 1  # as mitmproxy leaves it
        queue.running()
        assert queue_length(sock) == QUEUE + 1


def test_listeners_started_later_get_the_queue_too(monkeypatch) -> None:
    """A new mode (or a changed listen port) starts new listeners: running() connected
    resize to the proxyserver's `changed` signal."""
    with proxyserver(monkeypatch) as (ps, queue, loop):
        queue.running()  # no listener yet
        modes = [ProxyMode.parse("regular@127.0.0.1:0"), ProxyMode.parse("socks5@127.0.0.1:0")]
        assert loop.run_until_complete(ps.servers.update(modes))
        socks = listeners(ps)
        assert len(socks) == 2
        assert [queue_length(s) for s in socks] == [QUEUE + 1, QUEUE + 1]


class _Server:
    def __init__(self, sockets) -> None:
        self.sockets = sockets


class _Instance:
    def __init__(self, servers) -> None:
        self._servers = servers


def test_what_is_not_a_tcp_listener_is_left_alone(monkeypatch, caplog) -> None:
    """A UDP socket (dns and wireguard modes), a listener without sockets, an instance
    without asyncio servers, and a socket closed meanwhile: nothing raised, the TCP
    listener beside them resized all the same."""
    monkeypatch.setattr(listen, "BACKLOG", QUEUE)
    tcp = socket.create_server(("127.0.0.1", 0), backlog=5)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gone = socket.socket()
    gone.close()
    instances = [_Instance([_Server([udp]), _Server(None), object()]), object(), _Instance(None),
                 _Instance([_Server([gone, tcp])])]  # fmt: skip

    class Servers(list):
        pass

    class Addons:
        def get(self, name: str):
            assert name == "proxyserver"
            ps = type("PS", (), {})()
            ps.servers = Servers(instances)
            return ps

    monkeypatch.setattr(listen.ctx, "master", type("M", (), {"addons": Addons()})(), raising=False)
    try:
        assert queue_length(tcp) == 5 + 1
        with caplog.at_level(logging.DEBUG, logger="disguise"):
            listen.ListenQueue().resize()
        assert queue_length(tcp) == QUEUE + 1
        assert udp.type == socket.SOCK_DGRAM and udp.fileno() >= 0  # untouched, still open
        assert "listen queue not resized" in caplog.text  # the closed one, said at debug level
    finally:
        tcp.close()
        udp.close()


def test_without_a_proxyserver_nothing_happens(monkeypatch) -> None:
    class Addons:
        def get(self, name: str):
            return None

    monkeypatch.setattr(listen.ctx, "master", type("M", (), {"addons": Addons()})(), raising=False)
    q = listen.ListenQueue()
    q.running()
    q.resize()


def test_the_shipped_queue_holds_a_burst_of_hundreds() -> None:
    """BACKLOG itself (net.core.somaxconn's default since Linux 5.4, which caps it): a
    burst of 300 connections waits in the queue, where asyncio's default drops all past
    the 101st."""
    ps = Proxyserver()
    queue = listen.ListenQueue()
    with taddons.context(ps, queue) as tctx:
        loop = tctx.master.event_loop
        try:
            assert loop.run_until_complete(ps.servers.update([ProxyMode.parse("regular@127.0.0.1:0")]))
            (sock,) = listeners(ps)
            queue.running()
            assert queue_length(sock, 300) == 300
        finally:
            loop.run_until_complete(ps.servers.update([]))
            loop.close()


# -- listening on every interface (issue 27): said once at start-up -------------------------------


@pytest.mark.parametrize(
    ("modes", "host", "wide"),
    [
        (["regular"], "", ["regular"]),  # bare mitmdump: no --listen-host
        (["reverse:http://127.0.0.1:9"], "0.0.0.0", ["reverse:http://127.0.0.1:9"]),
        (["regular"], "127.0.0.1", []),  # what `disguise run` passes
        (["regular@127.0.0.1:8080", "socks5@:1080"], "", ["socks5@:1080"]),
        (["local"], "", []),  # no listener of its own
    ],
)
def test_a_listener_on_every_interface_is_said_once(modes, host, wide, caplog: pytest.LogCaptureFixture) -> None:
    """Read from the options mitmproxy listens with (a test may not listen on every
    interface here): the modes whose listener takes every interface are named."""
    q = listen.ListenQueue()
    with taddons.context(Proxyserver(), q) as tctx:
        tctx.configure(q, mode=modes, listen_host=host)
        assert listen.everywhere() == wide
        try:
            with caplog.at_level(logging.WARNING, "disguise"):
                q.running()
        finally:
            tctx.master.event_loop.close()
    said = [r for r in caplog.records if "listens on all interfaces" in r.getMessage()]
    assert len(said) == (1 if wide else 0)
