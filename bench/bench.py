#!/usr/bin/env python3
"""disguise benchmark: the addon's own cost, measured side by side with what it rides on.

    cd <repo> && python bench/bench.py            # full run (< 3 min on 2 cores)
    cd <repo> && python bench/bench.py --quick    # fewer repetitions (< 45 s)

Options: --only abcd (a subset of sections), --profile (cProfile of the (a) and (b)
hot loops), --seed N. mitmdump is taken from the interpreter's own bin/ folder.

Sections (all inputs are generated deterministically from --seed):
  (a) engine throughput on three ~1 MB streams (Anthropic Messages, OpenAI Chat
      Completions, OpenAI Responses, each in the shape of the recorded ones), vs. the
      bare SSE framer and a bare loop, one event per chunk and 4 KiB chunks;
  (b) masking a ~1 MB Claude-Code-shaped request, as a ratio to json.loads of the body;
  (c) wall time of the same streams through real mitmdump processes (reverse proxy on
      127.0.0.1, the API recognised by its path): with the addon vs. plain mitmdump
      with stream=True;
  (d) hold-back on prose with no disguise prefixes: events delayed or changed (target 0),
      as Anthropic and as OpenAI (token-sized deltas) streams.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADDON = REPO / "addon"
MAPPINGS = REPO / "mappings"

# -- upstream server (runs as its own process: `bench.py --upstream-server N PATH=FILE...`) --


def upstream_server(per_write: int, routes: list[str]) -> None:
    """A local SSE upstream: answers every POST with the stream of its path (routes:
    "PATH=FILE", the first one also for any other path), chunked, `per_write` events
    per write (or the request's x-bench-per-write). Prints its port on stdout, then
    serves until killed."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    streams: dict[str, list[bytes]] = {}
    for r in routes:
        path, _, fname = r.partition("=")
        data = Path(fname).read_bytes()
        events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
        assert b"".join(events) == data
        streams[path] = events
    first = next(iter(streams))
    cache: dict[tuple[str, int], list[bytes]] = {}

    def writes_for(path: str, k: int) -> list[bytes]:
        if (path, k) not in cache:
            events = streams[path]
            ws = []
            for i in range(0, len(events), k):
                piece = b"".join(events[i : i + k])
                ws.append(b"%x\r\n%s\r\n" % (len(piece), piece))
            ws.append(b"0\r\n\r\n")
            cache[path, k] = ws
        return cache[path, k]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802
            n = int(self.headers.get("content-length") or 0)
            self.rfile.read(n)
            path = self.path.split("?", 1)[0]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            k = int(self.headers.get("x-bench-per-write") or per_write)
            for w in writes_for(path if path in streams else first, k):
                self.wfile.write(w)

        def log_message(self, *a) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if len(sys.argv) >= 2 and sys.argv[1] == "--upstream-server":
    upstream_server(int(sys.argv[2]), sys.argv[3:])
    sys.exit(0)

sys.path.insert(0, str(ADDON))

import yaml  # noqa: E402
from disguiselib import jsonspan, mappings, rules, sse  # noqa: E402
from disguiselib.providers import anthropic, base, openai  # noqa: E402

# -- text material ---------------------------------------------------------------------

WORDS = (
    "the a an of to in and or for with on by from that this these it is are was be can "
    "will should would could may might must not no yes all each every some any more most "
    "function method class module file files test tests config value values request "
    "response stream server client handler error errors cache database query index table "
    "field fields parser token tokens buffer output input string bytes list dict key keys "
    "update change changes fix fixes build run runs check checks call calls return returns "
    "first next last then when while after before because so but also only just still "
    "here there now new old same different simple small large fast slow safe correct "
    "path paths line lines loop case cases option options setting default event events "
    "user users data model models code logic state flow flows step steps result results "
    "look looks see seems read write reads writes add adds remove removes keep keeps "
    "handle handles parse parses load loads save saves use uses need needs make makes "
    "I I'll let's we you they their our its which what where how why"
).split()
NON_ASCII = ["—", "é", "→", "…", "naïve", "café", "✓"]
CODE_WORDS = "get_user parse_config load_rules stream_id retry_count max_tokens flush() feed() __init__ self.cache".split()

SYL_A = "kor vex tal mur bri dan sol quen fal dor mir ven lux tor nal pra gor sil bex kal rin har ost uml".split()
SYL_B = "ze ni tha lo ra pe qu wi ja yu fo ke".split()
NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil trent victor walter".split()
DOMAINS = "example.com example.org mail.example.net gmail.com outlook.com".split()
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rstr(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def make_literals(rng: random.Random, n: int) -> dict[str, str]:
    """n realistic literals (company, host, person, identifier, project names) with
    disguises in the style of examples/literals.yaml."""
    out: dict[str, str] = {}
    used_d: set[str] = set()

    def a(k: int) -> str:
        return "".join(rng.choice(SYL_A) for _ in range(k))

    def b(k: int) -> str:
        return "".join(rng.choice(SYL_B) for _ in range(k))

    i = 0
    while len(out) < n:
        i += 1
        kind = i % 5
        if kind == 0:
            o = f"{a(2).capitalize()} {rng.choice(['Systems', 'Analytics', 'Holdings', 'Health', 'Capital', 'Corp'])}"
            d = f"{b(3).capitalize()} Labs"
        elif kind == 1:
            o = f"{a(2)}-{rng.choice(['db', 'api', 'build', 'cache', 'auth'])}{rng.randint(1, 9)}.{a(2)}.internal"
            d = f"host-{i}.{b(2)}.example"
        elif kind == 2:
            o = f"{a(2).capitalize()} {a(2).capitalize()}"
            d = f"{b(2).capitalize()} {b(3).capitalize()}"
        elif kind == 3:
            o = f"{a(2)}_{rng.choice(['client', 'billing', 'sync', 'lookup', 'ledger', 'export'])}"
            d = f"{b(2)}_{rng.choice(['svc', 'tool', 'api'])}{i}"
        else:
            o = f"Project {a(2).capitalize()}"
            d = f"Project {b(3).capitalize()}"
        if o in out or d in used_d:
            continue
        out[o] = d
        used_d.add(d)
    return out


class Material:
    """Originals to sprinkle into requests and streams."""

    def __init__(self, rng: random.Random, literals: dict[str, str]) -> None:
        self.literals = literals
        self.lit_list = list(literals)
        self.emails = [
            f"{rng.choice(NAMES)}.{rng.choice(NAMES)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"
            for _ in range(40)
        ]
        self.aws = ["AKIA" + rstr(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) for _ in range(3)]
        self.ghp = "ghp_" + rstr(rng, ALNUM, 36)
        self.ant = "sk-ant-api03-" + rstr(rng, ALNUM + "_-", 60)
        self.jwt = "eyJhbGciOiJIUzI1NiJ9.eyJ" + rstr(rng, ALNUM, 40) + "." + rstr(rng, ALNUM + "_-", 43)
        body = "\n".join(rstr(rng, B64, 64) for _ in range(25))
        self.pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def prose(rng: random.Random, nchars: int, brackets: bool = False, nonascii: bool = True) -> str:
    """Assistant-style markdown prose. No '[' unless brackets=True."""
    out: list[str] = []
    size = 0
    while size < nchars:
        r = rng.random()
        if r < 0.08:
            s = "\n\n## " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))).capitalize() + "\n\n"
        elif r < 0.2:
            s = "\n- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        else:
            ws = [rng.choice(WORDS) for _ in range(rng.randint(6, 20))]
            if rng.random() < 0.3:
                ws[rng.randrange(len(ws))] = f"`{rng.choice(CODE_WORDS)}`"
            if rng.random() < 0.15:
                ws[rng.randrange(len(ws))] = str(rng.randint(2, 4096))
            if nonascii and rng.random() < 0.05:
                ws[rng.randrange(len(ws))] = rng.choice(NON_ASCII)
            if brackets and rng.random() < 0.25:
                ws[rng.randrange(len(ws))] = rng.choice(
                    ["[the docs](https://docs.example.com/x)", "`[1, 2, 3]`", "[see below]", "`items[0]`"]
                )
            if rng.random() < 0.2:
                ws.insert(rng.randint(1, len(ws) - 1), "**" + rng.choice(WORDS) + "**")
            s = " ".join(ws).capitalize() + rng.choice([".", ".", ".", ":", "!", "?"])
            s = (" " if out and not out[-1].endswith("\n") else "") + s
            if rng.random() < 0.15:
                s += "\n\n"
        out.append(s)
        size += len(s)
    return "".join(out)


