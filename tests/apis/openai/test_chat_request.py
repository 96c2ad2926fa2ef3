"""Request masking for OpenAI Chat Completions (Responses requests: test_responses_fields.py)."""

from __future__ import annotations

import json

from disguiselib.apis import registry as engine
from disguiselib.apis.openai.chat import CHAT_REQUEST
from disguiselib.base.masking import mask_body
from strategies import RULES

EMAIL = "bob@corp.example.com"
IMG = "data:image/png;base64,iVBORAcme Corp=="


def mask(doc, rule=CHAT_REQUEST):
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    out, session = mask_body(raw, rule, RULES)
    return json.loads(out), session.placeholders, out


def test_chat_every_message_shape() -> None:
    doc = {
        "model": "gpt-Acme Corp",
        "messages": [
            {"role": "system", "content": "You work for Acme Corp."},
            {"role": "user", "name": "Acme Corp", "content": [
                {"type": "text", "text": f"I am {EMAIL}"},
                {"type": "image_url", "image_url": {"url": IMG, "detail": "auto"}},
                {"type": "image_url", "image_url": {"url": "https://acme.example/Acme Corp.png"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRAcme Corp", "format": "wav"}}]},
            {"role": "assistant", "content": None, "reasoning_content": "Acme Corp", "tool_calls": [
                {"id": "call_Acme Corp", "type": "function", "function": {
                    "name": "acme_lookup", "arguments": '{"session_id": "Acme Corp", "n": 1.0e3}'}},
                {"id": "c2", "type": "function", "function": {"name": "acme_lookup", "arguments": "not json Acme Corp"}}]},
            {"role": "tool", "tool_call_id": "call_Acme Corp", "content": f"found {EMAIL}"},
            {"role": "user", "content": "Acme Corp again"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "acme_lookup", "description": "Look up Acme Corp",
            "parameters": {"type": "object", "properties": {"session_id": {"type": "string", "enum": ["Acme Corp"]}},
                           "required": ["session_id"]}}}],
        "tool_choice": {"type": "function", "function": {"name": "acme_lookup"}},
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "acme_lookup", "schema": {"type": "object", "properties": {"session_id": {"type": "string"}}}}},
    }
    out, ph, raw = mask(doc)
    assert ph == {"[EMAIL_1]": EMAIL}
    m = out["messages"]
    assert out["model"] == "gpt-Acme Corp"
    assert m[0]["content"] == "You work for Zenith Labs."
    assert m[1]["name"] == "Zenith Labs"
    assert m[1]["content"][0]["text"] == "I am [EMAIL_1]"
    assert m[1]["content"][1]["image_url"]["url"] == IMG  # data URL untouched
    assert m[1]["content"][2]["image_url"]["url"] == "https://acme.example/Zenith Labs.png"
    assert m[1]["content"][3]["input_audio"]["data"] == "UklGRAcme Corp"
    assert m[2]["content"] is None and m[2]["reasoning_content"] == "Zenith Labs"  # no signature: masked
    tc = m[2]["tool_calls"]
    assert tc[0]["id"] == "call_Acme Corp" and tc[0]["function"]["name"] == "crm_lookup"
    # JSON text inside a string: keys and values masked, the rest of it byte-identical
    assert tc[0]["function"]["arguments"] == '{"thread_id": "Zenith Labs", "n": 1.0e3}'
    assert tc[1]["function"]["arguments"] == "not json Zenith Labs"
    assert m[3] == {"role": "tool", "tool_call_id": "call_Acme Corp", "content": "found [EMAIL_1]"}
    assert m[4]["content"] == "Zenith Labs again"  # after the odd messages, still masked
    fn = out["tools"][0]["function"]
    assert fn["name"] == "crm_lookup" and fn["description"] == "Look up Zenith Labs"
    assert fn["parameters"]["properties"] == {"thread_id": {"type": "string", "enum": ["Zenith Labs"]}}
    assert fn["parameters"]["required"] == ["thread_id"]
    assert out["tool_choice"]["function"]["name"] == "crm_lookup"
    js = out["response_format"]["json_schema"]
    assert js["name"] == "crm_lookup" and list(js["schema"]["properties"]) == ["thread_id"]


def test_reasoning_on_a_message_of_any_role_is_masked_its_signed_members_are_not() -> None:
    """Chat-compatible reasoning (DeepSeek's `reasoning_content`, OpenRouter's `reasoning`
    and `reasoning_details`) carries no signature: masked, on a user message too. An
    OpenRouter entry's `signature` and encrypted `data` go out byte-identical."""
    sig = "EqQBCkgIAxABGAIiQAcme Corp=="
    doc = {"model": "m", "messages": [
        {"role": "user", "content": "hi", "reasoning": "Acme Corp", "reasoning_content": f"mail {EMAIL}"},
        {"role": "assistant", "content": "x", "reasoning": {"summary": "Acme Corp"}, "reasoning_details": [
            {"type": "reasoning.text", "text": "the user at Acme Corp", "signature": sig, "format": "anthropic-claude-v1",
             "index": 0, "id": "rs_Acme Corp"},
            {"type": "reasoning.summary", "summary": "Acme Corp asked"},
            {"type": "reasoning.encrypted", "data": "Acme Corp-encrypted", "future": "Acme Corp"}]},
    ]}  # fmt: skip
    out, ph, _ = mask(doc)
    user, asst = out["messages"]
    assert user["reasoning"] == "Zenith Labs" and user["reasoning_content"] == "mail [EMAIL_1]"
    assert asst["reasoning"] == {"summary": "Zenith Labs"}
    text, summary, encrypted = asst["reasoning_details"]
    assert text == {"type": "reasoning.text", "text": "the user at Zenith Labs", "signature": sig,
                    "format": "anthropic-claude-v1", "index": 0, "id": "rs_Acme Corp"}  # fmt: skip
    assert summary["summary"] == "Zenith Labs asked"
    assert encrypted == {"type": "reasoning.encrypted", "data": "Acme Corp-encrypted", "future": "Zenith Labs"}


def test_restored_arguments_are_masked_again_identically() -> None:
    from disguiselib.base.holdback import Window

    model_args = '{"thread_id": "Zenith Labs", "p": "WINPATH"}'
    r = RULES.restorer({})
    w = Window(r, Window.JSON)
    client_args = w.feed(model_args) + w.flush()
    assert json.loads(client_args) == {"session_id": "Acme Corp", "p": 'C:\\Users\\a "b"'}
    doc = {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "acme_lookup", "arguments": client_args}}]}]}
    out, _, _ = mask(doc)
    assert out["messages"][0]["tool_calls"][0]["function"]["arguments"] == model_args


