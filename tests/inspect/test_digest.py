"""The masked body's SHA-256 the capture keeps (inspect/digest.py): made once, in its
thread once the request has left or by its first reader, who waits for one under way.
How every reader of a kept side reads it: tests/inspect/test_record.py."""

from __future__ import annotations

from disguiselib.inspect import digest, record


def _slow_sha(monkeypatch) -> tuple:
    """digest's sha256 made to wait for `go` and to note the thread each call ran in."""
    import hashlib
    import threading
    import types

    go, calls = threading.Event(), []

    def sha256(data: bytes = b""):
        calls.append(threading.current_thread().name)
        go.wait(30)
        return hashlib.sha256(data)

    monkeypatch.setattr(digest, "hashlib", types.SimpleNamespace(sha256=sha256))
    return go, calls


def test_a_digest_is_made_once_in_its_thread_and_a_reader_meanwhile_waits_for_it(monkeypatch) -> None:
    import hashlib
    import threading

    go, calls = _slow_sha(monkeypatch)
    body = b"y" * (digest.DIGEST_ON_LOOP + 1)
    sides = record.Side(upstream_request_sha256=digest.Digest(body))
    digest.digest_later(sides)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(sides["upstream_request_sha256"]))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive() and got == []  # waits for the one under way, makes none of its own
    go.set()
    reader.join(30)
    assert got == [hashlib.sha256(body).hexdigest()] and sides["upstream_request_sha256"] == got[0]
    assert len(calls) == 1 and calls[0].startswith("disguise-digest")
    digest.digest_later(sides)  # made: nothing more
    small = record.Side(d=digest.Digest(b"short"))
    digest.digest_later(small)  # a short body at once, where it is asked
    assert calls[1:] == [threading.current_thread().name] and small["d"] == hashlib.sha256(b"short").hexdigest()
