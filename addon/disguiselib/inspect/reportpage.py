"""The report's HTML page (sans I/O): a session's summary (report.Summary) as one
self-contained document — inline CSS, charts drawn as inline SVG, no script, font,
image or style sheet from anywhere (its Content-Security-Policy forbids every fetch).

Every text from the session goes through `redact` (report.Redact: what the rules would
mask becomes its rule's name) and then HTML escaping. Each chart's bars carry their
series, label and value as data attributes (`data-series`, `data-label`,
`data-value`), so that a browser's rendering of the page can be checked; a small inline
script counts the bars the browser laid out with a size (`data-bars-drawn` on the
root element).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

MASKED, REFUSED, PASSED = "masked", "refused", "passed"
OUTCOMES = (MASKED, REFUSED, PASSED)
COLORS = {MASKED: "#2f7d4f", REFUSED: "#b3261e", PASSED: "#b58100",
          "literal": "#3b5ba5", "pattern": "#7a4fa3", "strip": "#5f6b7a"}  # fmt: skip
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'"
FINDINGS_SHOWN = 300

Text = Callable[[object], str]

_STYLE = """
:root { color-scheme: light; --fg:#1d232b; --muted:#5c6672; --line:#d9dee5; --bg:#f6f7f9; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif; color:var(--fg);
       background:var(--bg); }
