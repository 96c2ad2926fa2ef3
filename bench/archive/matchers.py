#!/usr/bin/env python3
"""Why the engine matches the way it does: the alternatives, side by side, in one run.

    python bench/matchers.py            # ~1 min on 2 cores
    python bench/matchers.py --quick

(1) Reversal, per event of a token-sized stream (µs/event, process time, best of N):
    the `regex` module with partial matching (the engine before: one alternation of
    every disguise, a second copy ending in `(?!)` for the hold-back point), RE2 (an
    alternation plus its proper-prefix closure), pyahocorasick and ahocorasick-rs
    (Aho-Corasick for complete matches, a trie regex over the last characters for the
    hold-back point) — and the engine as shipped (`holdback.Window`).
(2) Masking scans over the strings of a ~1 MB Claude-Code-shaped request (ms): each
    default pattern on its own with `regex` (before) and with RE2; one RE2 set pass over
    all of them (the prefilter); literals with a `re` trie, pyahocorasick and
    ahocorasick-rs (default automaton and DFA).
(3) Growth when the input doubles, for each input that used to cost more than linear
    time: `regex` (before) against the engine now; ratio 1MB/0.5MB (≈2 is linear).

Libraries not installed are reported as such (pyahocorasick is optional:
`pip install pyahocorasick`). Nothing is asserted; figures are printed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "addon"))

from disguiselib.base.holdback import Window  # noqa: E402
from disguiselib.rules import linear, mappings  # noqa: E402
from disguiselib.rules.rules import Rules, Session  # noqa: E402

try:
    import regex
except ImportError:  # pragma: no cover
    regex = None
try:
    import ahocorasick
except ImportError:
    ahocorasick = None
import ahocorasick_rs  # noqa: E402

WORDS = (
    "the of and to in is was for on that with as by at from it an be this are or which have has not but had they "
    "were their been one all there more when will would can could should about into than then them these some"
).split()
PREFIXES = ["nova", "fetch", "acct", "sam", "tor", "lin", "mer", "ban", "pol", "car", "den", "ret", "sol", "the", "wit"]


def best(fn, reps: int) -> float:
    t = 1e9
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        t = min(t, time.process_time() - t0)
    return t


# -- (1) reversal per event ------------------------------------------------------------


def literals(rng: random.Random, n: int) -> dict[str, str]:
    """Ordinary-word disguises: they begin with common letters, as users' do."""
    out: dict[str, str] = {}
    while len(out) < n:
        d = rng.choice(PREFIXES) + "_" + "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 8)))
        if d not in out.values():
            out[f"Orig{len(out)}_{rng.randint(0, 9999)}"] = d
    return out


def stream_pieces(rng: random.Random, lits: dict[str, str], dense: bool, nchars: int) -> list[str]:
    ds = list(lits.values())
    words = []
    n = 0
    while n < nchars:
        w = rng.choice(ds) if dense and rng.random() < 0.25 else rng.choice(WORDS)
        words.append(w)
        n += len(w) + 1
    text = " ".join(words)
    out = []
    i = 0
    while i < len(text):
        k = rng.randint(1, 6)
        out.append(text[i : i + k])
        i += k
    return out


def _trie(words) -> dict:
    t: dict = {}
    for w in words:
        x = t
        for c in w:
            x = x.setdefault(c, {})
        x[""] = {}
    return t


def _trie_rx(t: dict) -> str:
    alts = []
    for c, sub in sorted(t.items()):
        if c:
            inner = _trie_rx(sub)
            if "" in sub and inner:
                inner = f"(?:{inner})?"
            alts.append(re.escape(c) + inner)
    return "" if not alts else alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _pp(t: dict) -> str:
    alts = []
    for c, sub in sorted(t.items()):
        if c and any(sub):
            inner = _pp(sub)
            alts.append(re.escape(c) + (f"(?:{inner})?" if inner else ""))
    return "" if not alts else alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


class RegexPartial:
    """The engine before: `regex` alternation, partial search for the hold point."""

    def __init__(self, rev: dict[str, str]) -> None:
        alt = _trie_rx(_trie(rev))
        self.rx = regex.compile(alt)
        self.hold = regex.compile(f"(?:{alt})(?!)")
        self.rev = rev
        self.held = ""

    def feed(self, s: str) -> str:
        buf = self.held + s
        n = len(buf)
        pm = self.hold.search(buf, partial=True)
        h = pm.start() if pm is not None and pm.start() < n else n
        out, pos = [], 0
        m = self.rx.search(buf)
        while m is not None and m.start() < h:
            out.append(buf[pos : m.start()])
            out.append(self.rev[m.group()])
            pos = m.end()
            if pos > h:
                pm = self.hold.search(buf, pos, partial=True)
                h = pm.start() if pm is not None and pm.start() < n else n
            m = self.rx.search(buf, pos)
        out.append(buf[pos:h])
        self.held = buf[h:]
        return "".join(out)


