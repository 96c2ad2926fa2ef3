"""Request masking (base/masking.py): a JSON body through its API's field rules.

A value in user-defined JSON is masked with its key in view: `{"client_secret": "…"}`
must meet the rules anchored on the key, whether the JSON is a tool's input or JSON
text inside a string (a tool result holding a config file). JSON text that does not
parse is masked decoded, literal by literal; placeholders are numbered around the
ones the client wrote itself."""

from __future__ import annotations

import base64
import json

import pytest

from conftest import REPO
from disguiselib import pipeline
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.base import fields
from disguiselib.base.document import same
from disguiselib.base.masking import mask_body, mask_doc, mask_fn
from disguiselib.base.present import present_placeholders
from disguiselib.config import Config
from disguiselib.errors import MaskError
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules, Session
from strategies import RULES

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


def test_a_url_value_is_read_decoded_with_its_key_in_view() -> None:
    """`{"client_secret": "mailto:%53yUA..."}`: as written the escape keeps the rule
    anchored on the key from reading the value; decoded (the URL's reading) it does, so
    the decoded text is masked with the key in view too."""
    from urllib.parse import unquote_plus

    for v in ("mailto:%53" + SECRET[1:], f"mailto:{SECRET[:10]}%41{SECRET[11:]}"):
        body = {"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": {"client_secret": v, "n": 1}}]}]}  # fmt: skip
        out = _masked(body, anthropic.MESSAGES_REQUEST)
        assert SECRET not in unquote_plus(out) and '"client_secret": "[SECRET_1]"' in out, out
        body["messages"][0]["content"][0]["input"] = {"note": v}  # (the key's doing: alone it is no secret)
        assert SECRET in unquote_plus(_masked(body, anthropic.MESSAGES_REQUEST))


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
    from disguiselib.rules.rules import Session

    return Session()


# -- JSON text cut short, placeholders the client wrote, what is refused -------------------


def _chat_args(args: str) -> dict:
    return {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}]}]}  # fmt: skip


@pytest.mark.parametrize("tail", ["\\", "\\u", "\\u0", "\\u00", "\\u00e"])
def test_arguments_cut_in_a_partial_escape_still_get_their_original_masked(tail: str) -> None:
    """Tool arguments cut short inside the literal that holds an original spelled with
    escapes, right in the middle of an escape (`\\`, `\\u`, ... `\\u00e`): the literal
    is decoded up to the cut, the original masked, the partial escape kept as it came."""
    cut = '{"path": "C:\\\\Users\\\\a \\"b\\" ' + tail
    out, session = mask_body(json.dumps(_chat_args(cut)).encode(), openai_chat.CHAT_REQUEST, RULES)
    args = json.loads(out)["messages"][0]["tool_calls"][0]["function"]["arguments"]
    assert args == '{"path": "WINPATH ' + tail
    assert session.masked == 1


def test_placeholders_the_client_wrote_are_found_also_when_escaped() -> None:
    s = '{"a": "[EMAIL_1] and \\u005bEMAIL_2\\u005d and [EMAIL_0] [OTHER_3]"}'
    assert present_placeholders(s, RULES) == {"[EMAIL_1]", "[EMAIL_2]"}
    assert present_placeholders('{"a": "no brackets"}', RULES) == frozenset()
    body = {"model": "m", "messages": [{"role": "user", "content": "[EMAIL_1] is mine; bob@corp.example.com"}]}
    out, session = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
    assert json.loads(out)["messages"][0]["content"] == "[EMAIL_1] is mine; [EMAIL_2]"
    assert session.placeholders == {"[EMAIL_2]": "bob@corp.example.com"}


def test_a_body_masked_returns_new_bytes_and_an_unchanged_one_its_own() -> None:
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": "nothing to hide"}]}).encode()
    out, session = mask_body(raw, openai_chat.CHAT_REQUEST, RULES)
    assert out is raw and session.masked == 0
    out, session = mask_body(raw, None, RULES)  # a retrieval: no model input
    assert out is raw and session.placeholders == {}


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"{nope", b"\xff{}"])
def test_a_body_that_is_not_a_json_object_is_refused(raw: bytes) -> None:
    with pytest.raises(MaskError):
        mask_body(raw, openai_chat.CHAT_REQUEST, RULES)


