"""The field vocabulary every provider shares (base/fields.py): the fail-closed
generic rule, the envelope keys, JSON Schema, shape and vocabulary dispatch. (The field
audit against the SDKs is test_fields_coverage.py and its siblings.)"""

from __future__ import annotations

import base64
import json

from fields_probe import RULES
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib.base import fields, masking
from disguiselib.base.fields import GENERIC, SCHEMA, As, Shape, Vocabulary, obj, plain, read, texts
from disguiselib.rules.rules import Session
from disguiselib.wire import jsonspan
from disguiselib.wire.jsonspan import SKIP, VALUES, Arr, Obj, transform


def upper(rule_root, doc) -> dict:
    """Every string the rule selects, upper-cased (keys too where the rule says)."""
    new, _ = transform(json.dumps(doc), doc, rule_root, lambda v, rule: v.upper())
    return json.loads(new)


def test_generic_masks_every_key_and_value_whatever_it_is_called() -> None:
    """An unknown field is read as whatever it holds (issue 15 case 1): `data`, `id` and
    `type` included, and its keys too (a member's name may be an original)."""
    doc = {"type": "t", "id": "i", "text": "x", "nested": [{"call_id": "c", "note": "n"}],
           "blob": {"type": "image", "data": "b64"}, "key": "v"}  # fmt: skip
    got = upper(GENERIC, doc)
    assert got == {"TYPE": "T", "ID": "I", "TEXT": "X", "NESTED": [{"CALL_ID": "C", "NOTE": "N"}],
                   "BLOB": {"TYPE": "IMAGE", "DATA": "B64"}, "KEY": "V"}  # fmt: skip
    assert upper(GENERIC, {"data": "d"}) == {"DATA": "D"}


def test_an_object_with_known_fields_reads_type_and_cache_control_as_words_and_unknown_members_whole() -> None:
    # the API's words are masked like a setting's (the masker changes one only where it
    # holds an original); an object where a word was expected is unknown: keys too
    rule = obj({"text": VALUES})
    got = upper(rule, {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}, "other": "b", "n": 1})
    assert got == {"type": "TEXT", "text": "A", "cache_control": {"TYPE": "EPHEMERAL"}, "OTHER": "B", "N": 1}


def test_schema_masks_names_prose_and_keyword_values_not_keywords_or_types() -> None:
    schema = {"type": "object", "title": "t", "description": "d", "format": "email", "$id": "https://i/c.json",
              "$schema": "https://s/meta", "$comment": "c",
              "properties": {"name": {"type": "string", "enum": ["a", {"k": "v"}], "description": "x"}},
              "required": ["name"], "items": [{"type": "string", "default": "dv"}],
              "dependencies": {"name": ["other"], "p2": {"properties": {"q": {"type": "string"}}}}}  # fmt: skip
    got = upper(SCHEMA, schema)
    assert got["type"] == "OBJECT"  # the schema language's word: masked where it holds an original
    # every other value is the client's (an internal host in $id): masked, keywords kept
    assert got["format"] == "EMAIL" and got["$id"] == "HTTPS://I/C.JSON" and got["$schema"] == "HTTPS://S/META"
    assert got["title"] == "T" and got["description"] == "D"
    assert "$comment" not in got and got["$COMMENT"] == "C"  # an unknown keyword: as any unknown member
    assert list(got["properties"]) == ["NAME"] and got["properties"]["NAME"]["type"] == "STRING"
    assert got["properties"]["NAME"]["enum"] == ["A", {"K": "V"}]  # user JSON: keys too
    assert got["required"] == ["NAME"] and got["items"] == [{"type": "STRING", "default": "DV"}]
    assert got["dependencies"] == {"NAME": ["OTHER"], "P2": {"properties": {"Q": {"type": "STRING"}}}}


def test_shape_dispatches_on_the_json_type() -> None:
    rule = Obj({"f": Shape(Obj({"a": SKIP}, default=VALUES), Arr(SKIP), VALUES)})
    assert upper(rule, {"f": {"a": "x", "b": "y"}}) == {"f": {"a": "x", "b": "Y"}}
    assert upper(rule, {"f": ["x"]}) == {"f": ["x"]}
    assert upper(rule, {"f": "x"}) == {"f": "X"}


def test_vocabulary_leaves_the_apis_words_and_masks_anything_else() -> None:
    rule = Obj({"choice": Vocabulary(("auto", "none"))})
    assert upper(rule, {"choice": "auto"}) == {"choice": "auto"}
    assert upper(rule, {"choice": "my_tool"}) == {"choice": "MY_TOOL"}


# -- one reader of a string (fields.read): the masker, the leak guard and the audit -------

