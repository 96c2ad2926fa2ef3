"""The Disguise addon (adapter-level): what `-s addon/disguise.py` builds. Declares the
options, loads the mapping files, masks requests and restores responses; the Guard
(guard.py) checks every flow last."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from mitmproxy import ctx, exceptions, http
from mitmproxy.net import encoding as mencoding

from .. import leakguard
from ..config import DEFAULT_MAPPINGS, Config, build_config, log_loaded
from ..core import mappings
from ..core.decoding import decoder_for
from ..core.rules import Rules
from ..errors import (
    LeakError,
    MappingError,
    MaskError,
    NeverForward,
    NotTransformed,
    ScopeError,
    StreamError,
    log_internal,
)
from ..inspect.inspector import Inspector
from ..pipeline import OFF_LOOP_BYTES, mask_work, reverser_for
from ..providers.masking import mask_request
from ..providers.registry import Api, llm_shaped, recognise
from ..scope import in_hosts, known_host
from .callables import Buffered, Refused, StreamCall
from .flows import (
    FlowState,
    Mark,
    body_limit,
    chunked,
    decode,
    error_api,
    finish_error,
    fix_headers,
    inner,
    note_masked,
    refuse,
    replace_with_error,
    reverse_mode,
    stream_risk,
    streams_large_bodies,
    target,
    websocket,
)
from .guard import Guard
from .options import OPTIONS, check_passthrough

log = logging.getLogger("disguise")


class Disguise:
    def __init__(self) -> None:
        self.config: Config | None = None
        self.guard = Guard()  # replaced by the process's own in load()
        self._failed: tuple | None = None  # snapshot of mapping files that failed to load
        self.inspect = Inspector(self)  # both sides of each flow, summaries, replays (an addon too)

    @property
    def rules(self) -> Rules | None:
        """The rules in force (for the inspection commands)."""
        return self.config.rules if self.config is not None else None

    # -- life cycle ----------------------------------------------------------------------

    def load(self, loader) -> None:
        self.guard = Guard.install(loader.master)
        loader.add_option(
            "disguise_mappings", Sequence[str], [DEFAULT_MAPPINGS],
            "Mapping files or folders (YAML), loaded after the shipped defaults, in order; "
            "a folder's *.yaml/*.yml files in file-name order. Repeat the option for more.",
        )  # fmt: skip
        loader.add_option(
            "disguise_defaults", bool, True,
            "Load the shipped default mappings (mappings/default.yaml) under your own.",
        )  # fmt: skip
        loader.add_option(
            "disguise_hosts", Sequence[str], [],
            "Only mask requests to these hosts (host or host:port, comma-separated or repeated; "
            "empty: every host).",
        )  # fmt: skip
        loader.add_option(
            "disguise_fail_open", bool, False,
            "Forward a request that cannot be masked unchanged instead of refusing it.",
        )  # fmt: skip
        loader.add_option(
            "disguise_allow_unknown", bool, False,
            "Forward requests to endpoints disguise does not transform even when they contain an "
            "original (with a warning) instead of refusing them.",
        )  # fmt: skip
        self._check_deferred(loader.master.options)

    def _check_deferred(self, opts) -> None:
        """mitmproxy applies `--set` values for a script's options only after load(),
        and when one is bad (given twice, or `yes` for a bool) it drops the whole script
        without a log line. Check them here, where it can still be said."""
        deferred = getattr(opts, "deferred", {})
        parse = getattr(opts, "_parse_setval", None)
        for name in sorted(OPTIONS):
            val = deferred.get(name)
            if val is None or parse is None or not hasattr(val, "val"):
                continue
            try:
                parse(opts._options[name], val.val)
            except exceptions.OptionsError as e:
                self.guard.failure = (
                    f"option {name}: {e}; mitmproxy will not load the disguise script, and every "
                    "request on an LLM path is refused"
                )
                log.error("disguise: %s", self.guard.failure)

    def configure(self, updated: set[str]) -> None:
        # fail_open and allow_unknown are read where they are used; these need a rebuild
        rebuild = {"disguise_mappings", "disguise_defaults", "disguise_hosts", "ignore_hosts", "allow_hosts"}
        if self.config is not None and not (rebuild & updated):
            return
        opts = ctx.options
        try:
            new = build_config(list(opts.disguise_mappings), bool(opts.disguise_defaults), list(opts.disguise_hosts))
            check_passthrough(new.hosts)
        except (MappingError, ScopeError) as e:
            if self.config is None and self.guard.config is not None:
                # A script reload: mitmproxy runs this instance whatever configure says,
                # so it takes over the last valid configuration instead of none.
                self.config = self.guard.config
                log.error("disguise: configuration refused, the previous rule set stays in force: %s", e)
            raise exceptions.OptionsError(f"disguise: {e}") from None
        verb = "reloaded" if self.guard.config is not None else "loaded"
        self.config = new
        self.guard.config = new
        self.guard.failure = None
        self._failed = None
        log_loaded(new, verb)

    def _current(self) -> Config | None:
        """The configuration for a new flow; mapping files that changed are reloaded
        first. A change that does not load keeps the previous set (logged once)."""
        cfg = self.config
        if cfg is None:
            return None
        snap = mappings.snapshot(cfg.paths, cfg.defaults)
        if snap == cfg.snapshot or snap == self._failed:
            return cfg
        try:
            new = build_config(cfg.paths, cfg.defaults, [str(h) for h in cfg.hosts])
        except (MappingError, ScopeError) as e:
            self._failed = snap
            log.error("disguise: mapping files changed but do not load; the previous rule set stays in force: %s", e)
            return cfg
        self.config = new
        self.guard.config = new
        self._failed = None
        log_loaded(new, "reloaded")
        return new

    # -- requests --------------------------------------------------------------------------

    def _classify(self, flow: http.HTTPFlow, cfg: Config | None) -> tuple[str, Api | None]:
        r = flow.request
        hosts = cfg.hosts if cfg is not None else ()
        api = recognise(r.method, r.path)
        if hosts:
            mine = in_hosts(hosts, r.host, r.port, r.pretty_host)
        else:
            mine = known_host(r.host) or known_host(r.pretty_host) or reverse_mode(flow)
        shaped = api is not None or llm_shaped(r.path)
        if api is not None and (mine or not hosts):
            return ("ws" if websocket(flow) else "api"), api
        if mine or (shaped and not hosts):
            return ("ws" if websocket(flow) else "unknown"), None
        if shaped:
            log.info(
                "disguise: %s %s%s not masked: host %s is not in disguise_hosts",
                r.method, r.pretty_host, r.path.split("?", 1)[0], r.pretty_host,
            )  # fmt: skip
        return "skip", None

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        cfg = self.config
        kind, api = self._classify(flow, cfg)
        if kind != "skip":
            cfg = self._current()
        m = Mark("headers", kind, target(flow), cfg)
        self.guard.seen[flow.id] = m
        if kind == "skip" or not stream_risk(flow):
            return
        if cfg is None:
            return  # the Guard closes it: nothing here can be masked
        # mitmproxy would send this body upstream as it arrives: take it whole instead.
        limit = body_limit()
        req = flow.request
        if kind == "api" and api is not None:
            work = self._streamed_masker(flow, api, cfg)
        else:
            work = self._streamed_scanner(flow, kind, cfg)
        req.stream = Buffered(work, lambda msg: b"", limit)
        chunked(req)

    def _streamed_masker(self, flow: http.HTTPFlow, api: Api, cfg: Config) -> Callable[[bytes], bytes]:
        enc = flow.request.headers.get("content-encoding", "")
        path, headers = flow.request.path, list(flow.request.headers.items(multi=True))

        ctype = flow.request.headers.get("content-type", "")

        def work(raw: bytes) -> bytes:
            body = decode(raw, enc)
            try:
                masked, session = mask_request(body, api, cfg.rules, ctype)
            except NotTransformed:  # not what the route transforms: an unknown endpoint's body
                self._scan_unknown(body, ctype, cfg)
                return raw
            hit = leakguard.scan_request(path, headers, masked, cfg.rules, api, ctype)
            if hit is not None:
                raise LeakError(f"an original ({hit}) would have left unmasked")
            self.guard.flows[flow.id] = FlowState(api, cfg.rules.restorer(session.placeholders))
            note_masked(flow, api, session)
            self.inspect.masked(flow, api, body, session)
            return mencoding.encode(masked, enc) if enc else masked

        return work

    def _streamed_scanner(self, flow: http.HTTPFlow, kind: str, cfg: Config) -> Callable[[bytes], bytes]:
        enc = flow.request.headers.get("content-encoding", "")
        ctype = flow.request.headers.get("content-type", "")

        def work(raw: bytes) -> bytes:
            self._scan_unknown(decode(raw, enc), ctype, cfg)
            return raw

        return work

    @staticmethod
    def _scan_unknown(body: bytes, ctype: str, cfg: Config) -> None:
        hit = leakguard.scan_body(body, cfg.rules, None, ctype)
        if hit is not None and not ctx.options.disguise_allow_unknown:
            raise LeakError(f"an original ({hit}) in a request to an endpoint disguise does not transform")

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None and not flow.live:
            self._offline(flow)
            return
        m = self.guard.seen.get(flow.id)
        if m is None:  # requestheaders ran before this instance existed
            self.requestheaders(flow)
            m = self.guard.seen.get(flow.id)
            if m is None:
                return
        try:
            later = self._request(flow, m)
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            log_internal(log, "request", e)
            if flow.response is None:
                refuse(flow, f"disguise: request refused: internal error ({type(e).__name__})", 500)
            later = None
        if later is not None:
            return self._then(later, m)  # type: ignore[return-value]  # mitmproxy awaits it
        m.stage = "request"

    async def _then(self, later: Awaitable[None], m: Mark) -> None:
        await later
        m.stage = "request"

    def _offline(self, flow: http.HTTPFlow) -> None:
        """`mitmdump -nr` of a recorded flow: re-run or dry-run it (capture.Inspector);
        nothing leaves."""
        cfg = self.config
        if cfg is None:
            return
        kind, api = self._classify(flow, cfg)
        self.inspect.before_request(flow, cfg.rules, api if kind == "api" else None)

    def _request(self, flow: http.HTTPFlow, m: Mark) -> Awaitable[None] | None:
        if flow.response is not None or m.kind == "skip":
            return None
        cfg = m.config
        api = recognise(flow.request.method, flow.request.path) if m.kind == "api" else None
        if cfg is None:
            msg = f"disguise: request refused: {self.guard._why()}"
            log.error(msg)
            refuse(flow, msg, 503)
            return None
        stream = flow.request.stream
        if isinstance(stream, Buffered):
            if stream.finished:
                m.streamed = True
                if stream.error is not None:
                    msg = f"request not masked (refused): {stream.error}"
                    log.error("disguise: %s", msg)
                    self.guard.flows[flow.id] = FlowState(api or error_api(flow), None, refusal=msg)
                return None
            flow.request.stream = False  # no body came: handled as usual below
        elif stream:
            msg = "disguise: request refused: its body was streamed past the addon"
            log.error(msg)
            refuse(flow, msg)
            return None
        if m.kind == "ws":
            self._unknown(flow, cfg, websocket=True)
        elif m.kind == "unknown":
            self._unknown(flow, cfg)
        elif api is not None:
            # client replay: the client's own body goes back in, to be masked afresh
            if self.inspect.before_request(flow, cfg.rules, api):
                return None
            return self._mask(flow, api, cfg)
        return None

    def _unknown(self, flow: http.HTTPFlow, cfg: Config, websocket: bool = False) -> None:
        """An endpoint disguise does not transform, on a protected host: it may leave
        only if it holds no original (or the user allowed it)."""
        r = flow.request
        allowed = ctx.options.disguise_allow_unknown
        where = f"{r.method} {r.path.split('?', 1)[0]}"
        if websocket:
            if allowed:
                log.warning("disguise: %s: WebSocket messages are not masked (disguise_allow_unknown)", where)
                return
            msg = f"disguise: request refused: {where}: WebSocket traffic cannot be masked"
            log.warning(msg)
            refuse(flow, msg)
            return
        try:
            body = r.get_content(strict=True)
        except ValueError:
            body = None
            hit: leakguard.Hit | None = leakguard.Hit("unknown", "a body whose content-encoding cannot be decoded")
        else:
            hit = leakguard.scan_request(r.path, r.headers.items(multi=True), body, cfg.rules, None,
                                         r.headers.get("content-type", ""))  # fmt: skip
        if hit is None:
            return
        if allowed:
            log.warning("disguise: %s holds an original (%s): forwarded (disguise_allow_unknown)", where, hit)
            return
        msg = (
            f"disguise: request refused: {where} is not an endpoint disguise transforms, and it holds "
            f"an original ({hit}); set disguise_allow_unknown to forward such requests"
        )
        log.warning(msg)
        refuse(flow, msg)

    def _mask(self, flow: http.HTTPFlow, api: Api, cfg: Config) -> Awaitable[None] | None:
        """Mask the request body. A large body of a live flow is masked in a worker
        thread (returned: an awaitable the hook hands to mitmproxy), so that other flows
        go on meanwhile: hooks run on mitmproxy's event loop, where a 1 MB body held
        every other stream still for about 0.1 s."""
        try:
            try:
                raw = flow.request.get_content(strict=True)
            except ValueError as e:  # its text quotes the body's first bytes: not used
                enc = flow.request.headers.get("content-encoding", "")
                raise MaskError(f"cannot decode the request body (content-encoding {enc!r})") from e
            if raw is None:
                raise MaskError("request has no body")
        except MaskError as e:
            self._unmaskable(flow, api, e)
            return None
        ctype = flow.request.headers.get("content-type", "")
        if len(raw) >= OFF_LOOP_BYTES and flow.live:
            return self._mask_off_loop(flow, api, cfg, raw, ctype)
        self._masked(flow, api, cfg, raw, mask_work(raw, api, cfg, ctype))
        return None

    async def _mask_off_loop(self, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes, ctype: str) -> None:
        try:
            result = await asyncio.to_thread(mask_work, raw, api, cfg, ctype)
        except Exception as e:  # noqa: BLE001 - mask_work catches; this is the thread machinery failing
            result = e  # type: ignore[assignment]
        self._masked(flow, api, cfg, raw, result)

    def _masked(self, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes, result) -> None:
        """Apply what mask_work gave: the masked body, or the error that refuses it."""
        if isinstance(result, NotTransformed):
            # the route's body model does not take this body (a file upload that is no
            # batch): it may leave only as a request to an unknown endpoint would
            m = self.guard.seen.get(flow.id)
            if m is not None:
                m.kind = "unknown"
            self._unknown(flow, cfg)
            return
        if isinstance(result, Exception):
            e = result
            if isinstance(e, MaskError):
                self._unmaskable(flow, api, e, fail_open=not isinstance(e, NeverForward))
            else:
                log_internal(log, "masking failed", e)
                self._unmaskable(flow, api, MaskError(f"internal error ({type(e).__name__})"), fail_open=False)
            return
        masked, session = result
        if masked is not raw:
            flow.request.content = masked
        # Ask for an uncompressed answer: the stream callable sees bytes before
        # content decoding (decoders below handle an upstream that ignores this).
        flow.request.anticomp()
        self.guard.flows[flow.id] = FlowState(api, cfg.rules.restorer(session.placeholders))
        note_masked(flow, api, session)
        self.inspect.masked(flow, api, raw, session)  # keeps the client's side, per-rule counts

    def _unmaskable(self, flow: http.HTTPFlow, api: Api, e: Exception, fail_open: bool = True) -> None:
        msg = f"disguise: request not masked: {e}"
        if fail_open and ctx.options.disguise_fail_open:
            log.warning("%s (forwarded unchanged: disguise_fail_open)", msg)
            self.inspect.refused(flow, api, str(e), forwarded=True)
            m = self.guard.seen.get(flow.id)
            if m is not None:
                m.kind = "skip"  # what the user asked for: the Guard lets it pass
                m.target = target(flow)
            return
        log.warning("%s (refused)", msg)
        flow.response = http.Response.make(
            400, api.error_body(msg), {"content-type": "application/json", "x-disguise": "refused"}
        )
        flow.comment = msg
        self.inspect.refused(flow, api, str(e))

    # -- responses -----------------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        st = self.guard.flows.get(flow.id)
        resp = flow.response
        if st is None or resp is None:
            return
        st.headers_done = True
        if st.refusal is not None:
            replace_with_error(flow, st, 400)
            return
        assert st.restorer is not None
        self.inspect.upstream_headers(flow)  # before any header changes
        if flow.is_replay == "response":
            # server replay: the body is whole already and mitmproxy never calls a stream
            # callable for a response set in the request hook; the response hook restores it
            return
        st.encoding = resp.headers.get("content-encoding", "")
        ctype = resp.headers.get("content-type", "")
        # Streamed unless labelled JSON: the core tells an event stream by its first
        # bytes, whatever the label, and restores any other body whole at its end.
        stream = reverser_for(st.api, st.restorer, ctype, flow.request.path)
        if stream is not None:
            st.stream = stream
            fix_headers(resp)
            try:
                stream.decoder = decoder_for(st.encoding)
            except StreamError as e:
                resp.stream = self.inspect.tee(flow, Refused(stream.error_event(f"disguise: {e}")))
                self.inspect.failed(flow, f"stream could not be reversed: {e}")
                return
            resp.stream = self.inspect.tee(flow, StreamCall(stream, None))  # keeps both sides
            return
        if resp.stream or streams_large_bodies():
            # mitmproxy streams large bodies as they come (now, or once they pass the
            # limit): take this one whole and restore it at its end instead.
            enc, restorer, api, path = st.encoding, st.restorer, st.api, flow.request.path

            def work(raw: bytes) -> bytes:
                whole = reverser_for(api, restorer, ctype, path, buffered=True)
                assert whole is not None
                return whole.whole(decode(raw, enc))

            def on_error(msg: str) -> bytes:
                log.error("disguise: response not restored: %s", msg)
                return api.error_body(f"disguise: response not restored: {msg}")

            fix_headers(resp)
            resp.stream = self.inspect.tee(flow, Buffered(work, on_error, body_limit()))

    def response(self, flow: http.HTTPFlow) -> None:
        st = self.guard.flows.get(flow.id)
        if st is not None and flow.response is not None:
            self.inspect.before_restore(flow)  # the upstream side of a whole body, first
        self._restore(flow)
        if st is not None and st.restorer is not None:
            self.inspect.finish(flow, st.api, st.restorer, st.stream)  # the summary, last

    def _restore(self, flow: http.HTTPFlow) -> None:
        st = self.guard.flows.pop(flow.id, None)
        resp = flow.response
        if st is None or resp is None:
            return
        if st.refusal is not None:
            finish_error(flow, st)
            return
        assert st.restorer is not None
        if isinstance(inner(resp.stream), StreamCall | Buffered | Refused):
            self._note(flow, st)
            return
        try:
            body = resp.get_content(strict=True) or b""
        except ValueError:  # its text quotes the body's first bytes: not used
            enc = resp.headers.pop("content-encoding", "")
            resp.status_code = 502
            resp.set_content(
                st.api.error_body(f"disguise: response not reversed: cannot decode content-encoding {enc!r}")
            )
            self.inspect.failed(flow, f"response not reversed: cannot decode content-encoding {enc!r}")
            return
        try:
            ctype = resp.headers.get("content-type", "")
            stream = reverser_for(st.api, st.restorer, ctype, flow.request.path, buffered=True)
            assert stream is not None
            st.stream = stream
            new = stream.whole(body)  # an event stream or a whole body, by content
        except Exception as e:  # noqa: BLE001 - never hand the client an unreversed body
            log_internal(log, "response reversal failed", e)
            resp.status_code = 502
            resp.headers["content-type"] = "application/json"
            resp.content = st.api.error_body(
                f"disguise: response not reversed: internal error ({type(e).__name__})"
            )
            self.inspect.failed(flow, f"response not reversed: internal error ({type(e).__name__})")
            return
        if new is not body:
            resp.content = new
        self._note(flow, st)

    def _note(self, flow: http.HTTPFlow, st: FlowState) -> None:
        assert st.restorer is not None
        meta = flow.metadata.setdefault("disguise", {})
        meta["restored"] = st.restorer.restored
        meta["stripped"] = st.restorer.stripped
        if st.stream is not None:
            meta["events"] = st.stream.events_in
            meta["events_changed"] = st.stream.events_changed
        flow.comment = f"{flow.comment}, {st.restorer.restored} restored"

    def error(self, flow: http.HTTPFlow) -> None:
        self.guard.seen.pop(flow.id, None)
        st = self.guard.flows.pop(flow.id, None)
        if st is not None and st.restorer is not None:  # the summary, whatever ended the flow
            self.inspect.finish(flow, st.api, st.restorer, st.stream, error=True)

