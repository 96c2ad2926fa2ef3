"""(d) Linear time: masking a Claude-Code-shaped body against json.loads of it, each
adversarial input of issue 8 at 0.5 MB and 1 MB (growth on doubling printed), and the
longest pause a concurrent stream sees while mitmdump masks a 1 MB body.

An adversarial measurement runs in a forked copy of this process and is stopped after
--budget seconds; when the 0.5 MB size does not finish, a ladder of sizes from 16 kB up
shows how the cost grows."""

from __future__ import annotations

import json
import threading
import time

import bodies
import report
import streams
from common import capped, cold, first_diff, median, profile, timeit
from context import Ctx
from material import prose
from proxies import Client, Mitmdump, Upstream, interleaved, mappings_dir, tmpdir, variant_args

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.base import masking
from disguiselib.wire import jsonspan

SIZES = (500_000, 1_000_000)
LADDER = (4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000)


# -- the Claude-Code-shaped body ---------------------------------------------------------------


def part_body(c: Ctx) -> None:
    reps = 3 if c.quick else 7
    for size in SIZES:
        raw, info = bodies.build_request(c.seed + 1, size, c.mat)
        s, doc = jsonspan.parse(raw)
        print(f"  Request masking: {len(raw) / 1e6:.2f} MB Claude-Code-shaped body ({info['system']} system blocks, "
              f"{info['tools']} tools, {info['messages']} messages, {info['tool_results']} tool_results, "
              f"{info['thinking']} thinking blocks); median of {reps}")  # fmt: skip
        t_loads = median(timeit(lambda raw=raw: json.loads(raw), reps))
        t_parse = median(timeit(lambda raw=raw: jsonspan.parse(raw), reps))
        t_walk = median(timeit(lambda s=s, doc=doc: jsonspan.transform(s, doc, anthropic.MESSAGES_REQUEST, _identity), reps))
        rows = [("json.loads(body)", t_loads, ""), ("parse (decode + json.loads)", t_parse, ""),
                ("span walk only (identity fn)", t_walk, "")]  # fmt: skip
        results = {}
        for label, R in (("mask, default patterns only", c.R_default), ("mask, 1000 literals + default", c.R_lit)):
            masked, sess = masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R)
            t = median(timeit(cold(R, lambda R=R, raw=raw: masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R)), reps))
            results[label] = (masked, sess, t)
            rows.append((label, t, f"{sess.masked} replaced, {len(sess.placeholders)} placeholders"))
        # the conversation's next turn: the same history and one exchange more, after the
        # rules met this body (Rules.found: its strings are not scanned again)
        nxt = next_turn(c, raw)
        R = c.R_lit  # noqa: N806

        def again(R=R, raw=raw, nxt=nxt) -> float:
            R.found.clear()
            masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R)
            t0 = time.perf_counter()
            masking.mask_body(nxt, anthropic.MESSAGES_REQUEST, R)
            return time.perf_counter() - t0

        t_next = median([again() for _ in range(reps)])
        rows.append(("the next turn, 1000 literals + def.", t_next, f"{len(nxt) / 1e6:.2f} MB: this body + one exchange "
                     "(masking.mask_body, the full path; pipeline cuts it from the turn before: bench/stages.py)"))
        for label, t, note in rows:
            print(f"    {label:<32} {t * 1e3:>8.1f} ms  {t / t_loads:>6.1f}× json.loads  {len(raw) / t / 1e6:>6.1f} MB/s  {note}")
        ratio = results["mask, 1000 literals + default"][2] / t_loads
        t, v = report.at_most(ratio, 4.0, "×", "{:.1f}")  # issue 29 (issue 16's was 3.0)
        print("    " + report.figure("d", f"masking a {size / 1e6:.1f} MB Claude-Code-shaped body, 1,000 literals + defaults: "
                                          "× json.loads", f"{ratio:.1f}×", t, v))
        # leak check: no original of the material survives masking (thinking blocks hold none)
        masked, _, _ = results["mask, 1000 literals + default"]
        mtext = masked.decode()
        used_lits = [o for o in c.mat.lit_list if o in s]
        secrets = [*c.mat.emails, *c.mat.aws, c.mat.ghp, c.mat.ant, c.mat.jwt]
        leaks = [o for o in used_lits + secrets if o in mtext] + ([c.mat.pem] if c.mat.pem.split("\n")[1] in mtext else [])
        json.loads(mtext)
        ok = report.check("d", f"Claude-Code body {size / 1e6:.1f} MB: no original survives", leaks)
        print(f"    check: masked body parses; {len(used_lits)} distinct literals and {sum(1 for x in secrets if x in s)} "
              f"secrets/e-mails present in the body, {len(leaks)} survive masking: {ok}")  # fmt: skip
    if c.args.profile:
        profile(lambda: masking.mask_body(raw, anthropic.MESSAGES_REQUEST, c.R_lit), "mask, 1000 literals + default")


