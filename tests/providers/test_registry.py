"""Routing (which API, which paths look like an LLM API) and the disguise_hosts scope."""

from __future__ import annotations

import pytest

from disguiselib.errors import ScopeError
from disguiselib.providers import registry as engine
from disguiselib.providers.registry import llm_shaped, recognise
from disguiselib.scope import HostRule, in_hosts, known_host, near_misses, parse_hosts


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


def test_hosts_are_normalised() -> None:
    rules = parse_hosts(["API.Anthropic.com.", "127.0.0.1:8443, example.org", "[::1]:9", " ", "a.b"])
    assert rules == (
        HostRule("api.anthropic.com"), HostRule("127.0.0.1", 8443), HostRule("example.org"),
        HostRule("::1", 9), HostRule("a.b"),
    )  # fmt: skip
    assert in_hosts(rules, "api.anthropic.com", 443)
    assert in_hosts(rules, "x", 1, "API.ANTHROPIC.COM.")
    assert in_hosts(rules, "127.0.0.1", 8443) and not in_hosts(rules, "127.0.0.1", 8080)
    assert in_hosts(rules, "::1", 9)
    assert str(HostRule("::1", 9)) == "[::1]:9"


@pytest.mark.parametrize(
    "entry", ["https://api.anthropic.com", "api.anthropic.com/v1", "*.openai.com", "h:99999", "h:x", "a b", "[::1"]
)
def test_mistyped_hosts_are_refused_naming_the_entry(entry: str) -> None:
    with pytest.raises(ScopeError) as e:
        parse_hosts([entry])
    assert repr(entry.strip()) in str(e.value)


@pytest.mark.parametrize(
    "entry, says",
    [
        ("https://api.anthropic.com", "is a URL: give its host alone (api.anthropic.com)"),
        ("https://api.anthropic.com/", "is a URL: give its host alone (api.anthropic.com)"),
        ("http://user:pw@127.0.0.1:8080/v1", "is a URL: give its host alone (127.0.0.1:8080)"),
        ("api.anthropic.com/v1", "has a path: give the host alone (api.anthropic.com)"),
        ("api.anthropic.com:443/v1/messages", "has a path: give the host alone (api.anthropic.com:443)"),
        ("*.openai.com", "is a wildcard"),
        ("h:99999", "has a bad port"),
    ],
)
def test_a_url_or_a_path_is_refused_saying_so(entry: str, says: str) -> None:
    """Issue 15, case 6: a URL given as a host used to be refused as "has a bad port"."""
    with pytest.raises(ScopeError) as e:
        parse_hosts([entry])
    assert says in str(e.value)
    assert "bad port" not in str(e.value) or entry == "h:99999"


def test_a_near_miss_of_a_known_host_is_warned() -> None:
    (w,) = near_misses(parse_hosts(["api.antropic.com, example.org, api.openai.com, eu.api.openai.com"]))
    assert "api.antropic.com" in w and "did you mean api.anthropic.com" in w


def test_known_hosts() -> None:
    assert known_host("api.anthropic.com") and known_host("API.OPENAI.COM.")
    assert known_host("x.openai.azure.com") and not known_host("example.com")
    assert "openai.completions" in engine.APIS
