"""The text a person reads in the contentviews (inspect/render.py): styled lines for any
body, marked spans bracketed, a disguise that arrived in pieces marked in every row."""

from __future__ import annotations

import re

from anthropic_util import build_stream
from disguiselib.inspect import render


def mark_word(word: str):
    return lambda text: [(m.start(), m.end()) for m in re.finditer(re.escape(word), text)]


def test_marked_spans_are_bracketed_and_styled() -> None:
    lines = render.text_lines("see Zenith Labs\nand Zenith Labs", mark_word("Zenith Labs"))
    assert render.text_of(lines) == "see ⟦Zenith Labs⟧\nand ⟦Zenith Labs⟧"
    assert ("mark", "⟦Zenith Labs⟧") in [seg for line in lines for seg in line]
    assert render.text_of(render.text_lines("plain")) == "plain"


def test_a_disguise_split_over_events_is_marked_in_every_row() -> None:
    body = build_stream([("text", ["hi Zen", "ith La", "bs!"])])
    text = render.render_stream(body, mark_word("Zenith Labs"))
    assert text.splitlines()[0].startswith("8 events, 1 channel")
    assert "hi ⟦Zenith Labs⟧!" in text  # the channel's whole text
    rows = [ln for ln in text.splitlines() if "⟦" in ln and "hi ⟦Zenith Labs⟧!" not in ln]
    assert any("⟦Zen⟧" in r for r in rows) and any("⟦ith La⟧" in r for r in rows) and any("⟦bs⟧" in r for r in rows)


def test_bodies_by_content() -> None:
    assert render.render_body(b'{"a":"Zenith Labs"}', "", mark_word("Zenith Labs")) == '{\n  "a": "⟦Zenith Labs⟧"\n}'
    assert render.render_body(b"plain \xff") == "plain \ufffd"
    body = build_stream([("text", ["x"])])
    assert render.render_body(body, "application/json") == render.render_stream(body)
