"""Whose credentials a request may carry (apis/slots.py): the slots of the providers a
request is for (its API's, its host's, its path's own), never every provider's. The
property over every provider and slot: tests/test_slots.py."""

from __future__ import annotations

import pytest

from disguiselib.apis import registry, slots
from disguiselib.base.wirespec import Destination

SIGV4 = ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20250101/us-east-1/bedrock/aws4_request, "
         "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64)  # fmt: skip
SIGNING = {"date", "x-amz-date", "x-amz-content-sha256"}
FOREIGN = ["api-key", "x-goog-api-key", "ocp-apim-subscription-key", "openai-api-key", "x-amz-security-token",
           "proxy-authorization"]  # fmt: skip
MESSAGES = registry.ANTHROPIC_MESSAGES


def test_signing_headers_are_slots_only_on_a_request_the_proxy_resigns() -> None:
    """Date, X-Amz-Date and X-Amz-Content-Sha256 are SigV4's, which the proxy replaces
    when it re-signs a Bedrock request (resign.py); on any other request they reach the
    server as they are, and are scanned."""
    conv = "/model/anthropic.claude-3-haiku-20240307-v1:0/converse"
    resigned = registry.slots_for(conv, registry.BEDROCK_CONVERSE, None, [SIGV4])
    assert SIGNING | {"authorization", "x-amz-security-token"} <= resigned.headers
    for headers in ([("Authorization", "Bearer ABSKdummy")], [], [("authorization", "AWS4-HMAC-SHA256x")]):
        assert not SIGNING & registry.slots_for(conv, registry.BEDROCK_CONVERSE, None, headers).headers
    aws = Destination.of("bedrock-runtime.us-east-1.amazonaws.com")
    assert not SIGNING & registry.slots_for("/guardrail/g/version/1/apply", None, aws, [SIGV4]).headers  # not re-signed
    for path, api in (("/v1/messages", MESSAGES), ("/v1/chat/completions", registry.OPENAI_CHAT)):
        assert not SIGNING & registry.slots_for(path, api, None, [SIGV4]).headers
    assert not SIGNING & registry.slots_for("/v1/x").headers  # an unknown endpoint, nobody's host


@pytest.mark.parametrize("dest", [None, Destination.of("api.anthropic.com")])
def test_another_providers_credential_header_is_no_slot(dest) -> None:
    s = registry.slots_for("/v1/messages", MESSAGES, dest)
    assert {"x-api-key", "authorization", "anthropic-api-key"} <= s.headers
    assert not set(FOREIGN) & s.headers
    assert not SIGNING & s.headers and "cookie" not in s.headers


def test_the_slots_of_each_family() -> None:
    """Each API keeps its providers' headers: OpenAI's APIs Azure's and gateways' too."""
    chat = registry.slots_for("/v1/chat/completions", registry.OPENAI_CHAT)
    assert {"authorization", "openai-api-key", "api-key", "ocp-apim-subscription-key", "cookie"} <= chat.headers
    assert not {"x-api-key", "x-goog-api-key", "x-amz-security-token"} & chat.headers
    gem = registry.slots_for("/v1beta/models/g:generateContent", registry.GOOGLE_GEMINI)
    assert {"x-goog-api-key", "authorization"} <= gem.headers and {"key", "access_token"} <= gem.params
    assert not {"x-api-key", "api-key", "openai-api-key"} & gem.headers
    bed = registry.slots_for("/model/m/converse", registry.BEDROCK_CONVERSE)
    assert {"authorization", "x-amz-security-token"} <= bed.headers and "x-api-key" not in bed.headers


def test_a_providers_host_brings_its_slots() -> None:
    """An endpoint no API knows, on a provider's host (regular mode, or the reverse
    target): that provider's slots; an OpenAI-compatible API on Anthropic's host: both."""
    s = registry.slots_for("/v1/organizations/x", None, Destination.of("API.Anthropic.com."))
    assert "x-api-key" in s.headers and "api-key" not in s.headers
    az = registry.slots_for("/api/projects/p/unknown", None, Destination.of("r.services.ai.azure.com"))
    assert {"api-key", "ocp-apim-subscription-key"} <= az.headers and "x-api-key" not in az.headers
    both = registry.slots_for("/v1/chat/completions", registry.OPENAI_CHAT, Destination.of("api.anthropic.com"))
    assert {"x-api-key", "api-key"} <= both.headers


def test_a_request_for_no_known_provider_keeps_any_providers_headers() -> None:
    """An unknown endpoint on a host of one's own: whose key it carries cannot be told,
    and a client's own key must not be refused; a Cookie, a proxy's credential and the
    signing headers are not credential headers there."""
    s = registry.slots_for("/v1/something", None, Destination.of("llm.internal"))
    assert {"x-api-key", "authorization", "api-key", "x-goog-api-key", "x-amz-security-token"} <= s.headers
    assert not {"cookie", "proxy-authorization"} & s.headers and not SIGNING & s.headers


