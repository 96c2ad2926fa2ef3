"""A request that asks for its answer as JSON (structured outputs) gets that answer's
text restored as JSON text: an original with a backslash or a quote is JSON-escaped, so
the client's parse (`chat.completions.parse`, `response.parsed`) reads the original;
every other answer text is restored as text, as before."""

from __future__ import annotations

import json
import pickle

import pytest
from google_util import build_chunks, read_chunks, sse_chunks, to_sse
from hypothesis import example, given
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic import messages as anthropic_messages
from disguiselib.apis.google import codeassist, gemini
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base import fields
from disguiselib.base.fields import obj
from disguiselib.base.holdback import Window
from disguiselib.base.jsonanswer import answers_json
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body, restore_fn
from disguiselib.rules.restorer import JSON, TEXT
from disguiselib.wire import jsonspan
from disguiselib.wire.jsonspan import PROSE
from openai_util import build_chat, build_responses, read_chat, read_responses
from strategies import PLACEHOLDERS, RULES, byte_splits, splits

WIN = 'C:\\Users\\a "b"'  # strategies' original of WINPATH: a backslash and quotes
JR = RULES.restorer(PLACEHOLDERS, output=JSON)
TR = RULES.restorer(PLACEHOLDERS)
ORIGINAL = {"session_id": "s-1", "owner": WIN, "mail": "bob@corp.example.com", "who": "Acme Corp"}
ANSWER = json.dumps({"thread_id": "s-1", "owner": "WINPATH", "mail": "[EMAIL_1]", "who": "Zenith Labs"})


def test_which_requests_ask_for_json() -> None:
    req = openai_chat.CHAT_REQUEST
    for fmt in ("json_schema", "json_object"):
        assert answers_json({"response_format": {"type": fmt}}, req)
    for doc in ({}, {"response_format": {"type": "text"}}, {"response_format": "json_schema"},
                {"response_format": {"type": ["json_schema"]}}, {"response_format": None}):  # fmt: skip
        assert not answers_json(doc, req)
    assert not answers_json({"response_format": {"type": "json_schema"}}, fields.GENERIC)  # declares nothing
    resp = openai_responses.RESPONSES_REQUEST
    for fmt in ("json_schema", "json_object"):
        assert answers_json({"text": {"format": {"type": fmt}}}, resp)
    assert not answers_json({"text": {"format": {"type": "text"}}}, resp)
    assert not answers_json({"response_format": {"type": "json_schema"}}, resp)
    gen = gemini.GENERATE_REQUEST
    for cfg in ({"generationConfig": {"responseMimeType": "application/json"}},
                {"generation_config": {"response_mime_type": "application/json"}}):  # fmt: skip
        assert answers_json(cfg, gen)
        assert answers_json({"request": cfg}, codeassist.REQUEST) and not answers_json(cfg, codeassist.REQUEST)
    assert not answers_json({"generationConfig": {"responseMimeType": "text/x.enum"}}, gen)
    msgs = anthropic_messages.MESSAGES_REQUEST
    assert answers_json({"output_config": {"format": {"type": "json_schema"}}}, msgs)
    assert answers_json({"output_format": {"type": "json_schema"}}, msgs)  # the beta's (deprecated)
    assert not answers_json({"output_config": {"effort": "high"}}, msgs)


def test_the_declaration_is_the_tables_own() -> None:
    """json_answer is a constructor declaration beside prompt= and state=, read by
    answers_json alone: every API's top-level request rule carries it as a typed member
    (no attribute set after construction)."""
    declared = {openai_chat.CHAT_REQUEST, openai_responses.RESPONSES_REQUEST, anthropic_messages.MESSAGES_REQUEST,
                gemini.GENERATE_REQUEST, codeassist.REQUEST.fields["request"]}  # fmt: skip
    for rule in declared:
        assert isinstance(rule, jsonspan.Obj) and rule.json_answer
        for path, words in rule.json_answer:
            assert path and all(type(k) is str for k in path) and type(words) is frozenset and words
    assert fields.GENERIC.json_answer == () and codeassist.REQUEST.json_answer == ()
    # both proto spellings of every member of the path (and their mixes)
    assert {p for p, _ in gemini.GENERATE_REQUEST.json_answer} == {
        (g, m) for g in ("generationConfig", "generation_config") for m in ("responseMimeType", "response_mime_type")}


