"""`disguise report`: a recorded session as one self-contained HTML page for a reviewer
(adapter-level: reads mitmproxy flows).

The page holds the session's summary (flows; masked, refused, passed; by API, by rule,
per hour), charts of the same drawn as inline SVG, the refused requests with their
reasons and the audit's verdict with its findings (audit.py, the same as `disguise
audit`). It fetches nothing: no script, style sheet, font or image from anywhere; its
Content-Security-Policy forbids every fetch.

Never an original on the page. What it shows comes from the addon's per-flow summary
(record.py: counts per rule, how the flow ended, the reasons the addon wrote — rule names
and places, by design) and the audit's findings (rule names and fields, without
`--show-originals`), never from a body. Every text put on the page is read by the rules
first and anything they would mask is replaced by its rule's name (`Redact`); and the
finished page is read once more: a page in which the rules still find an original is not
written (ReportError).
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from mitmproxy import flow as mflow
from mitmproxy import http

from ..apis.registry import recognise, recognise_ws
from ..leakguard import spans
from ..rules.rules import LITERALS, Rules
from . import audit, flowfile
from .record import META, is_refused
from .reportpage import MASKED, PASSED, REFUSED, page

UNKNOWN_API = "unknown endpoint"


class ReportError(Exception):
    """The page would hold an original: not written."""


class Redact:
    """Text for the page: every span the rules would mask replaced by `[its rule]`."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def __call__(self, text: object) -> str:
        s = str(text)
        found = spans(self.rules, s)
        if not found:
            return s
        out, pos = [], 0
        for label, a, b in sorted(found, key=lambda t: t[1]):
            if a < pos:
                continue
            out += [s[pos:a], f"[{'literal' if label == LITERALS else label}]"]
            pos = b
        out.append(s[pos:])
        return "".join(out)


@dataclass
class Row:
    """One flow as the report sees it: its summary, never its bodies."""

    index: int
    when: float | None  # request start (epoch seconds)
    label: str  # "POST /v1/messages" (no query)
    api: str
    outcome: str | None  # MASKED, REFUSED, PASSED; None: not an LLM flow
    reason: str = ""  # why refused or forwarded unmasked (the addon's words: rule and place)
    counts: dict[str, int] = field(default_factory=dict)  # originals masked per rule
    restored: int = 0
    stripped: int = 0
    failed: str = ""  # the response ended with the addon's own error


@dataclass
class Summary:
    source: str
    rules_line: str
    rows: list[Row]
    flows: int  # every flow in the file, LLM or not
    report: audit.Report

    def llm(self) -> list[Row]:
        return [r for r in self.rows if r.outcome is not None]

    def by_outcome(self) -> Counter[str]:
        return Counter(r.outcome for r in self.llm() if r.outcome)

    def by_api(self) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for r in self.llm():
            out.setdefault(r.api, Counter())[r.outcome or ""] += 1
        return dict(sorted(out.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))

    def by_rule(self) -> list[tuple[str, str, int, int]]:
        """(rule, kind, originals masked, flows it masked something in), most first."""
        masks: Counter[str] = Counter()
        flows: Counter[str] = Counter()
        for r in self.llm():
            for rule, n in r.counts.items():
                masks[rule] += n
                flows[rule] += 1
        rows = [(rule, "literal" if rule == LITERALS else "pattern", n, flows[rule]) for rule, n in masks.items()]
        stripped = [r.stripped for r in self.llm() if r.stripped]
        if stripped:
            rows.append(("strip rules", "strip", sum(stripped), len(stripped)))
        return sorted(rows, key=lambda t: (-t[2], t[0]))

    def by_kind(self) -> dict[str, Counter[str]]:
        """Flows by the kind of rule that masked something in them (a flow masked by
        both kinds counts under each), by outcome."""
        out: dict[str, Counter[str]] = {}
        for r in self.llm():
            kinds = {"literal" if k == LITERALS else "pattern" for k, n in r.counts.items() if n} or {"none"}
            for k in kinds:
                out.setdefault(k, Counter())[r.outcome or ""] += 1
        return {k: out[k] for k in ("literal", "pattern", "none") if k in out}

    def per_hour(self) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for r in self.llm():
            if r.when is None:
                continue
            hour = datetime.datetime.fromtimestamp(r.when, datetime.UTC).strftime("%Y-%m-%d %H:00")
            out.setdefault(hour, Counter())[r.outcome or ""] += 1
        return dict(sorted(out.items()))

    def refused(self) -> list[Row]:
        return [r for r in self.llm() if r.outcome == REFUSED]


def _error_message(f: http.HTTPFlow) -> str:
    """The addon's own words in a refusal it answered (the error body's message)."""
    if f.response is None:
        return ""
    try:
        doc = json.loads(f.response.get_content(strict=False) or b"")
    except ValueError:
        return ""
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, str) and x.startswith("disguise:"):
            return x
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return ""


def row(i: int, f: mflow.Flow) -> Row:
    if not isinstance(f, http.HTTPFlow):
        return Row(i, None, type(f).__name__, "", None)
    req = f.request
    ws = recognise_ws(req.path) if "websocket" in req.headers.get("upgrade", "").lower() else None
    api = recognise(req.method, req.path) if ws is None else None
    name = api.name if api is not None else ws.name if ws is not None else None
    m = f.metadata.get(META)
    meta: dict = m if isinstance(m, dict) else {}
    out = Row(i, req.timestamp_start, f"{req.method} {req.path.split('?', 1)[0]}", name or UNKNOWN_API, None)
    failed = str(meta.get("failed") or "")
    if is_refused(f):
        out.outcome = REFUSED
        comment = f.comment if f.comment.startswith("disguise") else ""
        out.reason = failed or _error_message(f) or comment or "refused by the addon"
        out.reason = out.reason.removeprefix("disguise: ").removeprefix("request refused: ")
    elif failed.startswith("forwarded UNMASKED"):
        out.outcome, out.reason = PASSED, failed
    elif meta and not meta.get("dry_run") and not meta.get("shared"):
        out.outcome = MASKED
        out.failed = failed
    elif name is not None and not meta.get("shared"):
        out.outcome = PASSED
        out.reason = "forwarded as it was (no summary of the addon: scanned clean, or recorded without it)"
    elif meta.get("shared"):
        out.outcome = MASKED  # a shared copy: the provider side of a masked flow
    if out.outcome == MASKED:
        counts = meta.get("counts") or {}
        out.counts = {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}
        out.restored = int(meta.get("restored") or 0)
        out.stripped = int(meta.get("stripped") or 0)
    return out


def summarize(flows: Sequence[mflow.Flow], rules: Rules, source: str, rules_line: str) -> Summary:
    rows = [row(i, f) for i, f in enumerate(flows, 1)]
    report = audit.audit(flowfile.records(flows), rules)
    return Summary(source, rules_line, rows, len(flows), report)


def render(s: Summary, rules: Rules, version: str = "") -> str:
    """The page; ReportError when the rules still find an original in it."""
    redact = Redact(rules)
    text = page(s, redact, version)
    left = {("literal" if lab == LITERALS else lab) for lab, _, _ in spans(rules, text)}
    if left:
        raise ReportError(f"the page would hold originals ({', '.join(sorted(left))}): not written")
    return text
