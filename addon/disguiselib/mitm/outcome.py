"""What the pipeline said of a request, applied to its flow (adapter-level): the one place
a `pipeline.Verdict` becomes a flow's state, for a body masked in the request hook and a
body mitmproxy would have streamed (taken whole, streamed.py) alike; client replay goes
through the request hook too.

- Masked: the record keeps the session and restorer, the request the masked body and
  the masked values of the headers its API declares (MASKED).
- Refused: forwarded unchanged when it may fail open and the user set
  disguise_fail_open (PASSED), else refused: answered with an error in the provider's
  shape; a streamed body raises instead (callables.Buffered): nothing of the request
  leaves and the request hook answers it (its headers held back: mitm/bodyhook.py), or,
  where its headers already left, it is sent empty and upstream's answer replaced.
- NotOurs: the request is an unknown endpoint's (scanned; `unknown`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mitmproxy import ctx, http

from .. import pipeline
from ..errors import MaskError
from ..pipeline import Masked, NotOurs, Refusal, Refused
from ..state import FlowRecord, Kind, Passed, Phase
from .flows import leaving, refuse, target

log = logging.getLogger("disguise")


def keep(rec: FlowRecord, client_body: bytes, masked: Masked) -> None:
    """What restoring the response needs of a masked request."""
    assert rec.config is not None
    rec.session = masked.session
    rec.turn_cut = masked.cut
    cuts = getattr(masked.turn, "cuts", ())  # (turns.Turn: where its next turn may continue it)
    rec.digest_hint = (tuple(c.masked for c in cuts), masked.shared[:2] if masked.shared else None)
    rec.capture_hint = masked.shared[2:] if masked.shared else None  # (the client's side: record._match)
    rec.restorer = masked.restorer(rec.config.rules)
    rec.client_body = client_body


def apply(
    flow: http.HTTPFlow,
    rec: FlowRecord,
    client_body: bytes,
    result: pipeline.Verdict,
    unknown: Callable[[], bytes | None],
    streamed: bool = False,
    encoded: bytes | None = None,
) -> bytes | None:
    """Apply result to flow and its record. Returns the body to send upstream (None:
    the request's own, or none: it was answered here). streamed: the body was taken
    whole from mitmproxy's stream: a refusal raises (the DisguiseError it stands for),
    for callables.Buffered to send nothing and the adapter to replace the answer.
    encoded: what leaves of the body content-encoded as the request says, done off the loop
    (flows.encoded_again; on the loop, a body masking left unchanged: flows.leaving)."""
    if isinstance(result, NotOurs):  # not what its route transforms: an unknown endpoint's
        rec.kind, rec.api = Kind.UNKNOWN, None
        return unknown()
    if isinstance(result, Refused):
        return _refused(flow, rec, result, streamed)
    if streamed and result.headers:  # masked before the body (streamed.mask_headers), and maybe sent
        why = "its headers were masked before its body and masking the body changed them"
        return _refused(flow, rec, Refused(why, Refusal.NEVER), streamed)
    if not streamed:
        enc = flow.request.headers.get("content-encoding", "")
        try:  # unchanged, its container made again where it carries more than what was checked
            if encoded is None and result.body is client_body and enc:
                encoded = leaving(flow.request.raw_content or b"", client_body, enc)
        except MaskError as e:
            return _refused(flow, rec, Refused(str(e)), streamed)
    keep(rec, client_body, result)
    if not streamed:
        if encoded is not None:
            set_raw(flow.request, encoded)
        elif result.body is not client_body:
            flow.request.content = result.body  # content-encoded here, on the loop
        # Ask for an uncompressed answer: the stream callable sees bytes before
        # content decoding (pipeline.decoded handles an upstream that ignores this).
        flow.request.anticomp()
        rec.checked_body = flow.request.raw_content
    rec.to(Phase.MASKED)  # (its observers keep the client's side: its own headers)
    set_headers(flow.request, result.headers)
    # its observers (the Inspector's capture) kept what they keep of it: the record holds no
    # copy of the client's request for the rest of the flow (a stream's whole life)
    rec.client_body = None
    return result.body


def set_headers(r: http.Request, headers: pipeline.MaskedHeaders) -> None:
    """The masked values of the headers an API declares (pipeline.mask_headers) set on
    the request, each in its place."""
    for name, values in headers:
        r.headers.set_all(name, list(values))


def set_raw(msg: http.Message, raw: bytes) -> None:
    """msg's body set to raw, already content-encoded: what mitmproxy's content setter
    does after encoding (Message.set_content)."""
    msg.raw_content = raw
    if "transfer-encoding" not in msg.headers:
        msg.headers["content-length"] = str(len(raw))


def _refused(flow: http.HTTPFlow, rec: FlowRecord, result: Refused, streamed: bool) -> bytes | None:
    leak = result.refusal is Refusal.LEAK
    msg = f"disguise: request refused by the leak guard: {result.reason}" if leak else (
        f"disguise: request not masked: {result.reason}")  # fmt: skip
    if result.may_fail_open and ctx.options.disguise_fail_open:
        log.warning("%s (forwarded unchanged: disguise_fail_open)", msg)
        rec.passed = Passed.FAIL_OPEN  # what the user asked for: the Guard lets it pass
        rec.target = target(flow)
        rec.to(Phase.PASSED, result.reason)
        return None
    if streamed:
        raise result.error()  # logged and answered by the adapter (Disguise._request)
    if leak:
        log.error(msg)
    else:
        log.warning("%s (refused)", msg)
    refuse(flow, msg, 400, None if leak else rec.api, rules=rec.config.rules if rec.config is not None else None)
    if rec.can(Phase.REFUSED):
        rec.to(Phase.REFUSED, msg.removeprefix("disguise: "))
    return None
