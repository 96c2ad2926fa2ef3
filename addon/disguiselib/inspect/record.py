"""What is kept of an LLM flow, and the summary written from it (sans I/O).

The schema of the flow record every part of inspection reads: the metadata keys
(`META`: the per-flow summary; `SIDES`: the two sides mitmproxy does not keep itself),
a kept side (`side`), a bounded copy of a body (`Kept`), the stream callable wrapper that
keeps both sides of a stream (`Tee`), and the summary's wording (`counts_text`,
`summary_text`). Everything stored in metadata is bytes, str, int, bool, list or dict:
mitmproxy writes no flows at all (`-w`) when one value is not serializable.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable, ItemsView, Iterator, ValuesView
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from mitmproxy import ctx, http

from ..base.wirespec import Destination
from ..errors import MaskError, StreamError
from ..rules.rules import LITERALS
from ..turns import turns_of
from ..wire.decoding import LIMIT, ExpansionError, decode_whole
from . import packing
from .digest import DIGEST_ON_LOOP, Digest, digest_later  # noqa: F401  (read from here too)
from .packing import ON_LOOP, _Chunks, pack, unpack
from .tee import Kept, Tee  # noqa: F401  (their home before tee.py: read from here too)

META = "disguise"
SIDES = "disguise_sides"
# A request body mitmproxy streamed upstream and larger than disguise_capture_limit: how
# many bytes left (the flow's request holds none of them: the audit cannot read it whole).
REQUEST_NOT_KEPT = "disguise_request_not_kept"
# A request to an endpoint disguise does not transform that held an original and was
# forwarded (disguise_allow_unknown): the rule and the place (never the value).
FORWARDED = "disguise_forwarded"
FORWARDED_TEXT = "disguise: FORWARDED WITH AN ORIGINAL (disguise_allow_unknown)"
# Flow-list markers (mitmweb shows them beside the path; mitmproxy's emoji names).
FAILED_MARK = ":no_entry:"  # refused, forwarded unmasked, or the client got an error
MASKED_MARK = ":performing_arts:"  # something was masked or restored
# The headers of every response the addon answers with itself (a refusal, an error in
# place of upstream's answer): how a flow file tells a refusal without the summary.
REFUSED_HEADERS = {"content-type": "application/json", "x-disguise": "refused"}
NEVER_SENT = "never sent"  # what every refusal says, wherever it is shown

# Header names whose values are credentials or account identifiers: never copied into
# the kept client side, removed from a shared copy.
_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "cookie", "session", "organization", "project")


def is_credential(name: str) -> bool:
    n = name.lower()
    return any(w in n for w in _CREDENTIAL_WORDS)


def destination(flow: http.HTTPFlow) -> Destination:
    """Where a flow's request goes, for its credential slots (registry.slots_for): its
    host and its Host header's host (the scope's two: in reverse mode the first is the
    upstream's), and whether an upstream proxy reads it (upstream mode, a plain-HTTP
    request: where mitmproxy's own upstream_auth puts a Proxy-Authorization)."""
    r = flow.request
    mode = type(getattr(flow.client_conn, "proxy_mode", None)).__name__
    return Destination.of(r.host, r.pretty_host, via_proxy=mode == "UpstreamMode" and r.scheme == "http")


def _sha(data: bytes | None) -> str:
    return hashlib.sha256(data or b"").hexdigest()


# A kept side's body is held compressed once the side is finished (packing.pack: zstd at
# level 1; bench/ section e measures it), and decompressed each time something reads it: a view,
# the audit, replay, `disguise share/show`, or mitmproxy saving the flow (`-w`, which copies
# the metadata: the copy is a plain dict, so a flow file holds the body as it came and
# files saved before and after read alike).
# A body from this size on is compressed in a worker thread (zstd and zlib let go of the
# GIL while they work): the event loop never spends more on it than handing it over; until
# it is done the side holds the body as it came. A large client request's side is kept in
# pieces (packing.chunked), a next turn's sharing the turn before's (`_recent`).
BACKGROUND = ON_LOOP
_pool: ThreadPoolExecutor | None = None
_pending: set[Future] = set()
_swap = threading.Lock()  # a side's body is replaced under it: set anew, or swapped for its compressed form


