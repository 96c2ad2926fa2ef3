"""The per-read fast path is exact: for random rule sets, random streams and random read
boundaries, a stream that passes trigger-free reads and events unparsed gives exactly
the bytes of one that parses every event (`fast = False`), for every API: Anthropic,
OpenAI Chat, Responses, legacy Completions, Gemini SSE and Gemini's JSON array.

What the trigger scan (core/triggers.py) reasons about: whole disguises, proper prefixes
of disguises and placeholders at the end of a value, strip rules' two-character starts
in their raw JSON form (quotes, backslashes and line breaks escaped), `\\u` and `\\/`
escapes, JSON text that ends inside an escape, and each API's markers. The rule sets
below have disguises made of what the streams' own syntax is made of (`[`, `{`, `:`,
`/`, digits, spaces) and strip rules that begin with a quote, a line break, a
backslash, a slash or a non-ASCII character; the texts put all of that at the ends of
deltas, inside escapes and across reads. A trigger the scan forgets, a marker an API
forgets, or a window state the fast path ignores makes some example differ.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.core import mappings, sse
from disguiselib.core.rules import Rules
from disguiselib.providers.anthropic import AnthropicStream
from disguiselib.providers.gemini_array import GeminiArrayStream
from disguiselib.providers.gemini_stream import GeminiStream
from disguiselib.providers.legacy import CompletionsStream
from disguiselib.providers.openai_chat import ChatStream
from disguiselib.providers.openai_responses import ResponsesStream
from google_util import build_chunks, to_array, to_sse
from openai_util import build_chat, build_responses

# Disguises are ASCII without quotes, backslashes or controls; some are made of what
# the stream's own syntax is made of.
_disguise = st.text(alphabet="abnz019[]{}:,_-. A/", min_size=1, max_size=6).filter(
    lambda d: d.strip() == d or len(d) > 1
)
_STRIPS = [
    r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]",
    r"<x>",
    r"\{\{[a-z]+\}\}",
    r"::",
    r"\n-{3}\n",  # begins with a line break: `\n` on the wire
    r'"q"',  # begins with a quote: `\"` on the wire
    r"\\z",  # begins with a backslash: `\\` on the wire
    r"/x/",  # `/` may come as `\/`
    r"é+!",  # a non-ASCII start
]
_STRIP_EXAMPLES = ["[[reply_to_current]]", "<x>", "{{ab}}", "::", "\n---\n", '"q"', "\\z", "/x/", "éé!"]


@st.composite
def rule_sets(draw):
    disguises = draw(st.lists(_disguise, min_size=0, max_size=4, unique=True))
    # originals are non-ASCII: a disguise (ASCII) can never contain one
    literals = {f"Ö{i}é": d for i, d in enumerate(disguises)}
    names = draw(st.lists(st.sampled_from(["EMAIL", "K", "AB_C"]), max_size=2, unique=True))
    strips = draw(st.lists(st.sampled_from(_STRIPS), max_size=3, unique=True))
    doc = {
        "literals": literals,
        "patterns": [{"name": n, "regex": "Ö@[a-z]+"} for n in names],
        "strip": [{"regex": s} for s in strips],
    }
    try:
        ms = mappings.from_dict(doc)
    except mappings.MappingError:
        ms = mappings.from_dict({"literals": {"Ö0é": "zz"}})
    placeholders = {f"[{n}_1]": f"{n.lower()}@x.io" for n in names}
    return Rules(ms), placeholders, [*disguises, *placeholders, *_STRIP_EXAMPLES]


def _texts(words: list[str]):
    piece = st.one_of(
        st.sampled_from(words),
        st.sampled_from(words).map(lambda w: w[: max(1, len(w) // 2)]),
        st.sampled_from(words).map(lambda w: w[len(w) // 2 :] or w),
        st.sampled_from([" ", "a", "\n", '"', "\\", "é", "😀", "\ud83d", "[", "{", ":", "]", "/", "\\u00e9", "\\"]),
        st.text(alphabet="abnz 019[]{}:._/", max_size=5),
    )
    return st.lists(piece, max_size=8).map("".join)


def _reads(data, body: bytes) -> list[bytes]:
    """body cut into reads: at random points, or at event ends now and then (several
    whole events per read), or one byte at a time for short bodies."""
    how = data.draw(st.sampled_from(["random", "events", "bytes"]))
    if how == "bytes" and len(body) <= 1500:
        return [body[i : i + 1] for i in range(len(body))]
    if how == "events":
        ends = [i + 2 for i in range(len(body) - 1) if body[i : i + 2] == b"\n\n"]
        keep = sorted(set(data.draw(st.lists(st.sampled_from(ends), max_size=12)))) if ends else []
        cuts = [0, *keep, len(body)]
        return [body[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    n = len(body)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, n - 1)), max_size=30))))
    cuts = [0, *cuts, n]
    return [body[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def _variants(data, body: bytes) -> bytes:
    """The same stream with `/` written `\\/` in its JSON (a valid spelling), sometimes."""
    if data.draw(st.booleans()) and b"/" in body:
        return body.replace(b"/", b"\\/")
    return body


def _run(stream, reads: list[bytes]) -> bytes:
    out = [stream.feed(r) for r in reads]
    out.append(stream.flush())
    return b"".join(out)


def _both(cls, rules: Rules, placeholders: dict, reads: list[bytes]) -> tuple[bytes, bytes]:
    fast = cls(rules.restorer(placeholders))
    slow = cls(rules.restorer(placeholders))
    slow.fast = False  # parse every event
    return _run(fast, reads), _run(slow, reads)


def _check(data, cls, rules, placeholders, body: bytes) -> None:
    reads = _reads(data, _variants(data, body))
    fast, slow = _both(cls, rules, placeholders, reads)
    assert fast == slow


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_anthropic(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    texts = st.lists(_texts(words), min_size=1, max_size=10)
    blocks = [("text", data.draw(texts))]
    if data.draw(st.booleans()):
        blocks.insert(0, ("thinking", data.draw(texts)))
    args = data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=3))
    j = json.dumps(args, ensure_ascii=data.draw(st.booleans()))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(j)), max_size=6)))
    blocks.append(("tool", [j[a:b] for a, b in zip([0, *cuts], [*cuts, len(j)], strict=True)]))
    if data.draw(st.booleans()):
        blocks.append(("text", data.draw(texts)))
    _check(data, AnthropicStream, rules, placeholders, build_stream(blocks))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_chat(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    steps: list[tuple] = []
    for piece in data.draw(st.lists(_texts(words), min_size=1, max_size=10)):
        steps.append(("content", data.draw(st.integers(0, 1)), piece))
    args = json.dumps(data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=2)))
    cut = data.draw(st.integers(0, len(args)))
    steps.append(("tool", 0, 0, "fn", args[:cut]))
    steps.append(("tool", 0, 0, None, args[cut:]))
    steps += [("finish", 0, "tool_calls"), ("finish", 1, "stop")]
    _check(data, ChatStream, rules, placeholders, build_chat(steps, usage=data.draw(st.booleans())))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_responses(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    text = data.draw(st.lists(_texts(words), min_size=1, max_size=10))
    args = json.dumps(data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=2)))
    cut = data.draw(st.integers(0, len(args)))
    body = build_responses(text, [args[:cut], args[cut:]], spaced=data.draw(st.booleans()))
    _check(data, ResponsesStream, rules, placeholders, body)


def _completion(idx: int, text: str, finish: str | None = None) -> bytes:
    doc = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
           "choices": [{"text": text, "index": idx, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(doc)}\n\n".encode()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_legacy_completions(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    events = [_completion(data.draw(st.integers(0, 1)), t) for t in data.draw(st.lists(_texts(words), min_size=1, max_size=10))]
    events += [_completion(0, "", "stop"), _completion(1, data.draw(_texts(words)), "length"), b"data: [DONE]\n\n"]
    _check(data, CompletionsStream, rules, placeholders, b"".join(events))


def _gemini_steps(data, words) -> list[tuple]:
    steps: list[tuple] = []
    for piece in data.draw(st.lists(_texts(words), min_size=1, max_size=8)):
        k = data.draw(st.sampled_from([0, 0, 0, 1]))
        steps.append((data.draw(st.sampled_from(["text", "text", "thought"])), k, piece))
    if data.draw(st.booleans()):
        steps.append(("call", 0, "fn", {"a": data.draw(_texts(words))}, None))
    steps.append(("finish", 0, data.draw(st.sampled_from(["alone", "bare", "parts", "text:" + data.draw(_texts(words))]))))
    if data.draw(st.booleans()):
        steps.append(("finish", 1, "alone"))
    return steps


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_gemini_sse(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    chunks = build_chunks(_gemini_steps(data, words))
    body = to_sse(chunks, eol=data.draw(st.sampled_from(["\r\n", "\n"])), spaced=data.draw(st.booleans()))
    _check(data, GeminiStream, rules, placeholders, body)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_gemini_array(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    chunks = build_chunks(_gemini_steps(data, words))
    body = to_array(chunks, pretty=data.draw(st.booleans()))
    if data.draw(st.booleans()):
        body = body[: data.draw(st.integers(1, len(body)))]  # cut short: the error path too
    _check(data, GeminiArrayStream, rules, placeholders, body)


# -- the framer's block boundaries ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"data: x", b"a", b"\n", b"\r\n", b"\r", b": c", b"\n\n", b"\r\n\r\n"]), max_size=24),
       st.data())  # fmt: skip
def test_blocks_end_where_the_framer_cuts(parts, data) -> None:
    """Framer.whole hands out the bytes of exactly the events feed_raw would give, for
    any line ends and any reads; split() cuts a block into those events."""
    body = b"".join(parts)
    reads = _reads(data, body) if body else []
    a, b = sse.Framer(), sse.Framer()
    evs_a: list[bytes] = []
    evs_b: list[bytes] = []
    for r in reads:
        evs_a += a.feed_raw(r)
        block = b.whole(r)
        got = sse.split(block) if block else []
        assert b"".join(got) == block
        evs_b += got
    assert b"".join(evs_a) == b"".join(evs_b)
    assert evs_a == evs_b
    assert a.flush_raw() == b.flush_raw()