def cut_points(rng: random.Random, text: str, lo: int = 5, hi: int = 40) -> list[int]:
    """Delta boundaries like a tokenizer's: 5-40 chars, mostly at a word start."""
    starts = [m.start() for m in re.finditer(r"(?<=\S)\s", text)]
    cuts = []
    pos = 0
    n = len(text)
    k = 0
    while pos < n:
        target = pos + rng.randint(lo, hi)
        if target >= n:
            break
        cut = target
        if rng.random() < 0.8:  # snap to the next word start within hi
            while k < len(starts) and starts[k] < target:
                k += 1
            if k < len(starts) and starts[k] <= pos + hi:
                cut = starts[k]
        cuts.append(cut)
        pos = cut
    return cuts


def pieces(text: str, cuts: list[int]) -> list[str]:
    cs = sorted(set(c for c in cuts if 0 < c < len(text)))
    out = []
    prev = 0
    for c in cs:
        out.append(text[prev:c])
        prev = c
    out.append(text[prev:])
    return [p for p in out if p]


# -- (a)/(c)/(d) the streams -----------------------------------------------------------


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
            f"    if value is None:\n        raise ValueError(f\"bad value: {{value!r}}\")",
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
    n_disg = sum(1 for a, b in zip(tm, to) if a != b) + 1 if disguises else 0
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


def first_diff(got: str, want: str) -> str:
    i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]), min(len(got), len(want)))
    return f"first difference at {i} of {len(want)}: got {got[max(0, i - 20) : i + 40]!r} want {want[max(0, i - 20) : i + 40]!r}"


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
) -> dict:
    """A Chat Completions stream in the exact shape of the recorded ones
    (chat_stream_text_usage.sse, chat_stream_parallel_tool_calls.sse): `data: {...}`
    chunks, one token-sized content delta (1-10 chars) each, then two parallel tool
    calls (a file write of ~6 KB of JSON and a short command) with token-sized
    argument deltas, the finish chunk, the usage chunk and `data: [DONE]`."""
    rng = random.Random(seed)
    masked_text, orig_text, text_pieces, n_spans = disguised_text(rng, text_chars, disguises, n_disguised, brackets, strip, 1, 10)
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


# -- (b) the request -------------------------------------------------------------------


