"""Issue 15, the field model's cases, end to end: the official SDKs (openai, anthropic,
google-genai) and raw HTTP where the case is raw HTTP (a form post, Google's curl
examples) -> a real mitmdump running the addon -> a fake upstream that records what
reached "the provider".

Originals that used to leave: a `data` or `id` member of a field no table knows (1), a
batch file written with \\u escapes (2), a form-encoded body (3), Gemini text media (4).
Conversations that used to break: Gemini history with thought parts and signatures
(9), a Google API key in the query (10), Gemini explicit caching (11). And what the
field model adds: an OpenAI Batch input masked line by line and its results restored,
refusals on Google paths in Google's shape.
"""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types  # noqa: E402
from google.oauth2.credentials import Credentials  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

# EMAIL and GOOGLE_API_KEY come from the shipped defaults, which stay on.
LITERALS = {"Acme Corp": "Zenith Labs", "Müller GmbH": "Nordwind AG", "Bluebird": "Redwing"}
MAPPINGS = {"literals": LITERALS}
BOB = "bob@corp.example.com"
ORIGINALS = [*LITERALS, BOB]
GOOGLE_KEY = "AIza" + "SyD3x7Qk9mN2pL5vR8tW1zB4cF6hJ0aE_gU"


def found_originals(rec: Recorded) -> list[str]:
    """Every original in what the upstream received: raw, JSON-decoded (escapes), and
    inside base64 / multipart parts (decoded)."""
    texts = [rec.body.decode("utf-8", "replace"), rec.path]
    try:
        texts.append(json.dumps(json.loads(rec.body), ensure_ascii=False))
    except ValueError:
        for line in rec.body.decode("utf-8", "replace").splitlines():
            try:
                texts.append(json.dumps(json.loads(line), ensure_ascii=False))
            except ValueError:
                pass
    return [o for o in ORIGINALS if any(o in t for t in texts)]


def json_reply(obj: object, status: int = 200) -> Reply:
    return Reply([json.dumps(obj).encode()], status=status, headers={"Content-Type": "application/json"},
                 framing="length")  # fmt: skip


class Proxy:
    def __init__(self, upstream: FakeUpstream, mitm: Mitmdump) -> None:
        self.upstream = upstream
        self.mitm = mitm
        self.port = mitm.port
        self.base_url = f"http://127.0.0.1:{mitm.port}"

    def since(self, n: int) -> list[Recorded]:
        return self.upstream.requests[n:]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    tmp = tmp_path_factory.mktemp("disguise-fieldmodel")
    with FakeUpstream() as upstream:
        for path, handler in HANDLERS.items():
            upstream.on(path, handler)
        mitm = Mitmdump(mitmdump_cmd(upstream.port, tmp / "conf", write_mappings(tmp, MAPPINGS)))
        try:
            yield Proxy(upstream, mitm)
        finally:
            mitm.stop()
            print(mitm.output[-6000:])


def echo_text(rec: Recorded) -> str:
    return rec.body.decode("utf-8", "replace")


CHAT_ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}  # fmt: skip
MESSAGE_ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                  "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
GEMINI_ANSWER = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok Zenith Labs"}]}, "finishReason": "STOP",
                                 "index": 0}], "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 2}}  # fmt: skip
FILE_OBJECT = {"id": "file-abc123", "object": "file", "bytes": 100, "created_at": 1, "filename": "batch.jsonl",
               "purpose": "batch", "status": "processed"}  # fmt: skip


def cache_answer(rec: Recorded) -> Reply:
    doc = json.loads(rec.body) if rec.body else {}
    return json_reply({"name": "cachedContents/c-1", "model": "models/gemini-2.5-flash",
                       "displayName": doc.get("displayName", "Zenith Labs notes"),
                       "usageMetadata": {"totalTokenCount": 10}, "expireTime": "2030-01-01T00:00:00Z"})  # fmt: skip


