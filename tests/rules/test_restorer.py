"""The Restorer (rules/restorer.py) against plain reference implementations: whole-text
reversal (disguises and a flow's issued placeholders back to originals, strip rules
deleting their matches), the hold point a window keeps, the JSON escape state that
decides whether a match in JSON text is one (also when the text comes in pieces), and
the strip rules' compiled forms."""

from __future__ import annotations

import json
import re

import pytest
import regex  # test-only oracle: partial matching ("could this still grow into a match?")
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.rules import mappings
from disguiselib.rules.restorer import JSON, TEXT, VALUE, compile_strip, esc_advance, strip_starts
from disguiselib.rules.rules import Rules

# -- reverse: whole-text reversal == the definition ----------------------------------

DISGUISES = {"nova": "NOVA-ORIG", "nova.cloud": "CLOUD-ORIG", "ab": "AB-ORIG", "bcd": "BCD-ORIG", "[x]": "BRACKET"}
STRIP = r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"
R_REV = Rules(
    mappings.from_dict(
        {
            "literals": {v: k for k, v in DISGUISES.items()},
            "patterns": [{"name": "EMAIL", "regex": "[a-z]+@[a-z]+"}, {"name": "E", "regex": "e@e"}],
            "strip": [{"regex": STRIP}],
        }
    )
)
ISSUED = {"[EMAIL_1]": "bob@corp", "[E_2]": 'q"\\'}
_rev_piece = st.one_of(
    st.sampled_from([*DISGUISES, *ISSUED, "[EMAIL_3]", "[[reply_to_current]]", "[[ reply_to:9 ]]", "[[reply_to:"]),
    st.text(alphabet="abcdnov.[]_xEMAIL12 ", max_size=5),
    # offsets are characters: UTF-8 of 2 to 4 bytes, a lone surrogate (3 bytes), a line break
    st.sampled_from(["é", "😀", "\ud83d", "\n"]),
)
rev_texts = st.lists(_rev_piece, max_size=10).map("".join)
_STRIP_PARTIAL = regex.compile(f"(?:{STRIP})(?!)")


def ref_restore(s: str, strip: bool, final: bool = True, disguises=DISGUISES, issued=ISSUED) -> str:
    """Leftmost; at one start a disguise (the longest), then an issued placeholder,
    then a strip match; a dangling unfinished strip match at the end is dropped."""
    out = []
    i = 0
    strip_rx = re.compile(STRIP)
    while i < len(s):
        hits = [d for d in disguises if s.startswith(d, i)]
        if hits:
            d = max(hits, key=len)
            out.append(disguises[d])
            i += len(d)
            continue
        m = re.compile(r"\[(?:EMAIL|E)_[1-9][0-9]{0,8}\]").match(s, i)
        if m is not None and m.group() in issued:
            out.append(issued[m.group()])
            i = m.end()
            continue
        if strip:
            m = strip_rx.match(s, i)
            if m is not None:
                i = m.end()
                continue
            if final and _STRIP_PARTIAL.fullmatch(s, i, partial=True) is not None:
                break  # the rest could only have become a strip match: dropped
        out.append(s[i])
        i += 1
    return "".join(out)


@given(rev_texts)
@example("nova.clou")
@example("abcd")
@example("x[[reply_to:1")
def test_whole_reversal_is_the_definition(s: str) -> None:
    r = R_REV.restorer(ISSUED)
    assert r.value(s) == ref_restore(s, strip=False)
    assert r.text(s) == ref_restore(s, strip=True)


@given(rev_texts)
def test_hold_point_is_the_leftmost_unfinished_match(s: str) -> None:
    """What a window holds is exactly the tail from the leftmost position where some
    disguise, issued placeholder or strip match may still be in progress (after the
    matches already completed)."""
    r = R_REV.restorer(ISSUED)
    out, h = r.run(s, TEXT, False, 0)
    unfinished = {*DISGUISES, *ISSUED}
    # every proper prefix of a disguise/placeholder, or of a strip match
    def pending(t: str) -> bool:
        return any(d.startswith(t) and d != t for d in unfinished) or _STRIP_PARTIAL.fullmatch(t, partial=True) is not None

    assert h == len(s) or pending(s[h:])
    # what goes out now is never taken back: it begins the final result
    assert R_REV.restorer(ISSUED).text(s).startswith(out)


