#!/usr/bin/env python3
"""Detection quality of a mapping set, measured on the labelled corpus in tests/corpus/.

    cd <repo> && python bench/detect.py                 # default mappings/, full report
    python bench/detect.py --mappings my/ --quiet       # the headline and failures only
    python bench/detect.py --no-timing                  # skip the per-rule cost table

Every record goes through the real masking path twice: `providers.masking.mask_body` on a
request body that carries the record where it says (`place`: an Anthropic user message,
tool_result, tool_use input or thinking signature; an OpenAI Chat message, image URL;
a Responses function_call_output or reasoning `encrypted_content`), and `Rules.find` on
the text itself (what `Rules.mask` replaces). Reported:

- recall per kind: a labelled span is *full* when every character of it is masked,
  *partial* when some are (what leaked is shown), *missed* when none are;
- every false positive on a negative, with the rule that made it; `breaks` negatives
  (real artefacts, code, ids) must stay untouched, placeholder examples may be masked;
- cost per rule in ms per MB of corpus text, with this engine and, for the bare regex,
  with google-re2 when it is installed.

`headline()` returns the one-line summary (bench/bench.py may import it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "addon"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import precision  # noqa: E402

from disguiselib.apis import registry as engine  # noqa: E402
from disguiselib.base.masking import mask_body  # noqa: E402
from disguiselib.rules import mappings  # noqa: E402
from disguiselib.rules.found import Found  # noqa: E402
from disguiselib.rules.rules import Rules  # noqa: E402

CORPUS = REPO / "tests" / "corpus"
_PH = re.compile(r"\[[A-Z][A-Z0-9_]*_[1-9][0-9]*\]")


def load_corpus(corpus: Path = CORPUS) -> tuple[list[dict], list[dict]]:
    """(positives, negatives) as written by tests/corpus/generate.py."""

    def read(name: str) -> list[dict]:
        with open(corpus / name, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    return read("positives.jsonl"), read("negatives.jsonl")


# -- where a record goes in a request ------------------------------------------------------

_TOOL = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "Bash", "input": {"command": "cat app.env"}}


def _body(place: str, text: str) -> tuple[engine.Api, dict, tuple]:
    """(api, request document, path of the string that holds text)."""
    if place == "anthropic_user":
        doc = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": text}]}
        return engine.ANTHROPIC_MESSAGES, doc, ("messages", 0, "content")
    if place == "anthropic_tool_result":
        doc = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
            {"role": "user", "content": "Check the config."},
            {"role": "assistant", "content": [_TOOL]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": _TOOL["id"], "content": text}]}]}
        return engine.ANTHROPIC_MESSAGES, doc, ("messages", 2, "content", 0, "content")
    if place == "anthropic_tool_input":
        doc = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
            {"role": "user", "content": "Write the file."},
            {"role": "assistant", "content": [{**_TOOL, "name": "Write", "input": {"file_path": "/srv/app/.env", "content": text}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": _TOOL["id"], "content": "ok"}]}]}
        return engine.ANTHROPIC_MESSAGES, doc, ("messages", 1, "content", 0, "input", "content")
    if place == "anthropic_thinking_signature":
        doc = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "Greeting.", "signature": text},
                                              {"type": "text", "text": "Hello!"}]},
            {"role": "user", "content": "Thanks"}]}
        return engine.ANTHROPIC_MESSAGES, doc, ("messages", 1, "content", 0, "signature")
    if place == "anthropic_image_data":
        doc = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": text}},
            {"type": "text", "text": "What is this?"}]}]}
        return engine.ANTHROPIC_MESSAGES, doc, ("messages", 0, "content", 0, "source", "data")
    if place == "openai_user":
        doc = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": text}]}
        return engine.OPENAI_CHAT, doc, ("messages", 1, "content")
    if place == "openai_image_url":
        doc = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Describe."}, {"type": "image_url", "image_url": {"url": text}}]}]}
        return engine.OPENAI_CHAT, doc, ("messages", 0, "content", 1, "image_url", "url")
    if place == "responses_function_output":
        doc = {"model": "gpt-5", "input": [
            {"type": "function_call", "call_id": "call_9nq2", "name": "shell", "arguments": "{\"cmd\":\"env\"}"},
            {"type": "function_call_output", "call_id": "call_9nq2", "output": text}]}
        return engine.OPENAI_RESPONSES, doc, ("input", 1, "output")
    if place == "responses_encrypted_content":
        doc = {"model": "gpt-5", "include": ["reasoning.encrypted_content"], "input": [
            {"type": "reasoning", "id": "rs_68a1", "summary": [], "encrypted_content": text},
            {"type": "message", "role": "user", "content": "Continue."}]}
        return engine.OPENAI_RESPONSES, doc, ("input", 0, "encrypted_content")
    raise ValueError(f"unknown place {place!r}")


_STRTOK = re.compile(r'"(?:[^"\\]|\\.)*"')
_ESC = re.compile(r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)")


def _raw_offset(raw: str, d: int) -> int:
    """The offset in a JSON string token's body raw of decoded character offset d."""
    r = i = 0
    for m in _ESC.finditer(raw):
        plain = m.start() - r
        if i + plain >= d:
            return r + (d - i)
        i += plain + 1  # an escape (a surrogate pair too) is one decoded character
        r = m.end()
        if i == d:
            return r
    return r + (d - i)


