"""A mitmproxy script for section (e)'s burst: what the flows under way hold, by part and
by type, at the burst's peak. Loaded after what is measured:

    BENCH_FLOWMEM_FILE=/tmp/mem.json mitmdump ... -s addon/disguise.py -s bench/flowmem.py

Unlike tracemem.py it costs the run nothing until it measures: it counts the flows under
way (a response's headers came, its end did not), and once $BENCH_FLOWMEM_AT of them are (default 200),
walks once, on the event loop, everything those flows reach (gc.get_referents) and sums
sys.getsizeof by type, in parts:

    stream     the response's stream callable (the addon's capture and reverser)
    metadata   flow.metadata (the addon's summary and kept sides)
    request    flow.request, its body and headers
    response   flow.response
    rest       the flow itself and what else it reaches (connections, timestamps)

Beside them, once, the backlog: the events mitmproxy holds in its layers' queues while a
layer waits for a hook (a layer paused on a hook queues what its connections bring, until
the hook's task has run: on a busy loop, a turn of every ready callback), their count and
their data's bytes, a flow under way. These are not reached from a flow (the layers hold
them), and they grow with the loop's lag, not with what the addon keeps.

An object reached from two flows is counted once, in the first; what every flow shares
(the addons and what they reach at start-up: the rule set, the engines) is not counted,
nor are modules, classes and functions. The JSON written: each part's bytes a flow and
its largest types, the flows counted, the most under way seen, and the walk's time. What
the flows hold is what Python objects hold: the rest of a stream's RSS (buffers freed but
not given back, the allocator's own, what the kernel holds for sockets) is not in it, so
the per-flow figures set beside bench (e)'s RSS a stream say how much of it they explain.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import types
import weakref
from collections import Counter, defaultdict

from mitmproxy import ctx

OUT = os.environ.get("BENCH_FLOWMEM_FILE", "flowmem.json")
AT = int(os.environ.get("BENCH_FLOWMEM_AT", "200"))
_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.MethodType)


def reach(roots: list[object], seen: set[int]) -> list[object]:
    """Every object reachable from roots not in seen (ids; added to it as met), but for
    modules, classes and functions."""
    stack, out = list(roots), []
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SKIP):
            continue
        seen.add(id(o))
        out.append(o)
        stack.extend(gc.get_referents(o))
    return out


def backlog() -> tuple[int, int, int]:
    """(layers paused on a hook, the events they hold queued, the bytes of those events'
    data): mitmproxy's Layer keeps what comes while it waits in `_paused_event_queue`."""
    from mitmproxy.proxy.layer import Layer

    paused = events = data = 0
    for o in gc.get_objects():
        if isinstance(o, Layer):
            q = getattr(o, "_paused_event_queue", None)
            if q:
                paused += 1
                events += len(q)
                data += sum(len(d) for e in q if isinstance(d := getattr(e, "data", None), bytes | bytearray))
    return paused, events, data


class FlowMem:
    def __init__(self) -> None:
        self.flows: weakref.WeakSet = weakref.WeakSet()
        self.shared: set[int] = set()
        self.under_way = 0  # responses whose headers came and whose end did not
        self.most = 0
        self.measured = False

    def running(self) -> None:
        reach(list(ctx.master.addons.chain), self.shared)

    def responseheaders(self, flow) -> None:  # noqa: ANN001 - mitmproxy's HTTPFlow
        self.flows.add(flow)
        self.under_way += 1
        self.most = max(self.most, self.under_way)
        if self.measured or self.under_way < AT:
            return
        self.measured = True
        live = list(self.flows)  # (each under way: a finished one left the set)
        t0 = time.perf_counter()
        seen = set(self.shared) | {id(self.flows), id(live)}
        parts: dict[str, Counter] = defaultdict(Counter)
        for f in live:
            st = f.response.stream if f.response is not None else None
            groups = (
                ("stream", [st] if callable(st) else []),
                ("metadata", [f.metadata]),
                ("request", [f.request]),
                ("response", [f.response]),
                ("rest", [f]),
            )
            for name, roots in groups:
                for o in reach(roots, seen):
                    parts[name][type(o).__name__] += sys.getsizeof(o)
        n = len(live)
        paused, events, data = backlog()  # (its walk of every object is in walk_s too)
        out = {
            "flows": n,
            "walk_s": time.perf_counter() - t0,
            "backlog": {"layers": paused, "events": events, "data": data},
            "parts": {k: {"per_flow": sum(c.values()) / n, "types": {t: b / n for t, b in c.most_common(8)}} for k, c in parts.items()},
        }  # fmt: skip
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump(out, fh)

    def response(self, flow) -> None:  # noqa: ANN001
        if flow in self.flows:
            self.flows.discard(flow)
            self.under_way -= 1

    error = response

    def done(self) -> None:
        try:
            with open(OUT, encoding="utf-8") as fh:
                got = json.load(fh)
        except (OSError, ValueError):
            got = {}
        got["most_under_way"], got["at"] = self.most, AT
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump(got, fh)


addons = [FlowMem()]