def test_unissued_placeholder_stays_and_json_mode_escapes() -> None:
    r = R_REV.restorer(ISSUED)
    assert r.value("[EMAIL_3] [E_2]") == '[EMAIL_3] q"\\'
    assert r.json_text('{"k": "[E_2]"}') == '{"k": "q\\"\\\\"}'
    assert r.run("ab", JSON, True, -1)[0] == "ab"  # after a backslash: not a disguise
    assert r.run("ab", VALUE, True, 0)[0] == "AB-ORIG"


def test_restorer_counts_restored_and_stripped() -> None:
    r = R_REV.restorer(ISSUED)
    assert r.text("nova [[reply_to_current]] [EMAIL_1] [[reply_to:") == "NOVA-ORIG  bob@corp "
    assert (r.restored, r.stripped) == (2, 2)


# -- pieces: the primitive's output does not depend on where the text was cut ------------


def in_two(r, s: str, k: int, mode: int) -> str:
    """What a window does with s cut at k: restore s[:k] (not final), keep the held tail,
    carry the JSON escape state to where it begins, and restore the tail with the rest."""
    out, h = r.run(s[:k], mode, False, 0)
    assert 0 <= h <= k
    esc = esc_advance(s, 0, h, 0)
    rest, h2 = r.run(s[h:], mode, True, esc)
    assert h2 == len(s) - h or mode == TEXT  # final: nothing held (TEXT: a dangling strip match is dropped)
    return out + rest


@given(rev_texts, st.data())
def test_text_and_value_cut_anywhere_restore_like_the_whole(s: str, data) -> None:
    k = data.draw(st.integers(0, len(s)))
    assert in_two(R_REV.restorer(ISSUED), s, k, TEXT) == R_REV.restorer(ISSUED).text(s)
    assert in_two(R_REV.restorer(ISSUED), s, k, VALUE) == R_REV.restorer(ISSUED).value(s)


# -- JSON text: escape-aware, originals inserted JSON-escaped ------------------------------


def ref_esc(s: str, i: int, j: int, st_: int) -> int:
    """esc_advance character by character: 0 outside an escape, -1 right after a
    backslash, k > 0 with k hex digits of a \\u escape still to come."""
    for c in s[i:j]:
        if st_ == 0:
            st_ = -1 if c == "\\" else 0
        elif st_ == -1:
            st_ = 4 if c == "u" else 0
        else:
            st_ -= 1
    return st_


_esc_texts = st.text(alphabet="\\u0ab\"n", max_size=24)


@given(_esc_texts, st.sampled_from([0, -1, 1, 2, 3, 4]), st.data())
@example("\\\\u", 0, None)  # an escaped backslash, then a plain u
@example("\\u00e9\\", 0, None)
def test_esc_advance_is_the_definition_and_composes(s: str, start: int, data) -> None:
    assert esc_advance(s, 0, len(s), start) == ref_esc(s, 0, len(s), start)
    i, k, j = sorted(data.draw(st.lists(st.integers(0, len(s)), min_size=3, max_size=3)) if data else (0, 0, len(s)))
    # from any state at i, to k, then on to j: the same as i to j in one go
    assert esc_advance(s, i, j, start) == esc_advance(s, k, j, esc_advance(s, i, k, start)) == ref_esc(s, i, j, start)


def restore_doc(v):
    """The reference for JSON text: decode it, restore every key and string (no strip
    rules: JSON text is values), encode again."""
    if isinstance(v, str):
        return ref_restore(v, strip=False)
    if isinstance(v, list):
        return [restore_doc(x) for x in v]
    if isinstance(v, dict):
        return {ref_restore(k, strip=False): restore_doc(x) for k, x in v.items()}
    return v


# Characters whose JSON spelling holds a disguise or a placeholder's start inside an
# escape: `«` is `\u00ab`, `\u0bcd` holds `bcd`, a line break before `ova` is `\nova`,
# a backslash before `nova` is `\\nova` (the disguise after a whole escape).
_json_piece = st.one_of(
    _rev_piece,
    st.sampled_from(["«", "\u0bcd", "\u0abc", "\n", "\\", '"', "ova", "\t", "é"]),
)
_json_strings = st.lists(_json_piece, max_size=6).map("".join)
json_docs = st.dictionaries(_json_strings, st.one_of(_json_strings, st.lists(_json_strings, max_size=3)), max_size=4)


