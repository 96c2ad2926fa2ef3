"""Where masking's floor lies: the many-pattern prefilter (Hyperscan) over a request's texts.

    python bench/bench.py --only prefilter      # ~1 min on 2 cores

Masking a body scans every text it reads once for literals (Aho–Corasick) and once
with the patterns' prefilter (`linear.Prefilter`: the shipped patterns in Hyperscan's
prefilter mode), before any exact search. This prints, for the texts masking reads in
the 1 MB Claude-Code-shaped body of section (d) (`masking.reads`): the prefilter over
each text as masking calls it, over all of them joined at once, the literal automaton
over all of them, and `json.loads` of the body; then each pattern's cost alone and the
whole set's cost without the costliest k of them (what moving those out of the one
database would leave). CPU time, the least of 5.
"""

from __future__ import annotations

import time

import bodies
import report
from context import Ctx

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.base import fields, masking
from disguiselib.rules import linear
from disguiselib.wire import jsonspan, spanwalk

try:
    import hyperscan
except ImportError:  # pragma: no cover - the prefilter then names every pattern
    hyperscan = None


def _least(fn, reps: int = 5) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best


def pieces_of(raw: bytes) -> list[bytes]:
    """The texts masking reads in raw (mask_doc's first walk), UTF-8."""
    s, doc = jsonspan.parse(raw)
    out: list[str] = []
    spanwalk.collect(s, doc, anthropic.MESSAGES_REQUEST, out, masking.reads, fields.plain, fields.key_context)
    return [p.encode("utf-8", "surrogatepass") for p in out if p]


def _db(exprs: list[bytes]):
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH
    ok = []
    for e in exprs:
        try:
            hyperscan.Database().compile(expressions=[e], ids=[0], elements=1, flags=[flags])
            ok.append(e)
        except Exception:  # noqa: BLE001 - searched always by the real prefilter: not scanned here
            pass
    db = hyperscan.Database()
    db.compile(expressions=ok, ids=list(range(len(ok))), elements=len(ok), flags=[flags] * len(ok))
    return db, hyperscan.Scratch(db)


def _scan(db_scratch, data: bytes) -> None:
    db, scratch = db_scratch
    db.scan(data, match_event_handler=lambda *a: None, scratch=scratch)


def run(c: Ctx) -> None:
    if hyperscan is None:
        print("  (Hyperscan is not installed here: nothing to measure)")
        return
    import json

    R = c.R_lit  # noqa: N806
    raw, _ = bodies.build_request(c.seed + 1, 1_000_000, c.mat)
    ps = pieces_of(raw)
    joined = b"\n".join(ps)
    mb = len(joined) / 1e6
    pf = R._prefilter
    ac = R._lit_ac
    t_loads = _least(lambda: json.loads(raw))
    t_each = _least(lambda: [pf.match(p, utf8=True) for p in ps])
    t_joined = _least(lambda: pf.match(joined, utf8=True))
    t_ac = _least(lambda: ac.find_matches_as_indexes(b"\x00".join(ps)))
    print(f"  The texts masking reads in the {len(raw) / 1e6:.2f} MB Claude-Code-shaped body: {len(ps)} texts, "
          f"{mb:.2f} MB; 1,000 literals + the {len(R.pattern_names)} shipped patterns; CPU ms, least of 5")  # fmt: skip
    print(f"    json.loads(body)                         {t_loads * 1e3:7.2f} ms")
    print(f"    prefilter, text by text (as masking)     {t_each * 1e3:7.2f} ms  {t_each / t_loads:5.1f}× json.loads")
    print(f"    prefilter, all texts joined at once      {t_joined * 1e3:7.2f} ms  {t_joined / t_loads:5.1f}× json.loads")
    print(f"    literals (Aho–Corasick), joined          {t_ac * 1e3:7.2f} ms  {t_ac / t_loads:5.1f}× json.loads")
    report.figure("prefilter", "the patterns' prefilter over a 1 MB body's texts: × json.loads", f"{t_each / t_loads:.1f}×")
    exprs = [p.encode("utf-8") for p in (x.regex for x in R.mappings.patterns)]
    names = list(R.pattern_names)
    alone = []
    for name, e in zip(names, exprs, strict=True):
        try:
            d = _db([e])
            alone.append((_least(lambda d=d: _scan(d, joined), 3), name))
        except Exception:  # noqa: BLE001 - refused by Hyperscan: searched always instead
            continue
    alone.sort(reverse=True)
    print("    each pattern alone over the joined texts, the costliest: "
          + ", ".join(f"{n} {t * 1e3:.2f}" for t, n in alone[:8]) + " ms")  # fmt: skip
    order = [n for _, n in alone]
    row = []
    for k in (0, 6, 20, 40):
        keep = [e for n, e in zip(names, exprs, strict=True) if n not in set(order[:k])]
        d = _db(keep)
        row.append(f"without the costliest {k}: {_least(lambda d=d: _scan(d, joined)) * 1e3:.2f} ms")
    print("    the whole set over the joined texts, " + "; ".join(row))
    linear.release_memory()