def batch_results(rec: Recorded) -> Reply:
    lines = [
        {"id": "batch_req_1", "custom_id": "r1", "response": {"status_code": 200, "request_id": "req_1", "body": {
            **CHAT_ANSWER, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": "Dear Zenith Labs and Nordwind AG, see you."}}]}}, "error": None},
        {"id": "batch_req_2", "custom_id": "Redwing-r2", "response": None,
         "error": {"code": "x", "message": "Redwing was not found"}},
    ]  # fmt: skip
    return Reply(["".join(json.dumps(x) + "\n" for x in lines).encode()],
                 headers={"Content-Type": "application/octet-stream"}, framing="length")  # fmt: skip


HANDLERS = {
    "/v1/chat/completions": lambda r: json_reply(CHAT_ANSWER),
    "/v1/messages": lambda r: json_reply(MESSAGE_ANSWER),
    "/v1beta/models/gemini-2.5-flash:generateContent": lambda r: json_reply(GEMINI_ANSWER),
    "/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent":
        lambda r: json_reply(GEMINI_ANSWER),
    "/v1beta/cachedContents": cache_answer,
    "/v1beta/cachedContents/c-1": cache_answer,
    "/v1/files": lambda r: json_reply(FILE_OBJECT),
    "/v1/files/file-abc123/content": batch_results,
    "/v1/assistants": lambda r: json_reply({"id": "asst_1", "object": "assistant"}),
    "/upload/v1beta/files": lambda r: json_reply({"file": {"name": "files/f-1"}}),
}


def openai_client(proxy: Proxy):
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # fmt: skip


def anthropic_client(proxy: Proxy):
    return anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=20.0,
                               http_client=anthropic.DefaultHttpxClient(trust_env=False))  # fmt: skip


def _http_options(proxy: Proxy, api_version: str):
    return types.HttpOptions(base_url=proxy.base_url, api_version=api_version, client_args={"trust_env": False},
                             retry_options=types.HttpRetryOptions(attempts=1), timeout=20_000)  # fmt: skip


def gemini_client(proxy: Proxy):
    return genai.Client(api_key="test-key", http_options=_http_options(proxy, "v1beta"))


def vertex_client(proxy: Proxy):
    return genai.Client(vertexai=True, project="proj", location="us-central1",
                        credentials=Credentials(token="fake-token"), http_options=_http_options(proxy, "v1"))  # fmt: skip


def raw_post(proxy: Proxy, path: str, body: bytes, ctype: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=20)
    try:
        conn.request("POST", path, body=body, headers={"content-type": ctype})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# -- 1: `data` and `id` in fields no table knows ------------------------------------------------


def test_data_and_id_of_unknown_fields_are_masked(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    with openai_client(proxy) as c:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], extra_body={
            "documents": [{"id": BOB, "data": {"title": "Acme Corp plan", "snippet": f"mail {BOB}"}}]})
    with anthropic_client(proxy) as c:
        c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}],
                          extra_body={"diagnostics": {"data": {"owner": "Acme Corp", "id": BOB}}})  # fmt: skip
    vertex = vertex_client(proxy)
    vertex.models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=types.GenerateContentConfig(labels={"data": "acme-corp"}),
    )  # a label value must be lower case: the literal below is checked in its own test body
    sent = proxy.since(n)
    assert len(sent) == 3
    for rec in sent:
        assert not found_originals(rec), (rec.path, rec.body)
    chat, msgs, vertex = (json.loads(r.body) for r in sent)
    assert chat["documents"][0]["id"] == "[EMAIL_1]" and chat["documents"][0]["data"]["title"] == "Zenith Labs plan"
    assert msgs["diagnostics"]["data"] == {"owner": "Zenith Labs", "id": "[EMAIL_1]"}
    assert vertex["labels"] == {"data": "acme-corp"}
    # Vertex labels with an original (raw: the SDK would not send a capital letter)
    status, _ = raw_post(proxy, "/v1/projects/proj/locations/us-central1/publishers/google/models/"
                         "gemini-2.5-flash:generateContent",
                         json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                     "labels": {"data": "Acme Corp"}}).encode(), "application/json")  # fmt: skip
    assert status == 200
    assert json.loads(proxy.upstream.requests[-1].body)["labels"] == {"data": "Zenith Labs"}


def test_an_original_in_a_setting_is_masked(proxy: Proxy) -> None:
    """Settings the API reads (`thinking`, `stream_options`, `logit_bias`, `reasoning`) are
    text the client wrote: an unknown member or a word in one that is an original goes out
    masked; the API's own words and numbers beside it go out as they came."""
    n = len(proxy.upstream.requests)
    with anthropic_client(proxy) as c:
        c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}],
                          thinking={"type": "enabled", "budget_tokens": 1024},
                          extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024, "note": "Acme Corp"}})  # fmt: skip
    with openai_client(proxy) as c:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                  logit_bias={"50256": -100},
                                  extra_body={"stream_options": {"include_usage": True, "note": "Acme Corp"}})  # fmt: skip
    status, _ = raw_post(proxy, "/v1/chat/completions", json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "logit_bias": {"1234": BOB}}).encode(),
        "application/json")  # fmt: skip
    assert status == 200
    sent = proxy.since(n)
    assert len(sent) == 3
    for rec in sent:
        assert not found_originals(rec), (rec.path, rec.body)
    msgs, chat, bias = (json.loads(r.body) for r in sent)
    assert msgs["thinking"] == {"type": "enabled", "budget_tokens": 1024, "note": "Zenith Labs"}
    assert chat["stream_options"] == {"include_usage": True, "note": "Zenith Labs"} and chat["logit_bias"] == {"50256": -100}
    assert bias["logit_bias"] == {"1234": "[EMAIL_1]"}


