"""The hold-back window: output never depends on how the input was cut."""

from __future__ import annotations

import itertools
import json

from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.base.holdback import Window
from strategies import PLACEHOLDERS, RULES, splits, texts

R = RULES.restorer(PLACEHOLDERS)


def whole(s: str, mode: int = Window.TEXT) -> str:
    w = Window(R, mode)
    return w.feed(s) + w.flush()


def streamed(pieces: list[str], mode: int = Window.TEXT) -> str:
    w = Window(R, mode)
    return "".join(w.feed(p) for p in pieces) + w.flush()


def test_whole_text_examples() -> None:
    assert whole("Hi Zenith Labs!") == "Hi Acme Corp!"
    assert whole("mail [EMAIL_1] or [EMAIL_9]") == "mail bob@corp.example.com or [EMAIL_9]"
    assert whole("nova and nova.cloud") == "nova-internal and nova-internal.cloud"
    assert whole("a [[reply_to_current]] b") == "a  b"
    assert whole("cut off [[reply_to:<") == "cut off "  # dangling half tag dropped
    assert whole("WINPATH") == 'C:\\Users\\a "b"'


def test_a_disguise_as_a_url_holds_it_is_restored_as_the_url_would_hold_the_original() -> None:
    """The masker writes `Zenith Labs` in a URL as `Zenith%20Labs` (percent.encode); the
    answer's copy, and one with a form's `+`, come back as the client's URL reads."""
    assert whole("https://x.example/?q=Zenith%20Labs&r=Zenith+Labs") == "https://x.example/?q=Acme%20Corp&r=Acme+Corp"
    assert whole("/Unicode%20Ltd/") == "/%C3%9Cn%C3%AFc%C3%B8d%C3%A9%20GmbH/"
    assert whole("Zenith%2") == "Zenith%2" and whole("Zenith+Lab") == "Zenith+Lab"
    w = Window(R, Window.TEXT)
    assert w.feed("q=Zenith%2") == "q="  # it may still become one
    assert w.feed("0Labs&") == "Acme%20Corp&"
    s = "a=Zenith%20Labs+Zenith+Labs%20Zenith%20Lab"
    want = whole(s)
    assert want == "a=Acme%20Corp+Acme+Corp%20Zenith%20Lab"
    for i, j in itertools.combinations(range(len(s) + 1), 2):
        assert streamed([s[:i], s[i:j], s[j:]]) == want


def test_longer_disguise_waits_for_next_characters() -> None:
    # billing-proxy PR #63: at a cut after "nova" the window must not choose yet
    w = Window(R, Window.TEXT)
    assert w.feed("see nova") == "see "
    assert w.feed(".c") == ""
    assert w.feed("loud now") == "nova-internal.cloud now"
    assert w.flush() == ""


def test_lone_bracket_is_a_prefix() -> None:
    w = Window(R, Window.TEXT)
    assert w.feed("x [") == "x "
    assert w.feed("EMAIL_1] y") == "bob@corp.example.com y"


def test_prose_is_never_held() -> None:
    w = Window(R, Window.TEXT)
    for piece in ["The quick ", "brown fox ", "jumps over ", "the lazy dog."]:
        assert w.feed(piece) == piece
        assert w.held == ""


@given(texts, st.data())
@example("Zenith Labs", None)
@example("[[reply_to:<", None)
def test_any_split_equals_whole(s: str, data) -> None:
    pieces = data.draw(splits(s)) if data is not None else [s[:3], s[3:]]
    assert streamed(pieces) == whole(s)


@given(texts)
def test_every_two_and_three_way_split(s: str) -> None:
    s = s[:24]
    expect = whole(s)
    n = len(s)
    for i in range(n + 1):
        assert streamed([s[:i], s[i:]]) == expect, i
    for i, j in itertools.combinations(range(n + 1), 2):
        assert streamed([s[:i], s[i:j], s[j:]]) == expect, (i, j)


@given(texts, st.data())
def test_value_mode_any_split(s: str, data) -> None:
    assert streamed(data.draw(splits(s)), Window.VALUE) == whole(s, Window.VALUE)


# -- JSON text (tool arguments) ------------------------------------------------------

_keys = st.sampled_from(["thread_id", "path", "crm_lookup", "a", "WINPATH", "nova"])
_vals = st.one_of(texts, st.integers(), st.none(), st.booleans())
json_docs = st.dictionaries(_keys, st.one_of(_vals, st.lists(_vals, max_size=3)), max_size=5)


def restore_value(v):
    if isinstance(v, str):
        return whole(v, Window.VALUE)
    if isinstance(v, list):
        return [restore_value(x) for x in v]
    if isinstance(v, dict):
        return {whole(k, Window.VALUE): restore_value(x) for k, x in v.items()}
    return v


@given(json_docs, st.booleans(), st.data())
@example({"path": "WINPATH"}, False, None)
@example({"thread_id": "\\nova"}, True, None)
@example({"a": "\nova"}, False, None)
def test_json_text_restores_keys_and_values_and_still_parses(doc, ascii, data) -> None:
    text = json.dumps(doc, ensure_ascii=ascii)
    pieces = data.draw(splits(text, max_cuts=12)) if data is not None else [text[:7], text[7:]]
    out = streamed(pieces, Window.JSON)
    assert out == whole(text, Window.JSON)
    assert json.loads(out) == restore_value(doc)