@given(json_docs, st.booleans(), st.data())
@example({"a": "«"}, True, None)  # \u00ab: `ab` is hex digits, not the disguise
@example({"a": "\u0bcd"}, True, None)  # \u0bcd: `bcd` likewise
@example({"a": "\nova"}, False, None)  # \nova: `nova` begins inside the escape
@example({"a": "\\nova"}, False, None)  # \\nova: a whole escape, then the disguise
@example({"[E_2]": "[E_2]"}, False, None)  # an original that needs escaping, as a key too
def test_json_text_restores_as_its_decoded_strings_would_be(doc, ascii_only: bool, data) -> None:
    raw = json.dumps(doc, ensure_ascii=ascii_only)
    r = R_REV.restorer(ISSUED)
    out = r.json_text(raw)
    assert json.loads(out) == restore_doc(doc)  # still JSON, every string restored as itself
    if data is not None:  # and so in two pieces, cut anywhere (inside an escape too)
        k = data.draw(st.integers(0, len(raw)))
        assert in_two(R_REV.restorer(ISSUED), raw, k, JSON) == out


@pytest.mark.parametrize(
    ("esc", "buf", "want"),
    [
        (0, "abcd", "AB-ORIGcd"),  # no escape: the leftmost-longest disguise
        (-1, "abcd", "aBCD-ORIG"),  # `a` ends an escape (`\a`...): `bcd` after it is one
        (-1, "ab", "ab"),  # right after a backslash: not a disguise
        (4, "abcd", "abcd"),  # four hex digits of \u: nothing here is text
        (3, "abcdab", "abcdAB-ORIG"),  # three digits left (`abc`): `d` after them, then `ab`
        (1, "abcd", "aBCD-ORIG"),  # one digit left: `a`; `bcd` after it
        (2, "ab[EMAIL_1]", 'abbob@corp'),
        (0, "[E_2]", 'q\\"\\\\'),  # the original JSON-escaped
        (-1, "\\[E_2]", '\\q\\"\\\\'),  # `\\` (an escaped backslash), then the placeholder
    ],
)
def test_the_escape_state_at_the_start_decides_what_is_a_match(esc: int, buf: str, want: str) -> None:
    assert R_REV.restorer(ISSUED).run(buf, JSON, True, esc)[0] == want


def test_strip_rules_never_apply_to_values_or_json_text() -> None:
    r = R_REV.restorer(ISSUED)
    tag = "a [[reply_to_current]] b"
    assert r.text(tag) == "a  b"
    assert r.value(tag) == tag and r.json_text(json.dumps(tag)) == json.dumps(tag)
    assert r.stripped == 1


# -- placeholders: issued ones only; a live session's may come later ----------------------


def test_a_flow_without_placeholders_holds_no_placeholder_prefix() -> None:
    assert R_REV.restorer({}).run("mail [EM", TEXT, False, 0) == ("mail [EM", 8)
    assert R_REV.restorer({}).value("[EMAIL_1]") == "[EMAIL_1]"  # never issued to this flow
    assert R_REV.restorer(ISSUED).run("mail [EM", TEXT, False, 0) == ("mail ", 5)
    # a disguise's prefix is held either way
    assert R_REV.restorer({}).run("at nova.c", TEXT, False, 0) == ("at ", 3)


def test_a_growing_session_holds_placeholder_prefixes_and_restores_later_ones() -> None:
    session: dict[str, str] = {}
    r = R_REV.restorer(session, growing=True)
    assert r.run("mail [EM", TEXT, False, 0) == ("mail ", 5)
    session["[EMAIL_7]"] = "late@corp"  # issued after the Restorer was made
    assert r.text("to [EMAIL_7] and [EMAIL_8]") == "to late@corp and [EMAIL_8]"


def test_an_unissued_placeholder_does_not_hide_an_issued_one_after_it() -> None:
    r = R_REV.restorer(ISSUED)
    assert r.value("[EMAIL_3][EMAIL_1]") == "[EMAIL_3]bob@corp"
    assert r.value("[[EMAIL_1]]") == "[bob@corp]"
    assert r.restored == 2


# -- offsets are characters, whatever the bytes ----------------------------------------------


