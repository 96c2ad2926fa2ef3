"""End to end, OpenAI side: the official openai SDK -> mitmdump running the addon -> a
fake upstream.

Nothing is mocked: a real `mitmdump` process in reverse mode, a real threaded HTTP/1.1
server that records what reached "the provider" and answers in small separate writes
(re-cut at awkward byte offsets), and the real SDK accumulating what the client got.
Chat Completions (n=2 interleaved, parallel tool calls, reasoning_content), Responses
(typed events, sequence numbers, full-text events, echoed request fields), whole bodies,
upstream errors, requests that cannot be masked, and the Azure / OpenRouter path shapes.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from integration_util import (
    MITMDUMP,
    Proxy,
    RawEvent,
    Recorded,
    Reply,
    all_strings,
    cut,
    find_object_span,
    http_post,
    raw_events,
    running_proxy,
    sse,
    sse_data,
)

openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
STRIP_RX = r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"
WINQ = 'C:\\Users\\"acme"'  # backslashes and quotes: JSON-escaped wherever it lands
LITERALS = {
    "Acme Corp": "Zenith Labs",
    "session_id": "thread_id",
    "acme_lookup": "crm_lookup",
    "acme_notify": "crm_notify",
    WINQ: "WINPATH",
    "ProjectFalcon": "ProjectKestrel",
}
MAPPINGS = {
    "literals": LITERALS,
    "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}],
    "strip": [{"regex": STRIP_RX}],
}
BOB = "bob@corp.example.com"
ALICE = "alice@x.example.org"
ORIGINALS = [*LITERALS, BOB, ALICE]
DISGUISES = [*LITERALS.values(), "[EMAIL_"]
PH = re.compile(r"\[EMAIL_[0-9]+\]")
# base64 media whose payload happens to contain an original: never touched
DATA_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgProjectFalconAAAAAQAAAAEIBgAAAB8+/w=="


def placeholder_in(rec: Recorded, n: int = 0) -> str:
    """The n-th distinct placeholder the upstream request carries (by first appearance)."""
    found = list(dict.fromkeys(PH.findall(rec.body.decode("utf-8"))))
    return found[n] if len(found) > n else f"[EMAIL_{n + 1}]"


def split_at(s: str, marks: list[tuple[str, int]]) -> list[str]:
    """s cut inside each marker substring (at the given offset in it)."""
    cuts = sorted({s.index(sub) + off for sub, off in marks})
    return [s[a:b] for a, b in zip([0, *cuts], [*cuts, len(s)], strict=True)]


def escaped(s: str, times: int = 1) -> str:
    for _ in range(times):
        s = json.dumps(s, ensure_ascii=False)[1:-1]
    return s


def mask_text(raw: str, ph: str, ph2: str) -> str:
    """What masking must do to raw JSON request text, done by hand: every original, in
    the escape level it has there (twice escaped inside `arguments`), and nothing else."""
    for orig, disg in [(escaped(WINQ, 2), "WINPATH"), (escaped(WINQ), "WINPATH"), *LITERALS.items(),
                       (BOB, ph), (ALICE, ph2)]:  # fmt: skip
        raw = raw.replace(orig, disg)
    return raw


def mask_outside(raw: str, keep: list[str]) -> str:
    """mask_text on raw, except on the (verbatim) substrings in keep."""
    for k in keep:
        if k in raw:
            return k.join(mask_outside(part, keep) for part in raw.split(k))
    return mask_text(raw, "[EMAIL_1]", "[EMAIL_2]")


def assert_no_disguise(text: str, what: str, extra: tuple[str, ...] = ()) -> None:
    for d in (*DISGUISES, *extra):
        assert d not in text, f"{what} shows the disguise {d!r}: {text!r}"


def assert_no_original(text: str, what: str) -> None:
    for o in ORIGINALS:
        for form in (o, escaped(o), escaped(o, 2)):
            assert form not in text, f"{o!r} reached upstream in {what}"


def sse_headers() -> dict[str, str]:
    return {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


def json_reply(doc: dict) -> Reply:
    return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"},
                 framing="length")  # fmt: skip


# -- fixtures ----------------------------------------------------------------------------




@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-openai"), MAPPINGS) as p:
        yield p


@contextmanager
def sdk(
    proxy: Proxy, on_request=None, prefix: str = "/v1", strict: bool = False
) -> Iterator[openai.OpenAI]:
    """The official client pointed at the proxy (on_request sees each outgoing request;
    strict: the SDK validates every response object against its models)."""
    hooks = {"request": [on_request]} if on_request else {}
    http_client = openai.DefaultHttpxClient(trust_env=False, event_hooks=hooks)
    try:
        with openai.OpenAI(
            base_url=proxy.base_url + prefix, api_key="test", max_retries=0, timeout=20.0,
            http_client=http_client, _strict_response_validation=strict,
        ) as client:  # fmt: skip
            yield client
    finally:
        http_client.close()


def recorder(path_suffix: str, sent: list[bytes]):
    def on_request(request) -> None:
        if request.url.path.endswith(path_suffix):
            sent.append(request.read())

    return on_request


# -- shared request pieces --------------------------------------------------------------------

LOOKUP_PARAMS = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "description": "the Acme Corp session_id"},
        "path": {"type": "string"},
    },
    "required": ["session_id", "path"],
    "additionalProperties": False,
}
NOTIFY_PARAMS = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "cc": {"type": "string"}, "note": {"type": "string"}},
    "required": ["to", "cc", "note"],
    "additionalProperties": False,
}
REPORT_SCHEMA = {
    "type": "object",
    "properties": {"session_id": {"type": "string"}, "owner": {"type": "string", "enum": [BOB]}},
    "required": ["session_id", "owner"],
    "additionalProperties": False,
}
# JSON text as a client may have stored it: odd spacing, 1.50, a \u escape. Masked as JSON:
# keys and values change, every other byte stays.
HIST_ARGS = ('{"session_id": "s-1",  "owner": "' + BOB + '", "path": ' + json.dumps(WINQ)
             + ', "n": 1.50, "u": "caf\\u00e9"}')  # fmt: skip
HIST_ARGS_MASKED = ('{"thread_id": "s-1",  "owner": "[EMAIL_1]", "path": "WINPATH", "n": 1.50, '
                    '"u": "caf\\u00e9"}')


# == 1. Chat Completions streaming =============================================================

CHAT = "scn-chat-stream"
CHAT_MESSAGES = [
    {"role": "system", "content": "You are the assistant of Acme Corp. Naïve café ☕."},
    {"role": "user", "name": "ProjectFalcon", "content": [
        {"type": "text", "text": f"Hi, I am {BOB} from Acme Corp; files under {WINQ}\\docs."},
        {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://img.example/ProjectFalcon.png"}},
    ]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_h1", "type": "function",
         "function": {"name": "acme_lookup", "arguments": HIST_ARGS}},
    ]},
    {"role": "tool", "tool_call_id": "call_h1", "content": f"Acme Corp record s-1, cc {ALICE}"},
    {"role": "user", "content": "Thanks. Once more for Acme Corp, then acme_notify me."},
]  # fmt: skip
CHAT_TOOLS = [
    {"type": "function", "function": {
        "name": "acme_lookup", "description": "Look up an Acme Corp record by session_id.",
        "parameters": LOOKUP_PARAMS, "strict": True}},
    {"type": "function", "function": {
        "name": "acme_notify", "description": "Mail someone about an Acme Corp record.",
        "parameters": NOTIFY_PARAMS, "strict": True}},
]  # fmt: skip
CHAT_KW = dict(
    model=CHAT, messages=CHAT_MESSAGES, tools=CHAT_TOOLS, n=2,
    tool_choice={"type": "function", "function": {"name": "acme_lookup"}},
    response_format={"type": "json_schema", "json_schema": {
        "name": "ProjectFalcon_report", "schema": REPORT_SCHEMA, "strict": True}},
    stream_options={"include_usage": True}, parallel_tool_calls=True,
)  # fmt: skip

REASONING = ["Plan: Zenith Labs wants crm_lookup for ", "[EMAIL_1]."]  # not ours: untouched
C0_EXPECTED = (f"Hello from Acme Corp! Mail {BOB} today.  Bye, Acme Corp \u2014 naïve ☕ "
               '"quoted" end. Zen')  # fmt: skip
C1_EXPECTED = f"Checking ProjectFalcon for {ALICE} and Acme Corp."
T0_EXPECTED = {"session_id": "t-42 for Acme Corp", "path": WINQ, "file": WINQ + "\\notes.txt",
               "count": 3}  # fmt: skip
T1_EXPECTED = {"to": BOB, "cc": ALICE, "note": f'say "hi" to Acme Corp at {WINQ}'}
USAGE = {"prompt_tokens": 91, "completion_tokens": 64, "total_tokens": 155}


def chat_pieces(ph: str, ph2: str) -> dict[str, list[str]]:
    c0 = ["Hello from Zen", "ith La", "bs! Mail ", ph[:4], ph[4:], " today. [", "[reply_",
          "to_current", "]] Bye, Zen", "ith Labs \u2014 naïve ☕ \"quoted\" ", "end. Zen"]
    c1 = ["Checking Proj", "ectKes", "trel for ", ph2[:3], ph2[3:] + " and Zenith", " Labs."]
    t0_doc = json.dumps({"thread_id": "t-42 for Zenith Labs", "path": "WINPATH",
                         "file": "WINPATH\\notes.txt", "count": 3})
    t0 = split_at(t0_doc, [
        ('"thread_id"', 4),   # {"thr | ead_id"     (a key disguise split)
        ("Zenith Labs", 3),   # Zen | ith Labs
        ('"WINPATH"', 4),     # WIN | PATH          (restores to backslashes and quotes)
        ("WINPATH\\\\", 8),   # the JSON escape \\ cut between its two backslashes
    ])
    t1_doc = json.dumps({"to": ph, "cc": ph2, "note": 'say "hi" to Zenith Labs at WINPATH'})
    t1 = split_at(t1_doc, [(ph, 3), ('\\"hi', 1), ("Zenith Labs", 6), ("WINPATH", 2)])
    assert len(t0) == 5 and len(t1) == 5
    return {"c0": c0, "c1": c1, "t0": t0, "t1": t1}  # fmt: skip


def chat_chunk(*choices: dict, compact: bool = True, **extra: object) -> bytes:
    body = {"id": "chatcmpl-int", "object": "chat.completion.chunk", "created": 1700000000,
            "model": CHAT, "system_fingerprint": "fp_int", "choices": list(choices), **extra}
    return sse_data(body, compact=compact)


def ch(k: int, delta: dict, finish: str | None = None) -> dict:
    return {"index": k, "delta": delta, "logprobs": None, "finish_reason": finish}


def tc(j: int, args: str, name: str | None = None) -> dict:
    if name is None:
        return {"index": j, "function": {"arguments": args}}
    return {"index": j, "id": f"call_{'ab'[j]}", "type": "function",
            "function": {"name": name, "arguments": args}}  # fmt: skip


def chat_events(ph: str, ph2: str, interleave_tools: bool = True) -> list[bytes]:
    """Two choices interleaved on one wire: choice 0 reasons and talks; choice 1 talks and
    makes two parallel tool calls, whose argument deltas are interleaved too (or, with
    interleave_tools=False, one call after the other as OpenAI sends them: the SDK's
    stream helper closes a call when the next index shows up). Compact single-choice
    content chunks are the API's exact shape (the addon's fast path); the rest go through
    its JSON path."""
    p = {k: iter(v) for k, v in chat_pieces(ph, ph2).items()}
    c0, c1, t0, t1 = p["c0"], p["c1"], p["t0"], p["t1"]
    if interleave_tools:
        tools = [[tc(0, next(t0), "crm_lookup"), tc(1, "", "crm_notify")], [tc(0, next(t0))],
                 [tc(1, next(t1))], [tc(0, next(t0)), tc(1, next(t1))], [tc(1, next(t1))],
                 [tc(0, next(t0))], [tc(1, next(t1))], [tc(0, next(t0))], [tc(1, next(t1))]]
    else:
        tools = [[tc(0, next(t0), "crm_lookup")], *[[tc(0, a)] for a in t0],
                 [tc(1, next(t1), "crm_notify")], *[[tc(1, a)] for a in t1]]
    tool_steps = iter(tools)

    def text(k: int, it, compact: bool = True) -> bytes:
        return chat_chunk(ch(k, {"content": next(it)}), compact=compact)

    def tool(compact: bool = True) -> bytes:
        return chat_chunk(ch(1, {"tool_calls": next(tool_steps)}), compact=compact)

    events = [
        chat_chunk(ch(0, {"role": "assistant", "content": ""}),
                   ch(1, {"role": "assistant", "content": ""})),
        chat_chunk(ch(0, {"content": None, "reasoning_content": REASONING[0]})),
        chat_chunk(ch(0, {"reasoning_content": REASONING[1]}), compact=False),
        text(0, c0),
        text(1, c1, compact=False),
        text(0, c0),
        chat_chunk(ch(0, {"content": next(c0)}), ch(1, {"content": next(c1)})),  # 2 choices
        text(0, c0),                   # "[EMA"
        text(1, c1),
        text(0, c0, compact=False),    # "IL_1]"
        text(1, c1),                   # "[EM"
        chat_chunk(ch(1, {"content": next(c1)}), ch(0, {"content": next(c0)})),
        text(1, c1),
        tool(),
        text(0, c0),                   # "[reply_"
        tool(),
        tool(compact=False),
        text(0, c0),                   # "to_current"
        tool(),
        tool(),
        chat_chunk(ch(0, {"content": next(c0)}),                  # "]] Bye, Zen": held
                   ch(1, {"tool_calls": next(tool_steps)})),
        tool(),
        tool(compact=False),
        *[chat_chunk(ch(1, {"tool_calls": step})) for step in tool_steps],  # sequential only
        chat_chunk(ch(1, {}, "tool_calls")),   # choice 1 ends while choice 0 still holds "Zen"
        text(0, c0),                   # "ith Labs — ..."
        text(0, c0),                   # "end. Zen": held until its finish chunk
        chat_chunk(ch(0, {}, "stop"), compact=False),
        chat_chunk(usage=USAGE),
        sse_data("[DONE]"),
    ]  # fmt: skip
    for it in (*p.values(), tool_steps):
        assert next(it, None) is None, "a piece was not sent"
    return events


def chat_handler(rec: Recorded) -> Reply:
    interleave = rec.headers.get("x-test-tools") != "sequential"
    events = chat_events(placeholder_in(rec), placeholder_in(rec, 1), interleave)
    return Reply(cut(events, seed=11), headers=sse_headers())


def check_chat_request(rec: Recorded, client_body: bytes) -> None:
    """Upstream got every original masked, the data: URL byte-identical, the history's
    arguments masked as JSON text, and every other byte as the client sent it."""
    up = rec.body.decode("utf-8")
    assert rec.path == "/v1/chat/completions"
    assert up.count(DATA_URL) == 1, "the data: URL did not arrive untouched"
    assert_no_original(up.replace(DATA_URL, ""), "the chat request")
    doc = json.loads(up)
    leaked = [s for s in all_strings(doc) if s != DATA_URL and any(o in s for o in ORIGINALS)]
    assert not leaked, f"originals reached upstream: {leaked!r}"
    assert (placeholder_in(rec), placeholder_in(rec, 1)) == ("[EMAIL_1]", "[EMAIL_2]")
    msgs = doc["messages"]
    assert msgs[0]["content"] == "You are the assistant of Zenith Labs. Naïve café ☕."
    assert msgs[1]["name"] == "ProjectKestrel"
    assert msgs[1]["content"][0]["text"] == (
        "Hi, I am [EMAIL_1] from Zenith Labs; files under WINPATH\\docs.")
    assert msgs[1]["content"][1]["image_url"] == {"url": DATA_URL, "detail": "low"}
    assert msgs[1]["content"][2]["image_url"]["url"] == "https://img.example/ProjectKestrel.png"
    call = msgs[2]["tool_calls"][0]
    assert msgs[2]["content"] is None and call["id"] == "call_h1"
    assert call["function"]["name"] == "crm_lookup"
    assert call["function"]["arguments"] == HIST_ARGS_MASKED  # masked as JSON, rest byte-identical
    assert json.loads(call["function"]["arguments"])["path"] == "WINPATH"
    assert msgs[3] == {"role": "tool", "tool_call_id": "call_h1",
                       "content": "Zenith Labs record s-1, cc [EMAIL_2]"}  # fmt: skip
    assert msgs[4]["content"] == "Thanks. Once more for Zenith Labs, then crm_notify me."
    fns = [t["function"] for t in doc["tools"]]
    assert [f["name"] for f in fns] == ["crm_lookup", "crm_notify"]
    assert list(fns[0]["parameters"]["properties"]) == ["thread_id", "path"]
    assert fns[0]["parameters"]["required"] == ["thread_id", "path"]
    props = fns[0]["parameters"]["properties"]
    assert props["thread_id"]["description"] == "the Zenith Labs thread_id"
    assert doc["tool_choice"] == {"type": "function", "function": {"name": "crm_lookup"}}
    js = doc["response_format"]["json_schema"]
    assert js["name"] == "ProjectKestrel_report"
    assert list(js["schema"]["properties"]) == ["thread_id", "owner"]
    assert js["schema"]["properties"]["owner"]["enum"] == ["[EMAIL_1]"]
    assert js["schema"]["required"] == ["thread_id", "owner"]
    assert doc["model"] == CHAT and doc["n"] == 2 and doc["stream"] is True
    # span-based: nothing but the masked tokens changed
    assert up == mask_outside(client_body.decode("utf-8"), [DATA_URL])
    assert rec.headers.get("accept-encoding") == "identity"


def test_chat_stream_masks_every_message_shape_and_restores_interleaved_choices(
    proxy: Proxy,
) -> None:
    proxy.upstream.on(CHAT, chat_handler)
    sent: list[bytes] = []
    with sdk(proxy, recorder("/chat/completions", sent)) as client:
        stream = client.chat.completions.create(**CHAT_KW, stream=True)
        chunks = list(stream)
        headers = stream.response.headers
    assert headers.get("content-type", "").startswith("text/event-stream")
    assert "content-encoding" not in headers
    assert len(sent) == 1
    check_chat_request(proxy.upstream.for_model(CHAT)[-1], sent[0])

    # accumulate like a user would
    content: dict[int, list[str]] = defaultdict(list)
    reasoning: dict[int, str] = defaultdict(str)
    calls: dict[tuple[int, int], dict] = {}
    finished: dict[int, str] = {}
    finish_delta: dict[int, object] = {}
    usage = None
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            k, d = c.index, c.delta
            rc = getattr(d, "reasoning_content", None)
            carries = bool(d.content or d.tool_calls or d.refusal or rc)
            assert not (carries and k in finished), f"a delta for choice {k} after its finish"
            if d.content:
                content[k].append(d.content)
            if getattr(d, "reasoning_content", None):
                reasoning[k] += d.reasoning_content
            for t in d.tool_calls or []:
                acc = calls.setdefault((k, t.index), {"id": None, "name": None, "arguments": []})
                if t.id:
                    acc["id"] = t.id
                if t.function and t.function.name:
                    assert acc["name"] is None, "a tool name came twice"
                    acc["name"] = t.function.name
                if t.function and t.function.arguments:
                    acc["arguments"].append(t.function.arguments)
            if c.finish_reason is not None:
                finished[k] = c.finish_reason
                finish_delta[k] = d

    assert finished == {0: "stop", 1: "tool_calls"}
    assert "".join(content[0]) == C0_EXPECTED
    assert "".join(content[1]) == C1_EXPECTED
    assert len(content[0]) >= 6, "content was not streamed (buffered or coalesced)"
    for k in (0, 1):
        for piece in content[k]:
            assert_no_disguise(piece, f"choice {k} content delta", ("[",))
    # the held "Zen" rode inside choice 0's finishing chunk
    assert finish_delta[0].content == "Zen"
    # reasoning is not ours: untouched, disguises and all
    assert dict(reasoning) == {0: "".join(REASONING)}

    assert set(calls) == {(1, 0), (1, 1)}
    lookup, notify = calls[(1, 0)], calls[(1, 1)]
    assert (lookup["id"], lookup["name"]) == ("call_a", "acme_lookup")
    assert (notify["id"], notify["name"]) == ("call_b", "acme_notify")
    assert json.loads("".join(lookup["arguments"])) == T0_EXPECTED
    assert json.loads("".join(notify["arguments"])) == T1_EXPECTED
    for acc in (lookup, notify):
        for piece in acc["arguments"]:
            assert_no_disguise(piece, "arguments delta")
    assert usage is not None and usage.total_tokens == USAGE["total_tokens"]


def test_chat_stream_helper_final_completion(proxy: Proxy) -> None:
    """The SDK's own accumulator (chat.completions.stream): final message per choice,
    tool names restored, arguments parsed by the SDK against the strict tool schemas."""
    proxy.upstream.on(CHAT, chat_handler)
    with sdk(proxy) as client:
        with client.chat.completions.stream(
            **CHAT_KW, extra_headers={"x-test-tools": "sequential"}
        ) as stream:
            events = list(stream)
            final = stream.get_final_completion()
    choices = sorted(final.choices, key=lambda c: c.index)
    assert [c.finish_reason for c in choices] == ["stop", "tool_calls"]
    assert choices[0].message.content == C0_EXPECTED
    assert choices[0].message.tool_calls in (None, [])
    assert choices[1].message.content == C1_EXPECTED
    tcs = choices[1].message.tool_calls
    assert [(t.id, t.function.name) for t in tcs] == [("call_a", "acme_lookup"),
                                                       ("call_b", "acme_notify")]  # fmt: skip
    assert json.loads(tcs[0].function.arguments) == T0_EXPECTED
    assert json.loads(tcs[1].function.arguments) == T1_EXPECTED
    # the SDK found each (restored) name among the strict input tools and parsed the JSON
    assert tcs[0].function.parsed_arguments == T0_EXPECTED
    assert tcs[1].function.parsed_arguments == T1_EXPECTED
    done = {e.name: e for e in events if e.type == "tool_calls.function.arguments.done"}
    assert set(done) == {"acme_lookup", "acme_notify"}
    assert done["acme_notify"].parsed_arguments == T1_EXPECTED
    content_done = sorted(e.content for e in events if e.type == "content.done")
    assert content_done == sorted([C0_EXPECTED, C1_EXPECTED])
    assert final.usage is not None and final.usage.total_tokens == USAGE["total_tokens"]


def test_chat_stream_raw_bytes(proxy: Proxy) -> None:
    """The same stream as bytes: every event parses, events that need no change (role,
    reasoning, usage, [DONE]) arrive byte-identical, no delta follows its choice's finish."""
    proxy.upstream.on(CHAT, chat_handler)
    body = json.dumps({**CHAT_KW, "stream": True}, ensure_ascii=False).encode()
    status, headers, data = http_post(proxy.port, "/v1/chat/completions", body,
                                      {"authorization": "Bearer test"})  # fmt: skip
    assert status == 200, data
    assert headers["content-type"].startswith("text/event-stream")
    up = chat_events("[EMAIL_1]", "[EMAIL_2]")
    got = raw_events(data)
    raws = [e.raw for e in got]
    assert raws[-1] == b"data: [DONE]\n\n" and raws.count(raws[-1]) == 1
    for keep in (up[0], up[1], up[2], up[-2]):  # role, reasoning x2, usage
        assert keep in raws, f"event changed: {keep!r}"
    docs = [json.loads(e.data) for e in got[:-1]]
    assert docs[-1]["usage"] == USAGE and docs[-1]["choices"] == []
    text: dict[int, str] = defaultdict(str)
    finished: set[int] = set()
    for d in docs:
        for c in d["choices"]:
            delta = c.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                assert c["index"] not in finished, "a delta after its choice's finish_reason"
            text[c["index"]] += delta.get("content") or ""
            if c.get("finish_reason"):
                finished.add(c["index"])
    assert finished == {0, 1}
    assert dict(text) == {0: C0_EXPECTED, 1: C1_EXPECTED}
    # choice 0's finishing chunk (spaced JSON upstream) got the held "Zen" inserted into its
    # delta; every other byte of it is as upstream sent it
    up_fin = up[-3]
    assert b'"finish_reason": "stop"' in up_fin
    [fin] = [e.raw for e in got if b'"finish_reason": "stop"' in e.raw]
    cut_at = up_fin.index(b'"delta": {') + len(b'"delta": {')
    assert fin.startswith(up_fin[:cut_at]) and fin.endswith(up_fin[cut_at:]), fin
    assert json.loads(fin[len(b"data: "):])["choices"][0]["delta"] == {"content": "Zen"}


