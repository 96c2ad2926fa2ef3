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


def test_a_refusals_error_shape_is_the_provider_its_host_or_headers_name() -> None:
    """E5 (stop 65): a request no API of the provider's was recognised for got the shape
    its path suggested: GET /v1/models/{id} Google's (a Gemini path's shape) on Anthropic's
    and OpenAI's hosts, /chat/completions/{id}/messages Anthropic's on OpenAI's, an
    Anthropic-headed /v1/files OpenAI's. The host's provider first, then the credential
    headers' (slots.families_of); an API recognised there keeps its own shape."""
    import json

    def shape(method: str, path: str, host: str = "", headers: tuple = ()) -> str:
        doc = json.loads(engine.error_body_for(method, path, host, headers)("m"))
        if doc.get("type") == "error":
            return "anthropic"
        return "google" if "status" in doc["error"] else "openai"

    assert shape("GET", "/v1/models/Acme%20Corp", "api.anthropic.com") == "anthropic"
    assert shape("GET", "/v1/models/Acme%20Corp", "api.openai.com") == "openai"
    assert shape("GET", "/v1/models/Acme%20Corp", "h", (("x-api-key", "k"),)) == "anthropic"
    assert shape("GET", "/v1/models/Acme%20Corp", "generativelanguage.googleapis.com") == "google"
    assert shape("POST", "/v1/chat/completions/chatcmpl-1/messages", "api.openai.com") == "openai"
    assert shape("POST", "/v1/files", "api.anthropic.com") == "anthropic"
    assert shape("POST", "/v1/files", "127.0.0.1", (("x-api-key", "k"), ("anthropic-version", "1"))) == "anthropic"
    assert shape("POST", "/v1/files", "api.openai.com") == "openai"
    # an API recognised on a host of its family's, or on a host of none: its own shape
    threads = engine.error_body_for("POST", "/v1/threads")
    assert engine.error_body_for("POST", "/v1/threads", "api.openai.com") is threads
    assert shape("POST", "/v1/messages", "127.0.0.1") == "anthropic"
    assert shape("POST", "/v1beta/models/g:generateContent", "127.0.0.1", (("authorization", "b"),)) == "google"
    # nothing names a provider: by the path, as before
    assert shape("GET", "/v1/models/x", "127.0.0.1", (("authorization", "Bearer x"),)) == "google"
    assert shape("POST", "/x/messages/y", "h") == "anthropic"
    assert shape("POST", "/x", "h") == "openai"
