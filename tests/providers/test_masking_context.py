"""A value in user-defined JSON is masked with its key in view: `{"client_secret": "…"}`
must meet the rules anchored on the key, whether the JSON is a tool's input or JSON
text inside a string (a tool result holding a config file)."""

from __future__ import annotations

import json

from conftest import REPO
from disguiselib.core import mappings
from disguiselib.core.rules import Rules
from disguiselib.providers import anthropic, openai_responses
from disguiselib.providers.masking import mask_body

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
    out = _masked(body, openai_responses.RESPONSES_REQUEST)
    assert SECRET not in out


def test_private_key_in_a_read_result_with_line_numbers() -> None:
    """Claude Code's Read tool numbers every line (`    64→`); cat -n and grep -n too."""
    body_lines = ["MIIEowIBAAKCAQEA1y2Fz0vQnX6DWPES1lbHJ2i847KrNmdFeOaWyzQda+TOx4t",
                  "C9+HfkW8IoLhmQHoKSQWDAHIu9GJ66Cjt5KsIWWAyYcT+Ps+NWnMmLOp4k4k47T",
                  "miJkEyQ+phPl3cfxJzQgFgerKhwNQe+p70K7E3ZyhQRwHCG4As5pXa4bZxq4jjU"]  # fmt: skip
    key = ["-----BEGIN RSA PRIVATE KEY-----", *body_lines, "-----END RSA PRIVATE KEY-----"]
    for fmt in ("{n:>6}→{line}", "{n:>6}\t{line}", "key.pem:{n}:{line}"):
        listing = "\n".join(fmt.format(n=i + 60, line=line) for i, line in enumerate(["x = 1", *key, "y = 2"]))
        out = R.mask(listing, _session())
        assert not any(b in out for b in body_lines), fmt
        assert "x = 1" in out and "y = 2" in out


def _session():
    from disguiselib.core.rules import Session

    return Session()
