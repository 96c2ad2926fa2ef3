"""A disguise spelled with `\\uXXXX` escapes inside tool-argument JSON text is restored
(found black-box: Go's encoding/json, e.g. Ollama's OpenAI-compatible API, writes `&<>`
as `\\u0026\\u003c\\u003e`; ensure_ascii every non-ASCII character; PHP `/` as `\\/`).
The arguments `{"thread\\u005fid":"Tom\\u0026Jerry"}` are the client's
`{"thread_id":"Tom&Jerry"}`: both disguises reach it unless they are matched in decoded
space (field notes: "restore in decoded space").

The property, for the JSON-text window and for every API's argument channel (Anthropic
`partial_json`, Chat `arguments` streamed and whole, Responses deltas, `.done`,
`output_item.done` and `response.completed`): arguments JSON whose string characters are
written as random `\\u` escapes (upper or lower hex, a surrogate pair past U+FFFF), cut
into random deltas and reads, reach the client as the whole-text restoration, which
parses to the restoration of the decoded strings; everything else as it came; and a
window holds no more than an escape cut short and a disguise's proper prefix.
"""

from __future__ import annotations

import json
import random

from hypothesis import example, given
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base.holdback import Window
from disguiselib.base.restore import restore_body
from disguiselib.wire.text import json_text_decoded
from openai_util import build_chat, build_responses, read_chat, read_responses
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)

_keys = st.sampled_from(["thread_id", "path", "crm_lookup", "a", "WINPATH", "nova", "Zenith Labs"])
_vals = st.one_of(texts, st.sampled_from(["Zenith Labs", "nova.cloud", "[EMAIL_1]", "x&y <b>"]), st.integers(), st.none())
docs = st.dictionaries(_keys, st.one_of(_vals, st.lists(_vals, max_size=3)), min_size=1, max_size=4)


def uescape(text: str, rnd: random.Random, p: float) -> str:
    """JSON text with each character of its strings written as a \\u escape with
    probability p (hex in either case; a surrogate pair past U+FFFF), and the \\u escapes
    it had in either case. Escapes it had stay escapes: the decoded text is the same."""
    out = []
    in_str = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if not in_str:
            in_str = c == '"'
            out.append(c)
            i += 1
        elif c == '"':
            in_str = False
            out.append(c)
            i += 1
        elif c == "\\":
            w = 6 if text[i + 1] == "u" else 2
            esc = text[i : i + w]
            out.append(esc.lower() if rnd.random() < 0.5 else esc[:2] + esc[2:].upper())
            i += w
        else:
            if rnd.random() < p:
                cp = ord(c)
                f = rnd.choice(["\\u%04x", "\\u%04X"])
                if cp > 0xFFFF:
                    cp -= 0x10000
                    out.append(f % (0xD800 | cp >> 10) + f % (0xDC00 | cp & 0x3FF))
                else:
                    out.append(f % cp)
            else:
                out.append(c)
            i += 1
    return "".join(out)


@st.composite
def escaped_args(draw) -> tuple[dict, str]:
    """(doc, its JSON text with random \\u escapes)."""
    doc = draw(docs)
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    return doc, uescape(text, draw(st.randoms(use_true_random=False)), draw(st.sampled_from([0.1, 0.5, 1.0])))


def check_args(got: str, doc: dict, text: str) -> None:
    """The client's arguments: the whole-text restoration, the decoded strings restored."""
    assert got == R.json_text(text)
    assert json.loads(got) == restore_value(doc)


# -- the window ----------------------------------------------------------------------------


def fed(pieces: list[str]) -> str:
    """pieces through a JSON window; after each, what it holds is at most an escape cut
    short after a disguise's proper prefix, decoded (held whole in VALUE mode too)."""
    w = Window(R, Window.JSON)
    out = []
    for p in pieces:
        out.append(w.feed(p))
        if w.held:
            dec, _, _, end = json_text_decoded(w.held, 0, False)
            assert R.run(dec, Window.VALUE, False, 0)[1] == 0, w.held  # a prefix of a match, whole
            assert end == len(w.held) or w.held.startswith("\\", end) and len(w.held) - end < 12, w.held
    return "".join(out) + w.flush()


SHORT = '{"thread\\u005Fid":"Z\\u0065nith\\u0020Labs \\ud83d\\uDE00 nova\\u002ecloud","\\u0061":"WIN\\u0050ATH\\\\u0041"}'


def test_short_case_every_cut_and_every_pair_of_cuts() -> None:
    doc = json.loads(SHORT)
    expected = R.json_text(SHORT)
    assert json.loads(expected) == {"session_id": "Acme Corp 😀 nova-internal.cloud",
                                    "a": 'C:\\Users\\a "b"\\u0041'}
    check_args(expected, doc, SHORT)
    n = len(SHORT)
    for i in range(n + 1):
        assert fed([SHORT[:i], SHORT[i:]]) == expected, i
        for j in range(i, n + 1):
            assert fed([SHORT[:i], SHORT[i:j], SHORT[j:]]) == expected, (i, j)
    assert fed(list(SHORT)) == expected


