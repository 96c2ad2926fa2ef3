"""Request bodies read the way their receiver reads them (sans I/O): by content type,
form-urlencoded, multipart (each part by its own content type and charset), JSON lines,
JSON with its escapes decoded, any text in its charset or by its byte-order mark, gRPC
and protobuf (wire/grpc.py: each message, each string field; a part that cannot be read
is a Reading that says so, `unread`).

The unknown-endpoint scan reads a body with `readings` (every field of it unknown to
any table: GENERIC); the OpenAI Batch upload (batch.py) finds its file part with
`split_multipart`. Content-Encoding is undone before (the adapter's decoding).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import quopri
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.message import Message
from email.utils import collapse_rfc2231_value
from urllib.parse import parse_qsl, unquote

from ..wire import grpc
from ..wire.jsonspan import Rule
from .fields import GENERIC, loads
from .media import decode_text

MAX_DEPTH = 4  # multipart inside multipart inside ...: deeper than this is read as text


@dataclass(frozen=True)
class Reading:
    """One thing in a body a receiver reads: a JSON document (doc, read with rule) or,
    when doc is None, a text; or, with `unread`, why something there a receiver reads
    could not be (a gRPC message in a coding not read here): it cannot be shown clean."""

    where: str
    text: str
    doc: object = None
    rule: Rule = GENERIC
    unread: str = ""


def _params(value: str) -> tuple[str, dict[str, str]]:
    """`form-data; name="file"; filename="a.jsonl"` -> ("form-data", {name, filename})."""
    head, _, rest = value.partition(";")
    out: dict[str, str] = {}
    for m in re.finditer(r'\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)\s*;?', rest):
        k, v = m.group(1).lower(), m.group(2).strip()
        if v.startswith('"') and v.endswith('"') and len(v) >= 2:
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        out[k] = v
    return head.strip().lower(), out


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def charset(content_type: str) -> str | None:
    return _params(content_type)[1].get("charset") or None


def utf8_read(content_type: str) -> bool:
    """Its body is read as UTF-8 whatever it holds: no charset named, or UTF-8's (by any
    of its names): nothing to compare (reads_otherwise), nor any copy of the body made."""
    cs = charset(content_type)
    try:
        return cs is None or codecs.lookup(cs).name == "utf-8"
    except LookupError:
        return False


def reads_otherwise(body: bytes, content_type: str) -> str | None:
    """Why a JSON body, which disguise reads as UTF-8 (RFC 8259), may read otherwise to
    its receiver: the charset its Content-Type names decodes it to another text (aiohttp's
    `request.json()` decodes by it: `charset=utf-7` makes `+AEE-cme` "Acme"), or is one
    this Python does not know as a text encoding. None when it names none, UTF-8, or one
    that reads the body the same (`iso-8859-1` over ASCII), or one the body does not
    decode in (such a receiver refuses it: and the masker a body that is not UTF-8)."""
    cs = charset(content_type)
    if cs is None:
        return None
    try:  # (LookupError: a name no codec has, or one of no text encoding, rot13, base64)
        name = codecs.lookup(cs).name
        same = name == "utf-8" or body.decode(name) == body.decode("utf-8")
    except LookupError:
        return "its Content-Type names a charset disguise does not know as a text encoding; send it as UTF-8"
    except ValueError:  # (UnicodeError: it does not decode so)
        return None
    if same:
        return None
    return (f"its Content-Type says charset={name}, in which its body reads otherwise than as UTF-8, "
            "the text disguise masks; send it as UTF-8")  # fmt: skip


def boundary(content_type: str) -> bytes | None:
    b = _params(content_type)[1].get("boundary")
    return b.encode("latin-1", "replace") if b else None


@dataclass
class Part:
    """One part of a multipart body: offsets into the body, headers (lower-case names)."""

    start: int  # where its headers begin
    body_start: int
    body_end: int
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def disposition(self) -> dict[str, str]:
        return _params(self.headers.get("content-disposition", ""))[1]

    @property
    def name(self) -> str | None:
        return self.disposition.get("name")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


_BLANK = re.compile(rb"\r?\n\r?\n")


def split_multipart(body: bytes, bound: bytes) -> list[Part] | None:
    """The parts of a multipart body (RFC 2046 §5.1.1; RFC 7578), with their offsets;
    None when the body holds no delimiter. A delimiter is `--boundary` at the start of
    a line; a part's content ends before the line break that precedes the next one (a
    last part without a close delimiter runs to the end: a receiver may read it)."""
    delim = b"--" + bound
    starts = []
    pos = 0
    while (i := body.find(delim, pos)) >= 0:
        if i == 0 or body[i - 1 : i] == b"\n":
            starts.append(i)
        pos = i + len(delim)
    if not starts:
        return None
    parts: list[Part] = []
    for n, a in enumerate(starts):
        after = a + len(delim)
        if body[after : after + 2] == b"--":
            break  # the close delimiter
        nl = body.find(b"\n", after)
        if nl < 0:
            break
        hs = nl + 1
        nxt = starts[n + 1] if n + 1 < len(starts) else len(body)
        if body[hs : hs + 2] == b"\r\n" or body[hs : hs + 1] == b"\n":  # no headers
            he, bs = hs, hs + (2 if body[hs : hs + 1] == b"\r" else 1)
        else:
            m = _BLANK.search(body, hs, nxt)
            he, bs = (m.start(), m.end()) if m is not None else (nxt, nxt)
        end = nxt
        if n + 1 < len(starts):
            end -= 2 if body[nxt - 2 : nxt] == b"\r\n" else 1
        headers: dict[str, str] = {}
        for line in body[hs:he].decode("utf-8", "replace").splitlines():
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        parts.append(Part(a, bs, max(end, bs), headers))
    return parts


def parameters(headers: dict[str, str], where: str) -> Iterator[Reading]:
    """Each parameter of a part's headers as its receiver decodes it: RFC 2231's extended
    form (`filename*=UTF-8''Acme%20Corp.txt`, and continued, `filename*0*=`), RFC 2047's
    encoded words (`=?UTF-8?B?...?=`), percent-escapes; the headers as they were written
    are read with the body as sent. Python's email package reads them (what a receiver
    built on it reads, and the forms the others decode)."""
    for name, value in headers.items():
        m = Message()
        try:
            m[name] = value
            params = m.get_params(header=name) or []
        except Exception:  # noqa: BLE001 - a header it cannot read: read as sent only
            continue
        for k, v in params[1:]:  # (the first: the value before the parameters, `form-data`)
            text = collapse_rfc2231_value(v)
            try:
                words = str(make_header(decode_header(text)))
            except Exception:  # noqa: BLE001 - an encoded word it cannot decode: as it is
                words = text
            for t in dict.fromkeys((text, words, unquote(text, errors="replace"))):
                if t:
                    yield Reading(f"{where} header {name!r} parameter {k!r}", t)


def _wide(data: bytes, cs: str | None) -> tuple[str, str] | None:
    """(codec, text) of a body in UTF-16 or UTF-32 without a byte-order mark or a
    charset, told by where its first NUL bytes are (RFC 4627 §3, as Python's
    `json.loads(bytes)` reads it: json.detect_encoding): such bytes also decode as UTF-8,
    with a NUL between the letters, where no original is found. None for any other body."""
    if cs is not None or len(data) < 4 or b"\x00" not in data[:4]:
        return None
    codec = json.detect_encoding(data)
    if codec not in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):  # "utf-16": a BOM, read by _text
        return None
    try:
        return codec, data.decode(codec)
    except UnicodeDecodeError:
        return None


def _text(data: bytes, cs: str | None) -> str:
    got = decode_text(data, cs)
    return got[0] if got is not None else data.decode("utf-8", "replace")


def readings(body: bytes, content_type: str = "", where: str = "body", depth: int = 0) -> Iterator[Reading]:
    """Everything in a body a receiver may read, each as a JSON document or a text. A
    body that is not one JSON document is also read whole as UTF-8 text, as it was sent
    (multipart headers, preamble and epilogue included)."""
    for kind in _listed(content_type):  # (Content-Type twice, or listing several: a receiver may take any)
        yield from _one_type(body, kind, where, depth)


def _one_type(body: bytes, content_type: str, where: str, depth: int) -> Iterator[Reading]:
    mt = media_type(content_type)
    if mt.startswith("multipart/") and depth < MAX_DEPTH:
        bound = boundary(content_type)
        parts = split_multipart(body, bound) if bound else None
        if parts is not None:
            for i, p in enumerate(parts):
                label = f"{where} part {p.name!r}" if p.name is not None else f"{where} part {i + 1}"
                data = body[p.body_start : p.body_end]
                cte = p.headers.get("content-transfer-encoding", "").strip().lower()
                try:
                    if cte == "base64":
                        data = base64.b64decode(re.sub(rb"\s+", b"", data))
                    elif cte == "quoted-printable":
                        data = quopri.decodestring(data)
                except (binascii.Error, ValueError):
                    pass  # read as it came
                yield from parameters(p.headers, label)
                yield from readings(data, p.content_type or "text/plain", label, depth + 1)
            if depth == 0:
                yield Reading(f"{where} (as sent)", body.decode("utf-8", "replace"))
            return
    coded = grpc.kind(mt)
    if coded is not None:
        yield from _grpc_readings(body, coded, where)
        yield Reading(f"{where} (as sent)", body.decode("utf-8", "replace"))
        return
    text = _text(body, charset(content_type))
    wide = _wide(body, charset(content_type))
    if wide is not None:  # also as a receiver that tells UTF-16/32 by its NUL bytes reads it
        yield from _text_readings(wide[1], f"{where} (read as {wide[0]})", depth + 1)
    if mt == "application/x-www-form-urlencoded" or (mt in ("", "text/plain") and _FORMISH.match(text)):
        yield Reading(f"{where} (as sent)", text)
        for i, (k, v) in enumerate(parse_qsl(text, keep_blank_values=True, encoding=charset(content_type) or "utf-8",
                                             errors="replace")):  # fmt: skip
            yield Reading(f"{where} form field {i + 1} name", k)
            yield from _text_readings(v, f"{where} form field {i + 1}", 1)
        return
    yield from _text_readings(text, where, depth)


_BOM_BYTES = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _string(data: bytes) -> str:
    """A protobuf string field's text: UTF-8 as protobuf says (at once: a call may have
    many), else as any text is read (_text: a byte-order mark, UTF-8 with replacements)."""
    if not data.startswith(_BOM_BYTES):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return _text(data, None)


# A comma outside quotes: where a Content-Type given twice (joined, as mitmproxy's
# Headers.get joins them) or listing several divides (grpc-go takes the header that says
# application/grpc, wherever it is)
_COMMA = re.compile(r',(?=(?:[^"]*"[^"]*")*[^"]*\Z)')


def _listed(content_type: str) -> list[str]:
    """The Content-Type as it is, then each it lists (an unquoted comma in a boundary
    splits it wrongly: the whole is read too)."""
    if "," not in content_type:
        return [content_type]
    return list(dict.fromkeys([content_type, *(t.strip() for t in _COMMA.split(content_type) if t.strip())]))


def _grpc_readings(body: bytes, coded: str, where: str) -> Iterator[Reading]:
    """A gRPC body's messages (a protobuf body: its one message), each message's string
    fields (wire/grpc.strings: the message itself where it can be text, JSON under
    `application/grpc+json`) as one text, a field a line, and a field that holds JSON text
    as a document too; what cannot be read, a Reading `unread` that says why."""
    try:
        if coded == grpc.WEB_TEXT:
            body = grpc.unbase64(body)
        framed = coded != grpc.PROTOBUF
        msgs = grpc.messages(body) if framed else iter([(body, False)])
        for i, (data, trailers) in enumerate(msgs, 1):
            label = f"{where} message {i}" if framed else where
            if trailers:
                yield from _text_readings(_text(data, None), f"{label} (trailers)", 1)
                continue
            texts = []  # read as one text, a field a line: a reading each cost 25 us a field
            for path, content in grpc.strings(data):
                if path or framed:  # (a protobuf body whole: the body as sent, below)
                    text = _string(content)
                    texts.append(text)
                    if text.lstrip()[:1] in ("{", "["):  # JSON text in a field: read as a document too
                        yield from _text_readings(text, f"{label} field {path}" if path else label, 1)
            if texts:
                yield Reading(f"{label} (string fields)", "\n".join(texts))
    except grpc.Unreadable as e:
        yield Reading(where, "", unread=str(e))


_FORMISH = re.compile(r"\A[^\s=&]+=[^\s]*\Z")


def _text_readings(text: str, where: str, depth: int = 0) -> Iterator[Reading]:
    """A text as one JSON document (escapes decoded), or line by line the lines that are
    JSON (JSON lines: a batch file) and then the whole as text."""
    try:
        doc = loads(text)
    except (ValueError, RecursionError):
        doc = _NOT_JSON
    if doc is not _NOT_JSON:
        yield Reading(where, text, doc)
        return
    if "\n" in text:
        for n, line in enumerate(text.splitlines(), 1):
            if line.lstrip()[:1] in ("{", "["):
                try:
                    yield Reading(f"{where} line {n}", line, loads(line))
                except (ValueError, RecursionError):
                    pass  # read as text below
    yield Reading(f"{where} (as sent)" if depth == 0 else where, text)


_NOT_JSON = object()
