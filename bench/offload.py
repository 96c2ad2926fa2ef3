"""Large request bodies off the event loop and off its GIL (issue 29, issue 27 "Large
inputs"): what a concurrent stream sees while mitmdump masks big bodies. Side by side in
one run, the variants interleaved (5 bodies each in turn): plain mitmdump; the addon with
its masking worker process (disguise_offload_bytes, the default 256 KiB); masking in a
thread of mitmdump's process (0); the worker with stream_large_bodies=128k (the body
mitmproxy streams, taken whole by the addon and masked off the loop through bodyhook).

    python bench/offload.py                  # 50 bodies of 1 MB; ~3 min on 2 cores
    python bench/offload.py --quick          # 20 bodies
    python bench/offload.py --huge           # also a 200 MB body and a 1M-element tool input
    python bench/offload.py --trace          # where the loop's long pauses went (bench/stalls.py)
    python bench/offload.py --before DIR     # DIR's addon (an older checkout) beside: before/after in one run
    python bench/offload.py --variants plain,worker,lazy   # "first" of lazy: a body that starts the worker

A paced SSE stream (one event per upstream write, 5 ms apart), read by a process of its
own, runs through the same mitmdump while N bodies of 1 MB (Claude-Code-shaped ones from
bodies.build_request and base64url tool results, alternating; every body a new one) are
sent on another connection, one every 250 ms (--every). Printed per variant: the
stream's gaps between reads over the whole run (p50/p90/p99/max: 5 ms is the pacing),
each body's worst gap (the longest while it was the body in flight: p50/p90/max over
the bodies), each kind's median wall time (ratio to plain); the first 1 MB body once the
worker is ready, and the next turn of a conversation (the same body and one exchange
more); how long after mitmdump listened its worker was ready (started and its rules
built, in the background), RSS of mitmdump and of its worker apart. --huge: each huge
body's longest wait of the stream beside it. Rules: the shipped defaults and 1,000
literals. The machine's load average is printed (the gaps grow with it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bodies  # noqa: E402
import streams  # noqa: E402
from common import children  # noqa: E402
from material import Material, make_literals, prose  # noqa: E402
from proxies import Client, Mitmdump, Upstream, mappings_dir, tmpdir, variant_args  # noqa: E402

DELAY_MS = 5
VARIANTS = {
    "plain": "plain mitmdump",
    "worker": "addon, worker process (256 KiB)",
    "thread": "addon, in-process thread (0)",
    "streamed": "addon, worker, stream_large_bodies",
    "lazy": "addon, worker started lazily",
}


def args_of(key: str, tmp: Path, mdir: Path, before: Path | None = None) -> list[str]:
    if key.endswith("@before"):  # the same variant, the addon of another tree (--before)
        assert before is not None
        args = args_of(key.removesuffix("@before"), tmp, mdir)
        return [str(before / "addon" / "disguise.py") if x == "addon/disguise.py" else x for x in args]
    if key == "plain":
        return variant_args(tmp, "plain")
    args = [*variant_args(tmp, "addon", mdir), "--set", f"disguise_offload_bytes={0 if key == 'thread' else 262144}"]
    if key == "streamed":  # mitmproxy streams the body: the addon takes it whole (callables.Buffered)
        args += ["--set", "stream_large_bodies=128k"]
    if key == "lazy":  # disguise_offload_warm off: started by the first large body (masked in a thread meanwhile)
        args += ["--set", "disguise_offload_warm=false"]
    return args


READER = """
import json, socket, sys, threading, time
host, port, req = sys.argv[2], int(sys.argv[1]), sys.stdin.buffer.readline()
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(bytes.fromhex(req.decode()))
ts = []
def read():
    while True:
        d = s.recv(1 << 16)
        ts.append(time.perf_counter() if d else float("nan"))
        if not d:
            return
