"""(standalone) What the masker's second reading of its result costs (rules/settle.py), on
the 1 MB Claude-Code-shaped body's first request of bench/stages.py (1,000 literals + the
shipped patterns), in process, thread CPU:

- settle's own time inside pipeline.mask_request (medians of --runs, nothing remembered
  before each), and settle's calls replayed alone (the rules' memory of texts cleared);
- each engine alone over the texts it reads there (each masked text in its context): the
  UTF-8 encoding, the literals (leftmost.Literals), the patterns' prefilter (Hyperscan),
  the exact search of each pattern the prefilter names (RE2 and the rules' options); the
  replay less these is Python around them;
- how much of those texts a re-read of only the places of the edits would still read:
  the characters of the lines that hold a replacement, and with one line each side (no
  such re-read gives find()'s answer: tests/rules/test_settle.py, docs/engine.md).

    python bench/settlecost.py [--runs 5]
"""

from __future__ import annotations

import argparse
import bisect
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "addon")]

import bodies  # noqa: E402
from material import Material, make_literals  # noqa: E402
from proxies import mappings_dir, tmpdir  # noqa: E402

from disguiselib import pipeline  # noqa: E402
from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from disguiselib.rules import settle  # noqa: E402
from disguiselib.rules.bigtext import lit_matches  # noqa: E402
from disguiselib.rules.patterns import next_match  # noqa: E402
from disguiselib.wire.text import splice  # noqa: E402


def cpu(f: Callable[[], object], runs: int) -> float:
    """Median thread CPU seconds of f over runs calls."""
    got = []
    for _ in range(runs):
        t = time.thread_time()
        f()
        got.append(time.thread_time() - t)
    return statistics.median(got)


def lines_read(out: str, edits: list, shift0: int, around: int) -> int:
    """Characters of out in the lines holding a replacement (edits in the text's offsets,
    shift0 where the text begins in out), with around lines each side."""
    starts = [0, *(i + 1 for i, c in enumerate(out) if c == "\n")]
    keep: set[int] = set()
    shift = shift0
    for a, b, rep in edits:
        s = a + shift
        shift += len(rep) - (b - a)
        k0 = bisect.bisect_right(starts, s) - 1
        k1 = bisect.bisect_right(starts, max(s, s + len(rep) - 1)) - 1
        keep.update(range(max(0, k0 - around), min(len(starts), k1 + around + 1)))
    ends = [*starts[1:], len(out)]
    return sum(ends[k] - starts[k] for k in keep)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    lits = make_literals(random.Random(a.seed), 1000)
    cfg = build_config([str(mappings_dir(tmpdir(), "lit", lits))], True, [])
    first, _ = bodies.build_request(a.seed + 900, 1_000_000, Material(random.Random(a.seed), lits))
    api, hdrs = recognise("POST", "/v1/messages"), [("content-type", "application/json")]
    rules = cfg.rules
    sets = [rules] + ([cfg.disguises] if cfg.disguises is not None else [])

    def forget() -> None:
        for r in sets:
            r.found.clear()

    real = settle.settle
    calls: list[tuple] = []
    spent = [0.0]

    def timed(*args: object) -> object:
        t = time.thread_time()
        try:
            return real(*args)  # type: ignore[arg-type]
        finally:
            spent[0] += time.thread_time() - t

    def recording(*args: object) -> object:
        calls.append(args)
        return real(*args)  # type: ignore[arg-type]

    settle.settle = recording  # type: ignore[assignment]
    forget()
    pipeline.mask_request(api, first, cfg, "/v1/messages", hdrs)
    settle.settle = timed  # type: ignore[assignment]
    totals, settles = [], []
    for _ in range(a.runs):
        forget()
        spent[0] = 0.0
        t = time.thread_time()
        pipeline.mask_request(api, first, cfg, "/v1/messages", hdrs)
        totals.append(time.thread_time() - t)
        settles.append(spent[0])
    settle.settle = real  # type: ignore[assignment]

    def replay() -> None:
        forget()
        for args in calls:
            real(*args)

    outs = []  # each masked text as settle reads it: in its context
    for _, text, edits, _, context, *_ in calls:
        out = splice(text, list(edits))
        outs.append(context[0] + out + context[1] if context else out)
    enc = [o.encode("utf-8", "surrogatepass") for o in outs]
    pf = rules._prefilter
    active = [sorted(pf.match(b, True)) for b in enc]

    def exact() -> None:
        for b, o, act in zip(enc, outs, active, strict=True):
            for i in act:
                p, pos, budget = rules._patterns[i], 0, [0, 16 * len(b) + 65536, 0]
                while (m := next_match(p, b, pos, o if o.isascii() else None, budget)) is not None:
                    pos = max(m[1], m[0] + 1)

    parts = {
        "UTF-8 encode": lambda: [o.encode() for o in outs],
        "literals": lambda: [lit_matches(rules._lit_ac, b, rules._lit_longest) for b in enc],
        "prefilter (Hyperscan)": lambda: [pf.match(b, True) for b in enc],
        "exact search of the patterns it names": exact,
    }
    alone = {k: cpu(f, a.runs) for k, f in parts.items()}
    whole = cpu(replay, a.runs)
    chars = sum(map(len, outs))
    near = [
        sum(lines_read(o, c[2], len(c[4][0]) if c[4] else 0, k) for o, c in zip(outs, calls, strict=True))
        for k in (0, 1)
    ]
    only_literals = sum(all(rep in rules.lit_reverse for _, _, rep in c[2]) for c in calls)
    print(f"the 1 MB body's first request ({len(first):,} B), CPU medians of {a.runs}, ms:")
    print(f"  pipeline.mask_request {statistics.median(totals) * 1e3:.2f}, "
          f"settle inside it {statistics.median(settles) * 1e3:.2f}")  # fmt: skip
    print(f"  settle's {len(calls)} calls replayed alone {whole * 1e3:.2f}: "
          + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in alone.items())
          + f"; the rest (Python around them) {(whole - sum(alone.values())) * 1e3:.2f}")  # fmt: skip
    print(f"  texts read {len(calls)} ({only_literals} whose edits are literals' alone; {sum(map(bool, active))} the "
          f"prefilter names a pattern in), {chars / 1e3:,.0f} k characters: {near[0] / chars:.0%} in lines holding a "
          f"replacement, {near[1] / chars:.0%} with one line each side")  # fmt: skip


if __name__ == "__main__":
    main()
