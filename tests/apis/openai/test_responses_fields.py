"""The OpenAI Responses tables (apis/openai/responses_fields.py): what each field of a
request, a response object and an input-items listing is, as the masker, the restorer
and the leak guard read it.

Recorded requests and responses (tests/fixtures/real/openai) are walked through the
tables and checked against the contract stated here field by field: ids are ids,
reasoning is opaque, the API's words are metadata, tool arguments are JSON text, what
the model reads or writes is text, and anything else fails closed (masked). Then the
same bodies with an original (request) or a disguise (response) in every string go
through the real masker and restorer: each string changes exactly when its kind says.
"""

from __future__ import annotations

import base64
import json

from disguiselib.apis.openai.chat import CHAT_REQUEST
from disguiselib.apis.openai.responses_fields import INPUT_ITEMS_LIST, RESPONSE_OBJECT, RESPONSES_REQUEST
from disguiselib.base import fields
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.wire.sse import Framer
from strategies import RULES

EMAIL = "bob@corp.example.com"
IMG = "data:image/png;base64,iVBORAcme Corp=="

# The model name and, in a response, its status: the API's own words and numbers.
API_WORDS = {"model", "object", "created_at", "completed_at", "status", "usage"}
# The request's settings: the API reads them, but the client wrote them: masked as
# settings (its numbers pass, a word or key changes only where it holds an original), and
# restored where the response echoes them (its `reasoning` there: untouched).
SETTINGS = {
    "stream", "temperature", "top_p", "max_output_tokens", "max_tool_calls", "parallel_tool_calls",
    "include", "store", "reasoning", "service_tier", "truncation", "background", "prompt_cache_retention",
    "top_logprobs", "stream_options",
}  # fmt: skip


def mask(doc, rule=RESPONSES_REQUEST):
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    out, session = mask_body(raw, rule, RULES)
    return json.loads(out), session.placeholders, out


def segments(path: object) -> list:
    out = []
    while path is not None:
        path, seg = path  # type: ignore[misc]
        out.append(seg)
    return out[::-1]


def exempt_kind(segs: list, doc: dict, response: bool, value: str) -> str | None:
    """The contract: the kind that exempts this string from masking (restoring), or None
    where it must be masked (restored)."""
    top, rest = segs[0], segs[1:]
    if top == "model" and not rest:
        return "model"
    if top in API_WORDS:
        return "metadata"
    if top in SETTINGS:  # (a setting's numbers pass as they are)
        return "opaque" if (top == "reasoning" and response) else "metadata" if type(value) is fields.Num else None
    if top == "tool_choice":  # the API's words, or the name of a tool
        return "metadata" if value in ("auto", "none", "required") or rest[-1:] == ["type"] else None
    if top in ("id", "previous_response_id"):
        return "identifier"
    if top == "text":  # output settings: the format's type and verbosity are the API's words
        return "metadata" if rest[-1] in ("type", "verbosity", "strict") else None
    if top in ("input", "output") and len(rest) >= 2 and isinstance(doc[top][rest[0]], dict):
        item = doc[top][rest[0]]
        kind = item.get("type", "message")
        field = rest[1]
        if kind == "reasoning":
            return "opaque"  # goes back exactly as it came
        if field in ("id", "call_id"):
            return "identifier"
        if field == "type" or (kind == "message" and field in ("role", "status")):
            return "metadata"
        if kind == "message" and field == "content" and len(rest) == 4 and rest[3] in ("type", "logprobs"):
            return "metadata"
        return None
    if top == "tools" and len(rest) >= 2:
        # a function tool: its type is the API's word; in its JSON Schema the keywords'
        # values ("type": "string") are vocabulary, names and descriptions are masked
        if rest[1] in ("type", "strict") or (rest[1] == "parameters" and rest[-1] in ("type", "additionalProperties")):
            return "metadata"
        return None
    return None