def test_a_string_holding_json_is_masked_as_json_with_its_escapes_decoded() -> None:
    inner = json.dumps({"who": "Ünïcødé GmbH", "Acme Corp": 1})  # ensure_ascii: escapes
    body = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "t", "content": inner}]}
    out, _ = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
    content = json.loads(out)["messages"][0]["content"]
    assert json.loads(content) == {"who": "Unicode Ltd", "Zenith Labs": 1}


def test_a_refusal_says_why_the_body_cannot_be_masked() -> None:
    """The reason the client reads (and the flow records): what is wrong with the body,
    never its text."""
    with pytest.raises(MaskError) as e:
        mask_body(b'["Acme Corp"]', openai_chat.CHAT_REQUEST, RULES)
    assert str(e.value) == "body is not a JSON object"
    dup = b'{"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}], "messages": "x"}'
    with pytest.raises(MaskError) as e:
        mask_body(dup, openai_chat.CHAT_REQUEST, RULES)
    assert str(e.value) == "body repeats the key at $ (the path not shown) with values that differ"
    deep = json.dumps({"model": "m", "messages": [{"role": "tool", "tool_call_id": "t",
                                                   "content": "[" * 100_000 + "]" * 100_000}]}).encode()  # fmt: skip
    with pytest.raises(MaskError) as e:
        mask_body(deep, openai_chat.CHAT_REQUEST, RULES)
    assert str(e.value) == "a string holds JSON nested too deeply to be read"
    with pytest.raises(MaskError) as e:
        mask_body(b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", openai_chat.CHAT_REQUEST, RULES)
    assert str(e.value) == "body is nested too deeply to be read"


def test_a_text_that_only_begins_like_json_is_masked_as_text() -> None:
    """A message text beginning with `[` or `{` that is no JSON is read as the text it is
    (fields.plain cannot settle it from its first byte: the compiled walk asks it)."""
    for text in ("[1] Acme Corp wrote", "{draft} Acme Corp"):
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        out, _ = mask_body(json.dumps(body).encode(), openai_chat.CHAT_REQUEST, RULES)
        assert json.loads(out)["messages"][0]["content"] == text.replace("Acme Corp", "Zenith Labs")


def test_text_media_with_nothing_to_mask_is_left_as_the_client_wrote_it() -> None:
    """mask_fn on base64 text media holding no original gives the very string back:
    its line breaks (MIME style, 76 a line) kept, not the media encoded again."""
    b64 = base64.encodebytes(b"nothing to hide here\n" * 8).decode()
    doc = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": b64}}]}]}  # fmt: skip
    (f,) = [f for f in fields.walk(fields.loads(json.dumps(doc)), anthropic.MESSAGES_REQUEST) if f.value == b64]
    assert "\n" in b64 and mask_fn(RULES, Session())(b64, f.rule, f.key) == b64
    acme = base64.encodebytes(b"Acme Corp\n" * 16).decode()
    assert base64.b64decode(mask_fn(RULES, Session())(acme, f.rule, f.key)) == b"Zenith Labs\n" * 16


def test_a_key_that_reads_as_json_is_masked_as_it_is_written() -> None:
    """A member name is masked as written (mask_fn reads a key as it is), so the scan
    lists it as written too, not the JSON it may parse as: a literal that is a number
    inside a key shaped like JSON (`[20481]`) is found and masked."""
    rules = Rules(mappings.from_dict({"literals": {"20481": "31337"}}))
    for key, masked in (("[20481]", "[31337]"), ('{"n": 20481}', '{"n": 31337}'), ("[true, 20481]", "[true, 31337]")):
        tool = {"type": "tool_use", "id": "t", "name": "n", "input": {key: 1}}
        raw = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [tool]}]})
        out, _ = mask_body(raw.encode(), anthropic.MESSAGES_REQUEST, rules)
        assert json.loads(out)["messages"][0]["content"][0]["input"] == {masked: 1}


