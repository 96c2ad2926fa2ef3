"""An awaited hook between a streamed request body's end and its sending (adapter-level).

A request body mitmproxy streams (`stream_large_bodies`) is taken whole by a stream
callable (callables.Buffered) and masked at its end. mitmproxy calls that callable
synchronously, on the event loop, and sends what it returns before the next hook
(`request`): masking a 1 MB body there paused every other stream 60-140 ms
(bench/offload.py, variant "stream_large_bodies"), and nothing in mitmproxy 11 or 12 lets
the callable wait (proxy/layers/http: `state_stream_request_body` calls `stream(b"")`,
sends the chunks, then yields `HttpRequestHook`).

So one hook is added where mitmproxy has none: at a streamed request's end of message,
before the stream callable's last call, `HttpStream.state_stream_request_body` first
yields `BodyComplete` when the callable is a Buffered. It is a mitmproxy hook like any
other (a blocking StartHook, awaited by the proxy server; other flows go on meanwhile):
the addon's `disguise_body_complete` masks the body off the loop (the worker process or a
thread) and hands the verdict to the callable, whose last call then only applies it.

Its headers wait too (`start_request_stream`): mitmproxy would connect upstream and send
them as the body starts to arrive, and the provider would wait for a body that is still
being masked (a 200 MB body: a minute; a server's idle limit cuts it). Upstream hears of
such a body only once it is masked; one that is refused then is never heard of: for
mitmproxy its body was read whole (`state_consume_request_body`), and the request hook
answers it with the refusal, no connection made. The headers were checked when they came
(flows.headers_refused), but only masking the body knows its originals: a header that
copies one a rule found in the body by its context (`password=...`) went upstream,
before, with the body then sent empty.

A callable whose output is large (`paced`: a body fed to the worker, streamed.Spooled) is
asked for it right there, and its pieces are sent one by one with the same hook awaited
between them: mitmproxy would otherwise send them all in one turn of the event loop (a
200 MB body: every other stream waiting for the copies into the socket's buffer), and
the loop now serves other flows between pieces while the upstream reads. Between two
pieces the hook also waits until what mitmproxy queued for the flow's connections is
written (`drained`: mitmproxy's own backpressure, which it applies after each read but
never between the commands of one hook): without it every piece was queued in the
upstream socket's buffer at once, and each one appended to a buffer of tens of MB (a
new allocation, the whole backlog copied) held the loop 10-20 ms (bench/stalls.py).

A client that goes away while such a body still arrives ends the flow as a body read
whole would (`handle_protocol_error`): its held-back headers made no server connection,
and mitmproxy, which would tell the one it takes for the request's, "crashed" instead and
never ran the error hook.

Where mitmproxy's code is not the shape this expects, nothing is changed and the callable
masks on the loop as before (`install` returns False and the addon says so once): slower
for other streams, never less safe. The callable decides what leaves either way."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mitmproxy import http
from mitmproxy.proxy import commands

from .callables import Buffered

log = logging.getLogger("disguise")


@dataclass
class BodyCompleteHook(commands.StartHook):
    """A request body mitmproxy streamed into a Buffered callable is whole; the callable
    has not been asked for what to send yet."""

    name = "disguise_body_complete"
    flow: http.HTTPFlow


_installed: bool | None = None


async def drained(flow: http.HTTPFlow) -> None:
    """Until what mitmproxy queued for flow's connections is written, or nearly
    (ConnectionHandler.drain_writers, mitmproxy 11 and 12: each socket's buffer below its
    high-water mark). Where mitmproxy is not the shape this expects (no proxyserver, no
    such handler): at once, as before."""
    try:
        from mitmproxy import ctx

        server = ctx.master.addons.get("proxyserver")
        handler = server.connections.get(flow.client_conn.id) if server is not None else None
        drain = getattr(handler, "drain_writers", None)
    except Exception:  # noqa: BLE001 - no master (a tool, a test): nothing to wait for
        return
    if drain is not None:
        await drain()  # a socket that failed meanwhile: mitmproxy cancels its handler itself


def install() -> bool:
    """Add the hook to mitmproxy's HTTP layer, once per process; whether it is in place."""
    global _installed
    if _installed is not None:
        return _installed
    _installed = False
    try:
        from mitmproxy.proxy.layers.http import (
            HttpStream,
            RequestData,
            RequestEndOfMessage,
            RequestHeaders,
            RequestProtocolError,
            SendHttp,
        )
    except ImportError:
        return False
    original = getattr(HttpStream, "state_stream_request_body", None)
    if original is None or getattr(original, "_disguise_hook", False):
        _installed = original is not None
        return _installed
    start = getattr(HttpStream, "start_request_stream", None)
    connect = getattr(HttpStream, "make_server_connection", None)
    protocol_error = getattr(HttpStream, "handle_protocol_error", None)
    consuming = getattr(HttpStream, "state_consume_request_body", None)

    def start_request_stream(self):  # noqa: ANN001, ANN202 - mitmproxy's signature
        stream = self.flow.request.stream
        if isinstance(stream, Buffered) and not self.flow.response:
            self._disguise_deferred = True  # connected, and its headers sent, at the body's end
            self.client_state = self.state_stream_request_body
            return
        yield from start(self)

    def send_headers(self):  # noqa: ANN001, ANN202 - what start_request_stream did, deferred
        self._disguise_deferred = False
        if not (yield from connect(self)):
            self.client_state = self.state_errored
            return False
        yield SendHttp(RequestHeaders(self.stream_id, self.flow.request, end_stream=False), self.context.server)
        return True

    def state_stream_request_body(self, event):  # noqa: ANN001, ANN202 - mitmproxy's signature
        flow = getattr(self, "flow", None)
        stream = flow.request.stream if flow is not None and flow.request is not None else None
        if isinstance(event, RequestEndOfMessage) and isinstance(stream, Buffered):
            if stream.wants_completion():
                yield BodyCompleteHook(flow)
            deferred = getattr(self, "_disguise_deferred", False)
            if deferred or stream.paced and not stream.finished:
                out = stream(b"")  # its last call: what leaves, or a refusal (stream.error)
                if deferred and stream.error is not None:
                    # nothing of the request has left (its headers held back till now) and
                    # nothing will: for mitmproxy the body was read whole, and the request
                    # hook answers it (Disguise._request), no connection made
                    self._disguise_deferred, stream.held_back = False, True
                    self.client_state = self.state_consume_request_body
                    return (yield from self.state_consume_request_body(event))
                if deferred and not (yield from send_headers(self)):
                    return None
                store = getattr(self.context.options, "store_streamed_bodies", False)  # (12: kept as sent)
                for i, chunk in enumerate(out):  # a paced one's pieces: a turn of the loop for others between them
                    if i and stream.paced:
                        yield BodyCompleteHook(flow)
                    if store:
                        self.request_body_buf += chunk
                    yield SendHttp(RequestData(self.stream_id, chunk), self.context.server)
        return (yield from original(self, event))  # the callable, finished, gives nothing more

    def handle_protocol_error(self, event):  # noqa: ANN001, ANN202 - mitmproxy's signature
        if isinstance(event, RequestProtocolError) and getattr(self, "_disguise_deferred", False):
            # The client went away before its deferred body's end: nothing of the request
            # went upstream, and no server connection was made for it. mitmproxy would
            # tell one it takes for "already talked to" (a streamed body's state), which
            # is in no connection table: "mitmproxy has crashed!", and the error hook never
            # ran (the flow's record and the worker's copy of the body were kept for good).
            # For mitmproxy the body was being read whole, as it was: the error hook runs.
            self._disguise_deferred = False
            self.client_state = self.state_consume_request_body
        return (yield from protocol_error(self, event))

    state_stream_request_body._disguise_hook = True  # type: ignore[attr-defined]
    state_stream_request_body.__wrapped__ = original  # type: ignore[attr-defined]
    HttpStream.state_stream_request_body = state_stream_request_body  # type: ignore[method-assign]
    if None not in (start, connect, protocol_error, consuming):  # else a streamed body's headers leave at once,
        start_request_stream.__wrapped__ = start  # type: ignore[attr-defined]  # as mitmproxy does
        HttpStream.start_request_stream = start_request_stream  # type: ignore[method-assign]
        handle_protocol_error.__wrapped__ = protocol_error  # type: ignore[attr-defined]
        HttpStream.handle_protocol_error = handle_protocol_error  # type: ignore[method-assign]
    _installed = True
    return True
