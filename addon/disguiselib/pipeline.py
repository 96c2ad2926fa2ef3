"""One path for every request and response (sans I/O): masking a request (mask, then the
leak check) and choosing a response's reverser. The live hooks, the streamed-body path
and every replay call these; nothing else assembles masking or picks a reverser."""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import leakguard, resign, turns
from .apis.registry import Api, RealtimeApi
from .base import citeback
from .base.bodies import reads_otherwise, utf8_read
from .base.bodystream import BodyStream
from .base.fields import loads
from .base.masking import as_text, forget_changed, mask_fn, mask_request_body
from .base.present import present_placeholders
from .base.realtime import Connection, Control, ControlOut, Frame, MaskedEvent, Result, State
from .base.received import Received, as_received
from .base.restore import restore_body
from .base.stream import Reverser
from .base.wirespec import Destination, TextHeader
from .config import Config
from .errors import (
    DisguiseError,
    LeakError,
    MaskError,
    NeverForward,
    NotTransformed,
    PlacedMaskError,
    QuotingMaskError,
    log_internal,
    reason,
)
from .rules.found import Memo, texts
from .rules.knowing import of_session
from .rules.restorer import JSON, TEXT
from .rules.rules import Restorer, Rules, Session
from .wire import jsonspan
from .wire.decoding import LIMIT, Decoded, decoder_for
from .wire.sse import is_json_type

log = logging.getLogger("disguise")

# Request bodies from this size on are masked in a worker thread (thread handoff costs
# tens of microseconds; masking 64 KiB about 2 ms).
OFF_LOOP_BYTES = 64 * 1024


def leak_scan(
    path: str,
    headers: list,
    body: bytes | None,
    rules: Rules,
    api: Api | RealtimeApi | None = None,
    scanned: dict | None = None,
    parsed: tuple[bytes, object] | None = None,
    dest: Destination | None = None,
) -> leakguard.Hit | None:
    """The leak guard's scan of what is about to leave (URL, headers, body; body None:
    not looked at), the body read with api's field table (the one the masker read), the
    credentials in the slots of the providers it is for (api's, dest's hosts') left
    alone; a failing check is a hit. scanned: what masking's one scan found per text
    (leakguard.scan_request); parsed: the masked body's document from the masker
    (leakguard.readings)."""
    try:
        return leakguard.scan_request(path, headers, body, rules, api, content_type(headers), scanned, parsed, dest)
    except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
        log_internal(log, "leak guard", e)
        return leakguard.Hit("internal error", type(e).__name__)


# The masked values of a request's headers its API declares (Api.headers) that masking
# changed: (lower-case name, every value of that name in order), to set on the request.
MaskedHeaders = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Masked:
    """A request masked and checked: the body to send (the client's own bytes object
    when nothing changed), the session holding its placeholders, and the headers to set
    before it leaves (the declared ones masking changed: mask_headers)."""

    body: bytes
    session: Session
    headers: MaskedHeaders = ()
    # the request as turns.py remembers it, but its bytes (turns.light): the proxy keeps
    # one the masking worker remembered (turns.adopt), and cuts the next turn itself
    turn: object = field(default=None, compare=False, repr=False)
    # a conversation's next turn, masked from the turn before (turns.py: its new elements
    # read, the rest the turn before's masked bytes); the flow's summary and the metrics say so
    cut: bool = field(default=False, compare=False)
    # then: the turn before's masked body, how many of its first bytes body begins with; its raw, and raw's
    shared: tuple[bytes, int, bytes, int] | None = field(default=None, compare=False, repr=False)

    def unwrap(self) -> Masked:
        """Itself (Refused and NotOurs raise the exception they stand for)."""
        return self

    def restorer(self, rules: Rules) -> Restorer:
        """The restorer of this request's answer: its placeholders, and its documents'
        masking edits for the citations that count their characters (base/offsets.py)."""
        return rules.restorer(self.session.placeholders, documents=self.session.documents,
                              output=JSON if self.session.json_out else TEXT)


