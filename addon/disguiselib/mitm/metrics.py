"""Prometheus metrics (adapter-level): what the addon decided and what it cost, served at
`http://HOST:PORT/metrics` when `disguise_metrics=HOST:PORT` is set (off by default),
with the official prometheus_client library. docs/operations.md lists the metrics.

No label carries text from a request or a response. Every label value comes from a
fixed set — the API (apis/registry.APIS, or `unknown` for an endpoint disguise
does not transform), the outcome, the rule kind, how a body ended — or from the rule
set in force: a pattern's name (`[A-Z][A-Z0-9_]*`, checked at load); every literal
counts as `literals` (a literal's own name would be its original).

Two addons around Disguise in the script's list (launch.addons): `Metrics` first (the
option, the server, the start of each hook it times) and `Metrics.tail` after Disguise
and its Inspector (the end of each timed hook; each flow record's transitions, through
its observer; the stream callable's time per read). Each Metrics has its own registry:
several instances in one process (a script reload, tests) never share a series.

A value that cannot be served (not HOST:PORT, a host that does not resolve, a port in
use) raises OptionsError in configure: at start-up mitmproxy logs it and exits; on a
script reload the Disguise after it is never configured, so every request is refused;
`set disguise_metrics=...` at run time is rolled back and the running server stays.
"""

from __future__ import annotations

import errno
import logging
import re
import socket
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from mitmproxy import ctx, exceptions, http

from ..apis.registry import APIS, BY_NAME
from ..rules.rules import LITERALS
from ..state import FlowRecord, Kind, Phase, Reading
from . import options
from .callables import StreamCall

if TYPE_CHECKING:  # imported where first used: a proxy whose metrics are off never does (180 ms, 0.6 MiB)
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import HistogramMetricFamily

log = logging.getLogger("disguise")

