"""Responses and streams found by the field audit (issue 7): new channel types, logprobs,
streams that end wrong, bodies that are not labelled or not parsed, retrievals."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib import pipeline
from disguiselib.apis import registry as engine
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base.restore import restore_body
from disguiselib.pipeline import reverser_for
from disguiselib.wire.sse import Framer, sniff
from openai_util import _resp_event, build_chat, chat_chunk, read_chat
from strategies import PLACEHOLDERS, RULES, byte_splits, make_rules, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)
WIN = 'C:\\Users\\a "b"'


def run(cls, body: bytes, pieces: list[bytes] | None = None, restorer=None) -> bytes:
    s = cls(restorer or RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


def events(body: bytes) -> list:
    """Every event's data, parsed: each must parse (the `[DONE]` sentinel excepted)."""
    f = Framer()
    out = []
    for ev in f.feed(body) + f.flush():
        if ev.data is not None and ev.data != "[DONE]":
            out.append(json.loads(ev.data))
    return out


# -- Chat: content as an array of parts (Mistral and other compatible providers) ----------


def parts_chunk(k: int, text: str, finish: str | None = None) -> bytes:
    return chat_chunk([{"index": k, "delta": {"content": [{"type": "text", "text": text}]},
                        "finish_reason": finish}])  # fmt: skip


def read_parts(body: bytes) -> dict:
    text: dict = {}
    for d in events(body):
        for c in d.get("choices", []):
            content = (c.get("delta") or {}).get("content")
            if isinstance(content, list):
                for p in content:
                    assert p["type"] == "text", "a tail must go as a text part"
                    text[c["index"]] = text.get(c["index"], "") + p["text"]
            elif content:
                raise AssertionError(f"string content in a parts stream: {content!r}")
    return text


@given(texts, texts, st.data())
@example("Zenith Labs [EMA", "see nova", None)
def test_chat_content_parts_reassemble_to_the_whole_result(t0, t1, data) -> None:
    draw = data.draw if data is not None else None
    p0 = draw(splits(t0)) if draw else [t0[:5], t0[5:]]
    p1 = draw(splits(t1)) if draw else [t1]
    body = b"".join([parts_chunk(0, p) for p in p0] + [parts_chunk(1, p) for p in p1])
    body += parts_chunk(0, "", "stop") + b"data: [DONE]\n\n"
    pieces = draw(byte_splits(body, 30)) if draw else [body]
    out = run(openai_chat.ChatStream, body, pieces)
    got = read_parts(out)
    assert (got.get(0, ""), got.get(1, "")) == (R.text(t0), R.text(t1))
    assert out.endswith(b"data: [DONE]\n\n")


def test_chat_content_parts_tail_rides_in_the_finish_chunk_as_a_part() -> None:
    body = parts_chunk(0, "Hi [EMAIL_1] see nova") + parts_chunk(0, "", "stop") + b"data: [DONE]\n\n"
    ds = events(run(openai_chat.ChatStream, body))
    fin = next(d for d in ds if d["choices"][0]["finish_reason"])
    assert fin["choices"][0]["delta"]["content"][-1] == {"type": "text", "text": "nova-internal"}
    assert read_parts(run(openai_chat.ChatStream, body)) == {0: "Hi bob@corp.example.com see nova-internal"}


def test_chat_whole_body_content_parts_restored() -> None:
    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Zenith Labs [[reply_to_current]]"}, {"type": "thinking", "thinking": "Zenith Labs"}]},
        "finish_reason": "stop"}]}).encode()  # fmt: skip
    got = json.loads(restore_body(body, openai_chat.CHAT_RESPONSE, R))
    assert got["choices"][0]["message"]["content"] == [
        {"type": "text", "text": "Acme Corp "}, {"type": "thinking", "thinking": "Zenith Labs"}]


# -- Chat: audio transcripts --------------------------------------------------------------


