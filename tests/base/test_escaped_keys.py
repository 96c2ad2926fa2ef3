"""Keys are compared as JSON reads them (issue 15): `"sequence_n\\u0075mber": 5` is the
key `sequence_number`. Wherever the stream code looks a key or a type name up in raw text
(the providers' fast paths, sequence numbers, terminal markers, Gemini's finish check,
the inspection's final-event check), an escaped spelling must mean what the plain one
means.

The property, for every stream class: a stream whose events spell their keys (and type
names) with random `\\uXXXX` escapes gives the client the same events, parsed, as the
same stream spelled plainly, for random texts with disguises, random delta splits and
random byte fragmentation; also when the stream is cut short, and on the per-read fast
path (an event without a trigger passes unparsed; a `\\u` escape is a trigger).
"""

from __future__ import annotations

import functools
import json
import random

import pytest
from google_util import build_chunks
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import legacy
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.inspect.record import Tee
from disguiselib.wire import jsonspan
from disguiselib.wire.sse import Framer
from openai_util import build_chat, build_responses
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)
# Values that name a kind of event or an ending: escaped like keys.
NAME_VALUES = {"type", "object", "finish_reason", "finishReason", "role"}


@functools.cache
def _plain(c: str) -> str:
    """One character as JSON writes it in a string (a key's few characters, met 100,000 times)."""
    return json.dumps(c, ensure_ascii=False)[1:-1]


