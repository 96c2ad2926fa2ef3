"""(standalone) Where the 1 MB request's time goes through mitmdump (issue 29): the body of
sec_d's request path (bench/sec_d_linear.py, 1,000 literals + defaults, a new body each
run, then the conversation's next turn), addon against plain mitmdump, interleaved, and
per request each thread's CPU and run-queue wait from /proc/PID/task/*/schedstat: of
mitmdump (its event loop, the offload pool's thread, the rest) and of its masking worker
(its reading thread, its masking thread). Wall minus the CPU on the critical path is
what the hand-off waits for (a CPU, a thread hop, the socket).

--inproc: the hand-off alone, without mitmproxy: this process's mitm/offload.Offload
(the addon's, its worker started and its rules built) against pipeline.mask_request in
this process on a rule set of its own, on the same bodies in turn: wall and CPU of each,
the offload pool's thread's CPU, the worker's CPU and run-queue wait.

    python bench/handoff.py --runs 7
    python bench/handoff.py --runs 7 --variants plain,addon,addon-nocapture,thread
    python bench/handoff.py --runs 7 --before /work/main   # another tree's addon beside
    python bench/handoff.py --runs 7 --inproc
    python bench/handoff.py --chain 30 --rounds 3 --before /work/main

--chain N: a conversation of N turns, each cut from the one before (a first body, then
each turn that body and one exchange more than the one before it), through each variant
in turn, a round at a time: each turn's wall median, and the CPU a turn of the proxy's
main thread and of all its threads (the capture's and the digest's included), beside
plain's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bodies  # noqa: E402
import proxies  # noqa: E402
from common import children  # noqa: E402
from material import Material, make_literals  # noqa: E402
from offload import next_turn  # noqa: E402
from proxies import Client, Mitmdump, Upstream, mappings_dir, tmpdir, variant_args  # noqa: E402
from spy import RATE, Sampler  # noqa: E402


def threads(pid: int) -> dict[str, tuple[int, int]]:
    """pid's threads by name (the main thread "main"): (run ns, run-queue wait ns)."""
    out: dict[str, tuple[int, int]] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for t in tasks:
        try:
            name = (t / "comm").read_text().strip()
            run, wait = (int(x) for x in (t / "schedstat").read_text().split()[:2])
        except (OSError, ValueError):
            continue
        key = "main" if t.name == str(pid) else _kind(name)
        r0, w0 = out.get(key, (0, 0))
        out[key] = (r0 + run, w0 + wait)
    return out


def _kind(name: str) -> str:
    if name.startswith("disguise-offlo"):
        return "offload"
    if name.startswith("disguise-worke"):
        return "read"
    return "other"


def snapshot(pid: int) -> dict[str, tuple[int, int]]:
    snap = {f"proxy.{k}": v for k, v in threads(pid).items()}
    for c in children(pid):
        snap |= {f"worker.{k}": v for k, v in threads(c).items()}
    return snap


def delta(a: dict, b: dict) -> dict[str, tuple[float, float]]:
    return {k: ((b[k][0] - a.get(k, (0, 0))[0]) / 1e6, (b[k][1] - a.get(k, (0, 0))[1]) / 1e6) for k in b}


async def inproc(mdir: Path, warm: bytes, fresh: list[bytes], turns: list[bytes]) -> None:
    from disguiselib import pipeline
    from disguiselib.apis.registry import recognise
    from disguiselib.config import build_config
    from disguiselib.mitm.offload import Offload

    cfg, own = (build_config([str(mdir)], True, []) for _ in range(2))  # the worker's, this process's
    api, path, hdrs = recognise("POST", "/v1/messages"), "/v1/messages", [("content-type", "application/json")]
    assert api is not None
    pool: list[float] = []
    off = Offload()
    roundtrip = off._roundtrip

    def timed(*args: object) -> tuple:  # the pool thread's CPU of one hand-off
        c0 = time.thread_time()
        try:
            return roundtrip(*args)  # type: ignore[arg-type]
        finally:
            pool.append(time.thread_time() - c0)

    off._roundtrip = timed  # type: ignore[method-assign]
    off.prepare(cfg)
    off.running()
    while not off.ready(cfg):
        await asyncio.sleep(0.05)
    pid = off.pid
    assert pid is not None
    for b in (warm, warm + b" "):
        await off.mask(api, b, cfg, path, hdrs)
        pipeline.mask_request(api, b, own, path, hdrs)
    rows: dict[str, list[dict[str, float]]] = {"first": [], "turn": []}
    for body, turn in zip(fresh, turns, strict=True):
        for what, b in (("first", body), ("turn", turn)):
            c0, w0 = time.thread_time(), time.perf_counter()
            pipeline.mask_request(api, b, own, path, hdrs)
            row = {"in-process cpu": time.thread_time() - c0, "in-process wall": time.perf_counter() - w0}
            s0, w0 = threads(pid), time.perf_counter()
            got = await off.mask(api, b, cfg, path, hdrs)
            row["offload wall"] = time.perf_counter() - w0
            assert isinstance(got, pipeline.Masked), got
            d = delta(s0, threads(pid))
            row["pool thread cpu"] = pool[-1]
            row["worker main cpu"], row["worker main wait"] = (x / 1e3 for x in d["main"])
            row["worker read cpu"] = d.get("read", d.get("other", (0.0, 0.0)))[0] / 1e3
            row["offload wall - worker cpu - wait"] = (
                row["offload wall"] - row["worker main cpu"] - row["worker main wait"]
            )
            rows[what].append(row)
    off.close()
    print(
        f"the hand-off alone, ms, median of {len(fresh)} (machine shared; load {open('/proc/loadavg').read().split()[0]})"
    )
    for what, rs in rows.items():
        print(f"  {what}: " + ", ".join(f"{k} {statistics.median(r[k] for r in rs) * 1e3:.1f}" for k in rs[0]))
        for k in ("in-process cpu", "worker main cpu", "offload wall"):
            print(f"    {k}, each run: " + " ".join(f"{r[k] * 1e3:.1f}" for r in rs))


