"""A readable account of an LLM body (inspect/sseview.py): events and each channel's
reassembled text, for every provider's stream; JSON pretty-printed; never raises."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.inspect import sseview
from openai_util import build_chat, build_responses


def test_anthropic_blocks_are_channels_with_their_kind_and_tool_name() -> None:
    body = build_stream([("text", ["Hel", "lo"]), ("tool", ['{"a"', ": 1}"]), ("thinking", ["hm"])], name="lookup")
    s = sseview.parse_stream(body)
    assert s.terminal and s.errors == []
    ch = s.channels
    assert ch["block 0 text"].text == "Hello" and ch["block 0 text"].kind == "text"
    assert ch["block 1 tool_use"].text == '{"a": 1}' and ch["block 1 tool_use"].name == "lookup"
    assert ch["block 1 tool_use"].label == "block 1 tool_use (lookup)" and ch["block 1 tool_use"].kind == "json"
    assert ch["block 2 thinking"].kind == "thinking" and ch["block 2 thinking"].text == "hm"
    pieces = ch["block 0 text"].pieces
    assert [(p.start, p.path) for p in pieces] == [(0, "delta.text"), (3, "delta.text")]
    assert pieces[1].event == pieces[0].event + 1


def test_chat_choices_and_tool_calls_are_channels() -> None:
    body = build_chat([("content", 0, "a"), ("content", 1, "b"), ("tool", 0, 0, "f", '{"x"'), ("tool", 0, 0, None, ":1}"),
                       ("content", 0, "c"), ("finish", 0, "stop")])  # fmt: skip
    s = sseview.parse_stream(body)
    assert s.terminal
    assert s.channels["choice 0 content"].text == "ac" and s.channels["choice 1 content"].text == "b"
    call = s.channels["choice 0 tool_call 0 arguments"]
    assert call.text == '{"x":1}' and call.name == "f" and call.kind == "json"


def test_responses_deltas_are_channels_named_by_their_item() -> None:
    s = sseview.parse_stream(build_responses(["He", "llo"], ['{"a":', "1}"], name="lookup"))
    assert s.terminal
    assert s.channels["output 0 output_text [0]"].text == "Hello"
    args = s.channels["output 1 function_call_arguments"]
    assert args.text == '{"a":1}' and args.name == "lookup" and args.kind == "json"


def test_errors_and_a_missing_final_event_are_reported() -> None:
    body = build_stream([("text", ["x"])])
    cut = body[: body.index(b"event: message_stop")]
    err = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n'
    s = sseview.parse_stream(cut + err)
    assert not s.terminal and s.errors == ["busy"]


@given(st.binary(max_size=200))
def test_anything_parses_without_raising(body: bytes) -> None:
    sseview.parse_stream(body)
    sseview.parse_any(body, "text/event-stream")


def test_json_and_the_sniff() -> None:
    assert sseview.render_json(b'{"a":"\xc3\xa9"}') == '{\n  "a": "é"\n}' and sseview.render_json(b"nope") is None
    stream = build_stream([("text", ["Hi"])])
    assert sseview.looks_like_sse(stream) and not sseview.looks_like_sse(b'{"a": 1}', "text/event-stream")
    parsed = sseview.parse_any(stream, "application/json")  # a stream, whatever the label
    assert parsed is not None and parsed.channels["block 0 text"].text == "Hi"
