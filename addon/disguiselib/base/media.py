"""Media in request bodies: base64 payloads and `data:` URLs, told by their MIME type
(sans I/O).

The providers decode a media payload by its MIME type. A binary one (an image, audio,
a PDF) is read by the model as what it is; its bytes cannot be masked and pass as they
came. A text one (`text/*`, JSON, XML, CSV, Markdown, YAML, source code) is read as
text, so an original in it reaches the model exactly as one in a text field would:
such a payload is decoded, masked as text (JSON as JSON) and encoded again in its own
style (alphabet, padding, charset, byte-order mark). A MIME type that is neither, or
none at all, is told by the bytes: text if they decode as its charset (UTF-8 when it
names none), binary otherwise.

Gemini `inlineData`, Anthropic document `source` (`type: base64`), OpenAI Chat `file`
parts' `file_data` and Responses `input_file` (data URLs), image URLs: see each API's
table.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote_to_bytes

from ..errors import MaskError

# Structured-syntax suffixes and subtypes that are text (RFC 6839, IANA's registry).
_TEXT_SUBTYPES = re.compile(
    r"(?:[^;]*\+(?:json|xml|yaml)|json|jsonl|x-ndjson|ndjson|json-seq|ld\+json|xml|yaml|x-yaml|csv|x-csv"
    r"|markdown|x-markdown|javascript|x-javascript|ecmascript|typescript|x-typescript|sql|x-sql|x-sh"
    r"|x-shellscript|x-python|x-python-code|x-ruby|x-perl|x-php|x-httpd-php|rtf|x-tex|x-latex|toml|x-toml"
    r"|graphql|x-www-form-urlencoded|x-subrip|x-rst|x-ipynb\+json|x-empty)\Z"
)
_BINARY_TOPS = frozenset({"image", "audio", "video", "font", "model"})
_BINARY_SUBTYPES = re.compile(
    r"(?:pdf|octet-stream|zip|gzip|x-gzip|x-tar|x-7z-compressed|x-bzip2|x-xz|zstd|x-rar-compressed|vnd\..*"
    r"|msword|x-msdownload|wasm|x-protobuf|protobuf|x-parquet|vnd\.apache\.parquet|x-sqlite3|ogg|mp4"
    r"|x-shockwave-flash|java-archive|x-java-archive|x-iso9660-image|x-apple-diskimage|epub\+zip)\Z"
)


def media_class(mime: str) -> str:
    """ "text", "binary" or "unknown" for a MIME type (parameters ignored)."""
    m = mime.split(";", 1)[0].strip().lower()
    top, _, sub = m.partition("/")
    if top == "text":
        return "text"
    if sub.endswith(("+json", "+xml", "+yaml")):  # image/svg+xml is text
        return "text"
    if top == "application" and _TEXT_SUBTYPES.match(sub):  # application/json, .../csv, ...
        return "text"
    if top in _BINARY_TOPS or (top == "application" and _BINARY_SUBTYPES.match(sub)):
        return "binary"
    return "unknown"


def _charset(mime: str) -> str | None:
    for param in mime.split(";")[1:]:
        k, _, v = param.partition("=")
        if k.strip().lower() == "charset" and v.strip():
            return v.strip().strip('"')
    return None


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(data: bytes, charset: str | None) -> tuple[str, bytes, str] | None:
    """(text, byte-order mark, codec) of bytes in a charset (a BOM wins, as receivers
    read it; UTF-8 without either); None when they do not decode."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec), bom, codec
            except UnicodeDecodeError:
                return None
    codec = charset or "utf-8"
    try:
        return data.decode(codec), b"", codec
    except LookupError:  # a charset Python does not know: read as UTF-8
        codec = "utf-8"
        try:
            return data.decode(codec), b"", codec
        except UnicodeDecodeError:
            return None
    except UnicodeDecodeError:
        return None


# -- base64 ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _B64Style:
    urlsafe: bool
    padded: bool


def _b64decode(s: str) -> tuple[bytes, _B64Style] | None:
    t = s.strip()
    if not t or not t.isascii():
        return None
    urlsafe = "-" in t or "_" in t
    body = t.replace("\n", "").replace("\r", "")
    # padded: as standard base64 writes it (a length that needs none counts as padded)
    padded = body.endswith("=") or len(body) % 4 == 0
    body += "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(body, altchars=b"-_" if urlsafe else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw, _B64Style(urlsafe, padded)


def _b64encode(raw: bytes, style: _B64Style) -> str:
    out = base64.urlsafe_b64encode(raw) if style.urlsafe else base64.b64encode(raw)
    s = out.decode("ascii")
    return s if style.padded else s.rstrip("=")


