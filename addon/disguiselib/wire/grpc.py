"""gRPC request bodies read as a gRPC server reads them (bytes on the wire, no rules).

Google's client libraries (google-cloud-aiplatform, the older google-generativeai) call
Vertex AI and the Gemini API over gRPC: HTTP/2 with `content-type: application/grpc`, the
prompt in a protobuf string field. Read as one text, such a body hides what its server
reads: a message compressed by the call's `grpc-encoding` is gzip bytes; gRPC-Web's text
form is base64; and a string field's length byte, which precedes its text, can be a
letter or a digit, so a pattern that wants no letter before its match
(`(?:^|[^A-Za-z0-9])hf_...`) does not find a token that fills a field of 48 bytes ("0").

- A body (`messages`) is a run of messages, each `flag (1 byte) | length (4 bytes,
  big-endian) | data` (PROTOCOL-HTTP2.md, "Length-Prefixed-Message"); flag bit 0: the data
  is compressed; gRPC-Web's bit 7: a trailers frame, header lines as text
  (PROTOCOL-WEB.md). `application/grpc-web-text` is that run in base64, each piece the
  client wrote padded on its own.
- A compressed message is read by what its data is (gzip, zlib's deflate and zstd carry
  a magic number), not by the `grpc-encoding` that names it: a server that decodes it
  reads what that coding gives, and one that does not refuses it. Data in a coding not
  read here (snappy, a coding of one's own) cannot be shown clean: `Unreadable`. So is a
  body that is not a whole run of messages (a server refuses it, after it arrived).
- A message is read without its schema (`strings`): each length-delimited field may be
  a string, bytes or an embedded message, so each is given as it is, and where it parses
  as a message, its own fields too, down to `MAX_DEPTH` (protobuf's parsers refuse a
  deeper message; so does this reading, `Unreadable`). One that parses as a message is
  given whole too only where its bytes can be a string's text: a string that happens to
  parse (`Acme Corp` is a fixed64 field 8) is read whole, an inline image is read once,
  not once more for each message around it. (base/bodies.py reads a message's strings as
  one text, a field a line: a reading each cost some 25 us a field, 24 s for a call of a
  million short strings; one text, about 2 us a field.)
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from urllib.parse import quote

from ..errors import StreamError
from .decoding import LIMIT, decode_whole

GRPC = "grpc"
WEB_TEXT = "grpc-web-text"
PROTOBUF = "protobuf"

# Media types whose body is a protobuf message on its own (no gRPC framing)
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf", "application/x-google-protobuf",
                             "application/vnd.google.protobuf"})  # fmt: skip

MAX_DEPTH = 100  # the recursion limit of protobuf's own parsers (C++, Java, Python)
_COMPRESSED, _TRAILERS = 0x01, 0x80


class Unreadable(ValueError):
    """What a receiver reads in a body that is not read here; the message says why (no
    text of the body)."""


def kind(media_type: str) -> str | None:
    """GRPC, WEB_TEXT or PROTOBUF for a media type (lower case, no parameters) whose body
    is read here; None for any other. `application/grpc+json` is framed too: its
    messages are then JSON, and read as text."""
    base = media_type.partition("+")[0]
    if base in ("application/grpc", "application/grpc-web"):
        return GRPC
    if base == "application/grpc-web-text":
        return WEB_TEXT
    return PROTOBUF if media_type in _PROTOBUF_TYPES else None


_PIECE = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


def unbase64(body: bytes) -> bytes:
    """gRPC-Web's text form decoded: base64 pieces one after the other, each padded
    (white space between them ignored). Raises Unreadable."""
    text = re.sub(rb"\s+", b"", body)
    out: list[bytes] = []
    pos = 0
    while pos < len(text):
        m = _PIECE.match(text, pos)
        assert m is not None  # (the pattern matches the empty string)
        piece, last = m.group(), m.end() == len(text)
        if not piece or (len(piece) % 4 and (not last or piece.endswith(b"=") or len(piece) % 4 == 1)):
            raise Unreadable("its body is not base64, as application/grpc-web-text says it is")
        try:  # (a last piece may come unpadded)
            out.append(base64.b64decode(piece + b"=" * (-len(piece) % 4), validate=True))
        except (binascii.Error, ValueError):
            raise Unreadable("its body is not base64, as application/grpc-web-text says it is") from None
        pos = m.end()
    return b"".join(out)


def messages(body: bytes, limit: int = LIMIT) -> Iterator[tuple[bytes, bool]]:
    """The messages of a gRPC body, each (data decompressed, is it a trailers frame).
    Raises Unreadable for a body that is not a whole run of messages, a message in a
    coding not read here, or one that expands past limit."""
    pos, n, left = 0, len(body), limit
    while pos < n:
        if n - pos < 5:
            raise Unreadable("its body ends inside a gRPC message's prefix")
        flag, size = body[pos], int.from_bytes(body[pos + 1 : pos + 5], "big")
        data = body[pos + 5 : pos + 5 + size]
        if len(data) < size:
            raise Unreadable("its body ends inside a gRPC message")
        if flag & ~(_COMPRESSED | _TRAILERS):
            raise Unreadable(f"a gRPC message has flags {flag:#04x}, which no gRPC server reads")
        if flag & _COMPRESSED:
            data = _decompressed(data, left)
            left -= len(data)
        yield data, bool(flag & _TRAILERS)
        pos += 5 + size


def _decompressed(data: bytes, limit: int) -> bytes:
    if data[:2] == b"\x1f\x8b":
        coding = "gzip"
    elif len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
        coding = "deflate"  # (zlib's header: gRPC's "deflate" is zlib's format)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        coding = "zstd"
    else:
        raise Unreadable("a gRPC message is compressed in a coding disguise does not decode (it reads gzip, "
                         "deflate and zstd)")  # fmt: skip
    try:
        return decode_whole(data, coding, max(limit, 0))
    except (StreamError, ValueError) as e:  # (ExpansionError is a StreamError): said without the data
        raise Unreadable(f"a gRPC message compressed with {coding} does not decode: {e}") from None


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int] | None:
    value, shift = 0, 0
    while pos < len(data) and shift < 70:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if b < 0x80:
            return value, pos
        shift += 7
    return None


def fields(data: bytes | memoryview) -> list[tuple[int, int, int]] | None:
    """The length-delimited fields of data read as a protobuf message, each (field
    number, start, end) of its content; None when data is not one (every byte must
    belong to a field; a group must close as it opened)."""
    out: list[tuple[int, int, int]] = []
    groups: list[int] = []
    pos, n = 0, len(data)
    while pos < n:
        key = data[pos]
        if key < 0x80:  # (a one-byte key, nearly every field's: read here, not by _varint)
            pos += 1
        else:
            got = _varint(data, pos)
            if got is None:
                return None
            key, pos = got
        number, wire = key >> 3, key & 7
        if number == 0:
            return None
        if wire == 2:
            size = data[pos] if pos < n else 0x80
            if size < 0x80:
                start = pos + 1
            else:
                got = _varint(data, pos)
                if got is None:
                    return None
                size, start = got
            pos = start + size
            if pos > n:
                return None
            out.append((number, start, pos))
        elif wire == 0:
            got = _varint(data, pos)
            if got is None:
                return None
            pos = got[1]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 3:
            groups.append(number)
        elif wire == 4:
            if not groups or groups.pop() != number:
                return None
        else:
            return None
    return out if pos == n and not groups else None


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _text(data: memoryview) -> bool:
    """Can data be a string's text: UTF-8 without a control character but tab and line ends?"""
    try:
        return _CONTROL.search(str(data, "utf-8")) is None
    except UnicodeDecodeError:
        return False


