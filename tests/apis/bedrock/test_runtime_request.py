"""Bedrock request tables (sans I/O): every member botocore's service model knows is
classified, real recorded requests are masked with their signed reasoning untouched,
modelId forms, CountTokens."""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest

from disguiselib.apis.bedrock import runtime as bedrock
from disguiselib.apis.bedrock import stream as bedrock_stream
from disguiselib.apis.registry import recognise
from disguiselib.base.masking import mask_body
from disguiselib.errors import MaskError
from strategies import RULES

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "bedrock"
MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")

# Members not in the body (modelId is in the path); none is left to the fail-closed default
# since the tables are derived from the service model's shapes (apis/bedrock/shapes.py,
# tests/apis/bedrock/test_shapes.py).
DEFAULTED = {"ConverseRequest": {"modelId"}}
TABLES = {
    "ConverseRequest": bedrock._CONVERSE_FIELDS,
    "ContentBlock": bedrock.CONTENT_BLOCK.fields,
    "SystemContentBlock": bedrock._SYSTEM_BLOCK.fields,
    "ToolResultContentBlock": bedrock._TOOL_RESULT_BLOCK.fields,
    "Tool": bedrock._TOOL.fields,
    "DocumentSource": bedrock._DOC_SOURCE.fields,
    "CountTokensInput": bedrock.COUNT_TOKENS_REQUEST.fields["input"].fields,  # type: ignore[attr-defined]
}


@pytest.mark.parametrize("shape", sorted(TABLES))
def test_every_member_of_the_service_model_is_classified(shape: str) -> None:
    members = set(MODEL.shape_for(shape).members)
    missing = members - set(TABLES[shape]) - DEFAULTED.get(shape, set())
    assert not missing, f"{shape}: new members {sorted(missing)}: classify them in bedrock.py or DEFAULTED"


def test_every_stream_event_is_handled() -> None:
    events = set(MODEL.shape_for("ConverseStreamOutput").members)
    handled = {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
    exceptions = {e for e in events if e.endswith("Exception")}
    assert events == handled | exceptions
    assert bedrock_stream.EXCEPTION_TYPE in exceptions
    assert bedrock_stream.EXCEPTION_TYPE in MODEL.shape_for("ResponseStream").members


def test_recorded_converse_request_masked_reasoning_untouched() -> None:
    raw = (FIX / "converse_tool_result_thinking.request.json").read_bytes()
    doc = json.loads(raw)
    doc["messages"][0]["content"][0]["text"] = "Largest city where Acme Corp is?"
    doc["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["text"] += " Acme Corp"
    doc["toolConfig"]["tools"][0]["toolSpec"]["name"] = "acme_lookup"
    doc["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"] = {"session_id": {"type": "string"}}
    doc["messages"][2]["content"][0]["toolResult"]["content"][0]["text"] = "Acme Corp"
    out, _ = mask_body(json.dumps(doc).encode(), bedrock.CONVERSE_REQUEST, RULES)
    got = json.loads(out)
    assert got["messages"][0]["content"][0]["text"] == "Largest city where Zenith Labs is?"
    assert got["messages"][1]["content"][0] == doc["messages"][1]["content"][0]  # signed: byte-identical
    assert got["toolConfig"]["tools"][0]["toolSpec"]["name"] == "crm_lookup"
    assert got["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"] == {"thread_id": {"type": "string"}}
    assert got["messages"][2]["content"][0]["toolResult"]["content"][0]["text"] == "Zenith Labs"
    assert got["messages"][2]["content"][0]["toolResult"]["toolUseId"] == doc["messages"][2]["content"][0]["toolResult"]["toolUseId"]


def test_recorded_count_tokens_and_its_invoke_form() -> None:
    raw = (FIX / "count_tokens_converse.request.json").read_bytes().replace(b"Paris", b"Acme Corp")
    out, _ = mask_body(raw, bedrock.COUNT_TOKENS_REQUEST, RULES)
    assert b"Acme Corp" not in out and b"Zenith Labs" in out
    body = json.dumps({"input": {"invokeModel": {"body": "eyJhIjoiQWNtZSBDb3JwIn0="}}}).encode()
    with pytest.raises(MaskError, match="input.converse"):
        mask_body(body, bedrock.COUNT_TOKENS_REQUEST, RULES)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/model/anthropic.claude-sonnet-4-20250514-v1%3A0/invoke", "aws.bedrock.invoke"),
        ("/model/anthropic.claude-sonnet-4-20250514-v1:0/invoke-with-response-stream", "aws.bedrock.invoke"),
        ("/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream", "aws.bedrock.converse"),
        ("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fmi1dadi0g15f/converse",
         "aws.bedrock.converse"),
        ("/model/anthropic.claude-sonnet-4-20250514-v1%3A0/count-tokens", "aws.bedrock.count_tokens"),
    ],
)  # fmt: skip
def test_model_id_forms(path: str, name: str) -> None:
    api = recognise("POST", path)
    assert api is not None and api.name == name and api.signed


def test_a_document_of_a_text_format_is_masked_inside_and_binary_ones_are_not() -> None:
    """Converse `document.source.bytes` is base64 of a file in `format`: the model reads
    txt, csv, md and html decoded, so an original in one must not leave; pdf and the
    office formats pass byte-identical. The leak guard reads the same table."""
    from base64 import b64decode, b64encode

    from disguiselib import leakguard

    api = recognise("POST", "/model/anthropic.claude-3-haiku/converse")

    def block(fmt: str, text: str) -> dict:
        return {"document": {"format": fmt, "name": "notes", "source": {"bytes": b64encode(text.encode()).decode()}}}

    text_formats = ["txt", "csv", "md", "html"]
    content = [{"text": "read these"}, *(block(f, f"Acme Corp, {f}") for f in text_formats), block("pdf", "Acme Corp")]
    raw = json.dumps({"messages": [{"role": "user", "content": content}]}).encode()
    assert str(leakguard.scan_body(raw, RULES, api)).startswith("literal in body $.messages[0].content[1].document")
    new, _ = mask_body(raw, api.request_rule, RULES)
    got = json.loads(new)["messages"][0]["content"]
    for f, b in zip(text_formats, got[1:5], strict=True):
        assert b64decode(b["document"]["source"]["bytes"]).decode() == f"Zenith Labs, {f}"
    assert got[5] == content[5]  # binary: as it came
    assert leakguard.scan_body(new, RULES, api) is None
