"""Where an offset of the text as the model wrote it lands in the restored text
(base/offsets.py): built whole, or piece by piece by a window, the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.holdback import Window
from disguiselib.base.offsets import Offsets, TrackedWindow
from strategies import PLACEHOLDERS, RULES, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def test_an_offset_moves_by_what_was_restored_before_it() -> None:
    text = "Zenith Labs at [EMAIL_1] now"
    o = Offsets.of(text, R)
    assert R.text(text) == "Acme Corp at bob@corp.example.com now"
    assert [o.at(i) for i in (0, 11, 12, 15, 24, 25)] == [0, 9, 10, 13, 33, 34]
    # a bound inside a disguise widens to its whole original
    assert (o.at(3), o.at(3, end=True), o.at(18), o.at(18, end=True)) == (0, 9, 13, 33)
    assert not Offsets.of("nothing to restore", R).moved
    # a strip match is removed: what follows moves back
    assert Offsets.of("a [[reply_to_current]] b", R).at(23) == 3


@given(texts, st.data())
def test_a_tracked_window_notes_what_whole_text_restoring_moves(text: str, data) -> None:
    o = Offsets()
    w = TrackedWindow(R, Window.TEXT, o)
    out = "".join(w.feed(p) for p in data.draw(splits(text))) + w.flush()
    assert out == R.text(text)  # a window still
    whole = Offsets.of(text, R)
    assert o.length == len(text)
    for i in range(len(text) + 1):
        assert (o.at(i), o.at(i, True)) == (whole.at(i), whole.at(i, True)), i


def test_skipped_text_counts_toward_the_offsets() -> None:
    o = Offsets()
    w = TrackedWindow(R, Window.TEXT, o)
    o.skip(4)  # "abc " passed unparsed
    assert w.feed("Zenith Labs x") + w.flush() == "Acme Corp x"
    assert (o.at(4), o.at(15), o.at(17)) == (4, 13, 15)