def _placeholder_spans(orig: str, masked: str, placeholders: dict) -> list[tuple[str, int, int]] | None:
    """Spans in orig's coordinates of the placeholders in masked, if putting their
    originals back gives orig; else None."""
    spans: list[tuple[str, int, int]] = []
    rebuilt, pos, last = [], 0, 0
    for pm in _PH.finditer(masked):
        o = placeholders.get(pm.group())
        if o is None:
            continue
        rebuilt.append(masked[last : pm.start()])
        pos += pm.start() - last
        spans.append((pm.group()[1 : pm.group().rindex("_")], pos, pos + len(o)))
        rebuilt.append(o)
        pos += len(o)
        last = pm.end()
    rebuilt.append(masked[last:])
    return spans if "".join(rebuilt) == orig else None


def _json_text_spans(text: str, masked: str, placeholders: dict) -> list[tuple[str, int, int]] | None:
    """The masked spans, in text's coordinates, of JSON text whose string tokens were
    masked decoded and re-encoded (a token's value may be JSON text again); None if the
    tokens do not line up or do not restore."""
    ot, mt = list(_STRTOK.finditer(text)), list(_STRTOK.finditer(masked))
    if len(ot) != len(mt):
        return None
    spans: list[tuple[str, int, int]] = []
    for o, m in zip(ot, mt, strict=True):
        if o.group() == m.group():
            continue
        od, md = json.loads(o.group()), json.loads(m.group())
        inner = _placeholder_spans(od, md, placeholders)
        if inner is None and od.lstrip()[:1] in ("{", "["):
            inner = _json_text_spans(od, md, placeholders)
        if inner is None:
            return None
        body, base = o.group()[1:-1], o.start() + 1
        spans.extend((label, base + _raw_offset(body, x), base + _raw_offset(body, y)) for label, x, y in inner)
    return spans


def body_spans(rules: Rules, place: str, text: str) -> tuple[list[tuple[str, int, int]], bool]:
    """Mask the record in its request body with mask_body; return the masked spans in the
    record's own coordinates and whether the rest of the body came back byte-identical."""
    api, doc, path = _body(place, text)
    raw = json.dumps(doc, ensure_ascii=False).encode()
    new, session = mask_body(raw, api.request_rule, rules)
    out = json.loads(new)
    v = out
    for k in path:
        v = v[k]
    spans: list[tuple[str, int, int]] = []
    rebuilt: list[str] = []
    pos = last = 0
    for m in _PH.finditer(v):
        orig = session.placeholders.get(m.group())
        if orig is None:
            continue
        rebuilt.append(v[last : m.start()])
        pos += m.start() - last
        label = m.group()[1 : m.group().rindex("_")]
        spans.append((label, pos, pos + len(orig)))
        rebuilt.append(orig)
        pos += len(orig)
        last = m.end()
    rebuilt.append(v[last:])
    if "".join(rebuilt) != text:
        # JSON text inside a string is masked on its decoded characters, and a string
        # token that changed is re-encoded: map the masks back token by token
        spans = _json_text_spans(text, v, session.placeholders)
        if spans is None:
            raise AssertionError(f"restoring the masked value does not give the record back ({place})")
    # everything but this string must be untouched
    v2 = out
    for k in path[:-1]:
        v2 = v2[k]
    v2[path[-1]] = text
    intact = out == doc
    return spans, intact


