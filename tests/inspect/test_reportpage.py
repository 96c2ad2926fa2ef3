"""The report's page (inspect/reportpage.py): the SVG charts carry their figures, and a
text from the session is redacted and escaped wherever it lands."""

from __future__ import annotations

import re

from disguiselib.inspect import reportpage


def bars(svg: str) -> list[tuple[str, str, int, float]]:
    return [(s, lab, int(v), float(w)) for s, lab, v, w in re.findall(
        r'data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)" x="[^"]+" y="[^"]+" (?:width|width)="([^"]+)"',
        svg)]  # fmt: skip


def test_horizontal_bars_scale_to_the_largest_total_and_skip_zeros() -> None:
    svg = reportpage.hbars("c", [("a", {"masked": 4, "refused": 0}), ("b", {"masked": 1, "refused": 1})],
                           reportpage.OUTCOMES, str)  # fmt: skip
    got = bars(svg)
    assert [(s, lab, v) for s, lab, v, _ in got] == [("masked", "a", 4), ("masked", "b", 1), ("refused", "b", 1)]
    widths = {(s, lab): w for s, lab, _, w in got}
    assert widths[("masked", "a")] == 4 * widths[("masked", "b")]
    assert widths[("refused", "b")] == widths[("masked", "b")]
    assert reportpage.hbars("c", [], reportpage.OUTCOMES, str) == '<p class="muted">nothing to chart</p>'


def test_columns_stack_each_hours_series() -> None:
    svg = reportpage.columns("h", [("2026-01-01 00:00", {"masked": 2, "refused": 1}), ("2026-01-01 01:00", {"passed": 3})],
                             reportpage.OUTCOMES, str)  # fmt: skip
    found = re.findall(r'data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', svg)
    assert found == [("masked", "2026-01-01 00:00", "2"), ("refused", "2026-01-01 00:00", "1"),
                     ("passed", "2026-01-01 01:00", "3")]  # fmt: skip


def test_a_label_is_redacted_then_escaped() -> None:
    svg = reportpage.hbars("c", [('<b>"x"</b> secret-name-that-is-very-long-indeed', {"masked": 1})],
                           reportpage.OUTCOMES, lambda s: str(s).replace("secret", "[S]"))  # fmt: skip
    assert "secret" not in svg and "<b>" not in svg
    assert 'data-label="&lt;b&gt;&quot;x&quot;&lt;/b&gt; [S]-name-that-is-very-long-indeed"' in svg
    assert "…" in svg  # the visible label is cut, the tooltip keeps it whole
