"""Gemini's streamed JSON array (apis/google/array.py, `streamGenerateContent`
without `alt=sse`): the client's bytes stay one valid JSON array however upstream's are
cut; a stream that ends early gets an error element and its `]`; which stream class a
response gets (`stream_for`)."""

from __future__ import annotations

import json

from google_util import GEMINI_FIXTURES, build_chunks, read_chunks, to_array
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import gemini as google
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.base.restore import restore_body
from strategies import PLACEHOLDERS, RULES, byte_splits

R = RULES.restorer(PLACEHOLDERS)


def run(cls, body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = cls(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


@given(st.data())
def test_array_cut_anywhere_stays_a_valid_array_and_says_so(data) -> None:
    body = to_array(build_chunks([("text", 0, "Zenith Labs [EMA"), ("text", 0, "IL_1] Zen"), ("finish", 0, "text:ith")]),
                    pretty=data.draw(st.booleans()))
    n = data.draw(st.integers(0, len(body)))
    cut = body[:n]
    out = run(gemini_array.GeminiArrayStream, cut, data.draw(byte_splits(cut, 10)))
    doc = json.loads(out)  # a valid array, whatever the cut
    assert isinstance(doc, list)
    got = read_chunks(doc)
    assert (got["error"] is None) == (n == len(body)), n
    if got["error"] is None:
        assert got["text"] == {0: "Acme Corp bob@corp.example.com Zenith"}


def test_array_without_finish_but_with_its_bracket_is_complete() -> None:
    body = to_array(build_chunks([("text", 0, "x nova")]))
    doc = json.loads(run(gemini_array.GeminiArrayStream, body))
    assert read_chunks(doc)["text"] == {0: "x nova-internal"} and read_chunks(doc)["error"] is None


def test_array_garbage_is_an_explicit_error_inside_the_array() -> None:
    s = gemini_array.GeminiArrayStream(R)
    first = s.feed(b'[{"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": 0}]}\n,\r\n')
    # the stream ends itself: what came before the bad byte, then an error element and `]`
    out = first + s.feed(b'{"candidates": []} x')
    doc = json.loads(out)
    assert doc[-1]["error"]["message"].startswith("disguise: stream could not be reversed")
    assert "offset" in doc[-1]["error"]["message"]
    assert doc[1] == {"candidates": []}  # the element before the bad byte went out too
    assert len(doc) == 3
    assert s.feed(b'{"candidates": []}') == b"" and s.flush() == b""  # nothing after the error


def test_array_error_before_anything_is_a_whole_array() -> None:
    s = gemini_array.GeminiArrayStream(R)
    assert json.loads(s.error_event("bad encoding")) == [{"error": {"code": 500, "message": "bad encoding", "status": "INTERNAL"}}]


def test_whole_array_body_restores_each_element() -> None:
    body = to_array(build_chunks([("text", 0, "Zenith Labs"), ("finish", 0, "text:nova")]))
    doc = json.loads(restore_body(body, google.RESPONSE, R))
    # whole elements, each restored alone (a stream that arrives whole goes through the
    # stream class instead, see the adapter)
    assert read_chunks(doc)["text"] == {0: "Acme Corpnova-internal"}


def test_stream_for() -> None:
    sse = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert gemini_array.stream_for(sse, "text/event-stream") is gemini_stream.GeminiStream
    arr = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert gemini_array.stream_for(arr, "application/json; charset=UTF-8") is gemini_array.GeminiArrayStream
    assert gemini_array.stream_for(arr.replace(":", "%3A"), "application/json") is gemini_array.GeminiArrayStream
    assert gemini_array.stream_for("/v1beta/models/gemini-2.5-flash:generateContent", "application/json") is None


@given(st.data())
def test_recorded_json_array_with_injected_disguises(data) -> None:
    up = (GEMINI_FIXTURES / "stream_json_array.json").read_bytes().replace(
        b'"text": "Scoop"', b'"text": "Zenith La"').replace(b'"text": "', b'"text": "[EMAIL_1] nova')
    out = run(gemini_array.GeminiArrayStream, up, data.draw(byte_splits(up, 30)))
    want, got = read_chunks(json.loads(up)), read_chunks(json.loads(out))
    assert got["text"] == {k: R.text(v) for k, v in want["text"].items()}
    assert got["thought"] == want["thought"] and got["signatures"] == want["signatures"]


def test_every_pair_of_cuts_around_element_starts_gives_the_whole_result() -> None:
    """Three reads, cut at every pair of points near where elements begin: an element
    begun in one read and whose bytes carry over must not be replaced by the next read
    as it came (the pieces' lengths can add up to the read's length while their bytes
    are not the read's: a first element's `{"` was lost so)."""
    body = to_array(build_chunks([("text", 0, "Zenith Labs said"), ("text", 0, " hello"), ("finish", 0, "alone")]))
    want = read_chunks(json.loads(run(gemini_array.GeminiArrayStream, body)))
    assert want["text"] == {0: "Acme Corp said hello"} and want["error"] is None
    starts = [i for i in range(len(body)) if body[i : i + 1] == b"{" and body[i - 1 : i] in (b"[", b"\n", b" ")]
    near = sorted({p for s in starts for p in range(s - 2, s + 4) if 0 < p < len(body)})
    for a in near:
        for b in near:
            if a < b:
                out = run(gemini_array.GeminiArrayStream, body, [body[:a], body[a:b], body[b:]])
                assert read_chunks(json.loads(out)) == want, (a, b)
