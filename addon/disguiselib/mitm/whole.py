"""A whole (not streamed) response body of a masked flow, restored at the response hook
(adapter-level): decoded within disguise_decoded_limit, reversed by the one reverser
`pipeline.reverser_for` chooses for its endpoint and label, or replaced by an error in
the provider's shape (HTTP 502: the client never reads an unreversed body)."""

from __future__ import annotations

import logging

from mitmproxy import http

from .. import pipeline
from ..errors import MaskError, log_internal
from ..providers.registry import Api
from ..state import FlowRecord, Phase
from .callables import Buffered
from .flows import decode_body

log = logging.getLogger("disguise")


def restore(flow: http.HTTPFlow, rec: FlowRecord) -> None:
    """flow's response body restored (RESTORED), or replaced by an error (FAILED)."""
    resp = flow.response
    assert resp is not None and rec.config is not None and isinstance(rec.api, Api) and rec.restorer is not None
    if isinstance(rec.call, Buffered):  # restored as it left (stream_large_bodies: Reading.BUFFERED)
        err = rec.call.error
        rec.to(Phase.FAILED if err else Phase.RESTORED, f"response not restored: {err}" if err else None)
        return
    try:  # bounded: mitmproxy's get_content expands a bomb whole, on the event loop
        enc = resp.headers.get("content-encoding", "")
        body = decode_body(resp.raw_content or b"", enc, rec.config.rules)
    except MaskError as e:
        why = f"response not reversed: {e}"
        log.error("disguise: %s", why)
        _failed(resp, rec, why, rec.api.error_body(f"disguise: {why}"))
        return
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
        # a whole body refused (its label contradicts its endpoint): an error, not a 200
        _failed(resp, rec, f"response not reversed: {rev.failure}", new)
        return
    if new is not body:
        resp.content = new
    rec.to(Phase.RESTORED)


def _failed(resp: http.Response, rec: FlowRecord, why: str, error_body: bytes) -> None:
    """The response replaced by the addon's error (JSON, not content-encoded)."""
    resp.status_code = 502
    resp.headers["content-type"] = "application/json"
    resp.headers.pop("content-encoding", None)
    resp.content = error_body
    rec.to(Phase.FAILED, why)
