"""base/exempt.py: an exemption holds only for the shape of value it was made for (a
string id, a number, a boolean, base64 text, one of the API's words); an object or array
in its place is unknown content (keys and values masked), and a word of the API is
masked where it holds an original. The masker, the leak guard and the audit read the
one decision (jsonspan.Rule.tree, exempt.META), so none of them lets such a value by."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.apis.registry import recognise
from disguiselib.base import exempt, fields
from disguiselib.base.masking import mask_body
from disguiselib.errors import MaskError
from disguiselib.inspect.audit import table_walk
from disguiselib.wire.jsonspan import UNKNOWN, USER
from strategies import RULES

ACME = "Acme Corp"
ANTHROPIC = recognise("POST", "/v1/messages")
CHAT = recognise("POST", "/v1/chat/completions")
RESPONSES = recognise("POST", "/v1/responses")
GEMINI = recognise("POST", "/v1beta/models/g:generateContent")


def _user(**kw: object) -> dict:
    return {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}], **kw}


def _block(block: dict) -> dict:
    return {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [block]}]}


# Each field a table exempts for its kind (an id, the model name, base64 data, a signature,
# an envelope word), as a function of the value put there: (api, document). The probes of
# stop 65 (E1, E3, G5) and the fields they named.
SLOTS = {
    "anthropic model": (ANTHROPIC, lambda v: {**_user(), "model": v}),
    "anthropic role": (ANTHROPIC, lambda v: {"model": "m", "max_tokens": 1, "messages": [{"role": v, "content": "x"}]}),
    "anthropic tool_use_id": (ANTHROPIC, lambda v: _block({"type": "tool_result", "tool_use_id": v, "content": "x"})),
    "anthropic source.data": (ANTHROPIC, lambda v: _block(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": v}})),
    "anthropic tool_choice.type": (ANTHROPIC, lambda v: _user(tool_choice={"type": v})),
    "anthropic cache_control.ttl": (ANTHROPIC, lambda v: _block(
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": v}})),
    "anthropic input_schema.type": (ANTHROPIC, lambda v: _user(
        tools=[{"name": "f", "input_schema": {"type": v, "properties": {}}}])),
    "anthropic container": (ANTHROPIC, lambda v: _user(container=v)),
    "chat role": (CHAT, lambda v: {"model": "m", "messages": [{"role": v, "content": "x"}]}),
    "chat tool_call_id": (CHAT, lambda v: {"model": "m", "messages": [{"role": "tool", "tool_call_id": v, "content": "x"}]}),
    "chat arguments": (CHAT, lambda v: {"model": "m", "messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": v}}]}]}),
    "chat input_audio.data": (CHAT, lambda v: {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": v, "format": "wav"}}]}]}),
    "chat response_format.type": (CHAT, lambda v: {"model": "m", "messages": [], "response_format": {"type": v}}),
    "chat strict": (CHAT, lambda v: {"model": "m", "messages": [], "tools": [
        {"type": "function", "function": {"name": "f", "strict": v}}]}),
    "responses previous_response_id": (RESPONSES, lambda v: {"model": "m", "input": "x", "previous_response_id": v}),
    "responses conversation": (RESPONSES, lambda v: {"model": "m", "input": "x", "conversation": v}),
    "responses prompt.id": (RESPONSES, lambda v: {"model": "m", "prompt": {"id": v}}),
    "responses call_id": (RESPONSES, lambda v: {"model": "m", "input": [
        {"type": "function_call_output", "call_id": v, "output": "x"}]}),
    "responses arguments": (RESPONSES, lambda v: {"model": "m", "input": [
        {"type": "mcp_call", "id": "m", "server_label": "s", "name": "f", "arguments": v}]}),
    "responses text.verbosity": (RESPONSES, lambda v: {"model": "m", "input": "x", "text": {"verbosity": v}}),
    "responses text.format.type": (RESPONSES, lambda v: {"model": "m", "input": "x", "text": {"format": {"type": v}}}),
    "gemini thoughtSignature": (GEMINI, lambda v: {"contents": [{"role": "model", "parts": [
        {"text": "x", "thoughtSignature": v}]}]}),
    "gemini inlineData.data": (GEMINI, lambda v: {"contents": [{"role": "user", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": v}}]}]}),
    "gemini cachedContent": (GEMINI, lambda v: {"contents": [], "cachedContent": v}),
}  # fmt: skip


def masked(api, doc: object) -> bytes | None:
    """The body that goes upstream, or None where the request is refused."""
    try:
        out, _ = mask_body(json.dumps(doc).encode(), api.request_rule, RULES)
    except MaskError:
        return None
    return out


# -- the rule: one value's shape ---------------------------------------------------------------


@pytest.mark.parametrize("rule", [exempt.ID, exempt.OPAQUE, exempt.MEDIA, exempt.MODEL, exempt.META])
def test_an_exemption_holds_for_a_value_and_never_for_a_container(rule) -> None:
    assert rule.resolve("x").skip or rule is exempt.META
    for scalar in (fields.Num("1"), True, False, None):
        assert rule.resolve(scalar) is rule
    assert rule.resolve({"note": ACME}) is UNKNOWN and rule.resolve([ACME]) is UNKNOWN


def test_a_word_of_the_api_is_masked_a_number_passes() -> None:
    assert exempt.META.resolve("user") is exempt.WORD and exempt.WORD.string
    assert exempt.META.resolve(fields.Num("3")) is exempt.META  # a count: neither masked nor checked
    assert exempt.Vocabulary(("auto",)).resolve("auto") is exempt.META  # a known word: passes


def test_only_a_signed_block_is_exempt_whole() -> None:
    assert exempt.SIGNED.resolve({"thinking": ACME}) is exempt.SIGNED
    assert exempt.COUNTERS.resolve({"service_tier": "x"}) is exempt.COUNTERS


def test_json_text_sent_as_json_is_user_json() -> None:
    from disguiselib.wire.jsonspan import JSON_TEXT, PROSE, VALUES

    assert JSON_TEXT.resolve({"q": ACME}) is USER and JSON_TEXT.resolve([ACME]) is USER
    assert PROSE.resolve({"q": ACME}) is UNKNOWN
    assert VALUES.resolve({"q": ACME}).keys and VALUES.resolve("x") is VALUES  # text as an object: keys too


# -- through the masker, the guard and the audit ----------------------------------------------------


@pytest.mark.parametrize("slot", list(SLOTS))
@pytest.mark.parametrize("value", [{"note": ACME}, [ACME], {ACME: 1}, [[{"x": ACME}]]])
def test_a_container_in_an_exempt_field_is_masked_keys_and_values(slot: str, value: object) -> None:
    api, make = SLOTS[slot]
    doc = make(value)
    out = masked(api, doc)
    assert out is None or ACME.encode() not in out, slot
    # the guard reads it as the masker does: the client's body would be refused
    assert leakguard.scan_body(json.dumps(doc).encode(), RULES, api) is not None, slot
    # the audit calls it masked (no kind exempts it), never "untouched by design"
    found = [kind for _, text, kind, _ in table_walk(fields.loads(json.dumps(doc)), api.request_rule) if ACME in text]
    assert found and all(kind is None for kind in found), (slot, found)


@pytest.mark.parametrize(
    "slot",
    ["anthropic role", "anthropic tool_choice.type", "anthropic cache_control.ttl", "chat role",
     "chat response_format.type", "responses text.verbosity", "responses text.format.type", "anthropic input_schema.type"],
)  # fmt: skip
def test_a_word_of_the_api_holding_an_original_is_masked_and_checked(slot: str) -> None:
    api, make = SLOTS[slot]
    doc = make(ACME)
    out = masked(api, doc)
    assert out is not None and ACME.encode() not in out and b"Zenith Labs" in out, slot
    assert leakguard.scan_body(json.dumps(doc).encode(), RULES, api) is not None, slot
    # one that holds none goes out byte-identical
    clean = json.dumps(make("user")).encode()
    assert mask_body(clean, api.request_rule, RULES)[0] == clean


def test_the_model_name_and_ids_pass_as_strings() -> None:
    for slot in ("anthropic model", "anthropic tool_use_id", "responses previous_response_id", "gemini thoughtSignature"):
        api, make = SLOTS[slot]
        raw = json.dumps(make(f"id_{ACME}")).encode()
        assert mask_body(raw, api.request_rule, RULES)[0] == raw, slot
    api, make = SLOTS["anthropic container"]
    raw = json.dumps(make({"id": "c_1", "skills": [{"type": "anthropic", "skill_id": "pptx", "version": "latest"}]})).encode()
    assert mask_body(raw, api.request_rule, RULES)[0] == raw


def test_function_arguments_sent_as_json_are_masked_as_json() -> None:
    api, make = SLOTS["chat arguments"]
    out = json.loads(masked(api, make({"q": ACME, "session_id": 1})) or b"null")
    assert out["messages"][0]["tool_calls"][0]["function"]["arguments"] == {"q": "Zenith Labs", "thread_id": 1}


def test_model_text_sent_as_an_object_has_its_keys_masked() -> None:
    doc = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": {"session_id": ACME}}]}
    out = json.loads(masked(CHAT, doc) or b"null")
    assert out["messages"][0]["content"] == {"thread_id": "Zenith Labs"}


# -- any JSON value in any exempt field ------------------------------------------------------------

_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.just(ACME), st.sampled_from(["x", "user", "a b"]),
                  st.text(max_size=6).map(lambda t: t + ACME))  # fmt: skip
_JSON = st.recursive(
    _LEAF,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.dictionaries(st.one_of(st.just(ACME), st.just("session_id"), st.text(max_size=4)), kids, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(SLOTS)), _JSON)
def test_any_value_in_an_exempt_field_never_carries_an_original_out(slot: str, value: object) -> None:
    """Output never holds an original outside what the table exempts as a value (a
    string id, the model name, a signature, binary media), or the request is refused."""
    api, make = SLOTS[slot]
    out = masked(api, make(value))
    if out is None:
        return
    if isinstance(value, str) and slot in _STRING_EXEMPT:
        return  # an id, the model name, a signature, media: the exemption it was made for
    assert ACME.encode() not in out and b"session_id" not in out, (slot, value)
    assert leakguard.scan_body(out, RULES, api) is None  # what leaves, the guard passes


# the fields whose string is exempt by kind (an id, the model name, a signature, media, data)
_STRING_EXEMPT = {
    "anthropic model", "anthropic tool_use_id", "anthropic source.data", "anthropic container", "chat tool_call_id",
    "chat input_audio.data", "responses previous_response_id", "responses conversation", "responses prompt.id",
    "responses call_id", "gemini thoughtSignature", "gemini inlineData.data", "gemini cachedContent",
}  # fmt: skip
