"""Vertex AI's streamed function-call arguments in a Gemini stream (sans I/O).

With `toolConfig.functionCallingConfig.streamFunctionCallArguments`, a call arrives over
several chunks: a `functionCall` part that opens it (`name`, maybe `id`, `"willContinue":
true`), then `functionCall` parts with `partialArgs` — each a `jsonPath` (RFC 9535) and
one value piece (`stringValue`, `numberValue`, `boolValue`, `nullValue`) whose own
`willContinue` says that another piece for the same path follows — and a last part
without `willContinue` (google-genai's `PartialArg`, `FunctionCall`). A string
argument's text is the concatenation of its pieces, so a disguise may be cut between two
of them, in two chunks.

Channels: one hold-back window (VALUE mode: a complete decoded string, no strip rules)
per (candidate index, call, jsonPath), so the pieces a client joins per path are what
whole-value restoring of the joined text gives. A call is told by its place in its
candidate: a part without an `id`, or with the open call's, continues the open call;
one with another `id` continues the open call of that id; anything else opens a new
one. A path's held tail goes out in its last piece (the piece after which the path or
the call does not continue); a path of an ending call that has no string piece in that
part gets a `{"jsonPath", "stringValue"}` piece spliced into the part's `partialArgs`
(first: its text is older than the part's). Calls still holding text when their
candidate finishes get a `functionCall` part of their own in the finishing chunk
(stream.py puts it first into the parts), and at the stream's end a chunk of their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from ...base.channels import Chan
from ...base.fields import GENERIC, ID, META
from ...base.holdback import Window
from ...rules.rules import Restorer, json_escape
from ...wire.jsonspan import USER, VALUES, Arr, Rule
from .gemini import _dumps, obj


class _Stream(Protocol):
    """What calls need of their stream (stream.GeminiStream)."""

    windows: dict
    restorer: Restorer
    _touched: set

_PIECE_META = ("willContinue", "numberValue", "boolValue", "nullValue")


def _get(d: dict, camel: str, snake: str) -> object:
    """A member in either spelling (proto3 JSON reads both)."""
    return d[camel] if camel in d else d.get(snake)


def _path(piece: object) -> str | None:
    p = _get(piece, "jsonPath", "json_path") if isinstance(piece, dict) else None
    return p if isinstance(p, str) else None


def _string(piece: dict) -> bool:
    return isinstance(_get(piece, "stringValue", "string_value"), str)


def _continues(d: dict) -> bool:
    return _get(d, "willContinue", "will_continue") is True


class _Pieces(Arr):
    """`partialArgs`: each piece's rule by its index (which one carries a held tail)."""

    def __init__(self, items: list[Rule]) -> None:
        super().__init__(GENERIC)
        self.items = items

    def child(self, key: str | int) -> Rule:
        return self.items[key] if isinstance(key, int) and key < len(self.items) else GENERIC


class StreamCall(Rule):
    """A streamed candidate's `functionCall` (bound to the candidate; see the docstring)."""

    string = True

    def __init__(self, calls: Calls, k: object, finishing: bool, part: object) -> None:
        self.calls = calls
        self.k = k
        self.finishing = finishing
        self.part = part  # the mark of the part it is in

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        return self.calls.rule(self.k, value, self.finishing, self.part)


