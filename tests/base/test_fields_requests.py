"""Request fields found by the field audit (issue 7): each test pins one place where an
original used to go out."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.apis.openai.chat import CHAT_REQUEST
from disguiselib.apis.openai.responses import RESPONSES_REQUEST
from disguiselib.base.masking import mask_body
from disguiselib.errors import MaskError
from disguiselib.rules import mappings, rules
from strategies import RULES

WIN = 'C:\\Users\\a "b"'  # an original that JSON spells with escapes
UNI = "Ünïcødé GmbH"  # an original that JSON may spell with \u escapes
EMAIL = "bob@corp.example.com"
ORIGINALS = (WIN, UNI, "Acme Corp", "session_id", EMAIL)


def mask(doc: dict, rule=MESSAGES_REQUEST) -> tuple[str, dict]:
    out, session = mask_body(json.dumps(doc).encode(), rule, RULES)
    return out.decode(), session.placeholders


def decoded_strings(x: object) -> list[str]:
    """Every key and string in x, and inside strings that hold JSON, theirs too."""
    out: list[str] = []
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            out.append(v)
            try:
                stack.append(json.loads(v))
            except ValueError:
                pass
    return out


def assert_no_original(text: str) -> None:
    everything = " | ".join(decoded_strings(json.loads(text)))
    for o in ORIGINALS:
        assert o not in everything, f"{o!r} went out: {everything!r}"


# -- JSON text inside strings: masked on decoded characters ------------------------------

# JSON text holding the originals spelled with escapes: `C:\\Users\\a \"b\"`, `\u00dcn...`
JSON_TEXT = json.dumps({"path": WIN, "org": UNI, "session_id": 1})  # ensure_ascii: \u escapes


def test_tool_result_holding_json_text_is_masked_decoded() -> None:
    assert "\\\\Users" in JSON_TEXT and "\\u00dc" in JSON_TEXT
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": JSON_TEXT},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": JSON_TEXT}]},
    ]}]}  # fmt: skip
    out, _ = mask(doc)
    assert_no_original(out)
    got = json.loads(json.loads(out)["messages"][0]["content"][0]["content"])
    assert got == {"path": "WINPATH", "org": "Unicode Ltd", "thread_id": 1}


def test_truncated_function_arguments_are_masked_decoded() -> None:
    cut = JSON_TEXT[: JSON_TEXT.index("session_id") + 4]  # not valid JSON
    doc = {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": cut}}]}]}  # fmt: skip
    out, _ = mask(doc, CHAT_REQUEST)
    args = json.loads(out)["messages"][0]["tool_calls"][0]["function"]["arguments"]
    assert WIN not in args and "\\\\Users" not in args and "\\u00dc" not in args
    assert args.startswith('{"path": "WINPATH", "org": "Unicode Ltd", ')


def test_truncated_arguments_cut_inside_an_escape() -> None:
    cut = JSON_TEXT[: JSON_TEXT.index("\\u00dc") + 4]  # ends in `\u00`
    doc = {"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": cut}]}
    out, _ = mask(doc, RESPONSES_REQUEST)
    args = json.loads(out)["input"][0]["arguments"]
    assert args == '{"path": "WINPATH", "org": "\\u00'


def test_mcp_call_arguments_are_masked_as_json() -> None:
    doc = {"model": "m", "input": [
        {"type": "mcp_call", "id": "mcp_1", "server_label": "crm", "name": "acme_lookup", "arguments": JSON_TEXT,
         "output": f"found {EMAIL}"},
        {"type": "mcp_approval_request", "id": "a1", "server_label": "crm", "name": "acme_lookup",
         "arguments": JSON_TEXT},
    ]}  # fmt: skip
    out, _ = mask(doc, RESPONSES_REQUEST)
    assert_no_original(out)
    item = json.loads(out)["input"][0]
    assert json.loads(item["arguments"]) == {"path": "WINPATH", "org": "Unicode Ltd", "thread_id": 1}
    assert item["name"] == "crm_lookup"


# -- reusable prompts ---------------------------------------------------------------------


def test_prompt_variables_are_masked() -> None:
    doc = {"model": "m", "prompt": {"id": "pmpt_Acme Corp", "version": "2", "variables": {
        "customer": "Acme Corp", "mail": {"type": "input_text", "text": f"write to {EMAIL}"},
        "logo": {"type": "input_image", "image_url": "data:image/png;base64,Acme Corp"}}}}  # fmt: skip
    out, ph = mask(doc, RESPONSES_REQUEST)
    p = json.loads(out)["prompt"]
    assert p["variables"]["customer"] == "Zenith Labs"
    assert p["variables"]["mail"]["text"] == "write to [EMAIL_1]" and ph == {"[EMAIL_1]": EMAIL}
    assert p["variables"]["logo"]["image_url"] == "data:image/png;base64,Acme Corp"  # base64: untouched
    assert p["id"] == "pmpt_Acme Corp"  # an id


# -- property names wherever a JSON Schema or an example object lives --------------------


@pytest.mark.parametrize("where", ["properties", "dependentRequired", "dependencies", "dependencies-schema",
                                   "items-tuple", "prefixItems", "patternProperties", "$defs", "definitions",
                                   "input_examples"])  # fmt: skip
def test_schema_property_names_are_masked(where: str) -> None:
    inner = {"type": "object", "properties": {"session_id": {"type": "string"}}}
    schema = {
        "properties": {"type": "object", "properties": {"session_id": {"type": "string"}}},
        "dependentRequired": {"type": "object", "dependentRequired": {"session_id": ["session_id"]}},
        "dependencies": {"type": "object", "dependencies": {"session_id": ["session_id"]}},
        "dependencies-schema": {"type": "object", "dependencies": {"session_id": inner}},
        "items-tuple": {"type": "array", "items": [inner, inner]},
        "prefixItems": {"type": "array", "prefixItems": [inner]},
        "patternProperties": {"type": "object", "patternProperties": {"^session_id$": inner}},
        "$defs": {"$defs": {"session_id": inner}},
        "definitions": {"definitions": {"session_id": inner}},
        "input_examples": {"type": "object"},
    }[where]
    tool = {"name": "acme_lookup", "description": "d", "input_schema": schema}
    if where == "input_examples":
        tool["input_examples"] = [{"session_id": "Acme Corp", "nested": {"session_id": 1}}]
    out, _ = mask({"model": "m", "max_tokens": 5, "messages": [], "tools": [tool]})
    assert "session_id" not in out and "thread_id" in out
    # the same schema as an OpenAI function's parameters and a Responses mcp_list_tools item
    fn = {"type": "function", "function": {"name": "f", "parameters": schema}}
    out, _ = mask({"model": "m", "messages": [], "tools": [fn]}, CHAT_REQUEST)
    assert "session_id" not in out or where == "input_examples"
    listed = {"type": "mcp_list_tools", "id": "l", "server_label": "s",
              "tools": [{"name": "acme_lookup", "input_schema": schema}]}  # fmt: skip
    out, _ = mask({"model": "m", "input": [listed]}, RESPONSES_REQUEST)
    assert "session_id" not in out or where == "input_examples"
    assert "acme_lookup" not in out


# -- end-user identifiers: one rule -------------------------------------------------------


def test_end_user_identifiers_are_masked_on_every_api() -> None:
    out, ph = mask({"model": "m", "max_tokens": 5, "messages": [], "metadata": {"user_id": EMAIL}})
    assert json.loads(out)["metadata"]["user_id"] == "[EMAIL_1]"
    for rule in (CHAT_REQUEST, RESPONSES_REQUEST):
        doc = {"model": "m", "messages": [], "input": "hi", "user": EMAIL, "safety_identifier": f"Acme Corp {EMAIL}",
               "prompt_cache_key": "Acme Corp"}  # fmt: skip
        got = json.loads(mask(doc, rule)[0])
        assert got["user"] == "[EMAIL_1]"
        assert got["safety_identifier"] == "Zenith Labs [EMAIL_1]"
        assert got["prompt_cache_key"] == "Zenith Labs"
    # an opaque identifier (a hash) goes out as it came
    got = json.loads(mask({"model": "m", "messages": [], "user": "u_5f2a9c"}, CHAT_REQUEST)[0])
    assert got["user"] == "u_5f2a9c"


# -- planted bugs: a plain string where a table expects an object ------------------------


@pytest.mark.parametrize(
    "doc,rule",
    [
        ({"model": "m", "max_tokens": 5, "messages": [f"mail {EMAIL} at Acme Corp"]}, MESSAGES_REQUEST),
        ({"model": "m", "max_tokens": 5, "messages": [], "tool_choice": "acme_lookup Acme Corp"}, MESSAGES_REQUEST),
        ({"model": "m", "messages": [f"mail {EMAIL} at Acme Corp"]}, CHAT_REQUEST),
        ({"model": "m", "messages": [], "tool_choice": "acme_lookup Acme Corp"}, CHAT_REQUEST),
        ({"model": "m", "input": [f"mail {EMAIL} at Acme Corp"]}, RESPONSES_REQUEST),
        ({"model": "m", "input": "x", "tool_choice": {"type": "function", "name": "acme_lookup"},
          "tools": ["acme_lookup Acme Corp"], "text": "Acme Corp"}, RESPONSES_REQUEST),
    ],
)
def test_a_string_where_an_object_is_expected_is_masked_or_refused(doc: dict, rule) -> None:
    try:
        out, _ = mask(doc, rule)
    except MaskError:
        return  # refused: not forwarded
    assert_no_original(out)


# -- planted bug: a literal wins over a pattern match at the same position ---------------


def test_a_literal_wins_over_a_pattern_at_the_same_position() -> None:
    r = rules.Rules(mappings.from_dict({
        "literals": {"bob@corp.example.com": "someone@example.net", "Acme": "Zenith"},
        "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"},
                     {"name": "WORD", "regex": r"Acme\w*"}],
    }))  # fmt: skip
    s = rules.Session()
    assert r.mask("mail bob@corp.example.com or ann@x.io at AcmeCorp, Acme", s) == (
        "mail someone@example.net or [EMAIL_1] at ZenithCorp, Zenith"
    )
    assert s.placeholders == {"[EMAIL_1]": "ann@x.io"}
    assert [label for label, _, _ in r.find("bob@corp.example.com")] == [rules.LITERALS]


# -- settings: the API reads them, the client wrote them --------------------------------

SETTINGS = [  # (API, request) where an original sits in a setting the API reads
    (MESSAGES_REQUEST, {"thinking": {"type": "enabled", "budget_tokens": 1024, "note": "Acme Corp"}}),
    (MESSAGES_REQUEST, {"thinking": {"type": "Acme Corp"}}),
    (MESSAGES_REQUEST, {"temperature": "Acme Corp", "anthropic_beta": ["Acme Corp"]}),
    (MESSAGES_REQUEST, {"service_tier": {"Acme Corp": 1}}),
    (CHAT_REQUEST, {"stream_options": {"include_usage": True, "note": "Acme Corp"}}),
    (CHAT_REQUEST, {"logit_bias": {"1234": "Acme Corp", "Acme Corp": -100}}),
    (CHAT_REQUEST, {"audio": {"voice": "Acme Corp", "format": "wav"}}),
    (CHAT_REQUEST, {"reasoning_effort": "Acme Corp", "modalities": ["text", "Acme Corp"]}),
    (RESPONSES_REQUEST, {"reasoning": {"effort": "low", "note": "Acme Corp"}}),
    (RESPONSES_REQUEST, {"include": ["Acme Corp"], "truncation": {"Acme Corp": "auto"}}),
]


@pytest.mark.parametrize(("rule", "settings"), SETTINGS)
def test_an_original_in_a_setting_is_masked(rule, settings: dict) -> None:
    """A setting is the API's to read, but the client wrote it: an original in one (an
    unknown member of `thinking`, a word where a number goes) is masked like any value,
    and the leak guard reads it too."""
    from disguiselib.leakguard import scan_json

    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "input": "hi"}
    doc = {**base, **settings}
    out, _ = mask(doc, rule)
    assert "Acme Corp" not in out and "Zenith Labs" in out
    assert scan_json(doc, RULES, rule) is not None  # as the client wrote it: a leak
    assert scan_json(json.loads(out), RULES, rule) is None


def test_settings_without_originals_go_out_byte_identical() -> None:
    """Masking a setting changes only an original in it: the API's own words, numbers and
    token ids pass as they came, byte for byte."""
    doc = ('{"model":"claude-x","max_tokens":1024,"temperature":0.25,"thinking":{"type":"enabled",'
           '"budget_tokens":2048},"anthropic_beta":["context-1m-2025-08-07"],"service_tier":"auto",'
           '"messages":[{"role":"user","content":"hi"}]}')  # fmt: skip
    assert mask_body(doc.encode(), MESSAGES_REQUEST, RULES)[0] == doc.encode()
    chat = ('{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"logit_bias":{"50256":-100},'
            '"stream_options":{"include_usage":true},"audio":{"voice":{"id":"voice_1234"},"format":"wav"},'
            '"reasoning_effort":"high","modalities":["text","audio"],"seed":4111111111111111}')  # fmt: skip
    assert mask_body(chat.encode(), CHAT_REQUEST, RULES)[0] == chat.encode()
    # a setting's numbers are neither masked nor checked (a seed that reads as a card number)
    from disguiselib.base.fields import loads
    from disguiselib.leakguard import scan_json

    digits = rules.Rules(mappings.from_dict({"patterns": [{"name": "CARD", "regex": r"\b4[0-9]{15}\b"}]}))
    assert scan_json(loads(chat), digits, CHAT_REQUEST) is None
    assert scan_json(loads(chat.replace('"seed"', '"unknown"')), digits, CHAT_REQUEST) is not None
    resp = '{"model":"gpt-x","input":"hi","reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"]}'
    assert mask_body(resp.encode(), RESPONSES_REQUEST, RULES)[0] == resp.encode()
