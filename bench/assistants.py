"""The Assistants run stream (apis/openai/assistants.py) beside Chat's stream on
the same text: N deltas of 5-40 characters, clean and with a disguise every ~200
characters (cut inside), fed in 16 KiB reads; and the growth per doubling of N (2 is
linear). Figures are printed, never asserted; rules from tests/strategies.

    python bench/assistants.py
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests")]

from disguiselib.apis.openai.assistants import AssistantStream  # noqa: E402
from disguiselib.apis.openai.chat import ChatStream  # noqa: E402
from strategies import PLACEHOLDERS, RULES  # noqa: E402

READ = 16384


def pieces(n: int, disguised: bool) -> list[str]:
    rng = random.Random(n)
    words = "the answer is plain prose with some words in it".split()
    text = []
    for i in range(n * 4):
        text.append(rng.choice(words))
        if disguised and i % 30 == 29:
            text.append("Zenith Labs")
    s = " ".join(text)
    out, at = [], 0
    while at < len(s) and len(out) < n:
        k = rng.randint(5, 40)
        out.append(s[at : at + k])
        at += k
    return out


def assistants(ps: list[str]) -> bytes:
    evs = [b"event: thread.message.delta\ndata: " + json.dumps({"id": "msg_1", "object": "thread.message.delta",
           "delta": {"content": [{"index": 0, "type": "text", "text": {"value": p}}]}}).encode() + b"\n\n" for p in ps]  # fmt: skip
    return b"".join(evs) + b"event: done\ndata: [DONE]\n\n"


def chat(ps: list[str]) -> bytes:
    evs = [b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}).encode() + b"\n\n" for p in ps]  # fmt: skip
    return b"".join(evs) + b"data: [DONE]\n\n"


def run(cls, body: bytes, want: int) -> float:
    best = float("inf")
    for _ in range(3):
        s = cls(RULES.restorer(PLACEHOLDERS))
        t = time.perf_counter()
        out = [s.feed(body[i : i + READ]) for i in range(0, len(body), READ)]
        out.append(s.flush())
        best = min(best, time.perf_counter() - t)
        got = b"".join(out)  # the check: every disguise restored, none left
        assert not s.failed and b"Zenith" not in got and got.count(b"Acme Corp") == want
    return best


def main() -> None:
    print(f"{'deltas':>7} {'disguised':>9} {'assistants MB/s':>15} {'chat MB/s':>10} {'ratio a/c':>9} {'growth a':>8}")
    for disguised in (False, True):
        prev = None
        for n in (2000, 4000, 8000):
            ps = pieces(n, disguised)
            a, c = assistants(ps), chat(ps)
            want = "".join(ps).count("Zenith Labs")
            ta, tc = run(AssistantStream, a, want), run(ChatStream, c, want)
            growth = f"{ta / prev:.2f}" if prev else "-"
            prev = ta
            print(f"{n:>7} {disguised!s:>9} {len(a) / ta / 1e6:>15.1f} {len(c) / tc / 1e6:>10.1f} "
                  f"{(ta / len(a)) / (tc / len(c)):>9.2f} {growth:>8}")  # fmt: skip


if __name__ == "__main__":
    main()
