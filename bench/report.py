"""Reporting: each section prints its own table, and records its headline figures with
their target here (issue 16's, where it sets one); the entry prints them together at the
end, under names that say what each is. Figures are reported, never asserted: a missed
target prints MISS and by how much, and the run goes on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Figure:
    section: str
    name: str
    measured: str
    target: str
    verdict: str  # "PASS", "MISS (...)", "" (no target), "FAILED" (a correctness check)


FIGURES: list[Figure] = []

# What each section measures, as the summary heads its figures (keys: bench.SECTIONS).
TITLES = {
    "a": "Streams through mitmdump (addon beside plain mitmdump)",
    "b": "A stream dense with disguises",
    "c": "Prose: what is held back",
    "d": "Request bodies and linear time",
    "e": "Memory and a burst of connections",
}


def at_most(value: float, limit: float, unit: str = "", fmt: str = "{:.2f}") -> tuple[str, str]:
    """(target text, verdict) for "value ≤ limit"."""
    t = f"≤ {fmt.format(limit)}{unit}"
    if value != value:  # nan: not measured
        return t, "not measured"
    if value <= limit:
        return t, "PASS"
    r = value / limit if limit > 0 else 0.0
    by = (f"{r:.2f}× the target" if r < 1.1 else f"{r:.1f}× the target") if limit > 0 else f"{fmt.format(value - limit)}{unit} over"
    return t, f"MISS ({by})"


def figure(section: str, name: str, measured: str, target: str = "", verdict: str = "") -> str:
    """Record a headline figure; returns the "[target ...: VERDICT]" text to print beside it."""
    FIGURES.append(Figure(section, name, measured, target, verdict))
    if not target:
        return ""
    return f"[target {target}: {verdict}]"


def check(section: str, name: str, problems: list[str]) -> str:
    """Record a correctness check: OK, or FAILED with the count of problems."""
    ok = not problems
    FIGURES.append(Figure(section, name, "OK" if ok else f"{len(problems)} problem(s)", "correct", "PASS" if ok else "FAILED"))
    return "OK" if ok else "MISMATCH"


def summary() -> None:
    if not FIGURES:
        return
    print("Summary: headline figures beside their targets (measured, not asserted)")
    w1 = min(84, max(len(f.name) for f in FIGURES) + 2)
    w2 = min(14, max(len(f.measured) for f in FIGURES))
    w3 = min(24, max(len(f.target) for f in FIGURES))
    section = None
    for f in FIGURES:
        if f.target == "correct" and f.verdict == "PASS":
            continue  # correct checks are listed only when they fail
        if f.section != section:
            section = f.section
            print(f"  {TITLES.get(section, section)}")
        print(f"    {f.name:<{w1}}  {f.measured:>{w2}}  {f.target:<{w3}}  {f.verdict}")
    failed = [f for f in FIGURES if f.verdict == "FAILED"]
    n_checks = sum(1 for f in FIGURES if f.target == "correct")
    print(f"  correctness checks: {n_checks - len(failed)}/{n_checks} OK"
          + ("" if not failed else "; FAILED: " + ", ".join(f.name for f in failed)))  # fmt: skip


def us(x: float) -> str:
    return f"{x * 1e6:.1f} µs"


def ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms"


def secs(x: float | None, budget: float | None = None) -> str:
    if x is None:
        return f"> {budget:g} s" if budget else "—"
    if x < 1:
        return f"{x * 1e3:.1f} ms"
    return f"{x:.2f} s"
