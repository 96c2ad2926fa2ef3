"""The outbound leak guard: where it looks (what the API's table says the masker masks;
everything for an endpoint no table describes), where it deliberately does not, what
it says."""

from __future__ import annotations

import base64
import functools
import gzip
import json
from urllib.parse import quote, quote_plus, unquote_plus

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.apis.registry import recognise
from strategies import LITERALS, RULES, make_rules

ACME = "Acme Corp"
BOB = "bob@corp.example.com"
ANTHROPIC = recognise("POST", "/v1/messages")
CHAT = recognise("POST", "/v1/chat/completions")
RESPONSES = recognise("POST", "/v1/responses")
GEMINI = recognise("POST", "/v1beta/models/gemini-2.5-flash:generateContent")


def hit(doc: object, api=ANTHROPIC, ctype: str = "") -> str | None:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    h = leakguard.scan_body(body, RULES, api, ctype)
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
    assert hit({"arguments": args}, None) == "literal in body $.arguments (JSON text $.path)"
    msg = {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": args}}]}]}
    assert hit(msg, CHAT) == "literal in body $.messages[0].tool_calls[0].function.arguments (JSON text $.path)"


DOTTED = make_rules(literals={**LITERALS, "build.internal.acme.io": "host-a.example"})


def test_a_hits_path_never_spells_an_original_its_keys_spell_together() -> None:
    """Keys clean alone can join (with `.`) into an original: the path a message names is
    checked whole, and keys are withheld until it is clean."""

    def at(doc: object) -> str:
        h = leakguard.scan_body(json.dumps(doc).encode(), DOTTED, None)
        assert h is not None and leakguard.first(DOTTED, str(h)) is None, h
        return str(h)

    assert at({"build": {"internal": {"acme": {"io": ACME}}}}) == "literal in body $[<key>][<key>][<key>][<key>]"
    assert at({"build": {"internal.acme": {"io": ACME}}}) == 'literal in body $.build["internal.acme"].io'  # no join
    # a key inside JSON text (fields.texts names its path): that path is left out
    assert at({"x": json.dumps({ACME: 1})}) == "literal in body $.x (JSON text)"
    assert at({"x": json.dumps({"build": {"internal": {"acme": {"io": ACME}}}})}) == "literal in body $.x (JSON text)"
    # clean joined: shown as they are
    assert at({"build": {"internal": ACME}}) == "literal in body $.build.internal"
    assert at({"x": json.dumps({"a": [ACME]})}) == "literal in body $.x (JSON text $.a[0])"


def test_a_readings_place_and_the_path_never_join_into_an_original() -> None:
    rules = make_rules(literals={**LITERALS, "body $.x": "payload"})
    h = leakguard.scan_body(json.dumps({"x": ACME}).encode(), rules, None)
    assert h is not None and leakguard.first(rules, str(h)) is None and str(h) == "literal in body"
    assert leakguard.json_place(DOTTED, ((((None, "build"), "internal"), "acme"), "io")) == "$[<key>][<key>][<key>][<key>]"


def test_what_the_table_exempts_is_not_looked_at() -> None:
    anthropic = {
        "model": ACME,
        "messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": ACME, "signature": ACME},
            {"type": "redacted_thinking", "data": ACME},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ACME}},
            {"type": "tool_use", "id": ACME, "name": "x", "input": {}},
        ]}],
    }  # fmt: skip
    assert hit(anthropic) is None
    assert hit(anthropic, None) is not None  # the unknown-endpoint scan looks everywhere
    anthropic["messages"][0]["content"].append({"type": "document", "source": {"type": "text", "data": ACME}})
    assert hit(anthropic) == "literal in body $.messages[0].content[4].source.data"
    responses = {
        "input": [{"type": "reasoning", "encrypted_content": ACME, "summary": [{"text": ACME}]},
                  {"role": "user", "content": [{"type": "input_image", "image_url": f"data:image/png;base64,{ACME}"}]}],
    }  # fmt: skip
    assert hit(responses, RESPONSES) is None
    assert hit(responses, None) is not None


def test_unknown_fields_are_looked_at_whatever_their_key() -> None:
    """Issue 15 case 1: `data` and `id` in a field no table knows hold what they hold."""
    docs = {"documents": [{"id": BOB, "data": {"title": ACME, "snippet": "x"}}]}
    assert hit({"messages": [], **docs}, CHAT) == "EMAIL in body $.documents[0].id"
    assert hit({"messages": [], "diagnostics": {"data": ACME}}) == "literal in body $.diagnostics.data"
    assert hit({"contents": [], "labels": {"data": ACME}}, GEMINI) == "literal in body $.labels.data"
    # a key of an unknown object too (the masker masks it)
    assert hit({"messages": [], "metadata": {ACME: "v"}}) == "literal in body $.metadata[<key>] (key)"


def test_gemini_signed_and_thought_parts_pass() -> None:
    """Issue 15 case 9: thoughtSignature (both spellings) and thought parts are opaque."""
    parts = [
        {"text": "ok", "thoughtSignature": base64.b64encode(ACME.encode()).decode() + ACME},
        {"text": "ok", "thought_signature": ACME},
        {"text": f"I think about {ACME}", "thought": True},
    ]
    assert hit({"contents": [{"role": "model", "parts": parts}]}, GEMINI) is None
    parts.append({"text": ACME})
    assert hit({"contents": [{"role": "model", "parts": parts}]}, GEMINI) == \
        "literal in body $.contents[0].parts[3].text"  # fmt: skip


def test_text_media_is_read_decoded() -> None:
    """Issue 15 case 4: base64 of a text MIME type is what the model reads."""
    b64 = base64.b64encode(f"name,mail\nAcme,{BOB}\n".encode()).decode()
    doc = {"contents": [{"parts": [{"inlineData": {"mimeType": "text/csv", "data": b64}}]}]}
    assert hit(doc, GEMINI) == "EMAIL in body $.contents[0].parts[0].inlineData.data (decoded Base64('text/csv'))"
    doc["contents"][0]["parts"][0]["inlineData"]["mimeType"] = "image/png"
    assert hit(doc, GEMINI) is None  # binary media: exempt (the model does not read it as text)
    url = "data:text/plain;base64," + base64.b64encode(ACME.encode()).decode()
    chat = {"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_data": url}}]}]}
    assert hit(chat, CHAT) is not None


