"""A response body as its endpoint declares and its label says (base/bodystream.py): an
event stream from its first byte, or a whole body restored at its end; the error of one
whose label and endpoint disagree, in the shape its client reads."""

from __future__ import annotations

import pytest

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream, error_body
from disguiselib.base.bodystream import BodyStream
from disguiselib.base.stream import StreamState
from strategies import PLACEHOLDERS, RULES

BODY = build_stream([("text", ["Zenith Labs and ", "[EMAIL_1]"])])


def stream() -> AnthropicStream:
    return AnthropicStream(RULES.restorer(PLACEHOLDERS))


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


def test_body_stream_says_whether_it_went_past_its_last_event_as_what_it_turned_out_to_be() -> None:
    """`past_final` (what the capture asks at the stream's end, inspect/tee.py): an event
    stream's own, a whole body's once it was restored (DONE), never a refused one's."""
    b = BodyStream(stream(), lambda body: body, error_body, "text/event-stream")
    b.feed(BODY[: BODY.index(b"event: message_stop")])
    assert not b.past_final
    b.feed(BODY[BODY.index(b"event: message_stop") :])
    assert b.past_final and b.stream.past_final
    b.fail("cut after it")
    assert b.state is StreamState.FAILED and b.past_final  # it went out before the error
    whole = BodyStream(stream(), lambda body: body, error_body, "application/json")
    whole.feed(b'{"text": "Zenith Labs"}')
    assert not whole.past_final and not whole.stream.past_final
    whole.flush()
    assert whole.past_final and not whole.stream.past_final
    bad = BodyStream(stream(), lambda body: body, error_body, "application/json")
    bad.feed(b'{"a": ')
    bad.fail("broken")
    assert not bad.past_final


# -- BodyStream: a body told by its first bytes -------------------------------------------


def body_stream(content_type: str) -> BodyStream:
    from disguiselib.apis.anthropic.messages import MESSAGE_RESPONSE
    from disguiselib.base.restore import restore_body

    r = RULES.restorer(PLACEHOLDERS)
    return BodyStream(AnthropicStream(r), lambda b: restore_body(b, MESSAGE_RESPONSE, r), error_body, content_type)


@pytest.mark.parametrize("ctype", ["", "application/json", "text/plain", "application/octet-stream"])
@pytest.mark.parametrize("body", [b"", b"  \r\n ", b"\xef\xbb\xbf", b"\xef\xbb\xbf  \n", b"\x00\xff", b"hello"])
def test_a_body_not_labelled_as_a_stream_reaches_the_client_whole_as_it_came(body: bytes, ctype: str) -> None:
    """A body not labelled `text/event-stream` is a whole body: it reaches the client at
    its end as it came, restored (here: nothing to restore), whatever the pieces."""
    for pieces in ([body], [body[i : i + 1] for i in range(len(body))]):
        s = body_stream(ctype)
        out = b"".join(s.feed(p) for p in pieces)
        assert out == b""  # a whole body goes out at its end
        out += s.flush()
        assert out == body and s.state is StreamState.DONE and s.is_sse is False


def test_a_body_labelled_as_a_stream_is_one_from_its_first_byte() -> None:
    s = body_stream("text/event-stream")
    assert s.is_sse is True
    out = s.feed(b"data: {\"type\":\"ping\"}\n\n")
    assert out == b"data: {\"type\":\"ping\"}\n\n"  # events go on as they come
    out = s.flush()
    assert s.state is StreamState.FAILED and b"event: error" in out  # cut before message_stop


