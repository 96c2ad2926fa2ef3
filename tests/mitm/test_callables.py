"""The stream callables mitmproxy calls per chunk (mitm/callables.py): they never raise,
never return b"" mid-stream, end with an explicit error when they cannot go on, and a
buffered body is masked whole or not sent."""

from __future__ import annotations

import pytest

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.errors import MaskError
from disguiselib.mitm.callables import Buffered, Refused, StreamCall
from strategies import PLACEHOLDERS, RULES

BODY = build_stream([("text", ["Zenith Labs and ", "[EMAIL_1]"])])


def call() -> StreamCall:
    return StreamCall(AnthropicStream(RULES.restorer(PLACEHOLDERS)))


def test_chunks_in_pieces_out_and_the_final_call_flushes_once() -> None:
    c = call()
    out: list[bytes] = []
    for i in range(0, len(BODY), 9):
        got = c(BODY[i : i + 9])
        assert isinstance(got, list) and all(got)  # never an empty piece
        out += got
    out += c(b"")
    assert c(b"") == []  # the final call can come twice
    assert read_stream(b"".join(out))[0][0]["text"] == "Acme Corp and bob@corp.example.com"
    assert not c.dead


def test_a_failure_inside_is_one_error_event_and_then_nothing(caplog) -> None:
    class Boom(AnthropicStream):
        def feed(self, data: bytes) -> bytes:
            raise KeyError("bob@corp.example.com")

    c = StreamCall(Boom(RULES.restorer({})))
    (err,) = c(b"data: x\n\n")
    assert err.startswith(b"event: error") and b"KeyError" in err and b"bob@" not in err
    assert c.dead and c(b"more") == [] and c(b"") == []
    assert "bob@" not in caplog.text


def test_a_disguise_error_inside_says_what_it_was() -> None:
    class Limit(AnthropicStream):
        def flush(self) -> bytes:
            raise MaskError("over the limit")

    c = StreamCall(Limit(RULES.restorer({})))
    assert c(b"") == [Limit(RULES.restorer({})).error_event("disguise: stream could not be reversed: over the limit")]


def test_refused_gives_its_error_once() -> None:
    r = Refused(b"error body")
    assert r.dead and r(b"upstream bytes") == [b"error body"] and r(b"more") == [] and r(b"") == []


def test_buffered_lets_nothing_through_until_the_end_then_the_work() -> None:
    b = Buffered(lambda raw: raw.upper(), lambda msg: b"ERR " + msg.encode(), limit=None)
    assert b(b"ab") == [] and b(b"cd") == [] and not b.finished
    assert b(b"") == [b"ABCD"] and b.finished and b.error is None
    assert b(b"late") == [] and b(b"") == []


@pytest.mark.parametrize("keep", [0, 3, 4, 100])
def test_buffered_notes_what_left_for_the_capture_within_keep(keep: int) -> None:
    """mitmproxy keeps nothing of a body it streamed: the callable notes what left, its
    bytes only when at most `keep` (inspector.request puts them on the flow)."""
    b = Buffered(lambda raw: raw.upper(), lambda msg: b"", limit=None, keep=keep)
    b(b"ab")
    assert b.sent is None and b.sent_size is None  # nothing has left yet
    b(b"cd")
    assert b(b"") == [b"ABCD"]
    assert b.sent_size == 4 and b.sent == (b"ABCD" if keep >= 4 else None)
    b.note_sent([b"AB", b"CD", b"E"])  # a body as the worker sends it back: pieces
    assert b.sent_size == 5 and b.sent == (b"ABCDE" if keep >= 5 else None)
    refused = Buffered(lambda raw: raw[9], lambda msg: b"E", limit=None, keep=100)  # type: ignore[misc]
    refused(b"x")
    assert refused(b"") == [b"E"] and refused.sent is None and refused.sent_size is None  # nothing of it left


def test_buffered_work_that_refuses_sends_on_error_instead() -> None:
    def refuse(raw: bytes) -> bytes:
        raise MaskError("cannot mask")

    b = Buffered(refuse, lambda msg: b"ERR " + msg.encode(), limit=None)
    b(b"x")
    assert b(b"") == [b"ERR cannot mask"] and b.error == "cannot mask"

    def bug(raw: bytes) -> bytes:
        raise KeyError("bob@corp.example.com")

    b = Buffered(bug, lambda msg: b"", limit=None)  # b"": nothing goes out
    b(b"x")
    assert b(b"") == [] and b.error == "internal error (KeyError)"


@pytest.mark.parametrize("pieces", [[b"12345", b"6"], [b"1234567"]])
def test_buffered_over_its_limit_is_refused_without_calling_the_work(pieces) -> None:
    called = []
    b = Buffered(lambda raw: called.append(raw) or raw, lambda msg: msg.encode(), limit=5)
    for p in pieces:
        assert b(p) == []
    assert b(b"") == [b"body exceeds body_size_limit (5 bytes)"] and called == []
    ok = Buffered(lambda raw: raw, lambda msg: b"", limit=5)
    ok(b"12345")
    assert ok(b"") == [b"12345"]  # exactly the limit: fine
    empty = Buffered(lambda raw: b"", lambda msg: b"E", limit=None)
    assert empty(b"") == []  # an empty result is no piece
