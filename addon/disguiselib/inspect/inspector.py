"""Both sides of every LLM flow, the per-flow summary, and replay (adapter-level: imports
mitmproxy).

A flow the addon handled keeps, after it ends:
- `flow.request`: the request as it went upstream (masked) — mitmproxy's own;
- `flow.response`: the response as the client received it (restored); for a streamed
  response the body is set here from what the stream callable emitted, since
  mitmproxy 11 keeps none and 12 keeps one only with `store_streamed_bodies`;
- `flow.metadata["disguise"]`: the summary (api, per-rule counts, restored, stripped,
  how the flow ended, whether it failed closed) — small, counts only;
- `flow.metadata["disguise_sides"]`: the other two sides — the request as the client
  sent it and the response as upstream sent it (content-decoded) — each cut at
  `disguise_capture_limit` bytes with `cut: True` and its full `size` when longer.

Everything stored in metadata is bytes, str, int, bool, list or dict: mitmproxy writes
no flows at all (`-w`) when one value is not serializable.

The `Disguise` adapter (mitm/addon.py) calls the `Inspector` at fixed points; the
Inspector itself is also an addon (options, commands, contentviews).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mitmproxy import command, ctx, exceptions, http, io, types
from mitmproxy import flow as mflow
from mitmproxy.net import encoding

from ..errors import MaskError
from ..pipeline import restore_whole
from ..providers.masking import mask_request
from . import sseview
from .record import (
    CAPTURE_LIMIT,
    FAILED_MARK,
    META,
    SIDES,
    Tee,
    _sha,
    counts_text,
    is_credential,
    side,
    summary_text,
)

if TYPE_CHECKING:
    from ..core.rules import Restorer, Rules
    from ..providers.registry import Api

log = logging.getLogger("disguise")


def _safe(fallback_arg: int | None = None):
    """Per-flow methods never raise into the adapter's hooks: an exception there would
    stop the hook half-way (a request hook that stops early forwards the request as
    it is). On an internal error only its type is logged (its text could hold an
    original); the method returns None, or its argument number `fallback_arg` (tee
    returns the callable it was given)."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - see above
                log.error("disguise: inspection: internal error in %s (%s)", fn.__name__, type(e).__name__)
                log.debug("disguise: inspection", exc_info=True)
                return args[fallback_arg] if fallback_arg is not None else None

        return wrapper

    return deco


def _decode(raw: bytes, enc: str) -> tuple[bytes, bool]:
    """raw content-decoded (True) or as it came when it cannot be (False)."""
    if not enc or enc.strip().lower() == "identity":
        return raw, True
    try:
        out = encoding.decode(raw, enc)
    except ValueError:
        return raw, False
    return (out if isinstance(out, bytes) else out.encode()), True


