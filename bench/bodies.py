"""Request builders: a Claude-Code-shaped /v1/messages body, the small requests whose
placeholders the streams restore, and the adversarial bodies of section (d)."""

from __future__ import annotations

import json
import random

from material import ALNUM, B64, CODE_WORDS, NAMES, WORDS, Material, prose, rstr

# -- a Claude-Code-shaped request ---------------------------------------------------------


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
            lines.append('    pattern = re.compile(r"^\\d+\\s*[a-z_]+\\.json$")')
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




# -- the small requests whose placeholders the streams restore ------------------------------


def small_requests(mat: Material) -> dict[str, bytes]:
    """One user message carrying originals (e-mails, an AWS key, a GitHub token, 40
    literals) as an Anthropic Messages, a Chat Completions and a Responses request (with
    the tools their streams call). Masking one gives the session whose placeholders that
    API's stream carries, as in the addon."""
    user_text = (
        f"Write to {mat.emails[0]} and {mat.emails[1]}; the key {mat.aws[0]} and "
        f"{mat.ghp} leaked. Also {mat.emails[2]}. Context: {', '.join(mat.lit_list[:40])}."
    )
    anthropic = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 4096,
        "stream": True,
        "messages": [{"role": "user", "content": user_text}],
    }
    fn = {"name": "write_file", "description": "Write a file, replacing its content.", "parameters": {
        "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"], "additionalProperties": False}, "strict": True}
    cmd = {"name": "run_command", "description": "Run a shell command.", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        "required": ["command"]}}  # fmt: skip
    chat = {
        "model": "gpt-4o-2024-08-06", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "You are a coding assistant."}, {"role": "user", "content": user_text}],
        "tools": [{"type": "function", "function": fn}, {"type": "function", "function": cmd}],
    }  # fmt: skip
    responses = {
        "model": "gpt-5.5", "stream": True, "store": False, "reasoning": {"effort": "low"},
        "input": [{"role": "user", "content": [{"type": "input_text", "text": user_text}]}],
        "tools": [{"type": "function", **fn}],
    }  # fmt: skip
    return {"anthropic": json.dumps(anthropic).encode(), "chat": json.dumps(chat).encode(),
            "responses": json.dumps(responses).encode()}  # fmt: skip


def emails_chat_request(emails: list[str]) -> bytes:
    """A Chat Completions request whose only originals are e-mail addresses, in one user
    message: every masking proxy numbers them [EMAIL_1], [EMAIL_2], ... in this order
    (the section (a) request, sent to the addon and to the peer alike)."""
    text = "Draft a short status note to the team. Recipients: " + ", ".join(emails) + ". Keep it brief."
    return json.dumps({
        "model": "gpt-4o-mini", "stream": True,
        "messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}],
    }).encode()  # fmt: skip


# -- adversarial bodies (section (d)) --------------------------------------------------------
#
# Each returns text of about n characters in the shape named in issue 8; `tool_result_body`
# wraps one into a /v1/messages request, as Claude Code sends a Read/Grep/Bash result.

B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def base64url_then_email(rng: random.Random, n: int) -> str:
    """One run of base64url text (a JWT payload, a data blob pasted into a log) of about n
    characters, then a line with one e-mail address: the EMAIL pattern's local-part class
    covers every base64url character."""
    tail = "\nquestions: ops-team@example.com\n"
    return rstr(rng, B64URL, max(16, n - len(tail))) + tail


CSS_PROPS = (
    "display:flex", "display:none", "display:block", "position:relative", "position:absolute", "margin:0",
    "padding:.375rem .75rem", "font-size:1rem", "font-weight:400", "line-height:1.5", "color:#212529",
    "background-color:#fff", "border:1px solid #dee2e6", "border-radius:.375rem", "width:100%", "max-width:540px",
    "transition:color .15s ease-in-out,background-color .15s ease-in-out", "box-shadow:0 .5rem 1rem rgba(0,0,0,.15)",
    "font-family:var(--bs-font-sans-serif)", "z-index:1000", "flex-wrap:wrap", "align-items:center",
    "justify-content:space-between", "text-decoration:none", "white-space:nowrap", "overflow:hidden",
    "-webkit-appearance:none", "-moz-appearance:none", "transform:translate3d(0,0,0)", "opacity:.65",
)
CSS_NAMES = (
    "btn navbar nav-link dropdown-menu card card-body modal modal-dialog form-control form-select input-group "
    "list-group list-group-item badge alert toast tooltip popover carousel accordion offcanvas table container "
    "row col-md-6 col-lg-4 d-flex justify-content-between align-items-center text-muted fw-bold mb-3 mt-2 px-4 "
    "py-2 shadow-sm rounded-pill border-0 bg-primary text-white is-invalid was-validated active disabled show fade"
).split()


