"""A finished stream's body, as the client got it, held compressed on `flow.response`
(issue 29: what a burst of finished streams kept in memory).

mitmproxy keeps no streamed body (11; 12 only with `store_streamed_bodies`), so the
Inspector sets what the client got on the response when a stream ends: mitmweb's views,
the audit, `disguise share/show`, replay and flow files (`-w`) read it there. Held as it
came it was most of what capture cost at a burst's peak: 500 finished streams whose
flows mitmproxy still held kept ~22 MB of restored bodies (bench/ section e).

Every reader goes through the response's `data.content`: `raw_content`, `content`,
`text`, `get_state` (flow files, `flow.copy()`, mitmweb's serializer), `==`, `repr`. So
the data object itself is swapped for `Held`, whose `content` is a property that gives
the body back whole, byte for byte, each time it is read; the headers are not touched (no
Content-Encoding of ours: the file and the views show what the client got, with the
headers it got). Writing the body (`raw_content = ...`, `set_state`) makes the data an
ordinary ResponseData again, holding what was written. A saved flow holds the body as it
came: files read the same before and after.

The body is held as the Tee compressed it (tee.Kept.zipped): a stream shorter than
packing.ON_LOOP compressed again as one frame at its end (half the bytes of its chunks),
a longer one in the chunks it was compressed in while it ran, never compressed again.

Read on the event loop, the body given back is kept until that turn of the loop ends
(`_turn`): mitmdump's flow line reads `raw_content` twice in one hook (`is None`, then
its length), and a Chat stream's body decompressed twice a flow cost ~0.5 µs a delta
(issue 29). Only the body read last is kept: in a burst, one turn of the loop ends many
streams, and each one's body, read for its flow line and kept till the turn's end, was
~7 MiB of the burst's peak RSS (bench (e): 500 streams, 154 MiB against 148 with
`flow_detail=0`). Nothing is kept past the turn, nor read off the loop."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from mitmproxy import http

from .packing import _Chunks, _Spliced

# The body read last in this turn of the event loop, if any: id(data) -> (data, body), the
# data kept alive with it (its id is not reused before the turn ends, when this is emptied).
_turn: dict[int, tuple[object, bytes]] = {}


class Held(http.ResponseData):
    """ResponseData whose `content` is held compressed (`vars(self)["content"]` is the
    chunks); read, it is the body whole; written, the data is a ResponseData again."""

    @property  # type: ignore[override]
    def content(self) -> bytes:
        got = _turn.get(id(self))
        if got is not None:
            return got[1]
        body: bytes = vars(self)["content"].plain()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return body  # off the loop: nothing kept
        loop.call_soon(_turn.clear)  # (each time: what a loop that ended kept goes too)
        _turn.clear()  # one body at most: the one read before is let go now
        _turn[id(self)] = (self, body)
        return body

    @content.setter
    def content(self, value: bytes | None) -> None:
        _turn.pop(id(self), None)
        vars(self)["content"] = value  # in place: the state's keys keep mitmproxy's order
        self.__class__ = http.ResponseData  # type: ignore[assignment]

    def get_state(self) -> Any:
        state = super().get_state()
        state["content"] = self.content
        return state

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, http.ResponseData):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in dataclasses.fields(http.ResponseData))

    __hash__ = None  # type: ignore[assignment]


def hold(resp: http.Response, body: _Chunks | _Spliced) -> None:
    """Set resp's body to body's contents, held as they are (compressed)."""
    data = resp.data
    if not body or (type(data) is not http.ResponseData and type(data) is not Held):
        resp.raw_content = body.plain()  # empty, or someone else's data class: set as mitmproxy does
        return
    _turn.pop(id(data), None)
    data.__class__ = Held
    vars(data)["content"] = body


def is_held(resp: http.Response) -> bool:
    """Is resp's body held compressed (tests, bench)?"""
    return type(resp.data) is Held
