"""AWS Bedrock (providers/bedrock.py): recognised only to be refused, with the reason,
in Bedrock's error shape; never forwarded, never reversed."""

from __future__ import annotations

import json

import pytest

from disguiselib.errors import MaskError, NeverForward, StreamError
from disguiselib.providers import bedrock
from disguiselib.providers import registry as engine
from disguiselib.providers.masking import mask_body
from strategies import RULES


def test_bedrock_is_refused_with_the_reason() -> None:
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "messages": [{"role": "user", "content": "Acme Corp"}]})
    with pytest.raises(MaskError, match="signed over their body \\(SigV4\\)"):
        mask_body(body.encode(), engine.AWS_BEDROCK.request_rule, RULES)
    err = json.loads(bedrock.error_body("disguise: request not masked: " + bedrock.REASON))
    assert err["__type"] == "ValidationException" and "SigV4" in err["message"]


@pytest.mark.parametrize("path", ["/model/anthropic.claude-v2/invoke", "/model/m/invoke-with-response-stream",
                                  "/model/m/converse", "/model/m/converse-stream"])  # fmt: skip
def test_every_bedrock_route_is_refused_even_with_an_empty_body(path: str) -> None:
    api = engine.recognise("POST", path)
    assert api is engine.AWS_BEDROCK
    with pytest.raises(NeverForward):
        mask_body(b"{}", api.request_rule, RULES)  # a NeverForward: not even disguise_fail_open sends it


def test_a_bedrock_response_is_never_reversed() -> None:
    with pytest.raises(StreamError, match="SigV4"):
        bedrock.no_stream(RULES.restorer({}))
