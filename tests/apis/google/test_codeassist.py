"""Gemini Code Assist (apis/google/codeassist.py): Gemini CLI's requests masked under
`request`, and its stream, each event's GenerateContentResponse under `response`, reversed
as Gemini's own: the same chunks, wrapped, give the same answer to the byte of every
document once unwrapped, whatever the splits; held tails arrive wrapped (gemini-cli
reads an event without `response` as one without candidates)."""

from __future__ import annotations

import json

import pytest
from google_util import build_chunks, cand, chunk, read_chunks, sse_chunks, to_sse
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.apis import registry
from disguiselib.apis.google import codeassist
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)
EMAIL = "bob@corp.example.com"
FINISHES = st.sampled_from(["alone", "bare", "parts", "call", "text:", "text: nova", "text:Labs [EMA"])


def wrap(chunks: list[dict], trace: str = "t-1") -> list[dict]:
    return [{"response": c, "traceId": trace} for c in chunks]


def run(cls, body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


def unwrapped(out: bytes) -> list[dict]:
    """The client's view: every event parses, and every one but an error is wrapped."""
    docs = sse_chunks(out)
    for d in docs:
        assert "error" in d or set(d) <= {"response", "traceId"} and isinstance(d["response"], dict), d
    return [d if "error" in d else d["response"] for d in docs]


def test_routes() -> None:
    for method in ("generateContent", "streamGenerateContent", "countTokens"):
        assert registry.recognise("POST", f"/v1internal:{method}") is registry.GOOGLE_CODE_ASSIST
    for other in ("/v1internal:loadCodeAssist", "/v1internal:onboardUser", "/v1internal/event:receive"):
        assert registry.recognise("POST", other) is None


def test_a_request_as_gemini_cli_sends_it() -> None:
    doc = {"model": "gemini-2.5-pro", "project": "proj-1", "user_prompt_id": "u-1", "request": {
        "contents": [{"role": "user", "parts": [{"text": f"Acme Corp: {EMAIL}"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You help Acme Corp."}]},
        "tools": [{"functionDeclarations": [{"name": "acme_lookup", "description": "d",
                                             "parametersJsonSchema": {"properties": {"session_id": {}}}}]}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
        "session_id": "s-Acme Corp"}}  # fmt: skip
    out, session = mask_body(json.dumps(doc).encode(), codeassist.REQUEST, RULES)
    got = json.loads(out)
    assert {k: got[k] for k in ("model", "project", "user_prompt_id")} == {k: doc[k] for k in ("model", "project",
                                                                                                "user_prompt_id")}  # fmt: skip
    req = got["request"]
    assert req["contents"][0]["parts"][0]["text"] == "Zenith Labs: [EMAIL_1]"
    assert req["systemInstruction"]["parts"][0]["text"] == "You help Zenith Labs."
    fd = req["tools"][0]["functionDeclarations"][0]
    assert fd["name"] == "crm_lookup" and list(fd["parametersJsonSchema"]["properties"]) == ["thread_id"]
    assert req["generationConfig"] == doc["request"]["generationConfig"]
    assert req["session_id"] == "s-Acme Corp"  # gemini-cli's own id: as it came
    count = {"request": {"model": "models/gemini-2.5-pro", "contents": [{"parts": [{"text": "Acme Corp"}]}]}}
    out, _ = mask_body(json.dumps(count).encode(), codeassist.REQUEST, RULES)
    assert json.loads(out)["request"] == {"model": "models/gemini-2.5-pro",
                                          "contents": [{"parts": [{"text": "Zenith Labs"}]}]}  # fmt: skip


@st.composite
def plans(draw):
    """One or two candidates' text, thoughts and calls, interleaved, each finishing in one
    of its shapes (tests/apis/google/test_stream.py's plans, without what it checks)."""
    steps = []
    queues = []
    for k in range(draw(st.integers(1, 2))):
        q = [("thought", k, p) for p in draw(splits(draw(texts), 3)) if p]
        q += [("text", k, p) for p in draw(splits(draw(texts)))]
        if draw(st.booleans()):
            q.append(("call", k, "crm_lookup", {"thread_id": draw(texts), "path": "WINPATH"}, "c2ln"))
        q.append(("finish", k, draw(FINISHES)))
        queues.append(q)
    while any(queues):
        i = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        steps.append(queues[i].pop(0))
    return steps


@given(steps=plans(), data=st.data())
def test_the_wrapped_stream_is_geminis_stream_wrapped(steps, data) -> None:
    chunks = build_chunks(steps)
    plain = to_sse(chunks)
    wrapped = to_sse(wrap(chunks))
    want = sse_chunks(run(gemini_stream.GeminiStream, plain))
    got = unwrapped(run(codeassist.CodeAssistStream, wrapped, data.draw(byte_splits(wrapped, 40))))
    assert got == want
    assert read_chunks(got)["error"] is None


@given(texts, st.data())
@example("Zenith Labs [EMAIL_1] nova", None)
def test_one_byte_at_a_time_equals_whole(text, data) -> None:
    pieces = [text[:3], text[3:]] if data is None else data.draw(splits(text))
    body = to_sse(wrap(build_chunks([("text", 0, p) for p in pieces] + [("finish", 0, "alone")])))
    out = run(codeassist.CodeAssistStream, body, [body[i : i + 1] for i in range(len(body))])
    assert out == run(codeassist.CodeAssistStream, body)
    assert read_chunks(unwrapped(out))["text"] == {0: R.text(text)}


def test_a_held_tail_and_a_cut_end_come_wrapped_and_the_trace_id_stays() -> None:
    body = to_sse(wrap([chunk([cand(0, [{"text": "Hi Zenith La"}])])], trace="trace-9"))
    s = codeassist.CodeAssistStream(R)
    out = s.feed(body) + s.flush()
    docs = sse_chunks(out)
    assert docs[0] == {"response": chunk([cand(0, [{"text": "Hi "}])]), "traceId": "trace-9"}
    assert docs[1]["response"]["candidates"][0]["content"]["parts"] == [{"text": "Zenith La"}]  # the tail, wrapped
    assert docs[1]["traceId"] == "trace-9"
    assert "error" in docs[-1] and "cut short" in docs[-1]["error"]["message"]


def test_a_tail_without_a_trace_id_is_wrapped_alone_and_the_trace_id_is_the_apis() -> None:
    """An event it makes holds `response` only when no traceId came; a traceId is the
    API's id: as it came, even where it spells a disguise."""
    s = codeassist.CodeAssistStream(R)
    body = to_sse([{"response": chunk([cand(0, [{"text": "Hi Zenith La"}])])}])
    docs = sse_chunks(s.feed(body) + s.flush())
    assert docs[1] == {"response": {"candidates": [{"content": {"parts": [{"text": "Zenith La"}], "role": "model"},
                                                    "index": 0}], "modelVersion": "gemini-2.5-flash",
                                    "responseId": "resp-1"}}  # fmt: skip
    body = to_sse([{"response": chunk([cand(0, [{"text": "Zenith Labs"}], "STOP")]), "traceId": "t-Zenith Labs"}])
    (doc,) = sse_chunks(run(codeassist.CodeAssistStream, body))
    assert doc["traceId"] == "t-Zenith Labs" and doc["response"]["candidates"][0]["content"]["parts"][0]["text"] == (
        "Acme Corp")  # fmt: skip


@pytest.mark.parametrize(
    "event",
    [{"response": None, "traceId": "t"}, {"response": "Zenith Labs"}, {"response": [1, "Zenith Labs"]}, {"traceId": 5},
     {"response": {"candidates": "Zenith Labs"}}, "Zenith Labs", [1, 2]],
)  # fmt: skip
def test_an_event_not_shaped_as_the_api_says_is_restored_and_the_stream_ends_explicitly(event) -> None:
    """A `response` that is not an object (or none at all): nothing raises, its text is
    restored where it is, and the stream, which named no candidate, ends with the
    explicit error."""
    docs = sse_chunks(run(codeassist.CodeAssistStream, to_sse([event])))
    assert docs[0] == json.loads(json.dumps(event).replace("Zenith Labs", "Acme Corp"))
    assert "cut short" in docs[-1]["error"]["message"] and len(docs) == 2


def test_an_error_event_is_googles_and_restored() -> None:
    body = to_sse(wrap([chunk([cand(0, [{"text": "Zenith"}])])]) + [{"error": {
        "code": 500, "message": "Zenith Labs failed", "status": "INTERNAL"}}])  # fmt: skip
    docs = unwrapped(run(codeassist.CodeAssistStream, body))
    assert docs[-1]["error"]["message"] == "Acme Corp failed"
    assert read_chunks(docs[:-1])["text"] == {0: "Zenith"}  # held until the error, then sent first


@pytest.mark.parametrize("whole", [True, False])
def test_a_whole_answer(whole: bool) -> None:
    doc = {"response": chunk([cand(0, [{"text": "Zenith Labs", "thought": True}, {"text": "Zenith Labs [EMAIL_1]"}],
                                   "STOP")]), "traceId": "t"}  # fmt: skip
    raw = json.dumps(doc if whole else [doc]).encode()
    got = json.loads(restore_body(raw, codeassist.RESPONSE, R))
    parts = (got if whole else got[0])["response"]["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "Zenith Labs", "thought": True}, {"text": f"Acme Corp {EMAIL}"}]
    assert restore_body(b'{"totalTokens": 12}', codeassist.RESPONSE, R) == b'{"totalTokens": 12}'


def test_a_view_reads_each_events_response_as_geminis_chunk() -> None:
    """mitmweb's and `disguise show`'s stream view (inspect/sseview.py): the channels of
    a Code Assist stream, as of Gemini's, and its end."""
    from disguiselib.inspect import sseview

    chunks = build_chunks([("thought", 0, "hmm"), ("text", 0, "Hello "), ("text", 0, "Acme"), ("finish", 0, "alone")])
    s = sseview.parse_stream(to_sse(wrap(chunks[:2]) + [{"response": c} for c in chunks[2:]]))  # (traceId or not)
    assert s.terminal and {k: v.text for k, v in s.channels.items()} == {"candidate 0 thought": "hmm",
                                                                           "candidate 0 text": "Hello Acme"}  # fmt: skip
    assert s.events[-1].note == "candidate 0 finishReason STOP"
