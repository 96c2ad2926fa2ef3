"""The Guard (adapter-level): registered once per mitmproxy process, last in the
addon chain, it refuses every protected request no working Disguise handled and looks
at the bytes that leave one last time. See mitm/__init__.py."""

from __future__ import annotations

import asyncio
import logging

from mitmproxy import exceptions, http

from .. import leakguard
from ..config import Config
from ..pipeline import OFF_LOOP_BYTES
from ..pipeline import leak_scan as _leak_scan
from ..providers.registry import recognise
from .callables import Buffered, Refused, StreamCall
from .flows import (
    FlowState,
    Mark,
    fallback_protected,
    finish_error,
    inner,
    refuse,
    replace_with_error,
    stop,
    stream_risk,
    target,
)

log = logging.getLogger("disguise")
GUARD_NAME = "disguise_guard"


class Guard:
    """Last in the addon chain, once per process (see the module docstring)."""

    name = GUARD_NAME

    def __init__(self) -> None:
        self.config: Config | None = None  # the last valid configuration of any Disguise
        # Why no Disguise may be running (option errors). Not `error`: that is a hook name.
        self.failure: str | None = None
        self.seen: dict[str, Mark] = {}
        self.flows: dict[str, FlowState] = {}

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
            if fallback_protected(flow, hosts) and stream_risk(flow):
                log.error("disguise: %s: %s (connection closed)", flow.request.path, self._why())
                stop(flow, self._why())
            return
        if m.kind != "skip" and flow.request.stream and not isinstance(flow.request.stream, Buffered):
            # another addon switched streaming on after Disguise: the body would go out as it comes
            log.error("disguise: %s: the request body would be streamed unmasked (connection closed)", m.kind)
            stop(flow, "the request body would be streamed unmasked")

    def request(self, flow: http.HTTPFlow) -> None:
        m = self.seen.pop(flow.id, None)
        if flow.response is not None:
            return
        if m is None or m.stage != "request":
            hosts = self.config.hosts if self.config else ()
            if (m is not None and m.kind != "skip") or fallback_protected(flow, hosts):
                msg = f"disguise: request refused: {self._why()}"
                log.error("%s (%s %s)", msg, flow.request.method, flow.request.pretty_host)
                self.flows.pop(flow.id, None)
                refuse(flow, msg, 503)
            return
        cfg = m.config
        if cfg is None:
            return
        if m.kind == "skip":
            if target(flow) != m.target:
                # rewritten by a later addon (map_remote, a script): look again
                if fallback_protected(flow, cfg.hosts):
                    msg = "disguise: request refused: its target was rewritten to a protected endpoint after masking"
                    log.error(msg)
                    refuse(flow, msg)
            return
        if m.kind == "api" and not m.streamed:
            r = flow.request
            args = (r.path, list(r.headers.items(multi=True)), r.get_content(strict=False), cfg.rules,
                    recognise(r.method, r.path), r.headers.get("content-type", ""))  # fmt: skip
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
            refuse(flow, msg)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        st = self.flows.get(flow.id)
        resp = flow.response
        if st is None or resp is None or st.headers_done:
            return
        # No Disguise looked at this response (its script went away mid-flow): it
        # cannot be restored, so the client gets an explicit error instead.
        st.refusal = st.refusal or "response not restored: the disguise addon is no longer loaded"
        replace_with_error(flow, st, 502)

    def response(self, flow: http.HTTPFlow) -> None:
        st = self.flows.pop(flow.id, None)
        if st is None:
            return
        resp = flow.response
        if resp is None or isinstance(inner(resp.stream), StreamCall | Buffered | Refused):
            return
        st.refusal = st.refusal or "response not restored: the disguise addon is no longer loaded"
        finish_error(flow, st)

    def error(self, flow: http.HTTPFlow) -> None:
        self.seen.pop(flow.id, None)
        self.flows.pop(flow.id, None)

