"""Replay (adapter-level): a recorded flow run again, through the same pipeline as a live
one. Nothing here masks or picks a reverser by itself: pipeline.mask_request and
pipeline.restore_whole do, exactly as for live traffic.

- Client replay (`mitmdump -C flows -s addon/disguise.py`): the client's own request,
  kept in the flow's metadata, is put back and masked afresh on its way out.
- Offline re-run (`mitmdump -nr flows -s addon/disguise.py`): the client's request is
  masked and the recorded upstream response restored, offline; the flow says whether
  that equals what happened live. A flow recorded without the addon gets a dry run.
- Server replay (`-S`): the Inspector puts the recorded upstream body back
  (Inspector.before_restore) and the adapter restores it afresh.

Replay never sends an original the recording masked: a flow records which rules masked
something in it (`fingerprint`); a replay under rules that lack one of them is refused,
naming what is missing, unless `disguise_replay_current_rules` is set.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mitmproxy import ctx, http
from mitmproxy import flow as mflow

from .. import pipeline
from ..errors import MaskError, StreamError
from ..leakguard import place
from ..rules.rules import LITERALS, Rules, Session
from ..state import Kind
from . import sseview
from .record import (
    FAILED_MARK,
    META,
    REFUSED_HEADERS,
    SIDES,
    _sha,
    content,
    counts_text,
    decoded_limit,
    destination,
    is_refused,
    mark_refused,
    set_fakes,
    summary_text,
)

if TYPE_CHECKING:
    from ..apis.registry import Api
    from ..config import Config

log = logging.getLogger("disguise")


# -- which rules masked a flow ------------------------------------------------------------


def _literal_id(original: str) -> str:
    # A literal is named by a hash of its original: a flow file must be able to say
    # which literal is missing without a second copy of the original in clear.
    return hashlib.sha256(b"disguise literal\0" + original.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def fingerprint(session: Session, rules: Rules | None = None) -> dict[str, list[str]]:
    """The rules that masked something in a request: pattern names, literal ids (each
    hashed once per rule set it belongs to: a Claude Code body replaces hundreds of
    literals at every turn)."""
    literals = _sorted_ids(session.literals, rules) if rules is not None else sorted(map(_literal_id, session.literals))
    return {"patterns": sorted(k for k in session.counts if k != LITERALS), "literals": literals}


# A conversation's next turn masks the literals of the turn before and those of its new
# messages (turns.py): its ids, sorted, are the turn before's with the new ones merged in,
# not hundreds of ids looked up and sorted again on the event loop (0.3 ms a Claude Code
# turn). The last _RECENT requests' literals and ids are kept per rule set.
_RECENT = 4


@functools.lru_cache(maxsize=4)
def _recent(rules: Rules) -> list[tuple[frozenset[str], tuple[str, ...]]]:
    return []


def _sorted_ids(literals: set[str], rules: Rules) -> list[str]:
    """The _literal_id of each of literals, sorted: from the largest set of a recent
    request's literals they hold, where there is one (looked at largest first, so that
    the first held is it: a next turn's, the turn before's); the same set again is that
    request's ids as they are."""
    if not literals:
        return []
    ids, recent = _literal_ids(rules), _recent(rules)
    n = len(literals)
    base = next(
        (seen for seen in sorted(recent, key=_size, reverse=True) if len(seen[0]) <= n and seen[0] <= literals), None
    )
    if base is not None and len(base[0]) == len(literals):  # the same literals: nothing new
        recent[:] = [base, *(seen for seen in recent if seen is not base)]  # (the newest now)
        return list(base[1])
    if base is None:
        out = sorted(_id_in(ids, o) for o in literals)
    else:  # (one sorted run and the new ones: a merge)
        out = sorted([*base[1], *(_id_in(ids, o) for o in literals - base[0])])
    recent.insert(0, (frozenset(literals), tuple(out)))
    del recent[_RECENT:]
    return out


def _size(seen: tuple[frozenset[str], tuple[str, ...]]) -> int:
    return len(seen[0])


@functools.lru_cache(maxsize=4)
def _literal_ids(rules: Rules) -> dict[str, str]:
    """original -> _literal_id of the literals of a rule set met so far (filled as they
    are: no hash of every literal on the event loop at the first request after a load)."""
    return {}