def test_a_schemas_id_schema_and_format_values_are_masked_its_types_are_not(proxy: Proxy) -> None:
    """`$id`, `$schema` and `format` are the client's words (an internal host in a URL);
    the keywords and `type`'s vocabulary are the schema language's."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://Acme Corp/customer.json",
              "type": "object", "properties": {"name": {"type": "string", "format": "Acme Corp"},
                                               "at": {"type": "string", "format": "date-time"}}}  # fmt: skip
    want = json.loads(json.dumps(schema).replace("Acme Corp", "Zenith Labs"))
    n = len(proxy.upstream.requests)
    with anthropic_client(proxy) as c:
        c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}],
                          tools=[{"name": "f", "input_schema": schema}])  # fmt: skip
    with openai_client(proxy) as c:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], response_format={
            "type": "json_schema", "json_schema": {"name": "c", "schema": schema}})
    declaration = types.FunctionDeclaration(name="f", parameters_json_schema=schema)
    gemini = gemini_client(proxy)
    gemini.models.generate_content(model="gemini-2.5-flash", contents="hi", config=types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[declaration])]))
    msgs, chat, gen = (json.loads(r.body) for r in proxy.since(n))
    assert msgs["tools"][0]["input_schema"] == want
    assert chat["response_format"]["json_schema"]["schema"] == want
    assert gen["tools"][0]["functionDeclarations"][0]["parameters_json_schema"] == want  # (the SDK spells it so)


def test_an_exempt_field_holds_only_the_value_it_was_made_for(proxy: Proxy) -> None:
    """Stop 65's probes (E1, E3, G5): function-call arguments sent as JSON, an id or the
    model name sent as an object, a role or an enum word holding an original: each goes
    out masked (keys and values), never as it came."""
    note = {"note": "Acme Corp", "Acme Corp": 1}
    bodies = [
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": note}}]}]}),
        ("/v1/responses", {"model": "m", "input": [{"type": "mcp_call", "id": "m", "server_label": "s", "name": "f",
                                                    "arguments": note}], "previous_response_id": note}),
        ("/v1/messages", {"model": note, "max_tokens": 1, "messages": [{"role": "Acme Corp", "content": "x"}],
                          "tool_choice": {"type": "Acme Corp"}}),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": note, "content": "x"}],
                                  "response_format": {"type": "Acme Corp"}}),
    ]  # fmt: skip
    n = len(proxy.upstream.requests)
    for path, body in bodies:
        raw_post(proxy, path, json.dumps(body).encode(), "application/json")  # (the fake's answer: not ours)
    sent = proxy.since(n)
    assert len(sent) == len(bodies)  # each forwarded, masked
    for rec in sent:
        assert not found_originals(rec), (rec.path, rec.body)
    chat = json.loads(sent[0].body)
    assert chat["messages"][0]["tool_calls"][0]["function"]["arguments"] == {"note": "Zenith Labs", "Zenith Labs": 1}
    assert json.loads(sent[2].body)["model"] == {"note": "Zenith Labs", "Zenith Labs": 1}


def test_chat_reasoning_sent_back_is_masked_its_signature_is_not(proxy: Proxy) -> None:
    """A compatible provider's reasoning on a message (any role) is text no signature
    covers: masked; an OpenRouter entry's signature goes out as it came."""
    sig = "EqQBCkgIAxABGAIiQAcme Corp=="
    n = len(proxy.upstream.requests)
    with openai_client(proxy) as c:
        c.chat.completions.create(model="m", messages=[  # type: ignore[misc, list-item]
            {"role": "user", "content": "hi", "reasoning": "Acme Corp"},
            {"role": "assistant", "content": "x", "reasoning_content": f"the user at Acme Corp, {BOB}",
             "reasoning_details": [{"type": "reasoning.text", "text": "Acme Corp", "signature": sig}]},
            {"role": "user", "content": "go on"}])  # fmt: skip
    (rec,) = proxy.since(n)
    user, asst, _ = json.loads(rec.body)["messages"]
    assert user["reasoning"] == "Zenith Labs"
    assert asst["reasoning_content"] == "the user at Zenith Labs, [EMAIL_1]"
    assert asst["reasoning_details"] == [{"type": "reasoning.text", "text": "Zenith Labs", "signature": sig}]


