"""A whole (not streamed) response body of a masked flow, restored at the response hook
(adapter-level): decoded within disguise_decoded_limit, reversed by the one reverser
`pipeline.reverser_for` chooses for its endpoint and label, or replaced by an error in
the provider's shape (HTTP 502: the client never reads an unreversed body)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from mitmproxy import http

from .. import pipeline
from ..apis.registry import Api
from ..errors import MaskError, log_internal
from ..state import FlowRecord, Phase
from .callables import Buffered
from .flows import body_limit, decode_body, decoded_limit, not_to_retry

log = logging.getLogger("disguise")


def restore(flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None:
    """flow's response body restored (RESTORED), or replaced by an error (FAILED). A
    content-encoded body of a live flow is decoded in a worker thread (returned: an
    awaitable the hook hands to mitmproxy): 1 GiB of zeros is 1 MB as gzip, and decoded
    on the event loop up to disguise_decoded_limit it held every other flow still for
    0.4 s. zlib, zstd and brotli decode with the GIL released (bench/bomb.py)."""
    resp = flow.response
    assert resp is not None and rec.config is not None and isinstance(rec.api, Api) and rec.restorer is not None
    if no_body(flow):  # nothing to restore
        rec.to(Phase.RESTORED)
        return None
    if isinstance(rec.call, Buffered):  # restored as it left (stream_large_bodies: Reading.BUFFERED)
        err = rec.call.error
        rec.to(Phase.FAILED if err else Phase.RESTORED, f"response not restored: {err}" if err else None)
        return None
    # bounded: mitmproxy's get_content expands a bomb whole, on the event loop
    enc = resp.headers.get("content-encoding", "")
    raw = resp.raw_content or b""
    if flow.live and enc.strip().lower() not in ("", "identity") and _looping():
        return _restore_later(flow, rec, raw, enc, decoded_limit())
    try:
        body = decode_body(raw, enc, rec.config.rules)
    except MaskError as e:
        _undecodable(resp, rec, e)
        return None
    _reverse(flow, rec, body)
    return None


def no_body(flow: http.HTTPFlow) -> bool:
    """A response that has no body, by its status or its request's method (RFC 9110
    §6.4.1, RFC 9112 §6.1): never streamed, its headers not fixed for a body whose length
    changes. A `transfer-encoding: chunked` added to a 204 or 304 made mitmproxy send its
    end-of-body `0\\r\\n\\r\\n`, which the client read as the start of the next response on
    that connection ("illegal status line")."""
    resp = flow.response
    code = resp.status_code if resp is not None else 0
    return flow.request.method.upper() == "HEAD" or 100 <= code < 200 or code in (204, 304)


def buffered(flow: http.HTTPFlow, rec: FlowRecord) -> Buffered:
    """The stream callable that takes a whole body mitmproxy streams (now, or once it
    passes `stream_large_bodies`; or another addon asked for it) and restores it as it
    leaves, or gives the addon's error in its place."""
    resp = flow.response
    assert resp is not None and isinstance(rec.api, Api) and rec.restorer is not None
    api, restorer, limit = rec.api, rec.restorer, decoded_limit()
    ctype, enc, path = resp.headers.get("content-type", ""), resp.headers.get("content-encoding", ""), flow.request.path

    def work(raw: bytes) -> bytes:
        return pipeline.restore_whole(api, restorer, raw, ctype, path, encoding=enc, limit=limit)

    def on_error(msg: str) -> bytes:
        log.error("disguise: response not restored: %s", msg)
        return api.error_body(f"disguise: response not restored: {msg}")

    return Buffered(work, on_error, body_limit())


def _looping() -> bool:
    """Is an event loop running here (the proxy; not a test calling the hook, nor a tool)?"""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _restore_later(flow: http.HTTPFlow, rec: FlowRecord, raw: bytes, enc: str, limit: int) -> None:
    resp = flow.response
    assert resp is not None and rec.config is not None
    try:
        body = await asyncio.to_thread(decode_body, raw, enc, rec.config.rules, limit)
    except MaskError as e:
        _undecodable(resp, rec, e)
        return
    except Exception as e:  # noqa: BLE001 - the thread machinery (or memory) failing: never the body as it came
        log_internal(log, "response decoding failed", e)
        _undecodable(resp, rec, MaskError(f"internal error ({type(e).__name__})"))
        return
    _reverse(flow, rec, body)


def _undecodable(resp: http.Response, rec: FlowRecord, e: MaskError) -> None:
    why = f"response not reversed: {e}"
    log.error("disguise: %s", why)
    assert isinstance(rec.api, Api)
    _failed(resp, rec, why, rec.api.error_body(f"disguise: {why}"))


def _reverse(flow: http.HTTPFlow, rec: FlowRecord, body: bytes) -> None:
    resp = flow.response
    assert resp is not None and isinstance(rec.api, Api) and rec.restorer is not None
    rec.upstream_body = body
    try:
        ctype = resp.headers.get("content-type", "")
        rev = pipeline.reverser_for(rec.api, rec.restorer, ctype, flow.request.path, buffered=True)
        assert rev is not None
        rec.reverser = rev
        new = rev.whole(body)
    except Exception as e:  # noqa: BLE001 - never hand the client an unreversed body
        log_internal(log, "response reversal failed", e)
        why = f"response not reversed: internal error ({type(e).__name__})"
        _failed(resp, rec, why, rec.api.error_body(f"disguise: {why}"))
        return
    if rev.failure is not None and getattr(getattr(rev, "inner", rev), "is_sse", None) is False:
        # a whole body refused (its label contradicts its endpoint): an error, not a 200,
        # in the API's error body (what the reverser ended with may be an event)
        why = f"response not reversed: {rev.failure}"
        _failed(resp, rec, why, rec.api.error_body(f"disguise: {why}"))
        return
    if new is not body:
        resp.content = new
    rec.to(Phase.RESTORED)


def _failed(resp: http.Response, rec: FlowRecord, why: str, error_body: bytes) -> None:
    """The response replaced by the addon's error (JSON, not content-encoded)."""
    not_to_retry(resp)
    resp.status_code = 502
    resp.headers["content-type"] = "application/json"
    resp.headers.pop("content-encoding", None)
    resp.content = error_body
    rec.to(Phase.FAILED, why)
