"""(standalone) What reading URLs decoded costs (wire/percent.py): a request whose text is
dense with percent-encoded links, masked with its URLs read twice (as written and
decoded), beside the same text with its links written plainly (nothing to decode: what
every request without an encoded URL costs) and `json.loads` of the body. In this process,
CPU medians (`time.thread_time`), the rules' memory of earlier requests emptied before each
run (a first request).

    PYTHONPATH=addon python bench/urls.py [--mb 1] [--runs 5]

The text: markdown lines (prose, then a `[link](https://docs.example/a%20b?q=N+x&r=%C3%A9)`),
as a web fetch tool's result holds them, in one tool_result, with one original at its end;
the shipped patterns and one literal. Also the same at half the size (time grows in
proportion), and the compiled engine's `percent.decoded` against the Python one
(`py_decoded`) over the text alone.

Then the way back: 1,000 literals (bench/material.py's, half of them of two words or
more), their rule set built with the disguises as URLs hold them (`percent.in_urls`:
`Zenith%20Labs`, `Zenith+Labs`, each restored as the URL would hold the original) and
without, each in a process of its own: how many disguises the restorer reads, the build's
CPU and what it grew RSS by (the streams' triggers included), and restoring an answer of
prose with those disguises, a third of them in URLs as the masker writes them. Figures
are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "addon"))

from disguiselib import engine, pipeline  # noqa: E402
from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from disguiselib.pipeline import Masked  # noqa: E402
from disguiselib.wire import percent  # noqa: E402

API = recognise("POST", "/v1/messages")
HEADERS = [("content-type", "application/json")]
WORDS = "the quick brown fox jumps over lazy dog lorem ipsum dolor sit amet".split()


def markdown(size: int, encoded: bool, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    n = 0
    while n < size:
        q = rng.randint(0, 999)
        link = f"https://docs.example/a%20b?q={q}+x&r=%C3%A9" if encoded else f"https://docs.example/a-b?q={q}-x&r=e"
        lines.append(" ".join(rng.choice(WORDS) for _ in range(12)) + f" [link]({link})")
        n += len(lines[-1]) + 1
    return "\n".join(lines)


def body(text: str) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": text + " Acme Corp"}]}]}).encode()  # fmt: skip


def cpu(f, runs: int, before=lambda: None) -> float:  # noqa: ANN001
    out = []
    for _ in range(runs):
        before()
        t = time.thread_time()
        f()
        out.append(time.thread_time() - t)
    return statistics.median(out)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rules_child(with_urls: bool, runs: int) -> None:
    """One rule set of 1,000 literals, with or without the URL writings: printed as JSON."""
    sys.path.insert(0, str(HERE))
    from material import make_literals

    from disguiselib.rules import mappings
    from disguiselib.rules.rules import Rules

    lits = make_literals(random.Random(1), 1000)
    if not with_urls:
        percent.in_urls = lambda reverse, forward: {}  # the rule set as it was before them
    ms = mappings.from_dict({"literals": lits})
    r0, t = rss_mib(), time.process_time()
    rules = Rules(ms)
    rules.stream_triggers((b"message_stop",))
    build, grown = time.process_time() - t, rss_mib() - r0
    rng = random.Random(2)
    parts = []
    for i, d in enumerate(rng.choice(list(lits.values())) for _ in range(4000)):
        parts.append(" ".join(rng.choice(WORDS) for _ in range(8)))
        parts.append(f"https://docs.example/s?q={percent.encode(d)}&n={i}" if i % 3 == 0 else d)
    answer = " ".join(parts)
    restorer = rules.restorer({})
    out = restorer.text(answer)
    restore = cpu(lambda: restorer.text(answer), runs)
    left = sum(percent.encode(d) in out for d in lits.values() if percent.encode(d) != d)
    print(json.dumps({"disguises": len(rules.lit_reverse), "build": build, "rss": grown, "restore": restore,
                      "chars": len(answer), "left": left}))  # fmt: skip


def way_back(runs: int) -> None:
    got = {}
    for with_urls in (False, True):
        cmd = [sys.executable, __file__, "--rules-child", "1" if with_urls else "0", "--runs", str(runs)]
        got[with_urls] = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    print("  the way back, 1,000 literals (each rule set in a process of its own):")
    for with_urls, label in ((False, "without the URL writings"), (True, "with them")):
        g = got[with_urls]
        print(f"    {label:25s} {g['disguises']:,} disguises read; built in {g['build'] * 1e3:.0f} ms CPU, RSS "
              f"+{g['rss']:.1f} MiB; an answer of {g['chars'] / 1e3:,.0f} k characters restored in "
              f"{g['restore'] * 1e3:.1f} ms, {g['left']} of the literals' URL writings left in it")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rules-child", choices=("0", "1"), default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.rules_child is not None:
        rules_child(a.rules_child == "1", a.runs)
        return
    d = Path(tempfile.mkdtemp())
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(d)], True, [])

    def forget() -> None:
        cfg.rules.found.clear()

    print(f"reading URLs decoded, {engine.NAME} engine; CPU medians of {a.runs}, ms")
    for size in (int(a.mb * 1e6) // 2, int(a.mb * 1e6)):
        rows = {}
        for encoded in (False, True):
            b = body(markdown(size, encoded))
            v = pipeline.mask_request(API, b, cfg, "/v1/messages", HEADERS)
            assert isinstance(v, Masked) and b"Acme" not in v.body, v
            rows[encoded] = (cpu(lambda b=b: pipeline.mask_request(API, b, cfg, "/v1/messages", HEADERS), a.runs, forget),
                             cpu(lambda b=b: json.loads(b), a.runs), len(b))  # fmt: skip
        (plain, loads, n), (coded, _, _) = rows[False], rows[True]
        links = markdown(size, True).count("://")
        print(f"  {n / 1e6:.2f} MB markdown, {links:,} links: written plainly {plain * 1e3:.1f} "
              f"({plain / loads:.1f}x json.loads {loads * 1e3:.2f}); percent-encoded {coded * 1e3:.1f} "
              f"({coded / loads:.1f}x; {coded / plain:.2f}x the plain links)")  # fmt: skip
    text = markdown(int(a.mb * 1e6), True)
    py = cpu(lambda: percent.py_decoded(text), a.runs)
    if percent.c_decoded is not None:
        c = cpu(lambda: percent.c_decoded(text), a.runs)
        print(f"  decoding its URLs alone: compiled {c * 1e3:.1f}, Python {py * 1e3:.1f} ({py / c:.1f}x)")
    else:
        print(f"  decoding its URLs alone: Python {py * 1e3:.1f} (no compiled engine: {engine.describe()})")
    way_back(a.runs)


if __name__ == "__main__":
    main()
