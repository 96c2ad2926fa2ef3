"""(standalone) Where one request's masking time goes, stage by stage, in this process
(issues 27 and 29): `pipeline.mask_request` on (1) a tool input of N short unique array
elements (and N six-character hex ids, a twentieth of them a phone number's candidates)
and (2) the 1 MB Claude-Code-shaped body of bench/offload.py, its first request
(nothing remembered) and the conversation's next turn (the same body and one exchange
more: cut from the turn before by turns.py, and the full path with it off), each beside
`json.loads` of the same body. Each stage is timed by a wrapper round
the function that does it (thread CPU; a wrapper adds its own cost to what it wraps),
each stage's own time (what a stage inside it took is that stage's), so that the stages
and "other" add up to the total:

    decode       masking._parse less json.loads: the body's bytes decoded to text
    raw          rawscan.hot: each engine once over the body's raw bytes, where it holds
                 many short strings (those it shows clean are left out of the walk)
    parse        json.loads (the masker's parse; the guard reads the same document)
    shapes       present.Held: the placeholders (and fakes) the client's texts hold, in the
                 texts the walk read (and, where the body's text holds one, those a raw
                 pass left out of it)
    walk         spanwalk.collect: the masker's walk of the selected strings
    prescan      Rules.prescan: masking's scan of the texts
    mask         Rules.mask_spans: the strings the scan marked, masked (find() inside), and
                 what masking made of each read again as the guard will (rules/settle.py)
    apply        masking.mask_doc's own: each masked string's edits in JSON text (escaped,
                 mapped to the token's raw offsets), what the scan found marked spent
    warning      pipeline._warn_present_disguise: the client's own disguises looked for
    splice       masking._splice: the masked body's text made
    readback     masking.masked_doc: the changed strings read back into the document
    guard        leakguard.first_unread: the leak guard's walk, with its find() calls
    guard-rest   pipeline.leak_scan's own: the URL and headers, the body's readings
    other        the rest of the call: the masked text encoded, sessions, fakes, calls

Then, for the 1 MB body's two requests, what the guard reads again itself (its find()
calls: the texts masking changed, and any the memo of masking's scan does not hold)
against all the body's texts. Last, each scanning engine alone over the 1 MB body's
texts (UTF-8 encoding, the memo's digests, the literals' automaton, the patterns'
prefilter): the floor those engines put under the first request's masking, beside
json.loads (issue 29's first-scan target). And the floor of one compiled pass over the
raw body (issue 29's design: no Python per text): each engine once over the body's raw
bytes (the literals' and the disguises' one database, the patterns' prefilter, one digest)
with json.loads beside them, for the 1 MB body and the array of short elements.

    python bench/stages.py [--elements 1000000] [--runs 3]

Medians of --runs (the engines: least of --runs); the total is the whole call's. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "addon")]

import bodies  # noqa: E402
from material import Material, make_literals  # noqa: E402
from offload import next_turn  # noqa: E402
from proxies import mappings_dir, tmpdir  # noqa: E402

from disguiselib import leakguard, pipeline  # noqa: E402
from disguiselib.apis.registry import recognise  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.base.present import Held  # noqa: E402
from disguiselib.config import build_config  # noqa: E402
from disguiselib.rules import rawscan  # noqa: E402
from disguiselib.rules.found import Found  # noqa: E402
from disguiselib.rules.linear import _collect  # noqa: E402
from disguiselib.rules.prescan import REMEMBER_MIN  # noqa: E402
from disguiselib.rules.rules import Rules  # noqa: E402
from disguiselib.wire import spanwalk  # noqa: E402

STAGES: list[tuple[object, str, str]] = [
    (masking, "_parse", "decode"), (json, "loads", "parse"), (rawscan, "hot", "raw"), (Held, "read", "shapes"), (Held, "done", "shapes"),
    (spanwalk, "collect", "walk"), (Rules, "prescan", "prescan"), (Rules, "mask_spans", "mask"),
    (masking, "mask_doc", "apply"), (pipeline, "_warn_present_disguise", "warning"), (masking, "_splice", "splice"),
    (masking, "masked_doc", "readback"), (leakguard, "first_unread", "guard"), (pipeline, "leak_scan", "guard-rest"),
]  # fmt: skip
spent: dict[str, float] = {}
_running: list[list] = []  # the stages running, innermost last: [label, time of the stages inside it so far]


def timed(owner: object, name: str, label: str) -> None:
    """owner.name wrapped: its own thread CPU (less the stages inside it) added to
    spent[label]; the warning pass's scan is the warning's (not masking's prescan)."""
    real = getattr(owner, name)

    def wrapper(*a: object, **k: object) -> object:
        lab = "warning" if _running and _running[-1][0] == "warning" else label
        _running.append([lab, 0.0])
        t = time.thread_time()
        try:
            return real(*a, **k)
        finally:
            took = time.thread_time() - t
            spent[lab] = spent.get(lab, 0.0) + took - _running.pop()[1]
            if _running:
                _running[-1][1] += took

    setattr(owner, name, wrapper)


def measure(call: Callable[[], object], runs: int, before: Callable[[], object] = lambda: None) -> dict[str, float]:
    """Median seconds per stage (and "total") over runs calls, before() ahead of each."""
    got: dict[str, list[float]] = {}
    for _ in range(runs):
        before()
        spent.clear()
        t = time.thread_time()
        call()
        spent["total"] = time.thread_time() - t
        spent["other"] = spent["total"] - sum(v for k, v in spent.items() if k != "total")
        for k, v in spent.items():
            got.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in got.items()}


