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

from google_util import build_chunks, to_array, to_sse
from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.core import mappings, sse
from disguiselib.core.rules import Rules
from disguiselib.providers import stream
from disguiselib.providers.anthropic import AnthropicStream
from disguiselib.providers.gemini_array import GeminiArrayStream
from disguiselib.providers.gemini_stream import GeminiStream
from disguiselib.providers.legacy import CompletionsStream
from disguiselib.providers.openai_chat import ChatStream
from disguiselib.providers.openai_responses import ResponsesStream
from openai_util import _enc, _resp_event, build_chat, build_responses, chat_chunk

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


# -- on_raw: an event read from its bytes, against the same event parsed --------------

_WS = st.one_of(st.just(""), st.just(""), st.just(""), st.sampled_from([" ", "\t", "\x0b", "\x0c", "\x1c", "\xa0", "\n", "\r"]))
_RAW_TEXT = st.lists(
    st.sampled_from(["nova", "no", "va", " ", "a", "\\n", "\\u00e9", "\\ud83d", "\\q", "\\", '\\"', "\t", "é", "😀",
                     "\n", "\r", '"', "[K_", "[K_1]", "\x00X", "\\u0061"]),  # \x00X: a byte that is not UTF-8
    max_size=6,
).map("".join)  # fmt: skip


@st.composite
def _raw_deltas(draw) -> bytes:
    """A content_block_delta in the API's shape, or nearly: odd whitespace (Unicode,
    line breaks), non-ASCII digits, other delta types, escapes JSON rejects, control
    characters, other line ends, a missing event line, bytes that are not UTF-8."""
    odd = draw(st.integers(0, 3))  # 0: the API's own shape but for the text
    slot = draw(st.integers(-1, 23))  # the one place with odd whitespace (-1: each may have some)
    slots = iter(range(24))

    def w() -> str:
        i = next(slots)
        return draw(_WS) if odd and slot in (i, -1) else ""

    idx = draw(st.sampled_from(["0", "0", "1", "00", "٣"]))
    dtype = draw(st.sampled_from(["text_delta", "text_delta", "input_json_delta", "thinking_delta", "citations_delta", "tëxt"]))
    field = draw(st.sampled_from(["text", "partial_json", "thinking", "signature"]))
    body = (f'{{{w()}"type"{w()}:{w()}"content_block_delta"{w()},{w()}"index"{w()}:{w()}{idx}{w()},{w()}"delta"{w()}:'
            f'{w()}{{{w()}"type"{w()}:{w()}"{dtype}"{w()},{w()}"{field}"{w()}:{w()}"{draw(_RAW_TEXT)}"{w()}}}{w()}}}{w()}')  # fmt: skip
    if not odd:
        return f"event: content_block_delta\ndata: {body}\n\n".encode("utf-8", "surrogatepass").replace(b"\x00X", b"\xff")
    head = draw(st.sampled_from(["event: content_block_delta\n"] * 3 + ["event: x\n", "", "event: a\r\n", ": c\n"]))
    end = draw(st.sampled_from(["\n\n"] * 3 + ["\r\n\r\n", "\n"]))
    raw = head + draw(st.sampled_from(["data: ", "data: ", "data:"])) + body + end
    return raw.encode("utf-8", "surrogatepass").replace(b"\x00X", b"\xff")


def _outcome(s, raws: list[bytes]):
    out: list[bytes] = []
    try:
        for raw in raws:
            s._events([raw], out)
    except Exception as e:  # noqa: BLE001 - the same error either way
        out.append(repr(e).encode())
    held = {k: (w.held, w.mode, w.escaped) if w is not None else None for k, w in s.windows.items()}
    own = [getattr(s, a, None) for a in ("parts", "remembered", "last", "last_seq", "offset", "where")]
    return out, held, s.events_in, s.events_changed, s.events_held, s.r.restored, own


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_anthropic_on_raw_is_on_event(data) -> None:
    """Every event read from its bytes (on_raw) gives what parsing it gives: the same
    bytes out, the same windows, counters and errors, after any events before it."""
    rules = Rules(mappings.from_dict({"literals": {"Ö0é": "nova", "Ö1é": "va n"}, "patterns": [{"name": "K", "regex": "Ö@[a-z]+"}]}))
    start = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
             b'"content_block":{"type":"text","text":""}}\n\n')  # fmt: skip
    raws = [start] if data.draw(st.booleans()) else []
    raws += data.draw(st.lists(_raw_deltas(), min_size=1, max_size=5))
    placeholders = {"[K_1]": "k@x.io"}
    fast = AnthropicStream(rules.restorer(placeholders))
    slow = AnthropicStream(rules.restorer(placeholders))
    slow.fast = False
    assert _outcome(fast, raws) == _outcome(slow, raws)


