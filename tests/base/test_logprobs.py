"""Logprobs (base/logprobs.py): an entry whose token would show the client a
disguise is removed, and so is an alternative holding a whole one; the rest stays."""

from __future__ import annotations

import json

import hypothesis.strategies as st
from hypothesis import given, settings

from disguiselib.apis.google.gemini import gemini_whole
from disguiselib.apis.openai.legacy import CompletionsStream
from disguiselib.base.logprobs import apply_fixes, clean_alternatives, clean_whole, completion_whole, logprob_fixes
from strategies import PLACEHOLDERS, RULES, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def e(token: str, tops: list[str] | None = None, raw: bool = False) -> dict:
    d: dict = {"token": token, "logprob": -0.5}
    if raw:
        d["bytes"] = list(token.encode())
    if tops is not None:
        d["top_logprobs"] = [{"token": t, "logprob": -1.0} for t in tops]
    return d


def test_entries_overlapping_a_restored_match_are_removed_the_rest_stay() -> None:
    entries = [e("hi"), e(" Zen", raw=True), e("ith Labs"), e(" and"), e(" nova.cloud"), e(" é")]
    text = "hi Zenith Labs and nova.cloud é"
    got = clean_whole(text, entries, R)
    assert [x["token"] for x in got] == ["hi", " and", " é"]
    assert clean_whole("nothing here", [e("nothing"), e(" here")], R) is None  # nothing to drop


def test_tokens_are_laid_over_the_text_by_their_utf8_bytes() -> None:
    text = "éé Zenith Labs"
    entries = [e("éé"), e(" Zenith Labs")]
    assert [x["token"] for x in clean_whole(text, entries, R)] == ["éé"]
    entries = [{"token": "é", "bytes": [195]}, {"token": "é", "bytes": [169, 195, 169]}, e(" x")]
    assert clean_whole("éé x", entries, R) is None


def test_a_dangling_strip_match_at_the_end_counts_as_a_change() -> None:
    got = clean_whole("ok [[reply_to:", [e("ok"), e(" [["), e("reply_to:")], R)
    assert [x["token"] for x in got] == ["ok"]


def test_alternatives_holding_a_whole_disguise_are_dropped() -> None:
    entries = [e("a", ["Zenith Labs", "b"]), e("c", ["d"]), "not a dict"]
    got = clean_alternatives(entries, R)
    assert got is not None and [t["token"] for t in got[0]["top_logprobs"]] == ["b"]
    assert got[1] is entries[1] and got[2] == "not a dict"
    assert clean_alternatives([e("a", ["b"])], R) is None
    assert clean_whole("abc", [e("abc", ["Zenith Labs"])], R)[0]["top_logprobs"] == []


def test_fixes_for_chat_choices_and_responses_parts_apply_to_the_document() -> None:
    doc = {"choices": [{"message": {"content": "hi Zenith Labs", "refusal": None},
                        "logprobs": {"content": [e("hi"), e(" Zenith Labs")], "refusal": None}}],
           "output": [{"content": [{"type": "output_text", "text": "nova", "logprobs": [e("nova")]}]}]}  # fmt: skip
    fixes = logprob_fixes(doc, R)
    paths = sorted(p for p, _ in fixes)
    assert paths == [("choices", 0, "logprobs", "content"), ("output", 0, "content", 0, "logprobs")]
    out = json.loads(json.dumps(doc))
    apply_fixes(out, fixes)
    assert [x["token"] for x in out["choices"][0]["logprobs"]["content"]] == ["hi"]
    assert out["output"][0]["content"][0]["logprobs"] == []
    assert logprob_fixes({"choices": [{"message": {"content": "plain."}, "logprobs": {"content": [e("plain.")]}}]},
                         R) == []  # fmt: skip


# -- legacy Completions: tokens join to the restored text, offsets point into it ------------



def completion_lp(tokens: list[str], base: int) -> dict:
    offs, o = [], base
    for t in tokens:
        offs.append(o)
        o += len(t)
    return {"tokens": tokens, "token_logprobs": [-0.25] * len(tokens),
            "top_logprobs": [{t: -0.25, **({"Zenith Labs": -3.0} if i == 0 else {})} for i, t in enumerate(tokens)],
            "text_offset": offs}  # fmt: skip


def assert_laid_over(lp: dict, text: str, base: int) -> None:
    toks = lp["tokens"]
    assert "".join(toks) == text
    assert all(len(lp[a]) == len(toks) for a in ("token_logprobs", "top_logprobs", "text_offset"))
    for tok, off in zip(toks, lp["text_offset"], strict=True):
        assert text[off - base : off - base + len(tok)] == tok
    for tops in lp["top_logprobs"]:
        assert tops is None or "Zenith Labs" not in tops


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=texts, base=st.integers(0, 50))
def test_completion_tokens_join_to_the_restored_text(data, text: str, base: int) -> None:
    tokens = data.draw(splits(text))
    lp = completion_lp(tokens, base)
    new = completion_whole(lp, text, R) or {**lp, "top_logprobs": [{t: -0.25} for t in tokens]}
    assert_laid_over(new, R.text(text), base)
    kept = [t for t, p in zip(new["tokens"], new["token_logprobs"], strict=True) if p is not None]
    assert all(t in tokens for t in kept)  # kept entries are upstream's own, probability and all


