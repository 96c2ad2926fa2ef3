"""The addon's options (adapter-level): declared once, checked before mitmproxy can drop
the script over a bad value."""

from __future__ import annotations

import re

from mitmproxy import ctx

from ..errors import ScopeError
from ..scope import KNOWN_HOSTS, HostRule

OPTIONS = frozenset(
    {"disguise_mappings", "disguise_defaults", "disguise_hosts", "disguise_fail_open", "disguise_allow_unknown",
     "disguise_aws_resign"}
)


def check_passthrough(hosts: tuple[HostRule, ...]) -> None:
    """mitmproxy passes `ignore_hosts` (and hosts outside `allow_hosts`) through
    encrypted: no addon ever sees that traffic, so nothing of it could be masked."""

    opts = ctx.options
    ignore = list(getattr(opts, "ignore_hosts", []) or [])
    allow = list(getattr(opts, "allow_hosts", []) or [])
    if not ignore and not allow:
        return
    names = [h.host for h in hosts] if hosts else [h for h in KNOWN_HOSTS if "." in h]
    for h in names:
        for port in (443,):
            addr = f"{h}:{port}"
            ignored = any(re.search(rx, addr, re.IGNORECASE) for rx in ignore)
            not_allowed = bool(allow) and not any(re.search(rx, addr, re.IGNORECASE) for rx in allow)
            if ignored or not_allowed:
                raise ScopeError(
                    f"{h} is passed through unintercepted ({'ignore_hosts' if ignored else 'allow_hosts'}): "
                    "disguise could not mask its traffic; narrow that option or set disguise_hosts"
                )

