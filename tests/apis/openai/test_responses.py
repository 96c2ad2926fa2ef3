"""OpenAI Responses (apis/openai/responses.py): typed stream events, a window per
(item, content index, field), held tails before their `*.done` event, gapless
`sequence_number`s; whole response objects."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base.restore import restore_body
from disguiselib.wire.sse import Framer
from openai_util import _resp_event, build_responses, read_responses
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def run(cls, body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


# -- Responses -------------------------------------------------------------------------

@given(texts, texts, st.data(), st.booleans())
@example("Zenith Labs [EMA", "nova", None, False)
@example("Zenith Labs [EMA", "nova", None, True)
def test_responses_deltas_snapshots_and_numbering(text, value, data, spaced) -> None:
    args = json.dumps({"thread_id": value, "p": "WINPATH"})
    if data is None:
        tp, ap, pieces = [text[:4], text[4:]], [args[:9], args[9:]], None
    else:
        tp, ap = data.draw(splits(text)), data.draw(splits(args, 10))
        pieces = None
    body = build_responses(tp, ap, spaced=spaced)
    if data is not None:
        pieces = data.draw(byte_splits(body, 30))
    got = read_responses(run(openai_responses.ResponsesStream, body, pieces))
    assert got["text"] == R.text(text)
    assert json.loads(got["args"]) == restore_value(json.loads(args))
    bt = got["by_type"]
    # every *.done snapshot equals the concatenation of the restored deltas received
    assert bt["response.output_text.done"][0]["text"] == got["text"]
    assert bt["response.content_part.done"][0]["part"]["text"] == got["text"]
    assert bt["response.function_call_arguments.done"][0]["arguments"] == got["args"]
    assert bt["response.output_item.done"][1]["item"]["arguments"] == got["args"]
    assert bt["response.output_item.added"][1]["item"]["name"] == "acme_lookup"
    final = bt["response.completed"][0]["response"]
    assert final["output"][0]["content"][0]["text"] == got["text"]
    assert final["output"][1]["arguments"] == got["args"]
    assert final["instructions"] == "You help Acme Corp"
    # held tails come before their done event
    types = [e["type"] for e in got["events"]]
    assert max(i for i, t in enumerate(types) if t == "response.output_text.delta") < types.index(
        "response.output_text.done")


def test_recorded_responses_streams(fixtures) -> None:
    for f in sorted((fixtures / "openai").glob("responses_*.sse")):
        body = f.read_bytes()
        up = body.replace(b'"delta":"', b'"delta":"Zenith Labs nova.c').replace(
            b'"text":"', b'"text":"Zenith Labs nova.c')
        out = run(openai_responses.ResponsesStream, up, [up[i : i + 17] for i in range(0, len(up), 17)])
        got = read_responses(out)
        want = read_responses(up)
        assert got["text"] == R.text(want["text"]), f.name
        if want["args"]:
            assert got["args"] == R.json_text(want["args"]), f.name
        for e in got["by_type"].get("response.reasoning_summary_text.delta", []):
            assert "Zenith Labs" in e["delta"]  # reasoning untouched



def test_responses_body_and_errors(fixtures) -> None:
    body = json.dumps({"id": "r", "object": "response", "output": [
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "Zenith Labs"}],
         "encrypted_content": "Zenith Labs=="},
        {"type": "message", "id": "m", "content": [{"type": "output_text", "text": "Zenith Labs", "annotations": []},
                                                   {"type": "refusal", "refusal": "no Zenith Labs"}]},
        {"type": "function_call", "id": "f", "call_id": "c", "name": "crm_lookup", "arguments": '{"a":"[EMAIL_2]"}'}]}).encode()
    out = json.loads(restore_body(body, openai_responses.RESPONSE_OBJECT, R))
    assert out["output"][0]["summary"][0]["text"] == "Zenith Labs"
    assert out["output"][0]["encrypted_content"] == "Zenith Labs=="
    assert out["output"][1]["content"][0]["text"] == "Acme Corp"
    assert out["output"][1]["content"][1]["refusal"] == "no Acme Corp"
    assert out["output"][2]["name"] == "acme_lookup"
    assert json.loads(out["output"][2]["arguments"]) == {"a": 'q"uote\\d@x.io'}
    err = b'{"error":{"message":"bad Zenith Labs","type":"invalid_request_error"}}'
    assert b"bad Acme Corp" in restore_body(err, openai_chat.CHAT_RESPONSE, R)
    for f in sorted((fixtures / "openai").glob("*.json")):
        if not f.name.endswith(".request.json"):
            rule = openai_responses.RESPONSE_OBJECT if f.name.startswith("responses") else openai_chat.CHAT_RESPONSE
            assert restore_body(f.read_bytes(), rule, RULES.restorer({})) == f.read_bytes(), f.name




# -- endings and numbering (issue 14: behaviours a mutation sample found unchecked) ------


def _ev(t: str, seq: int, **fields) -> bytes:
    return _resp_event(t, seq, **fields)


def _events(body: bytes) -> list[dict]:
    f = Framer()
    return [json.loads(e.data) for e in f.feed(body) + f.flush() if e.data is not None]


def _gapless_from_zero(events: list[dict]) -> None:
    seqs = [e["sequence_number"] for e in events]
    assert seqs == list(range(len(seqs))), seqs


def _held_stream() -> list[bytes]:
    """Two channels each ending in a held tail (`nova` may grow into `nova.cloud`; `[EMA`
    into a placeholder), and no response.completed."""
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    fc = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "crm_lookup", "arguments": ""}
    return [
        _ev("response.created", 0, response={"id": "r", "object": "response", "status": "in_progress", "output": []}),
        _ev("response.output_item.added", 1, output_index=0, item=msg),
        _ev("response.output_text.delta", 2, item_id="msg_1", output_index=0, content_index=0,
            delta="hello Zenith Labs at nova", logprobs=[]),
        _ev("response.output_item.added", 3, output_index=1, item=fc),
        _ev("response.function_call_arguments.delta", 4, item_id="fc_1", output_index=1, delta='{"to": "[EMAIL_1'),
    ]  # fmt: skip


@pytest.mark.parametrize("chunk", [0, 1, 7])
def test_a_stream_drained_at_its_end_keeps_gapless_numbers_error_included(chunk: int) -> None:
    body = b"".join(_held_stream())
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    events = _events(run(openai_responses.ResponsesStream, body, pieces))
    _gapless_from_zero(events)
    assert events[-1]["type"] == "error" and "ended before" in events[-1]["message"]
    assert sum(e["type"] == "error" for e in events) == 1
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    args = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert text == "hello Acme Corp at nova-internal"
    assert args == '{"to": "[EMAIL_1'  # an unfinished placeholder stays as it came


def test_held_text_flushed_by_response_completed_is_numbered_before_it() -> None:
    body = b"".join(_held_stream()) + _ev("response.completed", 5, response={
        "id": "r", "object": "response", "status": "completed", "output": []})  # fmt: skip
    events = _events(run(openai_responses.ResponsesStream, body))
    _gapless_from_zero(events)
    types = [e["type"] for e in events]
    assert types[-1] == "response.completed" and "error" not in types
    assert types.count("response.output_text.delta") == 2  # the upstream delta and the tail


def test_a_stream_failing_midway_keeps_gapless_numbers_error_included() -> None:
    """A stream that cannot be reversed further (an event that is not UTF-8 while text is
    held) ends with the held tails and one error event, all numbered on from the last
    event the client got; nothing after the error."""
    s = openai_responses.ResponsesStream(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(p) for p in _held_stream())
    out += s.feed(b"event: response.output_text.delta\ndata: {\"x\": \"\xff\"}\n\n")
    out += s.feed(_ev("response.output_text.delta", 6, item_id="msg_1", output_index=0, content_index=0,
                      delta="more", logprobs=[]))  # fmt: skip
    out += s.flush()
    events = _events(out)
    _gapless_from_zero(events)
    assert events[-1]["type"] == "error" and "not UTF-8" in events[-1]["message"]
    assert s.failed


def test_a_position_keyed_channel_gets_its_tail_before_its_output_item_done() -> None:
    """Shell commands name their item by position only (output_index, command_index): the
    tail held for that channel goes out before the item's output_item.done, numbered."""
    item = {"id": "sh_1", "type": "shell_call", "status": "in_progress"}
    body = b"".join([
        _ev("response.output_item.added", 0, output_index=0, item=item),
        _ev("response.shell_call_command.delta", 1, output_index=0, command_index=0, delta="cd nova"),
        _ev("response.output_item.done", 2, output_index=0, item={**item, "status": "completed"}),
        _ev("response.completed", 3, response={"id": "r", "object": "response", "status": "completed", "output": []}),
    ])  # fmt: skip
    events = _events(run(openai_responses.ResponsesStream, body, [body[i : i + 5] for i in range(0, len(body), 5)]))
    _gapless_from_zero(events)
    types = [e["type"] for e in events]
    deltas = [i for i, t in enumerate(types) if t == "response.shell_call_command.delta"]
    assert max(deltas) < types.index("response.output_item.done")
    assert "".join(events[i]["delta"] for i in deltas) == "cd nova-internal"
    assert all(events[i]["output_index"] == 0 and events[i]["command_index"] == 0 for i in deltas)


