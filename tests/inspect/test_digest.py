"""The masked body's SHA-256 the capture keeps (inspect/digest.py): made once, in its
thread once the request has left or by its first reader, who waits for one under way.
How every reader of a kept side reads it: tests/inspect/test_record.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


class _Counting:
    """hashlib.sha256 objects that count the bytes they read (read[0])."""

    def __init__(self, read: list, h=None) -> None:
        import hashlib

        self.read, self.h = read, h if h is not None else hashlib.sha256()

    def update(self, b) -> None:
        self.read[0] += len(b)
        self.h.update(b)

    def copy(self):
        return _Counting(self.read, self.h.copy())

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def _counting(monkeypatch) -> list:
    import types

    read = [0]
    monkeypatch.setattr(digest, "hashlib", types.SimpleNamespace(sha256=lambda: _Counting(read)))
    monkeypatch.setattr(digest, "_recent", [])
    return read


def test_a_next_turns_digest_is_made_from_the_turn_befores_reading_only_its_new_bytes(monkeypatch) -> None:
    import hashlib

    read = _counting(monkeypatch)
    first = b"[" + b"x" * 100_000 + b"]"
    d1 = digest.Digest(first, (50_000, 100_001))
    assert d1.hexdigest() == hashlib.sha256(first).hexdigest() and read[0] == len(first)
    turn = first[:100_001] + b", new]"
    read[0] = 0
    d2 = digest.Digest(turn, (100_001, len(turn) - 1), (first, 100_001))
    assert d2.hexdigest() == hashlib.sha256(turn).hexdigest() and read[0] == len(turn) - 100_001
    # from an earlier place, and again from the newer one
    read[0] = 0
    edited = first[:50_000] + b"y" * 10
    assert digest.Digest(edited, (), (first, 50_000)).hexdigest() == hashlib.sha256(edited).hexdigest()
    assert read[0] == 10
    read[0] = 0
    third = turn[:-1] + b", more]"
    assert digest.Digest(third, (), (turn, len(turn) - 1)).hexdigest() == hashlib.sha256(third).hexdigest()
    assert read[0] == len(third) - (len(turn) - 1)
    # what it is not told to trust: read whole (another object, a place never marked, other bytes)
    for body, shared in ((turn, (bytes(bytearray(first)), 100_001)), (turn, (first, 100_000)), (b"z" + turn[1:], (first, 100_001))):
        read[0] = 0
        assert digest.Digest(body, (), shared).hexdigest() == hashlib.sha256(body).hexdigest()
        assert read[0] == len(body)
    assert len(digest._recent) <= digest.RECENT


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.lists(st.binary(max_size=40), min_size=3, max_size=3), st.data())
def test_a_digest_made_from_another_is_the_bodys_sha256(first: bytes, tails: list, data) -> None:
    """Bodies continuing others at their marks (next turns), at other places, from the
    same one twice, from one made from another: each digest is the body's SHA-256."""
    import hashlib

    marks = data.draw(st.lists(st.integers(0, len(first)), max_size=5))
    marks2 = data.draw(st.lists(st.integers(0, len(first) + 40), max_size=3))

    def at(places: list) -> int:
        return data.draw(st.sampled_from(places)) if places and data.draw(st.booleans()) else data.draw(st.integers(0, 300))

    def check(body: bytes, m: list, shared: tuple | None) -> None:
        assert digest.Digest(body, tuple(m), shared).hexdigest() == hashlib.sha256(body).hexdigest()

    digest._recent.clear()
    check(first, marks, None)
    n = at(marks)
    second = first[:n] + tails[0]
    check(second, marks2, (first, n))
    check(first[:n] + tails[1], (), (first, n))  # (the same turn before, from the same place again)
    check(tails[1] + first[n:], marks, (first, n))
    k = at(marks + marks2)
    check(second[:k] + tails[2], (), (second, k))
    check(first, (), (first, at(marks)))


def test_a_next_turn_cut_names_what_it_shares_with_the_turn_before(monkeypatch) -> None:
    """pipeline.Masked.shared of a next turn cut from the turn before: that turn's masked
    body (the very object the capture hashed) and how many of its first bytes the next
    turn's masked body begins with; the capture's digest of it reads only the rest."""
    import hashlib
    import json

    from disguiselib import pipeline
    from disguiselib.apis.registry import recognise
    from disguiselib.config import build_config

    cfg = build_config([], True, [])
    api = recognise("POST", "/v1/messages")
    msgs = [{"role": "user", "content": "a long file " * 8000 + " mail bob@corp.example.com"}]
    first = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}).encode()
    msgs += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "and carol@corp.example.com?"}]
    turn = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}).encode()
    hdrs = [("content-type", "application/json")]
    m1 = pipeline.mask_request(api, first, cfg, "/v1/messages", hdrs)
    m2 = pipeline.mask_request(api, turn, cfg, "/v1/messages", hdrs)
    assert isinstance(m1, pipeline.Masked) and m1.shared is None and m1.turn is not None
    assert isinstance(m2, pipeline.Masked) and m2.cut and m2.shared is not None
    before, n, raw, k = m2.shared  # (the masked bodies', and the client's: what the capture's side compares)
    assert before is m1.body and n > len(first) * 0.9 and m2.body.startswith(before[:n])
    assert raw is first and k > len(first) * 0.9 and turn.startswith(first[:k])
    assert b"carol@" not in m2.body
    read = _counting(monkeypatch)
    marks = tuple(c.masked for c in m1.turn.cuts)  # (mitm/outcome.keep: FlowRecord.digest_hint)
    assert n in marks
    assert digest.Digest(m1.body, marks).hexdigest() == hashlib.sha256(m1.body).hexdigest()
    read[0] = 0
    assert digest.Digest(m2.body, (), m2.shared[:2]).hexdigest() == hashlib.sha256(m2.body).hexdigest()
    assert read[0] == len(m2.body) - n


def test_a_body_made_from_another_keeps_only_the_states_their_bytes_share(monkeypatch) -> None:
    """The turn before's states at its places after the one a next turn continues it at
    are not the next turn's (other bytes stand there)."""
    import hashlib

    read = _counting(monkeypatch)
    first = bytes(range(100))
    digest.Digest(first, (10, 50)).hexdigest()
    second = first[:10] + b"X" * 60
    assert digest.Digest(second, (70,), (first, 10)).hexdigest() == hashlib.sha256(second).hexdigest()
    third = second[:50] + b"t"
    read[0] = 0
    assert digest.Digest(third, (), (second, 50)).hexdigest() == hashlib.sha256(third).hexdigest()
    assert read[0] == len(third)  # (50 is no place of second's: read whole)
    read[0] = 0
    fourth = second[:10] + b"u"
    assert digest.Digest(fourth, (), (second, 10)).hexdigest() == hashlib.sha256(fourth).hexdigest()
    assert read[0] == 1  # (10 is: first's state there, the same bytes before it)
