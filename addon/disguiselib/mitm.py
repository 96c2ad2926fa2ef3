"""The mitmproxy adapter: options, hooks and the stream callables. Thin on purpose:
everything that turns bytes into bytes lives in the sans-IO core.

Two addons. `Disguise` is what `-s addon/disguise.py` builds: it declares the options,
loads the mapping files and masks and restores. `Guard` is registered once per
mitmproxy process, on the master's own addon chain, the first time a Disguise loads;
it outlives script reloads and checks every flow last:

- mitmproxy drops a script without a word when one of its options gets a bad value (a
  duplicated `--set`, `yes` for a bool): no Disguise hook runs at all. A protected
  request that no Disguise has handled is refused by the Guard.
- A script reload builds a new Disguise; if its configuration fails, mitmproxy runs it
  anyway. The Guard keeps the last valid configuration, which the new instance takes
  over, and the per-flow state, so in-flight responses are still restored.
- It runs after every other addon, so it sees the bytes that will actually leave: the
  outbound leak guard (leakguard.py) looks at them one last time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mitmproxy import ctx, exceptions, http
from mitmproxy.net import encoding as mencoding
from mitmproxy.utils import human

from . import engine, leakguard, mappings
from .capture import Inspector
from .decoding import Decoder, decoder_for
from .engine import Api, HostRule, in_hosts, known_host, llm_shaped, parse_hosts, recognise
from .errors import DisguiseError, LeakError, MappingError, MaskError, NeverForward, ScopeError, StreamError
from .providers import anthropic, openai
from .providers.base import BodyStream, SSEStream, mask_body
from .rules import Restorer, Rules

log = logging.getLogger("disguise")

DEFAULT_MAPPINGS = str(Path(__file__).resolve().parents[2] / "mappings")
OPTIONS = frozenset(
    {"disguise_mappings", "disguise_defaults", "disguise_hosts", "disguise_fail_open", "disguise_allow_unknown"}
)
GUARD_NAME = "disguise_guard"


def _log_internal(what: str, e: Exception) -> None:
    """A bug's exception text can hold an original (a KeyError's key): at the default
    level only its type is logged; the traceback goes to debug."""
    log.error("disguise: %s: internal error (%s)", what, type(e).__name__)
    log.debug("disguise: %s", what, exc_info=True)


def _reason(e: Exception) -> str:
    """What may be shown of an exception: our own messages never quote an original."""
    return str(e) if isinstance(e, DisguiseError) else f"internal error ({type(e).__name__})"


# -- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One valid configuration: compiled rules, the scope and what they came from."""

    rules: Rules
    hosts: tuple[HostRule, ...]
    paths: tuple[str, ...]
    defaults: bool
    snapshot: tuple
    # The literals turned around (disguise -> original): finds a disguise the client
    # itself typed (its restoration cannot be told apart from ours).
    disguises: Rules | None

    def describe(self) -> str:
        ms = self.rules.mappings
        hosts = ", ".join(map(str, self.hosts)) if self.hosts else "every host"
        return (
            f"{len(ms.files)} file(s) [{', '.join(ms.files)}]: {len(ms.literals)} literals, "
            f"{len(ms.patterns)} patterns, {len(ms.strips)} strip rules; scope: {hosts}; "
            f"APIs: {', '.join(engine.APIS)}; other requests to "
            f"{'these hosts' if self.hosts else 'known LLM hosts and in reverse mode'} are scanned"
        )


def build_config(paths: Sequence[str], defaults: bool, hosts: Sequence[str]) -> Config:
    """Load and compile everything. Raises MappingError or ScopeError."""
    host_rules = parse_hosts(hosts)
    snap = mappings.snapshot(paths, defaults)
    ms = mappings.load_layers(paths, defaults)
    try:
        rules = Rules(ms)
    except Exception as e:  # a rule set that compiles alone but not combined
        raise MappingError(f"{', '.join(ms.files)}: rules do not compile together: {type(e).__name__}: {e}") from e
    disguises = None
    if ms.literals:
        turned = tuple(mappings.Literal(lit.disguise, lit.original, lit.source) for lit in ms.literals)
        disguises = Rules(mappings.MappingSet(literals=turned))
    return Config(rules, host_rules, tuple(paths), defaults, snap, disguises)


