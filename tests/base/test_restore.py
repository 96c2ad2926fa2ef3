"""Whole-body restore (base/restore.py): a JSON document, JSON lines or text through
the reverse rules; the field helpers the streams use."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.base.fields import GENERIC
from disguiselib.base.restore import decode_field, dumps, reencode_field, restore_body, restore_json
from strategies import PLACEHOLDERS, RULES

R = RULES.restorer(PLACEHOLDERS)


@pytest.mark.parametrize("ascii_token", [True, False])
def test_a_lone_surrogate_escape_next_to_a_disguise_is_restored(ascii_token: bool) -> None:
    """Half of a surrogate pair (`\\ud83d`) right before and after a disguise: the disguise
    is restored, the lone half stays an escape, and the body still parses to the same
    lone surrogate (a body is restored whole, never dropped or refused for it)."""
    extra = "" if ascii_token else "é"
    raw = ('{"content":[{"type":"text","text":"' + extra + '\\ud83dZenith Labs\\ude00 and [EMAIL_1]"}]}').encode()
    out = restore_body(raw, anthropic.MESSAGE_RESPONSE, RULES.restorer(PLACEHOLDERS))
    text = json.loads(out)["content"][0]["text"]
    assert text == extra + "\ud83dAcme Corp\ude00 and bob@corp.example.com"
    assert b"\\ud83d" in out and b"\\ude00" in out  # still escapes: the body is UTF-8
    out.decode("utf-8")


def test_json_lines_are_restored_line_by_line_and_keep_their_line_ends() -> None:
    lines = [json.dumps({"custom_id": "a", "result": {"type": "succeeded", "message": {
        "content": [{"type": "text", "text": "Zenith Labs"}]}}}), "", json.dumps({"custom_id": "Zenith Labs"})]
    raw = ("\r\n".join(lines) + "\n").encode()
    out = restore_body(raw, anthropic.BATCH_RESULT, R).decode()
    got = out.split("\r\n")
    assert json.loads(got[0])["result"]["message"]["content"][0]["text"] == "Acme Corp"
    assert got[1] == "" and json.loads(got[2]) == {"custom_id": "Acme Corp"}  # the client's id: restored
    assert out.endswith("\n") and out.count("\r\n") == 2


def test_text_and_bytes_that_are_not_utf8_are_restored_around_them() -> None:
    assert restore_body(b"plain Zenith Labs", GENERIC, R) == b"plain Acme Corp"
    raw = b"\xff Zenith Labs \xfe"
    assert restore_body(raw, GENERIC, R) == b"\xff Acme Corp \xfe"
    raw = b'{"broken": "Zenith Labs'  # JSON-like text that does not parse: as JSON text
    assert restore_body(raw, GENERIC, R) == b'{"broken": "Acme Corp'
    same = b'{"a": "nothing"}'
    assert restore_body(same, GENERIC, R) is same
    assert restore_body(b"no change", GENERIC, R) == b"no change"


def test_restore_json_says_none_when_nothing_changed() -> None:
    assert restore_json('{"a": "x"}', GENERIC, R) is None
    assert restore_json('{"a": "Zenith Labs"}', GENERIC, R) == '{"a": "Acme Corp"}'
    assert restore_json("Zenith Labs", GENERIC, R) == "Acme Corp"  # not JSON: a value
    assert restore_json("plain", GENERIC, R) is None
    assert restore_json('{"a": "Zenith Labs', GENERIC, R) == '{"a": "Acme Corp'


def test_field_helpers_decode_and_reencode_in_the_tokens_style() -> None:
    data = '{"t":"a\\u00e9 Zen","u":"plain"}'
    s = data.index("a\\u")
    e = data.index('","u"')
    assert decode_field(data, s, e) == "aé Zen"
    new = reencode_field(data, s, e, data[s:e], "aé Acme")
    assert json.loads(new) == {"t": "aé Acme", "u": "plain"} and "\\u00e9" in new  # ASCII token stays ASCII
    s2 = data.index("plain")
    assert decode_field(data, s2, s2 + 5) == "plain"


def test_dumps_is_compact_utf8_and_escapes_only_what_cannot_be_utf8() -> None:
    assert dumps({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'
    assert dumps({"a": "\ud83d"}) == '{"a":"\\ud83d"}'


def test_logprobs_of_a_whole_body_are_cleaned_where_a_disguise_was_restored() -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi Zenith Labs"},
                         "logprobs": {"content": [{"token": "hi", "logprob": -1, "bytes": [104, 105]},
                                                  {"token": " Zenith", "logprob": -1, "bytes": list(b" Zenith")},
                                                  {"token": " Labs", "logprob": -1, "bytes": list(b" Labs")}]},
                         "finish_reason": "stop"}]}  # fmt: skip
    out = json.loads(restore_body(json.dumps(body).encode(), openai_chat.CHAT_RESPONSE, R))
    assert out["choices"][0]["message"]["content"] == "hi Acme Corp"
    assert [e["token"] for e in out["choices"][0]["logprobs"]["content"]] == ["hi"]


def test_edit_json_lines_is_the_one_reading_of_json_lines() -> None:
    """Batch inputs (masked) and results (restored) are read by one loop: each non-blank
    line's document edited with its number, line ends and blank lines kept; a line that
    is not JSON is named by its number."""
    import pytest

    from disguiselib.base.restore import JsonLineError, edit_json_lines

    seen = []

    def edit(n: int, body: str, doc: object) -> str:
        seen.append((n, body, doc))
        return "X" + body

    assert edit_json_lines('{"a":1}\r\n\n  \n[2]', edit) == 'X{"a":1}\r\n\n  \nX[2]'
    assert seen == [(1, '{"a":1}', {"a": 1}), (4, "[2]", [2])]
    with pytest.raises(JsonLineError) as e:
        edit_json_lines('{"a":1}\nnot json\n', edit)
    assert e.value.number == 2 and isinstance(e.value.cause, ValueError)
    with pytest.raises(JsonLineError) as e:
        edit_json_lines("[" * 100_000 + "]" * 100_000, edit)
    assert e.value.number == 1 and isinstance(e.value.cause, RecursionError)


def test_each_field_of_an_answer_is_restored_as_its_rule_says() -> None:
    """Prose (text a user reads) loses the strip rules' tags; a value keeps them; JSON
    text gets its originals JSON-escaped; media passes as it came (restoring inside
    base64 could only corrupt it)."""
    from disguiselib.base.fields import media_text
    from disguiselib.base.restore import restore_fn
    from disguiselib.wire import jsonspan

    fn = restore_fn(R)
    assert fn("[[reply_to_current]] Zenith Labs", jsonspan.PROSE) == " Acme Corp"
    assert fn("[[reply_to_current]] Zenith Labs", jsonspan.VALUES) == "[[reply_to_current]] Acme Corp"
    assert fn('{"p": "[EMAIL_2]"}', jsonspan.JSON_TEXT) == '{"p": "q\\"uote\\\\d@x.io"}'
    assert fn("[EMAIL_2]", jsonspan.VALUES) == 'q"uote\\d@x.io'
    media = media_text("text/plain")
    assert media.media is not None and fn("Zenith Labs", media) == "Zenith Labs"


def test_json_lines_nested_too_deeply_are_an_error_not_passed_as_text() -> None:
    """A JSON-lines body one of whose lines is nested too deeply to read: the caller
    answers with an error (RecursionError), the line is not restored as mere text."""
    raw = ('{"a": "Zenith Labs"}\n' + "[" * 100_000 + "]" * 100_000 + "\n").encode()
    with pytest.raises(RecursionError):
        restore_body(raw, GENERIC, R)
    plain = b'{"a": "Zenith Labs"}\nnot json at all: Zenith Labs\n'  # not JSON lines: text
    assert restore_body(plain, GENERIC, R) == b'{"a": "Acme Corp"}\nnot json at all: Acme Corp\n'


def test_text_that_is_not_json_is_restored_as_json_text_or_as_a_value() -> None:
    """A body (or a string) that only begins like JSON gets its originals JSON-escaped,
    so it stays the JSON text it was meant to be; plain text gets them as they are."""
    assert restore_json('{"a": "[EMAIL_2]', GENERIC, R) == '{"a": "q\\"uote\\\\d@x.io'
    assert restore_json("to [EMAIL_2]", GENERIC, R) == 'to q"uote\\d@x.io'
    assert restore_body(b'{"a": "[EMAIL_2]', GENERIC, R) == b'{"a": "q\\"uote\\\\d@x.io'
    assert restore_body(b"to [EMAIL_2]", GENERIC, R) == b'to q"uote\\d@x.io'


def test_an_unchanged_body_is_the_same_bytes_object() -> None:
    for raw in (b"\xff nothing \xfe", b'{"a": 1}\n{"b": 2}\n', b"plain text", b'{"a": "x"'):
        assert restore_body(raw, GENERIC, R) is raw, raw


def test_dumps_escapes_a_lone_surrogate_and_stays_compact() -> None:
    assert dumps({"a": "\ud83d", "b": [1, 2]}) == '{"a":"\\ud83d","b":[1,2]}'


def test_a_json_line_error_names_its_line() -> None:
    from disguiselib.base.restore import JsonLineError, edit_json_lines

    with pytest.raises(JsonLineError) as e:
        edit_json_lines('{"a":1}\nnot json\n', lambda n, body, doc: body)
    assert str(e.value).startswith("line 2: ")
    seen: list[str] = []
    assert edit_json_lines('{"a":1}  \n', lambda n, body, doc: seen.append(body) or body) == '{"a":1}  \n'
    assert seen == ['{"a":1}  ']  # the line's own text, up to its line end only


_WIDE = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]  # "utf-16": with its BOM


@pytest.mark.parametrize("codec", _WIDE)
def test_a_body_in_utf16_or_utf32_is_restored_in_its_own_encoding(codec) -> None:
    """json.loads (so the SDKs) reads UTF-16 and UTF-32 bytes: such a body is restored
    and encoded back as it came (its byte-order mark kept), never passed disguised."""
    doc = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi Zenith Labs é 😀 [EMAIL_1]"}}]}
    raw = json.dumps(doc, ensure_ascii=False).encode(codec)
    out = restore_body(raw, openai_chat.CHAT_RESPONSE, RULES.restorer(PLACEHOLDERS))
    assert json.loads(out)["choices"][0]["message"]["content"] == "Hi Acme Corp é 😀 bob@corp.example.com"
    assert json.detect_encoding(out) == json.detect_encoding(raw)
    expect = json.dumps(doc, ensure_ascii=False).replace("Zenith Labs", "Acme Corp")
    expect = expect.replace("[EMAIL_1]", "bob@corp.example.com")
    assert out == expect.encode(codec)  # only the restored strings changed


@pytest.mark.parametrize("codec", _WIDE)
def test_a_wide_body_with_nothing_to_restore_is_returned_as_it_came(codec) -> None:
    raw = json.dumps({"text": "nothing here"}).encode(codec)
    assert restore_body(raw, GENERIC, R) is raw


def test_bytes_that_only_look_wide_are_read_as_any_other_bytes() -> None:
    """Zero bytes at the start but no UTF-16 (an odd length): the bytes path, as before."""
    raw = b"\x00\x01Zenith Labs"
    assert restore_body(raw, GENERIC, R) == b"\x00\x01Acme Corp"
