"""`on_raw`: a delta in its API's usual shape read from its bytes (no parse_event, no
decoding of the whole event, no re-encoding) is exactly the same event parsed
(`on_event`): output, windows, counters, errors, Responses' renumbering; near misses
(members moved, dropped, added, whitespace of every kind at every place, escapes,
names spelled with escapes, bytes that are not UTF-8) are declined and parsed. Split
from test_fastpath.py."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.openai.chat import ChatStream
from disguiselib.apis.openai.responses import ResponsesStream
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from disguiselib.wire import sse
from openai_util import _enc, _resp_event, build_chat, chat_chunk


def _rules(literals: dict[str, str], names: tuple[str, ...] = ()) -> Rules:
    return Rules(mappings.from_dict({"literals": literals, "patterns": [{"name": n, "regex": "Ö@[a-z]+"} for n in names]}))


# -- on_raw: an event read from its bytes, against the same event parsed --------------

# The one rule set of the on_raw properties, built once, not per example (1,800 builds): the
# streams only read it (its trigger automaton and hold-back patterns, cached on first use, as
# a proxy's flows share one); nothing here masks, the one thing that writes its memory.
_RULES = _rules({"Ö0é": "nova", "Ö1é": "va n"}, ("K",))

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
    held = {k: (w.held, w.mode) if w is not None else None for k, w in s.windows.items()}
    own = [getattr(s, a, None) for a in ("parts", "remembered", "last", "last_seq", "offset", "where")]
    return out, held, s.events_in, s.events_changed, s.events_held, s.restorer.restored, own


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_anthropic_on_raw_is_on_event(data) -> None:
    """Every event read from its bytes (on_raw) gives what parsing it gives: the same
    bytes out, the same windows, counters and errors, after any events before it."""
    rules = _RULES
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
    rules = _RULES
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