def check_walk(doc: dict, root, response: bool) -> dict[str, int]:
    """Every string and key of doc read by the table: exempt exactly where the contract
    says, with the kind it names; masked everywhere else. Returns counts per kind."""
    seen: dict[str, int] = {}
    for f in fields.walk(doc, root, exempt=True):
        kind = fields.kind_of(f)
        seen[kind] = seen.get(kind, 0) + 1
        segs = segments(f.path)
        where = fields.path_text(f.path)
        if f.is_key:
            # keys are the API's field names, except the names a JSON Schema declares
            # and the members of what the table does not know
            declared = len(segs) >= 2 and segs[-2] == "properties"
            if declared or kind == "key":
                assert fields.selected(f) == (declared or exempt_kind(segs, doc, response, f.value) is None), where
            continue
        want = exempt_kind(segs, doc, response, f.value)
        if want is None:
            assert fields.selected(f), f"{where} ({kind}) is not masked"
        elif want == "metadata" and type(f.value) is str:
            # the API's word: masked like a value (changed only where it holds an
            # original; in an answer it passes as it came: restore.restore_fn), or one of
            # a vocabulary's known words (fields.Vocabulary: `"tool_choice": "auto"`)
            known = f.rule is fields.META
            assert (fields.selected(f) or known) and kind == want, f"{where}: {kind}, the contract says a masked word"
        else:
            assert not fields.selected(f) and kind == want, f"{where}: {kind}, the contract says {want}"
    return seen


def _requests(fixtures):
    return sorted((fixtures / "openai").glob("responses_*.request.json"))


def _responses(fixtures) -> list[tuple[str, bytes]]:
    """The recorded response objects: whole bodies, and each stream's final response."""
    out = [(f.name, f.read_bytes()) for f in sorted((fixtures / "openai").glob("responses_*.json"))
           if not f.name.endswith(".request.json")]  # fmt: skip
    for f in sorted((fixtures / "openai").glob("responses_*.sse")):
        for ev in Framer().feed(f.read_bytes()):
            d = json.loads(ev.data) if ev.data and ev.data != "[DONE]" else {}
            if d.get("type") == "response.completed":
                out.append((f.name, json.dumps(d["response"]).encode()))
    return out


# -- recorded bodies, walked ---------------------------------------------------------------


def test_recorded_requests_are_read_as_the_contract_says(fixtures) -> None:
    seen: dict[str, int] = {}
    for f in _requests(fixtures):
        for kind, n in check_walk(fields.loads(f.read_text()), RESPONSES_REQUEST, response=False).items():
            seen[kind] = seen.get(kind, 0) + n
    # the fixtures hold every kind the masker relies on in a Responses request
    assert {"text", "json-text", "identifier", "opaque", "metadata", "key", "unknown"} <= set(seen), seen


def test_recorded_responses_are_read_as_the_contract_says(fixtures) -> None:
    responses = _responses(fixtures)
    assert len(responses) >= 6
    seen: dict[str, int] = {}
    for _, raw in responses:
        for kind, n in check_walk(fields.loads(raw.decode()), RESPONSE_OBJECT, response=True).items():
            seen[kind] = seen.get(kind, 0) + n
    assert {"text", "json-text", "identifier", "opaque", "metadata"} <= set(seen), seen


def _inject(x: object, word: str) -> object:
    """Every string value prefixed with word, but the `type` that tells what an object
    is (keys kept)."""
    if isinstance(x, str):
        return word + x
    if isinstance(x, list):
        return [_inject(y, word) for y in x]
    if isinstance(x, dict):
        return {k: y if k == "type" else _inject(y, word) for k, y in x.items()}
    return x


def _pairs(a: object, b: object, path: tuple = ()):
    """The string values of two documents of one shape, side by side, with their paths."""
    if isinstance(a, str):
        yield path, a, b
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _pairs(x, y, (*path, i))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            yield from _pairs(a[k], b[k], (*path, k))


def _linked(path: tuple) -> object:
    node = None
    for seg in path:
        node = (node, seg)
    return node


def test_an_original_in_every_string_of_a_recorded_request_is_masked_where_the_table_says(fixtures) -> None:
    for f in _requests(fixtures):
        raw = f.read_bytes()
        out, _ = mask_body(raw, RESPONSES_REQUEST, RULES)
        assert out == raw, f.name  # nothing to mask: byte-identical
        doc = json.loads(raw)
        injected = _inject(doc, "Acme Corp ")
        masked, _, _ = mask(injected)
        for path, sent, got in _pairs(injected, masked):
            kind = exempt_kind(list(path), doc, False, sent)
            if kind == "metadata":  # the API's word: masked (where _inject wrote into it)
                assert "Acme Corp" not in got, (f.name, path)
            elif kind is None:
                assert "Acme Corp" not in got and got.startswith("Zenith Labs "), (f.name, path)
            else:
                assert got == sent, (f.name, path)