def test_chat_stream_two_choices_finishing_in_one_chunk_get_their_own_tails(proxy: Proxy) -> None:
    """Both choices end in the same chunk, each holding a tail: choice 0 in its content,
    choice 1 inside a tool call's arguments (finish_reason "length" cut them there). Each
    tail rides in that chunk, under its own choice (the tool one as an index-only
    tool_calls entry), and nothing follows."""
    scn = "scn-chat-length"
    events = [
        chat_chunk(ch(0, {"role": "assistant", "content": "Sure, Zen"}),
                   ch(1, {"role": "assistant", "content": None,
                          "tool_calls": [tc(0, '{"q": "ask ', "crm_lookup")]})),
        chat_chunk(ch(1, {"tool_calls": [tc(0, "Zenith Labs, then Zen")]})),
        chat_chunk(ch(0, {"content": "ith Labs asks Zen"})),
        chat_chunk(ch(1, {}, "length"), ch(0, {}, "stop")),
        sse_data("[DONE]"),
    ]  # fmt: skip
    proxy.upstream.on(scn, lambda rec: Reply(cut(events, seed=14), headers=sse_headers()))
    with sdk(proxy) as client:
        chunks = list(client.chat.completions.create(
            model=scn, messages=[{"role": "user", "content": "Acme Corp"}], n=2, stream=True))
    text = ""
    args = ""
    fin: dict[int, object] = {}
    for chunk in chunks:
        for c in chunk.choices:
            assert c.index not in fin, f"a chunk for choice {c.index} after its finish_reason"
            text += (c.delta.content or "") if c.index == 0 else ""
            for t in c.delta.tool_calls or []:
                assert c.index == 1 and t.index == 0
                args += t.function.arguments or ""
            if c.finish_reason:
                fin[c.index] = c
    assert {k: c.finish_reason for k, c in fin.items()} == {0: "stop", 1: "length"}
    assert text == "Sure, Acme Corp asks Zen"
    assert args == '{"q": "ask Acme Corp, then Zen'
    assert fin[0].delta.content == "Zen"
    tail = fin[1].delta.tool_calls
    assert tail is not None and len(tail) == 1
    assert (tail[0].index, tail[0].function.arguments) == (0, "Zen")
    assert fin[1].delta.content in (None, "")


