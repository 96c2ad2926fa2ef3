"""A stored Responses answer streamed again (`GET /v1/responses/{id}?stream=true`, and
resumed with `starting_after=N`: apis/openai/responses.StoredResponsesStream).

The request that asked for a JSON answer (`text.format` json_schema) is gone; the response
object the stream carries says it (`response.created`, ..., the last event). Read there,
the answer text is restored as JSON text: for random originals holding `\\`, `"` and control
characters, cut into deltas anywhere and the bytes anywhere, the text the client joins
parses, and it is the whole-text restoration (what GET /v1/responses/{id} gives whole). A
stream resumed past that object (its text mid-way, no object said what it is) goes through
both readings: it completes where they agree, and ends with an error where they differ,
never with a guess."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.apis.openai.responses import ResponsesStream, StoredResponsesStream
from disguiselib.apis.openai.responses_fields import restore_stored
from disguiselib.base.holdback import Window
from disguiselib.rules.restorer import EITHER, JSON, TEXT, UNSAID
from disguiselib.wire.sse import Framer
from strategies import JSON_DISGUISES, byte_splits, json_answer, json_originals, literal_restorer, splits

DISGUISES = JSON_DISGUISES
JSON_FORMAT = {"type": "json_schema", "name": "Record", "schema": {"type": "object"}, "strict": True}
ORIGINALS = json_originals
answer = json_answer
restorer = literal_restorer  # a retrieval's: the literals alone (an earlier request's placeholders are gone)


def events(pieces: list[str], fmt: dict) -> list[dict]:
    """A stored response's stream of one message, numbered from 0."""
    text = "".join(pieces)
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "text": {"format": fmt}}
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [part]}
    evs = [{"type": "response.created", "response": resp}, {"type": "response.in_progress", "response": resp},
           {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
           {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
           *({"type": "response.output_text.delta", **at, "delta": p, "logprobs": []} for p in pieces),
           {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
           {"type": "response.content_part.done", **at, "part": part},
           {"type": "response.output_item.done", "output_index": 0, "item": item},
           {"type": "response.completed", "response": {**resp, "status": "completed", "output": [item]}}]  # fmt: skip
    return [{**e, "sequence_number": n} for n, e in enumerate(evs)]


def sse(evs: list[dict]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in evs)


def run(stream: ResponsesStream, body: bytes, cuts: list[bytes] | None = None) -> list[dict]:
    out = b"".join(stream.feed(c) for c in (cuts or [body])) + stream.flush()
    f = Framer()
    return [json.loads(e.data) for e in f.feed(out) + f.flush() if e.data is not None]


def deltas(evs: list[dict]) -> str:
    return "".join(e["delta"] for e in evs if e["type"] == "response.output_text.delta")


@settings(max_examples=60, deadline=None)
@given(originals=ORIGINALS, data=st.data())
@example(originals=['C:\\new', 'a "b"', "\x01\t"], data=None)
def test_the_response_object_says_json_however_it_is_cut(originals: list[str], data) -> None:  # noqa: ANN001
    text = json.dumps(answer(list(DISGUISES)))
    pieces = [text] if data is None else data.draw(splits(text, max_cuts=12))
    body = sse(events(pieces, JSON_FORMAT))
    cuts = None if data is None else data.draw(byte_splits(body))
    r = restorer(originals)
    got = run(StoredResponsesStream(r), body, cuts)
    assert json.loads(deltas(got)) == answer(originals)  # the SDK's parse reads the originals
    # the whole-text restoration, as the whole GET gives it
    whole = json.loads(restore_stored(json.dumps(events([text], JSON_FORMAT)[-1]["response"]).encode(),
                                      restorer(originals)))  # fmt: skip
    assert deltas(got) == whole["output"][0]["content"][0]["text"]
    done = next(e for e in got if e["type"] == "response.output_text.done")
    final = got[-1]["response"]["output"][0]["content"][0]["text"]
    assert done["text"] == final == deltas(got) and got[-1]["type"] == "response.completed"


@settings(max_examples=30, deadline=None)
@given(originals=ORIGINALS, data=st.data())
def test_the_response_object_says_text(originals: list[str], data) -> None:  # noqa: ANN001
    """`text.format` text: the answer's text restored as text (originals as they are), as
    before, even where it looks like JSON."""
    text = json.dumps(answer(list(DISGUISES)))
    pieces = data.draw(splits(text, max_cuts=8))
    got = run(StoredResponsesStream(restorer(originals)), sse(events(pieces, {"type": "text"})))
    assert deltas(got) == restorer(originals).text(text)


@settings(max_examples=80, deadline=None)
@given(originals=ORIGINALS, escaped=st.booleans(), data=st.data())
def test_a_stream_resumed_past_the_object_completes_or_ends_with_an_error(originals: list[str], escaped: bool,
                                                                          data) -> None:  # noqa: ANN001
    """`starting_after=N` past response.created (and .in_progress): nobody said what the
    text is. Where restoring it as text and as JSON text agree (no original that JSON
    escapes, no strip match) it is that; where they differ the stream ends with its error
    event, the text before it a beginning of both readings."""
    if not escaped:  # originals JSON holds as they are: both readings agree
        originals = ["plain one", "b/é", "two words"]
    text = json.dumps(answer(list(DISGUISES)))
    pieces = data.draw(splits(text, max_cuts=10))
    evs = events(pieces, JSON_FORMAT)
    after = data.draw(st.integers(1, 3 + len(pieces)))  # a delta at most: at least one is replayed
    suffix = "".join(e["delta"] for e in evs[after + 1 :] if e["type"] == "response.output_text.delta")
    body = sse(evs[after + 1 :])
    got = run(StoredResponsesStream(restorer(originals)), body, data.draw(byte_splits(body)))
    as_text, as_json = restorer(originals).text(suffix), restorer(originals).json_text(suffix)
    if got[-1]["type"] == "error":
        assert UNSAID in got[-1]["message"]
        assert as_text.startswith(deltas(got)) and as_json.startswith(deltas(got))
        assert as_text != as_json or restorer(originals).text(text) != restorer(originals).json_text(text)
    else:
        assert as_text == as_json == deltas(got) and got[-1]["type"] == "response.completed"
    if not escaped:
        assert got[-1]["type"] == "response.completed"


def test_the_whole_text_events_of_a_resumed_stream() -> None:
    """The `*.done` events of a resumed stream carry the whole text, from its start: read as
    its first character says (JSON), compared with text; the last event says the format
    (its own response object restored so)."""
    r = restorer(["C:\\new", "q", "r"])
    text = json.dumps({"who": "ZQXA1"})
    evs = events([text[:5], text[5:]], JSON_FORMAT)
    got = run(StoredResponsesStream(r), sse(evs[5:]))  # past the first delta
    assert got[-1]["type"] == "error" and "ZQXA1" not in deltas(got)
    r = restorer(["Acme Corp", "q", "r"])
    got = run(StoredResponsesStream(r), sse(evs[5:]))
    assert json.loads(text[:5] + deltas(got)) == {"who": "Acme Corp"} and got[-1]["type"] == "response.completed"
    assert r.output == JSON  # the last event said it


def test_an_either_window() -> None:
    """Window.EITHER: what both readings release goes out, the first difference is an error."""
    from disguiselib.errors import StreamError

    r = restorer(["Acme Corp", 'C:\\Users\\"a"', "z"])
    r.output = EITHER
    w = Window(r, Window.OUTPUT)
    assert w.mode == Window.EITHER
    assert w.feed('{"who": "ZQX') == '{"who": "' and w.held and w.holds("")
    assert w.feed('A1", ') == 'Acme Corp", ' and not w.held
    assert r.restored == 1  # counted once
    try:
        w.feed('"path": "ZQXB2"}')
        raise AssertionError("the readings differ")
    except StreamError as e:
        assert str(e) == UNSAID
    for out, mode in ((TEXT, Window.TEXT), (JSON, Window.OUTPUT)):
        r.output = out
        assert Window(r, Window.OUTPUT).mode == mode


def test_a_post_stream_keeps_its_requests_word() -> None:
    """The stream of POST /v1/responses is read by its request (Restorer.output), whatever
    it carries; only the stored stream reads the response object."""
    r = restorer(["C:\\new", "q", "r"])
    text = json.dumps({"who": "ZQXA1"})
    got = run(ResponsesStream(r), sse(events([text], JSON_FORMAT)))
    assert r.output == TEXT and deltas(got) == r.text(text)
