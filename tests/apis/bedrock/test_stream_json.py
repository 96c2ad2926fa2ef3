"""Bedrock Converse asking for a JSON answer (`outputConfig.textFormat` json_schema, the
only structured output Converse has in botocore's service model): its answer text is
JSON text, originals JSON-escaped, whole and in ConverseStream frames however they are
cut; a toolUse block beside it keeps its own window, and a text block's held tail drains
as text. Without outputConfig the same text is prose, restored as text."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from aws_util import converse_frame, frames_of
from disguiselib.apis.bedrock import runtime
from disguiselib.apis.bedrock.stream import ConverseStream
from disguiselib.base.jsonanswer import answers_json
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.rules.restorer import JSON, TEXT
from strategies import (
    JSON_DISGUISES,
    RULES,
    byte_splits,
    json_answer,
    json_originals,
    literal_restorer,
    splits,
)  # fmt: skip

TEXT_FORMAT = {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"name": "r", "schema": "{}"}}}}


def test_converse_asks_for_json_by_its_output_config() -> None:
    req = runtime.CONVERSE_REQUEST
    assert answers_json({"outputConfig": TEXT_FORMAT}, req)
    assert not answers_json({"outputConfig": {"effort": "high"}}, req) and not answers_json({}, req)
    body = {"messages": [{"role": "user", "content": [{"text": "Acme Corp"}]}], "outputConfig": TEXT_FORMAT}
    assert mask_body(json.dumps(body).encode(), req, RULES)[1].json_out
    assert req.prompt == ("toolConfig", "system", "messages")  # declared beside it, in the constructor


def read_converse(raw: bytes) -> dict:
    """What boto3 gives of each frame (frames_of: lengths and CRCs checked)."""
    out: dict = {"text": "", "args": "", "types": [], "deltas": []}
    for fr in frames_of(raw):
        out["types"].append(fr.event_type)
        payload = json.loads(fr.payload)
        delta = payload.get("delta", {})
        if delta:
            out["deltas"].append((payload["contentBlockIndex"], *delta))
        out["text"] += delta.get("text", "")
        out["args"] += delta.get("toolUse", {}).get("input", "")
    return out


def whole(text: str) -> bytes:
    return json.dumps({"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                       "stopReason": "end_turn"}).encode()  # fmt: skip


def body(pieces: list[str], args: list[str]) -> bytes:
    f = [converse_frame("messageStart", {"role": "assistant"})]
    f += [converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}) for p in pieces]
    f.append(converse_frame("contentBlockStop", {"contentBlockIndex": 0}))
    f.append(converse_frame("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {
        "name": "crm_lookup", "toolUseId": "tooluse_1"}}}))  # fmt: skip
    f += [converse_frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": p}}}) for p in args]
    f += [converse_frame("contentBlockStop", {"contentBlockIndex": 1}),
          converse_frame("messageStop", {"stopReason": "tool_use"})]  # fmt: skip
    return b"".join(f)


@settings(max_examples=60, deadline=None)
@given(originals=json_originals, data=st.data())
@example(originals=['C:\\new', 'a "b"', "\x01\t"], data=None)
def test_a_converse_stream_json_answer_however_it_is_cut(originals: list[str], data) -> None:  # noqa: ANN001
    text = json.dumps(json_answer(JSON_DISGUISES))
    args = json.dumps({"who": JSON_DISGUISES[0]})
    pieces, args_p = ([text], [args]) if data is None else (data.draw(splits(text, 12)), data.draw(splits(args, 6)))
    raw = body(pieces, args_p)
    cuts = [raw] if data is None else data.draw(byte_splits(raw, 30))
    s = ConverseStream(literal_restorer(originals, JSON))
    got = read_converse(b"".join(s.feed(c) for c in cuts) + s.flush())
    assert json.loads(got["text"]) == json_answer(originals)  # the client's json.loads reads the originals
    wholly = json.loads(restore_body(whole(text), runtime.CONVERSE_RESPONSE, literal_restorer(originals, JSON)))
    assert got["text"] == wholly["output"]["message"]["content"][0]["text"]  # the whole body's restoration
    assert json.loads(got["args"]) == {"who": originals[0]}
    assert got["types"][-1] == "messageStop"


def test_a_held_tail_of_a_json_answer_drains_as_text() -> None:
    """The text block's window (JSON text) holds `ZQX` until its stop: it goes out as a
    text delta, not as toolUse input (which a window in JSON mode used to mean)."""
    s = ConverseStream(literal_restorer(["C:\\new", "b", "c"], JSON))
    raw = body(['{"p": "ZQX'], ['{"who": "ZQ', 'XA1"}'])[: -len(converse_frame("messageStop", {"stopReason": "tool_use"}))]
    got = read_converse(s.feed(raw))
    assert [d for d in got["deltas"] if d[0] == 0] == [(0, "text"), (0, "text")]  # the second: the tail
    assert got["text"] == '{"p": "ZQX' and got["args"] == '{"who": "C:\\\\new"}'


def test_a_whole_converse_answer() -> None:
    text = json.dumps(json_answer(JSON_DISGUISES))
    originals = ["C:\\Users\\a", 'say "hi"', "tab\there"]
    for output, want in ((JSON, json.dumps(json_answer(originals))), (TEXT, None)):
        got = json.loads(restore_body(whole(text), runtime.CONVERSE_RESPONSE, literal_restorer(originals, output)))
        out = got["output"]["message"]["content"][0]["text"]
        assert json.loads(out) == json_answer(originals) if want else out == literal_restorer(originals).text(text)