NO_FINISH = "scn-chat-no-finish"
NO_FINISH_EVENTS = [  # a compatible server that sends neither a role chunk nor a finish_reason
    chat_chunk(ch(0, {"content": "Hello "})),
    chat_chunk(ch(0, {"content": "Zenith Labs and Zen"})),
    sse_data("[DONE]"),
]


def run_no_finish_stream(proxy: Proxy, strict: bool) -> str:
    with sdk(proxy, strict=strict) as client:
        chunks = list(client.chat.completions.create(
            model=NO_FINISH, messages=[{"role": "user", "content": "hi"}], stream=True))
    return "".join(c.delta.content or "" for chunk in chunks for c in chunk.choices)


def test_chat_stream_without_finish_reason_gets_its_tail_at_done(proxy: Proxy) -> None:
    proxy.upstream.on(NO_FINISH, lambda rec: Reply(NO_FINISH_EVENTS, headers=sse_headers()))
    assert run_no_finish_stream(proxy, strict=False) == "Hello Acme Corp and Zen"
    status, _, data = http_post(proxy.port, "/v1/chat/completions", json.dumps(
        {"model": NO_FINISH, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    ).encode())  # fmt: skip
    assert status == 200
    got = raw_events(data)
    assert got[-1].data == "[DONE]"
    docs = [json.loads(e.data) for e in got[:-1]]
    assert "".join(c["delta"].get("content") or "" for d in docs for c in d["choices"]) == (
        "Hello Acme Corp and Zen")


def test_chat_stream_drained_tail_chunk_is_a_valid_chunk(proxy: Proxy) -> None:
    # the chunk that carries a tail drained at [DONE] has the stream's id, created and
    # model even when every earlier chunk took a fast path
    proxy.upstream.on(NO_FINISH, lambda rec: Reply(NO_FINISH_EVENTS, headers=sse_headers()))
    status, _, data = http_post(proxy.port, "/v1/chat/completions", json.dumps(
        {"model": NO_FINISH, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    ).encode())  # fmt: skip
    assert status == 200
    for e in raw_events(data)[:-1]:
        doc = json.loads(e.data)
        assert {k: doc.get(k) for k in ("id", "object", "created", "model")} == {
            "id": "chatcmpl-int", "object": "chat.completion.chunk", "created": 1700000000,
            "model": CHAT}, e.raw  # fmt: skip
    # and the SDK, validating what it receives, takes the stream
    assert run_no_finish_stream(proxy, strict=True) == "Hello Acme Corp and Zen"


SPLIT_NAME = "scn-chat-split-name"


def split_name_events(interleave: bool) -> list[bytes]:
    """Two parallel tool calls whose names arrive in pieces (`crm_` + `look` + `up`, as some
    OpenAI-compatible servers stream them), the last piece beside the first arguments;
    interleave: the calls' deltas alternate on the wire."""

    def call(j: int, pieces: list[str], args: list[str]) -> list[list[dict]]:
        steps = [[tc(j, "", pieces[0])]]
        steps += [[{"index": j, "function": {"name": p}}] for p in pieces[1:-1]]
        steps.append([{"index": j, "function": {"name": pieces[-1], "arguments": args[0]}}])
        return steps + [[tc(j, a)] for a in args[1:]]

    a = call(0, ["crm_", "look", "up"], ['{"session_id":"s-1 of Zen', 'ith Labs","path":"WINPATH"}'])
    b = call(1, ["cr", "m_no", "tify"], ['{"to":"x","cc":"y","note":"crm_lookup"}'])
    steps = [s for pair in zip(a, b) for s in pair] + a[len(b):] + b[len(a):] if interleave else a + b
    return [chat_chunk(ch(0, {"role": "assistant", "content": None})),
            *[chat_chunk(ch(0, {"tool_calls": s})) for s in steps],
            chat_chunk(ch(0, {}, "tool_calls")), sse_data("[DONE]")]  # fmt: skip


@pytest.mark.parametrize("interleave", [False, True])
def test_chat_stream_tool_names_in_pieces(proxy: Proxy, interleave: bool) -> None:
    """The official SDK joins a tool name's pieces: it reads the original names, and its
    stream helper parses the arguments against the strict tools it found by them."""
    proxy.upstream.on(SPLIT_NAME, lambda rec: Reply(cut(split_name_events(rec.headers.get("x-i") == "1"), seed=5),
                                                   headers=sse_headers()))  # fmt: skip
    kw = dict(model=SPLIT_NAME, messages=[{"role": "user", "content": "acme_lookup, then acme_notify"}],
              tools=CHAT_TOOLS, extra_headers={"x-i": "1" if interleave else "0"})  # fmt: skip
    with sdk(proxy) as client:
        if interleave:  # (the stream helper wants one call after the other): joined as the SDK joins deltas
            names: dict[int, str] = defaultdict(str)
            args: dict[int, str] = defaultdict(str)
            for chunk in client.chat.completions.create(**kw, stream=True):
                for c in chunk.choices:
                    for t in c.delta.tool_calls or []:
                        if t.function is not None:
                            names[t.index] += t.function.name or ""
                            args[t.index] += t.function.arguments or ""
            got = [(names[j], json.loads(args[j])) for j in sorted(names)]
        else:
            with client.chat.completions.stream(**kw) as stream:
                for _ in stream:
                    pass
                tcs = stream.get_final_completion().choices[0].message.tool_calls or []
            got = [(t.function.name, t.function.parsed_arguments) for t in tcs]
    assert got == [("acme_lookup", {"session_id": "s-1 of Acme Corp", "path": WINQ}),
                   ("acme_notify", {"to": "x", "cc": "y", "note": "acme_lookup"})]  # fmt: skip
    up = json.loads(proxy.upstream.for_model(SPLIT_NAME)[-1].body)
    assert [t["function"]["name"] for t in up["tools"]] == ["crm_lookup", "crm_notify"]


ERROR_SHAPES = {
    # OpenAI: a bare error object on the wire, then the stream ends
    "openai": lambda: sse_data({"error": {"message": "Zenith Labs is overloaded",
                                          "type": "server_error", "param": None, "code": None}}),
    # OpenRouter: the error rides in a chunk whose choice finishes with "error"
    "openrouter": lambda: chat_chunk(ch(0, {"content": ""}, "error"),
                                     error={"code": "server_error",
                                            "message": "Zenith Labs is overloaded"}),
}  # fmt: skip


def run_chat_error_stream(proxy: Proxy, shape: str) -> tuple[list[str], openai.APIError]:
    scn = f"scn-chat-error-{shape}"
    events = [chat_chunk(ch(0, {"role": "assistant", "content": ""})),
              chat_chunk(ch(0, {"content": "Partial Zenith Labs, then Zen"})),
              ERROR_SHAPES[shape]()]  # fmt: skip
    proxy.upstream.on(scn, lambda rec: Reply(events, headers=sse_headers()))
    texts: list[str] = []
    with sdk(proxy) as client, pytest.raises(openai.APIError) as exc:
        for chunk in client.chat.completions.create(
            model=scn, messages=[{"role": "user", "content": "hi"}], stream=True
        ):
            texts.extend(c.delta.content or "" for c in chunk.choices)
    return texts, exc.value


@pytest.mark.parametrize("shape", list(ERROR_SHAPES))
def test_chat_stream_error_chunk_is_restored(proxy: Proxy, shape: str) -> None:
    texts, err = run_chat_error_stream(proxy, shape)
    assert err.message == "Acme Corp is overloaded"
    assert isinstance(err.body, dict) and err.body["message"] == "Acme Corp is overloaded"
    assert "".join(texts).startswith("Partial Acme Corp, then ")
    for t in texts:
        assert_no_disguise(t, "content delta")


@pytest.mark.parametrize("shape", list(ERROR_SHAPES))
def test_chat_stream_held_tail_arrives_before_an_error_chunk(proxy: Proxy, shape: str) -> None:
    # the SDK raises at an error chunk: a held tail must come before it, in its own chunk
    texts, _ = run_chat_error_stream(proxy, shape)
    assert "".join(texts) == "Partial Acme Corp, then Zen"


# == 2. Responses streaming ====================================================================

RESP = "scn-responses-stream"
RESP_INSTRUCTIONS = "You are the assistant of Acme Corp; never print a session_id."
REASONING_ITEM = {
    "type": "reasoning", "id": "rs_h1",
    "summary": [{"type": "summary_text", "text": f"The Acme Corp user {BOB} wants acme_lookup."}],
    "encrypted_content": "gAAAAABoProjectFalcon0x+/Acme==",
}  # fmt: skip
RESP_HIST_ARGS = '{"session_id":"s-9","path":' + json.dumps(WINQ) + ',"owner":"' + BOB + '"}'
RESP_INPUT = [
    {"role": "user", "content": [
        {"type": "input_text", "text": f"Hi, I am {BOB} at Acme Corp."},
        {"type": "input_image", "image_url": DATA_URL, "detail": "low"},
    ]},
    REASONING_ITEM,
    {"type": "function_call", "id": "fc_h1", "call_id": "call_h1", "name": "acme_lookup",
     "arguments": RESP_HIST_ARGS},
    {"type": "function_call_output", "call_id": "call_h1",
     "output": f"Acme Corp record s-9 for {ALICE}"},
    {"type": "message", "role": "user", "content": "Summarise for ProjectFalcon."},
]  # fmt: skip
RESP_TOOLS = [{"type": "function", "name": "acme_lookup",
               "description": "Look up an Acme Corp record.",
               "parameters": LOOKUP_PARAMS, "strict": True}]  # fmt: skip
RESP_TEXT = {"format": {"type": "json_schema", "name": "ProjectFalcon_report",
                        "schema": REPORT_SCHEMA, "strict": True}}  # fmt: skip
RESP_KW = dict(model=RESP, instructions=RESP_INSTRUCTIONS, input=RESP_INPUT, tools=RESP_TOOLS,
               text=RESP_TEXT, tool_choice={"type": "function", "name": "acme_lookup"})  # fmt: skip

R_SUMMARY = ["Zenith Labs needs ", "[EMAIL_1]"]  # reasoning: untouched
R_ENCRYPTED = "gAAAAABoZenithLabsEnc+/=="
R_TEXT_EXPECTED = (f"Report for Acme Corp: owner {BOB} keeps {WINQ} safe;  done. "
                   "ProjectFalcon next: Zen")
R_ARGS_EXPECTED = {"session_id": "t-7", "path": WINQ + "\\x",
                   "note": f'ask "Acme Corp" via {ALICE}'}  # fmt: skip


def resp_pieces(ph: str, ph2: str) -> tuple[list[str], list[str]]:
    text = ["Report for Zen", "ith Labs: owner ", ph[:3], ph[3:6], ph[6:] + " keeps ", "WIN",
            "PATH safe; [", "[reply_to_current]] done. Project", "Kes", "trel", " next: Zen"]
    doc = json.dumps({"thread_id": "t-7", "path": "WINPATH\\x",
                      "note": f'ask "Zenith Labs" via {ph2}'})  # fmt: skip
    args = split_at(doc, [('"thread_id"', 5), ("WINPATH\\\\", 8), ('\\"Zen', 1),
                          ("Zenith Labs", 4), (ph2, 2)])  # fmt: skip
    assert len(args) == 6
    return text, args


def resp_envelope(req: dict, status: str, output: list) -> dict:
    """A Response object echoing the (masked) request fields, as the API does."""
    return {
        "id": "resp_int", "object": "response", "created_at": 1700000000, "status": status,
        "model": req["model"], "output": output, "instructions": req.get("instructions"),
        "tools": req.get("tools", []), "text": req.get("text", {"format": {"type": "text"}}),
        "tool_choice": req.get("tool_choice", "auto"),
        "parallel_tool_calls": True, "temperature": 1.0, "top_p": 1.0, "error": None,
        "incomplete_details": None, "metadata": {},
        "usage": None if status != "completed" else {
            "input_tokens": 80, "output_tokens": 40, "total_tokens": 120,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 12}},
    }  # fmt: skip


def resp_events(req: dict, ph: str, ph2: str) -> list[bytes]:
    text_pieces, arg_pieces = resp_pieces(ph, ph2)
    text = "".join(text_pieces)
    args = "".join(arg_pieces)
    rs_done = {"id": "rs_1", "type": "reasoning", "encrypted_content": R_ENCRYPTED,
               "summary": [{"type": "summary_text", "text": "".join(R_SUMMARY)}]}
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress",
           "content": []}
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    msg_done = {**msg, "status": "completed", "content": [part]}
    fc = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "crm_lookup",
          "arguments": "", "status": "in_progress"}
    fc_done = {**fc, "arguments": args, "status": "completed"}
    rs = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    mt = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    bodies = [
        {"type": "response.created", "response": resp_envelope(req, "in_progress", [])},
        {"type": "response.in_progress", "response": resp_envelope(req, "in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_1", "type": "reasoning", "summary": []}},
        {"type": "response.reasoning_summary_part.added", **rs,
         "part": {"type": "summary_text", "text": ""}},
        *[{"type": "response.reasoning_summary_text.delta", **rs, "delta": d} for d in R_SUMMARY],
        {"type": "response.reasoning_summary_text.done", **rs, "text": "".join(R_SUMMARY)},
        {"type": "response.reasoning_summary_part.done", **rs,
         "part": {"type": "summary_text", "text": "".join(R_SUMMARY)}},
        {"type": "response.output_item.done", "output_index": 0, "item": rs_done},
        {"type": "response.output_item.added", "output_index": 1, "item": msg},
        {"type": "response.content_part.added", **mt,
         "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}},
        *[{"type": "response.output_text.delta", **mt, "delta": d, "logprobs": [],
           "obfuscation": "Zen"[: n % 4]} for n, d in enumerate(text_pieces)],
        {"type": "response.output_text.done", **mt, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **mt, "part": part},
        {"type": "response.output_item.done", "output_index": 1, "item": msg_done},
        {"type": "response.output_item.added", "output_index": 2, "item": fc},
        *[{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
           "delta": d} for d in arg_pieces],
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2,
         "name": "crm_lookup", "arguments": args},
        {"type": "response.output_item.done", "output_index": 2, "item": fc_done},
        {"type": "response.completed",
         "response": resp_envelope(req, "completed", [rs_done, msg_done, fc_done])},
    ]  # fmt: skip
    out = []
    for seq, b in enumerate(bodies):
        # sequence_number last, as the API sends it, on some events; first on others
        if seq % 2:
            b = {**b, "sequence_number": seq}
        else:
            b = {"type": b["type"], "sequence_number": seq, **b}
        out.append(sse(b))
    return out