class Refusal(enum.Enum):
    """Why a request may not leave as the pipeline got it."""

    LEAK = "leak"  # an original would still leave (the leak guard): never forwarded
    UNMASKABLE = "unmaskable"  # the body cannot be masked (disguise_fail_open may forward it)
    NEVER = "never"  # cannot be masked by its nature (a body the client signed): never forwarded
    INTERNAL = "internal"  # masking broke (a bug): never forwarded


@dataclass(frozen=True)
class Refused:
    """A request that may not leave masked: `reason` is what the client and the log are
    told (it never quotes an original); `may_fail_open`: disguise_fail_open may forward
    it unchanged instead (a body that could not be masked, never a leak)."""

    reason: str
    refusal: Refusal = Refusal.UNMASKABLE

    @property
    def may_fail_open(self) -> bool:
        return self.refusal is Refusal.UNMASKABLE

    @classmethod
    def of(cls, e: Exception, rules: Rules | None = None) -> Refused:
        """The refusal an exception of the masking path stands for; a message that names
        request text names it where the rules find no original in it (leakguard.shown)."""
        if isinstance(e, QuotingMaskError):
            return cls(e.naming(lambda t: leakguard.shown(t, rules) == t), Refusal.UNMASKABLE)
        if isinstance(e, PlacedMaskError) and rules is not None:
            return cls(e.at(lambda p: leakguard.json_place(rules, p)), Refusal.UNMASKABLE)
        if isinstance(e, LeakError):
            return cls(str(e), Refusal.LEAK)
        if isinstance(e, NeverForward):
            return cls(str(e), Refusal.NEVER)
        if isinstance(e, MaskError):
            return cls(str(e), Refusal.UNMASKABLE)
        return cls(reason(e), Refusal.INTERNAL)

    def error(self) -> DisguiseError:
        """The exception this refusal stands for (for callers that raise)."""
        if self.refusal is Refusal.LEAK:
            return LeakError(self.reason)
        return NeverForward(self.reason) if self.refusal is Refusal.NEVER else MaskError(self.reason)

    def unwrap(self) -> Masked:
        raise self.error()


@dataclass(frozen=True)
class NotOurs:
    """A body its route's model does not take (an OpenAI file upload that is no batch):
    the request is an unknown endpoint's (scan_unknown)."""

    reason: str

    def unwrap(self) -> Masked:
        raise NotTransformed(self.reason)


# What the pipeline says of a request: plain data (picklable: no rules, no flow), applied
# to a flow by the adapter in one place (mitm/outcome.py).
Verdict = Masked | Refused | NotOurs


def mask_request(
    api: Api, raw: bytes | Received, cfg: Config, path: str, headers: Iterable[tuple[str, str]],
    dest: Destination | None = None, start: Session | None = None,
) -> Verdict:
    """The one path a request takes, live (whole or streamed body), client replay and
    offline replay alike: mask the decoded body by its API's rules, then the headers its
    API declares carry the client's text (mask_headers: with the body's session, numbered
    after it), then the leak guard looks at what would leave (URL, the headers as masked,
    body); the adapter sets the masked headers (Masked.headers). start: the session of
    headers that left before the body (a streamed body's: mask_headers at its headers),
    which the body's masking continues. Never raises: Masked, or Refused
    (the body cannot be masked, an original would still leave, or masking broke), or
    NotOurs for a body its route's model does not take. Safe in a worker thread (the
    rules are read-only; the prefilter keeps a scratch space per thread). raw a
    Received (the masking worker's streamed body): its bytes are let go once decoded
    (received.Received; what came is raw.bytes(), None once masking changed it). dest:
    where the request goes (whose credential slots it has: leak_scan)."""
    try:
        return _mask_request(api, raw, cfg, path, headers, dest, start)
    except NotTransformed as e:
        return NotOurs(str(e))
    except Exception as e:  # noqa: BLE001 - every failure is a refusal
        refused = Refused.of(e, cfg.rules)
        if refused.refusal is Refusal.INTERNAL:
            log_internal(log, "masking failed", e)
        return refused