def _same_outcome(cls, raws: list[bytes]) -> None:
    rules = Rules(mappings.from_dict({"literals": {"Ö0é": "nova", "Ö1é": "va n"}, "patterns": [{"name": "K", "regex": "Ö@[a-z]+"}]}))
    fast, slow = cls(rules.restorer({"[K_1]": "k@x.io"})), cls(rules.restorer({"[K_1]": "k@x.io"}))
    slow.fast = False
    assert _outcome(fast, raws) == _outcome(slow, raws)


# Chat and Responses deltas: the API's own event (its members in one of the orders it
# sends), or a near miss of it: members moved, dropped or added, and a few random edits
# at random places (whitespace of every kind, line breaks, quotes, backslashes, digits,
# an escaped name, non-ASCII, a byte that is not UTF-8).
_EDITS = [b" ", b"\t", b"\n", b"\r", b"\x0b", b"\xc2\xa0", b'"', b"\\", b",", b"0", b"\xd9\xa3", b"\xff", b"\\u0065",
          b"}", b"]", b'"x":[1],', b""]  # fmt: skip


@st.composite
def _near(draw, head: str, members: list[str]) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        members = draw(st.permutations(members))
    if draw(st.integers(0, 5)) == 0:
        members = [*members, draw(st.sampled_from(['"x":{}', '"usage":null', members[0], members[-1]]))]
    if draw(st.integers(0, 3)) == 0:
        gone = draw(st.sampled_from(members))
        members = [m for m in members if m != gone]
    data = "{" + ",".join(members) + "}"
    for slot in ("%I", "%J", "%S"):
        data = data.replace(slot, draw(st.sampled_from(["0", "0", "1", "12", "00", "٣"])))
    raw = (head + "data: " + data.replace("%T", draw(_RAW_TEXT)) + "\n\n").encode("utf-8", "surrogatepass")
    raw = raw.replace(b"\x00X", b"\xff")
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        i = draw(st.integers(0, len(raw)))
        raw = raw[:i] + draw(st.sampled_from(_EDITS)) + raw[i + draw(st.integers(0, 2)) :]
    return raw


_CHAT_ENV = ['"id":"chatcmpl-1"', '"object":"chat.completion.chunk"', '"created":1', '"model":"gpt"',
             '"system_fingerprint":"fp_d"']  # fmt: skip
_CHOICE = '{"index":%I,"delta":{"content":"%T"},"logprobs":null,"finish_reason":null}'
_CHOICES = ['"choices":[' + _CHOICE + "]", '"choices":[' + _CHOICE.replace("%T", "no") + "," + _CHOICE.replace("%I", "1") + "]",
            '"choices":[{"index":%I,"delta":{"tool_calls":[{"index":%J,"function":{"arguments":"%T"}}]},'
            '"logprobs":null,"finish_reason":null}]', '"choices":[' + _CHOICE.replace("content", "refusal") + "]",
            '"choices":[' + _CHOICE.replace(':null}', ':"stop"}') + "]"]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_chat_on_raw_is_on_event(data) -> None:
    """As test_anthropic_on_raw_is_on_event, for Chat chunks: one choice or several,
    content, tool arguments, refusal, a finishing choice, envelopes of both orders."""
    first = chat_chunk([{"index": 0, "delta": {"role": "assistant", "content": "x no"}, "logprobs": None, "finish_reason": None}])
    parts = chat_chunk([{"index": 0, "delta": {"content": [{"type": "text", "text": "a"}]}, "finish_reason": None}])
    raws = data.draw(st.sampled_from([[], [first], [first, parts]]))  # parts: Mistral's content

    def chunk(choices: str) -> st.SearchStrategy:
        at = data.draw(st.integers(0, 5))
        return _near("", [*_CHAT_ENV[:at], choices, *_CHAT_ENV[at:], '"usage":null', '"obfuscation":"Ab1"'][: 7 + at % 2])

    raws += data.draw(st.lists(st.sampled_from(_CHOICES).flatmap(chunk), min_size=1, max_size=5))
    _same_outcome(ChatStream, raws)


