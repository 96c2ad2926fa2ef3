"""The stream plumbing every provider shares: SSEStream (events in, restored events
out, a hold-back window per channel) and BodyStream (an event stream or a whole body,
told by its first bytes). Sans I/O."""

from __future__ import annotations

import enum
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Protocol

from ..core.holdback import Window
from ..core.jsonspan import escaped_name
from ..core.rules import Restorer
from ..core.sse import Event, Framer, parse_event, sniff
from ..errors import StateError, StreamError
from .fields import GENERIC
from .restore import decode_field, reencode_field, restore_json

QUIET_PROBE, QUIET_MIN, QUIET_SKIP = 64, 8, 1024
# What ends an event (sse.Framer's blank line), at the end of what went out.
_BLANK_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)\Z")


class StreamState(enum.Enum):
    """Where a response body's reverser stands. A stream is OPEN until its API's last
    event (FINISHING); the end of the body then makes it DONE. A stream that ends
    before its last event, or that cannot be reversed further, ends FAILED: it sent the
    client an explicit error, and nothing goes out after it. A whole body goes from OPEN
    to DONE (restored) or FAILED."""

    OPEN = "open"
    FINISHING = "finishing"
    DONE = "done"
    FAILED = "failed"


# Every transition a reverser may take, in one place (h11's ConnectionState); any other
# is a bug and raises StateError.
TRANSITIONS: dict[StreamState, frozenset[StreamState]] = {
    StreamState.OPEN: frozenset({StreamState.FINISHING, StreamState.DONE, StreamState.FAILED}),
    StreamState.FINISHING: frozenset({StreamState.DONE, StreamState.FAILED}),
    StreamState.DONE: frozenset(),
    StreamState.FAILED: frozenset(),
}


class Lifecycle:
    """A reverser's StreamState and its transitions."""

    state: StreamState = StreamState.OPEN
    # Why the addon ended the reverser itself (`fail`); None when it ran to its end or
    # the provider cut it (then `failed` says whether it ended with an error).
    failure: str | None = None

    def to(self, new: StreamState) -> None:
        if new is self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise StateError(f"a response reverser cannot go from {self.state.value} to {new.value}")
        self.state = new

    @property
    def finished(self) -> bool:
        """Ended, either way: nothing more is read."""
        return self.state is StreamState.DONE or self.state is StreamState.FAILED

    @property
    def failed(self) -> bool:
        """Ended with an explicit error: nothing more goes out."""
        return self.state is StreamState.FAILED

    @property
    def terminated(self) -> bool:
        """The API's last event has been seen."""
        return self.state is StreamState.FINISHING or self.state is StreamState.DONE