def _compress_later(side: Side, body: bytes, share: bool = False, hint: tuple | None = None,
                    keep: bool = False) -> None:  # fmt: skip
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="disguise-capture")

    def job() -> None:  # the swap is part of the job: once it is done, so is the swap
        z = _pieces(body, hint) if share else _Zipped(pack(body))
        with _swap:
            if dict.get(side, "content") is not body:  # set anew since
                return
            dict.__setitem__(side, "content", z)
            if type(z) is _Chunks:
                _remember(side, body if keep else None, z)

    fut = _pool.submit(job)
    _pending.add(fut)
    fut.add_done_callback(_pending.discard)


# -- a conversation's next turn: the pieces it shares with the turn before ----------------
# A client sends its whole conversation at every turn: the next request is the one before
# with a tail more. A large client side is kept in pieces (packing.chunked), and takes
# those of a recent side that hold its bytes, compressing only the rest. The last SHARED
# such sides are remembered (newest last; read and changed under _swap), each side weakly:
# what an entry holds itself is only, while the flow's rule set remembers the request by
# the very same bytes object (turns.py: R1; `keep_only` asks at each masked request), that
# body and its pieces: no original is held longer than turns hold it anyway, and nothing
# a second time but the pieces (a quarter of the body). A next turn is compared with that
# body on the loop when its side is made (a memcmp a piece, `_match`), before turns let go
# of it (a next turn cut from a request replaces it there), and its pieces are then taken
# with none decompressed, even when the side before was let go (mitmdump lets a finished
# flow go). An entry without it (turns never held it: another API) is compared in the
# capture's thread while its side lives, each piece decompressed (chunked).
SHARED = 4


class _Recent:
    """A recent large client side (weakly), and while turns hold it, the body it was made
    from and its pieces (else None), made PIECE bytes a piece."""

    __slots__ = ("ref", "plain", "chunks", "piece")

    def __init__(self, s: Side, plain: bytes | None, chunks: _Chunks | None) -> None:
        self.ref, self.plain, self.chunks, self.piece = weakref.ref(s), plain, chunks, packing.PIECE


_recent: list[_Recent] = []


def _remember(s: Side, plain: bytes | None, chunks: _Chunks) -> None:
    """s, whose body plain (if given: turns hold it) was just made chunks, the newest
    (under _swap)."""
    live = [e for e in _recent if e.plain is not None or e.ref() is not None]
    new = _Recent(s, plain, chunks if plain is not None else None)
    _recent[:] = [*live, new][-SHARED:] if SHARED > 0 else []


def keep_only(held: Callable[[bytes], bool]) -> None:
    """Let go of each body an entry holds, and of its pieces, that held (is it one turns
    remember? the flow's rule set's: inspector) says no to."""
    with _swap:
        for e in _recent:
            if e.plain is not None and not held(e.plain):
                e.plain = e.chunks = None


