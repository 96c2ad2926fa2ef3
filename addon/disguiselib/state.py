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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import StateError


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


@dataclass(eq=False)
class FlowRecord:
    """Everything the addon knows about one flow. Values are set by the transition that
    makes them true; `observer` (the Inspector) is told after each transition."""

    kind: Kind
    target: tuple  # (method, scheme, host, port, path) when classified
    config: Any = None  # config.Config in force for this flow (None: no valid one)
    api: Any = None  # providers.registry.Api for Kind.API
    phase: Phase = Phase.CLASSIFIED
    hook: str = "requestheaders"  # the last Disguise hook that handled the flow
    streamed: bool = False  # the request body was taken whole from mitmproxy's stream
    fail_open: bool = False  # PASSED unmasked because the user set disguise_fail_open
    reason: str | None = None  # why REFUSED or FAILED (shown to the user: never an original)
    replace_response: bool = False  # REFUSED after the body went: upstream's answer is replaced
    session: Any = None  # core.rules.Session of the masked request
    restorer: Any = None  # core.rules.Restorer for its response
    client_body: bytes | None = None  # the request as the client sent it (decoded)
    checked_body: bytes | None = None  # the raw body the leak guard passed, as Disguise left it
    reverser: Any = None  # providers.stream.Reverser of a streamed response
    call: Any = None  # the stream callable set on the response
    upstream_body: bytes | None = None  # a whole upstream body, before it was restored
    signer: Any = None  # mitm/aws.Signer: the masked and checked request is signed last (the Guard)
    realtime: Any = None  # mitm/websocket.RealtimeFlow: a realtime WebSocket connection (Kind.WEBSOCKET)
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