def chain(keys: list[str], tmp: Path, mdir: Path, warm: bytes, turns: list[bytes], rounds: int, spy: bool = False) -> None:
    """--chain: turns (each one exchange more than the one before) through each variant;
    spy: mitmdump's main thread sampled meanwhile (spy.py)."""
    up = Upstream([], per_write=1)
    hdr = {"x-bench-stream": "tiny"}
    rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in keys}
    sampled: dict[str, list[Sampler]] = {k: [] for k in keys}
    try:
        for _ in range(rounds):
            for k in keys:
                md = Mitmdump(up.port, args_of(k, tmp, mdir), tmp, f"chain-{k}")
                try:
                    cl = Client(md.wait())
                    if k != "plain" and not k.startswith("plain"):
                        md.worker_ready()
                    for b in (warm, warm + b" ", turns[0]):  # (the conversation's first: the full path)
                        cl.post(b, 1, headers=hdr)
                    s0, walls = threads(md.pid), []
                    with Sampler(md.pid) if spy else contextlib.nullcontext() as sampler:
                        for b in turns[1:]:
                            walls.append(cl.post(b, 1, headers=hdr)[0] * 1e3)
                    if sampler is not None:
                        sampled[k].append(sampler)
                    d = delta(s0, threads(md.pid))
                    n = len(turns) - 1
                    rows[k].append((statistics.median(walls), d["main"][0] / n, sum(v[0] for v in d.values()) / n))
                finally:
                    md.stop()
    finally:
        up.stop()
    print(f"a conversation of {len(turns) - 1} next turns, each cut from the one before ({len(turns[1]):,} to "
          f"{len(turns[-1]):,} B), {rounds} round(s) (load {open('/proc/loadavg').read().split()[0]}):")  # fmt: skip
    base = [r[0] for r in rows.get("plain", [])]
    for k, rs in rows.items():
        ratio = f"  /plain {' '.join(f'{r[0] / p:.2f}' for r, p in zip(rs, base, strict=False))}" if base and k != "plain" else ""
        print(f"  {k:<16} turn wall ms (median of each round) {' '.join(f'{r[0]:.1f}' for r in rs)}{ratio}")
        print(f"  {'':<16} CPU ms a turn: main thread {' '.join(f'{r[1]:.2f}' for r in rs)}, "
              f"all threads {' '.join(f'{r[2]:.2f}' for r in rs)}")  # fmt: skip
    if spy:
        spied(sampled, {k: statistics.median(r[1] for r in rs) for k, rs in rows.items() if rs})


def spied(sampled: dict[str, list[Sampler]], cpu: dict[str, float]) -> None:
    """--spy: where each variant's main thread spends a turn, all its rounds' samples
    together, as shares of the samples set against the main thread's CPU a turn measured
    (cpu: schedstat; py-spy's own rate bends under load, its shares do not): in the hooks
    by the hook (the frame mitmproxy's invoke_addon calls), and the cut's own parts
    (turns._mask_tail's calls)."""
    why = next((s.why for ss in sampled.values() for s in ss if s.why), "")
    if why:
        print(f"  (--spy: {why})")
        return
    print(f"  mitmdump's main thread sampled by py-spy ({RATE}/s) during the turns: ms a turn, its samples' shares "
          "of the CPU a turn above")  # fmt: skip
    for k, ss in sampled.items():
        total = sum(s.total for s in ss)
        if not total:
            continue
        ms = cpu[k] / total
        hooks = sum((s.under("AddonManager.invoke_addon") for s in ss), collections.Counter())
        cut = sum((s.under("_mask_tail") for s in ss), collections.Counter())
        print(f"    {k:<16} {cpu[k]:.2f}: in hooks {sum(hooks.values()) * ms:.2f} ("
              + ", ".join(f"{h} {c * ms:.2f}" for h, c in hooks.most_common(8)) + ")")
        if cut:
            print(f"    {'':<16} the cut's parts (turns._mask_tail) {sum(cut.values()) * ms:.2f}: "
                  + ", ".join(f"{h} {c * ms:.2f}" for h, c in cut.most_common(8)))  # fmt: skip


