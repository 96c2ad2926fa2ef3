"""Helpers for the inspection / replay / audit tests: an echoing fake provider and a
recorded session made by real mitmdump runs."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from integration_util import Recorded, Reply, sse, sse_data

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
KEY_RX = r"\bsk-ant-[A-Za-z0-9_-]{20,}"
MAPPINGS = {
    "literals": {"Acme Corp": "Zenith Labs", "acme_lookup": "crm_lookup"},
    "patterns": [{"name": "ANTHROPIC_KEY", "regex": KEY_RX}, {"name": "EMAIL", "regex": EMAIL_RX}],
}
BOB = "bob@corp.example.com"
KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"
PROMPT = f"Acme Corp asks: mail {BOB} and rotate {KEY}. Acme Corp thanks you."
ORIGINALS = ["Acme Corp", BOB, KEY, "acme_lookup"]
DISGUISES = ["Zenith Labs", "crm_lookup", "[EMAIL_1]", "[ANTHROPIC_KEY_1]"]


def pieces(text: str, n: int = 3) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)]


def last_user_text(doc: dict) -> str:
    msg = doc["messages"][-1]
    c = msg["content"]
    if isinstance(c, str):
        return c
    return "".join(b.get("text", "") for b in c if isinstance(b, dict))


def anthropic_stream(doc: dict, text: str, tool_input: dict | None = None) -> list[bytes]:
    """Echo text in 3-character deltas (every disguise arrives split), then an optional
    tool_use block whose input JSON is streamed in 4-character pieces."""
    ev = [
        sse({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": doc["model"], "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]  # fmt: skip
    ev += [sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
           for p in pieces(text)]  # fmt: skip
    ev.append(sse({"type": "content_block_stop", "index": 0}))
    if tool_input is not None:
        ev.append(sse({"type": "content_block_start", "index": 1,
                       "content_block": {"type": "tool_use", "id": "toolu_1", "name": "crm_lookup", "input": {}}}))  # fmt: skip
        js = json.dumps(tool_input)
        ev += [sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}})
               for p in pieces(js, 4)]  # fmt: skip
        ev.append(sse({"type": "content_block_stop", "index": 1}))
    ev.append(sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": 12}}))  # fmt: skip
    ev.append(sse({"type": "message_stop"}))
    return ev


def anthropic_handler(rec: Recorded) -> Reply:
    doc = rec.json
    text = last_user_text(doc)
    if doc.get("stream"):
        tool = {"who": text.split(" ")[0] + " " + text.split(" ")[1]} if doc.get("tools") else None
        return Reply(anthropic_stream(doc, text, tool), headers={"Content-Type": "text/event-stream"})
    body = {"id": "msg_2", "type": "message", "role": "assistant", "model": doc["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 9}}  # fmt: skip
    return Reply([json.dumps(body).encode()], headers={"Content-Type": "application/json"}, framing="length")


def chat_stream(doc: dict, text: str, linger: float = 0.0):
    """OpenAI Chat echo in 3-character chunks, then [DONE]; the body then stays open for
    `linger` seconds (an SDK closes the connection as soon as it read [DONE])."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": doc["model"]}
    yield sse_data({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
    for p in pieces(text):
        yield sse_data({**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
    yield sse_data({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    yield sse_data("[DONE]")
    if linger:
        time.sleep(linger)
        yield b": bye\n\n"


def chat_handler(rec: Recorded, linger: float = 1.0) -> Reply:
    doc = rec.json
    text = last_user_text(doc)
    return Reply(chat_stream(doc, text, linger), headers={"Content-Type": "text/event-stream"})


def other_handler(rec: Recorded) -> Reply:
    return Reply([b'{"data": []}'], headers={"Content-Type": "application/json"}, framing="length")


@dataclass
class Session:
    """A session recorded by a real mitmdump run with the addon (`-w`)."""

    dir: Path
    flows: Path
    mappings: Path
    output: str  # what mitmdump printed
    upstream: list[Recorded]  # what the fake provider received
    client: dict[str, str]  # what each client read, by scenario
