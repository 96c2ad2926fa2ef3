"""The per-read step of a stream (issue 29): a read's whole events in, the bytes for the
client out, as CPython's json does it (`c_make_scanner or py_make_scanner`).

`SSEStream.feed` hands a read's block of whole events to its pass first. The pass
takes the events from the block's start, one by one, while each is a delta in one of
its API's common shapes (Anthropic `text_delta`/`input_json_delta`, a pass-through
`thinking_delta`/`signature_delta`; a Chat `content` or tool `arguments` delta; a
Responses text, refusal or arguments delta), and returns where it stopped: the event
it declines, and everything after it, goes the Python way (triggers, on_raw, on_event).

What the pass gives for an event, and the state it leaves, is exactly what the API's
`on_raw` gives for it: this module's `PyReadPass` is that definition (on_raw on each
event), the reference the compiled pass (`_readpass.pyx`) is tested against
(tests/base/test_readpass.py, hypothesis: the stream generators' texts, delta splits and
read boundaries). The compiled pass does the framing, the shape, the JSON string's
escapes, the hold-back window and the disguise matching over the read's bytes in C
(a byte trie of the disguises instead of Aho–Corasick and `re`), creates Python objects
only for what it changes, and gives the very block object back when nothing changed.
It declines, leaving every state untouched, wherever on_raw's work needs more than
disguises (a `[` where placeholders or strip rules exist, a strip rule's first
character, a `\\u` escape, JSON text with escapes other than whole short ones, fakes,
renumbering, a window mode change with held text): the Python path is exact there.

Chosen once, at import: the compiled pass where the compiled engine is in use
(engine.py loads `_readpass` only then), else none. Without it the Python engine keeps
its own per-read path, which skips the events without triggers unparsed
(tests/base/test_fastpath.py proves that the same as on_raw on every event, i.e. the
same as PyReadPass): in Python that is faster than PyReadPass for sparse streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..rules.restorer import OUTPUT, TEXT

ANTHROPIC, CHAT, RESPONSES = 1, 2, 3

try:  # the compiled engine's part (engine.NATIVE); absent or stale: ImportError
    from ._readpass import ReadPass as _CReadPass  # type: ignore[import-not-found]
    from ._readpass import prepare as _c_prepare
except ImportError:
    _CReadPass = _c_prepare = None


class PyReadPass:
    """The reference: the stream's own on_raw on each event of the block, from its start,
    up to the first it declines."""

    def __init__(self, stream: Any, api: int, deltas: dict | None = None) -> None:
        self.api = api

    def run(self, stream: Any, block: bytes, out: list[bytes]) -> int:
        """Append to out what the events of block from its start give, while on_raw reads
        them; return where the first it declines starts (len(block): all read)."""
        if 13 in block:
            return 0
        pos, n = 0, len(block)
        on_raw = stream.on_raw
        while pos < n:
            e = block.find(b"\n\n", pos) + 2
            if e < 2:
                break
            got = on_raw(block[pos:e])
            if got is None:
                break
            stream.events_in += 1
            out.extend(got)
            pos = e
        return pos

    def feed(self, stream: Any, data: bytes, out: list[bytes]) -> int:
        """SSEStream.feed's common read taken whole (whole events: it ends with a blank
        line, nothing waits in the framer) of a stream still open: run's answer; -1
        where it is not that read (nothing touched)."""
        if data[-2:] != b"\n\n" or stream.finished or not stream.fast or stream.framer.pending:
            return -1
        return self.run(stream, data, out)


def c_make_pass(stream: Any, api: int, deltas: dict | None = None) -> Any:
    """The compiled pass for stream (None where there is none, the stream's rule set
    has fakes: their matchers are the flow's own, or its answer text is JSON: the pass
    reads text deltas as text)."""
    if _CReadPass is None or stream.restorer.rules.faker is not None or stream.restorer.output:
        return None
    if deltas:  # (its answer text is text: the window mode it has)
        deltas = {t: (f, TEXT if m == OUTPUT else m) for t, (f, m) in deltas.items()}
    return _CReadPass(stream, api, deltas)


def prepare(rules: Any) -> None:
    """Build what the compiled pass of rules' streams reads (its matcher of the disguises)
    now, where rules are built (config.compiled: off the event loop on a reload), not at
    the first stream's first read: ~10 ms of the loop for 1,000 literals. Nothing without
    the compiled pass, or where c_make_pass makes none (fakes)."""
    if _c_prepare is not None and rules.faker is None:
        _c_prepare(rules)


# The one choice (made at import): the compiled pass, or the Python engine's own path.
make_pass: Callable[..., Any] | None = c_make_pass if _CReadPass is not None else None
