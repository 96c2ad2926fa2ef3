"""InvokeModelWithResponseStream for the non-Anthropic families (sans I/O): each
family's documented chunks (tests/fixtures/real/bedrock/models) carrying a text cut at
random points across chunks and its frames cut at random bytes. The client's text is
the whole text restored, every frame passes botocore's decoder, the stream ends
without an error, and no text follows the terminal chunk."""

from __future__ import annotations

import base64
import json

from botocore.eventstream import EventStreamBuffer
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aws_util import TEXT_AT, chunk_frame, chunks_with, family_fixture, get
from disguiselib.apis.bedrock import chunks as bedrock_chunks
from disguiselib.apis.bedrock import models as bedrock_models
from disguiselib.apis.bedrock.chunks import ChunkStream, is_last
from disguiselib.wire import eventstream
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits

FAMILY = {f.name: f for f in bedrock_models.FAMILIES}
TEXT = 'Dear Zenith Labs, write to [EMAIL_1] or [EMAIL_2]; C:\\x "q" done'


def body_of(chunks: list[dict]) -> bytes:
    return b"".join(chunk_frame(c) for c in chunks)


def run(name: str, body: bytes, cuts: list[bytes] | None = None) -> tuple[bytes, ChunkStream]:
    s = bedrock_chunks.stream(FAMILY[family_fixture(name)["family"]].chunk)(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(p) for p in (cuts or [body])) + s.flush()
    return out, s


def client_chunks(body: bytes) -> list[dict]:
    buf = EventStreamBuffer()
    buf.add_data(body)
    out = []
    for m in buf:
        assert m.headers[":message-type"] == "event", m.payload
        out.append(json.loads(base64.b64decode(json.loads(m.payload)["bytes"])))
    assert not buf._data
    return out


def client_text(name: str, chunks: list[dict]) -> str:
    model = FAMILY[family_fixture(name)["family"]].chunk
    at = TEXT_AT[name]
    text, ended = "", False
    for c in chunks:
        t = get(c, at)
        if isinstance(t, str):
            assert not ended or not t, "text after the terminal chunk"
            text += t
        ended = ended or is_last(model, c)
    assert ended
    return text


NAMES = sorted(TEXT_AT)


def test_every_streaming_family_is_exercised() -> None:
    assert {family_fixture(n)["family"] for n in NAMES} == {f.name for f in bedrock_models.FAMILIES if f.chunk and f.chunk.channels} - {"ai21.j2"}


def test_the_documented_streams_pass_unchanged_and_end_cleanly() -> None:
    for name in NAMES:
        body = body_of(family_fixture(name)["stream"])
        out, s = run(name, body)
        # nothing to restore: the same text (a window may hold a piece back a chunk)
        assert client_text(name, client_chunks(out)) == client_text(name, client_chunks(body)), name
        assert s.state.name == "DONE", name


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NAMES), st.data())
@example("meta.llama", None)
def test_text_cut_anywhere_across_chunks_is_restored(name: str, data) -> None:
    if data is None:
        pieces = ["Dear Zen", "ith Labs, write to [EMA", "IL_1] or [EMAIL_2]; C:\\x \"q\" done"]
        cuts = None
    else:
        pieces = data.draw(splits(TEXT))
    body = body_of(chunks_with(name, pieces))
    if data is not None:
        cuts = data.draw(byte_splits(body))
    out, s = run(name, body, cuts)
    assert s.state.name == "DONE"
    assert client_text(name, client_chunks(out)) == restore_value(TEXT)


def test_every_split_point_of_a_disguise() -> None:
    """Every single cut of the text, every family."""
    for name in NAMES:
        for i in range(len(TEXT) + 1):
            out, s = run(name, body_of(chunks_with(name, [TEXT[:i], TEXT[i:]])))
            assert client_text(name, client_chunks(out)) == restore_value(TEXT), (name, i)


