"""What the outbound leak guard costs, next to the masking it checks.

    python bench/leakguard.py            # ~20 s on 2 cores
    python bench/leakguard.py --quick

For the ~1 MB Claude-Code-shaped request of bench.py's section (b) (system blocks, 17
tools, tool_use / tool_result with long file contents, thinking blocks, e-mails and
keys), with the default mappings and with 1,000 literals + default, it prints side by
side: `json.loads` of the body; `masking.mask_body`; the leak guard on the masked body
(`leakguard.scan_body` with the API: it reads the API's field table and checks what the
masker masks), which is what the addon adds per request, alone and (`+ scan memo`, what the
addon runs) reusing what masking's one scan found per text, also on a body with no
original in it (the masked body sent again); the check for disguises the client typed itself (a scan of the original body
with the literals turned around, also per masked request); and the unknown-endpoint
scan (no table: every field) of a body without originals, i.e. one that is walked whole.
Medians of repeated runs, in ms, and each as a ratio to masking. It also checks the guard's
verdicts: nothing found in the masked body, an original found in the original one.

The same generator and seeds as bench.py, so the numbers compare with its (b).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bodies  # noqa: E402  (the request generator)
import material  # noqa: E402
import yaml  # noqa: E402
from common import cold  # noqa: E402  (every figure a first time: the rules remember texts met before)

from disguiselib import leakguard  # noqa: E402
from disguiselib.apis.anthropic import messages as anthropic  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.rules import mappings, rules  # noqa: E402

try:  # the field model (issue 15): the guard reads the API's table
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES as API

    def guard(body: bytes, rules, scanned: dict | None = None, parsed: tuple | None = None) -> object:
        if parsed is not None:  # the masker's document of the masked body: no second parse
            return leakguard.scan_body(body, rules, API, "", scanned, parsed)
        return leakguard.scan_body(body, rules, API, "", scanned) if scanned is not None else leakguard.scan_body(
            body, rules, API
        )

    def unknown(body: bytes, rules) -> object:
        return leakguard.scan_body(body, rules, None)

except ImportError:  # an older tree, for before/after figures
    def guard(body: bytes, rules, scanned: dict | None = None) -> object:
        return leakguard.scan_body(body, rules, untouched=True)

    def unknown(body: bytes, rules) -> object:
        return leakguard.scan_body(body, rules, untouched=False)


def timeit(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _without_signed(doc: object) -> object:
    """doc without thinking blocks (they went out as they came, originals and all)."""
    if isinstance(doc, dict):
        return {k: _without_signed(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_without_signed(v) for v in doc
                if not (isinstance(v, dict) and v.get("type") in ("thinking", "redacted_thinking"))]  # fmt: skip
    return doc


MAPPINGS = Path(__file__).resolve().parents[1] / "mappings"
# The headers the official openai SDK (Python, 2.54.0) sent with a Chat request, recorded
# from a local server (2026-12-05); the host is the provider's, the key made up (it sits
# in its credential slot).
SDK_HEADERS = (
    ("Host", "api.openai.com"), ("Accept-Encoding", "gzip, deflate, br, zstd"), ("Connection", "keep-alive"),
    ("Authorization", "Bearer sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"), ("Accept", "application/json"),
    ("Content-Type", "application/json"), ("User-Agent", "OpenAI/Python 2.54.0"), ("X-Stainless-Lang", "python"),
    ("X-Stainless-Package-Version", "2.54.0"), ("X-Stainless-OS", "Linux"), ("X-Stainless-Arch", "x64"),
    ("X-Stainless-Runtime", "CPython"), ("X-Stainless-Runtime-Version", "3.11.7"), ("X-Stainless-Async", "false"),
    ("x-stainless-retry-count", "0"), ("x-stainless-read-timeout", "600"), ("Content-Length", "67"),
)  # fmt: skip


def run(ctx) -> None:
    """bench/bench.py section `leakguard`."""
    main(["--quick"] if ctx.args.quick else [])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=int, default=1_000_000, help="request size in bytes")
    args = ap.parse_args(argv)
    reps = 5 if args.quick else 15
    rng = random.Random(args.seed)
    lits = material.make_literals(rng, 1000)
    doc = yaml.safe_load((MAPPINGS / "default.yaml").read_text())
    doc["literals"] = lits
    sets = {
        "default mappings": rules.Rules(mappings.load(MAPPINGS / "default.yaml")),
        "1000 literals + default": rules.Rules(mappings.from_dict(doc, "bench: 1000 literals + default.yaml")),
    }
    mat = material.Material(rng, lits)
    raw, _ = bodies.build_request(args.seed, args.size, mat)
    print(f"leak guard cost: a {len(raw) / 1e6:.2f} MB Claude-Code-shaped /v1/messages body, "
          f"medians of {reps} runs, Python {sys.version.split()[0]}")  # fmt: skip
    print(f"  {'rules':<26}{'json.loads':>12}{'mask_body':>12}{'leak guard':>12}{'(/mask)':>9}{'+ scan memo':>13}"
          f"{'disguise check':>16}{'(/mask)':>9}{'unknown scan':>14}{'(/mask)':>9}")  # fmt: skip
    memos: list[str] = []
    shares: list[str] = []
    ok = True
    for label, R in sets.items():
        masked, _ = masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R)
        t_load = statistics.median(timeit(lambda: json.loads(raw), reps))
        t_mask = statistics.median(timeit(cold(R, lambda R=R: masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R)), reps))
        t_guard = statistics.median(timeit(cold(R, lambda R=R, m=masked: guard(m, R)), reps))
        # what the addon runs: the guard reusing what masking's one scan found per text
        # (texts masking left as they were are not scanned again; pipeline.mask_request)
        scanned: dict = {}
        masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R, scanned)
        t_memo = statistics.median(timeit(cold(R, lambda R=R, m=masked, sc=scanned: guard(m, R, sc)), reps))
        # and (what the addon runs now) walking the masker's document of the masked body
        shared: list = []
        try:
            masking.mask_body(raw, anthropic.MESSAGES_REQUEST, R, {}, shared)
        except TypeError:  # an older tree: no shared parse
            shared = []
        t_shared = statistics.median(timeit(cold(R, lambda R=R, sc=scanned, p=shared[0]: guard(p[0], R, sc, p)), reps)) \
            if shared else float("nan")  # fmt: skip
        t_mask_shared = statistics.median(timeit(cold(R, lambda R=R: masking.mask_body(
            raw, anthropic.MESSAGES_REQUEST, R, {}, [])), reps)) if shared else float("nan")  # fmt: skip
        shares.append(f"{label}: mask_body handing its document on {t_mask_shared * 1e3:.1f} ms, the guard on it "
                      f"{t_shared * 1e3:.1f} ms (memo and parse shared; {t_memo * 1e3:.1f} ms parsing again)")  # fmt: skip
        # a body with no original in it (every text left as it was): the masked body, sent again
        again: dict = {}
        masking.mask_body(masked, anthropic.MESSAGES_REQUEST, R, again)
        t_again = statistics.median(timeit(cold(R, lambda R=R, m=masked: guard(m, R)), reps))
        t_again_memo = statistics.median(timeit(cold(R, lambda R=R, m=masked, sc=again: guard(m, R, sc)), reps))
        memos.append(f"{label}: {t_again * 1e3:.1f} ms, with the scan memo {t_again_memo * 1e3:.1f} ms")
        clean_body = json.dumps(_without_signed(json.loads(masked))).encode()
        assert unknown(clean_body, R) is None  # walked whole
        t_unknown = statistics.median(timeit(cold(R, lambda R=R, b=clean_body: unknown(b, R)), reps))
        turned = tuple(mappings.Literal(x.disguise, x.original, x.source) for x in R.mappings.literals)
        D = rules.Rules(mappings.MappingSet(literals=turned)) if turned else None
        t_disg = statistics.median(timeit(cold(D, lambda D=D: guard(raw, D)), reps)) if D else 0.0
        clean = guard(masked, R)
        dirty = guard(raw, R)
        if clean is not None or dirty is None:
            ok = False
            print(f"  MISMATCH ({label}): masked body -> {clean}, original body -> {dirty}")
        print(f"  {label:<26}{t_load * 1e3:>10.1f}ms{t_mask * 1e3:>10.1f}ms{t_guard * 1e3:>10.1f}ms"
              f"{t_guard / t_mask:>8.2f}x{t_memo * 1e3:>11.1f}ms{t_disg * 1e3:>14.1f}ms{t_disg / t_mask:>8.2f}x"
              f"{t_unknown * 1e3:>12.1f}ms{t_unknown / t_mask:>8.2f}x")  # fmt: skip
    # what every request costs whatever its body: the guard's scan of the headers (twice a
    # request: by the pipeline and by the Guard's last look), on an OpenAI SDK's headers
    hs = list(SDK_HEADERS)
    per = {label: statistics.median(timeit(lambda R=R: [leakguard.scan_headers(hs, R) for _ in range(1000)], reps)) / 1000
           for label, R in sets.items()}  # fmt: skip
    print(f"  the guard's scan of a request's {len(hs)} headers (an OpenAI SDK's; none holds an original): "
          + "; ".join(f"{label}: {t * 1e6:.1f} us" for label, t in per.items()))  # fmt: skip
    print("  the guard on a body with no original in it (the masked body sent again): " + "; ".join(memos))
    print("  one parse shared by the masker and the guard: " + "; ".join(shares))
    print("  verdicts: " + ("masked bodies clean, original bodies caught" if ok else "MISMATCH"))


if __name__ == "__main__":
    main()