def strings(data: bytes) -> Iterator[tuple[str, bytes]]:
    """What of a protobuf message a receiver may read as a string, each (its path of
    field numbers, `2.2.1`, "" for the message itself, and its bytes), in the order
    written: every length-delimited field, and the fields of each that parses as a message.
    Such a field, and the message itself, is given whole only where it can be a string's
    text too (UTF-8 without control characters but tab and line ends: an embedded
    message's tags and lengths rarely are), so that a field is not read once more for each
    message around it (an inline image in a Part in a Content in the request). Raises
    Unreadable past MAX_DEPTH."""
    view = memoryview(data)
    top = fields(view)
    if not top or _text(view):
        yield "", data
    if not top:
        return
    stack: list[tuple[str, memoryview, list[tuple[int, int, int]], int]] = [("", view, top, 0)]
    while stack:
        prefix, buf, found, i = stack.pop()
        if i >= len(found):
            continue
        number, start, end = found[i]
        stack.append((prefix, buf, found, i + 1))
        path = f"{prefix}{number}"
        content = buf[start:end]
        inner = fields(content) if content else None
        if not inner or _text(content):
            yield path, bytes(content)
        if inner:
            if len(stack) >= MAX_DEPTH:
                raise Unreadable(f"a protobuf message nests deeper than {MAX_DEPTH}, which protobuf's parsers refuse")
            stack.append((f"{path}.", content, inner, 0))


# -- an error in gRPC's shape --------------------------------------------------------------

# An HTTP status as the gRPC status Google's APIs give for it (google.rpc.Code's mapping);
# any other is UNKNOWN (2). A gRPC client reads no HTTP status but 200: grpcio turns a 400
# into INTERNAL, "Received http2 header with status: 400", and drops the body that said why.
_STATUS = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 413: 8, 426: 9, 429: 8, 499: 1, 500: 13, 501: 12, 502: 14,
           503: 14, 504: 4}  # fmt: skip
# What grpc-message keeps as it is: printable ASCII but "%" (PROTOCOL-HTTP2.md, "Status-Message")
_KEPT = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "%")


def error_headers(message: str, http_status: int) -> dict[str, str]:
    """The headers of a gRPC "Trailers-Only" answer (HTTP 200, no body: its status in
    its only headers) that says message, with the gRPC status for http_status: what a
    gRPC client (grpcio, grpc-web) shows as the call's error."""
    return {"grpc-status": str(_STATUS.get(http_status, 2)), "grpc-message": quote(message, safe=_KEPT)}