threading.Thread(target=read, daemon=True).start()
print("ok", flush=True)
sys.stdin.readline()
print(json.dumps([t for t in ts if t == t] + ([None] if any(t != t for t in ts) else [])), flush=True)
"""


class Stream:
    """The paced stream, read by a process of its own (no GIL shared with the client
    sending the bodies): the time of every read (perf_counter: CLOCK_MONOTONIC)."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        body = b'{"stream": true}'
        req = (f"POST /v1/messages HTTP/1.1\r\nHost: {host}:{port}\r\ncontent-type: application/json\r\n"
               "anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\nx-bench-stream: paced\r\n"
               f"x-bench-per-write: 1\r\nx-bench-delay-ms: {DELAY_MS}\r\ncontent-length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        self.proc = subprocess.Popen([sys.executable, "-c", READER, str(port), host], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((req + body).hex().encode() + b"\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != b"ok":
            raise RuntimeError("the stream reader did not start")
        self.times: list[float] = []

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()
        ts = json.loads(self.proc.stdout.readline())
        self.proc.wait(10)
        if ts and ts[-1] is None:
            raise RuntimeError("the paced stream ended before the bodies did: make it longer")
        self.times = ts

    def gaps(self, t0: float, t1: float) -> list[tuple[float, float]]:
        """(end time, gap) of each read in [t0, t1]."""
        ts = self.times
        return [(b, b - a) for a, b in zip(ts, ts[1:], strict=False) if t0 <= b <= t1]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def next_turn(raw: bytes, rng: random.Random) -> bytes:
    doc = json.loads(raw)
    doc["messages"] += [{"role": "assistant", "content": prose(rng, 600)},
                        {"role": "user", "content": prose(rng, 300)}]  # fmt: skip
    # written as the turn before was (bodies.build_request): a client has one serializer
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def run_variant(port: int, loads: list[tuple[str, bytes]], every: float, stream_port: int) -> dict:
    """The stream's gaps while loads go through, one starting every `every` seconds (or
    when the one before ends, if later); each body's wall time and the longest gap
    while it was the body in flight (from its start to the next one's)."""
    st = Stream(stream_port, "127.0.0.2")
    c = Client(port)
    times: dict[str, list[float]] = {}
    starts = []
    hdr = {"x-bench-stream": "tiny"}
    try:
        time.sleep(0.2)
        for kind, body in loads:
            t = time.perf_counter()
            starts.append(t)
            try:
                c.post(body, 1, headers=hdr)
            except RuntimeError as e:
                raise RuntimeError(f"{kind}: {e}") from None
            times.setdefault(kind, []).append(time.perf_counter() - t)
            time.sleep(max(0.0, t + every - time.perf_counter()))
        t1 = time.perf_counter()
    finally:
        c.close()
        st.close()
    gaps = st.gaps(starts[0], t1)
    edges = [*starts[1:], t1]
    worst = [max((g for e, g in gaps if s0 <= e <= s1), default=0.0) for s0, s1 in zip(starts, edges, strict=True)]
    return {"gaps": [g for _, g in gaps], "worst": worst, "times": times}


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
    ap.add_argument("--variants", default="plain,worker,thread,streamed")
    ap.add_argument("--every", type=float, default=0.25, help="a body starts every EVERY seconds (or when the last ends)")
    ap.add_argument("--block", type=int, default=5, help="bodies per variant in turn (the variants interleaved)")
    ap.add_argument("--trace", action="store_true", help="load bench/stalls.py: where the loop's long turns went")
    ap.add_argument("--before", type=Path, help="a checkout of an older tree: its worker and streamed variants beside")
    a = ap.parse_args()
    n = 20 if a.quick else a.bodies
    keys = a.variants.split(",")
    if a.before:
        keys += [f"{k}@before" for k in keys if k in ("worker", "streamed", "lazy")]
        for k in keys:
            if k.endswith("@before"):
                VARIANTS[k] = VARIANTS[k.removesuffix("@before")].replace("addon,", "before,")
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
    # Two fake providers: the paced stream's, and the bodies' (one process receiving a
    # 200 MB body pauses its own loop, and with it any stream it serves: not the proxy's).
    up_s = Upstream([f"paced={tmp / 'paced.sse'}"], per_write=1)
    up = Upstream([], per_write=1)
    mdir = mappings_dir(tmp, "lit", lits)
    md: dict[str, Mitmdump] = {}
    ports: dict[str, int] = {}
    sport: dict[str, int] = {}  # the paced stream's listener of each mitmdump (its own provider)
    res: dict[str, dict] = {k: {"gaps": [], "worst": [], "times": {}} for k in keys}
    first_t: dict[str, float] = {}
    turn_t: dict[str, float] = {}
    huge_res: dict[str, list[dict]] = {}
    load0 = os.getloadavg()
    try:
        for k in keys:
            trace = ["-s", str(HERE / "stalls.py")] if a.trace else []
            env = {"BENCH_STALLS_FILE": str(tmp / f"stalls-{k}.json")} if a.trace else {}
            second = ["--mode", f"reverse:http://127.0.0.1:{up_s.port}@127.0.0.2:0"]  # its own address: any port
            md[k] = Mitmdump(up.port, [*args_of(k, tmp, mdir, a.before), *second, *trace], tmp, f"offload-{k}", env=env)
        for k, m in md.items():
            ports[k] = m.wait()
            t_end = time.monotonic() + 60
            while k not in sport and time.monotonic() < t_end:
                found = re.search(r"listening at 127\.0\.0\.2:(\d+)", "\n".join(m.log))
                if found:
                    sport[k] = int(found.group(1))
                time.sleep(0.05)
        t_listen = time.perf_counter()
        ready_t: dict[str, float] = {}
        waiting = [k for k in keys if k not in ("plain", "thread", "lazy") and not k.endswith("@before")]
        while time.perf_counter() - t_listen < 120 and len(ready_t) < len(waiting):
            for k in waiting:
                if k not in ready_t and any("masking worker ready" in ln for ln in md[k].log):
                    ready_t[k] = logged_between(md[k].log, "listening at", "masking worker ready")
            time.sleep(0.05)
        idle = {k: proc_rss(m.pid) for k, m in md.items()}
        idle_w = {k: sum(proc_rss(p) for p in children(m.pid)) for k, m in md.items()}
        for k in keys:
            c = Client(ports[k])
            t = time.perf_counter()
            c.post(first, 1, headers={"x-bench-stream": "tiny"})  # the first large body of the process
            first_t[k] = time.perf_counter() - t
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                c.post(turn, 1, headers={"x-bench-stream": "tiny"})
                ts.append(time.perf_counter() - t)
            turn_t[k] = statistics.median(ts)
            c.post(b'{"stream": true}', 1, headers={"x-bench-stream": "tiny", "x-bench-stalls-reset": "1"})
            c.close()
        print(f"  {n} bodies, {a.block} per variant in turn: ", end="", flush=True)
        for b in range(0, n, a.block):
            order = keys[(b // a.block) % len(keys):] + keys[: (b // a.block) % len(keys)]
            for k in order:
                r = run_variant(ports[k], labelled[b : b + a.block], a.every, sport[k])
                res[k]["gaps"] += r["gaps"]
                res[k]["worst"] += r["worst"]
                for kind, ts in r["times"].items():
                    res[k]["times"].setdefault(kind, []).extend(ts)
            print(".", end="", flush=True)
        print()
        for label, body in huge:
            for k in keys:
                print(f"  {VARIANTS[k]}: {label} ...", flush=True)
                huge_res.setdefault(k, []).append(run_variant(ports[k], [(label, body)], 0.0, sport[k]))
        for k in keys:
            if k != "plain":
                started = sum(1 for ln in md[k].log if re.search(r"masking worker started", ln))
                print(f"  ({VARIANTS[k]}: {started} worker process(es) started)")
        for k in keys:  # the tracer's summary, written before mitmdump is stopped
            c = Client(ports[k])
            c.post(b'{"stream": true}', 1, headers={"x-bench-stream": "tiny", "x-bench-stalls-write": "1"})
            c.close()
        rss = {k: proc_rss(m.pid) for k, m in md.items()}
        wrss = {k: sum(proc_rss(p) for p in children(m.pid)) for k, m in md.items()}
    finally:
        for m in md.values():
            m.stop()
        up.stop()
        up_s.stop()
    load1 = os.getloadavg()

    print()
    print(f"A concurrent stream's gaps while {n} bodies of 1 MB are masked, one every {a.every * 1e3:.0f} ms (ms; the "
          f"pacing is {DELAY_MS} ms), Python {sys.version.split()[0]}; default mappings + 1000 literals; "
          f"load {load0[0]:.1f} -> {load1[0]:.1f}")  # fmt: skip
    kinds = ["Claude-Code-shaped", "base64url tool result"]
    print(f"  {'variant':<36}{'gaps':>6}{'p50':>7}{'p90':>7}{'p99':>7}{'max':>7}  {'per-body worst: p50':>20}"
          f"{'p90':>7}{'max':>7}  " + "".join(f"{k[:14] + ' wall':>22}" for k in kinds))  # fmt: skip
    base = res.get("plain")
    for k in keys:
        g, w = res[k]["gaps"], res[k]["worst"]
        walls = []
        for kind in kinds:
            med = statistics.median(res[k]["times"][kind])
            ratio = f" ({med / statistics.median(base['times'][kind]):.1f}x)" if base and k != "plain" else ""
            walls.append(f"{med * 1e3:>7.1f}ms{ratio:>8}")
        print(f"  {VARIANTS[k]:<36}{len(g):>6}{pct(g, 50) * 1e3:>7.1f}{pct(g, 90) * 1e3:>7.1f}{pct(g, 99) * 1e3:>7.1f}"
              f"{max(g) * 1e3:>7.1f}  {pct(w, 50) * 1e3:>20.1f}{pct(w, 90) * 1e3:>7.1f}{max(w) * 1e3:>7.1f}  "
              + "".join(f"{x:>22}" for x in walls))  # fmt: skip
    print("  a 1 MB request alone (wall, ms): the process's first (its worker ready), and the conversation's next turn:")
    for k in keys:
        rf = f" ({first_t[k] / first_t['plain']:.1f}x)" if "plain" in first_t and k != "plain" else ""
        rt = f" ({turn_t[k] / turn_t['plain']:.1f}x)" if "plain" in turn_t and k != "plain" else ""
        print(f"    {VARIANTS[k]:<36} first {first_t[k] * 1e3:8.1f}{rf:<8} next turn {turn_t[k] * 1e3:8.1f}{rt}")
    print("  the worker ready (started and its rules built, in the background) after listening, s; RSS (MiB) of "
          "mitmdump and of its worker process apart, idle (once ready) and at the end:")  # fmt: skip
    for k in keys:
        ready = f"{ready_t[k]:5.1f}" if k in ready_t else "    -"
        print(f"    {VARIANTS[k]:<36} ready {ready}   mitmdump {idle[k] / 2**20:6.1f} -> {rss[k] / 2**20:6.1f}"
              f"   worker {idle_w[k] / 2**20:6.1f} -> {wrss[k] / 2**20:6.1f}")  # fmt: skip
    if huge:
        print("  one huge body, a concurrent stream beside it: its gaps while the body is in flight (ms: p50/p99/max)"
              " and the body's wall time")  # fmt: skip
        print(f"    {'body':<44}" + "".join(f"{VARIANTS[k][:40]:>44}" for k in keys))
        for i, (label, _) in enumerate(huge):
            cells = []
            for k in keys:
                r = huge_res[k][i]
                g = r["gaps"] or [float("nan")]
                cells.append(f"p50 {pct(g, 50) * 1e3:4.0f} p99 {pct(g, 99) * 1e3:5.0f} max {max(g) * 1e3:6.0f} "
                             f"wall {r['times'][label][0]:5.1f}s")  # fmt: skip
            print(f"    {label:<44}" + "".join(f"{c:>44}" for c in cells))
    if a.trace:
        for k in keys:
            print_trace(k, tmp / f"stalls-{k}.json")


def logged_between(log: list[str], first: str, then: str) -> float:
    """Seconds between mitmdump's log lines holding first and then (its [HH:MM:SS.mmm] stamps)."""

    def stamp(what: str) -> float:
        ln = next(x for x in log if what in x)
        h, m, s = re.match(r"\[(\d+):(\d+):([\d.]+)\]", ln).groups()  # type: ignore[union-attr]
        return int(h) * 3600 + int(m) * 60 + float(s)

    return stamp(then) - stamp(first)


def proc_rss(pid: int) -> int:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) * 1024
    except OSError:
        pass
    return 0


def print_trace(key: str, path: Path) -> None:
    """bench/stalls.py's summary: the loop's longest pauses and where they went."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"  {VARIANTS[key]}: no trace")
        return
    print(f"  {VARIANTS[key]}: the loop's wake-ups (every 2 ms) late by over {doc['threshold_ms']:.0f} ms, by what "
          f"took most of each: {doc['causes']}; lateness (5 ms buckets): {doc['late_5ms']}")  # fmt: skip
    turns = {int(k): v for k, v in doc.get("turns_cpu_1ms", {}).items()}
    n = sum(turns.values())
    over = {ms: sum(v for k, v in turns.items() if k >= ms) for ms in (5, 10, 20, 50, 100)}
    print(f"    the loop's turns (callbacks, {n}) by their own CPU time: " + ", ".join(
        f">= {ms} ms: {c}" for ms, c in over.items()) + "; the longest:")  # fmt: skip
    for t in doc.get("long_turns", [])[:4]:
        print(f"    {t['cpu_ms']:6.1f} ms CPU ({t['wall_ms']} wall, gc {t['gc_ms']}): {t['what'][:150]}")
        for cnt, stack in t["stacks"][:1]:
            print(f"        {cnt:3d}x {stack[:300]}")
    print("    the longest pauses (wake-ups late), and what took them:")
    for t in doc["pauses"][:4]:
        print(f"    {t['wall_ms']:6.1f} ms: loop cpu {t['loop_cpu_ms']} (gc {t['gc_ms']}), run queue "
              f"{t['loop_runqueue_ms']}, asleep {t['loop_asleep_ms']}; threads {t['threads_cpu_ms']}, "
              f"worker {t['children_cpu_ms']}")  # fmt: skip
        for cnt, stack in t["stacks"][:2]:
            print(f"        {cnt:3d}x {stack[:240]}")


if __name__ == "__main__":
    main()
