"""base/prompt.py: placeholders are numbered in the provider's prompt order, whatever
order the body is written in, so that the unchanged part of a conversation's prompt is
the same bytes on every turn (the provider's prompt cache keeps hitting).

Properties, for each API that declares a prompt order (jsonspan.Rule.prompt), over
random system prompts, tools and turns holding e-mails (numbered placeholders) and
literals, the body written in the SDKs' order (the conversation first):
- every member but the conversation is masked to the same bytes on every turn, and each
  turn's masked conversation begins with the turn before's;
- the masked members are those of the same body written in prompt order (the body's
  order changes nothing but where the members are)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.bedrock import runtime as bedrock
from disguiselib.apis.google import codeassist, gemini
from disguiselib.apis.openai import chat, responses
from disguiselib.base import masking
from disguiselib.base.prompt import prompt_order
from disguiselib.wire import jsonspan
from strategies import make_rules

RULES = make_rules()
_email = st.sampled_from(["ann@a.example.com", "bo@b.example.org", "cy@c.example.net", "di@d.example.io"])
_word = st.sampled_from(["the", "Acme Corp", "ticket", "nova-internal.cloud", "é", '"q"', "\\", "\n"])
_text = st.lists(_word | _email, min_size=1, max_size=6).map(" ".join)


def _anthropic(system: str, tool: str, turns: list[str]) -> tuple[dict, str, tuple[str, ...]]:
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": t} for t in turns], "system": system,
           "tools": [{"name": "t", "description": tool, "input_schema": {"type": "object"}}]}  # fmt: skip
    return doc, "messages", ("system", "tools")


def _chat(system: str, tool: str, turns: list[str]) -> tuple[dict, str, tuple[str, ...]]:
    msgs = [{"role": "system", "content": system}] + [{"role": "user", "content": t} for t in turns]
    doc = {"messages": msgs, "model": "m",
           "tools": [{"type": "function", "function": {"name": "t", "description": tool}}]}  # fmt: skip
    return doc, "messages", ("tools",)


def _responses(system: str, tool: str, turns: list[str]) -> tuple[dict, str, tuple[str, ...]]:
    doc = {"input": [{"role": "user", "content": t} for t in turns], "instructions": system, "model": "m",
           "tools": [{"type": "function", "name": "t", "description": tool}]}  # fmt: skip
    return doc, "input", ("instructions", "tools")


def _gemini(system: str, tool: str, turns: list[str]) -> tuple[dict, str, tuple[str, ...]]:
    doc = {"contents": [{"role": "user", "parts": [{"text": t}]} for t in turns],
           "systemInstruction": {"parts": [{"text": system}]},
           "tools": [{"functionDeclarations": [{"name": "t", "description": tool}]}]}  # fmt: skip
    return doc, "contents", ("systemInstruction", "tools")


def _converse(system: str, tool: str, turns: list[str]) -> tuple[dict, str, tuple[str, ...]]:
    doc = {"messages": [{"role": "user", "content": [{"text": t}]} for t in turns], "system": [{"text": system}],
           "toolConfig": {"tools": [{"toolSpec": {"name": "t", "description": tool,
                                                  "inputSchema": {"json": {"type": "object"}}}}]}}  # fmt: skip
    return doc, "messages", ("system", "toolConfig")


Body = Callable[[str, str, list[str]], tuple[dict, str, tuple[str, ...]]]
APIS: list[tuple[Body, jsonspan.Rule]] = [
    (_anthropic, anthropic.MESSAGES_REQUEST), (_chat, chat.CHAT_REQUEST), (_responses, responses.RESPONSES_REQUEST),
    (_gemini, gemini.GENERATE_REQUEST), (_converse, bedrock.CONVERSE_REQUEST),
]  # fmt: skip


def masked(doc: dict, root: jsonspan.Rule) -> dict:
    return json.loads(masking.mask_body(json.dumps(doc).encode(), root, RULES)[0])


@pytest.mark.parametrize(("body", "root"), APIS, ids=lambda x: getattr(x, "__name__", ""))
@settings(max_examples=60, deadline=None)
@given(system=_text, tool=_text, turns=st.lists(_text, min_size=2, max_size=4))
def test_the_unchanged_prompt_is_masked_the_same_every_turn(body: Body, root: jsonspan.Rule, system: str, tool: str,
                                                            turns: list[str]) -> None:  # fmt: skip
    before = None
    for n in range(1, len(turns) + 1):
        doc, conversation, fixed = body(system, tool, turns[:n])
        out = masked(doc, root)
        if before is not None:
            for m in fixed:
                assert out[m] == before[m], f"{m} changed when a turn was added"
            assert out[conversation][: len(before[conversation])] == before[conversation]
        before = out


@pytest.mark.parametrize(("body", "root"), APIS, ids=lambda x: getattr(x, "__name__", ""))
@settings(max_examples=60, deadline=None)
@given(system=_text, tool=_text, turns=st.lists(_text, min_size=1, max_size=3), data=st.data())
def test_the_body_order_changes_nothing_but_the_order(body: Body, root: jsonspan.Rule, system: str, tool: str,
                                                      turns: list[str], data: st.DataObject) -> None:  # fmt: skip
    doc, _, _ = body(system, tool, turns)
    written = data.draw(st.permutations(list(doc)))
    in_prompt = sorted(doc, key=lambda k: root.prompt.index(k) if k in root.prompt else -1)
    a = masked({k: doc[k] for k in written}, root)
    b = masked({k: doc[k] for k in in_prompt}, root)
    assert a == b
    assert list(a) == written


def test_a_value_first_met_in_the_system_prompt_keeps_its_number() -> None:
    doc, _, _ = _anthropic("mail ann@a.example.com", "x", ["I am bo@b.example.org"])
    out = masked(doc, anthropic.MESSAGES_REQUEST)
    assert out["system"] == "mail [EMAIL_1]" and out["messages"][0]["content"] == "I am [EMAIL_2]"


def test_prompt_order_is_none_where_the_body_is_in_it() -> None:
    root = anthropic.MESSAGES_REQUEST
    s = '{"model": "m", "tools": [], "system": "a", "messages": ["b", "c"]}'
    where = [s.index('"a"'), s.index('"a"') + 3, s.index('"b"'), s.index('"b"') + 3]
    assert prompt_order(s, json.loads(s), root, [0, 1], where) is None
    t = '{"model": "m", "messages": ["b"], "system": "a"}'
    where = [t.index('"b"'), t.index('"b"') + 3, t.index('"a"'), t.index('"a"') + 3]
    assert prompt_order(t, json.loads(t), root, [0, 1], where) == [1, 0]
    assert prompt_order(t, json.loads(t), root, [0], where) is None  # one string: nothing to order
    assert prompt_order(t, json.loads(t), jsonspan.Obj({}), [0, 1], where) is None  # no order declared


def test_a_declared_member_the_table_does_not_know_is_refused_at_import() -> None:
    """A ValueError, not an assert: it holds under `python -O` too."""
    with pytest.raises(ValueError, match="system"):
        jsonspan.Obj({"messages": jsonspan.VALUES}, prompt=("system", "messages"))


@pytest.mark.parametrize("wrap", ["codeassist", "count_tokens"])
@settings(max_examples=40, deadline=None)
@given(system=_text, tool=_text, turns=st.lists(_text, min_size=2, max_size=4))
def test_a_request_inside_the_body_is_numbered_in_its_prompt_order(wrap: str, system: str, tool: str,
                                                                   turns: list[str]) -> None:  # fmt: skip
    """Code Assist (gemini-cli) sends the Gemini request as `request` beside the model and
    project; countTokens may send it whole as `generateContentRequest`."""
    before = None
    for n in range(1, len(turns) + 1):
        inner, _, fixed = _gemini(system, tool, turns[:n])
        if wrap == "codeassist":
            doc, root, key = {"model": "m", "project": "p", "request": inner}, codeassist.REQUEST, "request"
        else:
            doc, root, key = {"generateContentRequest": inner}, gemini.GENERATE_REQUEST, "generateContentRequest"
        out = masked(doc, root)[key]
        if before is not None:
            for m in fixed:
                assert out[m] == before[m], f"{m} changed when a turn was added"
            assert out["contents"][: len(before["contents"])] == before["contents"]
        before = out


def test_members_no_prompt_names_are_numbered_first() -> None:
    """An undeclared member (metadata, an unknown object) before the declared ones, in the
    body's order, whatever the body's order is."""
    doc = {"messages": [{"role": "user", "content": "c cy@c.example.net"}], "system": "b bo@b.example.org",
           "foo": {"x": "a ann@a.example.com"}, "model": "m", "max_tokens": 5}  # fmt: skip
    out = masked(doc, anthropic.MESSAGES_REQUEST)
    assert out["foo"]["x"].endswith("[EMAIL_1]") and out["system"].endswith("[EMAIL_2]")
    assert out["messages"][0]["content"].endswith("[EMAIL_3]")


def test_a_nested_request_first_in_its_body() -> None:
    """Code Assist's `request` written before the model and project."""
    inner, _, _ = _gemini("sys ann@a.example.com", "tool", ["hi bo@b.example.org"])
    doc = {"request": inner, "model": "m", "project": "p"}
    out = masked(doc, codeassist.REQUEST)["request"]
    assert out["systemInstruction"]["parts"][0]["text"].endswith("[EMAIL_1]")
    assert out["contents"][0]["parts"][0]["text"].endswith("[EMAIL_2]")