_ORIG = "bob@corp.example.com"
_B64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
SHAPES = {  # a string in each shape, its rule, how read() reads it
    "text": (lambda t: t, jsonspan.VALUES, None),
    "json": (lambda t: json.dumps({"to": t, "cc": [t]}), jsonspan.JSON_TEXT, As.JSON),
    "loose": (lambda t: '{"to": "' + t.replace("@", "\\u0040") + '", "cc": ', jsonspan.JSON_TEXT, As.LOOSE),
    "base64": (lambda t: _B64(t * 2), GENERIC, As.MEDIA),
    "data-url": (lambda t: "data:text/plain;base64," + _B64(t), GENERIC, As.MEDIA),
    "data-url-json": (lambda t: "data:application/json;base64," + _B64(json.dumps({"to": t})), GENERIC, As.MEDIA),
    "declared": (lambda t: _B64(t), fields.media_text("text/plain"), As.MEDIA),
    "binary": (lambda t: base64.b64encode(b"\x81\xff" + t.encode()).decode(),
               fields.MediaText(fields.base64_codec("application/x-unknown")), As.BINARY),  # fmt: skip
}


def _read_by_texts(v: str, rule) -> list[str]:
    return [t for _, t, _ in texts(v, rule)]


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), before=st.text("ab ,:", max_size=6), after=st.text("ab ,.", max_size=6))
def test_one_reader_read_three_ways(shape: str, before: str, after: str) -> None:
    """read() decides how a string is read; the masker (masking.reads: what its one scan
    looks at, mask_fn: what it masks) and texts() (the leak guard, the audit) follow it:
    the scan looks at every text texts() reports, and what mask_fn leaves holds none."""
    make, rule, how = SHAPES[shape]
    v = make(before + _ORIG + after)
    if how is None:
        assert plain(v, rule)
    else:
        assert not plain(v, rule) and read(v, rule).how is how
    pieces: list[str] = []
    masking.reads(v, rule, None, pieces)
    for t in _read_by_texts(v, rule):
        assert any(t in p for p in pieces), (shape, t, pieces)
    found = [t for t in _read_by_texts(v, rule) if RULES.find(t)]
    masked = masking.as_text(v, masking.mask_fn(RULES, Session())(v, rule, None))
    assert (masked != v) == bool(found), shape
    assert not [t for t in _read_by_texts(masked, rule) if RULES.find(t)], shape


# -- media and what the audit reads (mutation survivors) -------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _masked(api, doc: dict) -> dict:
    from strategies import RULES as ORIGINALS

    raw = json.dumps(doc).encode()
    out, _ = masking.mask_request_body(raw, api, ORIGINALS)
    return json.loads(out)


def test_base64_in_an_unknown_field_is_read_decoded_from_sixteen_characters_on() -> None:
    """An unknown field's base64 (a receiver may decode it) is masked decoded: 16
    characters (12 bytes) is the shortest that is sniffed."""
    from disguiselib.apis.registry import OPENAI_CHAT

    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    got = _masked(OPENAI_CHAT, {**chat, "x_note": _b64("Acme Corp in")})  # 16 characters
    assert base64.b64decode(got["x_note"]) == b"Zenith Labs in"
    # 16 characters with their padding: 10 and 11 bytes (the padding counts; it was not sniffed)
    for text in ("Acme Corp!", "Acme Corp!!"):
        assert len(_b64(text)) == 16
        got = _masked(OPENAI_CHAT, {**chat, "x_note": _b64(text)})
        assert base64.b64decode(got["x_note"]) == text.replace("Acme Corp", "Zenith Labs").encode()
        urlsafe = base64.urlsafe_b64encode(text.encode()).decode()
        got = _masked(OPENAI_CHAT, {**chat, "x_note": urlsafe})
        assert base64.urlsafe_b64decode(got["x_note"]) == text.replace("Acme Corp", "Zenith Labs").encode()