def _log_loaded(cfg: Config, verb: str) -> None:
    ms = cfg.rules.mappings
    for w in ms.warnings:
        log.warning("disguise: %s", w)
    for r in ms.replaced:
        log.info("disguise: %s", r)
    log.info("disguise: rules %s: %s", verb, cfg.describe())


def _reverse_mode(flow: http.HTTPFlow) -> bool:
    mode = getattr(flow.client_conn, "proxy_mode", None)
    return type(mode).__name__ == "ReverseMode"


def _target(flow: http.HTTPFlow) -> tuple:
    r = flow.request
    return (r.method, r.scheme, r.host, r.port, r.path)


def _websocket(flow: http.HTTPFlow) -> bool:
    h = flow.request.headers
    return "websocket" in h.get("upgrade", "").lower()


def _fallback_protected(flow: http.HTTPFlow, hosts: tuple[HostRule, ...]) -> bool:
    """Without a working configuration: could this request carry what must be masked?
    Any LLM-shaped path, any request to a known LLM host, every request in reverse mode
    (its upstream is the provider), and the last configured hosts."""
    r = flow.request
    return bool(
        recognise(r.method, r.path)
        or llm_shaped(r.path)
        or known_host(r.host)
        or known_host(r.pretty_host)
        or _reverse_mode(flow)
        or (hosts and in_hosts(hosts, r.host, r.port, r.pretty_host))
    )


def error_body_for(flow: http.HTTPFlow, message: str) -> bytes:
    """An error in the shape of the provider the request was meant for."""
    r = flow.request
    api = recognise("POST", r.path)
    if api is not None:
        return api.error_body(message)
    if "/messages" in r.path or "anthropic" in r.pretty_host:
        return anthropic.error_body(message)
    return openai.error_body(message)


def _refuse(flow: http.HTTPFlow, message: str, status: int = 400) -> None:
    flow.response = http.Response.make(
        status, error_body_for(flow, message), {"content-type": "application/json", "x-disguise": "refused"}
    )
    flow.comment = message


def _stream_risk(flow: http.HTTPFlow) -> bool:
    """Could mitmproxy hand this request's body upstream as it arrives, past the
    `request` hook? It does with `stream_large_bodies` for a body over the limit —
    decided before requestheaders when the length is known, and while the body arrives
    (no hook) when it is not."""
    if flow.request.stream:
        return True
    try:
        limit = human.parse_size(getattr(ctx.options, "stream_large_bodies", None))
    except ValueError:
        return True
    if limit is None:
        return False
    length = flow.request.headers.get("content-length", "")
    return not (length.isdigit() and int(length) <= limit)


def _streams_large_bodies() -> bool:
    # a proxyserver option: absent where no proxy server is loaded (unit tests, tools)
    return bool(getattr(ctx.options, "stream_large_bodies", None))


def _body_limit() -> int | None:
    try:
        return human.parse_size(ctx.options.body_size_limit)
    except (ValueError, AttributeError):
        return None


def _chunked(msg: http.Message) -> None:
    """Headers for a body whose length changes while it streams."""
    msg.headers.pop("content-length", None)
    if msg.http_version.startswith("HTTP/1"):
        msg.headers["transfer-encoding"] = "chunked"


# -- per-flow state ------------------------------------------------------------------------


@dataclass
class Mark:
    """What a Disguise decided for a request; the Guard checks it last."""

    stage: str  # "headers" or "request": the last Disguise hook that handled the flow
    kind: str  # "skip" | "api" | "unknown" | "ws" | "refused"
    target: tuple
    config: Config | None
    streamed: bool = False


@dataclass
class _FlowState:
    api: Api
    restorer: Restorer | None
    stream: BodyStream | SSEStream | None = None
    encoding: str = ""
    headers_done: bool = False
    refusal: str | None = None  # a streamed request that could not be masked


# -- stream callables ------------------------------------------------------------------------