def _final_response(body: bytes) -> bytes:
    """The response object of a Responses stream's last event, as one JSON body."""
    last = body.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    data = next(ln[6:] for ln in last.split(b"\n") if ln.startswith(b"data: "))
    return json.dumps(json.loads(data)["response"]).encode()


def _counts(body: bytes, pieces: list[bytes] | None = None) -> tuple[int, int]:
    r = RULES.restorer(PLACEHOLDERS)
    s = openai_responses.ResponsesStream(r)
    for p in pieces or [body]:
        s.feed(p)
    s.flush()
    return r.restored, r.stripped


@given(texts, texts, st.data())
@example("Zenith Labs, [EMAIL_1], Zenith Labs, nova [[reply_to_current]] Zenith Labs", "nova", None)
def test_responses_stream_counts_each_original_once(text, value, data) -> None:
    """A Responses stream says its text in deltas, then again in *.done, content_part.done,
    output_item.done and response.completed: five masked originals read "restored 25".
    The stream counts what the same answer counts as one body."""
    args = json.dumps({"thread_id": value})
    if data is None:
        body, pieces = build_responses([text[:7], text[7:]], [args]), None
    else:
        body = build_responses(data.draw(splits(text)), data.draw(splits(args, 6)))
        pieces = data.draw(byte_splits(body, 12))
    whole = RULES.restorer(PLACEHOLDERS)
    restore_body(_final_response(body), openai_responses.RESPONSE_OBJECT, whole)
    assert _counts(body, pieces) == (whole.restored, whole.stripped)


