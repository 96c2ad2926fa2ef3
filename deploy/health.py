"""Health check and graceful stop for a load balancer, as a mitmproxy script loaded
*before* the addon:

    mitmdump -s deploy/health.py -s addon/disguise.py ...

Health: `GET /.well-known/disguise/health` (any host) is answered by this process itself
and never forwarded: 200 `ok: ...` while the disguise addon runs with a valid rule set,
503 with the reason otherwise (the addon script is not loaded, it was dropped for a bad
option, no valid mapping set is in force, the instance is stopping). Every other request
passes untouched: this opens no path around the addon. Loaded first, it answers in
`requestheaders`, before the addon or its Guard look at the flow; a response set there is
sent without contacting upstream. If this script itself is not loaded, the check goes to
the upstream provider as a plain GET without a body and fails there (404): the balancer
takes the instance out all the same.

Graceful stop: mitmproxy stops at SIGTERM at once, and for the moment it takes it still
accepts requests it will never answer (measured: ~0.8 s, the client gets a connection
error or HAProxy a 502). Here SIGTERM drains instead: the health check answers 503 at
once, requests keep being served normally for `health_drain_delay` seconds (until the
balancer has seen the failing checks: HAProxy's `fall 2` x `inter 1s`, plus a margin),
then the flows still open get up to `health_drain_timeout` seconds to finish, then
mitmproxy stops. A second SIGTERM stops at once; SIGINT is mitmproxy's own.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time

from mitmproxy import ctx, http

PATH = "/.well-known/disguise/health"
log = logging.getLogger("disguise")


def status(master, draining: bool = False) -> tuple[bool, str]:
    """(healthy, one line saying why) for the disguise addon on this master."""
    if draining:
        return False, "unhealthy: stopping (draining)"
    guard = master.addons.get("disguise_guard")
    failure = getattr(guard, "failure", None)
    if failure:
        return False, f"unhealthy: {failure}"
    addon = master.addons.get("disguise")
    if addon is None:
        return False, "unhealthy: the disguise addon is not loaded"
    rules = getattr(addon, "rules", None)
    if rules is None:
        return False, "unhealthy: no valid mapping set is in force"
    ms = rules.mappings
    return True, f"ok: {len(ms.literals)} literals, {len(ms.patterns)} patterns"


def is_check(flow: http.HTTPFlow) -> bool:
    req = flow.request
    return req.method in ("GET", "HEAD") and req.path.split("?", 1)[0] == PATH


class DisguiseHealth:
    def __init__(self) -> None:
        self.draining = False
        self.open: set[str] = set()  # flows in progress (health checks aside)

    def load(self, loader) -> None:
        loader.add_option(
            "health_drain_delay", float, 3.0,
            "At SIGTERM: seconds to go on serving while the health check fails, so that the "
            "balancer stops sending first (its checks' fall x inter, plus a margin).",
        )  # fmt: skip
        loader.add_option(
            "health_drain_timeout", float, 60.0,
            "At SIGTERM, after the delay: the longest wait for open flows (streams) to finish.",
        )  # fmt: skip

    def running(self) -> None:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.sigterm)
        except (NotImplementedError, RuntimeError):  # no signals on this loop: mitmproxy's own stop
            pass

    def sigterm(self) -> None:
        if self.draining:
            ctx.master.shutdown()
            return
        self.draining = True
        log.info("disguise: SIGTERM: draining (health check failing, %d flows open)", len(self.open))
        asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        await asyncio.sleep(ctx.options.health_drain_delay)
        deadline = time.monotonic() + ctx.options.health_drain_timeout
        while self.open and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if self.open:
            log.warning("disguise: drain timeout: stopping with %d flows open", len(self.open))
        ctx.master.shutdown()

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if not is_check(flow):
            self.open.add(flow.id)
            return
        ok, why = status(ctx.master, self.draining)
        flow.response = http.Response.make(
            200 if ok else 503, (why + "\n").encode(), {"content-type": "text/plain", "cache-control": "no-store"}
        )

    def response(self, flow: http.HTTPFlow) -> None:
        if flow.response is None or flow.response.status_code != 101:  # a WebSocket ends later
            self.open.discard(flow.id)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        self.open.discard(flow.id)

    def error(self, flow: http.HTTPFlow) -> None:
        self.open.discard(flow.id)


addons = [DisguiseHealth()]
