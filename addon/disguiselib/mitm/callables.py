"""The stream callables mitmproxy calls per chunk of a body (adapter-level)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from ..base.stream import Reverser
from ..errors import DisguiseError, log_internal, reason

log = logging.getLogger("disguise")


class StreamCall:
    """mitmproxy's stream callable for one SSE response.

    Never raises (an exception here would drop a chunk or hang the client), never
    returns b"" mid-stream (on HTTP/1.1 chunked that is the end-of-body marker): on a
    failure the client gets an explicit error event and nothing more.
    """

    def __init__(self, stream: Reverser) -> None:
        self.stream = stream
        # what feeds it: an event stream's own feed where the body is one (BodyStream.sink)
        self.feed: Callable[[bytes], bytes] = getattr(stream, "sink", None) or stream.feed
        self.broke = False  # an exception escaped the reverser (a bug), reported as an error event

    @property
    def dead(self) -> bool:
        """Failed closed: the client got the addon's error instead of the rest of the
        stream (the reverser gave up, or broke)."""
        return self.broke or self.stream.failure is not None

    def __call__(self, data: bytes) -> bytes | list[bytes]:
        if self.broke:
            return []
        try:
            if data:
                out = self.feed(data)
            else:
                if self.stream.finished:
                    return []  # the final call can come twice (mitmproxy 11, HTTP/2)
                out = self.stream.flush()
        except Exception as e:  # noqa: BLE001 - every failure must reach the client
            return self.failed(e)
        return [out] if out else []

    def failed(self, e: Exception) -> list[bytes]:
        """What the client gets once the reverser raised e (the capture's compiled read,
        inspect/_teeread.pyx, calls `feed` itself and this where it raises)."""
        self.broke = True
        reason = str(e) if isinstance(e, DisguiseError) else type(e).__name__
        log.error("disguise: stream could not be reversed: %s", reason)
        return [self.stream.error_event(f"disguise: stream could not be reversed: {reason}")]


class Refused:
    """A stream that cannot be reversed: the client gets one error body, nothing else."""

    dead = True  # failed closed (read by capture.Tee)

    def __init__(self, err: bytes) -> None:
        self.err: bytes | None = err

    def __call__(self, data: bytes) -> list[bytes]:
        err, self.err = self.err, None
        return [err] if err else []


class Buffered:
    """A stream callable that lets nothing through until the body is complete, then
    hands it to `work` whole and emits the result. For bodies mitmproxy would otherwise
    stream past the addon (stream_large_bodies): masked completely or not sent.

    `work` raises to refuse; then `on_error(message)` says what goes out instead (b"":
    nothing). Over `limit` bytes nothing more is buffered and the body is refused.

    A `work` with an async `prepare(raw)` does its slow part off the event loop: mitmproxy
    awaits `complete` (bodyhook.py) at the body's end, before the last call, which then
    only applies what prepare found. Without that hook the last call does it all.

    What leaves is noted for the capture (`sent`: mitmproxy keeps nothing of a body it
    streamed): its size, and its bytes when they are at most `keep` (the Inspector puts
    them on the flow at the request hook, inspect/inspector.py `request`)."""

    paced = False  # its last output is sent piece by piece by bodyhook (streamed.Spooled)
    # it refused the body, and nothing of the request had left: its headers were held back
    # till the body's end (bodyhook), and the request hook answers it instead
    held_back = False

    def __init__(
        self, work: Callable[[bytes], bytes], on_error: Callable[[str], bytes], limit: int | None, keep: int = 0
    ) -> None:
        self.work = work
        self.keep = keep
        self.sent: bytes | None = None  # what left upstream, when at most keep bytes
        self.sent_size: int | None = None  # how many bytes left upstream; None: nothing left (yet)
        self.on_error = on_error
        self.limit = limit
        self.buf = bytearray()
        self.raw: bytes | None = None  # the whole body, taken out of buf by complete
        self.finished = False
        self.error: str | None = None

    def wants_completion(self) -> bool:
        """Has work a slow part to do off the loop before the last call (bodyhook)?"""
        return not self.finished and self.raw is None and self.error is None and hasattr(self.work, "prepare")

    async def complete(self) -> None:
        """The body is whole: work's slow part, off the event loop (awaited by mitmproxy
        through bodyhook). What it finds is applied by the last call; a failure here is
        found again there (work decides, and refuses)."""
        if not self.wants_completion():
            return
        self.raw, self.buf = bytes(self.buf), bytearray()
        try:
            await self.work.prepare(self.raw)  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - prepare never raises; if it did, the last call does it all
            log_internal(log, "buffered body", e)

    def __call__(self, data: bytes) -> list[bytes]:
        if self.finished:
            return []
        if data:
            if self.error is None:
                self.buf += data
                if self.limit is not None and len(self.buf) > self.limit:
                    self.error = f"body exceeds body_size_limit ({self.limit} bytes)"
                    self.buf = bytearray()
            return []
        self.finished = True
        if self.error is None:
            try:
                out = self.work(self.raw if self.raw is not None else bytes(self.buf))
            except Exception as e:  # noqa: BLE001 - decided here what leaves
                if not isinstance(e, DisguiseError):
                    log_internal(log, "buffered body", e)
                self.error = reason(e)
            else:
                self.note_sent(out)
                return [out] if out else []
            finally:
                self.buf, self.raw = bytearray(), None
        err = self.on_error(self.error)
        return [err] if err else []


    def note_sent(self, out: bytes | list[bytes]) -> None:
        """What leaves upstream (the body, or its pieces), for the capture: its size, and
        its bytes when at most `keep` (never a copy of a larger body)."""
        pieces = out if isinstance(out, list) else [out]
        self.sent_size = sum(map(len, pieces))
        self.sent = (pieces[0] if len(pieces) == 1 else b"".join(pieces)) if self.sent_size <= self.keep else None


class Then:
    """Disguise's stream callable, then another addon's: an addon later in the chain set
    its own on a response Disguise restores (the Guard chained them). That addon gets what
    the client would (restored), as its hooks see a restored whole body. Empty pieces are
    never passed on (on HTTP/1.1 chunked one is the end-of-body marker)."""

    def __init__(self, first: Callable[[bytes], Any], then: Callable[[bytes], Any]) -> None:
        self.first = first
        self.then = then

    def __call__(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        for piece in pieces(self.first(data)):
            out += pieces(self.then(piece))
        if not data:
            out += pieces(self.then(b""))
        return out


def pieces(out: bytes | Iterable[bytes]) -> list[bytes]:
    """A stream callable's output as its non-empty pieces."""
    return [p for p in ([out] if isinstance(out, (bytes, bytearray)) else list(out)) if p]