def _id_in(ids: dict[str, str], original: str) -> str:
    """original's _literal_id, from ids (one of _literal_ids) or made once into it."""
    i = ids.get(original)
    if i is None:
        i = ids[original] = _literal_id(original)
    return i


@functools.lru_cache(maxsize=4)
def _in_force(rules: Rules) -> tuple[frozenset[str], frozenset[str]]:
    ms = rules.mappings
    ids = _literal_ids(rules)  # (the ids fingerprint made for this rule set, and it reads these)
    return frozenset(p.name for p in ms.patterns), frozenset(_id_in(ids, lit.original) for lit in ms.literals)


def missing_rules(meta: object, rules: Rules) -> str | None:
    """What the rules in force lack of those that masked a recorded flow, in words; None
    when nothing is missing (or the user chose to replay with the current rules)."""
    if getattr(ctx.options, "disguise_replay_current_rules", False):
        return None
    rec = meta.get("rules") if isinstance(meta, dict) else None
    if not isinstance(rec, dict):
        return "the recording does not say which rules masked it (recorded by an older disguise)"
    return rules_gone(rec, rules)


def rules_gone(rec: dict, rules: Rules) -> str | None:
    """What rules lacks of those a flow's summary says masked it (fingerprint), in words;
    None when nothing is missing."""
    patterns, literals = _in_force(rules)
    gone_p = sorted(set(rec.get("patterns") or ()) - patterns)
    gone_l = set(rec.get("literals") or ()) - literals
    if not gone_p and not gone_l:
        return None
    what = []
    if gone_p:
        what.append("pattern " + ", ".join(gone_p))
    if gone_l:
        what.append(f"{len(gone_l)} literal{'s' if len(gone_l) != 1 else ''}")
    return f"rules that masked the recording are not in force: {' and '.join(what)}"


def _advice(why: str) -> str:
    return f"{why}; load the recording's mappings, or set disguise_replay_current_rules to replay with these"


# -- client replay --------------------------------------------------------------------------


def client_replay(flow: http.HTTPFlow, api: Api, inspector: Any) -> bool:
    """At the start of the request hook, for a client replay of a flow captured with
    the addon: put the client's own body back, to be masked afresh. True when the flow
    was answered here instead (refused: flow.response is set). An internal error here
    leaves the request as it is, to be masked as it is (it never stops masking)."""
    try:
        return _client_replay(flow, api, inspector)
    except Exception as e:  # noqa: BLE001 - see above
        log.error("disguise: client replay: internal error (%s)", type(e).__name__)
        log.debug("disguise: client replay", exc_info=True)
        return False


def _client_replay(flow: http.HTTPFlow, api: Api, inspector: Any) -> bool:
    sides = flow.metadata.get(SIDES)
    if flow.response is not None or flow.is_replay != "request" or not isinstance(sides, dict):
        return False
    cr = sides.get("client_request")
    if not isinstance(cr, dict):
        return False
    if _sha(flow.request.raw_content) != sides.get("upstream_request_sha256"):
        # edited in mitmweb since it was recorded: the edit is what the user wants sent
        log.info("disguise: replaying an edited request: masked as it is now")
        return False
    reason = None
    if cr.get("cut"):
        reason = "cannot replay: the client's request was cut at disguise_capture_limit when recorded"
    else:
        rules = inspector.disguise.rules if inspector.disguise is not None else None
        missing = missing_rules(flow.metadata.get(META), rules) if rules is not None else "no rules are loaded"
        if missing is not None:
            reason = "cannot replay: " + _advice(missing)
    if reason is not None:
        log.warning("disguise: %s", reason)
        flow.response = http.Response.make(400, api.error_body(f"disguise: {reason}"), REFUSED_HEADERS)
        mark_refused(flow, reason, api.name)
        return True
    flow.request.content = cr["content"]
    return False


# -- offline re-run -----------------------------------------------------------------------