def next_turn(c: Ctx, raw: bytes) -> bytes:
    """raw (a /v1/messages body) as the conversation's next turn sends it: its messages
    and one exchange more (a tool call and its result, ~60 kB), the rest the same."""
    doc = json.loads(raw)
    more, _ = bodies.build_request(c.seed + 99, 60_000, c.mat)
    doc["messages"].extend(json.loads(more)["messages"][-2:])
    # written as the turn before was (bodies.build_request): a client has one serializer,
    # so its history's bytes are the same turn to turn
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def part_request_path(c: Ctx) -> None:
    """The 1 MB body through mitmdump: from the first byte sent until the answer to it
    arrives, which the fake provider sends the moment it holds the whole body (one tiny
    event), addon against plain mitmdump, interleaved; 1,000 literals + defaults. Each
    run sends a body of its own (the addon remembers texts it met: Rules.found); then
    the conversation's next turn, timed after the turn before it went through."""
    runs = 3 if c.quick else 7
    tmp = tmpdir()
    body, _ = bodies.build_request(c.seed + 1, 1_000_000, c.mat)
    fresh = [bodies.build_request(c.seed + 101 + i, 1_000_000, c.mat)[0] for i in range(runs)]
    up = Upstream([], per_write=1)
    mdir = mappings_dir(tmp, "lit", c.literals)
    md: dict[str, Mitmdump] = {}
    cls: dict[str, Client] = {}
    try:
        for k in ("plain", "addon"):
            md[k] = Mitmdump(up.port, variant_args(tmp, k, mdir), tmp, f"reqpath-{k}")
        cls = {k: Client(m.wait()) for k, m in md.items()}
        md["addon"].worker_ready()  # (sent before, a body is masked in a thread beside the worker's build)
        for cl in cls.values():  # warm-up: the first masking builds what it needs once
            cl.post(body, 1, headers={"x-bench-stream": "tiny"})
        todo = {id(cl): list(fresh) for cl in cls.values()}  # each variant gets the same bodies, in order
        res = interleaved(cls, {k: m.pid for k, m in md.items()}, runs,
                          lambda cl: cl.post(todo[id(cl)].pop(), 1, headers={"x-bench-stream": "tiny"}))  # fmt: skip
        wall = {k: median(v["wall"]) for k, v in res.items()}
        ratio = wall["addon"] / wall["plain"]
        t, v = report.at_most(ratio, 2.0)  # issue 29 (issue 16's was 1.5)
        print(f"  The {len(body) / 1e6:.2f} MB body through mitmdump until the provider holds it (it answers at once), "
              f"median of {runs}, a new body each run: plain {wall['plain'] * 1e3:.1f} ms, addon {wall['addon'] * 1e3:.1f} ms; "
              f"addon/plain {ratio:.2f} {report.figure('d', 'the 1 MB body through mitmdump until the provider holds it: addon/plain', f'{ratio:.2f}', t, v)}")  # fmt: skip
        # the next turn: each run sends a conversation's turn, then its next turn (timed)
        turns = [(b, next_turn(c, b)) for b in fresh]
        nxt_wall: dict[str, list[float]] = {k: [] for k in cls}
        for before, after in turns:
            for k, cl in cls.items():
                cl.post(before, 1, headers={"x-bench-stream": "tiny"})
                nxt_wall[k].append(cl.post(after, 1, headers={"x-bench-stream": "tiny"})[0])
        nw = {k: median(v) for k, v in nxt_wall.items()}
        nr = nw["addon"] / nw["plain"]
        tn, vn = report.at_most(nr, 1.5)  # issue 29
        print(f"  The conversation's next turn through mitmdump (that body + one exchange, {len(turns[0][1]) / 1e6:.2f} MB, "
              f"sent after the body before it), median of {runs}: plain {nw['plain'] * 1e3:.1f} ms, addon "
              f"{nw['addon'] * 1e3:.1f} ms; addon/plain {nr:.2f} "
              f"{report.figure('d', 'the next turn (1 MB of history + one exchange) through mitmdump: addon/plain', f'{nr:.2f}', tn, vn)}")  # fmt: skip
    finally:
        for cl in cls.values():
            cl.close()
        for m in md.values():
            m.stop()
        up.stop()


def _identity(v: str, _rule: object) -> str:
    return v


# -- adversarial inputs ------------------------------------------------------------------------


class Case:
    """One adversarial input: make(n) builds the input of about n bytes (untimed), cost(x)
    does the work being measured, base(x) the json.loads it is compared with, check(x)
    the correctness problems (run once, on a small instance)."""

    def __init__(self, name, make, cost, base, check) -> None:
        self.name, self.make, self.cost, self.base, self.check = name, make, cost, base, check


