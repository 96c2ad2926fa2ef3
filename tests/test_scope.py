"""Scope (scope.py): the `disguise_hosts` entries, normalised or refused by name; which
requests they cover; the well-known LLM hosts."""

from __future__ import annotations

import pytest

from disguiselib.errors import ScopeError
from disguiselib.scope import KNOWN_HOSTS, HostRule, in_hosts, known_host, near_misses, norm_host, parse_hosts


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


def test_a_port_narrows_a_rule_and_no_port_takes_any() -> None:
    rules = parse_hosts(["api.example.com:8443", "other.example"])
    assert in_hosts(rules, "api.example.com", 8443) and not in_hosts(rules, "api.example.com", 443)
    assert in_hosts(rules, "other.example", 1) and in_hosts(rules, "other.example", 65535)
    assert not in_hosts(rules, "sub.other.example", 443)  # no wildcard: exactly that host
    assert not in_hosts((), "api.example.com", 443)
    assert parse_hosts(["a.example", "A.EXAMPLE", "a.example."]) == (HostRule("a.example"),)  # once
    assert parse_hosts(["[2001:db8::1]"]) == (HostRule("2001:db8::1"),)
    assert str(HostRule("a.example")) == "a.example" and str(HostRule("a.example", 80)) == "a.example:80"


def test_known_hosts_and_their_subdomains() -> None:
    for h in KNOWN_HOSTS:
        assert known_host(h) and known_host("x." + h) and known_host(h.upper() + ".")
    assert not known_host("notapi.openai.com.evil.example") and not known_host("api.openai.com.example")
    assert not known_host("xapi.anthropic.com")  # a suffix, not a subdomain
    assert norm_host(" [::1] ") == "::1" and norm_host("A.B.") == "a.b"


@pytest.mark.parametrize("entry", ["h:0", "h:65536", "[::1]x", "exa_mple..com", "-a.com"])
def test_more_entries_that_name_no_host_are_refused(entry: str) -> None:
    with pytest.raises(ScopeError, match="disguise_hosts"):
        parse_hosts([entry])


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
