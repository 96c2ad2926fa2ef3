"""How streams end (issue 15, case 13). A stream the addon ends itself (an event it
cannot read, one over the size limit, more channels than it keeps, a body it cannot
decompress) delivers no held text: a held tail may be part of a disguise or a
placeholder, and the error already says the text is incomplete. A stream the provider
cut delivers its held text, then the error.

The central property, for every stream class, random texts with disguises, random
delta splits and random byte fragmentation, and the failure at a random point: the text
a client reassembles is a prefix of the whole-text reversal of everything upstream
sent, every event parses, and the error is the last thing it gets.
"""

from __future__ import annotations

import json
import zlib

import pytest
from google_util import build_chunks, to_sse
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import legacy
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base.bodystream import BodyStream
from disguiselib.wire.decoding import Decoded, decoder_for
from disguiselib.wire.sse import Framer
from openai_util import build_chat, build_responses, chat_chunk
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)
# An event the addon cannot read (not UTF-8) that holds a disguise, so that no fast path
# lets it through unread (rules/triggers.py: a whole disguise is a trigger; an event with
# none passes as it came, readable or not).
BAD = b'{"note":"Zenith Labs \xff"}'


def events_of(body: bytes, array: bool = False) -> list[dict | str]:
    """Every event's data, parsed; `[DONE]` kept as the string. Each must parse."""
    if array:
        doc = json.loads(body)
        assert isinstance(doc, list), "the client's body is not one JSON array"
        return doc
    f = Framer()
    out: list[dict | str] = []
    for ev in f.feed(body) + f.flush():
        if ev.data is None:
            continue
        out.append("[DONE]" if ev.data == "[DONE]" else json.loads(ev.data))
    return out


def text_of(kind: str, evs: list) -> str:
    """The text a client reassembles from the events of one channel."""
    out = []
    for d in evs:
        if not isinstance(d, dict):
            continue
        if kind == "anthropic" and d.get("type") == "content_block_delta" and d["delta"]["type"] == "text_delta":
            out.append(d["delta"]["text"])
        elif kind == "chat":
            out += [c["delta"].get("content") or "" for c in d.get("choices", [])]
        elif kind == "legacy":
            out += [c.get("text") or "" for c in d.get("choices", [])]
        elif kind == "responses" and d.get("type") == "response.output_text.delta":
            out.append(d["delta"])
        elif kind in ("gemini", "array"):
            for c in d.get("candidates", []):
                out += [p.get("text", "") for p in (c.get("content") or {}).get("parts") or [] if not p.get("thought")]
    return "".join(out)


def is_error(kind: str, d: object) -> bool:
    if not isinstance(d, dict):
        return False
    if kind == "anthropic" or kind == "responses":
        return d.get("type") == "error"
    return "error" in d