class Inspector:
    """Keeps both sides of LLM flows, writes their summaries, handles replays; as an
    addon it adds the option, the commands and the contentviews."""

    def __init__(self, disguise=None) -> None:
        self.disguise = disguise  # the Disguise adapter, for its rules (commands)
        self.limit = CAPTURE_LIMIT
        self._replay_index: dict[str, dict] = {}  # sha256(client body) -> upstream side
        self._views: list = []

    # -- addon -------------------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option(
            "disguise_capture_limit", int, CAPTURE_LIMIT,
            "Bytes kept of each side of an LLM flow for inspection and replay: the request as "
            "the client sent it, the response as upstream sent it, a streamed response as the "
            "client received it. A side cut at the limit is marked. 0 keeps none.",
        )  # fmt: skip
        from . import views

        self._views = views.register()

    def done(self) -> None:
        from . import views

        views.unregister(self._views)
        self._views = []

    def configure(self, updated: set[str]) -> None:
        if "disguise_capture_limit" in updated:
            limit = ctx.options.disguise_capture_limit
            if limit < 0:
                raise exceptions.OptionsError(f"disguise_capture_limit: must be 0 or more, not {limit}")
            self.limit = limit
        if "server_replay" in updated:
            self._replay_index = {}
            paths = ctx.options.server_replay
            if paths:
                try:
                    flows = io.read_flows_from_paths(paths)
                except exceptions.FlowReadException as e:
                    raise exceptions.OptionsError(str(e)) from e
                self._replay_index = replay_index(flows)

    @command.command("disguise.audit")
    def audit_command(self, flows: Sequence[mflow.Flow]) -> str:
        """Audit flows: every original that went upstream, every disguise or issued
        placeholder the client received. Returns the report (no originals in it)."""
        from . import audit, flowfile

        rules = self._rules()
        report = audit.audit(flowfile.records(flows), rules)
        log.info("disguise.audit: %s", report.verdict())
        return report.text()

    @command.command("disguise.share")
    def share_command(self, flows: Sequence[mflow.Flow], path: types.Path) -> None:
        """Write a shareable copy of flows to path: only the provider side (masked
        requests, unrestored responses), credentials removed. Refuses to write a copy
        that does not pass the audit."""
        from . import flowfile

        rules = self._rules()
        try:
            n, dropped = flowfile.write_shared(flows, str(path), rules)
        except flowfile.ShareError as e:
            raise exceptions.CommandError(str(e)) from e
        log.info("disguise.share: %d flows written to %s, %d left out", n, path, dropped)

    def _rules(self) -> Rules:
        rules = getattr(self.disguise, "rules", None)
        if rules is None:
            raise exceptions.CommandError("disguise: no mappings loaded")
        return rules

    # -- per flow, called by the adapter -------------------------------------------------

    @_safe()
    def before_request(self, flow: http.HTTPFlow, rules: Rules | None, api: Api | None) -> bool:
        """At the start of the adapter's request hook. For a client replay of a flow
        captured with the addon, puts the client's original body back so that it is
        masked afresh. For an offline run (`-nr`) of a recorded flow, re-runs it (or
        reports a dry run). True when the flow is fully handled here; None (false) after
        an internal error, so the adapter masks the request as it is."""
        if api is None or rules is None:
            return False
        sides = flow.metadata.get(SIDES)
        if flow.response is None and flow.is_replay == "request" and isinstance(sides, dict):
            return self._client_replay(flow, api, sides)
        if flow.response is not None and not flow.live:
            self._offline(flow, rules, api, sides if isinstance(sides, dict) else None)
            return True
        return False

    @_safe()
    def masked(self, flow: http.HTTPFlow, api: Api, client_body: bytes, session) -> None:
        """After a request was masked (flow.request holds the masked body)."""
        meta = flow.metadata.setdefault(META, {})
        meta.update(api=api.name, masked=session.masked, counts=dict(session.counts),
                    placeholders=len(session.placeholders))  # fmt: skip
        for k in ("failed", "end", "restored", "stripped", "cut", "replay", "dry_run"):
            meta.pop(k, None)
        headers = [(k, "(not kept)" if is_credential(k) else v) for k, v in flow.request.headers.items(multi=True)
                   if k.lower() != "content-length"]  # fmt: skip
        sides = {
            "client_request": side(client_body[: self.limit], len(client_body), cut=len(client_body) > self.limit,
                                   headers=headers),  # fmt: skip
            "upstream_request_sha256": _sha(flow.request.raw_content),
        }
        flow.metadata[SIDES] = sides
        flow.comment = summary_text(meta)

    @_safe()
    def refused(self, flow: http.HTTPFlow, api: Api, reason: str, forwarded: bool = False) -> None:
        """A request that could not be masked: refused, or forwarded unchanged
        (disguise_fail_open)."""
        meta = flow.metadata.setdefault(META, {})
        meta.update(api=api.name, masked=0, counts={})
        if forwarded:
            meta["failed"] = f"forwarded UNMASKED (disguise_fail_open): {reason}"
        else:
            meta["failed"] = f"request refused: {reason}"
            meta["end"] = "refused"
        flow.metadata.pop(SIDES, None)
        flow.marked = FAILED_MARK
        flow.comment = summary_text(meta)

    @_safe()
    def failed(self, flow: http.HTTPFlow, reason: str) -> None:
        """The response could not be reversed; the client got an error instead."""
        meta = flow.metadata.setdefault(META, {})
        meta["failed"] = reason
        flow.marked = FAILED_MARK

    @_safe()
    def upstream_headers(self, flow: http.HTTPFlow) -> None:
        """In responseheaders, before the adapter changes any header."""
        resp = flow.response
        sides = flow.metadata.get(SIDES)
        if resp is None or not isinstance(sides, dict):
            return
        enc = resp.headers.get("content-encoding", "")
        sides["upstream_response"] = side(b"", 0, headers=resp.headers.items(multi=True),
                                          status=resp.status_code, encoding=enc)  # fmt: skip

    @_safe(fallback_arg=2)
    def tee(self, flow: http.HTTPFlow, stream_callable):
        """Wrap the adapter's stream callable to keep both sides of the stream."""
        if self.limit <= 0:
            return stream_callable
        return Tee(stream_callable, self.limit)

    @_safe()
    def before_restore(self, flow: http.HTTPFlow) -> None:
        """At the start of the adapter's response hook. Keeps the upstream side of a
        whole (non-streamed) body before it is restored. For a server-replayed
        response recorded with the addon, puts the recorded upstream body back so it
        is restored afresh with this flow's placeholders."""
        resp = flow.response
        sides = flow.metadata.get(SIDES)
        if resp is None or not isinstance(sides, dict) or resp.stream:
            return  # a streamed body is kept by the Tee
        if flow.is_replay == "response":
            up = self._replay_index.get(_sha(resp.raw_content))
            if up is not None:
                resp.headers.pop("content-encoding", None)
                resp.content = up["content"]
                flow.metadata.setdefault(META, {})["replay"] = "server replay: recorded upstream body restored afresh"
            else:
                flow.metadata.setdefault(META, {})["replay"] = "server replay: body served as recorded"
        body = resp.get_content(strict=False) or b""
        prev = sides.get("upstream_response") or {}
        sides["upstream_response"] = side(
            body[: self.limit], len(body), cut=len(body) > self.limit,
            headers=prev.get("headers", [[k, v] for k, v in resp.headers.items(multi=True)]),
            status=resp.status_code, encoding="",
        )  # fmt: skip

    @_safe()
    def finish(self, flow: http.HTTPFlow, api: Api, restorer: Restorer, stream=None, error: bool = False) -> None:
        """The flow ended (response or error hook): keep the streamed sides, write the
        summary, one info line with counts only."""
        meta = flow.metadata.setdefault(META, {})
        meta["api"] = api.name
        meta["restored"] = restorer.restored
        meta["stripped"] = restorer.stripped
        resp = flow.response
        cut = 0
        tee = resp.stream if resp is not None and isinstance(resp.stream, Tee) else None
        sides = flow.metadata.get(SIDES)
        if tee is not None:
            if isinstance(sides, dict):
                prev = sides.get("upstream_response") or {}
                enc = prev.get("encoding", "")
                up, decoded = _decode(bytes(tee.up.buf), enc) if not tee.up.cut else (bytes(tee.up.buf), not enc)
                sides["upstream_response"] = side(
                    up, tee.up.size, cut=tee.up.cut, headers=prev.get("headers"),
                    status=prev.get("status"), encoding="" if decoded else enc,
                )  # fmt: skip
                sides["client_response"] = {"size": tee.down.size, "cut": tee.down.cut}
            if not resp.raw_content:  # 11 keeps no streamed body, 12 only on request
                resp.raw_content = bytes(tee.down.buf)
            if tee.up.cut or tee.down.cut:
                cut = self.limit
            if tee.dead:
                meta.setdefault("failed", "stream could not be reversed: the client got an error event")
        if isinstance(sides, dict):
            cr = sides.get("client_request") or {}
            if cr.get("cut"):
                cut = self.limit
        if cut:
            meta["cut"] = cut
        final_sent = tee is not None and tee.final_sent
        if not error:
            meta["end"] = "completed"
        elif final_sent:
            meta["end"] = "complete: the client closed the connection after the final event"
        else:
            msg = flow.error.msg if flow.error is not None else "error"
            meta["end"] = f"ERROR: {msg}" + (" (stream ended before its final event)" if tee is not None else "")
        if meta.get("failed"):
            flow.marked = FAILED_MARK
        flow.comment = summary_text(meta)
        status = resp.status_code if resp is not None else "-"
        state = "" if meta["end"] == "completed" else (" complete" if final_sent else " error")
        fail = " FAILED CLOSED" if meta.get("failed") else ""
        log.info("disguise: %s %s%s%s: %s", api.name, status, fail, state, counts_text(meta))

    # -- replay ----------------------------------------------------------------------------

    def _client_replay(self, flow: http.HTTPFlow, api: Api, sides: dict) -> bool:
        cr = sides.get("client_request")
        if not isinstance(cr, dict):
            return False
        if _sha(flow.request.raw_content) != sides.get("upstream_request_sha256"):
            # edited in mitmweb since it was recorded: the edit is what the user wants sent
            log.info("disguise: replaying an edited request: masked as it is now")
            return False
        if cr.get("cut"):
            reason = "cannot replay: the client's request was cut at disguise_capture_limit when recorded"
            headers = {"content-type": "application/json", "x-disguise": "refused"}
            flow.response = http.Response.make(400, api.error_body(f"disguise: {reason}"), headers)
            self.refused(flow, api, reason)
            return True
        flow.request.content = cr["content"]
        return False

    def _offline(self, flow: http.HTTPFlow, rules: Rules, api: Api, sides: dict | None) -> None:
        meta = flow.metadata.get(META)
        if not isinstance(meta, dict):
            self._dry_run(flow, rules, api)
            return
        if sides is None:  # refused, or forwarded unmasked (fail open), when recorded
            self._rerun_failed(flow, rules, api, meta)
            return
        cr = sides.get("client_request")
        up = sides.get("upstream_response")
        if not isinstance(cr, dict) or not isinstance(up, dict) or cr.get("cut") or up.get("cut"):
            meta["replay"] = "not re-run: a side of this flow was not kept whole"
            flow.comment = summary_text(meta) + f"; {meta['replay']}"
            log.info("disguise: %s offline: %s", api.name, meta["replay"])
            return
        try:
            masked, session = mask_request(cr["content"], api, rules, flow.request.headers.get("content-type", ""))
        except MaskError as e:
            meta["replay"] = f"re-run: the request would now be refused ({e})"
            flow.comment = summary_text(meta) + f"; {meta['replay']}"
            log.info("disguise: %s offline: the request would now be refused", api.name)
            return
        restorer = rules.restorer(session.placeholders)
        ctype = flow.response.headers.get("content-type", "") if flow.response else ""
        try:
            client = restore_whole(api, restorer, up["content"], ctype, flow.request.path)
        except Exception as e:  # noqa: BLE001 - reported, never raised into mitmproxy
            meta["replay"] = f"re-run: the response could not be reversed ({type(e).__name__})"
            flow.comment = summary_text(meta) + f"; {meta['replay']}"
            return
        same_req = masked == (flow.request.get_content(strict=False) or b"")
        recorded = flow.response.get_content(strict=False) or b"" if flow.response else b""
        same_resp = client == recorded
        if not same_resp and sseview.looks_like_sse(client, ctype):
            same_resp = _channel_texts(client) == _channel_texts(recorded)
        if same_req and same_resp:
            verdict = "re-run offline: equals the live run"
        else:
            what = [w for w, same in (("request", same_req), ("response", same_resp)) if not same]
            verdict = "re-run offline: DIFFERS from the live run in the " + " and ".join(what)
        flow.request.content = masked
        if flow.response is not None and client != recorded:
            flow.response.content = client
        meta.update(masked=session.masked, counts=dict(session.counts), placeholders=len(session.placeholders),
                    restored=restorer.restored, stripped=restorer.stripped, replay=verdict)  # fmt: skip
        sides["upstream_request_sha256"] = _sha(flow.request.raw_content)
        flow.comment = summary_text(meta) + f"; {verdict}"
        log.info("disguise: %s %s: %s", api.name, verdict, counts_text(meta))

    def _rerun_failed(self, flow: http.HTTPFlow, rules: Rules, api: Api, meta: dict) -> None:
        try:
            mask_request(flow.request.get_content(strict=True) or b"", api, rules,
                         flow.request.headers.get("content-type", ""))  # fmt: skip
        except (MaskError, ValueError):
            verdict = "re-run offline: the request still cannot be masked, as in the live run"
        else:
            verdict = "re-run offline: DIFFERS from the live run: the request would now be masked"
        meta["replay"] = verdict
        flow.comment = summary_text(meta) + f"; {verdict}"
        log.info("disguise: %s %s", api.name, verdict)

    def _dry_run(self, flow: http.HTTPFlow, rules: Rules, api: Api) -> None:
        """A flow recorded without the addon: what it would have masked and restored;
        the flow itself is left as recorded."""
        meta: dict[str, Any] = {"api": api.name, "dry_run": True}
        try:
            body = flow.request.get_content(strict=True) or b""
            _, session = mask_request(body, api, rules, flow.request.headers.get("content-type", ""))
        except (MaskError, ValueError) as e:
            reason = str(e) if isinstance(e, MaskError) else "cannot decode the request body"
            meta.update(masked=0, counts={}, failed=f"would refuse the request: {reason}")
            flow.metadata[META] = meta
            flow.comment = "disguise dry run (recorded without the addon): " + summary_text(meta)
            log.info("disguise: %s dry run: the request would be refused", api.name)
            return
        meta.update(masked=session.masked, counts=dict(session.counts), placeholders=len(session.placeholders))
        restorer = rules.restorer(session.placeholders)
        if flow.response is not None:
            body = flow.response.get_content(strict=False) or b""
            try:
                restore_whole(api, restorer, body, flow.response.headers.get("content-type", ""), flow.request.path)
            except Exception:  # noqa: BLE001 - a dry run reports, never raises
                pass
        meta.update(restored=restorer.restored, stripped=restorer.stripped)
        flow.metadata[META] = meta
        flow.comment = f"disguise dry run (recorded without the addon): {counts_text(meta)}"
        log.info("disguise: %s dry run (recorded without the addon): %s", api.name, counts_text(meta))


def _channel_texts(body: bytes) -> dict[str, str]:
    return {k: c.text for k, c in sseview.parse_stream(body).channels.items()}


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