def test_the_reported_case_and_its_controls() -> None:
    """Black-box finding's shape: a key and a value, each with one character escaped."""
    for text in ('{"thread\\u005fid":"Zenith\\u0020Labs"}', '{"thread_id":"Zenith Labs"}',
                 '{"thread\\/id":"Zenith\\/Labs"}', '{"a":"\\\\u005f thread\\\\u005fid"}'):
        doc = json.loads(text)
        for i in range(len(text) + 1):
            assert fed([text[:i], text[i:]]) == R.json_text(text)
        check_args(R.json_text(text), doc, text)
    assert json.loads(R.json_text('{"thread\\u005fid":"Zenith\\u0020Labs"}')) == {"session_id": "Acme Corp"}
    # an escaped backslash before `u`: no escape, nothing decoded, nothing restored
    assert R.json_text('{"a":"\\\\u005f thread\\\\u005fid"}') == '{"a":"\\\\u005f thread\\\\u005fid"}'


@given(escaped_args(), st.data())
@example(({"thread_id": "Zenith Labs"}, '{"thread\\u005fid":"Zenith\\u0020Labs"}'), None)
def test_window_restores_escaped_disguises_like_the_whole(case, data) -> None:
    doc, text = case
    pieces = data.draw(splits(text, max_cuts=12)) if data is not None else list(text)
    check_args(fed(pieces), doc, text)


@given(docs, st.booleans(), st.booleans())
def test_without_a_backslash_both_paths_agree(doc, ascii, final) -> None:
    """Arguments without a backslash keep the plain matcher (same bytes, same speed); the
    decoded path, given the same text, would do exactly what it does."""
    text = json.dumps(doc, ensure_ascii=ascii).replace("\\", "")
    text = text[: len(text) // 2] if not final else text
    assert R._edits(text, Window.JSON, final, 0, False) == R._decoded_edits(text, final, 0, False)


# -- the APIs' argument channels --------------------------------------------------------------


def _run(cls, body: bytes, reads: list[bytes]) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(r) for r in reads) + s.flush()


@given(escaped_args(), st.data())
def test_anthropic_partial_json(case, data) -> None:
    doc, text = case
    body = build_stream([("text", ["hi"]), ("tool", data.draw(splits(text, 8)))], name="lookup")
    out = _run(anthropic.AnthropicStream, body, data.draw(byte_splits(body, 30)))
    blocks, datas = read_stream(out)
    check_args(blocks[1]["json"], doc, text)
    _, up = read_stream(body)

    def others(ds: list[dict]) -> list[dict]:
        return [d for d in ds if not (d["type"] == "content_block_delta" and d["index"] == 1)]

    assert others(datas) == others(up)


@given(escaped_args(), st.data())
def test_chat_stream_arguments(case, data) -> None:
    doc, text = case
    pieces = data.draw(splits(text, 8))
    steps = [("content", 0, "hi")] + [("tool", 0, 0, "lookup" if i == 0 else None, p) for i, p in enumerate(pieces)]
    body = build_chat([*steps, ("finish", 0, "tool_calls")])
    out = _run(openai_chat.ChatStream, body, data.draw(byte_splits(body, 30)))
    content, tools, chunks = read_chat(out)
    check_args(tools[(0, 0)]["arguments"], doc, text)
    assert content == {0: "hi"} and tools[(0, 0)]["name"] == "lookup"
    assert chunks[-1] == read_chat(body)[2][-1]  # the usage chunk


@given(escaped_args())
def test_chat_body_arguments(case) -> None:
    doc, text = case
    msg = {"role": "assistant", "content": None,
           "tool_calls": [{"id": "t", "type": "function", "function": {"name": "x", "arguments": text}}]}
    body = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt",
                       "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}]}).encode()
    out = json.loads(restore_body(body, openai_chat.CHAT_RESPONSE, R))
    fn = out["choices"][0]["message"]["tool_calls"][0]["function"]
    check_args(fn["arguments"], doc, text)
    fn["arguments"] = text
    assert out == json.loads(body)


@given(escaped_args(), st.data())
def test_responses_arguments(case, data) -> None:
    doc, text = case
    body = build_responses(["hi"], data.draw(splits(text, 8)), name="lookup")
    out = _run(openai_responses.ResponsesStream, body, data.draw(byte_splits(body, 30)))
    got = read_responses(out)
    check_args(got["args"], doc, text)
    bt = got["by_type"]
    check_args(bt["response.function_call_arguments.done"][0]["arguments"], doc, text)
    check_args(bt["response.output_item.done"][1]["item"]["arguments"], doc, text)
    check_args(bt["response.completed"][0]["response"]["output"][1]["arguments"], doc, text)
    assert got["text"] == "hi"

    def others(events: list[dict]) -> list[dict]:
        args = ("response.function_call_arguments.delta", "response.function_call_arguments.done")
        out = [{k: v for k, v in e.items() if k != "sequence_number"} for e in events if e["type"] not in args]
        for e in out:  # the arguments said whole: checked above; the instructions restored
            (e.get("response") or {}).pop("instructions", None)
            for item in [e.get("item")] + (e.get("response") or {}).get("output", []):
                if item and item.get("type") == "function_call":
                    item["arguments"] = ""
        return out

    assert others(got["events"]) == others(read_responses(body)["events"])


def test_an_escape_that_ends_the_text_is_whole_at_the_end() -> None:
    """A `\\u` escape with its four hex digits is whole where the text ends with it: the
    disguise it ends is restored, in a window's last piece and read whole, and fed to
    the window it is not held back as if cut short."""
    text = '{"k": "thread_i\\u0064'  # `thread_id`, its last character escaped, at the very end
    w = Window(R, Window.JSON)
    assert w.feed(text) + w.flush() == '{"k": "session_id'
    assert json_text_decoded(text, 0, False)[3] == len(text)  # nothing cut short to hold
