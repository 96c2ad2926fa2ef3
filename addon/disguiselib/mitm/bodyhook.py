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


def install() -> bool:
    """Add the hook to mitmproxy's HTTP layer, once per process; whether it is in place."""
    global _installed
    if _installed is not None:
        return _installed
    _installed = False
    try:
        from mitmproxy.proxy.layers.http import HttpStream, RequestEndOfMessage
    except ImportError:
        return False
    original = getattr(HttpStream, "state_stream_request_body", None)
    if original is None or getattr(original, "_disguise_hook", False):
        _installed = original is not None
        return _installed

    def state_stream_request_body(self, event):  # noqa: ANN001, ANN202 - mitmproxy's signature
        flow = getattr(self, "flow", None)
        stream = flow.request.stream if flow is not None and flow.request is not None else None
        if isinstance(event, RequestEndOfMessage) and isinstance(stream, Buffered) and stream.wants_completion():
            yield BodyCompleteHook(flow)
        return (yield from original(self, event))

    state_stream_request_body._disguise_hook = True  # type: ignore[attr-defined]
    state_stream_request_body.__wrapped__ = original  # type: ignore[attr-defined]
    HttpStream.state_stream_request_body = state_stream_request_body  # type: ignore[method-assign]
    _installed = True
    return True
