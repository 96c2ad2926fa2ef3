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


# -- BodyStream: a body told by its first bytes -------------------------------------------


def body_stream(content_type: str) -> BodyStream:
    from disguiselib.providers.anthropic import MESSAGE_RESPONSE
    from disguiselib.providers.restore import restore_body

    r = RULES.restorer(PLACEHOLDERS)
    return BodyStream(AnthropicStream(r), lambda b: restore_body(b, MESSAGE_RESPONSE, r), error_body, content_type)


@pytest.mark.parametrize("ctype", ["", "application/json", "text/plain", "application/octet-stream"])
@pytest.mark.parametrize("body", [b"", b"  \r\n ", b"dat", b"\xef\xbb\xbf", b"\xef\xbb\xbf  \n", b"\x00\xff"])
def test_a_body_that_never_leaves_the_undecided_state_reaches_the_client_as_it_came(body: bytes, ctype: str) -> None:
    """A body too short for the sniff to decide (blank, a BOM, the start of `data:`) and
    not labelled as a stream is, at its end, a whole body: it reaches the client as it
    came, restored (here: nothing to restore), whatever the pieces it came in."""
    for pieces in ([body], [body[i : i + 1] for i in range(len(body))]):
        s = body_stream(ctype)
        out = b"".join(s.feed(p) for p in pieces)
        assert out == b""  # nothing goes out before the body is told
        out += s.flush()
        assert out == body and s.state is StreamState.DONE and s.is_sse is False


def test_an_undecided_body_labelled_as_a_stream_ends_as_a_stream_cut_short() -> None:
    s = body_stream("text/event-stream")
    assert s.feed(b"  \n") == b"" and s.is_sse is None
    out = s.flush()
    assert s.is_sse is True and s.state is StreamState.FAILED
    assert out.startswith(b"  \n") and b"event: error" in out


def test_a_whole_body_and_a_stream_are_told_by_their_first_bytes_not_their_label() -> None:
    s = body_stream("text/event-stream")
    out = s.whole(b'{"type":"message","content":[{"type":"text","text":"Zenith Labs"}]}')
    assert s.is_sse is False and b"Acme Corp" in out and s.state is StreamState.DONE
    s = body_stream("application/json")
    out = b"".join(s.feed(BODY[i : i + 3]) for i in range(0, len(BODY), 3)) + s.flush()
    assert s.is_sse is True and s.state is StreamState.DONE
    blocks, _ = read_stream(out)
    assert blocks[0]["text"] == "Acme Corp and bob@corp.example.com"
    assert s.events_in == BODY.count(b"\n\n") and s.events_changed >= 1


def test_a_whole_body_that_cannot_be_restored_fails_in_its_own_shape() -> None:
    s = body_stream("application/json")
    s.feed(b'{"a": 1')
    assert s.fail("boom") == error_body("disguise: response not reversed: boom")
    assert s.state is StreamState.FAILED and s.fail("again") == b"" and s.feed(b"x") == b"" and s.flush() == b""
    s = body_stream("text/event-stream")
    assert b"event: error" in s.error_event("x")  # undecided, labelled a stream: an event
    s = body_stream("application/json")
    assert s.error_event("x") == error_body("x")
