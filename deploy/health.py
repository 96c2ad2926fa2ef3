"""Health check for a load balancer, as a mitmproxy script loaded *before* the addon:

    mitmdump -s deploy/health.py -s addon/disguise.py ...

`GET /.well-known/disguise/health` (any host) is answered by this process itself and
never forwarded: 200 `ok: ...` while the disguise addon runs with a valid rule set,
503 with the reason otherwise (the addon script is not loaded, it was dropped for a bad
option, no valid mapping set is in force). Every other request passes untouched: this
opens no path around the addon. Loaded first, it answers in `requestheaders`, before
the addon or its Guard look at the flow; a response set there is sent without
contacting upstream.

If this script itself is not loaded, the check goes to the upstream provider as a plain
GET without a body and fails there (404): the balancer takes the instance out all the
same.
"""

from __future__ import annotations

from mitmproxy import ctx, http

PATH = "/.well-known/disguise/health"


def status(master) -> tuple[bool, str]:
    """(healthy, one line saying why) for the disguise addon on this master."""
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


class DisguiseHealth:
    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        if req.method not in ("GET", "HEAD") or req.path.split("?", 1)[0] != PATH:
            return
        ok, why = status(ctx.master)
        flow.response = http.Response.make(
            200 if ok else 503, (why + "\n").encode(), {"content-type": "text/plain", "cache-control": "no-store"}
        )


addons = [DisguiseHealth()]
