"""End to end: a conversation's unchanged prompt reaches the provider as the same bytes
on every turn, however the official SDKs order the body (base/prompt.py).

The anthropic SDK writes `messages` before `system` and `tools`, the openai SDK writes
Responses' `input` before `instructions` and `tools`, google-genai writes `contents`
before `systemInstruction` and `tools`. Numbered in that order, an e-mail first met in
the newest turn took the placeholder of one the system prompt holds, and the provider's
prompt cache missed from the system prompt on, every turn. Real mitmdump, the official
SDKs as clients, a fake upstream that records what reached it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Reply, running_proxy

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}]}
SYSTEM = "You help Acme Corp. Escalate to ops.lead@acme-corp.example.com."
TOOL_TEXT = "Files a ticket; the queue owner is queue.owner@acme-corp.example.com."
# each turn brings e-mails no earlier text holds
TURNS = ["Hello, I am dana@x.example.org.", "Copy erin@y.example.org and frank@z.example.org.", "Thanks."]
JSON = {"Content-Type": "application/json"}


def reply(doc: dict) -> Reply:
    return Reply([json.dumps(doc).encode()], headers=JSON, framing="length")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with FakeUpstream() as up, running_proxy(tmp_path_factory.mktemp("prompt-order"), MAPPINGS, upstream=up) as p:
        yield p


def _unchanged(bodies: list[dict], members: tuple[str, ...], conversation: str) -> None:
    """Each member the same on every turn, and each turn's conversation begins with the
    one before it (compared as JSON text: the bytes of the member, as the provider reads them)."""
    assert len(bodies) == len(TURNS)
    for m in members:
        seen = {json.dumps(b[m], sort_keys=True) for b in bodies}
        assert len(seen) == 1, f"{m} changed from turn to turn: {sorted(seen)}"
    for before, after in zip(bodies, bodies[1:]):
        assert after[conversation][: len(before[conversation])] == before[conversation]
    text = json.dumps(bodies)
    assert "acme-corp.example.com" not in text and "Acme Corp" not in text


def test_anthropic_system_and_tools_keep_their_bytes(proxy: Proxy) -> None:
    model = "claude-prompt-order"
    proxy.upstream.on(model, lambda rec: reply({
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Noted."}], "usage": {"input_tokens": 1, "output_tokens": 1},
    }))  # fmt: skip
    tools = [{"name": "ticket", "description": TOOL_TEXT, "input_schema": {"type": "object"}}]
    messages: list[dict] = []
    with anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=20.0,
                             http_client=anthropic.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        for turn in TURNS:
            messages.append({"role": "user", "content": turn})
            got = client.messages.create(model=model, max_tokens=5, system=SYSTEM, tools=tools, messages=messages)
            messages.append({"role": "assistant", "content": got.content[0].text})
    recorded = proxy.upstream.for_model(model)
    assert list(recorded[0].json).index("messages") < list(recorded[0].json).index("system")  # the SDK's order
    _unchanged([r.json for r in recorded], ("system", "tools"), "messages")


def test_openai_responses_instructions_and_tools_keep_their_bytes(proxy: Proxy) -> None:
    model = "gpt-prompt-order"
    proxy.upstream.on(model, lambda rec: reply({
        "id": "resp_1", "object": "response", "created_at": 1, "model": model, "status": "completed",
        "output": [{"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Noted.", "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }))  # fmt: skip
    tools = [{"type": "function", "name": "ticket", "description": TOOL_TEXT, "parameters": {"type": "object"}}]
    items: list[dict] = []
    with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                       http_client=openai.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        for turn in TURNS:
            items.append({"role": "user", "content": turn})
            got = client.responses.create(model=model, instructions=SYSTEM, tools=tools, input=items)  # type: ignore[arg-type]
            items.append({"role": "assistant", "content": got.output_text})
    recorded = proxy.upstream.for_model(model)
    assert list(recorded[0].json).index("input") < list(recorded[0].json).index("instructions")
    _unchanged([r.json for r in recorded], ("instructions", "tools"), "input")


def test_gemini_system_instruction_and_tools_keep_their_bytes(proxy: Proxy) -> None:
    from google.genai import types

    path = "/v1beta/models/gemini-prompt-order:generateContent"
    proxy.upstream.on(path, lambda rec: reply({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Noted."}]}, "finishReason": "STOP"}],
    }))  # fmt: skip
    options = types.HttpOptions(base_url=proxy.base_url, api_version="v1beta", client_args={"trust_env": False},
                                retry_options=types.HttpRetryOptions(attempts=1), timeout=20_000)  # fmt: skip
    client = genai.Client(api_key="test-key", http_options=options)
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(name="ticket", description=TOOL_TEXT)])
    config = types.GenerateContentConfig(system_instruction=SYSTEM, tools=[tool])
    contents: list[types.Content] = []
    for turn in TURNS:
        contents.append(types.Content(role="user", parts=[types.Part(text=turn)]))
        got = client.models.generate_content(model="gemini-prompt-order", contents=contents, config=config)
        contents.append(types.Content(role="model", parts=[types.Part(text=got.text)]))
    recorded = [r.json for r in proxy.upstream.for_path(path)]
    assert list(recorded[0]).index("contents") < list(recorded[0]).index("systemInstruction")
    _unchanged(recorded, ("systemInstruction", "tools"), "contents")


def test_a_body_in_prompt_order_is_numbered_as_written(proxy: Proxy, tmp_path: Path) -> None:
    """A client that writes system before messages gets what it always got: the system
    prompt's e-mail is [EMAIL_1]."""
    model = "claude-written-in-order"
    proxy.upstream.on(model, lambda rec: reply({
        "id": "msg_2", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Noted."}], "usage": {"input_tokens": 1, "output_tokens": 1},
    }))  # fmt: skip
    body = {"model": model, "max_tokens": 5, "system": SYSTEM, "messages": [{"role": "user", "content": TURNS[0]}]}
    with anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=20.0,
                             http_client=anthropic.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        client.post("/v1/messages", cast_to=object, body=body)
    sent = proxy.upstream.for_model(model)[-1].json
    assert sent["system"].endswith("[EMAIL_1].") and "[EMAIL_2]" in sent["messages"][0]["content"]


