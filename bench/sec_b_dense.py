"""(b) The engine's cost per event: a dense stream, every delta of which carries a
disguise (100 literals whose disguises are ordinary words), in the engine alone and
through mitmdump; then the three ~1 MB API streams in the engine, against the bare SSE
framer and a bare loop (the figures this bench printed as (a) before issue 8)."""

from __future__ import annotations

import report
import streams
from common import fmt_rate, median, profile
from context import Ctx
from proxies import Client, Mitmdump, Upstream, interleaved, mappings_dir, tmpdir, variant_args, variants

from disguiselib.apis.anthropic import messages as anthropic

N_DENSE = 3_000


def part_dense(c: Ctx) -> None:
    reps = 3 if c.quick else 7
    disg = [(d, o) for o, d in c.ordinary.items()]
    st = streams.build_dense_stream(c.seed + 21, N_DENSE, disg)
    nev = len(st["events"])
    R = c.R_ordinary  # noqa: N806
    print(f"  Dense stream: Anthropic, {st['n_text']:,} text deltas ({len(st['bytes']) / 1e3:.0f} kB), every one carrying "
          f"a disguise or a piece of one (40% split across two deltas); 100 literals with ordinary-word disguises "
          f"({', '.join(list(c.ordinary.values())[:3])}, ..., {list(c.ordinary.values())[-1]}) + default mappings")  # fmt: skip

    def new() -> anthropic.AnthropicStream:
        return anthropic.AnthropicStream(R.restorer({}))

    problems = streams.check(st, streams.run_loop(new(), st["events"]))
    med = streams.time_variants({"bare loop": streams.Bare, "SSE framer": streams.FramerPass, "disguise": new},
                                st["events"], reps)  # fmt: skip
    per = med["disguise"] / nev
    t, v = report.at_most(per * 1e6, 4.0, " µs", "{:.1f}")
    ok = report.check("b", "dense stream in the engine", problems)
    print(f"    engine, 1 event per feed: {per * 1e6:.1f} µs/event ({fmt_rate(1 / per)} events/s; SSE framer alone "
          f"{med['SSE framer'] / nev * 1e6:.1f}, bare loop {med['bare loop'] / nev * 1e6:.2f}); median of {reps}; output {ok} "
          f"{report.figure('b', 'Anthropic stream with a disguise in every delta: engine per event', f'{per * 1e6:.1f} µs', t, v)}")  # fmt: skip
    for p in problems[:3]:
        print(f"      {p}")
    if c.args.profile:
        profile(lambda: streams.run_loop(new(), st["events"]), "dense stream, 1 event per feed")

    # through mitmdump: the same stream, one event per upstream write
    runs = getattr(c.args, "stream_runs", 5)
    tmp = tmpdir()
    sfile = tmp / "dense.sse"
    sfile.write_bytes(st["bytes"])
    mdir = mappings_dir(tmp, "ordinary", c.ordinary)
    up = Upstream([f"/v1/messages={sfile}"], per_write=1)
    md: dict[str, Mitmdump] = {}
    cls: dict[str, Client] = {}
    try:
        for k in variants("plain", "addon"):
            md[k] = Mitmdump(up.port, variant_args(tmp, k, mdir), tmp, f"dense-{k}")
        cls = {k: Client(m.wait()) for k, m in md.items()}
        body = c.requests["anthropic"]
        outs = {k: cls[k].post(body, 1)[2] for k in cls}
        p_plain = [] if outs["plain"] == st["bytes"] else ["plain output differs from the provider's bytes"]
        p_addon = [p for k in md if k in ("addon", "before") for p in streams.check(st, outs[k])]
        res = interleaved(cls, {k: m.pid for k, m in md.items()}, runs, lambda cl: cl.post(body, 1))
        wall = {k: median(v["wall"]) for k, v in res.items()}
        cpu = {k: sum(v["cpu"]) / runs / nev for k, v in res.items()}
        ratio = wall["addon"] / wall["plain"]
        t, v = report.at_most(ratio, 1.3)
        ok_p = report.check("b", "dense stream through plain mitmdump", p_plain)
        ok_a = report.check("b", "dense stream through the addon", p_addon)
        print(f"    through mitmdump (1 event per upstream write, medians of {runs}): plain {wall['plain'] * 1e3:.1f} ms "
              f"({cpu['plain'] * 1e6:.1f} µs CPU/event, output {ok_p}), addon {wall['addon'] * 1e3:.1f} ms "
              f"({cpu['addon'] * 1e6:.1f} µs CPU/event, output {ok_a})")  # fmt: skip
        print(f"    addon/plain {ratio:.2f} {report.figure('b', 'the same stream through mitmdump: addon/plain wall', f'{ratio:.2f}', t, v)}")
        if "before" in wall:
            print(f"    before: addon/plain {wall['before'] / wall['plain']:.2f} ({cpu['before'] * 1e6:.1f} µs CPU/event)")
        for p in (p_plain + p_addon)[:3]:
            print(f"      {p}")
    finally:
        for cl in cls.values():
            cl.close()
        for m in md.values():
            m.stop()
        up.stop()