class RE2Closure:
    """RE2 for both: an alternation, and its proper-prefix closure anchored at the end."""

    def __init__(self, rev: dict[str, str]) -> None:
        self.rx = linear.Regex(_trie_rx(_trie(rev)), longest=True)
        self.hold = linear.Regex(f"(?:{_pp(_trie(rev))})\\z")
        self.span = max(map(len, rev))
        self.rev = {k.encode(): v.encode() for k, v in rev.items()}
        self.held = b""

    def feed(self, s: str) -> str:
        buf = self.held + s.encode()
        n = len(buf)
        m = self.hold.search(buf, max(0, n - self.span))
        h = m[0] if m is not None else n
        out, pos = [], 0
        while True:
            m = self.rx.search(buf, pos)
            if m is None or m[0] >= h:
                break
            out.append(buf[pos : m[0]])
            out.append(self.rev[buf[m[0] : m[1]]])
            pos = m[1]
            if pos > h:
                m2 = self.hold.search(buf, max(pos, n - self.span))
                h = m2[0] if m2 is not None else n
        out.append(buf[pos:h])
        self.held = buf[h:]
        return b"".join(out).decode()


class ACTrieHold:
    """Aho-Corasick for complete matches (one library or the other), a stdlib trie
    regex over the last characters for the hold point: the engine's design."""

    def __init__(self, rev: dict[str, str], lib: str) -> None:
        self.keys = list(rev)
        self.vals = [rev[k] for k in self.keys]
        if lib == "pyahocorasick":
            a = ahocorasick.Automaton()
            for i, k in enumerate(self.keys):
                a.add_word(k, i)
            a.make_automaton()
            self.find = lambda s: [(i, e - len(self.keys[i]) + 1, e + 1) for e, i in a.iter_long(s)]
        else:
            r = ahocorasick_rs.AhoCorasick(self.keys, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest,
                                           implementation=ahocorasick_rs.Implementation.DFA)  # fmt: skip
            self.find = r.find_matches_as_indexes
        self.hold = re.compile(f"(?:{_pp(_trie(rev))})\\Z")
        self.span = max(map(len, rev))
        self.held = ""

    def feed(self, s: str) -> str:
        buf = self.held + s
        n = len(buf)
        m = self.hold.search(buf, max(0, n - self.span))
        h = m.start() if m is not None else n
        out, pos = [], 0
        for i, a, b in self.find(buf):
            if a < pos:
                continue
            if a >= h:
                break
            out.append(buf[pos:a])
            out.append(self.vals[i])
            pos = b
            if pos > h:
                m = self.hold.search(buf, max(pos, n - self.span))
                h = m.start() if m is not None else n
        out.append(buf[pos:h])
        self.held = buf[h:]
        return "".join(out)


class Engine:
    def __init__(self, lits: dict[str, str]) -> None:
        self.w = Window(Rules(mappings.from_dict({"literals": lits})).restorer({}), Window.TEXT)

    def feed(self, s: str) -> str:
        return self.w.feed(s)


def section_reversal(reps: int) -> None:
    print(f"(1) Reversal, µs per event (token-sized deltas of 1-6 chars; process time, best of {reps})")
    rng = random.Random(1)
    cases = [("100 literals, dense", 100, True), ("1000 literals, prose", 1000, False),
             ("1000 literals, dense", 1000, True)]  # fmt: skip
    variants = {
        "regex + partial (before)": (lambda lits, rev: RegexPartial(rev)) if regex else None,
        "RE2 + prefix closure": lambda lits, rev: RE2Closure(rev),
        "pyahocorasick + trie hold": (lambda lits, rev: ACTrieHold(rev, "pyahocorasick")) if ahocorasick else None,
        "ahocorasick-rs + trie hold": lambda lits, rev: ACTrieHold(rev, "rs"),
        "engine (holdback.Window)": lambda lits, rev: Engine(lits),
    }
    print(f"    {'variant':<30}" + "".join(f"{c[0]:>24}" for c in cases))
    data = []
    for _, n, dense in cases:
        lits = literals(rng, n)
        data.append((lits, {d: o for o, d in lits.items()}, stream_pieces(rng, lits, dense, 60_000)))
    ref = None
    for name, make in variants.items():
        if make is None:
            print(f"    {name:<30}{'(not installed)':>24}")
            continue
        row = []
        outs = []
        for lits, rev, pieces in data:
            holder: list = []

            def go(lits=lits, rev=rev, pieces=pieces, holder=holder, make=make) -> None:
                w = make(lits, rev)
                holder[:] = [w.feed(p) for p in pieces]

            t = best(go, reps)
            row.append(f"{t / len(pieces) * 1e6:>22.2f}  ")
            outs.append("".join(holder))
        if ref is None:
            ref = outs
        same = "" if outs == ref else "   (output differs!)"
        print(f"    {name:<30}" + "".join(row) + same)