def _mask_request(
    api: Api, raw: bytes | Received, cfg: Config, path: str, headers: Iterable[tuple[str, str]],
    dest: Destination | None, start: Session | None = None,
) -> Verdict:
    headers = list(headers)
    ctype = content_type(headers)
    _read_as_utf8(api, raw, headers)
    note = None
    if turns.applies(api, start):  # a conversation's next turn: cut from the turn before (turns.py)
        cut = _cut(api, raw, cfg, path, headers, dest)
        if cut is not None:
            return cut
        note = turns.note_for(api, raw, start)
    scanned = Memo()  # what masking's one scan found per text: the leak guard reuses it
    parsed: list = []  # the masked body's document, read by the masker's one parse: the guard walks it
    warned: list[bool] = []  # (whether it warned)

    def warn() -> None:
        # the client's own disguises, looked for in the texts masking read: by masking
        # once it changed something, before it lets the old texts go (memory); else here
        if cfg.disguises is not None and not warned:
            warned.append(False)
            warned[0] = _warn_present_disguise(raw, cfg.disguises, api, ctype, scanned)

    body, session = mask_request_body(
        raw, api, cfg.rules, ctype, scanned, parsed, read=warn, disguises=cfg.disguises, start=start, note=note
    )
    warn()
    scanned.read = None  # what the warning pass read (a raw scan's: Memo.read)
    if body is not as_received(raw):
        forget_changed(scanned)
    held = citeback.held_markers(body) if note is not None else None  # (one pass: remember keeps them)
    cites = session.masked and api.request_body is None and (
        citeback.may_cite(body) if held is None else citeback.may_cite_held(held)
    )
    if cites:
        body = _cited_back(api, body, cfg.rules, session)
    headers, masked_headers = mask_headers(api.headers, headers, cfg.rules, session)
    rules = of_session(cfg.rules, session)
    hit = leak_scan(path, headers, body, rules, api, scanned, parsed[0] if parsed else None, dest)
    if hit is None and (session.copied or session.finds):
        # a copy of an original a rule found is one too (base/copies.py): where the request
        # copied one where no rule finds it, every text read again; else its URL and
        # headers, which masking does not read (a password the body gives a key, in a header)
        again = body if session.copied else None
        hit = leak_scan(path, headers, again, of_session(cfg.rules, session, copies=True), api, None, None, dest)
    scanned.clear()  # masking's closure may hold it in a cycle: the body's texts not kept till a collection
    if hit is not None:
        return Refused(f"an original ({hit}) would have left unmasked", Refusal.LEAK)
    turn = None
    if note is not None and not cites and not any(warned):
        turn = turns.remember(cfg.rules, note, body, session, cfg.disguises, held)
    return Masked(body, session, masked_headers, turns.light(turn))


def _read_as_utf8(api: Api, raw: bytes | Received, headers: list[tuple[str, str]]) -> None:
    """A JSON body read as UTF-8: is that how its receiver reads it (its declared
    Content-Type)? Raises MaskError where not."""
    declared = [v for k, v in headers if k.lower() == "content-type" and not utf8_read(v)]
    if api.request_body is None and declared:
        body = as_received(raw) or b""
        otherwise = next((why for v in declared if (why := reads_otherwise(body, v)) is not None), None)
        if otherwise is not None:
            raise MaskError(otherwise)


def cut_request(
    api: Api, raw: bytes, cfg: Config, path: str, headers: Iterable[tuple[str, str]],
    dest: Destination | None = None, start: Session | None = None, at: object = None,
) -> Masked | None:
    """What mask_request returns where the body is a conversation's next turn cut from a
    request this rule set remembers (turns.py), else None (mask_request then: the full
    path, there or in the masking worker). at: turns.find's answer for raw. Never raises."""
    try:
        headers = list(headers)
        _read_as_utf8(api, raw, headers)
        return _cut(api, raw, cfg, path, headers, dest, at) if turns.applies(api, start) else None
    except Exception:  # noqa: BLE001 - mask_request decides
        return None