_RESP = {"response.output_text.delta": ['"sequence_number":%S', '"item_id":"msg_1"', '"output_index":0',
                                        '"content_index":%I', '"delta":"%T"', '"logprobs":[]', '"obfuscation":"x"'],
         "response.function_call_arguments.delta": ['"sequence_number":%S', '"item_id":"fc_1"', '"output_index":%I',
                                                    '"delta":"%T"', '"obfuscation":"x"']}  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_responses_on_raw_is_on_event(data) -> None:
    """As test_anthropic_on_raw_is_on_event, for Responses deltas (text, refusal,
    arguments; both member orders), also while later events are renumbered (a held
    tail went out in an event of its own before them) and while text is held."""
    held = _resp_event("response.output_text.delta", 0, item_id="msg_1", output_index=0, content_index=0, delta="x no")
    done = _resp_event("response.output_text.done", 1, item_id="msg_1", output_index=0, content_index=0, text="x no")
    raws = data.draw(st.sampled_from([[], [held], [held, done]]))

    def event(t: str) -> st.SearchStrategy:
        members = _RESP[t] if data.draw(st.booleans()) else sorted(_RESP[t])  # the two orders the API sends
        t = t.replace("output_text", "refusal") if data.draw(st.integers(0, 5)) == 0 else t
        return _near(data.draw(st.sampled_from([f"event: {t}\n", ""])), [f'"type":"{t}"', *members])

    raws += data.draw(st.lists(st.sampled_from(list(_RESP)).flatmap(event), min_size=1, max_size=5))
    _same_outcome(ResponsesStream, raws)


def test_on_raw_whitespace_everywhere() -> None:
    """Whitespace of every kind (line breaks too) or an escaped name inserted at every
    place of each API's delta event (its text restored and held in part), one place at a
    time, and each of its members dropped in turn: on_raw declines or gives what parsing
    gives. (Random near misses rarely put a line break exactly where a regex allows
    space, or drop the one member that matters.)"""
    block = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
             b'"content_block":{"type":"text","text":""}}\n\n')  # fmt: skip
    cases = [
        (AnthropicStream, [block], build_stream([("text", ["a nova no"])]).split(b"\n\n")[2] + b"\n\n"),
        (ChatStream, [build_chat([("content", 0, "x")])], build_chat([("content", 0, "a nova no")]).split(b"\n\n")[0] + b"\n\n"),
        (ResponsesStream, [], _resp_event("response.output_text.delta", 3, item_id="m", output_index=0, content_index=0,
                                          delta="a nova no", logprobs=[])),
        (ResponsesStream, [], _resp_event("response.function_call_arguments.delta", 3, item_id="f", output_index=1,
                                          delta="a nova no")),
    ]  # fmt: skip
    held = _resp_event("response.output_text.delta", 0, item_id="m", output_index=0, content_index=0, delta="x no")
    done = _resp_event("response.output_text.done", 1, item_id="m", output_index=0, content_index=0, text="x no")
    cases += [(ResponsesStream, [held, done], ev) for _, _, ev in cases[2:]]  # renumbered: a tail went out
    for cls, before, ev in cases:
        start = ev.index(b"data: ") + 6
        doc = json.loads(ev[start:])
        for k in doc:
            _same_outcome(cls, [*before, ev[:start] + json.dumps({x: v for x, v in doc.items() if x != k}).encode() + b"\n\n"])
            _same_outcome(cls, [*before, ev[:start] + _enc({x: v for x, v in doc.items() if x != k}).encode() + b"\n\n"])
        for i in range(start, len(ev) - 1):
            for ws in (b" ", b"\t", b"\n", b"\r", b"\x0c", b"\\u0061"):  # and an escaped name
                _same_outcome(cls, [*before, ev[:i] + ws + ev[i:]])


def test_on_raw_reads_the_recorded_deltas(fixtures) -> None:
    """Every content, arguments and output_text delta of the recorded streams (after a
    Chat stream's first chunk) is read by on_raw, not parsed; the output is unchanged."""
    recorded = {p.name: sse.split(p.read_bytes()) for p in sorted((fixtures / "openai").glob("*_stream_*.sse"))}
    # one envelope, then another (the bench's tool-call chunks put `usage` first)
    recorded["chat, two envelopes"] = recorded["chat_stream_text_usage.sse"] + recorded["chat_stream_parallel_tool_calls.sse"]
    for name, raws in recorded.items():
        cls = ChatStream if name.startswith("chat") else ResponsesStream
        s = cls(_rules({"Ö1é": "Zenith"}).restorer({}))
        s._events(raws[:1], [])
        read = [raw for raw in raws[1:] if s.on_raw(raw) is not None]
        marks = (b'"content":"', b'"arguments":"') if cls is ChatStream else (b'output_text.delta"', b'arguments.delta"')
        deltas = [r for r in raws[1:] if any(m in r for m in marks) and b'"name":"' not in r and b'"role":"' not in r]
        assert read == deltas, name
