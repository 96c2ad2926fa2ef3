"""Cohere v2 Chat: the field model (the SDK's request types, unknown members refused),
whole responses, the route, the provider's credential slot, and the spec."""

from __future__ import annotations

import json
import typing

import pytest

from conftest import REPO
from disguiselib.apis import registry
from disguiselib.apis.cohere.chat import CHAT_REQUEST, CHAT_RESPONSE, PROVIDER, error_body
from disguiselib.apis.cohere.stream import SPEC
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.errors import MaskError
from strategies import LITERALS, PLACEHOLDERS, RULES

SHAPES = REPO / "tests" / "fixtures" / "shapes" / "cohere"
R = RULES.restorer(PLACEHOLDERS)
ORIGINALS = [*LITERALS, "bob@corp.example.com"]


def mask(doc: object) -> dict:
    out, _ = mask_body(json.dumps(doc).encode(), CHAT_REQUEST, RULES)
    return json.loads(out)


def test_the_reference_request_is_masked_everywhere_the_model_reads() -> None:
    raw = (SHAPES / "chat_request.json").read_bytes()
    out, session = mask_body(raw, CHAT_REQUEST, RULES)
    text = out.decode()
    for o in ORIGINALS:
        assert o not in text, o
    doc = json.loads(out)
    m = doc["messages"]
    assert m[0]["content"] == "You help Zenith Labs's support team. Write to [EMAIL_1]."
    assert m[1]["content"][1]["image_url"]["url"] == json.loads(raw)["messages"][1]["content"][1]["image_url"]["url"]
    assert m[1]["content"][2]["document"]["data"] == {"title": "Zenith Labs orders", "owner": "[EMAIL_1]"}
    assert m[2]["content"][0]["thinking"] == "The user asks about Zenith Labs."  # nothing signs it: masked
    call = m[2]["tool_calls"][0]
    assert call["id"] == "call_x7k2" and call["function"]["name"] == "crm_lookup"
    assert json.loads(call["function"]["arguments"]) == {"thread_id": "Zenith Labs", "limit": 3}
    assert m[3]["content"][0]["document"]["data"] == {"thread_id": "s-1", "customer": "Zenith Labs"}
    assert m[4]["citations"][0]["sources"][0]["tool_output"] == {"customer": "Zenith Labs"}
    fn = doc["tools"][0]["function"]
    assert fn["name"] == "crm_lookup" and list(fn["parameters"]["properties"]) == ["thread_id", "limit"]
    assert fn["parameters"]["required"] == ["thread_id"] and fn["parameters"]["type"] == "object"
    assert doc["documents"][1]["data"] == {"thread_id": "s-9", "text": "Zenith Labs notes"}
    assert list(doc["response_format"]["json_schema"]["properties"]) == ["thread_id"]
    # the API's own words and numbers are byte-identical
    for k in ("model", "safety_mode", "tool_choice", "thinking", "citation_options", "p", "k", "priority"):
        assert doc[k] == json.loads(raw)[k]
    assert b'"model": "command-a-03-2025"' in out and b'"temperature": 0.3' in out


@pytest.mark.parametrize(
    "doc, where",
    [
        ({"model": "m", "messages": [], "documentz": []}, "the request"),
        ({"model": "m", "messages": [{"role": "developer", "content": "x"}]}, "a message"),
        ({"model": "m", "messages": [{"role": "user", "content": "x", "name": "Acme Corp"}]}, "a user message"),
        ({"model": "m", "messages": [{"role": "user", "content": [{"type": "audio", "audio": "x"}]}]},
         "a user content part"),
        ({"model": "m", "messages": [{"role": "user", "content": [{"text": "no type"}]}]}, "a user content part"),
        ({"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "parameters": {},
                                                                                   "strict": True}}]},
         "a tool's function"),
        ({"model": "m", "messages": [], "documents": [{"data": {}, "Acme Corp": 1}]}, "a document"),
        ({"model": "m", "messages": [], "response_format": {"type": "json_schema", "schema": {}}}, "response_format"),
        ({"model": "m", "messages": [], "thinking": {"type": "enabled", "budget": 3}}, "thinking"),
    ],
)  # fmt: skip
def test_a_member_the_model_does_not_know_is_refused_naming_where_not_what(doc, where) -> None:
    with pytest.raises(MaskError) as e:
        mask_body(json.dumps(doc).encode(), CHAT_REQUEST, RULES)
    msg = str(e.value)
    assert msg.startswith(f"Cohere v2 Chat: {where} ") and "refused" in msg
    assert "Acme Corp" not in msg and "Zenith" not in msg


