"""The wire vocabulary of one API, declared once (sans I/O).

Each API module declares one `WireSpec` for its stream (`anthropic.SPEC`,
`openai_chat.SPEC`, ...): how its events are framed, every event type it sends, which of
them end the stream, its error event, the member names only its documents carry, and
how its text is split into channels. The API's own stream class reads its spec (its
`TERMINAL`, `MARKERS`, when it moves to FINISHING), and so does everyone who reads a
recorded stream without being that API (`inspect/sseview.py`, `inspect/wsview.py`,
`inspect/record.py`): `registry.SPECS` lists them all. Nothing outside an API's
`modules` spells its vocabulary (tests/test_architecture.py reads it from the specs).

A spec is data: core modules never import it; what they need (a stream's markers, a
framing's element keys) is handed to them from the spec when a stream is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..wire.jsonspan import Rule

# How the events of a stream are framed on the wire.
SSE = "sse"  # text/event-stream (wire/sse.py)
JSON_ARRAY = "json array"  # one JSON array, an element per event (wire/jsonarray.py)
EVENT_STREAM = "event-stream"  # AWS event-stream frames (wire/eventstream.py)
WEBSOCKET = "websocket"  # one JSON event per text message (base/realtime.py)
JSON_LINES = "json lines"  # one JSON document per line (batch inputs and results)

# What an endpoint answers with (declared per endpoint in apis/registry.py; the
# response's Content-Type then picks among what is declared, never its first bytes):
STREAMS = "document or event stream"  # JSON, or an event stream when labelled text/event-stream
DOCUMENT = "document"  # JSON (or an error page): never an event stream
FILE = "file"  # a stored file's bytes (a download): never an event stream, whatever it begins with

# The kinds of a channel's text: prose (a text window), JSON text (a tool's arguments:
# restored as JSON), opaque (thinking, signatures: passed byte-identical).
TEXT, JSON, OPAQUE = "text", "json", "opaque"


def _frozen(m: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True, eq=False)
class WireSpec:
    """What one API says on the wire, for everyone who reads it."""

    name: str
    # The apis/ modules that own this vocabulary: the only ones that may spell it.
    modules: tuple[str, ...]
    framings: tuple[str, ...]
    # Every event type the stream sends (the `type` member of its events' JSON, an
    # event-stream frame's `:event-type`, a realtime server event's type).
    events: frozenset[str] = frozenset()
    # The events after which the API has nothing more to say (the stream's last event).
    terminal: frozenset[str] = frozenset()
    # The event the API ends a stream with when it fails.
    error_event: str | None = None
    # The member of an event's JSON that names its type (None: events are told by shape).
    type_member: str | None = "type"
    # A data line that ends the stream by itself (OpenAI's `data: [DONE]`).
    done: str | None = None
    # Member names only this API's documents carry: a document with one of them at its
    # top is this API's (a streamed array's element, a view's reader).
    members: frozenset[str] = frozenset()
    # Members that say why the model stopped (a view's note on an event).
    stop_members: tuple[str, ...] = ()
    # Channel text per delta: delta type -> (member holding the text, kind).
    deltas: Mapping[str, tuple[str, str]] = field(default_factory=_frozen)
    # Channel kind per content block type (a block of another type has no channel).
    blocks: Mapping[str, str] = field(default_factory=_frozen)
    # The events an event-stream frame carries in another API's vocabulary (Bedrock's
    # InvokeModel stream: Anthropic's events, base64 in each chunk).
    inner: WireSpec | None = None
    # A view's reader of one event's JSON document: (doc, event, builder) -> whether it
    # was this API's (inspect/sseview.Builder, inspect/wsview's channels).
    view: Callable[..., bool] | None = None
    # A recorded body in one of this spec's framings that no text framing reads (AWS
    # event-stream frames) as events for the readers: (body, content type) -> [(name,
    # data, raw)], or None for a body that is not in it (inspect/sseview.FRAMINGS).
    frames: Callable[[bytes, str], list[tuple[str | None, str | None, bytes]] | None] | None = None

    @property
    def ends(self) -> str:
        """The terminal events as a stream's error names them ("...ended before X")."""
        if self.done is not None:
            return f"data: {self.done}"
        t = sorted(self.terminal)
        return t[0] if len(t) == 1 else ", ".join(t[:-1]) + " or " + t[-1]

    @property
    def markers(self) -> tuple[bytes, ...]:
        """What a stream of this API always parses: its terminal events (or done line)."""
        words = sorted(self.terminal) if self.done is None else [self.done]
        return tuple(w.encode() for w in words)

    @property
    def vocabulary(self) -> frozenset[str]:
        """Every word of this spec that names the API's wire format (an inner API's
        words are that API's)."""
        words = set(self.events) | set(self.terminal) | set(self.deltas) | set(self.stop_members)
        if self.error_event:
            words.add(self.error_event)
        if self.done:
            words.add(self.done)
        # an event named by a plain English word (`error`, `ping`, `metadata`) says
        # nothing only this API says; a member (`candidates`) does
        words = {w for w in words if not (w.isalpha() and w.islower())} | set(self.members)
        if self.inner is not None:  # carried in another API's words: that API's own
            words -= self.inner.vocabulary
        return frozenset(words)


