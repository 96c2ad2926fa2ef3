"""(c) Hold-back on prose with no disguise in it: how many events are delayed (their
text entirely held back), how many characters wait, and what an event costs, with the
default mappings and with 1,000 literals; as Anthropic text deltas (5-40 chars) and as
OpenAI token deltas (1-10 chars) of the same prose."""

from __future__ import annotations

import report
import streams
from context import Ctx

from disguiselib.base.holdback import Window


def holdback(c: Ctx, api: str, which: str, st: dict, reps: int) -> dict:
    """Feed st one event at a time: events delayed (nothing emitted for an event that
    carried text), events whose output differs from their input, the engine's own count
    of events held in part (where it keeps one), characters held (a TEXT window fed the
    same deltas: the sum over deltas of what waits after each, and the most at once),
    µs/event, and whether the client's text is intact."""
    s = c.new_stream(api, which)
    delayed = differ = unjust = 0
    outs = []
    r = c.rules_for(which).restorer(c.sess[api][which].placeholders)
    for e in st["events"]:
        o = s.feed(e)
        outs.append(o)
        if o != e:
            differ += 1
            if not o:
                delayed += 1
                # held back rightly only if every window's held text could still grow
                # into a disguise, a placeholder or a strip match (it all lies past the
                # hold point the restorer itself computes)
                held = [w for w in s.windows.values() if w is not None and w.held]
                unjust += not held or any(r.run(w.held, w.mode, False, 0)[1] != 0 for w in held)
    outs.append(s.flush())
    problems = streams.check(st, b"".join(outs))
    w = Window(r, Window.TEXT)
    held_sum = held_max = 0
    for d in streams.text_deltas(st):
        w.feed(d)
        held_sum += len(w.held)
        held_max = max(held_max, len(w.held))
    med = streams.time_variants({"disguise": lambda: c.new_stream(api, which)}, st["events"], reps)
    return {"delayed": delayed, "unjust": unjust, "differ": differ, "held": getattr(s, "events_held", None),
            "n": len(st["events"]),
            "held_sum": held_sum, "held_max": held_max, "us": med["disguise"] / len(st["events"]) * 1e6,
            "problems": problems}  # fmt: skip


def line(label: str, r: dict) -> str:
    held = f"held in part {r['held']}, " if r["held"] is not None else ""
    return (f"    {label:<27} delayed {r['delayed']:>4} ({r['delayed'] / r['n'] * 100:4.1f}%; {r['unjust']} that cannot begin a "
            f"disguise), {held}differ {r['differ']:>4}; "
            f"chars held {r['held_sum']:,} in all, ≤ {r['held_max']} at once; {r['us']:.2f} µs/event; "
            f"text {'intact' if not r['problems'] else 'MISMATCH'}")  # fmt: skip


def run(c: Ctx) -> None:
    reps = 3 if c.quick else 5
    seed = c.seed + 7
    st = streams.build_stream(seed, 60_000, [], 0, brackets=False, tool=False, strip=False)
    plain = "".join(st["sent"].values())
    assert "[" not in plain
    print(f"(c) Hold-back on prose with no disguise in it: {len(plain):,} chars of markdown with code spans, no '['; "
          f"1 event per feed; median of {reps} for µs/event")  # fmt: skip
    print(f"  Anthropic, {st['n_text']:,} text deltas of 5-40 chars ({len(st['events']):,} events):")
    r = holdback(c, "anthropic", "default", st, reps)
    report.check("c", "prose, anthropic, default", r["problems"])
    t, v = report.at_most(r["delayed"] + r["differ"], 0, "", "{:.0f}")
    print(line("default mappings:", r) + " " + report.figure("c", "Anthropic prose, default mappings: events held back or changed",
                                                              f"{r['delayed'] + r['differ']}", t, v))  # fmt: skip
    r = holdback(c, "anthropic", "lit", st, reps)
    report.check("c", "prose, anthropic, 1000 literals", r["problems"])
    print(line("1000 literals + default:", r))
    targets(r, "anthropic")
    st2 = streams.build_stream(seed, 60_000, [], 0, brackets=True, tool=False, strip=False)
    nb = "".join(st2["sent"].values()).count("[")
    r = holdback(c, "anthropic", "default", st2, reps)
    report.check("c", "prose with '[', anthropic, default", r["problems"])
    print(line(f"default, prose with {nb} '[':", r) + "  (informational: a tail '[' may begin a placeholder)")
    for api, build in (("chat", streams.build_chat_stream), ("responses", streams.build_responses_stream)):
        sto = build(seed, 60_000, [], 0, brackets=False, tool=False, strip=False)
        assert sto["sent"][0] == plain
        print(f"  {streams.API_TITLES[api]}, the same prose as {sto['n_text']:,} deltas of 1-10 chars ({len(sto['events']):,} events):")
        r = holdback(c, api, "default", sto, reps)
        report.check("c", f"prose, {api}, default", r["problems"])
        t, v = report.at_most(r["delayed"] + r["differ"], 0, "", "{:.0f}")
        title = streams.API_TITLES[api].split(" (")[0]
        print(line("default mappings:", r) + " " + report.figure("c", f"{title} prose, default mappings: events held back or changed",
                                                                  f"{r['delayed'] + r['differ']}", t, v))  # fmt: skip
        r = holdback(c, api, "lit", sto, reps)
        report.check("c", f"prose, {api}, 1000 literals", r["problems"])
        print(line("1000 literals + default:", r))
        targets(r, api)


def targets(r: dict, api: str) -> None:
    title = streams.API_TITLES[api].split(" (")[0]
    t1, v1 = report.at_most(r["unjust"], 0, "", "{:.0f}")
    t2, v2 = report.at_most(r["us"], 2.0, " µs", "{:.1f}")
    f1 = report.figure("c", f"{title} prose, 1,000 literals: events delayed that cannot begin a disguise", str(r["unjust"]), t1, v1)
    report.figure("c", f"{title} prose, 1,000 literals: events delayed (their text all held back, rightly)", str(r["delayed"]))
    f2 = report.figure("c", f"{title} prose, 1,000 literals: engine per event", f"{r['us']:.1f} µs", t2, v2)
    report.figure("c", f"{title} prose, 1,000 literals: characters held back (sum, most at once)", f"{r['held_sum']:,}, {r['held_max']}")
    print(f"      {f1} {f2}")