@pytest.mark.parametrize("lead", ['"', "\n", "é", "\\"])
def test_a_big_text_with_one_escape_at_its_very_start_or_end_is_spliced_as_written(lead: str) -> None:
    """A big text's many edits are spliced as they are (masking._Token) only into a token
    with no escape in it: the offsets are the value's. One escape, at the token's first
    or last character, is enough to send it the other way (jsonspan.apply): the same
    bytes as with lists, and what they parse to is the text masked. (Without the escape
    the text takes the _Token path.)"""
    from disguiselib.rules import bigtext, prescan
    from disguiselib.rules.found import Found

    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    for text in ("Acme Corp, " * 70, lead + "Acme Corp, " * 70, "Acme Corp, " * 70 + lead):
        raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
        rules.found = Found(limit=0)
        want, _ = mask_body(raw, anthropic.MESSAGES_REQUEST, rules, {})
        saved = bigtext.BIG, bigtext.WINDOW, prescan.JOIN_MAX
        # every text big (columns: more than 64 edits in a string), scanned alone
        bigtext.BIG, bigtext.WINDOW, prescan.JOIN_MAX = 0, 7, 0
        try:
            rules.found = Found(limit=0)
            got, _ = mask_body(raw, anthropic.MESSAGES_REQUEST, rules, {})
        finally:
            bigtext.BIG, bigtext.WINDOW, prescan.JOIN_MAX = saved
        assert got == want
        assert json.loads(got)["messages"][0]["content"] == text.replace("Acme Corp", "Zenith Labs")


def test_the_masked_body_is_spliced_in_chunks_into_one_text() -> None:
    """masking._splice joins its pieces a chunk (8,192) at a time, a big text's edits
    (_Token) piece by piece among them: over several chunks, inside a _Token and around
    it, the text is what splicing the same edits at once gives."""
    from disguiselib.base.masking import _splice, _Token
    from disguiselib.wire import jsonspan, text

    s = "ab" * 30_000
    edits = [(i, i + 1, f"<{i}>") for i in range(0, 60_000, 3)]  # 20,000 edits: 40,001 pieces
    assert _splice(s, edits) == jsonspan.splice(s, edits)
    value = "é Acme " * 5_000  # a token with no escape; replacements encoded in its style
    body = '{"a": "x", "b": "' + value + '", "c": "y"}'
    start = body.index(value)
    cols = text.Columns("qqo")
    for i in range(2, len(value) - 4, 7):
        cols.append((i, i + 4, 'Z"' if i % 2 else "Z"))
    tok = _Token(body, start, start + len(value), cols, False)
    want = json.dumps(jsonspan.splice(value, list(cols)), ensure_ascii=False)[1:-1]  # the token's style
    assert len(tok) == len(want)
    outer = [(7, 8, "A"), (start, start + len(value), tok), (len(body) - 3, len(body) - 2, "C")]
    spliced = _splice(body, outer)
    assert spliced == body[:7] + "A" + body[8:start] + want + body[start + len(value) : -3] + "C" + body[-2:]
    assert json.loads(spliced) == {"a": "A", "b": jsonspan.splice(value, list(cols)), "c": "C"}


def test_masking_lets_the_changed_texts_go_before_it_makes_the_masked_text(monkeypatch) -> None:
    """mask_body's read callback and what it lets go (memory: a 200 MB string is not held
    twice while the masked text is made): read is called once masking changed something,
    before the masked text is made, with every text masking read in scanned, the changed
    ones marked None; then those leave scanned (the guard scans them again) and their old
    values leave the document and the walk's list before the splice; masked_doc puts the
    new ones in. A body masking leaves as it is calls read not at all."""
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES
    from disguiselib.base import masking

    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    seen: list = []
    scanned: dict = {}
    real_splice, real_masked_doc = masking._splice, masking.masked_doc

    def splice(s: str, edits: list) -> str:
        seen.append(("splice", dict(scanned)))
        return real_splice(s, edits)

    def masked(s: str, out: str, doc, trace: dict):  # noqa: ANN001, ANN202 - as masked_doc's
        seen.append(("doc", doc["messages"][0]["content"], [trace["toks"].vals[t] for t, _ in trace["ranges"]]))
        return real_masked_doc(s, out, doc, trace)

    monkeypatch.setattr(masking, "_splice", splice)
    monkeypatch.setattr(masking, "masked_doc", masked)
    raw = json.dumps({"model": "m", "system": "be brief", "messages": [
        {"role": "user", "content": "Acme Corp here"}]}).encode()  # fmt: skip
    parsed: list = []
    body, _ = masking.mask_request_body(raw, ANTHROPIC_MESSAGES, rules, "application/json", scanned, parsed,
                                        read=lambda: seen.append(("read", dict(scanned))))
    assert json.loads(body)["messages"][0]["content"] == "Zenith Labs here"
    (r, at_read), (sp, at_splice), (d, value, vals) = seen
    assert (r, sp, d) == ("read", "splice", "doc")
    assert at_read["Acme Corp here"] is None and "be brief" in at_read
    assert "Acme Corp here" not in at_splice and "be brief" in at_splice and at_splice == scanned
    assert not value and vals and not any(vals)  # let go: None
    assert parsed == [(body, fields.loads(body.decode()))]
    seen.clear()
    same = json.dumps({"model": "m", "system": "be brief"}).encode()
    assert masking.mask_request_body(same, ANTHROPIC_MESSAGES, rules, "", {}, [],
                                     read=lambda: seen.append("read"))[0] is same
    assert "read" not in seen


