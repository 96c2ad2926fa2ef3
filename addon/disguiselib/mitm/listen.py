"""The accept queue of mitmproxy's own listeners (adapter-level).

mitmproxy listens with `asyncio.start_server`'s default queue of 100 connections
(proxy/mode_servers.py; no option changes it). When hundreds of clients connect at once
(an agent starting its streams) and the event loop is busy with the streams already
open, the queue fills and the kernel drops the connection attempts that find it full
(`ListenOverflows` in /proc/net/netstat): clients wait for a SYN retry (1 s, then 3 s)
or, when their request went out on a handshake the kernel then forgot, read a reset.
bench (e) counted 191 to 1,129 overflows per burst of 500, plain mitmdump and the addon
alike. A larger queue holds the burst until the loop accepts it; servers (nginx 511,
the kernel's own net.core.somaxconn 4096) size theirs the same way.
"""

from __future__ import annotations

import logging
import os
import socket

from mitmproxy import ctx
from mitmproxy.proxy.mode_specs import ProxyMode

log = logging.getLogger("disguise")

# The kernel caps it at net.core.somaxconn (4096 on Linux since 5.4).
BACKLOG = 4096


class ListenQueue:
    """Gives every TCP listener of mitmproxy a queue of BACKLOG connections, at start-up
    and whenever the listeners change (a new --mode, a changed listen port)."""

    def running(self) -> None:
        ps = ctx.master.addons.get("proxyserver")
        if ps is None:
            return
        wide = everywhere()
        if wide:
            # `disguise run` passes --listen-host 127.0.0.1; bare mitmdump listens on every interface
            log.warning(
                "disguise: the proxy listens on all interfaces (%s): anyone who can reach this machine can send "
                "requests through it and read the restored answers; --listen-host 127.0.0.1 keeps it local",
                ", ".join(wide),
            )
        ps.servers.changed.connect(self.resize)
        self.resize()

    def resize(self) -> None:
        ps = ctx.master.addons.get("proxyserver")
        for instance in ps.servers if ps is not None else ():
            for server in getattr(instance, "_servers", None) or ():
                for sock in getattr(server, "sockets", None) or ():
                    try:
                        # listen() again on the same socket (through a duplicate of its
                        # descriptor) only changes how many connections may wait
                        with socket.socket(fileno=os.dup(sock.fileno())) as s:
                            if s.type == socket.SOCK_STREAM:
                                s.listen(BACKLOG)
                    except OSError as e:  # the listener went away meanwhile: nothing to size
                        log.debug("disguise: listen queue not resized: %s", e)


_ALL = ("", "0.0.0.0", "::", "[::]")


def everywhere() -> list[str]:
    """The modes (as given) whose listener takes connections on every interface: no
    listen host, or a wildcard one (mitmproxy's default when --listen-host is not set)."""
    opts = ctx.options
    out = []
    for spec in opts.mode:
        try:
            mode = ProxyMode.parse(spec)
        except ValueError:
            continue
        if mode.listen_port(opts.listen_port) is not None and mode.listen_host(opts.listen_host) in _ALL:
            out.append(spec)
    return out
