"""Bedrock streams (sans I/O): InvokeModelWithResponseStream chunks through the
Anthropic stream, ConverseStream frames through a window per content block. For any
texts, any split into deltas and any fragmentation of the bytes, the client's
reassembled text is the whole-text result, and every frame passes botocore's decoder."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from botocore.eventstream import EventStreamBuffer
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from aws_util import chunk_frame, converse_frame, frames_of
from disguiselib.apis.bedrock.stream import ConverseStream, InvokeStream, stream_for
from disguiselib.rules import mappings, rules
from disguiselib.wire import eventstream
from integration_util import split_events
from strategies import PLACEHOLDERS, RULES, byte_splits, respelled, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)
FIX = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def run(cls, body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(p) for p in (pieces or [body]))
    return out + s.flush()


def botocore_messages(body: bytes) -> list:
    """Every frame through botocore's own decoder (lengths, both CRCs, headers)."""
    buf = EventStreamBuffer()
    buf.add_data(body)
    msgs = list(buf)
    assert not buf._data, "bytes left after the last frame"
    return msgs


def invoke_body(sse_body: bytes) -> bytes:
    out = []
    for raw in split_events(sse_body):
        data = [ln[6:] for ln in raw.decode().split("\n") if ln.startswith("data: ")]
        out.append(chunk_frame(data[0]))
    return b"".join(out)


def invoke_to_sse(body: bytes) -> bytes:
    """The client's view: each chunk's Anthropic event as one SSE event."""
    out = []
    for m in botocore_messages(body):
        assert m.headers[":message-type"] == "event", m.payload
        data = base64.b64decode(json.loads(m.payload)["bytes"]).decode()
        out.append(f"event: x\ndata: {data}\n\n".encode())
    return b"".join(out)


# -- InvokeModelWithResponseStream -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(texts, texts, texts, st.data())
@example("Zenith Labs and [EMAIL_1]", "thread_id Zenith Labs", "WINPATH", None)
def test_invoke_reassembles_to_the_whole_text_result(text, thinking, value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH"})
    if data is None:
        text_p, think_p, args_p = [text[:3], text[3:]], [thinking], [args[:5], args[5:]]
    else:
        text_p, think_p, args_p = data.draw(splits(text)), data.draw(splits(thinking)), data.draw(splits(args, 12))
    body = invoke_body(build_stream([("thinking", think_p), ("text", text_p), ("tool", args_p)]))
    pieces = data.draw(byte_splits(body, 40)) if data is not None else [body]
    blocks, _ = read_stream(invoke_to_sse(run(InvokeStream, body, pieces)))
    assert blocks[0]["thinking"] == thinking and blocks[0]["signature"] == "c2ln" * 8
    assert blocks[1]["text"] == R.text(text)
    assert blocks[2]["name"] == "acme_lookup"
    assert json.loads(blocks[2]["json"]) == restore_value(json.loads(args))
    assert all(b["stopped"] for b in blocks.values())


def test_invoke_unchanged_frames_are_byte_identical() -> None:
    body = invoke_body((FIX / "anthropic" / "stream_thinking.sse").read_bytes())
    assert run(InvokeStream, body) == body


def test_invoke_disguise_split_across_two_frames_and_held_tail_before_stop() -> None:
    body = invoke_body(build_stream([("text", ["Hello Zen", "ith La", "bs and [EMA", "IL_1] ok", " then Zen"])]))
    blocks, datas = read_stream(invoke_to_sse(run(InvokeStream, body)))
    assert blocks[0]["text"] == "Hello Acme Corp and bob@corp.example.com ok then Zen"
    types = [d["type"] for d in datas]
    assert types.index("content_block_stop") > max(i for i, t in enumerate(types) if t == "content_block_delta")


def test_invoke_cut_stream_ends_with_an_exception_frame() -> None:
    full = invoke_body(build_stream([("text", ["Hello Zen", "ith Labs"])]))
    cut = full[: len(full) - 30]  # inside the last frame
    out = run(InvokeStream, cut)
    msgs = botocore_messages(out)
    assert msgs[-1].headers[":message-type"] == "exception"
    assert msgs[-1].headers[":exception-type"] == "internalServerException"
    assert b"disguise" in msgs[-1].payload
    assert all(m.headers[":message-type"] == "event" for m in msgs[:-1])


def test_invoke_bad_crc_ends_with_an_exception_frame_and_nothing_after() -> None:
    frames = [chunk_frame(d) for d in [
        '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[]}}',
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi Zen"}}',
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ith Labs"}}',
        '{"type":"message_stop"}']]  # fmt: skip
    bad = bytearray(frames[3])
    bad[-6] ^= 1
    out = run(InvokeStream, b"".join([*frames[:3], bytes(bad), frames[4]]))
    msgs = botocore_messages(out)
    assert [m.headers[":message-type"] for m in msgs][-1] == "exception"
    assert b"checksum" in msgs[-1].payload
    assert msgs[-1] is not None and not any(b"message_stop" in base64.b64decode(json.loads(m.payload)["bytes"])
                                            for m in msgs[:-1])  # fmt: skip


def test_invoke_upstream_exception_is_restored_after_the_held_tail() -> None:
    body = b"".join([
        chunk_frame({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                           "content": []}}),
        chunk_frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        chunk_frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partial Zen"}}),
        eventstream.encode([(":exception-type", "modelStreamErrorException"), (":content-type", "application/json"),
                            (":message-type", "exception")], b'{"message":"Zenith Labs model failed"}'),
    ])  # fmt: skip
    msgs = botocore_messages(run(InvokeStream, body))
    assert msgs[-1].headers[":exception-type"] == "modelStreamErrorException"
    assert json.loads(msgs[-1].payload)["message"] == "Acme Corp model failed"
    texts_ = [json.loads(base64.b64decode(json.loads(m.payload)["bytes"])).get("delta", {}).get("text", "")
              for m in msgs[:-1]]  # fmt: skip
    assert "".join(texts_) == "Partial Zen"