def test_numbers_and_repeated_keys_are_seen() -> None:
    from strategies import make_rules

    rules = make_rules(patterns=[{"name": "CARD", "regex": r"\b4[0-9]{15}\b"}])
    assert str(leakguard.scan_body(b'{"n": 4111111111111111}', rules)) == "CARD in body $.n"
    body = b'{"a": "Acme Corp", "a": "clean"}'  # json.loads would keep only "clean"
    assert str(leakguard.scan_body(body, RULES)) == "literal in body $.a"


@pytest.mark.parametrize("path", ["/v1/files/Acme%2520Corp", "/v1/files/x?q=Acme%252BCorp%2520", "/v1/f/Acme%252520Corp",
                                  "/v1/x/bob%2540corp.example.com"])  # fmt: skip
def test_an_original_percent_encoded_twice_or_more_in_a_url_is_found_and_withheld(path: str) -> None:
    # a URL inside another's parameter is decoded by each reader in turn: `%2520` is a space
    # to the second one (probe G saw a double-encoded original in a path forwarded)
    assert leakguard.scan_url(path, RULES) is not None
    assert "Acme" not in leakguard.shown(path, RULES) and "bob" not in leakguard.shown(path, RULES)
    assert leakguard.url_readings("/a%2520b") == ["/a%2520b", "/a%20b", "/a b"]
    assert len(leakguard.url_readings("%2525252541")) == 1 + leakguard.URL_DECODINGS  # ("A" encoded five times)


def test_url_and_headers_but_not_credentials() -> None:
    assert str(leakguard.scan_url("/v1/x?who=bob%40corp.example.com", RULES)) == "EMAIL in url"
    assert leakguard.scan_url("/v1/messages?beta=true", RULES) is None
    headers = [("x-api-key", BOB), ("authorization", f"Bearer {ACME}"), ("user-agent", "sdk")]
    assert leakguard.scan_headers(headers, RULES) is None
    assert str(leakguard.scan_headers([*headers, ("X-Note", ACME)], RULES)) == "literal in header x-note"


def test_a_google_key_in_the_query_is_a_credential() -> None:
    """Issue 15 case 10: `?key=AIza…` on a Google path is the client's credential."""
    from disguiselib.rules import mappings, rules

    shipped = rules.Rules(mappings.load_layers([]))  # the shipped defaults
    key = "AIza" + "SyD3x7Qk9mN2pL5vR8tW1zB4cF6hJ0aE_gU"
    assert shipped.find(key), "the shipped Google key pattern"
    assert leakguard.scan_url(f"/v1beta/models/gemini-2.5-flash:generateContent?key={key}", shipped) is None
    assert leakguard.scan_url(f"/v1beta/cachedContents?key={key}&x=1", shipped) is None
    assert leakguard.scan_url(f"/v1/chat/completions?key={key}", shipped) is not None  # not a Google path
    assert leakguard.scan_url(f"/v1beta/models/m:generateContent?key={key}&q={BOB}", shipped) is not None


def test_non_json_body_is_scanned_as_text() -> None:
    assert str(leakguard.scan_body(b"--b\r\n" + ACME.encode() + b"\xff\r\n", RULES)) == "literal in body (as sent)"


def test_unknown_bodies_are_read_as_the_receiver_reads_them() -> None:
    """Issue 15 cases 2 and 3: form fields, multipart parts, JSON lines with escapes."""
    form = b"email=bob%40corp.example.com&org=Acme+Corp"
    assert leakguard.scan_body(form, RULES, None, "application/x-www-form-urlencoded") is not None
    assert str(leakguard.scan_body(b"org=Acme+Corp", RULES, None, "application/x-www-form-urlencoded")) == \
        "literal in body form field 1"  # fmt: skip
    line = json.dumps({"custom_id": "1", "body": {"text": "Ünïcødé GmbH"}})  # \u escapes, as json.dumps writes
    assert "Ünïcødé" not in line
    jsonl = (line + "\n" + line + "\n").encode()
    assert str(leakguard.scan_body(jsonl, RULES, None, "application/jsonl")) == \
        "literal in body line 1 $.body.text"  # fmt: skip
    utf16 = "\ufeffhello Acme Corp".encode("utf-16-le")
    multipart = (b"--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nfine-tune\r\n"
                 b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
                 b"Content-Type: text/plain; charset=utf-16\r\n\r\n" + utf16 + b"\r\n--XyZ--\r\n")  # fmt: skip
    assert str(leakguard.scan_body(multipart, RULES, None, "multipart/form-data; boundary=XyZ")) == \
        "literal in body part 'file'"  # fmt: skip
    gz = gzip.compress(ACME.encode())  # content-encoding is undone before (the adapter)
    assert leakguard.scan_body(gzip.decompress(gz), RULES, None, "text/plain") is not None