def test_completion_whole_example() -> None:
    text = "Hi Zenith Labs and nova.cloud ok"
    lp = completion_lp(["Hi", " Zen", "ith", " Labs", " and", " nova", ".cloud", " ok"], 10)
    got = completion_whole(lp, text, R)
    assert got is not None
    assert got["tokens"] == ["Hi", " Acme Corp", " and", " nova-internal.cloud", " ok"]
    assert got["token_logprobs"] == [-0.25, None, -0.25, None, -0.25]
    assert got["text_offset"] == [10, 12, 22, 26, 46]


def sse_chunk(text: str, lp: dict | None, finish: str | None = None) -> bytes:
    doc = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
           "choices": [{"text": text, "index": 0, "logprobs": lp, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=texts, base=st.integers(0, 50))
def test_streamed_completion_tokens_join_to_the_restored_text(data, text: str, base: int) -> None:
    tokens = [t for t in data.draw(splits(text)) if t] or [""]
    lp = completion_lp(tokens, base)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(tokens)), max_size=6)))) + [len(tokens)]
    body, prev = b"", 0
    for n, c in enumerate(cuts):
        if c <= prev and n < len(cuts) - 1:
            continue
        part = {a: v[prev:c] for a, v in lp.items()}
        body += sse_chunk("".join(part["tokens"]), part, "stop" if n == len(cuts) - 1 else None)
        prev = c
    body += b"data: [DONE]\n\n"
    s = CompletionsStream(RULES.restorer(PLACEHOLDERS))
    pieces = data.draw(st.lists(st.integers(1, max(1, len(body))), max_size=8))
    out, pos = b"", 0
    for k in sorted(set(pieces)):
        out += s.feed(body[pos:k])
        pos = k
    out += s.feed(body[pos:]) + s.flush()
    docs = [json.loads(x[6:]) for x in out.decode().split("\n") if x.startswith("data: {")]
    restored = "".join(d["choices"][0]["text"] for d in docs)
    assert restored == R.text(text)
    joined: dict = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for d in docs:
        for a in joined:
            joined[a] += (d["choices"][0]["logprobs"] or {}).get(a) or []
    assert_laid_over(joined, restored, base)


# -- Gemini: logprobsResult over the candidate's text ------------------------------------------


def test_gemini_chosen_tokens_over_a_disguise_go_with_their_step() -> None:
    chosen = [{"token": t, "logProbability": -0.5} for t in ["Hi", " Zen", "ith Labs", " ok"]]
    tops = [{"candidates": [c, {"token": "Zenith Labs", "logProbability": -4.0}]} for c in chosen]
    got = gemini_whole({"chosenCandidates": chosen, "topCandidates": tops, "logProbabilitySum": -2.0},
                       "Hi Zenith Labs ok", R)  # fmt: skip
    assert got is not None
    assert [c["token"] for c in got["chosenCandidates"]] == ["Hi", " ok"]
    assert [[c["token"] for c in t["candidates"]] for t in got["topCandidates"]] == [["Hi"], [" ok"]]
    assert "Zenith" not in json.dumps(got)
    assert gemini_whole({"chosenCandidates": chosen[:1], "topCandidates": tops[:1][:0]}, "Hi", R) is None


def test_offsets_move_in_chunks_after_a_restoration_that_hold_no_trigger() -> None:
    """Chunks after a restoration that changed the length are parsed even when nothing in
    them could be restored (the fast path would pass them with stale offsets)."""
    tokens = ["Zenith Labs", " ok", " yes", " sir"]
    lp = completion_lp(tokens, 0)
    lp["top_logprobs"] = [{t: -0.25} for t in tokens]
    s = CompletionsStream(RULES.restorer(PLACEHOLDERS))
    chunks = [sse_chunk(t, {a: v[i : i + 1] for a, v in lp.items()}, "stop" if i == 3 else None)
              for i, t in enumerate(tokens)]  # fmt: skip
    out = s.feed(chunks[0]) + s.feed(b"".join(chunks[1:]))  # the later ones in one read
    out += s.feed(b"data: [DONE]\n\n") + s.flush()
    docs = [json.loads(x[6:]) for x in out.decode().split("\n") if x.startswith("data: {")]
    text = "".join(d["choices"][0]["text"] for d in docs)
    joined: dict = {a: [] for a in ("tokens", "token_logprobs", "top_logprobs", "text_offset")}
    for d in docs:
        for a in joined:
            joined[a] += d["choices"][0]["logprobs"][a]
    assert text == "Acme Corp ok yes sir"
    assert_laid_over(joined, text, 0)
    last = docs[-1]["choices"][0]["logprobs"]  # passed as it came but for its offset
    assert last == {"tokens": [" sir"], "token_logprobs": [-0.25], "top_logprobs": [{" sir": -0.25}],
                    "text_offset": [16]}  # fmt: skip
