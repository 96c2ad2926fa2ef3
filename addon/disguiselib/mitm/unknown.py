"""A request to an endpoint disguise does not transform, on a protected host (adapter-level):
it leaves only if it holds no original, or the user allowed it (`disguise_allow_unknown`);
else it is refused by the addon's refusal (addon.Disguise._refuse)."""

from __future__ import annotations

import logging
from typing import Protocol

from mitmproxy import ctx, http

from .. import pipeline
from ..apis.registry import refused
from ..inspect.record import destination
from ..leakguard import place
from ..state import FlowRecord, Passed, Phase
from .flows import contained, leaving_headers, readable, websocket_refused

log = logging.getLogger("disguise")


class Refuse(Protocol):
    def __call__(self, flow: http.HTTPFlow, rec: FlowRecord, msg: str, status: int = ...) -> None: ...


def check(flow: http.HTTPFlow, rec: FlowRecord, refuse: Refuse, websocket: bool = False) -> None:
    """An endpoint disguise does not transform, on a protected host: it may leave
    only if it holds no original (or the user allowed it)."""
    r = flow.request
    assert rec.config is not None  # a record without one is refused before (addon.Disguise._request)
    allowed = ctx.options.disguise_allow_unknown
    where = place(r.method, r.path, rec.config.rules)
    if websocket:
        if allowed:
            log.warning("disguise: %s: WebSocket messages are not masked (disguise_allow_unknown)", where)
            rec.passed = Passed.SCANNED
            rec.to(Phase.PASSED)
            return
        msg, status = websocket_refused(where, r.path)
        log.warning(msg)
        refuse(flow, rec, msg, status)
        return
    why = refused(r.method, r.path, r.headers.items(multi=True))
    if why is not None and not allowed:
        msg = f"disguise: request refused: {where}: {why}"
        log.warning(msg)
        refuse(flow, rec, msg)
        return
    body = readable(r, rec.config.rules)
    hit = pipeline.scan_unknown(r.path, leaving_headers(r), body, rec.config.rules, destination(flow))
    if hit is not None and not allowed:
        msg = (
            f"disguise: request refused: {where} is not an endpoint disguise transforms, and it holds "
            f"an original ({hit}); set disguise_allow_unknown to forward such requests"
        )
        log.warning(msg)
        refuse(flow, rec, msg)
        return
    if hit is not None:
        log.warning("disguise: %s holds an original (%s): forwarded (disguise_allow_unknown)", where, hit)
    if body is not None:
        contained(r, body)  # a container that carries more than what was scanned: made again
    rec.checked_body = r.raw_content  # what the scan passed (the Guard looks again at a later change)
    rec.passed = Passed.SCANNED
    rec.to(Phase.PASSED, None if hit is None else f"an original ({hit}) in {where}")  # (Inspector: marked)
