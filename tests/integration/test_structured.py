"""Structured outputs and tool calls through the official SDKs' own helpers, end to end:
openai (`chat.completions.parse`/`.stream`, `responses.parse`/`.stream`), anthropic
(`messages.parse`/`.stream`, the beta `tool_runner`), google-genai (`response_schema`,
`response.parsed`, automatic function calling) -> a real mitmdump running the addon -> a
fake upstream answering as the providers do.

The schema a Pydantic model makes leaves masked and consistent (its `$defs` name and the
`$ref` to it, property keys and `required`, enum values), and the parsed object the client
gets is the one it would get without the proxy: the answer's JSON text is restored as JSON
text, so an original with a backslash (a Windows account, a path) is JSON-escaped. As text
it was an invalid escape (`"CORP\\jsmith"`) and every helper's parse failed.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from integration_util import MITMDUMP, Proxy, Recorded, Reply, running_proxy, sse_data

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

WIN = "CORP\\jsmith"  # a Windows account: a backslash, as `\j` no JSON escape
LITERALS = {"Acme Corp": "Zenith Labs", "session_id": "thread_id", "acme_lookup": "crm_lookup",
            WIN: "user_a", "AcmeRecord": "RecordB"}  # fmt: skip
ORIGINALS = list(LITERALS)
# what the model writes: the disguised keys and values
ANSWER = json.dumps({"thread_id": "s-1", "owner": "user_a", "customer": "Zenith Labs"})


class Customer(enum.StrEnum):
    acme = "Acme Corp"
    other = "Globex"


class AcmeRecord(BaseModel):
    session_id: str
    owner: str
    customer: Customer


class Report(BaseModel):
    records: list[AcmeRecord]


WANT = AcmeRecord(session_id="s-1", owner=WIN, customer=Customer.acme)


def leaked(rec: Recorded) -> list[str]:
    texts = [rec.body.decode("utf-8", "replace"), json.dumps(json.loads(rec.body), ensure_ascii=False)]
    return [o for o in ORIGINALS if any(o in t for t in texts)]


def json_reply(doc: dict) -> Reply:
    return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")


def sse_reply(events: list[bytes]) -> Reply:
    return Reply(events, headers={"Content-Type": "text/event-stream; charset=utf-8"})


def pieces(rec: Recorded, text: str = ANSWER) -> list[str]:
    step = int(rec.headers.get("x-step", "1"))
    return [text[i : i + step] for i in range(0, len(text), step)]


# -- the fake providers ----------------------------------------------------------------------


def chat(rec: Recorded) -> Reply:
    doc = rec.json
    fmt = doc.get("response_format")
    content = "owner user_a" if fmt is None else ANSWER if fmt["json_schema"]["name"] != "Report" else (
        '{"records": [' + ANSWER + "]}")
    if not doc.get("stream"):
        return json_reply({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content, "refusal": None, "annotations": []},
             "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})  # fmt: skip

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return sse_data({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                         "system_fingerprint": "fp_1", "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                                    "finish_reason": finish}]})  # fmt: skip

    return sse_reply([chunk({"role": "assistant", "content": "", "refusal": None}),
                      *(chunk({"content": p}) for p in pieces(rec, content)), chunk({}, "stop"), sse_data("[DONE]")])


MSG = "msg_00592e63e61b66660169fab1bada8481a28ef92eb62c168ead"


def _response(status: str, text: str | None, fmt: dict) -> dict:
    out = [] if text is None else [{"id": MSG, "type": "message", "status": "completed", "role": "assistant",
                                    "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                                                 "text": text}]}]  # fmt: skip
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": status, "error": None,
            "incomplete_details": None, "instructions": None, "model": "gpt-5", "output": out,
            "parallel_tool_calls": True, "text": {"format": fmt}, "tool_choice": "auto", "tools": [], "usage": None,
            "metadata": {}}  # fmt: skip


STORED_FORMAT = {"type": "json_schema", "name": "AcmeRecord", "schema": {"type": "object"}, "strict": True}


def responses(rec: Recorded) -> Reply:
    doc = rec.json
    fmt = doc["text"]["format"]
    if not doc.get("stream"):
        return json_reply(_response("completed", ANSWER, fmt))
    return sse_reply(_response_events(rec, fmt))


def stored(rec: Recorded) -> Reply:
    """GET /v1/responses/resp_1: whole, or streamed again (`?stream=true`) from the event
    after `starting_after` on, as a background response is followed and resumed."""
    query = dict(p.split("=", 1) for p in rec.path.partition("?")[2].split("&") if p)
    if query.get("stream") != "true":
        return json_reply(_response("completed", ANSWER, STORED_FORMAT))
    return sse_reply(_response_events(rec, STORED_FORMAT)[int(query.get("starting_after", "-1")) + 1 :])


def _response_events(rec: Recorded, fmt: dict) -> list[bytes]:
    at = {"item_id": MSG, "output_index": 0, "content_index": 0}
    evs = [{"type": "response.created", "response": _response("in_progress", None, fmt)},
           {"type": "response.output_item.added", "output_index": 0,
            "item": {"id": MSG, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}},
           {"type": "response.content_part.added", **at,
            "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}},
           *({"type": "response.output_text.delta", **at, "delta": p, "logprobs": [], "obfuscation": "xx"}
             for p in pieces(rec)),
           {"type": "response.output_text.done", **at, "logprobs": [], "text": ANSWER},
           {"type": "response.content_part.done", **at,
            "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ANSWER}},
           {"type": "response.output_item.done", "output_index": 0,
            "item": _response("completed", ANSWER, fmt)["output"][0]},
           {"type": "response.completed", "response": _response("completed", ANSWER, fmt)}]  # fmt: skip
    return [f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n}, separators=(',', ':'))}\n\n".encode()
            for n, e in enumerate(evs)]  # fmt: skip


USAGE = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 2}


def _message(content: list, stop: str | None) -> dict:
    return {"model": "claude-haiku-4-5", "id": "msg_01T8", "type": "message", "role": "assistant",
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": USAGE}  # fmt: skip


def _ev(d: dict) -> bytes:  # the API's own padding after the data
    return f"event: {d['type']}\ndata: {json.dumps(d, separators=(',', ':'))}               \n\n".encode()


def messages(rec: Recorded) -> Reply:
    doc = rec.json
    last = doc["messages"][-1]["content"]
    tools = doc["model"] == "claude-tools"
    if tools and not (isinstance(last, list) and last[0].get("type") == "tool_result"):
        args = json.dumps({"thread_id": "s-1", "tier": "Zenith Labs"})
        block, stop = {"type": "tool_use", "id": "toolu_01", "name": "crm_lookup", "input": json.loads(args)}, "tool_use"
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(rec, args)]
    else:
        text = "Done for user_a" if tools else ANSWER
        block, stop = {"type": "text", "text": text}, "end_turn"
        deltas = [{"type": "text_delta", "text": p} for p in pieces(rec, text)]
    if not doc.get("stream"):
        return json_reply(_message([block], stop))
    start = {**block, "input": {}} if block["type"] == "tool_use" else {"type": "text", "text": ""}
    return sse_reply([_ev({"type": "message_start", "message": _message([], None)}),
                      _ev({"type": "content_block_start", "index": 0, "content_block": start}),
                      *(_ev({"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas),
                      _ev({"type": "content_block_stop", "index": 0}),
                      _ev({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": USAGE}),
                      _ev({"type": "message_stop"})])  # fmt: skip


def _candidate(parts: list, finish: bool) -> dict:
    c: dict = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        c["finishReason"] = "STOP"
    return {"candidates": [c], "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
            "modelVersion": "gemini-2.5-flash", "responseId": "r1"}  # fmt: skip


def gemini(rec: Recorded) -> Reply:
    doc = rec.json
    if doc.get("tools"):
        done = doc["contents"][-1]["parts"][0].get("functionResponse") is not None
        part = {"text": "Done for user_a"} if done else {
            "functionCall": {"name": "crm_lookup", "args": {"thread_id": "s-1", "tier": "Zenith Labs"}}}
        return json_reply(_candidate([part], True))
    if "streamGenerateContent" not in rec.path:
        return json_reply(_candidate([{"text": ANSWER}], True))
    ps = pieces(rec)
    return sse_reply([b"data: " + json.dumps(_candidate([{"text": p}], n == len(ps) - 1)).encode() + b"\r\n\r\n"
                      for n, p in enumerate(ps)])  # fmt: skip


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-structured"), {"literals": LITERALS}) as p:
        p.upstream.on("chat", chat)
        p.upstream.on("gpt-5", responses)
        p.upstream.on("/v1/responses/resp_1", stored)
        p.upstream.on("/v1/files/file-batch-out/content", batch_output)
        p.upstream.on("claude-haiku-4-5", messages)
        p.upstream.on("claude-tools", messages)
        for version in ("v1beta", "v1"):  # (google-genai 3 calls v1)
            for method in ("generateContent", "streamGenerateContent"):
                p.upstream.on(f"/{version}/models/gemini-2.5-flash:{method}", gemini)
        yield p


def clean_upstream(proxy: Proxy, n: int) -> list[dict]:
    """The last n requests upstream got: no original in any (raw or JSON-decoded)."""
    recs = proxy.upstream.requests[-n:]
    for r in recs:
        assert not leaked(r), f"{leaked(r)} reached upstream"
    return [r.json for r in recs]


def assert_consistent(schema: dict) -> None:
    """A masked Pydantic schema still holds together: every `$ref` names a `$defs` entry,
    every `required` name is a property, the enum is the disguise."""
    defs = schema.get("$defs", {})
    refs = [v for v in json.dumps(schema).split('"$ref": "#/$defs/')[1:]]
    assert refs and all(r.split('"')[0] in defs for r in refs)
    for s in [schema, *defs.values()]:
        assert set(s.get("required", ())) <= set(s.get("properties", {}))
    assert {"RecordB", "Customer"} == set(defs) and defs["Customer"]["enum"] == ["Zenith Labs", "Globex"]
    assert set(defs["RecordB"]["properties"]) == {"thread_id", "owner", "customer"}


def sdk_openai(proxy: Proxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="sk-test", max_retries=0)


def test_chat_parse_and_its_schema(proxy: Proxy) -> None:
    got = sdk_openai(proxy).chat.completions.parse(
        model="chat", messages=[{"role": "user", "content": "Report on Acme Corp"}], response_format=Report)
    assert got.choices[0].message.parsed == Report(records=[WANT])
    (up,) = clean_upstream(proxy, 1)
    js = up["response_format"]["json_schema"]
    assert js["strict"] is True and js["name"] == "Report"
    assert_consistent(js["schema"])


@pytest.mark.parametrize("step", [1, 5])
def test_chat_stream_helper(proxy: Proxy, step: int) -> None:
    with sdk_openai(proxy).chat.completions.stream(
        model="chat", messages=[{"role": "user", "content": "Acme Corp?"}], response_format=AcmeRecord,
        extra_headers={"x-step": str(step)},
    ) as s:
        snapshots = [e.snapshot for e in s if e.type == "content.delta"]
        final = s.get_final_completion()
    assert final.choices[0].message.parsed == WANT
    assert not [x for x in snapshots for d in LITERALS.values() if d in x]
    clean_upstream(proxy, 1)


def test_an_answer_not_asked_for_as_json_is_text(proxy: Proxy) -> None:
    got = sdk_openai(proxy).chat.completions.create(model="chat", messages=[{"role": "user", "content": "who?"}])
    assert got.choices[0].message.content == f"owner {WIN}"  # as it is: not JSON-escaped


def test_responses_parse(proxy: Proxy) -> None:
    got = sdk_openai(proxy).responses.parse(model="gpt-5", input="Acme Corp?", text_format=AcmeRecord)
    assert got.output_parsed == WANT
    (up,) = clean_upstream(proxy, 1)
    assert up["text"]["format"]["strict"] is True and list(up["text"]["format"]["schema"]["$defs"]) == ["Customer"]


@pytest.mark.parametrize("step", [1, 5])
def test_responses_stream_helper(proxy: Proxy, step: int) -> None:
    with sdk_openai(proxy).responses.stream(model="gpt-5", input="Acme Corp?", text_format=AcmeRecord,
                                            extra_headers={"x-step": str(step)}) as s:  # fmt: skip
        for _ in s:
            pass
        final = s.get_final_response()
    assert final.output_parsed == WANT


def test_a_stored_response_says_its_answer_is_json(proxy: Proxy) -> None:
    """GET /v1/responses/{id} (a background response polled): the request that asked for
    JSON is gone, the response's own `text.format` says it."""
    got = sdk_openai(proxy).responses.retrieve("resp_1")
    assert AcmeRecord.model_validate_json(got.output_text) == WANT