def test_a_grpc_body_is_read_as_its_server_reads_it() -> None:
    """Probe R: a protobuf string's length byte before a token hid it from a
    pattern that wants no letter or digit before its match ("2": 50 bytes); a message compressed by the
    call's grpc-encoding, or gRPC-Web's base64, hid everything. Each field is read on its
    own, each message decoded; a message in a coding not read cannot be shown clean."""
    token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ2kL4mN6pQ8rS0tU"
    rules = make_rules(patterns=[{"name": "HF", "regex": r"(?:\\[nrt]|^|[^A-Za-z0-9])(?P<k>hf_[A-Za-z0-9]{30,})"}])
    field = b"\x0a" + bytes([len(token)]) + token.encode()
    assert field[1:2] == b"2"  # (50 bytes)
    framed = b"\x00" + len(field).to_bytes(4, "big") + field
    assert leakguard.scan_body(field, rules, None, "application/octet-stream") is None  # as one text: not seen
    assert str(leakguard.scan_body(framed, rules, None, "application/grpc")) == "HF in body message 1 (string fields)"
    assert str(leakguard.scan_body(field, rules, None, "application/x-protobuf")) == "HF in body (string fields)"
    msg = b"\x0a\x09" + ACME.encode()
    zipped = gzip.compress(msg)
    body = b"\x01" + len(zipped).to_bytes(4, "big") + zipped
    assert str(leakguard.scan_body(body, RULES, None, "application/grpc")) == "literal in body message 1 (string fields)"
    b64 = base64.b64encode(b"\x00" + len(msg).to_bytes(4, "big") + msg)
    assert str(leakguard.scan_body(b64, RULES, None, "application/grpc-web-text")) == \
        "literal in body message 1 (string fields)"  # fmt: skip
    clean = b"\x0a\x05hello"
    zipped = gzip.compress(clean)
    assert leakguard.scan_body(b"\x01" + len(zipped).to_bytes(4, "big") + zipped, RULES, None, "application/grpc") is None
    snappy = b"\xff\x06\x00\x00sNaPpY" + clean
    hit = leakguard.scan_body(b"\x01" + len(snappy).to_bytes(4, "big") + snappy, RULES, None, "application/grpc")
    assert str(hit).startswith("unknown in body (a gRPC message is compressed in a coding disguise does not decode")


def _ld(number: int, data: bytes) -> bytes:
    n, size = len(data), b""
    while True:
        size += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return bytes([number << 3 | 2]) + size + data


_HF_RULES = make_rules(patterns=[{"name": "HF", "regex": r"(?:\\[nrt]|^|[^A-Za-z0-9])(?P<k>hf_[A-Za-z0-9]{30,})"}])


@given(st.lists(st.tuples(st.integers(1, 15), st.binary(max_size=30)), max_size=4),
       st.integers(1, 15), st.integers(33, 120), st.lists(st.integers(1, 15), max_size=4),
       st.sampled_from(["plain", "gzip", "grpc-web-text", "protobuf"]))  # fmt: skip
def test_a_token_in_any_string_field_of_a_grpc_call_is_found(
    others: list[tuple[int, bytes]], number: int, size: int, around: list[int], how: str
) -> None:
    """Whatever its length byte (a letter, a digit), the fields before it, the messages
    around it and the call's coding: a guarded pattern's token filling a string field."""
    token = ("hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ2kL4mN6pQ8rS0tU" * 3)[:size].encode()
    msg = b"".join(_ld(n, d) for n, d in others) + _ld(number, token)
    for n in around:
        msg = _ld(n, msg)
    if how == "protobuf":
        body, ctype = msg, "application/x-protobuf"
    else:
        data = gzip.compress(msg) if how == "gzip" else msg
        body = bytes([how == "gzip"]) + len(data).to_bytes(4, "big") + data
        body, ctype = (base64.b64encode(body), "application/grpc-web-text") if how == "grpc-web-text" else \
            (body, "application/grpc")  # fmt: skip
    assert str(leakguard.scan_body(body, _HF_RULES, None, ctype)).startswith("HF in body")


def test_a_grpc_binary_headers_value_is_read_base64_decoded() -> None:
    """Probe R: gRPC metadata whose name ends in `-bin` is base64 (padded or not), which a
    gRPC server decodes, often into a protobuf message: an original there passed."""
    for value in (base64.b64encode(b"Acme Corp").decode(), base64.b64encode(b"Acme Corp!").decode().rstrip("="),
                  base64.b64encode(b"\x0a\x09Acme Corp").decode()):  # fmt: skip
        hit = leakguard.scan_headers([("x-note-bin", value)], RULES)
        assert str(hit) == "literal in header x-note-bin (base64-decoded)", value
        assert leakguard.scan_headers([("x-note", value)], RULES) is None  # (base64 only in a binary header)
    assert leakguard.binary_value("x-note-bin", "!!not base64") == ""
    assert leakguard.scan_headers([("grpc-trace-bin", base64.b64encode(b"\x00\x01hello").decode())], RULES) is None


@given(st.sampled_from(sorted(LITERALS)), st.text(max_size=20), st.text(max_size=20))
@example('C:\\Users\\a "b"', "[", "")  # text that only looks like JSON, an original with a quote
def test_an_original_anywhere_in_a_string_is_found(orig: str, a: str, b: str) -> None:
    assert hit({"messages": [{"content": a + orig + b}]}) is not None


def _api_for(name: str):
    if name.startswith("chat_"):
        return CHAT
    if name.startswith("responses_"):
        return RESPONSES
    return ANTHROPIC


def test_recorded_requests_masked_pass_the_guard(fixtures) -> None:
    """No false alarm on real traffic: every recorded request, with an original
    injected into every text field (thinking too), masked, passes the leak guard; the
    unmasked injected one does not (unless the injection only reached thinking)."""
    from disguiselib.base.masking import mask_body

    seen = 0
    for f in sorted([*(fixtures / "anthropic").glob("*.request.json"), *(fixtures / "openai").glob("*.request.json")]):
        raw = f.read_bytes()
        injected = raw
        for key in (b'"text":"', b'"content":"', b'"thinking":"', b'"input":"', b'"instructions":"'):
            injected = injected.replace(key, key + b"Acme Corp bob@corp.example.com ")
        api = _api_for(f.name)
        masked, _ = mask_body(injected, api.request_rule, RULES)
        assert leakguard.scan_body(masked, RULES, api) is None, f.name
        if leakguard.scan_body(injected, RULES, api) is not None:
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
        for api in (ANTHROPIC, None):
            assert (hit({"arguments": args}, api) or "").startswith("literal in body $.arguments"), (args, api)
    assert hit({"arguments": '{"path": "C:\\\\Temp\\\\x", "n": '}) is None