def test_a_stream_cut_before_its_terminal_chunk_ends_in_an_exception() -> None:
    for name in NAMES:
        chunks = chunks_with(name, ["Dear Zenith La", ""])
        f = FAMILY[family_fixture(name)["family"]].chunk
        term = next(i for i, c in enumerate(chunks) if is_last(f, c))
        out, s = run(name, body_of(chunks[:term]))
        buf = EventStreamBuffer()
        buf.add_data(out)
        msgs = list(buf)
        assert msgs[-1].headers[":message-type"] == "exception", name
        assert "ended before" in json.loads(msgs[-1].payload)["message"]
        # the held tail went out before the error
        texts = [get(json.loads(base64.b64decode(json.loads(m.payload)["bytes"])), TEXT_AT[name])
                 for m in msgs[:-1]]  # fmt: skip
        assert "Dear Zenith La" in "".join(t for t in texts if isinstance(t, str)), name


def test_a_tail_held_at_the_end_goes_out_before_the_terminal_chunk() -> None:
    """Text that could still grow into a disguise when the last chunk comes ("Zenith La")
    goes out in or before that chunk, never after it (a client stops reading there)."""
    for name in NAMES:
        for pieces in (["Ask Zenith La", ""], ["Ask Zen", "ith La"], ["Ask [EMAIL_", ""]):
            out, s = run(name, body_of(chunks_with(name, pieces)))
            assert s.state.name == "DONE"
            assert client_text(name, client_chunks(out)) == "".join(pieces), (name, pieces)


