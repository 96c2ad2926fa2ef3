"""The stream plumbing every provider shares: SSEStream (events in, restored events
out, a hold-back window per channel); base/bodystream.BodyStream reads a body as its
endpoint declares and its Content-Type says. Sans I/O."""

from __future__ import annotations

import enum
import json
import re
from abc import ABC, abstractmethod
from typing import Protocol

from ..errors import StateError, StreamError
from ..rules.rules import Restorer
from ..wire.jsonspan import encode_like, plain
from ..wire.sse import Cuts, Event, Framer, common_prefix, count_events, parse_event, split
from . import offsets
from .fields import GENERIC
from .holdback import Window
from .restore import _scanstring, decode_field, reencode_field, restore_json

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
    StreamState.DONE: frozenset(), StreamState.FAILED: frozenset(),
}  # fmt: skip


class Lifecycle:
    """A reverser's StreamState and its transitions."""

    state: StreamState = StreamState.OPEN
    # Why the addon ended the reverser itself (`fail`); None when it ran to its end or
    # the provider cut it (then `failed` says whether it ended with an error).
    failure: str | None = None
    # The API's last event went by at some point (FINISHING or DONE was reached), kept
    # once the stream ends either way: what the capture asks at the stream's end
    # (inspect/tee.py, final_sent) rather than reading the state after every read.
    past_final: bool = False

    def to(self, new: StreamState) -> None:
        if new is self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise StateError(f"a response reverser cannot go from {self.state.value} to {new.value}")
        self.state = new
        if new is StreamState.FINISHING or new is StreamState.DONE:
            self.past_final = True

    @property
    def finished(self) -> bool:  # ended, either way: nothing more is read
        return self.state is StreamState.DONE or self.state is StreamState.FAILED

    @property
    def failed(self) -> bool:  # ended with an explicit error: nothing more goes out
        return self.state is StreamState.FAILED

    @property
    def terminated(self) -> bool:  # the API's last event has been seen
        return self.state is StreamState.FINISHING or self.state is StreamState.DONE


class Reverser(Protocol):
    """What the adapter drives: a response body's bytes in (decoded), restored bytes out."""

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


def _whole_event(raw: bytes) -> bool:
    """Is raw, an event the stream ended inside, whole but for its blank line: its last
    line ended, or its data (the APIs' events carry JSON) parses?"""
    if raw.endswith((b"\n", b"\r")):
        return True
    data = parse_event(raw + b"\n\n").data
    if data is None:
        return False
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