def _cut(
    api: Api, raw: bytes | Received, cfg: Config, path: str, headers: list[tuple[str, str]], dest: Destination | None,
    at: object = None,
) -> Masked | None:
    cut = turns.next_turn(api, raw, cfg.rules, cfg.disguises, at)
    if cut is None:
        return None
    rules = of_session(cfg.rules, cut.session, copies=True)  # (a copy in the URL or a header: _mask_request)
    if leak_scan(path, headers, None, rules, api, dest=dest) is not None:  # (its body's: turns.py)
        return None
    turns.turns_of(cfg.rules, make=True).put(cut.turn, cut.parent)  # type: ignore[union-attr]
    shared = (cut.parent.masked, cut.shared[0], cut.parent.raw, cut.shared[1])
    return Masked(cut.body, cut.session, (), turns.light(cut.turn), cut=True, shared=shared)


def mask_headers(
    declared: Iterable[TextHeader], headers: list[tuple[str, str]], rules: Rules, session: Session
) -> tuple[list[tuple[str, str]], MaskedHeaders]:
    """The request's headers with those its API declares its clients fill with their own
    text (Api.headers) masked as their declaration reads them (masking.mask_fn: JSON text
    as JSON, keys and values), with session (the body's: the same original gets the same
    disguise, a new one the next number; the placeholders the header already holds are
    skipped); and the declared headers that changed, all their values in order
    (Masked.headers). Every other header is left as it is (the leak guard refuses one
    that holds an original). Raises NeverForward where a value cannot be masked, or would
    not stay a header value (a character that is no printable ASCII where it had none) or
    the JSON text it was: never forwarded, not even with disguise_fail_open."""
    rule_of = {h.name: h.rule for h in declared}
    if not rule_of or not any(n.lower() in rule_of for n, _ in headers):
        return headers, ()
    out: list[tuple[str, str]] = []
    values: dict[str, list[str]] = {}
    changed: set[str] = set()
    for name, value in headers:
        n = name.lower()
        rule = rule_of.get(n)
        if rule is None:
            out.append((name, value))
            continue
        new = _mask_header(n, value, rule, rules, session)
        out.append((name, new))
        values.setdefault(n, []).append(new)
        if new != value:
            changed.add(n)
    return out, tuple((n, tuple(v)) for n, v in values.items() if n in changed)


def _mask_header(name: str, value: str, rule: jsonspan.Rule, rules: Rules, session: Session) -> str:
    try:
        session.reserved = session.reserved | present_placeholders(value, rules)
        new = as_text(value, mask_fn(rules, session)(value, rule, None))
    except Exception as e:  # noqa: BLE001 - a header that cannot be masked never leaves
        if not isinstance(e, DisguiseError):
            log_internal(log, f"masking header {name}", e)
        raise NeverForward(f"header {name} could not be masked ({type(e).__name__})") from e
    if new == value:
        return value
    for c in set(new):
        if not (" " <= c <= "~" or c == "\t") and new.count(c) > value.count(c):
            raise NeverForward(f"header {name}: masked, its value would not be a valid header value")
    if rule.json_text and _parses(value) and not _parses(new):
        raise NeverForward(f"header {name}: masked, its value would no longer be the JSON text it was")
    return new


def _parses(text: str) -> bool:
    try:
        loads(text)
    except (ValueError, RecursionError):
        return False
    return True


# A batch's documents are counted per request in it, not over the body (the session's are)
_DOCUMENTS_PER_ITEM = frozenset({"anthropic.batches"})


def _cited_back(api: Api, body: bytes, rules: Rules, session: Session) -> bytes:
    """body with the offsets of the citations it sends back moved to the masked texts
    (base/citeback.py); body itself when none moves. The leak guard then reads the new
    body (the masker's document is the old one's: not taken for it)."""
    documents = {} if api.name in _DOCUMENTS_PER_ITEM else session.documents
    moved = citeback.moved_back(body, rules.restorer(session.placeholders, documents=documents), documents)
    return body if moved is None else moved


