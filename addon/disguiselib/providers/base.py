"""What every provider shares: the request masker and the stream plumbing."""

from __future__ import annotations

import functools
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable

from .. import jsonspan
from ..decoding import Decoder
from ..errors import MaskError, StreamError
from ..holdback import Window
from ..rules import Restorer, Rules, Session
from ..sse import Event, Framer, parse_event, sniff
from .common import GENERIC, apply_fixes, logprob_fixes

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


def mask_body(raw: bytes, root: jsonspan.Rule | None, rules: Rules) -> tuple[bytes, Session]:
    """Mask a request body. Returns the new body (raw itself if nothing changed) and the
    session holding this request's placeholders, numbered around any placeholder string
    the request already holds. root None: a request whose body the provider does not
    read as model input (a retrieval); it goes out as it came. Raises MaskError."""
    if root is None:
        return raw, Session()
    s, doc = jsonspan.parse(raw)
    if not isinstance(doc, dict):
        raise MaskError("body is not a JSON object")
    session = Session(present_placeholders(s, rules))
    fn = mask_fn(rules, session)
    try:
        new, changed = jsonspan.transform(s, doc, root, fn)
    except (KeyError, IndexError, TypeError) as e:
        # The raw walk and json.loads disagree only where an object repeats a key with
        # values of different shapes: which one the provider reads is not ours to guess.
        raise MaskError("body repeats a key with values of different shapes") from e
    except RecursionError as e:
        raise MaskError("a string holds JSON nested too deeply to be read") from e
    return (new.encode("utf-8") if changed else raw), session


def mask_fn(rules: Rules, session: Session) -> jsonspan.TransformFn:
    """fn for jsonspan.transform: masks a string the way the model will read it.

    Wherever a string holds JSON text (tool arguments, and any value that is a JSON
    object or array: a tool_result holding a JSON document, say), the provider's model
    reads that JSON decoded, so an original spelled with escapes (`C:\\\\Users`,
    `M\\u00fcller`) must be found decoded: the text is masked as JSON, keys and values,
    every other byte of it kept. JSON text that does not parse (arguments cut short) is
    masked literal by literal, decoded. Anything else is masked as text.
    """

    def text(v: str) -> str:
        return rules.mask(v, session)

    def spans(v: str, context: tuple[str, str] | None = None) -> jsonspan.Spans:
        return jsonspan.Spans(rules.mask_spans(v, session, context))

    # In user-defined JSON (tool input, JSON text in a string) a value is read with its
    # key: `{"aws_secret_access_key": "..."}` must meet the rules anchored on the key.
    # The walk hands over an object's key right before that key's string value.
    key: list[str | None] = [None]

    def fn(v: str, rule: jsonspan.Rule) -> str | jsonspan.Spans:
        if rule is jsonspan.KEY:
            key[0] = v
            return spans(v)
        k, key[0] = key[0], None
        if rule.json_text or jsonspan.looks_like_json(v):
            try:
                inner = jsonspan.loads(v)
            except ValueError:
                if rule.json_text or jsonspan.looks_like_json(v):
                    return jsonspan.transform_loose(v, text)
                return text(v)
            return jsonspan.Spans(jsonspan.walk(v, inner, jsonspan.USER, fn))
        if k is not None:
            return spans(v, (json.dumps(k, ensure_ascii=False) + ': "', '"'))
        return spans(v)

    return fn


def restore_fn(r: Restorer) -> Callable[[str, jsonspan.Rule], str]:
    def fn(v: str, rule: jsonspan.Rule) -> str:
        if rule.prose:
            return r.text(v)
        if rule.json_text:
            return r.json_text(v)
        return r.value(v)

    return fn


def restore_json(data: str, root: jsonspan.Rule, r: Restorer) -> str | None:
    """Restore the strings root selects in a JSON document; None when nothing changed.
    Text that is not JSON is restored as JSON text or as a value (never passed on as it
    came). Raises RecursionError for nesting too deep to read."""
    try:
        doc = jsonspan.loads(data)
    except ValueError:
        new = r.json_text(data) if jsonspan.looks_like_json(data) else r.value(data)
        return new if new != data else None
    new = restore_doc(data, doc, root, r)
    return None if new is data else new