class StreamCall:
    """mitmproxy's stream callable for one SSE response.

    Never raises (an exception here would drop a chunk or hang the client), never
    returns b"" mid-stream (on HTTP/1.1 chunked that is the end-of-body marker): on a
    failure the client gets an explicit error event and nothing more.
    """

    def __init__(self, stream: BodyStream | SSEStream, decoder: Decoder | None) -> None:
        self.stream = stream
        self.decoder = decoder
        self.dead = False

    def __call__(self, data: bytes) -> bytes | list[bytes]:
        if self.dead:
            return []
        try:
            if data:
                if self.decoder is not None:
                    data = self.decoder.decompress(data)
                out = self.stream.feed(data)
            else:
                if self.stream.finished:
                    return []  # the final call can come twice (mitmproxy 11, HTTP/2)
                tail = self.decoder.flush() if self.decoder is not None else b""
                out = (self.stream.feed(tail) if tail else b"") + self.stream.flush()
        except Exception as e:  # noqa: BLE001 - every failure must reach the client
            self.dead = True
            reason = str(e) if isinstance(e, DisguiseError) else type(e).__name__
            log.error("disguise: stream could not be reversed: %s", reason)
            return [self.stream.error_event(f"disguise: stream could not be reversed: {reason}")]
        return [out] if out else []


class _Refused:
    """A stream that cannot be reversed: the client gets one error body, nothing else."""

    dead = True  # failed closed (read by capture.Tee)

    def __init__(self, err: bytes) -> None:
        self.err: bytes | None = err

    def __call__(self, data: bytes) -> list[bytes]:
        err, self.err = self.err, None
        return [err] if err else []


class Buffered:
    """A stream callable that lets nothing through until the body is complete, then
    hands it to `work` whole and emits the result. For bodies mitmproxy would otherwise
    stream past the addon (stream_large_bodies): masked completely or not sent.

    `work` raises to refuse; then `on_error(message)` says what goes out instead (b"":
    nothing). Over `limit` bytes nothing more is buffered and the body is refused."""

    def __init__(self, work: Callable[[bytes], bytes], on_error: Callable[[str], bytes], limit: int | None) -> None:
        self.work = work
        self.on_error = on_error
        self.limit = limit
        self.buf = bytearray()
        self.finished = False
        self.error: str | None = None

    def __call__(self, data: bytes) -> list[bytes]:
        if self.finished:
            return []
        if data:
            if self.error is None:
                self.buf += data
                if self.limit is not None and len(self.buf) > self.limit:
                    self.error = f"body exceeds body_size_limit ({self.limit} bytes)"
                    self.buf = bytearray()
            return []
        self.finished = True
        if self.error is None:
            try:
                out = self.work(bytes(self.buf))
            except Exception as e:  # noqa: BLE001 - decided here what leaves
                if not isinstance(e, DisguiseError):
                    _log_internal("buffered body", e)
                self.error = _reason(e)
            else:
                return [out] if out else []
            finally:
                self.buf = bytearray()
        err = self.on_error(self.error)
        return [err] if err else []


# -- the Guard -----------------------------------------------------------------------------


