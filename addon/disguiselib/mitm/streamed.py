"""A request body mitmproxy would stream upstream as it arrives (stream_large_bodies),
taken whole instead (adapter-level): masked (an API disguise transforms) or scanned
(any other endpoint) at its end, inside mitmproxy's stream callable (callables.Buffered).
Its URL and headers were checked before (flows.headers_refused): they leave first."""

from __future__ import annotations

from collections.abc import Callable

from mitmproxy import ctx, http
from mitmproxy.net import encoding as mencoding

from .. import pipeline
from ..errors import LeakError, MaskError, NotTransformed
from ..state import FlowRecord, Kind, Phase
from .flows import TRANSFER_CODED, decode_body, transfer_coded


def keep(rec: FlowRecord, client_body: bytes, masked: pipeline.Masked) -> None:
    """What restoring the response needs of a masked request."""
    rec.session = masked.session
    rec.restorer = rec.config.rules.restorer(masked.session.placeholders)
    rec.client_body = client_body


def masker(flow: http.HTTPFlow, rec: FlowRecord) -> Callable[[bytes], bytes]:
    enc = flow.request.headers.get("content-encoding", "")
    path, headers = flow.request.path, list(flow.request.headers.items(multi=True))
    coded = transfer_coded(flow.request.headers)

    def work(raw: bytes) -> bytes:
        if coded:
            raise MaskError(TRANSFER_CODED)
        body = decode_body(raw, enc, rec.config.rules)
        try:
            masked = pipeline.mask_request(rec.api, body, rec.config, path, headers)
        except NotTransformed:  # not what its route transforms: an unknown endpoint's
            rec.kind, rec.api = Kind.UNKNOWN, None
            return scanned(rec, path, headers, body, raw)
        keep(rec, body, masked)
        rec.to(Phase.MASKED)
        return mencoding.encode(masked.body, enc) if enc else masked.body

    return work


def scanner(flow: http.HTTPFlow, rec: FlowRecord) -> Callable[[bytes], bytes]:
    enc = flow.request.headers.get("content-encoding", "")
    path, headers = flow.request.path, list(flow.request.headers.items(multi=True))
    if transfer_coded(flow.request.headers):
        return lambda raw: scanned(rec, path, headers, None, raw)  # cannot be read: a hit
    return lambda raw: scanned(rec, path, headers, decode_body(raw, enc, rec.config.rules), raw)


def scanned(rec: FlowRecord, path: str, headers: list, body: bytes | None, raw: bytes) -> bytes:
    """A streamed body of an endpoint disguise does not transform: raw, when it may leave."""
    hit = pipeline.scan_unknown(path, headers, body, rec.config.rules)
    if hit is not None and not ctx.options.disguise_allow_unknown:
        raise LeakError(f"an original ({hit}) in a request to an endpoint disguise does not transform")
    rec.to(Phase.PASSED)
    return raw
