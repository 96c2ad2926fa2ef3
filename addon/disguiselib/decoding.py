"""Incremental Content-Encoding decoders for streamed responses.

mitmproxy hands a stream callable the bytes *before* content decoding; when upstream
ignores our `accept-encoding: identity`, the SSE arrives as gzip/br/zstd fragments and
must be decoded here, piece by piece, before it can be reversed.
"""

from __future__ import annotations

import zlib
from typing import Protocol

from .errors import StreamError


class Decoder(Protocol):
    def decompress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Zlib:
    def __init__(self, wbits: int) -> None:
        self._d = zlib.decompressobj(wbits)

    def decompress(self, data: bytes) -> bytes:
        return self._d.decompress(data)

    def flush(self) -> bytes:
        out = self._d.flush()
        if not self._d.eof:
            raise StreamError("compressed stream ended before its end marker")
        return out


class _Brotli:
    def __init__(self) -> None:
        import brotli

        self._d = brotli.Decompressor()

    def decompress(self, data: bytes) -> bytes:
        return self._d.process(data)

    def flush(self) -> bytes:
        return b""


class _Zstd:
    def __init__(self) -> None:
        try:
            import zstandard

            self._d = zstandard.ZstdDecompressor().decompressobj()
        except ImportError:  # mitmproxy 12 on Python 3.12 ships backports.zstd instead
            try:
                from compression import zstd  # type: ignore[import-not-found]
            except ImportError:
                from backports import zstd  # type: ignore[import-not-found,no-redef]
            self._d = zstd.ZstdDecompressor()

    def decompress(self, data: bytes) -> bytes:
        return self._d.decompress(data)

    def flush(self) -> bytes:
        return b""


def decoder_for(encoding: str) -> Decoder | None:
    """A decoder for a Content-Encoding value; None for identity. Raises StreamError
    for an encoding it cannot decode (the stream must then not reach the client)."""
    e = encoding.strip().lower()
    if e in ("", "identity"):
        return None
    if e in ("gzip", "x-gzip"):
        return _Zlib(16 + zlib.MAX_WBITS)
    if e == "deflate":
        return _Zlib(zlib.MAX_WBITS)
    if e == "br":
        return _Brotli()
    if e == "zstd":
        return _Zstd()
    raise StreamError(f"cannot decode a response with content-encoding {encoding!r}")