class Codec(ABC):
    """How a string holds text: decode() gives the text (None: binary, passes as it
    came), encode() puts a changed text back in the string's own style."""

    kind = "media-text"

    @abstractmethod
    def decode(self, value: str) -> tuple[str, object] | None: ...

    @abstractmethod
    def encode(self, text: str, state: object) -> str: ...

    def transform(self, value: str, fn: Callable[[str], str]) -> str:
        """value with its text passed through fn (value itself when nothing changed or
        the payload is binary). Raises MaskError for text media that cannot be read."""
        got = self.decode(value)
        if got is None:
            return value
        text, state = got
        new = fn(text)
        return value if new == text else self.encode(new, state)

    def is_json(self) -> bool:
        return False

    def decoded(self, state: object) -> bool:
        """Did decode() find the value encoded (not just read it as the text it is)?"""
        return state is not None


@dataclass(frozen=True)
class _TextState:
    style: _B64Style | None  # None: the value was not base64 and is read as it is
    bom: bytes
    codec: str


class Base64(Codec):
    """A base64 payload whose MIME type is text or unknown (see the module docstring)."""

    def __init__(self, mime: str) -> None:
        self.mime = mime
        self.cls = media_class(mime)
        self.charset = _charset(mime)

    def __repr__(self) -> str:
        return f"Base64({self.mime!r})"

    def is_json(self) -> bool:
        return "json" in self.mime.split(";", 1)[0].lower()

    def decoded(self, state: object) -> bool:
        return isinstance(state, _TextState) and state.style is not None

    def decode(self, value: str) -> tuple[str, object] | None:
        got = _b64decode(value)
        if got is None:
            # Not base64: the provider refuses it or reads it as it is; masked as text.
            return value, _TextState(None, b"", "")
        raw, style = got
        text = decode_text(raw, self.charset)
        if text is None:
            if self.cls == "text":
                raise MaskError("text media whose bytes are not text in its charset")  # its type unquoted: client text
            return None  # unknown type, binary bytes
        return text[0], _TextState(style, text[1], text[2])

    def encode(self, text: str, state: object) -> str:
        assert isinstance(state, _TextState)
        if state.style is None:
            return text
        try:
            raw = state.bom + text.encode(state.codec)
        except UnicodeEncodeError as e:
            raise MaskError("masked text media cannot be encoded back in its charset") from e
        return _b64encode(raw, state.style)


_DATA_URL = re.compile(r"data:([^,]*),", re.IGNORECASE | re.DOTALL)


class DataUrl(Codec):
    """A `data:` URL (RFC 2397) whose MIME type is text or unknown: its payload, base64
    or percent-encoded, decoded; the header kept as it came."""

    def decode(self, value: str) -> tuple[str, object] | None:
        m = _DATA_URL.match(value)
        if m is None:
            return value, None
        header = m.group(1)
        params = header.split(";")
        is_b64 = params[-1].strip().lower() == "base64"
        mime = ";".join(params[:-1] if is_b64 else params) or "text/plain;charset=US-ASCII"
        payload = value[m.end() :]
        if is_b64:
            inner = Base64(mime)
            got = inner.decode(payload)
            if got is None:
                return None
            return got[0], (value[: m.end()], inner, got[1])
        text = decode_text(unquote_to_bytes(payload), _charset(mime))
        if text is None:
            if media_class(mime) == "text":
                raise MaskError("a data: URL of a text type whose bytes are not text")
            return None
        return text[0], (value[: m.end()], None, text)

    def encode(self, text: str, state: object) -> str:
        if state is None:
            return text
        assert isinstance(state, tuple)
        head: str = state[0]
        inner: Base64 | None = state[1]
        if inner is not None:
            return head + inner.encode(text, state[2])
        _, bom, codec = state[2]
        return head + quote(bom + text.encode(codec), safe="/:;,=?&@+$!*'()~-._")


DATA_URL_CODEC = DataUrl()


@functools.lru_cache(maxsize=256)
def base64_codec(mime: str) -> Base64:
    return Base64(mime)


def data_url_class(value: str) -> str:
    """ "binary", "text" or "unknown" for a data: URL by its MIME type; "" for a value
    that is not a data: URL."""
    m = _DATA_URL.match(value[:512])
    if m is None:
        return ""
    params = m.group(1).split(";")
    if params and params[-1].strip().lower() == "base64":
        params = params[:-1]
    return media_class(";".join(params)) if params and params[0] else "text"