# -- chunks told by shape (Bedrock InvokeModel's model families) --------------------------

# A member path in a JSON document ("*": each element of an array).
Path = tuple[str, ...]


@dataclass(frozen=True)
class Channel:
    """Where a stream's text is in each document: its path (an element under `*` is
    keyed by its `index` member, else its position) and its kind (TEXT or JSON)."""

    path: Path
    kind: str = TEXT


@dataclass(frozen=True)
class ChunkModel:
    """One streamed JSON document of an API whose events are told by shape (Bedrock
    InvokeModel's chunks for Llama, Titan, ...): where its text is and when it is over."""

    channels: tuple[Channel, ...]
    # The stream's last document: one where a member at one of these paths is set (not
    # null, not false): Llama's `stop_reason`, Titan's `completionReason`, ...
    stop: tuple[Path, ...]
    # Members (at any level on a channel's path) whose integer value keys the channel
    # (Nova's `contentBlockIndex`, Titan's `index`).
    index_members: tuple[str, ...] = ("index",)
    # A member whose presence ends the channels of its index (Nova's `contentBlockStop`
    # with its `contentBlockIndex`): their held tails go out before it.
    closes: str | None = None

    @property
    def ends(self) -> str:
        """The terminal condition as a stream's error names it."""
        if not self.stop:
            return "a last chunk (this model does not stream)"
        return " or ".join(".".join(p) for p in self.stop) + " set"


def frozen(m: Mapping) -> Mapping:
    """A read-only copy of a table for a spec."""
    return _frozen(m)


@dataclass(frozen=True, eq=False)
class Provider:
    """Where one provider serves its APIs and where its clients put their credentials.

    The scope reads `hosts`/`host_forms` (a request to one of them is the provider's: an
    endpoint no API knows there is scanned, and refused when it holds an original); the
    leak guard reads the slots: a credential in its own slot (an `sk-ant-...` key in
    `x-api-key`, a session token in `x-amz-security-token`, `?key=AIza...` on a Google
    path, `openai-insecure-api-key.<key>` in `Sec-WebSocket-Protocol`) is the point of
    that slot, not a leak, and is neither masked nor counted; the same value anywhere
    else (a message, another header, another query parameter, another provider's slot)
    is. `registry.PROVIDERS` lists them all; `registry.slots_for` gives a request its
    slots: those of the providers the request is for (apis/slots.py)."""

    name: str
    # Host names the provider serves its APIs on; their subdomains too.
    hosts: tuple[str, ...] = ()
    # Other host forms it documents, each a regular expression a whole (lower-case) host
    # name matches: Vertex AI's `{region}-aiplatform.googleapis.com`.
    host_forms: tuple[str, ...] = ()
    # Headers that hold the client's credential (lower case).
    headers: frozenset[str] = frozenset()
    # Query parameters that hold it, on a request to the provider's hosts or `paths` (an
    # API several providers serve does not say whose parameter a `key` is).
    params: frozenset[str] = frozenset()
    # Query parameters that hold it on a WebSocket upgrade only, as `params` (a browser
    # cannot set a header on one: Azure's Realtime `?api-key=`).
    ws_params: frozenset[str] = frozenset()
    # Paths that are the provider's and nobody else's, whatever API a request is for: a
    # regular expression searched in the path (a path several providers share, as
    # `/v1/models`, is not one).
    paths: str | None = None
    # Prefixes of a `Sec-WebSocket-Protocol` entry that carries it (browsers cannot set
    # headers on a WebSocket: `openai-insecure-api-key.<key>`).
    subprotocols: tuple[str, ...] = ()
    # Headers the proxy's own re-signing replaces with its own (SigV4: the signature,
    # its date and session token, the body hash): the client's are never forwarded
    # beside the proxy's, and neither is counted by the leak guard. Slots only on a
    # request the proxy re-signs (a signed API's, its Authorization of the `signature`
    # scheme); on any other they are headers as any other.
    signing: frozenset[str] = frozenset()
    # The Authorization scheme of a request signed with the `signing` headers, lower case
    # ("aws4-hmac-sha256").
    signature: str = ""

    def serves(self, host: str) -> bool:
        """Is host (lower case, no trailing dot) one of the provider's?"""
        if any(host == h or host.endswith("." + h) for h in self.hosts):
            return True
        return any(re.fullmatch(rx, host) is not None for rx in self.host_forms)


