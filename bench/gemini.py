#!/usr/bin/env python3
"""disguise benchmark, Google: the engine on a ~1 MB Gemini stream (µs/event), as
bench.py's section (a) does for Anthropic and OpenAI.

    cd <repo> && python bench/gemini.py            # ~20 s on 2 cores
    cd <repo> && python bench/gemini.py --quick    # fewer repetitions

The stream has the shape of the recordings in tests/fixtures/real/gemini/: chunks of
`{"candidates": [{"content": {"parts": [{"text": ...}],"role": "model"},"index": 0}],
"usageMetadata": {...},"modelVersion": ...,"responseId": ...}`, first some thought parts
(`"thought": true`), then answer text in pieces of 20-200 characters (the API sends
several tokens per chunk), function calls with a thoughtSignature, and a last chunk with
`finishReason`. The same chunks are sent two ways: `alt=sse` (CRLF-framed SSE,
`GeminiStream`) and the streamed JSON array without it (pretty-printed elements,
`GeminiArrayStream`). The text carries the disguises a model writes back: placeholders
from masking the request, and literals, each split across two chunks.

Compared with: a bare loop over the chunks, and the framer alone (sse.Framer.feed, or
jsonarray.ArrayFramer.feed). Every run first checks what a client reassembles: the
original text, restored function-call names and args, thoughts untouched.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "addon"))

from disguiselib.apis.google import array as gemini_array  # noqa: E402
from disguiselib.apis.google import gemini as google  # noqa: E402
from disguiselib.apis.google import stream as gemini_stream  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.rules import mappings, rules  # noqa: E402
from disguiselib.wire import jsonarray, sse  # noqa: E402

WORDS = ("the of and to in is for on that with as by this from are be or an at it not which you have can "
         "stream chunk model token window candidate part function result value request response server client "
         "config deploy build test cluster service queue cache index table column record field schema").split()  # fmt: skip
USAGE = {"promptTokenCount": 1841, "candidatesTokenCount": 63, "totalTokenCount": 1992,
         "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1841}], "thoughtsTokenCount": 88}  # fmt: skip
SIG = "CikB0e2Kbw5tJ9dwYB9m1I9W28H1Pvbhg7iFnlQJMZT9ndxhy/OJBT3V9QptAdHtim+b6IrcZhtF6O6xQkkPMDhjrvwL3icXkpwLLW" * 3


def literals(n: int) -> dict[str, str]:
    """n literal originals and their disguises (internal names -> neutral ones)."""
    rng = random.Random(7)
    out = {}
    for i in range(n):
        out[f"{rng.choice(WORDS).capitalize()}{rng.choice(WORDS)}Internal{i}"] = f"Proj{i:04d}x"
    return out


def build(seed: int, target: int, disguises: list[tuple[str, str]]):
    """Chunks (dicts) of a ~target-byte stream; the text with originals (what the client
    must get back) and with disguises (what the model writes)."""
    rng = random.Random(seed)
    chunks = []
    orig_text: list[str] = []
    thought_text: list[str] = []
    size = 0
    meta = {"usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash", "responseId": "VJfyaP7eE_6zmtkP4qLV6Ao"}

    def chunk(parts: list[dict], finish: str | None = None) -> dict:
        c: dict = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            c["finishReason"] = finish
        return {"candidates": [c], **meta}

    for _ in range(6):
        t = " ".join(rng.choice(WORDS) for _ in range(40))
        thought_text.append(t)
        chunks.append(chunk([{"text": t, "thought": True}]))
    pending = ""  # disguised text not yet cut into chunks
    while size < target:
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 40))]
        if disguises and rng.random() < 0.004:  # ~30 in 1 MB, as in bench.py (a)
            d, o = rng.choice(disguises)
            k = rng.randint(1, len(words) - 1)
            pending += " ".join(words[:k]) + " " + d + " " + " ".join(words[k:]) + ". "
            orig_text.append(" ".join(words[:k]) + " " + o + " " + " ".join(words[k:]) + ". ")
        else:
            pending += " ".join(words) + ". "
            orig_text.append(" ".join(words) + ". ")
        while len(pending) > 200:
            n = rng.randint(20, 200)
            chunks.append(chunk([{"text": pending[:n]}]))
            size += len(json.dumps(chunks[-1])) + 8
            pending = pending[n:]
    calls = []
    for i in range(2):
        d, o = disguises[i % len(disguises)] if disguises else ("x", "x")
        args = {"path": f"/srv/{d}/handlers.py", "note": f"ask {d}", "line": 40 + i}
        calls.append({"path": f"/srv/{o}/handlers.py", "note": f"ask {o}", "line": 40 + i})
        chunks.append(chunk([{"functionCall": {"name": "read_file", "args": args}, "thoughtSignature": SIG}]))
    chunks.append(chunk([{"text": pending}], "STOP"))
    orig = "".join(orig_text)
    return chunks, orig, "".join(thought_text), calls


def to_sse(chunks: list[dict]) -> list[bytes]:
    return [f"data: {json.dumps(c, separators=(',', ': '), ensure_ascii=False)}\r\n\r\n".encode() for c in chunks]


def to_array(chunks: list[dict]) -> list[bytes]:
    bodies = [json.dumps(c, indent=2, ensure_ascii=False).encode() for c in chunks]
    return [b"[" + bodies[0] + b"\n"] + [b",\r\n" + b + b"\n" for b in bodies[1:]] + [b"]"]


def client_view(out: bytes, array: bool) -> tuple[str, str, list]:
    if array:
        docs = json.loads(out)
    else:
        f = sse.Framer()
        docs = [json.loads(e.data) for e in f.feed(out) + f.flush() if e.data is not None]
    text, thought, calls = [], [], []
    for d in docs:
        assert "error" not in d, d
        for p in d["candidates"][0]["content"]["parts"]:
            if "functionCall" in p:
                calls.append(p["functionCall"]["args"])
            elif p.get("thought"):
                thought.append(p["text"])
            else:
                text.append(p["text"])
    return "".join(text), "".join(thought), calls


class Bare:
    def feed(self, c: bytes) -> bytes:
        return c

    def flush(self) -> bytes:
        return b""


class SSEFramer:
    """The addon's first step alone: frame and parse SSE events, re-emit them."""

    def __init__(self) -> None:
        self.f = sse.Framer()

    def feed(self, c: bytes) -> bytes:
        return b"".join([e.raw for e in self.f.feed(c)])

    def flush(self) -> bytes:
        return b"".join([e.raw for e in self.f.flush()])


