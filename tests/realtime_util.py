"""Realtime (WebSocket) events for the tests and the bench: OpenAI Realtime server
events in the GA shapes of the official SDK's types (`openai.types.realtime`), Gemini
Live server messages in google-genai's `LiveServerMessage` shape, and readers that put
a client's view back together per channel, the way the SDKs accumulate it.

`check_openai` and `check_gemini` validate events against those SDK types, so a
scripted upstream cannot drift from what the real APIs send.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable


def dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- OpenAI Realtime ------------------------------------------------------------------------


class OpenAIScript:
    """Builds the server events of OpenAI Realtime responses, numbering event ids."""

    def __init__(self) -> None:
        self.n = 0

    def ev(self, t: str, **fields: object) -> dict:
        self.n += 1
        return {"type": t, "event_id": f"event_{self.n:04d}", **fields}

    def session(self, t: str, instructions: str, tools: list | None = None) -> dict:
        return self.ev(t, session={"type": "realtime", "object": "realtime.session", "id": "sess_1",
                                   "model": "gpt-realtime", "output_modalities": ["audio"],
                                   "instructions": instructions, "tools": tools or [], "tool_choice": "auto",
                                   "max_output_tokens": "inf"})  # fmt: skip

    def response_created(self, rid: str) -> dict:
        return self.ev("response.created", response={"id": rid, "object": "realtime.response", "status": "in_progress",
                                                     "output": [], "conversation_id": "conv_1"})  # fmt: skip

    def response_done(self, rid: str, output: list) -> dict:
        return self.ev("response.done", response={"id": rid, "object": "realtime.response", "status": "completed",
                                                  "output": output, "conversation_id": "conv_1"})  # fmt: skip

    def message(self, rid: str, iid: str, oi: int, pieces: list[str], kind: str = "text",
                audio: list[str] | None = None) -> tuple[list[dict], dict]:
        """An assistant message with one content part: output text (kind "text") or output
        audio with its transcript ("transcript"; `audio` base64 chunks interleaved).
        Returns the events and the finished item."""
        whole = "".join(pieces)
        part_type = "text" if kind == "text" else "audio"  # a content part event's part
        item_part_type = "output_text" if kind == "text" else "output_audio"  # the item's content
        field = "text" if kind == "text" else "transcript"
        delta_t = "response.output_text.delta" if kind == "text" else "response.output_audio_transcript.delta"
        done_t = "response.output_text.done" if kind == "text" else "response.output_audio_transcript.done"
        ids = {"response_id": rid, "item_id": iid, "output_index": oi}
        item = {"id": iid, "object": "realtime.item", "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}  # fmt: skip
        out = [self.ev("response.output_item.added", response_id=rid, output_index=oi, item=item),
               self.ev("conversation.item.added", previous_item_id=None, item=item),
               self.ev("response.content_part.added", **ids, content_index=0, part={"type": part_type, field: ""})]  # fmt: skip
        audio = list(audio or [])
        for p in pieces:
            if audio:
                out.append(self.ev("response.output_audio.delta", **ids, content_index=0, delta=audio.pop(0)))
            out.append(self.ev(delta_t, **ids, content_index=0, delta=p))
        for a in audio:
            out.append(self.ev("response.output_audio.delta", **ids, content_index=0, delta=a))
        if kind != "text":
            out.append(self.ev("response.output_audio.done", **ids, content_index=0))
        out.append(self.ev(done_t, **ids, content_index=0, **{field: whole}))
        out.append(self.ev("response.content_part.done", **ids, content_index=0, part={"type": part_type, field: whole}))
        done_item = {**item, "status": "completed", "content": [{"type": item_part_type, field: whole}]}
        out.append(self.ev("response.output_item.done", response_id=rid, output_index=oi, item=done_item))
        out.append(self.ev("conversation.item.done", previous_item_id=None, item=done_item))
        return out, done_item

    def function_call(self, rid: str, iid: str, oi: int, call_id: str, name: str,
                      pieces: list[str]) -> tuple[list[dict], dict]:
        whole = "".join(pieces)
        item = {"id": iid, "object": "realtime.item", "type": "function_call", "status": "in_progress",
                "name": name, "call_id": call_id, "arguments": ""}  # fmt: skip
        ids = {"response_id": rid, "item_id": iid, "output_index": oi, "call_id": call_id}
        out = [self.ev("response.output_item.added", response_id=rid, output_index=oi, item=item),
               self.ev("conversation.item.added", previous_item_id=None, item=item)]  # fmt: skip
        for p in pieces:
            out.append(self.ev("response.function_call_arguments.delta", **ids, delta=p))
        out.append(self.ev("response.function_call_arguments.done", **ids, name=name, arguments=whole))
        done_item = {**item, "status": "completed", "arguments": whole}
        out.append(self.ev("response.output_item.done", response_id=rid, output_index=oi, item=done_item))
        out.append(self.ev("conversation.item.done", previous_item_id=None, item=done_item))
        return out, done_item

    def input_transcription(self, iid: str, pieces: list[str]) -> list[dict]:
        out = [self.ev("conversation.item.input_audio_transcription.delta", item_id=iid, content_index=0, delta=p)
               for p in pieces]  # fmt: skip
        out.append(self.ev("conversation.item.input_audio_transcription.completed", item_id=iid, content_index=0,
                           transcript="".join(pieces), usage={"type": "duration", "seconds": 1.5}))  # fmt: skip
        return out


def check_openai(events: Iterable[dict]) -> None:
    """Each event must validate as the SDK's RealtimeServerEvent (GA)."""
    from openai.types.realtime import RealtimeServerEvent
    from pydantic import TypeAdapter

    ta = TypeAdapter(RealtimeServerEvent)
    for ev in events:
        ta.validate_python(ev)


