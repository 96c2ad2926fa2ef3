"""One record per flow, in one named phase, with its transitions in one place (sans I/O).

A flow's life as the addon sees it (h11's ConnectionState is the model):

    CLASSIFIED ──> MASKED ──> STREAMING ──> RESTORED
        │            │  └───> RECEIVING ──> RESTORED
        │            │           └────────> FAILED    (STREAMING too)
        │            └──> REFUSED  (the Guard: a leak, or a target rewritten after masking)
        ├──> PASSED ──> REFUSED    (not transformed: not protected, scanned clean, fail-open)
        └──> REFUSED               (nothing went upstream, or upstream's answer is replaced)

The Disguise addon moves a record forward; the Guard, last in the chain, reads it and
refuses what no working Disguise handled; the Inspector is told of every transition
(`observer`) and writes the flow's summary from the record.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .errors import StateError

if TYPE_CHECKING:
    from .apis.registry import Api, RealtimeApi
    from .base.realtime import Connection
    from .base.stream import Reverser
    from .config import Config
    from .rules.rules import Restorer, Session


class Kind(enum.Enum):
    """What a request is, decided at requestheaders."""

    SKIP = "skip"  # not protected: the addon does nothing with it
    API = "api"  # an API the addon transforms: masked, its response restored
    UNKNOWN = "unknown"  # a protected endpoint the addon does not transform: scanned
    WEBSOCKET = "websocket"  # a WebSocket upgrade to a protected host


class Phase(enum.Enum):
    CLASSIFIED = "classified"  # kind, configuration and target decided
    MASKED = "masked"  # the request was masked and leak-checked; its response is restored
    PASSED = "passed"  # forwarded as it is (not protected, scanned clean, or fail-open)
    REFUSED = "refused"  # answered with an error: the request never went upstream masked
    STREAMING = "streaming"  # the response goes through its reverser as it arrives
    RECEIVING = "receiving"  # the response's headers arrived; its whole body is restored at its end
    RESTORED = "restored"  # the response reached the client restored
    FAILED = "failed"  # the response could not be restored: the client got an explicit error


class Hook(enum.Enum):
    """The last Disguise hook that handled the flow (the Guard refuses a protected
    request no Disguise `request` hook handled)."""

    REQUESTHEADERS = "requestheaders"
    REQUEST = "request"


class Body(enum.Enum):
    """How the request body reached the addon."""

    IN_HOOK = "in the request hook"  # whole, before anything of the request left
    TAKEN = "taken from mitmproxy's stream"  # streamed by mitmproxy, taken whole (mitm/streamed.py):
    # its headers held back till its end (bodyhook): a refusal sends nothing and is answered
    # here; where they left first, it is sent empty and upstream's answer replaced


class Passed(enum.Enum):
    """Why a PASSED flow was forwarded unmasked."""

    SCANNED = "scanned"  # an endpoint disguise does not transform: scanned clean, or allowed
    FAIL_OPEN = "fail open"  # could not be masked, forwarded because the user set disguise_fail_open


class Answer(enum.Enum):
    """What the client gets of upstream's response."""

    UPSTREAM = "upstream's"  # upstream's answer (restored when MASKED)
    REPLACED = "replaced"  # REFUSED after the body went: upstream's answer is replaced by the error
    ADDON = "an addon's"  # MASKED, then answered in the request hook by a later addon (map_local, a cache,
    # server replay): never upstream's stream; restored whole at the response hook


class Reading(enum.Enum):
    """How a MASKED flow's response body is read (set with its stream callable)."""

    WHOLE = "whole"  # at the response hook (mitm/whole.py); no stream callable
    STREAMED = "streamed"  # per network read through its reverser (callables.StreamCall)
    BUFFERED = "buffered"  # taken whole by a stream callable and restored as it leaves (callables.Buffered)
    ERROR = "error"  # refused at its headers: the client gets one error body (callables.Refused)


_P = Phase
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    _P.CLASSIFIED: frozenset({_P.MASKED, _P.PASSED, _P.REFUSED}),
    _P.MASKED: frozenset({_P.STREAMING, _P.RECEIVING, _P.REFUSED, _P.FAILED}),
    _P.PASSED: frozenset({_P.REFUSED}),
    _P.STREAMING: frozenset({_P.RESTORED, _P.FAILED}),
    _P.RECEIVING: frozenset({_P.RESTORED, _P.FAILED}),
    _P.REFUSED: frozenset(),
    _P.RESTORED: frozenset(),
    _P.FAILED: frozenset(),
}
ENDED = frozenset({_P.REFUSED, _P.RESTORED, _P.FAILED})


