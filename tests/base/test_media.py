"""Media in request bodies: MIME classes, base64 and data: URLs of text decoded and
encoded again in their own style."""

from __future__ import annotations

import base64
import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.media import DATA_URL_CODEC, base64_codec, data_url_class, media_class
from disguiselib.errors import MaskError


@pytest.mark.parametrize(
    ("mime", "cls"),
    [
        ("text/plain", "text"), ("text/csv; charset=utf-8", "text"), ("application/json", "text"),
        ("application/ld+json", "text"), ("image/svg+xml", "text"), ("application/x-ndjson", "text"),
        ("text/markdown", "text"), ("application/xml", "text"), ("application/x-yaml", "text"),
        ("image/png", "binary"), ("audio/wav", "binary"), ("video/mp4", "binary"), ("application/pdf", "binary"),
        ("application/octet-stream", "binary"), ("application/vnd.ms-excel", "binary"), ("image/csv", "binary"),
        ("application/x-foo", "unknown"), ("", "unknown"), ("wav", "unknown"),
    ],
)  # fmt: skip
def test_media_class(mime: str, cls: str) -> None:
    assert media_class(mime) == cls


def upper(t: str) -> str:
    return t.replace("acme", "ACME")


@given(st.text(max_size=40), st.booleans(), st.booleans())
def test_base64_text_round_trips_in_its_own_style(text: str, urlsafe: bool, strip: bool) -> None:
    raw = ("acme " + text).encode("utf-8", "surrogatepass")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    b64 = (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()
    if strip:
        b64 = b64.rstrip("=")
    codec = base64_codec("text/plain")
    out = codec.transform(b64, upper)
    assert ("-" in out or "_" in out) <= urlsafe or ("-" in b64 or "_" in b64)
    padded = out + "=" * (-len(out) % 4)
    dec = (base64.urlsafe_b64decode(padded) if urlsafe else base64.b64decode(padded)).decode()
    assert dec == upper(raw.decode())
    if strip and not b64.endswith("="):
        assert not out.endswith("=") or len(b64) % 4 == 0


def test_charset_and_byte_order_mark_are_kept() -> None:
    raw = codecs.BOM_UTF16_LE + "hello acme".encode("utf-16-le")
    out = base64_codec("text/plain; charset=utf-16").transform(base64.b64encode(raw).decode(), upper)
    assert base64.b64decode(out) == codecs.BOM_UTF16_LE + "hello ACME".encode("utf-16-le")
    latin = "café acme".encode("latin-1")
    out = base64_codec("text/plain; charset=latin-1").transform(base64.b64encode(latin).decode(), upper)
    assert base64.b64decode(out) == "café ACME".encode("latin-1")


def test_text_media_that_does_not_decode_is_refused_and_binary_passes() -> None:
    with pytest.raises(MaskError):
        base64_codec("text/plain").transform(base64.b64encode(b"\xc3\x28 acme").decode(), upper)
    binary = base64.b64encode(b"\x89PNG\r\n\x1a\nacme\xff").decode()
    assert base64_codec("").transform(binary, upper) == binary  # unknown type, binary bytes
    assert base64_codec("").transform("not base64: acme", upper) == "not base64: ACME"  # read as it is


def test_data_urls() -> None:
    b64 = "data:text/plain;base64," + base64.b64encode(b"hi acme").decode()
    assert base64.b64decode(DATA_URL_CODEC.transform(b64, upper).split(",", 1)[1]) == b"hi ACME"
    pct = "data:text/plain;charset=utf-8,hi%20acme%20%C3%BC"
    assert DATA_URL_CODEC.transform(pct, upper) == "data:text/plain;charset=utf-8,hi%20ACME%20%C3%BC"
    assert DATA_URL_CODEC.transform("https://acme.example/x", upper) == "https://ACME.example/x"
    assert data_url_class("data:image/png;base64,AAAA") == "binary"
    assert data_url_class("data:,hello") == "text"
    assert data_url_class("https://x") == ""
