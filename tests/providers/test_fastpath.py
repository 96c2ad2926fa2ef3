"""The fast pass-through is safe: for random rule sets and random streams, a stream
whose quiet events pass on unparsed gives exactly the bytes of one that parses every
event (the reference: `rules.suspicious` forced to say yes).

The quiet check reasons about two-character starts of disguises, placeholders and strip
rules, JSON escapes and bytes split across reads; a new rule type that it forgets would
make the fast path skip an event that needed work. This property catches that.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.core import mappings
from disguiselib.core.rules import Rules
from disguiselib.providers.anthropic import AnthropicStream
from disguiselib.providers.openai_chat import ChatStream
from disguiselib.providers.openai_responses import ResponsesStream
from openai_util import build_chat
from strategies import byte_splits

# Disguises are ASCII without quotes, backslashes or controls; some begin with what
# the stream's own syntax is made of (`[`, `{`, `:`, digits, a space).
_disguise = st.text(alphabet="abnz019[]{}:,_-. A", min_size=1, max_size=6).filter(lambda d: d.strip() == d or len(d) > 1)
_strips = st.sampled_from([r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]", r"<x>", r"\{\{[a-z]+\}\}", r"::"])


@st.composite
def rule_sets(draw):
    disguises = draw(st.lists(_disguise, min_size=1, max_size=4, unique=True))
    # originals are non-ASCII: a disguise (ASCII) can never contain one
    literals = {f"Ö{i}é": d for i, d in enumerate(disguises)}
    names = draw(st.lists(st.sampled_from(["EMAIL", "K", "AB_C"]), max_size=2, unique=True))
    strips = draw(st.lists(_strips, max_size=2, unique=True))
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
    return Rules(ms), placeholders, [*disguises, *placeholders, "[[reply_to_current]]", "<x>", "{{ab}}"]


def _texts(words: list[str]):
    piece = st.one_of(
        st.sampled_from(words),
        st.sampled_from(words).map(lambda w: w[: max(1, len(w) // 2)]),
        st.sampled_from([" ", "a", "\n", '"', "\\", "é", "😀", "\ud83d", "[", "{", ":", "]", "\\u00e9"]),
        st.text(alphabet="abnz 019[]{}:._", max_size=5),
    )
    return st.lists(piece, max_size=8).map("".join)


def run(stream, chunks: list[bytes]) -> bytes:
    return b"".join(stream.feed(c) for c in chunks) + stream.flush()


def both(cls, rules: Rules, placeholders: dict, chunks: list[bytes]) -> tuple[bytes, bytes]:
    fast = cls(rules.restorer(placeholders))
    slow = cls(rules.restorer(placeholders))
    slow._suspicious = lambda data, end: True  # parse everything
    return run(fast, chunks), run(slow, chunks)


@settings(max_examples=150)
@given(st.data())
def test_anthropic_fast_path_equals_slow_path(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    texts = st.lists(_texts(words), min_size=1, max_size=10)
    blocks = [("text", data.draw(texts))]
    args = data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=3))
    j = json.dumps(args, ensure_ascii=data.draw(st.booleans()))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(j)), max_size=6)))
    blocks.append(("tool", [j[a:b] for a, b in zip([0, *cuts], [*cuts, len(j)], strict=True)]))
    body = build_stream(blocks)
    chunks = data.draw(byte_splits(body, max_cuts=30))
    fast, slow = both(AnthropicStream, rules, placeholders, chunks)
    assert fast == slow


@settings(max_examples=150)
@given(st.data())
def test_chat_fast_path_equals_slow_path(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    steps: list[tuple] = []
    for piece in data.draw(st.lists(_texts(words), min_size=1, max_size=10)):
        steps.append(("content", data.draw(st.integers(0, 1)), piece))
    args = json.dumps(data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=2)))
    steps.append(("tool", 0, 0, "fn", args[:3]))
    steps.append(("tool", 0, 0, None, args[3:]))
    steps += [("finish", 0, "tool_calls"), ("finish", 1, "stop")]
    body = build_chat(steps)
    chunks = data.draw(byte_splits(body, max_cuts=30))
    fast, slow = both(ChatStream, rules, placeholders, chunks)
    assert fast == slow


def _responses_body(texts: list[str]) -> bytes:
    events = []
    seq = 0

    def ev(t: str, **kw) -> None:
        nonlocal seq
        body = {"type": t, "sequence_number": seq, **kw}
        seq += 1
        try:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:
            data = json.dumps(body, separators=(",", ":")).encode()
        events.append(b"event: " + t.encode() + b"\ndata: " + data + b"\n\n")

    ev("response.created", response={"id": "resp_1", "object": "response", "output": []})
    ev("response.output_item.added", output_index=0, item={"id": "msg_1", "type": "message", "content": []})
    for t in texts:
        ev("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta=t, logprobs=[])
    full = "".join(texts)
    ev("response.output_text.done", item_id="msg_1", output_index=0, content_index=0, text=full, logprobs=[])
    ev("response.completed", response={"id": "resp_1", "object": "response", "output": [
        {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": full, "annotations": []}]}]})
    return b"".join(events)


@settings(max_examples=100)
@given(st.data())
def test_responses_fast_path_equals_slow_path(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    body = _responses_body(data.draw(st.lists(_texts(words), min_size=1, max_size=10)))
    chunks = data.draw(byte_splits(body, max_cuts=30))
    fast, slow = both(ResponsesStream, rules, placeholders, chunks)
    assert fast == slow
