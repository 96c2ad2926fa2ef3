"""The Disguise addon (adapter-level): what `-s addon/disguise.py` builds. It declares the
options, loads the mapping files, and moves each flow's record (../state.py) along: masks a
request through the pipeline, sets the response's reverser, restores a whole body. The
Guard (guard.py) checks every flow last; the Inspector is told of every transition."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable

from mitmproxy import connection, ctx, exceptions, http, tls

from .. import pipeline
from ..apis.registry import Api, RealtimeApi, llm_shaped, recognise, recognise_ws
from ..config import Config, build_config, log_loaded
from ..errors import MappingError, MaskError, ScopeError, StreamError, log_internal
from ..inspect import replay
from ..inspect.inspector import Inspector
from ..inspect.record import META, destination
from ..leakguard import place, shown
from ..pipeline import Refusal
from ..rules.rules import Rules
from ..scope import in_hosts, known_host
from ..state import Answer, Body, FlowRecord, Hook, Kind, Phase, Reading
from . import aws, bodyhook, cut, heap, logfilter, options, outcome, streamed, unknown, whole
from .callables import Buffered, Refused, StreamCall
from .flows import (
    CODED_OFF_LOOP,
    TRANSFER_CODED,
    answer_replaced,
    chunked,
    decode_body,
    decoded_limit,
    encoded_again,
    error_api,
    finish_error,
    fix_headers,
    headers_refused,
    leaving_headers,
    refuse,
    replace_with_error,
    reverse_mode,
    stop,
    stream_risk,
    streams_large_bodies,
    target,
    transfer_coded,
    websocket,
)  # fmt: skip
from .guard import Guard
from .offload import Offload
from .reload import Reloader
from .websocket import Realtime

log = logging.getLogger("disguise")

# The proxy modes whose client names the host a connection goes to (mitmproxy's mode_specs)
_NAMED = frozenset(("RegularMode", "UpstreamMode", "Socks5Mode", "ReverseMode"))


class Disguise:
    def __init__(self) -> None:
        self.config: Config | None = None
        self.guard = Guard()  # replaced by the process's own in load()
        self.reloader = Reloader(lambda: self.config, self._install, lambda: self.reloaded("failed"))  # reload.py
        self.aws = aws.Credentials()  # the proxy's own AWS identity (disguise_aws_resign)
        self.inspect = Inspector(self)  # both sides of each flow, summaries, replays (an addon too)
        self.realtime = Realtime()  # realtime APIs over WebSocket (websocket.py)
        self.offload = Offload()  # large request bodies masked in a worker process (offload.py)
        self.reloaded: Callable[[str], None] = lambda verb: None  # loaded, reloaded or failed: the metrics
        self.conflict: str | None = None  # an option the command line and config.yaml both set (options.py)

    @property
    def rules(self) -> Rules | None:
        """The rules in force (for the inspection commands)."""
        return self.config.rules if self.config is not None else None

    # -- life cycle ----------------------------------------------------------------------

    def load(self, loader) -> None:
        heap.freeze_startup()  # mitmproxy and the addon, never garbage: no full collection scans them (heap.py)
        if not bodyhook.install():
            log.warning("disguise: a body mitmproxy streams (stream_large_bodies) is masked on the event loop")
        self.guard = Guard.install(loader.master)
        logfilter.install(lambda: self.rules)  # mitmproxy's own lines that quote a request (logfilter.py)
        self.guard.realtime, self.guard.tee = self.realtime, self.inspect.tee  # what the Guard's rechecks use
        options.declare(loader)
        failure = options.check_deferred(loader.master.options)
        self.conflict = options.check_config_file(loader.master.options, sys.argv[1:])  # refused by configure
        if failure is not None:
            self.guard.failure = failure
            log.error("disguise: %s", failure)

    def running(self) -> None:  # the worker starts and builds the rules in force, before any body needs it
        if (o := ctx.options).disguise_offload_bytes > 0 and o.disguise_offload_warm and getattr(o, "server", True):
            self.offload.running()

    def done(self) -> None:
        self.offload.close()
        logfilter.uninstall()

    def configure(self, updated: set[str]) -> None:
        # fail_open and allow_unknown are read where they are used; these need a rebuild
        rebuild = {"disguise_mappings", "disguise_defaults", "disguise_hosts", "disguise_fakes", "disguise_fakes_key",
                   "ignore_hosts", "allow_hosts", "tcp_hosts", "mode"}  # fmt: skip
        opts = ctx.options
        try:
            if self.conflict is not None:
                raise ScopeError(self.conflict)
            options.check_values(opts, updated)  # a negative size, before anything reads it
            if self.config is not None and not (rebuild & updated):
                options.log_relaxed(opts, updated)
                if "disguise_offload_bytes" in updated and opts.disguise_offload_bytes > 0 and self.offload.live:
                    self.offload.running()  # turned on while running: started now
                return
            options.check_names(opts)
            paths, hosts = list(opts.disguise_mappings), list(opts.disguise_hosts)
            new = build_config(paths, bool(opts.disguise_defaults), hosts, options.fakes_key(opts))
            options.check_passthrough(new.hosts)
            options.check_reverse(new.hosts)
        except (MappingError, ScopeError) as e:
            self._refused(e, at_load=set(updated) >= opts.keys())
            return
        verb = "reloaded" if self.guard.config is not None else "loaded"
        self._install(new, verb)

    def _install(self, new: Config, verb: str) -> None:
        self.config = new
        self.guard.config = new
        self.guard.failure = None
        self.reloader.installed(new)
        if getattr(ctx.options, "disguise_offload_bytes", 0) > 0:
            self.offload.prepare(new)  # the running worker builds the new set in the background
        log_loaded(new, verb, note=options.relaxed(ctx.options))
        self.reloaded(verb)

    def _refused(self, e: Exception, at_load: bool) -> None:
        """A configuration that does not load. A change while running raises, so that
        mitmproxy rolls the option back and its caller (mitmweb, the console) shows why.
        mitmproxy configures a script it (re)loads with every option at once and logs
        what that raises with a traceback of this frame, which says nothing the message
        does not: there the error is logged instead (at start-up it still stops
        mitmdump), and the Guard refuses requests giving it as the reason."""
        self.reloaded("failed")
        if self.config is None and self.guard.config is not None:
            # A script reload: mitmproxy runs this instance whatever configure says,
            # so it takes over the last valid configuration instead of none.
            self.config = self.guard.config
            log.error("disguise: configuration refused, the previous rule set stays in force: %s", e)
        elif at_load:
            log.error("disguise: %s", e)
            if self.config is None:
                self.guard.failure = f"the disguise configuration was refused: {e}"
        if not at_load:
            raise exceptions.OptionsError(f"disguise: {e}") from None

    def tls_start_server(self, data: tls.TlsData) -> None:
        """The server name (SNI) of a TLS connection upstream, which leaves in the clear
        before any request: mitmproxy's TlsConfig, after this hook, gives it the client's
        where none is set. A name that holds an original and is not the host connected to
        (a CONNECT to one host, a ClientHello naming another) is replaced by that host; the
        requests on the connection are read as ever (a Host header or :authority holding
        it is refused). Only where the client named the host to connect to (a CONNECT, a
        SOCKS5 target, reverse mode's): in the transparent modes (WireGuard, local, tun) the
        host is an address the network gave, and the client's name is the only one of it.
        Left alone off disguise_hosts; without rules, replaced. QUIC's handshake
        (HTTP/3 upstream) names its server the same way: quic_start_server."""
        conn, cfg = data.conn, self.config
        if not isinstance(conn, connection.Server) or type(data.context.client.proxy_mode).__name__ not in _NAMED:
            return
        name = conn.sni if conn.sni is not None else data.context.client.sni
        if not name or not conn.address or name == conn.address[0]:
            return
        if cfg is not None and (
            (cfg.hosts and not in_hosts(cfg.hosts, conn.address[0], conn.address[1])) or shown(name, cfg.rules) == name
        ):
            return
        conn.sni = conn.address[0]
        log.info("disguise: the %s server name the client gave holds an original: the connection to %s names that "
                 "host instead", "QUIC" if type(data).__name__ == "QuicTlsData" else "TLS",
                 shown(conn.address[0], cfg.rules if cfg is not None else None))  # fmt: skip

    quic_start_server = tls_start_server  # (its data a TlsData too: QuicTlsData, before mitmproxy's TlsConfig)

    # -- requests --------------------------------------------------------------------------

    def classify(self, flow: http.HTTPFlow, cfg: Config | None) -> tuple[Kind, Api | None]:
        r = flow.request
        hosts = cfg.hosts if cfg is not None else ()
        api = recognise(r.method, r.path)
        if hosts:
            mine = in_hosts(hosts, r.host, r.port, r.pretty_host)
        else:
            mine = known_host(r.host) or known_host(r.pretty_host) or reverse_mode(flow)
        shaped = api is not None or llm_shaped(r.path) or (websocket(flow) and recognise_ws(r.path) is not None)
        if api is not None and (mine or not hosts):
            return (Kind.WEBSOCKET if websocket(flow) else Kind.API), api
        if mine or (shaped and not hosts):
            return (Kind.WEBSOCKET if websocket(flow) else Kind.UNKNOWN), None
        if shaped:
            rules = cfg.rules if cfg is not None else None
            host = shown(r.pretty_host, rules)
            log.info("disguise: %s on %s not masked: host %s is not in disguise_hosts", place(r.method, r.path, rules),
                     host, host)  # fmt: skip
        return Kind.SKIP, None

    def requestheaders(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        if flow.response is not None:
            return None
        kind, api = self.classify(flow, self.config)
        if kind is not Kind.SKIP:  # mapping files that changed are built off the loop first
            pending = self.reloader.check()
            if pending is not None:
                return self._classified_later(pending, flow, kind, api)
        self._classified(flow, kind, api)
        return None

    async def _classified_later(self, pending: Awaitable[None], flow: http.HTTPFlow, kind: Kind, api: Api | None):
        await pending
        self._classified(flow, kind, api)

    def _classified(self, flow: http.HTTPFlow, kind: Kind, api: Api | None) -> None:
        cfg = self.config
        rec = FlowRecord(kind, target(flow), cfg, api, observer=self.inspect.observer(flow))
        self.guard.records[flow.id] = rec
        if kind is Kind.SKIP or cfg is None:
            return  # without a configuration the Guard closes a risky one: nothing here can mask
        spool = kind is Kind.API and streamed.spoolable(flow, rec, self.offload, ctx.options.disguise_offload_bytes)
        if not (spool and streamed.declared_large(flow, ctx.options.disguise_stream_bytes) or stream_risk(flow)):
            return
        if kind is Kind.API and api is not None and api.signed:
            aws.stop_streamed(flow, rec)  # its headers would leave before its body is masked
            return
        # mitmproxy would send this body upstream as it arrives: take it whole instead.
        # Its URL and headers: masked (Api.headers) and checked here; held back till the body's
        # end (bodyhook), and never sent when masking the body refuses it.
        why = streamed.mask_headers(flow, rec) or headers_refused(flow, rec.kind is Kind.API, api, cfg.rules)
        if why is not None:
            log.warning("disguise: request refused (connection closed): %s", why)
            stop(flow, why, rules=cfg.rules)
            rec.to(Phase.REFUSED, why)
            return
        flow.request.stream = streamed.taker(flow, rec, self.offload, spool, self.inspect.limit)
        chunked(flow.request)

    async def disguise_body_complete(self, flow: http.HTTPFlow) -> None:
        """A body mitmproxy streamed into a Buffered is whole (bodyhook.py): masked or scanned
        now, off the event loop; or, between the pieces of a paced body, the one before written."""
        stream = flow.request.stream
        if isinstance(stream, Buffered):
            await (bodyhook.drained(flow) if stream.paced and stream.finished else stream.complete())

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None and not flow.live:
            # `mitmdump -nr`: the recorded flow is re-run through the pipeline offline
            replay.offline(flow, self.config, self.classify, self.inspect.limit)
            return
        rec = self.guard.records.get(flow.id)
        if rec is None or rec.hook is Hook.REQUEST:
            # requestheaders ran before this instance existed, or the flow is being
            # replayed (its last run's record is over): a record of its own
            pending = self.requestheaders(flow)
            if pending is not None:
                return self._request_later(pending, flow)  # type: ignore[return-value]  # mitmproxy awaits it
            rec = self.guard.records.get(flow.id)
            if rec is None:
                return
        try:
            later = self._request(flow, rec)
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            log_internal(log, "request", e)
            if flow.response is None:
                self._refuse(flow, rec, f"disguise: request refused: internal error ({type(e).__name__})", 500)
            later = None
        if later is not None:
            return self._request_done_after(later, rec)  # type: ignore[return-value]  # mitmproxy awaits it
        rec.hook = Hook.REQUEST

    async def _request_later(self, pending: Awaitable[None], flow: http.HTTPFlow) -> None:
        await pending
        later: Awaitable[None] | None = self.request(flow)  # type: ignore[func-returns-value]  # may be awaited
        if later is not None:
            await later

    async def _request_done_after(self, later: Awaitable[None], rec: FlowRecord) -> None:
        await later
        rec.hook = Hook.REQUEST

    def _refuse(
        self, flow: http.HTTPFlow, rec: FlowRecord, msg: str, status: int = 400, api: Api | RealtimeApi | None = None
    ) -> None:
        refuse(flow, msg, status, api, rules=rec.config.rules if rec.config is not None else self.rules)
        if rec.can(Phase.REFUSED):
            rec.to(Phase.REFUSED, msg.removeprefix("disguise: "))

    def _request(self, flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None:
        if rec.kind is Kind.WEBSOCKET and flow.is_replay:
            # a server replay answers the upgrade from the file: there is no connection to mask
            msg = "disguise: request refused: replay is not supported for WebSocket flows"
            log.warning(msg)
            self._refuse(flow, rec, msg)
            return None
        if flow.response is not None or rec.kind is Kind.SKIP:
            return None
        cfg = rec.config
        if cfg is None:
            msg = f"disguise: request refused: {self.guard.why()}"
            log.error(msg)
            self._refuse(flow, rec, msg, 503)
            return None
        stream = flow.request.stream
        if isinstance(stream, Buffered):
            if stream.finished:
                rec.body = Body.TAKEN
                if stream.error is not None:
                    msg = f"request not masked (refused): {stream.error}"
                    log.error("disguise: %s", msg)
                    rec.api = rec.api or error_api(flow)
                    if stream.held_back:  # nothing of it left (bodyhook): answered here
                        self._refuse(flow, rec, f"disguise: {msg}", 400, rec.api)
                        return None
                    rec.answer = Answer.REPLACED  # the body went out empty: upstream's answer is replaced
                    rec.to(Phase.REFUSED, msg)
                return None
            flow.request.stream = False  # no body came: handled as usual below
        elif stream:
            msg = "disguise: request refused: its body was streamed past the addon"
            log.error(msg)
            self._refuse(flow, rec, msg)
            return None
        api = recognise(flow.request.method, flow.request.path) if rec.kind is Kind.API else None
        if rec.kind is Kind.WEBSOCKET:
            rt = recognise_ws(flow.request.path)
            if rt is None:
                self._unknown(flow, rec, websocket=True)
                return None
            self.realtime.capture_limit = self.inspect.limit
            why = self.realtime.handshake(flow, rec, rt)
            if why is not None:
                msg = f"disguise: request refused: {why}"
                log.warning(msg)
                self._refuse(flow, rec, msg, 400, rt)
        elif api is None:
            self._unknown(flow, rec)  # an unknown endpoint, or an API's target changed since its headers
        else:
            rec.api = api
            if replay.client_replay(flow, api, self.inspect):
                why = flow.metadata.get(META, {}).get("failed")  # answered there (a capture cut short)
                rec.to(Phase.REFUSED, why or "cannot replay")
                return None
            return aws.mask_signed(self, flow, rec) if api.signed else self._mask(flow, rec)
        return None

    def _unknown(self, flow: http.HTTPFlow, rec: FlowRecord, websocket: bool = False) -> None:
        unknown.check(flow, rec, self._refuse, websocket)

    def _mask(self, flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None:
        """Mask the request body through the pipeline. A large body of a live flow is
        masked in a worker thread (returned: an awaitable the hook hands to mitmproxy),
        so that other flows go on meanwhile: hooks run on mitmproxy's event loop, where a
        1 MB body held every other stream still for about 0.1 s."""
        r = flow.request
        assert rec.config is not None and isinstance(rec.api, Api)  # set by Disguise._request
        if transfer_coded(r.headers):
            self._unmaskable(flow, rec, MaskError(TRANSFER_CODED))
            return None
        enc = r.headers.get("content-encoding", "")
        if enc.strip() and r.raw_content and len(r.raw_content) >= CODED_OFF_LOOP and flow.live:
            return self._mask_off_loop(flow, rec, r.raw_content, enc)  # decoded there, encoded again there
        try:  # bounded: mitmproxy's get_content expands a bomb whole, on the event loop
            raw = None if r.raw_content is None else decode_body(r.raw_content, enc, rec.config.rules)
        except MaskError as e:
            self._unmaskable(flow, rec, e)
            return None
        if raw is None:
            self._unmaskable(flow, rec, MaskError("request has no body"))
            return None
        offload = self.offload.takes(rec.api, len(raw), ctx.options.disguise_offload_bytes)
        if (offload or len(raw) >= pipeline.OFF_LOOP_BYTES) and flow.live:
            return self._mask_off_loop(flow, rec, raw)
        args = (rec.api, raw, rec.config, r.path, leaving_headers(r), destination(flow))
        self._masked(flow, rec, raw, pipeline.mask_request(*args))
        return None

    async def _mask_off_loop(self, flow: http.HTTPFlow, rec: FlowRecord, body: bytes, enc: str = ""):
        """A large body (or a compressed one: body as it came, content-encoded with enc: decoded
        in a thread, the masked body encoded again there): masked in the worker process from
        disguise_offload_bytes on once it is ready (offload.py), else in a worker thread."""
        r, raw, encoded = flow.request, body, None
        assert rec.config is not None and isinstance(rec.api, Api)
        args = (rec.api, body, rec.config, r.path, leaving_headers(r))
        try:
            if enc:
                raw = await asyncio.to_thread(decode_body, body, enc, rec.config.rules, decoded_limit())
                args = (rec.api, raw, *args[2:])
            off = self.offload  # not ready: started in the background, this body masked in a thread
            dest = destination(flow)  # the worker's verdict (never raises), or a thread's
            if off.takes(rec.api, len(raw), ctx.options.disguise_offload_bytes) and off.ready(rec.config):
                # a conversation's next turn cut here from the one the worker masked (turns.py), else the worker
                got = await off.cut(*args, dest=dest)
                result: pipeline.Verdict = got if got is not None else await off.mask(*args, dest=dest)
            else:
                result = await self.offload.in_thread(*args, dest=dest)
            if enc and isinstance(result, pipeline.Masked):  # unchanged: raw, or made again (flows.leaving)
                encoded = await asyncio.to_thread(encoded_again, body, result.body, enc, result.body is not raw)
        except MaskError as e:  # the compressed body cannot be decoded
            self._unmaskable(flow, rec, e)
            return
        except Exception as e:  # noqa: BLE001 - mask_request never raises; this is the thread machinery failing
            log_internal(log, "masking failed", e)
            result = pipeline.Refused.of(e)
        self._masked(flow, rec, raw, result, encoded)

    def _masked(
        self, flow: http.HTTPFlow, rec: FlowRecord, raw: bytes, result: pipeline.Verdict, encoded: bytes | None = None
    ) -> None:
        """Apply what the pipeline gave (mitm/outcome.py)."""
        outcome.apply(flow, rec, raw, result, lambda: self._unknown(flow, rec), encoded=encoded)

    def _unmaskable(self, flow: http.HTTPFlow, rec: FlowRecord, e: Exception, fail_open: bool = True) -> None:
        """A request refused before the pipeline (its body cannot be read; a signed body)."""
        refusal = Refusal.UNMASKABLE if fail_open else Refusal.NEVER
        self._masked(flow, rec, b"", pipeline.Refused(str(e), refusal))

    # -- responses -----------------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        rec = self.guard.records.get(flow.id)
        resp = flow.response
        if rec is None or resp is None:
            return
        if rec.phase is Phase.REFUSED and rec.answer is Answer.REPLACED:
            assert isinstance(rec.api, Api)  # error_api(flow) at least
            replace_with_error(flow, rec.api, rec.reason or "request refused", 400)
            return
        if rec.phase is not Phase.MASKED:
            return
        if rec.kind is Kind.WEBSOCKET:
            self.realtime.response_headers(flow, rec)
            return
        if flow.is_replay == "response" or rec.answer is Answer.ADDON or whole.no_body(flow):
            # server replay, another addon's answer (the Guard saw it; mitmproxy calls no
            # stream callable for a response set in the request hook), or a response with no
            # body (its framing kept as it came): whole, the response hook restores it
            rec.to(Phase.RECEIVING)
            return
        assert isinstance(rec.api, Api) and rec.restorer is not None  # MASKED: set by outcome.apply
        enc = resp.headers.get("content-encoding", "")
        ctype = resp.headers.get("content-type", "")
        path = flow.request.path
        # Streamed unless labelled JSON: an event stream where the endpoint may stream and
        # the label says so, any other body restored whole at its end (BodyStream).
        rev = pipeline.reverser_for(rec.api, rec.restorer, ctype, path)
        mislabelled = getattr(rev, "mislabelled", None)
        if mislabelled:  # the label contradicts what the endpoint answers: refused at once
            why = f"response not reversed: {mislabelled}"
            rec.to(Phase.STREAMING)
            answer_replaced(resp)
            self._set_stream(flow, rec, Refused(rec.api.error_body(f"disguise: {why}")), Reading.ERROR)
            rec.to(Phase.FAILED, why)
            return
        if rev is not None:
            rec.to(Phase.STREAMING)  # the Inspector keeps upstream's headers first
            fix_headers(resp)
            try:
                rec.reverser = pipeline.decoded(rev, enc, decoded_limit())
            except StreamError as e:
                self._set_stream(flow, rec, Refused(rev.error_event(f"disguise: {e}")), Reading.ERROR)
                rec.to(Phase.FAILED, f"stream could not be reversed: {e}")
                return
            self._set_stream(flow, rec, StreamCall(rec.reverser), Reading.STREAMED)
            cut.deliver_on_cut(flow)  # an upstream cut ends with the error event too (contract §4)
            return
        rec.to(Phase.RECEIVING)
        if resp.stream or streams_large_bodies():
            # mitmproxy streams large bodies as they come (now, or once they pass the
            # limit): take this one whole and restore it at its end instead.
            taken = whole.buffered(flow, rec)
            fix_headers(resp)
            self._set_stream(flow, rec, taken, Reading.BUFFERED)

    def _set_stream(
        self, flow: http.HTTPFlow, rec: FlowRecord, call: StreamCall | Refused | Buffered, reading: Reading
    ) -> None:
        rec.call, rec.reading = call, reading
        assert flow.response is not None
        flow.response.stream = rec.stream = self.inspect.tee(flow, call)  # keeps both sides

    def response(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        rec = self.guard.records.get(flow.id)
        resp = flow.response
        if rec is None or resp is None:
            return None
        if rec.phase is Phase.REFUSED:
            if rec.answer is Answer.REPLACED:
                assert isinstance(rec.api, Api)
                finish_error(flow, rec.api, rec.reason or "request refused")
            return None
        if rec.kind is Kind.WEBSOCKET:
            self.realtime.response(flow, rec)
            return None
        if rec.phase is Phase.STREAMING:
            dead = bool(getattr(rec.call, "dead", False))
            why = getattr(rec.reverser, "failure", None) or "the client got an error event"
            rec.to(Phase.FAILED if dead else Phase.RESTORED, f"stream could not be reversed: {why}" if dead else None)
        elif rec.phase in (Phase.MASKED, Phase.RECEIVING):
            if rec.phase is Phase.MASKED:  # no responseheaders hook came (a replayed flow)
                rec.to(Phase.RECEIVING)
            later = self._restore(flow, rec)
            if later is not None:  # decoded off the loop: mitmproxy awaits it
                return self._finish_after(later, flow, rec)
        if rec.restorer is not None:
            self.inspect.finish(flow, rec)  # the summary, last
        return None

    async def _finish_after(self, later: Awaitable[None], flow: http.HTTPFlow, rec: FlowRecord) -> None:
        await later
        if rec.restorer is not None:
            self.inspect.finish(flow, rec)

    def _restore(self, flow: http.HTTPFlow, rec: FlowRecord) -> Awaitable[None] | None:
        """A whole response body, restored (RESTORED), or replaced by an error (FAILED)."""
        if rec.reading is not Reading.BUFFERED:
            self.inspect.before_restore(flow)  # server replay puts the recorded upstream body back
        return whole.restore(flow, rec)

    # -- WebSocket (realtime APIs) ---------------------------------------------------------

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        self.realtime.start(flow, self.guard.records.get(flow.id))

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        self.realtime.message(flow, self.guard.records.get(flow.id))

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        self.realtime.end(flow, self.guard.records.get(flow.id))

    def error(self, flow: http.HTTPFlow) -> None:
        streamed.dropped(flow)  # a body fed to the worker will not end: it forgets what it holds of it
        rec = self.guard.records.get(flow.id)
        if rec is not None and rec.realtime is not None:
            self.realtime.end(flow, rec, error=True)
        elif rec is not None and rec.restorer is not None:  # the summary, whatever ended the flow
            self.inspect.finish(flow, rec, error=True)


__all__ = ["Disguise"]
