"""Gemini streams' citations (apis/google/cites.py): a chunk's grounding supports and
citation sources count UTF-8 bytes of the candidate's whole streamed text as the model
wrote it; once the stream is restored, for any way its bytes and its text are cut and
whichever way its chunks are written, each must cover the same pieces restored in the
text the client reassembles. The text of chunks that pass unparsed is read from their
bytes (read_layout), cross-checked here against json.loads."""

from __future__ import annotations

import json

import pytest
from google_util import GEMINI_FIXTURES, cand, chunk, read_chunks, sse_chunks, to_array, to_sse
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.apis.google.cites import read_layout
from disguiselib.wire import jsonarray
from strategies import LITERALS, PLACEHOLDERS, RULES, byte_splits, splits

# pieces of the answer, each restored on its own, joined by spaces: disguises (one
# restores to an original with a quote and a backslash, one is stripped), and plain text
# with what JSON escapes (a quote, a backslash, a line break, a control character: \\u0001)
# and characters of 2 and 4 bytes
_PIECES = [*LITERALS.values(), "[EMAIL_1]", "[EMAIL_2]", "[EMAIL_9]", "[[reply_to_current]]", "the", "é", "😀", "x",
           'say "hi"', "a\\b", "two\nlines", "\x01", "\\u00e9"]  # fmt: skip
# how a stream is written: (class, writer); the API's own layouts are read from their
# bytes, the others (spaced SSE, a compact array) parsed to be counted
_WRITERS = {
    "sse": (gemini_stream.GeminiStream, lambda cs: to_sse(cs)),
    "sse-lf-spaced": (gemini_stream.GeminiStream, lambda cs: to_sse(cs, eol="\n", spaced=True)),
    "array": (gemini_array.GeminiArrayStream, lambda cs: to_array(cs, pretty=True)),
    "array-compact": (gemini_array.GeminiArrayStream, lambda cs: to_array(cs)),
    "vertex": (gemini_stream.GeminiStream, lambda cs: to_sse(_vertex(cs))),
}
R = RULES.restorer(PLACEHOLDERS)


def _vertex(chunks: list[dict]) -> list[dict]:
    """Chunks as Vertex writes them: a candidate's content with its role first, index 0
    left out."""
    out = []
    for c in chunks:
        c = {**c}
        if "candidates" in c:
            cands = []
            for cd in c["candidates"]:
                cd = {**cd}
                if cd.get("index") == 0:
                    del cd["index"]
                if isinstance(cd.get("content"), dict):
                    content = cd["content"]
                    cd["content"] = {"role": content.get("role", "model"), **content}
                cands.append(cd)
            c["candidates"] = cands
        out.append(c)
    return out