def restore_doc(s: str, doc: object, root: jsonspan.Rule, r: Restorer) -> str:
    """The JSON text s (parsed: doc) with the strings root selects restored, and its
    logprobs cleaned (common.logprob_fixes); s itself when nothing changed."""
    new, changed = jsonspan.transform(s, doc, root, restore_fn(r))
    if '"token"' in s:  # only logprobs entries have tokens: rare, so checked cheaply first
        fixes = logprob_fixes(doc, r)
        if fixes:
            out = json.loads(new)
            apply_fixes(out, fixes)
            return dumps(out)
    return new if changed else s


def dumps(obj: object) -> str:
    """Compact JSON as the APIs send it: UTF-8, lone surrogates (half of a pair cut
    between two deltas) as \\u escapes."""
    out = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":"))
    return out


def restore_body(raw: bytes, root: jsonspan.Rule, r: Restorer) -> bytes:
    """A whole (non-streamed) response body, restored; raw itself if unchanged.

    JSON is restored field by field (root); JSON lines (Anthropic batch results) line
    by line; anything else as text. Bytes that are not UTF-8 are kept as they are and
    the text around them restored. Raises RecursionError for JSON nested too deeply to
    read (the caller answers with an error instead).
    """
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        t = raw.decode("utf-8", "surrogateescape")
        new_t = r.value(t)
        return raw if new_t == t else new_t.encode("utf-8", "surrogateescape")
    try:
        doc = jsonspan.loads(s)
    except ValueError:
        lines = _json_lines(s, root, r)
        if lines is not None:
            return raw if lines == s else lines.encode("utf-8")
        new = r.json_text(s) if jsonspan.looks_like_json(s) else r.value(s)
        return raw if new == s else new.encode("utf-8")
    new = restore_doc(s, doc, root, r)
    return raw if new is s else new.encode("utf-8")


def _json_lines(s: str, root: jsonspan.Rule, r: Restorer) -> str | None:
    """s restored as JSON lines (each non-blank line one JSON document); None if some
    line is not JSON."""
    out = []
    for line in s.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if not body.strip():
            out.append(line)
            continue
        try:
            doc = jsonspan.loads(body)
        except ValueError:
            return None
        out.append(restore_doc(body, doc, root, r) + line[len(body) :])
    return "".join(out)


def reencode_field(data: str, start: int, end: int, raw: str, value: str) -> str:
    """data with the JSON string body data[start:end] (== raw) replaced by value."""
    return data[:start] + jsonspan.encode_like(value, raw)[1:-1] + data[end:]


def decode_field(data: str, start: int, end: int) -> str:
    """The decoded value of the JSON string body data[start:end]."""
    raw = data[start:end]
    if "\\" not in raw:
        return raw
    return _scanstring(data, start)[0]


QUIET_PROBE, QUIET_MIN, QUIET_SKIP = 64, 8, 1024