def test_recorded_requests(fixtures) -> None:
    """Chat requests; the Responses ones: tests/apis/openai/test_responses_fields.py."""
    for f in sorted((fixtures / "openai").glob("chat_*.request.json")):
        raw = f.read_bytes()
        out, _ = mask_body(raw, CHAT_REQUEST, RULES)
        assert out == raw, f.name
        injected = raw.replace(b'"content":"', b'"content":"Acme Corp ').replace(b'"text":"', b'"text":"Acme Corp ')
        out, _ = mask_body(injected, CHAT_REQUEST, RULES)
        assert "Acme Corp" not in json.dumps(json.loads(out)["messages"]), f.name


def test_recognised_paths() -> None:
    r = engine.recognise
    assert r("POST", "/v1/chat/completions") is engine.OPENAI_CHAT
    assert r("POST", "/api/v1/chat/completions") is engine.OPENAI_CHAT
    assert r("POST", "/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21") is engine.OPENAI_CHAT
    assert r("POST", "/v1/responses") is engine.OPENAI_RESPONSES
    assert r("POST", "/v1/messages?beta=true") is engine.ANTHROPIC_MESSAGES
    assert r("POST", "/v1/assistants") is None
    # stored text (apis/openai/stored.py): the answer restored, the request only scanned
    assert r("POST", "/v1/threads/t/messages").request_rule is None
    assert r("DELETE", "/v1/chat/completions/c1") is None
    assert r("GET", "/v1/models") is None
    # endpoints that take model input under other paths
    assert r("POST", "/v1/responses/input_tokens").request_rule is engine.OPENAI_RESPONSES.request_rule
    assert r("POST", "/v1/responses/compact").request_rule is engine.OPENAI_RESPONSES.request_rule
    # retrievals: nothing to mask, model output to restore (literals only)
    assert r("GET", "/v1/chat/completions") is engine.OPENAI_CHAT_LIST
    assert r("GET", "/v1/chat/completions/chatcmpl-1") is engine.OPENAI_CHAT_STORED
    assert r("GET", "/v1/chat/completions/chatcmpl-1/messages") is engine.OPENAI_CHAT_MESSAGES
    assert r("GET", "/v1/responses/resp_1?stream=true") is engine.OPENAI_RESPONSES_STORED
    assert r("POST", "/v1/responses/resp_1/cancel") is engine.OPENAI_RESPONSES_STORED
    assert r("GET", "/v1/responses/resp_1/input_items") is engine.OPENAI_RESPONSES_INPUT_ITEMS
    assert r("GET", "/v1/messages/batches/msgbatch_1/results") is engine.ANTHROPIC_BATCH_RESULTS
    assert r("GET", "/v1/messages/batches/msgbatch_1") is None
