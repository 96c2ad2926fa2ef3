"""A request body mitmproxy would stream upstream as it arrives (stream_large_bodies),
taken whole instead (adapter-level): masked (an API disguise transforms) or scanned
(any other endpoint) at its end. mitmproxy's stream callable (callables.Buffered) is
called synchronously on the event loop, so the slow part is done before it, off the
loop: bodyhook.py has mitmproxy await `prepare` (the worker process from
disguise_offload_bytes on, else a thread), and the callable's last call applies the
verdict. Without the hook the call does it all, on the loop. Its URL and headers were
checked before (flows.headers_refused), the ones its API declares carry the client's text
masked before that (mask_headers), the body's masking continuing their session; they
leave with the body once it is masked, and not at all when it is refused (bodyhook).

A body declared large (`disguise_stream_bytes`: Content-Length, or chunked) to an API the
worker masks is not held at all (Spooled): mitmproxy is asked to stream it, each piece
goes to the worker as it arrives, and only the first `disguise_capture_limit` bytes stay
here for the capture. No whole copy of it is ever made on the event loop (mitmproxy's own
`bytes(request_body_buf)` of a 200 MB body paused every stream 0.3-0.5 s)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

from mitmproxy import ctx, http
from mitmproxy.net import encoding as mencoding

from .. import pipeline
from ..apis.registry import Api
from ..base.wirespec import Destination
from ..errors import DisguiseError, LeakError, MaskError, log_internal, reason
from ..inspect.record import destination
from ..leakguard import place
from ..rules.rules import Session
from ..state import FlowRecord, Kind, Passed, Phase
from ..worker import OffloadError
from . import bodyhook, outcome
from .callables import Buffered
from .flows import TRANSFER_CODED, body_limit, decode_body, decoded_limit, leaving, leaving_headers, transfer_coded
from .offload import PIECE, Offload, Upload

log = logging.getLogger("disguise")


def as_it_leaves(flow: http.HTTPFlow) -> tuple[str, list[tuple[str, str]], Destination]:
    """The URL path, headers and destination a streamed body's request leaves with, as they
    are now. Read again at the body's end (`prepare`, `complete`, a last call that does it
    all): its headers leave only then (bodyhook), after every addon's requestheaders hook,
    and what is checked is what leaves (an addon after Disguise may add a header)."""
    r = flow.request
    return r.path, leaving_headers(r), destination(flow)


class Masker:
    """What goes upstream of a streamed API request body (callables.Buffered's work).

    `prepare(raw)` (awaited through bodyhook at the body's end) decodes and masks it off
    the event loop: in the worker process from disguise_offload_bytes on (offload.py),
    else in a thread, as a body masked in the request hook is. The call then applies the
    verdict on the loop; without a prepared verdict it computes it there itself."""

    def __init__(self, flow: http.HTTPFlow, rec: FlowRecord, offload: Offload | None = None) -> None:
        self.flow, self.rec, self.offload = flow, rec, offload
        self.enc = flow.request.headers.get("content-encoding", "")
        self.path, self.headers, self.dest = as_it_leaves(flow)  # (read again at the body's end)
        self.coded = transfer_coded(flow.request.headers)
        self.ready: tuple[bytes, bytes, pipeline.Verdict] | None = None  # (raw, body, verdict) from prepare
        self.encoded: tuple[bytes, bytes] | None = None  # (masked body, it content-encoded again) from prepare

    def _decoded(self, raw: bytes, limit: int | None = None) -> tuple[bytes, pipeline.Refused | None]:
        assert self.rec.config is not None
        if self.coded:
            return b"", pipeline.Refused(TRANSFER_CODED)
        try:
            return decode_body(raw, self.enc, self.rec.config.rules, limit), None
        except MaskError as e:
            return b"", pipeline.Refused.of(e)

    def _verdict(self, raw: bytes, limit: int | None = None) -> tuple[bytes, pipeline.Verdict]:
        """Decode and mask (in a thread: limit given, no ctx read there)."""
        rec = self.rec
        assert rec.config is not None and isinstance(rec.api, Api)
        body, refused = self._decoded(raw, limit)
        if refused is not None:
            return body, refused
        start = rec.headers_session
        return body, pipeline.mask_request(rec.api, body, rec.config, self.path, self.headers, self.dest, start)

    async def prepare(self, raw: bytes) -> None:
        rec, limit, offload = self.rec, decoded_limit(), self.offload
        assert rec.config is not None and isinstance(rec.api, Api)
        self.path, self.headers, self.dest = as_it_leaves(self.flow)
        threshold = ctx.options.disguise_offload_bytes
        body, refused = (self._decoded(raw) if not self.enc else await asyncio.to_thread(self._decoded, raw, limit))
        result: pipeline.Verdict
        if refused is not None:
            result = refused  # not readable
        elif offload is not None and Offload.takes(rec.api, len(body), threshold) and offload.ready(rec.config):
            # never raises
            result = await offload.mask(
                rec.api, body, rec.config, self.path, self.headers, dest=self.dest, start=rec.headers_session
            )
        else:
            args = (rec.api, body, rec.config, self.path, self.headers, self.dest, rec.headers_session)
            result = await asyncio.to_thread(pipeline.mask_request, *args)
        if self.enc and isinstance(result, pipeline.Masked):
            self.encoded = (result.body, await asyncio.to_thread(mencoding.encode, result.body, self.enc))
        self.ready = (raw, body, result)

    def __call__(self, raw: bytes) -> bytes:
        """What goes upstream: the masked body, or raw (fail-open, or an unknown
        endpoint's body scanned clean); raises to refuse (outcome.apply)."""
        rec = self.rec
        ready, self.ready = self.ready, None
        if ready is None or ready[0] is not raw:  # (done here, all of it: on the loop)
            self.path, self.headers, self.dest = as_it_leaves(self.flow)
        body, result = (ready[1], ready[2]) if ready is not None and ready[0] is raw else self._verdict(raw)
        scan = lambda: scanned(rec, self.path, self.headers, body, raw, self.dest)  # noqa: E731
        out = outcome.apply(self.flow, rec, body, result, scan, streamed=True)
        if isinstance(result, pipeline.NotOurs) and self.enc:
            return leaving(raw, body, self.enc)  # an unknown endpoint's, scanned: its container made again if need be
        if out is None or isinstance(result, pipeline.NotOurs):
            return raw  # forwarded as it came (fail-open; an unknown endpoint's, scanned)
        if not self.enc:
            return out
        encoded, self.encoded = self.encoded, None
        return encoded[1] if encoded is not None and encoded[0] is out else mencoding.encode(out, self.enc)


def masker(flow: http.HTTPFlow, rec: FlowRecord, offload: Offload | None = None) -> Masker:
    return Masker(flow, rec, offload)


class Scanner:
    """A streamed body of an endpoint disguise does not transform (Buffered's work): raw,
    when it may leave. `prepare` scans it in a thread (awaited through bodyhook); the
    call applies what was found, or scans on the loop when nothing was prepared."""

    def __init__(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        assert rec.config is not None
        self.flow, self.rec = flow, rec
        self.enc = flow.request.headers.get("content-encoding", "")
        self.path, self.headers, self.dest = as_it_leaves(flow)  # (read again at the body's end)
        self.coded = transfer_coded(flow.request.headers)
        self.ready: tuple[bytes, tuple[object, bytes]] | None = None  # (raw, _hit's answer) from prepare

    def _hit(self, raw: bytes, limit: int | None = None) -> tuple[object, bytes]:
        """The scan's hit, and what leaves if it may: raw, or where its container carries
        more than what was scanned, the body encoded again (flows.leaving)."""
        rules = self.rec.config.rules  # type: ignore[union-attr]
        body = None if self.coded else decode_body(raw, self.enc, rules, limit)  # cannot be read: a hit
        hit = pipeline.scan_unknown(self.path, self.headers, body, rules, self.dest)
        return hit, (raw if body is None else leaving(raw, body, self.enc))

    async def prepare(self, raw: bytes) -> None:
        limit = decoded_limit()
        self.path, self.headers, self.dest = as_it_leaves(self.flow)
        try:
            got: tuple[object, bytes] = await asyncio.to_thread(self._hit, raw, limit)
        except MaskError as e:
            got = (e, raw)  # raised by the call, as there
        self.ready = (raw, got)

    def __call__(self, raw: bytes) -> bytes:
        ready, self.ready = self.ready, None
        if ready is None or ready[0] is not raw:
            self.path, self.headers, self.dest = as_it_leaves(self.flow)
        hit, out = ready[1] if ready is not None and ready[0] is raw else self._hit(raw)
        if isinstance(hit, MaskError):
            raise hit
        return passed(self.rec, hit, out)


def scanner(flow: http.HTTPFlow, rec: FlowRecord) -> Scanner:
    return Scanner(flow, rec)


def scanned(
    rec: FlowRecord, path: str, headers: list, body: bytes | None, raw: bytes, dest: Destination | None = None
) -> bytes:
    """A streamed body of an endpoint disguise does not transform: raw, when it may leave."""
    assert rec.config is not None
    return passed(rec, pipeline.scan_unknown(path, headers, body, rec.config.rules, dest), raw)


def passed(rec: FlowRecord, hit: object, raw: bytes) -> bytes:
    """raw, when a scan that found hit lets it leave; raises LeakError when not."""
    if hit is not None and not ctx.options.disguise_allow_unknown:
        raise LeakError(f"an original ({hit}) in a request to an endpoint disguise does not transform")
    rec.passed = Passed.SCANNED
    rec.to(Phase.PASSED, None if hit is None else f"an original ({hit})")  # (the Inspector marks the flow)
    return raw


def spoolable(flow: http.HTTPFlow, rec: FlowRecord, offload: Offload, threshold: int) -> bool:
    """May this request's body go to the worker as it arrives (Spooled)? An API the worker
    masks and does not sign, with the worker on (threshold: disguise_offload_bytes), its
    body neither content- nor transfer-coded (a coded body is decoded whole: Masker)."""
    h, api = flow.request.headers, rec.api if isinstance(rec.api, Api) else None
    return (
        api is not None
        and bodyhook.install()  # mitmproxy awaits the worker's verdict before the last call
        and not api.signed  # signed again after masking, whole (mitm/aws.py)
        and Offload.takes(api, threshold, threshold)
        and not h.get("content-encoding", "").strip()
        and not transfer_coded(h)
    )


def mask_headers(flow: http.HTTPFlow, rec: FlowRecord) -> str | None:
    """A request whose body mitmproxy streams sends its headers before its body: those its
    API declares carry the client's text (Api.headers) are masked now, with a session of
    their own that the body's masking continues (rec.headers_session: one placeholder
    never stands for two originals in one request), and set on the request before they
    leave. Why the request may not leave (a header that cannot be masked), or None; the
    leak guard then reads them as masked (flows.headers_refused)."""
    api, r = rec.api, flow.request
    if rec.kind is not Kind.API or not isinstance(api, Api) or not api.headers or rec.config is None:
        return None
    session = Session()
    try:
        masked = pipeline.mask_headers(api.headers, list(r.headers.items(multi=True)), rec.config.rules, session)[1]
    except Exception as e:  # noqa: BLE001 - a header that cannot be masked never leaves
        return f"{place(r.method, r.path, rec.config.rules)}: {reason(e)}"
    outcome.set_headers(r, masked)
    rec.headers_session = session
    return None


def taker(flow: http.HTTPFlow, rec: FlowRecord, offload: Offload, spool: bool, keep: int) -> Buffered:
    """The stream callable of a request body mitmproxy streams: fed to the worker as it
    arrives (spool: never held whole here, nor joined on the loop; keep: the capture's
    limit), else taken whole and masked (an API's) or scanned (any other endpoint's)."""
    if spool:
        return Spooled(flow, rec, offload, body_limit(), keep)
    work = masker(flow, rec, offload) if rec.kind is Kind.API else scanner(flow, rec)
    return Buffered(work, lambda msg: b"", body_limit(), keep)


def dropped(flow: http.HTTPFlow) -> None:
    """The flow failed (mitmproxy's `error`): a body fed to the worker will not end."""
    if isinstance(flow.request.stream, Spooled):
        flow.request.stream.drop()


def declared_large(flow: http.HTTPFlow, at: int) -> bool:
    """Is this request's body declared at least `at` bytes (Content-Length), or of unknown
    length (chunked)? at 0: never."""
    if at <= 0:
        return False
    h = flow.request.headers
    length = h.get("content-length", "").strip()
    if length:
        return not length.isdigit() or int(length) >= at
    return "chunked" in h.get("transfer-encoding", "").lower()


class Spooled(Buffered):
    """The stream callable of a request body fed to the masking worker as it arrives: the
    loop only hands pieces on (Offload.feed) and keeps the first `keep` bytes for the
    capture. bodyhook has mitmproxy await `complete` at the body's end (the worker's
    verdict); the last call then sends the masked body, in pieces, or refuses (nothing
    leaves: masked completely or not sent). Without the awaited verdict it refuses."""

    paced = True  # bodyhook sends its output piece by piece, the event loop free between pieces

    def __init__(self, flow: http.HTTPFlow, rec: FlowRecord, offload: Offload, limit: int | None, keep: int) -> None:
        super().__init__(lambda raw: raw, lambda msg: b"", limit, keep)
        self.flow, self.rec, self.offload = flow, rec, offload
        self.path, self.headers, self.dest = as_it_leaves(flow)  # (read again at the body's end)
        self.up: Upload = offload.upload()
        self.prefix = bytearray()  # the first `keep` bytes: the capture's client side
        self.ready: tuple[pipeline.Verdict, bytes | None] | None = None

    def wants_completion(self) -> bool:
        return not self.finished and self.ready is None and self.error is None

    async def complete(self) -> None:
        if not self.wants_completion():
            return
        rec = self.rec
        assert rec.config is not None and isinstance(rec.api, Api)
        self.path, self.headers, self.dest = as_it_leaves(self.flow)
        self.ready = await self.offload.finish(
            self.up, rec.api, rec.config, self.path, self.headers, self.dest, rec.headers_session
        )

    def drop(self) -> None:
        """The body will not end (the flow failed): the worker forgets it."""
        if not self.finished:
            self.finished = True
            self.offload.drop(self.up)

    def __call__(self, data: bytes) -> list[bytes] | Iterator[bytes]:  # type: ignore[override]
        if self.finished:
            return []
        if data:
            if self.error is None:
                if self.limit is not None and self.up.size + len(data) > self.limit:
                    self.error = f"body exceeds body_size_limit ({self.limit} bytes)"
                    self.offload.drop(self.up)
                else:
                    if len(self.prefix) < self.keep:
                        self.prefix += data[: self.keep - len(self.prefix)]
                    self.offload.feed(self.up, data)
            return []
        self.finished = True
        ready, self.ready = self.ready, None
        if self.error is None and ready is None:
            self.offload.drop(self.up)
            self.error = "the body was not masked at its end (mitmproxy did not wait for it)"
        if self.error is None and ready is not None:
            try:
                out = self._apply(*ready)
            except Exception as e:  # noqa: BLE001 - decided here what leaves
                if not isinstance(e, DisguiseError):
                    log_internal(log, "streamed body", e)
                self.error = reason(e)
            else:
                self.note_sent(out)
                return _pieces(out)
        err = self.on_error(self.error or "refused")
        return [err] if err else []

    def _apply(self, result: pipeline.Verdict, raw: bytes | None) -> bytes | list[bytes]:
        """What goes upstream (outcome.apply, as Masker's call): raises to refuse."""
        rec = self.rec
        rec.client_size = self.up.size
        kept = bytes(self.prefix)
        self.prefix = bytearray()

        def unknown() -> bytes:
            if raw is None:
                raise OffloadError("the masking worker did not send the body back")
            return scanned(rec, self.path, self.headers, raw, raw, self.dest)

        out: bytes | list[bytes] | None = outcome.apply(self.flow, rec, kept, result, unknown, streamed=True)
        if out is None or isinstance(result, pipeline.NotOurs):
            if raw is None:  # fail-open needs the body as it came: the worker sends it with such a verdict
                raise OffloadError("the masking worker did not send the body back")
            return raw
        return out


def _pieces(body: bytes | list[bytes]) -> Iterator[bytes]:
    """body in pieces of at most PIECE bytes, each let go once mitmproxy sent it: a masked
    body as the worker sent it back (a list of pieces: never joined; each cut again, the
    worker's being larger), or bytes cut when sent (never all copied at once); never an
    empty piece (on HTTP/1.1 chunked that ends the body). One piece is one turn of the
    event loop (bodyhook): its copies into the socket's buffer are what that turn costs."""
    if isinstance(body, list):
        body.reverse()
        while body:
            piece = body.pop()
            for i in range(0, len(piece), PIECE):
                yield piece[i : i + PIECE]  # the piece itself when it is no longer (no copy)
        return
    for i in range(0, len(body), PIECE):
        yield body[i : i + PIECE]
