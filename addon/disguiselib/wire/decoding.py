"""Incremental Content-Encoding decoders for streamed responses.

mitmproxy hands a stream callable the bytes *before* content decoding; when upstream
ignores our `accept-encoding: identity`, the SSE arrives as gzip/br/zstd fragments and
must be decoded here, piece by piece, before it can be reversed.

A body may hold several gzip members or zstd frames one after the other (RFC 1952
§2.2: "A gzip file consists of a series of members"; RFC 8878 §3: "a Zstandard
compressed data ... consists of one or more frames"); a writer that flushes each
event as its own member or frame produces exactly that. Every member is decoded.
A body that ends inside a member is an error, never a silent cut.

What a body may expand to is bounded (`LIMIT`, the option `disguise_decoded_limit`): 1 GiB
of zeros is 1 MB as gzip, 33 kB as zstd, 1.6 kB as brotli. Decoded whole on the event loop,
such a response took the proxy past 5 GB and down with every other flow. Each decoder here
counts what it has produced and stops with `ExpansionError` one step past the limit, and
no single step produces more than a few MiB: zlib is asked for at most 4 MiB and what is
left (`max_length`), zstd and brotli, which cannot all be asked that, are fed their input in
slices small enough that one slice cannot expand far (zstd: 128 KiB a block from 4
bytes, so 64 bytes at most 2 MiB; brotli: up to 16 MiB a byte, so one byte at a time).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import StreamError

# The most a compressed body may expand to. An LLM response — a long answer, a
# response.completed carrying every output item, a generated image in base64 — is a few
# MB, rarely tens; a body decoded whole costs several times its size while it is
# restored, on a proxy that holds many flows. Raised with `disguise_decoded_limit`.
LIMIT = 64 * 1024 * 1024
_ZSTD_SLICE = 64  # input bytes a zstd decoder is fed at once (at most 2 MiB out)
_ZLIB_STEP = 4 * 1024 * 1024  # the most a zlib decoder is asked for at once
_BROTLI_SLICE = 1  # and a brotli decoder (at most some 16 MiB out)


class ExpansionError(StreamError):
    """A compressed body expands past the limit (a decompression bomb, or a limit set too low)."""


def _too_big(name: str, limit: int) -> ExpansionError:
    return ExpansionError(
        f"the {name}-compressed body expands past {limit} bytes (disguise_decoded_limit): refused"
    )


class Decoder(Protocol):
    def decompress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Members:
    """A decoder for a concatenation of independently compressed members (gzip members,
    zstd frames): a fresh single-member decompressor starts where the last one ended.
    `new()` builds one; it must have `decompress`, `eof` and `unused_data`."""

    def __init__(self, new: Callable[[], Any], name: str, restart: bool, limit: int, capped: bool) -> None:
        self._new = new
        self._d = new()
        self._name = name
        self._restart = restart  # False: data after the first member is an error (deflate)
        self._fed = False  # some member has begun
        self._limit = limit
        self._capped = capped  # decompress(data, max_length) and unconsumed_tail (zlib)
        self.produced = 0  # bytes decoded so far

    def decompress(self, data: bytes) -> bytes:
        out: list[bytes] = []
        if self._capped:
            self._run_capped(data, out)
        else:
            view = memoryview(data)
            for i in range(0, len(view), _ZSTD_SLICE):
                self._run(bytes(view[i : i + _ZSTD_SLICE]), out)
        return b"".join(out)

    def _run_capped(self, data: bytes, out: list[bytes]) -> None:
        """zlib: each step asked for at most _ZLIB_STEP bytes (and one past the limit: that
        byte refuses it). zlib inflates with the GIL released, but joins what one call
        produced into one bytes object with it held: 64 MiB in one call held every other
        thread (the event loop) 0.1-0.16 s."""
        full = False  # the last step filled its cap: output may wait with no input left
        while data or full:
            if self._d.eof:
                if not data:
                    break
                if not self._restart:
                    raise StreamError(f"data after the end of the {self._name} stream")
                self._d = self._new()
            self._fed = True
            cap = min(self._limit - self.produced + 1, _ZLIB_STEP)
            try:
                piece = self._d.decompress(data, cap)
            except Exception as e:  # noqa: BLE001 - zlib.error
                raise StreamError(f"corrupt {self._name} stream") from e
            self.produced += len(piece)
            if self.produced > self._limit:
                raise _too_big(self._name, self._limit)
            out.append(piece)
            full = len(piece) == cap
            rest = self._d.unused_data if self._d.eof else self._d.unconsumed_tail
            if data and not piece and len(rest) >= len(data):  # nothing consumed: cannot make progress
                raise StreamError(f"corrupt {self._name} stream")
            data = rest
            if self._d.eof:
                full = False

    def _run(self, data: bytes, out: list[bytes]) -> None:
        while data:
            if self._d.eof:
                if not self._restart:
                    raise StreamError(f"data after the end of the {self._name} stream")
                self._d = self._new()
            self._fed = True
            try:
                piece = self._d.decompress(data)
            except Exception as e:  # noqa: BLE001 - ZstdError: each library its own
                raise StreamError(f"corrupt {self._name} stream") from e
            self.produced += len(piece)
            if self.produced > self._limit:
                raise _too_big(self._name, self._limit)
            out.append(piece)
            if not self._d.eof:  # all input taken
                break
            rest = self._d.unused_data
            if len(rest) >= len(data):  # nothing consumed: cannot make progress
                raise StreamError(f"corrupt {self._name} stream")
            data = rest

    def flush(self) -> bytes:
        if self._fed and not self._d.eof:
            raise StreamError("compressed stream ended before its end marker")
        return b""


def _zlib(wbits: int) -> Callable[[], Any]:
    return lambda: zlib.decompressobj(wbits)


def _zstd() -> Callable[[], Any]:
    """A new single-frame zstd decompressor's maker: zstandard's (a dependency; mitmproxy
    11's too), else the standard library's (mitmproxy 12 ships backports.zstd)."""
    try:
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj
    except ImportError:
        return _stdlib_zstd()


def _stdlib_zstd() -> Callable[[], Any]:
    """The standard library's zstd decompressor class; ImportError where there is none."""
    zstd = stdlib_zstd()
    if zstd is None:
        raise ImportError("no compression.zstd or backports.zstd")
    return zstd.ZstdDecompressor  # type: ignore[no-any-return]


def stdlib_zstd() -> Any:
    """The standard library's zstd module: compression.zstd (3.14), or its backport
    (mitmproxy 12 ships backports.zstd); None where neither imports. Response decoding
    and the capture (inspect/packing.py) fall back on it where zstandard is missing."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef,attr-defined,unused-ignore]
        except ImportError:
            return None
    return zstd


class _Brotli:
    def __init__(self, limit: int) -> None:
        import brotli

        self._d = brotli.Decompressor()
        self._fed = False
        self._limit = limit
        self.produced = 0

    def decompress(self, data: bytes) -> bytes:
        if data and self._d.is_finished():
            raise StreamError("data after the end of the br stream")
        self._fed = self._fed or bool(data)
        out: list[bytes] = []
        view = memoryview(data)
        for i in range(0, len(view), _BROTLI_SLICE):
            if self._d.is_finished():
                raise StreamError("data after the end of the br stream")
            try:
                piece = self._d.process(bytes(view[i : i + _BROTLI_SLICE]))
            except Exception as e:  # noqa: BLE001 - brotli.error
                raise StreamError("corrupt br stream") from e
            self.produced += len(piece)
            if self.produced > self._limit:
                raise _too_big("br", self._limit)
            out.append(piece)
        return b"".join(out)

    def flush(self) -> bytes:
        if self._fed and not self._d.is_finished():
            raise StreamError("compressed stream ended before its end marker")
        return b""


def decoder_for(encoding: str, limit: int = LIMIT) -> Decoder | None:
    """A decoder for a Content-Encoding value that produces at most `limit` bytes in all
    (ExpansionError past it); None for identity. Raises StreamError for an encoding it
    cannot decode (the stream must then not reach the client)."""
    e = encoding.strip().lower()
    if e in ("", "identity"):
        return None
    if e in ("gzip", "x-gzip"):
        return _Members(_zlib(16 + zlib.MAX_WBITS), "gzip", restart=True, limit=limit, capped=True)
    if e == "deflate":
        return _Members(_zlib(zlib.MAX_WBITS), "deflate", restart=False, limit=limit, capped=True)
    if e == "br":
        return _Brotli(limit)
    if e == "zstd":
        return _Members(_zstd(), "zstd", restart=True, limit=limit, capped=False)
    raise StreamError(f"cannot decode a body with content-encoding {encoding!r}")


def decode_whole(body: bytes, encoding: str, limit: int = LIMIT) -> bytes:
    """A whole body content-decoded, at most `limit` bytes of it. Raises StreamError
    (ExpansionError past the limit; bad data; a body cut inside a member)."""
    d = decoder_for(encoding, limit)
    if d is None:
        return body
    return d.decompress(body) + d.flush()


class Decoded:
    """A response body's reverser fed content-encoded bytes: the one place a body is
    decompressed on its way to a reverser (pipeline.reverser_for wraps one when the
    response has a Content-Encoding). A body that cannot be decompressed — bad data, or
    cut inside a member — ends the reverser with its explicit error (`fail`)."""

    def __init__(self, inner: Any, decoder: Decoder) -> None:
        self.inner = inner
        self.decoder = decoder

    @property
    def state(self) -> Any:
        return self.inner.state

    @property
    def past_final(self) -> bool:
        return bool(getattr(self.inner, "past_final", False))

    @property
    def finished(self) -> bool:
        return bool(self.inner.finished)

    @property
    def failure(self) -> str | None:
        return self.inner.failure  # type: ignore[no-any-return]

    @property
    def events_in(self) -> int:
        return int(self.inner.events_in)

    @property
    def events_changed(self) -> int:
        return int(self.inner.events_changed)

    def feed(self, data: bytes) -> bytes:
        if self.inner.finished or not data:
            return b""
        try:
            data = self.decoder.decompress(data)
        except StreamError as e:
            return bytes(self.inner.fail(str(e)))
        return bytes(self.inner.feed(data)) if data else b""

    def flush(self) -> bytes:
        """The body ended. A compressed stream that ends before its end marker is an
        error, unless the reverser has seen its API's last event (`terminated`): then
        only the container is unfinished, and the stream ends as an uncompressed one cut
        after its last event does, cleanly. (Its error after `message_stop` made the
        anthropic SDK raise on a complete message.)"""
        if self.inner.finished:
            return b""
        try:
            tail = self.decoder.flush()
        except StreamError as e:
            if getattr(self.inner, "terminated", False):
                return bytes(self.inner.flush())
            return bytes(self.inner.fail(str(e)))
        head = self.inner.feed(tail) if tail else b""
        return head + self.inner.flush()

    def fail(self, message: str) -> bytes:
        return bytes(self.inner.fail(message))

    def whole(self, body: bytes) -> bytes:
        return self.feed(body) + self.flush()

    def error_event(self, message: str) -> bytes:
        return bytes(self.inner.error_event(message))


# -- what a container carries besides its payload --------------------------------------------

_GZIP_TEXT = 0x04 | 0x08 | 0x10  # FEXTRA, FNAME, FCOMMENT (RFC 1952 §2.3.1)
_ZSTD_FRAME = 0xFD2FB528
_ZSTD_SKIPPABLE = 0x184D2A50  # to 0x184D2A5F (RFC 8878 §3.1.2)


def carries_more(body: bytes, encoding: str) -> bool:
    """Does a content-encoded body carry bytes besides its compressed payload that a
    receiver may keep: a gzip member's extra field, file name or comment (`gzip -c
    Acme.json` stores the name), a zstd skippable frame, anything this walk cannot place
    (True)? Brotli: always True, its metadata meta-blocks (RFC 7932 §9.2) cannot be told
    from compressed ones without decoding them. Deflate (zlib): False, its header holds
    no such field and data after its end is refused by the decoder. For a body that
    decoded whole (decode_whole): such a body leaves encoded again from what was
    checked, never with the client's container. A gzip body is inflated once more to
    find where each member ends (a few ms a megabyte); zstd's frames are walked by their
    headers."""
    e = encoding.strip().lower()
    if e in ("", "identity", "deflate"):
        return False
    try:
        if e in ("gzip", "x-gzip"):
            return _gzip_more(body)
        if e == "zstd":
            return _zstd_more(body)
    except (IndexError, ValueError, zlib.error):
        return True
    return True


def _gzip_more(body: bytes) -> bool:
    pos = 0
    while pos < len(body):
        if body[pos : pos + 3] != b"\x1f\x8b\x08" or body[pos + 3] & _GZIP_TEXT:
            return True
        pos += 12 if body[pos + 3] & 0x02 else 10  # FHCRC: a CRC16 of the header
        d = zlib.decompressobj(-zlib.MAX_WBITS)
        data = body[pos:]
        while not d.eof:
            if not data:
                return True
            d.decompress(data, _ZLIB_STEP)  # the output let go: only where the member ends
            data = d.unconsumed_tail
        pos = len(body) - len(d.unused_data) + 8  # its CRC32 and ISIZE
    return pos != len(body)


def _zstd_more(body: bytes) -> bool:
    pos = 0
    while pos < len(body):
        magic = int.from_bytes(body[pos : pos + 4], "little")
        if magic != _ZSTD_FRAME:
            return True  # a skippable frame, or what this walk cannot place
        fhd = body[pos + 4]
        single = fhd & 0x20
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fhd >> 6]
        while True:
            head = int.from_bytes(body[pos : pos + 3], "little")
            if len(body) < pos + 3 or (head >> 1) & 3 == 3:
                return True
            pos += 3 + (1 if (head >> 1) & 3 == 1 else head >> 3)  # an RLE block: one byte
            if head & 1:
                break
        pos += 4 if fhd & 0x04 else 0  # the content checksum
    return pos != len(body)