class SSEStream(Lifecycle, ABC):
    """Bytes in, bytes out: frames events and hands each to `on_event`.

    Subclasses implement `on_event(ev) -> list[bytes]`, `drain() -> list[bytes]` (all
    held tails as synthetic events, at connection end) and `error_event(msg) -> bytes`,
    and call `self.to(StreamState.FINISHING)` when their API's last event (TERMINAL) has
    been seen.

    The unit of work is the network read (`feed`). The events a read completes are
    scanned once for triggers (rules/triggers.py: what could start, continue or complete
    a disguise, a placeholder or a strip match, and the API's MARKERS). A read with none,
    arriving while no channel holds text, goes to the client as it came: the same bytes
    object when the read ends where an event ends, else its whole events (what follows
    the last of them waits for the rest of its event; an event never goes out in part,
    so no later read can need a change in bytes already sent). Otherwise only the
    events around the triggers are parsed, and every event while a channel holds text
    (`fast = False` parses every event: the reference on_raw is tested against).
    An event that is not UTF-8 text passes like any other where it holds no trigger
    and nothing is held (nothing in it could be restored); parsed, it ends the stream.

    A stream that ends before its last event (the provider or the network cut it) gets
    every held tail, then one explicit error event in the provider's shape: the held
    text is what the provider sent. A stream the addon ends itself (`fail`: an event
    that is not UTF-8 text, one over the size limit, more channels than it keeps, a
    compressed body it cannot decode) gets the error event alone: its held text may be
    part of a disguise or placeholder. Nothing goes out after the error.
    """

    TERMINAL = "its last event"  # named in the error a stream ending early gets
    # Byte strings whose events are always parsed: events that change the stream's
    # state whatever their text (its last event, errors, channels opening or closing).
    MARKERS: tuple[bytes, ...] = ()
    # Member names whose string values no window of the stream reads, from its table:
    # a trigger that only says such a value ends in a proper prefix is no trigger
    # (Triggers.kept; rules/triggers.py says why that is exact).
    OPAQUE: frozenset[bytes] = frozenset()

    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        self.windows: dict = {}  # channel key -> Window, or None for a channel passed as is
        # an answer citing the request's documents by offsets, where masking moved them: its
        # citations are parsed (and moved: base/offsets.py)
        self.triggers = restorer.triggers(self.MARKERS + offsets.QUOTED_MARKERS if restorer.documents else self.MARKERS)
        self._scan = self.triggers.scan
        # a stream without its own quiet_range and passed needs neither called
        cls = type(self)
        self._plain = cls.quiet_range is SSEStream.quiet_range and cls.passed is SSEStream.passed
        self.fast = True
        self._pass = None  # the API's compiled per-read step (base/readpass.py), if any
        self._seen = b""  # the last read that passed whole after a scan from its start
        self._clean = b""  # the prefix it shared with the one before (see _learn)
        self._skip = 0  # where a read that begins with _clean is scanned from
        self._probed = self._passed = self._unscanned = 0  # see _probe
        self.framer = Framer()
        self.state = StreamState.OPEN
        self.events_in = 0
        self.events_changed = 0
        self.events_held = 0  # events whose text was held back, whole or in part
        self.withheld = 0  # characters of held text dropped when the addon ended the stream

    def feed(self, data: bytes) -> bytes:
        """Bytes of the body as they arrive (decoded: wire.decoding.Decoded takes off a
        Content-Encoding); returns what can go to the client now."""
        out: list[bytes] = []
        try:
            # The common read (whole events, LF ends, nothing waiting) to the compiled step first (-1: not that)
            pos, block = (-1 if (rp := self._pass) is None else rp.feed(self, data, out)), data
            if pos < 0:
                if self.finished or not data:
                    return b""
                if data[-2:] != b"\n\n" or self.framer.pending or 13 in data:
                    block = self.framer.whole(data)
                    if not block:
                        return b""
                pos = self._pass.run(self, block, out) if self._pass is not None and self.fast else 0
            if pos:
                if pos < len(block):
                    self._block(block[pos:], out)
                return out[0] if len(out) == 1 else b"".join(out)
            if self.fast and not self._unscanned:
                # What the last reads began with was scanned then: scanned again only
                # where a trigger could end past it (the longest trigger back from its end).
                k = self._skip if self._clean and block.startswith(self._clean) else 0
                hits = self._scan(block[k:] if k else block)
                if hits and self.OPAQUE:  # those that only end an opaque member's value go
                    starts = self.triggers.kept(block, k, hits, self.OPAQUE)
                else:
                    starts = [k + m[1] for m in hits]
                if not starts and self.quiet() and (self._plain or self.quiet_range(block, 0, len(block))):
                    # Nothing in it can take part in a match: the read goes on as it came.
                    self.events_in += block.count(b"\n\n", k) or block.count(b"\n\r\n", k)
                    if not self._plain:
                        self.passed(block, 0, len(block))
                    if not k:
                        self._learn(block)
                    self._probe(True)
                    return block
                self._probe(False)
                self._block(block, out, starts)
            else:
                self._block(block, out)
        except StreamError as e:
            out.append(self.fail(str(e)))
        return out[0] if len(out) == 1 else b"".join(out)

    def _learn(self, block: bytes) -> None:
        """block passed whole, scanned from its start: what it shares with the read that
        passed before it, up to its first event's end, becomes the known prefix."""
        prev, self._seen = self._seen, block
        if not prev:
            return
        n = common_prefix(block, prev)
        end = block.find(b"\n\n")
        if 0 <= end < n:
            n = end  # within the first event: the events in a read are counted past it
        k = n - self.triggers.longest + 1
        if k >= _SKIP_MIN:
            self._clean = block[:n]
            self._skip = k

    def _feed_events(self, data: bytes, out: list[bytes]) -> None:
        block = self.framer.whole(data) if data else b""
        if block:
            self._block(block, out)

    def _probe(self, passed: bool) -> None:
        """Where nearly every read holds a trigger (a stream dense with disguises, or
        many disguises that begin like ordinary words), the scan only adds its cost:
        after PROBE scanned reads of which fewer than PROBE_MIN passed, the next
        UNSCANNED reads are parsed without one. Parsing is always exact; the scan only
        saves work."""
        self._probed += 1
        self._passed += passed
        if self._probed == PROBE:
            if self._passed < PROBE_MIN:
                self._unscanned = UNSCANNED
            self._probed = self._passed = 0

    def _block(self, block: bytes, out: list[bytes], starts: list[int] | None = None) -> None:
        """Whole events: passed on where nothing in them can take part in a match
        (starts: where the triggers in block begin, if it was scanned)."""
        n = len(block)
        if block.find(b"\n\n") + 2 == n:  # one event (LF): parsed
            self._events([block], out)
            return
        if starts is None:
            if self._unscanned or not self.fast:
                self._unscanned = max(0, self._unscanned - 1)
                self._events(split(block), out)  # every event parsed
                return
            starts = [m[1] for m in self._scan(block)]
        if not starts and self.quiet() and self.quiet_range(block, 0, n):
            self.events_in += count_events(block, 0, n)
            self.passed(block, 0, n)
            out.append(block)
            return
        cuts = Cuts(block)
        pos = i = 0
        while pos < n:
            if not self.quiet():
                # a channel holds text: the next event is parsed whatever it holds
                e = cuts.next_end(pos)
                self._events(split(block[pos:e]), out)
                pos = e
                continue
            while i < len(starts) and starts[i] < pos:
                i += 1
            s = cuts.start_of(starts[i], pos) if i < len(starts) else n
            if s > pos:
                if self.quiet_range(block, pos, s):
                    self.events_in += count_events(block, pos, s)
                    self.passed(block, pos, s)
                    out.append(block[pos:s])
                else:
                    self._events(split(block[pos:s]), out)
                pos = s
                continue
            e = cuts.end_of(starts[i])
            self._events(split(block[pos:e]), out)
            pos = e

    def _events(self, raws: list[bytes], out: list[bytes]) -> None:
        on_raw = self.on_raw if self.fast else None
        for raw in raws:
            self.events_in += 1
            if on_raw is not None:
                got = on_raw(raw)
                if got is not None:
                    out.extend(got)
                    continue
            ev = parse_event(raw)
            if ev.bad:
                # It cannot be read, so it cannot be reversed; passed on now it
                # would overtake the text held back before it.
                raise StreamError("an event is not UTF-8 text")
            out.extend(self.on_event(ev))

    def flush(self) -> bytes:
        """The connection ended. Idempotent: a second call returns b"". A stream that
        has not sent its last event gets its held tails and then an error event."""
        if self.finished:
            return b""
        out: list[bytes] = []
        tail = self.framer.flush_raw()
        # The connection cut an event inside its data (`data: {"type":"content_`): a
        # client drops an event the stream ends inside (no blank line: the SSE spec, the
        # SDKs' decoders), but followed by held text or the error it would be dispatched,
        # and its data would not parse (the anthropic SDK raised a JSONDecodeError and
        # never read the error). It is not passed on. One whose lines are whole, or whose
        # data is whole JSON, is: it is what the provider sent.
        try:
            if not tail or _whole_event(tail[-1]):
                self._events(tail, out)
            after = self.drain()  # (a window whose two readings differ: holdback.Window.EITHER)
        except StreamError as e:
            out.append(self.fail(str(e)))
            return b"".join(out)
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
        """No window holds text (subclasses add their own
        state: a stream that renumbers what it passes is never quiet). A JSON answer's
        stream never is: each answer channel's first text decides its mode (holdback.Window)."""
        if self.restorer.output:
            return False
        for w in self.windows.values():
            if w is not None and w.held:
                return False
        return True

    def quiet_range(self, block: bytes, start: int, end: int) -> bool:
        """Can the whole events block[start:end], free of triggers, pass unparsed with
        the stream as it is now? (Subclasses whose state a trigger-free event can still
        change say no where it would.)"""
        return True

    def passed(self, block: bytes, start: int, end: int) -> None:  # noqa: B027 - a hook, empty by default
        """Whole events block[start:end] went out as they came, unparsed (subclasses
        that number events note where the numbering stands)."""

    def not_object(self, ev: Event) -> list[bytes]:
        """An event whose data is not a JSON object: restored as a value or JSON text."""
        assert ev.data is not None
        new = restore_json(ev.data, GENERIC, self.restorer)
        if new is None:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(new)]

    def whole(self, body: bytes) -> bytes:
        """A stream that arrived in one piece (not streamed, or replayed)."""
        return self.feed(body) + self.flush()

    def done_line(self, ev: Event, done: str | None) -> list[bytes] | None:
        """on_event's start where a `data: <done>` line ends the stream (SPEC.done): an event
        without data as it came, the done line after every held tail (FINISHING); else None."""
        data = ev.data
        if data is None:
            return [ev.raw]
        if data.strip() != done:
            return None
        self.to(StreamState.FINISHING)
        return [*self.drain(), ev.raw]

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

    def on_raw(self, raw: bytes) -> list[bytes] | None:
        """The bytes to emit for one event, read from its raw bytes alone: for the one
        or two shapes nearly every delta of an API has, so that such an event costs no
        parse_event, no decoding of all of it and no re-encoding (an event is parsed
        here only because it holds a trigger or a channel holds text). None where the
        event is not in that shape, beyond doubt: it is then parsed (on_event). What it
        returns and the state it leaves must be exactly on_event's for the parsed
        event; declining, it changes nothing."""
        return None

    def window_raw(self, raw: bytes, w: Window, start: int, end: int) -> list[bytes] | None:
        """window_field for an event on_raw read: raw[start:end] is the body of the
        string to feed through w, raw is UTF-8 and in parse_event's one-data-line shape
        (no CR, no line break in its data), so the event's bytes are its text's and
        with_data would splice in place. None, touching nothing, where the string does
        not decode (parse it: decode_field raises the same error there)."""
        field = raw[start:end]
        if 92 in field:  # a backslash: escapes decoded as decode_field decodes them
            try:
                text = _scanstring(raw[start : end + 1].decode("utf-8"), 0)[0]
            except ValueError:
                return None
        else:
            text = field.decode("utf-8")
        held_before = w.held
        out = w.feed(text)
        if out == text and not held_before:
            return [raw]
        if w.held:
            self.events_held += 1
        if not out:
            return []
        self.events_changed += 1
        if not plain(out):  # as reencode_field writes it (never a raw line break)
            out = encode_like(out, field.decode("utf-8"))[1:-1]
        return [raw[:start] + out.encode("utf-8") + raw[end:]]

    @abstractmethod
    def on_event(self, ev: Event) -> list[bytes]:
        """The bytes to emit for one event, in order (held text may be emitted later)."""

    @abstractmethod
    def drain(self) -> list[bytes]:
        """Synthetic events carrying every channel's held tail, in channel order."""

    @abstractmethod
    def error_event(self, message: str) -> bytes:
        """An event in the provider's own error shape, ending the stream explicitly."""


PROBE, PROBE_MIN, UNSCANNED = 64, 8, 1024
_SKIP_MIN = 32  # a known prefix is used where it saves scanning at least this many bytes
