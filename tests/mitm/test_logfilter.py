"""mitmproxy's own log lines read for originals (mitm/logfilter.py)."""

from __future__ import annotations

import logging

import pytest

from disguiselib.mitm import logfilter
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules

RULES = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs", "Ünïcødé GmbH": "Unicode Ltd",
                                               "KESTRELNINE": "FALCONFORTY"}}))  # fmt: skip


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("client connect", "client connect"),
        ("Bad HTTP request line: b'POST /v1/messages?org=Acme Corp HTTP/1.1'", "Bad HTTP request line: b'<original>'"),
        ("Invalid header line: b'x-org KESTRELNINE'", "Invalid header line: b'<original>'"),
        # the text a bytes value spells, escapes undone: an original Python writes as \\x.. escapes
        ("Invalid header line: " + repr("x-org: Ünïcødé GmbH".encode()), "Invalid header line: b'<original>'"),
        ("Bad HTTP request line: b'GET /v1/models HTTP/1.1'", "Bad HTTP request line: b'GET /v1/models HTTP/1.1'"),
        # outside a bytes value: through leakguard.shown, as the addon's own messages
        ("HTTP/2 protocol error: header x-org=Acme Corp", "HTTP/2 protocol error: header x-org=<original>"),
    ],
)
def test_a_line_is_shown_with_what_holds_an_original_withheld(line: str, shown: str) -> None:
    assert logfilter.withheld(line, RULES) == shown


def test_without_rules_every_bytes_value_is_withheld() -> None:
    line = "Client closed connection before completing request headers: b'POST /x HTTP/1.1\\r\\n'"
    assert logfilter.withheld(line, None) == (
        "Client closed connection before completing request headers: b'<not shown: no rules in force>'"
    )
    assert logfilter.withheld("client connect", None) == "client connect"


def test_the_filter_rewrites_a_record_of_the_info_level_and_leaves_debug(caplog) -> None:  # noqa: ANN001
    logger = logging.getLogger(logfilter.LOGGERS[0])
    logfilter.install(lambda: RULES)
    logfilter.install(lambda: RULES)  # (once on the logger, a script loaded again)
    try:
        assert logger.filters.count(logfilter.FILTER) == 1
        with caplog.at_level(logging.DEBUG, logger=logger.name):
            logger.info("Invalid header line: %r", b"x-org KESTRELNINE")
            logger.debug("Invalid header line: %r", b"x-org KESTRELNINE")
        assert [r.getMessage() for r in caplog.records] == [
            "Invalid header line: b'<original>'", "Invalid header line: b'x-org KESTRELNINE'"
        ]
    finally:
        logfilter.uninstall()
    assert logfilter.FILTER not in logger.filters