def offline(flow: http.HTTPFlow, cfg: Config | None, classify: Callable, limit: int) -> None:
    """`mitmdump -nr` of a recorded flow: re-run it through the pipeline (or dry-run one
    recorded without the addon); nothing leaves. Never raises into mitmproxy."""
    if cfg is None:
        return
    kind, api = classify(flow, cfg)
    if is_refused(flow) and not (kind is Kind.API and isinstance(flow.metadata.get(META), dict)):
        # refused when recorded (an unknown endpoint's, the Guard's: no summary of an
        # API's refusal to re-run): it is shown as refused, never as a flow to dry-run
        meta = flow.metadata.get(META)
        why = meta.get("failed") if isinstance(meta, dict) and meta.get("failed") else flow.comment
        mark_refused(flow, why or "refused when recorded", meta.get("api") if isinstance(meta, dict) else None)
        return
    if kind is Kind.WEBSOCKET:
        why = "not re-run offline: WebSocket flows are not replayed"
        log.info("disguise: %s: %s", place(flow.request.method, flow.request.path, cfg.rules), why)
        meta = flow.metadata.get(META)
        if isinstance(meta, dict):
            meta["replay"] = why
            flow.comment = summary_text(meta) + f"; {why}"
        return
    if kind is not Kind.API or api is None:
        return
    try:
        meta = flow.metadata.get(META)
        sides = flow.metadata.get(SIDES)
        if not isinstance(meta, dict):
            _dry_run(flow, cfg, api)
        elif not isinstance(sides, dict):  # refused, or forwarded unmasked (fail open), when recorded
            _rerun_failed(flow, cfg, api, meta)
        else:
            _rerun(flow, cfg, api, meta, sides)
    except Exception as e:  # noqa: BLE001 - a report, never a crash of the hook
        log.error("disguise: offline re-run: internal error (%s)", type(e).__name__)
        log.debug("disguise: offline re-run", exc_info=True)


def _verdict(flow: http.HTTPFlow, api: Api, meta: dict, verdict: str, logged: bool = True) -> None:
    meta["replay"] = verdict
    flow.comment = summary_text(meta) + f"; {verdict}"
    if logged:
        log.info("disguise: %s offline: %s", api.name, verdict)


def _rerun(flow: http.HTTPFlow, cfg: Config, api: Api, meta: dict, sides: dict) -> None:
    cr = sides.get("client_request")
    up = sides.get("upstream_response")
    if not isinstance(cr, dict) or not isinstance(up, dict) or cr.get("cut") or up.get("cut"):
        _verdict(flow, api, meta, "not re-run: a side of this flow was not kept whole")
        return
    missing = missing_rules(meta, cfg.rules)
    if missing is not None:
        flow.marked = FAILED_MARK
        _verdict(flow, api, meta, "re-run refused: " + _advice(missing))
        return
    r = flow.request
    masked = pipeline.mask_request(api, cr["content"], cfg, r.path, r.headers.items(multi=True), destination(flow))
    if isinstance(masked, pipeline.NotOurs):
        _verdict(flow, api, meta, "not re-run: a body its route does not transform (scanned as an unknown endpoint)")
        return
    if isinstance(masked, pipeline.Refused):
        _verdict(flow, api, meta, f"re-run: the request would now be refused ({masked.reason})")
        return
    restorer = masked.restorer(cfg.rules)
    ctype = flow.response.headers.get("content-type", "") if flow.response else ""
    try:
        client = pipeline.restore_whole(
            api, restorer, up["content"], ctype, r.path, encoding=up.get("encoding", ""), limit=decoded_limit()
        )
    except StreamError as e:  # a recorded bomb meets disguise_decoded_limit: said so
        _verdict(flow, api, meta, f"re-run: the response could not be reversed ({e})")
        return
    except Exception as e:  # noqa: BLE001 - reported, never raised into mitmproxy
        _verdict(flow, api, meta, f"re-run: the response could not be reversed ({type(e).__name__})")
        return
    try:  # bounded: mitmproxy's get_content expands a recorded bomb whole
        # the recorded headers are the ones that left: masking changing one is a difference
        same_req = masked.body == content(r, strict=False) and not masked.headers
        recorded = content(flow.response, strict=False) if flow.response else b""
    except MaskError as e:
        _verdict(flow, api, meta, f"re-run: {e}")
        return
    same_resp = client == recorded
    if not same_resp and sseview.looks_like_sse(client, ctype):
        same_resp = _channel_texts(client) == _channel_texts(recorded)
    if same_req and same_resp:
        verdict = "re-run offline: equals the live run"
    else:
        what = [w for w, same in (("request", same_req), ("response", same_resp)) if not same]
        verdict = "re-run offline: DIFFERS from the live run in the " + " and ".join(what)
    r.content = masked.body
    for name, values in masked.headers:  # as the live run sets them (mitm/outcome.set_headers)
        r.headers.set_all(name, list(values))
    if flow.response is not None and client != recorded:
        flow.response.content = client
    session = masked.session
    meta.update(masked=session.masked, counts=dict(session.counts), placeholders=len(session.placeholders),
                restored=restorer.restored, stripped=restorer.stripped,
                rules=fingerprint(session, cfg.rules))  # fmt: skip
    set_fakes(meta, session)
    sides["upstream_request_sha256"] = _sha(r.raw_content)
    _verdict(flow, api, meta, verdict, logged=False)
    log.info("disguise: %s %s: %s", api.name, verdict, counts_text(meta))