DELTA_TYPES = {
    "response.output_text.delta": "text",
    "response.text.delta": "text",
    "response.output_audio_transcript.delta": "transcript",
    "response.audio_transcript.delta": "transcript",
    "response.function_call_arguments.delta": "arguments",
    "response.mcp_call_arguments.delta": "arguments",
    "conversation.item.input_audio_transcription.delta": "input",
}
DONE_TYPES = {
    "response.output_text.done": ("text", "text"),
    "response.output_audio_transcript.done": ("transcript", "transcript"),
    "response.function_call_arguments.done": ("arguments", "arguments"),
    "conversation.item.input_audio_transcription.completed": ("input", "transcript"),
}


def openai_channel(ev: dict, kind: str) -> tuple:
    if kind == "input":
        return ("input", ev.get("item_id"), ev.get("content_index"))
    return (ev.get("response_id"), ev.get("item_id"), ev.get("output_index"), ev.get("content_index"), kind)


def read_openai(events: Iterable[dict]) -> tuple[dict, dict, list[str]]:
    """What a client accumulates: per channel the concatenated deltas, per channel the
    `.done` event's whole text; and a list of order violations (a delta after its
    channel's `.done`)."""
    deltas: dict = defaultdict(str)
    dones: dict = {}
    problems: list[str] = []
    for ev in events:
        t = ev.get("type")
        if t in DELTA_TYPES:
            key = openai_channel(ev, DELTA_TYPES[t])
            if key in dones:
                problems.append(f"delta after done on {key}")
            deltas[key] += ev["delta"]
        elif t in DONE_TYPES:
            kind, field = DONE_TYPES[t]
            dones[openai_channel(ev, kind)] = ev[field]
    return dict(deltas), dones, problems


# -- Gemini Live ------------------------------------------------------------------------------


def gemini_text(text: str) -> dict:
    return {"serverContent": {"modelTurn": {"parts": [{"text": text}], "role": "model"}}}


def gemini_audio(b64: str) -> dict:
    return {"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000",
                                                                       "data": b64}}], "role": "model"}}}  # fmt: skip


def gemini_transcript(which: str, text: str, finished: bool | None = None) -> dict:
    t: dict = {"text": text}
    if finished is not None:
        t["finished"] = finished
    return {"serverContent": {which: t}}


def gemini_flag(*flags: str) -> dict:
    return {"serverContent": {f: True for f in flags}}


def gemini_tool_call(calls: list[dict]) -> dict:
    return {"toolCall": {"functionCalls": calls}}


def check_gemini(messages: Iterable[dict]) -> None:
    """Each message must validate as google-genai's LiveServerMessage, with nothing unknown."""
    from google.genai import types

    for m in messages:
        types.LiveServerMessage.model_validate(_snake(m))


