"""InvokeModelWithResponseStream for the model families that do not stream Anthropic's
events (sans I/O): each `chunk` frame's base64 `bytes` hold one JSON document in the
model's own shape, read by its family's ChunkModel (bedrock/models.py).

Each string on a channel's path goes through that channel's hold-back window (a
disguise split across chunks is restored whole); every other string in a chunk is
restored as a value. The chunk that meets the family's terminal condition gets its own
channels' held tails appended to its text, and every other channel's tail goes out just
before it, as a copy of that channel's last chunk carrying the tail; the stream is then
FINISHING (chunks after it, Nova's `metadata`, are restored as they come). A body that
ends before the terminal chunk ends with an exception frame, as every Bedrock stream.
"""

from __future__ import annotations

import base64
import binascii
import json

from ...base.channels import Chan, channel_index
from ...base.fields import GENERIC
from ...base.holdback import Window, window_for
from ...base.restore import restore_fn
from ...base.stream import StreamState
from ...base.wirespec import JSON, ChunkModel, Path
from ...errors import StreamError
from ...rules.rules import Restorer
from ...wire import eventstream, jsonspan
from ...wire.eventstream import Frame
from ...wire.jsonspan import Obj, Rule
from .stream import FrameStream, event_frame

# A bedrock-added member of the last chunk (usage figures): never copied into a tail.
_METRICS = "amazon-bedrock-invocationMetrics"


class _Items(Rule):
    """An array whose elements each have their own rule (their channel keys differ)."""

    string = True
    kind = "unknown"

    def __init__(self, items: dict[int, Rule]) -> None:
        self.items = items

    def child(self, key: str | int) -> Rule:
        return self.items.get(key, GENERIC) if isinstance(key, int) else GENERIC


class _Where(Chan):
    """A channel string, with where it sits in its chunk (to build a tail chunk)."""

    def __init__(self, key: tuple, mode: int, where: tuple) -> None:
        super().__init__(key, mode)
        self.where = where


def _rule(value: object, paths: list[tuple[int, Path, int]], key: tuple, where: tuple, idx: tuple[str, ...]) -> Rule:
    """The rule of one chunk (value) for the channel paths that continue from here:
    (channel number, rest of its path, mode). Keys grow with each `*` (the element's
    index member, else its position) and each index member met on the way."""
    if isinstance(value, dict):
        for m in idx:
            v = value.get(m)
            if v is not None:
                key = (*key, channel_index(v, m))
                break
    done = [(n, mode) for n, p, mode in paths if not p]
    if done:
        n, mode = done[0]
        return _Where((n, *key), mode, where) if isinstance(value, str) else GENERIC
    if isinstance(value, dict):
        heads: dict[str, list] = {}
        for n, p, mode in paths:
            if p[0] != "*":
                heads.setdefault(p[0], []).append((n, p[1:], mode))
        fields = {h: _rule(value.get(h), rest, key, (*where, h), idx) for h, rest in heads.items() if h in value}
        return Obj(fields, default=GENERIC) if fields else GENERIC
    if isinstance(value, list):
        rest = [(n, p[1:], mode) for n, p, mode in paths if p[0] == "*"]
        if not rest:
            return GENERIC
        items = {}
        for i, el in enumerate(value):
            k = el.get("index") if isinstance(el, dict) else None
            k = i if k is None else channel_index(k)
            # the element's own index member already keys it here
            items[i] = _rule(el, rest, (*key, k), (*where, i), tuple(m for m in idx if m != "index"))
        return _Items(items)
    return GENERIC


def _at(doc: object, path: Path) -> list[object]:
    vals = [doc]
    for p in path:
        nxt: list[object] = []
        for v in vals:
            if p == "*" and isinstance(v, list):
                nxt.extend(v)
            elif isinstance(v, dict) and p in v:
                nxt.append(v[p])
        vals = nxt
    return vals


def is_last(model: ChunkModel, doc: object) -> bool:
    """Does this chunk meet the family's terminal condition?"""
    return any(v is not None and v is not False for p in model.stop for v in _at(doc, p))