def resp_handler(rec: Recorded) -> Reply:
    events = resp_events(rec.json, placeholder_in(rec), placeholder_in(rec, 1))
    return Reply(cut(events, seed=12), headers=sse_headers())


def check_responses_request(rec: Recorded, client_body: bytes | None) -> None:
    up = rec.body.decode("utf-8")
    assert rec.path == "/v1/responses"
    doc = json.loads(up)
    # the reasoning item went out byte-identical (encrypted_content included)
    assert doc["input"][1] == REASONING_ITEM
    a, b = find_object_span(up, REASONING_ITEM)
    outside = up[:a] + up[b:]
    assert outside.count(DATA_URL) == 1, "the data: URL did not arrive untouched"
    assert_no_original(outside.replace(DATA_URL, ""), "the Responses request")
    assert (placeholder_in(rec), placeholder_in(rec, 1)) == ("[EMAIL_1]", "[EMAIL_2]")
    assert doc["instructions"] == "You are the assistant of Zenith Labs; never print a thread_id."
    inp = doc["input"]
    assert inp[0]["content"][0]["text"] == "Hi, I am [EMAIL_1] at Zenith Labs."
    assert inp[0]["content"][1]["image_url"] == DATA_URL
    assert inp[2]["name"] == "crm_lookup" and inp[2]["call_id"] == "call_h1"
    assert inp[2]["arguments"] == '{"thread_id":"s-9","path":"WINPATH","owner":"[EMAIL_1]"}'
    assert inp[3]["output"] == "Zenith Labs record s-9 for [EMAIL_2]"
    assert inp[4]["content"] == "Summarise for ProjectKestrel."
    tool = doc["tools"][0]
    assert tool["name"] == "crm_lookup" and tool["description"] == "Look up an Zenith Labs record."
    assert list(tool["parameters"]["properties"]) == ["thread_id", "path"]
    assert tool["parameters"]["required"] == ["thread_id", "path"]
    fmt = doc["text"]["format"]
    assert fmt["name"] == "ProjectKestrel_report"
    assert list(fmt["schema"]["properties"]) == ["thread_id", "owner"]
    assert fmt["schema"]["properties"]["owner"]["enum"] == ["[EMAIL_1]"]
    assert doc["tool_choice"] == {"type": "function", "name": "crm_lookup"}
    if client_body is not None:
        client = client_body.decode("utf-8")
        ca, cb = find_object_span(client, REASONING_ITEM)
        assert up[a:b] == client[ca:cb]
        # span-based: nothing but the masked tokens changed
        assert up == mask_outside(client, [client[ca:cb], DATA_URL])