@dataclass(frozen=True)
class Destination:
    """Where a request goes, as far as whose credentials it may carry: the hosts it is for
    (mitmproxy's request host and the Host header's, as the scope reads them: in reverse
    mode the first is the upstream's), and whether an upstream proxy reads the request
    itself (mitmproxy's upstream mode, a plain-HTTP request: a `Proxy-Authorization` is
    then that proxy's credential; anywhere else it reaches the server, which does not
    read it)."""

    hosts: tuple[str, ...] = ()
    via_proxy: bool = False

    @staticmethod
    def of(*hosts: str, via_proxy: bool = False) -> Destination:
        """hosts (without a port) compared as the scope compares them: lower case, no
        trailing dot, no IPv6 brackets; empty ones left out."""
        norm = (h.strip().lower().rstrip(".").removeprefix("[").removesuffix("]") for h in hosts)
        return Destination(tuple(dict.fromkeys(h for h in norm if h)), via_proxy)


@dataclass(frozen=True)
class Slots:
    """Where a request's credentials may sit (see Provider): what the leak guard leaves
    alone in that request."""

    headers: frozenset[str] = frozenset()
    params: frozenset[str] = frozenset()
    subprotocols: tuple[str, ...] = ()


@dataclass(frozen=True)
class TextHeader:
    """A request header an API's clients fill with the client's own text (Codex's
    `x-codex-turn-metadata`: the user's working directory, git branch and remote as JSON
    text), and how its value is read: as `rule` reads a string of the body
    (`jsonspan.JSON_TEXT`: JSON text, keys and values; a value that does not parse as
    JSON as it is written). The pipeline masks it with the body's session, the leak guard
    reads it both as any header and so (pipeline.mask_request, leakguard.scan_request);
    every other header that holds an original is refused."""

    name: str  # lower case
    rule: Rule



# -- endpoint inventories -----------------------------------------------------------------

# What disguise does with an endpoint a provider documents (each API module declares its
# provider's `ENDPOINTS`; tests/apis/test_inventory.py checks them against the
# providers' own descriptions, tests/inventory/*.json, tools/inventory.py):
MASKED = "masked"  # the request masked by its API's table, the answer restored
RESTORED = "restored"  # the answer restored (stored text); a request body is scanned
SCANNED = "scanned"  # not transformed: a body holding an original is refused, the answer passes
BINARY = "binary"  # scanned; the answer is a file's or a medium's bytes, passed as they came
# scanned on the provider's hosts (and the configured ones) only: its path is no LLM API's
# shape elsewhere (an account's administration, infrastructure)
HOSTED = "hosted"
REFUSED = "refused"  # never forwarded (unless disguise_allow_unknown): `why` says why and what to do


@dataclass(frozen=True)
class Endpoint:
    """One documented endpoint: its methods, its path as the provider documents it (a
    `{name}` is one segment; a trailing `/**` is every path below), what disguise does
    with it, and why (for REFUSED, the message the client gets)."""

    methods: str
    path: str
    what: str
    why: str = ""

    def pattern(self) -> str:
        """A regular expression of the path's end (`{...}`: one segment)."""
        rx = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(self.path))
        return rx[: -len(re.escape("/**"))] + "(?:/.*)?" if self.path.endswith("/**") else rx