@pytest.mark.parametrize("step", [1, 4])
def test_a_stored_response_streamed_again_says_its_answer_is_json(proxy: Proxy, step: int) -> None:
    """`responses.stream(response_id=...)` (following a background response: the SDK asks
    for the whole stream and drops what it read itself): the stream's response.created
    says `text.format` json_schema, so its text is JSON text. As text the original's
    backslash broke the parse (pydantic's "invalid escape")."""
    with sdk_openai(proxy).responses.stream(response_id="resp_1", text_format=AcmeRecord,
                                            extra_headers={"x-step": str(step)}) as s:  # fmt: skip
        text = "".join(e.delta for e in s if e.type == "response.output_text.delta")
        final = s.get_final_response()
    assert final.output_parsed == WANT and AcmeRecord.model_validate_json(text) == WANT


def test_a_stored_stream_resumed_past_what_says_its_format_ends_with_an_error(proxy: Proxy) -> None:
    """`starting_after=N` sent upstream (`retrieve(stream=True, starting_after=N)`): the
    replay begins after response.created, mid-text; nobody says what the text is, and an
    original restored as text or as JSON text differs: an error event, never a guess.
    The same stream from its start, or whole, is JSON."""
    got = list(sdk_openai(proxy).responses.retrieve("resp_1", stream=True, starting_after=4,
                                                    extra_headers={"x-step": "3"}))  # fmt: skip
    assert got[-1].type == "error" and "format is not said" in got[-1].message
    assert WIN not in "".join(e.delta for e in got if e.type == "response.output_text.delta")
    whole = list(sdk_openai(proxy).responses.retrieve("resp_1", stream=True, extra_headers={"x-step": "3"}))
    assert AcmeRecord.model_validate_json(whole[-1].response.output_text) == WANT