def test_proxy_authorization_is_a_slot_only_where_an_upstream_proxy_reads_it() -> None:
    for path, api in (("/v1/messages", MESSAGES), ("/v1/x", None)):
        assert "proxy-authorization" not in registry.slots_for(path, api, Destination.of("api.anthropic.com")).headers
        assert "proxy-authorization" in registry.slots_for(path, api, Destination(via_proxy=True)).headers


OPENAI_PATHS = ["/v1/models", "/v1/batches", "/v1/files", "/v1/files/file-1/content", "/v1/models/x/chat/completions",
                "/v1/models/ft:gpt-4o-mini:org:custom:abcdef", "/v1/chat/completions", "/v1/embeddings"]  # fmt: skip
GOOGLE_PATHS = ["/v1beta/models", "/v1beta/files/abc", "/upload/v1beta/files", "/v1beta/cachedContents",
                "/v1/models/gemini-2.5-flash:generateContent", "/v1/models/gemini-pro%3AcountTokens",
                "/v1/projects/p/locations/us-central1/endpoints/e:predict", "/v1/publishers/google/models/g",
                "/v1/tunedModels/t", "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
                "/gateway/google/v1beta/models/g:streamGenerateContent"]  # fmt: skip


@pytest.mark.parametrize("path", OPENAI_PATHS)
def test_googles_parameters_are_no_slots_on_a_path_openai_shares(path: str) -> None:
    api = registry.recognise("POST", path) or registry.recognise("GET", path)
    assert not registry.slots_for(path, api).params
    assert not registry.slots_for(path, api, Destination.of("api.openai.com")).params
    # on Google's own host a `key` is Google's whatever the path
    assert {"key", "access_token"} <= registry.slots_for(path, api, Destination.of("generativelanguage.googleapis.com")).params
    assert "key" in registry.slots_for(path, api, Destination.of("us-central1-aiplatform.googleapis.com")).params


@pytest.mark.parametrize("path", GOOGLE_PATHS)
def test_googles_parameters_on_its_own_paths(path: str) -> None:
    assert slots.by_path(path.split("?")[0]), path
    assert "key" in registry.slots_for(path).params


def test_destination_reads_hosts_as_the_scope_does() -> None:
    assert Destination.of("API.OpenAI.com.", "", "[::1]").hosts == ("api.openai.com", "::1")
    assert Destination.of("a", "a").hosts == ("a",)
    assert slots.by_host(Destination.of("x.openai.azure.com")) == (registry.PROVIDERS[2],)
    assert slots.by_host(Destination.of("example.com")) == ()


def test_whom_a_request_is_for_by_its_host_else_its_credential_headers() -> None:
    """The families a request is for (slots.families_of: the refusal's error shape): a
    provider's host says it; where none does, a credential header not every family reads
    (`x-api-key`, `x-goog-api-key`, Azure's `api-key`); `Authorization` says nothing."""
    assert slots.families_of("api.anthropic.com") == {"anthropic"}
    assert slots.families_of("API.OpenAI.com.") == {"openai"}
    assert slots.families_of("x.openai.azure.com") == {"openai"}
    assert slots.families_of("us-east5-aiplatform.googleapis.com") == {"google", "vertex"}
    assert slots.families_of("bedrock-runtime.us-east-1.amazonaws.com") == {"aws"}
    assert slots.families_of("api.cohere.com") == {"cohere", "openai"}  # OpenAI's compatible API is served there too
    # the host first: a header of another family's does not make it another's
    assert slots.families_of("api.openai.com", [("x-api-key", "k")]) == {"openai"}
    assert slots.families_of("localhost", [("X-Api-Key", "k"), ("authorization", "b")]) == {"anthropic"}
    assert slots.families_of("localhost", [("x-goog-api-key", "k")]) == {"google", "vertex"}
    assert slots.families_of("localhost", [("api-key", "k")]) == {"openai"}
    assert slots.families_of("localhost", [("authorization", "Bearer x"), ("cookie", "c")]) == frozenset()
    assert slots.families_of("localhost") == frozenset()


def test_an_ai_gateways_headers_are_slots_on_every_request() -> None:
    """A gateway's own key (slots.GATEWAY) whatever the request is for and wherever it goes."""
    for path, api, dest in (("/v1/messages", MESSAGES, Destination.of("api.anthropic.com")),
                            ("/v1/chat/completions", registry.OPENAI_CHAT, Destination.of("gateway.example")),
                            ("/v1/x", None, Destination.of("llm.internal"))):  # fmt: skip
        assert slots.GATEWAY.headers <= registry.slots_for(path, api, dest).headers
