"""Gemini streams (apis/google/stream.py; what both framings share is run on the
streamed JSON array too, test_gemini_array.py has its own): a window per candidate's
text, thoughts and signatures byte-identical, tails before finishReason, explicit ends."""

from __future__ import annotations

import json

import pytest
from google_util import (
    GEMINI_FIXTURES,
    build_chunks,
    cand,
    chunk,
    read_chunks,
    sse_chunks,
    to_array,
    to_sse,
)
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import REPO
from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import gemini as google
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.base.restore import restore_body
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from disguiselib.wire.sse import Framer
from strategies import PLACEHOLDERS, RULES, byte_splits, respelled, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)
SIG = "CikB0e2Kbw5tJ9dwYB9m1I9W28H1Pvbhg7iFnlQJMZT9ndxhy/OJBT3V9Qpt+Zenith/Labs=="


def run(cls, body: bytes, pieces: list[bytes] | None = None, rules: Rules = RULES) -> bytes:
    s = cls(rules.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


def client_chunks(cls, out: bytes) -> list[dict]:
    if cls is gemini_array.GeminiArrayStream:
        doc = json.loads(out)  # the whole output is one valid JSON array
        assert isinstance(doc, list)
        return doc
    return sse_chunks(out)


FINISHES = st.sampled_from(["alone", "bare", "parts", "call", "text:", "text: nova", "text:Labs [EMA"])


@st.composite
def plans(draw):
    """One or two candidates, each: thoughts, text, maybe a function call, and a finish
    in one of its shapes; the candidates' chunks interleaved at random."""
    n = draw(st.integers(1, 2))
    plan = {}
    queues = []
    for k in range(n):
        thought, text = draw(texts), draw(texts)
        args = {"thread_id": draw(texts), "path": "WINPATH", "n": 1.5, "deep": {"session": ["Zenith Labs"]}}
        call = draw(st.booleans())
        finish = draw(FINISHES)
        q = [("thought", k, p) for p in draw(splits(thought, 3)) if p]
        q += [("text", k, p) for p in draw(splits(text))]
        if call:
            q.append(("call", k, "crm_lookup", args, SIG))
        q.append(("finish", k, finish))
        extra = finish[5:] if finish.startswith("text:") else ""
        plan[k] = {"thought": thought, "text": text + extra, "call": args if call else None, "finish": finish}
        queues.append(q)
    steps = []
    while any(queues):
        i = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        steps.append(queues[i].pop(0))
    return plan, steps


def check(plan: dict, got: dict) -> None:
    for k, p in plan.items():
        assert got["text"].get(k, "") == R.text(p["text"]), k
        assert got["thought"].get(k, "") == p["thought"], k  # thoughts never restored
        calls = got["calls"].get(k, [])
        if p["call"] is not None:
            assert calls[0] == {"name": "acme_lookup", "args": restore_value(p["call"])}
        if p["finish"] == "call":
            assert calls[-1] == {"name": "acme_lookup", "args": {"session_id": "x"}}
        assert k in got["finished"]
    assert got["error"] is None
    assert got["signatures"] == [SIG] * sum(1 for p in plan.values() if p["call"] is not None)


@pytest.mark.parametrize("cls", [gemini_stream.GeminiStream, gemini_array.GeminiArrayStream])
@given(plan_steps=plans(), data=st.data())
def test_candidates_reassemble_to_the_whole_text_result(cls, plan_steps, data) -> None:
    plan, steps = plan_steps
    chunks = build_chunks(steps)
    body = to_sse(chunks) if cls is gemini_stream.GeminiStream else to_array(chunks, pretty=data.draw(st.booleans()))
    out = run(cls, body, data.draw(byte_splits(body, 40)))
    check(plan, read_chunks(client_chunks(cls, out)))


@pytest.mark.parametrize("cls", [gemini_stream.GeminiStream, gemini_array.GeminiArrayStream])
@given(texts, st.data())
@example("Zenith Labs [EMAIL_1] nova", None)
def test_one_byte_at_a_time_equals_whole(cls, text, data) -> None:
    pieces = [text[:3], text[3:]] if data is None else data.draw(splits(text))
    chunks = build_chunks([("text", 0, p) for p in pieces] + [("finish", 0, "alone")])
    body = to_sse(chunks) if cls is gemini_stream.GeminiStream else to_array(chunks)
    out = run(cls, body, [body[i : i + 1] for i in range(len(body))])
    assert out == run(cls, body)
    assert read_chunks(client_chunks(cls, out))["text"] == {0: R.text(text)}


def test_tail_goes_into_the_finishing_chunks_last_text_part() -> None:
    body = to_sse(build_chunks([("text", 0, "Hello Zen"), ("text", 0, "ith Labs, mail [EMA"), ("finish", 0, "text:IL_1] nova")]))
    chunks = sse_chunks(run(gemini_stream.GeminiStream, body))
    texts_ = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert texts_ == ["Hello ", "Acme Corp, mail ", "bob@corp.example.com nova-internal"]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize(
    ("how", "expect"),
    [
        ("alone", {"parts": [{"text": "nova-internal"}], "role": "model"}),
        ("parts", {"parts": [{"text": "nova-internal"}], "role": "model"}),
        ("call", {"parts": [{"text": "nova-internal"}, {"functionCall": {"name": "acme_lookup", "args": {"session_id": "x"}}}],
                  "role": "model"}),
    ],
)  # fmt: skip
def test_tail_is_put_into_a_finishing_chunk_without_text(how, expect) -> None:
    body = to_sse(build_chunks([("text", 0, "see nova"), ("finish", 0, how)]))
    out = run(gemini_stream.GeminiStream, body)
    last = sse_chunks(out)[-1]["candidates"][0]
    assert last["content"] == expect
    assert last["finishReason"] == "STOP"


def test_tail_is_put_into_a_bare_finishing_candidate_by_splicing() -> None:
    body = to_sse(build_chunks([("text", 0, "see nova"), ("finish", 0, "bare")]))
    out = run(gemini_stream.GeminiStream, body)
    up_fin = body.split(b"\r\n\r\n")[-2]
    assert up_fin.startswith(b'data: {"candidates": [{"finishReason": "STOP"')
    # inserted at the start of the candidate, every other byte as upstream sent it
    assert out.split(b"\r\n\r\n")[-2] == up_fin.replace(
        b'[{"finishReason"', b'[{"content":{"parts":[{"text":"nova-internal"}],"role":"model"},"finishReason"')


def test_finishing_candidate_with_null_content_is_rebuilt() -> None:
    fin = chunk([{"content": None, "finishReason": "STOP", "index": 0}])
    body = to_sse(build_chunks([("text", 0, "see nova")]) + [fin])
    got = read_chunks(sse_chunks(run(gemini_stream.GeminiStream, body)))
    assert got["text"] == {0: "see nova-internal"} and got["finished"] == {0}


def test_interleaved_candidates_do_not_splice_into_each_other() -> None:
    body = to_sse(build_chunks([("text", 0, "a Zen"), ("text", 1, "b Zen"), ("text", 0, "ith Labs"), ("text", 1, "o"),
                                ("finish", 0, "alone"), ("finish", 1, "alone")]))
    got = read_chunks(sse_chunks(run(gemini_stream.GeminiStream, body)))
    assert got["text"] == {0: "a Acme Corp", 1: "b Zeno"}


def test_two_candidates_finishing_in_one_chunk_each_get_their_tail() -> None:
    both = chunk([cand(0, [{"text": ""}], "STOP"), cand(1, None, "MAX_TOKENS", content=False)])
    body = to_sse(build_chunks([("text", 0, "a nova"), ("text", 1, "b [EMA")]) + [both])
    chunks = sse_chunks(run(gemini_stream.GeminiStream, body))
    assert read_chunks(chunks)["text"] == {0: "a nova-internal", 1: "b [EMA"}
    assert [c["index"] for c in chunks[-1]["candidates"]] == [0, 1]


def test_a_rebuilt_finishing_chunk_keeps_the_other_candidates_tail() -> None:
    """One candidate's `content: null` makes the chunk rebuilt: the other candidate's
    tail, spliced in, went missing with the splice (the rebuild read the edits only)."""
    both = chunk([{"content": None, "finishReason": "STOP", "index": 0}, cand(1, None, "STOP")])
    body = to_sse(build_chunks([("text", 0, "a nova"), ("text", 1, "b [EMA")]) + [both])
    assert read_chunks(sse_chunks(run(gemini_stream.GeminiStream, body)))["text"] == {0: "a nova-internal", 1: "b [EMA"}


def test_thought_parts_and_signatures_pass_byte_identical() -> None:
    chunks = build_chunks([("thought", 0, "I think Zenith Labs [EMAIL_1] nova"), ("call", 0, "crm_lookup", {"a": 1}, SIG),
                           ("finish", 0, "alone")])
    chunks[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = SIG
    body = to_sse(chunks)
    out = run(gemini_stream.GeminiStream, body)
    events = out.split(b"\r\n\r\n")
    assert events[0] == body.split(b"\r\n\r\n")[0]  # the thought chunk, untouched
    assert out.count(SIG.encode()) == 2
    assert b'"name": "acme_lookup"' in out


def test_unchanged_chunks_are_byte_identical() -> None:
    body = to_sse(build_chunks([("thought", 0, "Zenith Labs"), ("text", 0, "plain "), ("finish", 0, "text:prose.")]))
    assert run(gemini_stream.GeminiStream, body) == body
    arr = to_array(build_chunks([("text", 0, "plain "), ("finish", 0, "text:prose.")]), pretty=True)
    assert run(gemini_array.GeminiArrayStream, arr) == arr


# -- ends ----------------------------------------------------------------------------------


def test_sse_cut_before_finish_drains_and_ends_with_an_error() -> None:
    body = to_sse(build_chunks([("text", 0, "x nova"), ("finish", 0, "alone")]))
    cut = body[: body.index(b"data:", 10)]
    chunks = sse_chunks(run(gemini_stream.GeminiStream, cut))
    got = read_chunks(chunks)
    assert got["text"] == {0: "x nova-internal"}
    assert got["error"]["status"] == "INTERNAL" and "cut short" in got["error"]["message"]
    assert not got["finished"]


@given(st.data())
def test_sse_cut_anywhere_stays_valid_and_says_so(data) -> None:
    body = to_sse(build_chunks([("thought", 0, "hm"), ("text", 0, "Zenith Labs [EMA"), ("text", 0, "IL_1] Zen"),
                                ("finish", 0, "text:ith")]))
    n = data.draw(st.integers(0, len(body)))
    cut = body[:n]
    out = run(gemini_stream.GeminiStream, cut, data.draw(byte_splits(cut, 10)))
    chunks = sse_chunks(out)  # every event parses
    got = read_chunks(chunks)
    complete = n >= len(body) - 4  # the last event's JSON is whole
    assert (got["error"] is None) == complete, n
    f = Framer()
    f.feed(out)
    assert not f.pending  # the last event is terminated: a client dispatches it


def test_empty_stream_is_an_error() -> None:
    assert b'"error"' in run(gemini_stream.GeminiStream, b"")
    assert json.loads(run(gemini_array.GeminiArrayStream, b""))[0]["error"]["code"] == 500


def test_prompt_blocked_stream_is_complete() -> None:
    body = to_sse([{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}])
    assert run(gemini_stream.GeminiStream, body) == body


def test_error_chunk_is_restored_and_held_text_goes_first() -> None:
    err = {"error": {"code": 503, "message": "Zenith Labs is overloaded", "status": "UNAVAILABLE"}}
    for cls, body in [(gemini_stream.GeminiStream, to_sse(build_chunks([("text", 0, "Partial Zen")]) + [err])),
                      (gemini_array.GeminiArrayStream, to_array(build_chunks([("text", 0, "Partial Zen")]) + [err]))]:
        out = run(cls, body)
        got = read_chunks(client_chunks(cls, out))
        assert got["text"] == {0: "Partial Zen"}
        assert got["error"]["message"] == "Acme Corp is overloaded"
        assert out.index(b'"Zen"') < out.index(b"Acme Corp is overloaded")


def test_too_many_candidates_is_an_explicit_error() -> None:
    s = gemini_stream.GeminiStream(R)
    big = chunk([cand(k, [{"text": "nova"}]) for k in range(300)])
    out = s.feed(to_sse([big]))  # the stream ends itself with an error chunk
    assert b"more than 256" in out and b'"error"' in out
    assert s.flush() == b""


def test_flush_is_idempotent() -> None:
    for cls in (gemini_stream.GeminiStream, gemini_array.GeminiArrayStream):
        s = cls(R)
        s.feed(to_sse(build_chunks([("text", 0, "x nova")])) if cls is gemini_stream.GeminiStream else b'[{"candidates": []}')
        assert s.flush()
        assert s.flush() == b""


def test_lf_framed_sse_gets_lf_synthetic_events() -> None:
    body = to_sse(build_chunks([("text", 0, "x nova")]), eol="\n")
    out = run(gemini_stream.GeminiStream, body)
    assert b"\r" not in out and read_chunks(sse_chunks(out))["error"] is not None


def test_spaced_and_reordered_json_takes_the_same_route() -> None:
    chunks = build_chunks([("text", 0, "a Zen"), ("finish", 0, "text:ith Labs")])
    chunks[1]["candidates"][0] = {"index": 0, "finishReason": "STOP", **chunks[1]["candidates"][0]}
    got = read_chunks(sse_chunks(run(gemini_stream.GeminiStream, to_sse(chunks, spaced=True))))
    assert got["text"] == {0: "a Acme Corp"}


# -- whole bodies and the JSON sniffing ------------------------------------------------------


def test_error_body_served_as_event_stream_is_restored_whole() -> None:
    body = (GEMINI_FIXTURES / "error_400_stream.json").read_bytes()
    assert run(gemini_stream.GeminiStream, body, [body[i : i + 5] for i in range(0, len(body), 5)]) == body
    disguised = body.replace(b"API key not valid", b"Zenith Labs key not valid")
    out = run(gemini_stream.GeminiStream, disguised, [disguised[:3], disguised[3:]])
    assert json.loads(out)["error"]["message"] == "Acme Corp key not valid. Please pass a valid API key."
    assert json.loads(run(gemini_array.GeminiArrayStream, disguised))["error"]["details"][1]["message"].startswith("Acme Corp")


def test_whole_generate_content_body() -> None:
    body = (GEMINI_FIXTURES / "generate_content_image.json").read_bytes()
    assert restore_body(body, google.RESPONSE, RULES.restorer({})) == body
    doc = {"candidates": [{"content": {"parts": [
        {"text": "Zenith Labs thinks", "thought": True, "thoughtSignature": SIG},
        {"text": "Hello Zenith Labs [[reply_to_current]]"},
        {"functionCall": {"name": "crm_lookup", "args": {"thread_id": "WINPATH"}}, "thoughtSignature": SIG},
        {"executableCode": {"language": "PYTHON", "code": "print('Zenith Labs')"}},
        {"inlineData": {"mimeType": "image/png", "data": "WmVuaXRoIExhYnM=Zenith Labs"}}]},
        "finishReason": "STOP", "finishMessage": "Zenith Labs done", "index": 0}],
        "promptFeedback": {"blockReasonMessage": "Zenith Labs"}}  # fmt: skip
    out = json.loads(restore_body(json.dumps(doc).encode(), google.RESPONSE, R))
    parts = out["candidates"][0]["content"]["parts"]
    assert parts[0] == doc["candidates"][0]["content"]["parts"][0]
    assert parts[1]["text"] == "Hello Acme Corp "
    assert parts[2] == {"functionCall": {"name": "acme_lookup", "args": {"session_id": 'C:\\Users\\a "b"'}},
                        "thoughtSignature": SIG}
    assert parts[3]["executableCode"]["code"] == "print('Acme Corp')"
    assert parts[4] == doc["candidates"][0]["content"]["parts"][4]
    assert out["candidates"][0]["finishMessage"] == "Acme Corp done"
    assert out["promptFeedback"]["blockReasonMessage"] == "Acme Corp"


# -- the real recorded streams, with disguises injected ---------------------------------------


def _inject(body: bytes) -> bytes:
    """Disguises into every text (thought parts too: they must stay as they are) and a
    disguised key and value into every function call's args."""
    return body.replace(b'"text": "', b'"text": "Zenith Labs [EMA').replace(b'"}', b'IL_1] nova"}').replace(
        b'"args": {', b'"args": {"thread_id": "WINPATH", ')


def _sse_fixtures() -> list:
    return sorted(GEMINI_FIXTURES.glob("*.sse"))


def test_fixtures_are_here() -> None:
    assert len(_sse_fixtures()) == 5 and (GEMINI_FIXTURES / "stream_json_array.json").exists()


@given(st.data())
def test_recorded_sse_streams_with_injected_disguises(data) -> None:
    for f in _sse_fixtures():
        up = _inject(f.read_bytes())
        want = read_chunks(sse_chunks(up))
        out = run(gemini_stream.GeminiStream, up, data.draw(byte_splits(up, 30)))
        got = read_chunks(sse_chunks(out))
        assert got["text"] == {k: R.text(v) for k, v in want["text"].items()}, f.name
        assert got["thought"] == want["thought"], f.name
        assert got["signatures"] == want["signatures"], f.name
        for k, calls in want["calls"].items():
            assert got["calls"][k] == [{"name": c["name"], "args": restore_value(c["args"])} for c in calls], f.name
        assert got["error"] is None and got["finished"] == want["finished"], f.name
        assert b"\r\n\r\n" in out and b"\n\n" not in out.replace(b"\r\n\r\n", b""), f.name


def test_recorded_streams_pass_byte_identical_with_default_mappings() -> None:
    rules = Rules(mappings.load(REPO / "mappings"))
    for f in [*_sse_fixtures(), GEMINI_FIXTURES / "stream_json_array.json", GEMINI_FIXTURES / "error_400_stream.json"]:
        body = f.read_bytes()
        cls = gemini_array.GeminiArrayStream if f.name == "stream_json_array.json" else gemini_stream.GeminiStream
        s = cls(rules.restorer({}))
        out = b"".join(s.feed(body[i : i + 7]) for i in range(0, len(body), 7)) + s.flush()
        assert out == body, f.name
        assert s.events_held == 0 and s.events_changed == 0, f.name


# -- behaviours a hand mutation sample found unchecked (issue 14) ----------------------------


def test_a_finishing_chunk_with_two_text_parts_keeps_their_order() -> None:
    """The held tail goes into the finishing chunk's *last* text part, after what the
    parts before it release: the client reads the parts in order, and nothing of the
    candidate comes after its finishReason."""
    chunks = build_chunks([("text", 0, "x Zen")]) + [
        chunk([cand(0, [{"text": "ith Labs A"}, {"text": "hm", "thought": True}, {"text": "B nova"}], "STOP")])]
    for body in (to_sse(chunks), to_array(chunks)):
        cls = gemini_stream.GeminiStream if body.startswith(b"data:") else gemini_array.GeminiArrayStream
        out_chunks = client_chunks(cls, run(cls, body))
        got = read_chunks(out_chunks)  # checks: no part after the finishReason
        assert got["text"] == {0: "x Acme Corp AB nova-internal"} and got["error"] is None
        last = out_chunks[-1]["candidates"][0]["content"]["parts"]
        assert [p["text"] for p in last] == ["Acme Corp A", "hm", "B nova-internal"]


def test_a_stream_where_only_one_of_two_candidates_finishes_is_cut_short() -> None:
    steps = [("text", 0, "a nova"), ("text", 1, "b Zen"), ("finish", 0, "text:.")]
    for cls, body in ((gemini_stream.GeminiStream, to_sse(build_chunks(steps))),
                      (gemini_stream.GeminiStream, to_sse(build_chunks([*steps, ("finish", 1, "alone")])))):
        s = cls(R)
        out = s.feed(body) + s.flush()
        got = read_chunks(sse_chunks(out))
        if len(got["finished"]) == 1:
            assert got["error"] is not None and "cut short" in got["error"]["message"]
            assert got["text"] == {0: "a nova-internal.", 1: "b Zen"} and s.failed
        else:
            assert got["error"] is None and not s.failed


@pytest.mark.parametrize("ending", [b"\r\n", b"", b"\n"])
def test_a_last_chunk_without_its_blank_line_is_delivered(ending: bytes) -> None:
    """The connection ends right after the last chunk's data line (no blank line): the
    chunk is whole JSON, so it is delivered, terminated, and the stream is complete."""
    body = to_sse(build_chunks([("text", 0, "x Zen"), ("finish", 0, "text:ith Labs")]))
    cut = body[: -4] + ending  # without the blank line that ends the last event
    for pieces in ([cut], [cut[i : i + 9] for i in range(0, len(cut), 9)]):
        s = gemini_stream.GeminiStream(R)
        out = b"".join(s.feed(p) for p in pieces) + s.flush()
        got = read_chunks(sse_chunks(out))
        assert got["text"] == {0: "x Acme Corp"} and got["finished"] == {0}, out
        assert got["error"] is None and not s.failed
        assert out.endswith(b"\r\n\r\n")


# -- a candidate index spelled as a JSON float (base/channels.channel_index) ---------------


@pytest.mark.parametrize("cls", [gemini_stream.GeminiStream, gemini_array.GeminiArrayStream])
@given(plan_steps=plans(), data=st.data())
def test_an_index_spelled_as_an_integral_float_is_the_same_candidate(cls, plan_steps, data) -> None:
    """`0.0`, `0E0`, `-0` are the number 0 to every JSON reader: the same candidate and
    window, whatever spelling each chunk uses; the stream is complete when each finished."""
    plan, steps = plan_steps
    chunks = build_chunks(steps)
    body = to_sse(chunks) if cls is gemini_stream.GeminiStream else to_array(chunks)
    body = data.draw(respelled(body.decode())).encode()
    out = run(cls, body, data.draw(byte_splits(body, 40)))
    check(plan, read_chunks(client_chunks(cls, out)))  # no error: nothing was cut short


def test_a_chunk_spelling_its_index_as_a_float_keeps_the_order() -> None:
    chunks = build_chunks([("text", 0, "Hi Zen"), ("text", 0, "ith Labs ok"), ("finish", 0, "alone")])
    body = to_sse(chunks)
    at = body.index(b'"index": 0', body.index(b"ith Labs"))
    body = body[:at] + b'"index": 0.0' + body[at + len(b'"index": 0') :]
    got = read_chunks(sse_chunks(run(gemini_stream.GeminiStream, body)))
    assert got["text"] == {0: "Hi Acme Corp ok"} and got["error"] is None


@pytest.mark.parametrize("spelling", [b"0.5", b'"0"', b"true"])
def test_an_index_that_is_no_integer_ends_the_stream_with_an_error(spelling) -> None:
    chunks = build_chunks([("text", 0, "Hi Zen"), ("text", 0, "ith Labs ok"), ("finish", 0, "alone")])
    body = to_sse(chunks)
    at = body.index(b'"index": 0', body.index(b"ith Labs"))
    body = body[:at] + b'"index": ' + spelling + body[at + len(b'"index": 0') :]
    out = run(gemini_stream.GeminiStream, body)
    assert b"`index` is not an integer" in out and b"ith Labs" not in out
