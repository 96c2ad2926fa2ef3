#!/usr/bin/env python3
"""disguise benchmark: the addon's own cost, measured side by side with what it rides on.

    cd <repo> && python bench/bench.py            # full run (< 3 min on 2 cores)
    cd <repo> && python bench/bench.py --quick    # fewer repetitions (< 40 s)

Options: --only abcd (a subset of sections), --profile (cProfile of the (a) and (b)
hot loops), --seed N. mitmdump is taken from the interpreter's own bin/ folder.

Sections (all inputs are generated deterministically from --seed):
  (a) engine throughput on a ~1 MB Anthropic stream, vs. the bare SSE framer and a bare
      loop, one event per chunk and 4 KiB chunks;
  (b) masking a ~1 MB Claude-Code-shaped request, as a ratio to json.loads of the body;
  (c) wall time of the same stream through real mitmdump processes (reverse proxy on
      127.0.0.1): with the addon vs. plain mitmdump with stream=True;
  (d) hold-back on prose with no disguise prefixes: events delayed or changed (target 0).
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

# -- upstream server (runs as its own process: `bench.py --upstream-server FILE N`) ------


def upstream_server(stream_file: str, per_write: int) -> None:
    """A local SSE upstream: answers every POST with the stream, chunked, `per_write`
    events per write. Prints its port on stdout, then serves until killed."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    data = Path(stream_file).read_bytes()
    events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
    assert b"".join(events) == data
    cache: dict[int, list[bytes]] = {}

    def writes_for(k: int) -> list[bytes]:
        if k not in cache:
            ws = []
            for i in range(0, len(events), k):
                piece = b"".join(events[i : i + k])
                ws.append(b"%x\r\n%s\r\n" % (len(piece), piece))
            ws.append(b"0\r\n\r\n")
            cache[k] = ws
        return cache[k]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802
            n = int(self.headers.get("content-length") or 0)
            self.rfile.read(n)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for w in writes_for(int(self.headers.get("x-bench-per-write") or per_write)):
                self.wfile.write(w)

        def log_message(self, *a) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if len(sys.argv) >= 2 and sys.argv[1] == "--upstream-server":
    upstream_server(sys.argv[2], int(sys.argv[3]))
    sys.exit(0)

sys.path.insert(0, str(ADDON))

import yaml  # noqa: E402
from disguiselib import jsonspan, mappings, rules, sse  # noqa: E402
from disguiselib.providers import anthropic, base  # noqa: E402

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


# -- (a)/(c)/(d) the stream ------------------------------------------------------------


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
    base_text = prose(rng, text_chars, brackets=brackets)
    # insert disguises at word starts, each with a forced cut inside it
    masked_parts, orig_parts, spans = [], [], []
    positions = sorted(rng.sample([m.start() for m in re.finditer(r" (?=\w)", base_text)], n_disguised)) if disguises else []
    prev = 0
    mlen = 0
    if strip:
        masked_parts.append("[[reply_to_current]] ")
        orig_parts.append(" ")
        spans.append((0, len("[[reply_to_current]]")))
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
    cuts = cut_points(rng, masked_text)
    cuts += [a + rng.randint(1, b - a - 1) for a, b in spans]
    text_pieces = pieces(masked_text, cuts)

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
    expect = {0: orig_text.replace("[[reply_to_current]]", "")}
    sent = {0: masked_text}
    n_json = 0
    if tool:
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
        jp = pieces(tool_m, cut_points(rng, tool_m, 3, 30))
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
        "events": events,
        "bytes": b"".join(events),
        "n_text": n_text,
        "n_json": n_json,
        "expect": expect,
        "sent": sent,
        "n_disg_text": len(spans),
        "n_disg_tool": sum(1 for a, b in zip(tm, to) if a != b) + 1 if tool and disguises else 0,
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
        _, self.sess_default = base.mask_body(self.small_req, anthropic.MESSAGES_REQUEST, self.R_default)
        _, self.sess_lit = base.mask_body(self.small_req, anthropic.MESSAGES_REQUEST, self.R_lit)
        ph_def = list(self.sess_default.placeholders.items())
        ph_lit = list(self.sess_lit.placeholders.items())
        some_lits = [(d, o) for o, d in list(lits.items())[:40]]
        self.disg_default = ph_def
        self.disg_lit = ph_lit + some_lits
        text_chars = 158_000
        self.stream_default = build_stream(args.seed, text_chars, self.disg_default, 24)
        self.stream_lit = build_stream(args.seed, text_chars, self.disg_lit, 24)


