"""The capture's compiled read (inspect/_teeread.pyx, tee.CTee) against its reference
(tee.PyTee): on the stream generators' texts with disguises, random delta splits and
random read boundaries, through the adapter's StreamCall as mitmproxy calls it, both
give the same pieces read by read and keep the same two sides (hypothesis)."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.openai.chat import ChatStream
from disguiselib.apis.openai.responses import ResponsesStream
from disguiselib.inspect import tee
from disguiselib.mitm.callables import StreamCall
from openai_util import build_chat, build_responses
from strategies import LITERALS, PLACEHOLDERS, RULES, _piece, byte_splits, splits

STREAMS = {"anthropic": AnthropicStream, "chat": ChatStream, "responses": ResponsesStream}
compiled = pytest.mark.skipif(tee.CTee is None, reason="the compiled engine is not in use")
# texts with the rule set's disguises, placeholders and their beginnings among the pieces
texts = st.lists(st.one_of(_piece, st.sampled_from([*LITERALS.values(), "[EMAIL_1]", "[EMAIL_", "nov", "x[EMAIL_2] "])),
                 max_size=14).map("".join)  # fmt: skip


@st.composite
def cases(draw) -> tuple:
    api = draw(st.sampled_from(sorted(STREAMS)))
    text, value = draw(texts), draw(texts)
    args = json.dumps({"thread_id": value, "n": 1.5})
    if api == "anthropic":
        body = build_stream([("thinking", draw(splits(draw(texts)))), ("text", draw(splits(text))),
                             ("tool", draw(splits(args, 12)))])  # fmt: skip
    elif api == "chat":
        steps = [("content", 0, p) for p in draw(splits(text))]
        steps += [("tool", 0, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate(draw(splits(args, 6)))]
        steps.append(("finish", 0, "stop"))
        body = build_chat(steps)
    else:
        body = build_responses(draw(splits(text)), draw(splits(args, 10)), spaced=draw(st.booleans()))
    if draw(st.booleans()):  # a stream cut short
        body = body[: draw(st.integers(0, len(body)))]
    # a read an event (mitmproxy's usual read), or random read boundaries
    chunks = draw(st.one_of(byte_splits(body, 40), st.just([p + b"\n\n" for p in body.split(b"\n\n") if p])))
    limit = draw(st.one_of(st.just(1 << 20), st.integers(0, len(body) + 10)))
    return api, chunks, limit, draw(st.integers(1, 600)), draw(st.integers(0, 800)), draw(st.sampled_from([0, 4, 1000]))


def run(cls: type, api: str, chunks: list[bytes], limit: int) -> tuple:
    """Each read's pieces (the final call's too), and what the Tee kept."""
    t = cls(StreamCall(STREAMS[api](RULES.restorer(dict(PLACEHOLDERS)))), limit)
    outs = [t(c) for c in chunks if c] + [t(b"")]
    up, down = t.up, t.down
    # a Patched's changes: where they were packed (PATCH_MAX), and the edits since
    patched = ([sp for sp, _ in down.batches], down.spans, down.pieces) if type(down).__name__ == "Patched" else None
    return (outs, up.buf, t.down_buf, up.size, down.size, up.cut, down.cut, t.same, t.final, t.final_sent,
            type(down).__name__, up.zipped().plain(), down.zipped().plain(), list(t.last), patched)  # fmt: skip


@compiled
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_compiled_read_gives_the_references_pieces_and_sides(case: tuple) -> None:
    api, chunks, limit, chunk, patch_max, sparse = case
    with (mock.patch.object(tee, "CHUNK", chunk), mock.patch.object(tee, "PATCH_MAX", patch_max),
          mock.patch.object(tee, "SPARSE", sparse), mock.patch.object(tee, "LONG", 3 * chunk),
          mock.patch.object(tee, "LONG_CHUNK", 2 * chunk + 5)):  # fmt: skip
        assert run(tee.CTee, api, chunks, limit) == run(tee.PyTee, api, chunks, limit)


@compiled
def test_a_read_that_went_out_as_it_came_costs_no_python_call_of_the_tee() -> None:
    """What the compiled read is for (issue 29): an unchanged read, a changed one while the
    client's side is upstream's with its changes in place (a Patched, until they hold
    PATCH_MAX bytes), and once the client's side is kept apart any read, is queued
    without the reference's Python code: only the first change (which makes the Patched)
    and the one past PATCH_MAX (which packs them) take it."""
    reads = [b"data: %d\n\n" % i for i in range(2_000)]
    with mock.patch.object(tee, "PATCH_MAX", 4 << 10):
        t = tee.CTee(lambda d: [d.upper()] if d.endswith(b"7\n\n") else [d], 1 << 24)
        with mock.patch.object(tee._Tee, "_py_after", side_effect=tee._Tee._py_after, autospec=True) as slow:
            out = [p for d in reads for p in t(d)]
    assert slow.call_count == 1  # the first changed read (200 of them: 2,368 bytes, under PATCH_MAX)
    assert t.down_buf == b"".join(out) and t.up.buf == b"".join(reads)
    with mock.patch.object(tee, "PATCH_MAX", 100):
        t = tee.CTee(lambda d: [d.upper()] if d.endswith(b"7\n\n") else [d], 1 << 24)
        with mock.patch.object(tee._Tee, "_py_after", side_effect=tee._Tee._py_after, autospec=True) as slow:
            out = [p for d in reads for p in t(d)]
    # the first change, then each read that finds the edits past 100 bytes (every 9th: packed)
    assert 1 < slow.call_count < 200 and type(t.down).__name__ == "Patched" and t.down.batches
    assert t.down_buf == b"".join(out) and t.up.buf == b"".join(reads)


@pytest.mark.parametrize("cls", [tee.PyTee] + ([tee.CTee] if tee.CTee is not None else []))
def test_a_reverser_that_raises_gives_the_client_the_error_event_and_then_nothing(cls: type) -> None:
    """The compiled read calls StreamCall's feed itself: where the reverser raises (a bug),
    the client gets StreamCall's error event, once, and nothing after it, as through the
    call; the Tee says the stream failed closed."""
    s = ChatStream(RULES.restorer(dict(PLACEHOLDERS)))
    body = build_chat([("content", 0, "Hello there"), ("content", 0, " and more"), ("finish", 0, "stop")])
    reads = [p + b"\n\n" for p in body.split(b"\n\n") if p]
    real, n = s.feed, [0]

    def feed(data: bytes) -> bytes:
        n[0] += 1
        if n[0] == 3:
            raise KeyError("a bug")
        return real(data)

    call = StreamCall(s)
    call.feed = feed
    t = cls(call, 1 << 20)
    outs = [t(r) for r in reads] + [t(b"")]
    assert outs[:2] == [[reads[0]], [reads[1]]] and b"KeyError" in b"".join(outs[2]) and len(outs[2]) == 1
    assert all(o == [] for o in outs[3:]) and t.dead and call.broke
    assert t.down_buf == reads[0] + reads[1] + outs[2][0] and t.up.buf == b"".join(reads)


@compiled
@pytest.mark.parametrize("patch_max", [0, 5, 30, 4096])
@pytest.mark.parametrize("sparse", [0, 4, 1000])
def test_changed_reads_are_packed_or_kept_apart_where_the_reference_does_it(patch_max: int, sparse: int) -> None:
    """The compiled read takes a changed read into the Patched only while its pieces hold
    at most PATCH_MAX bytes: the read that finds them past it goes the reference's way
    (packed as a batch where the changes are sparse, the client's side kept apart where
    not), at the same read as the reference, however far the next chunk is."""

    def inner(d: bytes) -> list[bytes]:
        return [d.upper()] if d.endswith((b"3\n\n", b"7\n\n")) else [] if d.endswith(b"5\n\n") else [d]

    reads = [b"data: %d\n\n" % i for i in range(300)]
    got = []
    with (mock.patch.object(tee, "PATCH_MAX", patch_max), mock.patch.object(tee, "SPARSE", sparse),
          mock.patch.object(tee, "CHUNK", 1 << 16)):  # fmt: skip
        for cls in (tee.CTee, tee.PyTee):
            t = cls(inner, 1 << 20)
            outs = [t(d) for d in reads]
            down = t.down
            patched = ([sp for sp, _ in down.batches], down.spans, down.pieces) if isinstance(down, tee.Patched) else None
            got.append((outs, t.down_buf, type(down).__name__, patched))
    assert got[0] == got[1]


@compiled
@pytest.mark.parametrize("chunk", [64, 200])
def test_every_limit_keeps_what_the_reference_keeps_across_chunk_flushes(chunk: int) -> None:
    """A flush of the queued reads at a chunk leaves each side the room it had less what it
    took (the next read does not ask the Tee's Python code again): at every limit of a
    stream whose reads change, the pieces and both sides are the reference's, the side
    cut and the client's side kept apart exactly where the reference does it."""
    text = "ask novak@example.org about " + " and ".join(LITERALS.values()) + " [EMAIL_1] x" * 3
    body = build_chat([("content", 0, p) for p in [text[i : i + 3] for i in range(0, len(text), 3)]] + [("finish", 0, "stop")])
    chunks = [p + b"\n\n" for p in body.split(b"\n\n") if p]
    with mock.patch.object(tee, "CHUNK", chunk), mock.patch.object(tee, "PATCH_MAX", 1 << 20):
        for limit in range(0, len(body) + 2, 7):
            assert run(tee.CTee, "chat", chunks, limit) == run(tee.PyTee, "chat", chunks, limit), limit


@pytest.mark.parametrize("cls", [tee.PyTee] + ([tee.CTee] if tee.CTee is not None else []))
def test_the_reverser_is_asked_whether_it_went_past_its_last_event_at_the_end_not_each_read(cls: type) -> None:
    """Through mitmdump the reverser is a BodyStream, whose state is a Python property:
    read after every read it cost ~0.8 us of a cold read (issue 29). The Tee asks the
    reverser's `past_final` once, at the end; a stream that went past its last event and
    then failed (FINISHING, then FAILED) still sent its final event."""
    from disguiselib.base.bodystream import BodyStream
    from disguiselib.base.stream import StreamState

    asked = [0]

    class Counted(BodyStream):
        @property  # type: ignore[override]
        def state(self) -> StreamState:
            asked[0] += 1
            return self.stream.state

    s = ChatStream(RULES.restorer(dict(PLACEHOLDERS)))
    b = Counted(s, lambda x: x, lambda m: b"", "text/event-stream")
    body = build_chat([("content", 0, f"Hello there {i}") for i in range(300)] + [("finish", 0, "stop")])
    reads = [p + b"\n\n" for p in body.split(b"\n\n") if p]
    t = cls(StreamCall(b), 1 << 20)
    for r in reads:  # ([DONE] last: FINISHING)
        t(r)
    assert asked[0] < 10 and s.state is StreamState.FINISHING and b.past_final
    s.fail("cut after its last event")  # FINISHING -> FAILED: the final event went out
    t.last.clear()  # (no byte pattern to tell it: the reverser does)
    assert t.final_sent and not ChatStream(RULES.restorer({})).past_final


@pytest.mark.parametrize("cls", [tee.PyTee] + ([tee.CTee] if tee.CTee is not None else []))
def test_a_read_that_raised_past_the_last_event_did_not_send_it(cls: type) -> None:
    """A read whose reverser went past its API's last event and then raised through the
    StreamCall (a BaseException: the call lets it through) sent the client nothing: the
    capture does not say the final event went out."""
    s = ChatStream(RULES.restorer(dict(PLACEHOLDERS)))
    body = build_chat([("content", 0, "Hello there"), ("finish", 0, "stop")])
    reads = [p + b"\n\n" for p in body.split(b"\n\n") if p]
    real = s.feed

    def feed(data: bytes) -> bytes:
        out = real(data)
        if s.past_final:
            raise KeyboardInterrupt
        return out

    call = StreamCall(s)
    call.feed = feed
    t = cls(call, 1 << 20)
    with pytest.raises(KeyboardInterrupt):
        for r in reads:
            t(r)
    assert s.past_final and not t.final_sent