# -- 2: a batch file (JSON lines with \u escapes): masked line by line; results restored ------------


def batch_file(escaped: bool = True) -> bytes:
    lines = [
        {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": {
            "model": "m", "messages": [{"role": "user", "content": f"Write to Müller GmbH and {BOB} for Acme Corp."}]}},
        {"custom_id": "Bluebird-r2", "method": "POST", "url": "/v1/responses", "body": {
            "model": "m", "input": "Is Bluebird a Müller GmbH brand?", "metadata": {"who": BOB}}},
        {"custom_id": "r3", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": ["Müller GmbH"]}},
    ]  # fmt: skip
    return "".join(json.dumps(x, ensure_ascii=escaped) + "\n" for x in lines).encode()


def test_batch_input_is_masked_line_by_line_and_results_restored(proxy: Proxy) -> None:
    data = batch_file()
    assert b"M\\u00fcller GmbH" in data  # as Python's json.dumps writes it
    n = len(proxy.upstream.requests)
    with openai_client(proxy) as c:
        f = c.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch")
        assert f.id == "file-abc123"
        content = c.files.content(f.id).text
    up, down = proxy.since(n)
    assert up.path == "/v1/files" and not found_originals(up)
    part = up.body.split(b"\r\n\r\n", 2)[-1]
    lines = [json.loads(x) for x in part.split(b"\r\n--")[0].splitlines()]
    assert [x["custom_id"] for x in lines] == ["r1", "Redwing-r2", "r3"]  # the client's ids: masked
    assert lines[0]["body"]["messages"][0]["content"] == "Write to Nordwind AG and [EMAIL_1] for Zenith Labs."
    assert lines[1]["body"]["input"] == "Is Redwing a Nordwind AG brand?"
    assert lines[1]["body"]["metadata"] == {"who": "[EMAIL_1]"}
    assert lines[2]["body"]["input"] == ["Nordwind AG"]
    assert b"\\u00fc" not in part.replace(b"Nordwind", b"")  # the escaped original is gone, not just hidden
    # results: literals restored line by line (placeholders of a batch cannot be: see docs)
    results = [json.loads(x) for x in content.splitlines()]
    assert results[0]["response"]["body"]["choices"][0]["message"]["content"] == \
        "Dear Acme Corp and Müller GmbH, see you."  # fmt: skip
    assert results[1]["error"]["message"] == "Bluebird was not found"
    assert [x["custom_id"] for x in results] == ["r1", "Bluebird-r2"]  # each result finds its request


def test_a_file_for_another_purpose_is_scanned_with_its_escapes_decoded(proxy: Proxy) -> None:
    """Not a batch: an upload the addon does not transform; its JSON lines are read the
    way the provider will read them, so an escaped original is found and refused."""
    n = len(proxy.upstream.requests)
    train = json.dumps({"messages": [{"role": "user", "content": "Who is Müller GmbH?"}]}).encode() + b"\n"
    assert b"M\\u00fcller" in train
    with openai_client(proxy) as c, pytest.raises(openai.BadRequestError) as e:
        c.files.create(file=("train.jsonl", train * 2, "application/jsonl"), purpose="fine-tune")
    msg = e.value.response.json()["error"]["message"]
    assert "literal in body part 'file' line 1" in msg, msg
    assert len(proxy.since(n)) == 0
    clean = b'{"messages": [{"role": "user", "content": "hello"}]}\n'
    with openai_client(proxy) as c:
        c.files.create(file=("train.jsonl", clean, "application/jsonl"), purpose="fine-tune")
    assert len(proxy.since(n)) == 1


# -- 3: a form-encoded body on a path the addon does not transform ---------------------------------