def code_file(rng: random.Random, mat: Material, nlines: int, secrets: list[str]) -> str:
    lines = [f'"""{prose(rng, 120, nonascii=False).strip()}"""', "", "import json", "import logging", "import re", ""]
    idents = [w.strip("()").replace(".", "_") for w in CODE_WORDS]

    def lit() -> str:
        return rng.choice(mat.lit_list)

    while len(lines) < nlines:
        r = rng.random()
        w = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        idn = rng.choice(idents)
        if r < 0.08:
            lines += ["", f"def {idn}_{len(lines)}(self, value, retries=3):", f'    """{w.capitalize()}."""']
        elif r < 0.2:
            lines.append(f"    # {w}" + (f" ({lit()})" if rng.random() < 0.25 else ""))
        elif r < 0.3:
            lines.append(f'    log.info("{w} %s", {idn})')
        elif r < 0.36:
            lines.append(f'    url = f"https://{lit() if rng.random() < 0.5 else "api.example.com"}/v2/{{{idn}}}"')
        elif r < 0.44:
            lines.append(f"    if {idn} is None:\n        raise ValueError(f\"bad {idn}: {{value!r}}\")")
        elif r < 0.5:
            lines.append(f'    pattern = re.compile(r"^\\d+\\s*[a-z_]+\\.json$")')
        elif r < 0.56:
            lines.append(f'    data = {{"key": "{rng.choice(WORDS)}", "count": {rng.randint(0, 999)}, "path": "C:\\\\tmp\\\\x"}}')
        elif r < 0.6 and rng.random() < 0.1:
            lines.append(f'    OWNER = "{rng.choice(mat.emails)}"  # contact')
        elif r < 0.62 and secrets:
            lines.append(f'    API_KEY = "{secrets.pop()}"')
        else:
            lines.append(f"    {idn} = self.{rng.choice(idents)}({idn}, retries={rng.randint(1, 5)})")
    return "\n".join(lines)


def read_result(content: str) -> str:
    """Claude Code's Read tool output: right-aligned line numbers and an arrow."""
    return "\n".join(f"{i:6d}→{line}" for i, line in enumerate(content.split("\n"), 1))