def legacy_chunk(text: str, finish: str | None = None) -> bytes:
    doc = {"id": "c", "object": "text_completion", "created": 1, "model": "m",
           "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(doc)}\n\n".encode()  # ASCII escapes: a lone surrogate too


def build(kind: str, pieces: list[str], bad_after: int | None) -> tuple[type, bytes]:
    """A stream of kind with one text channel made of pieces; with bad_after, the
    unreadable event right after that many text events."""

    def insert(events: list[bytes], first_text: int, bad: bytes) -> list[bytes]:
        if bad_after is None:
            return events
        at = first_text + min(bad_after, len(pieces))
        return events[:at] + [bad] + events[at:]

    if kind == "anthropic":
        evs = split_events(build_stream([("text", pieces)]))
        return anthropic.AnthropicStream, b"".join(insert(evs, 2, b"event: ping\ndata: " + BAD + b"\n\n"))
    if kind == "chat":
        evs = split_events(build_chat([("content", 0, p) for p in pieces] + [("finish", 0, "stop")]))
        return openai_chat.ChatStream, b"".join(insert(evs, 0, b"data: " + BAD + b"\n\n"))
    if kind == "legacy":
        evs = [legacy_chunk(p) for p in pieces] + [legacy_chunk("", "stop"), b"data: [DONE]\n\n"]
        return legacy.CompletionsStream, b"".join(insert(evs, 0, b"data: " + BAD + b"\n\n"))
    if kind == "responses":
        evs = split_events(build_responses(pieces, ["{}"]))
        return openai_responses.ResponsesStream, b"".join(insert(evs, 3, b"event: x\ndata: " + BAD + b"\n\n"))
    chunks = build_chunks([("text", 0, p) for p in pieces] + [("finish", 0, "alone")])
    if kind == "gemini":
        evs = split_events(to_sse(chunks), b"\r\n\r\n")
        return gemini_stream.GeminiStream, b"".join(insert(evs, 0, b"data: " + BAD + b"\r\n\r\n"))
    elements = [json.dumps(c).encode() for c in chunks]
    elements = insert(elements, 0, BAD)
    return gemini_array.GeminiArrayStream, b"[" + b",\r\n".join(elements) + b"]"


def split_events(body: bytes, sep: bytes = b"\n\n") -> list[bytes]:
    return [e + sep for e in body.split(sep) if e]


KINDS = ["anthropic", "chat", "legacy", "responses", "gemini", "array"]


def run(cls, pieces: list[bytes]) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in pieces) + s.flush()


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60)
@given(text=texts, data=st.data())
@example(text="Hello Zenith Labs, write to [EMAIL_1]", data=None)
def test_a_stream_the_addon_ends_delivers_no_held_text(kind: str, text: str, data) -> None:
    if data is None:  # the pinned case: the failure right after "Hello Zen"
        pieces, bad_after = ["Hello Zen", "ith Labs, write to [EMAIL_1]"], 1
    else:
        pieces = data.draw(splits(text))
        bad_after = data.draw(st.integers(0, len(pieces)))
    cls, body = build(kind, pieces, bad_after)
    cuts = data.draw(byte_splits(body, 30)) if data is not None else [body]
    out = run(cls, cuts)
    evs = events_of(out, array=kind == "array")
    whole = R.text("".join(pieces))
    got = text_of(kind, evs)
    assert whole.startswith(got), f"{got!r} is not a prefix of {whole!r}: held text went out"
    errors = [i for i, d in enumerate(evs) if is_error(kind, d)]
    assert len(errors) == 1, evs
    after = evs[errors[0] + 1 :]
    assert after in ([], ["[DONE]"]), f"events after the error: {after}"
    if data is None:
        assert got == "Hello " and "could not be reversed" in json.dumps(evs[errors[0]])


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(text=texts, data=st.data())
def test_a_stream_the_provider_cut_delivers_its_held_text(kind: str, text: str, data) -> None:
    """The contrast: the same stream cut after some text events (no terminal event) gets
    everything it sent, held tail included, then the error."""
    pieces = data.draw(splits(text))
    keep = data.draw(st.integers(0, len(pieces)))
    cls, body = build(kind, pieces, None)
    if kind == "array":
        cut = body[: body.index(b"{")]  # the `[` and as many whole elements as kept
        for el in body[body.index(b"{") :].split(b",\r\n")[:keep]:
            cut += el + b",\r\n"
    else:
        first = {"anthropic": 2, "responses": 3}.get(kind, 0)
        sep = b"\r\n\r\n" if kind == "gemini" else b"\n\n"
        cut = b"".join(split_events(body, sep)[: first + keep])
    out = run(cls, data.draw(byte_splits(cut, 20)))
    evs = events_of(out, array=kind == "array")
    assert text_of(kind, evs) == R.text("".join(pieces[:keep]))
    assert is_error(kind, [d for d in evs if d != "[DONE]"][-1])


# -- each way the addon ends a stream itself ----------------------------------------------------


