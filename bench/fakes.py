"""disguise_fakes against placeholders: what fakes cost when masking and restoring.

    python bench/fakes.py          # ~20 s on 2 cores

A 200 kB Anthropic request whose user text holds 200 distinct e-mail addresses and 200
distinct AWS access key ids (each twice) is masked through the one path
(`base/masking.mask_body`, shipped defaults) with placeholders and with fakes
(HMAC-SHA256 per new original, the generator, the check that no rule takes part of a
fake, the look for the client's own text); then the answer, echoing every disguise,
streamed as Anthropic SSE in 3-character text deltas, is restored through
`apis/anthropic/messages.AnthropicStream` (a flow's fakes: an automaton, a hold-back trie
regex, the trigger automaton of its fakes beside the rule set's). CPU time, the least of
5; ratios fakes / placeholders side by side. Then what setting up one streamed response
costs for a typical flow (an e-mail and a key masked) with each.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (puts addon/ on sys.path)

from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.registry import recognise
from disguiselib.base.masking import mask_body
from disguiselib.config import build_config  # noqa: E402

N = 200


def _least(fn, reps: int = 5) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best


def _body() -> bytes:
    lines = []
    for i in range(N):
        key = "AKIA" + "".join("ABCDEFGHJKLMNPQRSTUVWXYZ234567"[(i * 7 + j * 13) % 30] for j in range(16))
        lines.append(f"row {i}: contact person{i}.name@company{i % 17}.com, deploy key {key}; " * 2)
    filler = "Some ordinary prose about the build, the tests and the release plan. " * 1500
    text = "\n".join(lines) + filler
    return json.dumps({"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": text}]}).encode()


def _answer(disguises: list[str]) -> bytes:
    text = " ".join(f"see {d}," for d in disguises) + " done."
    ev = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
          b'"model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
          b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n']  # fmt: skip
    for i in range(0, len(text), 3):
        d = json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i : i + 3]}})
        ev.append(f"event: content_block_delta\ndata: {d}\n\n".encode())
    ev.append(b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n')
    ev.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return b"".join(ev)


def main() -> None:
    body = _body()
    rule = recognise("POST", "/v1/messages").request_rule  # type: ignore[union-attr]
    rows = []
    results = {}
    for name, key in (("placeholders", None), ("fakes", b"bench-key-0123456789abcdef")):
        rules = build_config([], True, [], key).rules
        new, session = mask_body(body, rule, rules)
        t_mask = _least(lambda r=rules: mask_body(body, rule, r))
        answer = _answer(list(session.placeholders))
        reads = [answer[i : i + 1400] for i in range(0, len(answer), 1400)]

        def restore(r=rules, s=session, rd=reads) -> bytes:
            st = AnthropicStream(r.restorer(s.placeholders))
            return b"".join(st.feed(x) for x in rd) + st.flush()

        out = restore()
        assert all(o in out.decode() for o in session.placeholders.values())
        t_rest = _least(restore)
        results[name] = (t_mask, t_rest)
        rows.append((name, len(session.placeholders), session.fakes, len(body), t_mask, len(answer), t_rest))
    print(f"{'':14}{'disguises':>10}{'fakes':>7}{'body kB':>9}{'mask ms':>9}{'answer kB':>11}{'restore ms':>12}")
    for name, n, nf, bl, tm, al, tr in rows:
        print(f"{name:14}{n:>10}{nf:>7}{bl / 1024:>9.0f}{tm * 1e3:>9.1f}{al / 1024:>11.0f}{tr * 1e3:>12.1f}")
    (pm, pr), (fm, fr) = results["placeholders"], results["fakes"]
    print(f"{'fakes/placeh.':14}{'':>10}{'':>7}{'':>9}{fm / pm:>8.2f}x{'':>11}{fr / pr:>11.2f}x")
    # what a streamed response of a typical flow (an e-mail and a key masked) costs to set
    # up: its restorer and stream (with fakes: their automaton, trie regex, triggers)
    print()
    setup = {}
    for name, key in (("placeholders", None), ("fakes", b"bench-key-0123456789abcdef")):
        rules = build_config([], True, [], key).rules
        _, session = mask_body(_small(), rule, rules)
        AnthropicStream(rules.restorer(session.placeholders))  # the rule set's triggers, built once
        setup[name] = _least(lambda r=rules, s=session: [AnthropicStream(r.restorer(s.placeholders)) for _ in range(100)]) / 100
        print(f"{name:14}stream set-up per response, 2 disguises: {setup[name] * 1e3:.3f} ms")
    print(f"{'':14}fakes: +{(setup['fakes'] - setup['placeholders']) * 1e3:.3f} ms per streamed response")


def _small() -> bytes:
    text = "Write to dana.whitfield@northwind-logistics.com about the key AKIAZ3MPLQW8RT5YUX2B please."
    return json.dumps({"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": text}]}).encode()


if __name__ == "__main__":
    main()