def dump(obj: object, rnd: random.Random | None, p: float, key: str | None = None) -> str:
    """Compact JSON (the APIs' own shape); with rnd, each letter, digit, `_` and `.` of a
    key (and of a NAME_VALUES value) written as a \\u escape with probability p."""

    def name(s: str) -> str:
        if rnd is None:  # what the loop below gives without escapes: JSON escapes each character alone
            return json.dumps(s, ensure_ascii=False)
        out = []
        for c in s:
            if (c.isascii() and (c.isalnum() or c in "_.")) and rnd.random() < p:
                out.append(rnd.choice(["\\u%04x", "\\u%04X"]) % ord(c))
            else:
                out.append(_plain(c))
        return '"' + "".join(out) + '"'

    if isinstance(obj, dict):
        return "{" + ",".join(name(k) + ":" + dump(v, rnd, p, k) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(dump(v, rnd, p) for v in obj) + "]"
    if isinstance(obj, str) and key in NAME_VALUES:
        return name(obj)
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: \u escapes, as a provider would send it
        return json.dumps(obj)
    return text


def parsed_events(body: bytes, sep: bytes) -> list[tuple[str | None, object]]:
    out: list[tuple[str | None, object]] = []
    for raw in body.split(sep):
        if not raw.strip():
            continue
        name, data = None, None
        for line in raw.decode("utf-8", "surrogatepass").splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
        out.append((name, data if data == "[DONE]" else json.loads(data)))  # type: ignore[arg-type]
    return out


def respell(events: list[tuple[str | None, object]], rnd: random.Random | None, p: float, eol: str,
            names: bool = True) -> bytes:  # fmt: skip
    """The events as SSE; names False: without their `event:` lines (the data's `type`
    says it all, and a compatible server may leave them out)."""
    out = []
    for name, doc in events:
        data = doc if doc == "[DONE]" else dump(doc, rnd, p)
        head = f"event: {name}{eol}" if name and names else ""
        out.append(f"{head}data: {data}{eol}{eol}".encode("utf-8", "surrogatepass"))
    return b"".join(out)


KINDS = ["anthropic", "chat", "legacy", "responses", "gemini", "array"]


def build(kind: str, pieces: list[str], args: list[str]) -> tuple[type, list[tuple[str | None, object]], str]:
    if kind == "anthropic":
        body = build_stream([("text", pieces), ("tool", args)])
        return anthropic.AnthropicStream, parsed_events(body, b"\n\n"), "\n"
    if kind == "chat":
        steps = [("content", 0, p) for p in pieces] + [("tool", 0, 0, "crm_lookup" if i == 0 else None, a)
                                                         for i, a in enumerate(args)]  # fmt: skip
        body = build_chat([*steps, ("finish", 0, "tool_calls")])
        return openai_chat.ChatStream, parsed_events(body, b"\n\n"), "\n"
    if kind == "legacy":
        docs = [{"id": "c", "object": "text_completion", "created": 1, "model": "m",
                 "choices": [{"text": p, "index": 0, "logprobs": None, "finish_reason": None}]} for p in pieces]  # fmt: skip
        docs.append({**docs[0], "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "stop"}]}
                    if docs else {"choices": [{"text": "", "index": 0, "finish_reason": "stop"}]})  # fmt: skip
        return legacy.CompletionsStream, [(None, d) for d in docs] + [(None, "[DONE]")], "\n"
    if kind == "responses":
        return openai_responses.ResponsesStream, parsed_events(build_responses(pieces, args), b"\n\n"), "\n"
    chunks = build_chunks([("text", 0, p) for p in pieces] + [("finish", 0, "alone")])
    return (gemini_stream.GeminiStream if kind == "gemini" else gemini_array.GeminiArrayStream,
            [(None, c) for c in chunks], "\r\n")  # fmt: skip


def body_of(kind: str, events: list, rnd: random.Random | None, p: float, eol: str, names: bool = True) -> bytes:
    if kind == "array":
        return b"[" + b",\r\n".join(dump(d, rnd, p).encode("utf-8", "surrogatepass") for _, d in events) + b"]"
    return respell(events, rnd, p, eol, names)


def client_view(kind: str, out: bytes) -> list:
    """Every event the client gets, parsed, but for events that carry no text at all (a
    delta of ""): the fast paths drop a delta whose text is all held, the parsed path
    sends it empty; neither adds anything a client reads. (Responses deltas always go,
    for their sequence numbers, and are kept here.)"""
    if kind == "array":
        return json.loads(out)
    f = Framer()
    evs = [(e.name, e.data if e.data == "[DONE]" else json.loads(e.data)) for e in f.feed(out) + f.flush()
           if e.data is not None]  # fmt: skip
    return [(n, d) for n, d in evs if not _empty_delta(kind, d)]


def _empty_delta(kind: str, d: object) -> bool:
    if not isinstance(d, dict):
        return False
    if kind == "anthropic" and d.get("type") == "content_block_delta":
        delta = d.get("delta") or {}
        return delta.get("type") in ("text_delta", "input_json_delta") and not (
            delta.get("text") or delta.get("partial_json")
        )
    if kind == "chat" and d.get("choices"):
        for c in d["choices"]:
            delta = c.get("delta") or {}
            calls = delta.get("tool_calls") or []
            if c.get("finish_reason") is not None or delta.get("content") or (set(delta) - {"content", "tool_calls"}):
                return False
            if any(set(tc) - {"index", "function"} or (tc.get("function") or {}).get("arguments") for tc in calls):
                return False
        return True
    return False


def run(cls, pieces: list[bytes], quiet: bool) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    # quiet: the per-read fast path (events without a trigger pass unparsed: every raw
    # lookup on them is on its own); else every event is parsed
    s.fast = quiet
    return b"".join(s.feed(p) for p in pieces) + s.flush()


@pytest.mark.parametrize("quiet", [False, True], ids=["parsed", "quiet-path"])
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=50, deadline=None)
@given(text=texts, value=texts, data=st.data())
@example(text="Hello Zenith Labs and nova", value="x", data=None)
def test_escaped_keys_give_the_client_what_plain_keys_give(kind: str, quiet: bool, text: str, value: str, data) -> None:
    args = json.dumps({"thread_id": value})
    if data is None:  # the campaign's case: a held tail before the done event, then renumbering
        pieces, arg_pieces, seed, p, drop, names, cuts = ["Hello Zenith La", "bs and nova"], [args], 1, 1.0, 0, True, None
    else:
        pieces, arg_pieces = data.draw(splits(text)), data.draw(splits(args, 4))
        seed, p = data.draw(st.integers(0, 2**32)), data.draw(st.sampled_from([0.05, 0.3, 1.0]))
        drop = data.draw(st.integers(0, 3))  # the last events cut off: a stream that ends early
        names = data.draw(st.booleans())
    cls, events, eol = build(kind, pieces, arg_pieces)
    if drop:
        events = events[:-drop]
    plain = body_of(kind, events, None, 0.0, eol, names)
    spelled = body_of(kind, events, random.Random(seed), p, eol, names)
    assert json.loads(spelled) == json.loads(plain) if kind == "array" else True
    if data is not None:
        cuts = data.draw(byte_splits(spelled, 30))
    want = client_view(kind, run(cls, [plain], quiet))
    got = client_view(kind, run(cls, cuts or [spelled], quiet))
    assert got == want


def test_the_campaigns_case_is_renumbered() -> None:
    """`…, 5, 5, 7` before: a synthetic delta went out, the escaped sequence number was
    not shifted past it."""
    body = build_responses(["Hello Zenith La", "bs and nova"], ["{}"])
    events = parsed_events(body, b"\n\n")
    spelled = b"".join(
        f"event: {n}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".replace('"sequence_number"', '"sequence_n\\u0075mber"').encode()
        for n, d in events
    )  # fmt: skip
    out = run(openai_responses.ResponsesStream, [spelled], quiet=False)
    seqs = [d["sequence_number"] for _, d in client_view("responses", out)]
    assert seqs == list(range(len(seqs))), seqs


def test_member_span_reads_keys_as_json_does() -> None:
    s = '{"type":"x", "sequence_n\\u0075mber" : 5, "response":{"sequence_number":9}}'
    a, b = jsonspan.member_span(s, "sequence_number")  # type: ignore[misc]
    assert s[a:b] == "5"
    s2 = '{"sequence_number":1,"sequence_number":2}'
    a, b = jsonspan.member_span(s2, "sequence_number")  # type: ignore[misc]
    assert s2[a:b] == "2"  # the last, as json.loads keeps it
    assert jsonspan.member_span("[1]", "x") is None and jsonspan.member_span('{"a":1}', "b") is None


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", min_size=1), st.data())
def test_every_escaped_spelling_of_a_name_is_noticed(name: str, data) -> None:
    rnd = random.Random(data.draw(st.integers()))
    spelled = "".join(f"\\u{ord(c):04x}" if rnd.random() < 0.5 else c for c in name)
    if spelled != name:
        assert jsonspan.escaped_name('{"' + spelled + '":1}')
        assert jsonspan.escaped_name(('{"' + spelled + '":1}').encode())
    assert not jsonspan.escaped_name('{"' + name + '":"caf\\u00e9 \\u003c\\u003e \\u0026"}')


def test_gemini_end_check_reads_escaped_keys() -> None:
    """An escaped spelling of finishReason or error never passes unparsed: a `\\u`
    escape is a trigger by itself (rules/triggers.py)."""
    s = gemini_stream.GeminiStream(RULES.restorer(PLACEHOLDERS))
    assert s.triggers.any(b'{"candidates":[{"finishR\\u0065ason":"STOP"}]}')
    assert s.triggers.any(b'{"\\u0065rror":{}}')
    assert not s.triggers.any(b'{"candidates":[{"index":0}]}')


def test_inspection_sees_an_escaped_final_event() -> None:
    t = Tee(lambda data: data, 1 << 20)
    t(b'event: message_delta\ndata: {"type":"message_delta"}\n\n')
    assert not t.final_sent
    t(b'event: message_stop\ndata: {"type":"message_st\\u006fp"}\n\n')
    assert t.final_sent


def test_chat_fast_path_declines_a_chunk_with_an_escaped_key() -> None:
    """The fast shape found by regex in a chunk that also has `"\\u0065rror"` (json.loads:
    `error`): the chunk is an error chunk to a client, and must be restored as one."""
    chunk = ('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
             '"delta":{"content":"x Zen"},"logprobs":null,"finish_reason":null}],'
             '"\\u0065rror":{"message":"Zenith Labs is overloaded","type":"server_error"}}')  # fmt: skip
    out = run(openai_chat.ChatStream, [b"data: " + chunk.encode() + b"\n\ndata: [DONE]\n\n"], quiet=False)
    evs = [d for _, d in client_view("chat", out) if isinstance(d, dict)]
    assert evs[-1]["error"]["message"] == "Acme Corp is overloaded"
    assert b"Zenith" not in out