def test_responses_stream_sdk_restores_text_arguments_and_echoed_fields(proxy: Proxy) -> None:
    proxy.upstream.on(RESP, resp_handler)
    sent: list[bytes] = []
    with sdk(proxy, recorder("/responses", sent)) as client:
        with client.responses.stream(**RESP_KW) as stream:
            events = list(stream)
            final = stream.get_final_response()
    assert len(sent) == 1
    check_responses_request(proxy.upstream.for_model(RESP)[-1], sent[0])

    # what the SDK accumulated from the deltas
    seqs = [e.sequence_number for e in events]
    assert seqs == list(range(len(seqs))), f"sequence numbers not gapless: {seqs}"
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert "".join(e.delta for e in deltas) == R_TEXT_EXPECTED
    assert deltas[-1].snapshot == R_TEXT_EXPECTED
    # the held tail rides in the last delta, which waited for output_text.done: one delta
    # for each the provider sent
    assert deltas[-1].delta == " next: Zen"
    assert len(deltas) == len(resp_pieces("[EMAIL_1]", "[EMAIL_2]")[0])
    for e in deltas:
        assert_no_disguise(e.delta, "output_text delta", ("[",))
    [text_done] = [e for e in events if e.type == "response.output_text.done"]
    assert text_done.text == R_TEXT_EXPECTED
    assert events.index(text_done) > events.index(deltas[-1])
    arg_deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert json.loads("".join(e.delta for e in arg_deltas)) == R_ARGS_EXPECTED
    assert json.loads(arg_deltas[-1].snapshot) == R_ARGS_EXPECTED
    for e in arg_deltas:
        assert_no_disguise(e.delta, "arguments delta")
    [args_done] = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert json.loads(args_done.arguments) == R_ARGS_EXPECTED
    summary = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert summary == R_SUMMARY  # untouched
    added = [e.item for e in events if e.type == "response.output_item.added"]
    assert added[2].name == "acme_lookup"

    # the final response (from response.completed)
    assert final.status == "completed"
    assert final.output_text == R_TEXT_EXPECTED
    rs, msg, fc = final.output
    assert rs.type == "reasoning" and rs.encrypted_content == R_ENCRYPTED
    assert rs.summary[0].text == "".join(R_SUMMARY)
    assert msg.content[0].text == R_TEXT_EXPECTED
    assert (fc.type, fc.name, fc.call_id) == ("function_call", "acme_lookup", "call_1")
    assert json.loads(fc.arguments) == R_ARGS_EXPECTED
    assert fc.parsed_arguments == R_ARGS_EXPECTED
    # the request's own fields, echoed back restored
    assert final.instructions == RESP_INSTRUCTIONS
    assert final.tools[0].name == "acme_lookup"
    assert final.tools[0].description == RESP_TOOLS[0]["description"]
    assert final.tools[0].parameters == LOOKUP_PARAMS
    fmt = final.text.format.to_dict()
    assert fmt["name"] == "ProjectFalcon_report" and fmt["schema"] == REPORT_SCHEMA
    assert final.tool_choice.name == "acme_lookup"


