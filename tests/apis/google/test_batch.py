"""The Gemini API's Batch Mode: a batch of generateContent requests inline
(:batchGenerateContent) is masked request by request, the client's metadata with it; the
long-running operation read back (GET batches/{id}, the list) has its inline responses
restored as generateContent's (thought parts as they came). OpenAI's /v1/batches are not
Google's."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis import registry as engine
from disguiselib.apis.google import gemini
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from strategies import RULES

EMAIL = "bob@corp.example.com"


@pytest.mark.parametrize(
    ("method", "path", "api"),
    [
        ("POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent", engine.GOOGLE_BATCH),
        ("POST", "/v1beta/models/gemini-2.5-flash%3AbatchGenerateContent", engine.GOOGLE_BATCH),
        ("GET", "/v1beta/batches/b-1", engine.GOOGLE_BATCH_READ),
        ("GET", "/v1alpha/batches", engine.GOOGLE_BATCH_LIST),
        ("GET", "/v1/batches/batch_abc", None),  # OpenAI's
        ("POST", "/v1beta/batches/b-1:cancel", None),  # no body: scanned
        ("DELETE", "/v1beta/batches/b-1", None),
    ],
)
def test_routes(method: str, path: str, api: engine.Api | None) -> None:
    assert engine.recognise(method, path) is api


def test_a_batch_is_masked_request_by_request() -> None:
    req = {"contents": [{"role": "user", "parts": [{"text": f"Acme Corp: {EMAIL}"}]}],
           "systemInstruction": {"parts": [{"text": "You serve Acme Corp."}]}, "generationConfig": {"temperature": 0}}  # fmt: skip
    doc = {"batch": {"displayName": "Acme Corp nightly", "inputConfig": {"requests": {"requests": [
        {"request": req, "metadata": {"key": "Acme Corp-1"}}, {"request": {"contents": "plain"}}]}}}}  # fmt: skip
    out, session = mask_body(json.dumps(doc).encode(), gemini.BATCH_REQUEST, RULES)
    got = json.loads(out)["batch"]
    assert got["displayName"] == "Zenith Labs nightly"
    r1, r2 = got["inputConfig"]["requests"]["requests"]
    assert r1["request"]["contents"][0]["parts"][0]["text"] == "Zenith Labs: [EMAIL_1]"
    assert r1["request"]["systemInstruction"]["parts"][0]["text"] == "You serve Zenith Labs."
    assert r1["request"]["generationConfig"] == {"temperature": 0} and r1["metadata"] == {"key": "Zenith Labs-1"}
    assert r2 == {"request": {"contents": "plain"}} and session.placeholders == {"[EMAIL_1]": EMAIL}
    by_file = {"batch": {"inputConfig": {"fileName": "files/Acme Corp"}}}  # an id: the upload was scanned
    assert json.loads(mask_body(json.dumps(by_file).encode(), gemini.BATCH_REQUEST, RULES)[0]) == by_file


def test_the_operation_read_back_is_restored() -> None:
    r = RULES.restorer({})
    resp = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Zenith Labs is thinking", "thought": True, "thoughtSignature": "c2ln"},
        {"text": "Zenith Labs done"}]}, "finishReason": "STOP"}]}  # fmt: skip
    out = {"inlinedResponses": {"inlinedResponses": [{"metadata": {"key": "Zenith Labs-1"}, "response": resp},
                                                     {"error": {"code": 3, "message": "Zenith Labs failed"}}]}}  # fmt: skip
    op = {"name": "batches/b-1", "done": True, "metadata": {"displayName": "Zenith Labs nightly", "output": out},
          "response": {"@type": "x", **out}}  # fmt: skip
    for doc, rule, pick in ((op, gemini.BATCH_OPERATION, lambda d: d),
                            ({"operations": [op]}, gemini.BATCH_LIST, lambda d: d["operations"][0])):  # fmt: skip
        got = pick(json.loads(restore_body(json.dumps(doc).encode(), rule, r)))
        assert got["metadata"]["displayName"] == "Acme Corp nightly"
        for where in (got["metadata"]["output"], got["response"]):
            first, second = where["inlinedResponses"]["inlinedResponses"]
            assert first["metadata"] == {"key": "Acme Corp-1"}
            parts = first["response"]["candidates"][0]["content"]["parts"]
            assert parts[0] == resp["candidates"][0]["content"]["parts"][0]  # a thought: as it came
            assert parts[1]["text"] == "Acme Corp done"
            assert second["error"]["message"] == "Acme Corp failed"