def batch_output(rec: Recorded) -> Reply:
    """A batch's output file (`GET /v1/files/{id}/content`): one result line per request."""
    chat_body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}]}  # fmt: skip
    lines = [{"id": "batch_req_1", "custom_id": "r-1", "error": None,
              "response": {"status_code": 200, "request_id": "q1", "body": _response("completed", ANSWER, STORED_FORMAT)}},
             {"id": "batch_req_2", "custom_id": "r-2", "error": None,
              "response": {"status_code": 200, "request_id": "q2", "body": _response("completed", ANSWER, {"type": "text"})}},
             {"id": "batch_req_3", "custom_id": "r-3", "error": None,
              "response": {"status_code": 200, "request_id": "q3", "body": chat_body}}]  # fmt: skip
    return Reply(["".join(json.dumps(x) + "\n" for x in lines).encode()],
                 headers={"Content-Type": "application/octet-stream"}, framing="length")


def test_a_batchs_responses_results_say_their_answer_is_json(proxy: Proxy) -> None:
    """Batch results are fetched by another request than the batch's: no state ties them to
    the requests that asked for JSON. A Responses result says it in its own `text.format`
    (line by line); a Chat Completions result says nothing (its answer stays text, as the
    request is not known here: the original as it is)."""
    lines = [json.loads(x) for x in sdk_openai(proxy).files.content("file-batch-out").text.splitlines()]
    first, second, third = (x["response"]["body"] for x in lines)
    assert AcmeRecord.model_validate_json(first["output"][0]["content"][0]["text"]) == WANT
    assert WIN in second["output"][0]["content"][0]["text"]  # text.format text: as text
    assert WIN in third["choices"][0]["message"]["content"]  # not known: as text


