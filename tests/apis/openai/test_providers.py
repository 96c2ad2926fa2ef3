"""Who serves OpenAI's APIs (apis/openai/providers.py): each provider's hosts, and a
subdomain of each, are the scope's known hosts; its credential headers are slots of every
request, its query parameters and subprotocols those of the APIs it serves (Chat here),
and not of another family's (Gemini)."""

from __future__ import annotations

import pytest

from disguiselib import scope
from disguiselib.apis import registry
from disguiselib.apis.openai.providers import AZURE, COMPATIBLE, OPENAI


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
    assert prov.headers <= slots.headers and prov.params <= slots.params
    assert set(prov.subprotocols) <= set(slots.subprotocols)
    other = registry.slots_for("/v1beta/models/gemini-2.5-flash:generateContent", gemini)
    # a credential header is nobody else's text; a Cookie carries more than a credential
    # (whatever the sites that set it put there): a slot only on the APIs of a provider that reads one
    assert prov.headers - {"cookie"} <= other.headers and "cookie" not in other.headers
    assert not (prov.params - {"key"}) & other.params and not set(prov.subprotocols) & set(other.subprotocols)