def test_match_inside_escape_is_not_a_disguise() -> None:
    # JSON text `"\nova"` is newline + "ova": no disguise there.
    assert whole('{"a": "\\nova"}', Window.JSON) == '{"a": "\\nova"}'
    # ...even when the backslash came in an earlier piece
    assert streamed(['{"a": "\\', 'nova"}'], Window.JSON) == '{"a": "\\nova"}'
    # a disguise right after an escaped backslash is one
    assert whole('{"a": "\\\\nova"}', Window.JSON) == '{"a": "\\\\nova-internal"}'


def test_restored_original_is_json_escaped() -> None:
    out = streamed(['{"p": "WIN', 'PATH", "e": "[EMAIL_2]"}'], Window.JSON)
    assert json.loads(out) == {"p": 'C:\\Users\\a "b"', "e": 'q"uote\\d@x.io'}


def test_json_text_cut_inside_an_escape_before_a_disguise_restores_like_the_whole() -> None:
    """JSON text `"\\nova…"`: the `n` belongs to the escape `\\n`, so `nova` there is not
    the disguise `nova`. Cut between `\\no` and `va` (and everywhere else) the window
    gives what the whole text gives; a real `nova` after it is restored."""
    r = RULES.restorer({})
    text = '{"k": "\\nova-x nova-internal nova"}'
    whole = r.json_text(text)
    assert whole == '{"k": "\\nova-x nova-internal-internal nova-internal"}'
    cut = text.index("\\no") + 3
    w = Window(r, Window.JSON)
    assert w.feed(text[:cut]) + w.feed(text[cut:]) + w.flush() == whole
    for i in range(len(text) + 1):
        w = Window(r, Window.JSON)
        assert w.feed(text[:i]) + w.feed(text[i:]) + w.flush() == whole, i


# -- survivors of `make mutation` (base/holdback.py) -------------------------------------


def test_json_text_that_begins_with_a_disguise_is_restored_fed_or_flushed() -> None:
    """A JSON window starts outside any escape: a disguise at the very start of its text is
    one, whether it goes out as fed or as the held tail at the end (where the tail, not
    the text, begins with it)."""
    r = RULES.restorer({})
    w = Window(r, Window.JSON)
    assert w.feed("Zenith Labs, ") == "Acme Corp, "
    w = Window(r, Window.JSON)
    assert w.feed('{"a": "x ') == '{"a": "x ' and w.feed("nova") == "" and w.held == "nova"
    assert w.flush() == "nova-internal"


def test_a_piece_that_is_a_lone_backslash_starts_an_escape() -> None:
    """JSON text cut so that one piece is just `\\`: the next piece's first character
    belongs to that escape (`\\n` + `ova`), so `nova` there is no disguise. An escape cut
    short is held until it is whole (decoded, it may be part of a disguise), nothing
    more."""
    r = RULES.restorer({})
    w = Window(r, Window.JSON)
    out = w.feed('{"k": "') + w.feed("\\") + w.feed('nova x nova"}') + w.flush()
    assert out == '{"k": "\\nova x nova-internal"}'
    w = Window(r, Window.JSON)
    assert w.feed("\\") == "" and w.held == "\\" and w.feed("u") == "" and w.held == "\\u"
    assert w.feed("00e9 nova") == "\\u00e9 " and w.held == "nova"
    assert w.feed("\\u00") == "" and w.held == "nova\\u00"
    assert w.feed("2d x") == "nova-internal\\u002d x" and w.held == ""


def test_a_flushed_window_starts_afresh() -> None:
    r = RULES.restorer(PLACEHOLDERS)
    for mode in (Window.TEXT, Window.VALUE, Window.JSON):
        w = Window(r, mode)
        w.feed("see \\u00e9 nov")  # ends holding text (and, in JSON, after an escape)
        w.flush()
        assert w.held == ""
        assert w.feed("Zenith Labs. ") == "Acme Corp. ", mode
        assert w.flush() == ""


def test_window_for_keeps_at_most_max_channels_holding_text() -> None:
    """The one channel table (every stream and realtime connection): a channel's window
    is made once; with every channel in use the empty ones are forgotten first, and
    MAX_CHANNELS windows holding text end the stream, named by its owner."""
    import pytest

    from disguiselib.base.holdback import MAX_CHANNELS, window_for
    from disguiselib.errors import StreamError

    windows: dict = {}
    w = window_for(windows, "a", R, Window.TEXT)
    assert window_for(windows, "a", R, Window.TEXT) is w
    for k in range(MAX_CHANNELS - 1):
        window_for(windows, k, R, Window.TEXT)
    assert len(windows) == MAX_CHANNELS
    window_for(windows, "new", R, Window.TEXT)  # all empty: forgotten, room again
    assert list(windows) == ["new"]
    for k in range(MAX_CHANNELS - 1):
        window_for(windows, k, R, Window.TEXT).feed("owner Zen")  # a tail held in each
    windows["new"].feed("owner Zen")
    with pytest.raises(StreamError, match=f"the connection holds text in more than {MAX_CHANNELS} blocks"):
        window_for(windows, "one more", R, Window.TEXT, "blocks", "the connection")
