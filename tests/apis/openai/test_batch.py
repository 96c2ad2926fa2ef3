"""OpenAI Batch files (apis/openai/batch.py): the upload masked line by line by each line's
API table, every other byte kept; results restored line by line; binary files as they came."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis.openai.batch import restore_results
from disguiselib.apis.registry import OPENAI_FILES
from disguiselib.base.masking import mask_request_body
from disguiselib.errors import MaskError, NotTransformed
from strategies import RULES

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
