"""The Assistants run stream (apis/openai/assistants.py): text split across
`thread.message.delta` events and tool call arguments across `thread.run.step.delta`
events come back as the whole-text restore, every event parses, `done` ends it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib import pipeline
from disguiselib.apis import registry
from disguiselib.apis.openai import stored as openai_stored
from disguiselib.apis.openai.assistants import EVENTS, AssistantStream
from disguiselib.base.restore import restore_json
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def ev(name: str, doc: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(doc)}\n\n".encode()  # ASCII escapes (lone surrogates)


def text_delta(mid: str, idx: int, text: str) -> bytes:
    return ev("thread.message.delta", {"id": mid, "object": "thread.message.delta",
                                       "delta": {"content": [{"index": idx, "type": "text",
                                                              "text": {"value": text, "annotations": []}}]}})  # fmt: skip


def args_delta(sid: str, idx: int, args: str) -> bytes:
    call = {"index": idx, "type": "function", "function": {"arguments": args}}
    return ev("thread.run.step.delta", {"id": sid, "object": "thread.run.step.delta",
                                        "delta": {"step_details": {"type": "tool_calls", "tool_calls": [call]}}})  # fmt: skip


def read(body: bytes) -> tuple[dict, dict, list[str]]:
    """(text per (message, index), arguments per (step, index), event names) of a stream."""
    texts_: dict = {}
    args: dict = {}
    names: list[str] = []
    done = False
    for block in body.decode("utf-8", "surrogatepass").split("\n\n"):
        if not block:
            continue
        assert not done, "nothing after done"
        lines = block.split("\n")
        name = lines[0].removeprefix("event: ")
        data = "\n".join(ln.removeprefix("data: ") for ln in lines[1:])
        assert name in EVENTS, name
        names.append(name)
        if data == "[DONE]":
            done = True
            continue
        doc = json.loads(data)
        if name == "thread.message.delta":
            for p in doc["delta"]["content"]:
                k = (doc["id"], p["index"])
                texts_[k] = texts_.get(k, "") + p["text"]["value"]
        elif name == "thread.run.step.delta":
            for c in doc["delta"]["step_details"]["tool_calls"]:
                k = (doc["id"], c["index"])
                args[k] = args.get(k, "") + c["function"]["arguments"]
    assert done
    return texts_, args, names


@given(st.lists(texts, min_size=1, max_size=2), st.lists(texts, max_size=2), st.data())
def test_stream_reassembles_to_the_whole_restore(msg_texts: list[str], arg_texts: list[str], data) -> None:
    queues = []
    for k, t in enumerate(msg_texts):
        queues.append([text_delta("msg_1", k, p) for p in data.draw(splits(t))])
    arguments = [json.dumps({"q": t, "n": [1, t]}) for t in arg_texts]
    for k, a in enumerate(arguments):
        queues.append([args_delta("step_1", k, p) for p in data.draw(splits(a))])
    events = [ev("thread.run.created", {"id": "run_1", "object": "thread.run", "instructions": "Zenith Labs"})]
    while any(queues):
        i = data.draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        events.append(queues[i].pop(0))
    whole_msg = {"id": "msg_1", "object": "thread.message", "role": "assistant",
                 "content": [{"type": "text", "text": {"value": t, "annotations": []}} for t in msg_texts]}  # fmt: skip
    whole_step = {"id": "step_1", "object": "thread.run.step",
                  "step_details": {"type": "tool_calls", "tool_calls": [
                      {"id": f"call_{k}", "type": "function", "function": {"name": "f", "arguments": a}}
                      for k, a in enumerate(arguments)]}}  # fmt: skip
    events += [ev("thread.message.completed", whole_msg), ev("thread.run.step.completed", whole_step)]
    body = b"".join(events) + b"event: done\ndata: [DONE]\n\n"
    s = AssistantStream(RULES.restorer(PLACEHOLDERS))
    s.fast = data.draw(st.booleans())
    out = b"".join(s.feed(p) for p in data.draw(byte_splits(body))) + s.flush()
    got_texts, got_args, names = read(out)
    assert names[0] == "thread.run.created" and names[-1] == "done"
    for k, t in enumerate(msg_texts):
        assert got_texts.get(("msg_1", k), "") == R.text(t)
    want_step = json.loads(restore_json(json.dumps(whole_step), openai_stored.RUN_STEP, R) or json.dumps(whole_step))
    for k, _ in enumerate(arguments):
        want = want_step["step_details"]["tool_calls"][k]["function"]["arguments"]
        assert json.loads(got_args.get(("step_1", k), "")) == json.loads(want)
    # the whole objects after the deltas, restored by the stored-endpoint tables
    blocks = out.decode("utf-8", "surrogatepass").split("\n\n")
    completed = next(b for b in blocks if b.startswith("event: thread.message.completed"))
    doc = json.loads(completed.split("\n", 1)[1].removeprefix("data: "))
    assert [p["text"]["value"] for p in doc["content"]] == [R.text(t) for t in msg_texts]


def test_a_disguise_split_across_deltas_is_restored_before_the_message_completes() -> None:
    s = AssistantStream(RULES.restorer(PLACEHOLDERS))
    body = (text_delta("msg_1", 0, "Hi Zen") + text_delta("msg_1", 0, "ith La")
            + ev("thread.message.completed", {"id": "msg_1", "content": [
                {"type": "text", "text": {"value": "Hi Zenith La", "annotations": []}}]})
            + b"event: done\ndata: [DONE]\n\n")  # fmt: skip
    out = s.feed(body) + s.flush()
    texts_, _, names = read(out)
    assert texts_ == {("msg_1", 0): "Hi Zenith La"}
    # the held tail goes out before the object that repeats the whole text
    assert names[-2:] == ["thread.message.completed", "done"] and set(names[:-2]) == {"thread.message.delta"}
    s = AssistantStream(RULES.restorer(PLACEHOLDERS))
    out = s.feed(text_delta("msg_1", 0, "Hi Zen") + text_delta("msg_1", 0, "ith Labs!")) + s.feed(
        b"event: done\ndata: [DONE]\n\n"
    )
    assert read(out)[0] == {("msg_1", 0): "Hi Acme Corp!"}


def test_a_stream_cut_before_done_ends_with_an_error_event_the_sdk_raises_at() -> None:
    s = AssistantStream(RULES.restorer(PLACEHOLDERS))
    out = s.feed(text_delta("msg_1", 0, "Hi Zen")) + s.flush()
    blocks = [b for b in out.decode().split("\n\n") if b]
    assert blocks[-2].startswith("event: error\n") and json.loads(blocks[-2].split("data: ", 1)[1])["error"]
    assert blocks[-1] == "event: done\ndata: [DONE]"
    assert s.failed


def test_a_streamed_run_is_read_as_the_assistants_stream() -> None:
    for method, path in [("POST", "/v1/threads/t/runs"), ("POST", "/v1/threads/runs"),
                         ("POST", "/v1/threads/t/runs/r/submit_tool_outputs")]:  # fmt: skip
        api = registry.recognise(method, path)
        assert api is not None and api.stream is AssistantStream, path
        body = text_delta("msg_1", 0, "Zenith Labs") + b"event: done\ndata: [DONE]\n\n"
        out = pipeline.restore_whole(api, RULES.restorer({}), body, "text/event-stream", path)
        assert read(out)[0] == {("msg_1", 0): "Acme Corp"}
    # a run that is JSON is restored as before
    api = registry.recognise("POST", "/v1/threads/t/runs")
    assert api is not None
    out = pipeline.restore_whole(api, RULES.restorer({}), json.dumps({"instructions": "Zenith Labs"}).encode(),
                                 "application/json", "/v1/threads/t/runs")  # fmt: skip
    assert json.loads(out)["instructions"] == "Acme Corp"


def test_a_recorded_event_is_read_by_its_object() -> None:
    api = registry.recognise("POST", "/v1/threads/t/runs")
    assert api is not None and api.events is not None
    for doc in [json.loads(text_delta("m", 0, "Zenith Labs").split(b"data: ")[1]),
                {"object": "thread.run", "instructions": "Zenith Labs", "id": "Zenith Labs"}]:  # fmt: skip
        new = restore_json(json.dumps(doc), api.event_rule, R)
        assert new is not None and "Acme Corp" in new
    assert json.loads(new)["id"] == "Zenith Labs"  # an identifier is left alone
    image = {"id": "m", "object": "thread.message.delta",
             "delta": {"content": [{"index": 1, "type": "image_file", "image_file": {"file_id": "Zenith Labs"}}]}}  # fmt: skip
    assert restore_json(json.dumps(image), api.event_rule, R) is None  # a file id, in a delta's table


def test_more_channels_holding_text_than_it_keeps_ends_the_stream_with_an_error() -> None:
    from disguiselib.base.holdback import MAX_CHANNELS

    s = AssistantStream(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(text_delta(f"msg_{k}", 0, "Zen")) for k in range(MAX_CHANNELS + 1))
    assert s.failed and b"event: error" in out and out.endswith(b"event: done\ndata: [DONE]\n\n")


def test_a_recorded_stream_reads_as_channels_in_a_view() -> None:
    from disguiselib.inspect import sseview

    body = (ev("thread.run.created", {"id": "run_1", "object": "thread.run", "status": "queued"})
            + text_delta("msg_1", 0, "Hi ") + args_delta("step_1", 0, '{"a"') + text_delta("msg_1", 0, "there")
            + args_delta("step_1", 0, ": 1}") + b"event: done\ndata: [DONE]\n\n")  # fmt: skip
    s = sseview.parse_stream(body)
    assert s.terminal
    assert s.channels["message msg_1 part 0"].text == "Hi there"
    call = s.channels["step step_1 call 0"]
    assert call.text == '{"a": 1}' and call.kind == "json"
