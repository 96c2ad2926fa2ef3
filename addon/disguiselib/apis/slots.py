"""Whose credentials a request may carry, and where (sans I/O): every provider's
declaration (base/wirespec.Provider) and the slots of one request (`slots_for`), which
the leak guard, the audit and the views read.

A request's slots are those of the providers it is for: the providers that serve its
API (Azure and the OpenAI-compatible providers serve OpenAI's), those whose host it goes
to, and those whose own paths its path is (a Google path). A credential another provider
reads, in a request that is not for that provider, is no credential there: an `api-key`
on Anthropic's Messages API reaches Anthropic, which does not read it, so it is scanned
as any header is. Query parameters are tied tighter than headers: only a request to the
provider's hosts or on its own paths has them (an API several providers serve does not
say whose `key` is whose). A request that is for no provider the addon knows (an unknown
endpoint on a host of one's own) keeps every provider's credential headers as slots: a
client's own key there must not be refused as a leak.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ..base.wirespec import Destination, Provider, Slots
from .anthropic import messages as anthropic
from .bedrock import runtime as bedrock
from .cohere import chat as cohere
from .google import codeassist
from .google import gemini as google
from .openai import providers as openai

# An upstream proxy's credential, which a client may send through this one: a slot only
# where that proxy reads the request (Destination.via_proxy).
PROXY = Provider("proxy", headers=frozenset({"proxy-authorization"}))
# An AI gateway's credential (a team's gateway in front of the providers: its own key, in
# a header of its own, beside the provider's): a slot on every request, since whether a
# gateway reads it is not told by the request. Cloudflare AI Gateway, LiteLLM's proxy,
# Portkey, Helicone.
GATEWAY = Provider(
    "gateway",
    headers=frozenset({"cf-aig-authorization", "x-litellm-api-key", "x-portkey-api-key", "helicone-auth"}),
)  # fmt: skip
# Every provider: its hosts (scope.py) and its credential slots (the leak guard). A new
# provider's declaration is registered here.
PROVIDERS: tuple[Provider, ...] = (
    anthropic.PROVIDER, openai.OPENAI, openai.AZURE, openai.COMPATIBLE, google.GEMINI, google.VERTEX,
    codeassist.PROVIDER, bedrock.PROVIDER, cohere.PROVIDER, PROXY,
)  # fmt: skip
# Who serves the APIs of a family (the first part of an API's name): Azure and the
# OpenAI-compatible providers serve OpenAI's APIs; cachedContents is the Gemini API's
# and Vertex AI's.
_SERVED_BY: dict[str, tuple[Provider, ...]] = {
    "anthropic": (anthropic.PROVIDER,),
    "openai": (openai.OPENAI, openai.AZURE, openai.COMPATIBLE),
    "google": (google.GEMINI, google.VERTEX, codeassist.PROVIDER),
    "vertex": (google.VERTEX,),
    "aws": (bedrock.PROVIDER,),
    "cohere": (cohere.PROVIDER,),
}
# A header that carries more than a credential: a Cookie holds whatever the sites that set
# it put there. A slot only on a request for a provider that declares it (ChatGPT's backend
# reads its session from one), never for a request that is for no known provider.
_CARRIERS = frozenset({"cookie"})
_HOSTED = tuple(p for p in PROVIDERS if p.hosts or p.host_forms)
_PATHS = tuple((re.compile(p.paths), p) for p in PROVIDERS if p.paths is not None)
# A request for no provider the addon knows: any provider's credential header (a gateway
# forwards the provider's own), but a Cookie and an upstream proxy's credential.
_ANY = tuple(p for p in PROVIDERS if p is not PROXY)
_ANY_HEADERS = frozenset().union(*(p.headers for p in _ANY)) - _CARRIERS


def providers_of(api_name: str) -> tuple[Provider, ...]:
    """The providers that serve an API (by its name: its family is the first part)."""
    return _SERVED_BY[api_name.split(".", 1)[0]]


@functools.lru_cache(maxsize=1024)
def _serving(host: str) -> tuple[Provider, ...]:
    # (a host no provider serves goes through every provider's forms: asked per request)
    return tuple(p for p in _HOSTED if p.serves(host))


def by_host(dest: Destination) -> tuple[Provider, ...]:
    """The providers whose hosts a request goes to."""
    return tuple(dict.fromkeys(p for h in dest.hosts for p in _serving(h)))


def by_path(path: str) -> tuple[Provider, ...]:
    """The providers whose own paths path (no query) is."""
    return tuple(p for rx, p in _PATHS if rx.search(path))


# Who reads a credential header, by family: a header not every family's providers read
# (`x-api-key`: Anthropic's; `x-goog-api-key`: Google's and Vertex's) says whom a
# request is for.
_READERS: dict[str, frozenset[str]] = {
    h: frozenset(f for f, provs in _SERVED_BY.items() if any(h in p.headers for p in provs)) for h in _ANY_HEADERS
}


def families_of(host: str, headers: Iterable[tuple[str, str]] = ()) -> frozenset[str]:
    """The families of APIs (an API name's first part, as _SERVED_BY) a request is for by
    where it goes and what it carries: those served on its host (lower case), else those
    whose providers read one of its credential headers that not every family reads (not
    `Authorization`); empty where neither tells (a host of one's own with a
    bearer token). Read by the refusal's error shape (registry.error_body_for)."""
    on_host = {p for p in _serving(host.lower().rstrip(".")) if p is not PROXY}
    if on_host:
        return frozenset(f for f, provs in _SERVED_BY.items() if on_host & set(provs))
    found = (_READERS.get(k.lower(), frozenset()) for k, _ in headers)
    return frozenset().union(*(fams for fams in found if len(fams) < len(_SERVED_BY)))


def slots_of(
    path: str,
    served: tuple[Provider, ...],
    dest: Destination,
    headers: Iterable[tuple[str, str]] = (),
    signed: bool = False,
    websocket: bool = False,
) -> Slots:
    """Where the credentials of a request to path (no query) sit. served: the providers
    of its API (providers_of), none for a request no API the addon knows; dest: where it
    goes; headers: the request's, read for its Authorization scheme only; signed: its API
    is one whose requests the proxy re-signs (SigV4); websocket: an upgrade.

    The credential headers and WebSocket subprotocols of the providers it is for (see the
    module docstring), or any provider's credential headers when it is for none; the
    query parameters of those whose host it goes to or whose own paths its path is; the
    signing headers of a request the proxy re-signs; Proxy-Authorization where an
    upstream proxy reads it; an AI gateway's credential headers (GATEWAY) on every one."""
    own = by_host(dest) + by_path(path)
    provs = tuple(dict.fromkeys((*served, *own)))
    heads = frozenset().union(*(p.headers for p in provs)) if provs else _ANY_HEADERS
    if signed:
        scheme = _scheme(headers)
        heads |= frozenset().union(*(p.signing for p in provs if p.signature and p.signature == scheme))
    if dest.via_proxy:
        heads |= PROXY.headers
    heads |= GATEWAY.headers
    params = frozenset().union(*(p.params | (p.ws_params if websocket else frozenset()) for p in own))
    subs = tuple(dict.fromkeys(s for p in provs for s in p.subprotocols))
    return Slots(heads, params, subs)


def _scheme(headers: Iterable[tuple[str, str]]) -> str:
    """The scheme of a request's Authorization, lower case ("" without one)."""
    for k, v in headers:
        if k.lower() == "authorization":
            return v.strip().split(" ", 1)[0].lower()
    return ""