class SSEStream(ABC):
    """Bytes in, bytes out: frames events and hands each to `on_event`.

    Subclasses implement `on_event(ev) -> list[bytes]`, `drain() -> list[bytes]` (all
    held tails as synthetic events, at connection end) and `error_event(msg) -> bytes`,
    and set `terminated` when their API's last event (TERMINAL) has been seen.

    A stream that cannot go on (an event that is not UTF-8 text, one over the size
    limit, a compressed body cut short) and a stream that ends before its last event
    both end the same way: every held tail is delivered, then one explicit error event
    in the provider's shape; nothing after it.
    """

    TERMINAL = "its last event"  # named in the error a stream ending early gets

    def __init__(self, restorer: Restorer) -> None:
        self.r = restorer
        self.windows: dict = {}  # channel key -> Window, or None for a channel passed as is
        self._suspicious = restorer.rules.suspicious
        self.framer = Framer()
        self.decoder: Decoder | None = None  # Content-Encoding of the body, if any
        self.finished = False
        self.terminated = False  # the API's last event has been seen
        self.dead = False  # ended with an error event: nothing more goes out
        self.events_in = 0
        self.events_changed = 0
        self.events_held = 0  # events whose text was held back, whole or in part
        # The quiet check (rules.suspicious) costs about a microsecond an event. Where
        # nearly every event is suspicious (many disguises that begin with common
        # letters) it only adds that cost: after QUIET_PROBE checks that found fewer
        # than QUIET_MIN quiet events, the next QUIET_SKIP events are parsed unchecked.
        # Parsing is always correct; the check only saves work.
        self._checked = 0
        self._quiet_seen = 0
        self._skip = 0

    def feed(self, data: bytes) -> bytes:
        """Bytes of the body as they arrive (content-encoded when `decoder` is set);
        returns what can go to the client now."""
        if self.dead or self.finished or not data:
            return b""
        out: list[bytes] = []
        try:
            if self.decoder is not None:
                data = self.decoder.decompress(data)
            self._feed(data, out)
        except StreamError as e:
            out.append(self.fail(str(e)))
        return b"".join(out)

    def _feed(self, data: bytes, out: list[bytes]) -> None:
        framer = self.framer
        if framer.pending:
            # finish the event that is waiting for its end, then go on with the rest
            j = data.find(b"\n\n")
            if j < 0:
                self._events(framer.feed_raw(data), out)
                return
            self._events(framer.feed_raw(data[: j + 2]), out)
            data = data[j + 2 :]
        k = data.rfind(b"\n\n") + 2
        if (
            k > 1
            and not framer.pending
            and not self._skip
            and data.find(b"\n\n") + 2 < k  # more than one event: one goes through _events
            and not self._suspicious(data, k)
            and self.quiet()
        ):
            # Nothing in these whole events can begin or continue a match: they pass on
            # as they came, unframed (the common case for prose; bench (c)).
            self.events_in += data.count(b"\n\n", 0, k)
            if not self.terminated and self._marked(data, k):
                self.terminated = any(self.is_terminal(ev) for ev in Framer().feed(data[:k]))
            self.passed(data, k)
            out.append(data[:k])
            data = data[k:]
        if data:
            self._events(framer.feed_raw(data), out)

    def _events(self, raws: list[bytes], out: list[bytes]) -> None:
        for raw in raws:
            self.events_in += 1
            if self._quiet_event(raw) and SSEStream.quiet(self):
                if not self.terminated and self._marked(raw, len(raw)):
                    self.terminated = self.is_terminal(parse_event(raw))
                out.append(self.pass_on(raw))  # nothing in it can take part in a match
            else:
                ev = parse_event(raw)
                if ev.bad:
                    # It cannot be read, so it cannot be reversed; passed on now it
                    # would overtake the text held back before it.
                    raise StreamError("an event is not UTF-8 text")
                out.extend(self.on_event(ev))

    def _quiet_event(self, raw: bytes) -> bool:
        """Nothing in raw can take part in a match (False: parse it)."""
        if self._skip:
            self._skip -= 1
            return False
        quiet = not self._suspicious(raw, len(raw))
        self._checked += 1
        self._quiet_seen += quiet
        if self._checked == QUIET_PROBE:
            if self._quiet_seen < QUIET_MIN:
                self._skip = QUIET_SKIP
            self._checked = self._quiet_seen = 0
        return quiet

    def flush(self) -> bytes:
        """The connection ended. Idempotent: a second call returns b"". A stream that
        has not sent its last event gets its held tails and then an error event."""
        if self.finished:
            return b""
        out: list[bytes] = []
        try:
            if self.decoder is not None:
                self._feed(self.decoder.flush(), out)
            self._events(self.framer.flush_raw(), out)
        except StreamError as e:
            out.append(self.fail(str(e)))
            return b"".join(out)
        self.finished = True
        out.extend(self.drain())
        if not self.terminated:
            self.dead = True
            out.append(self.error_event(f"disguise: the stream ended before {self.TERMINAL}"))
        return b"".join(out)

    def fail(self, message: str) -> bytes:
        """End the stream now: every held tail, then an error event; nothing after."""
        if self.dead:
            return b""
        self.dead = self.finished = True
        out = self.drain()
        out.append(self.error_event(f"disguise: stream could not be reversed: {message}"))
        return b"".join(out)

    def quiet(self) -> bool:
        """No window holds text or ends inside an escape (subclasses add their own)."""
        for w in self.windows.values():
            if w is not None and (w.held or w.escaped):
                return False
        return True

    # Bytes without which no event can be the last one: events that pass unparsed are
    # parsed after all when they hold one of these (rarely: once per stream).
    TERMINAL_MARKERS: tuple[bytes, ...] = ()

    def _marked(self, data: bytes, end: int) -> bool:
        return any(data.find(m, 0, end) >= 0 for m in self.TERMINAL_MARKERS)

    def is_terminal(self, ev: Event) -> bool:
        """Is ev the API's last event (or an error event, after which nothing comes)?"""
        return False

    def pass_on(self, raw: bytes) -> bytes:
        """An event nothing in which can take part in a match: as it came, by default."""
        return raw

    def passed(self, run: bytes, end: int) -> None:  # noqa: B027 - a hook, empty by default
        """Whole events run[:end] went out as they came, unparsed (subclasses that
        number events note where the numbering stands)."""

    def not_object(self, ev: Event) -> list[bytes]:
        """An event whose data is not a JSON object (not JSON at all, or a bare value):
        restored as a value or JSON text, never passed on unread."""
        assert ev.data is not None
        new = restore_json(ev.data, GENERIC, self.r)
        if new is None:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(new)]

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