def cases(c: Ctx) -> list[Case]:
    R = c.R_lit  # noqa: N806
    rule = anthropic.MESSAGES_REQUEST
    out = []

    def masked_ok(gone: list[str]):
        def check(x: bytes) -> list[str]:
            m = masking.mask_body(x, rule, R)[0].decode()
            json.loads(m)
            return [f"{g!r} survives masking" for g in gone if g in m]

        return check

    for name, gen, gone in (
        ("16 kB+ base64url runs, then one e-mail", bodies.base64url_then_email, ["ops-team@example.com"]),
        ("minified CSS (@media/@import/@font-face, data URIs)", bodies.minified_css, []),
        ("PEM BEGIN lines without END (a grep listing)", bodies.pem_grep_listing, []),
    ):
        out.append(Case(
            f"mask: {name}",
            lambda n, gen=gen: bodies.tool_result_body(gen(c.rng(31), n)),
            lambda x: masking.mask_body(x, rule, R),
            lambda x: json.loads(x),
            masked_ok(gone),
        ))  # fmt: skip

    # stream side: an unclosed strip-rule start, then prose deltas (default mappings: the strip rule)
    def strip_make(n: int) -> dict:
        return streams.build_unclosed_strip_stream(c.seed + 41, n)

    def strip_cost(st: dict) -> bytes:
        return streams.run_loop(c.new_stream("anthropic", "default"), st["events"])

    def strip_base(st: dict) -> None:
        for e in st["events"]:
            json.loads(e.split(b"data: ", 1)[1])

    def strip_check(st: dict) -> list[str]:
        whole = c.R_default.restorer(c.sess["anthropic"]["default"].placeholders).text(st["sent"][0])
        got = streams.channels(strip_cost(st)).get(0, "")  # no text event at all when everything is held
        return [] if got == whole else [f"streamed text != whole-text restore: {first_diff(got, whole)}"]

    out.append(Case("stream: `[[reply_to:` never closed, then prose deltas", strip_make, strip_cost, strip_base, strip_check))

    # whole JSON-text restore of LaTeX-heavy tool arguments
    ph = c.sess["anthropic"]["lit"].placeholders
    disg = list(ph.items()) + [(d, o) for o, d in list(c.literals.items())[:40]]

    def latex_cost(x: tuple[str, str]) -> str:
        return c.R_lit.restorer(ph).json_text(x[0])

    def latex_check(x: tuple[str, str]) -> list[str]:
        got = latex_cost(x)
        return [] if got == x[1] else ["restored JSON text differs from the original arguments"]

    out.append(Case("restore: LaTeX tool arguments as whole JSON text",
                    lambda n: streams.latex_tool_args(c.rng(51), n, disg), latex_cost,
                    lambda x: json.loads(x[0]), latex_check))  # fmt: skip
    return out


def part_adversarial(c: Ctx) -> dict[str, float | None]:
    budget = c.args.budget
    print(f"  Adversarial inputs (rules: 1000 literals + default; the stream case: default), each measured once at "
          f"0.5 and 1 MB in a forked process stopped after {budget:g} s; ×loads = the cost over json.loads of "
          "the same input (of every event, for the stream)")  # fmt: skip
    print(f"    {'input':<56} {'0.5 MB':>9} {'1 MB':>9} {'×2 growth':>9} {'×loads':>7}  check")
    at_1mb: dict[str, float | None] = {}
    for case in cases(c):
        problems = case.check(case.make(16_000))
        ok = report.check("d", case.name, problems)
        times: dict[int, float | None] = {}
        loads: dict[int, float] = {}
        for n in SIZES:
            x = case.make(n)
            loads[n] = median(timeit(lambda x=x, case=case: case.base(x), 3))
            times[n] = capped(lambda x=x, case=case: case.cost(x), budget)
            if times[n] is None:
                break
        t1 = times.get(SIZES[1])
        t0 = times.get(SIZES[0])
        growth = f"{t1 / t0:.2f}" if t0 and t1 else "—"
        ratio = t1 / loads[SIZES[1]] if t1 else float("inf")
        t, v = report.at_most(ratio, 10.0, "×", "{:.1f}")
        if not t1:
            v = f"MISS (over {budget:g} s at {'0.5' if t0 is None else '1'} MB)"
        report.figure("d", f"{case.name}, 1 MB: × json.loads", f"{ratio:.1f}×" if t1 else f"> {budget:g} s", t, v)
        if t0 and t1:
            report.figure("d", f"{case.name}: cost growth from 0.5 to 1 MB", growth, "≤ ~2 (linear)",
                          "PASS" if t1 / t0 <= 2.5 else "MISS")  # fmt: skip
        print(f"    {case.name:<56} {report.secs(t0, budget):>9} {report.secs(t1, budget) if t0 else '—':>9} {growth:>9} "
              f"{(f'{ratio:.1f}' if t1 else '—'):>7}  {ok}")  # fmt: skip
        for p in problems[:3]:
            print(f"      {p}")
        at_1mb[case.name] = t1
        if t0 is None:
            ladder(case, budget)
    return at_1mb