def schema_tool(rng: random.Random, name: str, props: dict[str, str], extra: dict | None = None) -> dict:
    properties = {p: {"type": t, "description": prose(rng, rng.randint(60, 200), nonascii=False).strip()} for p, t in props.items()}
    if extra:
        properties.update(extra)
    return {
        "name": name,
        "description": prose(rng, rng.randint(400, 3500), nonascii=False).strip(),
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": list(props)[:2],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }


def build_request(seed: int, target_bytes: int, mat: Material) -> tuple[bytes, dict]:
    """A Claude-Code-shaped /v1/messages body of about target_bytes."""
    rng = random.Random(seed)
    lit = lambda: rng.choice(mat.lit_list)  # noqa: E731
    user = rng.choice(NAMES)
    proj = lit()
    secrets = [mat.ant, mat.ghp, mat.jwt, mat.pem, *mat.aws]
    env = (
        f"<env>\nWorking directory: /home/{user}/src/{proj}\nIs directory a git repo: Yes\n"
        f"Platform: linux\nToday's date: 2025-10-01\n</env>\n"
        "gitStatus: This is the git status at the start of the conversation.\nCurrent branch: main\n"
        + "\n".join(f"{rstr(rng, '0123456789abcdef', 7)} {prose(rng, 50, nonascii=False).strip()} ({rng.choice(mat.emails)})" for _ in range(8))
    )
    system = [
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": prose(rng, 14000, nonascii=False) + "\n\n" + env, "cache_control": {"type": "ephemeral"}},
    ]
    tools = [
        schema_tool(rng, "Task", {"description": "string", "prompt": "string", "subagent_type": "string"}),
        schema_tool(rng, "Bash", {"command": "string", "description": "string", "timeout": "number", "run_in_background": "boolean"}),
        schema_tool(rng, "Glob", {"pattern": "string", "path": "string"}),
        schema_tool(rng, "Grep", {"pattern": "string", "path": "string", "glob": "string", "-i": "boolean", "-n": "boolean", "head_limit": "number"},
                    {"output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Output mode."}}),
        schema_tool(rng, "ExitPlanMode", {"plan": "string"}),
        schema_tool(rng, "Read", {"file_path": "string", "offset": "number", "limit": "number"}),
        schema_tool(rng, "Edit", {"file_path": "string", "old_string": "string", "new_string": "string", "replace_all": "boolean"}),
        schema_tool(rng, "Write", {"file_path": "string", "content": "string"}),
        schema_tool(rng, "NotebookEdit", {"notebook_path": "string", "cell_id": "string", "new_source": "string"},
                    {"edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}}),
        schema_tool(rng, "WebFetch", {"url": "string", "prompt": "string"}),
        schema_tool(rng, "TodoWrite", {}, {"todos": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string", "minLength": 1}, "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            "activeForm": {"type": "string", "minLength": 1}}, "required": ["content", "status", "activeForm"], "additionalProperties": False},
            "description": "The updated todo list"}}),
        schema_tool(rng, "WebSearch", {"query": "string"}, {"allowed_domains": {"type": "array", "items": {"type": "string"}}}),
        schema_tool(rng, "BashOutput", {"bash_id": "string", "filter": "string"}),
        schema_tool(rng, "KillShell", {"shell_id": "string"}),
        schema_tool(rng, "SlashCommand", {"command": "string"}),
        schema_tool(rng, f"mcp__{mat.lit_list[3]}__lookup_customer", {"customer_id": "string", "include_history": "boolean"}),
        schema_tool(rng, f"mcp__{mat.lit_list[8]}__query", {"sql": "string", "database": "string"}),
    ]
    claude_md = "# CLAUDE.md\n\n" + "\n".join(
        f"- {prose(rng, 80, nonascii=False).strip()} Contact {rng.choice(mat.emails)} about {lit()}; staging is {lit()}."
        for _ in range(25)
    )
    messages: list[dict] = [
        {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n" + claude_md + "\n</system-reminder>"},
            {"type": "text", "text": f"The {lit()} export job fails on {lit()} since yesterday; find out why and fix it. Ping {rng.choice(mat.emails)} when done."},
        ]},
    ]
    size = len(json.dumps({"system": system, "tools": tools, "messages": messages}, ensure_ascii=False))
    n = 0
    while size < target_bytes:
        n += 1
        tid = "toolu_01" + rstr(rng, ALNUM, 22)
        kind = rng.choice(["Read", "Read", "Read", "Bash", "Grep", "Edit"])
        path = f"/home/{user}/src/{proj}/{rng.choice(['app', 'lib', 'svc'])}/{rng.choice(CODE_WORDS).strip('()').replace('.', '_')}_{n}.py"
        if kind == "Read":
            inp = {"file_path": path}
            content: object = read_result(code_file(rng, mat, rng.randint(120, 450), secrets))
        elif kind == "Bash":
            inp = {"command": f"cd /home/{user}/src/{proj} && pytest -x -q tests/ 2>&1 | tail -50", "description": "Run the test suite"}
            content = "\n".join(
                f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i} {rng.choice(['PASSED', 'PASSED', 'FAILED'])}"
                + (f"  ({lit()})" if rng.random() < 0.1 else "")
                for i in range(rng.randint(40, 160))
            )
        elif kind == "Grep":
            inp = {"pattern": rng.choice(mat.lit_list[:50]), "path": f"/home/{user}/src/{proj}", "output_mode": "content", "-n": True}
            content = "\n".join(f"{path}:{rng.randint(1, 900)}:{line}" for line in code_file(rng, mat, rng.randint(30, 120), secrets).split("\n"))
        else:
            old = code_file(rng, mat, 12, [])
            inp = {"file_path": path, "old_string": old, "new_string": old.replace("retries=3", "retries=5")}
            content = [{"type": "text", "text": f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" + read_result(code_file(rng, mat, 40, []))}]
        blocks: list[dict] = []
        if rng.random() < 0.3:
            blocks.append({"type": "thinking", "thinking": prose(rng, rng.randint(200, 1500), nonascii=False), "signature": rstr(rng, B64, 344)})
        blocks.append({"type": "text", "text": prose(rng, rng.randint(40, 300)).strip() + (f" ({lit()})" if rng.random() < 0.3 else "")})
        blocks.append({"type": "tool_use", "id": tid, "name": kind, "input": inp})
        result = {"type": "tool_result", "tool_use_id": tid, "content": content}
        if rng.random() < 0.05:
            result["is_error"] = True
        messages.append({"role": "assistant", "content": blocks})
        messages.append({"role": "user", "content": [result]})
        size += len(json.dumps(messages[-2:], ensure_ascii=False))
    messages.append({"role": "user", "content": [{"type": "text", "text": f"Good. Now also check {lit()} and mail {rng.choice(mat.emails)}."}]})
    doc = {
        "model": "claude-sonnet-4-5-20250929",
        "messages": messages,
        "system": system,
        "tools": tools,
        "metadata": {"user_id": f"user_{rstr(rng, '0123456789abcdef', 64)}_account__session_{rstr(rng, '0123456789abcdef', 32)}"},
        "max_tokens": 32000,
        "stream": True,
    }
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    info = {
        "messages": len(messages),
        "tools": len(tools),
        "system": len(system),
        "tool_results": sum(1 for m in messages for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "tool_result"),
        "thinking": sum(1 for m in messages for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "thinking"),
    }
    return raw, info


def string_values(doc: object, out: list[str]) -> list[str]:
    """Every string value and key of doc (thinking blocks skipped), for per-rule scans."""
    if isinstance(doc, dict):
        if doc.get("type") == "thinking":
            return out
        for k, v in doc.items():
            out.append(k)
            string_values(v, out)
    elif isinstance(doc, list):
        for v in doc:
            string_values(v, out)
    elif isinstance(doc, str):
        out.append(doc)
    return out


# -- helpers ---------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def timeit(fn, reps: int, warm: int = 1) -> list[float]:
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


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
    out = [obj.feed(c) for c in chunks]
    out.append(obj.flush())
    return b"".join(out)


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def proc_cpu(pid: int) -> float:
    """utime+stime of a process, in seconds (Linux /proc)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def profile(fn, title: str, top: int = 14) -> None:
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    lines = [ln for ln in s.getvalue().splitlines() if ln.strip()]
    print(f"    cProfile, {title} (sorted by own time):")
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    for ln in lines[start : start + top + 1]:
        print("      " + ln.replace(str(ADDON) + "/", ""))


# -- sections --------------------------------------------------------------------------


class Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        rng = random.Random(args.seed)
        t0 = time.perf_counter()
        self.ms_default = mappings.load(MAPPINGS)
        self.R_default = rules.Rules(self.ms_default)
        lits = make_literals(rng, 1000)
        doc = yaml.safe_load((MAPPINGS / "default.yaml").read_text())
        doc["literals"] = lits
        self.ms_lit = mappings.from_dict(doc, "bench: 1000 literals + default.yaml")
        self.R_lit = rules.Rules(self.ms_lit)
        self.t_rules = time.perf_counter() - t0
        self.mat = Material(rng, lits)
        # A small request carrying the originals, masked like the addon would: its
        # session's placeholders are what the stream's placeholders restore to.
        small = {
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 4096,
            "stream": True,
            "messages": [{"role": "user", "content": (
                f"Write to {self.mat.emails[0]} and {self.mat.emails[1]}; the key {self.mat.aws[0]} and "
                f"{self.mat.ghp} leaked. Also {self.mat.emails[2]}. Context: {', '.join(self.mat.lit_list[:40])}."
            )}],
        }
        self.small_req = json.dumps(small).encode()
        # The same user message as a Chat Completions and a Responses request (with the
        # tools their streams call), for (c) and for the OpenAI streams' placeholders.
        user_text = small["messages"][0]["content"]
        fn = {"name": "write_file", "description": "Write a file, replacing its content.", "parameters": {
            "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"], "additionalProperties": False}, "strict": True}
        cmd = {"name": "run_command", "description": "Run a shell command.", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
            "required": ["command"]}}  # fmt: skip
        self.chat_req = json.dumps({
            "model": "gpt-4o-2024-08-06", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": "You are a coding assistant."}, {"role": "user", "content": user_text}],
            "tools": [{"type": "function", "function": fn}, {"type": "function", "function": cmd}],
        }).encode()  # fmt: skip
        self.responses_req = json.dumps({
            "model": "gpt-5.5", "stream": True, "store": False, "reasoning": {"effort": "low"},
            "input": [{"role": "user", "content": [{"type": "input_text", "text": user_text}]}],
            "tools": [{"type": "function", **fn}],
        }).encode()  # fmt: skip
        some_lits = [(d, o) for o, d in list(lits.items())[:40]]
        text_chars = 158_000
        # per API: its request rule and request, its stream builder and class, the text
        # size that makes its stream about 1 MB (OpenAI deltas are single tokens)
        apis = (
            ("anthropic", anthropic.MESSAGES_REQUEST, self.small_req, build_stream, anthropic.AnthropicStream, text_chars, 24),
            ("chat", openai.CHAT_REQUEST, self.chat_req, build_chat_stream, openai.ChatStream, 12_000, 12),
            ("responses", openai.RESPONSES_REQUEST, self.responses_req, build_responses_stream, openai.ResponsesStream, 15_500, 12),
        )
        # self.sess[api][rules] -> Session, self.streams[api][rules] -> stream dict
        self.sess: dict[str, dict[str, object]] = {}
        self.streams: dict[str, dict[str, dict]] = {}
        self.stream_cls = {}
        for api, rule, req, build, cls, nchars, ndisg in apis:
            self.stream_cls[api] = cls
            _, sd = base.mask_body(req, rule, self.R_default)
            _, sl = base.mask_body(req, rule, self.R_lit)
            self.sess[api] = {"default": sd, "lit": sl}
            disg_default = list(sd.placeholders.items())
            disg_lit = list(sl.placeholders.items()) + some_lits
            self.streams[api] = {
                "default": build(args.seed, nchars, disg_default, ndisg),
                "lit": build(args.seed, nchars, disg_lit, ndisg),
            }
        self.sess_default = self.sess["anthropic"]["default"]
        self.sess_lit = self.sess["anthropic"]["lit"]
        self.stream_default = self.streams["anthropic"]["default"]
        self.stream_lit = self.streams["anthropic"]["lit"]

    def new_stream(self, api: str, which: str):
        """A fresh stream object for api with the rules `which` ("default" | "lit")."""
        R = self.R_default if which == "default" else self.R_lit
        return self.stream_cls[api](R.restorer(self.sess[api][which].placeholders))


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


def section_a(c: Ctx) -> None:
    reps = 3 if c.quick else 9
    print(f"(a) Engine throughput (feed() over every chunk + flush()), median of {reps}, variants interleaved")
    print(f"    {'rules':<24} {'chunking':<14} {'variant':<12} {'µs/event':>9} {'events/s':>9} {'MB/s':>7} {'×bare':>7} {'×framer':>8}")
    own: dict[str, float] = {}
    for api in ("anthropic", "chat", "responses"):
        print(f"  {API_TITLES[api]}: {describe(c.streams[api]['default'])}")
        for label, which in (("default mappings", "default"), ("1000 literals + default", "lit")):
            st = c.streams[api][which]
            data = st["bytes"]
            nev = len(st["events"])
            chunkings = {
                "1 event/chunk": st["events"],
                "4 KiB chunks": [data[i : i + 4096] for i in range(0, len(data), 4096)],
            }
            for cname, chunks in chunkings.items():
                # correctness first (not timed): what a client reassembles is the original
                s = c.new_stream(api, which)
                problems = check(st, run_loop(s, chunks))
                factories = {
                    "bare loop": Bare,
                    "SSE framer": FramerPass,
                    "disguise": lambda api=api, which=which: c.new_stream(api, which),
                }
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
                med = {k: median(v) for k, v in times.items()}
                for name in factories:
                    t = med[name]
                    print(
                        f"    {label if cname == '1 event/chunk' and name == 'bare loop' else '':<24} "
                        f"{cname if name == 'bare loop' else '':<14} {name:<12} {t / nev * 1e6:>9.2f} {fmt_rate(nev / t):>9} "
                        f"{len(data) / t / 1e6:>7.1f} {t / med['bare loop']:>7.1f} {t / med['SSE framer']:>8.2f}"
                    )
                own_us = (med["disguise"] - med["bare loop"]) / nev * 1e6
                fr_us = (med["SSE framer"] - med["bare loop"]) / nev * 1e6
                own[f"{api}, {label}, {cname}"] = own_us
                print(
                    f"    {'':<24} {'':<14} -> addon cost {own_us:.2f} µs/event (framing {fr_us:.2f} + the rest "
                    f"{own_us - fr_us:.2f}); held {s.events_held}, changed {s.events_changed}/{s.events_in}; "
                    f"output {'OK' if not problems else 'MISMATCH'}"
                )
                for p in problems[:5]:
                    print(f"      {p}")
    lo, hi = min(own.values()), max(own.values())
    print(
        f"    mitmdump's own streaming work is ~23-31 µs per event (docs/mitmproxy.md, Cost): the addon's "
        f"{lo:.1f}-{hi:.1f} µs/event is {lo / 27 * 100:.0f}-{hi / 27 * 100:.0f}% on top of ~27 µs"
    )
    if c.args.profile:
        for api in ("anthropic", "chat", "responses"):
            st = c.streams[api]["lit"]
            profile(lambda api=api, st=st: run_loop(c.new_stream(api, "lit"), st["events"]),
                    f"{API_TITLES[api]}, 1000 literals, 1 event/chunk")  # fmt: skip


def section_b(c: Ctx) -> None:
    reps = 3 if c.quick else 9
    raw, info = build_request(c.args.seed + 1, 1_000_000, c.mat)
    s, doc = jsonspan.parse(raw)
    print(
        f"(b) Request masking: {len(raw) / 1e6:.2f} MB Claude-Code-shaped body ({info['system']} system blocks, "
        f"{info['tools']} tools, {info['messages']} messages, {info['tool_results']} tool_results, "
        f"{info['thinking']} thinking blocks); median of {reps}"
    )
    t_loads = median(timeit(lambda: json.loads(raw), reps))
    t_parse = median(timeit(lambda: jsonspan.parse(raw), reps))
    t_walk = median(timeit(lambda: jsonspan.transform(s, doc, anthropic.MESSAGES_REQUEST, lambda v, p: v), reps))
    rows = [("json.loads(body)", t_loads, ""), ("parse (decode + json.loads)", t_parse, ""),
            ("span walk only (identity fn)", t_walk, "")]
    results = {}
    for label, R in (("mask, default patterns only", c.R_default), ("mask, 1000 literals + default", c.R_lit)):
        masked, sess = base.mask_body(raw, anthropic.MESSAGES_REQUEST, R)
        t = median(timeit(lambda R=R: base.mask_body(raw, anthropic.MESSAGES_REQUEST, R), reps))
        results[label] = (masked, sess)
        rows.append((label, t, f"{sess.masked} replaced, {len(sess.placeholders)} placeholders"))
    for label, t, note in rows:
        print(f"    {label:<32} {t * 1e3:>8.1f} ms  {t / t_loads:>6.1f}× json.loads  {len(raw) / t / 1e6:>6.1f} MB/s  {note}")
    # leak check: no original of the material survives masking (thinking blocks hold none)
    masked, _ = results["mask, 1000 literals + default"]
    mtext = masked.decode()
    used_lits = [o for o in c.mat.lit_list if o in s]
    secrets = [*c.mat.emails, *c.mat.aws, c.mat.ghp, c.mat.ant, c.mat.jwt]
    leaks = [o for o in used_lits + secrets if o in mtext]
    pem_body_leak = c.mat.pem.split("\n")[1] in mtext
    json.loads(mtext)
    print(
        f"    check: masked body parses; {len(used_lits)} distinct literals and {sum(1 for x in secrets if x in s)} "
        f"secrets/e-mails present in the body, {len(leaks) + pem_body_leak} survive masking"
    )
    # where the time goes: each forward rule scanning every selected string
    vals = string_values(doc, [])
    total = sum(map(len, vals))
    scans = []
    for name, rx in getattr(c.R_lit, "_forward", ()):
        t = median(timeit(lambda rx=rx: [m for v in vals for m in rx.finditer(v)], 1 if c.quick else 3))
        scans.append((t, name or f"literals trie ({len(c.ms_lit.literals)})", type(rx).__module__.split(".")[0]))
    if scans:
        scans.sort(reverse=True)
        print(f"    per-rule scan of all {len(vals):,} strings ({total / 1e6:.2f} M chars), slowest first:")
        items = [f"{n} {t * 1e3:.1f} ms" + (" [re]" if mod == "re" else "") for t, n, mod in scans]
        line = "     "
        for it in items:
            if len(line) + len(it) > 100:
                print(line.rstrip(","))
                line = "     "
            line += " " + it + ","
        print(line.rstrip(",") + f"; sum {sum(t for t, _, _ in scans) * 1e3:.1f} ms")
    if c.args.profile:
        profile(lambda: base.mask_body(raw, anthropic.MESSAGES_REQUEST, c.R_lit), "mask, 1000 literals + default")


# -- (c) through mitmdump --------------------------------------------------------------


class Mitmdump:
    def __init__(self, upstream_port: int, extra: list[str], tmp: Path, name: str) -> None:
        exe = Path(sys.executable).parent / "mitmdump"
        conf = tmp / f"conf-{name}"
        conf.mkdir()
        cmd = [
            str(exe), "--mode", f"reverse:http://127.0.0.1:{upstream_port}",
            "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={conf}", *extra,
        ]  # fmt: skip
        self.name = name
        self.log: list[str] = []
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.port: int | None = None
        self._ready = threading.Event()
        self._t = threading.Thread(target=self._drain, daemon=True)
        self._t.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line.rstrip())
            m = re.search(r"listening at 127\.0\.0\.1:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    def wait(self, timeout: float = 60) -> int:
        self._ready.wait(timeout)
        if self.port is None:
            raise RuntimeError(f"mitmdump ({self.name}) did not start:\n" + "\n".join(self.log[-20:]))
        return self.port

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Client:
    """One keep-alive connection; POSTs a body and reads the whole response."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, body: bytes, per_write: int = 8, path: str = "/v1/messages") -> tuple[float, float, bytes]:
        auth = (
            "anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\n"
            if path == "/v1/messages"
            else "authorization: Bearer sk-bench\r\n"
        )
        req = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
            f"{auth}accept: text/event-stream\r\n"
            f"accept-encoding: identity\r\nx-bench-per-write: {per_write}\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode() + body
        sock = self.sock
        t0 = time.perf_counter()
        sock.sendall(req)
        buf = bytearray()
        hdr = -1
        chunked = False
        clen = -1
        t_first = 0.0
        while True:
            d = sock.recv(1 << 18)
            if not d:
                raise RuntimeError("connection closed before the response ended")
            buf += d
            if hdr < 0:
                hdr = buf.find(b"\r\n\r\n")
                if hdr < 0:
                    continue
                head = bytes(buf[:hdr]).decode("latin-1").lower()
                if not head.startswith("http/1.1 200"):
                    raise RuntimeError("unexpected response: " + head.split("\r\n")[0])
                chunked = "transfer-encoding: chunked" in head
                m = re.search(r"content-length: *(\d+)", head)
                clen = int(m.group(1)) if m else -1
            if not t_first and len(buf) > hdr + 4:
                t_first = time.perf_counter() - t0
            if chunked:
                if len(buf) > hdr + 9 and buf.endswith(b"\r\n0\r\n\r\n"):
                    break
            elif clen >= 0 and len(buf) >= hdr + 4 + clen:
                break
        t = time.perf_counter() - t0
        body_raw = bytes(buf[hdr + 4 :])
        return t, t_first, dechunk(body_raw) if chunked else body_raw

    def close(self) -> None:
        self.sock.close()


def dechunk(b: bytes) -> bytes:
    out = []
    i = 0
    while True:
        j = b.index(b"\r\n", i)
        n = int(b[i:j].split(b";")[0], 16)
        if n == 0:
            assert b[j + 2 :] == b"\r\n", "trailing bytes after the last chunk"
            return b"".join(out)
        out.append(b[j + 2 : j + 2 + n])
        assert b[j + 2 + n : j + 4 + n] == b"\r\n"
        i = j + 4 + n


def section_c(c: Ctx) -> None:
    runs = 5 if c.quick else 11
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-"))
    # (api, path, request body, upstream events per write)
    cases = [
        ("anthropic", "/v1/messages", c.small_req, (8, 1)),
        ("chat", "/v1/chat/completions", c.chat_req, (8,)),
        ("responses", "/v1/responses", c.responses_req, (8,)),
    ]
    routes = []
    for api, path, _, _ in cases:
        sfile = tmp / f"{api}.sse"
        sfile.write_bytes(c.streams[api]["default"]["bytes"])
        routes.append(f"{path}={sfile}")
    plain_script = tmp / "stream_only.py"
    plain_script.write_text(
        "def responseheaders(flow):\n"
        "    # plain mitmdump buffers SSE unless streamed: stream it, like the addon does\n"
        "    flow.response.stream = True\n"
    )
    ident_script = tmp / "stream_identity.py"
    ident_script.write_text(
        "def responseheaders(flow):\n"
        "    # a stream callable that does nothing: mitmproxy's cost of calling one\n"
        "    flow.response.stream = lambda data: data\n"
    )
    up = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--upstream-server", "8", *routes],
                          stdout=subprocess.PIPE, text=True)  # fmt: skip
    procs: list[Mitmdump] = []
    clients: list[Client] = []
    try:
        assert up.stdout is not None
        up_port = int(up.stdout.readline())
        variants = [
            ("plain", "plain mitmdump, stream=True", ["-s", str(plain_script)]),
            ("ident", "mitmdump, identity callable", ["-s", str(ident_script)]),
            ("addon", "mitmdump -s addon/disguise.py", ["-s", "addon/disguise.py", "--set", "disguise_mappings=mappings"]),
        ]
        for key, _, extra in variants:
            procs.append(Mitmdump(up_port, extra, tmp, key))
        ports = [p.wait() for p in procs]
        direct = Client(up_port)
        cls = {key: Client(port) for (key, _, _), port in zip(variants, ports)}
        md = {key: p for (key, _, _), p in zip(variants, procs)}
        clients += [direct, *cls.values()]
        import mitmproxy.version

        print(
            f"(c) Through mitmdump {mitmproxy.version.VERSION} (reverse proxy, 127.0.0.1, HTTP/1.1, keep-alive): "
            f"the (a) streams, default mappings; {runs} runs each, variants interleaved, 1 warm-up"
        )
        print(f"    {'':<36} {'median':>9} {'min':>9} {'max':>9} {'1st byte':>9} {'MB/s':>6} {'events/s':>9} {'proxy CPU':>10}")
        for api, path, body, per_writes in cases:
            st = c.streams[api]["default"]
            nev = len(st["events"])
            mb = len(st["bytes"]) / 1e6
            for per_write in per_writes:
                # warm up (first flow: upstream connect, lazy imports) and check the output
                ok = {"direct": direct.post(body, per_write, path)[2] == st["bytes"]}
                problems: list[str] = []
                for key in cls:
                    out = cls[key].post(body, per_write, path)[2]
                    if key == "addon":
                        problems = check(st, out)
                        ok[key] = not problems
                    else:
                        ok[key] = out == st["bytes"]
                td = [direct.post(body, per_write, path)[0] for _ in range(runs)]
                wall: dict[str, list[float]] = {k: [] for k in cls}
                first: dict[str, list[float]] = {k: [] for k in cls}
                cpu: dict[str, float] = {k: 0.0 for k in cls}
                keys = list(cls)
                for i in range(runs):
                    order = keys[i % len(keys) :] + keys[: i % len(keys)]
                    if i % 2:
                        order.reverse()
                    for k in order:
                        c0 = proc_cpu(md[k].proc.pid)
                        t, tf, _ = cls[k].post(body, per_write, path)
                        cpu[k] += proc_cpu(md[k].proc.pid) - c0
                        wall[k].append(t)
                        first[k].append(tf)
                print(
                    f"  {API_TITLES[api]}, {mb:.2f} MB, {nev:,} events; upstream writes {per_write} "
                    f"event{'s' if per_write > 1 else ''} per chunk:"
                )
                rows = [("  direct to upstream (no proxy)", td, None, None)]
                rows += [("  " + label, wall[k], first[k], cpu[k]) for k, label, _ in variants]
                for label, ts, tf, cp in rows:
                    m = median(ts)
                    fb = f"{median(tf) * 1e3:>7.1f}ms" if tf else f"{'-':>9}"
                    cpu_s = f"{cp / runs * 1e3:>8.0f}ms" if cp is not None else f"{'-':>10}"
                    print(
                        f"    {label:<36} {m * 1e3:>7.1f}ms {min(ts) * 1e3:>7.1f}ms {max(ts) * 1e3:>7.1f}ms "
                        f"{fb} {mb / m:>6.1f} {fmt_rate(nev / m):>9} {cpu_s}"
                    )
                mp, mi, ma = (median(wall[k]) for k in ("plain", "ident", "addon"))
                ratio = ma / mp
                pairs = sorted(a / p for a, p in zip(wall["addon"], wall["plain"]))
                print(
                    f"      ratio addon/plain (medians) {ratio:.2f}  [target ≤ 1.10: {'PASS' if ratio <= 1.10 else 'FAIL'}]; "
                    f"per round {pairs[0]:.2f}-{pairs[-1]:.2f}; identity/plain {mi / mp:.2f}, addon/identity {ma / mi:.2f}"
                )
                print(
                    f"      addon adds {(ma - mp) / nev * 1e6:.1f} µs wall and {(cpu['addon'] - cpu['plain']) / runs / nev * 1e6:.1f} µs "
                    f"proxy CPU per event over plain ({(cpu['addon'] - cpu['ident']) / runs / nev * 1e6:.1f} µs over the identity callable)"
                )
                what = {
                    "anthropic": "text + tool JSON",
                    "chat": "content + 2 tool calls' arguments (json.loads OK), nothing after finish_reason, [DONE] last",
                    "responses": "text + arguments, *.done/snapshots = deltas, sequence_number gapless",
                }[api]
                print(
                    f"      output: direct {'OK' if ok['direct'] else 'MISMATCH'}, plain and identity byte-identical "
                    f"{'OK' if ok['plain'] and ok['ident'] else 'MISMATCH'}, addon restored {what} {'OK' if ok['addon'] else 'MISMATCH'}"
                )
                for p in problems[:5]:
                    print(f"        {p}")
    finally:
        for cl in clients:
            cl.close()
        for p in procs:
            p.stop()
        up.terminate()
        up.wait()


# -- (d) hold-back on plain prose --------------------------------------------------------


def section_d(c: Ctx) -> None:
    seed = c.args.seed + 7
    st = build_stream(seed, 60_000, [], 0, brackets=False, tool=False, strip=False)
    plain = "".join(st["sent"].values())
    assert "[" not in plain
    print(
        f"(d) Hold-back on prose with no disguise prefixes: {st['n_text']:,} text deltas ({len(plain):,} chars, "
        f"markdown, code spans, no '['), 1 event per chunk"
    )

    def count(api: str, which: str, stream: dict) -> tuple[int, int, int, int, bool]:
        s = c.new_stream(api, which)
        differ = empty = 0
        outs = []
        for e in stream["events"]:
            o = s.feed(e)
            outs.append(o)
            if o != e:
                differ += 1
                empty += not o
        outs.append(s.flush())
        ok = not check(stream, b"".join(outs))
        return s.events_held, differ, empty, s.events_in, ok

    held, differ, empty, n, ok = count("anthropic", "default", st)
    verdict = "PASS" if held == 0 and differ == 0 else "FAIL"
    print(f"    default mappings:            events held {held}, output differs from input {differ} (target 0: {verdict}); text intact {'OK' if ok else 'MISMATCH'}")
    held, differ, empty, n, ok = count("anthropic", "lit", st)
    print(
        f"    1000 literals + default:     events held {held} ({held / n * 100:.1f}%), differ {differ}, "
        f"fully held {empty}  (informational: tails that begin a literal disguise)"
    )
    st2 = build_stream(seed, 60_000, [], 0, brackets=True, tool=False, strip=False)
    held, differ, empty, n, ok = count("anthropic", "default", st2)
    nb = "".join(st2["sent"].values()).count("[")
    print(
        f"    default, prose with {nb} '[' (links, indexes): events held {held}, differ {differ}, fully held {empty} "
        f"(informational: a tail '[' may begin a placeholder)"
    )
    # the same prose as OpenAI streams: token-sized deltas (1-10 chars), many more events
    for api, build in (("chat", build_chat_stream), ("responses", build_responses_stream)):
        sto = build(seed, 60_000, [], 0, brackets=False, tool=False, strip=False)
        assert sto["sent"][0] == plain
        name = {"chat": "OpenAI Chat Completions", "responses": "OpenAI Responses"}[api]
        print(f"  {name}, the same prose as {sto['n_text']:,} deltas of 1-10 chars ({len(sto['events']):,} events):")
        held, differ, empty, n, ok = count(api, "default", sto)
        verdict = "PASS" if held == 0 and differ == 0 else "FAIL"
        print(f"    default mappings:            events held {held}, output differs from input {differ} (target 0: {verdict}); text intact {'OK' if ok else 'MISMATCH'}")
        if api == "chat":
            held, differ, empty, n, ok = count(api, "lit", sto)
            print(
                f"    1000 literals + default:     events held {held} ({held / n * 100:.1f}%), differ {differ}, "
                f"fully held {empty}  (informational)"
            )


# -- main --------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (< 45 s)")
    ap.add_argument("--only", default="abcd", help="sections to run, e.g. 'ab'")
    ap.add_argument("--profile", action="store_true", help="cProfile the (a) and (b) hot loops")
    ap.add_argument("--seed", type=int, default=20250101)
    args = ap.parse_args()
    t_start = time.perf_counter()
    import mitmproxy.version
    import regex as regex_mod

    print(
        f"disguise bench — Python {platform.python_version()}, mitmproxy {mitmproxy.version.VERSION}, "
        f"regex {regex_mod.__version__}, {platform.machine()} × {os.cpu_count()} cpu{'s' if (os.cpu_count() or 1) > 1 else ''}"
        f"{', --quick' if args.quick else ''}"
    )
    c = Ctx(args)
    print(
        f"rules: default mappings = {len(c.ms_default.patterns)} patterns + {len(c.ms_default.strips)} strip; "
        f"bench set = {len(c.ms_lit.literals)} literals + the same (loaded+compiled both in {c.t_rules:.2f} s)"
    )
    print()
    for key, fn in (("a", section_a), ("b", section_b), ("c", section_c), ("d", section_d)):
        if key in args.only:
            t0 = time.perf_counter()
            fn(c)
            print(f"    [{time.perf_counter() - t0:.1f} s]")
            print()
    print(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
