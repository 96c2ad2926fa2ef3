"""Logprobs (providers/logprobs.py): an entry whose token would show the client a
disguise is removed, and so is an alternative holding a whole one; the rest stays."""

from __future__ import annotations

import json

from disguiselib.providers.logprobs import apply_fixes, clean_alternatives, clean_whole, logprob_fixes
from strategies import PLACEHOLDERS, RULES

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
