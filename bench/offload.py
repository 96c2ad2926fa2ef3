"""Large request bodies off the event loop and off its GIL (issue 29, issue 27 "Large
inputs"): what a concurrent stream sees while mitmdump masks big bodies, with the masking
worker process (disguise_offload_bytes, the default 256 KiB), without it (0: masked in a
thread of mitmdump's process, as before), and plain mitmdump beside, in one run.

    python bench/offload.py                  # 50 bodies of 1 MB; ~3 min on 2 cores
    python bench/offload.py --bodies 20 --quick
    python bench/offload.py --huge           # also a 200 MB body and a 1M-element tool input

A paced SSE stream (one event per upstream write, 5 ms apart) runs through the same
mitmdump while N bodies of 1 MB (Claude-Code-shaped ones from bodies.build_request and
base64url tool results, alternating; every body a new one) are sent one after the other
on another connection. Printed per variant: the stream's gaps between reads while the
bodies are in flight (p50, p99, max: 5 ms is the pacing itself), and each kind of body's
median wall time, as a ratio to plain mitmdump; the next turn of a conversation (the same
body and one exchange more, after the rules met the first). Rules: the shipped defaults
and 1,000 literals. The first large body of the worker variant starts the worker: it is
sent before the measurement (a warm-up for every variant), its time printed apart.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bodies  # noqa: E402
import streams  # noqa: E402
from material import Material, make_literals, prose  # noqa: E402
from proxies import Client, Mitmdump, Upstream, mappings_dir, tmpdir, variant_args  # noqa: E402

DELAY_MS = 5
VARIANTS = {
    "plain": "plain mitmdump",
    "worker": "addon, worker process (256 KiB)",
    "thread": "addon, in-process thread (0)",
}


def args_of(key: str, tmp: Path, mdir: Path) -> list[str]:
    if key == "plain":
        return variant_args(tmp, "plain")
    return [*variant_args(tmp, "addon", mdir), "--set", f"disguise_offload_bytes={262144 if key == 'worker' else 0}"]


class Stream:
    """The paced stream, read on its own connection; the time of every read."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.times: list[float] = []
        self.stop = threading.Event()
        body = b'{"stream": true}'
        req = (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
               "anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\nx-bench-stream: paced\r\n"
               f"x-bench-per-write: 1\r\nx-bench-delay-ms: {DELAY_MS}\r\ncontent-length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        self.sock.sendall(req + body)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        self.sock.settimeout(0.5)
        while not self.stop.is_set():
            try:
                d = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                return
            if not d:
                self.times.append(float("nan"))  # ended: too short a stream for the run
                return
            self.times.append(time.perf_counter())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()

    def gaps(self, t0: float, t1: float) -> list[float]:
        ts = self.times
        if any(t != t for t in ts):
            raise RuntimeError("the paced stream ended before the bodies did: make it longer")
        return [b - a for a, b in zip(ts, ts[1:], strict=False) if t0 <= b <= t1]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def next_turn(raw: bytes, rng: random.Random) -> bytes:
    doc = json.loads(raw)
    doc["messages"] += [{"role": "assistant", "content": prose(rng, 600)},
                        {"role": "user", "content": prose(rng, 300)}]  # fmt: skip
    return json.dumps(doc, ensure_ascii=False).encode()


def run_variant(port: int, loads: list[tuple[str, bytes]]) -> dict:
    """The stream's gaps while loads go through one after the other; each body's wall time."""
    st = Stream(port)
    c = Client(port)
    times: dict[str, list[float]] = {}
    try:
        time.sleep(0.3)
        t0 = time.perf_counter()
        for kind, body in loads:
            t = time.perf_counter()
            try:
                c.post(body, 1, headers={"x-bench-stream": "tiny"})
            except RuntimeError as e:
                raise RuntimeError(f"{kind}: {e}") from None
            times.setdefault(kind, []).append(time.perf_counter() - t)
        t1 = time.perf_counter()
        time.sleep(0.05)
    finally:
        c.close()
        st.close()
    return {"gaps": st.gaps(t0, t1), "times": times}


def huge_loads(seed: int, mat: Material) -> list[tuple[str, bytes]]:
    one, _ = bodies.build_request(seed + 500, 1_000_000, mat)
    doc = json.loads(one)
    msgs = doc["messages"]
    doc["messages"] = [m for _ in range(200) for m in msgs]
    big = json.dumps(doc, ensure_ascii=False).encode()
    rng = random.Random(seed)
    items = [f"{rng.getrandbits(24):06x}" for _ in range(1_000_000)]
    tid = "toolu_01" + "B" * 22
    tool = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "list them"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "ids", "input": {"ids": items}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "done"}]}]}).encode()  # fmt: skip
    return [(f"{len(big) / 1e6:.0f} MB Claude-Code-shaped body", big),
            (f"tool input of 1M elements ({len(tool) / 1e6:.0f} MB)", tool)]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bodies", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="20 bodies")
    ap.add_argument("--huge", action="store_true", help="also the 200 MB body and the 1M-element tool input")
    ap.add_argument("--variants", default="plain,worker,thread")
    a = ap.parse_args()
    n = 20 if a.quick else a.bodies
    keys = a.variants.split(",")
    rng = random.Random(a.seed)
    lits = make_literals(random.Random(a.seed), 1000)
    mat = Material(rng, lits)
    print(f"building {n} bodies of 1 MB ...", flush=True)
    cc = [bodies.build_request(a.seed + 1 + i, 1_000_000, mat)[0] for i in range((n + 1) // 2)]
    b64 = [bodies.tool_result_body(bodies.base64url_then_email(random.Random(a.seed + 100 + i), 1_000_000))
           for i in range(n // 2)]  # fmt: skip
    loads = [x for pair in zip(cc, [*b64, None], strict=False) for x in pair if x is not None][:n]
    labelled = [("Claude-Code-shaped" if x in cc else "base64url tool result", x) for x in loads]
    first, _ = bodies.build_request(a.seed + 900, 1_000_000, mat)
    turn = next_turn(first, random.Random(a.seed + 901))
    huge = huge_loads(a.seed, mat) if a.huge else []

    tmp = tmpdir()
    text = prose(random.Random(a.seed + 2), 400_000, brackets=False)
    pieces = streams.pieces(text, streams.cut_points(random.Random(a.seed + 3), text, 5, 40))
    (tmp / "paced.sse").write_bytes(b"".join(streams.anthropic_text_stream(random.Random(a.seed + 4), pieces)))
    print(f"paced stream: {len(pieces)} events, one per write, {DELAY_MS} ms apart", flush=True)
    up = Upstream([f"paced={tmp / 'paced.sse'}"], per_write=1)
    mdir = mappings_dir(tmp, "lit", lits)
    md: dict[str, Mitmdump] = {}
    res: dict[str, dict] = {}
    first_t: dict[str, float] = {}
    turn_t: dict[str, float] = {}
    huge_res: dict[str, list[dict]] = {}
    try:
        for k in keys:
            md[k] = Mitmdump(up.port, args_of(k, tmp, mdir), tmp, f"offload-{k}")
        ports = {k: m.wait() for k, m in md.items()}
        for k in keys:
            c = Client(ports[k])
            t = time.perf_counter()
            c.post(first, 1, headers={"x-bench-stream": "tiny"})  # warm-up: the worker starts
            first_t[k] = time.perf_counter() - t
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                c.post(turn, 1, headers={"x-bench-stream": "tiny"})
                ts.append(time.perf_counter() - t)
            turn_t[k] = statistics.median(ts)
            c.close()
            print(f"  {VARIANTS[k]}: running {n} bodies ...", flush=True)
            res[k] = run_variant(ports[k], labelled)
            for label, body in huge:
                print(f"  {VARIANTS[k]}: {label} ...", flush=True)
                huge_res.setdefault(k, []).append(run_variant(ports[k], [(label, body)]))
        if "worker" in md:
            started = sum(1 for ln in md["worker"].log if re.search(r"masking worker started", ln))
            print(f"  (worker variant: {started} worker process(es) started)")
    finally:
        for m in md.values():
            m.stop()
        up.stop()

    print()
    print(f"A concurrent stream's gaps while {n} bodies of 1 MB are masked (ms; the pacing is {DELAY_MS} ms), "
          f"Python {sys.version.split()[0]}; default mappings + 1000 literals")  # fmt: skip
    kinds = ["Claude-Code-shaped", "base64url tool result"]
    print(f"  {'variant':<36}{'gaps':>6}{'p50':>8}{'p99':>8}{'max':>8}   " + "".join(f"{k[:18] + ' wall':>26}" for k in kinds))
    base = res.get("plain")
    for k in keys:
        g = res[k]["gaps"]
        walls = []
        for kind in kinds:
            w = statistics.median(res[k]["times"][kind])
            ratio = f" ({w / statistics.median(base['times'][kind]):.1f}x)" if base and k != "plain" else ""
            walls.append(f"{w * 1e3:>17.1f}ms{ratio:>7}")
        print(f"  {VARIANTS[k]:<36}{len(g):>6}{pct(g, 50) * 1e3:>8.1f}{pct(g, 99) * 1e3:>8.1f}{max(g) * 1e3:>8.1f}   "
              + "".join(f"{w:>26}" for w in walls))  # fmt: skip
    print("  a 1 MB request alone (wall, ms), and the conversation's next turn (the same body, one exchange more):")
    for k in keys:
        rf = f" ({first_t[k] / first_t['plain']:.1f}x)" if "plain" in first_t and k != "plain" else ""
        rt = f" ({turn_t[k] / turn_t['plain']:.1f}x)" if "plain" in turn_t and k != "plain" else ""
        print(f"    {VARIANTS[k]:<36} first {first_t[k] * 1e3:8.1f}{rf:<8} next turn {turn_t[k] * 1e3:8.1f}{rt}")
    if huge:
        print("  one huge body, a concurrent stream beside it (ms):")
        print(f"    {'body':<44}" + "".join(f"{VARIANTS[k][:30]:>34}" for k in keys))
        for i, (label, _) in enumerate(huge):
            cells = []
            for k in keys:
                r = huge_res[k][i]
                g = r["gaps"] or [float("nan")]
                cells.append(f"max {max(g) * 1e3:6.0f} p99 {pct(g, 99) * 1e3:5.0f} wall {r['times'][label][0]:5.1f}s")
            print(f"    {label:<44}" + "".join(f"{c:>34}" for c in cells))


if __name__ == "__main__":
    main()
