"""Cohere v2 Chat streams: per-channel windows (content index, tool call index, the tool
plan), disguises split across deltas and reads restored, tool arguments restored as JSON,
thinking passed byte-identical, the end and the error in Cohere's shape."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from disguiselib.apis.cohere.stream import SPEC, CohereStream
from disguiselib.inspect.sseview import parse_stream
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits, texts

SHAPES = REPO / "tests" / "fixtures" / "shapes" / "cohere"
R = RULES.restorer(PLACEHOLDERS)


def event(doc: dict, compact: bool = False) -> bytes:
    """One event; compact: the API's own spacing (the fast paths), else spaced (parsed)."""
    data = json.dumps(doc, separators=(",", ":") if compact else (", ", ": "))
    return f"event: {doc['type']}\ndata: {data}\n\n".encode()


def msg(**m) -> dict:
    return {"message": m}


def build(
    plan: list[str], thinking: list[str], text: list[str], args: list[str], end: bool = True, compact: bool = False
) -> bytes:
    """A stream in the API's order: tool plan, a thinking and a text content, a tool call."""

    def ev(doc: dict) -> bytes:
        return event(doc, compact)

    out = [ev({"id": "m1", "type": "message-start", "delta": msg(role="assistant", content=[], tool_plan="",
                                                                  tool_calls=[], citations=[])})]  # fmt: skip
    out += [ev({"type": "tool-plan-delta", "delta": msg(tool_plan=p)}) for p in plan]
    for i, (kind, pieces) in enumerate((("thinking", thinking), ("text", text))):
        out.append(ev({"type": "content-start", "index": i, "delta": msg(content={"type": kind, kind: ""})}))
        out += [ev({"type": "content-delta", "index": i, "delta": msg(content={kind: p})}) for p in pieces]
        out.append(ev({"type": "content-end", "index": i}))
    call = {"id": "crm_lookup_1", "type": "function", "function": {"name": "crm_lookup", "arguments": ""}}
    out.append(ev({"type": "tool-call-start", "index": 0, "delta": msg(tool_calls=call)}))
    out += [ev({"type": "tool-call-delta", "index": 0, "delta": msg(tool_calls={"function": {"arguments": a}})})
            for a in args]  # fmt: skip
    out.append(ev({"type": "tool-call-end", "index": 0}))
    if end:
        out.append(ev({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {}}}))
    return b"".join(out)


def run(pieces: list[bytes], fast: bool = True) -> bytes:
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    s.fast = fast
    return b"".join(s.feed(p) for p in pieces) + s.flush()


def read(out: bytes) -> tuple[dict, list[dict]]:
    """Every event parsed (its `event:` line equal to its `type`), and each channel's text
    reassembled as the SDK's user would."""
    chans: dict = {}
    docs = []
    for raw in out.split(b"\n\n")[:-1]:
        lines = raw.decode("utf-8").split("\n")
        name = lines[0].removeprefix("event: ")
        data = "\n".join(ln.removeprefix("data: ") for ln in lines[1:])
        doc = json.loads(data)
        assert doc["type"] == name
        docs.append(doc)
        m = (doc.get("delta") or {}).get("message") or {}
        if doc["type"] in ("content-start", "content-delta"):
            for k, v in m["content"].items():
                if k != "type":
                    chans[(k, doc["index"])] = chans.get((k, doc["index"]), "") + v
        elif doc["type"] == "tool-plan-delta":
            chans["plan"] = chans.get("plan", "") + m["tool_plan"]
        elif doc["type"] in ("tool-call-start", "tool-call-delta"):
            chans["args"] = chans.get("args", "") + m["tool_calls"]["function"]["arguments"]
            chans["name"] = m["tool_calls"]["function"].get("name", chans.get("name"))
    return chans, docs


def check(chans: dict, docs: list[dict], plan: str, thinking: str, text: str, args: str) -> None:
    assert chans.get("plan", "") == R.text(plan)
    assert chans[("thinking", 0)] == thinking  # never restored
    assert chans[("text", 1)] == R.text(text)
    assert json.loads(chans["args"]) == restore_value(json.loads(args))
    assert chans["name"] == "acme_lookup"
    types = [d["type"] for d in docs]
    assert types[-1] == "message-end" and types.count("message-end") == 1
    # a channel's text is all out before the event that ends it
    assert max(i for i, t in enumerate(types) if t == "content-delta") < len(types) - types[::-1].index("content-end")
    assert max(i for i, t in enumerate(types) if t == "tool-call-delta") < types.index("tool-call-end")
    assert max((i for i, t in enumerate(types) if t == "tool-plan-delta"), default=-1) < types.index("content-start")