def show(title: str, st: dict[str, float], unit: float, unit_name: str, loads: float, grown: float) -> None:
    """One row: the total, its ratio to json.loads of the same body timed twice, as the
    process began and after the runs (json.loads's own time moves with the state of the
    heap: 1.9 to 3.3 ms for the 1 MB body from one process to the next), and each stage's
    own time."""
    cells = [f"{lab} {st.get(lab, 0.0) / unit:.3g}" for lab in [*dict.fromkeys(lab for _, _, lab in STAGES), "other"]]
    print(
        f"  {title}: total {st['total'] / unit:.3g} {unit_name} ({st['total'] / loads:.1f}× json.loads timed first, "
        f"{loads / unit:.3g} {unit_name}; {st['total'] / grown:.1f}× json.loads timed after the runs, "
        f"{grown / unit:.3g} {unit_name}); " + ", ".join(cells)
    )


def guard_reads(call: Callable[[], object], before: Callable[[], object]) -> tuple[int, int, int]:
    """(texts, characters, texts answered by what the rule set remembers of earlier
    requests: Rules.found) the leak guard reads itself in one call (Rules.find inside
    leakguard.first_unread): those the memo of masking's scan did not answer for it."""
    real_find, real_walk = Rules.find, leakguard.first_unread
    got = [0, 0, 0, False]

    def find(self: Rules, text: str, *a: object, **k: object) -> object:
        if not got[3]:
            return real_find(self, text, *a, **k)
        hits = self.found.hits
        try:
            return real_find(self, text, *a, **k)
        finally:
            got[0] += 1
            got[1] += len(text)
            got[2] += self.found.hits > hits

    def walk(*a: object, **k: object) -> object:
        got[3] = True
        try:
            return real_walk(*a, **k)
        finally:
            got[3] = False

    before()
    Rules.find, leakguard.first_unread = find, walk  # type: ignore[method-assign]
    try:
        call()
    finally:
        Rules.find, leakguard.first_unread = real_find, real_walk  # type: ignore[method-assign]
    return got[0], got[1], got[2]


def engines(cfg: object, body: bytes, runs: int) -> dict[str, float]:
    """Least thread CPU seconds of each scanning engine alone over the body's texts (its
    string values and keys, thinking aside: bodies.string_values), as the first request's
    prescan reads them: what masking cannot go below with these engines, whatever Python
    is taken out around them."""
    rules = cfg.rules  # type: ignore[attr-defined]
    texts = bodies.string_values(json.loads(body), [])
    enc = [t.encode() for t in texts]
    joined = b"\x00".join(enc)
    parts: dict[str, Callable[[], object]] = {
        "UTF-8 encode": lambda: [t.encode() for t in texts],
        "BLAKE2b (the memo's digests)": lambda: [Found.digest(b) for b in enc if len(b) >= REMEMBER_MIN],
        "literals (leftmost.Literals: Hyperscan, or Aho-Corasick)": lambda: rules._lit_ac.find_matches_as_indexes(joined),
        "Hyperscan (the patterns' prefilter)": lambda: rules._prefilter.match_many(enc),
    }
    return {k: min(measure(f, 1)["total"] for _ in range(runs)) for k, f in parts.items()}