RESUME = "scn-responses-resume"
RESUME_ITEMS = [["Report for Zen", "ith Labs at Zen"], ["Part two ", "is here", " and Zen", "ith Labs", "."]]


def resume_events() -> list[dict]:
    """A background response of two messages; the first ends in a held tail (`Zen`, which
    `Zenith Labs` may continue), which a synthetic delta used to carry, shifting every
    later number."""
    bodies: list[dict] = [{"type": "response.created", "response": {
        "id": "resp_resume", "object": "response", "status": "in_progress", "output": [], "model": RESUME}}]
    for i, pieces in enumerate(RESUME_ITEMS):
        msg = {"id": f"msg_{i}", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "".join(pieces), "annotations": []}
        at = {"item_id": f"msg_{i}", "output_index": i, "content_index": 0}
        bodies += [{"type": "response.output_item.added", "output_index": i, "item": msg},
                   {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
                   *({"type": "response.output_text.delta", **at, "delta": d, "logprobs": []} for d in pieces),
                   {"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []},
                   {"type": "response.content_part.done", **at, "part": part},
                   {"type": "response.output_item.done", "output_index": i,
                    "item": {**msg, "status": "completed", "content": [part]}}]
    bodies.append({"type": "response.completed", "response": {**bodies[0]["response"], "status": "completed"}})
    return [{"type": b["type"], "sequence_number": n, **b} for n, b in enumerate(bodies)]  # fmt: skip


def resume_handler(rec: Recorded) -> Reply:
    after = int(re.search(r"starting_after=(\d+)", rec.path).group(1)) if "starting_after" in rec.path else -1
    return Reply(cut([sse(e) for e in resume_events() if e["sequence_number"] > after], seed=after + 3),
                 headers=sse_headers())  # fmt: skip


def test_responses_stream_resumed_after_any_delta_outside_a_held_tail_loses_nothing(proxy: Proxy) -> None:
    """Black-box probe D1: a client resuming a background response (`retrieve(id,
    stream=True, starting_after=N)`) passes the number of the last event it read, and
    the provider replays from its own numbering. Every delta of the second message is a
    place the connection may drop, except right after ` and Zen` (held: the tail waits in
    the proxy, and a replay from after it has the rest of the disguise without its start)."""
    proxy.upstream.on(RESUME, resume_handler)
    proxy.upstream.on("/v1/responses/resp_resume", resume_handler)
    want = ["Report for Acme Corp at Zen", "Part two is here and Acme Corp."]
    with sdk(proxy) as client:
        for k in (0, 1, 3, 4):  # after the second message's k-th delta (2: inside a held tail)
            text = ["", ""]
            with client.responses.create(model=RESUME, input="Acme Corp", stream=True, background=True) as s:
                seen = 0
                for ev in s:
                    last = ev.sequence_number
                    if ev.type == "response.output_text.delta":
                        text[ev.output_index] += ev.delta
                        seen += ev.output_index
                        if ev.output_index == 1 and seen == k + 1:
                            break  # the connection drops here
            with client.responses.retrieve("resp_resume", stream=True, starting_after=last) as s2:
                got = list(s2)
            assert got[0].sequence_number == last + 1
            for ev in got:
                if ev.type == "response.output_text.delta":
                    text[ev.output_index] += ev.delta
            assert text == want, k
        assert any(f"starting_after={last}" in r.path for r in proxy.upstream.requests)
        with client.responses.create(model=RESUME, input="Acme Corp", stream=True, background=True) as s:
            whole = list(s)
    assert [e.sequence_number for e in whole] == [e["sequence_number"] for e in resume_events()]


def _summaries(proxy: Proxy, api: str) -> list[str]:
    return [ln for ln in proxy.mitm.output.splitlines() if f"disguise: {api} 200: " in ln]


def test_responses_annotations_sent_back_count_the_masked_text(proxy: Proxy) -> None:
    """An output_text's annotations count characters of its text: restored, they count the
    client's; the output item sent back in the next turn's input (as the SDK gives it) goes
    out with them moved to the masked text again, as the provider wrote them."""
    model = "resp-annotations-back"
    wrote: list[dict] = []

    def handler(rec: Recorded) -> Reply:
        req = json.loads(rec.body)
        text = f"Zenith Labs makes anvils (ask {placeholder_in(rec)} or see the docs)."
        a = text.index("docs")
        ann = {"type": "url_citation", "start_index": a, "end_index": a + 4, "url": "https://example.org/d", "title": "D"}
        wrote.append(ann)
        item = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [ann], "logprobs": []}]}
        return json_reply(resp_envelope(req, "completed", [item]))  # fmt: skip

    proxy.upstream.on(model, handler)
    inp: list = [{"role": "user", "content": f"What does Acme Corp make? Ask {BOB}."}]
    with sdk(proxy) as client:
        first = client.responses.create(model=model, input=inp)
        out = [o.model_dump(exclude_none=True) for o in first.output]
        part = out[0]["content"][0]
        ann = part["annotations"][0]
        assert part["text"][ann["start_index"] : ann["end_index"]] == "docs" and BOB in part["text"]
        client.responses.create(model=model, input=[*inp, *out, {"role": "user", "content": "More?"}])
    sent = json.loads(proxy.upstream.for_model(model)[-1].body)["input"][1]["content"][0]
    got = sent["annotations"][0]
    assert sent["text"][got["start_index"] : got["end_index"]] == "docs"
    assert (got["start_index"], got["end_index"]) == (wrote[0]["start_index"], wrote[0]["end_index"])


