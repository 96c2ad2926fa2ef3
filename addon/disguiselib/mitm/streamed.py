"""A request body mitmproxy would stream upstream as it arrives (stream_large_bodies),
taken whole instead (adapter-level): masked (an API disguise transforms) or scanned
(any other endpoint) at its end, inside mitmproxy's stream callable (callables.Buffered).
Its URL and headers were checked before (flows.headers_refused): they leave first."""

from __future__ import annotations

from collections.abc import Callable

from mitmproxy import ctx, http
from mitmproxy.net import encoding as mencoding

from .. import pipeline
from ..apis.registry import Api
from ..errors import LeakError, MaskError
from ..state import FlowRecord, Passed, Phase
from . import outcome
from .flows import TRANSFER_CODED, decode_body, transfer_coded


def masker(flow: http.HTTPFlow, rec: FlowRecord) -> Callable[[bytes], bytes]:
    enc = flow.request.headers.get("content-encoding", "")
    path, headers = flow.request.path, list(flow.request.headers.items(multi=True))
    coded = transfer_coded(flow.request.headers)

    def work(raw: bytes) -> bytes:
        """What goes upstream: the masked body, or raw (fail-open, or an unknown
        endpoint's body scanned clean); raises to refuse (outcome.apply)."""
        assert rec.config is not None and isinstance(rec.api, Api)
        body = b""
        result: pipeline.Verdict
        if coded:
            result = pipeline.Refused(TRANSFER_CODED)
        else:
            try:
                body = decode_body(raw, enc, rec.config.rules)
            except MaskError as e:
                result = pipeline.Refused.of(e)
            else:
                result = pipeline.mask_request(rec.api, body, rec.config, path, headers)
        out = outcome.apply(flow, rec, body, result, lambda: scanned(rec, path, headers, body, raw), streamed=True)
        if out is None or isinstance(result, pipeline.NotOurs):
            return raw  # forwarded as it came (fail-open; an unknown endpoint's, scanned)
        return mencoding.encode(out, enc) if enc else out

    return work


def scanner(flow: http.HTTPFlow, rec: FlowRecord) -> Callable[[bytes], bytes]:
    enc = flow.request.headers.get("content-encoding", "")
    path, headers = flow.request.path, list(flow.request.headers.items(multi=True))
    assert rec.config is not None
    rules = rec.config.rules
    if transfer_coded(flow.request.headers):
        return lambda raw: scanned(rec, path, headers, None, raw)  # cannot be read: a hit
    return lambda raw: scanned(rec, path, headers, decode_body(raw, enc, rules), raw)


def scanned(rec: FlowRecord, path: str, headers: list, body: bytes | None, raw: bytes) -> bytes:
    """A streamed body of an endpoint disguise does not transform: raw, when it may leave."""
    assert rec.config is not None
    hit = pipeline.scan_unknown(path, headers, body, rec.config.rules)
    if hit is not None and not ctx.options.disguise_allow_unknown:
        raise LeakError(f"an original ({hit}) in a request to an endpoint disguise does not transform")
    rec.passed = Passed.SCANNED
    rec.to(Phase.PASSED)
    return raw