main { max-width:1180px; margin:0 auto; padding:28px 32px 48px; }
h1 { font-size:24px; margin:0 0 4px; } h2 { font-size:18px; margin:34px 0 10px; }
.muted { color:var(--muted); } .small { font-size:13px; }
.verdict { margin:18px 0; padding:14px 18px; border-radius:8px; font-size:17px; font-weight:600; border:1px solid; }
.verdict.clean { background:#e8f4ec; border-color:#2f7d4f; color:#1f5a37; }
.verdict.leak { background:#fbeaea; border-color:#b3261e; color:#8c1d18; }
.verdict.notproven { background:#fff5df; border-color:#b58100; color:#7a5600; }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:12px; }
.card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.card .n { font-size:26px; font-weight:650; } .card .k { color:var(--muted); font-size:13px; }
.card.masked .n { color:#2f7d4f; } .card.refused .n { color:#b3261e; } .card.passed .n { color:#b58100; }
.panel { background:#fff; border:1px solid var(--line); border-radius:8px; padding:14px 16px; overflow-x:auto; }
.two { display:grid; grid-template-columns:1fr 1fr; gap:16px; }
@media (max-width: 900px) { .two { grid-template-columns:1fr; } }
table { border-collapse:collapse; width:100%; font-size:14px; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; } td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.reason { overflow-wrap:anywhere; }
.legend span { display:inline-block; margin-right:14px; font-size:13px; }
.legend i { display:inline-block; width:11px; height:11px; border-radius:2px; margin-right:5px; vertical-align:-1px; }
svg text { font:12px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif; fill:#1d232b; }
svg .axis { stroke:#c3c9d1; }
ul.findings { margin:8px 0 0; padding-left:20px; font-size:14px; } ul.findings li { overflow-wrap:anywhere; }
li.leak { color:#8c1d18; }
footer { margin-top:36px; font-size:13px; color:var(--muted); }
"""

_SCRIPT = """
addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("svg .bar").forEach(function (b) {
    var r = b.getBoundingClientRect(); if (r.width > 0 && r.height > 0) { n++; }
  });
  document.documentElement.setAttribute("data-bars-drawn", String(n));
});
"""


def esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def legend(series: Sequence[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{COLORS.get(s, "#888")}"></i>{esc(s)}</span>' for s in series
    ) + "</div>"  # fmt: skip


def hbars(
    chart: str, rows: Sequence[tuple[str, dict[str, int]]], series: Sequence[str], t: Text, width: int = 840
) -> str:
    """Horizontal stacked bars: one row per label, one segment per series; `width` in
    pixels (a half-width panel takes 470)."""
    if not rows:
        return '<p class="muted">nothing to chart</p>'
    label_w = 210 if width >= 700 else 120
    bar_w, row_h = width - label_w - 50, 26
    top = max(sum(v.get(s, 0) for s in series) for _, v in rows) or 1
    h = row_h * len(rows) + 8
    out = [f'<svg class="chart" data-chart="{esc(chart)}" role="img" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">']  # fmt: skip
    for i, (label, values) in enumerate(rows):
        y = 4 + i * row_h
        name = t(label)
        keep = (label_w - 12) // 7
        short = name if len(name) <= keep else name[: keep - 1] + "…"
        out.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end"><title>{esc(name)}</title>'
                   f"{esc(short)}</text>")
        x = float(label_w)
        total = 0
        for s in series:
            v = values.get(s, 0)
            if v <= 0:
                continue
            w = max(bar_w * v / top, 1.5)
            out.append(f'<rect class="bar" data-series="{esc(s)}" data-label="{esc(name)}" data-value="{v}" '
                       f'x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" rx="2" '
                       f'fill="{COLORS.get(s, "#888")}"><title>{esc(name)}: {v} {esc(s)}</title></rect>')  # fmt: skip
            x += w
            total += v
        out.append(f'<text x="{x + 6:.1f}" y="{y + 16}">{total}</text>')
    out.append(f'<line class="axis" x1="{label_w}" y1="2" x2="{label_w}" y2="{h - 2}"/></svg>')
    return "".join(out)


def columns(chart: str, rows: Sequence[tuple[str, dict[str, int]]], series: Sequence[str], t: Text) -> str:
    """Vertical stacked columns: one per label (an hour), one segment per series."""
    if not rows:
        return '<p class="muted">no request times in the file</p>'
    col_w = max(14, min(56, 960 // max(len(rows), 1)))
    left, plot_h, width = 44, 180, 44 + col_w * len(rows) + 20
    h = plot_h + 70
    top = max(sum(v.get(s, 0) for s in series) for _, v in rows) or 1
    out = [f'<svg class="chart" data-chart="{esc(chart)}" role="img" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
           f'<line class="axis" x1="{left}" y1="{10 + plot_h}" x2="{width - 10}" y2="{10 + plot_h}"/>',
           f'<text x="{left - 6}" y="18" text-anchor="end">{top}</text>',
           f'<text x="{left - 6}" y="{10 + plot_h}" text-anchor="end">0</text>']  # fmt: skip
    for i, (label, values) in enumerate(rows):
        x = left + i * col_w + 3
        y = 10.0 + plot_h
        name = t(label)
        for s in series:
            v = values.get(s, 0)
            if v <= 0:
                continue
            hh = max(plot_h * v / top, 1.5)
            y -= hh
            out.append(f'<rect class="bar" data-series="{esc(s)}" data-label="{esc(name)}" data-value="{v}" '
                       f'x="{x}" y="{y:.1f}" width="{col_w - 6}" height="{hh:.1f}" rx="2" '
                       f'fill="{COLORS.get(s, "#888")}"><title>{esc(name)} UTC: {v} {esc(s)}</title>'
                       "</rect>")  # fmt: skip
        if len(rows) <= 24 or i % max(1, len(rows) // 12) == 0:
            cx, cy = x + (col_w - 6) / 2, 10 + plot_h + 12
            out.append(f'<text x="{cx:.1f}" y="{cy}" text-anchor="end" transform="rotate(-40 {cx:.1f} {cy})">'
                       f"{esc(name[5:])}</text>")  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], nums: Sequence[int] = ()) -> str:
    def cell(i: int, v: object, tag: str = "td") -> str:
        cls = ' class="num"' if i in nums else ""
        return f"<{tag}{cls}>{v}</{tag}>"

    out = ["<table><thead><tr>", *(cell(i, esc(h), "th") for i, h in enumerate(head)), "</tr></thead><tbody>"]
    for r in rows:
        out += ["<tr>", *(cell(i, v) for i, v in enumerate(r)), "</tr>"]
    out.append("</tbody></table>")
    return "".join(out)


def _when(ts: float | None) -> str:
    import datetime

    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def page(s: Any, t: Text, version: str = "") -> str:
    """The whole document for report.Summary s; t redacts a text from the session."""
    rep = s.report
    code = rep.exit_code()
    vclass = {0: "clean", 1: "leak"}.get(code, "notproven")
    outcomes = s.by_outcome()
    llm = s.llm()
    masks = sum(sum(r.counts.values()) for r in llm)
    restored = sum(r.restored for r in llm)
    failed = sum(1 for r in llm if r.failed)
    cards = [("flows in the file", s.flows, ""), ("requests to protected endpoints", len(llm), ""),
             ("masked", outcomes.get(MASKED, 0), MASKED), ("refused (never sent)", outcomes.get(REFUSED, 0), REFUSED),
             ("passed as they were", outcomes.get(PASSED, 0), PASSED), ("originals masked", masks, ""),
             ("originals restored", restored, ""), ("ended with the addon's error", failed, "")]  # fmt: skip
    by_api = s.by_api()
    by_rule = s.by_rule()
    by_kind = s.by_kind()
    hours = s.per_hour()
    refused = s.refused()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>disguise report: {esc(t(s.source))}</title>",
        f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body><main>",
        f"<h1>disguise report: {esc(t(s.source))}</h1>",
        f'<div class="muted small">rules: {esc(t(s.rules_line))}</div>',
        f'<div class="verdict {vclass}" id="verdict" data-exit="{code}">Audit: {esc(t(rep.verdict()))}</div>',
        '<section id="summary"><div class="cards">',
        *(f'<div class="card {c}" data-key="{esc(k)}"><div class="n">{n}</div><div class="k">{esc(k)}</div></div>'
          for k, n, c in cards),  # fmt: skip
        "</div></section>",
        '<h2>By API</h2><div class="panel">',
        legend(OUTCOMES),
        hbars("by-api", [(a, dict(c)) for a, c in by_api.items()], OUTCOMES, t),
        _table(["API", *OUTCOMES, "flows"],
               [[esc(t(a)), *(c.get(o, 0) for o in OUTCOMES), sum(c.values())] for a, c in by_api.items()],
               nums=(1, 2, 3, 4)),  # fmt: skip
        "</div>",
        '<h2>By rule</h2><div class="two"><div class="panel"><div class="muted small">originals masked per rule '
        "(every literal counts under <em>literals</em>)</div>",
        legend(["literal", "pattern", "strip"]),
        hbars("by-rule", [(r, {k: n}) for r, k, n, _ in by_rule], ["literal", "pattern", "strip"], t, 470),
        _table(["rule", "kind", "originals", "flows"], [[esc(t(r)), k, n, f] for r, k, n, f in by_rule], nums=(2, 3)),
        '</div><div class="panel"><div class="muted small">LLM flows by the kind of rule that masked something in '
        "them (a flow masked by both counts under each)</div>",
        legend(OUTCOMES),
        hbars("by-kind", [(k, dict(c)) for k, c in by_kind.items()], OUTCOMES, t, 470),
        "</div></div>",
        '<h2>Per hour (UTC)</h2><div class="panel">',
        legend(OUTCOMES),
        columns("per-hour", [(h, dict(c)) for h, c in hours.items()], OUTCOMES, t),
        "</div>",
        f'<h2 id="refused">Refused requests ({len(refused)})</h2><div class="panel">',
        _refused_table(refused, t),
        "</div>",
        _audit(rep, t),
        f"<footer>Written by disguise {esc(version)} from the addon's per-flow summaries and the audit of "
        f"the flow file. This page holds no original: rule names, placeholders, counts and places only; "
        f"it fetches nothing.</footer>",
        "</main></body></html>",
    ]
    return "\n".join(parts)


def _refused_table(refused: Sequence[Any], t: Text) -> str:
    if not refused:
        return '<p class="muted">none: the addon refused no request</p>'
    rows = [[r.index, _when(r.when), esc(t(r.label)), esc(t(r.api)), esc(t(r.reason))] for r in refused]
    return _table(["flow", "time (UTC)", "request", "API", "reason"], rows, nums=(0,)).replace(
        "<td>", '<td class="reason">'
    )


def _audit(rep: Any, t: Text) -> str:
    out = ['<h2 id="audit">Audit</h2><div class="panel">',
           f"<p><strong>{esc(t(rep.verdict()))}</strong> — every original found in what went upstream, "
           "every disguise or placeholder the client received (the same check as <code>disguise audit</code>)."
           "</p>"]  # fmt: skip
    if rep.findings:
        shown = rep.findings[:FINDINGS_SHOWN]
        out.append('<ul class="findings">')
        for f in shown:
            cls = "leak" if f.leak else "note"
            out.append(f'<li class="{cls}">flow {f.flow} {esc(t(f.label))}: {esc(t(f.line(False).strip()))}</li>')
        out.append("</ul>")
        if len(rep.findings) > len(shown):
            out.append(f'<p class="muted">… and {len(rep.findings) - len(shown)} more (disguise audit lists all)</p>')
    else:
        out.append('<p class="muted">no findings</p>')
    if rep.incomplete:
        flows = ", ".join(str(r.index) for r in rep.incomplete[:50])
        out.append(f'<p class="muted">not kept whole (disguise_capture_limit): flows {esc(flows)}</p>')
    if rep.coded:
        flows = ", ".join(str(r.index) for r in rep.coded[:50])
        out.append('<p class="muted">request body in a coding not decoded (a content-encoding, a gRPC '
                   f'message&#39;s): flows {esc(flows)}</p>')
    if rep.unloaded:
        flows = ", ".join(str(r.index) for r in rep.unloaded[:50])
        out.append(f'<p class="muted">masked by rules not loaded for this audit: flows {esc(flows)}</p>')
    if rep.skipped:
        out.append(f'<p class="muted">{rep.skipped} other flows (not LLM API requests) not audited</p>')
    out.append("</div>")
    return "".join(out)
