"""What the Prometheus metrics (`disguise_metrics`, mitm/metrics.py) cost the addon.

    python bench/metrics.py            # ~30 s on 2 cores
    python bench/metrics.py --quick

In one process, the script's addon chain (launch.addons: Metrics, Disguise, its
Inspector, the Metrics' tail) driven hook by hook as mitmproxy drives it, side by side
in three set-ups, interleaved run by run: the chain without the two Metrics addons
(before issue 31), with them and the option off (the default), and with the option on
(an endpoint on 127.0.0.1:0, scraped between runs):

CPU time of this thread (time.thread_time: what the event loop would spend), for
- a request: requestheaders + request + response hooks of a 2 kB /v1/messages body with
  originals (masked, timed, counted), in microseconds;
- a stream: an Anthropic stream of 2,000 text deltas with disguises cut across them,
  one event per read, through `flow.response.stream` (the Inspector's Tee, the metrics'
  timer, the stream callable), in microseconds per read.

Medians of repeated runs, and each set-up as a ratio to the chain without metrics. It
checks that every stream came back restored the same in the three set-ups.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402,F401  (puts addon/ on sys.path)
from mitmproxy.test import taddons, tflow, tutils  # noqa: E402

from disguiselib.mitm.addon import Disguise  # noqa: E402
from disguiselib.mitm.metrics import Metrics  # noqa: E402

MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Project Bluebird: Project Heron
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
SETUPS = ("no metrics addon", "metrics off", "metrics on")


def _event(name: str, doc: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def stream_events(n: int) -> tuple[list[bytes], str]:
    """An Anthropic stream of n text deltas (the masked text, disguises cut across
    deltas) and the text the client must read."""
    words = ["the", "report", "for", "Zenith Labs", "is", "due;", "ask", "[EMAIL_1]", "about", "Project Heron", "now."]
    masked = " ".join(words[i % len(words)] for i in range(n))
    pieces = [masked[k : k + 7] for k in range(0, len(masked), 7)][:n]
    text = "".join(pieces)
    evs = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),  # fmt: skip
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]  # fmt: skip
    for p in pieces:
        evs.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": p}}))  # fmt: skip
    evs += [_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                     "usage": {"output_tokens": 1}}),
            _event("message_stop", {"type": "message_stop"})]  # fmt: skip
    want = text.replace("Zenith Labs", "Acme Corp").replace("[EMAIL_1]", "ann@corp.example.com")
    return evs, want.replace("Project Heron", "Project Bluebird")


def request_flow() -> tflow.HTTPFlow:
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = "/v1/messages"
    f.request.host = "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    content = ("Acme Corp asks ann@corp.example.com about Project Bluebird. " * 30)[:1900]
    f.request.content = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                                    "messages": [{"role": "user", "content": content}]}).encode()  # fmt: skip
    return f


def _text(body: bytes) -> str:
    out = []
    for block in body.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                doc = json.loads(line[6:])
                if doc.get("type") == "content_block_delta":
                    out.append(doc["delta"]["text"])
    return "".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--events", type=int, default=2000)
    args = ap.parse_args(argv)
    reps = 5 if args.quick else 15
    n_req = 100 if args.quick else 300
    evs, want = stream_events(args.events)
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-metrics-"))
    (tmp / "m.yaml").write_text(MAPPING)
    d = Disguise()
    m = Metrics(d)
    d.reloaded = m.reloaded
    req_us: dict[str, list[float]] = {s: [] for s in SETUPS}
    read_us: dict[str, list[float]] = {s: [] for s in SETUPS}
    problems: list[str] = []
    with taddons.context(m, d, d.inspect, m.tail) as tctx:
        tctx.configure(d, disguise_mappings=[str(tmp / "m.yaml")], disguise_defaults=False)
        chains = {
            "no metrics addon": [d, d.inspect],
            "metrics off": [m, d, d.inspect, m.tail],
            "metrics on": [m, d, d.inspect, m.tail],
        }

        def hook(chain: list, name: str, f) -> None:
            for a in chain:
                fn = getattr(a, name, None)
                if fn is not None:
                    fn(f)

        for _ in range(reps):
            for setup in SETUPS:
                tctx.configure(m, disguise_metrics="127.0.0.1:0" if setup == "metrics on" else "")
                chain = chains[setup]
                # requests: masked, answered with a small whole body
                t = time.thread_time()
                for _ in range(n_req):
                    f = request_flow()
                    hook(chain, "requestheaders", f)
                    hook(chain, "request", f)
                    f.response = tutils.tresp(content=b'{"type":"message","content":[]}')
                    f.response.headers["content-type"] = "application/json"
                    hook(chain, "responseheaders", f)
                    hook(chain, "response", f)
                req_us[setup].append((time.thread_time() - t) / n_req * 1e6)
                # a stream, one event per read
                f = request_flow()
                hook(chain, "requestheaders", f)
                hook(chain, "request", f)
                f.response = tutils.tresp(content=b"")
                f.response.headers["content-type"] = "text/event-stream"
                hook(chain, "responseheaders", f)
                call = f.response.stream
                out: list[bytes] = []
                t = time.thread_time()
                for e in evs:
                    out += call(e)
                out += call(b"")
                read_us[setup].append((time.thread_time() - t) / (len(evs) + 1) * 1e6)
                hook(chain, "response", f)
                got = _text(b"".join(out))
                if got != want:
                    problems.append(f"{setup}: the stream came back otherwise")
                if setup == "metrics on":
                    assert m.server is not None
                    with urllib.request.urlopen(m.server.url, timeout=10) as r:
                        scrape = r.read().decode()
                    if "ann@corp.example.com" in scrape or "Acme Corp" in scrape:
                        problems.append("an original in the scrape")
        tctx.configure(m, disguise_metrics="")
        m.done()
        tctx.master.event_loop.close()

    own_req, own_read = bookkeeping(m, d, tmp)
    base_req = statistics.median(req_us[SETUPS[0]])
    base_read = statistics.median(read_us[SETUPS[0]])
    print(f"metrics cost: the addon chain driven hook by hook in one process, thread CPU time, medians of {reps} interleaved runs, "
          f"Python {sys.version.split()[0]}")  # fmt: skip
    print(f"  {'set-up':<20}{'request (us)':>14}{'ratio':>8}{'stream read (us)':>18}{'ratio':>8}")
    for s in SETUPS:
        r, e = statistics.median(req_us[s]), statistics.median(read_us[s])
        print(f"  {s:<20}{r:>14.1f}{r / base_req:>8.3f}{e:>18.2f}{e / base_read:>8.3f}")
    print(f"  (a request: requestheaders + request + response of a 2 kB masked body and a small whole answer, "
          f"x{n_req} a run; a stream: {len(evs)} events, one a read)")  # fmt: skip
    print(f"  the metrics' own work, timed alone (timeit, best of 5): {own_req:.1f} us a request (its counters, "
          f"histograms, observer), {own_read:.2f} us a stream read (the timer around the stream callable)")
    print("  checks: " + ("; ".join(problems) if problems else "every stream restored the same in the three set-ups, "
                          "no original in any scrape"))  # fmt: skip


def bookkeeping(m: Metrics, d: Disguise, tmp: Path) -> tuple[float, float]:
    """What the metrics add, alone: per request, the transitions of a masked flow's
    record (counted when it left, its masks per rule, its response restored) and the
    timing of its hooks; per read, the timer around a stream callable."""
    import timeit

    from disguiselib.mitm.metrics import Timed
    from disguiselib.state import Phase

    f = request_flow()
    with taddons.context(m, d, d.inspect, m.tail) as tctx:
        tctx.configure(d, disguise_mappings=[str(tmp / "m.yaml")], disguise_defaults=False)
        d.requestheaders(f)
        d.request(f)
        rec = d.guard.records[f.id]
        assert rec.phase is Phase.MASKED
        masked = rec.phase
        tctx.configure(m, disguise_metrics="127.0.0.1:0")
        tail = m.tail

        def one() -> None:
            rec.phase = masked
            m.request(f)
            m.transition(f.id, rec)  # MASKED: pending
            tail.request(f)
            rec.phase = Phase.RECEIVING
            m.transition(f.id, rec)  # counted
            m.response(f)
            rec.phase = Phase.RESTORED
            m.transition(f.id, rec)
            tail.response(f)

        n = 2000
        per_req = min(timeit.repeat(one, number=n, repeat=5)) / n * 1e6
        observe = m.m.read_seconds.child("anthropic.messages")
        inner = lambda data: data  # noqa: E731
        timed = Timed(inner, observe)
        n = 200_000
        bare = min(timeit.repeat(lambda: inner(b"x"), number=n, repeat=5))
        wrapped = min(timeit.repeat(lambda: timed(b"x"), number=n, repeat=5))
        tctx.configure(m, disguise_metrics="")
        tctx.master.event_loop.close()
    return per_req, (wrapped - bare) / n * 1e6


def run(ctx) -> None:
    """bench/bench.py section `metrics`."""
    main(["--quick"] if ctx.args.quick else [])


if __name__ == "__main__":
    main()