def test_prompt_order_asks_nothing_of_what_is_no_object() -> None:
    where = [1, 4, 6, 9]
    assert prompt_order('["a", "b"]', ["a", "b"], anthropic.MESSAGES_REQUEST, [0, 1], where) is None
    assert prompt_order('{"a": "x", "b": "y"}', {"a": "x", "b": "y"}, jsonspan.VALUES, [0, 1], where) is None


def _numbers(doc: dict, root: jsonspan.Rule) -> list[str]:
    import re

    return re.findall(r"\[EMAIL_[0-9]+\]", json.dumps(masked(doc, root)))


@pytest.mark.parametrize(("root", "state"), [
    (responses.RESPONSES_REQUEST, {"previous_response_id": "resp_1"}),
    (responses.RESPONSES_REQUEST, {"conversation": "conv_1"}),
    (responses.RESPONSES_REQUEST, {"conversation": {"id": "conv_1"}}),
    (gemini.GENERATE_REQUEST, {"cachedContent": "cachedContents/c1"}),
    (gemini.GENERATE_REQUEST, {"cached_content": "cachedContents/c1"}),
    (anthropic.MESSAGES_REQUEST, {"container": "container_1"}),
    (anthropic.MESSAGES_REQUEST, {"container": {"id": "container_1", "skills": []}}),
    (anthropic.MESSAGES_REQUEST, {"thread": {"type": "continue", "previous_message_id": "msg_1"}}),
])  # fmt: skip
def test_a_request_continuing_stored_state_is_numbered_by_its_key(root: jsonspan.Rule, state: dict) -> None:
    """Numbered from 1 its placeholders would be those the stored part was given
    (rules/session.Session.keyed): nine digits instead, the same for the same state."""
    from disguiselib.base.prompt import numbers_key

    conv = {"input": "mail ann@a.example.com"} if root is responses.RESPONSES_REQUEST else {
        "messages": [{"role": "user", "content": "mail ann@a.example.com"}]} if root is anthropic.MESSAGES_REQUEST else {
        "contents": [{"role": "user", "parts": [{"text": "mail ann@a.example.com"}]}]}  # fmt: skip
    assert _numbers(conv, root) == ["[EMAIL_1]"] and numbers_key(conv, root, b"k") is None
    got = _numbers({**state, **conv}, root)
    assert len(got) == 1 and len(got[0]) == len("[EMAIL_]") + 9
    assert got == _numbers({**state, **conv}, root)  # the same state, the same bytes
    other = {k: ("resp_2" if isinstance(v, str) else {"id": "conv_2"}) for k, v in state.items()}
    made = {k: {"skills": []} for k, v in state.items() if isinstance(v, dict)}  # an object without its id: none
    assert not made or numbers_key({**made, **conv}, root, b"k") is None
    assert _numbers({**other, **conv}, root) != got
    assert numbers_key({**state, **conv}, root, b"k") != numbers_key({**state, **conv}, root, b"j")
    assert numbers_key({**{k: None for k in state}, **conv}, root, b"k") is None  # null: no state