def test_responses_stream_raw_events_are_gapless_and_done_texts_match(proxy: Proxy) -> None:
    proxy.upstream.on(RESP, resp_handler)
    logged = len(_summaries(proxy, "openai.responses"))
    body = json.dumps({**RESP_KW, "stream": True}, ensure_ascii=False).encode()
    status, headers, data = http_post(proxy.port, "/v1/responses", body,
                                      {"authorization": "Bearer test"})  # fmt: skip
    assert status == 200, data
    assert headers["content-type"].startswith("text/event-stream")
    rec = proxy.upstream.for_model(RESP)[-1]
    check_responses_request(rec, None)
    up = resp_events(rec.json, "[EMAIL_1]", "[EMAIL_2]")
    got: list[RawEvent] = raw_events(data)
    docs = [json.loads(e.data) for e in got]
    for e, d in zip(got, docs, strict=True):
        assert e.name == d["type"], "event: line and type disagree"
    seqs = [d["sequence_number"] for d in docs]
    assert seqs == list(range(len(seqs))), f"sequence numbers not gapless: {seqs}"
    # the held tails ride in the deltas before their *.done events: every event is the
    # provider's, with its number (a client resuming with starting_after=N names it)
    upd = [json.loads(raw_events(u)[0].data or "") for u in up]
    assert [(d["type"], d["sequence_number"]) for d in docs] == [(d["type"], d["sequence_number"]) for d in upd]
    # the reasoning events are byte-identical
    for raw in up[2:9]:
        assert raw in [e.raw for e in got], f"event changed: {raw!r}"

    text_deltas = [d["delta"] for d in docs if d["type"] == "response.output_text.delta"]
    arg_deltas = [d["delta"] for d in docs if d["type"] == "response.function_call_arguments.delta"]
    by_type = defaultdict(list)
    for i, d in enumerate(docs):
        by_type[d["type"]].append((i, d))
    [(i_tdone, tdone)] = by_type["response.output_text.done"]
    [(i_adone, adone)] = by_type["response.function_call_arguments.done"]
    last_text = max(i for i, _ in by_type["response.output_text.delta"])
    last_arg = max(i for i, _ in by_type["response.function_call_arguments.delta"])
    assert last_text < i_tdone and last_arg < i_adone, "a delta after its *.done"
    assert tdone["text"] == "".join(text_deltas) == R_TEXT_EXPECTED
    assert adone["arguments"] == "".join(arg_deltas)
    assert json.loads(adone["arguments"]) == R_ARGS_EXPECTED
    assert adone["name"] == "acme_lookup"
    [(_, cpart)] = by_type["response.content_part.done"]
    assert cpart["part"]["text"] == R_TEXT_EXPECTED
    items = {d["item"]["id"]: d["item"] for _, d in by_type["response.output_item.done"]}
    assert items["msg_1"]["content"][0]["text"] == R_TEXT_EXPECTED
    assert items["fc_1"]["arguments"] == adone["arguments"]
    assert items["fc_1"]["name"] == "acme_lookup"
    assert items["rs_1"]["encrypted_content"] == R_ENCRYPTED
    [(i_end, end)] = by_type["response.completed"]
    assert i_end == len(docs) - 1
    out = end["response"]["output"]
    assert out[1]["content"][0]["text"] == R_TEXT_EXPECTED
    assert out[2]["arguments"] == adone["arguments"]
    assert out[0]["summary"][0]["text"] == "".join(R_SUMMARY)
    assert end["response"]["instructions"] == RESP_INSTRUCTIONS
    assert end["response"]["tools"][0]["parameters"] == LOOKUP_PARAMS

    # Issue 20: each original counted once. The stream says its text in the deltas, in
    # *.done, the part, the item and response.completed ("restored 25" for 5); the
    # flow's count is what the same answer counts restored as one body.
    from disguiselib.apis.openai.responses import RESPONSE_OBJECT
    from disguiselib.base.restore import restore_body
    from disguiselib.rules import mappings
    from disguiselib.rules.rules import Rules

    final = json.loads(raw_events(up[-1])[0].data or "")["response"]
    r = Rules(mappings.from_dict(MAPPINGS)).restorer({"[EMAIL_1]": BOB, "[EMAIL_2]": ALICE})
    restore_body(json.dumps(final).encode(), RESPONSE_OBJECT, r)
    assert r.restored > 5
    # this flow's line: the one after `logged` that says the count (the module's proxy is
    # shared: the test before's last line can reach the output after `logged` was taken)
    want = f"; restored {r.restored} originals"
    deadline = time.monotonic() + 20
    while not any(want in ln for ln in _summaries(proxy, "openai.responses")[logged:]):
        assert time.monotonic() < deadline, (want, _summaries(proxy, "openai.responses")[logged:])
        time.sleep(0.05)


# == 3. whole (non-streaming) bodies ============================================================

CHAT_WHOLE = "scn-chat-whole"
RESP_WHOLE = "scn-responses-whole"
WHOLE_ARGS = {"thread_id": "x-1", "path": "WINPATH", "q": 'a "b" from Zenith Labs', "n": 2}
WHOLE_ARGS_EXPECTED = {"session_id": "x-1", "path": WINQ, "q": 'a "b" from Acme Corp', "n": 2}


def chat_whole_handler(rec: Recorded) -> Reply:
    ph = placeholder_in(rec)
    args = json.dumps(WHOLE_ARGS)
    return json_reply({
        "id": "chatcmpl-whole", "object": "chat.completion", "created": 1700000000,
        "model": CHAT_WHOLE, "system_fingerprint": "fp_int",
        "choices": [{"index": 0, "logprobs": None, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "refusal": None,
            "content": f"Zenith Labs mailed {ph} [[reply_to_current]] about WINPATH.",
            "tool_calls": [{"id": "call_w", "type": "function",
                            "function": {"name": "crm_lookup", "arguments": args}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18},
    })  # fmt: skip


def resp_whole_handler(rec: Recorded) -> Reply:
    req = rec.json
    ph = placeholder_in(rec)
    args = json.dumps(WHOLE_ARGS)
    output = [
        {"id": "msg_w", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                      "text": f"Zenith Labs mailed {ph} [[reply_to_current]] about WINPATH."}]},
        {"id": "fc_w", "type": "function_call", "call_id": "call_w", "name": "crm_lookup",
         "arguments": args, "status": "completed"},
    ]  # fmt: skip
    return json_reply(resp_envelope(req, "completed", output))


def test_whole_chat_body_is_restored(proxy: Proxy) -> None:
    proxy.upstream.on(CHAT_WHOLE, chat_whole_handler)
    with sdk(proxy) as client:
        got = client.chat.completions.create(
            model=CHAT_WHOLE, tools=CHAT_TOOLS[:1],
            messages=[{"role": "user", "content": f"I am {BOB} at Acme Corp"}])  # fmt: skip
    rec = proxy.upstream.for_model(CHAT_WHOLE)[-1]
    assert rec.json["messages"][0]["content"] == "I am [EMAIL_1] at Zenith Labs"
    assert rec.json["tools"][0]["function"]["name"] == "crm_lookup"
    msg = got.choices[0].message
    assert msg.content == f"Acme Corp mailed {BOB}  about {WINQ}."
    [call] = msg.tool_calls
    assert call.function.name == "acme_lookup" and call.id == "call_w"
    assert json.loads(call.function.arguments) == WHOLE_ARGS_EXPECTED


CHAT_WIDE = "scn-chat-wide"


@pytest.mark.parametrize(("codec", "label"), [("utf-16", "; charset=utf-16"), ("utf-16-le", ""), ("utf-32", "")])
def test_whole_chat_body_in_utf16_or_utf32_is_restored(proxy: Proxy, codec: str, label: str) -> None:
    """The SDK reads a UTF-16 or UTF-32 JSON body (json.loads detects it): restored, in
    its own encoding, like a UTF-8 one."""
    def handler(rec: Recorded) -> Reply:
        doc = {"id": "chatcmpl-wide", "object": "chat.completion", "created": 1700000000, "model": CHAT_WIDE,
               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                   "role": "assistant", "content": f"Zenith Labs mailed {placeholder_in(rec)} é"}}]}  # fmt: skip
        body = json.dumps(doc, ensure_ascii=False).encode(codec)
        return Reply([body], headers={"Content-Type": "application/json" + label}, framing="length")

    proxy.upstream.on(CHAT_WIDE, handler)
    with sdk(proxy) as client:
        got = client.chat.completions.with_raw_response.create(
            model=CHAT_WIDE, messages=[{"role": "user", "content": f"I am {BOB} at Acme Corp"}])  # fmt: skip
    assert json.detect_encoding(got.content) == json.detect_encoding("{}".encode(codec))
    assert got.parse().choices[0].message.content == f"Acme Corp mailed {BOB} é"


def test_whole_responses_body_is_restored(proxy: Proxy) -> None:
    proxy.upstream.on(RESP_WHOLE, resp_whole_handler)
    with sdk(proxy) as client:
        got = client.responses.create(
            model=RESP_WHOLE, instructions=RESP_INSTRUCTIONS, tools=RESP_TOOLS,
            tool_choice={"type": "function", "name": "acme_lookup"},
            input=f"I am {BOB} at Acme Corp")  # fmt: skip
    rec = proxy.upstream.for_model(RESP_WHOLE)[-1]
    assert rec.json["input"] == "I am [EMAIL_1] at Zenith Labs"
    assert rec.json["instructions"] == (
        "You are the assistant of Zenith Labs; never print a thread_id.")
    assert got.output_text == f"Acme Corp mailed {BOB}  about {WINQ}."
    fc = got.output[1]
    assert (fc.type, fc.name, fc.call_id) == ("function_call", "acme_lookup", "call_w")
    assert json.loads(fc.arguments) == WHOLE_ARGS_EXPECTED
    assert got.instructions == RESP_INSTRUCTIONS
    assert got.tools[0].name == "acme_lookup" and got.tools[0].parameters == LOOKUP_PARAMS


def _cites(text: str, *words: str) -> list[tuple[int, int]]:
    return [(text.index(w), text.index(w) + len(w)) for w in words]