def _n(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _client(cls, out: bytes) -> list[dict]:
    return json.loads(out) if cls is gemini_array.GeminiArrayStream else sse_chunks(out)


def _bounds(pieces: list[str], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte bounds of whole pieces i..j (j exclusive) in the pieces joined by spaces."""

    def at(i: int, end: bool) -> int:
        head = " ".join(pieces[:i])
        return _n(head) + (1 if i and not end and i < len(pieces) else 0)

    return [(at(i, False), at(j, True) if j > i else at(i, False)) for i, j in spans]


def _stream(pieces: list[str], spans: list[tuple[int, int]], cut: list[str], thought: bool) -> list[dict]:
    """The chunks an upstream sends: the text in the pieces cut, the last with the
    finishReason and the citations (their bounds counted on the whole disguised text)."""
    text = " ".join(pieces)
    bounds = _bounds(pieces, spans)
    last = cut.pop() if len(cut) > 1 else ""  # the last piece of text may come with the citations
    chunks = [chunk([cand(0, [{"text": "Zenith Labs? 😀 \"q\"", "thought": True}])])] if thought else []
    chunks += [chunk([cand(0, [{"text": p}])]) for p in cut]
    final = cand(0, [{"text": last}], "STOP")
    final["groundingMetadata"] = {
        "groundingChunks": [{"web": {"uri": "https://zenith.example/", "title": "Zenith Labs"}}],
        "groundingSupports": [{"segment": {"startIndex": s, "endIndex": e,
                                           "text": text.encode("utf-8", "surrogatepass")[s:e].decode()},
                               "groundingChunkIndices": [0]} for s, e in bounds]}  # fmt: skip
    final["citationMetadata"] = {"citationSources": [{"startIndex": s, "endIndex": e} for s, e in bounds]}
    chunks.append(chunk([final]))
    return chunks


@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), how=st.sampled_from(sorted(_WRITERS)),
       thought=st.booleans(), data=st.data())  # fmt: skip
@example(pieces=["Zenith Labs", "the", "é"], how="sse", thought=False, data=None)  # a disguise, then quiet text
def test_streamed_citations_cover_the_same_pieces_once_restored(pieces, how, thought, data) -> None:
    cls, write = _WRITERS[how]
    if data is None:  # the example: a chunk per piece, the body as one read
        spans, cut, reads = [(0, 1), (1, 3), (0, 3)], ["Zenith Labs", " the", " é", ""], None
    else:
        pairs = st.tuples(st.integers(0, len(pieces)), st.integers(0, len(pieces))).map(sorted)
        spans = [tuple(x) for x in data.draw(st.lists(pairs, min_size=1, max_size=4))]
        cut, reads = data.draw(splits(" ".join(pieces))), data
    body = write(_stream(pieces, spans, cut, thought))
    s = cls(RULES.restorer(PLACEHOLDERS))
    parts = [body] if reads is None else reads.draw(byte_splits(body))
    got = _client(cls, b"".join(s.feed(p) for p in parts) + s.flush())
    restored = read_chunks(got)["text"][0]
    back = [R.text(p) for p in pieces]
    assert restored == " ".join(back)
    cited = [c for c in got if "groundingMetadata" in c["candidates"][0]][0]["candidates"][0]
    b = restored.encode("utf-8", "surrogatepass")
    for (i, j), sup, src in zip(spans, cited["groundingMetadata"]["groundingSupports"],
                                cited["citationMetadata"]["citationSources"], strict=True):  # fmt: skip
        seg = sup["segment"]
        want = " ".join(back[i:j])
        assert b[seg.get("startIndex", 0) : seg["endIndex"]].decode("utf-8", "surrogatepass") == want, (i, j)
        assert b[src.get("startIndex", 0) : src["endIndex"]].decode("utf-8", "surrogatepass") == want, (i, j)


@pytest.mark.parametrize("how", sorted(_WRITERS))
def test_text_that_passed_unparsed_before_the_citing_chunk_is_counted(how) -> None:
    # "Zenith Labs" (11 bytes) becomes "Acme Corp" (9): everything after it moves back 2
    # bytes, including "é rockets" (bytes 18-28) in a chunk that passes unparsed (nothing
    # in it can be restored) before the chunk that cites it
    cls, write = _WRITERS[how]
    final = cand(0, [{"text": "."}], "STOP")
    final["groundingMetadata"] = {"groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 11}},
                                                        {"segment": {"startIndex": 18, "endIndex": 28}}]}  # fmt: skip
    final["citationMetadata"] = {"citationSources": [{"startIndex": 18, "endIndex": 28}]}
    texts = ["Zenith Labs", " makes ", "é rockets"]
    body = write([chunk([cand(0, [{"text": t}])]) for t in texts] + [chunk([final])])
    s = cls(RULES.restorer(PLACEHOLDERS))
    got = _client(cls, s.feed(body) + s.flush())
    assert read_chunks(got)["text"][0] == "Acme Corp makes é rockets."
    meta = got[-1]["candidates"][0]
    assert [x["segment"] for x in meta["groundingMetadata"]["groundingSupports"]] == [
        {"startIndex": 0, "endIndex": 9}, {"startIndex": 16, "endIndex": 26}]  # fmt: skip
    assert meta["citationMetadata"]["citationSources"] == [{"startIndex": 16, "endIndex": 26}]
    assert s.offsets[0].length == _n("Zenith Labs makes é rockets.")


def test_a_stream_that_restores_nothing_keeps_its_citations_byte_identical() -> None:
    final = cand(0, [{"text": " rockets."}], "STOP")
    final["groundingMetadata"] = {"groundingSupports": [{"segment": {"startIndex": 3, "endIndex": 17}}]}
    body = to_sse([chunk([cand(0, [{"text": "We make"}])]), chunk([final])])
    s = gemini_stream.GeminiStream(RULES.restorer(PLACEHOLDERS))
    assert s.feed(body) + s.flush() == body


def test_a_segment_naming_another_part_or_past_the_released_text_keeps_its_offsets() -> None:
    # citations in a chunk before the candidate's last: "Zen" is still held, so a bound
    # past what was released stays; partIndex 1 is not the streamed text
    mid = cand(0, [{"text": "Zenith Labs and Zen"}])
    mid["groundingMetadata"] = {"groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 11}}, {"segment": {"startIndex": 16, "endIndex": 30}},
        {"segment": {"partIndex": 1, "startIndex": 12, "endIndex": 15}}]}  # fmt: skip
    body = to_sse([chunk([mid]), chunk([cand(0, [{"text": "ith Labs."}], "STOP")])])
    s = gemini_stream.GeminiStream(RULES.restorer(PLACEHOLDERS))
    got = sse_chunks(s.feed(body) + s.flush())
    segs = [x["segment"] for x in got[0]["candidates"][0]["groundingMetadata"]["groundingSupports"]]
    assert segs == [{"startIndex": 0, "endIndex": 9}, {"startIndex": 14, "endIndex": 30},
                    {"partIndex": 1, "startIndex": 12, "endIndex": 15}]  # fmt: skip
    assert read_chunks(got)["text"][0] == "Acme Corp and Acme Corp."


@pytest.mark.parametrize("how", ["sse", "array"])
def test_a_chunk_read_from_its_bytes_that_names_a_candidate_not_yet_open_is_parsed(how) -> None:
    # candidate 1 comes first; candidate 0's chunk, in the API's own shape with nothing
    # in it to restore, still opens candidate 0 (SSE: a stream that then ends without
    # its finishReason was cut short)
    cls, write = _WRITERS[how]
    body = write([chunk([cand(1, [{"text": "one"}])]), chunk([cand(0, [{"text": "zero"}])]),
                  chunk([cand(1, [{"text": "."}], "STOP")])])  # fmt: skip
    s = cls(RULES.restorer(PLACEHOLDERS))
    out = s.feed(body)
    assert s._open == {0} and s.offsets[0].length == 4
    if cls is gemini_stream.GeminiStream:
        assert "cut short" in sse_chunks(out + s.flush())[-1]["error"]["message"]


# -- read_layout: chunks counted from their bytes ---------------------------------------------

_TEXTS = st.text(st.sampled_from(['"', "\\", "\n", "\x01", "u", "0", "é", "😀", "a", " ", "}", "]", ",", ":"]), max_size=12)


def _expected(chunks: list[dict]) -> tuple[int, int, bool]:
    """Parsed: candidate 0's answer bytes, every other candidate's, and whether a chunk
    names a candidate list."""
    zero = other = 0
    for c in chunks:
        for cd in c.get("candidates", []):
            n = sum(_n(p["text"]) for p in cd.get("content", {}).get("parts", []) if "text" in p and not p.get("thought"))
            if cd.get("index", 0) == 0:
                zero += n
            else:
                other += n
    return zero, other, any("candidates" in c for c in chunks)


@st.composite
def _chunk(draw) -> dict:
    """A chunk, most often in the API's own shape (one candidate, index 0, one text
    part, perhaps a thought), else with what that shape cannot hold."""
    k = draw(st.sampled_from([0, 0, 0, 1]))
    parts = [{"text": draw(_TEXTS)}]
    extra = draw(st.sampled_from(["", "", "", "thought", "signature", "two", "none", "usage-only"]))
    if extra == "thought":
        parts[0]["thought"] = True
    elif extra == "signature":
        parts[0]["thoughtSignature"] = "c2ln"
    elif extra == "two":
        parts.append({"text": draw(_TEXTS)})
    if extra == "usage-only":
        return {"usageMetadata": {"promptTokenCount": 3}}
    return chunk([cand(k, None if extra == "none" else parts)])


@given(st.lists(_chunk(), min_size=1, max_size=5), st.sampled_from(["sse", "array", "vertex"]))
def test_read_layout_counts_what_json_loads_counts(chunks, how) -> None:
    if how == "array":
        body = to_array(chunks, pretty=True)
        f = jsonarray.ArrayFramer()
        blocks = [raw for kind, raw in f.feed(body) if kind == jsonarray.ELEMENT]
        assert len(blocks) == len(chunks)
        got = [read_layout(b, 0, len(b)) for b in blocks]
        want = [_expected([c]) for c in chunks]
    else:  # every event at once
        body = to_sse(_vertex(chunks) if how == "vertex" else chunks)
        got, want = [read_layout(body, 0, len(body))], [_expected(chunks)]
    for g, (zero, other, named) in zip(got, want, strict=True):
        if g is not None:
            assert g == (zero, named) and other == 0
    own = all("candidates" not in c or _own_shape(c) for c in chunks)
    assert own == all(g is not None for g in got), "the API's own shape is read from its bytes, nothing else"


def _own_shape(c: dict) -> bool:
    (cd,) = c["candidates"]
    parts = cd.get("content", {}).get("parts")
    return cd["index"] == 0 and isinstance(parts, list) and len(parts) == 1 and set(parts[0]) <= {"text", "thought"}


@pytest.mark.parametrize("name", ["stream_sse_text.sse", "stream_sse_thinking.sse", "stream_sse_max_tokens.sse"])
def test_recorded_sse_streams_are_read_from_their_bytes(name) -> None:
    body = (GEMINI_FIXTURES / name).read_bytes()
    # the last event holds the finishReason (parsed); all before it, read from bytes
    cut = body.rfind(b"data: ")
    zero, _, named = _expected(sse_chunks(body[:cut]))
    assert read_layout(body, 0, cut) == (zero, named)
    assert named == (cut > 0) and (zero > 0) == (name == "stream_sse_text.sse")  # (thinking: thoughts only)


def test_the_recorded_array_is_read_from_its_bytes() -> None:
    f = jsonarray.ArrayFramer()
    body = (GEMINI_FIXTURES / "stream_json_array.json").read_bytes()
    elements = [raw for kind, raw in f.feed(body) if kind == jsonarray.ELEMENT]
    assert len(elements) > 1
    for raw in elements:
        doc = json.loads(raw)
        got = read_layout(raw, 0, len(raw))
        if not any(x.get("finishReason") for x in doc.get("candidates", [])):
            assert got == (_expected([doc])[0], True)
