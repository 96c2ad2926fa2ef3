#!/usr/bin/env python3
"""disguise benchmark, AWS Bedrock: the engine's cost per event-stream frame beside the
SSE figure for the same answer.

    cd <repo> && python bench/bedrock.py            # ~30 s on 2 cores
    cd <repo> && python bench/bedrock.py --quick    # fewer repetitions

One answer of ~1 MB (text in pieces of 1-12 words, as Claude streams it, with the
disguises a model writes back — placeholders from masking the request and literals,
each split across two deltas — then a tool call whose input arrives in pieces) is sent
three ways: as the Messages API's SSE stream (AnthropicStream), as Bedrock's
InvokeModelWithResponseStream (each Anthropic event base64 in a `chunk` frame:
InvokeStream), as ConverseStream (Converse events in frames: ConverseStream) and, text
only, as Meta Llama's InvokeModelWithResponseStream chunks (`{"generation": ...}`:
bedrock_chunks.ChunkStream, the reader of every non-Claude family). Each is
fed one event per read and in 4 KiB reads. Compared with a bare loop over the pieces
and with the framer alone (sse.Framer, or eventstream.Decoder: botocore's decoder, both
checksums). Every run first checks what a client reassembles: the original text and
tool input, every frame valid.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "addon"))

from disguiselib.apis.anthropic import messages as anthropic  # noqa: E402
from disguiselib.apis.bedrock import chunks as bedrock_chunks  # noqa: E402
from disguiselib.apis.bedrock import models as bedrock_models  # noqa: E402
from disguiselib.apis.bedrock import runtime as bedrock  # noqa: E402
from disguiselib.apis.bedrock import stream as bedrock_stream  # noqa: E402
from disguiselib.base import masking  # noqa: E402
from disguiselib.rules import mappings, rules  # noqa: E402
from disguiselib.wire import eventstream, sse  # noqa: E402

WORDS = ("the of and to in is for on that with as by this from are be or an at it not which you have can "
         "stream chunk model token window request response server client config deploy build test cluster "
         "service queue cache index table column record field schema").split()  # fmt: skip
_EV = [(":content-type", "application/json"), (":message-type", "event")]


def pieces_of(seed: int, target: int, disguises: list[tuple[str, str]]) -> tuple[list[str], str, list[str], dict]:
    """Text deltas (disguised), the original text, tool-input pieces, the original input."""
    rnd = random.Random(seed)
    deltas, orig, size = [], [], 0
    while size < target:
        n = rnd.randint(1, 12)
        words = " ".join(rnd.choice(WORDS) for _ in range(n)) + " "
        if rnd.random() < 0.05:
            d, o = rnd.choice(disguises)
            k = rnd.randint(1, len(d) - 1)
            deltas += [words + d[:k], d[k:] + " "]
            orig.append(words + o + " ")
        else:
            deltas.append(words)
            orig.append(words)
        size += len(words)
    d, o = disguises[0]
    args = json.dumps({"query": f"find {d} now", "limit": 5})
    return deltas, "".join(orig), [args[i : i + 7] for i in range(0, len(args), 7)], {"query": f"find {o} now",
                                                                                         "limit": 5}  # fmt: skip


def anthropic_events(deltas: list[str], args: list[str]) -> list[dict]:
    ev: list[dict] = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                             "content": [], "model": "claude"}},
                      {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]  # fmt: skip
    ev += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in deltas]
    ev += [{"type": "content_block_stop", "index": 0},
           {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1",
                                                                          "name": "lookup", "input": {}}}]  # fmt: skip
    ev += [{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": a}}
           for a in args]  # fmt: skip
    ev += [{"type": "content_block_stop", "index": 1},
           {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
           {"type": "message_stop"}]  # fmt: skip
    return ev


def to_sse(events: list[dict]) -> list[bytes]:
    return [f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events]


def to_invoke(events: list[dict]) -> list[bytes]:
    out = []
    for e in events:
        b = base64.b64encode(json.dumps(e, separators=(",", ":")).encode()).decode()
        out.append(
            eventstream.encode([(":event-type", "chunk"), *_EV], json.dumps({"bytes": b, "p": "abcdefgh"}).encode())
        )
    return out


def to_converse(deltas: list[str], args: list[str]) -> list[bytes]:
    def f(t: str, p: dict) -> bytes:
        return eventstream.encode(
            [(":event-type", t), *_EV], json.dumps({**p, "p": "abcdefgh"}, separators=(",", ":")).encode()
        )

    out = [f("messageStart", {"role": "assistant"})]
    out += [f("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}}) for t in deltas]
    out += [f("contentBlockStop", {"contentBlockIndex": 0}),
            f("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"name": "lookup", "toolUseId": "t1"}}})]  # fmt: skip
    out += [f("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": a}}}) for a in args]
    out += [f("contentBlockStop", {"contentBlockIndex": 1}), f("messageStop", {"stopReason": "tool_use"}),
            f("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 1}})]  # fmt: skip
    return out


def to_llama(deltas: list[str]) -> list[bytes]:
    """The same text as Meta Llama streams it: one `{"generation": ...}` per chunk."""
    chunks = [{"generation": t, "prompt_token_count": None, "generation_token_count": i, "stop_reason": None}
              for i, t in enumerate(deltas)]  # fmt: skip
    chunks.append({"generation": "", "prompt_token_count": None, "generation_token_count": len(deltas),
                   "stop_reason": "stop"})  # fmt: skip
    return [eventstream.encode([(":event-type", "chunk"), *_EV], json.dumps(
        {"bytes": base64.b64encode(json.dumps(c, separators=(",", ":")).encode()).decode(), "p": "abcdefgh"}).encode())
        for c in chunks]  # fmt: skip


def client_view(kind: str, out: bytes) -> tuple[str, dict]:
    """What a client reassembles: the text and the tool input (frames through botocore's
    own decoder, so every length and checksum is checked)."""
    text, args = [], []
    if kind == "sse":
        datas = [json.loads(ev.data) for ev in sse.Framer().feed(out) if ev.data]
    else:
        from botocore.eventstream import EventStreamBuffer

        buf = EventStreamBuffer()
        buf.add_data(out)
        msgs = list(buf)
        assert all(m.headers[":message-type"] == "event" for m in msgs)
        if kind in ("invoke", "llama"):
            datas = [json.loads(base64.b64decode(json.loads(m.payload)["bytes"])) for m in msgs]
        else:
            datas = [json.loads(m.payload) for m in msgs]
    if kind == "llama":
        return "".join(d["generation"] for d in datas), {}
    for d in datas:
        delta = d.get("delta", {})
        if kind == "converse":
            text.append(delta.get("text", ""))
            args.append(delta.get("toolUse", {}).get("input", ""))
        else:
            text.append(delta.get("text", ""))
            args.append(delta.get("partial_json", ""))
    return "".join(text), json.loads("".join(args))


class SSEFramer:
    def __init__(self) -> None:
        self.f = sse.Framer()

    def feed(self, c: bytes) -> bytes:
        self.f.feed_raw(c)
        return b""

    def flush(self) -> bytes:
        self.f.flush_raw()
        return b""


class FrameReader:
    def __init__(self) -> None:
        self.d = eventstream.Decoder()

    def feed(self, c: bytes) -> bytes:
        self.d.feed(c)
        return b""

    def flush(self) -> bytes:
        self.d.end()
        return b""


class Bare:
    def feed(self, c: bytes) -> bytes:
        return c

    def flush(self) -> bytes:
        return b""


def run_loop(obj, chunks: list[bytes]) -> bytes:
    out = [obj.feed(c) for c in chunks]
    out.append(obj.flush())
    return b"".join(out)


def run(ctx) -> None:
    """bench/bench.py section `bedrock`."""
    main(["--quick"] if ctx.args.quick else [])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=20250101)
    args = ap.parse_args(argv)
    reps = 3 if args.quick else 9
    R = rules.Rules(mappings.load(REPO / "mappings"))
    emails = [f"user{i}@corp{i % 7}.example.com" for i in range(12)]
    req = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100,
                      "messages": [{"role": "user", "content": "Mail " + ", ".join(emails)}]}).encode()  # fmt: skip
    _, session = masking.mask_body(req, bedrock.INVOKE_REQUEST, R)
    disguises = list(session.placeholders.items())
    deltas, orig, arg_pieces, orig_args = pieces_of(args.seed, 1_000_000, disguises)
    events = anthropic_events(deltas, arg_pieces)
    print(f"disguise bench, Bedrock — Python {platform.python_version()}, {platform.machine()}"
          f"{', --quick' if args.quick else ''}; median of {reps}, variants interleaved; default mappings, "
          f"{len(events)} events, {len(session.placeholders)} placeholders")  # fmt: skip
    print(
        f"    {'stream':<34} {'reads':<14} {'variant':<10} {'µs/event':>9} {'MB/s':>7} {'×bare':>6} {'×framer':>8} {'×SSE':>6}"
    )
    sse_cost: dict[str, float] = {}
    for sname, kind, framed, cls, framer in (
        ("Messages SSE (AnthropicStream)", "sse", to_sse(events), anthropic.AnthropicStream, SSEFramer),
        ("InvokeWithResponseStream frames", "invoke", to_invoke(events), bedrock_stream.InvokeStream, FrameReader),
        (
            "ConverseStream frames",
            "converse",
            to_converse(deltas, arg_pieces),
            bedrock_stream.ConverseStream,
            FrameReader,
        ),
        (
            "Invoke Llama chunks (ChunkStream)",
            "llama",
            to_llama(deltas),
            bedrock_chunks.stream(bedrock_models.LLAMA.chunk),
            FrameReader,
        ),  # type: ignore[arg-type]
    ):
        data = b"".join(framed)
        nev = len(framed)
        for cname, pieces in (
            ("1 event/read", framed),
            ("4 KiB reads", [data[i : i + 4096] for i in range(0, len(data), 4096)]),
        ):
            got = client_view(kind, run_loop(cls(R.restorer(session.placeholders)), pieces))
            status = "OK" if got == (orig, {} if kind == "llama" else orig_args) else "MISMATCH"
            factories = {"bare loop": Bare, "framer": framer,
                         "disguise": lambda cls=cls: cls(R.restorer(session.placeholders))}  # fmt: skip
            times: dict[str, list[float]] = {k: [] for k in factories}
            for r in range(reps + 1):
                for name in list(factories) if r % 2 == 0 else list(reversed(factories)):
                    obj = factories[name]()
                    gc.collect()
                    t0 = time.perf_counter()
                    run_loop(obj, pieces)
                    if r:
                        times[name].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            per = med["disguise"] / nev * 1e6
            if kind == "sse":
                sse_cost[cname] = per
            for name in factories:
                t = med[name]
                first = name == "bare loop"
                ratio = f"{per / sse_cost[cname]:>6.2f}" if name == "disguise" else ""
                print(f"    {sname if first and cname == '1 event/read' else '':<34} {cname if first else '':<14} "
                      f"{name:<10} {t / nev * 1e6:>9.2f} {len(data) / t / 1e6:>7.1f} {t / med['bare loop']:>6.1f} "
                      f"{t / med['framer']:>8.2f} {ratio:>6}")  # fmt: skip
            print(f"    {'':<34} {'':<14} client view: {status}")
            try:
                from report import check, figure  # bench.py's summary, when run from there

                if name == "disguise" and cname == "1 event/read":
                    figure("bedrock", f"{sname}: µs/event", f"{per:.2f}")
                check("bedrock", f"{sname}, {cname}: client view", [] if status == "OK" else [status])
            except ImportError:
                pass


if __name__ == "__main__":
    main()