def audio_chunk(k: int, transcript: str, finish: str | None = None) -> bytes:
    audio = {"id": "audio_1", "transcript": transcript} if transcript is not None else {"data": "UklGRg=="}
    return chat_chunk([{"index": k, "delta": {"audio": audio}, "finish_reason": finish}])


@given(texts, st.data())
@example("Say Zenith Labs [EMAIL_1] nova", None)
def test_chat_audio_transcript_reassembles_to_the_whole_result(text, data) -> None:
    pieces = data.draw(splits(text)) if data is not None else [text[:7], text[7:]]
    body = b"".join(audio_chunk(0, p) for p in pieces) + audio_chunk(0, None) + chat_chunk(
        [{"index": 0, "delta": {}, "finish_reason": "stop"}]) + b"data: [DONE]\n\n"
    cuts = data.draw(byte_splits(body, 30)) if data is not None else [body]
    got = ""
    finished = False
    for d in events(run(openai_chat.ChatStream, body, cuts)):
        for c in d.get("choices", []):
            t = ((c.get("delta") or {}).get("audio") or {}).get("transcript")
            if t:
                assert not finished
                got += t
            finished = finished or bool(c.get("finish_reason"))
    assert got == R.text(text)


def test_chat_whole_body_audio_transcript_restored() -> None:
    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "audio": {
        "id": "a", "data": "Zenith", "expires_at": 1, "transcript": "Zenith Labs, [EMAIL_1]"}}}]}).encode()  # fmt: skip
    audio = json.loads(restore_body(body, openai_chat.CHAT_RESPONSE, R))["choices"][0]["message"]["audio"]
    assert audio == {"id": "a", "data": "Zenith", "expires_at": 1, "transcript": "Acme Corp, bob@corp.example.com"}


# -- Responses: mcp_call arguments, custom tool input --------------------------------------


def mcp_stream(pieces: list[str], kind: str = "mcp") -> bytes:
    args = "".join(pieces)
    seq = iter(range(1000))
    if kind == "mcp":
        item = {"id": "mcp_1", "type": "mcp_call", "server_label": "crm", "name": "crm_lookup", "arguments": ""}
        delta_t, done_t, field = "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "arguments"
    else:
        item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "c", "name": "crm_lookup", "input": ""}
        delta_t, done_t, field = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
    out = [_resp_event("response.output_item.added", next(seq), output_index=0, item=item)]
    out += [_resp_event(delta_t, next(seq), item_id=item["id"], output_index=0, delta=p) for p in pieces]
    out.append(_resp_event(done_t, next(seq), item_id=item["id"], output_index=0, **{field: args}))
    done = {**item, field: args, "status": "completed"}
    out.append(_resp_event("response.output_item.done", next(seq), output_index=0, item=done))
    out.append(_resp_event("response.completed", next(seq), response={"id": "r", "status": "completed",
                                                                      "output": [done]}))  # fmt: skip
    return b"".join(out)


def read_items(body: bytes, delta_t: str, done_t: str, field: str) -> tuple[str, list[str]]:
    ds = events(body)
    seqs = [d["sequence_number"] for d in ds]
    assert seqs == list(range(len(seqs))), "sequence numbers not gapless"
    streamed = "".join(d["delta"] for d in ds if d["type"] == delta_t)
    whole = [d[field] for d in ds if d["type"] == done_t]
    whole += [d["item"][field] for d in ds if d["type"] == "response.output_item.done"]
    whole += [d["response"]["output"][0][field] for d in ds if d["type"] == "response.completed"]
    return streamed, whole


