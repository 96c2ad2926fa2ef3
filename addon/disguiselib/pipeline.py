"""One path for every request and response (sans I/O): masking a request (mask, then the
leak check) and choosing a response's reverser. The live hooks, the streamed-body path
and every replay call these; nothing else assembles masking or picks a reverser."""

from __future__ import annotations

import logging

from . import leakguard
from .config import Config
from .core.rules import Restorer, Rules
from .core.sse import is_json_type
from .errors import log_internal
from .providers.masking import mask_request
from .providers.registry import Api
from .providers.restore import restore_body
from .providers.stream import BodyStream, SSEStream

log = logging.getLogger("disguise")

# Request bodies from this size on are masked in a worker thread (thread handoff costs
# tens of microseconds; masking 64 KiB about 2 ms).
OFF_LOOP_BYTES = 64 * 1024


def leak_scan(
    path: str, headers: list, body: bytes | None, rules: Rules, api: Api | None = None, content_type: str = ""
) -> leakguard.Hit | None:
    """The leak guard's scan of what is about to leave, read with api's table (None: an
    endpoint no table describes, everything); a failing check is a hit."""
    try:
        return leakguard.scan_request(path, headers, body, rules, api, content_type)
    except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
        log_internal(log, "leak guard", e)
        return leakguard.Hit("internal error", type(e).__name__)


def mask_work(raw: bytes, api: Api, cfg: Config, content_type: str = ""):
    """Masking proper, safe to run in a worker thread (the rules are read-only; the
    prefilter keeps a scratch space per thread): (masked body, session), or the
    exception that refuses the request (NotTransformed: handle it as an unknown
    endpoint)."""
    try:
        if cfg.disguises is not None:
            _warn_present_disguise(raw, cfg.disguises, api, content_type)
        return mask_request(raw, api, cfg.rules, content_type)
    except Exception as e:  # noqa: BLE001 - handed back, decided by the caller
        return e


def _warn_present_disguise(raw: bytes, disguises: Rules, api: Api, content_type: str) -> None:
    """The client typed a disguise itself: the answer's copy of it will be restored to
    the original, indistinguishable from ours. Thinking and other untouched spans hold
    disguises by design (they went out masked and come back as they were) and are not
    looked at."""
    try:
        hit = leakguard.scan_body(raw, disguises, api, content_type)
    except Exception:  # noqa: BLE001 - a warning only; masking decides the rest
        return
    if hit is not None:
        log.warning(
            "disguise: the request already holds a disguise (at %s): in the answer it will be restored "
            "to its original like the ones disguise put there",
            hit.where,
        )


def reverser_for(
    api: Api, restorer: Restorer, content_type: str, path: str = "", buffered: bool = False
) -> BodyStream | SSEStream | None:
    """The response body's reverser: an event stream or a whole body, told by its
    content. None (unless buffered, i.e. the body is already whole): a body labelled
    JSON that is best buffered and restored whole at its end."""
    if api.streams is not None:
        cls = api.streams(path, content_type)
        if cls is not None:
            return cls(restorer)
    if not buffered and is_json_type(content_type):
        return None
    rule = api.response_rule
    return BodyStream(
        api.stream(restorer),
        lambda body: restore_body(body, rule, restorer),
        api.error_body,
        content_type,
    )


def restore_whole(api: Api, restorer: Restorer, body: bytes, content_type: str, path: str = "") -> bytes:
    """A whole upstream body (not streamed, or replayed), restored as the live path
    restores it. Raises what the core raises."""
    rev = reverser_for(api, restorer, content_type, path, buffered=True)
    assert rev is not None  # buffered: never None
    return rev.whole(body)