def test_non_ascii_and_lone_surrogates_around_matches() -> None:
    r = R_REV.restorer(ISSUED)
    s = "\ud83dé nova 😀[[reply_to:é\ud83d]]\ud83d[EMAIL_1]é [[ reply"
    assert r.text(s) == "\ud83dé NOVA-ORIG 😀\ud83dbob@corpé "
    assert r.value("\ud83dab😀bcd") == "\ud83dAB-ORIG😀BCD-ORIG"
    assert r.run("é😀 nov", TEXT, False, 0) == ("é😀 ", 3)


# -- spans: where reversal changes a text, counting nothing ----------------------------------


def test_spans_are_the_edits_of_whole_text_reversal() -> None:
    r = R_REV.restorer(ISSUED)
    s = "é nova [[reply_to_current]] [EMAIL_3] [EMAIL_1] [[reply_to:"
    spans = r.spans(s)
    assert spans == [(2, 6), (7, 27), (38, 47), (48, len(s))]
    assert (r.restored, r.stripped) == (0, 0)
    assert r.spans("nothing here") == []
    # what lies between the spans is what whole-text reversal keeps
    kept = [s[a:b] for a, b in zip([0, *(e for _, e in spans)], [*(b for b, _ in spans), len(s)], strict=True)]
    assert r.text(s) == "é NOVA-ORIG  [EMAIL_3] bob@corp " and all(k in r.text(s) for k in kept)


@given(rev_texts)
def test_spans_cover_exactly_what_reversal_changes(s: str) -> None:
    r = R_REV.restorer(ISSUED)
    spans = r.spans(s)
    assert all(a < b for a, b in spans) and all(b <= c for (_, b), (c, _) in zip(spans, spans[1:]))
    fresh = R_REV.restorer(ISSUED)
    fresh.text(s)
    assert len(spans) == fresh.restored + fresh.stripped
    # nothing outside the spans changes: deleting every span deletes every edit
    kept = "".join(s[a:b] for a, b in zip([0, *(e for _, e in spans)], [*(b for b, _ in spans), len(s)], strict=True))
    # (the reference with every original restored as nothing)
    assert kept == ref_restore(s, strip=True, disguises=dict.fromkeys(DISGUISES, ""), issued=dict.fromkeys(ISSUED, ""))


# -- strip rules' compiled forms ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("rx", "first", "nonascii", "follow"),
    [
        (STRIP, {"["}, False, {"[": {"["}}),
        (r"\n-{3}\n", {"\n"}, False, {"\n": {"-"}}),  # a control character starts it
        ('"q"', {'"'}, False, {'"': {"q"}}),
        ("ab|c.", {"a", "c"}, False, {"a": {"b"}, "c": None}),  # `.`: anything may follow
        ("a", {"a"}, False, {"a": None}),  # a whole match in one character
        ("é+!", set(), True, {}),  # only a non-ASCII character starts it
    ],
)
def test_strip_starts(rx: str, first: set[str], nonascii: bool, follow: dict) -> None:
    got_first, got_nonascii, got_follow = strip_starts(rx)
    assert got_first == first and got_nonascii == nonascii
    assert {c: (None if f is None else set(f)) for c, f in got_follow.items()} == follow


