"""The reverser's state machine (base/stream.py) and the one decoding layer
(wire/decoding.Decoded, pipeline.decoded): every transition the table allows and no
other, and where each kind of ending leaves a stream."""

from __future__ import annotations

import gzip
import itertools
import json

import pytest

from anthropic_util import build_stream, read_stream
from disguiselib import pipeline
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.base.stream import TRANSITIONS, Lifecycle, StreamState
from disguiselib.errors import StateError
from disguiselib.wire.sse import Framer
from strategies import PLACEHOLDERS, RULES

BODY = build_stream([("text", ["Zenith Labs and ", "[EMAIL_1]"])])


def stream() -> AnthropicStream:
    return AnthropicStream(RULES.restorer(PLACEHOLDERS))


@pytest.mark.parametrize(("a", "b"), list(itertools.product(StreamState, StreamState)))
def test_transition_allowed_exactly_when_the_table_says(a: StreamState, b: StreamState) -> None:
    lc = Lifecycle()
    lc.state = a
    if b is a or b in TRANSITIONS[a]:
        lc.to(b)
        assert lc.state is b
    else:
        with pytest.raises(StateError):
            lc.to(b)


def test_a_whole_stream_goes_open_finishing_done() -> None:
    s = stream()
    cut = BODY.index(b"event: message_stop")
    s.feed(BODY[:cut])
    assert s.state is StreamState.OPEN and not s.terminated
    s.feed(BODY[cut:])
    assert s.state is StreamState.FINISHING and s.terminated and not s.finished
    s.flush()
    assert s.state is StreamState.DONE and s.finished and not s.failed
    assert s.flush() == b"" and s.feed(b"data: {}\n\n") == b""


def test_a_stream_cut_before_its_last_event_ends_failed_with_an_error_event() -> None:
    s = stream()
    out = s.feed(BODY[: BODY.index(b"event: message_stop")]) + s.flush()
    assert s.state is StreamState.FAILED
    assert b"ended before message_stop" in out.rstrip().splitlines()[-1]


def test_fail_is_final_and_says_so_once() -> None:
    s = stream()
    s.feed(BODY[:40])
    first = s.fail("over a limit")
    assert s.state is StreamState.FAILED and b"over a limit" in first
    assert s.fail("again") == b"" and s.feed(BODY[40:]) == b"" and s.flush() == b""


@pytest.mark.parametrize("step", [1, 9, 4096])
def test_decoded_stream_restores_through_the_one_decoding_layer(step: int) -> None:
    s = pipeline.decoded(stream(), "gzip")
    body = gzip.compress(BODY)
    out = b"".join(s.feed(body[i : i + step]) for i in range(0, len(body), step)) + s.flush()
    blocks, _ = read_stream(out)
    assert blocks[0]["text"] == "Acme Corp and bob@corp.example.com" and s.state is StreamState.DONE