def css_selector(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        s = "." + rng.choice(CSS_NAMES)
        if rng.random() < 0.3:
            s += "." + rng.choice(CSS_NAMES)
        if rng.random() < 0.2:
            s += rng.choice([":hover", ":focus", ":not(:last-child)", "::before", ">.active", ":first-child"])
        parts.append(s)
    return rng.choice([" ", ">", "+"]).join(parts)


def svg_icon(rng: random.Random) -> str:
    """A small SVG icon, percent-encoded as minifiers inline it into CSS."""
    from urllib.parse import quote

    d = " ".join(f"{rng.choice('MLHVCZ')}{rng.randint(0, 16)}.{rng.randint(0, 99)} {rng.randint(0, 16)}" for _ in range(rng.randint(6, 30)))
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16' fill='%23{rstr(rng, '0123456789abcdef', 6)}'>"
           f"<path fill-rule='evenodd' d='{d}'/></svg>")  # fmt: skip
    return quote(svg, safe="")


def minified_css(rng: random.Random, n: int) -> str:
    """About n characters of minified CSS on one line, laid out as utility-first builds
    emit it: @charset, @import url(...), @font-face with a data: URI and :root custom
    properties first, then plain rules with selector lists, then the responsive
    variants (@media blocks), @supports and @keyframes at the end."""
    head = ['@charset "UTF-8";', '@import url("https://fonts.googleapis.com/css2?family=Inter:wght@400;600&display=swap");',
            "@import url(vendor/normalize.min.css);",
            "@font-face{font-family:Inter;font-style:normal;font-weight:400;font-display:swap;"
            f"src:url(data:font/woff2;base64,{rstr(rng, B64, 1200)}) format(\"woff2\")}}",
            ":root{" + ";".join(
               f"--bs-{rng.choice(CSS_NAMES)}-{rng.choice(['bg', 'color', 'border', 'rgb'])}:#{rstr(rng, '0123456789abcdef', 6)}"
               for _ in range(40)) + "}"]  # fmt: skip

    def rule() -> str:
        sel = ",".join(css_selector(rng) for _ in range(rng.randint(1, 3)))
        props = rng.sample(CSS_PROPS, rng.randint(1, 5))
        if rng.random() < 0.04:  # an icon inlined as a percent-encoded SVG data URI
            props.append(f"background-image:url(data:image/svg+xml;charset=utf-8,{svg_icon(rng)})")
        return sel + "{" + ";".join(props) + "}"

    tail: list[str] = []
    tail_size = 0
    while tail_size < n * 0.15:
        w = rng.choice([576, 768, 992, 1200, 1400])
        s = f"@media (min-width:{w}px){{" + "".join(rule() for _ in range(rng.randint(2, 8))) + "}"
        if rng.random() < 0.1:
            s = "@supports (position:sticky){" + rule() + "}"
        elif rng.random() < 0.1:
            s = f"@keyframes {rng.choice(CSS_NAMES)}-in{{0%{{opacity:0}}to{{opacity:1}}}}"
        tail.append(s)
        tail_size += len(s)
    body: list[str] = []
    size = sum(map(len, head)) + tail_size
    while size < n:
        s = rule()
        body.append(s)
        size += len(s)
    while size > n and body:  # whole rules only
        size -= len(body.pop())
    return "".join(head + body + tail)


def pem_grep_listing(rng: random.Random, n: int) -> str:
    """About n characters of `grep -rn "BEGIN .*PRIVATE KEY"` output: every line a PEM
    BEGIN line, never an END (grep lists only the matching line)."""
    kinds = ["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "", "DSA "]
    lines = []
    size = 0
    i = 0
    while size < n:
        i += 1
        path = f"./{rng.choice(['deploy', 'infra', 'tests/fixtures', 'vendor/certs', 'scripts'])}/{rng.choice(WORDS)}_{i}.pem"
        line = f"{path}:1:-----BEGIN {rng.choice(kinds)}PRIVATE KEY-----"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:n]


def tool_result_body(text: str, tool: str = "Bash") -> bytes:
    """A /v1/messages request whose last turn is one tool_result carrying text."""
    tid = "toolu_01" + "A" * 22
    return json.dumps({
        "model": "claude-sonnet-4-5-20250929", "max_tokens": 32000, "stream": True,
        "messages": [
            {"role": "user", "content": "Look into the failing build."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": tool, "input": {"command": "cat build.log"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}]},
        ],
    }, ensure_ascii=False, separators=(",", ":")).encode()  # fmt: skip