def test_a_disguise_in_every_string_of_a_recorded_response_is_restored_where_the_table_says(fixtures) -> None:
    r = RULES.restorer({})
    tag = "Zenith Labs [[reply_to_current]]"
    how = {"exempt": 0, "prose": 0, "json": 0, "value": 0}
    for name, raw in _responses(fixtures):
        doc = json.loads(raw)
        assert restore_body(raw, RESPONSE_OBJECT, r) == raw, name  # nothing to restore: byte-identical
        injected = _inject(doc, tag)
        rules = {tuple(segments(f.path)): f.rule for f in fields.walk(fields.loads(json.dumps(injected)), RESPONSE_OBJECT)}
        out = json.loads(restore_body(json.dumps(injected).encode(), RESPONSE_OBJECT, r))
        for path, sent, got in _pairs(injected, out):
            if exempt_kind(list(path), injected, True, sent) is not None:
                how["exempt"] += 1
                assert got == sent, (name, path)
            elif rules[path].prose:  # what the model wrote: strip rules apply
                how["prose"] += 1
                assert got == "Acme Corp " + sent.removeprefix(tag), (name, path)
            elif rules[path].json_text:  # tool arguments: JSON text (no longer parsing), restored as such
                how["json"] += 1
                assert got == "Acme Corp [[reply_to_current]]" + sent.removeprefix(tag), (name, path)
            else:  # names, unknown members: restored as values
                how["value"] += 1
                assert got == "Acme Corp [[reply_to_current]]" + sent.removeprefix(tag), (name, path)
    assert min(how.values()) > 0, how


def test_model_output_is_prose_and_echoed_input_is_not() -> None:
    """Output text and refusals are what the model wrote (strip rules apply when they are
    restored); the request's own fields echoed in a response are restored as values."""
    doc = {"id": "resp_1", "instructions": "Zenith Labs [[reply_to_current]]", "output": [
        {"type": "message", "id": "m", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "Zenith Labs [[reply_to_current]]", "annotations": [
                {"type": "file_citation", "file_id": "file_Zenith Labs", "filename": "Zenith Labs.txt"}]},
            {"type": "refusal", "refusal": "no [[reply_to_current]]Zenith Labs"}]},
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "Zenith Labs"}],
         "encrypted_content": "Zenith Labs=="},
        {"type": "function_call", "id": "fc", "call_id": "c", "name": "crm_lookup",
         "arguments": '{"thread_id": "Zenith Labs [[reply_to_current]]"}'},
    ]}  # fmt: skip
    out = json.loads(restore_body(json.dumps(doc).encode(), RESPONSE_OBJECT, RULES.restorer({})))
    msg = out["output"][0]["content"]
    assert msg[0]["text"] == "Acme Corp " and msg[1]["refusal"] == "no Acme Corp"
    assert msg[0]["annotations"][0] == {"type": "file_citation", "file_id": "file_Zenith Labs", "filename": "Acme Corp.txt"}
    assert out["instructions"] == "Acme Corp [[reply_to_current]]"
    assert out["output"][1] == doc["output"][1]  # reasoning: untouched
    assert out["output"][2]["name"] == "acme_lookup"
    assert json.loads(out["output"][2]["arguments"]) == {"session_id": "Acme Corp [[reply_to_current]]"}


# -- requests: the shapes of input items, tools and files -----------------------------------


def test_responses_request() -> None:
    doc = {
        "model": "gpt-5", "instructions": "Serve Acme Corp", "previous_response_id": "resp_Acme Corp",
        "input": [
            {"role": "user", "content": f"Hi from {EMAIL}"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Acme Corp"}, {"type": "input_image", "image_url": IMG}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Acme Corp"}],
             "encrypted_content": "gAAAAAcme Corp"},
            {"type": "function_call", "id": "fc_Acme Corp", "call_id": "call_Acme Corp", "name": "acme_lookup",
             "arguments": '{"session_id":"Acme Corp"}'},
            {"type": "function_call_output", "call_id": "call_Acme Corp", "output": "Acme Corp ok"},
            {"type": "custom_tool_call", "call_id": "c", "name": "acme_lookup", "input": "Acme Corp"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Acme Corp", "annotations": []}]},
        ],
        "tools": [{"type": "function", "name": "acme_lookup", "description": "Acme Corp",
                   "parameters": {"type": "object", "properties": {"session_id": {"type": "string"}}}},
                  {"type": "web_search"}],
        "tool_choice": {"type": "function", "name": "acme_lookup"},
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {
            "type": "object", "properties": {"session_id": {"type": "string", "description": "Acme Corp"}}}}},
    }  # fmt: skip
    out, ph, _ = mask(doc, RESPONSES_REQUEST)
    (bob,) = ph  # it continues a stored response: a keyed number (base/prompt.numbers_key)
    assert ph == {bob: EMAIL} and len(bob) == len("[EMAIL_]") + 9
    assert out["instructions"] == "Serve Zenith Labs" and out["previous_response_id"] == "resp_Acme Corp"
    i = out["input"]
    assert i[0]["content"] == f"Hi from {bob}"
    assert i[1]["content"][0]["text"] == "Zenith Labs" and i[1]["content"][1]["image_url"] == IMG
    assert i[2] == doc["input"][2]  # reasoning items: never touched
    assert i[3]["id"] == "fc_Acme Corp" and i[3]["call_id"] == "call_Acme Corp"
    assert i[3]["name"] == "crm_lookup" and i[3]["arguments"] == '{"thread_id":"Zenith Labs"}'
    assert i[4]["output"] == "Zenith Labs ok" and i[4]["call_id"] == "call_Acme Corp"
    assert i[5]["name"] == "crm_lookup" and i[5]["input"] == "Zenith Labs"
    assert i[6]["content"][0]["text"] == "Zenith Labs"
    t = out["tools"][0]
    assert t["name"] == "crm_lookup" and t["description"] == "Zenith Labs"
    assert list(t["parameters"]["properties"]) == ["thread_id"]
    assert out["tool_choice"]["name"] == "crm_lookup"
    assert out["text"]["format"]["schema"]["properties"] == {"thread_id": {"type": "string", "description": "Zenith Labs"}}


