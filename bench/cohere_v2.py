"""Cohere v2 Chat's stream beside Anthropic's: the same text deltas (prose, ordinary-word
disguises cut across deltas; and the same text with none) as Cohere events through
`CohereStream.feed` and as Anthropic events through `AnthropicStream.feed`, beside
framing alone (`sse.Framer`). CohereStream has no on_raw fast path; this shows what that
costs. Every output is checked (the client's reassembled text equals the whole-text restore).

    python bench/cohere_v2.py [--deltas 4000] [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import random

import common  # noqa: F401 - puts addon/ on sys.path
from material import make_literals
from streams import FramerPass, anthropic_text_stream, disguised_text, time_variants

from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.cohere.stream import CohereStream
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules


def cohere_events(pieces: list[str]) -> list[bytes]:
    def ev(doc: dict) -> bytes:
        return f"event: {doc['type']}\ndata: {json.dumps(doc, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()

    out = [ev({"id": "29f14a5a-11de-4cae-9800-25e4747408ea", "type": "message-start", "delta": {"message": {
        "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}})]  # fmt: skip
    out.append(
        ev({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}})
    )
    out += [ev({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": p}}}}) for p in pieces]
    out.append(ev({"type": "content-end", "index": 0}))
    out.append(ev({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {}}}))
    return out


def reads(body: bytes, size: int = 1400) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def text_of(out: bytes, cohere: bool) -> str:
    text = []
    for raw in out.split(b"\n\n"):
        line = next((ln for ln in raw.decode("utf-8").split("\n") if ln.startswith("data: ")), None)
        if line is None:
            continue
        d = json.loads(line[6:])
        if cohere and d.get("type") == "content-delta":
            text.append(d["delta"]["message"]["content"]["text"])
        elif not cohere and d.get("type") == "content_block_delta":
            text.append(d["delta"]["text"])
    return "".join(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    literals = make_literals(rng, 100)
    rules = Rules(mappings.from_dict({"literals": literals}))
    pairs = list(literals.items())[:40]
    chars = a.deltas * 22
    print(f"{a.deltas} text deltas (~{chars} chars), reads of 1400 bytes, 100 literals; median of {a.reps}")
    print(f"{'stream':<34}{'framing':>10}{'anthropic':>11}{'cohere':>10}{'cohere/anth':>13}{'cohere/framing':>16}")
    for label, n_disg in (("no disguise", 0), ("120 disguises cut across deltas", 120)):
        masked, orig, deltas, _ = disguised_text(rng, chars, pairs if n_disg else [], n_disg, False, False)
        co = b"".join(cohere_events(deltas))
        an = b"".join(anthropic_text_stream(rng, deltas))
        for body, cls, is_co in ((co, CohereStream, True), (an, AnthropicStream, False)):
            s = cls(rules.restorer({}))
            got = text_of(b"".join(s.feed(r) for r in reads(body)) + s.flush(), is_co)
            assert got == rules.restorer({}).text(masked), (label, cls.__name__)  # the whole-text restore
        t_co = time_variants({"framing": FramerPass, "cohere": lambda: CohereStream(rules.restorer({}))},
                             reads(co), a.reps)  # fmt: skip
        t_an = time_variants({"anthropic": lambda: AnthropicStream(rules.restorer({}))}, reads(an), a.reps)
        f, c, n = t_co["framing"] * 1e3, t_co["cohere"] * 1e3, t_an["anthropic"] * 1e3
        print(f"{label:<34}{f:>8.1f}ms{n:>9.1f}ms{c:>8.1f}ms{c / n:>12.2f}x{c / f:>15.2f}x")


if __name__ == "__main__":
    main()
