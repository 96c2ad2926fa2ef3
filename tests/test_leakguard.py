"""The outbound leak guard: where it looks, where it deliberately does not, what it says."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib import leakguard
from strategies import LITERALS, RULES

ACME = "Acme Corp"
BOB = "bob@corp.example.com"


def hit(doc: object, untouched: bool = True) -> str | None:
    h = leakguard.scan_body(json.dumps(doc).encode(), RULES, untouched)
    return None if h is None else str(h)


def test_clean_body_passes() -> None:
    assert hit({"model": "m", "messages": [{"role": "user", "content": "Zenith Labs, [EMAIL_1]"}]}) is None


def test_finds_originals_in_values_keys_and_json_text() -> None:
    assert hit({"messages": [{"content": [{"type": "text", "text": f"hi {BOB}"}]}]}) == \
        "EMAIL in body $.messages[0].content[0].text"  # fmt: skip
    assert hit({"tools": [{"input_schema": {"properties": {ACME: {}}}}]}) == \
        "literal in body $.tools[0].input_schema.properties[<key>] (key)"  # fmt: skip
    args = json.dumps({"path": 'C:\\Users\\a "b"'})  # the original only shows once decoded
    assert ('C:\\Users\\a "b"') not in json.dumps(args)
    assert hit({"arguments": args}) == "literal in body $.arguments (JSON text $.path)"


def test_deliberately_untouched_spans_are_not_looked_at() -> None:
    doc = {
        "model": ACME,
        "messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": ACME, "signature": ACME},
            {"type": "redacted_thinking", "data": ACME},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ACME}},
            {"type": "tool_use", "id": ACME, "name": "x", "input": {}},
        ]}],
        "input": [{"type": "reasoning", "encrypted_content": ACME, "summary": [{"text": ACME}]},
                  {"type": "input_image", "image_url": f"data:image/png;base64,{ACME}"}],
    }  # fmt: skip
    assert hit(doc) is None
    assert hit(doc, untouched=False) is not None  # the unknown-endpoint scan looks everywhere
    doc["messages"][0]["content"].append({"type": "document", "source": {"type": "text", "data": ACME}})
    assert hit(doc) == "literal in body $.messages[0].content[4].source.data"


def test_numbers_and_repeated_keys_are_seen() -> None:
    from strategies import make_rules

    rules = make_rules(patterns=[{"name": "CARD", "regex": r"\b4[0-9]{15}\b"}])
    assert str(leakguard.scan_body(b'{"n": 4111111111111111}', rules)) == "CARD in body $.n"
    body = b'{"a": "Acme Corp", "a": "clean"}'  # json.loads would keep only "clean"
    assert str(leakguard.scan_body(body, RULES)) == "literal in body $.a"


def test_url_and_headers_but_not_credentials() -> None:
    assert str(leakguard.scan_url("/v1/x?who=bob%40corp.example.com", RULES)) == "EMAIL in url"
    assert leakguard.scan_url("/v1/messages?beta=true", RULES) is None
    headers = [("x-api-key", BOB), ("authorization", f"Bearer {ACME}"), ("user-agent", "sdk")]
    assert leakguard.scan_headers(headers, RULES) is None
    assert str(leakguard.scan_headers([*headers, ("X-Note", ACME)], RULES)) == "literal in header x-note"


def test_non_json_body_is_scanned_as_text() -> None:
    assert str(leakguard.scan_body(b"--b\r\n" + ACME.encode() + b"\xff\r\n", RULES)) == "literal in body"


@given(st.sampled_from(sorted(LITERALS)), st.text(max_size=20), st.text(max_size=20))
def test_an_original_anywhere_in_a_string_is_found(orig: str, a: str, b: str) -> None:
    assert hit({"messages": [{"content": a + orig + b}]}) is not None


def _api_for(name: str):
    from disguiselib.providers.registry import recognise

    if name.startswith("chat_"):
        return recognise("POST", "/v1/chat/completions")
    if name.startswith("responses_"):
        return recognise("POST", "/v1/responses")
    return recognise("POST", "/v1/messages")


def test_recorded_requests_masked_pass_the_guard(fixtures) -> None:
    """No false alarm on real traffic: every recorded request, with an original
    injected into every text field (thinking too), masked, passes the leak guard; the
    unmasked injected one does not (unless the injection only reached thinking)."""
    from disguiselib.providers.masking import mask_body

    seen = 0
    for f in sorted([*(fixtures / "anthropic").glob("*.request.json"), *(fixtures / "openai").glob("*.request.json")]):
        raw = f.read_bytes()
        injected = raw
        for key in (b'"text":"', b'"content":"', b'"thinking":"', b'"input":"', b'"instructions":"'):
            injected = injected.replace(key, key + b"Acme Corp bob@corp.example.com ")
        masked, _ = mask_body(injected, _api_for(f.name).request_rule, RULES)
        assert leakguard.scan_body(masked, RULES) is None, f.name
        if leakguard.scan_body(injected, RULES) is not None:
            seen += 1
    assert seen >= 20  # the injections were real ones


# -- behaviours a hand mutation sample found unchecked (issue 14) ----------------------


def test_escaped_originals_in_json_text_that_does_not_parse_are_found() -> None:
    """Tool arguments cut short are JSON text that does not parse; the masker reads them
    decoded literal by literal (jsonspan.transform_loose), and so does the leak guard:
    an original spelled with escapes is found there too, cut escape and all."""
    for args in ('{"path": "C:\\\\Users\\\\a \\"b\\"", "more": "x',  # unterminated
                 '{"who": "\\u00dcn\\u00efc\\u00f8d\\u00e9 GmbH", "n": ',  # cut after a member
                 '{"p": "C:\\\\Users\\\\a \\"b\\" \\u00e'):  # cut inside a \\u escape
        try:
            json.loads(args)
        except ValueError:
            pass
        else:
            raise AssertionError(args)
        assert "Ünïcødé" not in args and 'C:\\Users\\a "b"' not in args
        assert hit({"arguments": args}) == "literal in body $.arguments (JSON text)", args
    assert hit({"arguments": '{"path": "C:\\\\Temp\\\\x", "n": '}) is None


def test_a_header_name_holding_an_original_is_a_leak() -> None:
    h = leakguard.scan_headers([("x-trace", "1"), ("x-acme_lookup-id", "7")], RULES)
    assert h is not None and str(h) == "literal in header <name>"
    h = leakguard.scan_headers([("x-user", "bob@corp.example.com")], RULES)
    assert h is not None and str(h) == "EMAIL in header x-user"
    assert leakguard.scan_headers([("x-api-key", "bob@corp.example.com")], RULES) is None


def test_scan_of_an_unknown_endpoint_looks_inside_thinking_and_reasoning() -> None:
    """An endpoint disguise does not transform is scanned whole (untouched=False): an
    original inside a thinking block, its signature, a reasoning item, an id or base64
    data is found; the masker's deliberate blind spots are for bodies it masked."""
    bodies = [
        {"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": f"mail {BOB}"}]}]},
        {"input": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": ACME}]}]},
        {"input": [{"type": "reasoning", "encrypted_content": ACME}]},
        {"id": ACME},
        {"source": {"type": "base64", "data": ACME}},
    ]
    for doc in bodies:
        assert hit(doc, untouched=True) is None, doc
        assert hit(doc, untouched=False) is not None, doc
