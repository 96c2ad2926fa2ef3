"""(standalone) What a streamed tool call's arguments cost an event: an OpenAI Chat stream
of one call whose arguments come in 7-character deltas, without a backslash in them, with
JSON escapes (`\\n`, `\\"`, `\\u00e9` of ensure_ascii) and with short escapes alone (the same
without ensure_ascii: `\\n`, `\\t`, `\\"`), fed through ChatStream in 1,400-byte reads, and
the JSON window alone over the same pieces. Since stop 63 argument text with escapes is
matched in decoded space (a disguise written `Tom\\u0026Jerry`) and the compiled read pass
handed such a delta to the window; since stop 64 it matches a delta whose escapes are all
short ones itself (one with a `\\u` still goes to the window). With --before TREE that
tree's addon runs beside this one's, alternated, each in processes of its own; medians of
--runs.

    python bench/argscost.py --runs 5 --before /path/to/older/checkout

Figures are printed, never asserted. The trees' outputs are compared too (sha256 of the
stream's bytes): equal where no argument has a backslash.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(tree: str, kind: str) -> dict:
    """kind: "0" no backslash, "1" escapes with `\\u` (ensure_ascii), "2" short escapes alone."""
    sys.path[:0] = [tree + "/addon", tree + "/tests"]
    from disguiselib import engine
    from disguiselib.apis.openai import chat
    from disguiselib.base.holdback import Window
    from openai_util import build_chat
    from strategies import PLACEHOLDERS, RULES

    if kind != "0":
        args = json.dumps({"thread_id": "Zenith Labs", "code": 'line\n\t"q" ' * 60,
                           "items": [{"k": i, "v": "nova.cloud é"} for i in range(60)]}, ensure_ascii=kind == "1")  # fmt: skip
    else:
        args = json.dumps({"thread_id": "Zenith Labs", "query": "the quick brown fox " * 40,
                           "items": [{"k": i, "v": "nova.cloud x"} for i in range(60)]})  # fmt: skip
    pieces = [args[i : i + 7] for i in range(0, len(args), 7)]
    body = build_chat([("tool", 0, 0, "crm_lookup", "")] + [("tool", 0, 0, None, p) for p in pieces]
                      + [("finish", 0, "tool_calls")])  # fmt: skip

    def stream_once() -> bytes:
        s = chat.ChatStream(RULES.restorer(PLACEHOLDERS))
        out = [s.feed(body[i : i + 1400]) for i in range(0, len(body), 1400)]
        return b"".join(out) + s.flush()

    def window_once() -> str:
        w = Window(RULES.restorer(PLACEHOLDERS), Window.JSON)
        return "".join(w.feed(p) for p in pieces) + w.flush()

    def quartile(f, n: int = 40) -> float:  # noqa: ANN001 - a function of no argument
        ts = []
        for _ in range(n):
            t = time.thread_time_ns()
            f()
            ts.append(time.thread_time_ns() - t)
        ts.sort()
        return ts[len(ts) // 4] / 1e3

    stream_once(), window_once()
    return {"engine": engine.describe()[:30], "deltas": len(pieces), "stream_us": quartile(stream_once),
            "window_us": quartile(window_once), "sha": hashlib.sha256(stream_once()).hexdigest()[:12]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", default="", help="an older checkout, its compiled engine built")
    ap.add_argument("--worker", nargs=2, metavar=("TREE", "KIND"))
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker[0], a.worker[1])))
        return
    trees = {"this tree": str(HERE.parent)} | ({"before": a.before} if a.before else {})
    kinds = {"0": "no backslash", "1": 'with escapes (\\n, \\", \\u00e9)', "2": 'short escapes (\\n, \\", \\t)'}
    got: dict[tuple[str, str], list[dict]] = {}
    for _ in range(a.runs):
        for kind in kinds:
            for name, tree in trees.items():
                out = subprocess.run([sys.executable, __file__, "--worker", tree, kind],
                                     capture_output=True, text=True, check=True, cwd=tree)  # fmt: skip
                got.setdefault((name, kind), []).append(json.loads(out.stdout))
    print(f"a Chat tool call's arguments in 7-character deltas, medians of {a.runs} processes (µs an event):")
    for kind, label in kinds.items():
        rows = {name: got[(name, kind)] for name in trees}
        n = rows["this tree"][0]["deltas"]
        for name, rs in rows.items():
            s = statistics.median(r["stream_us"] for r in rs) / n
            w = statistics.median(r["window_us"] for r in rs) / n
            print(f"  {label:<32} {name:<10} stream {s:6.2f}  window alone {w:6.2f}  ({rs[0]['engine']}; "
                  f"output {rs[0]['sha']})")  # fmt: skip
        if "before" in rows:
            r = statistics.median(x["stream_us"] for x in rows["this tree"]) / statistics.median(
                x["stream_us"] for x in rows["before"]
            )
            print(f"  {label:<32} stream this tree / before: {r:.2f}")


if __name__ == "__main__":
    main()