def test_binary_media_passes_untouched_even_where_its_bytes_read_as_text() -> None:
    """A MIME type that says binary is never decoded, in a declared media object and as
    a data: URL in an unknown field alike; the same bytes as text are masked."""
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES, OPENAI_CHAT

    def image(mime: str) -> dict:
        return {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": mime, "data": _b64("Acme Corp")}}]}]}  # fmt: skip

    def data_of(doc: dict) -> str:
        return doc["messages"][0]["content"][0]["source"]["data"]

    assert data_of(_masked(ANTHROPIC_MESSAGES, image("image/png"))) == _b64("Acme Corp")
    assert base64.b64decode(data_of(_masked(ANTHROPIC_MESSAGES, image("text/plain")))) == b"Zenith Labs"
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    png = "data:image/png;base64," + _b64("Acme Corp")
    assert _masked(OPENAI_CHAT, {**chat, "x_note": png})["x_note"] == png
    text = _masked(OPENAI_CHAT, {**chat, "x_note": "data:text/plain;base64," + _b64("Acme Corp")})["x_note"]
    assert text == "data:text/plain;base64," + _b64("Zenith Labs")


def test_the_audit_reads_every_string_of_an_exempt_subtree_with_its_place_and_kind() -> None:
    """What the table exempts (a container's ids, a thinking block's text and signatures,
    repeating a key) is listed string by string for the audit's notes: each key marked as
    a key, each value with its path and the kind that exempts it, in document order, every
    value of a repeated key; a word of the API (a role, a type) and a string where an
    object was expected are masked (kind None), not exempt."""
    from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
    from disguiselib.inspect.audit import table_walk

    doc = fields.loads(
        '{"container": {"id": "c1", "skills": [{"skill_id": "Acme Corp", "version": "1"}, "s2"]}, "messages": '
        '[{"role": "assistant", "content": [{"type": "thinking", "thinking": "Acme Corp", "signature": "a", '
        '"signature": "b"}]}]}'
    )
    got = [(w, t, k) for w, t, k, _ in table_walk(doc, MESSAGES_REQUEST)]
    th = "messages[0].content[0]"
    assert got == [
        ("container (key)", "container", "metadata"), ("messages (key)", "messages", "metadata"),
        ("container.id (key)", "id", "metadata"), ("container.skills (key)", "skills", "metadata"),
        ("container.id", "c1", "identifier"),
        ("container.skills[0].skill_id (key)", "skill_id", "metadata"),
        ("container.skills[0].version (key)", "version", "metadata"),
        ("container.skills[0].skill_id", "Acme Corp", "identifier"),
        ("container.skills[0].version", "1", "identifier"), ("container.skills[1]", "s2", None),
        ("messages[0].role (key)", "role", "metadata"), ("messages[0].content (key)", "content", "metadata"),
        ("messages[0].role", "assistant", None),
        (f"{th}.type (key)", "type", "metadata"), (f"{th}.thinking (key)", "thinking", "metadata"),
        (f"{th}.signature (key)", "signature", "metadata"), (f"{th}.signature (key)", "signature", "metadata"),
        (f"{th}.type", "thinking", None), (f"{th}.thinking", "Acme Corp", "opaque"),
        (f"{th}.signature", "a", "opaque"), (f"{th}.signature", "b", "opaque"),
    ]  # fmt: skip


def test_a_member_a_media_object_does_not_know_is_masked_keys_and_all() -> None:
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES

    src = {"type": "base64", "media_type": "image/png", "data": _b64("x"), "Acme Corp": {"Acme Corp": "Acme Corp"}}
    doc = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "image", "source": src}]}]}
    got = _masked(ANTHROPIC_MESSAGES, doc)["messages"][0]["content"][0]["source"]
    known = {k: v for k, v in src.items() if k != "Acme Corp"}
    assert got == {**known, "Zenith Labs": {"Zenith Labs": "Zenith Labs"}}


def test_the_leak_guard_reads_a_value_with_its_key_exactly_where_the_masker_does() -> None:
    """A rule anchored on a member name meets a value with its key only where the key
    is the user's (a schema's property names, an unknown member), not in a field the
    table knows (a schema's `title`): the guard reads the masked body the same way, so
    it never refuses what the masker sent."""
    from disguiselib import leakguard
    from disguiselib.apis.registry import OPENAI_CHAT
    from disguiselib.rules.mappings import from_dict
    from disguiselib.rules.rules import Rules

    rules = Rules(from_dict({"patterns": [{"name": "TITLED", "regex": '"title": "(?P<v>sec-[0-9]+)"'}]}))
    schema = {"type": "object", "title": "sec-1", "properties": {"title": {"type": "string", "title": "sec-2"}}}
    doc = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "x": {"title": "sec-3"},
           "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}]}  # fmt: skip
    out, _ = masking.mask_request_body(json.dumps(doc).encode(), OPENAI_CHAT, rules)
    got = json.loads(out)
    assert got["x"] == {"title": "[TITLED_1]"}
    params = got["tools"][0]["function"]["parameters"]
    # a property named `title` is the user's key, but its value is an object: the known
    # `title` inside it is read alone, as the schema's own `title` is
    assert params["title"] == "sec-1" and params["properties"]["title"]["title"] == "sec-2"
    assert leakguard.scan_body(out, rules, OPENAI_CHAT, "application/json") is None