@given(texts, st.data())
@example("[EMAIL_1]", None)
def test_responses_mcp_arguments_reassemble_and_every_snapshot_parses(value, data) -> None:
    args = json.dumps({"thread_id": value, "path": "WINPATH", "who": "[EMAIL_2]"})
    pieces = data.draw(splits(args, 10)) if data is not None else [args[:16], args[16:]]
    body = mcp_stream(pieces)
    cuts = data.draw(byte_splits(body, 30)) if data is not None else [body]
    streamed, whole = read_items(run(openai_responses.ResponsesStream, body, cuts), "response.mcp_call_arguments.delta",
                                 "response.mcp_call_arguments.done", "arguments")  # fmt: skip
    want = restore_value(json.loads(args))
    assert json.loads(streamed) == want
    assert len(whole) == 3 and all(json.loads(w) == want for w in whole)


def test_responses_whole_body_mcp_arguments_are_json_text() -> None:
    body = json.dumps({"output": [{"type": "mcp_call", "id": "m", "name": "crm_lookup", "server_label": "s",
                                   "arguments": '{"p": "WINPATH"}'}]}).encode()  # fmt: skip
    item = json.loads(restore_body(body, openai_responses.RESPONSE_OBJECT, R))["output"][0]
    assert json.loads(item["arguments"]) == {"p": WIN} and item["name"] == "acme_lookup"


@given(texts, st.data())
@example("run [EMAIL_1] now", None)
def test_responses_custom_tool_input_reassembles(text, data) -> None:
    pieces = data.draw(splits(text)) if data is not None else [text[:6], text[6:]]
    body = mcp_stream(pieces, kind="custom")
    cuts = data.draw(byte_splits(body, 30)) if data is not None else [body]
    streamed, whole = read_items(run(openai_responses.ResponsesStream, body, cuts), "response.custom_tool_call_input.delta",
                                 "response.custom_tool_call_input.done", "input")  # fmt: skip
    assert streamed == R.value(text)
    assert whole == [streamed] * 3


# -- logprobs: never a disguise -------------------------------------------------------------


def lp(tokens: list[str], alts: tuple[str, ...] = ()) -> list[dict]:
    return [{"token": t, "logprob": -0.1, "bytes": list(t.encode()),
             "top_logprobs": [{"token": a, "logprob": -1.0, "bytes": list(a.encode())} for a in (t, *alts)]}
            for t in tokens]  # fmt: skip


def no_disguise_in(x: object) -> None:
    s = json.dumps(x)
    for d in ("Zenith", "[EMAIL_", "nova"):
        assert d not in s, f"{d!r} in {s}"


def test_chat_stream_logprobs_of_changed_text_are_removed() -> None:
    toks = ["Hi", " Zen", "ith", " Labs", " and", " [", "EMAIL", "_1", "]", "."]
    chunks = [chat_chunk([{"index": 0, "delta": {"content": t}, "logprobs": {"content": lp([t], (" nova",)),
                                                                             "refusal": None},
                           "finish_reason": None}]) for t in toks]  # fmt: skip
    body = b"".join(chunks) + chat_chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]) + b"data: [DONE]\n\n"
    out = run(openai_chat.ChatStream, body)
    content, _, ds = read_chat(out)
    assert content[0] == "Hi Acme Corp and bob@corp.example.com."
    entries = [e for d in ds for c in d["choices"] if c.get("logprobs") for e in c["logprobs"]["content"]]
    no_disguise_in(entries)
    # what is left is the untouched text's own tokens, in order, each with its alternatives
    assert [e["token"] for e in entries] == ["Hi", " and", "."]
    assert all(len(e["top_logprobs"]) == 1 for e in entries)


def test_chat_body_logprobs_overlapping_a_match_are_removed() -> None:
    toks = ["Hi", " Zen", "ith", " Labs", " é", "[[reply_to", "_current]]"]
    body = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "".join(toks)},
                                    "logprobs": {"content": lp(toks, ("nova",)), "refusal": None}}]}).encode()  # fmt: skip
    got = json.loads(restore_body(body, openai_chat.CHAT_RESPONSE, R))["choices"][0]
    assert got["message"]["content"] == "Hi Acme Corp é"
    no_disguise_in(got["logprobs"])
    assert [e["token"] for e in got["logprobs"]["content"]] == ["Hi", " é"]


