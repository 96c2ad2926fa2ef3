"""The Guard (adapter-level): registered once per mitmproxy process, on the master's own
addon chain, the first time a Disguise loads; it outlives script reloads and checks
every flow last:

- mitmproxy drops a script without a word when one of its options gets a bad value (a
  duplicated `--set`, `yes` for a bool): no Disguise hook runs at all. A protected
  request that no Disguise has handled is refused by the Guard.
- A script reload builds a new Disguise; if its configuration fails, mitmproxy runs it
  anyway. The Guard keeps the last valid configuration, which the new instance takes
  over, and the flow records (../state.py), so in-flight responses are still restored.
- It runs after every other addon, so it sees the bytes that will actually leave: when
  a later addon changed a masked request, the leak guard looks at it again (the
  pipeline already checked what Disguise sent on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mitmproxy import ctx, exceptions, http

from .. import leakguard
from ..apis.registry import Api
from ..config import Config
from ..errors import MaskError, log_internal
from ..inspect.record import destination
from ..leakguard import place, shown
from ..pipeline import OFF_LOOP_BYTES, leak_scan, scan_unknown
from ..rules.knowing import of_session
from ..rules.rules import Rules
from ..state import Answer, Body, FlowRecord, Hook, Kind, Passed, Phase, Reading
from . import logfilter, whole
from .callables import Buffered, Refused, Then
from .flows import (
    decode_body,
    fallback_protected,
    finish_error,
    fix_headers,
    inner,
    leaving_headers,
    readable,
    refuse,
    replace_with_error,
    stop,
    stream_risk,
    target,
    targets_web_ui,
    withhold_url,
)  # fmt: skip

if TYPE_CHECKING:
    from .websocket import Realtime

log = logging.getLogger("disguise")
GUARD_NAME = "disguise_guard"
GONE = "response not restored: the disguise addon is no longer loaded"


def _leads_to(stream: object, call: object) -> bool:
    """Is stream the callable call, or a wrapper of it (the Inspector's Tee, the metrics'
    Timed, a Then)?"""
    for _ in range(8):
        if stream is call:
            return True
        stream = getattr(stream, "inner", None) or getattr(stream, "first", None)
        if stream is None:
            return False
    return False


class Guard:
    """Last in the addon chain, once per process (see the module docstring)."""

    name = GUARD_NAME

    def __init__(self) -> None:
        self.config: Config | None = None  # the last valid configuration of any Disguise
        # Why no Disguise may be running (option errors). Not `error`: that is a hook name.
        self.failure: str | None = None
        self.records: dict[str, FlowRecord] = {}  # flow id -> its record, until the flow ends
        self.realtime: Realtime | None = None  # the loaded Disguise's realtime adapter (its rechecks)
        self.tee: Callable[[http.HTTPFlow, Any], Any] = lambda flow, call: call  # its Inspector's capture

    @classmethod
    def install(cls, master) -> Guard:
        """The process's Guard, registered on the master's chain if it is not yet."""
        g = master.addons.get(GUARD_NAME)
        if g is not None:
            return g
        g = cls()
        try:
            master.addons.add(g)
        except exceptions.OptionsError:
            # Registering processes deferred options; one of another addon's may be bad.
            # The Guard must be in the chain all the same.
            pass
        if not any(a is g for a in master.addons.chain):
            master.addons.chain.append(g)
            master.addons.lookup[GUARD_NAME] = g
        master.addons.chain.insert(0, _First(g))  # (once: a Guard is made once a process)
        return g

    def why(self) -> str:
        return self.failure or "no valid disguise configuration is active (see the error logged above)"

    def _hosts(self) -> tuple:
        return self.config.hosts if self.config else ()

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None or flow.error is not None:
            # answered, or already closed (Disguise's own hook stops a streamed body whose headers it
            # refuses); refused by mitmproxy itself before any hook (validate_inbound_headers: two
            # Content-Lengths, one beside Transfer-Encoding), or answered by an addon before
            # Disguise (proxyauth's 407): it never leaves, and mitmdump's flow line prints its URL
            if flow.live:
                withhold_url(flow, self._rules(None))
            return
        if targets_web_ui(flow):
            log.error("disguise: a request through the proxy for mitmweb's own web UI was refused (connection closed)")
            stop(flow, "mitmweb's web UI is not reachable through the proxy", rules=self._rules(None))
            return
        rec = self.records.get(flow.id)
        if rec is None:
            if fallback_protected(flow, self._hosts()) and stream_risk(flow):
                rules = self.config.rules if self.config else None
                log.error("disguise: %s: %s (connection closed)", place(flow.request.method, flow.request.path, rules),
                          self.why())  # fmt: skip
                stop(flow, self.why(), rules=rules)
            return
        if rec.kind is not Kind.SKIP and flow.request.stream and not isinstance(flow.request.stream, Buffered):
            # another addon switched streaming on after Disguise: the body would go out as it comes
            log.error("disguise: %s: the request body would be streamed unmasked (connection closed)", rec.kind.value)
            stop(flow, "the request body would be streamed unmasked", rules=self._rules(rec))

    def request(self, flow: http.HTTPFlow):
        if flow.intercepted and flow.live:
            # Intercepted by an earlier addon (mitmweb's or the console's `intercept`):
            # mitmproxy waits for the resume only after every addon's hook, and what the
            # user edits meanwhile would leave unlooked at. The look waits for it too.
            return self._after_resume(flow)
        return self._request(flow)

    async def _after_resume(self, flow: http.HTTPFlow) -> None:
        await flow.wait_for_resume()
        later = self._request(flow)
        if later is not None:
            await later

    def _request(self, flow: http.HTTPFlow):
        rec = self.records.get(flow.id)
        if flow.response is not None:
            if rec is not None and rec.phase is Phase.MASKED and rec.answer is Answer.UPSTREAM:
                # answered by a later addon after masking (map_local, a cache, an edit while
                # intercepted): mitmproxy never calls a stream callable for such a
                # response, so Disguise restores it whole at the response hook
                rec.answer = Answer.ADDON
            elif rec is not None and rec.answer is not Answer.REPLACED and rec.phase is not Phase.MASKED:
                self.records.pop(flow.id, None)  # answered here: nothing more to restore
            return None
        if flow.request.trailers and self._trailers_refused(flow, rec):
            return
        if rec is None or rec.hook is not Hook.REQUEST:
            if (rec is not None and rec.kind is not Kind.SKIP) or fallback_protected(flow, self._hosts()):
                self._refuse(flow, rec, f"disguise: request refused: {self.why()}", 503)
                rules = self.config.rules if self.config else None
                r = flow.request
                log.error("disguise: request refused: %s (%s on %s)", self.why(), place(r.method, r.path, rules),
                          shown(r.pretty_host, rules))  # fmt: skip
            return
        cfg = rec.config
        if cfg is None:
            return
        if rec.kind is Kind.SKIP or rec.passed is Passed.FAIL_OPEN:
            if target(flow) != rec.target and fallback_protected(flow, cfg.hosts):
                # rewritten by a later addon (map_remote, a script): look again
                msg = "disguise: request refused: its target was rewritten to a protected endpoint after masking"
                log.error(msg)
                self._refuse(flow, rec, msg)
            return
        if rec.phase is Phase.MASKED and rec.body is Body.IN_HOOK:
            return self._recheck(flow, rec, cfg)  # type: ignore[return-value]  # maybe awaited
        if rec.passed is Passed.SCANNED and rec.body is Body.IN_HOOK and not ctx.options.disguise_allow_unknown:
            self._rescan(flow, rec, cfg)
        return None

    def _rescan(self, flow: http.HTTPFlow, rec: FlowRecord, cfg: Config) -> None:
        """An endpoint disguise does not transform, scanned clean by Disguise: what a later
        addon (modify_body, a script) or an edit while intercepted changed since is
        scanned again as Disguise scanned it (its URL and headers always: they are short)."""
        r = flow.request
        headers = leaving_headers(r)
        try:
            if r.raw_content != rec.checked_body:
                hit = scan_unknown(r.path, headers, readable(r, cfg.rules), cfg.rules, destination(flow))
            else:
                hit = leak_scan(r.path, headers, None, cfg.rules, None, dest=destination(flow))
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
            hit = leakguard.Hit("internal error", type(e).__name__)
        if hit is not None:
            msg = (f"disguise: request refused: {place(r.method, r.path, cfg.rules)} was changed after disguise "
                   f"scanned it, and now holds an original ({hit})")  # fmt: skip
            log.error(msg)
            self._refuse(flow, rec, msg)

    def _trailers_refused(self, flow: http.HTTPFlow, rec: FlowRecord | None) -> bool:
        """Request trailers (HTTP/2; chunked HTTP/1.1): mitmproxy has them by this hook and
        sends them after it, whether the body was streamed or not. Read as headers are
        (leakguard.scan_trailers); when one holds an original they are dropped and the
        request refused (True): answered, or, when its body already went (streamed), its
        connection closed."""
        cfg, trailers = rec.config if rec is not None else None, flow.request.trailers
        if rec is None or cfg is None or rec.kind is Kind.SKIP or trailers is None:
            return False  # not protected (a protected flow without a record is refused whole below)
        try:
            # (knowing the request's disguises and originals: a copy of one is one, as in a header)
            knowing = of_session(cfg.rules, rec.session, copies=True)
            hit = leakguard.scan_trailers(list(trailers.items(multi=True)), knowing)
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
            hit = leakguard.Hit("internal error", type(e).__name__)
        if hit is None:
            return False
        if rec.kind is Kind.UNKNOWN and getattr(ctx.options, "disguise_allow_unknown", False):
            log.warning("disguise: a request trailer holds an original (%s): forwarded (disguise_allow_unknown)", hit)
            return False  # as its body and headers would be
        flow.request.trailers = None  # never sent, whatever happens to the flow now
        msg = f"disguise: request refused by the leak guard: an original ({hit}) would have left unmasked"
        log.error(msg)
        if not flow.request.stream:
            self._refuse(flow, rec, msg)
            return True
        stop(flow, msg.removeprefix("disguise: "), rules=cfg.rules)  # a response now would crash mitmproxy's HTTP layer
        if rec.can(Phase.REFUSED):
            rec.to(Phase.REFUSED, msg.removeprefix("disguise: "))
        self.records.pop(flow.id, None)
        return True

    def _recheck(self, flow: http.HTTPFlow, rec: FlowRecord, cfg: Config):
        """The leak guard once more, on what actually leaves. The pipeline checked the
        body Disguise sent on; only a body another addon changed since is scanned again
        (the URL and headers always: they are short)."""
        r = flow.request
        headers = leaving_headers(r)
        body = None
        if r.raw_content != rec.checked_body:
            try:  # bounded, and a coding it cannot undo is a refusal, never a scan of coded bytes
                body = decode_body(r.raw_content or b"", r.headers.get("content-encoding", ""), cfg.rules)
            except MaskError as e:
                msg = f"disguise: request refused: its body was changed after masking and cannot be read ({e})"
                log.error(msg)
                self._refuse(flow, rec, msg)
                return None
        rules = of_session(cfg.rules, rec.session, copies=True)  # (a copy of an original is one: pipeline)
        if body is not None and len(body) >= OFF_LOOP_BYTES and flow.live:
            args = (r.path, headers, body, rules, rec.api, None, None, destination(flow))
            return self._recheck_off_loop(flow, rec, args)
        try:
            hit = leak_scan(r.path, headers, body, rules, rec.api, dest=destination(flow))
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too (an exception
            hit = leakguard.Hit("internal error", type(e).__name__)  # here would let mitmproxy forward)
        self._leak_verdict(flow, rec, hit)
        return None

    async def _recheck_off_loop(self, flow: http.HTTPFlow, rec: FlowRecord, args: tuple) -> None:
        """The leak guard's scan of a large body, in a worker thread (no flow waits)."""
        try:
            hit = await asyncio.to_thread(leak_scan, *args)
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
            hit = leakguard.Hit("internal error", type(e).__name__)
        self._leak_verdict(flow, rec, hit)

    def _leak_verdict(self, flow: http.HTTPFlow, rec: FlowRecord, hit: leakguard.Hit | None) -> None:
        if hit is not None:
            msg = f"disguise: request refused by the leak guard: an original ({hit}) would have left unmasked"
            log.error(msg)
            self._refuse(flow, rec, msg)
            return
        if rec.signer is not None:
            # The last step: what leaves is masked and checked; now it is signed (AWS SigV4).
            try:
                rec.signer.apply(flow.request)
            except Exception as e:  # noqa: BLE001 - unsigned it would only be rejected: refused instead
                log_internal(log, "re-signing", e)
                self._refuse(flow, rec, f"disguise: request refused: it could not be signed again ({type(e).__name__})")

    def _rules(self, rec: FlowRecord | None) -> Rules | None:
        """The rules a message about this flow names its text through: the flow's own, else
        the last valid configuration's."""
        cfg = rec.config if rec is not None and rec.config is not None else self.config
        return cfg.rules if cfg is not None else None

    def _refuse(self, flow: http.HTTPFlow, rec: FlowRecord | None, msg: str, status: int = 400) -> None:
        refuse(flow, msg, status, rules=self._rules(rec))
        if rec is not None:
            if rec.can(Phase.REFUSED):
                rec.to(Phase.REFUSED, msg.removeprefix("disguise: "))
            self.records.pop(flow.id, None)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        rec = self.records.get(flow.id)
        if rec is None or flow.response is None:
            return
        if rec.kind is Kind.API and rec.answer is not Answer.ADDON and isinstance(rec.api, Api):
            self._keep_stream(flow, rec, rec.api)
        if rec.phase is not Phase.MASKED:
            return
        # No Disguise looked at this response (its script went away mid-flow): it
        # cannot be restored, so the client gets an explicit error instead.
        assert isinstance(rec.api, Api)  # MASKED and not a WebSocket: an HTTP API's
        replace_with_error(flow, rec.api, GONE, 502)
        rec.to(Phase.FAILED, GONE)

    def _keep_stream(self, flow: http.HTTPFlow, rec: FlowRecord, api: Api) -> None:
        """An addon after Disguise set the response's `stream` (True, False, a callable of
        its own: the docs' "stream everything" snippet): the body would reach the client
        as upstream sent it. What Disguise set goes back; another addon's callable runs
        after it (callables.Then), on what the client gets."""
        resp = flow.response
        assert resp is not None
        now = resp.stream
        if rec.phase is Phase.REFUSED and rec.answer is Answer.REPLACED:
            if not isinstance(inner(now), Refused):
                replace_with_error(flow, api, rec.reason or "request refused", 400)
            return
        if rec.phase not in (Phase.STREAMING, Phase.RECEIVING, Phase.FAILED):
            return
        if rec.reading is Reading.WHOLE:
            if not now:
                return  # read whole and restored at the response hook, as Disguise left it
            rec.call = whole.buffered(flow, rec)
            rec.stream = self.tee(flow, rec.call)
            ours: Any = rec.stream
            rec.reading = Reading.BUFFERED
            fix_headers(resp)
        elif _leads_to(now, rec.call):
            return
        else:
            ours = rec.stream
        resp.stream = Then(ours, now) if callable(now) else ours
        log.info("disguise: %s: another addon set the response's stream after disguise: %s", api.name,
                 "it runs on the restored stream" if callable(now) else "disguise's restoring stream kept")  # fmt: skip

    def response(self, flow: http.HTTPFlow) -> None:
        rec = self.records.get(flow.id)
        if rec is not None and rec.realtime is not None and flow.websocket is not None and rec.phase is Phase.STREAMING:
            return  # a realtime connection: its record lives until the WebSocket ends
        self.records.pop(flow.id, None)
        if rec is None or flow.response is None:
            return
        if rec.phase in (Phase.MASKED, Phase.RECEIVING) and rec.reading is Reading.WHOLE:
            # a whole body no Disguise restored (its script went away mid-flow)
            assert isinstance(rec.api, Api)
            finish_error(flow, rec.api, GONE)
            rec.to(Phase.FAILED, GONE)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        """A message of a realtime connection no Disguise looked at (its script went
        away): it cannot be masked or restored, so it is not forwarded."""
        rec = self.records.get(flow.id)
        live = rec.realtime if rec is not None else None
        if live is None or flow.websocket is None or not flow.websocket.messages or not flow.live:
            return
        msg = flow.websocket.messages[-1]
        if live.handled is not msg and not msg.dropped:
            msg.drop()
            if not live.warned:
                live.warned = True
                log.error("disguise: WebSocket message dropped: the disguise addon is no longer loaded")
        elif msg.from_client and not msg.dropped and msg.content != live.left and self.realtime and rec is not None:
            self.realtime.recheck(flow, rec)  # changed by a later addon after masking

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        self.records.pop(flow.id, None)

    def error(self, flow: http.HTTPFlow) -> None:
        self.records.pop(flow.id, None)

    def ended_in_error(self, flow: http.HTTPFlow) -> None:
        """A flow that ends in an error, as mitmdump's line for it (the Dumper's error hook,
        after this look: _First runs it first in the chain) and a saved flow show it. Its
        error's message is read as mitmproxy's log lines are (logfilter.withheld): an
        HTTP/2 protocol error on one stream quotes the header bytes
        that caused it, and ends every other stream of the connection with that message. And
        a protected request that never left (the client gave up during its body, an HTTP/2
        stream reset, a body over body_size_limit: the request hook, whose leak guard refuses
        and withholds a URL that holds an original, never ran) has its URL withheld as a
        refused one's is. A request that left (masked, or forwarded as it was) is left as it
        went."""
        rec = self.records.get(flow.id)
        rules = self._rules(rec)
        if flow.error is not None and (msg := logfilter.withheld(flow.error.msg, rules)) != flow.error.msg:
            flow.error.msg = msg
        if rec is None:
            unsent = fallback_protected(flow, self._hosts())
        else:
            unsent = rec.kind is not Kind.SKIP and rec.phase in (Phase.CLASSIFIED, Phase.REFUSED)
        if unsent:
            withhold_url(flow, rules)


class _First:
    """First in mitmproxy's chain, the Guard's look at a flow that ends in an error
    (Guard.ended_in_error), before any other addon's error hook: mitmdump's Dumper prints
    the flow's line in its own, and it comes before the Guard's, and before Disguise's
    where a script is loaded at all (mitmproxy dropped it for a bad option, or its file
    went: the Guard alone is left, refusing)."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def error(self, flow: http.HTTPFlow) -> None:
        self.guard.ended_in_error(flow)
