"""(e) Memory and load: mitmdump's RSS as one stream grows longer (plain and with the
addon), and N concurrent mixed streams (200 deltas each, 5 ms apart) through one
mitmdump: all correct?, peak RSS, ratio to plain (and to plain given the addon's
accept queue: plain's queue of 100 spreads the burst's connections over seconds, so
fewer streams are under way at once), and what the kernel saw at the listener (listen
overflows, the accept queue)."""

from __future__ import annotations

import json
import statistics
import time

import load
import proxies
import report
import streams
from common import BENCH, children, fmt_bytes, proc_cpu, proc_status, reset_peak_rss, rss_by_mapping
from context import PATHS, Ctx
from proxies import Client, Mitmdump, Upstream, tmpdir, variant_args

# text sizes that give about 200 deltas per API (Anthropic 5-40 chars, OpenAI 1-10)
MIX = {"anthropic": 4_400, "chat": 1_100, "responses": 1_100}
BUILD = {"anthropic": streams.build_stream, "chat": streams.build_chat_stream, "responses": streams.build_responses_stream}


def mixed(c: Ctx) -> dict[str, dict]:
    """Three ~200-delta streams (one per API) restoring that API's session, disguises split."""
    out = {}
    for api, chars in MIX.items():
        ph = list(c.sess[api]["default"].placeholders.items())
        out[api] = BUILD[api](c.seed + 71, chars, ph, 6, tool=False)
    return out