def test_a_nested_request_using_a_cache_is_keyed() -> None:
    """countTokens' `generateContentRequest` names the cache it would use."""
    from disguiselib.base.prompt import numbers_key

    inner = {"cachedContent": "cachedContents/c1", "contents": []}
    assert numbers_key({"generateContentRequest": inner}, gemini.GENERATE_REQUEST, b"k") is not None
    assert numbers_key({"generateContentRequest": {"contents": []}}, gemini.GENERATE_REQUEST, b"k") is None
    assert numbers_key(["x"], gemini.GENERATE_REQUEST, b"k") is None


def test_a_state_member_the_table_does_not_know_is_refused_at_import() -> None:
    with pytest.raises(ValueError, match="b"):
        jsonspan.Obj({"a": jsonspan.VALUES}, state=("b",))


def test_the_numbering_key_is_fixed_by_the_state_alone() -> None:
    """Known answers: the key is an HMAC of the state's names, so a conversation keeps its
    numbers across versions and instances sharing the key; a resumed session (Gemini
    Live) is named by its handle, an object by its id before its handle; both members of
    a body count, nested or not; what no object with members reads names nothing."""
    from disguiselib.apis.google.live import CLIENT_MESSAGES
    from disguiselib.base.prompt import numbers_key

    k = b"k" * 32
    assert numbers_key({"previous_response_id": "resp_1", "input": "x"}, responses.RESPONSES_REQUEST, k).hex()[:16] == (
        "b6a3e174e5dd8a45")  # fmt: skip
    assert numbers_key({"previous_response_id": "r\ud800é"}, responses.RESPONSES_REQUEST, k).hex()[:16] == (
        "75d9642dcf051c34")  # fmt: skip
    live = jsonspan.Obj(CLIENT_MESSAGES)
    by_handle = numbers_key({"setup": {"sessionResumption": {"handle": "h1"}}}, live, k)
    assert by_handle is not None and by_handle == numbers_key({"previous_response_id": "h1"}, responses.RESPONSES_REQUEST, k)
    assert numbers_key({"setup": {"sessionResumption": {"id": "i", "handle": "h1"}}}, live, k) != by_handle
    assert numbers_key({"setup": {"sessionResumption": {"handle": ""}}}, live, k) is None
    both = {"cachedContent": "a", "generateContentRequest": {"cachedContent": "b"}}
    assert numbers_key(both, gemini.GENERATE_REQUEST, k) not in (
        numbers_key({"generateContentRequest": {"cachedContent": "b"}}, gemini.GENERATE_REQUEST, k),
        numbers_key({"cachedContent": "a"}, gemini.GENERATE_REQUEST, k))  # fmt: skip
    assert numbers_key({"previous_response_id": "resp_1"}, jsonspan.VALUES, k) is None
    # an Anthropic thread continued (anthropic 2's tool runner) is named by the message it
    # continues from; one to be created names nothing (its turn is numbered from 1)
    msgs = anthropic.MESSAGES_REQUEST
    cont = numbers_key({"thread": {"type": "continue", "previous_message_id": "msg_01"}, "messages": []}, msgs, k)
    assert cont is not None and cont == numbers_key({"previous_response_id": "msg_01"}, responses.RESPONSES_REQUEST, k)
    assert numbers_key({"thread": {"type": "create"}, "messages": []}, msgs, k) is None
