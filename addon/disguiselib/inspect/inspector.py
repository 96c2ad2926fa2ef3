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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mitmproxy import command, ctx, exceptions, http, io, types
from mitmproxy import flow as mflow

from ..config import CAPTURE_LIMIT, OPTIONS, refused_value
from ..errors import StreamError
from ..state import Kind, Passed, Phase
from ..wire.decoding import decode_whole
from . import held, replay
from .record import (
    FAILED_MARK,
    FORWARDED,
    FORWARDED_TEXT,
    META,
    REQUEST_NOT_KEPT,
    SIDES,
    Digest,
    Side,
    Tee,
    _Chunks,
    _sha,
    compress_held,
    counts_text,
    digest_later,
    keep_only,
    mark_refused,
    marker,
    pairs,
    remembered,
    set_fakes,
    side,
    summary_text,
)

if TYPE_CHECKING:
    from ..rules.rules import Rules
    from ..state import FlowRecord

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


def _remembered(rec: FlowRecord) -> Callable[[bytes], bool]:
    """Is a body the very object the flow's rule set remembers its request by (turns.py)?
    The capture may keep a reference to it then (record._Recent), holding no byte more."""
    return remembered(rec.config.rules if rec.config is not None else None)


def _decode(raw: bytes, enc: str, limit: int) -> tuple[bytes, bool]:
    """raw content-decoded (True) or as it came when it cannot be, or would expand past
    `limit` bytes (False): a kept side is never a decompression bomb's output."""
    try:
        return decode_whole(raw, enc, limit), True
    except StreamError:
        return raw, False


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
        for o in OPTIONS:
            if o.name == "disguise_capture_limit":
                loader.add_option(o.name, o.type, o.default, o.help)
        from . import views

        self._views = views.register(lambda: getattr(self.disguise, "rules", None))

    def done(self) -> None:
        from . import views

        views.unregister(self._views)
        self._views = []

    def configure(self, updated: set[str]) -> None:
        if "disguise_capture_limit" in updated:
            limit = ctx.options.disguise_capture_limit
            why = refused_value("disguise_capture_limit", limit)
            if why is not None:
                raise exceptions.OptionsError(why)
            self.limit = limit
        if "server_replay" in updated:
            self._replay_index = {}
            paths = ctx.options.server_replay
            if paths:
                try:
                    flows = io.read_flows_from_paths(paths)
                except exceptions.FlowReadException as e:
                    raise exceptions.OptionsError(str(e)) from e
                self._replay_index = replay.replay_index(flows)

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
            n, dropped, removed = flowfile.write_shared(flows, str(path), rules)
        except flowfile.ShareError as e:
            raise exceptions.CommandError(str(e)) from e
        log.info("disguise.share: %d flows written to %s, %s", n, path, flowfile.left_out_text(dropped))
        if removed:
            log.info("disguise.share: %s", flowfile.replay_note(removed))

    def _rules(self) -> Rules:
        rules = getattr(self.disguise, "rules", None)
        if rules is None:
            raise exceptions.CommandError("disguise: no mappings loaded")
        return rules

    # -- per flow: the adapter's FlowRecord ------------------------------------------------

    def observer(self, flow: http.HTTPFlow) -> Callable[[FlowRecord], None]:
        """What a flow's record calls after each transition (state.py)."""
        return lambda rec: self.observe(flow, rec)

    @_safe()
    def observe(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        """One transition of a flow's record, as it happens: what is kept and what the
        summary says follows its phase."""
        phase = rec.phase
        if phase is not Phase.MASKED and rec.capture_later:  # the request left (or never will): compressed now
            compress_held(rec.capture_later, _remembered(rec))
        if phase is not Phase.MASKED:  # its hash too (digest.Digest)
            digest_later(flow.metadata.get(SIDES))
        if phase is Phase.MASKED:
            self._masked(flow, rec)
            keep_only(_remembered(rec))  # (after its side compared itself with them: record._match)
        elif phase is Phase.REFUSED:
            api = rec.api.name if rec.api is not None else None
            if api is None and rec.kind is Kind.WEBSOCKET:
                api = "websocket"
            mark_refused(flow, rec.reason or "refused", api)
        elif phase is Phase.PASSED and rec.passed is Passed.FAIL_OPEN:
            self._forwarded(flow, rec, rec.reason or "not masked")
        elif phase is Phase.PASSED and rec.passed is Passed.SCANNED and rec.reason:
            # an original let through to an endpoint disguise does not transform: seen in the list
            flow.metadata[FORWARDED] = rec.reason
            flow.marked = FAILED_MARK
            flow.comment = f"{FORWARDED_TEXT}: {rec.reason}"
        elif phase in (Phase.STREAMING, Phase.RECEIVING):
            self._upstream_headers(flow)  # before the adapter changes any header
        elif phase is Phase.FAILED:
            meta = flow.metadata.setdefault(META, {})
            meta["failed"] = rec.reason or "response not restored"
            flow.marked = FAILED_MARK

    def _masked(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        """After a request was masked (flow.request holds the masked body)."""
        session, client_body = rec.session, rec.client_body or b""
        size = len(client_body) if rec.client_size is None else rec.client_size  # only its first bytes kept (Spooled)
        assert session is not None and rec.api is not None  # MASKED: set by the adapter
        meta = flow.metadata.setdefault(META, {})
        rules = rec.config.rules if rec.config is not None else None
        meta.update(api=rec.api.name, masked=session.masked, counts=dict(session.counts),
                    placeholders=len(session.placeholders), rules=replay.fingerprint(session, rules))  # fmt: skip
        set_fakes(meta, session)
        for k in ("failed", "end", "restored", "stripped", "cut", "replay", "dry_run", "turn"):
            meta.pop(k, None)
        if rec.turn_cut:  # (turns.py: its new messages read, the rest the turn before's masked bytes)
            meta["turn"] = "cut from the turn before"
        headers = pairs(flow.request.headers.fields, drop=b"content-length", hide=True)
        sides = Side(
            client_request=side(client_body[: self.limit], size, cut=size > min(len(client_body), self.limit),
                                headers=headers, later=rec.capture_later, like=rec.capture_hint),  # fmt: skip
            # made once the request has left (from the turn before's, a next turn's)
            upstream_request_sha256=Digest(flow.request.raw_content, *rec.digest_hint),
        )
        flow.metadata[SIDES] = sides
        flow.comment = summary_text(meta)
        flow.marked = marker(meta) or flow.marked

    @_safe()
    def request(self, flow: http.HTTPFlow) -> None:
        """A request body mitmproxy streamed (stream_large_bodies; a chunked or large one fed
        to the masking worker) has left: mitmproxy keeps none of it, so the flow gets what
        left upstream as noted by the stream callable (mitm/callables.Buffered.sent), when
        it is at most disguise_capture_limit bytes; a larger one is marked not kept
        (REQUEST_NOT_KEPT), so that the audit says it could not read it rather than
        finding nothing in it. Whatever the endpoint: forwarded unmasked or unknown too."""
        stream = flow.request.stream
        size = getattr(stream, "sent_size", None)
        if not isinstance(size, int) or flow.response is not None:
            return
        sent = stream.sent  # type: ignore[union-attr]
        stream.sent, stream.sent_size = None, None  # type: ignore[union-attr]
        if sent is None:
            flow.metadata[REQUEST_NOT_KEPT] = size
            return
        flow.request.raw_content = sent
        sides = flow.metadata.get(SIDES)
        if isinstance(sides, Side):  # (the request has left: made now, in the background)
            sides["upstream_request_sha256"] = d = Digest(sent)
            d.later()
        elif isinstance(sides, dict):  # another addon's: plain values only
            sides["upstream_request_sha256"] = _sha(sent)

    def _forwarded(self, flow: http.HTTPFlow, rec: FlowRecord, reason: str) -> None:
        """A request that could not be masked, forwarded unchanged (disguise_fail_open)."""
        meta = flow.metadata.setdefault(META, {})
        assert rec.api is not None  # fail-open: an API's request
        meta.update(api=rec.api.name, masked=0, counts={})
        meta["failed"] = f"forwarded UNMASKED (disguise_fail_open): {reason}"
        flow.metadata.pop(SIDES, None)
        flow.marked = FAILED_MARK
        flow.comment = summary_text(meta)

    def _upstream_headers(self, flow: http.HTTPFlow) -> None:
        resp = flow.response
        sides = flow.metadata.get(SIDES)
        if resp is None or not isinstance(sides, dict):
            return
        enc = resp.headers.get("content-encoding", "")
        sides["upstream_response"] = side(b"", 0, headers=pairs(resp.headers.fields),
                                          status=resp.status_code, encoding=enc)  # fmt: skip

    @_safe(fallback_arg=2)
    def tee(self, flow: http.HTTPFlow, stream_callable):
        """Wrap the adapter's stream callable to keep both sides of the stream."""
        if self.limit <= 0:
            return stream_callable
        return Tee(stream_callable, self.limit)

    @_safe()
    def before_restore(self, flow: http.HTTPFlow) -> None:
        """Before the adapter restores a whole (non-streamed) body: a server-replayed
        response recorded with the addon gets its recorded upstream body back, so that it
        is restored afresh with this flow's placeholders."""
        resp = flow.response
        sides = flow.metadata.get(SIDES)
        if resp is None or not isinstance(sides, dict) or flow.is_replay != "response":
            return
        up = self._replay_index.get(_sha(resp.raw_content))
        if up is not None:
            resp.headers.pop("content-encoding", None)
            resp.content = up["content"]
            flow.metadata.setdefault(META, {})["replay"] = "server replay: recorded upstream body restored afresh"
        else:
            flow.metadata.setdefault(META, {})["replay"] = "server replay: body served as recorded"

    @_safe()
    def finish(self, flow: http.HTTPFlow, rec: FlowRecord, error: bool = False) -> None:
        """The flow ended (response or error hook): keep the sides, write the summary,
        one info line with counts only."""
        compress_held(rec.capture_later, _remembered(rec))  # (no response came: held until now)
        digest_later(flow.metadata.get(SIDES))
        meta = flow.metadata.setdefault(META, {})
        assert rec.api is not None and rec.restorer is not None  # called for a record with a restorer
        meta["api"] = rec.api.name
        meta["restored"] = rec.restorer.restored
        meta["stripped"] = rec.restorer.stripped
        if rec.reverser is not None:
            meta["events"] = rec.reverser.events_in
            meta["events_changed"] = rec.reverser.events_changed
        resp = flow.response
        cut = 0
        stream = getattr(resp.stream, "first", resp.stream) if resp is not None else None  # under another addon's
        tee = stream if isinstance(stream, Tee) else None
        assert tee is None or resp is not None
        sides = flow.metadata.get(SIDES)
        if isinstance(sides, dict) and rec.upstream_body is not None and resp is not None:
            body = rec.upstream_body
            prev = sides.get("upstream_response") or {}
            sides["upstream_response"] = side(
                body[: self.limit], len(body), cut=len(body) > self.limit,
                headers=dict.get(prev, "headers") if "headers" in prev else pairs(resp.headers.fields),
                status=prev.get("status", resp.status_code), encoding="",
            )  # fmt: skip
        if tee is not None and not tee.released:
            # what the client got, for the flow itself (11 keeps no streamed body, 12 only on
            # request), held compressed as the Tee kept it (held.py): the upstream copy
            # itself when nothing changed
            down = tee.down.zipped() if resp is not None and not resp.raw_content else None
            if isinstance(sides, dict):
                prev = sides.get("upstream_response") or {}
                enc = prev.get("encoding", "")
                up: bytes | _Chunks
                if enc:
                    raw = tee.up.buf
                    up, decoded = _decode(raw, enc, max(self.limit, 1)) if not tee.up.cut else (raw, False)
                elif tee.same and isinstance(down, _Chunks):  # one body for both sides: kept once
                    up, decoded = down, True
                else:  # as it came, held compressed already: the chunks themselves
                    up, decoded = tee.up.zipped(), True
                sides["upstream_response"] = side(
                    up, tee.up.size, cut=tee.up.cut, headers=dict.get(prev, "headers"),  # (as held: Pairs)
                    status=prev.get("status"), encoding="" if decoded else enc,
                )  # fmt: skip
                sides["client_response"] = {"size": tee.down.size, "cut": tee.down.cut}
            if down is not None and resp is not None:
                held.hold(resp, down)
            tee.release()
        if tee is not None:
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
        flow.marked = marker(meta) or flow.marked
        flow.comment = summary_text(meta)
        status = resp.status_code if resp is not None else "-"
        state = "" if meta["end"] == "completed" else (" complete" if final_sent else " error")
        fail = " FAILED CLOSED" if meta.get("failed") else ""
        log.info("disguise: %s %s%s%s: %s", rec.api.name, status, fail, state, counts_text(meta))
        if resp is not None and callable(resp.stream):
            # mitmproxy calls it no more once the flow ended (11 and 12) but holds the flow as
            # long as its connection lives: the reverser (its windows, framer, buffers) and the
            # Tee round it let go, 5-7 KiB a finished flow (bench/capturemem.py --flows).
            # True still says that the body was streamed.
            resp.stream = True
