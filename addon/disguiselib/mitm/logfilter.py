"""mitmproxy's own log lines, read for originals before they are printed.

Where mitmproxy refuses a request before any addon's hook sees it (a malformed request
line or header line, a client that closes before its head is complete), it logs the
bytes it read, at the info level mitmdump prints by default: `Bad HTTP request line:
b'POST /v1/messages?org=Acme Corp HTTP/1.1'`. Nothing of such a request goes upstream,
but the log line quotes the client's text. A filter on the logger of mitmproxy's
connection handler (`mitmproxy.proxy.server`, where every protocol layer's log lines are
written) withholds what holds an original in its lines of the info level and above: each
quoted bytes value (`b'…'`, read as the text it spells) that holds one is written
`b'<original>'`, and the rest of the line goes through `leakguard.shown` as every message
of the addon's own does. Without rules in force nothing can be shown to be clean: every
quoted bytes value is withheld. Debug lines (`--set proxy_debug`) are left as they are.
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Callable

from ..leakguard import WITHHELD, shown
from ..rules.rules import Rules

LOGGERS = ("mitmproxy.proxy.server",)
_QUOTED = re.compile(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""")
NOT_SHOWN = "b'<not shown: no rules in force>'"


class Withheld(logging.Filter):
    """The filter; `rules` gives the rules in force (None: none are)."""

    def __init__(self) -> None:
        super().__init__()
        self.rules: Callable[[], Rules | None] = lambda: None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return True
        try:
            msg = record.getMessage()
            out = withheld(msg, self.rules())
        except Exception:  # noqa: BLE001 - a line that cannot be read is printed as this, never as it was
            record.msg, record.args = "disguise: a log line of mitmproxy's could not be read for originals", ()
            return True
        if out != msg:
            record.msg, record.args = out, ()
        return True


def withheld(msg: str, rules: Rules | None) -> str:
    """msg with what holds an original withheld (the module docstring)."""
    if rules is None:
        return _QUOTED.sub(NOT_SHOWN, msg)
    out = _QUOTED.sub(lambda m: m[0] if _clean_bytes(m[0], rules) else f"b'{WITHHELD}'", msg)
    return shown(out, rules)


def _clean_bytes(literal: str, rules: Rules) -> bool:
    """Does a bytes value written as Python writes it hold no original: its text as it
    spells it (UTF-8; a byte that is none, as itself) and as written (escapes and all)?"""
    try:
        text = ast.literal_eval(literal).decode("utf-8", "surrogateescape")
    except (ValueError, SyntaxError):
        return False
    return shown(text, rules) == text and shown(literal, rules) == literal


FILTER = Withheld()


def install(rules: Callable[[], Rules | None]) -> None:
    """The filter on mitmproxy's loggers, reading the rules in force through rules (once:
    a script loaded again replaces the callable, not the filter)."""
    FILTER.rules = rules
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if FILTER not in logger.filters:
            logger.addFilter(FILTER)


def uninstall() -> None:
    for name in LOGGERS:
        logging.getLogger(name).removeFilter(FILTER)
    FILTER.rules = lambda: None