def test_the_leak_guard_says_where_in_json_text_an_original_is_and_reads_it_as_the_model_does() -> None:
    """Tool arguments are JSON text: an original in it is found decoded, numbers included
    (the masker cannot turn a number into a string: refused), in a bare JSON string, in
    text cut short (read literal by literal) and in JSON nested too deeply to parse (read
    as written); the place names the spot inside the JSON text."""
    from disguiselib import leakguard
    from disguiselib.apis.registry import OPENAI_CHAT
    from disguiselib.rules.mappings import from_dict
    from disguiselib.rules.rules import Rules

    rules = Rules(from_dict({"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [
        {"name": "CARD", "regex": "4111[0-9]{12}"}, {"name": "GEO", "regex": "51\\.50[0-9]+"}]}))  # fmt: skip
    at = "body $.messages[0].tool_calls[0].function.arguments"

    def hit(arguments: str) -> str:
        body = json.dumps({"model": "m", "messages": [{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]}).encode()  # fmt: skip
        return str(leakguard.scan_body(body, rules, OPENAI_CHAT, "application/json"))

    assert hit('{"card": 4111111111111111}') == f"CARD in {at} (JSON text $.card)"
    assert hit('{"lat": 51.5072}') == f"GEO in {at} (JSON text $.lat)"  # a number's own text
    assert hit('["Acme Corp"]') == f"literal in {at} (JSON text $[0])"
    assert hit('"Acme\\u0020Corp"') == f"literal in {at} (JSON text)"
    assert hit('{"a": "Acme\\u0020Corp" ') == f"literal in {at} (JSON text)"
    assert hit("[" * 5000 + '"Acme Corp"' + "]" * 5000) == f"literal in {at}"
    assert hit('{"a b": {"c": "Acme Corp"}}') == f'literal in {at} (JSON text $["a b"].c)'  # a key no name


def test_media_is_read_as_its_type_says() -> None:
    """JSON media (base64 of application/json) is read as JSON, escapes decoded; base64
    in an unknown field whose bytes are not text passes as it came."""
    from disguiselib.apis.registry import GOOGLE_GEMINI, OPENAI_CHAT
    from disguiselib.rules.mappings import from_dict
    from disguiselib.rules.rules import Rules

    for doc, want in (('{"k": "Acme\\u0020Corp"}', b'{"k": "Zenith Labs"}'), ('"Acme\\u0020Corp"', b'"Zenith Labs"')):
        part = {"inlineData": {"mimeType": "application/json", "data": _b64(doc)}}
        got = _masked(GOOGLE_GEMINI, {"contents": [{"role": "user", "parts": [part]}]})
        assert base64.b64decode(got["contents"][0]["parts"][0]["inlineData"]["data"]) == want
    blob = base64.b64encode(bytes(range(200, 230))).decode()
    chat = {"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}], "x_blob": blob}
    assert _masked(OPENAI_CHAT, chat)["x_blob"] == blob
    # base64-looking text whose bytes are not text is read as the text it is
    cards = Rules(from_dict({"patterns": [{"name": "CARD", "regex": "4111[0-9]{12}"}]}))
    raw = json.dumps({**chat, "x_blob": "4111111111111111////"}).encode()
    out, _ = masking.mask_request_body(raw, OPENAI_CHAT, cards)
    assert json.loads(out)["x_blob"] == "[CARD_1]////"


def test_a_rule_that_matches_a_whole_value_meets_a_value_read_alone() -> None:
    """A value no key is read with (a known field, an array item) is read as it is,
    nothing around it: a rule anchored on the value's start and end finds it, in the
    masker and in the leak guard alike."""
    from disguiselib import leakguard
    from disguiselib.apis.registry import OPENAI_CHAT
    from disguiselib.rules.mappings import from_dict
    from disguiselib.rules.rules import Rules

    rules = Rules(from_dict({"patterns": [{"name": "TICKET", "regex": "^ticket-[0-9]+$"}]}))
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": "ticket-123"}]}).encode()
    out, _ = masking.mask_request_body(raw, OPENAI_CHAT, rules)
    assert json.loads(out)["messages"][0]["content"] == "[TICKET_1]"
    assert str(leakguard.scan_request("/v1/x", [], b'["ticket-123"]', rules)) == "TICKET in body $[0]"


def test_the_audit_reads_an_exempt_array_too() -> None:
    from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
    from disguiselib.inspect.audit import table_walk

    doc = fields.loads('{"messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "text", '
                       '"data": "x", "media_type": "text/plain"}, "citations": ["Acme Corp"]}]}]}')  # fmt: skip
    got = [(w, t, k) for w, t, k, _ in table_walk(doc, MESSAGES_REQUEST)]
    # an array where the API's word was expected: unknown content, masked (no kind exempts it)
    assert ("messages[0].content[0].citations[0]", "Acme Corp", None) in got