def test_a_header_name_holding_an_original_is_a_leak() -> None:
    h = leakguard.scan_headers([("x-trace", "1"), ("x-acme_lookup-id", "7")], RULES)
    assert h is not None and str(h) == "literal in header <name>"
    h = leakguard.scan_headers([("x-user", "bob@corp.example.com")], RULES)
    assert h is not None and str(h) == "EMAIL in header x-user"
    assert leakguard.scan_headers([("x-api-key", "bob@corp.example.com")], RULES) is None


# -- behaviour the mutation run's survivors pointed to (issue 27) ----------------------------


def test_a_text_no_table_describes_is_read_with_its_escapes_decoded() -> None:
    """`"Acme\\u0020Corp"` in a plain-text body is the original once its JSON escapes are
    read (as a receiver that parses it would): found, and said to be found that way."""
    hit = leakguard.scan_body(b'note: "Acme\\u0020Corp" and more', RULES, None, "text/plain")
    assert hit is not None and hit.rule == "literal" and hit.where.endswith("(escapes decoded)")
    assert leakguard.scan_body(b'note: "Acme\\u0020Labs" and more', RULES, None, "text/plain") is None


def test_the_query_credential_filter_leaves_out_the_credential_only() -> None:
    """On a Google path the `key` parameter is the client's own; every other parameter
    is read, wherever it stands in the query."""
    base = "/v1beta/models/x:generateContent"
    assert leakguard.scan_url(f"{base}?key=Acme%20Corp&alt=sse", RULES) is None
    assert leakguard.scan_url(f"{base}?key=abc&q=Acme%20Corp", RULES) == leakguard.Hit("literal", "url")
    assert leakguard.scan_url(f"{base}?q=Acme+Corp&key=abc", RULES) == leakguard.Hit("literal", "url")
    assert leakguard.scan_url("/v1/messages?key=Acme%20Corp", RULES) is not None  # not a Google path


def test_first_reads_in_context_as_the_masker_does() -> None:
    assert leakguard.first(RULES, "write to Acme Corp") == "literal"
    assert leakguard.first(RULES, "nothing here") is None
    assert leakguard.first(RULES, "Acme Corp", ("", "")) == "literal"


def test_shown_withholds_only_the_pieces_that_hold_an_original() -> None:
    """The one function every message names request text through (issue 27)."""
    assert leakguard.shown("/v1/files/file_1", RULES) == "/v1/files/file_1"
    assert leakguard.shown("/v1/x/Acme%20Corp/y", RULES) == "/v1/x/<original>/y"
    assert leakguard.shown("/v1/Acme Corp/x", RULES) == "/v1/<original>/x"
    assert leakguard.shown("/v1/x?o=bob%40corp.example.com", RULES) == "/v1/x?o=<original>"
    assert leakguard.shown("/v1/Acme/Corp", RULES) == "/v1/Acme/Corp"  # no original in it
    assert leakguard.shown("/a", None) == "<not shown: no rules in force>"  # nothing can be shown clean
    assert leakguard.place("POST", "/v1/Acme%20Corp?q=Acme", RULES) == "POST /v1/<original>"
    # the method leaves too: shown through the rules; without them only HTTP's own methods
    assert leakguard.place("acme_lookup", "/v1/x", RULES) == "<original> /v1/x"
    assert leakguard.place("POST", "/v1/x", None) == "POST <not shown: no rules in force>"
    assert leakguard.place("acme_lookup", "/v1/x", None) == "<not shown: no rules in force> <not shown: no rules in force>"


def _batch_upload(preamble: str = "", purpose: str = "batch", filename: str = "in.jsonl", note: str = "",
                  line: str = '{"custom_id": "1", "method": "POST", "url": "/v1/chat/completions", '
                              '"body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}') -> bytes:  # fmt: skip
    parts = [f'--B\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n{purpose}\r\n',
             f'--B\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
             f"Content-Type: application/jsonl\r\n\r\n{line}\n\r\n"]  # fmt: skip
    if note:
        parts.append(f'--B\r\nContent-Disposition: form-data; name="note"\r\n\r\n{note}\r\n')
    return (preamble + "".join(parts) + "--B--\r\n").encode()


def test_a_batch_upload_is_read_in_every_place_the_masker_masks() -> None:
    """The Files API's batch upload (its own body model): the file's lines through the
    batch line table, and the text around them (preamble, a file name, another part)
    as text."""
    api = recognise("POST", "/v1/files")
    ctype = "multipart/form-data; boundary=B"
    assert leakguard.scan_body(_batch_upload(), RULES, api, ctype) is None
    # not a batch (its purpose): read as any body, everything in it
    assert leakguard.scan_body(_batch_upload(purpose="Acme Corp"), RULES, api, ctype) is not None
    cases = {
        "body (multipart preamble)": _batch_upload(preamble="Acme Corp\r\n"),
        "part 'file' filename": _batch_upload(filename="Acme Corp.jsonl"),
        "part 'note'": _batch_upload(note="write to bob@corp.example.com"),
        "file line 1 $.body.messages[0].content": _batch_upload(line=_batch_upload().decode().split("\r\n\r\n")[2]
                                                                .split("\n")[0].replace("hi", "Acme Corp")),
    }  # fmt: skip
    for where, body in cases.items():
        hit = leakguard.scan_body(body, RULES, api, ctype)
        assert hit is not None and hit.where.startswith(where), (where, hit)