# -- (2) masking scans ------------------------------------------------------------------


def request_strings(rng: random.Random, lits: dict[str, str]) -> list[str]:
    """The string values of a ~1 MB Claude-Code-shaped request: file contents, shell
    output, prose; literals and a few secrets sprinkled in."""
    out = []
    origs = list(lits)
    total = 0
    while total < 1_000_000:
        kind = rng.random()
        if kind < 0.5:
            lines = [
                f"    def f{rng.randint(0, 999)}(self, {rng.choice(WORDS)}): return {rng.choice(WORDS)}_{rng.randint(0, 99)}"
                for _ in range(rng.randint(20, 200))
            ]
            if rng.random() < 0.3:
                lines.append(f"# {rng.choice(origs)} owner: dev{rng.randint(1, 9)}@corp.example.com")
            s = "\n".join(lines)
        elif kind < 0.8:
            s = " ".join(rng.choice(WORDS + origs[:50]) for _ in range(rng.randint(20, 300)))
        else:
            s = "\n".join(f"-rw-r--r-- 1 u g {rng.randint(1, 99999)} Oct  1 src/{rng.choice(WORDS)}.py" for _ in range(50))
        out.append(s)
        total += len(s)
    return out


def section_masking(reps: int) -> None:
    print(f"\n(2) Masking scans over the strings of a ~1 MB request, ms (process time, best of {reps})")
    rng = random.Random(2)
    lits = literals(rng, 1000)
    vals = request_strings(rng, lits)
    bvals = [v.encode() for v in vals]
    ms = mappings.load(REPO / "mappings")
    t_loads = best(lambda: json.loads(json.dumps(vals)), reps)
    print(f"    json.loads of the same strings as one JSON array: {t_loads * 1e3:.1f} ms")
    rows = []
    for p in ms.patterns:
        rx_b = linear.Regex(p.regex)
        t_re2 = best(lambda rx_b=rx_b: [rx_b.search(b) for b in bvals], reps)
        t_old = None
        if regex is not None:
            rx_o = regex.compile(p.regex)
            t_old = best(lambda rx_o=rx_o: [rx_o.search(v) for v in vals], reps)
        rows.append((p.name, t_old, t_re2))
    print(f"    {'rule':<22}{'regex (before)':>16}{'RE2':>10}")
    for name, t_old, t_re2 in rows:
        print(f"    {name:<22}{(f'{t_old * 1e3:.2f}' if t_old is not None else '-'):>16}{t_re2 * 1e3:>10.2f}")
    pre = linear.Prefilter([p.regex for p in ms.patterns])
    t_set = best(lambda: [pre.match(b) for b in bvals], reps)
    print(f"    {'all patterns, one RE2 set pass (prefilter)':<48}{t_set * 1e3:>8.2f}   (sum of RE2 rows: {sum(r[2] for r in rows) * 1e3:.2f})")
    keys = list(lits)
    trie = re.compile(_trie_rx(_trie(keys)))
    print(f"    literals (1000): re trie {best(lambda: [trie.findall(v) for v in vals], reps) * 1e3:.2f}", end="")
    if ahocorasick is not None:
        a = ahocorasick.Automaton()
        for k in keys:
            a.add_word(k, k)
        a.make_automaton()
        print(f", pyahocorasick {best(lambda: [list(a.iter_long(v)) for v in vals], reps) * 1e3:.2f}", end="")
    for impl, label in ((None, "default"), (ahocorasick_rs.Implementation.DFA, "DFA")):
        r = ahocorasick_rs.BytesAhoCorasick([k.encode() for k in keys], matchkind=ahocorasick_rs.MatchKind.LeftmostLongest,
                                            implementation=impl)  # fmt: skip
        print(f", ahocorasick-rs {label} {best(lambda r=r: [r.find_matches_as_indexes(b) for b in bvals], reps) * 1e3:.2f}", end="")
    R = Rules(mappings.from_dict({"literals": lits, "patterns": [{"name": p.name, "regex": p.regex} for p in ms.patterns]}))
    print(f"\n    engine: Rules.mask over every string (1000 literals + default patterns): "
          f"{best(lambda: [R.mask(v, Session()) for v in vals], reps) * 1e3:.2f} ms")


