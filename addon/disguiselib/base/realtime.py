"""Realtime APIs over WebSocket (OpenAI Realtime, Gemini Live): one `Connection` per
WebSocket flow, frames in, frames out (sans I/O).

Both APIs send one JSON event per WebSocket message. The client's events are masked
like request bodies, frame by frame, with the API's field table; the server's events
are restored like a stream, with a hold-back window per channel that lives as long as
the connection. The connection is one masking session: placeholders are numbered by
first appearance over the whole connection and stay the same for its life, so what the
model says about `[EMAIL_1]` three turns later still restores to the same original.

    conn = Connection(OpenAIRealtime, rules)
    res = pipeline.client_frame(conn, Frame(data, text=True))  # res.frames go upstream
    res = conn.server(Frame(data, text=True))   # res.frames go to the client, in order
    res = conn.end()                            # the connection closed: what is left

`conn.mask(frame)` masks a client event; what may then leave is decided by the leak
check, in pipeline.client_frame (the one path: mask, then check).

A frame nothing changes comes out as the very Frame that went in (`out is frame`), so an
adapter forwards it untouched; a changed frame keeps its type (text or binary) and only
its changed strings are re-encoded (jsonspan splices). A `Result` with `close` set ends
the connection: the client gets `error` (an event in the API's own error shape), then a
WebSocket close with that code.

Failing closed, as for HTTP (the first two in pipeline.client_frame):
- a client event the API's table does not know is scanned (the leak guard, every key
  and value) and forwarded only when it holds no original; one that does is refused
  (`refuse`: POLICY_VIOLATION);
- every masked client event is scanned once more before it leaves (the leak guard,
  minus the fields the table declares as media: `without_media`);
- a server event that is not UTF-8 JSON, or that cannot be restored, ends the
  connection with an explicit error (INTERNAL_ERROR) and no held text: a stream the
  addon ends itself delivers nothing that may be part of a disguise.
After either, the connection is CLOSED: every later frame in either direction is
dropped.

Control frames (RFC 6455 §5.5): a client's ping, pong and close carry a payload too (a
close: a code and a reason) and go upstream like its events, so their payload is masked
as text with the same rules and session (`mask_control`; what may leave is decided in
pipeline.client_control). A ping that went upstream rewritten is answered by a pong
carrying the rewritten payload (§5.5.3: "identical Application data"), and a close by
one echoing its reason: `echoed` gives the client its own payload back in both. The
server's ping and close go to the client restored (`to_client`, `restore_control`), and
the client's pong to such a ping carries upstream's own payload back (`upstream_echo`).

State: OPEN -> CLOSED (refused or failed) and OPEN -> ENDED (`end()`).
"""

from __future__ import annotations

import enum
import json
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import DisguiseError, MaskError, StateError, StreamError, reason
from ..rules.rules import Restorer, Rules, Session
from ..wire import jsonspan
from ..wire.jsonspan import Rule
from ..wire.tokenmap import splice
from . import copies
from .document import loads, repeated
from .fields import GENERIC, MEDIA
from .holdback import Window, window_for
from .masking import mask_doc, with_copies
from .present import Held, fakes_in, placeholders_in
from .prompt import numbers_key
from .restore import restore_doc

# WebSocket close codes (RFC 6455 §7.4.1).
POLICY_VIOLATION = 1008  # a client event that holds an original and cannot be masked
INTERNAL_ERROR = 1011  # a server event that cannot be restored
# A control frame's payload is at most 125 bytes (RFC 6455 §5.5); a close frame's reason at
# most 123 bytes of UTF-8 (those 125 less the 2-byte code, §5.5.1).
MAX_CONTROL_PAYLOAD = 125
MAX_CLOSE_REASON = 123
# Pings sent rewritten whose pong has not come back yet. A client waits for a pong before
# its next keepalive ping (the `websockets` library: one each 20 s by default); this many
# unanswered is a connection long dead, and the oldest is forgotten: its pong, should it
# come, reaches the client as upstream sent it (masked, never an original).
MAX_PINGS_AWAITED = 64


class Control(enum.Enum):
    """A WebSocket control frame, by its opcode (RFC 6455 §5.5)."""

    CLOSE = 0x8
    PING = 0x9
    PONG = 0xA

    @property
    def limit(self) -> int:
        """The most bytes its payload (a close: its reason) may have."""
        return MAX_CLOSE_REASON if self is Control.CLOSE else MAX_CONTROL_PAYLOAD


