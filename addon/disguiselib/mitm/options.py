"""The addon's options (adapter-level): declared once, checked before mitmproxy can drop
the script over a bad value; and the checks that a configuration, as mitmproxy will
run it, leaves nothing unmasked that the user meant to protect (each raises ScopeError
naming the option)."""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Sequence

from mitmproxy import ctx, exceptions
from mitmproxy.proxy import mode_specs

from ..config import OPTION_NAMES, OPTIONS, refused_value
from ..errors import ScopeError
from ..rules import fakes
from ..scope import KNOWN_HOSTS, HostRule, closest, known_host, norm_host

log = logging.getLogger("disguise")

# The options the Disguise addon declares; the Inspector declares the capture limit, the
# Metrics addon (metrics.py) its address.
INSPECTOR_OPTIONS = frozenset({"disguise_capture_limit"})
METRICS_OPTIONS = frozenset({"disguise_metrics"})


def declare(loader, names: frozenset[str] | None = None) -> None:
    """Declare the addon's options (config.OPTIONS), or only those named."""
    for o in OPTIONS:
        if (o.name in names) if names is not None else (o.name not in INSPECTOR_OPTIONS | METRICS_OPTIONS):
            loader.add_option(o.name, o.type, o.default, o.help)


def fakes_key(opts) -> bytes | None:
    """disguise_fakes's key (None when the option is off), from disguise_fakes_key or the
    default file in mitmproxy's confdir (created once, mode 0600). Raises MappingError."""
    if not getattr(opts, "disguise_fakes", False):
        return None
    path = opts.disguise_fakes_key or os.path.join(os.path.expanduser(opts.confdir), fakes.KEY_FILE)
    return fakes.load_key(path)


# The options that let through what disguise would otherwise refuse: the rules-loaded
# line names those that are on, and a change while running is logged.
RELAXING = ("disguise_fail_open", "disguise_allow_unknown", "disguise_aws_resign", "disguise_replay_current_rules")


def relaxed(opts) -> str:
    """The rules-loaded line's end: the RELAXING options that are on ("" for none)."""
    on = [name for name in RELAXING if getattr(opts, name, False)]
    return f"; on: {', '.join(on)}" if on else ""


def log_relaxed(opts, updated: set[str]) -> None:
    """A RELAXING option changed while running (mitmweb's options): said in the log."""
    for name in (n for n in RELAXING if n in updated):
        on = bool(getattr(opts, name, False))
        (log.warning if on else log.info)("disguise: option %s is now %s", name, "on" if on else "off")


def check_values(opts, updated: set[str]) -> None:
    """Refuse a value of the options in `updated` that config.refused_value refuses (a
    negative size or count): raises ScopeError naming the option and the value."""
    for name in sorted(updated & OPTION_NAMES):
        why = refused_value(name, getattr(opts, name, None))
        if why is not None:
            raise ScopeError(why)


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


def set_on_command_line(argv: Sequence[str]) -> dict[str, list[str]]:
    """disguise's options a command line gives with `--set NAME=VALUE` (or `--set=...`),
    each with its values in order (a repeated list option has several)."""
    out: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        arg, spec = argv[i], None
        if arg == "--set" and i + 1 < len(argv):
            spec, i = argv[i + 1], i + 1
        elif arg.startswith("--set="):
            spec = arg[len("--set="):]
        i += 1
        if spec is not None:
            name, eq, value = spec.partition("=")
            if name in OPTION_NAMES:
                out.setdefault(name, []).extend([value] if eq else [])
    return out


def check_config_file(opts, argv: Sequence[str]) -> str | None:
    """mitmproxy reads the confdir's config.yaml after the command line's `--set`, and
    for a script's options (kept aside in `opts.deferred` until the script declares them)
    the file's value replaces the command line's without a word: `--set
    disguise_mappings=mine.yaml` (what `disguise run --mappings` passes) would never load
    when config.yaml names disguise_mappings. Checked at load, where the file's value is
    still there to see: the conflict, or None."""
    deferred = getattr(opts, "deferred", {}) or {}
    parse = getattr(opts, "_parse_setval", None)
    for name, values in sorted(set_on_command_line(argv).items()):
        val = deferred.get(name)
        if val is None or hasattr(val, "val") or name not in getattr(opts, "_options", {}):
            continue  # the command line's own value (mitmproxy's _UnconvertedStrings), or none
        try:
            given = parse(opts._options[name], values) if parse is not None else values
        except exceptions.OptionsError:
            given = values
        if (list(val) if isinstance(val, (list, tuple)) else val) != given:
            where = os.path.join(opts.confdir, "config.yaml")
            return (
                f"option {name} is set on the command line and, to another value, in mitmproxy's config file "
                f"({where}): mitmproxy applies the file's value last, so the command line's would be ignored; "
                "remove it from one of them"
            )
    return None


# What an option name mistyped from ours still resembles (difflib's ratio): a misspelt
# prefix (`disgiuse_mappings`, `disguise-hosts`) is caught, another addon's name is not.
_NEAR = 0.8
# Reverse-mode schemes mitmproxy speaks HTTP in (next_layer.py): other schemes (tcp,
# tls, udp, dtls, dns) relay bytes that no addon hook ever sees.
_HTTP_SCHEMES = frozenset({"http", "https", "http3"})


