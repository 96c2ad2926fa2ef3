"""The leak guard reads the keys the masker sends as written (fields.NAME): a request map
whose keys the provider matches (a stored prompt's variable names, the header names an
MCP server reads) keeps them, and a request where one holds an original is refused,
the message naming the rule and the place, never the key. Where the provider matches
nothing (a replayed item's vector-store attributes, a local shell call's env names) the
keys are masked like any JSON key and restored in an answer."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis.openai import realtime
from disguiselib.apis.registry import BATCH_LINE, BEDROCK_CONVERSE, OPENAI_RESPONSES, recognise
from disguiselib.base import fields
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.inspect import audit
from strategies import LITERALS, RULES

ACME = "Acme Corp"
BOB = "bob@corp.example.com"
RESPONSES = recognise("POST", "/v1/responses")


def _mcp(headers: dict) -> dict:
    return {"type": "mcp", "server_label": "crm", "server_url": "https://mcp.example", "headers": headers}


# Every request map whose keys are sent as written: (name, the table, a body with `key`
# as one of its keys, the place a refusal names)
def _bodies(key: str) -> list[tuple[str, object, object, str]]:
    prompt = {"id": "pmpt_1", "version": "2", "variables": {"city": "Paris", key: "v"}}
    return [
        ("responses prompt.variables", OPENAI_RESPONSES.request_rule, {"model": "m", "prompt": prompt},
         "$.prompt.variables[<key>]"),
        ("responses prompt.variables (a part)", OPENAI_RESPONSES.request_rule,
         {"model": "m", "prompt": {"id": "p", "variables": {key: {"type": "input_text", "text": "t"}}}},
         "$.prompt.variables[<key>]"),
        ("responses mcp tool headers", OPENAI_RESPONSES.request_rule,
         {"model": "m", "input": "hi", "tools": [_mcp({"Authorization": "Bearer x", key: "1"})]}, "$.tools[0].headers[<key>]"),
        ("responses additional_tools item mcp headers", OPENAI_RESPONSES.request_rule,
         {"model": "m", "input": [{"type": "additional_tools", "tools": [_mcp({key: "1"})]}]},
         "$.input[0].tools[0].headers[<key>]"),
        ("responses tool_search_output item mcp headers", OPENAI_RESPONSES.request_rule,
         {"model": "m", "input": [{"type": "tool_search_output", "call_id": "c", "tools": [_mcp({key: "1"})]}]},
         "$.input[0].tools[0].headers[<key>]"),
        ("realtime session.update prompt.variables", realtime.CLIENT_EVENTS["session.update"],
         {"type": "session.update", "session": {"type": "realtime", "prompt": prompt}}, "$.session.prompt.variables[<key>]"),
        ("realtime response.create prompt.variables", realtime.CLIENT_EVENTS["response.create"],
         {"type": "response.create", "response": {"prompt": prompt}}, "$.response.prompt.variables[<key>]"),
        ("bedrock converse promptVariables", BEDROCK_CONVERSE.request_rule,
         {"promptVariables": {"city": {"text": "Paris"}, key: {"text": "v"}}}, "$.promptVariables[<key>]"),
        ("openai batch input line: responses prompt.variables", BATCH_LINE,
         {"custom_id": "r1", "method": "POST", "url": "/v1/responses", "body": {"model": "m", "prompt": prompt}},
         "$.body.prompt.variables[<key>]"),
    ]  # fmt: skip


CASES = [b[0] for b in _bodies("k")]


def _scan(rule: object, doc: object) -> leakguard.Hit | None:
    return leakguard.scan_json(fields.loads(json.dumps(doc)), RULES, rule)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("key", ["x_acme_lookup_y", BOB, ACME, "Ünïcødé GmbH", 'X-C:\\Users\\a "b"'])
def test_an_original_in_a_key_sent_as_written_is_refused_naming_the_rule_and_the_place(case: str, key: str) -> None:
    name, rule, doc, place = next(b for b in _bodies(key) if b[0] == case)
    h = _scan(rule, doc)
    assert h is not None, name
    assert h.rule == ("EMAIL" if key == BOB else "literal")
    assert place in h.where and h.where.endswith(leakguard.AS_WRITTEN), h
    assert leakguard.first(RULES, str(h)) is None  # never the key


@pytest.mark.parametrize("case", CASES)
def test_a_clean_key_sent_as_written_passes_and_is_left_as_it_is(case: str) -> None:
    name, rule, doc, _ = next(b for b in _bodies("customer_name") if b[0] == case)
    assert _scan(rule, doc) is None, name
    # a disguise in the key (a literal's, a placeholder) is no original either
    for key in ("Zenith Labs", "[EMAIL_1]"):
        assert _scan(rule, next(b for b in _bodies(key) if b[0] == case)[2]) is None, (name, key)


def test_the_masker_sends_the_names_as_written_and_the_guard_refuses_what_it_produced() -> None:
    doc = {"model": "m", "input": f"hi {ACME}",
           "prompt": {"id": "pmpt_1", "variables": {"acme_lookup": f"{ACME} {BOB}"}}}  # fmt: skip
    masked, _ = mask_body(json.dumps(doc).encode(), OPENAI_RESPONSES.request_rule, RULES)
    out = json.loads(masked)
    assert out["input"] == "hi Zenith Labs"
    assert list(out["prompt"]["variables"]) == ["acme_lookup"]  # the name as written
    assert out["prompt"]["variables"]["acme_lookup"] == "Zenith Labs [EMAIL_1]"  # the value masked
    h = leakguard.scan_body(masked, RULES, OPENAI_RESPONSES)
    assert str(h) == f"literal in body $.prompt.variables[<key>]{leakguard.AS_WRITTEN}"


def test_the_pipeline_refuses_it_as_a_leak_with_a_message_that_never_quotes_the_key(tmp_path) -> None:
    from disguiselib.config import build_config

    (tmp_path / "m.yaml").write_text(
        "literals:\n  Acme Corp: Zenith Labs\npatterns:\n  - name: EMAIL\n    regex: '[a-z.]+@[a-z.]+'\n"
    )
    cfg = build_config([str(tmp_path / "m.yaml")], False, [])
    body = json.dumps({"model": "m", "prompt": {"id": "p", "variables": {"bob@corp.example.com": "x"}}}).encode()
    v = pipeline.mask_request(OPENAI_RESPONSES, body, cfg, "/v1/responses", [])
    assert isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.LEAK and not v.may_fail_open
    assert v.reason == (
        f"an original (EMAIL in body $.prompt.variables[<key>]{leakguard.AS_WRITTEN}) would have left unmasked"
    )
    assert "bob" not in v.reason


def test_the_audit_calls_an_original_in_a_name_a_leak() -> None:
    body = json.dumps({"model": "m", "prompt": {"id": "p", "variables": {ACME: "x"}}}).encode()
    rep = audit.audit([audit.Record(1, "POST /v1/responses", OPENAI_RESPONSES.name, body, None)], RULES)
    assert [f.field.split(" [")[0] for f in rep.leaks] == ["prompt.variables[<key>] (key)"]


def test_the_apis_own_field_names_are_not_read_as_names() -> None:
    """Only the keys a table does not name are NAMEs: a literal that is an API field name
    (`id`, `variables`) refuses nothing."""
    from disguiselib.rules import mappings, rules

    words = rules.Rules(mappings.from_dict({"literals": {"variables": "vars", "headers": "hdrs", "id": "pk"}}))
    doc = {"model": "m", "prompt": {"id": "p", "variables": {"city": "x"}}, "tools": [_mcp({"a": "1"})]}
    assert leakguard.scan_json(fields.loads(json.dumps(doc)), words, OPENAI_RESPONSES.request_rule) is None
    assert [f.value for f in fields.walk(fields.loads(json.dumps(doc)), OPENAI_RESPONSES.request_rule)
            if f.rule is fields.NAME] == ["city", "a"]  # fmt: skip


def test_an_unknown_member_of_an_object_whose_members_are_kept_as_written_is_read_too() -> None:
    """The guard reads every key the masker keeps as written that the table does not
    name, whatever object it is in (a table declared later included)."""
    from disguiselib.wire.jsonspan import VALUES, Obj

    table = Obj({"known": VALUES}, default=VALUES)  # unknown members' names kept as written
    assert str(leakguard.scan_json(fields.loads(json.dumps({"known": 1, ACME: "v"})), RULES, table)) == \
        f"literal in $[<key>]{leakguard.AS_WRITTEN}"  # fmt: skip


# -- where the provider matches nothing: masked like any key, restored in an answer ---------------


def _shell(env: dict) -> dict:
    return {"type": "local_shell_call", "id": "ls_1", "call_id": "c1", "status": "completed",
            "action": {"type": "exec", "command": ["sh", "-c", "echo $acme_lookup"], "env": env}}  # fmt: skip


def _search(attributes: dict) -> dict:
    return {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"],
            "results": [{"file_id": "file_1", "filename": "a.txt", "attributes": attributes}]}  # fmt: skip


@pytest.mark.parametrize(
    ("item", "at"),
    [(_shell({"acme_lookup": "1", "PATH": "/bin"}), ("action", "env")),
     (_search({ACME: "v", "region": "eu"}), ("results", 0, "attributes"))],
)  # fmt: skip
def test_env_names_and_vector_store_attribute_names_are_masked_and_restored(item: dict, at: tuple) -> None:
    def get(d: dict) -> dict:
        for seg in at:
            d = d[seg]
        return d

    masked, session = mask_body(json.dumps({"model": "m", "input": [item]}).encode(), RESPONSES.request_rule, RULES)
    keys = list(get(json.loads(masked)["input"][0]))
    assert keys[0] == LITERALS["acme_lookup" if "env" in at else ACME] and keys[1] in ("PATH", "region")
    assert leakguard.scan_body(masked, RULES, RESPONSES) is None
    # the model's own call (an answer's output item, a stream's output_item.done) restored keys too
    answer = {"id": "resp_1", "object": "response", "model": "m", "output": [json.loads(masked)["input"][0]]}
    back = json.loads(restore_body(json.dumps(answer).encode(), RESPONSES.response_rule, RULES.restorer({})))
    assert get(back["output"][0]) == get(item)


# -- the property: an original anywhere in any key sent as written is refused ---------------------


@given(st.sampled_from(CASES), st.sampled_from([*sorted(LITERALS), BOB]), st.text(max_size=12), st.text(max_size=12))
@example("responses mcp tool headers", 'C:\\Users\\a "b"', "{", "")  # a key that looks like JSON
@example("bedrock converse promptVariables", ACME, "", "")
def test_an_original_anywhere_in_a_key_sent_as_written_is_found(case: str, orig: str, a: str, b: str) -> None:
    key = a + orig + b
    name, rule, doc, _ = next(x for x in _bodies(key) if x[0] == case)
    h = _scan(rule, doc)
    assert h is not None, (name, key)
    assert leakguard.first(RULES, str(h)) is None  # the message never spells it
