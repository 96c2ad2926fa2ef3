"""One large SSE event (issue 27): a Responses `response.completed` of 1, 2, 4, 8 MiB fed
through the Responses stream in 16 KiB reads, as mitmproxy hands it over. Growth per
doubling: 2 is linear (it was 0.2, 0.8, 2.8 s for 1, 2, 4 MiB: the framer joined and
searched the whole unfinished event at every read; with CRLF line ends it still did
until the framer looked at a read with the 3 bytes before it whatever the line ends).

    python bench/bigevent.py

Figures are printed, never asserted; rules from tests/strategies (literals + patterns).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests")]

from disguiselib.apis.openai.responses import ResponsesStream  # noqa: E402
from strategies import PLACEHOLDERS, RULES  # noqa: E402

READ = 16384


def event(mib: int, disguises: bool, crlf: bool = False) -> bytes:
    unit = "Zenith Labs wrote a long answer. " if disguises else "plain words of a long answer, "
    text = unit * (mib * 1024 * 1024 // len(unit))
    resp = {"id": "r", "object": "response", "status": "completed", "output": [
        {"type": "message", "id": "m", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]}  # fmt: skip
    nl = b"\r\n" if crlf else b"\n"
    data = json.dumps({"type": "response.completed", "response": resp}).encode()
    return b"event: response.completed" + nl + b"data: " + data + nl + nl


def run(ev: bytes) -> float:
    s = ResponsesStream(RULES.restorer(PLACEHOLDERS))
    t = time.perf_counter()
    for i in range(0, len(ev), READ):
        s.feed(ev[i : i + READ])
    s.flush()
    return time.perf_counter() - t


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f}; one response.completed event in {READ // 1024} KiB reads")
    for crlf in (False, True):
        for disguises in (False, True):
            what = "text with a disguise every 33 bytes" if disguises else "text without disguises"
            print(f"\n{what}, {'CRLF' if crlf else 'LF'} line ends")
            print(f"{'MiB':>4} {'seconds':>8} {'growth per doubling':>20}")
            prev = None
            for mib in (1, 2, 4, 8):
                s = min(run(event(mib, disguises, crlf)) for _ in range(2))
                print(f"{mib:>4} {s:>8.3f} {'' if prev is None else f'{s / prev:.2f}':>20}")
                prev = s
    print(f"\nload average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