def error_frame(message: str, code: str = "ValidationException") -> bytes:
    """The framing's own error message (`:message-type error`): its text in string
    headers, its payload empty; botocore raises EventStreamError with them."""
    return eventstream.encode([(":message-type", "error"), (":error-code", code), (":error-message", message)], b"")


ERROR_TEXT = 'input about Zenith Labs, [EMAIL_1] and WINPATH rejected'


def assert_restored_error(msg) -> None:
    assert msg.headers == {":message-type": "error", ":error-code": "ValidationException",
                           ":error-message": restore_value(ERROR_TEXT)}  # fmt: skip
    assert msg.payload == b""


@settings(max_examples=40, deadline=None)
@given(st.data())
@example(None)
def test_invoke_upstream_error_frame_is_restored_after_the_held_tail(data) -> None:
    body = b"".join([
        chunk_frame({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                           "content": []}}),
        chunk_frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        chunk_frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partial Zen"}}),
        error_frame(ERROR_TEXT),
    ])  # fmt: skip
    pieces = data.draw(byte_splits(body, 40)) if data is not None else [body]
    msgs = botocore_messages(run(InvokeStream, body, pieces))
    assert_restored_error(msgs[-1])
    texts_ = [json.loads(base64.b64decode(json.loads(m.payload)["bytes"])).get("delta", {}).get("text", "")
              for m in msgs[:-1]]  # fmt: skip
    assert "".join(texts_) == "Partial Zen"


# -- ConverseStream --------------------------------------------------------------------------------