class Calls:
    """The streamed calls of one Gemini stream: which call a part belongs to, and the
    splices that deliver the tails of paths that end without a piece of their own."""

    def __init__(self, stream: _Stream, wrap: Callable[[dict], dict] = lambda fc: {"functionCall": fc}) -> None:
        self.stream = stream
        self.wrap = wrap  # a call's held pieces as something of their own: a stream's part, Live's call
        self.open: dict[object, dict[str | None, int]] = {}  # candidate -> open calls: id (None: none) -> call
        self.current: dict[object, int] = {}  # candidate -> its latest open call
        self.ids: dict[tuple, str] = {}  # (candidate, call) -> the call's id, for synthetic parts
        self.names: dict[tuple, str] = {}  # (candidate, call) -> the function's name
        self.count: dict[object, int] = {}  # candidate -> calls seen
        self.inserts: list[tuple[object, object, bool, str]] = []  # the chunk at hand: (call mark, pieces mark, ...)
        self.before: list[tuple[object, str]] = []  # the chunk at hand: (part mark, a part to put before it)
        self._seq = 0

    def chunk(self) -> None:
        """A new chunk is being read."""
        self.inserts = []
        self.before = []

    def _call_of(self, k: object, fid: str | None, name: str | None, part: object) -> int:
        opened = self.open.setdefault(k, {})
        cur = self.current.get(k)
        if fid is not None and fid in opened:
            return opened[fid]
        if cur is not None and name is not None and self.names.get((k, cur), name) != name:
            # another function while one is open (the API ends a call first): the open
            # call ends here, its held pieces in a part of its own before this one
            tails = self._tails(k, cur)
            if tails:
                self.stream._touched.add(k)
                self.before.append((part, _dumps(tails)))
            self._end(k, cur)
            cur = None
        if cur is not None and (fid is None or self.ids.get((k, cur)) is None):
            if fid is not None:  # the open call's id, first named here
                self.ids[(k, cur)] = fid
                opened.pop(None, None)
                opened[fid] = cur
            return cur
        n = self.count.get(k, 0)
        self.count[k] = n + 1
        if fid is not None:
            self.ids[(k, n)] = fid
        if name is not None:
            self.names[(k, n)] = name
        opened[fid] = n
        self.current[k] = n
        return n

    def _end(self, k: object, n: int) -> None:
        opened = self.open.get(k, {})
        for fid in [f for f, m in opened.items() if m == n]:
            del opened[fid]
        if self.current.get(k) == n:
            del self.current[k]

    def end_candidate(self, k: object) -> None:
        self.open.pop(k, None)
        self.current.pop(k, None)

    def rule(self, k: object, fc: dict, finishing: bool, part: object) -> Rule:
        """The rule of one `functionCall` (fc) of candidate k, in the part marked `part`
        (None: the call is on its own, a Live `functionCalls` element: what goes before it
        goes before the call itself)."""
        self._seq += 1
        mark = ("call", self._seq)
        fid, name = fc.get("id"), fc.get("name")
        n = self._call_of(k, fid if isinstance(fid, str) else None, name if isinstance(name, str) else None,
                          mark if part is None else part)  # fmt: skip
        ends = finishing or not _continues(fc)
        pa = _get(fc, "partialArgs", "partial_args")
        pieces = pa if isinstance(pa, list) else []
        last: dict[str, int] = {}  # path -> its last string piece here
        ended: set[str] = set()  # paths whose last piece here says they do not continue
        for i, p in enumerate(pieces):
            path = _path(p)
            if path is not None:
                if _string(p):  # type: ignore[arg-type]
                    last[path] = i
                if not _continues(p):  # type: ignore[arg-type]
                    ended.add(path)
                else:
                    ended.discard(path)
        items: list[Rule] = []
        for i, p in enumerate(pieces):
            path = _path(p)
            if path is None:
                items.append(GENERIC)
                continue
            flush = last.get(path) == i and (ends or path in ended)
            chan = Chan((k, "call", n, path), Window.VALUE, flush=flush)
            items.append(obj({"jsonPath": VALUES, "stringValue": chan, **dict.fromkeys(_PIECE_META, META)}))
        arr = _Pieces(items)
        rule = obj({"id": ID, "name": VALUES, "args": USER, "willContinue": META, "partialArgs": arr})
        rule.mark, arr.mark = mark, ("pieces", self._seq)
        absent = "partialArgs" not in fc and "partial_args" not in fc
        if absent or isinstance(pa, list):  # a piece can be spliced in for a path that ends here
            tails = []
            for key in [key for key in self.stream.windows if key[:3] == (k, "call", n)]:
                path = key[3]
                if path not in last and (ends or path in ended):
                    tail = self.stream.windows.pop(key).flush()
                    if tail:
                        tails.append(_piece(self.stream.restorer.value(path), tail))
            if tails:
                self.stream._touched.add(k)
                self.inserts.append((rule.mark, arr.mark, bool(pieces) if not absent else bool(fc), ",".join(tails)))
        if ends:
            self._end(k, n)
        return rule

    def splices(self, where: dict) -> list[tuple[int, int, str]]:
        """The pieces to splice into this chunk's function calls (rule's `inserts`), and
        the parts of calls that ended before another began."""
        out = [(where[m], where[m], part + ",") for m, part in self.before if m in where]
        for call_mark, pieces_mark, more, tails in self.inserts:
            if pieces_mark in where:
                at = where[pieces_mark] + 1
                out.append((at, at, tails + ("," if more else "")))
            elif call_mark in where:
                at = where[call_mark] + 1
                out.append((at, at, '"partialArgs":[' + tails + "]" + ("," if more else "")))
        return out

    def tails(self, k: object) -> list[dict]:
        """Every held tail of candidate k's calls, flushed: a `functionCall` part per call
        (wrapped by `wrap`)."""
        calls = sorted({key[2] for key in self.stream.windows if key[0] == k and key[1] == "call"})
        return [part for n in calls if (part := self._tails(k, n))]

    def _tails(self, k: object, n: int) -> dict | None:
        """Call n's held tails, flushed, as a `functionCall` part (None: it holds none)."""
        pieces = []
        for key in sorted((key for key in self.stream.windows if key[:3] == (k, "call", n)), key=repr):
            tail = self.stream.windows.pop(key).flush()
            if tail:  # the path as the path's own pieces go out
                pieces.append({"jsonPath": self.stream.restorer.value(key[3]), "stringValue": tail})
        if not pieces:
            return None
        fc: dict = {"id": self.ids[(k, n)]} if (k, n) in self.ids else {}
        return self.wrap({**fc, "partialArgs": pieces})


