"""Routing (which API, which paths look like an LLM API); the disguise_hosts scope is
tests/test_scope.py."""

from __future__ import annotations

import pytest

from disguiselib.apis import registry as engine
from disguiselib.apis.registry import llm_shaped, recognise
from disguiselib.scope import known_host


@pytest.mark.parametrize(
    "path, name",
    [
        ("/v1/messages", "anthropic.messages"),
        ("/v1/messages/count_tokens?beta=true", "anthropic.messages"),
        ("/v1/chat/completions", "openai.chat"),
        ("/openai/deployments/x/chat/completions?api-version=1", "openai.chat"),
        ("/v1/responses", "openai.responses"),
        ("/v1/responses/input_tokens", "openai.responses.input_tokens"),
        ("/v1/responses/compact/", "openai.responses.compact"),
        ("/v1/completions", "openai.completions"),
        ("/api/v1/completions", "openai.completions"),
        ("/v1/embeddings", "openai.embeddings"),
    ],
)
def test_recognised_routes(path: str, name: str) -> None:
    api = recognise("POST", path)
    assert api is not None and api.name == name
    got = recognise("GET", path)  # a GET there is a retrieval (a list of stored completions) or nothing
    assert got is None or got.request_rule is None


@pytest.mark.parametrize(
    "path",
    ["/v1beta/models/gemini-2.0-flash:generateContent", "/v1beta/models/g:streamGenerateContent?alt=sse",
     "/v1/files", "/v1/batches", "/v1/responses/resp_1", "/v1/realtime", "/api/chat", "/v1/models",
     "/model/anthropic.claude/invoke", "/v2/chat"],
)  # fmt: skip
def test_llm_shaped_paths(path: str) -> None:
    assert llm_shaped(path)


@pytest.mark.parametrize("path", ["/", "/index.html", "/blog/messages", "/static/app.js", "/api/hello"])
def test_not_llm_shaped(path: str) -> None:
    assert not llm_shaped(path)


def test_known_hosts() -> None:
    assert known_host("api.anthropic.com") and known_host("API.OPENAI.COM.")
    assert known_host("x.openai.azure.com") and not known_host("example.com")
    assert "openai.completions" in engine.APIS