def raw_pass(cfg: object, body: bytes, runs: int) -> dict[str, float]:
    """Least thread CPU seconds of json.loads and of each engine once over the raw body:
    what one compiled pass that hands each engine the whole body cannot go below."""
    rules, dis = cfg.rules, cfg.disguises  # type: ignore[attr-defined]
    pf = rules._prefilter
    hits: set[int] = set()
    parts: dict[str, Callable[[], object]] = {
        "json.loads": lambda: json.loads(body),
        # (the raw pass's: one Hyperscan literal database of both sets, rawscan.Literals)
        "literals and disguises' literals": lambda: rawscan._literals(rules, dis).spans(body, sys.maxsize),
        "Hyperscan (the prefilter's line gate)": lambda: pf._gate.scan(
            body, match_event_handler=_collect, context=hits, scratch=pf._scratch(gate=True)
        ),
        "BLAKE2b": lambda: Found.digest(body),
    }
    return {k: min(measure(f, 1)["total"] for _ in range(runs)) for k, f in parts.items()}


def as_chat(raw: bytes) -> bytes:
    """The Claude-Code body as a Chat Completions request: the system prompt a system
    message, each message's blocks its content (tool calls' inputs, results as text)."""
    doc = json.loads(raw)
    system = doc.get("system", "")
    msgs = [{"role": "system", "content": system if isinstance(system, str) else "\n".join(b["text"] for b in system)}]
    for m in doc["messages"]:
        c = m["content"]
        if not isinstance(c, str):
            c = "\n".join(b.get("text") or json.dumps(b.get("input") or b.get("content"), ensure_ascii=False) for b in c)
        msgs.append({"role": m["role"], "content": c})
    out = {"model": "gpt-x", "messages": msgs, "stream": True}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()


