"""AWS Bedrock: recognised so that it is refused, never forwarded unmasked.

Bedrock Runtime (`/model/{modelId}/invoke`, `/invoke-with-response-stream`, `/converse`,
`/converse-stream`) authenticates each request with AWS Signature Version 4, which
signs a hash of the body (`x-amz-content-sha256`, the `Authorization` header's
signature). A masked body no longer matches that signature, and re-signing it needs
the user's AWS secret key, which a proxy does not have. Until that is designed, a
Bedrock request on a protected host is answered with an error that says why.
"""

from __future__ import annotations

import json

from ..core.jsonspan import Rule
from ..core.rules import Restorer
from ..errors import NeverForward, StreamError

REASON = (
    "AWS Bedrock requests are signed over their body (SigV4): a masked body would need "
    "re-signing with your AWS credentials, which disguise does not do; the request was "
    "not forwarded"
)


class _Refused(Rule):
    """The request rule of an API that is never forwarded: masking it raises."""

    def resolve(self, value: object) -> Rule:
        raise NeverForward(REASON)


REQUEST: Rule = _Refused()


def no_stream(restorer: Restorer):  # noqa: ANN201 - never returns
    """Bedrock responses are never reversed: no Bedrock request is ever forwarded."""
    raise StreamError(REASON)


def error_body(message: str) -> bytes:
    """An error body as Bedrock sends it (rest-json: `message`, the type in `__type`)."""
    return json.dumps({"message": message, "__type": "ValidationException"}).encode()
