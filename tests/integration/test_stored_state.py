"""End to end: a request that continues state the provider keeps (a Responses
`previous_response_id` or `conversation`, a Gemini `cachedContent`) never gets a
placeholder the stored part was given (base/prompt.numbers_key, rules/session.py).

What the provider stored was numbered from 1 by the request that stored it: Bob's
e-mail went up as `[EMAIL_1]`. The next turn names only Alice; numbered from 1 again,
Alice was `[EMAIL_1]` too, and the model's answer "I wrote to [EMAIL_1] already" (Bob,
from the stored turn) reached the client as Alice's address: a wrong original, shown as
fact. Such a request is numbered by a key of its state: Alice gets a nine-digit number,
the stored `[EMAIL_1]` comes back as the model wrote it. Real mitmdump, the official
SDKs as clients, a fake upstream that records what reached it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Reply, running_proxy

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
MAPPINGS = {"patterns": [{"name": "EMAIL", "regex": EMAIL_RX}]}
JSON = {"Content-Type": "application/json"}
BOB, ALICE = "bob@corp-mail.example.com", "alice@corp-mail.example.com"
KEYED = re.compile(r"\[EMAIL_[1-9][0-9]{8}\]")


def reply(doc: dict) -> Reply:
    return Reply([json.dumps(doc).encode()], headers=JSON, framing="length")


def response(text: str) -> dict:
    return {
        "id": "resp_stored_1", "object": "response", "created_at": 1, "model": "gpt-stored", "status": "completed",
        "output": [{"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with FakeUpstream() as up, running_proxy(tmp_path_factory.mktemp("stored-state"), MAPPINGS, upstream=up) as p:
        yield p


def _client(proxy: Proxy):  # noqa: ANN202
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # fmt: skip


@pytest.mark.parametrize("how", ["previous_response_id", "conversation"])
def test_a_stored_turns_placeholder_is_never_restored_as_this_turns_original(proxy: Proxy, how: str) -> None:
    model = f"gpt-stored-{how}"
    said: list[str] = []

    def answer(rec) -> Reply:  # noqa: ANN001
        body = rec.json
        if how not in body:
            return reply(response("Noted."))
        # the model quotes the stored turn's Bob, then names this turn's Alice as it was given
        mine = KEYED.search(json.dumps(body["input"]))
        said.append(mine.group() if mine else "")
        return reply(response(f"I wrote to [EMAIL_1] already; now {said[-1]}."))

    proxy.upstream.on(model, answer)
    with _client(proxy) as client:
        first = client.responses.create(model=model, input=f"Please email {BOB}", store=True)
        extra = {"previous_response_id": first.id} if how == "previous_response_id" else {"conversation": "conv_42"}
        second = client.responses.create(model=model, input=f"Also cc {ALICE}", **extra)
        again = client.responses.create(model=model, input=f"Also cc {ALICE}", **extra)
    stored, new, retried = (r.json for r in proxy.upstream.for_model(model)[-3:])
    assert json.dumps(stored["input"]).count("[EMAIL_1]") == 1  # the stored turn: numbered from 1
    assert "[EMAIL_1]" not in json.dumps(new["input"]) and KEYED.search(json.dumps(new["input"]))
    assert ALICE not in json.dumps(new) and BOB not in json.dumps(stored)
    # the stored turn's [EMAIL_1] comes back as it was written, this turn's Alice restored
    assert second.output_text == f"I wrote to [EMAIL_1] already; now {ALICE}."
    assert new["input"] == retried["input"] and again.output_text == second.output_text  # the same bytes each time


def test_a_request_using_a_gemini_cache_is_numbered_apart_from_it(proxy: Proxy) -> None:
    from google.genai import types

    def gem(rec) -> Reply:  # noqa: ANN001
        if rec.path.split("?")[0].endswith("/cachedContents"):
            return reply({"name": "cachedContents/abc123", "model": "models/gemini-stored",
                          "createTime": "2025-01-01T00:00:00Z", "expireTime": "2025-01-01T01:00:00Z"})  # fmt: skip
        mine = KEYED.search(json.dumps(rec.json["contents"]))
        text = f"I wrote to [EMAIL_1] already; now {mine.group() if mine else ''}."
        return reply({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]})

    proxy.upstream.on("/v1beta/cachedContents", gem)
    proxy.upstream.on("/v1beta/models/gemini-stored:generateContent", gem)
    options = types.HttpOptions(base_url=proxy.base_url, api_version="v1beta", client_args={"trust_env": False},
                                retry_options=types.HttpRetryOptions(attempts=1), timeout=20_000)  # fmt: skip
    client = genai.Client(api_key="test-key", http_options=options)
    cache = client.caches.create(model="gemini-stored", config=types.CreateCachedContentConfig(
        contents=[types.Content(role="user", parts=[types.Part(text=f"Customer file: {BOB} ordered 3 anvils")])]))  # fmt: skip
    out = client.models.generate_content(model="gemini-stored", contents=f"Also cc {ALICE}",
                                         config=types.GenerateContentConfig(cached_content=cache.name))  # fmt: skip
    cached = proxy.upstream.for_path("/v1beta/cachedContents")[-1].json["contents"][0]["parts"][0]["text"]
    new = proxy.upstream.for_path("/v1beta/models/gemini-stored:generateContent")[-1].json["contents"][0]["parts"][0]["text"]
    assert "[EMAIL_1]" in cached and "[EMAIL_1]" not in new and KEYED.search(new)
    assert out.text == f"I wrote to [EMAIL_1] already; now {ALICE}."


def _message(text: str, n: int, tool: bool = False) -> dict:
    content = [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}}] if tool else [
        {"type": "text", "text": text}]
    return {"model": "claude-thread", "id": f"msg_0{n}", "type": "message", "role": "assistant", "content": content,
            "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


@pytest.mark.parametrize("how", ["extra_body", "tool_runner"])
def test_a_continued_anthropic_thread_is_numbered_apart_from_what_the_server_holds(proxy: Proxy, how: str) -> None:
    """anthropic 2's tool runner holds the conversation on the server (`thread`): the
    next turn is `{"type": "continue", "previous_message_id": ...}` with only its new
    messages. Numbered from 1, Alice (the tool's result) was `[EMAIL_1]` like Bob in the
    held turn, and the model's `[EMAIL_1]` (Bob) came back as Alice."""
    anthropic = pytest.importorskip("anthropic")
    model = f"claude-thread-{how}"

    def answer(rec) -> Reply:  # noqa: ANN001
        body = rec.json
        if body.get("thread", {}).get("type") != "continue":
            return reply({**_message("", 1, tool=True), "model": model})
        mine = KEYED.search(json.dumps(body["messages"]))
        return reply({**_message(f"I wrote to [EMAIL_1] already; now {mine.group() if mine else ''}.", 2),
                      "model": model})  # fmt: skip

    proxy.upstream.on(model, answer)
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sk-ant-test", max_retries=0, timeout=20.0)
    if how == "tool_runner":
        if not hasattr(anthropic.types.beta.message_create_params, "BetaMessageThreadParam"):
            pytest.skip(f"anthropic {anthropic.__version__}'s tool runner holds no thread on the server")

        @anthropic.beta_tool
        def lookup(q: str) -> str:
            """Look up who owns it."""
            return f"owner {ALICE}"

        runner = client.beta.messages.tool_runner(model=model, max_tokens=100, tools=[lookup],
                                                  messages=[{"role": "user", "content": f"Look up {BOB}"}])  # fmt: skip
        last = [m for m in runner][-1]
    else:
        client.messages.create(model=model, max_tokens=100, messages=[{"role": "user", "content": f"Look up {BOB}"}],
                               extra_body={"thread": {"type": "create"}})  # fmt: skip
        last = client.messages.create(model=model, max_tokens=100, messages=[
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": f"owner {ALICE}"}]}],
            extra_body={"thread": {"type": "continue", "previous_message_id": "msg_01"}})  # fmt: skip
    held, new = (r.json for r in proxy.upstream.for_model(model)[-2:])
    assert held["thread"] == {"type": "create"} and "[EMAIL_1]" in json.dumps(held["messages"])
    assert new["thread"] == {"type": "continue", "previous_message_id": "msg_01"}
    assert "[EMAIL_1]" not in json.dumps(new["messages"]) and KEYED.search(json.dumps(new["messages"]))
    assert last.content[0].text == f"I wrote to [EMAIL_1] already; now {ALICE}."
