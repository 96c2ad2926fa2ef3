"""Build Anthropic streams and read them back the way a client does."""

from __future__ import annotations

import json

from disguiselib.wire.sse import Framer


def sse(event: str, data: dict, pad: str = "") -> bytes:
    try:  # UTF-8 as the API sends it; \u escapes where a lone surrogate forces them
        return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}{pad}\n\n".encode()
    except UnicodeEncodeError:
        return f"event: {event}\ndata: {json.dumps(data)}{pad}\n\n".encode()


def build_stream(blocks: list[tuple[str, list[str]]], name: str = "crm_lookup") -> bytes:
    """blocks: (kind, pieces) with kind text | tool | thinking."""
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})]
    for i, (kind, pieces) in enumerate(blocks):
        if kind == "text":
            cb = {"type": "text", "text": ""}
        elif kind == "tool":
            cb = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}
        else:
            cb = {"type": "thinking", "thinking": "", "signature": ""}
        out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": cb}))
        for p in pieces:
            if kind == "text":
                d = {"type": "text_delta", "text": p}
            elif kind == "tool":
                d = {"type": "input_json_delta", "partial_json": p}
            else:
                d = {"type": "thinking_delta", "thinking": p}
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}, pad="  "))
        if kind == "thinking":
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "signature_delta", "signature": "c2ln" * 8}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def read_stream(body: bytes) -> tuple[dict[int, dict], list[dict]]:
    """Per block index: {"type", "text", "json", "thinking", "signature", "name", "stopped"},
    and every event's parsed data (each must parse)."""
    f = Framer()
    events = f.feed(body) + f.flush()
    blocks: dict[int, dict] = {}
    datas = []
    for ev in events:
        if ev.data is None:
            continue
        d = json.loads(ev.data)  # every emitted event parses
        datas.append(d)
        t = d["type"]
        if t == "content_block_start":
            cb = d["content_block"]
            blocks[d["index"]] = {"type": cb["type"], "text": cb.get("text", ""), "json": "",
                                  "thinking": cb.get("thinking", ""), "signature": "",
                                  "name": cb.get("name"), "stopped": False, "input": cb.get("input")}
        elif t == "content_block_delta":
            b = blocks[d["index"]]
            assert not b["stopped"], "delta after content_block_stop"
            delta = d["delta"]
            if delta["type"] == "text_delta":
                b["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                b["json"] += delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                b["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                b["signature"] += delta["signature"]
        elif t == "content_block_stop":
            blocks[d["index"]]["stopped"] = True
    return blocks, datas