class ChunkStream(FrameStream):
    """The InvokeModelWithResponseStream body of a family with a ChunkModel."""

    def __init__(self, restorer: Restorer, model: ChunkModel) -> None:
        super().__init__(restorer)
        self.model = model
        self.TERMINAL = model.ends
        modes = {JSON: Window.JSON}
        self._paths = [(n, c.path, modes.get(c.kind, Window.TEXT)) for n, c in enumerate(model.channels)]
        self._restore = restore_fn(restorer)
        # channel -> its last chunk as it went out (JSON), where its text was, where
        # every channel's text in it was (a tail goes out in a copy of that chunk)
        self.last: dict[tuple, tuple[str, tuple, list[tuple]]] = {}

    def on_frame(self, fr: Frame) -> list[bytes]:
        if fr.message_type in ("exception", "error"):
            return self.upstream_error(fr)
        if fr.event_type != "chunk":
            return [self.restored(fr, GENERIC)]
        try:
            payload = json.loads(fr.payload)
            b64 = payload.get("bytes") if isinstance(payload, dict) else None
            if not isinstance(b64, str):
                raise ValueError
            raw = base64.b64decode(b64, validate=True)
            data = raw.decode("utf-8")
            doc = jsonspan.loads(data)
        except (ValueError, binascii.Error):
            raise StreamError(f"event stream frame at byte {fr.offset}: a chunk without readable JSON bytes") from None
        last = is_last(self.model, doc)
        if not last and self.quiet() and not self._scan(raw):
            # nothing in it can take part in a match and no window holds text (the
            # triggers' property, rules/triggers.py): it goes on as it came
            return [fr.raw]
        before = self._closed(doc)
        rule = _rule(doc, self._paths, (), (), self.model.index_members)
        wheres: list[tuple] = []
        mine: dict[tuple, tuple] = {}

        def fn(v: str, r: Rule) -> str:
            if not isinstance(r, _Where):
                return self._restore(v, r)
            w = window_for(self.windows, r.key, self.restorer, r.mode, "channels")
            held = w.held
            out = w.feed(v)
            wheres.append(r.where)
            if last:
                out += w.flush()
                del self.windows[r.key]
                self.last.pop(r.key, None)
            else:
                mine[r.key] = r.where
            if w.held or held:
                self.events_held += 1
            return out

        new, changed = jsonspan.transform(data, doc, rule, fn)
        for k, where in mine.items():
            self.last[k] = (new, where, wheres)
        if last:
            self.to(StreamState.FINISHING)
            before += self.drain()
        if not changed:
            return [*before, fr.raw]
        self.events_changed += 1
        body = {**payload, "bytes": base64.b64encode(new.encode("utf-8")).decode("ascii")}
        return [*before, eventstream.reframe(fr.header_block, _dumps(body))]

    def _closed(self, doc: object) -> list[bytes]:
        """The held tails of the channels this chunk closes (ChunkModel.closes)."""
        m = self.model.closes
        if m is None or not isinstance(doc, dict) or not isinstance(doc.get(m), dict):
            return []
        idx = next((v for k in self.model.index_members if isinstance(v := doc[m].get(k), int)), None)
        return self.drain([k for k in self.windows if k[1:] == (idx,)]) if idx is not None else []

    def drain(self, keys: list | None = None) -> list[bytes]:
        """Every held tail (or those of keys), each in a copy of its channel's last chunk."""
        out: list[bytes] = []
        for k in sorted(self.windows if keys is None else keys, key=repr):
            w = self.windows.pop(k)
            tail = w.flush() if w is not None else ""
            got = self.last.pop(k, None)
            if not tail or got is None:
                continue
            text, where, wheres = got
            tail_doc = json.loads(text)
            if isinstance(tail_doc, dict):
                tail_doc.pop(_METRICS, None)
            for at in wheres:  # only this channel's tail: every channel's text emptied
                _put(tail_doc, at, tail if at == where else "")
            data = json.dumps(tail_doc, ensure_ascii=False, separators=(",", ":"))
            out.append(event_frame("chunk", _dumps({"bytes": base64.b64encode(data.encode("utf-8")).decode("ascii")})))
        if keys is None:
            self.last.clear()
        return out


def _put(doc: object, where: tuple, value: str) -> None:
    box = doc
    for step in where[:-1]:
        box = box[step]  # type: ignore[index]
    box[where[-1]] = value  # type: ignore[index]


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


def stream(model: ChunkModel):
    """The stream factory of a family (restorer -> ChunkStream)."""
    return lambda restorer: ChunkStream(restorer, model)