@dataclass(frozen=True)
class Frame:
    """One WebSocket message: its payload and whether it is a text (or a binary) one."""

    data: bytes
    text: bool = True


@dataclass
class Result:
    """What one frame in (or the end) gives: `frames` to send on in the frame's
    direction, in order; with `close` set, the connection ends: `error` goes to the
    client, then both sides are closed with close = (code, reason)."""

    frames: list[Frame]
    error: Frame | None = None
    close: tuple[int, str] | None = None


@dataclass(frozen=True)
class ControlOut:
    """What of a client control frame's payload goes upstream: `data` (the payload itself
    when it holds no original), and when it goes empty instead of masked, why (`refused`:
    it names rules and sizes, never the client's text)."""

    data: bytes
    refused: str | None = None


class State(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"  # refused a client event or failed on a server event: nothing passes any more
    ENDED = "ended"  # the connection closed (end())


# A connection's transitions, in one place; Connection.to refuses any other (StateError),
# and leaves the connection as it was (a closed one stays closed: nothing passes).
TRANSITIONS: dict[State, frozenset[State]] = {
    State.OPEN: frozenset({State.CLOSED, State.ENDED}),
    State.CLOSED: frozenset(),
    State.ENDED: frozenset(),
}


class Protocol(ABC):
    """One API's half of a connection: its client event table and its server event
    channels. Subclasses fill `client_rule`, `server_event`, `drain` and `error_event`."""

    name: ClassVar[str]
    SERVER_TEXT: ClassVar[bool] = True  # the frame type of the API's server events

    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        self.windows: dict[tuple, Window] = {}
        self.events_held = 0  # server events whose text was held back, whole or in part

    @abstractmethod
    def client_rule(self, doc: dict) -> Rule | None:
        """The field rule of a client event; None for one this table does not know."""

    @abstractmethod
    def server_event(self, s: str, doc: dict) -> list[str]:
        """A server event (its JSON text s, parsed: doc) restored: the events to send
        in its place, in order; s itself (the same object) when unchanged. Raises
        StreamError when it cannot be restored."""

    @abstractmethod
    def drain(self) -> list[str]:
        """Every held tail as a synthetic event (the connection is ending)."""

    @abstractmethod
    def error_event(self, message: str, refused: dict | None, failed: bool) -> str:
        """An event in the API's error shape; refused is the client event refused."""

    def fast(self, s: str) -> list[str] | None:
        """An event of the most common shape handled without json.loads (a text delta
        in the API's own compact form); None for anything else (the caller parses it)."""
        return None

    def held(self) -> bool:
        """Does any window hold text?"""
        for w in self.windows.values():
            if w.held:
                return True
        return False

    def window(self, key: tuple, mode: int) -> Window:
        return window_for(self.windows, key, self.restorer, mode, owner="the connection")


@dataclass
class MaskedEvent:
    """A client event through the API's table: the frame to send (the same object when
    nothing changed), its parsed document and rule (rule None: an event the table does
    not know, sent as it is if the leak check finds nothing in it)."""

    frame: Frame
    doc: object
    rule: Rule | None
    changed: bool = False


@dataclass
class Counts:
    client_in: int = 0
    client_changed: int = 0
    client_unknown: int = 0  # client events the table does not know (scanned, forwarded)
    server_in: int = 0
    server_changed: int = 0


def without_media(doc: object, rule: Rule) -> object:
    """doc with every value `rule` marks MEDIA (base64 audio) replaced by "": what the
    leak guard reads of a masked client event. doc itself is not changed."""
    rule = rule.resolve(doc)
    if rule is MEDIA:
        return ""
    if rule.skip:
        return doc
    if isinstance(doc, dict):
        out = None
        for k, v in doc.items():
            if isinstance(v, dict | list | str):
                nv = without_media(v, rule.child(k))
                if nv is not v:
                    if out is None:
                        out = dict(doc)
                    out[k] = nv
        return doc if out is None else out
    if isinstance(doc, list):
        lst = None
        for i, v in enumerate(doc):
            if isinstance(v, dict | list | str):
                nv = without_media(v, rule.child(i))
                if nv is not v:
                    if lst is None:
                        lst = list(doc)
                    lst[i] = nv
        return doc if lst is None else lst
    return doc


def _close_reason(message: str) -> str:
    b = message.encode("utf-8")
    if len(b) <= MAX_CLOSE_REASON:
        return message
    return b[: MAX_CLOSE_REASON - 3].decode("utf-8", "ignore") + "..."


def other_unicode_json(data: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding in which data is JSON (as json.loads tells a
    document's encoding from its bytes: by its BOM, or where its zero bytes are), or None.
    A binary frame may carry such an event: its UTF-16 is valid UTF-8 (zero bytes), an
    original in it is no UTF-8 text the scan of an unknown event could find, and the
    provider may read it all the same (a client event so written is refused)."""
    enc = json.detect_encoding(data)
    if enc.startswith("utf-8"):
        return None
    try:
        json.loads(data.decode(enc))
    except RecursionError:
        return enc  # (JSON nested deeper than it is read: not read, so not sent)
    except (UnicodeDecodeError, ValueError):
        return None
    return enc


def _cut(data: bytes, limit: int) -> bytes:
    """data cut to limit bytes, not inside a UTF-8 character (its continuation bytes go too)."""
    end = limit
    while end > max(0, limit - 3) and data[end] & 0xC0 == 0x80:
        end -= 1
    return data[:end]


@dataclass
class Connection:
    """One WebSocket connection of a realtime API (see the module docstring)."""

    protocol: Callable[[Restorer], Protocol]
    rules: Rules
    session: Session = field(default_factory=Session)
    state: State = State.OPEN
    counts: Counts = field(default_factory=Counts)
    failure: str | None = None  # why the connection was closed by the addon
    exc: Exception | None = None  # an internal error behind the failure (for the adapter's log)
    # (sent, the client's own) payloads of control frames that went upstream rewritten and
    # whose echo may come back: pings awaiting their pong, the client's close its answer
    pings: deque[tuple[bytes, bytes]] = field(default_factory=deque)
    closing: tuple[bytes, bytes] | None = None
    # (restored, upstream's own) payloads of server pings the client got restored, awaiting
    # the client's pong
    server_pings: deque[tuple[bytes, bytes]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.restorer = self.rules.restorer(self.session.placeholders, growing=True)
        self.proto = self.protocol(self.restorer)
        self.server_text = self.proto.SERVER_TEXT  # synthetic frames follow the server's frame type

    @property
    def name(self) -> str:
        return self.proto.name

    def to(self, new: State) -> None:
        """Make the transition, or raise StateError for one TRANSITIONS does not allow."""
        if new not in TRANSITIONS[self.state]:
            raise StateError(f"a realtime connection cannot go from {self.state.value} to {new.value}")
        self.state = new

    def close(self) -> None:
        """The adapter gave up on the connection (a bug in its hook; it logged why):
        nothing passes either way any more. One no longer open stays as it is."""
        if self.state is State.OPEN:
            self.to(State.CLOSED)

    # -- the client's events ---------------------------------------------------------------

    def mask(self, frame: Frame) -> MaskedEvent | Result:
        """A client event masked with the API's table (MaskedEvent), or a Result when the
        connection is no longer open (nothing passes) or the event cannot be masked (a
        refusal). What may then leave is decided by the leak check (pipeline.client_frame
        is the one path: mask, then check)."""
        if self.state is not State.OPEN:
            return Result([])
        self.counts.client_in += 1
        try:
            return self._mask(frame)
        except DisguiseError as e:
            return self.refuse(str(e), None)
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            self.exc = e
            return self.refuse(reason(e), None)

    def _mask(self, frame: Frame) -> MaskedEvent:
        rules = self.rules
        clashes: list = []  # objects repeating a key with values that differ (document.loads)
        try:
            s = frame.data.decode("utf-8")
            doc = loads(s, clashes)
        except (UnicodeDecodeError, ValueError, RecursionError):
            s, doc = "", None
            enc = other_unicode_json(frame.data)
            if enc is not None:
                raise MaskError(f"the event is JSON written in {enc}: only UTF-8 events are read") from None
        if clashes:
            raise repeated(doc, clashes, "the event")
        rule = self.proto.client_rule(doc) if isinstance(doc, dict) else None
        if rule is None:
            return MaskedEvent(frame, doc, None)  # not an event this table knows: scanned as it is
        held = Held()  # the client's own placeholders reserved in the session, its fakes looked for
        if self.session.keyed is None and not self.session.placeholders:  # (a session resumed: base/prompt.py)
            self.session.keyed = numbers_key(doc, rule, rules.numbers_key)
        session, before = self.session, self.session.copy()
        session.copied = 0  # (the rounds of masking again are this event's: with_copies)
        again = lambda n: session.back_to(before, n)  # noqa: E731 - where the connection stood, in place
        try:  # a copy of an original found here or in an earlier event (one session) masked too
            edits, changed = mask_doc(s, doc, rule, rules, session, held=held, spliced=False)
            edits, changed = with_copies(s, doc, rule, rules, session, edits, changed, again, held=held)[1:]
        except (KeyError, IndexError, TypeError) as e:
            raise MaskError("the event repeats a key with values of different shapes") from e
        except RecursionError as e:
            raise MaskError("a string holds JSON nested too deeply to be read") from e
        if held.clash:
            # a fake issued on this connection is text the client sent: its copy in an
            # answer could not be told from ours (an HTTP request is masked again instead)
            raise MaskError("the event holds, as the client's own text, a fake disguise issued for an original")
        if not changed:
            return MaskedEvent(frame, doc, rule)
        new = splice(s, edits)  # type: ignore[arg-type]  # (a big text's token: tokenmap.Token)
        return MaskedEvent(Frame(new.encode("utf-8"), frame.text), jsonspan.loads(new), rule, changed=True)

    def passed(self, m: MaskedEvent) -> Result:
        """The leak check found nothing: the masked event goes upstream."""
        if m.rule is None:
            self.counts.client_unknown += 1
        elif m.changed:
            self.counts.client_changed += 1
        return Result([m.frame])

    def refuse(self, why: str, refused: object) -> Result:
        """End the connection for a client event that may not leave: the client gets
        the API's error event, then a close with POLICY_VIOLATION."""
        self.to(State.CLOSED)
        self.failure = f"client event refused: {why}"
        err = self.proto.error_event(f"disguise: {self.failure}", refused if isinstance(refused, dict) else None, False)
        return Result(
            [], Frame(err.encode("utf-8"), self.server_text), (POLICY_VIOLATION, _close_reason(f"disguise: {why}"))
        )

    # -- the client's control frames -----------------------------------------------------

    def mask_control(self, data: bytes) -> bytes:
        """A client control frame's payload (a close's: its reason, UTF-8) masked as one
        text with the connection's rules and session: placeholders numbered as in its
        events, a copy of an original found by context masked too (copies.add). Bytes
        that are not UTF-8 stay as they are around the text masked
        (surrogateescape). Returns data itself when nothing changes. Raises MaskError for a
        fake disguise the client sent as its own text (see _mask)."""
        s = data.decode("utf-8", "surrogateescape")
        present = placeholders_in([s], self.rules)
        if present:
            self.session.reserved = self.session.reserved | present
        before = self.session.fakes
        new = self.rules.mask(s, self.session)
        if found := self.session.found():  # a copy of an original a rule found by context: masked too
            new = splice(new, copies.add(new, [], found, self.session, self.rules.faker))
        if self.session.fakes != before and fakes_in([s], self.session):
            raise MaskError("the frame holds, as the client's own text, a fake disguise issued for an original")
        return data if new == s else new.encode("utf-8", "surrogateescape")

    def sent_control(self, kind: Control, own: bytes, sent: bytes) -> None:
        """A client control frame went upstream with `sent` in place of its own payload:
        remembered for its echo (a ping's pong, a close's answer)."""
        if kind is Control.PING:
            if len(self.pings) >= MAX_PINGS_AWAITED:
                self.pings.popleft()
            self.pings.append((sent, own))
        elif kind is Control.CLOSE:
            self.closing = (sent, own)

    def echoed(self, kind: Control, data: bytes) -> bytes:
        """The payload of a server pong, or of the close answering the client's own, as
        the client gets it: the client's own payload where data echoes one that went
        upstream rewritten, else data. A pong answers the oldest rewritten ping it
        echoes; the pings before it were answered by none (§5.5.3 lets an endpoint
        answer the latest ping only) and are forgotten."""
        if kind is Control.PING:
            return data
        if kind is Control.CLOSE:
            if self.closing is not None and self.closing[0] == data:
                return self.closing[1]
            return data
        for i, (sent, own) in enumerate(self.pings):
            if sent == data:
                for _ in range(i + 1):
                    self.pings.popleft()
                return own
        return data

    # -- the server's control frames ---------------------------------------------------

    def to_client(self, kind: Control, data: bytes) -> bytes:
        """A control frame's payload going to the client (a close: its reason, UTF-8): the
        client's own where it echoes one that went upstream rewritten (`echoed`: a pong,
        the answer to the client's close), else upstream's restored (`restore_control`:
        a ping, a close). Returns data itself when nothing changes."""
        own = self.echoed(kind, data)
        if own is not data or kind is Control.PONG:
            return own
        return self.restore_control(kind, data)

    def restore_control(self, kind: Control, data: bytes) -> bytes:
        """A server ping's payload or close's reason as the client gets it: every disguise
        in it restored as in a finished text, cut to what the frame holds (kind.limit
        bytes; a reason at a character's edge, marked "..."). Bytes that are not UTF-8
        stay as they are around the text (surrogateescape). Returns data itself when
        nothing changes; a ping restored is remembered for the client's pong
        (`upstream_echo`)."""
        s = data.decode("utf-8", "surrogateescape")
        new = self.restorer.text(s)
        if new == s:
            return data
        out = new.encode("utf-8", "surrogateescape")
        if len(out) > kind.limit:
            out = _close_reason(new).encode("utf-8") if kind is Control.CLOSE else _cut(out, kind.limit)
        if kind is Control.PING:
            if len(self.server_pings) >= MAX_PINGS_AWAITED:
                self.server_pings.popleft()
            self.server_pings.append((out, data))
        return out

    def upstream_echo(self, kind: Control, data: bytes) -> bytes | None:
        """Upstream's own payload where data, the client's pong, echoes a server ping the
        client got restored; None where it echoes none. A pong answers the oldest restored
        ping it echoes; the ones before it are forgotten (as in `echoed`)."""
        if kind is Control.PONG:
            for i, (restored, own) in enumerate(self.server_pings):
                if restored == data:
                    for _ in range(i + 1):
                        self.server_pings.popleft()
                    return own
        return None

    # -- the server's events ---------------------------------------------------------------

    def server(self, frame: Frame) -> Result:
        """A server event: restored (Result.frames, to the client, in order)."""
        if self.state is not State.OPEN:
            return Result([])
        self.counts.server_in += 1
        self.server_text = frame.text
        data = frame.data
        if not self.proto.held() and not self.restorer.triggers(()).any(data):
            return Result([frame])  # nothing in it can take part in a match
        try:
            outs, s = self._server(data)
        except DisguiseError as e:
            return self._fail(str(e))
        except Exception as e:  # noqa: BLE001 - never hand the client an unrestored event
            self.exc = e
            return self._fail(reason(e))
        if len(outs) == 1 and outs[0] is s:
            return Result([frame])
        self.counts.server_changed += 1
        return Result([frame if o is s else Frame(o.encode("utf-8"), frame.text) for o in outs])

    def _server(self, data: bytes) -> tuple[list[str], str]:
        try:
            s = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StreamError(f"a server event is not UTF-8 text (byte offset {e.start})") from None
        fast = self.proto.fast(s)
        if fast is not None:
            return fast, s
        try:
            doc = jsonspan.loads(s)
        except ValueError:
            raise StreamError("a server event is not JSON") from None
        except RecursionError:
            raise StreamError("a server event is nested too deeply to be read") from None
        if isinstance(doc, dict):
            return self.proto.server_event(s, doc), s
        return [restore_doc(s, doc, GENERIC, self.restorer)], s

    def _fail(self, why: str) -> Result:
        self.to(State.CLOSED)
        self.failure = f"server event could not be restored: {why}"
        err = self.proto.error_event(f"disguise: {self.failure}", None, True)
        close = (INTERNAL_ERROR, _close_reason(f"disguise: {why}"))
        return Result([], Frame(err.encode("utf-8"), self.server_text), close)

    # -- the end -----------------------------------------------------------------------------

    def end(self) -> Result:
        """The connection closed (either side). Returns what a transport that could
        still deliver would send: every held tail (restored), then an error event when
        some channel was still open (its `.done` / turnComplete never came). Idempotent."""
        if self.state is not State.OPEN:
            return Result([])
        self.to(State.ENDED)
        open_channels = bool(self.proto.windows)
        tails = [Frame(t.encode("utf-8"), self.server_text) for t in self.proto.drain()]
        if not open_channels:
            return Result(tails)
        err = self.proto.error_event("disguise: the connection closed before the model's output ended", None, True)
        return Result(tails, Frame(err.encode("utf-8"), self.server_text))

    @property
    def held_chars(self) -> int:
        """Characters held back right now (what an end now would leave undelivered)."""
        return sum(len(w.held) for w in self.proto.windows.values())
