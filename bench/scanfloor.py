"""Where a 1 MB first scan's time goes, stage by stage, beside `json.loads` (issue 29's
"first-scan masking ≤ 4× json.loads"): the 1 MB Claude-Code-shaped bodies of
bench/bodies.py, 1,000 literals + the shipped patterns, CPU medians (`time.thread_time`).

    PYTHONPATH=addon python bench/scanfloor.py [--bodies 5] [--runs 5]

The texts masking reads (the pieces `Rules.prescan` is given) are captured from one
`mask_body` per body; then each stage runs alone over them: encoding them, their
digests (`Found`), the literals' Aho–Corasick pass over them joined, the patterns'
Hyperscan prefilter (`match_many`), the whole prescan, and the exact searches
(`_find_bytes`) of the texts it marked. The two automata alone are the floor of the
present design: whatever else is compiled, a first scan costs at least their sum.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from disguiselib.rules.found import Found  # noqa: E402
from disguiselib.rules.rules import Rules  # noqa: E402

API = recognise("POST", "/v1/messages")


def cpu(f) -> float:  # noqa: ANN001
    t = time.thread_time()
    f()
    return time.thread_time() - t


def pieces_of(raw: bytes, rules: Rules) -> list[str]:
    """The texts mask_body hands Rules.prescan for raw."""
    got: list[list[str]] = []
    real = Rules.prescan

    def spy(self: Rules, pieces: list[str], *a: object, **k: object):  # noqa: ANN202
        got.append(list(pieces))
        return real(self, pieces, *a, **k)  # type: ignore[arg-type]

    Rules.prescan = spy  # type: ignore[method-assign]
    try:
        rules.found.clear()
        masking.mask_body(raw, API.request_rule, rules)
    finally:
        Rules.prescan = real  # type: ignore[method-assign]
    return [p for ps in got for p in ps]


def main() -> None:
    import bodies
    from context import Ctx
    from proxies import mappings_dir, tmpdir

    ap = argparse.ArgumentParser()
    ap.add_argument("--bodies", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    c = Ctx(argparse.Namespace(quick=True, seed=1, profile=False, literals=None))
    rules = build_config([str(mappings_dir(tmpdir(), "lit", c.literals))], True, []).rules
    raws = [bodies.build_request(2 + i, 1_000_000, c.mat)[0] for i in range(a.bodies)]
    stages: dict[str, list[float]] = {}

    def take(name: str, f) -> None:  # noqa: ANN001
        stages.setdefault(name, []).append(cpu(f))

    for raw in raws:
        ps = pieces_of(raw, rules)
        bs = [p.encode("utf-8", "surrogatepass") for p in ps]
        rules.found.clear()
        hot, memo = rules.prescan(ps)
        hot_texts = [(bs[k], memo[ps[k]], ps[k]) for k in sorted(hot) if type(memo.get(ps[k])) is tuple]
        for _ in range(a.runs):
            take("json.loads", lambda raw=raw: json.loads(raw))
            take("mask_body (whole)", lambda raw=raw: (rules.found.clear(), masking.mask_body(raw, API.request_rule, rules)))
            take("parse (fields.loads)", lambda raw=raw: masking._parse(raw))
            take("encode the texts", lambda ps=ps: [p.encode("utf-8", "surrogatepass") for p in ps])
            take("digests (BLAKE2b)", lambda bs=bs: [Found.digest(b) for b in bs if len(b) >= 32])
            take("literals: leftmost.Literals (Hyperscan, or Aho-Corasick)", lambda bs=bs: rules._lit_ac.find_matches_as_indexes(b"\x00".join(bs)))
            take("patterns: Hyperscan", lambda bs=bs: rules._prefilter.match_many(bs))
            take("prescan (whole)", lambda ps=ps: (rules.found.clear(), rules.prescan(ps)))
            take("exact searches (marked texts)",
                 lambda h=hot_texts: [rules._find_bytes(b, e, p if len(b) == len(p) else None) for b, e, p in h])  # fmt: skip
    jl = statistics.median(stages["json.loads"])
    mb = statistics.median(len(r) for r in raws) / 1e6
    print(f"load average {os.getloadavg()[0]:.1f}; {len(raws)} bodies of {mb:.2f} MB, CPU medians of {a.runs} runs each")
    for name, ts in stages.items():
        t = statistics.median(ts)
        print(f"  {name:32} {t * 1e3:7.2f} ms  {t / jl:5.2f}× json.loads")
    floor = statistics.median(stages["literals: Aho-Corasick"]) + statistics.median(stages["patterns: Hyperscan"])
    print(f"  the two automata alone: {floor * 1e3:.2f} ms = {floor / jl:.2f}× json.loads (target: mask_body ≤ 4×)")


if __name__ == "__main__":
    main()
