"""End to end, Cohere's v2 Chat: the official `cohere` SDK (ClientV2: chat, chat_stream)
-> a real mitmdump running the addon -> a fake upstream on 127.0.0.1 that answers in
Cohere's shapes (tests/fixtures/shapes/cohere), re-cut at awkward byte offsets.

Upstream must receive no original; the SDK must return the originals restored, whole
and streamed, with disguises split across deltas and reads; tool-call arguments must
parse as JSON; a request member the field model does not know is refused (fail closed)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from integration_util import MITMDUMP, Proxy, Recorded, Reply, cut, running_proxy

cohere = pytest.importorskip("cohere")
httpx = pytest.importorskip("httpx")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

WINQ = 'C:\\Users\\"acme"'  # backslashes and quotes: JSON-escaped wherever it lands
KEY = "co-key-Rk7Qz2Lm9Xw4"  # the client's own credential, and an original elsewhere
LITERALS = {"Acme Corp": "Zenith Labs", "session_id": "thread_id", "acme_lookup": "crm_lookup", WINQ: "WINPATH",
            KEY: "KEYDISG"}  # fmt: skip
MAPPINGS = {
    "literals": LITERALS,
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
BOB = "bob@corp.example.com"
ORIGINALS = [*LITERALS, BOB]
PH = re.compile(r"\[EMAIL_[0-9]+\]")
TOOLS = [{"type": "function", "function": {"name": "acme_lookup", "description": "Looks up Acme Corp",
          "parameters": {"type": "object", "properties": {"session_id": {"type": "string"},
                                                          "path": {"type": "string"}}}}}]  # fmt: skip
MESSAGES = [
    {"role": "system", "content": f"You help Acme Corp. Never show {KEY}."},
    {"role": "user", "content": [{"type": "text", "text": f"Find Acme Corp, mail {BOB}, files under {WINQ}"}]},
]


def assert_no_original(rec: Recorded) -> None:
    text = rec.body.decode("utf-8")
    for o in ORIGINALS:
        for form in (o, json.dumps(o)[1:-1], json.dumps(json.dumps(o)[1:-1])[1:-1]):
            assert form not in text, f"{o!r} reached upstream"


def ev(doc: dict) -> bytes:
    return f"event: {doc['type']}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def msg(**m) -> dict:
    return {"message": m}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-cohere"), MAPPINGS) as p:
        yield p


@contextmanager
def sdk(proxy: Proxy) -> Iterator[cohere.ClientV2]:
    http = httpx.Client(trust_env=False, timeout=20.0)
    try:
        yield cohere.ClientV2(api_key=KEY, base_url=proxy.base_url, httpx_client=http, max_retries=0)
    finally:
        http.close()


def test_chat_whole_masked_upstream_restored_in_the_sdk(proxy: Proxy) -> None:
    def answer(rec: Recorded) -> Reply:
        ph = PH.search(rec.body.decode()).group()  # type: ignore[union-attr]
        doc = {
            "id": "c1", "finish_reason": "TOOL_CALL",
            "message": {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "Zenith Labs asked"},
                            {"type": "text", "text": f"Zenith Labs: write to {ph}."}],
                "tool_plan": "I will look up Zenith Labs with crm_lookup.",
                "tool_calls": [{"id": "crm_lookup_1", "type": "function", "function": {
                    "name": "crm_lookup", "arguments": json.dumps({"thread_id": "Zenith Labs", "path": "WINPATH"})}}],
                "citations": [{"start": 0, "end": 11, "text": "Zenith Labs", "type": "TEXT_CONTENT",
                               "sources": [{"type": "document", "id": rec.json["documents"][0]["id"],
                                            "document": {"title": "Zenith Labs"}}]},
                              {"start": 22, "end": 22 + len(ph), "text": ph, "type": "TEXT_CONTENT",
                               "content_index": 1, "sources": []},
                              {"start": 15, "end": 26, "text": "Zenith Labs", "type": "PLAN", "sources": []}],
            },
            "usage": {"billed_units": {"input_tokens": 10, "output_tokens": 5}},
        }  # fmt: skip
        return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")

    proxy.upstream.on("cohere-whole", answer)
    with sdk(proxy) as co:
        res = co.chat(model="cohere-whole", messages=MESSAGES, tools=TOOLS,
                      documents=[{"id": "Acme Corp-d1", "data": {"owner": BOB, "session_id": "s-1"}}])  # fmt: skip
    (rec,) = proxy.upstream.for_model("cohere-whole")
    assert rec.path == "/v2/chat" and rec.headers["authorization"] == f"Bearer {KEY}"  # its own slot: as it came
    assert_no_original(rec)
    body = rec.json
    assert body["tools"][0]["function"]["name"] == "crm_lookup"
    assert list(body["tools"][0]["function"]["parameters"]["properties"]) == ["thread_id", "path"]
    assert body["messages"][0]["content"] == "You help Zenith Labs. Never show KEYDISG."
    assert body["documents"][0]["id"] == "Zenith Labs-d1"  # the client's id: masked (fields.CLIENT_ID)
    m = res.message
    assert m.content[0].thinking == "Zenith Labs asked"  # thinking passes as it came
    assert m.content[1].text == f"Acme Corp: write to {BOB}."
    assert m.tool_plan == "I will look up Acme Corp with acme_lookup."
    assert m.tool_calls[0].function.name == "acme_lookup"
    assert json.loads(m.tool_calls[0].function.arguments) == {"session_id": "Acme Corp", "path": WINQ}
    assert m.citations[0].text == "Acme Corp" and m.citations[0].sources[0].document == {"title": "Acme Corp"}
    assert m.citations[0].sources[0].id == "Acme Corp-d1"  # cited back as the client named it
    # the offsets point into the restored text (the model counted the disguised one)
    text = m.content[1].text
    assert [text[c.start : c.end] for c in m.citations[:2]] == ["Acme Corp", BOB] == [c.text for c in m.citations[:2]]
    assert m.tool_plan[m.citations[2].start : m.citations[2].end] == "Acme Corp"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chat_stream_split_disguises_restored_in_the_sdk(proxy: Proxy, seed: int) -> None:
    model = f"cohere-stream-{seed}"

    def answer(rec: Recorded) -> Reply:
        ph = PH.search(rec.body.decode()).group()  # type: ignore[union-attr]
        args = json.dumps({"thread_id": "Zenith Labs", "path": "WINPATH"})
        text = f"Zenith Labs is at {ph}, files in WINPATH."
        events = [ev({"id": "s1", "type": "message-start", "delta": msg(role="assistant", content=[], tool_plan="",
                                                                        tool_calls=[], citations=[])})]  # fmt: skip
        events += [ev({"type": "tool-plan-delta", "delta": msg(tool_plan=p)}) for p in ("Look up Zen", "ith Labs.")]
        events.append(
            ev({"type": "content-start", "index": 0, "delta": msg(content={"type": "thinking", "thinking": ""})})
        )
        events.append(ev({"type": "content-delta", "index": 0, "delta": msg(content={"thinking": "Zenith Labs"})}))
        events.append(ev({"type": "content-end", "index": 0}))
        events.append(ev({"type": "content-start", "index": 1, "delta": msg(content={"type": "text", "text": ""})}))
        step = 3 + seed
        events += [ev({"type": "content-delta", "index": 1, "delta": msg(content={"text": text[i: i + step]})})
                   for i in range(0, len(text), step)]  # fmt: skip
        at = text.index(ph)
        cite = {"start": at, "end": at + len(ph), "text": ph, "type": "TEXT_CONTENT", "content_index": 1, "sources": []}
        events += [ev({"type": "citation-start", "index": 0, "delta": msg(citations=cite)}),
                   ev({"type": "citation-end", "index": 0})]  # fmt: skip
        events.append(ev({"type": "content-end", "index": 1}))
        call = {"id": "crm_lookup_1", "type": "function", "function": {"name": "crm_lookup", "arguments": ""}}
        events.append(ev({"type": "tool-call-start", "index": 0, "delta": msg(tool_calls=call)}))
        events += [ev({"type": "tool-call-delta", "index": 0,
                       "delta": msg(tool_calls={"function": {"arguments": args[i: i + step]}})})
                   for i in range(0, len(args), step)]  # fmt: skip
        events.append(ev({"type": "tool-call-end", "index": 0}))
        events.append(ev({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {}}}))
        return Reply(cut(events, seed), headers={"Content-Type": "text/event-stream"})

    proxy.upstream.on(model, answer)
    with sdk(proxy) as co:
        got = list(co.chat_stream(model=model, messages=MESSAGES, tools=TOOLS))
    (rec,) = proxy.upstream.for_model(model)
    assert_no_original(rec) and rec.json["stream"] is True
    text = plan = args = thinking = ""
    name = None
    for e in got:
        if e.type == "content-delta":
            text += e.delta.message.content.text or ""
            thinking += e.delta.message.content.thinking or ""
        elif e.type == "tool-plan-delta":
            plan += e.delta.message.tool_plan
        elif e.type in ("tool-call-start", "tool-call-delta"):
            fn = e.delta.message.tool_calls.function
            args += fn.arguments or ""
            name = getattr(fn, "name", None) or name
    assert text == f"Acme Corp is at {BOB}, files in {WINQ}."
    (cite,) = [e.delta.message.citations for e in got if e.type == "citation-start"]
    assert text[cite.start : cite.end] == BOB == cite.text  # the offsets moved with the restored text
    assert thinking == "Zenith Labs"  # byte-identical
    assert plan == "Look up Acme Corp."
    assert name == "acme_lookup" and json.loads(args) == {"session_id": "Acme Corp", "path": WINQ}
    assert got[-1].type == "message-end" and got[-1].delta.finish_reason == "TOOL_CALL"


def test_a_member_the_field_model_does_not_know_is_refused(proxy: Proxy) -> None:
    with sdk(proxy) as co, pytest.raises(cohere.core.api_error.ApiError) as e:
        co.chat(model="cohere-unknown", messages=MESSAGES,
                request_options={"additional_body_parameters": {"future_field": {"note": "Acme Corp"}}})  # fmt: skip
    assert not proxy.upstream.for_model("cohere-unknown")
    assert e.value.status_code == 400
    assert "Cohere v2 Chat: the request has 1 member disguise does not know" in json.dumps(e.value.body)
    assert "Acme Corp" not in json.dumps(e.value.body)


def test_a_stream_cut_by_upstream_ends_in_an_explicit_error(proxy: Proxy) -> None:
    def answer(rec: Recorded) -> Reply:
        events = [
            ev({"id": "s1", "type": "message-start", "delta": msg(role="assistant")}),
            ev({"type": "content-start", "index": 0, "delta": msg(content={"type": "text", "text": ""})}),
            ev({"type": "content-delta", "index": 0, "delta": msg(content={"text": "Hi Zenith La"})}),
        ]
        return Reply(events, headers={"Content-Type": "text/event-stream"}, abort=True)  # fmt: skip

    proxy.upstream.on("cohere-cut", answer)
    got = []
    # the error event, then the connection cut as upstream's was (never a clean end)
    with sdk(proxy) as co, pytest.raises(httpx.RemoteProtocolError):
        for e in co.chat_stream(model="cohere-cut", messages=MESSAGES):
            got.append(e)
    text = "".join(e.delta.message.content.text or "" for e in got if e.type == "content-delta")
    assert text == "Hi Zenith La"  # what the provider sent, held and then delivered (no disguise completed)
    assert got[-1].type == "message-end" and got[-1].delta.finish_reason == "ERROR"
    assert "ended before message-end" in got[-1].delta.error


def test_a_secret_after_a_vertical_tab_or_a_no_break_space_is_masked(proxy: Proxy) -> None:
    """The shipped SECRET and PASSWORD rules: whitespace between key and value as the
    validators read it (a `\\x0b` was taken into the value, the match refused, the value
    sent as it was)."""
    token, pw = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "Tr0ub4dor&3xQ7"
    text = f'env: {{"deploy_token":\x0b"{token}"}}\npassword:\xa0{pw}\nAPI_TOKEN=\u3000{token}'

    def answer(rec: Recorded) -> Reply:
        found = re.findall(r"\[(?:SECRET|PASSWORD)_[0-9]+\]", rec.body.decode())
        doc = {"id": "c1", "finish_reason": "COMPLETE",
               "message": {"role": "assistant", "content": [{"type": "text", "text": " ".join(found)}]}}  # fmt: skip
        return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")

    proxy.upstream.on("cohere-vt", answer)
    with sdk(proxy) as co:
        res = co.chat(model="cohere-vt", messages=[{"role": "user", "content": text}])
    (rec,) = proxy.upstream.for_model("cohere-vt")
    up = rec.body.decode()
    assert token not in up and pw not in up and json.dumps(pw)[1:-1] not in up
    assert res.message.content[0].text.split(" ") == [token, pw, token]  # each placeholder restored


# -- an answer asked for as JSON: response_format {"type": "json_object"} -------------------------


def _json_answer(ph: str) -> str:
    return json.dumps({"thread_id": "s-1", "path": "WINPATH", "who": ph})


JSON_FORMAT = {"type": "json_object", "json_schema": {"type": "object", "properties": {"session_id": {"type": "string"}}}}
JSON_WANT = {"session_id": "s-1", "path": WINQ, "who": BOB}
ASK = [{"role": "user", "content": f"A record of Acme Corp for {BOB}, files under {WINQ}, as JSON"}]


def test_a_json_answer_whole(proxy: Proxy) -> None:
    """The text is JSON text: WINQ's backslashes and quotes JSON-escaped, so the client's
    json.loads reads the original (restored as text it was an invalid escape)."""

    def answer(rec: Recorded) -> Reply:
        assert_no_original(rec)
        assert rec.json["response_format"]["json_schema"]["properties"] == {"thread_id": {"type": "string"}}
        ph = PH.search(rec.body.decode()).group()  # type: ignore[union-attr]
        doc = {"id": "c1", "finish_reason": "COMPLETE", "message": {
            "role": "assistant", "content": [{"type": "text", "text": _json_answer(ph)}]}}  # fmt: skip
        return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")

    proxy.upstream.on("cohere-json", answer)
    with sdk(proxy) as co:
        res = co.chat(model="cohere-json", messages=ASK, response_format=JSON_FORMAT)
    assert json.loads(res.message.content[0].text) == JSON_WANT


@pytest.mark.parametrize("seed", [1, 2])
def test_a_json_answer_streamed(proxy: Proxy, seed: int) -> None:
    model = f"cohere-json-stream-{seed}"

    def answer(rec: Recorded) -> Reply:
        text = _json_answer(PH.search(rec.body.decode()).group())  # type: ignore[union-attr]
        events = [ev({"id": "s1", "type": "message-start", "delta": msg(role="assistant")}),
                  ev({"type": "content-start", "index": 0, "delta": msg(content={"type": "text", "text": ""})}),
                  *(ev({"type": "content-delta", "index": 0, "delta": msg(content={"text": text[i : i + 2 + seed]})})
                    for i in range(0, len(text), 2 + seed)),
                  ev({"type": "content-end", "index": 0}),
                  ev({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {}}})]  # fmt: skip
        return Reply(cut(events, seed), headers={"Content-Type": "text/event-stream"})

    proxy.upstream.on(model, answer)
    with sdk(proxy) as co:
        got = list(co.chat_stream(model=model, messages=ASK, response_format=JSON_FORMAT))
    text = "".join(e.delta.message.content.text or "" for e in got if e.type == "content-delta")
    assert json.loads(text) == JSON_WANT and got[-1].type == "message-end"