def test_citations_point_into_the_restored_text(proxy: Proxy) -> None:
    """Web-search citations count characters of the text the model wrote (disguised):
    the client gets them moved to the restored text, in a whole Chat answer and in a
    Responses stream's snapshots (content_part.done, output_item.done, response.completed),
    file citations' one position (`index`) as well."""
    chat, resp = "scn-chat-cites", "scn-resp-cites"

    def words(rec: Recorded) -> tuple[str, tuple[str, ...]]:
        ph = placeholder_in(rec)
        return f"Zenith Labs mailed {ph} [[reply_to_current]] about WINPATH, said the news.", (
            "Zenith Labs", ph, "WINPATH", "said the news")

    def chat_handler(rec: Recorded) -> Reply:
        text, w = words(rec)
        ann = [{"type": "url_citation", "url_citation": {"start_index": a, "end_index": b, "title": "Zenith Labs",
                                                         "url": "https://news.example/"}} for a, b in _cites(text, *w)]
        return json_reply({"id": "chatcmpl-c", "object": "chat.completion", "created": 1700000000, "model": chat,
                           "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop", "message": {
                               "role": "assistant", "refusal": None, "content": text, "annotations": ann}}],
                           "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}})  # fmt: skip

    def resp_handler(rec: Recorded) -> Reply:
        text, w = words(rec)
        ann = [{"type": "url_citation", "start_index": a, "end_index": b, "title": "Zenith Labs",
                "url": "https://news.example/"} for a, b in _cites(text, *w)]  # fmt: skip
        # file citations count one position each (`index`)
        ann += [{"type": "file_citation", "file_id": "file-1", "filename": "n.pdf", "index": text.index(w[2])},
                {"type": "file_path", "file_id": "file-2", "index": text.index(w[3])}]  # fmt: skip
        part = {"type": "output_text", "text": text, "annotations": ann, "logprobs": []}
        msg = {"id": "msg_c", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        done = {**msg, "status": "completed", "content": [part]}
        mt = {"item_id": "msg_c", "output_index": 0, "content_index": 0}
        bodies = [
            {"type": "response.created", "response": resp_envelope(rec.json, "in_progress", [])},
            {"type": "response.output_item.added", "output_index": 0, "item": msg},
            {"type": "response.content_part.added", **mt, "part": {**part, "text": "", "annotations": []}},
            *[{"type": "response.output_text.delta", **mt, "delta": text[i : i + 7], "logprobs": []}
              for i in range(0, len(text), 7)],
            {"type": "response.output_text.done", **mt, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **mt, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": done},
            {"type": "response.completed", "response": resp_envelope(rec.json, "completed", [done])},
        ]  # fmt: skip
        return Reply([sse({**b, "sequence_number": n}) for n, b in enumerate(bodies)], headers=sse_headers())

    proxy.upstream.on(chat, chat_handler)
    proxy.upstream.on(resp, resp_handler)
    expected = ["Acme Corp", BOB, WINQ, "said the news"]
    with sdk(proxy) as client:
        got = client.chat.completions.create(model=chat, messages=[{"role": "user", "content": f"I am {BOB}"}])
        with client.responses.stream(model=resp, input=f"I am {BOB}") as stream:
            events = list(stream)
            final = stream.get_final_response()
    msg = got.choices[0].message
    assert msg.content == f"Acme Corp mailed {BOB}  about {WINQ}, said the news."
    assert [msg.content[a.url_citation.start_index : a.url_citation.end_index] for a in msg.annotations] == expected
    assert msg.annotations[0].url_citation.title == "Acme Corp"
    (part_done,) = [e.part for e in events if e.type == "response.content_part.done"]
    (item_done,) = [e.item.content[0] for e in events if e.type == "response.output_item.done"]
    for p in (part_done, item_done, final.output[0].content[0]):
        assert p.text == msg.content
        assert [p.text[a.start_index : a.end_index] for a in p.annotations[:4]] == expected
        assert p.annotations[0].title == "Acme Corp"
        assert [p.text[a.index :][:13] for a in p.annotations[4:]] == [WINQ[:13], "said the news"]


def test_upstream_error_body_is_restored(proxy: Proxy) -> None:
    scn = "scn-chat-400"

    def handler(rec: Recorded) -> Reply:
        msg = f"crm_lookup: thread_id unknown for {placeholder_in(rec)}"
        body = {"error": {"message": msg, "type": "invalid_request_error", "param": "tools",
                          "code": None}}  # fmt: skip
        return Reply([json.dumps(body).encode()], status=400,
                     headers={"Content-Type": "application/json"}, framing="length")  # fmt: skip

    proxy.upstream.on(scn, handler)
    with sdk(proxy) as client, pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(
            model=scn, tools=CHAT_TOOLS[:1],
            messages=[{"role": "user", "content": f"{BOB}: session_id s-1"}])  # fmt: skip
    assert exc.value.body["message"] == f"acme_lookup: session_id unknown for {BOB}"
    assert exc.value.body["param"] == "tools"


# == 4. a request that cannot be masked ========================================================

BAD = {
    "truncated-json": b'{"model":"scn-bad","messages":[{"role":"user","content":'
                      b'"mail bob@corp.example.com at Acme Corp"}',
    "not-an-object": b'["Acme Corp", "bob@corp.example.com"]',
}  # fmt: skip


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
@pytest.mark.parametrize("case", list(BAD))
def test_unmaskable_request_is_refused_with_openai_error(
    proxy: Proxy, path: str, case: str
) -> None:
    n_before = len(proxy.upstream.requests)
    status, headers, data = http_post(proxy.port, path, BAD[case], {"authorization": "Bearer test"})
    assert status == 400, data
    assert headers["content-type"].startswith("application/json")
    err = json.loads(data)
    assert set(err) == {"error"} and isinstance(err["error"], dict)
    msg = err["error"]["message"]
    assert isinstance(msg, str) and "disguise" in msg
    assert err["error"].get("type") == "invalid_request_error"
    for orig in ORIGINALS:
        assert orig not in msg
    assert len(proxy.upstream.requests) == n_before, "the refused request reached upstream"


def test_unmaskable_request_is_a_bad_request_error_in_the_sdk(proxy: Proxy) -> None:
    n_before = len(proxy.upstream.requests)
    with sdk(proxy) as client, pytest.raises(openai.BadRequestError) as exc:
        client.post("/chat/completions", cast_to=object, content=BAD["truncated-json"],
                    options={"headers": {"content-type": "application/json"}})  # fmt: skip
    assert exc.value.status_code == 400
    assert "disguise" in exc.value.message and "Acme" not in exc.value.message
    assert len(proxy.upstream.requests) == n_before


# == 5. other path shapes =========================================================================

AZURE = "scn-azure"
ROUTER = "scn-openrouter"


def test_azure_deployment_path_is_masked_and_restored(proxy: Proxy) -> None:
    proxy.upstream.on(AZURE, lambda rec: json_reply({
        "id": "chatcmpl-az", "object": "chat.completion", "created": 1, "model": AZURE,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "message": {
            "role": "assistant", "content": f"Zenith Labs knows {placeholder_in(rec)}."}}],
    }))  # fmt: skip
    http_client = openai.DefaultHttpxClient(trust_env=False)
    try:
        with openai.AzureOpenAI(
            azure_endpoint=proxy.base_url, azure_deployment="x", api_version="2024-10-21",
            api_key="test", max_retries=0, timeout=20.0, http_client=http_client,
        ) as client:  # fmt: skip
            got = client.chat.completions.create(
                model=AZURE, messages=[{"role": "user", "content": f"Acme Corp: {BOB}"}])
    finally:
        http_client.close()
    rec = proxy.upstream.for_model(AZURE)[-1]
    assert rec.path == "/openai/deployments/x/chat/completions?api-version=2024-10-21"
    assert rec.json["messages"][0]["content"] == "Zenith Labs: [EMAIL_1]"
    assert_no_original(rec.body.decode(), "the Azure request")
    assert got.choices[0].message.content == f"Acme Corp knows {BOB}."


def test_openrouter_path_is_masked_and_stream_restored(proxy: Proxy) -> None:
    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        pieces = ["Hi Zen", "ith", " Labs, ", ph[:2], ph[2:], "!"]
        events = [chat_chunk(ch(0, {"content": p})) for p in pieces]
        events += [chat_chunk(ch(0, {}, "stop")), sse_data("[DONE]")]
        return Reply(cut(events, seed=13), headers=sse_headers())

    proxy.upstream.on(ROUTER, handler)
    with sdk(proxy, prefix="/api/v1") as client:
        chunks = list(client.chat.completions.create(
            model=ROUTER, messages=[{"role": "user", "content": f"Acme Corp: {BOB}"}], stream=True))
    rec = proxy.upstream.for_model(ROUTER)[-1]
    assert rec.path == "/api/v1/chat/completions"
    assert rec.json["messages"][0]["content"] == "Zenith Labs: [EMAIL_1]"
    assert_no_original(rec.body.decode(), "the OpenRouter request")
    text = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(text) == f"Hi Acme Corp, {BOB}!"
    for t in text:
        assert_no_disguise(t, "OpenRouter delta", ("[",))


def test_log_holds_no_originals_and_no_addon_errors(proxy: Proxy) -> None:
    # one masked request of each API and one refused, so the log has something to show
    proxy.upstream.on(CHAT_WHOLE, chat_whole_handler)
    proxy.upstream.on(RESP_WHOLE, resp_whole_handler)
    with sdk(proxy) as client:
        client.chat.completions.create(model=CHAT_WHOLE, messages=[
            {"role": "user", "content": f"Acme Corp {BOB} {ALICE} {WINQ} ProjectFalcon"}])
        client.responses.create(model=RESP_WHOLE, instructions="session_id of acme_lookup",
                                tools=RESP_TOOLS, input=f"Acme Corp {BOB}")  # fmt: skip
    assert http_post(proxy.port, "/v1/chat/completions", BAD["truncated-json"])[0] == 400
    out = proxy.mitm.output
    assert "/chat/completions" in out and "/responses" in out
    for orig in ORIGINALS:
        assert orig not in out, f"{orig!r} in the mitmdump log"
    for bad in ("Traceback", "Addon error", "has crashed", "stream could not be reversed"):
        assert bad not in out, f"{bad!r} in the mitmdump log:\n{out}"