def test_every_field_of_the_sdks_request_is_declared() -> None:
    """The request members and message shapes of the official SDK (`cohere.v2`): a field
    the SDK gains fails here instead of being refused at run time unexplained."""
    import inspect

    from cohere.types import chat_message_v2
    from cohere.v2.raw_client import RawV2Client

    params = set(inspect.signature(RawV2Client.chat).parameters) - {"self", "request_options"}
    declared = set(CHAT_REQUEST.fields)  # type: ignore[attr-defined]
    assert params | {"stream"} <= declared, params - declared
    for cls in typing.get_args(typing.get_args(chat_message_v2.ChatMessageV2)[0]):
        role = cls.model_fields["role"].default
        rule = CHAT_REQUEST.fields["messages"].item.table[role]  # type: ignore[attr-defined]
        assert set(cls.model_fields) <= set(rule.fields), (role, set(cls.model_fields) - set(rule.fields))


def test_whole_answers_are_restored_tool_arguments_as_json_and_thinking_as_it_came() -> None:
    out = json.loads(restore_body((SHAPES / "chat_response.json").read_bytes(), CHAT_RESPONSE, R))
    msg = out["message"]
    assert msg["content"][0]["thinking"] == "Zenith Labs asked; [EMAIL_1] is the contact."  # byte-identical
    assert msg["content"][1]["text"] == "Acme Corp ordered three widgets; write to bob@corp.example.com."
    assert msg["citations"][0]["text"] == "Acme Corp"
    assert msg["citations"][0]["sources"][0]["document"]["title"] == "Acme Corp orders"
    raw = (SHAPES / "chat_response_tools.json").read_bytes()
    out = json.loads(restore_body(raw, CHAT_RESPONSE, R))
    msg = out["message"]
    assert msg["tool_plan"] == "I will look up Acme Corp with acme_lookup."
    call = msg["tool_calls"][0]
    assert call["id"] == "crm_lookup_x7k2" and call["function"]["name"] == "acme_lookup"
    assert json.loads(call["function"]["arguments"]) == {"session_id": "Acme Corp", "note": 'C:\\Users\\a "b"'}
    assert out["usage"] == json.loads(raw)["usage"]


def test_a_documents_id_is_the_clients_masked_and_cited_back_restored() -> None:
    """A document's id is the client's words (fields.CLIENT_ID): masked wherever the
    request holds it (documents, a document part, a citation's source in history) and
    restored where the answer cites it; a tool source's id is the API's call id."""
    doc = mask({"model": "m", "documents": [{"id": "Acme Corp-1", "data": {"t": "x"}}, "plain"], "messages": [
        {"role": "user", "content": [{"type": "document", "document": {"id": "Acme Corp-2", "data": {}}}]},
        {"role": "assistant", "content": "ok", "citations": [{"start": 0, "end": 2, "text": "ok", "sources": [
            {"type": "document", "id": "Acme Corp-1", "document": {}}, {"type": "tool", "id": "t1", "tool_output": {}}]}]},
    ]})  # fmt: skip
    assert doc["documents"][0]["id"] == "Zenith Labs-1"
    assert doc["messages"][0]["content"][0]["document"]["id"] == "Zenith Labs-2"
    assert [s["id"] for s in doc["messages"][1]["citations"][0]["sources"]] == ["Zenith Labs-1", "t1"]
    answer = {"id": "c", "finish_reason": "COMPLETE", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "ok"}], "citations": [{"start": 0, "end": 2, "text": "ok", "sources": [
            {"type": "document", "id": "Zenith Labs-1", "document": {"id": "Zenith Labs-1"}}]}]}}  # fmt: skip
    got = json.loads(restore_body(json.dumps(answer).encode(), CHAT_RESPONSE, R))
    assert got["message"]["citations"][0]["sources"][0] == {"type": "document", "id": "Acme Corp-1",
                                                            "document": {"id": "Acme Corp-1"}}  # fmt: skip


def test_an_error_body_is_cohere_shaped_and_restored() -> None:
    assert json.loads(error_body("no")) == {"message": "no"}
    body = b'{"id":"e1","message":"invalid request: Zenith Labs"}'
    assert json.loads(restore_body(body, CHAT_RESPONSE, R))["message"] == "invalid request: Acme Corp"


def test_route_provider_and_spec_are_registered() -> None:
    api = registry.recognise("POST", "/v2/chat")
    assert api is registry.COHERE_CHAT and api.request_rule is CHAT_REQUEST
    assert registry.recognise("POST", "/gateway/cohere/v2/chat?x=1") is api
    assert registry.recognise("GET", "/v2/chat") is None
    assert registry.error_body_for("POST", "/v2/chat") is error_body
    assert PROVIDER in registry.PROVIDERS and registry.providers_of(api) == (PROVIDER,)
    assert PROVIDER.serves("api.cohere.com") and PROVIDER.serves("api.cohere.ai")
    assert "authorization" in registry.slots_for("/v2/chat", api).headers
    assert SPEC in registry.SPECS and SPEC.ends == "message-end"
    assert {"content-delta", "tool-call-delta", "tool-plan-delta", "citation-start"} <= SPEC.events