def test_responses_logprobs_in_deltas_and_done_events() -> None:
    toks = ["Hi", " Zen", "ith", " Labs", "!"]
    seq = iter(range(100))
    ev = [_resp_event("response.output_text.delta", next(seq), item_id="m", output_index=0, content_index=0,
                      delta=t, logprobs=lp([t], ("nova",))) for t in toks]  # fmt: skip
    ev.append(_resp_event("response.output_text.done", next(seq), item_id="m", output_index=0, content_index=0,
                          text="".join(toks), logprobs=lp(toks)))  # fmt: skip
    part = {"type": "output_text", "text": "".join(toks), "annotations": [], "logprobs": lp(toks)}
    ev.append(_resp_event("response.content_part.done", next(seq), item_id="m", output_index=0, content_index=0,
                          part=part))  # fmt: skip
    ev.append(_resp_event("response.completed", next(seq), response={"output": [
        {"type": "message", "id": "m", "role": "assistant", "content": [part]}]}))  # fmt: skip
    ds = events(run(openai_responses.ResponsesStream, b"".join(ev)))
    assert [d["sequence_number"] for d in ds] == list(range(len(ds)))
    assert "".join(d["delta"] for d in ds if d["type"] == "response.output_text.delta") == "Hi Acme Corp!"
    no_disguise_in([d.get("logprobs") for d in ds] + [d.get("part") for d in ds] + [d.get("response") for d in ds])
    done = next(d for d in ds if d["type"] == "response.output_text.done")
    assert [e["token"] for e in done["logprobs"]] == ["Hi", "!"]


# -- streams that end without their last event ------------------------------------------------


def test_anthropic_stream_without_message_stop_ends_with_error_after_held_text() -> None:
    body = build_stream([("text", ["Contact [EMA"])])
    body = body[: body.index(b"event: content_block_stop")]
    ds = events(run(anthropic.AnthropicStream, body))
    assert ds[-2]["delta"]["text"] == "[EMA"  # what was held, delivered
    assert ds[-1]["type"] == "error" and "message_stop" in ds[-1]["error"]["message"]


def test_anthropic_complete_stream_passing_unparsed_gets_no_error() -> None:
    r = make_rules(literals={"Qorvex": "Qx"}, patterns=[], strip=[])  # nothing triggers on this stream
    body = build_stream([("text", ["plain words"])])
    assert run(anthropic.AnthropicStream, body, restorer=r.restorer({})) == body


def test_chat_stream_without_done_ends_with_error() -> None:
    body = build_chat([("content", 0, "Mail [EMA")])
    body = body[: body.index(b"data: [DONE]")]
    out = run(openai_chat.ChatStream, body)
    content, _, ds = read_chat(out)  # asserts the stream ends with [DONE]
    assert content[0] == "Mail [EMA"
    assert "[DONE]" in ds[-1]["error"]["message"]


@pytest.mark.parametrize("held", [True, False])
def test_responses_stream_without_completed_continues_the_numbering(held: bool) -> None:
    seq = iter(range(100))
    ev = [_resp_event("response.created", next(seq), response={"id": "r", "status": "in_progress", "output": []})]
    ev += [_resp_event("response.output_text.delta", next(seq), item_id="m", output_index=0, content_index=0,
                       delta=t, logprobs=[]) for t in ("plain ", "words ", "only ")]  # fmt: skip
    if held:
        ev.append(_resp_event("response.output_text.delta", next(seq), item_id="m", output_index=0,
                              content_index=0, delta="[EMA", logprobs=[]))  # fmt: skip
    r = make_rules(literals={"Qorvex": "Qx"}, strip=[])
    ds = events(run(openai_responses.ResponsesStream, b"".join(ev), restorer=r.restorer({})))
    assert [d["sequence_number"] for d in ds] == list(range(len(ds)))
    assert ds[-1]["type"] == "error" and "response.completed" in ds[-1]["message"]
    if held:
        assert ds[-2]["delta"] == "[EMA"