def test_a_whole_body_and_a_stream_are_told_by_their_label_not_their_first_bytes() -> None:
    s = body_stream("text/event-stream")
    out = b"".join(s.feed(BODY[i : i + 3]) for i in range(0, len(BODY), 3)) + s.flush()
    assert s.is_sse is True and s.state is StreamState.DONE
    blocks, _ = read_stream(out)
    assert blocks[0]["text"] == "Acme Corp and bob@corp.example.com"
    assert s.events_in == BODY.count(b"\n\n") and s.events_changed >= 1
    s = body_stream("application/json")
    out = s.whole(b'{"type":"message","content":[{"type":"text","text":"Zenith Labs"}]}')
    assert s.is_sse is False and b"Acme Corp" in out and s.state is StreamState.DONE
    for label in ("application/json", "text/plain", ""):  # an event stream labelled otherwise: refused, not guessed
        s = body_stream(label)
        out = b"".join(s.feed(BODY[i : i + 3]) for i in range(0, len(BODY), 3)) + s.flush()
        assert s.is_sse is False and s.failed and b"Zenith" not in out and b"event stream labelled" in out
        # ended with an error event: its client reads events (an error document read so is none)
        assert out.startswith(b"event: error\n") and read_stream(out)[1]


def test_a_whole_body_that_cannot_be_restored_fails_in_its_own_shape() -> None:
    s = body_stream("application/json")
    s.feed(b'{"a": 1')
    assert s.fail("boom") == error_body("disguise: response not reversed: boom")
    assert s.state is StreamState.FAILED and s.fail("again") == b"" and s.feed(b"x") == b"" and s.flush() == b""
    s = body_stream("text/event-stream")
    assert b"event: error" in s.error_event("x")  # labelled a stream: an event
    s = body_stream("application/json")
    assert s.error_event("x") == error_body("x")


def test_the_error_of_a_body_stream_takes_the_shape_it_was_told_and_its_message() -> None:
    s = body_stream("application/json")
    s.feed(b"data: x\n\n")  # told by its label: a whole body, whatever its bytes
    assert s.is_sse is False and s.error_event("why") == error_body("why")
    s = body_stream("text/event-stream")
    s.feed(b'{"a": 1}')
    assert s.is_sse is True and b'"message": "why"' in s.error_event("why")
    out = s.fail("why")
    assert b"disguise: stream could not be reversed: why" in out and s.state is StreamState.FAILED


def test_a_read_goes_to_the_sink_the_body_turned_out_to_need() -> None:
    """sink is what the adapter hands each read to without a call of its own: the stream's
    feed for an event stream, the body's own feed (collected, restored at its end) else.
    Either way a read through the sink gives what feed gives."""
    s = body_stream("text/event-stream")
    assert s.sink == s.stream.feed
    via_sink = b"".join(s.sink(BODY[i : i + 5]) for i in range(0, len(BODY), 5)) + s.flush()
    t = body_stream("text/event-stream")
    via_feed = b"".join(t.feed(BODY[i : i + 5]) for i in range(0, len(BODY), 5)) + t.flush()
    assert via_sink == via_feed and b"Acme Corp" in via_sink and s.state is StreamState.DONE
    w = body_stream("application/json")
    assert w.sink == w.feed
    body = b'{"type":"message","content":[{"type":"text","text":"Zenith Labs"}]}'
    assert w.sink(body[:10]) == b"" and w.sink(body[10:]) == b""  # collected: nothing until the end
    assert b"Acme Corp" in w.flush() and w.state is StreamState.DONE


def test_a_whole_body_says_why_it_failed_and_holds_nothing_after() -> None:
    s = body_stream("application/json")
    assert s.failure is None and not s.failed  # nothing went wrong yet
    s.feed(b'{"text": "Zenith')
    s.fail("the provider cut it")
    assert s.failure == "the provider cut it"
    s.feed(b' Labs"}')  # the rest of a body that already failed is not kept
    assert s._buf == [] and s.flush() == b""


@pytest.mark.parametrize(("label", "named"), [("text/plain; charset=utf-8", b"'text/plain'"),
                                              ("", b"'with no content type'")])  # fmt: skip
def test_an_event_stream_labelled_otherwise_is_refused_naming_its_label(label: str, named: bytes) -> None:
    s = body_stream(label)
    out = b"".join(s.feed(BODY[i : i + 7]) for i in range(0, len(BODY), 7)) + s.flush()
    assert b"an event stream labelled " + named in out
    assert s.failure is not None and s.failure.startswith("an event stream labelled ")
    assert s.failure.endswith(named.decode())