OPTION = "disguise_metrics"
PATH = "/metrics"
UNKNOWN_API = "unknown"  # an endpoint disguise does not transform (scanned, not masked)
OUTCOMES = ("masked", "refused", "passed")
RULE_KINDS = ("literal", "pattern", "none")
BODIES = ("stream", "whole", "websocket")
# How a response ended: restored; cut (the provider's stream ended before its last event:
# the client got an error event saying so); failed (the addon's own error).
ENDS = ("restored", "cut", "failed")
# The addon's time: a request hook takes from tens of microseconds (a small body) to a
# second (megabytes); a stream read from a few microseconds.
REQUEST_BUCKETS = (1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
READ_BUCKETS = (5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1)
# Hit.__str__ in a refusal's reason: "an original (EMAIL in body $.messages[0]...)"
_HIT = re.compile(r"an original \(([A-Za-z_][A-Za-z0-9_]*) in ")


def parse_address(value: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:9464` for IPv6) -> (host, port); OptionsError otherwise."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})|([^\s:\[\]/]+):([0-9]{1,5})", value.strip())
    port = int(m.group(2) or m.group(4)) if m else -1
    if m is None or port > 65535:
        raise exceptions.OptionsError(
            f"{OPTION}={value!r}: not HOST:PORT (for example 127.0.0.1:9464; [::1]:9464 for IPv6; empty: off)"
        )
    return m.group(1) or m.group(3), port


def _app(registry: CollectorRegistry) -> Callable:
    """prometheus_client's WSGI app at PATH; 404 elsewhere."""
    from prometheus_client import make_wsgi_app

    metrics = make_wsgi_app(registry)

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == PATH:
            return metrics(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"disguise: the metrics are at {PATH}\n".encode()]

    return app


class Server:
    """The metrics endpoint: prometheus_client's WSGI app on a threading WSGI server, in
    a daemon thread of its own (off mitmproxy's event loop: a scrape never holds a flow)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        # imported here: a proxy whose metrics are off never loads wsgiref (~0.15 MiB)
        from socketserver import ThreadingMixIn
        from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

        class _Server(ThreadingMixIn, WSGIServer):
            daemon_threads = True

        class _Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # a scrape is not worth a line on stderr
                pass

        try:
            _Server.address_family = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0][0]
            self.httpd = make_server(host, port, _app(registry), _Server, handler_class=_Quiet)
        except OSError as e:
            why = e.strerror or str(e)
            if e.errno == errno.EADDRINUSE:
                why = f"port {port} is in use on {host}"
            msg = f"{OPTION}={host}:{port}: the metrics cannot be served there: {why}"
            raise exceptions.OptionsError(msg) from None
        self.host = host
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="disguise-metrics", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{PATH}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class ReadHistogram:
    """A histogram per API of the time per stream read, counted with plain integers (a
    read costs a bisect and two additions, a fifth of prometheus_client's Histogram
    with its locks: it runs on mitmproxy's event loop for every read of every stream)
    and exposed as a Prometheus histogram when scraped (a custom collector, the
    library's way for values kept elsewhere). Only the event loop adds to it; a scrape
    from the server's thread reads it."""

    def __init__(self, name: str, doc: str, buckets: tuple[float, ...]) -> None:
        self.name, self.doc, self.bounds = name, doc, buckets
        self.series: dict[str, tuple[list[int], list[float]]] = {}  # api -> (count per bucket, +Inf last; [sum])

    def child(self, api: str) -> Callable[[float], None]:
        counts, total = self.series.setdefault(api, ([0] * (len(self.bounds) + 1), [0.0]))
        bounds = self.bounds

        def observe(seconds: float) -> None:
            counts[bisect_left(bounds, seconds)] += 1  # `le` is inclusive: the first bound >= seconds
            total[0] += seconds

        return observe

    def collect(self) -> Iterable[HistogramMetricFamily]:
        from prometheus_client.core import HistogramMetricFamily

        fam = HistogramMetricFamily(self.name, self.doc, labels=["api"])
        for api, (counts, total) in list(self.series.items()):
            snapshot, acc, cumulative = list(counts), 0, []
            for bound, n in zip((*map(str, self.bounds), "+Inf"), snapshot, strict=True):
                acc += n
                cumulative.append((bound, acc))
            fam.add_metric([api], cumulative, total[0])
        yield fam


class Instruments:
    """The counters and histograms, in one registry (see docs/operations.md)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        from prometheus_client import Counter, Histogram

        r = self.registry = registry
        self.requests = Counter("disguise_requests", "Requests to protected hosts the addon decided on, by API "
                                "(unknown: an endpoint it does not transform) and outcome (masked, refused, passed)",
                                ["api", "outcome"], registry=r)  # fmt: skip
        self.rule_kinds = Counter("disguise_request_rule_kinds", "Requests by outcome and the kind of rule that "
                                  "matched in them (literal, pattern; none: no rule); a request matched by both kinds "
                                  "counts once in each", ["rule_kind", "outcome"], registry=r)  # fmt: skip
        self.masks = Counter("disguise_masks", "Originals masked in requests, per rule (a pattern's name; every "
                             "literal counts as literals)", ["rule_kind", "rule"], registry=r)  # fmt: skip
        self.responses = Counter("disguise_responses", "Responses to masked requests by how they ended: restored; "
                                 "cut (the provider's stream ended before its last event: the client got an error "
                                 "event saying so); failed (the addon's own error: a stream ended with an error event, "
                                 "a body replaced by an error)", ["api", "body", "outcome"], registry=r)  # fmt: skip
        self.restored = Counter("disguise_restored", "Originals restored in responses", ["api"], registry=r)
        self.turns_cut = Counter("disguise_next_turns_cut", "Masked requests that were a conversation's next turn, "
                                 "masked from the turn before (only its new messages read)", ["api"],
                                 registry=r)  # fmt: skip
        self.events = Counter("disguise_stream_events", "Events of streamed responses read", ["api"], registry=r)
        self.reloads = Counter("disguise_reloads", "Rule set reloads (mapping files or options changed) by "
                               "outcome: ok, or failed (the previous rule set stays in force)", ["outcome"],
                               registry=r)  # fmt: skip
        self.request_seconds = Histogram("disguise_request_seconds", "The addon's time in a request's hook (masking "
                                         "and the leak check, a worker thread's included)", ["api", "outcome"],
                                         buckets=REQUEST_BUCKETS, registry=r)  # fmt: skip
        self.response_seconds = Histogram("disguise_response_seconds", "The addon's time restoring a whole "
                                          "(unstreamed) response body", ["api"], buckets=REQUEST_BUCKETS,
                                          registry=r)  # fmt: skip
        self.read_seconds = ReadHistogram("disguise_stream_read_seconds", "The addon's time per read of a streamed "
                                          "response (the events one network read brought: mostly one) or per "
                                          "realtime WebSocket message", READ_BUCKETS)  # fmt: skip
        r.register(self.read_seconds)
        # every series a dashboard or an alert divides by exists from the start, at 0
        for api in (*APIS, UNKNOWN_API):
            for outcome in OUTCOMES:
                self.requests.labels(api, outcome)
        for kind in RULE_KINDS:
            for outcome in OUTCOMES:
                self.rule_kinds.labels(kind, outcome)
        for api in APIS:
            for body in ("stream", "whole") if api in BY_NAME else ("websocket",):
                for end in ENDS:
                    self.responses.labels(api, body, end)
        for outcome in ("ok", "failed"):
            self.reloads.labels(outcome)
        for api in APIS:  # (those whose conversations are cut: registry.Api.turns)
            if getattr(BY_NAME.get(api), "turns", False):
                self.turns_cut.labels(api)
        self._children: dict[tuple, Any] = {}

    def of(self, metric: Any, *labels: str) -> Any:
        """metric.labels(*labels), remembered: prometheus_client checks and locks on
        every labels() call, a few microseconds that each flow would pay several times."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child


_APIS = frozenset(APIS)


def _api(rec: FlowRecord) -> str:
    name = getattr(rec.api, "name", None)
    return name if name in _APIS else UNKNOWN_API


def refusal_rule(rec: FlowRecord) -> tuple[str, str | None]:
    """(rule kind, pattern name) of the rule whose original a refusal names, read from
    its reason (leakguard.Hit) and kept only when the rule set in force has it."""
    m = _HIT.search(rec.reason or "")
    if m is None:
        return "none", None
    name = m.group(1)
    if name == "literal":
        return "literal", None
    rules = getattr(rec.config, "rules", None)
    patterns = {p.name for p in rules.mappings.patterns} if rules is not None else set()
    return ("pattern", name) if name in patterns else ("none", None)


class Timed:
    """A stream callable, timed per call (the read's time into `observe`)."""

    __slots__ = ("inner", "observe")

    def __init__(self, inner: Callable[[bytes], Any], observe: Callable[[float], None]) -> None:
        self.inner = inner
        self.observe = observe

    def __call__(self, data: bytes) -> Any:
        t = perf_counter()
        out = self.inner(data)
        self.observe(perf_counter() - t)
        return out

    @property
    def dead(self) -> bool:
        return bool(getattr(self.inner, "dead", False))


class _Observer:
    """A flow record's observer: the Inspector's first, then the metrics'."""

    __slots__ = ("inner", "metrics", "fid")

    def __init__(self, inner: Callable[[FlowRecord], None] | None, metrics: Metrics, fid: str) -> None:
        self.inner, self.metrics, self.fid = inner, metrics, fid

    def __call__(self, rec: FlowRecord) -> None:
        if self.inner is not None:
            self.inner(rec)
        self.metrics.transition(self.fid, rec)


_LAZY = frozenset({"m", "registry"})  # Metrics' properties that make the instruments


class Metrics:
    """The first of the two addons: the option, the server, the start of each timed hook.
    `tail` is the second."""

    def __init__(self, disguise: Any) -> None:
        self.disguise = disguise  # mitm/addon.Disguise: its Guard holds the flow records
        self._m: Instruments | None = None  # made when first used (`m`): the metrics turned on
        self.reloads = {"ok": 0, "failed": 0}  # counted meanwhile, the counter's start
        self.server: Server | None = None
        self.address: tuple[str, int] | None = None  # as the option gave it (port 0: any)
        self.started: dict[str, float] = {}  # flow id -> when its timed hook began
        self.pending: dict[str, tuple[FlowRecord, str]] = {}  # masked or passed: final once the request left
        self.tail = _Tail(self)

    def __dir__(self) -> list[str]:
        """All but the instruments made on first use: mitmproxy reads every attribute dir()
        names when it registers an addon (its command scan), which would import
        prometheus_client in every proxy (0.8 MiB idle) with the metrics off."""
        return [n for n in super().__dir__() if n not in _LAZY]

    @property
    def on(self) -> bool:
        return self.server is not None

    @property
    def registry(self) -> CollectorRegistry:
        return self.m.registry

    @property
    def m(self) -> Instruments:
        """The instruments, made (prometheus_client imported) when first used: when the
        metrics are turned on, or read. Reloads counted before start their counter."""
        if self._m is None:
            from prometheus_client import CollectorRegistry

            self._m = Instruments(CollectorRegistry())
            for outcome, n in self.reloads.items():
                self._m.reloads.labels(outcome).inc(n)
        return self._m

    # -- addon ---------------------------------------------------------------------------

    def load(self, loader) -> None:
        options.declare(loader, options.METRICS_OPTIONS)

    def configure(self, updated: set[str]) -> None:
        if OPTION not in updated:
            return
        value = str(ctx.options.disguise_metrics or "").strip()
        where = parse_address(value) if value else None
        old = self.server
        if old is not None and where == self.address:
            return  # the same value again (mitmproxy rolling back a refused change): the endpoint stays
        new = Server(*where, self.registry) if where is not None else None  # raises OptionsError
        self.server, self.address = new, where
        if old is not None:
            old.stop()
        if new is not None:
            log.info("disguise: metrics at %s", new.url)

    def done(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = self.address = None
        self.started.clear()
        self.pending.clear()

    def request(self, flow: http.HTTPFlow) -> None:
        if self.server is not None:
            self.started[flow.id] = perf_counter()

    def response(self, flow: http.HTTPFlow) -> None:
        if self.server is not None:
            self.started[flow.id] = perf_counter()

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        if self.server is not None:
            self.started[flow.id] = perf_counter()

    # -- what Disguise tells ---------------------------------------------------------------

    def reloaded(self, verb: str) -> None:
        """Disguise installed a rule set ("loaded": the first; "reloaded"), or refused
        one ("failed": a reload when a rule set ran before, which stays in force)."""
        if verb == "reloaded":
            outcome = "ok"
        elif verb == "failed" and self.disguise.guard.config is not None:
            outcome = "failed"
        else:
            return
        if self._m is None:  # off: a count, not an import on the event loop
            self.reloads[outcome] += 1
        else:
            self._m.reloads.labels(outcome).inc()

    # -- a flow's record -------------------------------------------------------------------

    def watch(self, flow: http.HTTPFlow) -> FlowRecord | None:
        """The flow's record, its observer chained to ours (once); a record whose
        request was decided before (Disguise made it in its request hook) is caught up."""
        rec = self.disguise.guard.records.get(flow.id)
        if rec is None or rec.kind is Kind.SKIP or isinstance(rec.observer, _Observer):
            return rec
        rec.observer = _Observer(rec.observer, self, flow.id)
        if rec.phase is not Phase.CLASSIFIED:
            self.transition(flow.id, rec)
        return rec

    def transition(self, fid: str, rec: FlowRecord) -> None:
        try:
            self._transition(fid, rec)
        except Exception as e:  # noqa: BLE001 - counting never stops a hook half-way
            log.error("disguise: metrics: internal error (%s)", type(e).__name__)

    def _transition(self, fid: str, rec: FlowRecord) -> None:
        p = rec.phase
        if p in (Phase.MASKED, Phase.PASSED):
            self.pending[fid] = (rec, p.value)  # the Guard, last, may still refuse it
        elif p is Phase.REFUSED:
            self.pending.pop(fid, None)
            self._decided(rec, "refused")
        else:
            self.flush(fid)
            if p in (Phase.RESTORED, Phase.FAILED):
                self._ended(rec)

    def flush(self, fid: str) -> None:
        """The request left as it was decided: count it."""
        got = self.pending.pop(fid, None)
        if got is not None:
            self._decided(*got)

    def _decided(self, rec: FlowRecord, outcome: str) -> None:
        m = self.m
        m.of(m.requests, _api(rec), outcome).inc()
        kinds: set[str] = set()
        if outcome == "masked" and rec.turn_cut:
            m.of(m.turns_cut, _api(rec)).inc()
        if outcome == "masked" and rec.session is not None and rec.config is not None:
            patterns = {p.name for p in rec.config.rules.mappings.patterns}
            for rule, n in rec.session.counts.items():
                if rule == LITERALS:
                    kinds.add("literal")
                    m.of(m.masks, "literal", LITERALS).inc(n)
                elif rule in patterns:
                    kinds.add("pattern")
                    m.of(m.masks, "pattern", rule).inc(n)
        elif outcome == "refused":
            kind, name = refusal_rule(rec)
            if kind != "none":
                kinds.add(kind)
        for kind in kinds or ("none",):
            m.of(m.rule_kinds, kind, outcome).inc()

    def _ended(self, rec: FlowRecord) -> None:
        api = _api(rec)
        if api == UNKNOWN_API:
            return
        streamed = rec.reading in (Reading.STREAMED, Reading.ERROR)
        body = "websocket" if rec.realtime is not None else "stream" if streamed else "whole"
        if rec.phase is Phase.FAILED:
            end = "failed"
        else:
            end = "cut" if body == "stream" and getattr(rec.reverser, "failed", False) else "restored"
        self.m.of(self.m.responses, api, body, end).inc()
        restored = getattr(rec.restorer, "restored", 0)
        if restored:
            self.m.of(self.m.restored, api).inc(restored)
        if body == "stream" and rec.reverser is not None:
            events = getattr(rec.reverser, "events_in", 0)
            if events:
                self.m.of(self.m.events, api).inc(events)


class _Tail:
    """The second addon, after Disguise and its Inspector: the end of each timed hook."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if self.metrics.on:
            self.metrics.watch(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        mt = self.metrics
        t0 = mt.started.pop(flow.id, None)
        if not mt.on:
            return
        rec = mt.watch(flow)
        if rec is None or rec.kind is Kind.SKIP or t0 is None:
            return
        outcome = {Phase.MASKED: "masked", Phase.REFUSED: "refused", Phase.PASSED: "passed"}.get(rec.phase)
        if outcome is not None:
            mt.m.of(mt.m.request_seconds, _api(rec), outcome).observe(perf_counter() - t0)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        mt = self.metrics
        if not mt.on:
            return
        mt.flush(flow.id)
        rec = mt.disguise.guard.records.get(flow.id)
        resp = flow.response
        if rec is None or resp is None or not isinstance(rec.call, StreamCall) or not resp.stream:
            return
        observe = mt.m.read_seconds.child(_api(rec))
        stream: Any = resp.stream
        if getattr(stream, "inner", None) is rec.call:  # the Inspector's Tee: time what it wraps
            stream.inner = Timed(stream.inner, observe)
        elif stream is rec.call:
            resp.stream = Timed(stream, observe)

    def response(self, flow: http.HTTPFlow) -> None:
        mt = self.metrics
        t0 = mt.started.pop(flow.id, None)
        if not mt.on:
            return
        mt.flush(flow.id)
        rec = mt.disguise.guard.records.get(flow.id)
        if t0 is not None and rec is not None and rec.upstream_body is not None and rec.realtime is None:
            mt.m.of(mt.m.response_seconds, _api(rec)).observe(perf_counter() - t0)  # a whole body restored

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        mt = self.metrics
        t0 = mt.started.pop(flow.id, None)
        if t0 is None or not mt.on:
            return
        rec = mt.disguise.guard.records.get(flow.id)
        if rec is not None and rec.realtime is not None:
            mt.m.read_seconds.child(_api(rec))(perf_counter() - t0)

    def error(self, flow: http.HTTPFlow) -> None:
        mt = self.metrics
        mt.started.pop(flow.id, None)
        if mt.on:
            mt.flush(flow.id)


__all__ = ["Metrics", "parse_address"]
