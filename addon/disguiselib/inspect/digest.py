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

# A conversation's next turn is the masked body of the turn before up to where it was cut,
# and its new messages (turns.py). SHA-256 reads a body in order, so its state after the
# first n bytes of the turn before is its state after the first n bytes of the next turn:
# a digest keeps its states at the places a next turn may continue its body (its marks),
# and the next turn's is made from there, only its new bytes read (0.5 ms a 1 MB body). The
# last RECENT such bodies are kept with their states (a next turn names the very bytes
# object it continues: the turns' memory holds it too), newest last.
RECENT = 2
_recent: list[tuple[bytes, dict[int, object]]] = []


def _sha256(body: bytes, marks: tuple[int, ...], shared: tuple[bytes, int] | None) -> str:
    """body's SHA-256 (hex), from the state of the turn before's body at shared's place
    where it is kept and body begins with those bytes; its states at marks kept."""
    if not marks and shared is None:
        return hashlib.sha256(body).hexdigest()
    h, at, states = None, 0, {}
    if shared is not None:
        before, n = shared
        for b, kept in list(_recent):
            if b is before and n in kept and n <= len(body) and body.startswith(memoryview(b)[:n]):
                h, at = kept[n].copy(), n  # type: ignore[attr-defined]
                states = {m: s for m, s in kept.items() if m <= n}  # (the same bytes before them)
                break
    if h is None:
        h = hashlib.sha256()
    view = memoryview(body)
    for m in sorted(m for m in set(marks) if at < m <= len(body)):
        h.update(view[at:m])
        states[m], at = h.copy(), m
    h.update(view[at:])
    if marks:
        _recent[:] = [*(e for e in _recent if e[0] is not body), (body, states)][-RECENT:]
    return h.hexdigest()


class Digest:
    """A body's SHA-256, its hex string made once (hexdigest), whoever asks first: the
    digest's thread (later) or a reader. Held in a Side, which reads it as the string.
    marks, shared: a request's places a next turn may continue it at, and what a next
    turn shares with the turn before (the turn before's body, how many first bytes):
    see RECENT."""

    __slots__ = ("_body", "_hex", "_lock", "_later", "_marks", "_shared")

    def __init__(
        self, body: bytes | None, marks: tuple[int, ...] = (), shared: tuple[bytes, int] | None = None
    ) -> None:
        self._body = body or b""
        self._hex: str | None = None
        self._lock = threading.Lock()
        self._later = False
        self._marks, self._shared = marks, shared

    def hexdigest(self) -> str:
        with self._lock:  # (a reader waits for the thread's: hashlib lets the GIL go while it works)
            hexed = self._hex
            if hexed is None:
                hexed = self._hex = _sha256(self._body, self._marks, self._shared)
                self._body, self._shared = b"", None  # (let go)
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
