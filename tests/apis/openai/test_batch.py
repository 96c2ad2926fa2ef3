"""OpenAI Batch files (apis/openai/batch.py): the upload masked line by line by each line's
API table, every other byte kept; results restored line by line; binary files as they came."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.apis.openai.batch import restore_results
from disguiselib.apis.registry import OPENAI_FILES
from disguiselib.base.masking import mask_request_body
from disguiselib.errors import MaskError, NotTransformed
from disguiselib.rules.restorer import TEXT
from strategies import JSON_DISGUISES, RULES, json_answer, json_originals, literal_restorer

CT = "multipart/form-data; boundary=B0"


def upload(jsonl: bytes, purpose: bytes = b"batch", name: str = "Acme Corp.jsonl") -> bytes:
    return (b"--B0\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + b"\r\n"
            b"--B0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + name.encode() + b"\"\r\n"
            b"Content-Type: application/jsonl\r\n\r\n" + jsonl + b"\r\n--B0--\r\n")  # fmt: skip


def test_each_line_is_masked_by_its_api_and_the_rest_kept() -> None:
    lines = [
        {"custom_id": "Acme Corp 1", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "Acme Corp", "messages": [{"role": "user", "content": "mail bob@corp.example.com"}]}},
        {"custom_id": "2", "method": "POST", "url": "/v1/unknown", "body": {"x": {"id": "Acme Corp"}}},
    ]  # fmt: skip
    jsonl = b"".join(json.dumps(x).encode() + b"\r\n" for x in lines)
    body = upload(jsonl)
    out, session = mask_request_body(body, OPENAI_FILES, RULES, CT)
    assert session.placeholders == {"[EMAIL_1]": "bob@corp.example.com"}
    assert b'filename="Zenith Labs.jsonl"' in out
    part = out.split(b"\r\n\r\n")[2].split(b"\r\n--B0--")[0]
    got = [json.loads(x) for x in part.split(b"\r\n") if x]
    assert got[0]["custom_id"] == "Zenith Labs 1"  # the client's id: masked (fields.CLIENT_ID)
    assert got[1]["custom_id"] == "2"  # one with no original: as it came
    assert got[0]["body"]["model"] == "Acme Corp"  # the model name: the API's own
    assert got[0]["body"]["messages"][0]["content"] == "mail [EMAIL_1]"
    assert got[1]["body"] == {"x": {"id": "Zenith Labs"}}  # a url no table knows: everything
    assert out.startswith(body[: body.index(b"filename")])  # every other byte as it came


def test_not_a_batch_and_broken_batches() -> None:
    with pytest.raises(NotTransformed):
        mask_request_body(upload(b'{"a": 1}\n', b"fine-tune"), OPENAI_FILES, RULES, CT)
    with pytest.raises(NotTransformed):
        mask_request_body(b"{}", OPENAI_FILES, RULES, "application/json")
    with pytest.raises(MaskError, match="line 2 is not JSON"):
        mask_request_body(upload(b'{"a": 1}\nnot json\n'), OPENAI_FILES, RULES, CT)


def test_results_are_restored_and_binary_files_pass() -> None:
    r = RULES.restorer({})
    line = {"id": "b1", "custom_id": "Zenith Labs", "response": {"status_code": 200, "body": {
        "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Zenith Labs"}}]}}}
    out = json.loads(restore_results(json.dumps(line).encode() + b"\n", r))
    assert out["response"]["body"]["choices"][0]["message"]["content"] == "Acme Corp"
    assert out["custom_id"] == "Acme Corp"  # the client's id, masked in the upload: restored
    png = b"\x89PNG\r\n\x1a\n Zenith Labs \xff\x00"
    assert restore_results(png, r) is png


@settings(max_examples=40, deadline=None)
@given(originals=json_originals, order=st.permutations(["json_schema", "text", "chat", "json_object"]))
def test_a_responses_result_says_its_answer_is_json(originals: list[str], order: list[str]) -> None:
    """Results are fetched apart from the batch (no state ties them to its requests): a
    Responses result says what it asked for in its own `text.format`, line by line (a JSON
    line's reading does not carry over to the next); a Chat Completions result says nothing:
    text, as before."""
    text = json.dumps(json_answer(JSON_DISGUISES))

    def body(kind: str) -> dict:
        if kind == "chat":
            return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                                      "content": text}}]}  # fmt: skip
        return {"object": "response", "text": {"format": {"type": kind}}, "output": [{"type": "message",
                "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}]}  # fmt: skip

    lines = [{"id": f"b{n}", "custom_id": kind, "response": {"status_code": 200, "body": body(kind)}}
             for n, kind in enumerate(order)]  # fmt: skip
    r = literal_restorer(originals)
    out = restore_results("".join(json.dumps(x) + "\n" for x in lines).encode(), r)
    for line in map(json.loads, out.decode().splitlines()):
        b = line["response"]["body"]
        got = b["choices"][0]["message"]["content"] if line["custom_id"] == "chat" else b["output"][0]["content"][0]["text"]
        if line["custom_id"].startswith("json"):
            assert json.loads(got) == json_answer(originals)
        else:
            assert got == literal_restorer(originals).text(text)
    assert r.output == TEXT


def _upload_with(disposition: str, header: str = "") -> bytes:
    line = {"custom_id": "1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}  # fmt: skip
    return (b"--B0\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            b"--B0\r\nContent-Disposition: " + disposition.encode() + b"\r\n" + header.encode()
            + b"Content-Type: application/jsonl\r\n\r\n" + json.dumps(line).encode() + b"\r\n--B0--\r\n")  # fmt: skip


@pytest.mark.parametrize(
    ("disposition", "header"),
    [
        ('form-data; name="file"; filename="a.jsonl"; x-note="Acme Corp"', ""),
        ("form-data; name=\"file\"; filename*0*=UTF-8''Acme%20; filename*1*=Corp.jsonl", ""),  # RFC 2231, continued
        ('form-data; name="file"; filename="=?UTF-8?B?QWNtZSBDb3JwLmpzb25s?="', ""),  # RFC 2047
        ('form-data; name="file"; filename="a.jsonl"', "X-Note: Acme Corp\r\n"),
    ],
    ids=["parameter", "continued-name", "encoded-word", "header"],
)
def test_an_original_in_a_part_header_nothing_masks_is_refused(disposition: str, header: str) -> None:
    """The masker masks a part's file name alone (filename, filename*); the guard read that
    and nothing else of a part's headers, so another header, another parameter or a name
    written otherwise went out with its original."""
    out, _ = mask_request_body(_upload_with(disposition, header), OPENAI_FILES, RULES, CT)
    hit = leakguard.scan_body(out, RULES, OPENAI_FILES, CT)
    assert hit is not None and hit.where.startswith("part 2 header"), hit
    assert "Acme" not in hit.where


def test_a_file_name_the_masker_masks_passes_the_guard() -> None:
    for disposition in ('form-data; name="file"; filename="Acme Corp.jsonl"',
                        "form-data; name=\"file\"; filename*=UTF-8''Acme%20Corp.jsonl"):  # fmt: skip
        out, _ = mask_request_body(_upload_with(disposition), OPENAI_FILES, RULES, CT)
        assert b"Acme" not in out and b"Zenith" in out
        assert leakguard.scan_body(out, RULES, OPENAI_FILES, CT) is None


def test_a_line_repeating_a_key_with_values_that_differ_is_refused() -> None:
    """E2 (stop 65) in a batch file: a line whose input item says `message` and then
    `reasoning` was read by the last (reasoning: left as it came); a first-wins reader
    saw a message holding an original. Refused naming the line and the place; a key
    repeated with the same value is masked pair by pair."""
    from disguiselib import pipeline
    from disguiselib.config import Config

    ok = {"custom_id": "1", "method": "POST", "url": "/v1/responses", "body": {"model": "m", "input": "hi"}}
    bad = (b'{"custom_id": "2", "method": "POST", "url": "/v1/responses", "body": {"model": "m", "input": [{"type":'
           b' "message", "type": "reasoning", "role": "user", "content": [{"type": "input_text", "text": "Acme Corp"}],'
           b' "summary": []}]}}')  # fmt: skip
    body = upload(json.dumps(ok).encode() + b"\n" + bad + b"\n", name="f.jsonl")
    v = pipeline.mask_request(OPENAI_FILES, body, Config(RULES, (), (), False, (), None), "/v1/files",
                              [("content-type", CT)])  # fmt: skip
    assert isinstance(v, pipeline.Refused)
    assert v.reason == "batch file line 2 repeats the key at $.body.input[0].type with values that differ"
    same = bad.replace(b'"type": "reasoning", ', b'"type": "message", ')
    out, _ = mask_request_body(upload(same + b"\n", name="f.jsonl"), OPENAI_FILES, RULES, CT)
    assert b"Acme Corp" not in out and out.count(b"Zenith Labs") == 1