@pytest.mark.parametrize("path", [("response_fromat", "type"), ("response_format", "json_schema", "nme"), ()])
def test_a_declaration_the_table_does_not_have_fails_the_import(path: tuple[str, ...]) -> None:
    """A path that leaves the table's objects (a misspelt member), or no path at all, is
    refused when the table is built (ValueError, as the API's module is imported)."""
    table = {"response_format": obj({"json_schema": obj({"name": jsonspan.VALUES})})}
    with pytest.raises(ValueError, match="the table does not have"):
        jsonspan.Obj(table, json_answer=((path, frozenset({"json_schema"})),))
    for words in (frozenset(), {"json_schema"}):  # empty, or not frozen
        with pytest.raises(ValueError):
            jsonspan.Obj(table, json_answer=((("response_format", "type"), words),))  # type: ignore[arg-type]
    jsonspan.Obj(table, json_answer=((("response_format", "type"), frozenset({"json_schema"})),))
    # past the table's objects (a Typed, GENERIC) nothing is known to check
    jsonspan.Obj({"f": fields.GENERIC}, json_answer=((("f", "any", "depth"), frozenset({"x"})),))


def test_masking_notes_it_in_the_session() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}}
    _, session = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
    assert session.json_out
    body["response_format"] = {"type": "text"}
    _, session = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
    assert not session.json_out


def test_the_answer_rule_follows_the_restorer() -> None:
    assert json.loads(restore_fn(JR)(ANSWER, fields.ANSWER)) == ORIGINAL
    assert restore_fn(TR)(ANSWER, fields.ANSWER) == restore_fn(TR)(ANSWER, PROSE)
    assert WIN in restore_fn(TR)(ANSWER, fields.ANSWER)  # as text: the original as it is
    # a refusal is prose either way
    assert restore_fn(JR)("no WINPATH", PROSE) == f"no {WIN}"


@given(st.data())
@example(None)
def test_an_output_window_restores_json_text_however_it_is_cut(data) -> None:
    pieces = [ANSWER] if data is None else data.draw(splits(ANSWER, max_cuts=12))
    w = Window(JR, Window.OUTPUT)
    got = "".join(w.feed(p) for p in pieces) + w.flush()
    assert json.loads(got) == ORIGINAL and w.mode == Window.JSON
    w = Window(TR, Window.OUTPUT)
    assert w.mode == Window.TEXT
    assert "".join(w.feed(p) for p in pieces) + w.flush() == TR.text(ANSWER)


def _completion(content: str) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "finish_reason": "stop"}]}
    ).encode()  # fmt: skip


def test_a_whole_chat_completion() -> None:
    got = json.loads(restore_body(_completion(ANSWER), openai_chat.CHAT_RESPONSE, JR))
    assert json.loads(got["choices"][0]["message"]["content"]) == ORIGINAL
    got = json.loads(restore_body(_completion(ANSWER), openai_chat.CHAT_RESPONSE, TR))
    assert got["choices"][0]["message"]["content"] == TR.text(ANSWER)  # as before


@given(st.data())
@example(None)
def test_a_chat_stream_however_it_is_cut(data) -> None:
    """The content deltas split anywhere and the bytes cut anywhere: the content the SDK
    joins parses to the original object (the compiled pass, which reads text deltas as
    text, is not used for such a stream)."""
    pieces = [ANSWER] if data is None else data.draw(splits(ANSWER, max_cuts=12))
    body = build_chat([*(("content", 0, p) for p in pieces), ("finish", 0, "stop")])
    cuts = [body] if data is None else data.draw(byte_splits(body))
    s = openai_chat.ChatStream(JR)
    out = b"".join(s.feed(c) for c in cuts) + s.flush()
    content, _, _ = read_chat(out)
    assert json.loads(content[0]) == ORIGINAL


def test_modes() -> None:
    assert (TR.output, JR.output) == (TEXT, JSON)