def sdk_anthropic(proxy: Proxy) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.base_url, api_key="sk-ant-test", max_retries=0)


ASK = dict(model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": "Acme Corp?"}])


def test_anthropic_parse(proxy: Proxy) -> None:
    assert sdk_anthropic(proxy).messages.parse(**ASK, output_format=AcmeRecord).parsed_output == WANT
    (up,) = clean_upstream(proxy, 1)
    assert up["output_config"]["format"]["type"] == "json_schema"


@pytest.mark.parametrize("step", [1, 4])
def test_anthropic_stream_helper(proxy: Proxy, step: int) -> None:
    with sdk_anthropic(proxy).messages.stream(**ASK, output_format=AcmeRecord,
                                              extra_headers={"x-step": str(step)}) as s:  # fmt: skip
        for _ in s:
            pass
        assert s.get_final_message().parsed_output == WANT


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_runner(proxy: Proxy, stream: bool) -> None:
    """A @beta_tool named like an original: the runner finds it by the restored name, calls
    it with the restored input (streamed in 3-character input_json_delta pieces), and
    sends its result back masked."""
    calls = []

    @anthropic.beta_tool
    def acme_lookup(session_id: str, tier: str) -> str:
        """Look up an Acme Corp record by session_id."""
        calls.append((session_id, tier))
        return f"owner {WIN} at Acme Corp"

    runner = sdk_anthropic(proxy).beta.messages.tool_runner(
        model="claude-tools", max_tokens=100, tools=[acme_lookup], stream=stream,  # type: ignore[call-overload]
        messages=[{"role": "user", "content": "Look up Acme Corp s-1"}], extra_headers={"x-step": "3"})
    last = None
    for m in runner:
        if stream:
            for _ in m:
                pass
            m = m.get_final_message()
        last = m
    assert calls == [("s-1", "Acme Corp")]
    assert last is not None and last.content[0].text == f"Done for {WIN}"
    first, second = clean_upstream(proxy, 2)
    assert [t["name"] for t in first["tools"]] == ["crm_lookup"]
    assert list(first["tools"][0]["input_schema"]["properties"]) == ["thread_id", "tier"]


def sdk_genai(proxy: Proxy) -> genai.Client:  # (held by the caller: it closes its connections when let go)
    return genai.Client(api_key="AIzaTEST", http_options=types.HttpOptions(base_url=proxy.base_url))


def test_gemini_response_schema_parsed(proxy: Proxy) -> None:
    client = sdk_genai(proxy)
    got = client.models.generate_content(
        model="gemini-2.5-flash", contents="Acme Corp?",
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=AcmeRecord))
    assert got.parsed == WANT
    clean_upstream(proxy, 1)


@pytest.mark.parametrize("step", [1, 5])
def test_gemini_stream(proxy: Proxy, step: int) -> None:
    client = sdk_genai(proxy)
    text = "".join(c.text or "" for c in client.models.generate_content_stream(
        model="gemini-2.5-flash", contents="Acme Corp?",
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=AcmeRecord,
                                           http_options=types.HttpOptions(headers={"x-step": str(step)}))))
    assert AcmeRecord.model_validate_json(text) == WANT


def test_gemini_automatic_function_calling(proxy: Proxy) -> None:
    calls = []

    def acme_lookup(session_id: str, tier: str) -> dict:
        """Look up an Acme Corp record by session_id."""
        calls.append((session_id, tier))
        return {"owner": WIN}

    client = sdk_genai(proxy)
    got = client.models.generate_content(model="gemini-2.5-flash", contents="Look up Acme Corp s-1",
                                         config=types.GenerateContentConfig(tools=[acme_lookup]))
    assert calls == [("s-1", "Acme Corp")] and got.text == f"Done for {WIN}"
    first, second = clean_upstream(proxy, 2)
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "crm_lookup"
