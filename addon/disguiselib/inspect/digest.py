"""The masked body's SHA-256 the capture keeps, made off the request's way (sans I/O).

`Digest` is held in a kept side (record.Side, which reads it as its hex string)."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

# The masked body's SHA-256 (the capture's `upstream_request_sha256`) is read only by
# client replay and by whatever copies the flow (mitmproxy saving it, `flow.copy()`): it
# is not made on the request's way upstream (0.5 ms a 1 MB body, in the thread that masked
# it or on the event loop), but in a thread of its own once the request has left
# (Digest.later), or by its first reader, who waits for one under way. A body under
# DIGEST_ON_LOOP bytes is hashed where the request is found to have left (some 30 us).
DIGEST_ON_LOOP = 64 << 10
_digests: ThreadPoolExecutor | None = None


class Digest:
    """A body's SHA-256, its hex string made once (hexdigest), whoever asks first: the
    digest's thread (later) or a reader. Held in a Side, which reads it as the string."""

    __slots__ = ("_body", "_hex", "_lock", "_later")

    def __init__(self, body: bytes | None) -> None:
        self._body = body or b""
        self._hex: str | None = None
        self._lock = threading.Lock()
        self._later = False

    def hexdigest(self) -> str:
        with self._lock:  # (a reader waits for the thread's: hashlib lets the GIL go while it works)
            hexed = self._hex
            if hexed is None:
                hexed = self._hex = hashlib.sha256(self._body).hexdigest()
                self._body = b""  # (let go)
            return hexed

    def later(self) -> None:
        """Made now: in the digest's thread (once), a short body here. Never raises (a
        digest its thread cannot make is made by its first reader)."""
        global _digests
        if self._later or self._hex is not None:
            return
        self._later = True
        if len(self._body) < DIGEST_ON_LOOP:
            self.hexdigest()
            return
        try:
            if _digests is None:
                _digests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="disguise-digest")
            _digests.submit(self.hexdigest)
        except RuntimeError:  # (the interpreter is shutting down)
            pass


def digest_later(sides: object) -> None:
    """The request has left (or never will): sides' Digests (a record.Side's values) made
    in the background."""
    if isinstance(sides, dict):
        for v in dict.values(sides):
            if type(v) is Digest:
                v.later()
