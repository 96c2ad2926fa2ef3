"""Request masking for /v1/messages: every content shape, byte fidelity, signed thinking."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis.anthropic.messages import BATCH_REQUEST, MESSAGES_REQUEST
from disguiselib.base.masking import mask_body
from disguiselib.errors import MaskError
from strategies import RULES

EMAIL = "bob@corp.example.com"


def mask(doc_or_bytes) -> tuple[bytes, dict]:
    raw = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
    out, session = mask_body(raw, MESSAGES_REQUEST, RULES)
    return out, session.placeholders


THINKING = {"type": "thinking", "thinking": "Acme Corp thinks about bob@corp.example.com",
            "signature": "EqQBCkYIBxgCKkAAcme Corp+sig=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgyAcme Corp"}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORAcme Corp=="}}

REQUEST = {
    "model": "claude-Acme Corp",  # the model name is never touched
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You work for Acme Corp.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{
        "name": "acme_lookup", "description": "Look up Acme Corp customers by email",
        "input_schema": {"type": "object", "properties": {
            "session_id": {"type": "string", "description": "the Acme Corp session"},
            "kind": {"type": "string", "enum": ["Acme Corp", "other"]}},
            "required": ["session_id"]},
    }, {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
    "tool_choice": {"type": "tool", "name": "acme_lookup"},
    "messages": [
        {"role": "user", "content": f"Hi, I am {EMAIL} from Acme Corp"},
        {"role": "assistant", "content": [
            THINKING, REDACTED,
            {"type": "text", "text": "Let me look up Acme Corp."},
            {"type": "tool_use", "id": "toolu_Acme Corp", "name": "acme_lookup",
             "input": {"session_id": "Acme Corp-1", "nested": [{"session_id": EMAIL}]}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_Acme Corp", "content": "Acme Corp found"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": f"mail {EMAIL}"}, IMAGE]},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Acme Corp doc"},
             "title": "Acme Corp plan"},
            {"type": "future_block", "payload": "Acme Corp", "id": "Acme Corp"},
        ]},
    ],
}


def test_every_content_shape_is_masked() -> None:
    out, ph = mask(REQUEST)
    doc = json.loads(out)
    assert ph == {"[EMAIL_1]": EMAIL}
    assert doc["model"] == "claude-Acme Corp"
    assert doc["system"][0]["text"] == "You work for Zenith Labs."
    tool = doc["tools"][0]
    assert tool["name"] == "crm_lookup"
    assert tool["description"] == "Look up Zenith Labs customers by email"
    assert set(tool["input_schema"]["properties"]) == {"thread_id", "kind"}
    assert tool["input_schema"]["properties"]["thread_id"] == {"type": "string", "description": "the Zenith Labs session"}
    assert tool["input_schema"]["properties"]["kind"]["enum"] == ["Zenith Labs", "other"]
    assert tool["input_schema"]["required"] == ["thread_id"]
    assert doc["tools"][1] == REQUEST["tools"][1]  # server tool: fixed name kept
    assert doc["tool_choice"] == {"type": "tool", "name": "crm_lookup"}
    m = doc["messages"]
    assert m[0]["content"] == "Hi, I am [EMAIL_1] from Zenith Labs"
    assert m[1]["content"][0] == THINKING and m[1]["content"][1] == REDACTED
    assert m[1]["content"][2]["text"] == "Let me look up Zenith Labs."
    tu = m[1]["content"][3]
    assert tu["id"] == "toolu_Acme Corp" and tu["name"] == "crm_lookup"
    assert tu["input"] == {"thread_id": "Zenith Labs-1", "nested": [{"thread_id": "[EMAIL_1]"}]}
    tr = m[2]["content"]
    assert tr[0] == {"type": "tool_result", "tool_use_id": "toolu_Acme Corp", "content": "Zenith Labs found"}
    assert tr[1]["content"][0]["text"] == "mail [EMAIL_1]" and tr[1]["content"][1] == IMAGE
    assert tr[2]["source"]["data"] == "Zenith Labs doc" and tr[2]["title"] == "Zenith Labs plan"
    # unknown: fail closed, whatever a member is called (its `id` too: issue 15)
    assert tr[3] == {"type": "future_block", "payload": "Zenith Labs", "id": "Zenith Labs"}


def test_signed_thinking_passes_byte_identical() -> None:
    raw = json.dumps(REQUEST, indent=1).encode()
    out, _ = mask(raw)
    t_raw = raw[raw.index(b'"thinking": "Acme Corp thinks'):raw.index(b'+sig=="') + 7]
    assert t_raw in out
    assert b'"data": "EmwKAhgBEgyAcme Corp"' in out and b'"data": "iVBORAcme Corp=="' in out


def test_only_changed_tokens_are_respliced() -> None:
    raw = (b'{"model":"m",  "max_tokens": 1.0e3, "temperature": 1.0, "n": 12345678901234567890,\n'
           b' "messages": [ {"role":"user", "content":"\\u0041cme Corp \\/ \\u00e9t\\u00e9"},'
           b' {"role":"user","content":"keep \\u00e9"} ]}')
    out, _ = mask(raw)
    # only the original's own bytes change: the token's other escapes stay as they came
    assert out == raw.replace(b'"\\u0041cme Corp \\/ \\u00e9t\\u00e9"', b'"Zenith Labs \\/ \\u00e9t\\u00e9"')


def test_unusual_messages_do_not_disable_masking() -> None:
    doc = {"model": "m", "messages": [
        {"role": "user", "content": []},
        {"role": "assistant", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "Acme Corp"}], "meta": {"content": "Acme Corp"}},
        {"role": "user", "content": "Acme Corp"},
    ], "system": "Acme Corp"}
    out, _ = mask(doc)
    assert b"Acme Corp" not in out


def test_prompt_cache_stable_numbering() -> None:
    turn1 = {"model": "m", "messages": [{"role": "user", "content": f"{EMAIL} and x@y.org"}]}
    turn2 = {"model": "m", "messages": turn1["messages"] + [
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"z@w.io, {EMAIL}"}]}
    a, _ = mask(turn1)
    b, ph = mask(turn2)
    assert json.loads(a)["messages"][0] == json.loads(b)["messages"][0]
    assert ph == {"[EMAIL_1]": EMAIL, "[EMAIL_2]": "x@y.org", "[EMAIL_3]": "z@w.io"}


def test_masking_is_idempotent() -> None:
    once, _ = mask(REQUEST)
    twice, _ = mask(once)
    assert once == twice


@pytest.mark.parametrize("body, reason", [
    (b'{"messages": [', "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "not a JSON object"),
])
def test_unmaskable_requests_raise(body: bytes, reason: str) -> None:
    with pytest.raises(MaskError, match=reason):
        mask(body)


def test_batches() -> None:
    raw = json.dumps({"requests": [{"custom_id": "Acme Corp", "params": REQUEST}]}).encode()
    out, _ = mask_body(raw, BATCH_REQUEST, RULES)
    doc = json.loads(out)
    assert doc["requests"][0]["custom_id"] == "Zenith Labs"  # the client's id: masked (fields.CLIENT_ID)
    assert doc["requests"][0]["params"]["messages"][0]["content"] == "Hi, I am [EMAIL_1] from Zenith Labs"


def test_recorded_requests(fixtures) -> None:
    """Every recorded request: untouched without originals; with an original injected
    into every text, it is gone everywhere but in thinking blocks, which stay
    byte-identical."""
    for f in sorted((fixtures / "anthropic").glob("*.request.json")):
        raw = f.read_bytes()
        out, _ = mask(raw)
        assert out == raw, f.name
        injected = raw.replace(b'"text":"', b'"text":"Acme Corp ').replace(b'"content":"', b'"content":"Acme Corp ')
        injected = injected.replace(b'"thinking":"', b'"thinking":"Acme Corp ')
        assert injected != raw, f.name
        out, _ = mask(injected)
        doc = json.loads(out)
        assert "Acme Corp" not in json.dumps(_without_thinking(doc)), f.name
        for block in _thinking_blocks(json.loads(injected)):
            assert block in list(_thinking_blocks(doc)), f.name
        for m in _THINKING_RAW.finditer(injected):
            assert m.group() in out, f.name


_THINKING_RAW = __import__("re").compile(rb'"thinking":"(?:[^"\\]|\\.)*"|"signature":"[^"]*"|"data":"[^"]*"')


def _thinking_blocks(doc):
    for m in doc.get("messages", []):
        if isinstance(m.get("content"), list):
            yield from (b for b in m["content"] if b.get("type") in ("thinking", "redacted_thinking"))


def _without_thinking(doc):
    if isinstance(doc, dict):
        if doc.get("type") in ("thinking", "redacted_thinking"):
            return None
        return {k: _without_thinking(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_without_thinking(v) for v in doc]
    return doc


def test_duplicate_keys_of_different_shapes_are_refused() -> None:
    with pytest.raises(MaskError, match="repeats the key"):
        mask(b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "Acme Corp"}],'
             b' "content": "x"}]}')
    # same shape twice: both occurrences are masked
    out, _ = mask(b'{"messages": [{"role": "user", "content": "Acme Corp", "content": "Acme Corp"}]}')
    assert b"Acme Corp" not in out


# -- thinking only where the model wrote it (stop 65, probe E) ----------------------------------


def test_thinking_passes_byte_identical_in_an_assistant_turn_only() -> None:
    turn = {"role": "assistant", "content": [THINKING, REDACTED, {"type": "text", "text": "x"}]}
    raw = json.dumps({"model": "m", "max_tokens": 1, "messages": [turn]}).encode()
    out, _ = mask(raw)
    assert json.loads(out)["messages"][0]["content"][:2] == [THINKING, REDACTED]


@pytest.mark.parametrize("where", ["user", "tool_result"])
def test_thinking_in_a_user_turn_or_a_tool_result_is_unknown_content(where: str) -> None:
    # no signature can be valid there: nobody wrote it but the client, so it is masked
    blocks = [THINKING, REDACTED]
    content = blocks if where == "user" else [{"type": "tool_result", "tool_use_id": "t", "content": blocks}]
    out, _ = mask({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": content}]})
    assert b"Acme Corp" not in out and EMAIL.encode() not in out


def test_a_member_a_thinking_block_does_not_define_is_masked() -> None:
    block = {**THINKING, "note": "Acme Corp", "Acme Corp": {"x": EMAIL}}
    out, _ = mask({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [block]}]})
    got = json.loads(out)["messages"][0]["content"][0]
    assert {k: got[k] for k in THINKING} == THINKING  # the signed members: byte-identical
    assert got["note"] == "Zenith Labs" and got["Zenith Labs"] == {"x": "[EMAIL_1]"}