class ArrayFramer:
    """The streamed JSON array's first step alone: cut elements, re-emit the pieces."""

    def __init__(self) -> None:
        self.f = jsonarray.ArrayFramer()

    def feed(self, c: bytes) -> bytes:
        return b"".join([raw for _, raw in self.f.feed(c)])

    def flush(self) -> bytes:
        return self.f.flush()


def run_loop(obj, chunks: list[bytes]) -> bytes:
    out = [obj.feed(c) for c in chunks]
    out.append(obj.flush())
    return b"".join(out)


def run(ctx) -> None:
    """bench/bench.py section `gemini`."""
    main(["--quick"] if ctx.args.quick else [])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--profile", action="store_true", help="cProfile the disguise loop (1000 literals, SSE)")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else 9
    ms_default = mappings.load(REPO / "mappings")
    lits = literals(1000)
    default_doc = yaml.safe_load((REPO / "mappings" / "default.yaml").read_text(encoding="utf-8"))
    ms_lit = mappings.from_dict({**default_doc, "literals": {**(default_doc.get("literals") or {}), **lits}})
    print(f"disguise bench, Gemini — Python {platform.python_version()}, {platform.machine()}"
          f"{', --quick' if args.quick else ''}; median of {reps}, variants interleaved")  # fmt: skip
    emails = [f"user{i}@corp{i % 7}.example.com" for i in range(12)]
    req = json.dumps({"contents": [{"role": "user", "parts": [{"text": "Mail " + ", ".join(emails) + " about "
                                                                + ", ".join(list(lits)[:40])}]}],
                      "systemInstruction": {"parts": [{"text": "You are a coding assistant."}]}}).encode()  # fmt: skip
    print(f"    {'stream':<30} {'rules':<22} {'chunking':<14} {'variant':<10} {'µs/event':>9} {'MB/s':>7} {'×bare':>6} {'×framer':>8}")
    own = {}
    for label, ms in (("default mappings", ms_default), ("1000 literals + default", ms_lit)):
        R = rules.Rules(ms)
        _, session = masking.mask_body(req, google.GENERATE_REQUEST, R)
        disguises = [(ph, o) for ph, o in session.placeholders.items()]
        if label.startswith("1000"):
            disguises += [(lits[o], o) for o in list(lits)[:40]]
        chunks, orig, thoughts, calls = build(args.seed, 1_000_000, disguises)
        for sname, array, events, cls, framer in (
            ("alt=sse (GeminiStream)", False, to_sse(chunks), gemini_stream.GeminiStream, SSEFramer),
            ("JSON array (GeminiArrayStream)", True, to_array(chunks), gemini_array.GeminiArrayStream, ArrayFramer),
        ):
            data = b"".join(events)
            nev = len(chunks)
            for cname, pieces in (("1 event/chunk", events), ("4 KiB chunks", [data[i : i + 4096] for i in range(0, len(data), 4096)])):
                s = cls(R.restorer(session.placeholders))
                got = client_view(run_loop(s, pieces), array)
                ok = got == (orig, thoughts, calls)
                factories = {"bare loop": Bare, "framer": framer,
                             "disguise": lambda cls=cls, R=R, ph=session.placeholders: cls(R.restorer(ph))}  # fmt: skip
                times: dict[str, list[float]] = {k: [] for k in factories}
                for r in range(reps + 1):
                    names = list(factories) if r % 2 == 0 else list(reversed(factories))
                    for name in names:
                        obj = factories[name]()
                        gc.collect()
                        t0 = time.perf_counter()
                        run_loop(obj, pieces)
                        if r:
                            times[name].append(time.perf_counter() - t0)
                med = {k: statistics.median(v) for k, v in times.items()}
                for name in factories:
                    t = med[name]
                    first = name == "bare loop"
                    print(f"    {sname if first and cname == '1 event/chunk' else '':<30} "
                          f"{label if first and cname == '1 event/chunk' else '':<22} {cname if first else '':<14} "
                          f"{name:<10} {t / nev * 1e6:>9.2f} {len(data) / t / 1e6:>7.1f} {t / med['bare loop']:>6.1f} "
                          f"{t / med['framer']:>8.2f}")  # fmt: skip
                us = (med["disguise"] - med["bare loop"]) / nev * 1e6
                fr = (med["framer"] - med["bare loop"]) / nev * 1e6
                own[(sname, label, cname)] = us
                print(f"    {'':<30} {'':<22} {'':<14} -> addon cost {us:.2f} µs/event (framing {fr:.2f} + the rest "
                      f"{us - fr:.2f}); {len(data) / 1e6:.2f} MB, {nev:,} chunks; held {s.events_held}, changed "
                      f"{s.events_changed}/{s.events_in}; output {'OK' if ok else 'MISMATCH'}")  # fmt: skip
                if not ok:
                    for what, g, w in zip(("text", "thoughts", "calls"), got, (orig, thoughts, calls), strict=True):
                        if g != w:
                            i = next((i for i, (a, b) in enumerate(zip(g, w, strict=False)) if a != b), min(len(g), len(w)))
                            print(f"      {what}: first difference at {i}: got {g[i:i + 60]!r}, want {w[i:i + 60]!r}")
    lo, hi = min(own.values()), max(own.values())
    print(f"    mitmdump's own streaming work is ~23-31 µs per event (docs/mitmproxy.md, Cost): the addon's "
          f"{lo:.1f}-{hi:.1f} µs/event on these Gemini chunks")  # fmt: skip
    if args.profile:
        import cProfile
        import pstats

        R = rules.Rules(ms_lit)
        _, session = masking.mask_body(req, google.GENERATE_REQUEST, R)
        chunks, *_ = build(args.seed, 1_000_000, [(ph, o) for ph, o in session.placeholders.items()])
        events = to_sse(chunks)
        pr = cProfile.Profile()
        pr.enable()
        run_loop(gemini_stream.GeminiStream(R.restorer(session.placeholders)), events)
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(18)


if __name__ == "__main__":
    main()