def test_scan_request_reads_url_then_headers_then_the_body_as_its_type_says() -> None:
    form = b"a=1&b=Acme+Corp"
    hit = leakguard.scan_request("/v1/x", [("content-type", "application/x-www-form-urlencoded")], form, RULES)
    assert hit is not None and hit.rule == "literal" and hit.where.startswith("body"), hit
    hdr = [("x-note", "bob@corp.example.com")]
    assert leakguard.scan_request("/v1/Acme%20Corp", hdr, b"Acme Corp", RULES) == leakguard.Hit("literal", "url")
    assert leakguard.scan_request("/v1/x", hdr, b"Acme Corp", RULES) == leakguard.Hit("EMAIL", "header x-note")
    assert leakguard.scan_request("/v1/x", [], b"Acme Corp", RULES) is not None
    assert leakguard.scan_request("/v1/x", [], None, RULES) is None
    assert leakguard.scan_request("/v1/x", [], b"", RULES) is None
    api = recognise("POST", "/v1/messages")
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp"}]}
    hit = leakguard.scan_request("/v1/messages", [], json.dumps(doc).encode(), RULES, api)
    assert hit == leakguard.Hit("literal", "body $.messages[0].content"), hit


def test_the_credential_left_out_of_the_url_and_nothing_else() -> None:
    """without_credentials: what scan_url reads of a Google URL (survivors of the
    mutation run: the query's split, the name's split, what is put back together)."""
    g = "/v1beta/models/x:generateContent"
    assert leakguard.without_credentials(f"{g}?key=k&alt=sse&n=1") == f"{g}?alt=sse&n=1"
    assert leakguard.without_credentials(f"{g}?alt=sse&key=k") == f"{g}?alt=sse"
    assert leakguard.without_credentials(f"{g}?key=k") == g
    assert leakguard.without_credentials(f"{g}?key=a=b&q=1") == f"{g}?q=1"  # the name ends at the first "="
    assert leakguard.without_credentials(f"{g}?%6Bey=k&q=1") == f"{g}?q=1"  # the name read decoded
    assert leakguard.without_credentials(f"{g}?alt=sse") == f"{g}?alt=sse"
    assert leakguard.without_credentials("/v1/messages?key=k") == "/v1/messages?key=k"  # not a Google path
    assert leakguard.without_credentials(g) == g


def test_scan_request_reads_the_body_with_the_apis_table() -> None:
    """A field the API's table exempts (a thinking block's signature) is not looked at
    with the API, and is without (an endpoint nobody transforms)."""
    api = recognise("POST", "/v1/messages")
    doc = {"model": "m", "messages": [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "x", "signature": "Acme Corp"}]}]}  # fmt: skip
    body = json.dumps(doc).encode()
    assert leakguard.scan_request("/v1/messages", [], body, RULES, api) is None
    assert leakguard.scan_request("/v1/messages", [], body, RULES, None) is not None


def test_shown_withholds_an_original_that_spans_its_pieces() -> None:
    """An e-mail is cut at its "@": neither half is an original, together they are."""
    assert leakguard.shown("/v1/bob@corp.example.com/x", RULES) == leakguard.WITHHELD
    assert leakguard.shown("/v1/Acme+Corp", RULES) == "/v1/<original>"  # read form-decoded too
    assert leakguard.place("GET", "/v1/x?a?b=Acme Corp", RULES) == "GET /v1/x"  # the query from its first "?"


def test_shown_reads_the_text_as_it_is_too() -> None:
    """A literal holding "+" or "%": as written it is the original, decoded it is not."""
    rules = make_rules(literals={"C++ Team": "Zeta Team", "100%25 Acme": "Plain"})
    assert leakguard.shown("/v1/C++ Team/x", rules) == "/v1/<original>/x"
    assert leakguard.shown("/v1/100%25 Acme", rules) == "/v1/<original>"


def test_spans_read_a_text_in_its_context_as_the_masker_does() -> None:
    """spans(text, context): a pattern match reaching into the context counts, cut to the
    text; one wholly in the context does not; a literal reaching into the context sends
    the reading back to the text alone (survivors of the mutation run)."""
    lab = [s[0] for s in leakguard.spans(RULES, "corp.example.com", ("bob@", ""))]
    assert lab == ["EMAIL"] and leakguard.spans(RULES, "corp.example.com") == []
    assert leakguard.spans(RULES, "corp.example.com", ("bob@", ""))[0][1:] == (0, 16)
    assert leakguard.spans(RULES, "hello", ("x@y.com ", "")) == []  # wholly in the context
    assert leakguard.spans(RULES, " hello", ("x@y.com", "")) == []  # ends where the text starts
    assert leakguard.spans(RULES, "hello ", ("", "x@y.com")) == []  # starts where the text ends
    assert leakguard.spans(RULES, "Corp", ("Acme ", "")) == []  # a literal: the text alone
    assert leakguard.spans(RULES, "me Co", ("Ac", "rp")) == []
    both = {s[0] for s in leakguard.spans(RULES, "corp.example.com and Acme Corp", ("bob@", ""))}
    assert len(both) == 2 and "EMAIL" in both
    assert leakguard.first(RULES, "Corp", ("Acme ", "")) is None


def test_where_a_hit_is_names_the_documents_root_and_arrays() -> None:
    assert leakguard.scan_body(b'"Acme Corp"', RULES) == leakguard.Hit("literal", "body $")
    assert leakguard.scan_body(b'["x", "Acme Corp"]', RULES) == leakguard.Hit("literal", "body $[1]")
    assert leakguard.scan_body(b'{"a": ["Acme Corp"]}', RULES) == leakguard.Hit("literal", "body $.a[0]")


def test_an_api_body_that_is_not_json_is_read_as_its_type_says() -> None:
    api = recognise("POST", "/v1/messages")
    form = b"a=1&b=Acme+Corp"
    hit = leakguard.scan_body(form, RULES, api, "application/x-www-form-urlencoded")
    assert hit is not None and hit.rule == "literal", hit


def test_spans_fall_back_to_the_text_alone_and_cut_matches_at_its_end() -> None:
    """(Survivors of the last mutation run.) A literal reaching into the context: the
    text is read alone, and what it holds itself is still found; a match that starts in
    the context ends where it ends in the text, not at the text's end."""
    got = leakguard.spans(RULES, "Corp and Acme Corp", ("Acme ", ""))
    assert [(s[1], s[2]) for s in got] == [(9, 18)]
    assert leakguard.spans(RULES, "corp.example.com and more", ("bob@", ""))[0][1:] == (0, 16)