def ladder(case: Case, budget: float) -> None:
    """Smaller sizes, doubling, until one takes more than a quarter of the budget: the
    growth per doubling (about 2 linear, 4 quadratic)."""
    steps = []
    prev = None
    for n in LADDER:
        x = case.make(n)
        t = capped(lambda x=x: case.cost(x), budget)
        steps.append(f"{n // 1000} kB {report.secs(t, budget)}" + (f" (×{t / prev:.1f})" if t and prev else ""))
        if t is None or t > budget / 4:
            break
        prev = t
    print(f"      smaller: {', '.join(steps)}")


# -- a concurrent stream while a body is masked ----------------------------------------------


def part_gap(c: Ctx, at_1mb: dict[str, float | None]) -> None:
    tmp = tmpdir()
    rng = c.rng(61)
    n_events, delay_ms = 600, 5
    text = prose(rng, 12_000, brackets=False)
    paced = streams.anthropic_text_stream(rng, streams.pieces(text, streams.cut_points(rng, text, 5, 40))[:n_events])
    sfile = tmp / "paced.sse"
    sfile.write_bytes(b"".join(paced))
    big, _ = bodies.build_request(c.seed + 1, 1_000_000, c.mat)
    loads = [("1 MB Claude-Code-shaped body", big)]
    for case in cases(c)[:3]:
        if at_1mb.get(case.name) is not None:
            loads.append((case.name.removeprefix("mask: ") + ", 1 MB", case.make(1_000_000)))
        else:
            print(f"    ({case.name.removeprefix('mask: ')}: not sent through mitmdump, masking 1 MB took over the budget "
                  "in-process, so the pause would be at least that)")  # fmt: skip
    up = Upstream([f"paced={sfile}"], per_write=1)
    mdir = mappings_dir(tmp, "lit", c.literals)
    md: dict[str, Mitmdump] = {}
    try:
        for k in ("plain", "addon"):
            md[k] = Mitmdump(up.port, variant_args(tmp, k, mdir), tmp, f"gap-{k}")
        ports = {k: m.wait() for k, m in md.items()}
        md["addon"].worker_ready()  # the pause of the worker's path, not of a thread's beside the worker's build
        print(f"  Longest pause of a concurrent stream ({len(paced)} events, one per upstream write, {delay_ms} ms apart) "
              "while the same mitmdump masks a body sent 0.3 s into it; default mappings + 1000 literals")  # fmt: skip
        print(f"    {'body':<58} {'plain: gap':>11} {'addon: gap':>11} {'addon: body':>12}")
        for label, body in loads:
            row = {}
            for k in ("plain", "addon"):
                row[k] = gap_once(ports[k], body)
            ga, gp, tb = row["addon"]["gap"], row["plain"]["gap"], row["addon"]["body"]
            print(f"    {label:<58} {gp * 1e3:>9.0f}ms {ga * 1e3:>9.0f}ms {tb * 1e3:>10.0f}ms")
            report.figure("d", f"longest pause of a concurrent stream while masking the {label}", f"{ga * 1e3:.0f} ms",
                          f"small (plain: {gp * 1e3:.0f} ms)", "")  # fmt: skip
    finally:
        for m in md.values():
            m.stop()
        up.stop()


def gap_once(port: int, body: bytes) -> dict[str, float]:
    """Start the paced stream, send body on a second connection 0.3 s later; the longest
    time between two reads of the stream, and how long the body's request took."""
    gaps: list[float] = []
    got: dict[str, float] = {}
    sc = Client(port)
    bc = Client(port)

    def stream() -> None:
        sc.post(b'{"stream": true}', 1, headers={"x-bench-stream": "paced", "x-bench-delay-ms": "5"}, gaps=gaps)

    th = threading.Thread(target=stream)
    th.start()
    time.sleep(0.3)
    t0 = time.perf_counter()
    try:
        bc.post(body, 1, headers={"x-bench-stream": "tiny"})
    except RuntimeError:
        pass  # a refused body (400) still shows the pause
    got["body"] = time.perf_counter() - t0
    th.join()
    sc.close()
    bc.close()
    got["gap"] = max(gaps[1:]) if len(gaps) > 1 else float("nan")
    return got


def run(c: Ctx) -> None:
    print("(d) Request bodies and linear time")
    part_body(c)
    part_request_path(c)
    at_1mb = part_adversarial(c)
    part_gap(c, at_1mb)