def check_names(opts) -> None:
    """Refuse an option name meant for disguise that no addon declared. mitmproxy keeps
    an unknown `--set` name (or config.yaml key) aside in `opts.deferred` for an addon
    that may declare it later, and never says a word when none does: `--set
    disguise_mapping=mine.yaml` would run with the user's rules never loaded. Called
    from configure, when every addon of the script has declared its options. Valid:
    config.OPTION_NAMES, and any other `disguise_` option an addon declared."""
    valid = sorted(OPTION_NAMES | {k for k in opts.keys() if k.startswith("disguise_")})
    for name in sorted(getattr(opts, "deferred", {}) or {}):
        if name in valid:
            continue  # one of ours that this build of the addon does not declare
        near = difflib.get_close_matches(name, valid, n=1, cutoff=0.0)
        ours = name.lower().startswith("disguise") or bool(difflib.get_close_matches(name, valid, n=1, cutoff=_NEAR))
        if ours and near:
            raise ScopeError(
                f"option {name} does not exist: did you mean {near[0]}? (mitmproxy ignores an unknown "
                f"option without a word, and what it names would never take effect); the options are "
                f"{', '.join(valid)}"
            )


def protected_targets(hosts: tuple[HostRule, ...]) -> list[tuple[str, int]]:
    """The (host, port) pairs whose traffic must reach the addon: every disguise_hosts
    entry (port 443 unless it names one), or with none, the known LLM hosts; and every
    reverse-mode target that is protected."""
    out = [(h.host, h.port or 443) for h in hosts] if hosts else [(h, 443) for h in KNOWN_HOSTS]
    for _spec, scheme, host, port in _reverse_targets():
        if scheme in _HTTP_SCHEMES and (not hosts or any(r.matches(host, port) for r in hosts)):
            out.append((host, port))
    return list(dict.fromkeys(out))


def check_passthrough(hosts: tuple[HostRule, ...]) -> None:
    """mitmproxy passes `ignore_hosts` (and hosts outside `allow_hosts`) through
    encrypted, and relays `tcp_hosts` as raw TCP after TLS: no addon ever sees that
    traffic as HTTP, so nothing of it could be masked."""

    opts = ctx.options
    ignore = list(getattr(opts, "ignore_hosts", []) or [])
    allow = list(getattr(opts, "allow_hosts", []) or [])
    tcp = list(getattr(opts, "tcp_hosts", []) or [])
    if not ignore and not allow and not tcp:
        return
    for h, port in protected_targets(hosts):
        addr = f"{h}:{port}"
        for name, rxs, hit in (("ignore_hosts", ignore, True), ("allow_hosts", allow, False), ("tcp_hosts", tcp, True)):
            if rxs and any(re.search(rx, addr, re.IGNORECASE) for rx in rxs) is hit:
                how = "relayed as raw TCP" if name == "tcp_hosts" else "passed through unintercepted"
                raise ScopeError(
                    f"{h} is {how} ({name}): disguise could not mask its traffic; narrow that option "
                    "or set disguise_hosts"
                )


def check_reverse(hosts: tuple[HostRule, ...]) -> None:
    """In reverse mode every request goes to the mode's target, so a disguise_hosts that
    does not name it (a typo: `api.antropic.com`) would leave every request unmasked.
    That is refused rather than mended (the target protected anyway): the same option
    also scopes regular mode, where nothing could tell the mistake, and a user who sees
    it corrects it everywhere. A reverse mode that relays a known LLM host as raw bytes
    (tcp, tls) is refused too."""
    for spec, scheme, host, port in _reverse_targets():
        if scheme not in _HTTP_SCHEMES:
            covered = any(r.matches(host, port) for r in hosts) if hosts else known_host(host)
            if covered:
                raise ScopeError(
                    f"mode {spec} relays {host} as raw {scheme.upper()} bytes: disguise could not mask "
                    f"them; use reverse:https://{host}" + (f":{port}" if port != 443 else "")
                )
            continue
        if hosts and not any(r.matches(host, port) for r in hosts):
            near = closest(host, [r.host for r in hosts])
            hint = f" ({near} looks like a misspelling of it)" if near and near != host else ""
            entry = host if port == (80 if scheme == "http" else 443) else str(HostRule(host, port))
            raise ScopeError(
                f"disguise_hosts ({', '.join(map(str, hosts))}) does not name the reverse-mode target "
                f"{entry}{hint}: every request through {spec} would go out unmasked; add {entry} to "
                "disguise_hosts or leave disguise_hosts empty"
            )


def _reverse_targets() -> list[tuple[str, str, str, int]]:
    """(spec, scheme, host, port) of every reverse mode mitmproxy runs."""
    out: list[tuple[str, str, str, int]] = []
    for spec in list(getattr(ctx.options, "mode", []) or []):
        try:
            m = mode_specs.ProxyMode.parse(spec)
        except ValueError:
            continue  # mitmproxy refuses the spec itself
        if isinstance(m, mode_specs.ReverseMode):
            out.append((spec, m.scheme, norm_host(m.address[0]), m.address[1]))
    return out