def converse_body(text_p: list[str], reasoning_p: list[str], args_p: list[str], name: str = "crm_lookup") -> bytes:
    f = [converse_frame("messageStart", {"p": "abc", "role": "assistant"})]
    for p in reasoning_p:
        f.append(converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": p}},
                                                      "p": "ab"}))  # fmt: skip
    f.append(converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {
        "signature": "c2ln" * 8}}, "p": "a"}))  # fmt: skip
    f.append(converse_frame("contentBlockStop", {"contentBlockIndex": 0, "p": "abcd"}))
    for p in text_p:
        f.append(converse_frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": p}, "p": "abcdef"}))
    f.append(converse_frame("contentBlockStop", {"contentBlockIndex": 1, "p": "abcd"}))
    f.append(converse_frame("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {
        "name": name, "toolUseId": "tooluse_1"}}, "p": "x"}))  # fmt: skip
    for p in args_p:
        f.append(converse_frame("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": p}}}))
    f.append(converse_frame("contentBlockStop", {"contentBlockIndex": 2}))
    f.append(converse_frame("messageStop", {"p": "abc", "stopReason": "tool_use"}))
    f.append(converse_frame("metadata", {"metrics": {"latencyMs": 1}, "usage": {"inputTokens": 1, "outputTokens": 2,
                                                                             "totalTokens": 3}}))  # fmt: skip
    return b"".join(f)


def read_converse(body: bytes) -> dict:
    out: dict = {"reasoning": [], "text": "", "args": "", "name": None, "types": []}
    for m in botocore_messages(body):
        out["types"].append(m.headers.get(":event-type") or m.headers[":message-type"])
        p = json.loads(m.payload)
        d = p.get("delta", {})
        if "reasoningContent" in d:
            out["reasoning"].append(d["reasoningContent"])
        elif "text" in d:
            out["text"] += d["text"]
        elif "toolUse" in d:
            out["args"] += d["toolUse"]["input"]
        if "start" in p:
            out["name"] = p["start"]["toolUse"]["name"]
    return out