# -- an event that is not UTF-8 -----------------------------------------------------------------


def test_non_utf8_event_never_overtakes_held_text() -> None:
    good = build_stream([("text", ["see nova"])])
    cut = good.index(b"event: content_block_stop")
    bad = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\xff"}}\n\n'
    out = run(anthropic.AnthropicStream, good[:cut] + bad + good[cut:])
    f = Framer()
    evs = f.feed(out) + f.flush()
    assert all(not e.bad for e in evs)
    ds = [json.loads(e.data) for e in evs if e.data]
    texts_ = [d["delta"]["text"] for d in ds if d["type"] == "content_block_delta"]
    # the addon ends the stream: "nova", held (it may grow into "nova.cloud"), is dropped
    # with it (issue 15), never sent after the error; then nothing
    assert texts_ == ["see "]
    assert ds[-1]["type"] == "error" and "UTF-8" in ds[-1]["error"]["message"]


def test_non_utf8_event_passes_when_nothing_is_held_and_nothing_can_match() -> None:
    r = make_rules(literals={"Qorvex": "Qx"}, patterns=[], strip=[])
    body = b"event: ping\ndata: \xff\n\n" + build_stream([("text", ["plain"])])
    assert run(anthropic.AnthropicStream, body, restorer=r.restorer({})) == body


# -- planted bug: a held tail whose original needs JSON escaping --------------------------------


def test_held_tail_with_an_original_that_needs_escaping_parses_everywhere() -> None:
    r = make_rules(literals={'C:\\x "q"': "nova", "nova-internal.cloud": "nova.cloud"}).restorer({})
    want = 'see C:\\x "q"'
    blocks, _ = read_stream(run(anthropic.AnthropicStream, build_stream([("text", ["see nova"])]), restorer=r))
    assert blocks[0]["text"] == want
    content, _, _ = read_chat(run(openai_chat.ChatStream, build_chat([("content", 0, "see nova")]), restorer=r))
    assert content[0] == want
    content, _, _ = read_chat(run(openai_chat.ChatStream, build_chat([("content", 0, "see nova"), ("finish", 0, "stop")]),
                                  restorer=r))  # fmt: skip
    assert content[0] == want
    seq = iter(range(10))
    body = _resp_event("response.output_text.delta", next(seq), item_id="m", output_index=0, content_index=0,
                       delta="see nova", logprobs=[])  # fmt: skip
    body += _resp_event("response.completed", next(seq), response={"id": "r", "status": "completed", "output": []})
    ds = events(run(openai_responses.ResponsesStream, body, restorer=r))
    assert "".join(d["delta"] for d in ds if "delta" in d) == want


# -- compressed streams ---------------------------------------------------------------------------


def compressed_run(body: bytes, encoding: str, step: int) -> bytes:
    s = pipeline.decoded(anthropic.AnthropicStream(RULES.restorer(PLACEHOLDERS)), encoding)
    return b"".join(s.feed(body[i : i + step]) for i in range(0, len(body), step)) + s.flush()


@pytest.mark.parametrize("step", [1, 7, 1000])
def test_gzip_stream_of_several_members_is_decoded_whole(step: int) -> None:
    plain = build_stream([("text", ["Zenith Labs ", "and [EMAIL_1]"])])
    evs = [e + b"\n\n" for e in plain.split(b"\n\n") if e]
    body = b"".join(gzip.compress(e) for e in evs)  # one member per event
    blocks, _ = read_stream(compressed_run(body, "gzip", step))
    assert blocks[0]["text"] == "Acme Corp and bob@corp.example.com" and blocks[0]["stopped"]