def test_a_whole_response_object() -> None:
    part = {"type": "output_text", "text": ANSWER, "annotations": []}
    body = json.dumps({"id": "resp_1", "object": "response", "status": "completed", "output": [
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [part]}]}).encode()
    got = json.loads(restore_body(body, openai_responses.RESPONSE_OBJECT, JR))
    assert json.loads(got["output"][0]["content"][0]["text"]) == ORIGINAL


@given(st.data())
@example(None)
def test_a_responses_stream_however_it_is_cut(data) -> None:
    """Deltas, `output_text.done`, the part and item snapshots and the final response all
    carry the JSON text restored as JSON; the function call's arguments as before."""
    pieces = [ANSWER] if data is None else data.draw(splits(ANSWER, max_cuts=12))
    body = build_responses(pieces, ['{"owner": "WINPATH"}'])
    cuts = [body] if data is None else data.draw(byte_splits(body))
    s = openai_responses.ResponsesStream(JR)
    got = read_responses(b"".join(s.feed(c) for c in cuts) + s.flush())
    assert json.loads(got["text"]) == ORIGINAL
    assert json.loads(got["args"]) == {"owner": WIN}
    by = got["by_type"]
    assert json.loads(by["response.output_text.done"][0]["text"]) == ORIGINAL
    assert json.loads(by["response.content_part.done"][0]["part"]["text"]) == ORIGINAL
    final = by["response.completed"][0]["response"]["output"][0]["content"][0]["text"]
    assert json.loads(final) == ORIGINAL


def test_a_whole_gemini_answer() -> None:
    body = json.dumps({"candidates": [{"content": {"parts": [{"text": "thinking of WINPATH", "thought": True},
                                                                {"text": ANSWER}], "role": "model"}}]}).encode()
    got = json.loads(restore_body(body, gemini.GENERATE_RESPONSE, JR))
    thought, text = got["candidates"][0]["content"]["parts"]
    assert json.loads(text["text"]) == ORIGINAL
    assert thought["text"] == "thinking of WINPATH"  # thought parts: untouched, as ever


@given(st.data())
@example(None)
def test_a_gemini_stream_however_it_is_cut(data) -> None:
    pieces = [ANSWER] if data is None else data.draw(splits(ANSWER, max_cuts=12))
    body = to_sse(build_chunks([*(("text", 0, p) for p in pieces), ("finish", 0, "alone")]))
    cuts = [body] if data is None else data.draw(byte_splits(body))
    s = gemini_stream.GeminiStream(JR)
    got = read_chunks(sse_chunks(b"".join(s.feed(c) for c in cuts) + s.flush()))
    assert json.loads(got["text"][0]) == ORIGINAL


def test_a_whole_anthropic_message() -> None:
    body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "content": [
        {"type": "thinking", "thinking": "WINPATH", "signature": "c2ln"}, {"type": "text", "text": ANSWER},
        {"type": "tool_use", "id": "toolu_1", "name": "crm_lookup", "input": {"owner": "WINPATH"}}]}).encode()
    got = json.loads(restore_body(body, anthropic_messages.MESSAGE_RESPONSE, JR))
    thinking, text, tool = got["content"]
    assert json.loads(text["text"]) == ORIGINAL
    assert thinking["thinking"] == "WINPATH" and tool["input"] == {"owner": WIN}


@given(st.data())
@example(None)
def test_an_anthropic_stream_however_it_is_cut(data) -> None:
    """A thinking block, the JSON answer's text block, a tool call: the text reads as JSON
    text; a tail held at the text block's end goes out as a text delta (its window's mode
    is JSON, as a tool's is), never as an input_json_delta."""
    text = ANSWER + " Zenith Lab"  # its last word may still grow into a disguise: held to the block's end
    pieces = [text] if data is None else data.draw(splits(text, max_cuts=12))
    args = ['{"owner": "WIN', 'PATH"}']
    body = build_stream([("thinking", ["WINPATH"]), ("text", pieces), ("tool", args)])
    cuts = [body] if data is None else data.draw(byte_splits(body))
    s = anthropic_messages.AnthropicStream(JR)
    blocks, _ = read_stream(b"".join(s.feed(c) for c in cuts) + s.flush())
    assert blocks[1]["json"] == "" and blocks[1]["text"] == JR.json_text(ANSWER) + " Zenith Lab"
    assert json.loads(JR.json_text(ANSWER)) == ORIGINAL
    assert json.loads(blocks[2]["json"]) == {"owner": WIN}
    assert blocks[0]["thinking"] == "WINPATH"