def _rerun_failed(flow: http.HTTPFlow, cfg: Config, api: Api, meta: dict) -> None:
    r = flow.request
    try:
        body = content(r)
    except MaskError:  # cannot be decoded within disguise_decoded_limit
        masked = False
    else:
        again = pipeline.mask_request(api, body, cfg, r.path, r.headers.items(multi=True), destination(flow))
        masked = isinstance(again, pipeline.Masked)
    if masked:
        verdict = "re-run offline: DIFFERS from the live run: the request would now be masked"
    else:
        verdict = "re-run offline: the request still cannot be masked, as in the live run"
    flow.marked = FAILED_MARK  # refused, or forwarded unmasked, when recorded
    _verdict(flow, api, meta, verdict)


def _dry_run(flow: http.HTTPFlow, cfg: Config, api: Api) -> None:
    """A flow recorded without the addon: what it would have masked and restored;
    the flow itself is left as recorded."""
    meta: dict[str, Any] = {"api": api.name, "dry_run": True}
    r = flow.request
    try:
        masked = pipeline.mask_request(api, content(r), cfg, r.path, r.headers.items(multi=True), destination(flow))
    except MaskError as e:  # cannot be decoded within disguise_decoded_limit
        masked = pipeline.Refused(str(e))
    if not isinstance(masked, pipeline.Masked):
        reason = masked.reason
        if isinstance(masked, pipeline.NotOurs):
            reason = f"not transformed ({reason}): scanned as an unknown endpoint"
        meta.update(masked=0, counts={}, failed=f"would refuse the request: {reason}")
        flow.metadata[META] = meta
        flow.comment = "disguise dry run (recorded without the addon): " + summary_text(meta)
        log.info("disguise: %s dry run: the request would be refused", api.name)
        return
    session = masked.session
    meta.update(masked=session.masked, counts=dict(session.counts), placeholders=len(session.placeholders))
    set_fakes(meta, session)
    restorer = masked.restorer(cfg.rules)
    if flow.response is not None:
        try:
            body = content(flow.response, strict=False)
            pipeline.restore_whole(api, restorer, body, flow.response.headers.get("content-type", ""), r.path)
        except Exception:  # noqa: BLE001 - a dry run reports, never raises
            pass
    meta.update(restored=restorer.restored, stripped=restorer.stripped)
    flow.metadata[META] = meta
    flow.comment = f"disguise dry run (recorded without the addon): {counts_text(meta)}"
    log.info("disguise: %s dry run (recorded without the addon): %s", api.name, counts_text(meta))


def _channel_texts(body: bytes) -> dict[str, str]:
    return {k: c.text for k, c in sseview.parse_stream(body).channels.items()}


# -- server replay --------------------------------------------------------------------------


def replay_index(flows: Iterable[mflow.Flow]) -> dict[str, dict]:
    """For server replay: what the client received (as recorded) -> what upstream sent,
    for every flow recorded with the addon whose upstream side was kept whole."""
    out: dict[str, dict] = {}
    for f in flows:
        if not isinstance(f, http.HTTPFlow) or f.response is None:
            continue
        sides = f.metadata.get(SIDES)
        up = sides.get("upstream_response") if isinstance(sides, dict) else None
        if isinstance(up, dict) and not up.get("cut") and not up.get("encoding"):
            out[_sha(f.response.raw_content)] = up
    return out