@pytest.mark.parametrize("step", [1, 7, 1000])
def test_zstd_stream_of_several_frames_is_decoded_whole(step: int) -> None:
    try:
        import zstandard

        compress = zstandard.ZstdCompressor().compress
    except ImportError:
        from backports import zstd  # type: ignore[import-not-found]

        compress = zstd.compress
    plain = build_stream([("text", ["Zenith Labs ", "and [EMAIL_1]"])])
    body = b"".join(compress(e + b"\n\n") for e in plain.split(b"\n\n") if e)
    blocks, ds = read_stream(compressed_run(body, "zstd", step))
    assert blocks[0]["text"] == "Acme Corp and bob@corp.example.com"
    assert ds[-1]["type"] == "message_stop"


def test_gzip_stream_cut_before_its_end_marker_ends_with_an_error_event_before_its_last_event() -> None:
    """Everything but the gzip trailer: the API's last event came, so the stream ends as
    an uncompressed one cut there does, cleanly (an error after `message_stop` made the
    anthropic SDK raise on a complete message: wire/decoding.Decoded.flush); cut before
    its last event, it ends with the error."""
    plain = build_stream([("text", ["Zenith Labs and [EMA"])])

    def cut_run(data: bytes) -> list[dict]:
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return events(compressed_run(c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH), "gzip", 50))  # no gzip trailer

    ds = cut_run(plain)
    assert ds[-1]["type"] == "message_stop" and all(d["type"] != "error" for d in ds)
    ds = cut_run(plain[: plain.index(b"event: message_stop")])
    assert ds[-1]["type"] == "error" and "end marker" in ds[-1]["error"]["message"]


# -- bodies not labelled as what they are ------------------------------------------------------


@pytest.mark.parametrize("ctype", ["text/plain", "application/octet-stream", "application/x-ndjson", ""])
def test_event_stream_not_labelled_as_one_fails_closed(ctype: str) -> None:
    """The label and the endpoint decide; where an event stream comes labelled as
    something else the body is not guessed at: it ends with an explicit error."""
    body = build_stream([("text", ["Zenith ", "Labs"])])
    bs = reverser_for(engine.ANTHROPIC_MESSAGES, RULES.restorer(PLACEHOLDERS), ctype)
    out = b"".join(bs.feed(body[i : i + 3]) for i in range(0, len(body), 3)) + bs.flush()
    assert not bs.is_sse and bs.failed
    # an error event: its client asked for a stream and reads events (base/bodystream.BodyStream)
    assert out.startswith(b"event: error\n")
    err = json.loads(out.split(b"data: ", 1)[1])
    assert err["type"] == "error" and "event stream labelled" in err["error"]["message"]
    assert b"Zenith" not in out


def test_json_body_labelled_event_stream_ends_as_a_stream_cut_short() -> None:
    body = b'{"type":"error","error":{"type":"api_error","message":"Zenith Labs failed"}}'
    bs = reverser_for(engine.ANTHROPIC_MESSAGES, RULES.restorer(PLACEHOLDERS), "text/event-stream")
    out = bs.whole(body)
    assert bs.failed and b"event: error" in out and b"message_stop" in out


def test_sniff() -> None:
    assert sniff(b"dat", "") is None and sniff(b"data: x", "") is True
    assert sniff(b"\xef\xbb\xbf\n: ping\n", "") is True
    assert sniff(b'  {"a":', "text/event-stream") is False
    assert sniff(b"oops", "text/event-stream", final=True) is True and sniff(b"oops", "text/plain") is False


# -- whole bodies json.loads refuses ----------------------------------------------------------