@pytest.mark.parametrize(("rx", "why"), [("^tag", "anchor"), (r"a\b", "word boundar"), (r"(a)\1", "backreference")])
def test_compile_strip_refuses_what_a_stream_cannot_match(rx: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        compile_strip(rx)


def test_a_compiled_strip_rule_holds_its_prefixes_and_matches_within_its_width() -> None:
    s = compile_strip(STRIP)
    assert s.rx.search(b"x [[reply_to_current]] y", 0) == (2, 22)
    # hold: where a match may still be in progress at the end (empty at the end: nowhere)
    assert s.hold.search(b"x [[reply_to:12") == (2, 15)
    assert s.hold.search(b"x [") == (2, 3)
    assert s.hold.search(b"x [[reply_to_current]]") == (22, 22)
    assert s.width >= len("[[ reply_to:12 ]]")


# -- the shortcuts of _edits against its general loop ---------------------------------

# (one that ends with `[` begins a placeholder `[EM_1]`: refused at load, overlaps.py)
_short_disguise = st.text(alphabet="abn. _[", min_size=1, max_size=5).filter(lambda d: not d.endswith("["))


@given(
    st.lists(_short_disguise, min_size=1, max_size=6, unique=True),
    st.booleans(),
    st.lists(st.text(alphabet="abn. _[]EM1é\n", max_size=6), max_size=8).map("".join),
    st.sampled_from([TEXT, VALUE]),
    st.booleans(),
)
def test_plain_loop_and_hold_reach_match_the_general_search(disguises, issued, s, mode, final) -> None:
    """Disguises alone go through a plain loop over the automaton's matches, and the
    hold-back search starts where the text's last character can reach back to: both
    give what the general loop and a search over the longest disguise's span give."""
    lits = {f"Ö{i}é": d for i, d in enumerate(disguises)}
    ms = mappings.from_dict({"literals": lits, "patterns": [{"name": "EM", "regex": "Ö@[a-z]+"}],
                             "strip": [{"regex": "<x>"}]})  # fmt: skip
    rules = Rules(ms)
    ph = {"[EM_1]": "em@x.io"} if issued else {}
    fast, slow = rules.restorer(ph), rules.restorer(ph)
    try:
        type(slow).PLAIN_LOOP = False  # the class's: `fast` runs after it is restored
        want = slow.run(s, mode, final, 0), slow.restored
    finally:
        type(slow).PLAIN_LOOP = True
    assert (fast.run(s, mode, final, 0), fast.restored) == want
    if s and fast._hold is not None:
        m = fast._hold.search(s, max(0, len(s) - rules._hold_span))
        assert fast._hold_point(s, 0, (), False) == (m.start() if m else len(s))


# -- remember(): a text said again is restored once, with the same result and counts ---------

_long = st.lists(_rev_piece, min_size=1, max_size=12).map("".join).map(lambda t: (t + " ") * (1 + 300 // (len(t) + 1)))


@given(
    st.lists(st.tuples(st.sampled_from([TEXT, JSON, VALUE]), st.integers(0, 3), st.booleans()), min_size=1, max_size=10),
    st.lists(_long, min_size=4, max_size=4),
)
def test_a_remembering_restorer_gives_what_restoring_anew_gives_counts_included(calls, texts) -> None:
    """Restorer.remember (a Responses stream says each text whole up to four times): for
    texts long enough to be remembered, said again in any mode and order, with a
    placeholder issued between two sayings (a growing session: the key holds their
    number), each result and the counts after it are those of a restorer that restores
    every saying anew."""
    placeholders = dict(ISSUED)
    fresh, memo = R_REV.restorer(placeholders), R_REV.restorer(placeholders)
    memo.remember()
    for mode, i, grow in calls:
        assert len(texts[i]) >= memo.WHOLE_MIN
        if grow and "[EMAIL_3]" not in placeholders:
            placeholders["[EMAIL_3]"] = "late@corp"
        assert memo.whole(texts[i], mode) == fresh.run(texts[i], mode, True, 0)[0]
        assert (memo.restored, memo.stripped) == (fresh.restored, fresh.stripped)


def test_a_responses_stream_restores_a_text_said_again_once(monkeypatch) -> None:
    """A Responses stream's `output_text.done`, `content_part.done`, `output_item.done`
    and `response.completed` each say the message's text whole: it is restored once
    (Restorer.remember), and the client gets the very bytes of a stream that restores
    each saying anew."""
    from disguiselib.apis.openai.responses import ResponsesStream
    from disguiselib.rules.restorer import Restorer
    from openai_util import build_responses

    pieces = [f"nova.cloud [EMAIL_1] ab{i} [[reply_to_current]] bcd " for i in range(12)]
    args = ['{"q": "nova', '.cloud ab"}']
    body = build_responses(pieces, args)
    text = "".join(pieces)
    runs: list[str] = []
    real = Restorer.run

    def run(self, buf, mode, final, esc):  # type: ignore[no-untyped-def]
        if final and buf == text:
            runs.append(buf)
        return real(self, buf, mode, final, esc)

    monkeypatch.setattr(Restorer, "run", run)

    def through(remember: bool) -> tuple[bytes, int, int]:
        if not remember:
            monkeypatch.setattr(Restorer, "remember", lambda self: None)
        s = ResponsesStream(R_REV.restorer(dict(ISSUED)))
        out = b"".join(s.feed(body[i : i + 61]) for i in range(0, len(body), 61)) + s.flush()
        return out, s.restorer.restored, s.restorer.stripped

    once = through(True)
    assert len(runs) == 1
    runs.clear()
    again = through(False)
    assert len(runs) == 4
    assert once == again and b"NOVA-ORIG" not in body and b"CLOUD-ORIG" in once[0]
