"""What telling a request's endpoint costs, now that every documented endpoint of the
providers' inventories (providers/*.ENDPOINTS) is LLM-shaped too.

    python bench/routing.py

For a few paths (an API disguise transforms, a documented one it scans, a web page, a
long asset path, a REST path of another service) it prints side by side, in µs per
call (median of 7 runs): `registry.recognise`; the LLM-shape test without the
inventories (the regular expression it had before); `registry.llm_shaped` (with them);
and their ratio. Then the growth of llm_shaped when a path doubles (linear time: about
2x per doubling)."""

from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "addon"))

from disguiselib.apis import registry

PATHS = {
    "transformed": "/v1/chat/completions",
    "documented": "/v1/evals/eval_1/runs",
    "web page": "/index.html",
    "asset": "/static/app/" + "x" * 200 + ".js",
    "other REST": "/api/v1/users/123/profile?expand=teams",
}


def per_call(fn, arg: str, n: int = 20_000) -> float:
    return statistics.median(timeit.repeat(lambda: fn(arg), number=n, repeat=7)) / n * 1e6


def before(path: str) -> bool:
    return bool(registry._LLM_SHAPED.search(registry._path(path).lower()))


def main() -> None:
    print(f"{'path':12} {'recognise':>10} {'shaped before':>14} {'llm_shaped':>11} {'ratio':>6}   (µs per call)")
    for name, p in PATHS.items():
        r = per_call(lambda x: registry.recognise("POST", x), p)
        b, a = per_call(before, p), per_call(registry.llm_shaped, p)
        print(f"{name:12} {r:10.2f} {b:14.2f} {a:11.2f} {a / b:6.2f}")
    print("\nllm_shaped on a path of n segments ('/v1/x' repeated, no match):")
    last = None
    for n in (1_000, 2_000, 4_000, 8_000):
        t = per_call(registry.llm_shaped, "/v1/x" * n, 20)
        grow = f"  x{t / last:.2f} on doubling" if last else ""
        print(f"  n={n:5}: {t / 1000:8.3f} ms{grow}")
        last = t
    # recognise on paths that repeat what a route's pattern backtracks over (a model name
    # spelling `embedding` again and again: quadratic before it was read by a look-ahead)
    adversarial = {
        "embedding x n": lambda n: "/v1/publishers/google/models/" + "embedding" * n + ":x",
        ":embedContent x n": lambda n: "/v1beta/models/" + "embedContent:" * n + "y",
        "/models/ x n": lambda n: "/v1beta/models/a" * n + ":x",
    }
    for name, make in adversarial.items():
        print(f"\nrecognise on {name} (no match):")
        last = None
        for n in (1_000, 2_000, 4_000, 8_000):
            t = per_call(lambda x: registry.recognise("POST", x), make(n), 20)
            grow = f"  x{t / last:.2f} on doubling" if last else ""
            print(f"  n={n:5}: {t / 1000:8.3f} ms{grow}")
            last = t


if __name__ == "__main__":
    main()