# -- scoring -------------------------------------------------------------------------------


def score(spans: list[tuple[str, int, int]], a: int, b: int) -> tuple[str, str, set[str]]:
    """('full' | 'partial' | 'missed', leaked characters as ranges, rules that masked part of [a, b))."""
    covered = bytearray(b - a)
    rules_hit: set[str] = set()
    for label, s, e in spans:
        lo, hi = max(s, a), min(e, b)
        if lo < hi:
            rules_hit.add(label)
            for i in range(lo - a, hi - a):
                covered[i] = 1
    n = sum(covered)
    if n == b - a:
        return "full", "", rules_hit
    if n == 0:
        return "missed", "", rules_hit
    return "partial", "", rules_hit


def leaked_text(text: str, spans: list[tuple[str, int, int]], a: int, b: int) -> str:
    chars = list(text[a:b])
    for _, s, e in spans:
        for i in range(max(s, a), min(e, b)):
            chars[i - a] = "·"
    return "".join(chars)


def measure(rules: Rules, pos: list[dict], neg: list[dict]) -> dict:
    """Run every record through both paths; return the raw results."""
    res: dict = {"kinds": defaultdict(lambda: {"n": 0, "full": 0, "partial": 0, "missed": 0, "rules": set()}),
                 "partials": [], "misses": [], "fps": [], "disagree": [], "not_intact": []}
    for r in pos:
        text = r["text"]
        text_spans = rules.find(text)
        bspans, intact = body_spans(rules, r["place"], text)
        if not intact:
            res["not_intact"].append(r["id"])
        for a, b in r["spans"]:
            verdict, _, hit = score(bspans, a, b)
            tverdict, _, _ = score(text_spans, a, b)
            if tverdict != verdict:
                res["disagree"].append((r["id"], verdict, tverdict))
            k = res["kinds"][r["kind"]]
            k["n"] += 1
            k[verdict] += 1
            k["rules"] |= hit
            if verdict == "partial":
                res["partials"].append((r["id"], leaked_text(text, bspans, a, b)))
            elif verdict == "missed":
                res["misses"].append((r["id"], text[a:b]))
    for r in neg:
        text = r["text"]
        bspans, intact = body_spans(rules, r["place"], text)
        if not intact:
            res["not_intact"].append(r["id"])
        for path, spans in (("body", bspans), ("text", rules.find(text))):
            for label, s, e in spans:
                example = text[s:e] in r.get("allowed", ())
                res["fps"].append({"id": r["id"], "category": r["category"], "path": path, "rule": label,
                                   "breaks": r["breaks"] and not example, "example": example, "masked": text[s:e]})
    return res


def summary(res: dict, pos: list[dict], neg: list[dict]) -> dict:
    n = sum(k["n"] for k in res["kinds"].values())
    full = sum(k["full"] for k in res["kinds"].values())
    fps = res["fps"]
    breaking = {(f["id"], f["path"]) for f in fps if f["breaks"]}
    placeholders = {f["id"] for f in fps if not f["breaks"] and not f["example"]}
    return {
        "spans": n, "full": full, "recall": full / n if n else 0.0, "partial": len(res["partials"]),
        "missed": len(res["misses"]), "kinds": len(res["kinds"]),
        "negatives": len(neg), "fp_break_records": len({i for i, _ in breaking}),
        "fp_break_body": len({i for i, p in breaking if p == "body"}),
        "placeholders_masked": len(placeholders),
        "placeholders": sum(1 for r in neg if not r["breaks"]),
        "examples_masked": len({(f["id"], f["masked"]) for f in fps if f["example"]}),
    }