def test_recorded_requests_with_originals_injected(fixtures) -> None:
    for f in _requests(fixtures):
        raw = f.read_bytes()
        injected = raw.replace(b'"content":"', b'"content":"Acme Corp ').replace(b'"text":"', b'"text":"Acme Corp ')
        injected = injected.replace(b'"output":"', b'"output":"Acme Corp ').replace(b'"instructions":"', b'"instructions":"Acme Corp ')
        out, _ = mask_body(injected, RESPONSES_REQUEST, RULES)
        doc = json.loads(out)
        visible = json.dumps([x for x in doc.get("input", []) if not (isinstance(x, dict) and x.get("type") == "reasoning")])
        assert "Acme Corp" not in visible, f.name
        for item in json.loads(injected).get("input", []):
            if isinstance(item, dict) and item.get("type") == "reasoning":
                assert item in doc["input"], f.name


def test_an_input_file_is_read_by_its_data_url_or_its_file_name() -> None:
    text = base64.b64encode(b"notes of Acme Corp").decode()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n Acme Corp").decode()
    doc = {"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "notes.txt", "file_data": text},  # bare base64: the name says text
        {"type": "input_file", "filename": "logo.png", "file_data": png},  # the name says binary
        {"type": "input_file", "filename": "Acme Corp.pdf", "file_data": "data:text/plain;base64," + text},
        {"type": "input_file", "file_id": "file-Acme Corp"},
    ]}]}  # fmt: skip
    out, _, _ = mask(doc)
    parts = out["input"][0]["content"]
    assert base64.b64decode(parts[0]["file_data"]) == b"notes of Zenith Labs"  # decoded, masked, encoded again
    assert parts[1]["file_data"] == png  # binary media: untouched
    assert parts[2]["filename"] == "Zenith Labs.pdf"
    assert base64.b64decode(parts[2]["file_data"].split(",", 1)[1]) == b"notes of Zenith Labs"
    assert parts[3]["file_id"] == "file-Acme Corp"  # an id


def test_items_without_a_type_are_messages_and_unknown_items_fail_closed() -> None:
    doc = {"model": "m", "input": [
        {"role": "user", "status": "completed", "content": [{"type": "input_text", "text": "Acme Corp"}]},
        {"type": "some_future_item", "id": "x_Acme Corp", "note": "Acme Corp", "Acme Corp": 1},
        {"type": "compaction", "id": "cmp", "encrypted_content": "Acme Corp"},
        {"type": "item_reference", "id": "msg_Acme Corp"},
    ]}  # fmt: skip
    out, _, _ = mask(doc)
    i = out["input"]
    assert i[0] == {"role": "user", "status": "completed", "content": [{"type": "input_text", "text": "Zenith Labs"}]}
    # a type the table does not know: every key and value masked, its id too (no table says it is one)
    assert i[1] == {"type": "some_future_item", "id": "x_Zenith Labs", "note": "Zenith Labs", "Zenith Labs": 1}
    assert i[2] == doc["input"][2]  # compaction: opaque, like reasoning
    assert i[3] == {"type": "item_reference", "id": "msg_Acme Corp"}