def chat_turns(cfg: Any, first: bytes, turn: bytes, runs: int, forget: Callable[[], None]) -> None:
    """The same conversation as Chat Completions (registry.Api.turns): its next turn cut
    from the turn before, and by the full path."""
    api, path, hdrs = recognise("POST", "/v1/chat/completions"), "/v1/chat/completions", [("content-type", "application/json")]
    one, two = as_chat(first), as_chat(turn)

    def after() -> None:
        forget()
        pipeline.mask_request(api, one, cfg, path, hdrs)

    got, cut = {}, "NOT cut"
    for on in (True, False):
        pipeline.turns.ON = on
        got[on] = measure(lambda: pipeline.mask_request(api, two, cfg, path, hdrs), runs, after)["total"]
        store = pipeline.turns.turns_of(cfg.rules)  # (after's forget() starts each run with none)
        cut = "cut" if on and store is not None and store.hits else cut
    pipeline.turns.ON = True
    print(f"  the same conversation as Chat Completions ({len(two):,} B), its next turn, ms: {cut} {got[True] * 1e3:.2f}, "
          f"the full path {got[False] * 1e3:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    api = recognise("POST", "/v1/messages")
    hdrs = [("content-type", "application/json")]
    rng = random.Random(a.seed)
    lits = make_literals(random.Random(a.seed), 1000)
    mat = Material(rng, lits)
    cfg = build_config([str(mappings_dir(tmpdir(), "lit", lits))], True, [])
    first, _ = bodies.build_request(a.seed + 900, 1_000_000, mat)
    turn = next_turn(first, random.Random(a.seed + 901))
    n = n_el = a.elements
    tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"items": [f"v{i:x}q" for i in range(n)]}}
    elements = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [tool]}]}).encode()  # fmt: skip

    # hex ids, the all-digit ones (about 5 %) a phone number's prefilter names: each a
    # candidate searched exactly and rejected (the raw pass marks them one by one)
    hex_rng = random.Random(a.seed + 7)
    tool = {"type": "tool_use", "id": "t", "name": "f", "input": {"ids": [f"{hex_rng.getrandbits(24):06x}" for _ in range(n)]}}
    hexes = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [tool]}]}).encode()  # fmt: skip
    del tool

    def mask(body: bytes) -> Callable[[], object]:
        return lambda: pipeline.mask_request(api, body, cfg, "/v1/messages", hdrs)

    def loads_of(body: bytes) -> float:
        return min(measure(lambda: json.loads(body), 3)["total"] for _ in range(2))

    base = {"elements": loads_of(elements), "hexes": loads_of(hexes), "first": loads_of(first), "turn": loads_of(turn)}
    for owner, name, label in STAGES:
        timed(owner, name, label)
    rule_sets = [cfg.rules] + ([cfg.disguises] if cfg.disguises is not None else [])

    def forget() -> None:  # what both rule sets remember (masking's, the warning pass's)
        for r in rule_sets:
            r.found.clear()

    print(f"stages of pipeline.mask_request, CPU medians of {a.runs} (1,000 literals + the shipped patterns)")
    st = measure(mask(elements), a.runs, forget)
    show(f"{n:,} unique elements, µs an element", st, 1e-6 * n, "µs", base["elements"], loads_of(elements))
    if cfg.rules._prefilter is not None:  # (the hex ids' raw pass needs it: made in a thread)
        cfg.rules._prefilter.gate_ends(b"", 0, wait=300)
    st = measure(mask(hexes), a.runs, forget)
    show(f"{n:,} six-character hex ids, µs an id", st, 1e-6 * n, "µs", base["hexes"], loads_of(hexes))
    del hexes
    st = measure(mask(first), a.runs, forget)
    show(f"1 MB body, first request ({len(first):,} B), ms", st, 1e-3, "ms", base["first"], loads_of(first))

    def after_first() -> None:  # the next turn: its conversation's turn before it went through
        forget()
        pipeline.mask_request(api, first, cfg, "/v1/messages", hdrs)

    st = measure(mask(turn), a.runs, after_first)
    show(f"its next turn ({len(turn):,} B), ms", st, 1e-3, "ms", base["turn"], loads_of(turn))
    if hasattr(pipeline, "turns"):  # (a tree before turns.py: the line above is the full path's)
        cut = pipeline.turns.turns_of(cfg.rules)
        print(f"    (cut from the turn before: {'yes' if cut is not None and cut.hits else 'no'}, turns.py)")
        pipeline.turns.ON = False
        st = measure(mask(turn), a.runs, after_first)
        pipeline.turns.ON = True
        show("its next turn, the full path (turns.py off), ms", st, 1e-3, "ms", base["turn"], loads_of(turn))
        chat_turns(cfg, first, turn, a.runs, forget)
    chars = sum(map(len, bodies.string_values(json.loads(first), [])))
    for title, body, before in (("first request", first, forget), ("next turn", turn, after_first)):
        n, c, known = guard_reads(mask(body), before)
        print(f"  the guard's own find() calls, {title}: {n:,} texts, {c / 1e3:,.0f} k characters of the body's "
              f"{chars / 1e3:,.0f} k (the texts masking changed; the rest answered by the memo of its scan), "
              f"{known:,} of them answered by what the rules remember of earlier requests")  # fmt: skip
    eng = engines(cfg, first, a.runs)
    print(f"  the 1 MB body's texts, each engine alone (least of {a.runs}), ms: "
          + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in eng.items())
          + f"; together {sum(eng.values()) * 1e3:.2f} ms = {sum(eng.values()) / base['first']:.1f}× json.loads, "
          f"with json.loads itself {1 + sum(eng.values()) / base['first']:.1f}×")  # fmt: skip
    for title, body, unit, un in (("the 1 MB body", first, 1e-3, "ms"), (f"the {n_el:,} elements", elements, 1e-6 * n_el, "µs an element")):
        got = raw_pass(cfg, body, a.runs)
        loads = got["json.loads"]
        print(f"  {title}, each engine once over its raw bytes (least of {a.runs}), {un}: "
              + ", ".join(f"{k} {v / unit:.3g}" for k, v in got.items())
              + f"; together {sum(got.values()) / unit:.3g} = {sum(got.values()) / loads:.1f}× json.loads: the floor "
              f"of one pass with these engines")  # fmt: skip


if __name__ == "__main__":
    main()