# -- (3) growth on doubling -------------------------------------------------------------


def adversarial(rng: random.Random, kind: str, size: int) -> str:
    if kind == "base64url run, then an e-mail":
        # a backtracking engine tries every start in the run and scans on from there
        alpha = string.ascii_letters + string.digits + "-_"
        return "".join(rng.choice(alpha) for _ in range(size)) + " a@b.example.com"
    if kind == "minified CSS":
        unit = ".a-b{color:#fff;margin:0 auto}@media (max-width:600px){.c_d{padding:0}}@import url(x.css);"
        return (unit * (size // len(unit) + 1))[:size]
    if kind == "PEM BEGIN lines, no END":
        unit = "src/k.py:1: -----BEGIN RSA PRIVATE KEY-----\n"
        return (unit * (size // len(unit) + 1))[:size]
    raise ValueError(kind)


def section_growth(reps: int) -> None:
    print("\n(3) Growth on doubling: ms at 0.5 MB and 1 MB, and the ratio (2 = linear)")
    ms = mappings.load(REPO / "mappings")
    R = Rules(ms)
    rng = random.Random(3)
    old = {p.name: regex.compile(p.regex) for p in ms.patterns} if regex is not None else {}
    print(f"    {'input':<32}{'regex (before)':>28}{'engine now':>28}")
    for kind in ("base64url run, then an e-mail", "minified CSS", "PEM BEGIN lines, no END"):
        texts = {n: adversarial(rng, kind, n) for n in (8_000, 16_000, 500_000, 1_000_000)}
        cells = []
        if old:
            # before: far too slow at 0.5 MB; shown at 8 and 16 KB
            ts = [best(lambda t=texts[n]: [rx.search(t) for rx in old.values()], 1) for n in (8_000, 16_000)]
            cells.append(f"{ts[0] * 1e3:8.1f} {ts[1] * 1e3:8.1f} ×{ts[1] / ts[0]:4.1f} (8/16 KB)")
        else:
            cells.append("-")
        ts = [best(lambda t=texts[n]: R.mask(t, Session()), reps) for n in (500_000, 1_000_000)]
        cells.append(f"{ts[0] * 1e3:8.1f} {ts[1] * 1e3:8.1f} ×{ts[1] / ts[0]:4.1f}")
        print(f"    {kind:<32}{cells[0]:>28}{cells[1]:>28}")
    # the stream side: an unclosed strip start, then N token deltas
    from disguiselib.apis.anthropic.messages import AnthropicStream

    def deltas(n: int) -> list[bytes]:
        evs = [b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n']
        texts = ["Sure [[reply_to:"] + [f" w{i}" for i in range(n)]
        for t in texts:
            evs.append(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
                       + t.encode() + b'"}}\n\n')  # fmt: skip
        return evs

    def run(evs: list[bytes]) -> None:
        s = AnthropicStream(R.restorer({}))
        for e in evs:
            s.feed(e)
        s.flush()

    evs = {n: deltas(n) for n in (2000, 4000)}
    ts = [best(lambda e=evs[n]: run(e), reps) for n in (2000, 4000)]
    print(f"    {'unclosed [[reply_to: + N deltas':<32}{'(12 s at 2,000 before)':>28}{ts[0] * 1e3:8.1f} {ts[1] * 1e3:8.1f} ×{ts[1] / ts[0]:4.1f}")
    latex = r"\frac{\alpha}{\beta} + \sum_{i=0}^{n} \mathbb{R}^{n} \\ "
    Rl = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    docs = {n: json.dumps({"tex": [latex * 20 + " Zenith Labs" for _ in range(n)]}) for n in (150, 300)}
    ts = [best(lambda d=docs[n]: Rl.restorer({}).json_text(d), reps) for n in (150, 300)]
    print(f"    {'JSON text, LaTeX, 135/270 KB':<32}{'(10 s at 269 KB before)':>28}{ts[0] * 1e3:8.1f} {ts[1] * 1e3:8.1f} ×{ts[1] / ts[0]:4.1f}")


def run(ctx) -> None:
    """bench/bench.py section `matchers`."""
    main(["--quick"] if ctx.args.quick else [])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    reps = 2 if args.quick else 5
    section_reversal(reps)
    section_masking(reps)
    section_growth(reps)


if __name__ == "__main__":
    main()