def test_an_empty_rule_set_changes_no_token() -> None:
    doc = {"model": "m", "system": "Acme Corp"}
    s = json.dumps(doc)
    empty = Rules(mappings.from_dict({}))
    assert mask_doc(s, doc, anthropic.MESSAGES_REQUEST, empty, Session()) == (s, 0)
    assert mask_doc(s, doc, anthropic.MESSAGES_REQUEST, empty, Session(), spliced=False) == ([], 0)



def test_a_text_met_again_after_its_scan_was_spent_is_scanned_again() -> None:
    """Masking a string spends what the scan found in its texts (memory: a big text's
    matches): the memo then says "scan it again" (None). The same text in a later
    string is scanned again and masked the same, also where nothing remembers it
    (Found(limit=0)) and with no scanned dict (realtime events, batch lines)."""
    from disguiselib.rules.found import Found

    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    rules.found = Found(limit=0)
    raw = json.dumps({"model": "m", "system": "Acme Corp", "messages": [{"role": "user", "content": "Acme Corp"}]})
    out, _ = mask_body(raw.encode(), anthropic.MESSAGES_REQUEST, rules)
    assert json.loads(out) == {"model": "m", "system": "Zenith Labs", "messages": [{"role": "user", "content": "Zenith Labs"}]}


@pytest.mark.parametrize("json_text", [False, True], ids=["tool input", "JSON text"])
def test_a_key_is_read_with_its_members_string_value_whatever_else_the_text_holds(json_text: bool) -> None:
    """A rule anchored on a key (`"tag": "sec-1"`) meets a member's string value, not the
    strings of an array under the key (the guard reads those alone), in a tool's input
    and in JSON text alike, whether or not the text also holds an original that makes
    masking read it again (mask_fn's walk of JSON text: the same keys as its scan's)."""
    from disguiselib import leakguard

    rules = Rules(mappings.from_dict({
        "literals": {"Acme Corp": "Zenith Labs"},
        "patterns": [{"name": "TAGGED", "regex": '"tag": "(?P<v>sec-[0-9]+)"'}]}))  # fmt: skip
    for who in ("Acme Corp", "nobody"):
        args = {"tag": "sec-1", "tags": {"tag": ["sec-2", "sec-3"]}, "who": who}
        if json_text:
            call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": json.dumps(args)}}
            raw = json.dumps({"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]}).encode()
            out, _ = mask_body(raw, openai_chat.CHAT_REQUEST, rules)
            got = json.loads(json.loads(out)["messages"][0]["tool_calls"][0]["function"]["arguments"])
            api_rule = openai_chat.CHAT_REQUEST
        else:
            tool = {"type": "tool_use", "id": "t", "name": "f", "input": args}
            raw = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [tool]}]})
            out, _ = mask_body(raw.encode(), anthropic.MESSAGES_REQUEST, rules)
            got = json.loads(out)["messages"][0]["content"][0]["input"]
            api_rule = anthropic.MESSAGES_REQUEST
        assert got["tag"] == "[TAGGED_1]", who
        assert got["tags"] == {"tag": ["sec-2", "sec-3"]}, who
        assert got["who"] == ("Zenith Labs" if who == "Acme Corp" else who)
        assert leakguard.scan_json(fields.loads(out.decode()), rules, api_rule) is None