def load_test(c: Ctx, n: int, tmp, up: Upstream, mix: dict[str, dict], variant: str, threads: bool = False) -> dict:
    lagf = tmp / f"looplag-{variant}-{time.monotonic_ns()}.json"
    extra, env = ["-s", str(BENCH / "looplag.py")], {"BENCH_LOOPLAG_FILE": str(lagf), "BENCH_LOOPPROF": "1"}
    memf = tmp / f"tracemem-{variant}-{time.monotonic_ns()}.txt"
    if c.args.tracemem:  # where the burst's memory goes, by allocation site (RSS and timings are then tracemalloc's)
        extra += ["-s", str(BENCH / "tracemem.py")]
        env |= {"BENCH_TRACEMEM_FILE": str(memf), "BENCH_TRACEMEM_AT": str(max(1, n * 4 // 5))}
    flowf = tmp / f"flowmem-{variant}-{time.monotonic_ns()}.json"
    if c.args.flowmem:  # what the flows under way hold at the peak, by part and type (costs nothing until then)
        extra += ["-s", str(BENCH / "flowmem.py")]
        env |= {"BENCH_FLOWMEM_FILE": str(flowf), "BENCH_FLOWMEM_AT": str(c.args.flowmem)}
    censusf = tmp / f"census-{variant}-{time.monotonic_ns()}.json"
    if c.args.census:  # what the objects grew by from before the burst to its peak, and who holds the big bytes
        extra += ["-s", str(BENCH / "census.py")]
        env |= {"BENCH_CENSUS_FILE": str(censusf), "BENCH_CENSUS_AT": str(c.args.census)}
    md = Mitmdump(up.port, variant_args(tmp, variant) + extra, tmp, f"load-{variant}-{time.monotonic_ns()}", env=env)
    try:
        port = md.wait()
        keys = list(mix)
        # one warm-up request per API (lazy imports, the first upstream connection)
        cl = Client(port)
        for k in keys:
            cl.post(c.requests[k], 8, PATHS[k], headers={"x-bench-stream": k})
        cl.post(c.requests[keys[0]], 8, PATHS[keys[0]], headers={"x-bench-stream": keys[0], "x-bench-looplag-reset": "1"})
        cl.close()
        base_rss = proc_status(md.pid, "VmRSS")
        idle_split = rss_by_mapping(md.pid) if c.args.census else {}
        base_tree = base_rss + sum(proc_status(p, "VmRSS") for p in children(md.pid))
        jobs = [load.Job(c.requests[k], PATHS[k], {"x-bench-stream": k, "x-bench-delay-ms": "5"}, k)
                for k in (keys[i % len(keys)] for i in range(n))]  # fmt: skip

        def check(key: str, out: bytes) -> list[str]:
            if variant.startswith("plain"):
                return [] if out == mix[key]["bytes"] else ["bytes differ from the provider's"]
            return streams.check(mix[key], out)

        before = load.netstat("ListenOverflows", "ListenDrops")
        cpu0 = proc_cpu(md.pid)
        with load.Sampler(md.pid, [port, up.port]) as smp:
            res = (load.run_streams_threaded if threads else load.run_streams)(port, jobs, check)
        cpu = proc_cpu(md.pid) - cpu0
        after = load.netstat("ListenOverflows", "ListenDrops")
        time.sleep(0.7)  # looplag.py writes twice a second
        try:
            lag = json.loads(lagf.read_text())
        except (OSError, ValueError):
            lag = {}
        upstream_closed = sum(1 for ln in md.log if "server closed connection" in ln)
        if c.args.tracemem:
            print(f"    tracemalloc, {variant}: " + ("\n      ".join(memf.read_text().splitlines()[:c.args.tracemem])
                                                     if memf.exists() else "no snapshot (too few streams under way at once)"))  # fmt: skip
        out = {"res": res, "rss_base": base_rss, "rss_peak": smp.rss_max, "tree_base": base_tree,
                "tree_peak": smp.tree_max, "pss_tree_peak": smp.pss_tree_max, "queue_max": smp.queue_max[port],
                "backlog": load.listen_backlog(port), "up_queue_max": smp.queue_max[up.port],
                "up_backlog": load.listen_backlog(up.port), "overflows": after["ListenOverflows"] - before["ListenOverflows"],
                "drops": after["ListenDrops"] - before["ListenDrops"], "cpu": cpu, "lag": lag,
                "upstream_closed": upstream_closed}  # fmt: skip
        if c.args.flowmem:
            md.stop()  # (its done hook adds the most flows under way it saw)
            print_flowmem(variant, flowf)
        if c.args.census:
            print_census(variant, censusf)
            top = sorted(idle_split.items(), key=lambda kv: -kv[1])[:12]
            print(f"    idle RSS by mapping, {variant}: " + ", ".join(f"{k} {fmt_bytes(v)}" for k, v in top))
        return out
    finally:
        md.stop()


def print_flowmem(variant: str, f) -> None:  # noqa: ANN001 - a Path
    """bench/flowmem.py's figures: each part's bytes a flow under way, its largest types."""
    try:
        got = json.loads(f.read_text())
    except (OSError, ValueError):
        got = {}
    if "parts" not in got:
        print(f"    flows under way, {variant}: never {got.get('at', '?')} at once (at most {got.get('most_under_way', '?')}): "
              "nothing measured")  # fmt: skip
        return
    parts = got["parts"]
    total = sum(p["per_flow"] for p in parts.values())
    print(f"    what {got['flows']} flows under way hold, {variant} (at most {got.get('most_under_way', '?')} under way; "
          f"walked in {got['walk_s'] * 1e3:.0f} ms): {fmt_bytes(total)} a flow")  # fmt: skip
    for name, p in sorted(parts.items(), key=lambda kv: -kv[1]["per_flow"]):
        types = ", ".join(f"{t} {fmt_bytes(b)}" for t, b in list(p["types"].items())[:5])
        print(f"      {name:<9} {fmt_bytes(p['per_flow']):>10} a flow ({types})")
    b = got.get("backlog")
    if b:  # not reached from a flow: mitmproxy's layers hold them while they wait for a hook
        n = got["flows"]
        print(f"      backlog   {fmt_bytes(b['data'] / n):>10} a flow: {b['events']} events queued in {b['layers']} layers "
              f"paused on a hook ({b['events'] / n:.1f} a flow under way; their data {fmt_bytes(b['data'])})")  # fmt: skip


def print_census(variant: str, f) -> None:  # noqa: ANN001 - a Path
    """bench/census.py's figures: the types that grew most, the holders of the big bytes."""
    try:
        got = json.loads(f.read_text())
    except (OSError, ValueError):
        print(f"    census, {variant}: nothing measured (the burst ended before it)")
        return
    print(f"    census, {variant}, {got['at_s']:g} s into the burst (took {got['census_s'] * 1e3:.0f} ms): Python objects "
          f"grew by {fmt_bytes(got['grew'])} since before it; the types that grew most:")  # fmt: skip
    print("      " + ", ".join(f"{k} {fmt_bytes(b)} ({c:+d})" for k, c, b in got["types"][:10]))
    print("      bytes of 512 B or more, by holder: " + ", ".join(f"{k} {fmt_bytes(b)} ({c})" for k, c, b in got["big"][:8]))


def print_load(variant: str, r: dict, n: int) -> None:
    res: load.Outcome = r["res"]
    errs = ", ".join(f"{v} {k}" for k, v in sorted(res.errors.items())) or "none"
    conn = sorted(res.connect_s)
    conn_s = f"connect median {statistics.median(conn) * 1e3:.0f} ms, max {conn[-1] * 1e3:.0f} ms" if conn else "no connection"
    lag = r["lag"]
    print(f"    {variant:<15} {res.ok:>3}/{n} correct, {res.wrong} wrong, errors: {errs}; {res.wall:.1f} s, proxy CPU "
          f"{r['cpu']:.1f} s; peak RSS {fmt_bytes(r['rss_peak'])} (idle {fmt_bytes(r['rss_base'])}; with its worker "
          f"process {fmt_bytes(r['tree_peak'])}, idle {fmt_bytes(r['tree_base'])}; in PSS, shared pages once: "
          f"{fmt_bytes(r['pss_tree_peak'])}); {conn_s}")  # fmt: skip
    print(f"           accept queue max {r['queue_max']} of backlog {r['backlog']} (provider's: {r['up_queue_max']} of "
          f"{r['up_backlog']}); ListenOverflows +{r['overflows']}, ListenDrops +{r['drops']} (system-wide); "
          f"loop lag p50 {lag.get('lag_p50', 0) * 1e3:.0f} ms, max {lag.get('lag_max', 0):.2f} s; connections that reached "
          f"mitmproxy {lag.get('connected', 1) - 1} (accepted over {lag.get('accept_span', 0):.1f} s); "
          f"'server closed connection' {r['upstream_closed']}; finished flows still alive (held by their open "
          f"connections, with what the addon keeps on them) {lag.get('finished_alive_max', 0)} at most")  # fmt: skip
    samples = lag.get("samples") or {}
    total = sum(samples.values())
    if total:
        busy = {k: v for k, v in samples.items() if k != "waiting for I/O"}
        shares = ", ".join(f"{k} {v / total * 100:.0f}%" for k, v in sorted(busy.items(), key=lambda kv: -kv[1]) if v / total >= 0.01)
        print(f"           the loop thread, sampled every ms: busy {sum(busy.values()) / total * 100:.0f}% ({shares}); "
              f"longest loop stall (one callback) {lag.get('stall_cpu', 0) * 1e3:.1f} ms CPU "
              f"({lag.get('stall', 0) * 1e3:.1f} ms wall): {lag.get('stall_what', '')[:100]}")  # fmt: skip
    for p in res.problems[:2]:
        print(f"      {p}")


def part_load(c: Ctx, n: int) -> None:
    tmp = tmpdir()
    mix = mixed(c)
    routes = []
    for k, st in mix.items():
        f = tmp / f"mix-{k}.sse"
        f.write_bytes(st["bytes"])
        routes.append(f"{k}={f}")
    threaded = c.args.provider == "threaded"
    up = Upstream(routes, per_write=1, threaded=threaded)
    try:
        desc = ", ".join(f"{k} {st['n_text']} deltas" for k, st in mix.items())
        print(f"  {n} concurrent mixed streams ({desc}; one event per upstream write, 5 ms apart) through one mitmdump, "
              f"all connections opened at once from {'one thread each' if c.args.client == 'threads' else 'one asyncio loop'}; "
              f"default mappings; provider: {'ThreadingHTTPServer, listen backlog 5' if threaded else 'asyncio, listen backlog 4096'}")  # fmt: skip
        runs: dict[str, list[dict]] = {}
        reps = max(1, c.args.burst_runs)
        for rep in range(reps):  # the variants interleaved: the machine's load drifts alike for each
            if reps > 1:
                print(f"   run {rep + 1} of {reps}:")
            # --before TREE: that tree's addon too, with and without capture (before and after in one run)
            for variant in ("plain", "plain-queue", "addon", "addon-nocapture",
                            *(("before", "before-nocapture") if proxies.BEFORE is not None else ())):  # fmt: skip
                r = load_test(c, n, tmp, up, mix, variant, threads=c.args.client == "threads")
                runs.setdefault(variant, []).append(r)
                print_load(variant, r, n)
        # each variant's run of median peak RSS (the one run when there is one)
        out = {k: sorted(v, key=lambda r: r["rss_peak"])[len(v) // 2] for k, v in runs.items()}
        if reps > 1:
            print("    peak RSS per run: " + "; ".join(f"{k} " + ", ".join(fmt_bytes(r["rss_peak"]) for r in v)
                                                   for k, v in runs.items()) + " (the figures below: each one's median)")  # fmt: skip
        ok = out["addon"]["res"].ok
        t, v = report.at_most(n - ok, 0, "", "{:.0f}")
        report.figure("e", f"a burst of {n} streams through the addon: streams complete and correct", f"{ok}/{n}", f"{n}/{n}", v)
        report.figure("e", "the same burst through plain mitmdump: streams complete and correct", f"{out['plain']['res'].ok}/{n}")
        ratio = out["addon"]["rss_peak"] / max(1, out["plain"]["rss_peak"])
        t, v = report.at_most(ratio, 1.3)  # issue 29, with capture (issue 16's was 1.2)
        report.figure("e", f"the burst of {n}: peak RSS, addon/plain (plain's accept queue of {out['plain']['backlog']}; "
                           f"{fmt_bytes(out['addon']['rss_peak'])} against {fmt_bytes(out['plain']['rss_peak'])})",
                      f"{ratio:.2f}", t, v)  # fmt: skip
        fair = out["addon"]["rss_peak"] / max(1, out["plain-queue"]["rss_peak"])
        t, v = report.at_most(fair, 1.3)
        report.figure("e", f"the burst of {n}: peak RSS, addon/plain given the addon's accept queue of "
                           f"{out['plain-queue']['backlog']} ({fmt_bytes(out['addon']['rss_peak'])} against "
                           f"{fmt_bytes(out['plain-queue']['rss_peak'])})", f"{fair:.2f}", t, v)  # fmt: skip
        nc = out["addon-nocapture"]["rss_peak"] / max(1, out["plain"]["rss_peak"])
        nc_fair = out["addon-nocapture"]["rss_peak"] / max(1, out["plain-queue"]["rss_peak"])
        t, v = report.at_most(nc, 1.1)  # issue 29, without capture
        report.figure("e", f"the burst of {n}: peak RSS, addon without inspection capture/plain", f"{nc:.2f}", t, v)
        t, v = report.at_most(nc_fair, 1.1)
        report.figure("e", f"the burst of {n}: peak RSS, addon without inspection capture/plain given the addon's "
                           f"accept queue", f"{nc_fair:.2f}", t, v)  # fmt: skip
        # what users pay: mitmdump and the masking worker process it starts (plain has none)
        tree = {"addon": out["addon"]["tree_peak"], "addon-nocapture": out["addon-nocapture"]["tree_peak"]}
        for k, label in (("addon", "the addon"), ("addon-nocapture", "the addon without inspection capture")):
            report.figure("e", f"the burst of {n}: peak RSS with the masking worker process, {label}/plain given the "
                               f"addon's accept queue ({fmt_bytes(tree[k])} against {fmt_bytes(out['plain-queue']['tree_peak'])})",
                          f"{tree[k] / max(1, out['plain-queue']['tree_peak']):.2f}",
                          f"(/plain {tree[k] / max(1, out['plain']['tree_peak']):.2f})", "")  # fmt: skip
            pss = out[k]["pss_tree_peak"] / max(1, out["plain-queue"]["pss_tree_peak"])
            report.figure("e", f"the burst of {n}: peak PSS (shared pages counted once) with the masking worker process, "
                               f"{label}/plain given the addon's accept queue", f"{pss:.2f}",
                          f"(/plain {out[k]['pss_tree_peak'] / max(1, out['plain']['pss_tree_peak']):.2f})", "")  # fmt: skip
        per = {k: (out[k]["rss_peak"] - out[k]["rss_base"]) / n for k in out}
        report.figure("e", f"the burst of {n}: RSS per stream (peak over idle / {n}), addon",
                      f"{fmt_bytes(per['addon'])}", f"(plain {fmt_bytes(per['plain'])}; given the addon's accept queue "
                      f"{fmt_bytes(per['plain-queue'])})", "")  # fmt: skip
        lag = {k: out[k]["lag"] for k in out}
        report.figure("e", f"the burst of {n}: longest loop stall (one callback, CPU), addon",
                      f"{lag['addon'].get('stall_cpu', 0) * 1e3:.1f} ms",
                      f"(plain {lag['plain'].get('stall_cpu', 0) * 1e3:.1f} ms)", "")  # fmt: skip
        report.figure("e", f"the burst of {n}: listen queue of mitmproxy's listener, addon",
                      str(out["addon"]["backlog"]), f"(plain {out['plain']['backlog']})", "")  # fmt: skip
        print(f"    RSS per concurrent stream (peak over idle / {n}): plain {fmt_bytes(per['plain'])}, plain with the "
              f"addon's accept queue {fmt_bytes(per['plain-queue'])}, addon {fmt_bytes(per['addon'])}")  # fmt: skip
        for k in ("addon", "addon-nocapture", "before", "before-nocapture"):
            if k in out:
                print(f"    {k:<16} peak RSS {fmt_bytes(out[k]['rss_peak'])}: /plain {out[k]['rss_peak'] / max(1, out['plain']['rss_peak']):.2f}, "
                      f"/plain given the addon's accept queue {out[k]['rss_peak'] / max(1, out['plain-queue']['rss_peak']):.2f}; "
                      f"idle {fmt_bytes(out[k]['rss_base'])} (plain {fmt_bytes(out['plain']['rss_base'])})")  # fmt: skip
        print(f"    peak RSS addon/plain {ratio:.2f}, addon/plain with the addon's accept queue {fair:.2f}; "
              f"wall addon/plain {out['addon']['res'].wall / out['plain']['res'].wall:.2f}; proxy CPU addon/plain {out['addon']['cpu'] / max(0.01, out['plain']['cpu']):.2f}")  # fmt: skip
    finally:
        up.stop()


def part_memory(c: Ctx) -> None:
    """One stream at a time, longer and longer: how much mitmdump's RSS rises above its
    idle level while it passes the stream (VmHWM after a reset; VmRSS peaks sampled
    where the reset is not permitted)."""
    tmp = tmpdir()
    lengths = (1_000, 4_000, 16_000) if c.quick else (1_000, 4_000, 16_000, 64_000)
    ph = list(c.sess["anthropic"]["default"].placeholders.items())
    routes, sts = [], {}
    for n in lengths:
        st = streams.build_stream(c.seed + 81, n * 22, ph, max(4, n // 200), tool=False)
        f = tmp / f"len-{n}.sse"
        f.write_bytes(st["bytes"])
        routes.append(f"len{n}={f}")
        sts[n] = st
    up = Upstream(routes, per_write=8)
    procs: dict[str, Mitmdump] = {}
    try:
        print("  RSS of mitmdump above idle while it passes one Anthropic stream (default mappings, 8 events per upstream "
              "write), by stream length:")  # fmt: skip
        print(f"    {'deltas':>8} {'MB':>6} {'plain':>10} {'addon':>10} {'no capture':>11}  output")
        rows: dict[str, list[int]] = {"plain": [], "addon": [], "addon-nocapture": []}
        for variant in ("plain", "addon", "addon-nocapture"):
            procs[variant] = Mitmdump(up.port, variant_args(tmp, variant), tmp, f"mem-{variant}")
        ports = {k: p.wait() for k, p in procs.items()}
        body = c.requests["anthropic"]
        for k in procs:  # warm-up: lazy imports, the first upstream connection
            cl = Client(ports[k])
            cl.post(body, 8, headers={"x-bench-stream": f"len{lengths[0]}"})
            cl.close()
        for n in lengths:
            oks = []
            for variant, p in procs.items():
                idle = proc_status(p.pid, "VmRSS")
                reset = reset_peak_rss(p.pid)
                cl = Client(ports[variant])
                with load.Sampler(p.pid, [ports[variant]], every=0.005) as smp:
                    out = cl.post(body, 8, headers={"x-bench-stream": f"len{n}"})[2]
                cl.close()
                peak = max(smp.rss_max, proc_status(p.pid, "VmHWM") if reset else 0)
                rows[variant].append(peak - idle)
                oks.append(out == sts[n]["bytes"] if variant == "plain" else not streams.check(sts[n], out))
            ok = report.check("e", f"{n}-delta stream through plain and the addon", [] if all(oks) else ["mismatch"])
            print(f"    {n:>8,} {len(sts[n]['bytes']) / 1e6:>6.1f} {fmt_bytes(rows['plain'][-1]):>10} "
                  f"{fmt_bytes(rows['addon'][-1]):>10} {fmt_bytes(rows['addon-nocapture'][-1]):>11}  {ok}")  # fmt: skip
        growth = rows["addon-nocapture"][-1] - rows["addon-nocapture"][0]
        captured = rows["addon"][-1] - rows["addon"][0]
        report.figure("e", f"one stream growing from {lengths[0]:,} to {lengths[-1]:,} deltas: the addon's RSS rise "
                           "(inspection capture off)", fmt_bytes(growth), "flat", "PASS" if growth < 8 << 20 else "MISS")  # fmt: skip
        report.figure("e", "the same with both sides kept for inspection (disguise_capture_limit, 8 MiB a side)",
                      fmt_bytes(captured))  # fmt: skip
        print(f"    the addon's rise grows by {fmt_bytes(growth)} from {lengths[0]:,} to {lengths[-1]:,} deltas with "
              f"inspection capture off, {fmt_bytes(captured)} with both sides kept (bounded by disguise_capture_limit; "
              f"plain: {fmt_bytes(rows['plain'][-1] - rows['plain'][0])})")  # fmt: skip
    finally:
        for p in procs.values():
            p.stop()
        up.stop()


def run(c: Ctx) -> None:
    print("(e) Memory and load")
    part_memory(c)
    part_load(c, c.args.streams)