class Guard:
    """Last in the addon chain, once per process (see the module docstring)."""

    name = GUARD_NAME

    def __init__(self) -> None:
        self.config: Config | None = None  # the last valid configuration of any Disguise
        # Why no Disguise may be running (option errors). Not `error`: that is a hook name.
        self.failure: str | None = None
        self.seen: dict[str, Mark] = {}
        self.flows: dict[str, _FlowState] = {}

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
        return g

    def _why(self) -> str:
        return self.failure or "no valid disguise configuration is active (see the error logged above)"

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        m = self.seen.get(flow.id)
        if m is None:
            hosts = self.config.hosts if self.config else ()
            if _fallback_protected(flow, hosts) and _stream_risk(flow):
                log.error("disguise: %s: %s (connection closed)", flow.request.path, self._why())
                _stop(flow, self._why())
            return
        if m.kind != "skip" and flow.request.stream and not isinstance(flow.request.stream, Buffered):
            # another addon switched streaming on after Disguise: the body would go out as it comes
            log.error("disguise: %s: the request body would be streamed unmasked (connection closed)", m.kind)
            _stop(flow, "the request body would be streamed unmasked")

    def request(self, flow: http.HTTPFlow) -> None:
        m = self.seen.pop(flow.id, None)
        if flow.response is not None:
            return
        if m is None or m.stage != "request":
            hosts = self.config.hosts if self.config else ()
            if (m is not None and m.kind != "skip") or _fallback_protected(flow, hosts):
                msg = f"disguise: request refused: {self._why()}"
                log.error("%s (%s %s)", msg, flow.request.method, flow.request.pretty_host)
                self.flows.pop(flow.id, None)
                _refuse(flow, msg, 503)
            return
        cfg = m.config
        if cfg is None:
            return
        if m.kind == "skip":
            if _target(flow) != m.target:
                # rewritten by a later addon (map_remote, a script): look again
                if _fallback_protected(flow, cfg.hosts):
                    msg = "disguise: request refused: its target was rewritten to a protected endpoint after masking"
                    log.error(msg)
                    _refuse(flow, msg)
            return
        if m.kind == "api" and not m.streamed:
            r = flow.request
            args = (r.path, list(r.headers.items(multi=True)), r.get_content(strict=False), cfg.rules)
            if args[2] is not None and len(args[2]) >= OFF_LOOP_BYTES and flow.live:
                return self._leak_check_off_loop(flow, args)  # type: ignore[return-value]  # awaited
            self._leak_verdict(flow, _leak_scan(*args))
        return None

    async def _leak_check_off_loop(self, flow: http.HTTPFlow, args: tuple) -> None:
        """The leak guard's scan of a large body, in a worker thread (see _mask)."""
        try:
            hit = await asyncio.to_thread(_leak_scan, *args)
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
            hit = leakguard.Hit("internal error", type(e).__name__)
        self._leak_verdict(flow, hit)

    def _leak_verdict(self, flow: http.HTTPFlow, hit: leakguard.Hit | None) -> None:
        if hit is not None:
            msg = f"disguise: request refused by the leak guard: an original ({hit}) would have left unmasked"
            log.error(msg)
            self.flows.pop(flow.id, None)
            _refuse(flow, msg)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        st = self.flows.get(flow.id)
        resp = flow.response
        if st is None or resp is None or st.headers_done:
            return
        # No Disguise looked at this response (its script went away mid-flow): it
        # cannot be restored, so the client gets an explicit error instead.
        st.refusal = st.refusal or "response not restored: the disguise addon is no longer loaded"
        _replace_with_error(flow, st, 502)

    def response(self, flow: http.HTTPFlow) -> None:
        st = self.flows.pop(flow.id, None)
        if st is None:
            return
        resp = flow.response
        if resp is None or isinstance(_inner(resp.stream), StreamCall | Buffered | _Refused):
            return
        st.refusal = st.refusal or "response not restored: the disguise addon is no longer loaded"
        _finish_error(flow, st)

    def error(self, flow: http.HTTPFlow) -> None:
        self.seen.pop(flow.id, None)
        self.flows.pop(flow.id, None)


def _stop(flow: http.HTTPFlow, why: str) -> None:
    """Before the body arrives, when mitmproxy may stream it: a refusal would crash the
    HTTP layer (a response and a streamed request at once), so the connection is
    closed; nothing has gone upstream. A replayed flow cannot be killed: refused."""
    if flow.killable:
        flow.kill()
    else:
        flow.request.stream = False
        _refuse(flow, f"disguise: request refused: {why}", 503)


def _replace_with_error(flow: http.HTTPFlow, st: _FlowState, status: int) -> None:
    """At responseheaders: the client gets st.refusal in the provider's shape, never
    upstream's body."""
    resp = flow.response
    assert resp is not None and st.refusal is not None
    resp.status_code = status
    resp.reason = ""
    resp.headers.pop("content-encoding", None)
    resp.headers["content-type"] = "application/json"
    resp.headers["x-disguise"] = "refused"
    _chunked(resp)
    resp.stream = _Refused(st.api.error_body(f"disguise: {st.refusal}"))
    st.headers_done = True