class BodyStream:
    """A response body of a recognised flow, told apart by its first bytes (sse.sniff):
    an event stream goes to `stream` event by event; anything else (JSON, JSON lines,
    text) is collected and restored whole (`whole`) when the body ends. The interface
    is SSEStream's: feed, flush, whole, error_event, finished.

    The label alone is not trusted: a stream sent as `text/plain`,
    `application/octet-stream`, `application/x-ndjson` or with no content type would
    otherwise be read as one JSON body, fail to parse and reach the client unrestored.
    """

    def __init__(
        self,
        stream: SSEStream,
        whole: Callable[[bytes], bytes],
        error_body: Callable[[str], bytes],
        content_type: str,
    ) -> None:
        self.stream = stream
        self._whole = whole
        self._error_body = error_body
        self.content_type = content_type
        self.decoder: Decoder | None = None
        self.is_sse: bool | None = None  # undecided until the first bytes arrive
        self._buf: list[bytes] = []
        self._head = b""
        self.finished = False

    @property
    def events_in(self) -> int:
        return self.stream.events_in

    @property
    def events_changed(self) -> int:
        return self.stream.events_changed

    def feed(self, data: bytes) -> bytes:
        if self.finished or not data:
            return b""
        if self.decoder is not None:
            try:
                data = self.decoder.decompress(data)
            except StreamError as e:
                return self._broken(str(e))
        if self.is_sse is None:
            self._head += data
            self.is_sse = sniff(self._head, self.content_type)
            if self.is_sse is None:
                return b""
            data, self._head = self._head, b""
        if self.is_sse:
            return self.stream.feed(data)
        self._buf.append(data)
        return b""

    def flush(self) -> bytes:
        """The body ended: an event stream's end (see SSEStream.flush), or the whole
        body restored. Raises for a body that cannot be restored (the caller answers
        with error_event)."""
        if self.finished:
            return b""
        tail = b""
        if self.decoder is not None:
            try:
                self.decoder.flush()
            except StreamError as e:
                return self._broken(str(e))
        if self.is_sse is None:
            self.is_sse = sniff(self._head, self.content_type, final=True)
            tail, self._head = self._head, b""
        self.finished = True
        if self.is_sse:
            return self.stream.feed(tail) + self.stream.flush()
        return self._whole(b"".join(self._buf) + tail)

    def whole(self, body: bytes) -> bytes:
        """A body that arrived in one piece (not streamed, or replayed)."""
        return self.feed(body) + self.flush()

    def error_event(self, message: str) -> bytes:
        """An error in the shape the body has: an event, or an error body."""
        sse = self.is_sse if self.is_sse is not None else "text/event-stream" in self.content_type.lower()
        return self.stream.error_event(message) if sse else self._error_body(message)

    def _broken(self, message: str) -> bytes:
        if self.is_sse:
            return self.stream.fail(message)
        self.finished = True
        return self.error_event(f"disguise: response not reversed: {message}")