@settings(max_examples=60, deadline=None)
@given(texts, texts, texts, st.data())
@example("Zenith Labs and [EMAIL_1]", "thread_id Zenith Labs", "WINPATH", None)
def test_converse_reassembles_to_the_whole_text_result(text, reasoning, value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH"})
    if data is None:
        text_p, reason_p, args_p = [text[:3], text[3:]], [reasoning], [args[:5], args[5:]]
    else:
        text_p, reason_p, args_p = data.draw(splits(text)), data.draw(splits(reasoning)), data.draw(splits(args, 12))
    body = converse_body(text_p, reason_p, args_p)
    pieces = data.draw(byte_splits(body, 40)) if data is not None else [body]
    got = read_converse(run(ConverseStream, body, pieces))
    assert got["reasoning"] == [{"text": p} for p in reason_p] + [{"signature": "c2ln" * 8}]
    assert got["text"] == R.text(text)
    assert got["name"] == "acme_lookup"
    assert json.loads(got["args"]) == restore_value(json.loads(args))
    # every held tail went out before its block's stop, and the stream ends as it came
    assert got["types"][-2:] == ["messageStop", "metadata"]


def test_converse_recorded_streams_pass_byte_identical() -> None:
    """Nothing to restore and nothing that could begin a disguise: every recorded frame
    goes out as it came (with the test rules, "It" is held: "t" may begin "thread_id")."""
    quiet = rules.Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    for name in ("converse_stream_thinking", "converse_stream_tool_use", "converse_stream_redacted"):
        body = (FIX / "bedrock" / f"{name}.eventstream").read_bytes()
        s = ConverseStream(quiet.restorer({}))
        assert s.feed(body) + s.flush() == body, name
        got = read_converse(run(ConverseStream, body))  # the test rules: same text, other frames
        assert got == read_converse(body) or got["text"] == read_converse(body)["text"]


def test_converse_held_tail_goes_before_its_blocks_stop() -> None:
    body = converse_body(["Hello Zen", "ith Labs, then Zen"], ["x"], ['{"a": 1}'])
    out = run(ConverseStream, body)
    got = read_converse(out)
    assert got["text"] == "Hello Acme Corp, then Zen"
    types = got["types"]
    first_stop_after_text = types.index("contentBlockStop", types.index("contentBlockStop") + 1)
    assert types[first_stop_after_text - 1] == "contentBlockDelta"


def test_converse_stream_without_message_stop_ends_with_an_exception() -> None:
    body = converse_body(["Hello Zen"], ["x"], ['{"a": 1}'])
    frames = eventstream.Decoder().feed(body)
    out = run(ConverseStream, b"".join(f.raw for f in frames if f.event_type not in ("messageStop", "metadata")))
    msgs = botocore_messages(out)
    assert msgs[-1].headers[":message-type"] == "exception"
    assert b"messageStop" in msgs[-1].payload


def test_stream_for_by_content_type_and_path() -> None:
    es = "application/vnd.amazon.eventstream"
    assert stream_for("/model/m/converse-stream", es) is ConverseStream
    assert stream_for("/model/m/invoke-with-response-stream", es) is InvokeStream
    assert stream_for("/model/m/invoke-with-response-stream", "") is InvokeStream  # unlabelled: still frames
    assert stream_for("/model/m/converse-stream", "application/json") is None  # a JSON error, restored whole
    assert stream_for("/model/m/converse", "application/json") is None


# -- a recorded stream as events, for the views and the audit (view_events, view) ------------------


def test_view_events_reads_each_frame_as_its_readers_need_it() -> None:
    from disguiselib.apis.bedrock.stream import view_events

    ev = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    [(name, data, raw)] = view_events(chunk_frame(ev)) or []
    assert (name, json.loads(data or "")) == (None, ev) and raw == chunk_frame(ev)  # the chunk's bytes, decoded
    conv = converse_frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "x"}})
    assert view_events(conv) == [("contentBlockDelta", '{"contentBlockDelta":{"contentBlockIndex":1,"delta":{"text":"x"}}}',
                                  conv)]  # fmt: skip
    exc = eventstream.encode([(":exception-type", "throttlingException"), (":message-type", "exception")],
                             b'{"message":"slow"}')  # fmt: skip
    assert view_events(exc) == [("throttlingException", '{"throttlingException":{"message":"slow"}}', exc)]
    # whole frames up to a cut or a bad checksum, the rest one event of text
    body = conv + conv[:-3]
    got = view_events(body) or []
    assert [g[0] for g in got] == ["contentBlockDelta", None] and got[1][2] == conv[:-3]
    bad = conv[:-1] + bytes([conv[-1] ^ 1])
    assert [g[2] for g in view_events(conv + bad) or []] == [conv, bad]
    # not an event stream: neither labelled nor a valid first prelude
    assert view_events(b'data: {"a": 1}\n\n') is None and view_events(b"") is None
    assert view_events(b"not frames at all", "application/vnd.amazon.eventstream") is None
    assert view_events(conv, "application/vnd.amazon.eventstream") is not None


@settings(max_examples=40, deadline=None)
@given(texts, texts, st.data())
def test_the_view_reassembles_every_converse_block(text, value, data) -> None:
    from disguiselib.inspect import sseview

    args = json.dumps({"thread_id": value})
    text_p, args_p = data.draw(splits(text)), data.draw(splits(args, 12))
    s = sseview.parse_any(converse_body(text_p, ["Zenith ", "Labs"], args_p), "application/vnd.amazon.eventstream")
    assert s is not None and s.framing == "event stream" and s.terminal
    ch = {k: (c.kind, c.text, c.name) for k, c in s.channels.items()}
    assert ch["block 0 thinking"] == ("thinking", "Zenith Labs", "")
    assert ch.get("block 1 text", ("text", "", ""))[:2] == ("text", text)
    assert ch["block 2 json"] == ("json", args, "crm_lookup")


