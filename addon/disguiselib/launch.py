"""`disguise run` and `disguise web`: mitmdump or mitmweb with the addon loaded, and the
addon list both entry scripts build.

    disguise run [mitmdump options]     # the addon, the shipped defaults, 127.0.0.1
    disguise web [mitmweb options]      # the same in mitmweb, its token auth on

Every argument is passed to mitmproxy as it is, with three additions: `-s` naming the
package's addon script (shipped.SCRIPT), `--listen-host 127.0.0.1` unless the arguments
set the listen host themselves, and disguise's own `--mappings PATH` (repeatable) and
`--no-defaults`, which become `--set disguise_mappings=PATH` and `--set
disguise_defaults=false` — the same flags `audit` and `share` take, so one command line
names the rules for the proxy and for the audit of what it recorded.

mitmproxy runs in this process (mitmproxy.tools.main), so whatever Python runs
`disguise` runs the proxy, with the package it was installed with.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Sequence

from . import shipped

LOCAL = "127.0.0.1"


def addons() -> list:
    """A fresh Disguise addon and its Inspector: what `-s` loads (a new pair on every
    script reload, as mitmproxy expects), between the two halves of its Metrics (the
    `disguise_metrics` option: first, so that a value it cannot serve leaves Disguise
    unconfigured, and the start of each hook it times; then the end); and ListenQueue,
    which gives mitmproxy's listeners a queue that holds a burst of connections
    (mitm/listen.py)."""
    from .mitm.addon import Disguise
    from .mitm.listen import ListenQueue
    from .mitm.metrics import Metrics

    d = Disguise()
    m = Metrics(d)
    d.reloaded = m.reloaded
    return [m, d, d.inspect, m.tail, ListenQueue()]


def given(args: Sequence[str], flag: str, option: str) -> str | None:
    """The value the arguments give to a mitmproxy option, by its flag (`--listen-host
    X`, `--listen-host=X`) or by `--set option=X`; the last one wins; None if unset."""
    out = None
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a == flag:
            out = nxt
        elif a.startswith(flag + "="):
            out = a[len(flag) + 1 :]
        elif a == "--set" and nxt.partition("=")[0] == option:
            out = nxt.partition("=")[2]
        elif a.startswith("--set=") and a[6:].partition("=")[0] == option:
            out = a[6:].partition("=")[2]
    return out


def mitm_argv(args: Sequence[str], mappings: Sequence[str] = (), defaults: bool = True) -> list[str]:
    """The mitmproxy command line for `disguise run|web ARGS`."""
    out = ["-s", str(shipped.SCRIPT)]
    if given(args, "--listen-host", "listen_host") is None:
        out += ["--listen-host", LOCAL]
    for m in mappings:
        out += ["--set", f"disguise_mappings={m}"]
    if not defaults:
        out += ["--set", "disguise_defaults=false"]
    return out + list(args)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def web_has_auth() -> bool:
    """mitmweb asks for a token from mitmproxy 11.1 on (`web_password`; without it a
    random token, printed in the URL at start). 11.0 has no authentication at all."""
    from mitmproxy.version import VERSION

    major, minor = (int(x) for x in VERSION.split(".")[:2])
    return (major, minor) >= (11, 1)


class LaunchError(Exception):
    """The proxy must not start this way (the message says why)."""


def check_web(args: Sequence[str]) -> str | None:
    """A warning to print before mitmweb starts, or LaunchError when it must not start:
    mitmweb shows every flow, originals included, so a web UI without a login (mitmproxy
    11.0) is served on a loopback address only."""
    if web_has_auth():
        return None  # an empty web_password means a random token, never none
    host = given(args, "--web-host", "web_host") or LOCAL
    if not _loopback(host):
        raise LaunchError(
            f"mitmweb {_mitm_version()} has no login, and its web UI shows every flow with its originals: "
            f"it is not served on {host!r}. Serve it on 127.0.0.1, or use mitmproxy 11.1 or later "
            "(Python 3.12 or later), whose web UI asks for a token."
        )
    return (
        f"disguise: mitmweb {_mitm_version()} has no login: any program on this machine can read the flows "
        f"(originals included) at http://{host}:{given(args, '--web-port', 'web_port') or 8081}/. "
        "mitmproxy 11.1 and later (Python 3.12 or later) ask for a token."
    )


def _mitm_version() -> str:
    from mitmproxy.version import VERSION

    return VERSION


def launch(tool: str, args: Sequence[str], mappings: Sequence[str] = (), defaults: bool = True) -> int:
    """Run mitmdump (tool "run") or mitmweb (tool "web") in this process until it exits."""
    from mitmproxy.tools import main

    argv = mitm_argv(args, mappings, defaults)
    if tool == "web":
        try:
            warning = check_web(args)
        except LaunchError as e:
            print(f"disguise web: {e}", file=sys.stderr)
            return 1
        if warning:
            print(warning, file=sys.stderr)
        entry = main.mitmweb
    else:
        entry = main.mitmdump
    # mitmproxy names itself after argv[0] in its usage and error messages
    sys.argv = [f"disguise {tool}", *argv]
    entry(argv)
    return 0