def args_of(key: str, tmp: Path, mdir: Path) -> list[str]:
    if key == "thread":
        return [*variant_args(tmp, "addon", mdir), "--set", "disguise_offload_bytes=0"]
    return variant_args(tmp, key, mdir)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--inproc", action="store_true", help="the hand-off alone, in this process (no mitmproxy)")
    ap.add_argument("--chain", type=int, default=0, help="a conversation of N next turns, each cut from the one before")
    ap.add_argument("--rounds", type=int, default=3, help="--chain: rounds through the variants")
    ap.add_argument("--spy", action="store_true", help="--chain: mitmdump's main thread sampled by py-spy (bench/spy.py)")
    ap.add_argument(
        "--variants",
        default="plain,addon",
        help="of plain, addon, addon-nocapture, thread (in-process thread: disguise_offload_bytes=0)",
    )
    a = ap.parse_args()
    proxies.BEFORE = a.before
    lits = make_literals(random.Random(a.seed), 1000)
    mat = Material(random.Random(a.seed), lits)
    tmp = tmpdir()
    mdir = mappings_dir(tmp, "lit", lits)
    warm, _ = bodies.build_request(a.seed + 1, 1_000_000, mat)
    fresh = [bodies.build_request(a.seed + 101 + i, 1_000_000, mat)[0] for i in range(a.runs)]
    turns = [next_turn(b, random.Random(a.seed + 901 + i)) for i, b in enumerate(fresh)]
    if a.inproc:
        asyncio.run(inproc(mdir, warm, fresh, turns))
        return
    keys = a.variants.split(",") + (["before"] if a.before else [])
    if a.chain:
        conv = [fresh[0]]
        for i in range(a.chain):
            conv.append(next_turn(conv[-1], random.Random(a.seed + 901 + i)))
        chain(keys, tmp, mdir, warm, conv, a.rounds, a.spy)
        return
    up = Upstream([], per_write=1)
    md = {k: Mitmdump(up.port, args_of(k, tmp, mdir), tmp, f"handoff-{k}") for k in keys}
    hdr = {"x-bench-stream": "tiny"}
    try:
        cl = {k: Client(m.wait()) for k, m in md.items()}
        for k in keys:
            if k in ("addon", "addon-nocapture", "before"):
                md[k].worker_ready()
        for c in cl.values():
            c.post(warm, 1, headers=hdr)
            c.post(warm + b" ", 1, headers=hdr)
        res: dict[str, dict[str, list]] = {k: {"first": [], "turn": [], "first.t": [], "turn.t": []} for k in keys}
        for i, (body, turn) in enumerate(zip(fresh, turns, strict=True)):
            order = keys[i % len(keys) :] + keys[: i % len(keys)]
            for k in order:
                for what, b in (("first", body), ("turn", turn)):
                    s0 = snapshot(md[k].pid)
                    t = cl[k].post(b, 1, headers=hdr)[0]
                    res[k][what].append(t * 1e3)
                    res[k][what + ".t"].append(delta(s0, snapshot(md[k].pid)))
        for what in ("first", "turn"):
            print(
                f"{what}: wall ms, median of {a.runs} (machine shared; load {open('/proc/loadavg').read().split()[0]})"
            )
            for k in keys:
                print(
                    f"  {k:<7} {statistics.median(res[k][what]):7.1f}   (all: {' '.join(f'{x:.0f}' for x in res[k][what])})"
                )
                ts = res[k][what + ".t"]
                names = sorted({n for d in ts for n in d})
                for n in names:
                    run = statistics.median(d.get(n, (0, 0))[0] for d in ts)
                    wait = statistics.median(d.get(n, (0, 0))[1] for d in ts)
                    if run > 0.2 or wait > 0.2:
                        print(f"      {n:<16} cpu {run:7.1f} ms   run-queue wait {wait:6.1f} ms")
    finally:
        for m in md.values():
            m.stop()
        up.stop()


if __name__ == "__main__":
    main()