@settings(max_examples=40, deadline=None)
@given(st.data())
@example(None)
def test_converse_upstream_error_frame_is_restored_after_the_held_tails(data) -> None:
    """An error frame ends the stream: every block's held tail first (text and tool
    input), then the frame with its `:error-message` restored (lengths, both checksums)."""
    frames = eventstream.Decoder().feed(converse_body(["Hello Zen"], ["x"], ['{"a": "Zenith La']))
    head = [f.raw for f in frames if f.event_type != "contentBlockStop" and f.event_type not in ("messageStop",
                                                                                                 "metadata")]
    body = b"".join([*head, error_frame(ERROR_TEXT)])
    pieces = data.draw(byte_splits(body, 40)) if data is not None else [body]
    out = run(ConverseStream, body, pieces)
    got = read_converse_until_error(out)
    assert got["text"] == "Hello Zen" and got["args"] == '{"a": "Zenith La'
    assert_restored_error(botocore_messages(out)[-1])


def read_converse_until_error(body: bytes) -> dict:
    msgs = botocore_messages(body)
    assert [m.headers[":message-type"] for m in msgs].count("error") == 1
    return read_converse(b"".join(eventstream.reframe(eventstream.headers_block(list(m.headers.items())), m.payload)
                                  for m in msgs[:-1]))  # fmt: skip


def test_converse_error_frame_without_a_disguise_passes_byte_identical() -> None:
    body = b"".join([converse_frame("messageStart", {"role": "assistant"}), error_frame("throttled", "Throttling")])
    assert run(ConverseStream, body) == body


# -- contentBlockIndex spelled as a JSON float (base/channels.channel_index) --------------


def _respell_frames(body: bytes, spell) -> bytes:
    """body with each frame's payload passed through spell (frames re-encoded)."""
    return b"".join(eventstream.reframe(fr.header_block, spell(fr.payload.decode()).encode())
                    for fr in frames_of(body))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(texts, texts, st.data())
@example("Hi Zenith Labs nova", "thread_id", None)
def test_converse_an_index_spelled_as_an_integral_float_is_the_same_block(text, value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH"})
    if data is None:
        body = _respell_frames(converse_body([text[:5], text[5:]], ["r"], [args]),
                               lambda p: p.replace('"contentBlockIndex":1,"delta"', '"contentBlockIndex":1.0,"delta"'))
        pieces = [body]
    else:
        text_p, args_p = data.draw(splits(text)), data.draw(splits(args, 12))
        body = _respell_frames(converse_body(text_p, ["r"], args_p),
                               lambda p: data.draw(respelled(p, ("contentBlockIndex",))))
        pieces = data.draw(byte_splits(body, 40))
    got = read_converse(run(ConverseStream, body, pieces))  # botocore reads every frame
    assert got["text"] == R.text(text)
    assert json.loads(got["args"]) == restore_value(json.loads(args))
    assert got["types"][-2:] == ["messageStop", "metadata"]


def test_converse_an_index_that_is_no_integer_ends_with_an_exception() -> None:
    body = _respell_frames(converse_body(["Hi Zen", "ith Labs ok"], ["r"], ["{}"]),
                           lambda p: p.replace('"contentBlockIndex":1,"delta":{"text":"ith', '"contentBlockIndex":1.5,"delta":{"text":"ith'))
    got = read_converse(run(ConverseStream, body))
    assert got["types"][-1] != "metadata" and "ith Labs" not in got["text"]
    assert b"contentBlockIndex` is not an integer" in run(ConverseStream, body)


def test_without_botocore_a_converse_stream_ends_with_an_exception_frame(monkeypatch) -> None:
    """botocore is imported when the first frame is read (wire/eventstream.py): where it
    cannot be, the client gets an exception frame naming it, and no frame of the stream."""
    import sys

    body = converse_body(["Hello Zen"], ["x"], ['{"a": 1}'])
    monkeypatch.setattr(eventstream, "_BOTOCORE", None)
    monkeypatch.setitem(sys.modules, "botocore.eventstream", None)
    out = run(ConverseStream, body)
    monkeypatch.undo()
    msgs = botocore_messages(out)
    assert [m.headers[":message-type"] for m in msgs] == ["exception"]
    assert b"botocore does not import" in msgs[0].payload
