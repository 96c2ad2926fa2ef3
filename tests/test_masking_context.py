"""A value in user-defined JSON is masked with its key in view: `{"client_secret": "…"}`
must meet the rules anchored on the key, whether the JSON is a tool's input or JSON
text inside a string (a tool result holding a config file)."""

from __future__ import annotations

import json

from disguiselib import mappings
from disguiselib.providers import anthropic, openai
from disguiselib.providers.base import mask_body
from disguiselib.rules import Rules
from conftest import REPO

R = Rules(mappings.load(REPO / "mappings"))
SECRET = "SyUAzQ7uXlAJgtUxSMoHhn0FWiIZN_Sh3VSlXU8S"  # nothing but its key says it is one


def _masked(body: dict, rule) -> str:
    new, _ = mask_body(json.dumps(body).encode(), rule, R)
    return new.decode()


def test_the_bare_value_alone_is_not_recognised() -> None:
    assert R.find(SECRET) == []  # so what follows is the key's doing


def test_tool_input_value_is_masked_by_its_key() -> None:
    body = {"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": {"client_secret": SECRET, "n": 1}}]}]}
    out = _masked(body, anthropic.MESSAGES_REQUEST)
    assert SECRET not in out
    assert '"client_secret": "[SECRET_1]"' in out


def test_json_text_in_a_tool_result_is_masked_by_its_keys() -> None:
    config = json.dumps({"service": "billing", "client_secret": SECRET, "retries": 3}, indent=2)
    body = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": config}]}]}
    out = _masked(body, anthropic.MESSAGES_REQUEST)
    assert SECRET not in out
    inner = json.loads(json.loads(out)["messages"][0]["content"][0]["content"])
    assert inner == {"service": "billing", "client_secret": "[SECRET_1]", "retries": 3}


def test_function_call_arguments_are_masked_by_their_keys() -> None:
    args = json.dumps({"client_secret": SECRET})
    body = {"model": "m", "input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": args}]}
    out = _masked(body, openai.RESPONSES_REQUEST)
    assert SECRET not in out