def test_responses_text_only_a_snapshot_carries_is_counted_once() -> None:
    """An item whose text comes only whole (no deltas: output_item.done, then the final
    response) is counted once, by the final response."""
    item = {"id": "t_1", "type": "mcp_list_tools", "server_label": "Zenith Labs",
            "tools": [{"name": "crm_lookup", "description": "Zenith Labs records", "input_schema": {}}]}  # fmt: skip
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "model": "gpt"}

    def ev(t: str, seq: int, **f) -> bytes:
        return f"event: {t}\ndata: {json.dumps({'type': t, 'sequence_number': seq, **f})}\n\n".encode()

    body = b"".join([
        ev("response.created", 0, response=resp),
        ev("response.in_progress", 1, response=resp),
        ev("response.output_item.added", 2, output_index=0, item={**item, "tools": []}),
        ev("response.output_item.done", 3, output_index=0, item=item),
        ev("response.completed", 4, response={**resp, "status": "completed", "output": [item]}),
    ])  # fmt: skip
    # server_label, the tool's name and its description: three places the client reads
    assert _counts(body) == (3, 0)


# -- members the tables do not name, on channel events (fail closed) ----------------------

_CHANNEL_EVENTS = [
    ("response.output_text.delta", {"item_id": "m", "output_index": 0, "content_index": 0, "delta": "Hi Zen", "logprobs": []}),
    ("response.output_text.done", {"item_id": "m", "output_index": 0, "content_index": 0, "text": "Hi Zenith Labs"}),
    ("response.refusal.delta", {"item_id": "m", "output_index": 0, "content_index": 1, "delta": "no"}),
    ("response.refusal.done", {"item_id": "m", "output_index": 0, "content_index": 1, "refusal": "no"}),
    ("response.function_call_arguments.delta", {"item_id": "fc", "output_index": 1, "delta": "{}"}),
    ("response.function_call_arguments.done", {"item_id": "fc", "output_index": 1, "arguments": "{}"}),
    ("response.audio.transcript.delta", {"item_id": "a", "output_index": 2, "content_index": 0, "delta": "ok"}),
    ("response.audio.transcript.done", {"item_id": "a", "output_index": 2, "content_index": 0}),
]


@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize(("t", "fields"), _CHANNEL_EVENTS)
def test_an_unknown_string_on_a_channel_event_is_restored(t, fields, spaced) -> None:
    """A member the tables do not name is restored whole, as on every other event; the
    channel's own member keeps its window, the envelope and padding pass untouched."""
    body = (_resp_event("response.created", 0, response={"id": "r", "output": []})
            + _resp_event(t, 1, spaced=spaced, **fields, note="Zenith Labs", transcript="Zenith Labs",
                          obfuscation="Zenith Labs")
            + _resp_event("response.completed", 2, response={"id": "r", "output": []}))  # fmt: skip
    for pieces in ([body], [body[i : i + 7] for i in range(0, len(body), 7)]):
        evs = _events(run(openai_responses.ResponsesStream, body, pieces))
        ev = next(e for e in evs if e["type"] == t)
        assert ev["note"] == ev["transcript"] == "Acme Corp"
        assert ev["obfuscation"] == "Zenith Labs"  # padding: untouched
        _gapless_from_zero(evs)
    text = "".join(e.get("delta", "") + e.get("text", "") for e in evs if e["type"].startswith("response.output_text"))
    assert "Zenith" not in text