def part_apis(c: Ctx) -> None:
    reps = 3 if c.quick else 9
    print(f"  The ~1 MB API streams (feed() over every chunk + flush()), median of {reps}, variants interleaved")
    print(f"    {'rules':<24} {'chunking':<14} {'variant':<12} {'µs/event':>9} {'events/s':>9} {'MB/s':>7} {'×bare':>7} {'×framer':>8}")
    own: dict[str, float] = {}
    for api in ("anthropic", "chat", "responses"):
        print(f"  {streams.API_TITLES[api]}: {streams.describe(c.streams[api]['default'])}")
        for label, which in (("default mappings", "default"), ("1000 literals + default", "lit")):
            st = c.streams[api][which]
            data = st["bytes"]
            nev = len(st["events"])
            chunkings = {
                "1 event/chunk": st["events"],
                "4 KiB chunks": [data[i : i + 4096] for i in range(0, len(data), 4096)],
            }
            for cname, chunks in chunkings.items():
                # correctness first (not timed): what a client reassembles is the original
                s = c.new_stream(api, which)
                problems = streams.check(st, streams.run_loop(s, chunks))
                factories = {
                    "bare loop": streams.Bare,
                    "SSE framer": streams.FramerPass,
                    "disguise": lambda api=api, which=which: c.new_stream(api, which),
                }
                med = streams.time_variants(factories, chunks, reps)
                for name in factories:
                    t = med[name]
                    print(
                        f"    {label if cname == '1 event/chunk' and name == 'bare loop' else '':<24} "
                        f"{cname if name == 'bare loop' else '':<14} {name:<12} {t / nev * 1e6:>9.2f} {fmt_rate(nev / t):>9} "
                        f"{len(data) / t / 1e6:>7.1f} {t / med['bare loop']:>7.1f} {t / med['SSE framer']:>8.2f}"
                    )
                own_us = (med["disguise"] - med["bare loop"]) / nev * 1e6
                fr_us = (med["SSE framer"] - med["bare loop"]) / nev * 1e6
                own[f"{api}, {label}, {cname}"] = own_us
                counters = ""
                if hasattr(s, "events_held"):  # the engine's own counters, where it keeps them
                    counters = f"held {s.events_held}, changed {s.events_changed}/{s.events_in}; "
                ok = report.check("b", f"{api} ~1 MB in the engine, {which}, {cname}", problems)
                print(f"    {'':<24} {'':<14} -> addon cost {own_us:.2f} µs/event (framing {fr_us:.2f} + the rest "
                      f"{own_us - fr_us:.2f}); {counters}output {ok}")  # fmt: skip
                for p in problems[:5]:
                    print(f"      {p}")
    lo, hi = min(own.values()), max(own.values())
    print(f"    mitmdump's own streaming work is ~23-31 µs per event (docs/mitmproxy.md, Cost): the addon's "
          f"{lo:.1f}-{hi:.1f} µs/event is {lo / 27 * 100:.0f}-{hi / 27 * 100:.0f}% on top of ~27 µs")  # fmt: skip
    if c.args.profile:
        for api in ("anthropic", "chat", "responses"):
            st = c.streams[api]["lit"]
            profile(lambda api=api, st=st: streams.run_loop(c.new_stream(api, "lit"), st["events"]),
                    f"{streams.API_TITLES[api]}, 1000 literals, 1 event/chunk")  # fmt: skip


def run(c: Ctx) -> None:
    print("(b) The engine's cost per event")
    part_dense(c)
    part_apis(c)