def test_the_query_is_what_follows_the_first_question_mark() -> None:
    g = "/v1beta/models/x:generateContent"
    assert leakguard.without_credentials(f"{g}?q=a?b&key=k") == f"{g}?q=a?b"


def test_a_realtime_credential_passes_in_its_own_slot_only() -> None:
    """A browser's Realtime WebSocket carries its key as a subprotocol entry; Azure's as
    `?api-key=` on a path that is not a provider's own: left alone there, for the API the
    request is to. The same value in another entry, another header or without the API is
    counted."""
    from disguiselib.apis.registry import OPENAI_REALTIME

    key = "openai-insecure-api-key.Acme Corp"
    ws = "/v1/realtime?model=gpt-realtime"
    assert leakguard.scan_request(ws, [("Sec-WebSocket-Protocol", f"realtime, {key}")], None, RULES,
                                  OPENAI_REALTIME) is None  # fmt: skip
    sub = leakguard.Hit("literal", "header sec-websocket-protocol")
    assert leakguard.scan_request(ws, [("Sec-WebSocket-Protocol", "realtime, note.Acme Corp")], None, RULES,
                                  OPENAI_REALTIME) == sub  # fmt: skip
    assert leakguard.scan_request(ws, [("x-note", key)], None, RULES, OPENAI_REALTIME) == leakguard.Hit(
        "literal", "header x-note")  # fmt: skip
    azure = "/openai/realtime?deployment=d&api-key=Acme%20Corp"
    assert leakguard.scan_request(azure, [], None, RULES, OPENAI_REALTIME) is None
    assert leakguard.scan_request(azure, [], None, RULES) == leakguard.Hit("literal", "url")  # no API: no slot
    assert leakguard.scan_request(azure + "&note=Acme%20Corp", [], None, RULES, OPENAI_REALTIME) == leakguard.Hit(
        "literal", "url")  # fmt: skip


def test_a_websocket_upgrade_with_a_body_is_read_whole() -> None:
    from disguiselib.apis.registry import OPENAI_REALTIME

    hit = leakguard.scan_request("/v1/realtime?model=m", [], b'{"note": "Acme Corp"}', RULES, OPENAI_REALTIME)
    assert hit == leakguard.Hit("literal", "body $.note")


def test_a_credential_before_a_later_question_mark_is_still_left_out() -> None:
    g = "/v1beta/models/x:generateContent"
    assert leakguard.without_credentials(f"{g}?key=k&q=a?b") == f"{g}?q=a?b"
    assert leakguard.scan_url(f"{g}?key=Acme%20Corp&q=a?b", RULES) is None


def test_a_pattern_anchored_on_the_key_reads_the_value_with_its_key() -> None:
    """A rule written for `"password": "…"` catches the value of a password field, as the
    masker reads it (the value with its key around it)."""
    rules = make_rules(patterns=[{"name": "PASSWORD", "regex": '"password": "[^"]+'}])
    doc = {"model": "m", "config": {"password": "hunter2"}}
    assert leakguard.scan_json(doc, rules) == leakguard.Hit("PASSWORD", "$.config.password")
    assert leakguard.scan_json({"model": "m", "config": {"user": "hunter2"}}, rules) is None
    # a value that looks like base64 but is not text (read as it is, with its key all the same)
    token = "hunter2hunter2hunter2xyz1"
    assert leakguard.scan_json({"password": token}, rules) == leakguard.Hit("PASSWORD", "$.password")


def test_text_around_a_batch_file_is_read_as_the_masker_reads_text() -> None:
    """A note part of a batch upload holding JSON text: its values are read with their
    keys (a rule anchored on the key) and with their escapes decoded."""
    api = recognise("POST", "/v1/files")
    ctype = "multipart/form-data; boundary=B"
    rules = make_rules(patterns=[{"name": "PASSWORD", "regex": '"password": "[^"]+'}])
    hit = leakguard.scan_body(_batch_upload(note='{"password": "hunter2"}'), rules, api, ctype)
    assert hit is not None and hit.rule == "PASSWORD" and hit.where.startswith("part 'note'"), hit
    assert leakguard.scan_body(_batch_upload(note='{"user": "hunter2"}'), rules, api, ctype) is None
    hit = leakguard.scan_body(_batch_upload(note='{"to": "Acme\\u0020Corp"}'), RULES, api, ctype)
    assert hit == leakguard.Hit("literal", "part 'note' (JSON text $.to)"), hit


def test_a_body_is_read_as_its_content_type_says_and_sniffed_without_one() -> None:
    """A charset is honoured, also for an API's body that is not JSON; with no type
    given, a form is still read as a form."""
    utf16 = "note: Acme Corp".encode("utf-16-le")  # no BOM: only the charset tells
    assert leakguard.scan_body(utf16, RULES, CHAT, "text/plain; charset=utf-16-le") is not None
    assert leakguard.scan_body(utf16, RULES, None, "text/plain; charset=utf-16-le") is not None
    assert leakguard.scan_body(b"a=1&b=Acme+Corp", RULES) == leakguard.Hit("literal", "body form field 2")


def test_a_literal_at_the_start_of_a_text_read_in_context_keeps_the_contexts_matches() -> None:
    """A literal that starts where the text starts lies in the text: the text is not read
    alone then, so a rule that needs the context (here its closing quote) still counts."""
    rules = make_rules(patterns=[{"name": "CODE", "regex": 'x[0-9]"'}])
    got = leakguard.spans(rules, "Acme Corp x1", ('"k": "', '"'))
    assert [(a, b) for _, a, b in got] == [(0, 9), (10, 12)], got


def test_an_original_across_subprotocol_entries_is_found() -> None:
    from disguiselib.apis.registry import OPENAI_REALTIME

    rules = make_rules(literals={"Acme, Inc": "Zenith, Ltd"})
    hit = leakguard.scan_request("/v1/realtime?model=m", [("Sec-WebSocket-Protocol", "realtime, Acme, Inc")], None,
                                 rules, OPENAI_REALTIME)  # fmt: skip
    assert hit == leakguard.Hit("literal", "header sec-websocket-protocol")