class Signs(Protocol):
    """What signs a masked request last (mitm/aws.Signer, called by the Guard)."""

    def apply(self, req: Any, /) -> None: ...  # a mitmproxy Request: not named below the adapter


@dataclass
class RealtimeFlow:
    """One realtime WebSocket flow's state beside its sans-I/O Connection: the adapter's
    bookkeeping (mitm/websocket.py), kept in FlowRecord.realtime."""

    api: RealtimeApi
    connection: Connection
    pending: deque = field(default_factory=deque)  # Frames injected, not yet seen back
    passing: deque = field(default_factory=deque)  # contents put before upstream's close, to pass as they are
    ended: bool = False  # websocket_end (or error) has run
    cut: str | None = None  # how upstream's close cut the output short (the flow's `end`)
    close: tuple[int, str] | None = None  # to close with once the pending messages are out
    kept: list = field(default_factory=list)  # [index, the other side's content] of changed messages
    kept_bytes: int = 0
    handled: object = None  # the last message a Disguise looked at (the Guard checks it)
    left: bytes | None = None  # the content it left a client message with (the Guard compares)
    warned: bool = False


@dataclass(eq=False, slots=True)
class FlowRecord:
    """Everything the addon knows about one flow. Values are set by the transition that
    makes them true; `observer` (the Inspector) is told after each transition."""

    kind: Kind
    target: tuple[str, str, str, int, str]  # (method, scheme, host, port, path) when classified
    config: Config | None = None  # in force for this flow (None: no valid one)
    api: Api | RealtimeApi | None = None  # for Kind.API (RealtimeApi: Kind.WEBSOCKET)
    phase: Phase = Phase.CLASSIFIED
    hook: Hook = Hook.REQUESTHEADERS  # the last Disguise hook that handled the flow
    body: Body = Body.IN_HOOK  # how the request body reached the addon
    passed: Passed | None = None  # why PASSED, once it is
    reason: str | None = None  # why REFUSED or FAILED (shown to the user: never an original)
    answer: Answer = Answer.UPSTREAM  # whether the client gets upstream's answer
    session: Session | None = None  # of the masked request
    headers_session: Session | None = None  # of headers masked before the body (streamed), which continues it
    restorer: Restorer | None = None  # for its response
    client_body: bytes | None = None  # the request as the client sent it (decoded), until its observers saw MASKED
    client_size: int | None = None  # its whole size when client_body is only its first bytes (mitm/streamed.Spooled)
    checked_body: bytes | None = None  # the raw body the leak guard passed, as Disguise left it
    turn_cut: bool = False  # masked from its conversation's turn before (pipeline.Masked.cut)
    # where in the masked body a next turn may continue it, and what it shares with the
    # turn before (pipeline.Masked.shared): its SHA-256 made from there (inspect/digest.py)
    digest_hint: tuple[tuple[int, ...], tuple[bytes, int] | None] = ((), None)
    capture_later: list = field(default_factory=list)  # kept sides to compress once the request left (inspect/)
    capture_hint: tuple | None = None  # (the turn before's body as it came, how many first bytes this one shares)
    reverser: Reverser | None = None  # of a streamed response
    reading: Reading = Reading.WHOLE  # how the response body is read
    call: Callable[[bytes], bytes | list[bytes]] | None = None  # the stream callable set on the response
    stream: Callable[[bytes], Any] | None = None  # what was set as flow.response.stream: call, in the Inspector's Tee
    upstream_body: bytes | None = None  # a whole upstream body, before it was restored
    signer: Signs | None = None  # the masked and checked request is signed last (the Guard)
    realtime: RealtimeFlow | None = None  # a realtime WebSocket connection (Kind.WEBSOCKET)
    observer: Callable[[FlowRecord], None] | None = None

    def to(self, phase: Phase, reason: str | None = None) -> None:
        """Make the transition, or raise StateError for one TRANSITIONS does not allow."""
        if phase not in TRANSITIONS[self.phase]:
            raise StateError(f"a flow cannot go from {self.phase.value} to {phase.value}")
        self.phase = phase
        if reason is not None:
            self.reason = reason
        if self.observer is not None:
            self.observer(self)

    def can(self, phase: Phase) -> bool:
        return phase in TRANSITIONS[self.phase]
