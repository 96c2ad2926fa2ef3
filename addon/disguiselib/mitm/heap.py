"""The proxy process's garbage collector (adapter-level): what is alive when the addon
loads is frozen, once per process.

A full collection of the cyclic garbage collector scans every object the process tracks,
on whichever thread allocated last — mostly the event loop's — with the GIL held. Once
mitmproxy and the addon are imported that is about 55,000 objects (modules, functions,
classes: nothing of them is ever garbage), and a full collection took 35-90 ms on this
machine; every stream waited for it. bench/stalls.py traced the longest pause of a
concurrent stream while 1 MB bodies were masked in the worker process to exactly that
(`gc on the loop`: 41-80 ms, once every few dozen bodies), not to the masking.

`gc.freeze()` moves what is alive now to a generation the collector never scans: full
collections then scan only what was made since (flows, records, the rule set in force).
Garbage is collected first, so none is kept forever. Frozen objects are still freed by
their reference counts; a cycle among them would never be (none is expected: they are
the program itself). Once per process: a script reload of the addon freezes nothing more
(flows in flight then would be)."""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup() -> bool:
    """Freeze what is alive (after a collection), the first time in this process; True
    when it did."""
    global _frozen
    if _frozen:
        return False
    _frozen = True
    gc.collect()
    gc.freeze()
    return True
