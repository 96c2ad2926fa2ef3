"""The addon's options (adapter-level): declared once, checked before mitmproxy can drop
the script over a bad value."""

from __future__ import annotations

import re

from mitmproxy import ctx, exceptions

from ..config import OPTION_NAMES, OPTIONS
from ..errors import ScopeError
from ..scope import KNOWN_HOSTS, HostRule

# The options the Disguise addon declares; the Inspector declares the capture limit.
INSPECTOR_OPTIONS = frozenset({"disguise_capture_limit"})


def declare(loader, names: frozenset[str] | None = None) -> None:
    """Declare the addon's options (config.OPTIONS), or only those named."""
    for o in OPTIONS:
        if (o.name in names) if names is not None else (o.name not in INSPECTOR_OPTIONS):
            loader.add_option(o.name, o.type, o.default, o.help)


def check_deferred(opts) -> str | None:
    """mitmproxy applies `--set` values for a script's options only after load(), and
    when one is bad (given twice, or `yes` for a bool) it drops the whole script without
    a log line. Checked here, where it can still be said: the failure, or None."""
    deferred = getattr(opts, "deferred", {})
    parse = getattr(opts, "_parse_setval", None)
    for name in sorted(OPTION_NAMES):
        val = deferred.get(name)
        if val is None or parse is None or not hasattr(val, "val") or name not in opts._options:
            continue
        try:
            parse(opts._options[name], val.val)
        except exceptions.OptionsError as e:
            return (
                f"option {name}: {e}; mitmproxy will not load the disguise script, and every "
                "request on an LLM path is refused"
            )
    return None


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