@pytest.mark.parametrize(
    ("root", "body", "place"),
    [
        (anthropic.MESSAGES_REQUEST,
         b'{"model": "m", "messages": [{"role": "assistant", "content": [{"type": "text", "type": "thinking",'
         b' "text": "Acme Corp", "thinking": "t", "signature": "s"}]}]}', "$.messages[0].content[0].type"),
        (anthropic.MESSAGES_REQUEST,
         b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "base64",'
         b' "media_type": "text/plain", "media_type": "application/pdf", "data": "QWNtZSBDb3Jw"}}]}]}',
         "$.messages[0].content[0].source.media_type"),
        (openai_responses.RESPONSES_REQUEST,
         b'{"model": "m", "input": [{"type": "message", "type": "reasoning", "role": "user",'
         b' "content": [{"type": "input_text", "text": "Acme Corp"}], "summary": []}]}', "$.input[0].type"),
        ("gemini", b'{"contents": [{"role": "user", "parts": [{"text": "Acme Corp", "thought": false, "thought": true}]}]}',
         "$.contents[0].parts[0].thought"),
    ],
)  # fmt: skip
def test_a_key_that_decides_a_blocks_kind_repeated_with_values_that_differ_is_refused(root, body, place) -> None:
    """E2 (stop 65): json.loads keeps a repeated key's last value, a provider or a gateway
    may keep the first. The masker read these blocks by the last (thinking, binary
    media, reasoning, a thought part) and left them as they came; a first-wins reader
    saw model text holding an original. Refused, naming the place, never the values."""
    from disguiselib.errors import PlacedMaskError
    from disguiselib.leakguard import json_place

    if root == "gemini":
        from disguiselib.apis.google.gemini import GENERATE_REQUEST as root
    with pytest.raises(PlacedMaskError) as e:
        mask_body(body, root, RULES)
    assert e.value.at(lambda p: json_place(RULES, p)) == f"body repeats the key at {place} with values that differ"
    assert "Acme" not in str(e.value) and "QWNt" not in str(e.value)


def test_a_key_repeated_with_the_same_value_is_masked_pair_by_pair() -> None:
    """The same value twice reads the same whichever a reader keeps: masked, both pairs."""
    body = (b'{"model": "m", "messages": [{"role": "user", "role": "user", "content": [{"type": "text",'
            b' "text": "Acme Corp", "text": "Acme Corp", "n": {"a": 1, "a": 1}}]}]}')  # fmt: skip
    out, _ = mask_body(body, anthropic.MESSAGES_REQUEST, RULES)
    assert out == body.replace(b"Acme Corp", b"Zenith Labs")


@pytest.mark.parametrize("value", ['["Acme Corp", "ab"]', '{"x": "Acme Corp"}', '[{"x": ["Acme Corp"]}]', '"Acme Corp"', '{"Acme Corp": "x"}'])
@pytest.mark.parametrize("form", ['{{"k": {v}, "k": {v}}}', '{{"k": 1, "k": 1, "z": {v}}}'], ids=["twice", "beside"])
def test_a_key_repeated_with_the_same_container_is_masked_and_the_guard_reads_what_leaves(value: str, form: str) -> None:
    """A key repeated with the same array or object: the walk reads each copy against the
    one the parse keeps (the last), so its masked strings are two tokens of one place;
    the document handed to the guard (parsed) is then none (the guard parses the masked
    bytes) rather than the last copy masked twice and the first copies as they came,
    and the pipeline sends every copy masked instead of refusing an original it masked.
    (A string member of an object that repeats a key, that key's or another's: none
    either, the object's pairs being what the guard reads.)"""
    value = form.format(v=value)
    tool = f'{{"type": "tool_use", "id": "t", "name": "f", "input": {value}}}'
    body = f'{{"model": "m", "max_tokens": 5, "messages": [{{"role": "assistant", "content": [{tool}]}}]}}'.encode()
    parsed: list = []
    out, _ = mask_body(body, anthropic.MESSAGES_REQUEST, RULES, None, parsed)
    assert out == body.replace(b"Acme Corp", b"Zenith Labs")
    assert all(same(doc, fields.loads(got.decode())) for got, doc in parsed)
    config = Config(RULES, (), (), False, (), None)
    verdict = pipeline.mask_request(ANTHROPIC_MESSAGES, body, config, "/v1/messages", [])
    assert type(verdict) is pipeline.Masked and verdict.body == out