def test_json_text_holding_no_string_is_clean() -> None:
    """A text the model reads as JSON that holds no string (`{}`, `[]`): nothing in it
    to find, and nothing to refuse."""
    msg = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "{}"}, {"type": "text", "text": "[]"}, {"type": "text", "text": "[1, true, null]"}]}]}  # fmt: skip
    assert hit(msg) is None
    msg["messages"][0]["content"].append({"type": "text", "text": json.dumps({"k": ACME})})
    assert hit(msg) == "literal in body $.messages[0].content[3].text (JSON text $.k)"


def test_the_masker_s_document_is_walked_only_for_the_very_bytes_it_was_parsed_from() -> None:
    """parsed: the masked body's document from the masker, walked instead of parsing
    the body again only when it is the parse of this very bytes object; a document
    parsed from other bytes (however alike) is never taken for the body's."""
    leaky = json.dumps({"model": "m", "messages": [{"role": "user", "content": ACME}]}).encode()
    clean_doc = leakguard.loads(json.dumps({"model": "m", "messages": [{"role": "user", "content": "Zenith Labs"}]}))
    where = "body $.messages[0].content"
    # the masker's document of these bytes is what the guard reads (it holds the original)
    got = leakguard.scan_body(leaky, RULES, ANTHROPIC, "application/json", parsed=(leaky, leakguard.loads(leaky.decode())))
    assert str(got) == f"literal in {where}"
    # a clean document handed with other bytes (equal, not the same object): the body is parsed
    for other in (bytes(bytearray(leaky)), b"{}"):
        got = leakguard.scan_body(leaky, RULES, ANTHROPIC, "application/json", parsed=(other, clean_doc))
        assert str(got) == f"literal in {where}"
    assert leakguard.scan_body(leaky, RULES, ANTHROPIC, "application/json", parsed=(leaky, clean_doc)) is None
    # walked with the API's table: what it exempts (the model's name) is not looked at there either
    exempt = leakguard.loads(json.dumps({"model": ACME, "messages": [{"role": "user", "content": "Zenith Labs"}]}))
    assert leakguard.scan_body(leaky, RULES, ANTHROPIC, "application/json", parsed=(leaky, exempt)) is None


# -- the headers scanned in one go (leakguard.scan_headers: Rules.prescan) -------------------


def _headers_one_by_one(headers: list[tuple[str, str]], rules) -> leakguard.Hit | None:  # noqa: ANN001
    """scan_headers as it read each header before it scanned them in one go: a find() of
    each value and name (the reference the one-go scan is held to)."""
    from disguiselib.apis.registry import slots_for

    slots = slots_for("")
    for name, value in headers:
        n = name.lower()
        if n in slots.headers:
            continue
        if n == "sec-websocket-protocol":
            value = leakguard._without_subprotocols(value, slots)
        lab = leakguard.first(rules, value) or leakguard.first(rules, name)
        decoded = unquote_plus(value)
        if lab is None and decoded != value:
            lab = leakguard.first(rules, decoded)
            if lab is not None:
                return leakguard.Hit(lab, f"header {n if leakguard.first(rules, n) is None else '<name>'} (percent-decoded)")
        if lab is not None:
            return leakguard.Hit(lab, f"header {n if leakguard.first(rules, n) is None else '<name>'}")
    return None


@functools.cache
def _shipped_rules():  # noqa: ANN202 - Rules
    """The shipped patterns beside the test literals (built once: a property takes no fixture)."""
    import dataclasses

    from disguiselib.rules import mappings, rules

    ms = mappings.load_layers([])
    return rules.Rules(dataclasses.replace(ms, literals=ms.literals + mappings.from_dict({"literals": dict(LITERALS)}).literals))


_HEADER_NAMES = ["user-agent", "X-Note", "x-acme_lookup-id", "authorization", "x-api-key", "Cookie", "x-trace",
                 "sec-websocket-protocol", "x-user-bob@corp.example.com", "accept"]  # fmt: skip
_HEADER_VALUES = ["sdk/1.2", "", "1", ACME, f"Bearer {ACME}", BOB, "[EMAIL_1]", "Zenith Labs", "ghp_" + "a1B2" * 9,
                  "password=Hunter2xyz9", "v1, realtime, openai-insecure-api-key." + ACME, "a" * 40, "x" * 31 + ACME,
                  "Bearer sk-ant-api03-" + "Ab9_" * 20, "key=AKIAIOSFODNN7EXAMPLE",
                  # percent-encoded: read decoded too (a Referer's query, an RFC 8187 value)
                  quote(ACME), quote_plus(ACME), quote(BOB), "application/xhtml+xml", "100%", "%zz",
                  f"https://app.example/?org={quote_plus(ACME)}"]  # fmt: skip


# any code point, lone surrogates too: mitmproxy hands on header bytes that are not UTF-8
# as surrogate escapes (a text that cannot be encoded is marked by the scan, found exactly)
_ANY = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())


@given(
    st.lists(
        st.tuples(
            st.sampled_from(_HEADER_NAMES) | st.text(max_size=12) | st.text(_ANY, max_size=12),
            st.lists(st.sampled_from(_HEADER_VALUES) | st.text(max_size=40) | st.text(_ANY, max_size=40), max_size=3).map(
                " ".join
            ),
        ),
        max_size=12,
    ),
    st.booleans(),
    st.booleans(),
)
@example([("user-agent", "sdk"), ("x-user", BOB)], False, False)
@example([("x-trace", "1"), ("x-acme_lookup-id", "7")], True, True)
@example([("accept", "application/xhtml+xml"), ("referer", f"https://app.example/?org={quote_plus(ACME)}")], False, False)
def test_headers_scanned_in_one_go_say_what_each_one_scanned_alone_says(headers, shipped: bool, knowing: bool) -> None:
    """The headers' values and names scanned together (one prescan, then find() of the
    texts it marks with its memo) give the hit, rule and place a find() of each one
    gives, in the same order: the first header with an original, its value before its name."""
    from disguiselib.rules.knowing import Knowing

    rules = _shipped_rules() if shipped else RULES
    if knowing:  # as the guard reads a masked request: the session's disguises known
        rules = Knowing(rules, frozenset({"[EMAIL_1]"}))
    assert leakguard.scan_headers(headers, rules) == _headers_one_by_one(headers, rules)