class Reverser(Protocol):
    """What the adapter drives: a response body's bytes in (decoded), restored bytes out.
    SSEStream, BodyStream, the APIs' own streams and core.decoding.Decoded have it."""

    @property
    def state(self) -> StreamState: ...
    @property
    def finished(self) -> bool: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def events_in(self) -> int: ...
    @property
    def events_changed(self) -> int: ...

    def feed(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...
    def fail(self, message: str) -> bytes: ...
    def whole(self, body: bytes) -> bytes: ...
    def error_event(self, message: str) -> bytes: ...



class SSEStream(Lifecycle, ABC):
    """Bytes in, bytes out: frames events and hands each to `on_event`.

    Subclasses implement `on_event(ev) -> list[bytes]`, `drain() -> list[bytes]` (all
    held tails as synthetic events, at connection end) and `error_event(msg) -> bytes`,
    and call `self.to(StreamState.FINISHING)` when their API's last event (TERMINAL) has
    been seen.

    A stream that ends before its last event (the provider or the network cut it) gets
    every held tail, then one explicit error event in the provider's shape: the held
    text is what the provider sent. A stream the addon ends itself (`fail`: an event
    that is not UTF-8 text, one over the size limit, more channels than it keeps, a
    compressed body it cannot decode) gets the error event alone: its held text may be
    part of a disguise or placeholder. Nothing goes out after the error.
    """

    TERMINAL = "its last event"  # named in the error a stream ending early gets

    def __init__(self, restorer: Restorer) -> None:
        self.r = restorer
        self.windows: dict = {}  # channel key -> Window, or None for a channel passed as is
        self._suspicious = restorer.rules.suspicious
        self.framer = Framer()
        self.state = StreamState.OPEN
        self.events_in = 0
        self.events_changed = 0
        self.events_held = 0  # events whose text was held back, whole or in part
        self.withheld = 0  # characters of held text dropped when the addon ended the stream
        # The quiet check (rules.suspicious) costs about a microsecond an event. Where
        # nearly every event is suspicious (many disguises that begin with common
        # letters) it only adds that cost: after QUIET_PROBE checks that found fewer
        # than QUIET_MIN quiet events, the next QUIET_SKIP events are parsed unchecked.
        # Parsing is always correct; the check only saves work.
        self._checked = 0
        self._quiet_seen = 0
        self._skip = 0

    def feed(self, data: bytes) -> bytes:
        """Bytes of the body as they arrive (decoded: core.decoding.Decoded takes off a
        Content-Encoding); returns what can go to the client now."""
        if self.finished or not data:
            return b""
        out: list[bytes] = []
        try:
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
            if self.state is StreamState.OPEN and self._marked(data, k):
                if any(self.is_terminal(ev) for ev in Framer().feed(data[:k])):
                    self.to(StreamState.FINISHING)
            self.passed(data, k)
            out.append(data[:k])
            data = data[k:]
        if data:
            self._events(framer.feed_raw(data), out)

    def _events(self, raws: list[bytes], out: list[bytes]) -> None:
        for raw in raws:
            self.events_in += 1
            if self._quiet_event(raw) and SSEStream.quiet(self):
                if self.state is StreamState.OPEN and self._marked(raw, len(raw)):
                    if self.is_terminal(parse_event(raw)):
                        self.to(StreamState.FINISHING)
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
            self._events(self.framer.flush_raw(), out)
        except StreamError as e:
            out.append(self.fail(str(e)))
            return b"".join(out)
        after = self.drain()
        if self.terminated:
            self.to(StreamState.DONE)
        else:
            self.to(StreamState.FAILED)
            after.append(self.error_event(f"disguise: the stream ended before {self.TERMINAL}"))
        if after and out and _BLANK_END.search(out[-1]) is None:
            # the connection cut the last event before its blank line: what follows must
            # not run into it (an error event glued to a data line is no event at all)
            last = out[-1]
            out.append(b"\r\n" if last.endswith(b"\r\n") else last[-1:] if last.endswith((b"\n", b"\r")) else b"\n\n")
        out.extend(after)
        return b"".join(out)

    def fail(self, message: str) -> bytes:
        """End the stream now, by the addon's own decision: an error event, nothing
        after it. Held text is dropped, not delivered: a held tail is the part that may
        still grow into a disguise or a placeholder (`"owner": "Zenith`), flushed it
        would reach the client as a fragment of one, and the error already says the text
        is incomplete. (A stream the provider cut is flush's case.)"""
        if self.failed:
            return b""
        self.to(StreamState.FAILED)
        self.failure = message
        self.withheld = sum(len(w.held) for w in self.windows.values() if w is not None)
        self.windows = {}
        return self.error_event(f"disguise: stream could not be reversed: {message}")

    def quiet(self) -> bool:
        """No window holds text or ends inside an escape (subclasses add their own)."""
        for w in self.windows.values():
            if w is not None and (w.held or w.escaped):
                return False
        return True

    # Bytes without which no event can be the last one: events that pass unparsed are
    # parsed after all when they hold one of these (rarely: once per stream), or a name
    # spelled with escapes (`"message_st\\u006fp"` is the marker too, as JSON reads it).
    TERMINAL_MARKERS: tuple[bytes, ...] = ()

    def _marked(self, data: bytes, end: int) -> bool:
        return any(data.find(m, 0, end) >= 0 for m in self.TERMINAL_MARKERS) or escaped_name(data, end)

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


class BodyStream(Lifecycle):
    """A response body of a recognised flow, told apart by its first bytes (sse.sniff):
    an event stream goes to `stream` event by event; anything else (JSON, JSON lines,
    text) is collected and restored whole (`whole`) when the body ends. A Reverser, like
    SSEStream; its state is its stream's once the body is told to be one.

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
        self.is_sse: bool | None = None  # undecided until the first bytes arrive
        self._buf: list[bytes] = []
        self._head = b""
        self._state = StreamState.OPEN  # while not an event stream
        self._failure: str | None = None

    @property  # type: ignore[override]
    def state(self) -> StreamState:
        return self.stream.state if self.is_sse else self._state

    @state.setter
    def state(self, new: StreamState) -> None:
        self._state = new

    @property  # type: ignore[override]
    def failure(self) -> str | None:
        return self.stream.failure if self.is_sse else self._failure

    @failure.setter
    def failure(self, why: str | None) -> None:
        self._failure = why

    @property
    def events_in(self) -> int:
        return self.stream.events_in

    @property
    def events_changed(self) -> int:
        return self.stream.events_changed

    def feed(self, data: bytes) -> bytes:
        if self.finished or not data:
            return b""
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
        if self.is_sse is None:
            self.is_sse = sniff(self._head, self.content_type, final=True)
            tail, self._head = self._head, b""
        if self.is_sse:
            return self.stream.feed(tail) + self.stream.flush()
        body = b"".join(self._buf) + tail
        self._buf = []
        out = self._whole(body)  # raises: the caller answers with error_event (FAILED)
        self.to(StreamState.DONE)
        return out

    def whole(self, body: bytes) -> bytes:
        """A body that arrived in one piece (not streamed, or replayed)."""
        return self.feed(body) + self.flush()

    def error_event(self, message: str) -> bytes:
        """An error in the shape the body has: an event, or an error body."""
        sse = self.is_sse if self.is_sse is not None else "text/event-stream" in self.content_type.lower()
        return self.stream.error_event(message) if sse else self._error_body(message)

    def fail(self, message: str) -> bytes:
        """End now with an explicit error in the body's shape; nothing after it."""
        if self.is_sse:
            return self.stream.fail(message)
        if self.failed:
            return b""
        self.to(StreamState.FAILED)
        self.failure = message
        self._buf = []
        return self.error_event(f"disguise: response not reversed: {message}")

