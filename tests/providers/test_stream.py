"""The reverser's state machine (providers/stream.py) and the one decoding layer
(core/decoding.Decoded, pipeline.decoded): every transition the table allows and no
other, and where each kind of ending leaves a stream."""

from __future__ import annotations

import gzip
import itertools

import pytest

from anthropic_util import build_stream, read_stream
from disguiselib import pipeline
from disguiselib.errors import StateError
from disguiselib.providers.anthropic import AnthropicStream, error_body
from disguiselib.providers.stream import TRANSITIONS, BodyStream, Lifecycle, StreamState
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


def test_body_stream_takes_the_state_of_what_it_turned_out_to_be() -> None:
    b = BodyStream(stream(), lambda body: body, error_body, "text/event-stream")
    assert b.state is StreamState.OPEN
    b.feed(BODY)
    assert b.is_sse and b.state is StreamState.FINISHING
    b.flush()
    assert b.state is StreamState.DONE
    whole = BodyStream(stream(), lambda body: body.replace(b"Zenith Labs", b"Acme Corp"), error_body,
                       "application/json")  # fmt: skip
    assert whole.whole(b'{"text": "Zenith Labs"}') == b'{"text": "Acme Corp"}'
    assert whole.state is StreamState.DONE
    bad = BodyStream(stream(), lambda body: body, error_body, "application/json")
    bad.feed(b'{"a": ')
    assert b"not reversed: broken" in bad.fail("broken") and bad.state is StreamState.FAILED


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
