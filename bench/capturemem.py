"""Capture's memory for streams under way (issue 29), in-process: 500 Tees (inspect/record.py)
fed the burst's three mixed streams ((e): Anthropic, Chat, Responses, ~190 events each)
event by event, each piece restored into a new object as the engine does; the memory
held once every stream is at its last event (tracemalloc, and RSS), by CHUNK:

    PYTHONPATH=addon python bench/capturemem.py [CHUNK ...]    # default: 4096 8192 16384 and 1 GiB (no chunking)

Each size runs in a process of its own (RSS). Measured on 2 cores (load 8): 8 KiB
chunks 9.5 MiB traced / 16 MiB RSS; no chunking (1 GiB) 50 / 59 MiB; the pieces held
as they came (inspect/record.py before issue 29's chunks) 53 / 74 MiB; 22 MiB fed a side.
Later (mitmproxy 11's zstandard, whose compress() returned each chunk in an object sized
for the worst case, 8.3 KiB, until packing.py copied it to its own length): 8 KiB chunks
47.1 MiB traced / 47.0 MiB RSS before that copy, 9.0 / 21.8 after (4 KiB 9.5 / 20.4,
16 KiB 14.2 / 30.1, no chunking 52.6 / 73.8); Python 3.12's backports.zstd 9.0 / 20.5.

    python bench/capturemem.py --whole                    # a finished side compressed again
    python bench/capturemem.py --flows [--before TREE]    # what a finished flow holds
    python bench/capturemem.py --turns [--before TREE] [--n N]   # a conversation's turns (N: 20)

--whole: the burst's three streams (bench (e)), each side as the Tee keeps it while it
runs (CHUNK-sized frames at FAST) against one frame at LEVEL at its end (tee.Kept.zipped,
shorter than packing.ON_LOOP): bytes held, and the loop's time to make the frame.

--flows: the memory a finished flow holds once the addon's hooks ran (in process,
mitmproxy's test flows; the Guard's response hook lets go of the record, as in mitmdump):
N flows of the burst's three streams (each request masked, each stream fed event by
event), kept alive as mitmproxy keeps a finished flow while its connection lives; RSS
over N, capture on and off, and the same with no addon (the test flow alone). With
--before TREE, TREE's addon beside this one's, each in processes of its own.

--turns: bench (d)'s 1 MB Claude-Code body and N next turns (offload.next_turn: an
exchange more), each captured as the Inspector keeps a client request (record.side held
back, compress_held, the capture's thread): the CPU a turn's side costs, the loop's part,
and the bytes the N sides hold together (each piece once); with turns remembering each
request (the very bytes object: the capture compares on the loop) and without (another
API: each shared piece decompressed and compared), then by packing.PIECE. Measured on 2
shared cores (load 1.7; 5 processes each, interleaved): main before 2.39 ms a next turn
(first turn 2.74) and 4,781 kB for 20 turns; pieces of 64 KiB 0.66 ms (the loop's part
0.11, its memcmp) / 1.41 ms without turns (first turn 3.08), 870 kB; by PIECE (one side's
bytes; next turn; 20 turns): 16 KiB 281 kB 0.89 ms 802 kB, 32 KiB 265 / 0.75 / 824,
64 KiB 253 / 0.72 / 870, 128 KiB 246 / 0.88 / 1,036, 256 KiB 238 / 1.19 / 1,523 (one frame: 236 kB)."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "addon"))


def _rss() -> float:
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith("VmRSS"):
                return int(ln.split()[1]) / 1024
    return 0.0


def one(chunk: int, n: int = 500) -> None:
    import streams

    from disguiselib.inspect import record, tee

    tee.CHUNK = chunk
    ph = [("[EMAIL_1]", "a@b.c"), ("Zenith Labs", "Acme")]
    evs = []
    for build, chars in ((streams.build_stream, 4400), (streams.build_chat_stream, 1100), (streams.build_responses_stream, 1100)):
        b = build(7, chars, ph, 2, tool=False)["bytes"]
        evs.append([e + b"\n\n" for e in b.split(b"\n\n") if e])
    tracemalloc.start()
    r0, t0 = _rss(), tracemalloc.get_traced_memory()[0]
    tees = [record.Tee(lambda d: bytes(bytearray(d)), 8 << 20) for _ in range(n)]
    last = min(map(len, evs))
    for j in range(last):
        for i, t in enumerate(tees):
            t(bytes(bytearray(evs[i % 3][j])))
    gc.collect()
    fed = sum(sum(map(len, e[:last])) for e in evs) * n / 3 / 2**20
    print(f"  CHUNK {chunk:>10}: {n} streams at event {last}: traced {(tracemalloc.get_traced_memory()[0] - t0) / 2**20:5.1f} MiB, "
          f"RSS +{_rss() - r0:5.1f} MiB ({fed:.1f} MiB fed a side)")  # fmt: skip


def whole() -> None:
    import time

    import streams

    from disguiselib.inspect import packing, tee

    ph = [("[EMAIL_1]", "a@b.c"), ("Zenith Labs", "Acme")]
    print(f"  a finished side: CHUNK {tee.CHUNK} frames at level {packing.FAST} against one frame at level {packing.LEVEL}")
    for name, build, chars in (("Anthropic", streams.build_stream, 4400), ("Chat", streams.build_chat_stream, 1100),
                               ("Responses", streams.build_responses_stream, 1100)):  # fmt: skip
        b = build(7, chars, ph, 2, tool=False)["bytes"]
        chunks = [packing.pack(b[i : i + tee.CHUNK], packing.FAST) for i in range(0, len(b), tee.CHUNK)]
        best = float("inf")
        for _ in range(50):
            t0 = time.perf_counter()
            z = packing.pack(packing.unpack_all(chunks), packing.LEVEL)
            best = min(best, time.perf_counter() - t0)
        held = sum(map(len, chunks))
        print(f"    {name:<10} {len(b):>7,} B: chunks {held:>6,} B ({len(b) / held:4.1f}x), one frame {len(z):>6,} B "
              f"({len(b) / len(z):4.1f}x); made in {best * 1e6:.0f} µs (least of 50)")  # fmt: skip


# One process of --flows: N finished flows kept alive, RSS a flow printed (KiB)
FLOWS = r'''
import argparse, asyncio, gc, sys
sys.path[:0] = [BENCH_DIR, ADDON_DIR]
import disguiselib  # (the tree's own: bench/common.py puts this tree's addon/ first)
import common
from context import Ctx, PATHS
import sec_e_memory as E
from mitmproxy import http
from mitmproxy.test import taddons, tflow
from disguiselib.mitm.addon import Disguise
c = Ctx(argparse.Namespace(quick=True, seed=1))
mix = E.mixed(c)
evs = {k: [e + b"\n\n" for e in st["bytes"].split(b"\n\n") if e] for k, st in mix.items()}
a = Disguise()
def rss():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS"))
def one(k):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host, f.request.port = "POST", PATHS[k], "127.0.0.1", 8080
    f.request.headers["content-type"] = "application/json"
    f.request.content = c.requests[k]
    if NO_ADDON:
        f.response = http.Response.make(200, b"", {"content-type": "text/event-stream"})
        f.response.content = None
        return f
    for hook in (a.requestheaders, a.guard.requestheaders, a.request, a.guard.request):  # the chain's order
        r = hook(f)
        if asyncio.iscoroutine(r):
            loop.run_until_complete(r)
    f.response = http.Response.make(200, b"", {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
    f.response.headers.pop("content-length", None)
    f.response.content = None
    a.responseheaders(f)
    for e in evs[k]:
        f.response.stream(bytes(bytearray(e)))  # a new object a read, as a socket gives it
    f.response.stream(b"")
    f.response.data.content = None  # mitmproxy 11 keeps nothing of a streamed body
    a.response(f)
    a.guard.response(f)
    return f
with taddons.context(a, a.inspect) as tctx:
    loop = tctx.master.event_loop
    tctx.configure(a.inspect, disguise_capture_limit=LIMIT)
    tctx.configure(a, disguise_mappings=[MAPPINGS])
    keys = list(mix)
    for k in keys:
        one(k)
    gc.collect()
    r0 = rss()
    flows = [one(keys[i % 3]) for i in range(N)]
    gc.collect()
    print((rss() - r0) / N)
'''


def flows(before: Path | None, n: int, runs: int = 3) -> None:
    trees = {"this tree": BENCH.parent} | ({f"--before {before}": before} if before else {})
    print(f"  {n} finished flows of (e)'s three streams kept alive, through the addon's hooks in process: RSS a flow "
          f"(median of {runs} processes each)")  # fmt: skip
    for label, tree in trees.items():
        got = {}
        for what, limit, off in (("capture on", 8 << 20, False), ("capture off", 0, False), ("no addon", 0, True)):
            head = (f"BENCH_DIR, ADDON_DIR, NO_ADDON, LIMIT, MAPPINGS, N = {str(BENCH)!r}, {str(tree / 'addon')!r}, "
                    f"{off}, {limit}, {str(BENCH.parent / 'mappings')!r}, {n}\n")  # fmt: skip
            vals = sorted(float(subprocess.run([sys.executable, "-c", head + FLOWS], check=True, capture_output=True,
                                               text=True).stdout.split()[-1]) for _ in range(runs))  # fmt: skip
            got[what] = vals[len(vals) // 2]
        print(f"    {label}: " + ", ".join(f"{k} {v:.1f} KiB" for k, v in got.items())
              + f"; the capture's share {got['capture on'] - got['capture off']:.1f} KiB")  # fmt: skip


# One process of --turns: a conversation's turns captured as the Inspector keeps a client
# request (held back, compressed once it left); the CPU each turn's compression took (ms,
# the process's: only the capture's thread works meanwhile), and the bytes the sides hold
# together (each piece once).
TURNS = r'''
import json, random, statistics, sys, time
sys.path[:0] = [BENCH_DIR, ADDON_DIR]
from disguiselib.inspect import packing, record  # (the tree's own: bench/common.py puts this tree's addon/ first)
import bodies
from material import Material, make_literals
from offload import next_turn
assert record.__file__.startswith(ADDON_DIR)
if PIECE:
    packing.PIECE = PIECE
mat = Material(random.Random(SEED), make_literals(random.Random(SEED), 1000))
body = bodies.build_request(SEED + 101, 1_000_000, mat)[0]
sides, cpu, loop = [], [], []
two = "held" in record.compress_held.__code__.co_varnames  # (a tree before: no such argument)
for i in range(N):
    later = []
    t0 = time.process_time()
    sides.append(record.side(body, headers=[("content-type", "application/json")], later=later))
    loop.append((time.process_time() - t0) * 1e3)
    t0 = time.process_time()
    if two:  # HELD: the rule set's turns remember each request (the very object: anthropic.messages)
        record.compress_held(later, (lambda b: True) if HELD else None)
    else:
        record.compress_held(later)
    record.settle()
    cpu.append((time.process_time() - t0) * 1e3)
    assert sides[-1]["content"] == body
    body = next_turn(body, random.Random(SEED + 901 + i))
held = {}
for s in sides:
    c = dict.__getitem__(s, "content")
    for z in c if isinstance(c, tuple) else [c]:
        held[id(z)] = len(z)
print(json.dumps({"first": cpu[0], "turn": statistics.median(cpu[1:] or cpu), "held": sum(held.values()),
                  "loop": statistics.median(loop[1:] or loop)}))
'''


def turns(before: Path | None, n: int, runs: int = 5, seed: int = 20250101) -> None:
    import json

    def run(tree: Path, k: int, piece: int = 0, held: bool = True) -> dict:
        head = (f"BENCH_DIR, ADDON_DIR, N, SEED, PIECE, HELD = {str(BENCH)!r}, {str(tree / 'addon')!r}, {k}, {seed}, "
                f"{piece}, {held}\n")  # fmt: skip
        out = subprocess.run([sys.executable, "-c", head + TURNS], check=True, capture_output=True, text=True).stdout
        return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]

    def med(rs: list[dict], k: str) -> float:
        return sorted(r[k] for r in rs)[len(rs) // 2]

    rows = {"this tree (turns remember R)": (BENCH.parent, True), "this tree (no R: another API)": (BENCH.parent, False)}
    rows |= {f"--before {before}": (before, True)} if before else {}
    print(f"  bench (d)'s 1 MB body and its next turns (offload.next_turn), captured as a client side: the capture's "
          f"CPU a side (the process's, the job's thread working; median of the turns, of {runs} processes each, "
          f"interleaved), the loop's to make the side, and the bytes {n} turns' sides hold (machine shared; load "
          f"{open('/proc/loadavg').read().split()[0]})")  # fmt: skip
    got: dict[str, list[dict]] = {k: [] for k in rows}
    for _ in range(runs):
        for label, (tree, held) in rows.items():
            got[label].append(run(tree, n, held=held))
    for label, rs in got.items():
        print(f"    {label:<32} first turn {med(rs, 'first'):5.2f} ms, next turn {med(rs, 'turn'):5.2f} ms "
              f"(loop {med(rs, 'loop'):5.3f}), {n} turns hold {med(rs, 'held') / 1e3:5.0f} kB")  # fmt: skip
    if "PIECE" in (BENCH.parent / "addon/disguiselib/inspect/packing.py").read_text():
        print("  this tree by packing.PIECE (turns remember R): one side's bytes, and as above")
        for piece in (16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10):
            one_ = run(BENCH.parent, 1, piece)["held"]
            rs = [run(BENCH.parent, n, piece) for _ in range(max(1, runs // 2))]
            print(f"    {piece >> 10:>4} KiB: one side {one_ / 1e3:4.0f} kB; next turn {med(rs, 'turn'):5.2f} ms, "
                  f"{n} turns hold {med(rs, 'held') / 1e3:5.0f} kB")  # fmt: skip


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(usage="capturemem.py [CHUNK ...] | --whole | --flows|--turns [--before TREE] [--n N]")
    ap.add_argument("chunks", nargs="*")
    ap.add_argument("--one", type=int)
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--flows", action="store_true")
    ap.add_argument("--turns", action="store_true")
    ap.add_argument("--before", type=Path)
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args()
    if args.one is not None:
        one(args.one)
    elif args.whole:
        whole()
    elif args.flows:
        flows(args.before, args.n)
    elif args.turns:
        turns(args.before, 20 if args.n == 500 else args.n)
    else:
        for c in args.chunks or ["4096", "8192", "16384", str(1 << 30)]:
            subprocess.run([sys.executable, __file__, "--one", c], check=True)