def _snake(x: object) -> object:
    if isinstance(x, dict):
        return {"".join("_" + c.lower() if c.isupper() else c for c in k): _snake(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_snake(v) for v in x]
    return x


def read_gemini(messages: Iterable[dict]) -> dict[str, str]:
    """What a client accumulates per channel: model text (non-thought text parts), the
    output and the input transcription."""
    out: dict[str, str] = defaultdict(str)
    for m in messages:
        sc = m.get("serverContent") or {}
        for p in (sc.get("modelTurn") or {}).get("parts") or []:
            if isinstance(p.get("text"), str) and not p.get("thought"):
                out["model"] += p["text"]
        for which, key in (("outputTranscription", "output"), ("inputTranscription", "input")):
            t = sc.get(which)
            if isinstance(t, dict) and isinstance(t.get("text"), str):
                out[key] += t["text"]
    return dict(out)


# -- a fake realtime upstream (integration tests, bench) -----------------------------------------


class Peer:
    """The upstream's side of one WebSocket connection: what it received, what it sends."""

    def __init__(self, ws, upstream: FakeRealtime) -> None:
        self.ws = ws
        self.up = upstream
        self.path = ws.request.path
        process = ws.process_event  # every frame read, control frames too (the library answers pings itself)

        def recording(event) -> None:
            name = getattr(getattr(event, "opcode", None), "name", "")
            if name in ("PING", "PONG", "CLOSE"):
                upstream.controls.append((self.path, name.lower(), bytes(event.data)))
            process(event)

        ws.process_event = recording

    def recv(self, timeout: float = 10) -> tuple[bool, bytes]:
        """The next client frame (text?, bytes), recorded."""
        m = self.ws.recv(timeout=timeout)  # a text frame as str, a binary one as bytes
        rec = (self.path, isinstance(m, str), m.encode() if isinstance(m, str) else m)
        self.up.received.append(rec)
        return rec[1], rec[2]

    def recv_json(self, timeout: float = 10) -> dict:
        return json.loads(self.recv(timeout)[1])

    def send(self, data: dict | bytes | str, binary: bool = False) -> None:
        if isinstance(data, dict):
            data = dumps(data)
        if isinstance(data, str):
            data = data.encode()
        self.ws.send(data, text=not binary)

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.ws.close(code, reason)


class FakeRealtime:
    """A WebSocket server on 127.0.0.1:0 (the `websockets` library, threaded) standing in
    for a realtime API: every connection runs the scenario named by its `model` (the
    URL's `model=` query for OpenAI, `setup.model` for Gemini: neither is ever masked),
    and every frame it receives is recorded in `received` as (path, text?, bytes), every
    control frame in `controls` as (path, kind, payload) from the moment the scenario
    runs (a client waits for the scenario's first event before it sends any)."""

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.received: list[tuple[str, bool, bytes]] = []
        self.controls: list[tuple[str, str, bytes]] = []  # (path, "ping" | "pong" | "close", payload)
        self.scenarios: dict[str, object] = {}
        self.errors: list[BaseException] = []
        self.server = serve(self._handle, "127.0.0.1", 0, max_size=None, compression=None)
        self.port = self.server.socket.getsockname()[1]
        import threading

        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeRealtime:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self._thread.join(10)

    def on(self, model: str, scenario) -> None:
        self.scenarios[model] = scenario

    def frames(self, path_part: str = "") -> list[tuple[bool, bytes]]:
        return [(t, d) for p, t, d in list(self.received) if path_part in p]

    def _handle(self, ws) -> None:
        from urllib.parse import parse_qs, urlsplit

        peer = Peer(ws, self)
        try:
            model = parse_qs(urlsplit(peer.path).query).get("model", [""])[0]
            if not model:  # Gemini: the first message is the setup
                text, first = peer.recv()
                model = json.loads(first).get("setup", {}).get("model", "").rsplit("/", 1)[-1]
                peer.first = json.loads(first)  # type: ignore[attr-defined]
            scenario = self.scenarios.get(model)
            if scenario is None:
                peer.close(1011, f"no scenario {model!r}")
                return
            scenario(peer)  # type: ignore[operator]
        except Exception as e:  # noqa: BLE001 - kept for the test to report
            from websockets.exceptions import ConnectionClosed

            if not isinstance(e, ConnectionClosed):
                self.errors.append(e)