def test_tools_built_in_namespaced_and_carried_by_items() -> None:
    doc = {"model": "m", "tools": [
        {"type": "mcp", "server_label": "Acme Corp", "server_url": "https://mcp.example/Acme Corp",
         "headers": {"X-Acme Corp": "Bearer Acme Corp"}, "allowed_tools": ["acme_lookup"], "name": "Acme Corp"},
        {"type": "file_search", "vector_store_ids": ["vs_1"], "filters": {"type": "eq", "key": "k", "value": "Acme Corp"},
         "ranking_options": {"file_id": "file_Acme Corp"}, "file_id": "file_Acme Corp"},
        {"type": "namespace", "name": "Acme Corp", "description": "Acme Corp", "tools": [
            {"type": "function", "name": "acme_lookup", "parameters": {"type": "object", "properties": {
                "session_id": {"type": "string"}}}}]},
    ], "input": [
        {"type": "additional_tools", "id": "at_1", "tools": [{"type": "custom", "name": "acme_lookup", "description": "Acme Corp"}]},
        {"type": "configuration_update", "id": "cu_1", "text": {"format": {"type": "json_schema", "name": "Acme Corp",
                                                                         "schema": {"type": "object"}}}},
    ]}  # fmt: skip
    out, _, _ = mask(doc)
    mcp, search, ns = out["tools"]
    assert mcp["server_label"] == "Zenith Labs" and mcp["server_url"] == "https://mcp.example/Zenith Labs"
    assert mcp["headers"] == {"X-Acme Corp": "Bearer Zenith Labs"}  # header names the client's, values masked
    # a built-in tool's name: the API's word, masked only where it holds an original
    assert mcp["allowed_tools"] == ["crm_lookup"] and mcp["name"] == "Zenith Labs"
    # its settings fail closed, but a file's id inside them is an id
    assert search["filters"]["value"] == "Zenith Labs" and search["ranking_options"]["file_id"] == "file_Acme Corp"
    assert search["file_id"] == "file_Acme Corp"  # on the tool itself too
    assert ns["name"] == "Zenith Labs" and ns["description"] == "Zenith Labs"
    assert ns["tools"][0]["name"] == "crm_lookup" and list(ns["tools"][0]["parameters"]["properties"]) == ["thread_id"]
    assert out["input"][0]["tools"] == [{"type": "custom", "name": "crm_lookup", "description": "Zenith Labs"}]
    assert out["input"][0]["id"] == "at_1"
    assert out["input"][1]["text"]["format"]["name"] == "Zenith Labs"


# -- retrievals: input items listed back --------------------------------------------------------


def test_listed_items_are_read_as_input_or_as_output() -> None:
    """input_items lists what went in (a user message: values, no strip rules) and what
    the model produced (an assistant message: its output text, strip rules apply)."""
    doc = {"object": "list", "first_id": "msg_Zenith Labs", "last_id": "fc", "has_more": False, "data": [
        {"type": "message", "id": "msg_Zenith Labs", "role": "user", "content": [
            {"type": "input_text", "text": "Zenith Labs [[reply_to_current]]"}]},
        {"type": "message", "id": "m2", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "Zenith Labs [[reply_to_current]]", "annotations": []}]},
        {"type": "function_call", "id": "fc", "call_id": "c", "name": "crm_lookup", "arguments": '{"thread_id": 1}'},
        {"type": "reasoning", "id": "rs", "encrypted_content": "Zenith Labs"},
    ]}  # fmt: skip
    out = json.loads(restore_body(json.dumps(doc).encode(), INPUT_ITEMS_LIST, RULES.restorer({})))
    d = out["data"]
    assert out["first_id"] == "msg_Zenith Labs" and d[0]["id"] == "msg_Zenith Labs"
    assert d[0]["content"][0]["text"] == "Acme Corp [[reply_to_current]]"
    assert d[1]["content"][0]["text"] == "Acme Corp "
    assert d[2]["name"] == "acme_lookup" and json.loads(d[2]["arguments"]) == {"session_id": 1}
    assert d[3] == doc["data"][3]
    assert out["has_more"] is False


def test_a_chat_table_is_not_a_responses_table() -> None:
    """The Responses request's fields mean nothing to the Chat table (it reads them as
    unknown members, masked whole): the tables are not interchangeable."""
    doc = {"model": "m", "input": [{"type": "function_call", "call_id": "call_Acme Corp", "name": "x",
                                    "arguments": "{}"}]}  # fmt: skip
    assert mask(doc, RESPONSES_REQUEST)[0]["input"][0]["call_id"] == "call_Acme Corp"
    assert mask(doc, CHAT_REQUEST)[0]["input"][0]["call_id"] == "call_Zenith Labs"