def test_form_encoded_body_is_read_decoded(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    status, body = raw_post(proxy, "/v1/assistants", b"email=bob%40corp.example.com&org=Acme+Corp",
                            "application/x-www-form-urlencoded")  # fmt: skip
    assert status == 400 and b"form field" in body
    status, _ = raw_post(proxy, "/v1/assistants", b"name=helper&org=Zenith+Labs", "application/x-www-form-urlencoded")
    assert status == 200
    assert len(proxy.since(n)) == 1


# -- 4: Gemini text media --------------------------------------------------------------------------


def test_gemini_text_inline_data_is_masked_inside(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    csv = f"name,mail\nAcme Corp,{BOB}\n".encode()
    png = b"\x89PNG\r\n\x1a\n" + b"Acme Corp" + bytes(range(40))
    client = gemini_client(proxy)
    client.models.generate_content(model="gemini-2.5-flash", contents=[types.Content(role="user", parts=[
        types.Part.from_bytes(data=csv, mime_type="text/csv"),
        types.Part.from_bytes(data=json.dumps({"owner": "Acme Corp"}).encode(), mime_type="application/json"),
        types.Part.from_bytes(data=png, mime_type="image/png"),
        types.Part(text="Summarise."),
    ])])  # fmt: skip
    [rec] = proxy.since(n)
    parts = json.loads(rec.body)["contents"][0]["parts"]
    decoded = [base64.b64decode(p["inlineData"]["data"]) for p in parts[:3]]
    assert decoded[0] == b"name,mail\nZenith Labs,[EMAIL_1]\n"
    assert json.loads(decoded[1]) == {"owner": "Zenith Labs"}
    assert decoded[2] == png  # binary media passes as it came


# -- 9: Gemini thought parts and signatures --------------------------------------------------------


def test_gemini_history_with_thoughts_and_signatures_continues(proxy: Proxy) -> None:
    """The model's own thought text names an original, a signature holds a literal by
    coincidence: both go back byte-identical, turn after turn, and nothing is refused."""
    sig = base64.b64decode("QUFB" + "Bluebird" + "QUFB")  # its base64 spells a literal
    assert base64.b64encode(sig) == b"QUFBBluebirdQUFB"
    history = [
        types.Content(role="user", parts=[types.Part(text="Plan the Acme Corp offsite.")]),
        types.Content(role="model", parts=[
            types.Part(text="The user at Acme Corp wants a plan (bob@corp.example.com).", thought=True),
            types.Part(text="Here is the plan for Zenith Labs.", thought_signature=sig),
        ]),
        types.Content(role="user", parts=[types.Part(text="Thanks, go on.")]),
    ]  # fmt: skip
    n = len(proxy.upstream.requests)
    client = gemini_client(proxy)
    for _ in range(2):  # every later turn carries the same history
        client.models.generate_content(model="gemini-2.5-flash", contents=history)
    sent = proxy.since(n)
    assert len(sent) == 2
    for rec in sent:
        parts = json.loads(rec.body)["contents"][1]["parts"]
        assert parts[0]["text"] == "The user at Acme Corp wants a plan (bob@corp.example.com)."
        assert parts[0]["thought"] is True
        assert parts[1]["thoughtSignature"] == "QUFBBluebirdQUFB"
        assert json.loads(rec.body)["contents"][0]["parts"][0]["text"] == "Plan the Zenith Labs offsite."


# -- 10: a Google API key in the query --------------------------------------------------------------


def test_google_api_key_in_the_query_is_a_credential(proxy: Proxy) -> None:
    """Google's own curl examples: `...:generateContent?key=$GEMINI_API_KEY`."""
    n = len(proxy.upstream.requests)
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hello from Acme Corp"}]}]}).encode()
    status, _ = raw_post(proxy, f"/v1beta/models/gemini-2.5-flash:generateContent?key={GOOGLE_KEY}", body,
                         "application/json")  # fmt: skip
    assert status == 200
    [rec] = proxy.since(n)
    assert rec.path.endswith(f"?key={GOOGLE_KEY}")
    assert json.loads(rec.body)["contents"][0]["parts"][0]["text"] == "Hello from Zenith Labs"
    # an original elsewhere in the query still is one
    status, _ = raw_post(proxy, f"/v1beta/models/gemini-2.5-flash:generateContent?key={GOOGLE_KEY}&u={BOB}", body,
                         "application/json")  # fmt: skip
    assert status == 400 and len(proxy.since(n)) == 1


# -- 11: Gemini explicit caching ---------------------------------------------------------------------


def test_gemini_cached_contents_are_masked_like_generate_content(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    client = gemini_client(proxy)
    cache = client.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
        display_name="Acme Corp notes",
        system_instruction=f"You help Acme Corp; write to {BOB}.",
        contents=[types.Content(role="user", parts=[types.Part(text="The Acme Corp handbook: " + "x" * 50)])],
    ))  # fmt: skip
    assert cache.display_name == "Acme Corp notes"  # restored in the answer
    client.caches.update(name=cache.name, config=types.UpdateCachedContentConfig(ttl="600s"))
    sent = proxy.since(n)
    assert [r.method for r in sent] == ["POST", "PATCH"]
    for rec in sent:
        assert not found_originals(rec)
    doc = json.loads(sent[0].body)
    assert doc["displayName"] == "Zenith Labs notes"
    assert doc["contents"][0]["parts"][0]["text"].startswith("The Zenith Labs handbook")
    assert doc["systemInstruction"]["parts"][0]["text"] == "You help Zenith Labs; write to [EMAIL_1]."


def test_the_files_a_gemini_request_points_at_are_masked_like_every_url(proxy: Proxy) -> None:
    """A fileData part's fileUri (a bucket, a path, a public URL) and a cache's kmsKeyName
    (projects/{p}/.../cryptoKeys/{k}) are the client's words, not ids the API assigned:
    masked like Anthropic's url source and OpenAI's file_url, percent escapes read decoded.
    An uploaded file's URI, which holds only the API's id, passes byte-identical. (They
    were declared identifiers: each of these reached the provider as the client wrote it.)"""
    n = len(proxy.upstream.requests)
    client = gemini_client(proxy)
    uploaded = "https://generativelanguage.googleapis.com/v1beta/files/abc-123"
    uris = ["gs://data/Bluebird/q3.pdf", "https://files.example/Acme%20Corp/report.pdf",
            "https://files.example/reports?who=Acme+Corp", uploaded]  # fmt: skip
    got = client.models.generate_content(model="gemini-2.5-flash", contents=[types.Content(role="user", parts=[
        *[types.Part.from_uri(file_uri=u, mime_type="application/pdf") for u in uris], types.Part(text="Sum up.")])])  # fmt: skip
    assert got.text == "ok Acme Corp"
    # a key only Vertex takes: one in a project named like a customer, one not
    keys = [
        "projects/Bluebird/locations/us/keyRings/r/cryptoKeys/k",
        "projects/p-1/locations/us/keyRings/r/cryptoKeys/k",
    ]
    proxy.upstream.on("/v1/projects/proj/locations/us-central1/cachedContents", cache_answer)
    vertex = vertex_client(proxy)  # held: the client closes its connections when collected
    for key in keys:
        vertex.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
            kms_key_name=key, contents=[types.Content(role="user", parts=[types.Part.from_uri(
                file_uri=uris[0], mime_type="application/pdf")])]))  # fmt: skip
    gen, *caches = proxy.since(n)
    for rec in (gen, *caches):
        body = rec.body.decode()
        assert not found_originals(rec) and "Acme%20Corp" not in body and "Acme+Corp" not in body
    # the SDK spells the part's members the proto way (file_uri), the API takes both
    sent = [p["fileData"]["file_uri"] for p in json.loads(gen.body)["contents"][0]["parts"][:4]]
    assert sent == ["gs://data/Redwing/q3.pdf", "https://files.example/Zenith%20Labs/report.pdf",
                    "https://files.example/reports?who=Zenith%20Labs", uploaded]  # fmt: skip
    docs = [json.loads(rec.body) for rec in caches]
    want = ["projects/Redwing/locations/us/keyRings/r/cryptoKeys/k", keys[1]]  # the second as written
    assert [d["encryption_spec"]["kmsKeyName"] for d in docs] == want
    assert docs[0]["contents"][0]["parts"][0]["fileData"]["file_uri"] == "gs://data/Redwing/q3.pdf"


# -- refusals on Google paths come back in Google's shape ---------------------------------------------


def test_a_refusal_on_a_google_path_is_in_googles_shape(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    status, body = raw_post(proxy, "/upload/v1beta/files", json.dumps({"file": {"display_name": "Acme Corp"}}).encode(),
                            "application/json")  # fmt: skip
    assert status == 400 and len(proxy.since(n)) == 0
    err = json.loads(body)["error"]
    assert err["status"] == "INVALID_ARGUMENT" and "literal" in err["message"]
    client = gemini_client(proxy)
    with pytest.raises(genai_errors.ClientError):
        client.files.upload(file=Path(__file__), config=types.UploadFileConfig(
            display_name="Acme Corp source", mime_type="text/plain"))  # fmt: skip
    assert len(proxy.since(n)) == 0