def test_a_header_is_read_percent_decoded_too() -> None:
    """A Referer's query, a value a client percent-encoded: the original in it went out
    (the request's own URL was read decoded, its headers were not)."""
    for value in (f"https://app.example/?org={quote(ACME)}", f"https://app.example/?org={quote_plus(ACME)}", quote(BOB)):
        hit = leakguard.scan_headers([("user-agent", "sdk"), ("referer", value)], RULES)
        assert hit is not None and hit.where == "header referer (percent-decoded)", (value, hit)
    assert leakguard.scan_headers([("accept", "application/xhtml+xml"), ("x-rate", "100%")], RULES) is None
    # as it is first: a value with the original both ways says so of itself
    hit = leakguard.scan_headers([("x-org", f"{ACME}, {quote(ACME)}")], RULES)
    assert hit is not None and hit.where == "header x-org", hit


def test_a_headers_decoded_reading_is_there_only_where_it_differs() -> None:
    """decoded_value spelled out: "" where decoding leaves the value as it is (then no
    second text is read), else unquote_plus of it."""
    assert leakguard.decoded_value("application/json") == ""
    assert leakguard.decoded_value("100%") == "" and leakguard.decoded_value("%zz") == ""
    assert leakguard.decoded_value("a+b") == "a b" and leakguard.decoded_value("x%41y") == "xAy"


def test_a_refusal_never_quotes_a_name_the_client_wrote_that_holds_an_original() -> None:
    """A multipart part's name and a header parameter's are the client's text: the place a
    refusal names says `<name>` for one holding an original, and quotes the others."""
    ct = "multipart/form-data; boundary=XyZ"
    for disposition, content in (('form-data; name="Acme Corp"', "hello Acme Corp"),
                                 ('form-data; name="Acme Corp"; filename="notes.txt"', "hello"),
                                 ("form-data; name=\"file\"; Acme Corp=\"x\"", "hello")):  # fmt: skip
        body = f"--XyZ\r\nContent-Disposition: {disposition}\r\n\r\n{content}\r\n--XyZ--\r\n".encode()
        hit = leakguard.scan_request("/v1/files", [("content-type", ct)], body, RULES, None, ct)
        assert hit is not None and hit.where.startswith("body"), hit
        assert "Acme" not in hit.where and "Corp" not in hit.where, hit.where
    body = b'--XyZ\r\nContent-Disposition: form-data; name="notes"\r\n\r\nhello Acme Corp\r\n--XyZ--\r\n'
    assert leakguard.scan_request("/v1/files", [("content-type", ct)], body, RULES, None, ct).where == "body part 'notes'"


def test_a_place_says_name_for_each_quoted_name_holding_an_original_and_body_for_anything_else() -> None:
    """leakguard._place, alone: only the quoted names that hold an original become
    `<name>`; the others are quoted as they are; a place holding an original anywhere
    else says `body`; a clean place is itself."""
    place = leakguard._place
    assert place(RULES, "body part 'notes' line 3") == "body part 'notes' line 3"
    assert place(RULES, "body part 'Acme Corp' header 'content-disposition' parameter 'filename'") == (
        "body part <name> header 'content-disposition' parameter 'filename'"
    )
    assert place(RULES, "body part \"it's Acme Corp\" line 2") == "body part <name> line 2"
    assert place(RULES, "body part Acme Corp") == "body"  # not quoted: nothing to hide it by
    ct = "multipart/form-data; boundary=XyZ"
    body = b'--XyZ\r\nContent-Disposition: form-data; name="Acme Corp"\r\n\r\nhello\r\n--XyZ--\r\n'
    hit = leakguard.scan_request("/v1/files", [("content-type", ct)], body, RULES, None, ct)
    assert hit is not None and hit.where == "body part <name> header 'content-disposition' parameter 'name'"


# -- a header folded over lines (obs-fold) is read unfolded, as its receiver reads it ----------------


@given(fold=st.sampled_from(["\r\n ", "\r\n\t", "\n ", "\r\n \t  ", "\n\t"]), name=st.sampled_from(["X-Note", "user-agent"]))
def test_a_folded_header_is_read_as_its_receiver_unfolds_it(fold: str, name: str) -> None:
    """mitmproxy keeps an obs-fold in the value ("Acme\\r\\n Corp") and forwards it; an
    RFC 9112 receiver (h11) replaces it by a space and reads "Acme Corp"."""
    value = ACME.replace(" ", fold)
    assert str(leakguard.scan_headers([(name, value)], RULES)) == f"literal in header {name.lower()}"
    assert leakguard.scan_headers([(name, "Acme" + fold + "Labs")], RULES) is None
    assert leakguard.unfolded(value) == ACME


def test_unfolded_leaves_a_value_without_a_fold_alone() -> None:
    for v in ("Acme Corp", "a\rb", "x\ny", ""):
        assert leakguard.unfolded(v) == v
    assert leakguard.unfolded("a\r\n b\r\n\tc") == "a b c"


def test_trailers_are_read_as_headers_none_a_credential_slot() -> None:
    assert str(leakguard.scan_trailers([("X-Org", ACME)], RULES)) == "literal in trailer x-org"
    assert str(leakguard.scan_trailers([("x-api-key", "Acme\r\n Corp")], RULES)) == "literal in trailer x-api-key"
    assert leakguard.scan_trailers([("x-org", "Zenith Labs")], RULES) is None