def section_a(c: Ctx) -> None:
    reps = 3 if c.quick else 9
    st0 = c.stream_default
    nbytes = len(st0["bytes"])
    nev = len(st0["events"])
    print(
        f"(a) Engine throughput: {nbytes / 1e6:.2f} MB stream, {nev:,} events "
        f"({st0['n_text']:,} text_delta of 5-40 chars, {st0['n_json']} input_json_delta), "
        f"{st0['n_disg_text']} disguises in the text (strip tag included), each split across deltas, "
        f"{st0['n_disg_tool']} in the tool input; median of {reps}"
    )
    print(f"    {'rules':<24} {'chunking':<14} {'variant':<12} {'µs/event':>9} {'events/s':>9} {'MB/s':>7} {'×bare':>7} {'×framer':>8}")
    own: dict[str, float] = {}
    for label, R, sess, st in (
        ("default mappings", c.R_default, c.sess_default, c.stream_default),
        ("1000 literals + default", c.R_lit, c.sess_lit, c.stream_lit),
    ):
        data = st["bytes"]
        nev = len(st["events"])
        chunkings = {
            "1 event/chunk": st["events"],
            "4 KiB chunks": [data[i : i + 4096] for i in range(0, len(data), 4096)],
        }
        for cname, chunks in chunkings.items():
            # correctness first (not timed): what a client reassembles is the original
            s = anthropic.AnthropicStream(R.restorer(sess.placeholders))
            out = run_loop(s, chunks)
            got = channels(out)
            ok = got == st["expect"]
            factories = {
                "bare loop": Bare,
                "SSE framer": FramerPass,
                "disguise": lambda R=R, sess=sess: anthropic.AnthropicStream(R.restorer(sess.placeholders)),
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
            own[f"{label}, {cname}"] = own_us
            print(
                f"    {'':<24} {'':<14} -> addon cost {own_us:.2f} µs/event (framing {fr_us:.2f} + the rest "
                f"{own_us - fr_us:.2f}); "
                f"held {s.events_held}, changed {s.events_changed}/{s.events_in}; "
                f"output {'OK' if ok else 'MISMATCH'}"
            )
            if not ok:
                for k in st["expect"]:
                    a, b = got.get(k, ""), st["expect"][k]
                    i = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
                    if a != b:
                        print(f"      block {k}: first difference at {i}: got {a[i - 20 : i + 40]!r} want {b[i - 20 : i + 40]!r}")
    worst = max(own.values())
    print(
        f"    mitmdump's own streaming work is ~23-31 µs per event (docs/mitmproxy.md, Cost): the addon's "
        f"{min(own.values()):.1f}-{worst:.1f} µs/event is {min(own.values()) / 27 * 100:.0f}-{worst / 27 * 100:.0f}% on top of ~27 µs"
    )
    if c.args.profile:
        st = c.stream_lit
        R, sess = c.R_lit, c.sess_lit
        profile(lambda: run_loop(anthropic.AnthropicStream(R.restorer(sess.placeholders)), st["events"]),
                "1000 literals, 1 event/chunk")


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

    def post(self, body: bytes, per_write: int = 8) -> tuple[float, float, bytes]:
        req = (
            f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
            f"anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-bench\r\naccept: text/event-stream\r\n"
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
    st = c.stream_default
    tmp = Path(tempfile.mkdtemp(prefix="disguise-bench-"))
    sfile = tmp / "stream.sse"
    sfile.write_bytes(st["bytes"])
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
    up = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--upstream-server", str(sfile), "8"],
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
        body = c.small_req
        import mitmproxy.version

        nev = len(st["events"])
        mb = len(st["bytes"]) / 1e6
        print(
            f"(c) Through mitmdump {mitmproxy.version.VERSION} (reverse proxy, 127.0.0.1, HTTP/1.1, keep-alive): "
            f"{mb:.2f} MB, {nev:,} events, default mappings; {runs} runs each, variants interleaved, 1 warm-up"
        )
        print(f"    {'':<36} {'median':>9} {'min':>9} {'max':>9} {'1st byte':>9} {'MB/s':>6} {'events/s':>9} {'proxy CPU':>10}")
        for per_write in (8, 1):
            # warm up (first flow: upstream connect, lazy imports) and check the output
            ok = {"direct": direct.post(body, per_write)[2] == st["bytes"]}
            for key in cls:
                out = cls[key].post(body, per_write)[2]
                ok[key] = channels(out) == st["expect"] if key == "addon" else out == st["bytes"]
            td = [direct.post(body, per_write)[0] for _ in range(runs)]
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
                    t, tf, _ = cls[k].post(body, per_write)
                    cpu[k] += proc_cpu(md[k].proc.pid) - c0
                    wall[k].append(t)
                    first[k].append(tf)
            print(f"    upstream writes {per_write} event{'s' if per_write > 1 else ''} per chunk:")
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
            print(
                f"      output: direct {'OK' if ok['direct'] else 'MISMATCH'}, plain and identity byte-identical "
                f"{'OK' if ok['plain'] and ok['ident'] else 'MISMATCH'}, addon restored text + tool JSON {'OK' if ok['addon'] else 'MISMATCH'}"
            )
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

    def count(R: rules.Rules, sess_ph: dict, stream: dict) -> tuple[int, int, int, int, bool]:
        s = anthropic.AnthropicStream(R.restorer(sess_ph))
        differ = empty = 0
        outs = []
        for e in stream["events"]:
            o = s.feed(e)
            outs.append(o)
            if o != e:
                differ += 1
                empty += not o
        outs.append(s.flush())
        ok = channels(b"".join(outs)) == stream["expect"]
        return s.events_held, differ, empty, s.events_in, ok

    held, differ, empty, n, ok = count(c.R_default, c.sess_default.placeholders, st)
    verdict = "PASS" if held == 0 and differ == 0 else "FAIL"
    print(f"    default mappings:            events held {held}, output differs from input {differ} (target 0: {verdict}); text intact {'OK' if ok else 'MISMATCH'}")
    held, differ, empty, n, ok = count(c.R_lit, c.sess_lit.placeholders, st)
    print(
        f"    1000 literals + default:     events held {held} ({held / n * 100:.1f}%), differ {differ}, "
        f"fully held {empty}  (informational: tails that begin a literal disguise)"
    )
    st2 = build_stream(seed, 60_000, [], 0, brackets=True, tool=False, strip=False)
    held, differ, empty, n, ok = count(c.R_default, c.sess_default.placeholders, st2)
    nb = "".join(st2["sent"].values()).count("[")
    print(
        f"    default, prose with {nb} '[' (links, indexes): events held {held}, differ {differ}, fully held {empty} "
        f"(informational: a tail '[' may begin a placeholder)"
    )


# -- main --------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (< 40 s)")
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
