"""OpenAI Chat Completions (apis/openai/chat.py): streams (channels, held tails in
the finishing chunk, drains) and whole bodies."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.openai import chat as openai_chat
from disguiselib.base.restore import restore_body
from openai_util import build_chat, chat_chunk, read_chat
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def run(cls, body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


@st.composite
def chat_streams(draw):
    """Two choices, each with content and two tool calls, interleaved at random."""
    n = draw(st.integers(1, 2))
    plan = {}
    for k in range(n):
        text = draw(texts)
        a0 = json.dumps({"thread_id": draw(texts), "path": "WINPATH"})
        a1 = json.dumps({"q": draw(texts)})
        plan[k] = (text, a0, a1)
    queues = []
    for k, (text, a0, a1) in plan.items():
        q = [("content", k, p) for p in draw(splits(text))]
        q += [("tool", k, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate(draw(splits(a0, 6)))]
        q += [("tool", k, 1, "acme_lookup" if i == 0 else None, p) for i, p in enumerate(draw(splits(a1, 6)))]
        q.append(("finish", k, "tool_calls"))
        queues.append(q)
    steps = []
    while any(queues):
        i = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        steps.append(queues[i].pop(0))
    return plan, steps


@given(chat_streams(), st.data())
def test_chat_channels_reassemble_to_the_whole_result(plan_steps, data) -> None:
    plan, steps = plan_steps
    body = build_chat(steps)
    out = run(openai_chat.ChatStream, body, data.draw(byte_splits(body, 30)))
    content, tools, _ = read_chat(out)
    for k, (text, a0, a1) in plan.items():
        assert content.get(k, "") == R.text(text)
        assert tools[(k, 0)]["name"] == "acme_lookup"
        assert json.loads(tools[(k, 0)]["arguments"]) == restore_value(json.loads(a0))
        assert json.loads(tools[(k, 1)]["arguments"]) == restore_value(json.loads(a1))


def test_tails_ride_in_the_finishing_chunk() -> None:
    body = build_chat([("content", 0, "see nova"), ("tool", 0, 0, "f", '{"a": "Zenith'),
                       ("tool", 0, 0, None, ' Labs"}'), ("finish", 0, "stop")])
    _, tools, chunks = read_chat(run(openai_chat.ChatStream, body))
    fin = next(c for c in chunks if c.get("choices") and c["choices"][0].get("finish_reason"))
    delta = fin["choices"][0]["delta"]
    assert delta["content"] == "nova-internal"
    assert json.loads(tools[(0, 0)]["arguments"]) == {"a": "Acme Corp"}


def test_index_only_tool_call_entry_added_where_finish_chunk_names_none() -> None:
    body = build_chat([("tool", 0, 3, "f", '{"a": "x"} nova'), ("finish", 0, "tool_calls")])
    _, _, chunks = read_chat(run(openai_chat.ChatStream, body))
    fin = next(c for c in chunks if c.get("choices") and c["choices"][0].get("finish_reason"))
    assert fin["choices"][0]["delta"]["tool_calls"] == [{"index": 3, "function": {"arguments": "nova-internal"}}]


def test_held_text_drained_before_done_without_finish() -> None:
    body = build_chat([("content", 0, "x nova"), ("content", 1, "y Zen")])
    out = run(openai_chat.ChatStream, body)
    content, _, _ = read_chat(out)
    assert content == {0: "x nova-internal", 1: "y Zen"}
    assert out.endswith(b"data: [DONE]\n\n")


def test_usage_chunk_and_unchanged_chunks_byte_identical() -> None:
    body = build_chat([("content", 0, "plain text."), ("finish", 0, "stop")])
    assert run(openai_chat.ChatStream, body) == body


def test_reasoning_fields_pass_untouched() -> None:
    body = chat_chunk([{"index": 0, "delta": {"reasoning_content": "Zenith Labs"}, "finish_reason": None}])
    body += b"data: [DONE]\n\n"
    assert run(openai_chat.ChatStream, body) == body


def test_too_many_channels_is_an_explicit_error() -> None:
    s = openai_chat.ChatStream(R)
    choices = [{"index": k, "delta": {"content": "nova"}, "finish_reason": None} for k in range(300)]
    out = s.feed(chat_chunk(choices))
    # the error, nothing after it; the tails held so far are dropped (issue 15: each may
    # be the start of a disguise)
    assert out.endswith(b"data: [DONE]\n\n")
    _, _, chunks = read_chat(out)
    assert "more than 256 channels" in chunks[-1]["error"]["message"]
    assert not any(c.get("choices") for c in chunks) and b"nova" not in out
    assert s.feed(chat_chunk(choices)) == b"" and s.flush() == b""


def test_recorded_chat_streams(fixtures) -> None:
    for f in sorted((fixtures / "openai").glob("chat_*.sse")):
        up = f.read_bytes().replace(b'"content":"', b'"content":"Zenith Labs [EMA').replace(
            b'"arguments":"{', b'"arguments":"{\\"thread_id\\": \\"WINPATH\\", ')
        want_c, want_t, _ = read_chat(up)
        got_c, got_t, _ = read_chat(run(openai_chat.ChatStream, up, [up[i : i + 13] for i in range(0, len(up), 13)]))
        assert got_c == {k: R.text(v) for k, v in want_c.items()}, f.name
        for key, t in want_t.items():
            assert got_t[key]["name"] == R.value(t["name"])
            assert json.loads(got_t[key]["arguments"]) == restore_value(json.loads(t["arguments"])), f.name


# -- whole bodies ----------------------------------------------------------------------

def test_chat_completion_body() -> None:
    body = json.dumps({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {
        "role": "assistant", "content": "Zenith Labs [[reply_to_current]]", "reasoning_content": "Zenith Labs",
        "tool_calls": [{"id": "t", "type": "function", "function": {
            "name": "crm_lookup", "arguments": '{"thread_id": "WINPATH"}'}}]}, "finish_reason": "tool_calls"}]}).encode()
    out = json.loads(restore_body(body, openai_chat.CHAT_RESPONSE, R))
    msg = out["choices"][0]["message"]
    assert msg["content"] == "Acme Corp "
    assert msg["reasoning_content"] == "Zenith Labs"
    assert msg["tool_calls"][0]["function"]["name"] == "acme_lookup"
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"session_id": 'C:\\Users\\a "b"'}


def test_finish_chunk_gets_tails_inserted_and_keeps_every_other_byte() -> None:
    fin = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":'
           b'[{"index":0,"delta":{},"logprobs":{"content":[{"token":"x","logprob":-1.0e-05}]},'
           b'"finish_reason":"tool_calls"}],"obfuscation":"Zen"}\n\n')
    body = build_chat([("content", 0, "a nova"), ("tool", 0, 2, "f", '{"a": 1} Zen')], usage=False)
    body = body.replace(b"data: [DONE]\n\n", fin + b"data: [DONE]\n\n")
    out = run(openai_chat.ChatStream, body)
    expect = fin.replace(b'"delta":{}', b'"delta":{"content":"nova-internal","tool_calls":'
                                       b'[{"index":2,"function":{"arguments":"Zen"}}]}')
    assert expect in out


def test_finish_chunk_with_null_content_is_rebuilt() -> None:
    fin = chat_chunk([{"index": 0, "delta": {"content": None}, "finish_reason": "stop"}])
    body = build_chat([("content", 0, "a nova")], usage=False).replace(b"data: [DONE]\n\n", fin + b"data: [DONE]\n\n")
    content, _, chunks = read_chat(run(openai_chat.ChatStream, body))
    assert content == {0: "a nova-internal"}
    assert chunks[-1]["choices"][0]["delta"]["content"] == "nova-internal"


def test_finish_chunk_carrying_its_own_content_flushes_into_it() -> None:
    fin = chat_chunk([{"index": 0, "delta": {"content": "!"}, "finish_reason": "stop"}])
    body = build_chat([("content", 0, "a [EMA")], usage=False).replace(b"data: [DONE]\n\n", fin + b"data: [DONE]\n\n")
    content, _, chunks = read_chat(run(openai_chat.ChatStream, body))
    assert content == {0: "a [EMA!"}


def test_held_tail_goes_out_before_an_error_chunk() -> None:
    err = b'data: {"error":{"message":"Zenith Labs is overloaded","type":"server_error"}}\n\n'
    body = build_chat([("content", 0, "Partial Zen")], usage=False).replace(b"data: [DONE]\n\n", err)
    out = run(openai_chat.ChatStream, body)
    tail_at = out.index(b'"content":"Zen"')
    assert tail_at < out.index(b"Acme Corp is overloaded")


def test_drained_tail_chunk_is_a_whole_chunk() -> None:
    body = build_chat([("content", 0, "Hello Zen")], usage=False)
    _, _, chunks = read_chat(run(openai_chat.ChatStream, body))
    assert chunks[-1]["choices"][0]["delta"] == {"content": "Zen"}
    assert {k: chunks[-1][k] for k in ("id", "object", "created", "model")} == {
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt"}


def test_a_choice_index_is_read_as_json_readers_read_it() -> None:
    """`0.0` is choice 0 (base/channels.channel_index); `0.5` is no choice any client
    files text under: the stream ends with an explicit error, not a channel of its own."""
    body = build_chat([("content", 0, "Hi Zen"), ("content", 0, "ith Labs ok"), ("finish", 0, "stop")])
    at = body.rindex(b'"index":0', 0, body.index(b"ith Labs"))
    for spelling, ok in ((b"0.0", True), (b"0E0", True), (b"0.5", False), (b'"0"', False)):
        new = body[:at] + b'"index":' + spelling + body[at + len(b'"index":0') :]
        out = run(openai_chat.ChatStream, new)
        if ok:
            assert read_chat(out)[0][0] == "Hi Acme Corp ok"
        else:
            assert b"`index` is not an integer" in out and b"ith Labs" not in out
