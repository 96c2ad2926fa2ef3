"""(realtime) The cost per WebSocket message beside the SSE figure (issue 19).

The same text — prose with 120 ordinary-word disguises, cut into 1–10-char deltas with a
cut inside every disguise (as (b)) — once as an OpenAI Responses SSE stream
(`response.output_text.delta` events, one event per feed of `ResponsesStream`) and once
as OpenAI Realtime server events (`response.output_text.delta` messages, one message per
`Connection.server` call), 100 literals + the default mappings. Beside them: an audio
delta (8 KB of base64) either way, and the client side: a `conversation.item.create`
with originals and a 32 KB `input_audio_buffer.append` (masking + the leak check per
frame) beside `mask_body` of a request carrying the same text.

Then through mitmdump: proxy CPU (utime+stime of mitmdump) per message for the realtime
events over a WebSocket, plain mitmdump and the addon, beside the same for the Responses
stream over SSE (one event per upstream write).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time

import report
import streams
from common import cold, median
from context import Ctx
from proxies import Client, Mitmdump, Upstream, mappings_dir, tmpdir, variant_args

from disguiselib.apis.openai import responses as openai_responses
from disguiselib.apis.openai.realtime import OpenAIRealtime
from disguiselib.base import masking
from disguiselib.base.realtime import Connection, Frame
from disguiselib.pipeline import client_frame

N_DISGUISED = 120


def _material(c: Ctx) -> tuple[str, list[str]]:
    disg = [(d, o) for o, d in c.ordinary.items()]
    _, orig, pieces, _ = streams.disguised_text(c.rng(71), 12_000, disg, N_DISGUISED, False, False, 1, 10)
    return orig, pieces


def sse_events(pieces: list[str]) -> list[bytes]:
    out = []
    for i, p in enumerate(pieces):
        d = {"type": "response.output_text.delta", "sequence_number": i + 4, "item_id": "msg_1", "output_index": 0,
             "content_index": 0, "delta": p, "logprobs": []}  # fmt: skip
        out.append(streams.ev("response.output_text.delta", json.dumps(d, separators=(",", ":"))))
    done = {"type": "response.output_text.done", "sequence_number": len(pieces) + 4, "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "text": "".join(pieces), "logprobs": []}  # fmt: skip
    out.append(streams.ev("response.output_text.done", json.dumps(done, separators=(",", ":"))))
    return out


def ws_events(pieces: list[str]) -> list[bytes]:
    ids = {"response_id": "resp_1", "item_id": "item_1", "output_index": 0, "content_index": 0}
    out = [json.dumps({"type": "response.output_text.delta", "event_id": f"event_{i:06d}", **ids, "delta": p},
                      separators=(",", ":")).encode() for i, p in enumerate(pieces)]  # fmt: skip
    out.append(json.dumps({"type": "response.output_text.done", "event_id": "event_done", **ids,
                           "text": "".join(pieces)}, separators=(",", ":")).encode())  # fmt: skip
    return out


def _ws_text(frames: list[bytes]) -> str:
    return "".join(d["delta"] for d in map(json.loads, frames) if d["type"] == "response.output_text.delta")


def _sse_text(chunks: list[bytes]) -> str:
    text = []
    for raw in b"".join(chunks).split(b"\n\n"):
        for line in raw.split(b"\n"):
            if line.startswith(b"data: "):
                d = json.loads(line[6:])
                if d.get("type") == "response.output_text.delta":
                    text.append(d["delta"])
    return "".join(text)


def _per(fn, n: int, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times) / n


def part_engine(c: Ctx) -> None:
    reps = 3 if c.quick else 7
    orig, pieces = _material(c)
    R = c.R_ordinary  # noqa: N806
    sse = sse_events(pieces)
    ws = ws_events(pieces)
    print(f"  {len(pieces):,} text deltas of 1-10 chars, {N_DISGUISED} disguises each cut across deltas; "
          "100 ordinary-word literals + default mappings; one event (SSE) / one message (WebSocket) per call")  # fmt: skip

    got: dict[str, str] = {}

    def run_sse() -> None:
        s = openai_responses.ResponsesStream(R.restorer({}))
        out = [s.feed(e) for e in sse]
        got["sse"] = _sse_text(out)

    def run_ws() -> None:
        conn = Connection(OpenAIRealtime, R)
        got["ws"] = _ws_text([f.data for e in ws for f in conn.server(Frame(e)).frames])

    per_sse = _per(run_sse, len(sse), reps)
    per_ws = _per(run_ws, len(ws), reps)
    problems = [f"{k}: reassembled text differs from the original" for k in ("sse", "ws") if got[k] != orig]
    ok = report.check("realtime", "text deltas restored, SSE and WebSocket", problems)
    fig = report.figure("realtime", "engine µs per WebSocket text message (SSE event)",
                        f"{per_ws * 1e6:.1f} ({per_sse * 1e6:.1f}) µs")  # fmt: skip
    print(f"    text deltas: SSE {per_sse * 1e6:.1f} µs/event, WebSocket {per_ws * 1e6:.1f} µs/message "
          f"({per_ws / per_sse:.2f}× the SSE figure); median of {reps}; output {ok} {fig}")

    audio = base64.b64encode(random.Random(c.seed).randbytes(6000)).decode()
    ws_audio = json.dumps({"type": "response.output_audio.delta", "event_id": "e", "response_id": "r", "item_id": "i",
                           "output_index": 0, "content_index": 0, "delta": audio}).encode()  # fmt: skip
    sse_audio = streams.ev("response.audio.delta", json.dumps({"type": "response.audio.delta", "sequence_number": 1,
                                                               "delta": audio}))  # fmt: skip
    conn = Connection(OpenAIRealtime, R)
    s = openai_responses.ResponsesStream(R.restorer({}))
    n = 200
    per_wa = _per(lambda: [conn.server(Frame(ws_audio)) for _ in range(n)], n, reps)
    per_sa = _per(lambda: [s.feed(sse_audio) for _ in range(n)], n, reps)
    print(f"    audio delta ({len(audio) / 1e3:.0f} kB base64): SSE {per_sa * 1e6:.1f} µs/event, "
          f"WebSocket {per_wa * 1e6:.1f} µs/message (passed byte-identical)")

    text = " ".join(orig.split()[:180])
    originals = list(c.ordinary)[:3]
    item = {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": f"{text} {originals[0]} {originals[1]} {originals[2]}"}]}}  # fmt: skip
    frame = Frame(json.dumps(item).encode())
    append = Frame(json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(random.Random(1).randbytes(24_000)).decode()}).encode())
    body = json.dumps({"model": "gpt", "input": [{"role": "user", "content": item["item"]["content"]}]}).encode()
    conn = Connection(OpenAIRealtime, R)
    # each message as if its text were new (the rules remember texts met before: cold)
    per_c = _per(lambda: [cold(R, lambda: client_frame(conn, frame))() for _ in range(n)], n, reps)
    per_a = _per(lambda: [cold(R, lambda: client_frame(conn, append))() for _ in range(n)], n, reps)
    per_b = _per(lambda: [cold(R, lambda: masking.mask_body(body, openai_responses.RESPONSES_REQUEST, R))()
                          for _ in range(n)], n, reps)  # fmt: skip
    masked = client_frame(conn, frame).frames[0].data
    problems = [f"original {o!r} left in the masked frame" for o in originals if o.encode() in masked]
    problems += [] if client_frame(conn, append).frames[0] is append else ["audio append changed"]
    ok = report.check("realtime", "client frames masked, audio untouched", problems)
    print(f"    client frame, {len(frame.data) / 1e3:.1f} kB conversation.item.create: {per_c * 1e6:.0f} µs "
          f"(mask + leak check); mask_body of a request with the same text {per_b * 1e6:.0f} µs; "
          f"{len(append.data) / 1e3:.0f} kB input_audio_buffer.append: {per_a * 1e6:.0f} µs; output {ok}")


# -- through mitmdump ----------------------------------------------------------------------


class _WsUpstream:
    """A websockets server thread that sends `events` to every connection, then closes."""

    def __init__(self, events: list[bytes]) -> None:
        from websockets.sync.server import serve

        self.events = events

        def handler(ws) -> None:
            for e in self.events:
                ws.send(e.decode())
            ws.close()

        self.server = serve(handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(10)


def _ws_fetch(port: int) -> tuple[float, str]:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    frames = []
    t0 = time.perf_counter()
    with connect(f"ws://127.0.0.1:{port}/v1/realtime?model=bench", compression=None, max_size=None) as ws:
        try:
            while True:
                frames.append(ws.recv(decode=False))
        except ConnectionClosed:
            pass
    return time.perf_counter() - t0, _ws_text(frames)


def part_proxies(c: Ctx) -> None:
    from common import proc_cpu

    runs = 3 if c.quick else 5
    orig, pieces = _material(c)
    tmp = tmpdir()
    mdir = mappings_dir(tmp, "ordinary-rt", c.ordinary)
    wsu = _WsUpstream(ws_events(pieces))
    sfile = tmp / "responses.sse"
    sfile.write_bytes(b"".join(sse_events(pieces)) + streams.ev(
        "response.completed", json.dumps({"type": "response.completed", "sequence_number": len(pieces) + 4,
                                          "response": {"id": "resp_1", "status": "completed", "output": []}})))  # fmt: skip
    up = Upstream([f"/v1/responses={sfile}"], per_write=1)
    procs: dict[str, Mitmdump] = {}
    problems: list[str] = []
    try:
        for k in ("plain", "addon"):
            procs["ws-" + k] = Mitmdump(wsu.port, [] if k == "plain" else variant_args(tmp, k, mdir), tmp, f"rt-ws-{k}")
            procs["sse-" + k] = Mitmdump(up.port, variant_args(tmp, k, mdir), tmp, f"rt-sse-{k}")
        ports = {k: m.wait() for k, m in procs.items()}
        cpu: dict[str, list[float]] = {k: [] for k in procs}
        for i in range(runs + 1):
            for k in (list(procs) if i % 2 else list(reversed(procs))):
                pid = procs[k].pid
                c0 = proc_cpu(pid)
                if k.startswith("ws"):
                    _, text = _ws_fetch(ports[k])
                    if k == "ws-addon" and text != orig:
                        problems.append("WebSocket: the client's text differs from the original")
                else:
                    cl = Client(ports[k])
                    try:
                        _, _, body = cl.post(c.requests["responses"], 1, path="/v1/responses")
                    finally:
                        cl.close()
                    if k == "sse-addon" and _sse_text([body]) != orig:
                        problems.append("SSE: the client's text differs from the original")
                if i:
                    cpu[k].append(proc_cpu(pid) - c0)
    finally:
        for m in procs.values():
            m.stop()
        up.stop()
        wsu.stop()
    n = len(pieces)
    per = {k: median(v) / n * 1e6 for k, v in cpu.items()}
    add_ws = per["ws-addon"] - per["ws-plain"]
    add_sse = per["sse-addon"] - per["sse-plain"]
    ok = report.check("realtime", "through mitmdump: text restored, SSE and WebSocket", problems)
    fig = report.figure("realtime", "addon CPU added per WebSocket message (SSE event)", f"+{add_ws:.0f} (+{add_sse:.0f}) µs")
    print(f"  through mitmdump, {n:,} deltas, proxy CPU per message (schedstat, median of {runs}):")
    print(f"    WebSocket: plain {per['ws-plain']:.0f} µs, addon {per['ws-addon']:.0f} µs (+{add_ws:.0f} µs/message)")
    print(f"    SSE:       plain {per['sse-plain']:.0f} µs, addon {per['sse-addon']:.0f} µs (+{add_sse:.0f} µs/event); "
          f"output {ok} {fig}")

def run(c: Ctx) -> None:
    print("(realtime) cost per WebSocket message, beside the SSE figure")
    part_engine(c)
    part_proxies(c)