def test_too_many_chat_channels_delivers_no_fragment() -> None:
    """Case 13: tool calls whose arguments end in the start of a disguise
    (`"owner": "Zenith`), more of them than MAX_CHANNELS."""
    s = openai_chat.ChatStream(R)
    calls = [{"index": j, "id": f"call_{j}", "type": "function", "function": {"name": "f", "arguments": '{"owner": "Zenith'}}
             for j in range(300)]  # fmt: skip
    out = s.feed(chat_chunk([{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]))
    assert b"Zenith" not in out and b"Zen" not in out
    evs = events_of(out)
    assert evs[-1] == "[DONE]" and "more than 256 channels" in evs[-2]["error"]["message"]
    assert s.withheld == 256 * len("Zenith") and s.feed(b"data: [DONE]\n\n") == b"" and s.flush() == b""


def test_too_many_responses_channels_delivers_no_fragment() -> None:
    s = openai_responses.ResponsesStream(R)
    body = b"".join(
        b"event: response.output_text.delta\ndata: "
        + json.dumps({"type": "response.output_text.delta", "sequence_number": i, "item_id": f"msg_{i}",
                      "output_index": i, "content_index": 0, "delta": "owner Zenith", "logprobs": []}).encode()
        + b"\n\n"
        for i in range(300)
    )  # fmt: skip
    out = run(openai_responses.ResponsesStream, [body])
    del s
    evs = events_of(out)
    assert "".join(e["delta"] for e in evs if e["type"] == "response.output_text.delta") == "owner " * 256
    assert evs[-1]["type"] == "error" and "more than 256 channels" in evs[-1]["message"]
    assert [e["sequence_number"] for e in evs] == list(range(len(evs)))


@pytest.mark.parametrize("cls", [gemini_stream.GeminiStream, gemini_array.GeminiArrayStream])
def test_too_many_gemini_candidates_delivers_no_fragment(cls) -> None:
    from google_util import chunk, to_array

    chunks = [chunk([{"content": {"parts": [{"text": "owner Zenith"}], "role": "model"}, "index": k}])
              for k in range(300)]  # fmt: skip
    body = to_array(chunks) if cls is gemini_array.GeminiArrayStream else to_sse(chunks)
    out = run(cls, [body])
    evs = events_of(out, array=cls is gemini_array.GeminiArrayStream)
    assert text_of("gemini", evs) == "owner " * 256
    assert "more than 256 candidates" in evs[-1]["error"]["message"]


def test_event_over_the_size_limit_delivers_no_held_text() -> None:
    s = anthropic.AnthropicStream(R)
    s.framer.max_event_bytes = 400
    body = build_stream([("text", ["Hello Zen"])])
    cut = body.index(b"event: content_block_stop")
    out = s.feed(body[:cut]) + s.feed(b"event: ping\ndata: " + b"x" * 500) + s.flush()
    evs = events_of(out)
    assert text_of("anthropic", evs) == "Hello "
    assert "exceeds 400 bytes" in evs[-1]["error"]["message"]


@pytest.mark.parametrize("wrap", [False, True], ids=["sse", "body-stream"])
def test_decompression_failure_delivers_no_held_text(wrap: bool) -> None:
    body = build_stream([("text", ["Hello Zen", "ith Labs"])])
    cut = body.index(b"event: content_block_delta", body.index(b"Hello Zen"))
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = z.compress(body[:cut]) + z.flush(zlib.Z_SYNC_FLUSH)  # decodes to exactly body[:cut]
    inner = anthropic.AnthropicStream(R)
    rev = BodyStream(inner, lambda b: b, lambda m: m.encode(), "text/event-stream") if wrap else inner
    gz = decoder_for("gzip")
    assert gz is not None
    s = Decoded(rev, gz)  # as pipeline.reverser_for wraps a reverser for a Content-Encoding
    out = s.feed(first)
    assert b"Hello " in out and b"Zen" not in out  # "Zen" is held: it may grow into "Zenith Labs"
    out += s.feed(b"\xff\x00 not deflate data" * 4) + s.flush()
    evs = events_of(out)
    assert text_of("anthropic", evs) == "Hello "
    assert evs[-1]["type"] == "error" and "could not be reversed" in evs[-1]["error"]["message"]


def test_non_utf8_event_ends_the_stream_without_its_held_text() -> None:
    body = build_stream([("text", ["see nova"])])
    cut = body.index(b"event: content_block_stop")
    bad = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\xff"}}\n\n'
    out = run(anthropic.AnthropicStream, [body[:cut] + bad + body[cut:]])
    evs = events_of(out)
    # "nova" may be the start of "nova.cloud": held, and dropped with the stream
    assert text_of("anthropic", evs) == "see "
    assert evs[-1]["type"] == "error" and "UTF-8" in evs[-1]["error"]["message"]