def _finish_error(flow: http.HTTPFlow, st: _FlowState) -> None:
    """At response, for a body that was not streamed: replace it."""
    resp = flow.response
    assert resp is not None and st.refusal is not None
    if isinstance(_inner(resp.stream), _Refused):
        return
    resp.stream = False
    resp.headers.pop("content-encoding", None)
    resp.headers.pop("transfer-encoding", None)
    resp.headers["content-type"] = "application/json"
    resp.headers["x-disguise"] = "refused"
    if resp.status_code < 400:
        resp.status_code = 502
    resp.content = st.api.error_body(f"disguise: {st.refusal}")


# -- the addon ------------------------------------------------------------------------------


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
            _check_passthrough(new.hosts)
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
        _log_loaded(new, verb)

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
        _log_loaded(new, "reloaded")
        return new

    # -- requests --------------------------------------------------------------------------

    def _classify(self, flow: http.HTTPFlow, cfg: Config | None) -> tuple[str, Api | None]:
        r = flow.request
        hosts = cfg.hosts if cfg is not None else ()
        api = recognise(r.method, r.path)
        if hosts:
            mine = in_hosts(hosts, r.host, r.port, r.pretty_host)
        else:
            mine = known_host(r.host) or known_host(r.pretty_host) or _reverse_mode(flow)
        shaped = api is not None or llm_shaped(r.path)
        if api is not None and (mine or not hosts):
            return ("ws" if _websocket(flow) else "api"), api
        if mine or (shaped and not hosts):
            return ("ws" if _websocket(flow) else "unknown"), None
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
        m = Mark("headers", kind, _target(flow), cfg)
        self.guard.seen[flow.id] = m
        if kind == "skip" or not _stream_risk(flow):
            return
        if cfg is None:
            return  # the Guard closes it: nothing here can be masked
        # mitmproxy would send this body upstream as it arrives: take it whole instead.
        limit = _body_limit()
        req = flow.request
        if kind == "api" and api is not None:
            work = self._streamed_masker(flow, api, cfg)
        else:
            work = self._streamed_scanner(flow, kind, cfg)
        req.stream = Buffered(work, lambda msg: b"", limit)
        _chunked(req)

    def _streamed_masker(self, flow: http.HTTPFlow, api: Api, cfg: Config) -> Callable[[bytes], bytes]:
        enc = flow.request.headers.get("content-encoding", "")
        path, headers = flow.request.path, list(flow.request.headers.items(multi=True))

        def work(raw: bytes) -> bytes:
            body = _decode(raw, enc)
            masked, session = mask_body(body, api.request_rule, cfg.rules)
            hit = leakguard.scan_request(path, headers, masked, cfg.rules, untouched=True)
            if hit is not None:
                raise LeakError(f"an original ({hit}) would have left unmasked")
            self.guard.flows[flow.id] = _FlowState(api, cfg.rules.restorer(session.placeholders))
            _note_masked(flow, api, session)
            self.inspect.masked(flow, api, body, session)
            return mencoding.encode(masked, enc) if enc else masked

        return work

    def _streamed_scanner(self, flow: http.HTTPFlow, kind: str, cfg: Config) -> Callable[[bytes], bytes]:
        enc = flow.request.headers.get("content-encoding", "")

        def work(raw: bytes) -> bytes:
            hit = leakguard.scan_body(_decode(raw, enc), cfg.rules, untouched=False)
            if hit is not None and not ctx.options.disguise_allow_unknown:
                raise LeakError(f"an original ({hit}) in a request to an endpoint disguise does not transform")
            return raw

        return work

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
            _log_internal("request", e)
            if flow.response is None:
                _refuse(flow, f"disguise: request refused: internal error ({type(e).__name__})", 500)
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
            _refuse(flow, msg, 503)
            return None
        stream = flow.request.stream
        if isinstance(stream, Buffered):
            if stream.finished:
                m.streamed = True
                if stream.error is not None:
                    msg = f"request not masked (refused): {stream.error}"
                    log.error("disguise: %s", msg)
                    self.guard.flows[flow.id] = _FlowState(api or _error_api(flow), None, refusal=msg)
                return None
            flow.request.stream = False  # no body came: handled as usual below
        elif stream:
            msg = "disguise: request refused: its body was streamed past the addon"
            log.error(msg)
            _refuse(flow, msg)
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
            _refuse(flow, msg)
            return
        try:
            body = r.get_content(strict=True)
        except ValueError:
            body = None
            hit: leakguard.Hit | None = leakguard.Hit("unknown", "a body whose content-encoding cannot be decoded")
        else:
            hit = leakguard.scan_request(r.path, r.headers.items(multi=True), body, cfg.rules, untouched=False)
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
        _refuse(flow, msg)

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
        if len(raw) >= OFF_LOOP_BYTES and flow.live:
            return self._mask_off_loop(flow, api, cfg, raw)
        self._masked(flow, api, cfg, raw, _mask_work(raw, api, cfg))
        return None

    async def _mask_off_loop(self, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes) -> None:
        try:
            result = await asyncio.to_thread(_mask_work, raw, api, cfg)
        except Exception as e:  # noqa: BLE001 - _mask_work catches; this is the thread machinery failing
            result = e  # type: ignore[assignment]
        self._masked(flow, api, cfg, raw, result)

    def _masked(self, flow: http.HTTPFlow, api: Api, cfg: Config, raw: bytes, result) -> None:
        """Apply what _mask_work gave: the masked body, or the error that refuses it."""
        if isinstance(result, Exception):
            e = result
            if isinstance(e, MaskError):
                self._unmaskable(flow, api, e, fail_open=not isinstance(e, NeverForward))
            else:
                _log_internal("masking failed", e)
                self._unmaskable(flow, api, MaskError(f"internal error ({type(e).__name__})"), fail_open=False)
            return
        masked, session = result
        if masked is not raw:
            flow.request.content = masked
        # Ask for an uncompressed answer: the stream callable sees bytes before
        # content decoding (decoders below handle an upstream that ignores this).
        flow.request.anticomp()
        self.guard.flows[flow.id] = _FlowState(api, cfg.rules.restorer(session.placeholders))
        _note_masked(flow, api, session)
        self.inspect.masked(flow, api, raw, session)  # keeps the client's side, per-rule counts

    def _unmaskable(self, flow: http.HTTPFlow, api: Api, e: Exception, fail_open: bool = True) -> None:
        msg = f"disguise: request not masked: {e}"
        if fail_open and ctx.options.disguise_fail_open:
            log.warning("%s (forwarded unchanged: disguise_fail_open)", msg)
            self.inspect.refused(flow, api, str(e), forwarded=True)
            m = self.guard.seen.get(flow.id)
            if m is not None:
                m.kind = "skip"  # what the user asked for: the Guard lets it pass
                m.target = _target(flow)
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
            _replace_with_error(flow, st, 400)
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
        stream = st.api.body_stream(st.restorer, ctype, flow.request.path)
        if stream is not None:
            st.stream = stream
            _fix_headers(resp)
            try:
                stream.decoder = decoder_for(st.encoding)
            except StreamError as e:
                resp.stream = self.inspect.tee(flow, _Refused(stream.error_event(f"disguise: {e}")))
                self.inspect.failed(flow, f"stream could not be reversed: {e}")
                return
            resp.stream = self.inspect.tee(flow, StreamCall(stream, None))  # keeps both sides
            return
        if resp.stream or _streams_large_bodies():
            # mitmproxy streams large bodies as they come (now, or once they pass the
            # limit): take this one whole and restore it at its end instead.
            enc, restorer, api, path = st.encoding, st.restorer, st.api, flow.request.path

            def work(raw: bytes) -> bytes:
                whole = api.body_stream(restorer, ctype, path, buffered=True)
                assert whole is not None
                return whole.whole(_decode(raw, enc))

            def on_error(msg: str) -> bytes:
                log.error("disguise: response not restored: %s", msg)
                return api.error_body(f"disguise: response not restored: {msg}")

            _fix_headers(resp)
            resp.stream = self.inspect.tee(flow, Buffered(work, on_error, _body_limit()))

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
            _finish_error(flow, st)
            return
        assert st.restorer is not None
        if isinstance(_inner(resp.stream), StreamCall | Buffered | _Refused):
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
            stream = st.api.body_stream(st.restorer, ctype, flow.request.path, buffered=True)
            assert stream is not None
            st.stream = stream
            new = stream.whole(body)  # an event stream or a whole body, by content
        except Exception as e:  # noqa: BLE001 - never hand the client an unreversed body
            _log_internal("response reversal failed", e)
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

    def _note(self, flow: http.HTTPFlow, st: _FlowState) -> None:
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