def test_body_with_an_integer_over_4300_digits_is_still_restored() -> None:
    big = "9" * 5000
    body = ('{"type":"message","content":[{"type":"thinking","thinking":"Zenith Labs","signature":"s"},'
            '{"type":"tool_use","id":"t","name":"crm_lookup","input":{"n":'
            + big + ',"thread_id":"Zenith Labs"}}]}').encode()  # fmt: skip
    with pytest.raises(ValueError):
        json.loads(body)
    out = restore_body(body, anthropic.MESSAGE_RESPONSE, R).decode()
    assert '"name":"acme_lookup"' in out and '"session_id":"Acme Corp"' in out and big in out
    assert '"thinking":"Zenith Labs"' in out  # restored field by field: thinking untouched


def test_stream_event_with_a_huge_integer_is_restored() -> None:
    big = "7" * 5000
    ev = f'event: message_delta\ndata: {{"type":"message_delta","delta":{{"stop_reason":"end_turn","stop_sequence":"Zenith Labs"}},"usage":{{"output_tokens":{big}}}}}\n\n'
    body = build_stream([("text", ["x"])]).replace(b"event: message_delta", ev.encode() + b"event: message_delta", 1)
    out = run(anthropic.AnthropicStream, body)
    assert b'"stop_sequence":"Acme Corp"' in out and b"Zenith" not in out


# -- retrievals: literals restored, placeholders cannot be ------------------------------------


def test_retrieved_bodies_restore_literals_only() -> None:
    lit_only = RULES.restorer({})  # a retrieval has no request: no placeholders
    items = json.dumps({"object": "list", "data": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Zenith Labs [EMAIL_1]"}]},
        {"type": "function_call", "call_id": "c", "name": "crm_lookup", "arguments": '{"p": "WINPATH"}'},
        {"type": "message", "role": "assistant", "id": "m",
         "content": [{"type": "output_text", "text": "Zenith Labs", "annotations": []}]}]}).encode()  # fmt: skip
    got = json.loads(restore_body(items, openai_responses.INPUT_ITEMS_LIST, lit_only))["data"]
    assert got[0]["content"][0]["text"] == "Acme Corp [EMAIL_1]"
    assert got[1]["name"] == "acme_lookup" and json.loads(got[1]["arguments"]) == {"p": WIN}
    assert got[2]["content"][0]["text"] == "Acme Corp"
    msgs = json.dumps({"object": "list", "data": [{"id": "1", "role": "assistant", "content": "Zenith Labs",
                       "tool_calls": [{"id": "c", "type": "function", "function": {"name": "crm_lookup",
                                                                                   "arguments": "{}"}}]}]}).encode()  # fmt: skip
    got = json.loads(restore_body(msgs, openai_chat.CHAT_STORED_MESSAGES, lit_only))["data"][0]
    assert got["content"] == "Acme Corp" and got["tool_calls"][0]["function"]["name"] == "acme_lookup"
    line = {"custom_id": "Zenith Labs-1", "result": {"type": "succeeded", "message": {
        "id": "msg", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "Zenith Labs"}, {"type": "thinking", "thinking": "Zenith Labs",
                                                             "signature": "s"}]}}}  # fmt: skip
    jsonl = (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode()
    out = restore_body(jsonl, anthropic.BATCH_RESULT, lit_only).decode().splitlines()
    for ln in out:
        d = json.loads(ln)
        assert d["custom_id"] == "Acme Corp-1"  # the client's id, masked in its request: restored
        assert [b.get("text", b.get("thinking")) for b in d["result"]["message"]["content"]] == ["Acme Corp",
                                                                                                "Zenith Labs"]


# -- planted bug: a data line ending in a lone CR -------------------------------------------


@pytest.mark.parametrize("cut", [None, 1, 7, 8, 9])
def test_data_line_ending_in_a_lone_cr_then_another_data_line(cut) -> None:
    raw = b"data: a\rdata: b\n\n"
    f = Framer()
    pieces = [raw] if cut is None else [raw[:cut], raw[cut:]]
    evs = [e for p in pieces for e in f.feed(p)] + f.flush()
    assert [e.data for e in evs if e.data is not None] == ["a\nb"]
    assert b"".join(e.raw for e in evs) == raw
