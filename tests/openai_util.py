"""Build OpenAI streams and read them back the way the SDKs accumulate them."""

from __future__ import annotations

import functools
import json

from disguiselib.wire.sse import Framer


def _enc(obj: dict, spaced: bool = False) -> str:
    seps = (", ", ": ") if spaced else (",", ":")  # spaced: not the API's shape (slow path)
    try:
        return json.dumps(obj, ensure_ascii=False, separators=seps).encode().decode()
    except UnicodeEncodeError:
        return json.dumps(obj, separators=seps)


def chat_chunk(choices: list[dict], **extra) -> bytes:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt",
            "choices": choices, **extra}
    return f"data: {_enc(body)}\n\n".encode()


def build_chat(steps: list[tuple], usage: bool = True) -> bytes:
    """steps: ("content", k, text) | ("tool", k, j, name_or_None, args) | ("finish", k, reason)."""
    out = []
    for st in steps:
        if st[0] == "content":
            out.append(chat_chunk([{"index": st[1], "delta": {"content": st[2]}, "logprobs": None,
                                    "finish_reason": None}]))
        elif st[0] == "tool":
            _, k, j, name, args = st
            tc = {"index": j, "function": {"arguments": args}}
            if name is not None:
                tc.update({"id": f"call_{k}_{j}", "type": "function"})
                tc["function"] = {"name": name, "arguments": args}
            out.append(chat_chunk([{"index": k, "delta": {"tool_calls": [tc]}, "logprobs": None,
                                    "finish_reason": None}]))
        else:
            out.append(chat_chunk([{"index": st[1], "delta": {}, "logprobs": None, "finish_reason": st[2]}]))
    if usage:
        out.append(chat_chunk([], usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def read_chat(body: bytes) -> tuple[dict, dict, list[dict]]:
    """Accumulate like the SDK: per choice content, per (choice, tool index) name and
    arguments; also records, per choice, whether anything arrived after its finish."""
    f = Framer()
    events = f.feed(body) + f.flush()
    content: dict = {}
    tools: dict = {}
    chunks = []
    finished: set = set()
    assert events[-1].data == "[DONE]"
    for ev in events:
        if ev.data is None or ev.data == "[DONE]":
            continue
        d = json.loads(ev.data)
        chunks.append(d)
        for c in d.get("choices", []):
            k = c["index"]
            delta = c.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                assert k not in finished, "a delta after its choice's finish_reason"
            if delta.get("content") is not None:
                content[k] = content.get(k, "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                t = tools.setdefault((k, tc["index"]), {"name": None, "arguments": ""})
                fn = tc.get("function") or {}
                if fn.get("name"):
                    t["name"] = fn["name"]
                t["arguments"] += fn.get("arguments") or ""
            if c.get("finish_reason"):
                finished.add(k)
    return content, tools, chunks


def _resp_event(t: str, seq: int, spaced: bool = False, **fields) -> bytes:
    return f"event: {t}\ndata: {_enc({'type': t, 'sequence_number': seq, **fields}, spaced)}\n\n".encode()


def build_responses(text_pieces: list[str], args_pieces: list[str], name: str = "crm_lookup",
                    spaced: bool = False) -> bytes:
    seq = iter(range(10_000))
    resp_event = functools.partial(_resp_event, spaced=spaced)
    text = "".join(text_pieces)
    args = "".join(args_pieces)
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    fc = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": name, "arguments": "",
          "status": "in_progress"}
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "output": [],
            "instructions": "You help Zenith Labs", "model": "gpt"}
    out = [resp_event("response.created", next(seq), response=resp),
           resp_event("response.output_item.added", next(seq), output_index=0, item=msg),
           resp_event("response.content_part.added", next(seq), item_id="msg_1", output_index=0,
                      content_index=0, part={"type": "output_text", "text": "", "annotations": []})]
    for p in text_pieces:
        out.append(resp_event("response.output_text.delta", next(seq), item_id="msg_1", output_index=0,
                              content_index=0, delta=p, logprobs=[]))
    part = {"type": "output_text", "text": text, "annotations": []}
    out += [resp_event("response.output_text.done", next(seq), item_id="msg_1", output_index=0,
                       content_index=0, text=text, logprobs=[]),
            resp_event("response.content_part.done", next(seq), item_id="msg_1", output_index=0,
                       content_index=0, part=part),
            resp_event("response.output_item.done", next(seq), output_index=0,
                       item={**msg, "status": "completed", "content": [part]}),
            resp_event("response.output_item.added", next(seq), output_index=1, item=fc)]
    for p in args_pieces:
        out.append(resp_event("response.function_call_arguments.delta", next(seq), item_id="fc_1",
                              output_index=1, delta=p))
    done_fc = {**fc, "arguments": args, "status": "completed"}
    out += [resp_event("response.function_call_arguments.done", next(seq), item_id="fc_1", output_index=1,
                       arguments=args),
            resp_event("response.output_item.done", next(seq), output_index=1, item=done_fc),
            resp_event("response.completed", next(seq), response={
                **resp, "status": "completed",
                "output": [{**msg, "status": "completed", "content": [part]}, done_fc]})]
    return b"".join(out)


def read_responses(body: bytes) -> dict:
    f = Framer()
    events = [json.loads(e.data) for e in f.feed(body) + f.flush() if e.data is not None]
    seqs = [e["sequence_number"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "sequence numbers not gapless"
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    args = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    by_type = {}
    for e in events:
        by_type.setdefault(e["type"], []).append(e)
    return {"text": text, "args": args, "events": events, "by_type": by_type}


# -- Responses streams of several items (tests/apis/openai/test_responses_resume.py) ----


def responses_item(i: int, spec: tuple) -> list[dict]:
    """The events of output item i (unnumbered), as the API streams one: ("message",
    [(part_type, pieces), ...]) with part types "output_text" and "refusal";
    ("function_call", pieces); ("reasoning", [pieces of each summary part])."""
    kind = spec[0]
    at = {"output_index": i}
    if kind == "message":
        ident = f"msg_{i}"
        item = {"id": ident, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        out = [{"type": "response.output_item.added", **at, "item": item}]
        parts = []
        for ci, (ptype, pieces) in enumerate(spec[1]):
            whole = "".join(pieces)
            where = {"item_id": ident, **at, "content_index": ci}
            field = "text" if ptype == "output_text" else "refusal"
            empty = {"type": ptype, field: "", **({"annotations": []} if field == "text" else {})}
            part = {**empty, field: whole}
            parts.append(part)
            out.append({"type": "response.content_part.added", **where, "part": empty})
            lp = {"logprobs": []} if field == "text" else {}
            t = "response.output_text" if field == "text" else "response.refusal"
            out += [{"type": f"{t}.delta", **where, "delta": p, **lp} for p in pieces]
            out.append({"type": f"{t}.done", **where, field: whole, **lp})
            out.append({"type": "response.content_part.done", **where, "part": part})
        out.append({"type": "response.output_item.done", **at, "item": {**item, "status": "completed", "content": parts}})
        return out
    if kind == "function_call":
        ident = f"fc_{i}"
        item = {"id": ident, "type": "function_call", "call_id": f"call_{i}", "name": "crm_lookup", "arguments": "",
                "status": "in_progress"}  # fmt: skip
        whole = "".join(spec[1])
        where = {"item_id": ident, **at}
        return [{"type": "response.output_item.added", **at, "item": item},
                *({"type": "response.function_call_arguments.delta", **where, "delta": p} for p in spec[1]),
                {"type": "response.function_call_arguments.done", **where, "arguments": whole},
                {"type": "response.output_item.done", **at, "item": {**item, "arguments": whole,
                                                                      "status": "completed"}}]  # fmt: skip
    ident = f"rs_{i}"
    item = {"id": ident, "type": "reasoning", "summary": []}
    out = [{"type": "response.output_item.added", **at, "item": item}]
    summary = []
    for si, pieces in enumerate(spec[1]):
        where = {"item_id": ident, **at, "summary_index": si}
        part = {"type": "summary_text", "text": "".join(pieces)}
        summary.append(part)
        out.append({"type": "response.reasoning_summary_part.added", **where, "part": {**part, "text": ""}})
        out += [{"type": "response.reasoning_summary_text.delta", **where, "delta": p} for p in pieces]
        out.append({"type": "response.reasoning_summary_text.done", **where, "text": part["text"]})
        out.append({"type": "response.reasoning_summary_part.done", **where, "part": part})
    out.append({"type": "response.output_item.done", **at, "item": {**item, "summary": summary}})
    return out


def responses_events(items: list[list[dict]]) -> list[dict]:
    """A whole Responses stream around the items' events (in the order given), numbered
    from 0: response.created, response.in_progress, ..., response.completed."""
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "model": "gpt"}
    done = [e["item"] for es in items for e in es if e["type"] == "response.output_item.done"]
    evs = [{"type": "response.created", "response": resp}, {"type": "response.in_progress", "response": resp},
           *(e for es in items for e in es),
           {"type": "response.completed", "response": {**resp, "status": "completed", "output": done}}]  # fmt: skip
    return [{"type": e["type"], "sequence_number": n, **e} for n, e in enumerate(evs)]


def sse_events(events: list[dict], spaced: bool = False) -> list[bytes]:
    """Each event's bytes as the API sends it (`event:` line, one `data:` line)."""
    return [f"event: {e['type']}\ndata: {_enc(e, spaced)}\n\n".encode() for e in events]


def responses_channels(events: list[dict]) -> dict[tuple, str]:
    """A client's reassembled text per channel: output text and refusals per (item,
    content index), arguments per item, reasoning summaries per (item, summary index)."""
    out: dict[tuple, str] = {}
    for e in events:
        t = e["type"]
        if t in ("response.output_text.delta", "response.refusal.delta"):
            key: tuple = (t, e["item_id"], e["content_index"])
        elif t == "response.function_call_arguments.delta":
            key = (t, e["item_id"])
        elif t == "response.reasoning_summary_text.delta":
            key = (t, e["item_id"], e["summary_index"])
        else:
            continue
        out[key] = out.get(key, "") + e["delta"]
    return out
