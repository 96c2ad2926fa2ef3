"""The fake provider: a local HTTP/1.1 server answering every POST with an SSE stream.

    python bench/upstream.py PER_WRITE ROUTE... (ROUTE: PATH=FILE or NAME=FILE)

Prints its port, then serves on 127.0.0.1 until killed. One asyncio loop, so hundreds of
slow streams cost no threads (section (e) runs 500 at once); listen backlog 4096, so the
provider's own queue never overflows and any listen overflow the kernel counts is the
proxy's.

A request picks its stream by the header `x-bench-stream: NAME`, else by its path, else
the first route; `x-bench-per-write: K` writes K events per chunk (default PER_WRITE);
`x-bench-delay-ms: D` sleeps D ms between writes (a model producing tokens). The stream
`tiny` is built in (one event). `GET /_bench/last` answers the last POST body received
(what a masking proxy actually sent upstream).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

TINY = b'event: ping\ndata: {"type": "ping"}\n\n'


class Upstream:
    def __init__(self, per_write: int, routes: list[str]) -> None:
        self.per_write = per_write
        self.streams: dict[str, list[bytes]] = {"tiny": [TINY]}
        self.first: str | None = None
        for r in routes:
            key, _, fname = r.partition("=")
            data = Path(fname).read_bytes()
            events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
            assert b"".join(events) == data, f"{fname}: not LF-framed SSE"
            self.streams[key] = events
            self.first = self.first or key
        self.cache: dict[tuple[str, int], list[bytes]] = {}
        self.last_body = b""

    def writes_for(self, key: str, k: int) -> list[bytes]:
        if (key, k) not in self.cache:
            events = self.streams[key]
            ws = []
            for i in range(0, len(events), k):
                piece = b"".join(events[i : i + k])
                ws.append(b"%x\r\n%s\r\n" % (len(piece), piece))
            ws.append(b"0\r\n\r\n")
            self.cache[key, k] = ws
        return self.cache[key, k]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                hdrs = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        hdrs[k.strip().lower()] = v.strip()
                n = int(hdrs.get("content-length") or 0)
                if "chunked" in hdrs.get("transfer-encoding", ""):  # a body mitmproxy streamed
                    parts = []
                    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                        parts.append(await reader.readexactly(size))
                        await reader.readexactly(2)
                    await reader.readuntil(b"\r\n")  # no trailers
                    body = b"".join(parts)
                else:
                    body = await reader.readexactly(n) if n else b""
                path = target.split("?", 1)[0]
                if method == "GET" and path == "/_bench/last":
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(self.last_body), self.last_body))  # fmt: skip
                    await writer.drain()
                    continue
                if method == "POST":
                    self.last_body = body
                key = hdrs.get("x-bench-stream") or (path if path in self.streams else self.first) or "tiny"
                k = int(hdrs.get("x-bench-per-write") or self.per_write)
                delay = float(hdrs.get("x-bench-delay-ms") or 0) / 1000
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                await writer.drain()
                for i, w in enumerate(self.writes_for(key, k)):
                    if delay and i:
                        await asyncio.sleep(delay)
                    writer.write(w)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def serve(self) -> None:
        srv = await asyncio.start_server(self.handle, "127.0.0.1", 0, backlog=4096)
        print(srv.sockets[0].getsockname()[1], flush=True)
        async with srv:
            await srv.serve_forever()




def serve_threaded(up: Upstream) -> None:
    """The same answers from a ThreadingHTTPServer, as the first bench's provider was
    built: one thread per connection and socketserver's default listen backlog of 5
    (request_queue_size). Kept to show what that does to a load test ((e), --threaded)."""
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802
            n = int(self.headers.get("content-length") or 0)
            up.last_body = self.rfile.read(n)
            path = self.path.split("?", 1)[0]
            key = self.headers.get("x-bench-stream") or (path if path in up.streams else up.first) or "tiny"
            k = int(self.headers.get("x-bench-per-write") or up.per_write)
            delay = float(self.headers.get("x-bench-delay-ms") or 0) / 1000
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for i, w in enumerate(up.writes_for(key, k)):
                if delay and i:
                    time.sleep(delay)
                self.wfile.write(w)

        def log_message(self, *a) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "--threaded":
        serve_threaded(Upstream(int(sys.argv[2]), sys.argv[3:]))
    else:
        asyncio.run(Upstream(int(sys.argv[1]), sys.argv[2:]).serve())