def sign_request(
    auth: resign.ClientAuth, credentials: object, method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> list[tuple[str, str]]:
    """The last step for an API whose client signs the body (AWS SigV4): the headers to
    send, signed by the proxy's credentials over exactly this method, URL and body. The
    Guard calls it after its final leak check, so only a completely masked and checked
    request is ever signed (resign.py)."""
    return resign.resign(method, url, headers, body, credentials, auth)  # type: ignore[arg-type]


def _warn_present_disguise(
    raw: bytes | Received, disguises: Rules, api: Api, ctype: str, scanned: dict | None = None
) -> bool:
    """The client typed a disguise itself: the answer's copy of it will be restored to
    the original, indistinguishable from ours. Thinking and other untouched spans hold
    disguises by design (they went out masked and come back as they were) and are not
    looked at. scanned: the texts masking read (its scan's memo, keyed by text), when it
    read the body through the API's table: the disguises are looked for in those, in one
    pass (Rules.prescan), and the body is walked again only to say where one is.
    Whether it warned, or could not tell (turns.py remembers neither)."""
    try:
        read = texts(scanned) if scanned is not None else None
        if read or getattr(scanned, "read", None) is not None:  # (the raw pass may have left nothing to read)
            hot = disguises.prescan(read, scanned, clean=False)[0] if read else None  # digests: masking's scan's
            if not hot:
                return False
        b = as_received(raw)  # the bytes made again where they were let go (a Received)
        if b is None:
            return True
        hit = leakguard.scan_body(b, disguises, api, ctype)
    except Exception:  # noqa: BLE001 - a warning only; masking decides the rest
        return True
    if hit is None:
        return False
    log.warning(
        "disguise: the request already holds a disguise (at %s): in the answer it will be restored "
        "to its original like the ones disguise put there",
        hit.where,
    )
    return True


def reverser_for(
    api: Api, restorer: Restorer, content_type: str, path: str = "", buffered: bool = False, encoding: str = ""
) -> Reverser | None:
    """The one choice of a response body's reverser: the API's own stream for this path
    and content type (Gemini's streamed array), or a BodyStream that reads an event
    stream or a whole body as the endpoint declares (Api.answers) and the Content-Type
    says. With a
    Content-Encoding the reverser is fed through its decoder (core.decoding.Decoded).
    None (unless buffered, i.e. the body is whole already): a body labelled JSON that is
    best buffered and restored whole at its end. Raises StreamError for an encoding
    that cannot be decoded."""
    rev: Reverser
    cls = api.streams(path, content_type) if api.streams is not None else None
    if cls is not None:
        rev = cls(restorer)
    elif not buffered and is_json_type(content_type):
        return None
    else:
        rule, whole = api.response_rule, api.whole_body
        if whole is None:
            whole = lambda body, r: restore_body(body, rule, r)  # noqa: E731 - one line, one use
        rev = BodyStream(
            api.stream(restorer),
            lambda body: whole(body, restorer),
            api.error_body,
            content_type,
            api.answers,
        )
    return decoded(rev, encoding)


def restore_whole(
    api: Api, restorer: Restorer, body: bytes, content_type: str, path: str = "", encoding: str = "",
    limit: int = LIMIT,
) -> bytes:
    """A whole upstream body (not streamed, or replayed), restored exactly as the live
    path restores it; decoded to at most `limit` bytes. Raises what the core raises."""
    rev = reverser_for(api, restorer, content_type, path, buffered=True)
    assert rev is not None  # buffered: never None
    return decoded(rev, encoding, limit).whole(body)


def realtime_connection(api: RealtimeApi, cfg: Config) -> Connection:
    """A realtime WebSocket connection's state, one masking session for its whole life:
    client events go through `client_frame`, server events through its `server(frame)`
    (base/realtime.py)."""
    return Connection(api.protocol, cfg.rules)


def client_frame(conn: Connection, frame: Frame) -> Result:
    """A realtime client event, the WebSocket's request path: masked with the API's
    table, then the leak guard on what would leave (every key and value but the media
    the table names); an event the table does not know is scanned whole instead. A hit
    refuses the event and ends the connection (Result.close)."""
    m = conn.mask(frame)
    if not isinstance(m, MaskedEvent):
        return m
    rules = of_session(conn.rules, conn.session, copies=True)  # (a copy of an original is one: base/copies.py)
    try:
        if m.rule is None:
            hit = leakguard.scan_body(frame.data, rules, None, "application/json")
            if hit is not None:
                return conn.refuse(f"an event disguise does not know holds an original ({hit})", m.doc)
        else:
            # read through the event's table, exactly what the masker masks (its MEDIA not)
            hit = leakguard.scan_json(loads(m.frame.data.decode("utf-8")), rules, m.rule)
            if hit is not None:
                return conn.refuse(f"an original ({hit}) would have left unmasked", m.doc)
    except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
        log_internal(log, "leak guard", e)
        return conn.refuse(f"internal error ({type(e).__name__})", None)
    return conn.passed(m)


def client_control(conn: Connection, kind: Control, data: bytes) -> ControlOut:
    """A realtime client's control frame (a ping's or a pong's payload, a close's reason
    as UTF-8), the WebSocket's request path for it: masked with the connection's rules
    and session, then the leak guard on what would leave (the payload read as a body is:
    as text, percent-decoded, escapes decoded). It goes upstream masked when that is clean
    and fits in the frame (kind.limit bytes), as it is when masking changes nothing, and
    empty otherwise: a control frame cannot be refused (mitmproxy has no hook before it
    forwards one, and a close must go on to end the connection), and its payload means
    nothing to the provider (a ping's comes back in the pong, restored by conn.echoed).
    On a connection that is no longer open nothing of the client's passes: empty. A pong
    echoing a server ping the client got restored carries upstream's own payload back
    (conn.upstream_echo), as it is."""
    if conn.state is not State.OPEN:
        return ControlOut(b"")
    own = conn.upstream_echo(kind, data) if kind is Control.PONG else None
    if own is not None:
        return ControlOut(own)
    out = _control(conn, kind, data)
    if out.data != data:
        conn.sent_control(kind, data, out.data)
    return out


def _control(conn: Connection, kind: Control, data: bytes) -> ControlOut:
    try:
        masked = conn.mask_control(data)
        hit = leakguard.scan_body(masked, of_session(conn.rules, conn.session, copies=True), None, "")
    except DisguiseError as e:
        return ControlOut(b"", str(e))
    except Exception as e:  # noqa: BLE001 - a bug must not let an original through
        log_internal(log, "websocket control frame", e)
        return ControlOut(b"", f"internal error ({type(e).__name__})")
    if hit is not None:
        return ControlOut(b"", f"an original ({hit}) would have left unmasked")
    if len(masked) > kind.limit:
        what = f"a {kind.name.lower()} frame holds {kind.limit}"
        return ControlOut(b"", f"masked, it is {len(masked)} bytes; {what}")
    return ControlOut(masked)


def scan_unknown(
    path: str, headers: Iterable[tuple[str, str]], body: bytes | None, rules: Rules,
    dest: Destination | None = None,
) -> leakguard.Hit | None:
    """A request to a protected endpoint the addon does not transform: may it leave as
    it is? The first original in its URL, headers or body (None: clean). body None: the
    body could not be decoded, which is a hit (it cannot be shown to be clean). The body
    is read the way its receiver reads it (base/bodies.py), every field of it. dest:
    where it goes (whose credential slots it has)."""
    if body is None:
        return leakguard.Hit("unknown", "a body whose content or transfer coding cannot be decoded")
    headers = list(headers)
    every = ", ".join(v for k, v in headers if k.lower() == "content-type")  # (bodies.readings reads each)
    return leakguard.scan_request(path, headers, body, rules, None, every, dest=dest)


def content_type(headers: Iterable[tuple[str, str]]) -> str:
    """The request's Content-Type (how a receiver reads its body)."""
    return next((v for k, v in headers if k.lower() == "content-type"), "")


def decoded(rev: Reverser, encoding: str, limit: int = LIMIT) -> Reverser:
    """rev fed through the decoder of a Content-Encoding (core.decoding.Decoded), which
    ends it with an error past `limit` decoded bytes; rev itself for identity. Raises
    StreamError for an encoding that cannot be decoded."""
    decoder = decoder_for(encoding, limit)
    return rev if decoder is None else Decoded(rev, decoder)