@settings(max_examples=150)
@given(texts, texts, texts, texts, st.data())
def test_channels_reassemble_to_the_whole_restore_whatever_the_splits(plan, thinking, text, value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH", "n": 1.5})
    parts = data.draw(splits(plan)), data.draw(splits(thinking)), data.draw(splits(text)), data.draw(splits(args, 12))
    body = build(*parts)
    pieces = data.draw(byte_splits(body, 40))
    out = run(pieces)
    chans, docs = read(out)
    check(chans, docs, plan, thinking, text, args)
    # the fast paths (on_raw, the exact delta shape) give what parsing every event gives
    assert out == run(pieces, fast=False)
    compact = build(*parts, compact=True)
    out = run(data.draw(byte_splits(compact, 40)))
    assert out == run([compact], fast=False)
    check(*read(out), plan, thinking, text, args)


def test_every_split_point_of_a_short_case() -> None:
    text = "Hi Zenith Labs, mail [EMAIL_1] [[reply_to:<"
    args = json.dumps({"thread_id": "Zenith Labs", "p": "WINPATH"})
    for i in range(len(text) + 1):
        for j in (0, 7, 15, len(args)):
            chans, docs = read(run([build([text[:i], text[i:]], ["Zen"], [text[:i], text[i:]], [args[:j], args[j:]])]))
            check(chans, docs, text, "Zen", text, args)
    body = build(["Zenith La", "bs"], ["x"], ["nova", "-", "[EMAIL_", "2]"], ['{"thread_', 'id": "Zenith Labs"}'])
    whole = run([body])
    for k in range(1, len(body)):
        assert run([body[:k], body[k:]]) == whole, k
    chans, docs = read(whole)
    check(chans, docs, "Zenith Labs", "x", "nova-[EMAIL_2]", '{"thread_id": "Zenith Labs"}')


def test_a_held_tail_goes_out_in_its_channels_own_delta_before_its_end() -> None:
    out = run([build(["see nova"], [], ["see nova"], ['{"a": "nova"}'])])
    chans, docs = read(out)
    assert chans["plan"] == chans[("text", 1)] == "see nova-internal"
    deltas = [d["delta"]["message"]["content"]["text"] for d in docs if d["type"] == "content-delta"]
    assert deltas == ["see ", "nova-internal"]
    plan = [d for d in docs if d["type"] == "tool-plan-delta"]
    assert [d["delta"]["message"]["tool_plan"] for d in plan] == ["see ", "nova-internal"]
    assert json.loads(chans["args"]) == {"a": "nova-internal"}


def test_the_reference_streams_are_restored() -> None:
    chans, docs = read(run([(SHAPES / "chat_stream.sse").read_bytes()]))
    assert chans[("thinking", 0)] == "Zenith Labs asked"
    assert chans[("text", 1)] == "Acme Corp ordered; write to bob@corp.example.com."
    cite = next(d for d in docs if d["type"] == "citation-start")["delta"]["message"]["citations"]
    assert cite["text"] == "Acme Corp" and cite["sources"][0]["document"]["title"] == "Acme Corp orders"
    chans, docs = read(run([(SHAPES / "chat_stream_tools.sse").read_bytes()]))
    assert chans["plan"] == "I will look up Acme Corp"
    assert json.loads(chans["args"]) == {"session_id": "Acme Corp", "note": 'C:\\Users\\a "b"'}


def test_a_stream_without_disguises_is_byte_identical() -> None:
    body = build(["a plan."], ["Zenith Labs"], ["plain ", "prose"], ['{"k": 1}']).replace(b"crm_lookup", b"get_time")
    assert run([body]) == body


def test_a_cut_stream_gets_its_held_tails_then_an_error_in_cohere_shape() -> None:
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    body = build([], [], ["see nova"], ["{}"], end=False)
    out = s.feed(body[: body.index(b'event: content-end\ndata: {"type": "content-end", "index": 1}')]) + s.flush()
    chans, docs = read(out)
    assert chans[("text", 1)] == "see nova-internal"
    assert docs[-1]["type"] == "message-end" and docs[-1]["delta"]["finish_reason"] == "ERROR"
    assert "ended before message-end" in docs[-1]["delta"]["error"]
    assert s.failed


def test_the_addons_own_failure_drops_held_text_and_ends_in_cohere_shape() -> None:
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    body = build([], [], ["see nova"], ["{}"], end=False)
    head = body[: body.index(b'event: content-end\ndata: {"type": "content-end", "index": 1}')]
    out = s.feed(head) + s.feed(b"event: content-delta\ndata: \xff\n\n") + s.feed(b"more") + s.flush()
    chans, docs = read(out)
    assert chans[("text", 1)] == "see "  # the held `nova` may be part of a disguise: dropped
    assert docs[-1]["type"] == "message-end" and "not UTF-8" in docs[-1]["delta"]["error"]
    assert s.failed and s.withheld == len("nova")


def test_the_apis_own_delta_shapes_take_the_fast_path() -> None:
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    for doc in (
        {"type": "content-delta", "index": 1, "delta": msg(content={"text": "a Zen"})},
        {"type": "content-delta", "index": 0, "delta": msg(content={"thinking": "Zenith Labs"})},
        {"type": "tool-call-delta", "index": 0, "delta": msg(tool_calls={"function": {"arguments": '{"a": "Zen'}})},
    ):
        assert s.on_raw(event(doc, compact=True)) is not None, doc
        assert s.on_raw(event(doc)) is None  # another spacing: parsed
    # the plan holds text: any other delta is parsed, so that the plan's tail goes first
    assert s.on_raw(event({"type": "tool-plan-delta", "delta": msg(tool_plan="Zen")}, compact=True)) == []
    assert s.on_raw(event({"type": "content-delta", "index": 1, "delta": msg(content={"text": "x"})}, True)) is None
    # a plan that holds nothing keeps nothing from the fast path
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    assert s.on_raw(event({"type": "tool-plan-delta", "delta": msg(tool_plan="a plan.")}, compact=True))
    assert s.on_raw(event({"type": "content-delta", "index": 1, "delta": msg(content={"text": "x"})}, True))
    # a delta whose type and member disagree is read as its type says
    mixed = {"type": "content-delta", "index": 0, "delta": msg(tool_plan="Zenith Labs")}
    assert s.on_raw(event(mixed, compact=True)) is None


def test_message_end_terminates_and_what_follows_passes() -> None:
    s = CohereStream(RULES.restorer(PLACEHOLDERS))
    s.feed(event({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}))
    assert s.terminated
    assert s.feed(b"data: [DONE]\n\n") == b"data: [DONE]\n\n"
    assert s.flush() == b"" and not s.failed


def test_events_of_other_types_and_debug_are_restored_whole() -> None:
    out = run([event({"type": "debug", "prompt": "Zenith Labs"}), event({"type": "future-event", "x": {"Zenith Labs": "a"}}),
               event({"type": "message-end", "delta": {"error": "failed for Zenith Labs"}})])  # fmt: skip
    _, docs = read(out)
    assert docs[0]["prompt"] == "Acme Corp" and docs[1]["x"] == {"Acme Corp": "a"}
    assert docs[2]["delta"]["error"] == "failed for Acme Corp"


def test_the_views_read_its_channels_and_its_end() -> None:
    s = parse_stream((SHAPES / "chat_stream_tools.sse").read_bytes())
    assert s.terminal and not s.errors
    assert s.channels["tool plan"].text == "I will look up Zenith Labs"
    assert s.channels["tool_call 0 arguments"].name == "crm_lookup"
    assert {"tool plan", "tool_call 0 arguments"} <= set(s.channels)
    s = parse_stream((SHAPES / "chat_stream.sse").read_bytes())
    assert {"content 0 thinking", "content 1 text"} <= set(s.channels) and s.terminal
    cut = CohereStream(RULES.restorer(PLACEHOLDERS)).flush()
    assert parse_stream(cut).errors and SPEC.error_event is None
