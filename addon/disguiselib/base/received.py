"""A request body handed over by its only holder (sans I/O): masking lets its bytes go
once it has decoded them (base/masking.py, worker.py)."""

from __future__ import annotations


class Received:
    """A request body handed over by its only holder (the masking worker's streamed body,
    still the bytearray it was gathered in: no copy of it is made): masking lets its bytes
    go once it is decoded (a 200 MB body: once more the body at every step after). Strict
    UTF-8 decodes one way only, so the text encodes back to exactly those bytes: they are
    made again only for what sends the body on as it came (nothing masked, or a refusal
    that may fail open), and not at all once masking changed it (release)."""

    __slots__ = ("_raw", "_text")

    def __init__(self, raw: bytes | bytearray) -> None:
        self._raw: bytes | bytearray | None = raw
        self._text: str | None = None

    def text(self) -> str:
        """The body decoded, its bytes let go (raises UnicodeDecodeError, keeping them)."""
        assert self._raw is not None
        self._text = self._raw.decode("utf-8")
        self._raw = None
        return self._text

    def bytes(self) -> bytes | None:
        """The body's bytes as they came: held, or made again from its text (then held,
        the text no longer); None once released."""
        if self._raw is None:
            if self._text is None:
                return None
            self._raw, self._text = self._text.encode("utf-8"), None
        elif type(self._raw) is not bytes:
            self._raw = bytes(self._raw)
        return self._raw  # type: ignore[return-value] # bytes: made so above

    def release(self) -> None:
        """Masking changed the body: what came is not sent on, and is let go."""
        self._raw = self._text = None


def as_received(raw: bytes | Received) -> bytes | None:
    """raw's bytes as they came (Received.bytes)."""
    return raw.bytes() if isinstance(raw, Received) else raw