def view_call(b, ev, k: object, call: dict, where: str) -> None:
    """A view's reader of one `functionCall` part (inspect/sseview.Builder, for stream.py's
    view): a call that arrives whole is a channel of its own (its args as JSON); a
    streamed one's string pieces join per jsonPath, a channel per argument of the call
    (a part naming another function, or one after a part that did not continue, is the
    next call), so that a match split across pieces is seen where the client joins them."""
    pieces = _get(call, "partialArgs", "partial_args")
    name = call.get("name") if isinstance(call.get("name"), str) else None
    open_ = b.counts.get(("g open", k))
    if open_ is not None and (name is None or name == b.counts.get(("g name", k, open_), name)):
        n = open_
    else:
        n = b.counts.get(("g calls", k), 0)
        b.counts[("g calls", k)] = n + 1
        if name is not None:
            b.counts[("g name", k, n)] = name
    whole = open_ is None and not _continues(call)  # a call in one part
    if _continues(call):
        b.counts[("g open", k)] = n
    else:
        b.counts.pop(("g open", k), None)
    if not isinstance(pieces, list):
        if whole or "args" in call:
            c = b.add(ev, f"candidate {k} call {n}", "json", json.dumps(call.get("args", {}), ensure_ascii=False),
                      f"{where}.args")  # fmt: skip
            if name is not None:
                c.name = name
        return
    for i, p in enumerate(pieces):
        path = _path(p)
        if path is not None and _string(p):  # type: ignore[arg-type]
            c = b.add(ev, f"candidate {k} call {n} {path}", "text", _get(p, "stringValue", "string_value"),  # type: ignore[arg-type]
                      f"{where}.partialArgs[{i}].stringValue")  # fmt: skip
            c.name = b.counts.get(("g name", k, n))


def _piece(path: str, tail: str) -> str:
    return '{"jsonPath":"' + json_escape(path) + '","stringValue":"' + json_escape(tail) + '"}'