def _match(body: bytes, like: tuple[bytes, int] | None = None) -> tuple[tuple[bytes, ...], int] | None:
    """The first pieces of the newest recent side whose body (held: turns remember it)
    body begins with a whole piece of, those body begins with (their contents body's
    bytes): compared on the loop, a memcmp a piece; and the piece size they were made in.
    like: (a body, n) where body's first n bytes are known to be that very object's (a
    next turn cut from it: turns.py compared them), whose pieces there are not compared
    again (a megabyte's memcmp on the loop)."""
    with _swap:
        got = [(e.plain, e.chunks, e.piece) for e in reversed(_recent) if e.plain is not None and e.chunks is not None]
    for plain, chunks, piece in got if SHARED > 0 else ():
        n, k, mv = min(len(plain), len(body)) // piece, 0, memoryview(plain)
        if like is not None and like[0] is plain:
            k = min(n, like[1] // piece)
        while k < n and body.startswith(mv[k * piece : (k + 1) * piece], k * piece):
            k += 1
        if k:
            return tuple(chunks[:k]), piece
    return None


def _pieces(body: bytes, hint: tuple[tuple[bytes, ...], int] | None) -> bytes | _Chunks:
    """body as a large client side keeps it: packing.chunked, from the pieces hint gives
    (compared on the loop: taken as they are), else from the newest recent side alive whose
    first piece is body's (each piece decompressed and compared); whole, one frame, as any
    other side, when anything fails."""
    try:
        if hint is not None and hint[1] == packing.PIECE:
            return packing.chunked(body, hint[0], len(hint[0]))[0]
        like: Any = ()
        with _swap:
            sides = [e.ref() for e in reversed(_recent)] if SHARED > 0 else []
        for s in sides:
            with _swap:
                c = dict.get(s, "content") if s is not None else None
            if type(c) is _Chunks and c and body.startswith(unpack(c[0])):
                like = c
                break
        return packing.chunked(body, like)[0]
    except Exception:  # noqa: BLE001 - fail closed: the whole body in one frame, as ever
        return _Zipped(pack(body))


def remembered(rules: Any) -> Callable[[bytes], bool]:
    """Is a body the very bytes object rules remember a request by (turns.py)?"""
    store = turns_of(rules) if rules is not None else None
    raws = [t.raw for t in store.turns] if store is not None else []
    return lambda b: any(r is b for r in raws)


def compress_held(later: list[tuple], held: Callable[[bytes], bool] | None = None) -> None:
    """Start compressing the bodies side(later=...) held back (large client sides: in
    pieces, shared with a recent one's), and forget them. held: is a body the very object
    the flow's rule set remembers its request by (its entry may then hold it)."""
    while later:
        s, body, hint = later.pop()
        _compress_later(s, body, share=True, hint=hint, keep=held is not None and held(body))


def settle(timeout: float | None = None) -> None:
    """Wait for the bodies being compressed (tests; a clean shutdown)."""
    wait(list(_pending), timeout=timeout)


class _Zipped(bytes):
    """A body, compressed, where a Side keeps it."""

    __slots__ = ()


class Pairs(tuple):  # type: ignore[type-arg]
    """A side's headers as the flow's own Headers hold them: (name, value) bytes pairs,
    the very pair objects of the flow's where they are the same (nothing copied while
    the flow lives); read as [[name, value], ...] of str, as mitmproxy decodes them. As
    lists of str they held ~2 KiB a flow (bench (e)'s burst: 500 flows alive at once)."""

    __slots__ = ()

    def plain(self) -> list[list[str]]:
        return [[k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape")] for k, v in self]


def pairs(fields: tuple[tuple[bytes, bytes], ...], drop: bytes = b"", hide: bool = False) -> Pairs:
    """A flow's Headers.fields as a side keeps them: without the header named drop (lower
    case), with each credential's value as "(not kept)" where hide."""
    out = []
    for f in fields:
        k = f[0].lower()
        if k == drop:
            continue
        out.append((f[0], b"(not kept)") if hide and is_credential(k.decode("utf-8", "surrogateescape")) else f)
    return Pairs(out)


def _plain(v: Any) -> Any:
    t = type(v)
    if t is Digest:
        return v.hexdigest()
    return unpack(v) if t is _Zipped else v.plain() if t is _Chunks or t is Pairs else v


class Side(dict[str, Any]):
    """One kept side: a dict whose `content` is held compressed; and the flow's SIDES,
    whose `upstream_request_sha256` is a Digest. Every way of reading it (`[]`, `get`,
    `items`, `values`, `dict(side)`, `==`, `repr`, json, mitmproxy's serializer,
    `copy.deepcopy`) gives the body as it came, the digest as its string."""

    __slots__ = ("__weakref__",)  # (_recent)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "content" and isinstance(value, bytes | bytearray) and value:
            if len(value) >= BACKGROUND:
                value = bytes(value)
                with _swap:
                    dict.__setitem__(self, key, value)
                _compress_later(self, value)
                return
            value = _Zipped(pack(value))
        with _swap:
            dict.__setitem__(self, key, value)

    def __getitem__(self, key: str) -> Any:
        return _plain(dict.__getitem__(self, key))

    def __iter__(self) -> Iterator[str]:  # not dict's own: dict(side) and {**side} read through __getitem__
        return dict.__iter__(self)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[key] if key in self else default

    def plain(self) -> dict[str, Any]:
        return {k: self[k] for k in dict.__iter__(self)}

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        return self.plain().items()

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return self.plain().values()

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        if key not in self:
            return dict.pop(self, key, *default)
        v = self[key]
        dict.__delitem__(self, key)
        return v

    def setdefault(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kw: Any) -> None:  # type: ignore[override]
        for k, v in dict(*args, **kw).items():
            self[k] = v

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        return self.plain()

    def __eq__(self, other: object) -> bool:
        return self.plain() == (other.plain() if isinstance(other, Side) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (dict, (self.plain(),))


def side(
    content: bytes | _Chunks,
    size: int | None = None,
    *,
    cut: bool = False,
    headers=None,
    compress: bool = True,
    later: list[tuple] | None = None,
    like: tuple[bytes, int] | None = None,
    **extra: Any,
) -> dict:
    """One kept side as metadata (serializable values only), its body held compressed
    (compress=False: a body the flow holds itself, the very same object: kept once;
    content from Kept.zipped: held as it is, with its size given). later: a body that
    would be compressed in the background is held as it came and added to later instead,
    for compress_held to start once the request has left (the compression then does not
    compete for a CPU with the request's own way upstream), with the pieces it shares with
    a recent side (`_match`: compared now, while turns may still hold that side's body;
    like: a body it is known to begin with, the very object, and how many bytes of it)."""
    d = Side(size=len(content) if size is None else size, cut=cut)
    if type(content) is _Chunks:
        assert size is not None  # len(content) counts chunks
        dict.__setitem__(d, "content", content)
    elif compress and later is not None and len(content) >= BACKGROUND:
        body = bytes(content)
        dict.__setitem__(d, "content", body)  # (d is not shared yet)
        try:
            hint = _match(body, like)
        except Exception:  # noqa: BLE001 - nothing shared then: compressed in full (fail closed)
            hint = None
        later.append((d, body, hint))
    elif compress:
        d["content"] = bytes(content)
    else:
        dict.__setitem__(d, "content", content)
    if headers is not None:
        d["headers"] = headers if type(headers) is Pairs else [[k, v] for k, v in headers]
    d.update(extra)
    return d


# -- the summary -----------------------------------------------------------------------


def plural(k: int, what: str, ending: str = "s") -> str:
    """ "1 flow", "2 flows": every count a person reads is written with this."""
    return f"{k} {what}{'' if k == 1 else ending}"


_n = plural


def counts_text(meta: dict) -> str:
    """ "masked 7 originals (ANTHROPIC_KEY×1, EMAIL×2, literals×4); restored 5 originals;
    removed 1 strip-rule match"

    masked: originals replaced in the request (per rule); restored: disguises and
    placeholders turned back into originals in what the client reads, each counted once
    however often the stream repeats its text; removed: strip-rule matches deleted."""
    dry = bool(meta.get("dry_run"))
    counts = meta.get("counts") or {}
    masked = meta.get("masked", sum(counts.values()))
    s = ("would mask " if dry else "masked ") + _n(masked, "original")
    if counts:
        # patterns by name, literals last: the same order live and read back from a file
        order = sorted(counts, key=lambda k: (k == LITERALS, k))
        s += " (" + ", ".join(f"{k}×{counts[k]}" for k in order) + ")"
    if "restored" in meta:
        s += ("; would restore " if dry else "; restored ") + _n(meta["restored"], "original")
    if meta.get("stripped"):
        s += "; removed " + _n(meta["stripped"], "strip-rule match", "es")
    return s


def set_fakes(meta: dict, session: Any) -> None:
    """The fakes a masked request carried (disguise_fakes), kept in its summary for the
    views and the audit: they look like originals of their kind and are none (the
    summary holds no original; a fake is in the masked body anyway)."""
    fakes = sorted(k for k in session.placeholders if not k.startswith("["))
    if fakes:
        meta["fakes"] = fakes
    else:
        meta.pop("fakes", None)


def summary_text(meta: dict) -> str:
    """The flow comment: api, counts, and how the flow ended (a refusal: that it was
    never sent, no counts: nothing was masked because nothing left)."""
    head = f"disguise {meta.get('api', '?')}"
    if meta.get("failed"):
        head += f": FAILED CLOSED ({meta['failed']})"
    if meta.get("end") == "refused":
        return f"{head}: {NEVER_SENT}"
    s = f"{head}: {counts_text(meta)}"
    end = meta.get("end")
    if end and end != "completed":
        s += f"; {end}"
    if meta.get("cut"):
        s += f"; kept bodies cut at {meta['cut']} bytes"
    return s


def marker(meta: dict) -> str:
    """The flow-list marker for a flow's summary: FAILED_MARK when it failed closed or
    was forwarded unmasked, MASKED_MARK when anything was masked or restored, else ""
    (no marker: a user's own mark stays)."""
    if meta.get("failed"):
        return FAILED_MARK
    if meta.get("masked") or meta.get("restored") or meta.get("stripped"):
        return MASKED_MARK
    return ""


# -- refusals: one marking, whatever refused ----------------------------------------------

_REASON_PREFIXES = ("disguise: ", "request refused: ", "request not masked (refused): ", "request not masked: ")


def refusal_reason(message: str) -> str:
    """A refusal message as the summary says it: "request refused: <why>" (the
    message's own "disguise: request refused: " and the like said once)."""
    r = message
    for p in _REASON_PREFIXES:
        r = r.removeprefix(p)
    r = r.removeprefix("request ")  # "request refused by the leak guard: ..."
    return "request " + r if r.startswith("refused") else "request refused: " + r


def mark_refused(flow, message: str, api: str | None = None) -> None:
    """Mark `flow` (anything with `metadata`, `marked`, `comment`) as refused by the
    addon: the summary says FAILED CLOSED and never sent, the flow list shows
    FAILED_MARK, nothing of a masked side is kept. Every refusal goes through here —
    an API's, an unknown endpoint's, a WebSocket upgrade's, the Guard's, a refused
    flow read back from a file — so that mitmweb, `disguise show` and `disguise web -r`
    say the same. message names the rule and the place, never the text."""
    meta = flow.metadata.get(META)
    if not isinstance(meta, dict):
        meta = flow.metadata[META] = {}
    for k in ("restored", "stripped", "events", "events_changed", "placeholders", "rules", "dry_run", "cut"):
        meta.pop(k, None)
    meta.update(api=api or meta.get("api") or "unknown endpoint", masked=0, counts={},
                failed=refusal_reason(message), end="refused")  # fmt: skip
    flow.metadata.pop(SIDES, None)
    flow.marked = FAILED_MARK
    flow.comment = summary_text(meta)


def is_refused(flow) -> bool:
    """Did the addon refuse this flow (its answer is the addon's own, nothing of the
    request left)? Read from the summary, or for a flow recorded before summaries said
    so (an unknown endpoint's, the Guard's), from the response's headers."""
    meta = flow.metadata.get(META)
    if isinstance(meta, dict) and meta.get("api"):
        # the summary knows: an error in place of upstream's answer (FAILED) carries
        # the same headers, but its request did go upstream, masked
        return meta.get("end") == "refused"
    resp = getattr(flow, "response", None)
    return resp is not None and resp.headers.get("x-disguise") == REFUSED_HEADERS["x-disguise"]


def decoded_limit() -> int:
    """What a compressed body may expand to: the option disguise_decoded_limit where a
    mitmproxy runs the addon (wire/decoding.LIMIT elsewhere: the `disguise` commands)."""
    limit = getattr(getattr(ctx, "options", None), "disguise_decoded_limit", LIMIT)
    return limit if isinstance(limit, int) and limit >= 0 else LIMIT


def content(msg: http.Message, strict: bool = True, limit: int | None = None) -> bytes:
    """A recorded message's body content-decoded within the limit: never mitmproxy's
    `get_content`, which expands a decompression bomb saved in a flow file without
    bound. Raises MaskError, which names the coding's kind, never its value; not strict
    (as get_content(strict=False)): a body that cannot be decoded comes as it was
    recorded, but one that expands past the limit still raises."""
    enc = msg.headers.get("content-encoding", "")
    raw = msg.raw_content or b""
    try:
        return decode_whole(raw, enc, decoded_limit() if limit is None else limit)
    except StreamError as e:
        if not strict and not isinstance(e, ExpansionError):
            return raw
        why = "its content-encoding is not one disguise decodes" if "content-encoding" in str(e) else str(e)
        raise MaskError(f"cannot decode the recorded body: {why}") from None
