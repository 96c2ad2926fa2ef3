"""The session report (inspect/report.py): what it counts from the addon's per-flow
summaries, and that no original reaches the page (Redact, and the last look at the
finished page)."""

from __future__ import annotations

import json
import re

import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from disguiselib.inspect import report, reportpage
from disguiselib.inspect.record import META
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules

RULES = Rules(mappings.from_dict({
    "literals": {"Acme Corp": "Zenith Labs"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}, "test"))  # fmt: skip
HOUR = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def flow(path: str = "/v1/messages", when: float = HOUR, meta: dict | None = None, refused: str = "") -> http.HTTPFlow:
    f = tflow.tflow(resp=True)
    f.request.method = "POST"
    f.request.host = "api.anthropic.com"
    f.request.path = path
    f.request.timestamp_start = when
    f.request.content = json.dumps({"model": "m", "messages": [{"role": "user", "content": "[EMAIL_1]"}]}).encode()
    f.response.headers["content-type"] = "application/json"
    f.response.content = b'{"type":"message","content":[]}'
    if meta is not None:
        f.metadata[META] = meta
    if refused:
        f.response = http.Response.make(400, json.dumps({"error": {"message": f"disguise: {refused}"}}),
                                        {"content-type": "application/json", "x-disguise": "refused"})  # fmt: skip
        f.comment = f"disguise: {refused}"
    return f


def session() -> list[http.HTTPFlow]:
    masked = {"api": "anthropic.messages", "masked": 3, "counts": {"literals": 2, "EMAIL": 1}, "restored": 3,
              "end": "completed"}  # fmt: skip
    return [
        flow(meta=masked),
        flow(when=HOUR + 60, meta={**masked, "counts": {"EMAIL": 1}, "masked": 1, "restored": 1, "stripped": 2}),
        flow(when=HOUR + 3600, meta={**masked, "failed": "stream could not be reversed: x"}),
        # an unknown endpoint refused, an original in its path
        flow("/v1/files/bob@corp.example.com", when=HOUR + 3700,
             refused="request refused: POST /v1/files/x is not an endpoint disguise transforms, and it holds an "
                     "original (EMAIL in url)"),  # fmt: skip
        flow(when=HOUR + 3800, meta={"api": "anthropic.messages", "masked": 0, "counts": {},
                                     "failed": "forwarded UNMASKED (disguise_fail_open): invalid JSON"}),  # fmt: skip
        flow("/index.html", when=HOUR + 3900),  # not an LLM request
    ]


def test_the_summary_counts_outcomes_apis_rules_and_hours() -> None:
    s = report.summarize(session(), RULES, "s.flows", "rules")
    assert s.flows == 6 and len(s.llm()) == 5
    assert s.by_outcome() == {"masked": 3, "refused": 1, "passed": 1}
    assert s.by_api() == {"anthropic.messages": {"masked": 3, "passed": 1}, "unknown endpoint": {"refused": 1}}
    assert s.by_rule() == [("literals", "literal", 4, 2), ("EMAIL", "pattern", 3, 3), ("strip rules", "strip", 2, 1)]
    assert s.by_kind() == {"literal": {"masked": 2}, "pattern": {"masked": 3}, "none": {"refused": 1, "passed": 1}}
    assert s.per_hour() == {"2026-01-01 00:00": {"masked": 2}, "2026-01-01 01:00": {"masked": 1, "refused": 1,
                                                                                      "passed": 1}}  # fmt: skip
    (r,) = s.refused()
    assert r.index == 4 and r.reason.startswith("POST /v1/files/x is not an endpoint")
    assert sum(1 for x in s.llm() if x.failed) == 1


def test_the_page_has_the_figures_in_its_charts_and_no_original() -> None:
    s = report.summarize(session(), RULES, "s.flows", "rules")
    page = report.render(s, RULES, "9.9")
    assert "bob@corp.example.com" not in page and "corp.example.com" not in page
    assert "POST /v1/files/[EMAIL]" in page
    bars = re.findall(r'data-chart="([^"]+)"|data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', page)
    chart, got = "", set()
    for name, series, label, value in bars:
        chart = name or chart
        if series:
            got.add((chart, series, label, int(value)))
    assert ("by-api", "masked", "anthropic.messages", 3) in got
    assert ("by-api", "refused", "unknown endpoint", 1) in got
    assert ("by-rule", "literal", "literals", 4) in got and ("by-rule", "strip", "strip rules", 2) in got
    assert ("per-hour", "refused", "2026-01-01 01:00", 1) in got
    assert 'data-exit="0"' in page  # the audit: the masked requests' bodies hold placeholders only


def test_redact_names_the_rule_instead_of_the_original() -> None:
    red = report.Redact(RULES)
    assert red("mail bob@corp.example.com from Acme Corp") == "mail [EMAIL] from [literal]"
    assert red("nothing here") == "nothing here"


def test_a_page_the_rules_still_find_an_original_in_is_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last look: with redaction broken, the finished page is refused."""
    monkeypatch.setattr(report.Redact, "__call__", lambda self, text: str(text))
    s = report.summarize(session(), RULES, "s.flows", "rules")
    with pytest.raises(report.ReportError, match=r"would hold originals \(EMAIL\)"):
        report.render(s, RULES)


def test_the_audit_verdict_is_on_the_page() -> None:
    leaky = flow(meta={"api": "anthropic.messages", "masked": 0, "counts": {}})
    leaky.request.content = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}]}).encode()
    s = report.summarize([leaky], RULES, "s.flows", "rules")
    page = report.render(s, RULES)
    assert 'class="verdict leak"' in page and 'data-exit="1"' in page
    assert "literal (disguise &#x27;Zenith Labs&#x27;) at messages[0].content" in page
    assert "Acme Corp" not in page
    assert reportpage.CSP in page.replace("&#x27;", "'")
