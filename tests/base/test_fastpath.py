"""The per-read fast path is exact: for random rule sets, random streams and random read
boundaries, a stream that passes trigger-free reads and events unparsed gives exactly
the bytes of one that parses every event (`fast = False`), for every API: Anthropic,
OpenAI Chat, Responses, legacy Completions, Gemini SSE and Gemini's JSON array.

What the trigger scan (rules/triggers.py) reasons about: whole disguises, proper prefixes
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

import pytest
from google_util import build_chunks, to_array, to_sse
from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.google.array import GeminiArrayStream
from disguiselib.apis.google.stream import GeminiStream
from disguiselib.apis.openai.chat import ChatStream
from disguiselib.apis.openai.legacy import CompletionsStream
from disguiselib.apis.openai.responses import ResponsesStream
from disguiselib.base import stream
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from disguiselib.wire import sse
from openai_util import _resp_event, build_chat, build_responses, chat_chunk

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


# disguise_fakes: a flow's fakes (fake -> original) restored beside its placeholders;
# made of what the streams' syntax is made of too, and of real generators' characters.
_fake = st.text(alphabet="abnz019:_-.@/A", min_size=2, max_size=10).filter(lambda f: f.strip() == f)


@st.composite
def rule_sets(draw):
    disguises = draw(st.lists(_disguise, min_size=0, max_size=4, unique=True))
    names = draw(st.lists(st.sampled_from(["EMAIL", "K", "AB_C"]), max_size=2, unique=True))
    strips = draw(st.lists(st.sampled_from(_STRIPS), max_size=3, unique=True))
    rules = _drawn_rules(tuple(disguises), tuple(names), tuple(strips), FAKES[0])
    placeholders = {f"[{n}_1]": f"{n.lower()}@x.io" for n in names}
    if not FAKES[0]:
        return rules, placeholders, [*disguises, *placeholders, *_STRIP_EXAMPLES]
    fakes = draw(st.lists(_fake, min_size=1, max_size=3, unique=True))
    placeholders.update({f: f"Ö{i}@orig.io" for i, f in enumerate(fakes)})
    return rules, placeholders, [*disguises, *placeholders, *_STRIP_EXAMPLES]


# The rule set of each drawn (disguises, names, strips), built once: hypothesis draws the
# same small sets again and again (none, one disguise, one strip rule). The streams only
# read a rule set (its trigger automaton and hold-back patterns, cached on first use, as a
# proxy's flows share one); nothing here masks, the one thing that writes its memory.
_BUILT: dict[tuple, Rules] = {}


def _drawn_rules(disguises: tuple[str, ...], names: tuple[str, ...], strips: tuple[str, ...], fakes: bool) -> Rules:
    key = (disguises, names, strips, fakes)
    if (rules := _BUILT.get(key)) is None:
        doc = {
            # originals are non-ASCII: a disguise (ASCII) can never contain one
            "literals": {f"Ö{i}é": d for i, d in enumerate(disguises)},
            "patterns": [{"name": n, "regex": "Ö@[a-z]+"} for n in names],
            "strip": [{"regex": s} for s in strips],
        }
        try:
            ms = mappings.from_dict(doc)
        except mappings.MappingError:
            ms = mappings.from_dict({"literals": {"Ö0é": "zz"}})
        rules = _BUILT[key] = Rules(ms, b"k" * 32) if fakes else Rules(ms)
    return rules


# Every property below runs with placeholders alone and with fakes beside them.
FAKES = [False]


@pytest.fixture(params=[False, True], ids=["placeholders", "fakes"], autouse=True)
def _fakes(request):
    FAKES[0] = request.param
    yield
    FAKES[0] = False
    _BUILT.clear()  # one test's rule sets held at a time (all of them: some 60 MB)


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


# Members of the kind a stream never reads through a window (ids, padding: the
# streams' OPAQUE), spelled plainly or with escapes, and a few it does read or
# restores: their values hold disguises, prefixes of them and escapes at their ends.
_MEMBERS = ['"id"', '"model"', '"obfuscation"', '"item_id"', '"system_fingerprint"', '"obfusc\\u0061tion"',
            '"i\\u0064"', '"id" ', '"x"', '"content"', '"delta"', '"text"']  # fmt: skip


def _members(data, words: list[str], body: bytes) -> bytes:
    """body with a member added to some events' JSON, first or last, now and then inside
    an object of its own (a subtree no table knows: restored whole)."""
    out = []
    for ev in sse.split(body):
        i = ev.find(b"data: {")
        if i >= 0 and ev.endswith(b"}\n\n") and data.draw(st.booleans()):
            text = data.draw(_texts(words))
            value = json.dumps(text, ensure_ascii=data.draw(st.booleans()))
            if "\ud83d" in value:  # a lone surrogate as an escape: the event stays UTF-8
                value = json.dumps(text)
            member = f"{data.draw(st.sampled_from(_MEMBERS))}:{value}"
            if data.draw(st.booleans()):
                member = f'"extra":{{{member}}}'
            if data.draw(st.booleans()):
                ev = ev[: i + 7] + member.encode() + b"," + ev[i + 7 :]
            else:
                ev = ev[:-3] + b"," + member.encode() + b"}\n\n"
        out.append(ev)
    return b"".join(out)


def _check(data, cls, rules, placeholders, body: bytes, words: list[str] | None = None) -> None:
    if words is not None:
        body = _members(data, words, body)
    reads = _reads(data, _variants(data, body))
    # now and then with the scan switched off after a few triggered reads (stream._probe)
    probe = data.draw(st.sampled_from([None, (2, 1, 3), (3, 3, 2)]))
    saved = (stream.PROBE, stream.PROBE_MIN, stream.UNSCANNED)
    if probe:
        stream.PROBE, stream.PROBE_MIN, stream.UNSCANNED = probe
    try:
        fast, slow = _both(cls, rules, placeholders, reads)
    finally:
        stream.PROBE, stream.PROBE_MIN, stream.UNSCANNED = saved
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
    _check(data, ChatStream, rules, placeholders, build_chat(steps, usage=data.draw(st.booleans())), words)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_responses(data) -> None:
    rules, placeholders, words = data.draw(rule_sets())
    text = data.draw(st.lists(_texts(words), min_size=1, max_size=10))
    args = json.dumps(data.draw(st.dictionaries(st.sampled_from(words), _texts(words), max_size=2)))
    cut = data.draw(st.integers(0, len(args)))
    body = build_responses(text, [args[:cut], args[cut:]], spaced=data.draw(st.booleans()))
    _check(data, ResponsesStream, rules, placeholders, body, words)


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


# -- cases the random streams reach rarely, each the one a planted bug shows in -----------------


def _rules(literals: dict[str, str], names: tuple[str, ...] = ()) -> Rules:
    doc = {"literals": literals, "patterns": [{"name": n, "regex": "Ö@[a-z]+"} for n in names]}
    return Rules(mappings.from_dict(doc))


def _same(cls, rules: Rules, body: bytes, placeholders: dict | None = None) -> bytes:
    """Fast and full parsing agree for every read boundary of body (and one byte at a
    time); returns the output."""
    ph = placeholders or {}
    whole = _both(cls, rules, ph, [body])
    assert whole[0] == whole[1]
    assert _both(cls, rules, ph, [body[i : i + 1] for i in range(len(body))])[0] == whole[1]
    cuts = [0, *(i + 2 for i in range(len(body) - 1) if body[i : i + 2] == b"\n\n"), len(body)]
    assert _both(cls, rules, ph, [body[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a])[0] == whole[1]
    return whole[1]


def test_json_text_cut_inside_an_escape() -> None:
    """Tool arguments whose piece ends inside an escape (`...x\\` then `n...`): the
    window must see that piece (trigger `\\\\"`) and stay unquiet until the escape is
    complete, or a disguise right after it (`nb` of `\\nb`) is restored inside it, or
    one after the escape is not."""
    rules = _rules({"Ö1é": "nb"})
    body = build_stream([("tool", ['{"a": "x\\', "nb", 'z"}'])])
    blocks, _ = read_stream(_same(AnthropicStream, rules, body))
    assert json.loads(blocks[0]["json"]) == {"a": "x\nbz"}  # inside the escape: kept
    body = build_stream([("tool", ['{"a": "x\\', "nx", 'nbz"}'])])
    blocks, _ = read_stream(_same(AnthropicStream, rules, body))
    assert json.loads(blocks[0]["json"]) == {"a": "x\nxÖ1éz"}  # after it: restored


def test_anthropic_block_without_a_window() -> None:
    """A block type the API defines no window for passes its deltas as they came; the
    fast path must know the block (marker content_block_start) to do the same."""
    rules = _rules({"Ö1é": "Zenith"})
    ev = build_stream([("text", ["Zenith"])]).replace(b'"type": "text", "text": ""', b'"type": "mystery", "text": ""')
    assert b'"mystery"' in ev
    out = _same(AnthropicStream, rules, ev)
    assert b"Zenith" in out


def test_responses_numbering_after_events_passed_unparsed() -> None:
    """Sequence numbers the client saw on unparsed events count: the error that ends a
    stream cut short numbers after the highest of them."""
    rules = _rules({"Ö1é": "Zenith"})

    body = b"".join([
        _resp_event("response.output_text.delta", 0, item_id="m", output_index=0, content_index=0, delta="hello",
                    logprobs=[]),
        _resp_event("response.output_item.added", 1, output_index=1, item={"id": "x", "type": "message"}),
        _resp_event("response.output_item.added", 2, output_index=2, item={"id": "y", "type": "message"}),
    ])  # fmt: skip
    out = _same(ResponsesStream, rules, body)
    last = json.loads([e for e in sse.Framer().feed(out) if e.data][-1].data)
    assert last["type"] == "error" and last["sequence_number"] == 3


def test_responses_renumbers_after_a_synthetic_event() -> None:
    rules = _rules({"Ö1é": "Zenith"})

    body = b"".join([
        _resp_event("response.output_text.delta", 0, item_id="m", output_index=0, content_index=0, delta="a Ze",
                    logprobs=[]),
        _resp_event("response.output_text.done", 1, item_id="m", output_index=0, content_index=0, text="a Ze",
                    logprobs=[]),
        _resp_event("response.output_item.added", 2, output_index=1, item={"id": "x", "type": "message"}),
        _resp_event("response.completed", 3, response={"id": "r", "status": "completed", "output": []}),
    ])  # fmt: skip
    out = _same(ResponsesStream, rules, body)
    nums = [json.loads(e.data)["sequence_number"] for e in sse.Framer().feed(out) if e.data]
    assert nums == list(range(len(nums)))


def test_chat_drained_chunk_names_the_first_chunk() -> None:
    """A drained tail's chunk takes id, created and model from the stream's first chunk,
    which is parsed even when nothing in it can match."""
    rules = _rules({"Ö1é": "Zenith"})
    body = build_chat([("content", 0, "hello"), ("content", 0, " Ze")], usage=False).replace(b"[DONE]", b"")
    n = iter(range(100))
    body = b"".join(e.replace(b'"created":1', b'"created":%d' % next(n)) for e in sse.split(body))
    out = _same(ChatStream, rules, body)
    drained = [e for e in out.split(b"\n\n") if b"Ze" in e]
    assert len(drained) == 1 and b'"created":0' in drained[0]


def test_gemini_drained_chunk_names_the_first_chunk() -> None:
    rules = _rules({"Ö1é": "Zenith"})
    chunks = build_chunks([("text", 0, "hello"), ("text", 0, " Ze")])
    chunks.insert(0, {k: v for k, v in chunks[0].items() if k != "candidates"})  # usage only
    for i, ch in enumerate(chunks):
        ch["responseId"] = f"resp-{i}"
    out = _same(GeminiStream, rules, to_sse(chunks))
    drained = [e for e in out.split(b"\r\n\r\n") if b"Ze" in e]
    assert len(drained) == 1 and b"resp-0" in drained[0]


# -- members no window reads: their value-end triggers pass -------------------------------


def _parsed(stream_cls, rules: Rules, body: bytes, opaque: bool) -> tuple[bytes, int, int]:
    """(output, events parsed, events in) for body fed an event at a time, by the trigger
    path (the compiled per-read step, base/readpass.py, reads deltas without _events)."""
    s = stream_cls(rules.restorer({}))
    s._pass = None
    if not opaque:
        s.OPAQUE = frozenset()
    n = [0]
    events = s._events

    def counted(raws, out):
        n[0] += len(raws)
        return events(raws, out)

    s._events = counted
    out = b"".join(s.feed(e) for e in sse.split(body)) + s.flush()
    return out, n[0], s.events_in


def test_prose_with_ordinary_word_disguises_passes_unparsed() -> None:
    """Disguises that are ordinary words begin with the letters ids, fingerprints and
    padding end in: every Chat and Responses event held a value-end trigger in such a
    member, was parsed, and the scan turned itself off (_probe). They pass now."""
    words = ["Kestrel", "Jasper", "Fathom", "Zephyr", "Quill", "Grove"]
    rules = _rules({f"Ö{i}é": w for i, w in enumerate(words)})
    pieces = ["The", " cat", " sat", " on", " the", " mat."] * 30
    body = b"".join(
        chat_chunk([{"index": 0, "delta": {"content": p}, "logprobs": None, "finish_reason": None}],
                   system_fingerprint="fp_9e2f", obfuscation="x7" + "KJFZQG"[i % 6]).replace(b"chatcmpl-1", b"chatcmpl-aQ")
        for i, p in enumerate(pieces)
    ) + b"data: [DONE]\n\n"  # fmt: skip
    before = _parsed(ChatStream, rules, body, opaque=False)
    after = _parsed(ChatStream, rules, body, opaque=True)
    assert after[0] == before[0] == _both(ChatStream, rules, {}, [body])[1]
    assert before[1] == before[2] == len(pieces) + 1  # every event parsed
    assert after[1] <= 2  # the first chunk (always read) and [DONE]

    seq = iter(range(1000))
    events = [_resp_event("response.output_text.delta", next(seq), item_id="msg_" + "KJFZQG"[i % 6], output_index=0,
                          content_index=0, delta=p, logprobs=[], obfuscation="Q")
              for i, p in enumerate(pieces)]  # fmt: skip
    body = b"".join(events)
    before = _parsed(ResponsesStream, rules, body, opaque=False)
    after = _parsed(ResponsesStream, rules, body, opaque=True)
    assert after[0] == before[0] == _both(ResponsesStream, rules, {}, [body])[1]
    assert before[1] > len(pieces) // 2 and after[1] == 0