def test_prompt_cache_key_and_end_user_ids_go_out_as_written(proxy: Proxy) -> None:
    """Codex sends its conversation id as `prompt_cache_key` on every turn: read with its
    key in view, the secret rules took it for a `*_key =` assignment and every session
    behind the proxy shared one cache key, `[SECRET_1]`. An e-mail as an end-user id is
    still masked."""
    model = "gpt-cache-key"
    proxy.upstream.on(model, lambda rec: reply({
        "id": "resp_2", "object": "response", "created_at": 1, "model": model, "status": "completed", "output": [],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }))  # fmt: skip
    chat_model = "gpt-cache-key-chat"
    proxy.upstream.on(chat_model, lambda rec: reply({
        "id": "c1", "object": "chat.completion", "created": 1, "model": chat_model, "choices": [],
    }))  # fmt: skip
    key = "7a8b9c0d-1111-2222-3333-444455556666"
    with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                       http_client=openai.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        client.responses.create(model=model, input="hi", prompt_cache_key=key, safety_identifier="dana@x.example.org")
        client.chat.completions.create(model=chat_model, messages=[{"role": "user", "content": "hi"}],
                                       prompt_cache_key=key, user="dana@x.example.org")  # fmt: skip
    for sent in (proxy.upstream.for_model(model)[-1].json, proxy.upstream.for_model(chat_model)[-1].json):
        assert sent["prompt_cache_key"] == key
        assert sent.get("safety_identifier", sent.get("user")) == "[EMAIL_1]"


def test_a_restored_value_sent_back_goes_out_as_the_model_wrote_it(proxy: Proxy) -> None:
    """A password found by its key: the model names it [PASSWORD_1], the client reads
    it restored and sends its history back, where no key says what it is. It went out
    in clear (probe J1); it goes out as the model wrote it."""
    model = "claude-copies"
    said = {"text": "Your value [PASSWORD_1] is weak."}
    proxy.upstream.on(model, lambda rec: reply({
        "id": "msg_3", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
        "content": [{"type": "text", "text": said["text"]}], "usage": {"input_tokens": 1, "output_tokens": 1},
    }))  # fmt: skip
    messages: list[dict] = [{"role": "user", "content": 'db_password = "hunter2xyz9Q"'}]
    with anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=20.0,
                             http_client=anthropic.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        got = client.messages.create(model=model, max_tokens=5, messages=messages)
        assert got.content[0].text == "Your value hunter2xyz9Q is weak."
        messages += [{"role": "assistant", "content": got.content[0].text}, {"role": "user", "content": "ok"}]
        client.messages.create(model=model, max_tokens=5, messages=messages)
    sent = proxy.upstream.for_model(model)[-1]
    assert b"hunter2xyz9Q" not in sent.body
    assert sent.json["messages"][1]["content"] == "Your value [PASSWORD_1] is weak."


def test_reasoning_sent_back_keeps_the_conversations_numbers(proxy: Proxy) -> None:
    """A compatible provider's reasoning comes back unrestored, naming [EMAIL_1]; sent
    back, it was taken for the client's own text, and the user's e-mail became [EMAIL_2]
    in every earlier message: the prompt cache missed every turn (probe J2)."""
    model = "deepseek-echo"
    proxy.upstream.on(model, lambda rec: reply({
        "id": "c2", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Noted.", "reasoning_content": "The user gave [EMAIL_1]."}}],
    }))  # fmt: skip
    messages: list = [{"role": "user", "content": "my mail is dana@x.example.org"}]
    with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                       http_client=openai.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        got = client.chat.completions.create(model=model, messages=messages)
        messages += [got.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "thanks"}]
        client.chat.completions.create(model=model, messages=messages)
    first, second = (r.json["messages"] for r in proxy.upstream.for_model(model)[-2:])
    assert second[0] == first[0] == {"role": "user", "content": "my mail is [EMAIL_1]"}
    assert second[1]["reasoning_content"] == "The user gave [EMAIL_1]."
