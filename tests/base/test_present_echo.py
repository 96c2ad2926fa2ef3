"""fields.ECHO: an answer's text the provider gave unrestored (a compatible provider's
reasoning, Mistral's and Cohere's thinking parts, Responses' reasoning_text) and the
client sends back as it came holds the model's own placeholders and fakes, not the
client's: base/present.Held neither skips their numbers nor reserves their fakes, so the
conversation's numbering stays as it was turn after turn (probe J2)."""

from __future__ import annotations

import json

import pytest

from disguiselib import pipeline
from disguiselib.apis.registry import recognise
from disguiselib.config import build_config

HEADERS = [("content-type", "application/json")]
CFG = build_config([], True, [])


# -- an answer's text sent back as it came (fields.ECHO): its placeholders are the provider's --------

T = "The user gave [EMAIL_1]; reply briefly."
U = "my mail is bob@corp-mail.com"
ECHOED = [
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": U},
     {"role": "assistant", "content": "ok", "reasoning_content": T}, {"role": "user", "content": "go"}]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": U},
     {"role": "assistant", "content": "ok", "reasoning": T}, {"role": "user", "content": "go"}]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": U},
     {"role": "assistant", "content": "ok", "reasoning_details": [{"type": "reasoning.text", "text": T}]}]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": U}, {"role": "assistant",
     "content": [{"type": "thinking", "thinking": [{"type": "text", "text": T}]}, {"type": "text", "text": "ok"}]}]}),
    ("/v1/responses", {"model": "m", "input": [{"role": "user", "content": U}, {"type": "message", "role": "assistant",
     "id": "msg_1", "status": "completed", "content": [{"type": "reasoning_text", "text": T}]}]}),
    ("/v2/chat", {"model": "command-a-reasoning", "messages": [{"role": "user", "content": U}, {"role": "assistant",
     "content": [{"type": "thinking", "thinking": T}, {"type": "text", "text": "ok"}]}]}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "doc"), ECHOED, ids=lambda x: x if isinstance(x, str) else "")
def test_an_answers_placeholder_sent_back_is_not_the_clients(path: str, doc: dict) -> None:
    """A compatible provider's reasoning comes back unrestored, holding the model's own
    [EMAIL_1]; sent back, it was taken for the client's text: the number was skipped and
    the user's e-mail became [EMAIL_2] in every earlier message (probe J2)."""
    got = pipeline.mask_request(recognise("POST", path), json.dumps(doc).encode(), CFG, path, HEADERS)
    assert isinstance(got, pipeline.Masked), got
    assert got.session.placeholders == {"[EMAIL_1]": "bob@corp-mail.com"}
    assert T in got.body.decode()


def test_a_placeholder_the_client_wrote_is_still_skipped() -> None:
    doc = {"model": "m", "messages": [{"role": "user", "content": U + " [EMAIL_1]"},
                                      {"role": "assistant", "content": "ok", "reasoning_content": T}]}  # fmt: skip
    path = "/v1/chat/completions"
    got = pipeline.mask_request(recognise("POST", path), json.dumps(doc).encode(), CFG, path, HEADERS)
    assert isinstance(got, pipeline.Masked) and got.session.placeholders == {"[EMAIL_2]": "bob@corp-mail.com"}
