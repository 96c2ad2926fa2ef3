"""Anthropic SSE reversal: per-block windows, JSON-escaped tool input, thinking untouched."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream, sse
from conftest import REPO
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.base.holdback import Window
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from disguiselib.wire.sse import Framer
from strategies import PLACEHOLDERS, RULES, byte_splits, respelled, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def run(body: bytes, pieces: list[bytes] | None = None) -> bytes:
    st_ = AnthropicStream(RULES.restorer(PLACEHOLDERS))
    out = b"".join(st_.feed(p) for p in (pieces or [body]))
    return out + st_.flush()


@given(texts, texts, texts, st.data())
@example("Zenith Labs and [EMAIL_1]", "thread_id", "Zenith Labs", None)
def test_blocks_reassemble_to_the_whole_text_result(text, thinking, value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH", "n": 1.5})
    draw = data.draw if data is not None else (lambda s: [s.example if hasattr(s, "example") else s])
    if data is None:
        text_p, think_p, args_p = [text[:3], text[3:]], [thinking], [args[:5], args[5:]]
    else:
        text_p, think_p, args_p = draw(splits(text)), draw(splits(thinking)), draw(splits(args, 12))
    body = build_stream([("thinking", think_p), ("text", text_p), ("tool", args_p)])
    pieces = data.draw(byte_splits(body, 40)) if data is not None else [body]
    blocks, _ = read_stream(run(body, pieces))
    assert blocks[0]["thinking"] == thinking  # thinking is never restored
    assert blocks[0]["signature"] == "c2ln" * 8
    assert blocks[1]["text"] == R.text(text)
    assert blocks[2]["name"] == "acme_lookup"
    assert json.loads(blocks[2]["json"]) == restore_value(json.loads(args))
    assert all(b["stopped"] for b in blocks.values())


def test_split_disguise_and_held_tail_before_stop() -> None:
    body = build_stream([("text", ["Hello Zen", "ith La", "bs, mail [EMA", "IL_1] [[reply_to:<"])])
    out = run(body)
    blocks, datas = read_stream(out)
    assert blocks[0]["text"] == "Hello Acme Corp, mail bob@corp.example.com "
    # the tail was held and the dangling tag dropped; nothing arrives after the stop
    types = [d["type"] for d in datas]
    assert types.index("content_block_stop") > max(i for i, t in enumerate(types) if t == "content_block_delta")


def test_tail_held_at_end_is_delivered_as_synthetic_delta_before_stop() -> None:
    body = build_stream([("text", ["see nova"])])
    blocks, datas = read_stream(run(body))
    assert blocks[0]["text"] == "see nova-internal"
    deltas = [d for d in datas if d["type"] == "content_block_delta"]
    assert [d["delta"]["text"] for d in deltas] == ["see ", "nova-internal"]


def test_unchanged_events_are_byte_identical() -> None:
    body = build_stream([("thinking", ["Zenith Labs"]), ("text", ["plain ", "prose"])])
    assert run(body) == body


def test_interleaved_blocks_do_not_splice_into_each_other() -> None:
    ev = lambda i, t: (f'event: content_block_delta\ndata: {{"type":"content_block_delta","index":{i},'
                       f'"delta":{{"type":"text_delta","text":"{t}"}}}}\n\n').encode()
    start = lambda i: (f'event: content_block_start\ndata: {{"type":"content_block_start","index":{i},'
                       f'"content_block":{{"type":"text","text":""}}}}\n\n').encode()
    stop = lambda i: f'event: content_block_stop\ndata: {{"type":"content_block_stop","index":{i}}}\n\n'.encode()
    body = start(0) + start(1) + ev(0, "a Zen") + ev(1, "b Zen") + ev(0, "ith Labs") + ev(1, "o") + stop(0) + stop(1)
    blocks, _ = read_stream(run(body))
    assert blocks[0]["text"] == "a Acme Corp"
    assert blocks[1]["text"] == "b Zeno"


def test_connection_end_drains_without_faking_a_stop() -> None:
    body = build_stream([("text", ["x nova"])])
    cut = body[: body.index(b"event: content_block_stop")]
    out = run(cut)
    blocks, datas = read_stream(out)
    assert blocks[0]["text"] == "x nova-internal"
    assert not any(d["type"] in ("content_block_stop", "message_stop") for d in datas)


def test_flush_is_idempotent() -> None:
    s = AnthropicStream(R)
    s.feed(build_stream([("text", ["x nova"])])[:-40])
    first = s.flush()
    assert s.flush() == b""
    assert first


def test_slow_path_for_unusual_formatting() -> None:
    body = (b'event: content_block_start\ndata: {"index": 0, "type": "content_block_start", '
            b'"content_block": {"type": "text", "text": "Zenith"}}\n\n'
            b'event: content_block_delta\ndata: {"delta": {"text": " Labs", "type": "text_delta"}, '
            b'"index": 0, "type": "content_block_delta"}\n\n'
            b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n')
    blocks, _ = read_stream(run(body))
    assert blocks[0]["text"] == "Acme Corp"


def test_tool_name_and_error_message_restored() -> None:
    body = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"tool_use","id":"t","name":"crm_lookup","input":{}}}\n\n'
            b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Zenith Labs busy"}}\n\n')
    out = run(body)
    assert b'"name":"acme_lookup"' in out
    assert b"Acme Corp busy" in out


def test_window_modes_by_block_type() -> None:
    s = AnthropicStream(R)
    s.feed(build_stream([("tool", ['{"a":'])])[:300])
    assert all(w is None or w.mode in (Window.TEXT, Window.JSON) for w in s.windows.values())


# -- the real recorded streams, with disguises injected ------------------------------

def _inject(body: bytes) -> bytes:
    """Put disguises into every text, thinking and tool-input delta of a recorded stream."""
    out = []
    for chunk in body.split(b"\n\n"):
        if b'"text_delta"' in chunk or b'"thinking_delta"' in chunk:
            chunk = chunk.replace(b'"text":"', b'"text":"Zenith Labs [EMA').replace(
                b'"thinking":"', b'"thinking":"Zenith Labs ')
            chunk = chunk.replace(b'"}', b'IL_1] nova"}', 1) if b'"text_delta"' in chunk else chunk
        if b'"input_json_delta"' in chunk:  # a disguised key and value at the object's start
            chunk = chunk.replace(b'"partial_json":"{\\"', b'"partial_json":"{\\"thread_id\\": \\"WINPATH\\", \\"')
        out.append(chunk)
    return b"\n\n".join(out)


@given(st.data())
def test_recorded_streams_with_injected_disguises(fixtures, data) -> None:
    for f in sorted((fixtures / "anthropic").glob("*.sse")):
        up = _inject(f.read_bytes())
        pieces = data.draw(byte_splits(up, 30))
        out = run(up, pieces)
        want, _ = read_stream(up)
        got, _ = read_stream(out)
        assert got.keys() == want.keys(), f.name
        for i, w in want.items():
            g = got[i]
            assert g["text"] == R.text(w["text"]), f.name
            assert g["thinking"] == w["thinking"] and g["signature"] == w["signature"], f.name
            if w["json"]:
                assert json.loads(g["json"]) == restore_value(json.loads(w["json"])), f.name
        assert b"Zenith Labs" not in out.replace(b'"thinking":"Zenith Labs', b""), f.name
        if b"thread_id" in up:
            assert b"thread_id" not in out and b"session_id" in out, f.name


def test_recorded_streams_pass_byte_identical_with_default_mappings(fixtures) -> None:
    # default mappings: only placeholders and strip tags, whose prefix is "[" — real
    # prose never ends a delta in "[", so not one event may change or be delayed
    rules = Rules(mappings.load(REPO / "mappings"))
    for f in sorted((fixtures / "anthropic").glob("*.sse")):
        body = f.read_bytes()
        s = AnthropicStream(rules.restorer({}))
        out = b"".join(s.feed(body[i : i + 7]) for i in range(0, len(body), 7)) + s.flush()
        assert out == body, f.name
        assert s.events_held == 0 and s.events_changed == 0


def _delta(text_json_body: str) -> bytes:
    return (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"' + text_json_body.encode() + b'"}}\n\n')


def test_surrogate_pair_cut_between_events() -> None:
    start = b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    stop = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    bodies = ["a [", "\\ud83d", "\\ude00] Zen", "ith Labs \\ud83d", "\\ude00"]
    up = start + b"".join(_delta(b) for b in bodies) + stop
    out = run(up)
    blocks, _ = read_stream(out)
    upstream_text = "".join(json.loads(f'"{b}"') for b in bodies)
    assert blocks[0]["text"] == R.text(upstream_text)
    # the client's code units join into real characters again
    assert blocks[0]["text"].encode("utf-16", "surrogatepass").decode("utf-16") == "a [😀] Acme Corp 😀"


def test_every_two_way_byte_split_of_a_short_stream() -> None:
    body = build_stream([("text", ["Zen", "ith L", "abs [[reply_to:<"]), ("tool", ['{"thr', 'ead_id": "WIN', 'PATH"}'])])
    expect = run(body)
    for i in range(1, len(body)):
        assert run(body, [body[:i], body[i:]]) == expect, i
    blocks, _ = read_stream(expect)
    assert blocks[0]["text"] == "Acme Corp "
    assert json.loads(blocks[1]["json"]) == {"session_id": 'C:\\Users\\a "b"'}


def _events(body: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in body.split(b"\n\n") if e]


@given(texts, texts, st.data())
def test_event_aligned_chunks_take_the_pass_through_path_correctly(text, value, data) -> None:
    # one event per chunk, or a few: the chunk-level pass-through may apply
    args = json.dumps({"thread_id": value, "path": "WINPATH"})
    body = build_stream([("text", data.draw(splits(text))), ("tool", data.draw(splits(args, 12))),
                         ("text", data.draw(splits(text)))])
    evs = _events(body)
    k = data.draw(st.integers(1, 3))
    chunks = [b"".join(evs[i : i + k]) for i in range(0, len(evs), k)]
    assert run(body, chunks) == run(body, [body[i : i + 1] for i in range(len(body))])


def test_quiet_chunks_pass_through_without_framing() -> None:
    rules = Rules(mappings.load(REPO / "mappings"))
    s = AnthropicStream(rules.restorer({"[EMAIL_1]": "a@b.co"}))
    body = build_stream([("text", ["plain ", "prose ", "then [EMA", "IL_1] and more ", "prose"])])
    evs = _events(body)
    out = b"".join(s.feed(e) for e in evs) + s.flush()
    assert read_stream(out)[0][0]["text"] == "plain prose then a@b.co and more prose"
    assert s.events_in == len(evs)
    # only the events around the placeholder were framed and looked at
    assert s.events_changed == 2


def test_pass_through_never_skips_the_end_of_an_escape() -> None:
    # The first delta ends JSON text inside an escape (`\`); the second, `"`, has no
    # character that could begin a match — but the window must still see it, or `QX9`
    # after it would look like part of an escape and stay disguised.
    rules = Rules(mappings.from_dict({"literals": {"orig": "QX9"}}))
    s = AnthropicStream(rules.restorer({}))
    body = build_stream([("tool", ['{"a": "x\\', '"', 'QX9"}'])])
    out = b"".join(s.feed(e) for e in _events(body)) + s.flush()
    assert json.loads(read_stream(out)[0][0]["json"]) == {"a": 'x"orig'}


def test_after_a_mid_stream_error_the_held_tail_appears_once_and_nothing_follows() -> None:
    """An `error` event mid-stream ends the stream (the SDK raises there): the held tail
    goes out once, before the error; nothing after the error, not at the connection's
    end either (no second error, no second drain)."""
    body = build_stream([("text", ["hi Zenith La"])])
    cut = body.index(b"event: content_block_stop")
    err = sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Zenith Labs busy"}})
    up = body[:cut] + err
    for pieces in ([up], [up[i : i + 5] for i in range(0, len(up), 5)]):
        s = AnthropicStream(RULES.restorer({}))
        out = b"".join(s.feed(p) for p in pieces)
        out += s.flush() + s.flush()
        assert out.count(b"Zenith La") == 1 and out.count(b"event: error") == 1
        assert out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].startswith(b"event: error")  # last
        assert b"Acme Corp busy" in out  # the error's message is restored too
        f = Framer()
        evs = [e for e in f.feed(out) + f.flush() if e.data is not None]
        assert json.loads(evs[-1].data)["type"] == "error"
        assert s.state.value == "done"


# -- a block index spelled as a JSON float (base/channels.channel_index) ------------------


@given(texts, texts, st.data())
@example("Hi Zenith Labs nova", "thread_id", None)
def test_an_index_spelled_as_an_integral_float_is_the_same_block(text, value, data) -> None:
    """`0.0`, `0E0`, `-0` are the number 0 to every JSON reader: the same block, one
    window, whatever spelling each event uses and however the bytes are cut."""
    args = json.dumps({"thread_id": value})
    if data is None:
        text_p, args_p = [text[:5], text[5:]], [args]
        body = build_stream([("text", text_p), ("tool", args_p)]).replace(b'"index": 0}', b'"index": 0.0}')
        pieces = [body]
    else:
        text_p, args_p = data.draw(splits(text)), data.draw(splits(args, 12))
        plain = build_stream([("text", text_p), ("tool", args_p)]).decode()
        body = data.draw(respelled(plain)).encode()
        pieces = data.draw(byte_splits(body, 40))
    blocks, _ = read_stream(run(body, pieces))  # every event parses
    assert blocks[0]["text"] == R.text(text)
    assert json.loads(blocks[1]["json"]) == restore_value(json.loads(args))
    assert all(b["stopped"] for b in blocks.values())


def test_a_stop_spelled_as_a_float_delivers_the_held_tail() -> None:
    body = build_stream([("text", ["Hi nova"])]).replace(
        b'{"type": "content_block_stop", "index": 0}', b'{"type": "content_block_stop", "index": 0.0}')
    blocks, datas = read_stream(run(body))
    assert blocks[0]["text"] == "Hi nova-internal" and blocks[0]["stopped"]
    assert [d["type"] for d in datas].count("error") == 0


@pytest.mark.parametrize("spelling", [b"0.5", b'"0"', b"true", b"null", b"1e400"])
def test_an_index_that_is_no_integer_ends_the_stream_with_an_error(spelling) -> None:
    """No client files text under `0.5` or `"0"`: an explicit error, never a block of its own."""
    body = build_stream([("text", ["Hi Zen", "ith Labs ok"])])
    at = body.index(b'"index": 0, "delta": {"type": "text_delta", "text": "ith')
    body = body[:at] + b'"index": ' + spelling + body[at + len(b'"index": 0') :]
    _, datas = read_stream(run(body))
    assert datas[-1]["type"] == "error" and "`index` is not an integer" in datas[-1]["error"]["message"]
    assert not any("ith Labs" in json.dumps(d) for d in datas)