def kind_table(res: dict) -> str:
    """The per-kind table of docs/detection.md, as markdown (`--markdown` prints it;
    tests/rules/test_detect.py checks the document holds exactly this)."""
    rows = ["| kind | n | full | partial | missed | recall | rules |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for kind in sorted(res["kinds"]):
        k = res["kinds"][kind]
        rows.append(f"| {kind} | {k['n']} | {k['full']} | {k['partial']} | {k['missed']} | "
                    f"{100 * k['full'] / k['n']:.1f}% | {', '.join(sorted(k['rules']))} |")
    return "\n".join(rows) + "\n"


def run(ctx) -> None:
    """bench/bench.py section `detect`: the headline, with issue 9's targets."""
    import report

    rules = Rules(mappings.load(REPO / "mappings"))
    pos, neg = load_corpus()
    s = summary(measure(rules, pos, neg), pos, neg)
    print(_headline(s))
    print("  recall", report.figure("detect", "recall on the labelled corpus", f"{100 * s['recall']:.1f}%",
                                    "≥ 99%", "PASS" if s["recall"] >= 0.99 else "MISS"))  # fmt: skip
    print("  partial masks", report.figure("detect", "partial masks", str(s["partial"]), "0",
                                           "PASS" if s["partial"] == 0 else "MISS"))  # fmt: skip
    print("  false positives that break work", report.figure(
        "detect", "false positives that break work", str(s["fp_break_records"]), "0",
        "PASS" if s["fp_break_records"] == 0 else "MISS"))  # fmt: skip


def headline(mappings_path: str | Path = REPO / "mappings") -> str:
    """The one-line summary for bench/bench.py: recall, partials, false positives."""
    rules = Rules(mappings.load(mappings_path))
    pos, neg = load_corpus()
    s = summary(measure(rules, pos, neg), pos, neg)
    return _headline(s)


def _headline(s: dict) -> str:
    return (f"detect: recall {100 * s['recall']:.1f}% ({s['full']}/{s['spans']} spans, {s['kinds']} kinds), "
            f"{s['partial']} partial, {s['fp_break_records']} of {s['negatives'] - s['placeholders']} work negatives masked, "
            f"{s['placeholders_masked']} of {s['placeholders']} placeholder examples masked")



# -- cost per rule -------------------------------------------------------------------------


def timing(ms: mappings.MappingSet, texts: list[str], repeat: int) -> list[tuple[str, float, float | None]]:
    """(rule, ms/MB with this engine incl. options, ms/MB of the bare regex in re2 or None)."""
    try:
        import re2  # type: ignore[import-not-found]
    except ImportError:
        re2 = None
    mb = sum(len(t.encode()) for t in texts) / 1e6
    out = []
    for p in ms.patterns:
        one = Rules(mappings.MappingSet(patterns=(p,)))
        one.found = Found(limit=0)  # first scans: a memo hit is not a cost of the rule
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            for t in texts:
                one.find(t)
            best = min(best, time.perf_counter() - t0)
        r2 = None
        if re2 is not None:
            rx = re2.compile(p.regex)
            best2 = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                for t in texts:
                    pos = 0
                    while (m := rx.search(t, pos)) is not None:
                        pos = m.end() if m.end() > pos else pos + 1
                best2 = min(best2, time.perf_counter() - t0)
            r2 = 1000 * best2 / mb
        out.append((p.name, 1000 * best / mb, r2))
    return out


def ordinary_texts(seed: int = 1) -> dict[str, list[str]]:
    """Ordinary text, the figure issue 17's target (≤ 10 ms/MB for the whole set) is about:
    1 MB of assistant prose (bench/material.py) and the string values of a 1 MB
    Claude-Code-shaped request (bench/bodies.py: system prompt, tools, Read/Bash/Grep
    results of code with a few secrets and e-mails)."""
    import random

    import bodies
    import material

    mat = material.Material(random.Random(seed), material.make_literals(random.Random(seed), 1000))
    raw, _ = bodies.build_request(seed, 1_000_000, mat)
    return {"prose (1 MB)": [material.prose(random.Random(seed + 1), 1_000_000)],
            "Claude Code request (1 MB)": bodies.string_values(json.loads(raw), [])}


def set_cost(rules: Rules, texts: list[str], repeat: int) -> float:
    """ms/MB of Rules.find with the whole set (prefilter, exact searches, options), first
    scans (the memo off; bench/firstscan.py: medians, memo hits, where the time goes)."""
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rules.found = Found(limit=0)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for t in texts:
            rules.find(t)
        best = min(best, time.perf_counter() - t0)
    return 1000 * best / mb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mappings", default=str(REPO / "mappings"))
    ap.add_argument("--quiet", action="store_true", help="headline and failures only")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="the headline and the per-kind table for docs/detection.md")
    args = ap.parse_args(argv)

    ms = mappings.load(args.mappings)
    rules = Rules(ms)
    pos, neg = load_corpus()
    t0 = time.perf_counter()
    res = measure(rules, pos, neg)
    elapsed = time.perf_counter() - t0
    s = summary(res, pos, neg)
    if args.markdown:
        print("    " + _headline(s) + "\n")
        print(kind_table(res), end="")
        return 0

    if not args.quiet:
        print(f"corpus: {len(pos)} positive records ({s['spans']} labelled spans, {s['kinds']} kinds), "
              f"{len(neg)} negatives ({s['placeholders']} placeholder examples); mappings: {args.mappings}")
        print(f"\n{'kind':32} {'n':>4} {'full':>5} {'part':>5} {'miss':>5} {'recall':>7}  rules")
        for kind in sorted(res["kinds"]):
            k = res["kinds"][kind]
            print(f"{kind:32} {k['n']:4} {k['full']:5} {k['partial']:5} {k['missed']:5} "
                  f"{100 * k['full'] / k['n']:6.1f}%  {', '.join(sorted(k['rules']))}")
    if res["partials"]:
        print("\npartial masks (· = masked, the rest leaked):")
        for rid, leak in res["partials"]:
            print(f"  {rid}: {leak[:160]!r}")
    if res["misses"]:
        print("\nmissed:")
        for rid, secret in res["misses"]:
            print(f"  {rid}: {secret[:100]!r}")
    if res["fps"]:
        print("\nmasked in negatives (path: body = mask_body in its place, text = Rules.find on the text):")
        for f in res["fps"]:
            tag = "BREAKS" if f["breaks"] else "example data" if f["example"] else "placeholder"
            print(f"  [{tag}] {f['id']} ({f['path']}) {f['rule']}: {f['masked'][:80]!r}")
    if res["disagree"]:
        print("\nmask_body and Rules.find disagree:")
        for d in res["disagree"]:
            print(f"  {d}")
    if res["not_intact"]:
        print(f"\nbody changed outside the record's string: {res['not_intact']}")

    real = precision.measure(rules, precision.load_real(), precision.load_labels())
    if not args.quiet:
        print("\nprecision on real text (tests/corpus/real/; FP = masks not labelled in LABELS.json; "
              "breaking = inside a URL, a version, a hash, an identifier, a property access, a path):")
        print(precision.table(real))
    for f in real["fps"]:
        print(f"  [{f['class'] or 'FP'}] {f['path']} {f['rule']}: {f['context']!r}")
    print(precision.headline(real))

    if not args.no_timing and not args.quiet:
        texts = [r["text"] for r in pos] + [r["text"] for r in neg]
        mb = sum(len(t.encode()) for t in texts) / 1e6
        print(f"\ncost per rule over the corpus text ({mb:.2f} MB; best of {args.repeat}); "
              "disguise = Rules.find with this rule alone (regex module + options), re2 = its bare regex in google-re2")
        print(f"{'rule':24} {'disguise ms/MB':>15} {'re2 ms/MB':>10}")
        tot = tot2 = 0.0
        for name, ms_mb, r2 in timing(ms, texts, args.repeat):
            tot += ms_mb
            tot2 += r2 or 0.0
            print(f"{name:24} {ms_mb:15.1f} {'' if r2 is None else f'{r2:10.1f}'}")
        print(f"{'all rules (sum)':24} {tot:15.1f} {tot2:10.1f}")
        print(f"\nthe whole set at once ({len(ms.patterns)} patterns; Rules.find, first scans, best of {args.repeat} wall; "
              "bench/firstscan.py: CPU medians and memo hits); target ≤ 20 ms/MB first scan:")
        print(f"  {'corpus text':32} {set_cost(rules, texts, args.repeat):8.1f} ms/MB")
        for name, ts in ordinary_texts().items():
            print(f"  {name:32} {set_cost(rules, ts, args.repeat):8.1f} ms/MB")
        print(f"(corpus measured through both paths in {elapsed:.1f} s)")
    print("\n" + _headline(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