def _nova_tool_chunks(pieces: list[str]) -> list[dict]:
    """Nova's tool use as its Invoke stream sends it (a text block, then a toolUse block
    whose input arrives in pieces), keyed by contentBlockIndex."""
    out = [{"messageStart": {"role": "assistant"}},
           {"contentBlockDelta": {"delta": {"text": "Zenith La"}, "contentBlockIndex": 0}},
           {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "crm_lookup"}},
                                  "contentBlockIndex": 1}}]  # fmt: skip
    out += [{"contentBlockDelta": {"delta": {"toolUse": {"input": p}}, "contentBlockIndex": 1}} for p in pieces]
    out += [{"contentBlockDelta": {"delta": {"text": "bs!"}, "contentBlockIndex": 0}},
            {"contentBlockStop": {"contentBlockIndex": 1}}, {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
    return out


def _oss_tool_chunks(pieces: list[str]) -> list[dict]:
    out = [{"choices": [{"index": 0, "delta": {"content": "Zenith La"}, "finish_reason": None}]},
           {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                                "function": {"name": "crm_lookup", "arguments": ""}}]},
                         "finish_reason": None}]}]  # fmt: skip
    out += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]},
                          "finish_reason": None}]} for p in pieces]  # fmt: skip
    out += [{"choices": [{"index": 0, "delta": {"content": "bs!"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]  # fmt: skip
    return out


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["amazon.nova", "openai.gpt-oss"]), st.data())
def test_tool_input_is_a_json_channel_of_its_own(name: str, data) -> None:
    """Tool input split across chunks (Nova's toolUse.input, gpt-oss's arguments) is
    restored as JSON text (an original with a quote and a backslash stays valid JSON),
    in its own channel beside the text's; both channels' held tails go out before the
    last chunk."""
    args = json.dumps({"who": "[EMAIL_2]", "org": "Zenith Labs"})
    pieces = data.draw(splits(args))
    chunks = _nova_tool_chunks(pieces) if name == "amazon.nova" else _oss_tool_chunks(pieces)
    body = body_of(chunks)
    out, s = run(name, body, data.draw(byte_splits(body)))
    assert s.state.name == "DONE"
    got = client_chunks(out)
    if name == "amazon.nova":
        text = "".join(c["contentBlockDelta"]["delta"].get("text", "") for c in got if "contentBlockDelta" in c)
        tool = "".join(c["contentBlockDelta"]["delta"].get("toolUse", {}).get("input", "") for c in got
                       if "contentBlockDelta" in c)  # fmt: skip
        assert "messageStop" in got[-1]
    else:
        deltas = [c["choices"][0]["delta"] for c in got]
        text = "".join(d.get("content", "") for d in deltas)
        tool = "".join(t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", []))
        assert got[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert text == "Acme Corp!"
    assert json.loads(tool) == {"who": PLACEHOLDERS["[EMAIL_2]"], "org": "Acme Corp"}


def test_a_model_that_does_not_stream_ends_its_stream_with_an_exception() -> None:
    """An embedding model's InvokeModelWithResponseStream (Bedrock refuses it with a JSON
    error): an event stream anyway is not read as another family's chunks."""
    s = bedrock_chunks.stream(bedrock_models.TITAN_EMBED.chunk)(RULES.restorer(PLACEHOLDERS))  # type: ignore[arg-type]
    out = s.feed(chunk_frame({"embedding": [0.1]})) + s.flush()
    buf = EventStreamBuffer()
    buf.add_data(out)
    msgs = list(buf)
    assert msgs[-1].headers[":message-type"] == "exception"
    assert "does not stream" in json.loads(msgs[-1].payload)["message"]


def test_nova_block_tail_goes_out_before_its_content_block_stop() -> None:
    """Nova's chunks close a block (`contentBlockStop`): the block's held tail goes out
    before it, never after (a client assembles a block's text up to its stop)."""
    for held in ("Ask Zenith La", "Ask [EMAIL_", "Ask Zen"):
        chunks = [{"messageStart": {"role": "assistant"}},
                  {"contentBlockDelta": {"delta": {"text": held}, "contentBlockIndex": 0}},
                  {"contentBlockStop": {"contentBlockIndex": 0}},
                  {"contentBlockDelta": {"delta": {"text": "Zen"}, "contentBlockIndex": 1}},
                  {"contentBlockStop": {"contentBlockIndex": 1}},
                  {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
        out, s = run("amazon.nova", body_of(chunks))
        got = client_chunks(out)
        stops = {c["contentBlockStop"]["contentBlockIndex"]: i for i, c in enumerate(got) if "contentBlockStop" in c}
        for i, c in enumerate(got):
            if "contentBlockDelta" in c:
                b = c["contentBlockDelta"]["contentBlockIndex"]
                assert i < stops[b], (held, got)
        texts = ["".join(c["contentBlockDelta"]["delta"]["text"] for c in got
                         if "contentBlockDelta" in c and c["contentBlockDelta"]["contentBlockIndex"] == b)
                 for b in (0, 1)]  # fmt: skip
        assert texts == [held, "Zen"] and s.state.name == "DONE"


def test_an_upstream_error_frame_is_restored_after_the_held_tail() -> None:
    """`:message-type error` (its text in `:error-code` / `:error-message` headers):
    every channel's held tail goes out, then the frame with its headers restored."""
    err = eventstream.encode([(":message-type", "error"), (":error-code", "ModelStreamError"),
                              (":error-message", "Zenith Labs: [EMAIL_1] failed")], b"")  # fmt: skip
    for name in NAMES:
        chunks = chunks_with(name, ["Dear Zenith La", ""])
        f = FAMILY[family_fixture(name)["family"]].chunk
        term = next(i for i, c in enumerate(chunks) if is_last(f, c))
        out, s = run(name, body_of(chunks[:term]) + err)
        buf = EventStreamBuffer()
        buf.add_data(out)
        msgs = list(buf)
        assert msgs[-1].headers == {":message-type": "error", ":error-code": "ModelStreamError",
                                    ":error-message": restore_value("Zenith Labs: [EMAIL_1] failed")}, name
        texts = [get(json.loads(base64.b64decode(json.loads(m.payload)["bytes"])), TEXT_AT[name])
                 for m in msgs[:-1]]  # fmt: skip
        assert "".join(t for t in texts if isinstance(t, str)) == "Dear Zenith La", name
