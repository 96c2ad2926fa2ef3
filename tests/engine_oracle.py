"""The two engines side by side (tests/test_engine.py): one case run through the engine of
this process, and the same case's runner for the other process — `python
tests/engine_oracle.py` with DISGUISE_ENGINE=python reads JSON lines of cases on stdin
and answers each with what the Python engine gives, byte for byte."""

from __future__ import annotations

import base64
import json
import sys

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base import masking
from disguiselib.errors import DisguiseError
from strategies import PLACEHOLDERS, RULES

STREAMS = {
    "anthropic": anthropic.AnthropicStream,
    "chat": openai_chat.ChatStream,
    "responses": openai_responses.ResponsesStream,
}
REQUESTS = {
    "anthropic": anthropic.MESSAGES_REQUEST,
    "chat": openai_chat.CHAT_REQUEST,
    "responses": openai_responses.RESPONSES_REQUEST,
}


def run(case: dict) -> dict:
    """What this process's engine gives for case: every output piece (each feed's, then
    flush's) and the restore counters of a stream; the masked body and its placeholders
    of a request body; the error's class and message where it raised."""
    api = case["api"]
    try:
        if case["op"] == "stream":
            r = RULES.restorer(dict(PLACEHOLDERS))
            s = STREAMS[api](r)
            pieces = [s.feed(base64.b64decode(c)) for c in case["chunks"]] + [s.flush()]
            return {"out": [base64.b64encode(p).decode() for p in pieces], "restored": r.restored,
                    "stripped": r.stripped}  # fmt: skip
        body, session = masking.mask_body(base64.b64decode(case["body"]), REQUESTS[api], RULES)
        return {"out": base64.b64encode(body).decode(), "placeholders": session.placeholders}
    except (DisguiseError, ValueError) as e:
        return {"error": f"{e.__class__.__name__}: {e}"}


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
