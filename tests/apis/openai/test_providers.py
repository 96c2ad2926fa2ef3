"""Who serves OpenAI's APIs (apis/openai/providers.py): each provider's hosts, and a
subdomain of each, are the scope's known hosts; its credential headers and subprotocols
are slots of the APIs it serves (Chat here), not of another family's (Gemini); Azure's
`?api-key=` is a slot on its Realtime WebSocket only (its hosts, its Realtime path)."""

from __future__ import annotations

import pytest

from disguiselib import scope
from disguiselib.apis import registry
from disguiselib.apis.openai.providers import AZURE, COMPATIBLE, OPENAI
from disguiselib.base.wirespec import Destination


@pytest.mark.parametrize("prov", [OPENAI, AZURE, COMPATIBLE], ids=lambda p: p.name)
def test_hosts_are_known_and_the_provider_registered(prov) -> None:
    assert prov in registry.PROVIDERS
    for host in prov.hosts:
        assert scope.known_host(host) and scope.known_host("res-1." + host)
        assert not scope.known_host(host + ".example")


@pytest.mark.parametrize("prov", [OPENAI, AZURE, COMPATIBLE], ids=lambda p: p.name)
def test_slots_for_the_apis_they_serve(prov) -> None:
    chat = registry.recognise("POST", "/v1/chat/completions")
    gemini = registry.recognise("POST", "/v1beta/models/gemini-2.5-flash:generateContent")
    assert chat is not None and gemini is not None
    slots = registry.slots_for("/v1/chat/completions", chat)
    assert prov.headers <= slots.headers and not slots.params
    assert set(prov.subprotocols) <= set(slots.subprotocols)
    other = registry.slots_for("/v1beta/models/gemini-2.5-flash:generateContent", gemini)
    # another family's API reaches another provider, which does not read these: scanned
    # (but Authorization, which Google's providers read too)
    assert not (prov.headers - {"authorization"}) & other.headers and "authorization" in other.headers
    assert not (prov.params | prov.ws_params) & other.params and not set(prov.subprotocols) & set(other.subprotocols)


def test_azure_api_key_parameter_on_its_realtime_websocket_only() -> None:
    """Azure documents `?api-key=` for a browser's Realtime WebSocket: a slot on its
    Realtime path or its hosts, never on an HTTP request nor on OpenAI's own WebSocket."""
    ws, chat = registry.OPENAI_REALTIME, registry.OPENAI_CHAT
    azure = Destination.of("res.openai.azure.com")
    assert "api-key" in registry.slots_for("/openai/realtime?api-version=x&deployment=d", ws).params
    assert "api-key" in registry.slots_for("/openai/v1/realtime?model=m", ws).params
    assert "api-key" in registry.slots_for("/v1/realtime?model=m", ws, azure).params
    assert "api-key" not in registry.slots_for("/v1/realtime?model=m", ws, Destination.of("api.openai.com")).params
    assert "api-key" not in registry.slots_for("/v1/realtime?model=m", ws).params
    for dest in (None, azure):
        assert "api-key" not in registry.slots_for("/openai/deployments/d/chat/completions", chat, dest).params
        assert "api-key" not in registry.slots_for("/v1/chat/completions", chat, dest).params
    # its headers are slots wherever an OpenAI API is (gateways of every name serve them)
    for h in ("api-key", "ocp-apim-subscription-key"):
        assert h in registry.slots_for("/v1/chat/completions", chat).headers
        assert h in registry.slots_for("/api/projects/p/x", None, azure).headers