# -- helpers -------------------------------------------------------------------------------


def _inner(stream: object) -> object:
    """A stream callable, unwrapped from the inspection Tee around it."""
    return getattr(stream, "inner", stream)


# Request bodies from this size on are masked in a worker thread (thread handoff costs
# tens of microseconds; masking 64 KiB about 2 ms).
OFF_LOOP_BYTES = 64 * 1024


def _leak_scan(path: str, headers: list, body: bytes | None, rules: Rules) -> leakguard.Hit | None:
    """The leak guard's scan of what is about to leave; a failing check is a hit."""
    try:
        return leakguard.scan_request(path, headers, body, rules, untouched=True)
    except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
        _log_internal("leak guard", e)
        return leakguard.Hit("internal error", type(e).__name__)


def _mask_work(raw: bytes, api: Api, cfg: Config):
    """Masking proper, safe to run in a worker thread (the rules are read-only; the
    prefilter keeps a scratch space per thread): (masked body, session), or the
    exception that refuses the request."""
    try:
        if cfg.disguises is not None:
            _warn_present_disguise(raw, cfg.disguises)
        return mask_body(raw, api.request_rule, cfg.rules)
    except Exception as e:  # noqa: BLE001 - handed back, decided by the caller
        return e


def _fix_headers(resp: http.Response) -> None:
    resp.headers.pop("content-encoding", None)
    _chunked(resp)