def test_decoded_stream_cut_inside_a_member_ends_failed() -> None:
    s = pipeline.decoded(stream(), "gzip")
    body = gzip.compress(BODY)
    out = s.feed(body[: len(body) // 2]) + s.flush()
    assert s.state is StreamState.FAILED and b"compressed stream ended before its end marker" in out


def test_identity_is_not_wrapped_and_an_unknown_encoding_is_refused() -> None:
    s = stream()
    assert pipeline.decoded(s, "identity") is s and pipeline.decoded(s, "") is s
    from disguiselib.errors import StreamError

    with pytest.raises(StreamError, match="cannot decode"):
        pipeline.decoded(s, "x-unheard-of")


# -- survivors of `make mutation` (base/stream.py) ----------------------------------


def _quiet_body(n: int) -> bytes:
    """A stream of n text deltas that nothing can match in (they pass unparsed)."""
    return build_stream([("text", ["hello there. " for _ in range(n)])])


@pytest.mark.parametrize("piece", [0, 1, 40])
def test_events_in_counts_every_event_parsed_or_passed_unparsed(piece: int) -> None:
    body = _quiet_body(6) + b": a comment\n\n"
    s = stream()
    pieces = [body[i : i + piece] for i in range(0, len(body), piece)] if piece else [body]
    out = b"".join(s.feed(p) for p in pieces) + s.flush()
    assert out == body  # nothing changed: every byte as it came
    assert s.events_in == body.count(b"\n\n") and s.events_changed == 0 and s.events_held == 0
    assert s.state is StreamState.DONE  # message_stop seen even where it passed unparsed


def test_events_held_counts_the_events_whose_text_was_held() -> None:
    body = build_stream([("text", ["a nov", "el Zenith La", "bs"])])
    s = stream()
    out = s.feed(body) + s.flush()
    assert read_stream(out)[0][0]["text"] == "a novel Acme Corp"
    assert s.events_held == 2 and s.events_changed >= 2


@pytest.mark.parametrize(("data", "want"), [(b"Zenith Labs", b"Acme Corp"), (b'"Zenith Labs"', b'"Acme Corp"'),
                                            (b"[\"Zenith Labs\", 1]", b'["Acme Corp", 1]'), (b"123", None)])  # fmt: skip
def test_an_event_whose_data_is_not_a_json_object_is_restored_never_passed_unread(data: bytes, want) -> None:
    s = stream()
    ev = b"event: custom\ndata: " + data + b"\n\n"
    out = s.feed(ev + ev)
    if want is None:
        assert out == ev + ev and s.events_changed == 0
    else:
        assert out == (b"event: custom\ndata: " + want + b"\n\n") * 2 and s.events_changed == 2


def test_whole_is_feed_then_flush() -> None:
    a, b = stream(), stream()
    assert a.whole(BODY) == b.feed(BODY) + b.flush() and a.state is StreamState.DONE


def test_a_failure_ends_with_its_reason() -> None:
    s = stream()
    s.framer.max_event_bytes = 200
    head = BODY[: BODY.index(b"event: content_block_stop")]
    out = s.feed(head)
    big = b"event: content_block_delta\ndata: " + b"x" * 300
    out += s.feed(big)
    evs = [e for e in Framer().feed(out) if e.data is not None]
    last = json.loads(evs[-1].data)
    assert last["type"] == "error" and last["error"]["message"] == (
        "disguise: stream could not be reversed: an SSE event exceeds 200 bytes without ending")
    assert out.count(b"event: error") == 1 and s.feed(b"data: more\n\n") == b"" and s.flush() == b""
    held = build_stream([("text", ["Zenith La"])])
    s2 = stream()
    out2 = s2.feed(held[: held.index(b"event: content_block_stop")]) + s2.feed(b"data: \xff\n\n")
    last2 = json.loads([e for e in Framer().feed(out2) if e.data is not None][-1].data)
    assert last2["error"]["message"] == "disguise: stream could not be reversed: an event is not UTF-8 text"
    # a stream the addon ends itself delivers no held text that may be part of a disguise
    assert read_stream(out2)[0][0]["text"] == "" and b"Zenith La" not in out2 and s2.flush() == b""
    assert s2.withheld == len("Zenith La") and s2.windows == {}  # what was held, counted, then gone


@pytest.mark.parametrize("end", [b"", b"\n", b"\r\n", b"\r"])
def test_an_event_cut_before_its_blank_line_does_not_swallow_what_follows(end: bytes) -> None:
    """The connection ends inside the last event: what the addon sends after it (a held
    tail, the error) starts an event of its own, so the client reads the error."""
    body = build_stream([("text", ["see nova"])])
    cut = body[: body.index(b"event: content_block_stop")] + b"event: ping\ndata: {\"type\": \"ping\"}" + end
    s = stream()
    out = s.feed(cut) + s.flush()
    evs = [e for e in Framer().feed(out) if e.data is not None]
    assert json.loads(evs[-1].data)["error"]["message"] == "disguise: the stream ended before message_stop"
    assert json.loads(evs[-3].data) == {"type": "ping"}  # the cut event, then the tail, then the error
    assert read_stream(out)[0][0]["text"] == "see nova-internal"


@pytest.mark.parametrize("cut", [b'data: {"type": "content_', b'event: content_block_delta\ndata: {"type": "con',
                                 b"event: content_block_del", b'data: {"type": "ping"}\ndata: {"a'])
def test_an_event_cut_inside_its_data_is_not_passed_before_the_error(cut: bytes) -> None:
    """The connection ends inside an event's data: a client drops an event the stream ends
    inside, but followed by the held text and the error it was dispatched, and its data did
    not parse (the anthropic SDK raised a JSONDecodeError and never read the error). Every
    event the client gets parses; the held tail, then the error."""
    body = build_stream([("text", ["see nova"])])
    s = stream()
    out = s.feed(body[: body.index(b"event: content_block_stop")] + cut) + s.flush()
    docs = [json.loads(e.data) for e in Framer().feed(out) if e.data is not None]  # every one parses
    assert [d["type"] for d in docs][-3:] == ["content_block_delta", "content_block_delta", "error"]
    assert docs[-1]["error"]["message"] == "disguise: the stream ended before message_stop"
    assert read_stream(out)[0][0]["text"] == "see nova-internal"


def test_a_transition_the_table_refuses_says_which() -> None:
    lc = Lifecycle()
    lc.to(StreamState.DONE)
    with pytest.raises(StateError, match="^a response reverser cannot go from done to open$"):
        lc.to(StreamState.OPEN)


def test_a_reverser_that_went_past_its_last_event_says_so_whatever_comes_after() -> None:
    """`past_final`: FINISHING or DONE was reached, kept once the stream fails after it
    (the capture asks it at the stream's end: did the final event go out?)."""
    for path, went in (([StreamState.FINISHING, StreamState.FAILED], True), ([StreamState.DONE], True),
                       ([StreamState.FAILED], False), ([], False)):  # fmt: skip
        lc = Lifecycle()
        for st in path:
            lc.to(st)
        assert lc.past_final is went, path
