"""What every provider shares: the request masker and the stream plumbing."""

from __future__ import annotations

import functools
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable

from .. import jsonspan
from ..errors import MaskError
from ..holdback import Window
from ..rules import Restorer, Rules, Session
from ..sse import Event, Framer, parse_event

_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


def present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """Placeholder-shaped strings ("[EMAIL_3]") already in a request's JSON text s,
    also where the client wrote them with \\u escapes."""
    names = tuple(p.name for p in rules.mappings.patterns)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    rx = _placeholder_rx(names)
    found = set(rx.findall(s))
    if "\\u" in s:
        found.update(rx.findall(_ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)))
    return frozenset(found)


@functools.lru_cache(maxsize=8)
def _placeholder_rx(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\[(?:" + "|".join(map(re.escape, names)) + r")_[1-9][0-9]*\]")


_ASCII_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])")


def mask_body(raw: bytes, root: jsonspan.Rule, rules: Rules) -> tuple[bytes, Session]:
    """Mask a request body. Returns the new body (raw itself if nothing changed) and the
    session holding this request's placeholders, numbered around any placeholder string
    the request already holds. Raises MaskError."""
    s, doc = jsonspan.parse(raw)
    if not isinstance(doc, dict):
        raise MaskError("body is not a JSON object")
    session = Session(present_placeholders(s, rules))

    def fn(v: str, rule: jsonspan.Rule) -> str:
        if rule.json_text:  # JSON text inside a string: mask its keys and values as JSON
            try:
                inner = json.loads(v)
            except ValueError:
                return rules.mask(v, session)  # not JSON: masked as text
            return jsonspan.transform(v, inner, jsonspan.USER, fn)[0]
        return rules.mask(v, session)

    try:
        new, changed = jsonspan.transform(s, doc, root, fn)
    except (KeyError, IndexError, TypeError) as e:
        # The raw walk and json.loads disagree only where an object repeats a key with
        # values of different shapes: which one the provider reads is not ours to guess.
        raise MaskError("body repeats a key with values of different shapes") from e
    return (new.encode("utf-8") if changed else raw), session


def restore_fn(r: Restorer) -> Callable[[str, jsonspan.Rule], str]:
    def fn(v: str, rule: jsonspan.Rule) -> str:
        if rule.prose:
            return r.text(v)
        if rule.json_text:
            return r.json_text(v)
        return r.value(v)

    return fn


def restore_json(data: str, root: jsonspan.Rule, r: Restorer) -> str | None:
    """Restore the strings root selects in a JSON document; None when nothing changed
    or data is not JSON (passed on as it came)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    new, changed = jsonspan.transform(data, doc, root, restore_fn(r))
    return new if changed else None


def restore_body(raw: bytes, root: jsonspan.Rule, r: Restorer) -> bytes:
    """A whole (non-streamed) JSON response body, restored; raw itself if unchanged."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    new = restore_json(s, root, r)
    return raw if new is None else new.encode("utf-8")


def reencode_field(data: str, start: int, end: int, raw: str, value: str) -> str:
    """data with the JSON string body data[start:end] (== raw) replaced by value."""
    return data[:start] + jsonspan.encode_like(value, raw)[1:-1] + data[end:]


def decode_field(data: str, start: int, end: int) -> str:
    """The decoded value of the JSON string body data[start:end]."""
    raw = data[start:end]
    if "\\" not in raw:
        return raw
    return _scanstring(data, start)[0]


class SSEStream(ABC):
    """Bytes in, bytes out: frames events and hands each to `on_event`.

    Subclasses implement `on_event(ev) -> list[bytes]`, `drain() -> list[bytes]` (all
    held tails as synthetic events, at connection end) and `error_event(msg) -> bytes`.
    """

    def __init__(self, restorer: Restorer) -> None:
        self.r = restorer
        self.windows: dict = {}  # channel key -> Window, or None for a channel passed as is
        self._suspicious = restorer.rules.suspicious
        self.framer = Framer()
        self.finished = False
        self.events_in = 0
        self.events_changed = 0
        self.events_held = 0  # events whose text was held back, whole or in part

    def feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        framer = self.framer
        if framer.pending:
            # finish the event that is waiting for its end, then go on with the rest
            j = data.find(b"\n\n")
            if j < 0:
                return b"".join(self._events(framer.feed_raw(data)))
            out = self._events(framer.feed_raw(data[: j + 2]))
            data = data[j + 2 :]
        k = data.rfind(b"\n\n") + 2
        if k > 1 and not framer.pending and not self._suspicious(data, k) and self.quiet():
            # Nothing in these whole events can begin or continue a match: they pass on
            # as they came, unframed (the common case for prose; bench (c)).
            self.events_in += data.count(b"\n\n", 0, k)
            out.append(data[:k])
            data = data[k:]
        if data:
            out.extend(self._events(framer.feed_raw(data)))
        return b"".join(out)

    def _events(self, raws: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        suspicious = self._suspicious
        for raw in raws:
            self.events_in += 1
            if not suspicious(raw, len(raw)) and SSEStream.quiet(self):
                out.append(self.pass_on(raw))  # nothing in it can take part in a match
            else:
                out.extend(self.on_event(parse_event(raw)))
        return out

    def flush(self) -> bytes:
        """The connection ended. Idempotent: a second call returns b""."""
        if self.finished:
            return b""
        self.finished = True
        out = self._events(self.framer.flush_raw())
        out.extend(self.drain())
        return b"".join(out)

    def quiet(self) -> bool:
        """No window holds text or ends inside an escape (subclasses add their own)."""
        for w in self.windows.values():
            if w is not None and (w.held or w.escaped):
                return False
        return True

    def pass_on(self, raw: bytes) -> bytes:
        """An event nothing in which can take part in a match: as it came, by default."""
        return raw

    def whole(self, body: bytes) -> bytes:
        """A stream that arrived in one piece (not streamed, or replayed)."""
        return self.feed(body) + self.flush()

    # -- helpers for subclasses --------------------------------------------------------

    def window_field(self, ev: Event, w: Window, start: int, end: int) -> list[bytes]:
        """Feed the string field data[start:end] of ev through window w and emit the
        event with what w releases: unchanged bytes when nothing changed, nothing
        when everything is held."""
        data = ev.data
        assert data is not None
        raw = data[start:end]
        text = decode_field(data, start, end)
        held_before = w.held
        out = w.feed(text)
        if out == text and not held_before:
            return [ev.raw]
        if w.held:
            self.events_held += 1
        if not out:
            return []
        self.events_changed += 1
        return [ev.with_data(reencode_field(data, start, end, raw, out))]

    @abstractmethod
    def on_event(self, ev: Event) -> list[bytes]:
        """The bytes to emit for one event, in order (held text may be emitted later)."""

    @abstractmethod
    def drain(self) -> list[bytes]:
        """Synthetic events carrying every channel's held tail, in channel order."""

    @abstractmethod
    def error_event(self, message: str) -> bytes:
        """An event in the provider's own error shape, ending the stream explicitly."""
