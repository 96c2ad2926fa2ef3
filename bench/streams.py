"""Stream builders: SSE streams in the exact shape of the recorded ones, and what a
client reassembles from a stream (the correctness check of every stream figure).

A builder returns a dict: api ("anthropic" | "chat" | "responses"), events (raw SSE
events), bytes, n_text / n_json (deltas), expect (what the client must see after
restoration), sent (the masked channels), n_disg_text / n_disg_tool."""

from __future__ import annotations

import json
import random
import re

from common import first_diff
from material import ALNUM, CODE_WORDS, WORDS, cut_points, pieces, prose, rstr

from disguiselib.wire import sse

# -- Anthropic Messages -------------------------------------------------------------------


def pad(rng: random.Random) -> str:
    return " " * rng.choice([0, 0, 1, 2, 4, 6, 8, 10, 12, 15])


def ev(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def delta_event(rng: random.Random, idx: int, kind: str, field: str, piece: str) -> bytes:
    s = json.dumps(piece, ensure_ascii=False)
    return ev(
        "content_block_delta",
        f'{{"type":"content_block_delta","index":{idx},"delta":{{"type":"{kind}","{field}":{s}}}{pad(rng)}}}',
    )


STRIP_TAG = "[[reply_to_current]]"


def disguised_text(
    rng: random.Random,
    text_chars: int,
    disguises: list[tuple[str, str]],
    n_disguised: int,
    brackets: bool,
    strip: bool,
    lo: int = 5,
    hi: int = 40,
) -> tuple[str, str, list[str], int]:
    """Prose with n_disguised disguises (and the strip tag first) inserted at word
    starts, cut into deltas of lo-hi chars with a forced cut inside every disguise.
    Returns the masked text, the original text (strip tag kept), the deltas and the
    number of disguises (strip tag included)."""
    base_text = prose(rng, text_chars, brackets=brackets)
    masked_parts, orig_parts, spans = [], [], []
    positions = sorted(rng.sample([m.start() for m in re.finditer(r" (?=\w)", base_text)], n_disguised)) if disguises else []
    prev = 0
    mlen = 0
    if strip:
        masked_parts.append(STRIP_TAG + " ")
        orig_parts.append(" ")
        spans.append((0, len(STRIP_TAG)))
        mlen = len(masked_parts[0])
    for p in positions:
        chunk = base_text[prev : p + 1]
        masked_parts.append(chunk)
        orig_parts.append(chunk)
        mlen += len(chunk)
        m, o = disguises[rng.randrange(len(disguises))]
        masked_parts.append(m)
        orig_parts.append(o)
        spans.append((mlen, mlen + len(m)))
        mlen += len(m)
        prev = p + 1
    masked_parts.append(base_text[prev:])
    orig_parts.append(base_text[prev:])
    masked_text = "".join(masked_parts)
    orig_text = "".join(orig_parts)
    cuts = cut_points(rng, masked_text, lo, hi)
    cuts += [a + rng.randint(1, b - a - 1) for a, b in spans]
    return masked_text, orig_text, pieces(masked_text, cuts), len(spans)


def tool_file(rng: random.Random, disguises: list[tuple[str, str]], lo: int = 3, hi: int = 30) -> tuple[str, str, list[str], int]:
    """Arguments of a file-writing tool call (~6 KB of JSON: a path and 120 lines of
    code with escapes), disguises in the path and in ~5% of the lines. Returns the
    masked JSON, the original JSON, its deltas (lo-hi chars, cut anywhere, escapes
    included) and the number of disguises in it."""
    code_lines = []
    for i in range(120):
        ws = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
        code_lines.append(rng.choice([
            f"def {rng.choice(CODE_WORDS).strip('()').replace('.', '_')}_{i}(self, value):",
            f'    """{ws.capitalize()}."""',
            f'    log.info("{ws} %s", value)',
            "    if value is None:\n        raise ValueError(f\"bad value: {value!r}\")",
            f'    pattern = re.compile(r"^\\d+\\s*{rng.choice(WORDS)}$")',
            f"    # {ws}",
            f"    return {{'key': \"{rng.choice(WORDS)}\", 'n': {i}}}",
        ]))
    tm, to = [], []
    for line in code_lines:
        if disguises and rng.random() < 0.05:
            m, o = disguises[rng.randrange(len(disguises))]
            tm.append(f"{line}  # owner: {m}")
            to.append(f"{line}  # owner: {o}")
        else:
            tm.append(line)
            to.append(line)
    path_m, path_o = (disguises[0] if disguises else ("proj", "proj"))
    tool_m = json.dumps({"file_path": f"/home/dev/src/{path_m}/handlers.py", "content": "\n".join(tm) + "\n"}, ensure_ascii=False)
    tool_o = json.dumps({"file_path": f"/home/dev/src/{path_o}/handlers.py", "content": "\n".join(to) + "\n"}, ensure_ascii=False)
    jp = pieces(tool_m, cut_points(rng, tool_m, lo, hi))
    n_disg = sum(1 for a, b in zip(tm, to, strict=True) if a != b) + 1 if disguises else 0
    return tool_m, tool_o, jp, n_disg


def build_stream(
    seed: int,
    text_chars: int,
    disguises: list[tuple[str, str]],
    n_disguised: int,
    brackets: bool = True,
    tool: bool = True,
    strip: bool = True,
) -> dict:
    """A long Anthropic Messages stream in the exact shape of the recorded streams.

    disguises: (masked, original) pairs; n_disguised occurrences are inserted in the text
    and a few in the tool input, each split across deltas. Returns the events and the
    text / tool JSON the client must see after restoration."""
    rng = random.Random(seed)
    masked_text, orig_text, text_pieces, n_spans = disguised_text(rng, text_chars, disguises, n_disguised, brackets, strip)

    events: list[bytes] = []
    events.append(
        ev(
            "message_start",
            '{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929",'
            f'"id":"msg_01{rstr(rng, ALNUM, 22)}","type":"message","role":"assistant","content":[],'
            '"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":18234,'
            '"cache_creation_input_tokens":0,"cache_read_input_tokens":240112,"cache_creation":'
            '{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,'
            f'"service_tier":"standard"}}}}{pad(rng)}}}',
        )
    )
    events.append(
        ev("content_block_start", f'{{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":""}}{pad(rng)}}}')
    )
    events.append(ev("ping", '{"type": "ping"}'))
    n_text = len(text_pieces)
    for p in text_pieces:
        events.append(delta_event(rng, 0, "text_delta", "text", p))
    events.append(ev("content_block_stop", f'{{"type":"content_block_stop","index":0{pad(rng)}}}'))
    expect = {0: orig_text.replace(STRIP_TAG, "")}
    sent = {0: masked_text}
    n_json = n_disg_tool = 0
    if tool:
        tool_m, tool_o, jp, n_disg_tool = tool_file(rng, disguises)
        events.append(
            ev(
                "content_block_start",
                f'{{"type":"content_block_start","index":1,"content_block":{{"type":"tool_use",'
                f'"id":"toolu_01{rstr(rng, ALNUM, 22)}","name":"Write","input":{{}}}}{pad(rng)}}}',
            )
        )
        events.append(delta_event(rng, 1, "input_json_delta", "partial_json", ""))
        for p in jp:
            events.append(delta_event(rng, 1, "input_json_delta", "partial_json", p))
        n_json = len(jp) + 1
        events.append(ev("content_block_stop", f'{{"type":"content_block_stop","index":1{pad(rng)}}}'))
        expect[1] = tool_o
        sent[1] = tool_m
    stop = "tool_use" if tool else "end_turn"
    events.append(
        ev(
            "message_delta",
            f'{{"type":"message_delta","delta":{{"stop_reason":"{stop}","stop_sequence":null}},'
            f'"usage":{{"input_tokens":18234,"cache_creation_input_tokens":0,"cache_read_input_tokens":240112,'
            f'"output_tokens":{n_text + n_json}}}{pad(rng)}}}',
        )
    )
    events.append(ev("message_stop", f'{{"type":"message_stop"{pad(rng)}}}'))
    return {
        "api": "anthropic",
        "events": events,
        "bytes": b"".join(events),
        "n_text": n_text,
        "n_json": n_json,
        "expect": expect,
        "sent": sent,
        "n_disg_text": n_spans,
        "n_disg_tool": n_disg_tool if disguises else 0,
    }


def channels(stream_bytes: bytes) -> dict[int, str]:
    """The text / partial_json a client reassembles per content block index."""
    out: dict[int, list[str]] = {}
    fr = sse.Framer()
    for e in fr.feed(stream_bytes) + fr.flush():
        if e.data is None:
            continue
        try:
            obj = json.loads(e.data)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "content_block_delta":
            d = obj["delta"]
            v = d.get("text", d.get("partial_json"))
            if v is not None:
                out.setdefault(obj["index"], []).append(v)
    return {k: "".join(v) for k, v in out.items()}


def check_anthropic(st: dict, out: bytes) -> list[str]:
    got = channels(out)
    return [f"block {k}: {first_diff(got.get(k, ''), want)}" for k, want in st["expect"].items() if got.get(k) != want] + [
        f"unexpected block {k}" for k in got if k not in st["expect"]
    ]


# -- OpenAI Chat Completions ----------------------------------------------------------

# The recorded streams (fixtures/real/openai) pad every event with an `obfuscation`
# field so that delta + padding is about 16 characters.


def obfuscation(rng: random.Random, piece: str = "") -> str:
    return rstr(rng, ALNUM, max(0, 16 - len(piece)) if len(piece) < 16 else rng.randint(0, 3))


def build_chat_stream(
    seed: int,
    text_chars: int,
    disguises: list[tuple[str, str]],
    n_disguised: int,
    brackets: bool = True,
    tool: bool = True,
    strip: bool = True,
    lo: int = 1,
    hi: int = 10,
) -> dict:
    """A Chat Completions stream in the exact shape of the recorded ones
    (chat_stream_text_usage.sse, chat_stream_parallel_tool_calls.sse): `data: {...}`
    chunks, one token-sized content delta (lo-hi chars, 1-10 by default) each, then two
    parallel tool calls (a file write of ~6 KB of JSON and a short command) with
    token-sized argument deltas, the finish chunk, the usage chunk and `data: [DONE]`."""
    rng = random.Random(seed)
    masked_text, orig_text, text_pieces, n_spans = disguised_text(rng, text_chars, disguises, n_disguised, brackets, strip, lo, hi)
    head = (
        f'{{"id":"chatcmpl-{rstr(rng, ALNUM, 29)}","object":"chat.completion.chunk","created":1766084435,'
        f'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_deacdd5f6f",'
    )

    def chunk(choice: str, usage_first: bool = False, piece: str = "") -> bytes:
        ob = obfuscation(rng, piece)
        if usage_first:
            return f'data: {head}"usage":null,"choices":[{choice}],"obfuscation":"{ob}"}}\n\n'.encode()
        return f'data: {head}"choices":[{choice}],"usage":null,"obfuscation":"{ob}"}}\n\n'.encode()

    tail = ',"logprobs":null,"finish_reason":null}'
    events = [chunk('{"index":0,"delta":{"role":"assistant","content":"","refusal":null}' + tail)]
    for p in text_pieces:
        events.append(chunk('{"index":0,"delta":{"content":' + json.dumps(p, ensure_ascii=False) + "}" + tail, piece=p))
    expect_tools: dict[tuple[int, int], str] = {}
    sent_tools: dict[tuple[int, int], str] = {}
    n_json = n_disg_tool = 0
    if tool:
        tool_m, tool_o, jp, n_disg_tool = tool_file(rng, disguises, 1, 8)
        d = disguises[-1] if disguises else ("proj", "proj")
        cmd = "git log --oneline --author={} -- src/ | head -20"
        t2m = json.dumps({"command": cmd.format(d[0]), "description": "Recent commits by the owner"})
        t2o = json.dumps({"command": cmd.format(d[1]), "description": "Recent commits by the owner"})
        jp2 = pieces(t2m, cut_points(rng, t2m, 1, 8) + [t2m.index(d[0]) + len(d[0]) // 2])
        n_disg_tool += 1 if disguises else 0
        for j, (name, parts) in enumerate((("write_file", jp), ("run_command", jp2))):
            events.append(chunk(
                f'{{"index":0,"delta":{{"tool_calls":[{{"index":{j},"id":"call_{rstr(rng, ALNUM, 24)}","type":"function",'
                f'"function":{{"name":"{name}","arguments":""}}}}]}}' + tail, usage_first=True))  # fmt: skip
            for p in parts:
                events.append(chunk(
                    f'{{"index":0,"delta":{{"tool_calls":[{{"index":{j},"function":{{"arguments":'
                    + json.dumps(p, ensure_ascii=False) + "}}]}" + tail, usage_first=True, piece=p))  # fmt: skip
            n_json += len(parts)
        expect_tools = {(0, 0): tool_o, (0, 1): t2o}
        sent_tools = {(0, 0): tool_m, (0, 1): t2m}
    events.append(chunk(f'{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"{"tool_calls" if tool else "stop"}"}}', piece="x" * 12))
    usage = (
        f'{{"prompt_tokens":18234,"completion_tokens":{len(text_pieces) + n_json},"total_tokens":{18234 + len(text_pieces) + n_json},'
        '"prompt_tokens_details":{"cached_tokens":17920,"audio_tokens":0},"completion_tokens_details":'
        '{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}'
    )
    events.append(f'data: {head}"choices":[],"usage":{usage},"obfuscation":"{obfuscation(rng, "x")}"}}\n\n'.encode())
    events.append(b"data: [DONE]\n\n")
    return {
        "api": "chat",
        "events": events,
        "bytes": b"".join(events),
        "n_text": len(text_pieces),
        "n_json": n_json,
        "expect": {"content": {0: orig_text.replace(STRIP_TAG, "")}, "tools": expect_tools},
        "sent": {0: masked_text, **sent_tools},
        "n_disg_text": n_spans,
        "n_disg_tool": n_disg_tool,
    }


def chat_view(stream_bytes: bytes) -> dict:
    """What the OpenAI SDKs accumulate from a Chat stream: content per choice,
    arguments per (choice, tool-call index); plus what a strict client would reject."""
    fr = sse.Framer()
    evs = fr.feed(stream_bytes) + fr.flush()
    content: dict[int, str] = {}
    tools: dict[tuple[int, int], str] = {}
    problems: list[str] = []
    finished: set[int] = set()
    datas = [e.data for e in evs if e.data is not None]
    if not datas or datas[-1] != "[DONE]":
        problems.append("the stream does not end with data: [DONE]")
    for d in datas:
        if d == "[DONE]":
            continue
        try:
            obj = json.loads(d)
        except ValueError:
            problems.append(f"a chunk is not JSON: {d[:60]!r}")
            continue
        if "error" in obj:
            problems.append(f"error chunk: {obj['error']}")
        for ch in obj.get("choices") or []:
            k = ch.get("index", 0)
            delta = ch.get("delta") or {}
            if (delta.get("content") or delta.get("tool_calls")) and k in finished:
                problems.append(f"choice {k}: a delta after its finish_reason")
            if delta.get("content") is not None:
                content[k] = content.get(k, "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                key = (k, tc.get("index", 0))
                tools[key] = tools.get(key, "") + ((tc.get("function") or {}).get("arguments") or "")
            if ch.get("finish_reason") is not None:
                finished.add(k)
    return {"content": content, "tools": tools, "problems": problems}


def check_chat(st: dict, out: bytes) -> list[str]:
    v = chat_view(out)
    want = st["expect"]
    problems = list(v["problems"])
    for k, w in want["content"].items():
        if v["content"].get(k) != w:
            problems.append(f"choice {k} content: {first_diff(v['content'].get(k, ''), w)}")
    for key, w in want["tools"].items():
        got = v["tools"].get(key, "")
        if got != w:
            problems.append(f"tool call {key} arguments: {first_diff(got, w)}")
        try:
            if json.loads(got) != json.loads(w):
                problems.append(f"tool call {key}: arguments parse to something else")
        except ValueError as e:
            problems.append(f"tool call {key}: arguments do not parse: {e}")
    extra = set(v["tools"]) - set(want["tools"])
    if extra:
        problems.append(f"unexpected tool calls {sorted(extra)}")
    return problems


# -- OpenAI Responses -------------------------------------------------------------------


def build_responses_stream(
    seed: int,
    text_chars: int,
    disguises: list[tuple[str, str]],
    n_disguised: int,
    brackets: bool = True,
    tool: bool = True,
    strip: bool = True,
) -> dict:
    """A Responses stream in the exact shape of the recorded ones
    (responses_stream_text.sse, responses_stream_function_call.sse): `event: X` +
    `data: {...}` with sequence_number; created, in_progress, a message item
    (content_part.added, token-sized output_text.delta, output_text.done,
    content_part.done, output_item.done), a function_call item (~6 KB of arguments in
    token-sized function_call_arguments.delta, .done, output_item.done) and
    response.completed with the whole output."""
    rng = random.Random(seed)
    masked_text, orig_text, text_pieces, n_spans = disguised_text(rng, text_chars, disguises, n_disguised, brackets, strip, 1, 10)
    prefix = rstr(rng, "0123456789abcdef", 16)

    def oid(kind: str) -> str:
        return f"{kind}_{prefix}{rstr(rng, '0123456789abcdef', 34)}"

    rid, msg_id, fc_id = oid("resp"), oid("msg"), oid("fc")
    call_id = "call_" + rstr(rng, ALNUM, 24)
    tools = [{"type": "function", "description": "Write a file, replacing its content.", "name": "write_file",
              "parameters": {"properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                             "required": ["file_path", "content"], "type": "object", "additionalProperties": False},
              "strict": True}]  # fmt: skip

    def response(status: str, output: list, usage: dict | None) -> dict:
        return {
            "id": rid, "object": "response", "created_at": 1778037177, "status": status, "background": False,
            "completed_at": 1778037243 if status == "completed" else None, "error": None, "frequency_penalty": 0.0,
            "incomplete_details": None, "instructions": None, "max_output_tokens": None, "max_tool_calls": None,
            "model": "gpt-5.5-2026-04-23", "moderation": None, "output": output, "parallel_tool_calls": True,
            "presence_penalty": 0.0, "previous_response_id": None, "prompt_cache_key": None,
            "prompt_cache_retention": "24h", "reasoning": {"effort": "low", "summary": None}, "safety_identifier": None,
            "service_tier": "default" if status == "completed" else "auto", "store": False, "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto", "tools": tools,
            "top_logprobs": 0, "top_p": 0.98, "truncation": "disabled", "usage": usage, "user": None, "metadata": {},
        }  # fmt: skip

    events: list[bytes] = []

    def emit(t: str, body: dict) -> None:
        # sequence_number goes last unless body places it (output_text.done: before text)
        body = {"type": t, **body}
        body["sequence_number"] = len(events)
        events.append(f"event: {t}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode())

    def emit_delta(t: str, head: dict, p: str, tail: dict) -> None:
        # field order of the recordings: type, [content_index,] delta, item_id, [logprobs,] obfuscation, ...
        body = {"type": t, **head, "delta": p, "item_id": tail["item_id"], **({"logprobs": []} if "logprobs" in tail else {}),
                "obfuscation": obfuscation(rng, p), "output_index": tail["output_index"], "sequence_number": len(events)}  # fmt: skip
        events.append(f"event: {t}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode())

    emit("response.created", {"response": response("in_progress", [], None)})
    emit("response.in_progress", {"response": response("in_progress", [], None)})
    msg = {"id": msg_id, "type": "message", "status": "in_progress", "content": [], "phase": "final_answer", "role": "assistant"}
    emit("response.output_item.added", {"item": msg, "output_index": 0})
    part0 = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    emit("response.content_part.added", {"content_index": 0, "item_id": msg_id, "output_index": 0, "part": part0})
    for p in text_pieces:
        emit_delta("response.output_text.delta", {"content_index": 0}, p, {"item_id": msg_id, "logprobs": [], "output_index": 0})
    emit("response.output_text.done", {"content_index": 0, "item_id": msg_id, "logprobs": [], "output_index": 0,
                                       "sequence_number": None, "text": masked_text})  # fmt: skip
    part = {**part0, "text": masked_text}
    emit("response.content_part.done", {"content_index": 0, "item_id": msg_id, "output_index": 0, "part": part})
    msg_done = {**msg, "status": "completed", "content": [part]}
    emit("response.output_item.done", {"item": msg_done, "output_index": 0})
    output = [msg_done]
    n_json = n_disg_tool = 0
    tool_m = tool_o = ""
    if tool:
        tool_m, tool_o, jp, n_disg_tool = tool_file(rng, disguises, 1, 8)
        fc = {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": "write_file"}
        emit("response.output_item.added", {"item": fc, "output_index": 1})
        for p in jp:
            emit_delta("response.function_call_arguments.delta", {}, p, {"item_id": fc_id, "output_index": 1})
        n_json = len(jp)
        emit("response.function_call_arguments.done", {"arguments": tool_m, "item_id": fc_id, "output_index": 1})
        fc_done = {**fc, "status": "completed", "arguments": tool_m}
        emit("response.output_item.done", {"item": fc_done, "output_index": 1})
        output.append(fc_done)
    n_out = len(text_pieces) + n_json
    usage = {"input_tokens": 18234, "input_tokens_details": {"cached_tokens": 17920}, "output_tokens": n_out,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 18234 + n_out}  # fmt: skip
    emit("response.completed", {"response": response("completed", output, usage)})
    return {
        "api": "responses",
        "events": events,
        "bytes": b"".join(events),
        "n_text": len(text_pieces),
        "n_json": n_json,
        "expect": {"text": orig_text.replace(STRIP_TAG, ""), "args": tool_o},
        "sent": {0: masked_text, 1: tool_m},
        "n_disg_text": n_spans,
        "n_disg_tool": n_disg_tool,
    }


def responses_view(stream_bytes: bytes) -> dict:
    """What a Responses client sees: concatenated output_text / arguments deltas, the
    .done and snapshot events' copies, and the sequence numbers."""
    fr = sse.Framer()
    problems: list[str] = []
    objs = []
    for e in fr.feed(stream_bytes) + fr.flush():
        if e.data is None:
            continue
        try:
            obj = json.loads(e.data)
        except ValueError:
            problems.append(f"an event is not JSON: {e.data[:60]!r}")
            continue
        if e.name != obj.get("type"):
            problems.append(f"event: {e.name} carries type {obj.get('type')}")
        objs.append(obj)
    seqs = [o.get("sequence_number") for o in objs]
    if seqs != list(range(len(seqs))):
        bad = next((i for i, s in enumerate(seqs) if s != i), None)
        problems.append(f"sequence_number not 0, 1, 2, ...: event {bad} has {seqs[bad] if bad is not None else None}")
    by: dict[str, list[dict]] = {}
    for o in objs:
        by.setdefault(o.get("type"), []).append(o)
        if o.get("type") == "error":
            problems.append(f"error event: {o.get('message')}")
    text = "".join(o["delta"] for o in by.get("response.output_text.delta", []))
    args = "".join(o["delta"] for o in by.get("response.function_call_arguments.delta", []))
    copies: dict[str, list[str]] = {"text": [], "args": []}
    for o in by.get("response.output_text.done", []):
        copies["text"].append(("output_text.done", o.get("text")))
    for o in by.get("response.content_part.done", []):
        copies["text"].append(("content_part.done", o["part"].get("text")))
    for o in by.get("response.function_call_arguments.done", []):
        copies["args"].append(("function_call_arguments.done", o.get("arguments")))
    items = [o["item"] for o in by.get("response.output_item.done", [])]
    for o in by.get("response.completed", []):
        items += [dict(it, _where="completed") for it in o["response"].get("output", [])]
    for it in items:
        where = "response.completed" if it.get("_where") else "output_item.done"
        if it.get("type") == "message":
            copies["text"] += [(where, c.get("text")) for c in it.get("content", [])]
        elif it.get("type") == "function_call":
            copies["args"].append((where, it.get("arguments")))
    return {"text": text, "args": args, "copies": copies, "problems": problems}


def check_responses(st: dict, out: bytes) -> list[str]:
    v = responses_view(out)
    want = st["expect"]
    problems = list(v["problems"])
    if v["text"] != want["text"]:
        problems.append(f"output_text deltas: {first_diff(v['text'], want['text'])}")
    if v["args"] != want["args"]:
        problems.append(f"function_call_arguments deltas: {first_diff(v['args'], want['args'])}")
    if want["args"]:
        try:
            json.loads(v["args"])
        except ValueError as e:
            problems.append(f"arguments do not parse: {e}")
    for kind in ("text", "args"):
        for where, val in v["copies"][kind]:
            if val != v[kind]:
                problems.append(f"{where} {kind} != the concatenated deltas: {first_diff(val or '', v[kind])}")
    return problems


CHECKS = {"anthropic": check_anthropic, "chat": check_chat, "responses": check_responses}


def check(st: dict, out: bytes) -> list[str]:
    """Problems a client would have with out (empty: it sees exactly the originals)."""
    return CHECKS[st["api"]](st, out)



API_TITLES = {
    "anthropic": "Anthropic Messages (/v1/messages)",
    "chat": "OpenAI Chat Completions (/v1/chat/completions)",
    "responses": "OpenAI Responses (/v1/responses)",
}


def describe(st: dict) -> str:
    """One line on a stream's size and content."""
    nb, nev = len(st["bytes"]) / 1e6, len(st["events"])
    if st["api"] == "anthropic":
        what = f"{st['n_text']:,} text_delta of 5-40 chars, {st['n_json']} input_json_delta"
    elif st["api"] == "chat":
        what = (f"{st['n_text']:,} content deltas of 1-10 chars, {st['n_json']:,} tool_calls arguments deltas of 1-8 "
                "chars in 2 parallel calls, finish + usage chunks, [DONE]")  # fmt: skip
    else:
        what = (f"{st['n_text']:,} output_text.delta of 1-10 chars, {st['n_json']:,} function_call_arguments.delta "
                "of 1-8 chars, *.done, output_item.*, content_part.*, response.completed")  # fmt: skip
    return (
        f"{nb:.2f} MB, {nev:,} events ({what}); {st['n_disg_text']} disguises in the text (strip tag included), "
        f"each split across deltas, {st['n_disg_tool']} in the tool arguments"
    )




# -- streams of issue 8 ----------------------------------------------------------------------


def anthropic_text_stream(rng: random.Random, text_pieces: list[str]) -> list[bytes]:
    """The events of an Anthropic Messages stream with one text block made of text_pieces
    (message_start, content_block_start, ping, the deltas, stop, message_delta, message_stop)."""
    events = [
        ev("message_start", '{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929",'
           f'"id":"msg_01{rstr(rng, ALNUM, 22)}","type":"message","role":"assistant","content":[],'
           '"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":18234,"output_tokens":1}}}'),
        ev("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
        ev("ping", '{"type": "ping"}'),
    ]  # fmt: skip
    events += [delta_event(rng, 0, "text_delta", "text", p) for p in text_pieces]
    events.append(ev("content_block_stop", '{"type":"content_block_stop","index":0}'))
    events.append(ev("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
                     f'"usage":{{"output_tokens":{len(text_pieces)}}}}}'))  # fmt: skip
    events.append(ev("message_stop", '{"type":"message_stop"}'))
    return events


def _anthropic_dict(events: list[bytes], n_text: int, masked: str, expect: str, n_disg: int) -> dict:
    return {"api": "anthropic", "events": events, "bytes": b"".join(events), "n_text": n_text, "n_json": 0,
            "expect": {0: expect}, "sent": {0: masked}, "n_disg_text": n_disg, "n_disg_tool": 0}  # fmt: skip


def build_dense_stream(seed: int, n_deltas: int, disguises: list[tuple[str, str]], split: float = 0.4) -> dict:
    """An Anthropic text stream of n_deltas deltas each of which carries a disguise or a
    piece of one: each delta is 1-3 prose words and a disguise; a `split` share of the
    disguises is cut across two deltas."""
    rng = random.Random(seed)
    words = [w for w in WORDS if not any(w in d or d in w for d, _ in disguises)]
    masked_parts: list[str] = []
    orig_parts: list[str] = []
    pieces_: list[str] = []
    carry = ""
    for _ in range(n_deltas):
        d, o = disguises[rng.randrange(len(disguises))]
        lead = " ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) + " "
        sep = rng.choice([" ", ", ", ". ", " "])
        masked_parts.append(lead + d + sep)
        orig_parts.append(lead + o + sep)
        if len(d) > 1 and rng.random() < split:
            k = rng.randint(1, len(d) - 1)
            pieces_.append(carry + lead + d[:k])
            carry = d[k:] + sep
        else:
            pieces_.append(carry + lead + d + sep)
            carry = ""
    if carry:
        pieces_[-1] += carry
    masked = "".join(masked_parts)
    assert "".join(pieces_) == masked
    events = anthropic_text_stream(rng, pieces_)
    return _anthropic_dict(events, len(pieces_), masked, "".join(orig_parts), n_deltas)


def build_unclosed_strip_stream(seed: int, n_bytes: int, opener: str = "[[reply_to:") -> dict:
    """An Anthropic text stream of about n_bytes that opens a strip-rule match
    (`[[reply_to:`) and never closes it: the rest is one paragraph of prose deltas (5-40
    chars) with no `]` and no line end, so every later delta could still be part of it.
    expect is None: the client must see what whole-text restoration gives (the engine's
    own rule for a dangling strip match), which the caller computes."""
    rng = random.Random(seed)
    text = opener + " " + prose(rng, max(100, n_bytes // 5), brackets=False).replace("\n", " ")
    text = re.sub(r"\s+", " ", text)
    pieces_ = pieces(text, cut_points(rng, text, 5, 40))
    events = anthropic_text_stream(rng, pieces_)
    while len(b"".join(events)) < n_bytes:  # prose is ~1/5 of the bytes; top up
        more = " " + re.sub(r"\s+", " ", prose(rng, 2000, brackets=False))
        text += more
        pieces_ += pieces(more, cut_points(rng, more, 5, 40))
        events = anthropic_text_stream(rng, pieces_)
    return _anthropic_dict(events, len(pieces_), text, None, 1)  # type: ignore[arg-type]


LATEX_LINES = (
    r"\begin{align}",
    r"\frac{\partial \mathcal{L}}{\partial \theta_{k}} &= \sum_{i=1}^{n} \alpha_i \nabla_{\theta} \log p(x_i \mid \theta) \\",
    r"\mathbb{E}_{q(z)}\left[\log \frac{p(x, z)}{q(z)}\right] &\leq \log p(x) \label{eq:elbo}",
    r"\end{align}",
    r"\begin{itemize}\item \textbf{Step %d:} compute $\hat{\beta} = (X^\top X)^{-1} X^\top y$ \end{itemize}",
    r"\section{Results}\label{sec:results-%d}",
    r"As shown in Table~\ref{tab:main}, the estimator $\tilde{\mu}_n$ converges at rate $\mathcal{O}(n^{-1/2})$.",
    r"\begin{tabular}{l|rr}\hline Method & $\ell_1$ & $\ell_2$ \\ \hline",
    r"\cite{smith2021}, \emph{cf.} \eqref{eq:elbo}; see also \url{https://arxiv.org/abs/2101.%05d}",
)


def latex_tool_args(rng: random.Random, n: int, disguises: list[tuple[str, str]], every: int = 12) -> tuple[str, str]:
    """Arguments of a file-writing tool call as JSON text of about n characters: a LaTeX
    document (many backslashes, each doubled by JSON), a disguise in about every
    `every`-th line (an author, a host, a project). Returns (masked JSON text, the
    JSON text with originals), as json.dumps writes both."""
    lines_m = [r"\documentclass{article}", r"\usepackage{amsmath,amssymb}", r"\begin{document}"]
    lines_o = list(lines_m)
    size = 0
    i = 0
    while size < n * 0.88:  # JSON escaping makes the text ~1.13x longer
        i += 1
        line = rng.choice(LATEX_LINES)
        if "%" in line:
            line = line % i
        if disguises and i % every == 0:
            d, o = disguises[rng.randrange(len(disguises))]
            lines_m.append(line + f" % reviewed by {d}")
            lines_o.append(line + f" % reviewed by {o}")
        else:
            lines_m.append(line)
            lines_o.append(line)
        size += len(line) + 1
    lines_m.append(r"\end{document}")
    lines_o.append(r"\end{document}")
    m = json.dumps({"file_path": "/home/dev/paper/main.tex", "content": "\n".join(lines_m)}, ensure_ascii=False)
    o = json.dumps({"file_path": "/home/dev/paper/main.tex", "content": "\n".join(lines_o)}, ensure_ascii=False)
    return m, o


# -- driving a stream object ---------------------------------------------------------------


class Bare:
    """Identity: what a loop over chunks costs with no processing at all."""

    def feed(self, c: bytes) -> bytes:
        return c

    def flush(self) -> bytes:
        return b""


class FramerPass:
    """Pass-through that frames SSE events (the addon's first step) and re-emits them."""

    def __init__(self) -> None:
        self.f = sse.Framer()

    def feed(self, c: bytes) -> bytes:
        return b"".join([e.raw for e in self.f.feed(c)])

    def flush(self) -> bytes:
        return b"".join([e.raw for e in self.f.flush()])


def run_loop(obj, chunks: list[bytes]) -> bytes:
    """feed() every chunk, then flush(); the joined output."""
    out = [obj.feed(c) for c in chunks]
    out.append(obj.flush())
    return b"".join(out)


def time_variants(factories: dict, chunks: list[bytes], reps: int) -> dict[str, float]:
    """Median wall time of run_loop over chunks for a fresh object of each factory; the
    variants interleaved, their order reversed every other round, one warm-up round."""
    import gc
    import statistics
    import time

    times: dict[str, list[float]] = {k: [] for k in factories}
    for r in range(reps + 1):
        names = list(factories)
        if r % 2:
            names.reverse()
        for name in names:
            obj = factories[name]()
            gc.collect()
            t0 = time.perf_counter()
            run_loop(obj, chunks)
            t = time.perf_counter() - t0
            if r:
                times[name].append(t)
    return {k: statistics.median(v) for k, v in times.items()}


def text_deltas(st: dict) -> list[str]:
    """The text of each text delta of a stream, in order (Anthropic text_delta, Chat
    content, Responses output_text.delta)."""
    out = []
    for raw in st["events"]:
        line = next((ln for ln in raw.decode("utf-8").split("\n") if ln.startswith("data: ")), None)
        if line is None or line == "data: [DONE]":
            continue
        obj = json.loads(line[6:])
        if st["api"] == "anthropic":
            if obj.get("type") == "content_block_delta" and obj["delta"].get("type") == "text_delta":
                out.append(obj["delta"]["text"])
        elif st["api"] == "chat":
            for ch in obj.get("choices") or []:
                if (ch.get("delta") or {}).get("content"):
                    out.append(ch["delta"]["content"])
        elif obj.get("type") == "response.output_text.delta":
            out.append(obj["delta"])
    return out
