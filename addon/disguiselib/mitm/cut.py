"""Upstream cutting a restored stream mid-body (adapter-level).

When the upstream connection breaks inside a streamed response, mitmproxy 11 and 12
never make the stream callable's final call: the `error` hook runs and the client's
connection is cut (HTTP/1) or its stream reset (HTTP/2), so a client read a transport
error where the contract (§4) promises the stream's end: what was held, then an
explicit error event. The stream callable only ever forwards whole events (frames), so
the client's framing always has room for one more: just before mitmproxy passes the
cut on, the callable's final call is made and what it gives (the held text, the error
event) is sent to the client; then the cut goes on as before, so the client still sees
the body did not end cleanly.

Internal to mitmproxy (checked on 11.0 and 12.3: proxy/layers/http/__init__.py,
`HttpStream.handle_protocol_error`, identical in both): the flow's own HttpStream gets
its handler wrapped, nothing else is changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from mitmproxy import http

from .websocket import _find_layer

log = logging.getLogger("disguise")


def final_pieces(call: Callable[[bytes], bytes | Iterable[bytes]]) -> list[bytes]:
    """The stream callable's final call, as pieces to send: never an empty one (on
    HTTP/1.1 chunked that is the end-of-body marker, which would dress the cut up as a
    clean end)."""
    out = call(b"")
    pieces = [out] if isinstance(out, bytes) else list(out)
    return [p for p in pieces if p]


def deliver_on_cut(flow: http.HTTPFlow) -> None:
    """Make the flow's stream end with its final call's output when upstream cuts it."""
    try:
        from mitmproxy.proxy.layers.http import HttpStream, ResponseData, ResponseProtocolError, SendHttp

        stream = _find_layer(flow, HttpStream)
        if stream is None:
            raise LookupError("no HTTP stream for the flow")
        original = stream.handle_protocol_error

        def handle_protocol_error(event) -> Iterator:
            resp = flow.response
            if (
                isinstance(event, ResponseProtocolError)
                and resp is not None
                and callable(resp.stream)
                and stream.server_state == stream.state_stream_response_body
                and stream.client_state != stream.state_errored
            ):
                try:
                    pieces = final_pieces(resp.stream)
                except Exception as e:  # noqa: BLE001 - the cut goes on as before
                    log.error("disguise: the end of a cut stream could not be sent (%s)", type(e).__name__)
                    pieces = []
                for p in pieces:
                    yield SendHttp(ResponseData(stream.stream_id, p), stream.context.client)
            yield from original(event)

        stream.handle_protocol_error = handle_protocol_error
    except Exception as e:  # noqa: BLE001 - then a cut reaches the client as a transport error only
        log.debug("disguise: a cut stream will end without its error event (%s)", type(e).__name__)