def test_the_session_keeps_it_across_the_masking_worker() -> None:
    """The worker process sends the session back pickled (worker.encode)."""
    body = {"model": "m", "messages": [], "text": {"format": {"type": "json_schema"}}}
    _, session = mask_body(json.dumps(body).encode(), openai_responses.RESPONSES_REQUEST, RULES)
    assert pickle.loads(pickle.dumps(session)).json_out is True


def test_a_schemas_names_are_masked_alike_wherever_they_stand() -> None:
    """A property name, the `required` and `propertyOrdering` lists naming it, a
    `patternProperties` key, a `$defs` name and the `$ref` to it, an enum value: one
    disguise each, so the schema the provider reads holds together."""
    schema = {"type": "object", "$defs": {"session_id": {"type": "string", "enum": ["Acme Corp"]}},
              "properties": {"session_id": {"$ref": "#/$defs/session_id"}},
              "patternProperties": {"^session_id_[0-9]+$": {"type": "string"}},
              "required": ["session_id"], "propertyOrdering": ["session_id"], "additionalProperties": False}  # fmt: skip
    body = {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {
        "name": "r", "strict": True, "schema": schema}}}  # fmt: skip
    new, _ = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
    got = json.loads(new)["response_format"]["json_schema"]
    assert got["strict"] is True
    assert got["schema"] == json.loads(json.dumps(schema).replace("session_id", "thread_id")
                                       .replace("Acme Corp", "Zenith Labs"))


def test_a_stored_response_is_read_by_its_own_format() -> None:
    from disguiselib.apis.openai.responses_fields import restore_stored

    part = {"type": "output_text", "text": ANSWER, "annotations": []}
    doc = {"id": "resp_1", "object": "response", "status": "completed", "text": {"format": {"type": "json_schema"}},
           "output": [{"id": "msg_1", "type": "message", "role": "assistant", "content": [part]}]}  # fmt: skip
    got = json.loads(restore_stored(json.dumps(doc).encode(), RULES.restorer({})))
    assert json.loads(got["output"][0]["content"][0]["text"])["owner"] == WIN
    doc["text"] = {"format": {"type": "text"}}
    got = json.loads(restore_stored(json.dumps(doc).encode(), RULES.restorer({})))
    assert got["output"][0]["content"][0]["text"] == RULES.restorer({}).text(ANSWER)  # as text (literals only)


def test_a_disguise_the_model_wrote_with_escapes_is_restored() -> None:
    """JSON text is matched on its decoded characters: `Zenith\\u0020Labs` in a structured
    answer is the disguise the client's parse would read (as text it passed)."""
    text = '{"who": "Zenith\\u0020Labs", "key": "thread\\u005fid"}'
    for pieces in ([text], [text[:14], text[14:20], text[20:]]):
        w = Window(JR, Window.OUTPUT)
        assert json.loads("".join(w.feed(p) for p in pieces) + w.flush()) == {"who": "Acme Corp", "key": "session_id"}
    assert json.loads(TR.text(text)) == {"who": "Zenith Labs", "key": "thread_id"}  # what text restoring gave



@given(st.data())
@example(None)
def test_a_prose_answer_to_a_json_request_stays_text(data) -> None:
    """A provider that answers prose all the same (a compatible server that ignores
    `response_format`): what does not begin with `{` or `[` is restored as text, strip
    rules and all; blank text before the JSON decides nothing."""
    prose = "Sure! WINPATH [[reply_to_current]] for Zenith Labs"
    for text, want in ((prose, TR.text(prose)), ("\n  \t" + ANSWER, "\n  \t" + JR.json_text(ANSWER))):
        pieces = [text] if data is None else data.draw(splits(text, max_cuts=8))
        w = Window(JR, Window.OUTPUT)
        assert "".join(w.feed(p) for p in pieces) + w.flush() == want
        assert JR.answer(text) == want
    assert TR.text(prose) == f"Sure! {WIN}  for Acme Corp"
