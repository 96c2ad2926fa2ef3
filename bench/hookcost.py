"""(a mitmproxy script for flowcost.py --hooks) Thread CPU of every hook of every addon,
and of a few named steps inside the addon's, summed over the run and written as JSON
to $HOOKCOST_OUT when mitmdump stops. It wraps the hook methods of the addons mitmproxy
runs once they are all loaded (`running`). A request with `x-bench-hookcost: reset`
starts the sums again (loaded before the addon, `-s` first, its own requestheaders runs
before the addon's: that flow is counted whole but for mitmproxy's own addons' first
hooks, which run before any script's).

The named steps (`STEPS`: module, attribute path, label) are wrapped where they are
looked up, so a step is timed only where its callers read it from that module."""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Callable

from mitmproxy import ctx

HOOKS = ("requestheaders", "request", "responseheaders", "response", "error", "client_connected",
         "client_disconnected", "server_connect", "server_connected", "server_disconnected")  # fmt: skip
STEPS = (
    ("disguiselib.pipeline", "mask_request", "masking the request (pipeline.mask_request)"),
    ("disguiselib.mitm.reload", "Reloader.check", "the mapping files looked at (Reloader.check)"),
    ("disguiselib.pipeline", "reverser_for", "the response's reverser made (pipeline.reverser_for)"),
    ("disguiselib.inspect.inspector", "Inspector.finish", "the flow's summary (Inspector.finish)"),
    ("disguiselib.inspect.inspector", "log.info", "its info line (the logger's info, mitmproxy's handlers)"),
)
spent: dict[str, list[int]] = {}  # label: [ns, calls]


def _timed(f: Callable, label: str) -> Callable:
    def w(*a: object, **k: object) -> object:
        t = time.thread_time_ns()
        try:
            return f(*a, **k)
        finally:
            s = spent.setdefault(label, [0, 0])
            s[0] += time.thread_time_ns() - t
            s[1] += 1

    return w


class HookCost:
    def requestheaders(self, flow: object) -> None:
        if flow.request.headers.get("x-bench-hookcost") == "reset":  # type: ignore[attr-defined]
            spent.clear()

    def running(self) -> None:
        for mod, path, label in STEPS:
            try:
                owner: object = importlib.import_module(mod)
                *parents, name = path.split(".")
                for p in parents:
                    owner = getattr(owner, p)
                setattr(owner, name, _timed(getattr(owner, name), "  > " + label))
            except (ImportError, AttributeError):
                continue  # a tree without that step (bench.py --before)
        stack = list(ctx.master.addons.chain)
        while stack:
            a = stack.pop()
            if a is self:
                continue
            for h in HOOKS:
                f = getattr(a, h, None)
                if f is not None:
                    setattr(a, h, _timed(f, f"{type(a).__name__}.{h}"))
            stack.extend(getattr(a, "addons", None) or [])

    def done(self) -> None:
        with open(os.environ["HOOKCOST_OUT"], "w", encoding="utf-8") as f:
            json.dump(spent, f)


addons = [HookCost()]
