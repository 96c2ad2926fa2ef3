"""Gemini's citations count UTF-8 bytes of a candidate's text as the model wrote it
(gemini.py's Cited registrations, read by base/offsets.citation_fixes through restore_doc):
grounding supports' segments in the part `partIndex` names, citation sources in a
candidate of one part. Once restored, each must cover the same pieces restored."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.google.gemini import RESPONSE
from disguiselib.base.restore import restore_body, restore_doc
from strategies import LITERALS, PLACEHOLDERS, RULES

R = RULES.restorer(PLACEHOLDERS)

# pieces of a text, each restored on its own (a disguise, a strip tag, a word), joined by
# spaces; non-ASCII ones make bytes and characters differ
_PIECES = [*LITERALS.values(), "[EMAIL_1]", "[EMAIL_9]", "[[reply_to_current]]", "the", "é", "😀", "x"]


def _n(s: str) -> int:
    return len(s.encode("utf-8"))


def _spans(pieces: list[str], data) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Spans of whole pieces (i, j) and their byte bounds in the pieces joined by spaces."""
    spans = data.draw(st.lists(st.tuples(st.integers(0, len(pieces)), st.integers(0, len(pieces))).map(sorted),
                               min_size=1, max_size=4))  # fmt: skip
    text = " ".join(pieces)

    def at(i: int, end: bool) -> int:
        if end and i:
            return _n(" ".join(pieces[:i]))  # a piece's end, not the space after it
        return min(_n(" ".join(pieces[:i])) + (1 if i else 0), _n(text))

    return spans, [(at(i, False), at(j, True) if j > i else at(i, False)) for i, j in spans]


def _read(text_bytes: bytes, s: int, e: int) -> str:
    return text_bytes[s:e].decode("utf-8")


@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), thought=st.booleans(), data=st.data())
def test_grounding_segments_and_citation_sources_cover_the_same_pieces(pieces, thought, data) -> None:
    spans, cites = _spans(pieces, data)
    text = " ".join(pieces)
    parts = ([{"text": "Zenith Labs thinks", "thought": True}] if thought else []) + [{"text": text}]
    k = len(parts) - 1
    supports = [{"segment": {"startIndex": s, "endIndex": e, "text": text.encode()[s:e].decode(),
                             **({"partIndex": k} if k else {})}, "groundingChunkIndices": [0]}
                for s, e in cites]  # fmt: skip
    sources = [{"startIndex": s, "endIndex": e, "uri": "https://zenith.example/"} for s, e in cites]
    cand = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0,
            "groundingMetadata": {"groundingChunks": [{"web": {"uri": "https://x/", "title": "Zenith Labs"}}],
                                  "groundingSupports": supports},
            "citationMetadata": {"citationSources": sources}}  # fmt: skip
    raw = json.dumps({"candidates": [cand]}, ensure_ascii=False)
    out = json.loads(restore_body(raw.encode(), RESPONSE, R))["candidates"][0]
    restored = out["content"]["parts"][k]["text"].encode()
    back = [R.text(p) for p in pieces]
    assert restored.decode() == " ".join(back)
    for (i, j), sup in zip(spans, out["groundingMetadata"]["groundingSupports"], strict=True):
        seg = sup["segment"]
        assert _read(restored, seg.get("startIndex", 0), seg["endIndex"]) == " ".join(back[i:j])
    srcs = out["citationMetadata"]["citationSources"]
    if thought:  # sources name no part: with two, which text they count is not known
        assert srcs == sources
    else:
        for (i, j), src in zip(spans, srcs, strict=True):
            assert _read(restored, src["startIndex"], src["endIndex"]) == " ".join(back[i:j])


def test_bounds_that_are_not_places_in_the_text_stay_and_a_missing_start_is_zero() -> None:
    text = "é Zenith Labs makes rockets."  # é: two bytes
    cand = {"content": {"parts": [{"text": text}]}, "groundingMetadata": {"groundingSupports": [
        {"segment": {"endIndex": 15, "text": "é Zenith Labs"}},  # startIndex 0, left out (proto3)
        {"segment": {"startIndex": 1, "endIndex": 999}},  # inside é; past the end
        {"segment": {"partIndex": 3, "startIndex": 16, "endIndex": 30}},  # no such part
        {"segment": {"startIndex": 16, "endIndex": True}},  # not a number
    ]}}  # fmt: skip
    raw = json.dumps({"candidates": [cand]})
    out = json.loads(restore_doc(raw, json.loads(raw), RESPONSE, R))["candidates"][0]
    assert out["content"]["parts"][0]["text"] == "é Acme Corp makes rockets."
    segs = [s["segment"] for s in out["groundingMetadata"]["groundingSupports"]]
    assert segs[0] == {"endIndex": 13, "text": "é Acme Corp"}
    assert segs[1:] == [{"startIndex": 1, "endIndex": 999}, {"partIndex": 3, "startIndex": 16, "endIndex": 30},
                        {"startIndex": 14, "endIndex": True}]  # fmt: skip
