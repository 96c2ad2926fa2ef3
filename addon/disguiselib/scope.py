"""Scope: which hosts are protected (sans I/O). `parse_hosts` normalises the
`disguise_hosts` option; `known_host` knows the LLM providers' hosts, every form each
documents, from their declarations (base/wirespec.Provider, registry.PROVIDERS)."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from .apis.registry import PROVIDERS
from .errors import ScopeError

# With `disguise_hosts` empty, requests on unknown paths are scanned on the providers'
# hosts (and on every request that arrives in reverse mode, whose upstream is the
# provider). These are their names; a provider may document other forms (host_forms).
KNOWN_HOSTS: tuple[str, ...] = tuple(dict.fromkeys(h for p in PROVIDERS for h in p.hosts))
_HOST = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\Z")


@dataclass(frozen=True)
class HostRule:
    host: str  # lower case, no trailing dot; an IPv6 address without brackets
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        return self.host == host and (self.port is None or self.port == port)

    def __str__(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return h if self.port is None else f"{h}:{self.port}"


def norm_host(host: str) -> str:
    """A host as compared here: lower case, no trailing dot, no IPv6 brackets."""
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def parse_hosts(entries: Iterable[str]) -> tuple[HostRule, ...]:
    """`disguise_hosts` entries -> rules. Each entry may be a comma-separated list;
    case, a trailing dot and `host:port` (`[v6]:port`) are normalised. Raises
    ScopeError naming the entry for anything else (a URL, a path, a wildcard, a bad
    port): a mistyped scope must not silently match nothing."""
    out: list[HostRule] = []
    for entry in entries:
        for raw in str(entry).split(","):
            item = raw.strip()
            if not item:
                continue
            _refuse_url_or_path(item)
            h, port = item, None
            if h.startswith("["):  # [v6] or [v6]:port
                end = h.find("]")
                rest = h[end + 1 :] if end > 0 else "x"
                if rest and not rest.startswith(":"):
                    raise ScopeError(f"disguise_hosts: {item!r} is not a host or host:port")
                port_s = rest[1:] if rest else None
                h = h[1:end]
            elif h.count(":") == 1:
                h, port_s = h.split(":")
            else:
                port_s = None
            if port_s is not None:
                if not port_s.isdigit() or not 0 < int(port_s) < 65536:
                    raise ScopeError(f"disguise_hosts: {item!r} has a bad port")
                port = int(port_s)
            h = norm_host(h)
            ok = _HOST.match(h) or (":" in h and re.fullmatch(r"[0-9a-f:.]+", h))
            if not ok:
                raise ScopeError(
                    f"disguise_hosts: {item!r} is not a host name or address "
                    "(give host or host:port, no scheme, path or wildcard)"
                )
            out.append(HostRule(h, port))
    return tuple(dict.fromkeys(out))


def _refuse_url_or_path(item: str) -> None:
    """A URL, a path or a wildcard where a host belongs, refused with what to write
    instead (a `host:port` split of `https://host` would call `//host` a bad port)."""
    if "://" in item:
        netloc = urlsplit(item).netloc.rpartition("@")[2]
        alone = f" ({netloc})" if netloc else ""
        raise ScopeError(
            f"disguise_hosts: {item!r} is a URL: give its host alone{alone}, without a scheme or path "
            "(every path and scheme of a host is protected)"
        )
    if "/" in item:
        alone = item.split("/", 1)[0]
        raise ScopeError(
            f"disguise_hosts: {item!r} has a path: give the host alone ({alone}); every path of a host "
            "is protected"
        )
    if "*" in item:
        raise ScopeError(
            f"disguise_hosts: {item!r} is a wildcard: name each host (subdomains are not matched)"
        )


def closest(host: str, candidates: Sequence[str], cutoff: float = 0.85) -> str | None:
    """The candidate host that host most resembles (a typo of it), if any is close."""
    near = difflib.get_close_matches(norm_host(host), list(candidates), n=1, cutoff=cutoff)
    return near[0] if near else None


def near_misses(rules: Iterable[HostRule]) -> list[str]:
    """Warnings for entries that are not a known LLM host but look like a misspelling of
    one (`api.antropic.com`): requests to the real host would not be masked. Warned,
    not refused: a host of one's own may resemble a known one."""
    out = []
    for r in rules:
        if known_host(r.host):
            continue
        near = closest(r.host, KNOWN_HOSTS, cutoff=0.9)
        if near is not None:
            out.append(
                f"disguise_hosts: {r.host} is not a known LLM provider host; did you mean {near}? "
                f"Requests to {near} are not masked unless it is listed"
            )
    return out


def in_hosts(rules: tuple[HostRule, ...], host: str, port: int, pretty_host: str = "") -> bool:
    """Does a request to host:port match one of the rules? pretty_host (the Host
    header's host, without port) is tried too: in reverse mode `host` is the upstream."""
    h = norm_host(host)
    ph = norm_host(pretty_host)
    return any(r.matches(h, port) or (ph and r.matches(ph, port)) for r in rules)


def known_host(host: str) -> bool:
    """A host of an LLM provider (a subdomain of one, or another form it documents)."""
    return _known(norm_host(host))


@functools.lru_cache(maxsize=1024)
def _known(h: str) -> bool:
    # (PROVIDERS never changes: each flow asked again for its host and Host header, and
    # a host no provider serves went through every provider's forms, ~14 us a time)
    return any(p.serves(h) for p in PROVIDERS)