def _decode(raw: bytes, enc: str) -> bytes:
    if not enc or enc.strip().lower() == "identity":
        return raw
    try:
        out = mencoding.decode(raw, enc)
    except ValueError:
        raise MaskError(f"cannot decode a body with content-encoding {enc!r}") from None
    assert isinstance(out, bytes)
    return out


def _error_api(flow: http.HTTPFlow) -> Api:
    api = recognise("POST", flow.request.path)
    return api if api is not None else engine.OPENAI_CHAT


def _note_masked(flow: http.HTTPFlow, api: Api, session) -> None:
    flow.metadata["disguise"] = {
        "api": api.name,
        "masked": session.masked,
        "placeholders": len(session.placeholders),
    }
    flow.comment = f"disguise: {api.name}: {session.masked} masked"


def _warn_present_disguise(raw: bytes, disguises: Rules) -> None:
    """The client typed a disguise itself: the answer's copy of it will be restored to
    the original, indistinguishable from ours. Thinking and other untouched spans hold
    disguises by design (they went out masked and come back as they were) and are not
    looked at."""
    try:
        hit = leakguard.scan_body(raw, disguises, untouched=True)
    except Exception:  # noqa: BLE001 - a warning only; masking decides the rest
        return
    if hit is not None:
        log.warning(
            "disguise: the request already holds a disguise (at %s): in the answer it will be restored "
            "to its original like the ones disguise put there",
            hit.where,
        )


def _check_passthrough(hosts: tuple[HostRule, ...]) -> None:
    """mitmproxy passes `ignore_hosts` (and hosts outside `allow_hosts`) through
    encrypted: no addon ever sees that traffic, so nothing of it could be masked."""
    import re

    opts = ctx.options
    ignore = list(getattr(opts, "ignore_hosts", []) or [])
    allow = list(getattr(opts, "allow_hosts", []) or [])
    if not ignore and not allow:
        return
    names = [h.host for h in hosts] if hosts else [h for h in engine.KNOWN_HOSTS if "." in h]
    for h in names:
        for port in (443,):
            addr = f"{h}:{port}"
            ignored = any(re.search(rx, addr, re.IGNORECASE) for rx in ignore)
            not_allowed = bool(allow) and not any(re.search(rx, addr, re.IGNORECASE) for rx in allow)
            if ignored or not_allowed:
                raise ScopeError(
                    f"{h} is passed through unintercepted ({'ignore_hosts' if ignored else 'allow_hosts'}): "
                    "disguise could not mask its traffic; narrow that option or set disguise_hosts"
                )


__all__ = ["Disguise", "Guard", "StreamCall", "Buffered", "Config", "build_config"]
