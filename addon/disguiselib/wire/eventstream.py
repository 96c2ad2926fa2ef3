"""AWS event stream (`application/vnd.amazon.eventstream`) bytes <-> frames, sans I/O.

The framing AWS uses for streamed responses (Bedrock's InvokeModelWithResponseStream
and ConverseStream among them). Each message is

    total length (uint32) | headers length (uint32) | prelude CRC32 (of those 8 bytes)
    headers: name length (uint8), name, type (uint8), value (by type; 7 = string with a
             uint16 length, 6 = bytes with a uint16 length, 0/1 = true/false, ...)
    payload
    message CRC32 (of every byte before it)

all big-endian, CRC32 as zlib computes it. Reading is botocore's own decoder
(`botocore.eventstream.EventStreamBuffer`: header types, both checksums, its size
limits), fed exactly one whole frame at a time: the frame boundaries are found here
from the prelude (whose checksum is checked first, so a corrupt length cannot make the
reader wait for bytes that never come), which keeps the work linear in the input —
botocore's buffer copies what remains after every message it takes off, so a body
that arrives in one piece would cost time quadratic in its number of frames. A stream
repeats a handful of header blocks (`:event-type` chunk, `:content-type`,
`:message-type` event) in every frame: once botocore has read a block, a frame with
the same header bytes gets the same (read-only) headers and only its message checksum
checked here (zlib's CRC32, as botocore's), which takes the reader from about 40 to
about 11 µs a frame (bench/bedrock.py).

Writing is small enough to do here (`encode`, `reframe`), and tests/core check it
against botocore's decoder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zlib import crc32

from ..errors import StreamError

PRELUDE = 12
# Header blocks remembered per stream (a stream has a few: one per event type).
MAX_KNOWN_HEADERS = 64
# AWS documents 16 MiB as the largest payload of a message and 128 KiB of headers;
# botocore accepts up to 24 MiB of payload. A frame over this is refused with an
# explicit error instead of being buffered without bound.
MAX_FRAME_BYTES = 24 * 1024 * 1024 + 128 * 1024 + PRELUDE + 4

_U32X2 = struct.Struct(">II")
_U32 = struct.Struct(">I")

STRING = 7  # the header value type every AWS header we write uses

_BOTOCORE: tuple | None = None  # (EventStreamBuffer, ParserError), imported when a frame first needs them


def _reader() -> tuple:
    """botocore's frame reader and its error, imported the first time a frame's headers
    are read: a proxy that never sees a Bedrock stream never loads botocore (~0.4 MiB).
    Where it cannot be imported the stream fails closed (StreamError: its error event)."""
    global _BOTOCORE
    if _BOTOCORE is None:
        try:
            from botocore.eventstream import EventStreamBuffer, ParserError
        except ImportError as e:
            raise StreamError(f"the AWS event stream cannot be read: botocore does not import ({e})") from None
        _BOTOCORE = (EventStreamBuffer, ParserError)
    return _BOTOCORE


@dataclass(slots=True)
class Frame:
    """One message: its exact bytes, its headers (botocore's decoding) and its payload."""

    raw: bytes
    headers: dict
    payload: bytes
    offset: int  # where in the stream it began (for error messages)

    @property
    def header_block(self) -> bytes:
        """The headers exactly as they came (their types kept)."""
        hlen = _U32X2.unpack_from(self.raw)[1]
        return self.raw[PRELUDE : PRELUDE + hlen]

    @property
    def message_type(self) -> str:
        return str(self.headers.get(":message-type", ""))

    @property
    def event_type(self) -> str:
        return str(self.headers.get(":event-type", ""))


class Decoder:
    """Incremental reader: `feed(bytes) -> [Frame]`, `end()` at end of body.

    Raises StreamError for a prelude or message checksum that does not match, a length
    that cannot be, headers that do not parse, a frame over MAX_FRAME_BYTES, and (at
    `end`) a body that stops inside a frame. Once it has raised it stays broken."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # bytes of the stream already framed (for messages)
        self._need = 0  # the length of the frame now arriving, once its prelude checked
        self._botocore: Any = None  # botocore's EventStreamBuffer, made when a frame's headers are first read
        self._known: dict[bytes, dict] = {}  # header bytes -> botocore's reading of them
        self.broken = False

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        if self.broken:
            raise StreamError("the event stream is broken")
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        start = 0
        try:
            while True:
                avail = len(buf) - start
                if not self._need:
                    if avail < PRELUDE:
                        break
                    self._need = self._prelude(buf, start)
                if avail < self._need:
                    break
                raw = bytes(buf[start : start + self._need])
                frames.append(self._frame(raw))
                start += self._need
                self._pos += self._need
                self._need = 0
        except StreamError:
            self.broken = True
            raise
        finally:
            if start:
                del buf[:start]
        return frames

    def end(self) -> None:
        """The body ended: nothing may be left over."""
        if self._buf and not self.broken:
            self.broken = True
            raise StreamError(
                f"the event stream ends inside a frame (at byte {self._pos}, {len(self._buf)} bytes of it)"
            )

    def _prelude(self, buf: bytearray, start: int) -> int:
        total, hlen = _U32X2.unpack_from(buf, start)
        (crc,) = _U32.unpack_from(buf, start + 8)
        if crc32(bytes(buf[start : start + 8])) != crc:
            raise StreamError(f"event stream frame at byte {self._pos}: prelude checksum mismatch")
        if total < PRELUDE + 4 or hlen > total - PRELUDE - 4:
            raise StreamError(f"event stream frame at byte {self._pos}: impossible lengths ({total}, {hlen})")
        if total > MAX_FRAME_BYTES:
            raise StreamError(f"event stream frame at byte {self._pos} exceeds {MAX_FRAME_BYTES} bytes")
        return total

    def _frame(self, raw: bytes) -> Frame:
        hend = PRELUDE + _U32X2.unpack_from(raw)[1]
        headers = self._known.get(raw[PRELUDE:hend])
        if headers is not None:  # the prelude's checksum was checked in _prelude
            if crc32(memoryview(raw)[:-4]) != _U32.unpack_from(raw, len(raw) - 4)[0]:
                raise StreamError(f"event stream frame at byte {self._pos}: checksum mismatch")
            return Frame(raw, headers, raw[hend:-4], self._pos)
        fr = self._botocore_frame(raw)
        if len(self._known) < MAX_KNOWN_HEADERS:
            self._known[raw[PRELUDE:hend]] = fr.headers
        return fr

    def _botocore_frame(self, raw: bytes) -> Frame:
        buffer, parser_error = _reader()
        b = self._botocore
        if b is None:
            b = self._botocore = buffer()
        b.add_data(raw)
        try:
            msg = next(b)
        except (parser_error, ValueError, KeyError, IndexError, struct.error, UnicodeDecodeError) as e:
            self._botocore = buffer()
            what = "checksum mismatch" if "Checksum" in type(e).__name__ else f"unreadable ({type(e).__name__})"
            raise StreamError(f"event stream frame at byte {self._pos}: {what}") from None
        return Frame(raw, msg.headers, msg.payload, self._pos)


def header(name: str, value: str | bytes) -> bytes:
    """One header, as a string (type 7) or bytes (type 6) value."""
    n = name.encode("utf-8")
    v = value.encode("utf-8") if isinstance(value, str) else value
    if len(n) > 255 or len(v) > 0xFFFF:
        raise ValueError("event stream header name or value too long")
    return bytes([len(n)]) + n + bytes([STRING if isinstance(value, str) else 6]) + struct.pack(">H", len(v)) + v


# Bytes a header value of each type takes after its type byte (botocore's
# DecodeUtils.HEADER_PARSERS): 0/1 true/false, 2 byte, 3 short, 4 int, 5 long,
# 8 timestamp, 9 uuid; 6 (bytes) and 7 (string) carry a uint16 length instead.
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def rewrite_strings(header_block: bytes, names: frozenset[str], fn: Callable[[str], str]) -> bytes:
    """header_block with the string (type 7) value of each header named in names put
    through fn; every other byte as it came, header_block itself if nothing changed.

    The block is one botocore has read (a Frame's), so its layout is known good.
    Raises StreamError for a new value over a header's 65535 bytes."""
    out: list[bytes] = []
    pos = done = 0
    while pos < len(header_block):
        nlen = header_block[pos]
        name = header_block[pos + 1 : pos + 1 + nlen]
        pos += 1 + nlen
        kind = header_block[pos]
        pos += 1
        if kind not in (6, STRING):
            pos += _FIXED[kind]
            continue
        (vlen,) = struct.unpack_from(">H", header_block, pos)
        start, pos = pos, pos + 2 + vlen
        if kind != STRING or name.decode("utf-8") not in names:
            continue
        value = header_block[start + 2 : pos].decode("utf-8")
        new = fn(value)
        if new == value:
            continue
        v = new.encode("utf-8")
        if len(v) > 0xFFFF:
            raise StreamError(f"event stream header {name.decode('utf-8')!r}: over 65535 bytes once restored")
        out += [header_block[done:start], struct.pack(">H", len(v)), v]
        done = pos
    if not out:
        return header_block
    out.append(header_block[done:])
    return b"".join(out)


def headers_block(headers: list[tuple[str, str | bytes]]) -> bytes:
    return b"".join(header(k, v) for k, v in headers)


def reframe(header_block: bytes, payload: bytes) -> bytes:
    """A frame of these exact header bytes and this payload, lengths and checksums new."""
    total = PRELUDE + len(header_block) + len(payload) + 4
    prelude = _U32X2.pack(total, len(header_block))
    prelude += _U32.pack(crc32(prelude))
    body = prelude + header_block + payload
    return body + _U32.pack(crc32(body))


def encode(headers: list[tuple[str, str | bytes]], payload: bytes) -> bytes:
    """A frame with these headers (in this order) and this payload."""
    return reframe(headers_block(headers), payload)
