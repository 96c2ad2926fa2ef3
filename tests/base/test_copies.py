"""base/copies.py: an original a rule found only by its context (a key, a keyword, where
a domain ends) is masked wherever the request copies it, and the leak guard refuses a
copy masking could not reach.

The shipped rules are in force (PASSWORD, SECRET, PHONE_NATIONAL, EMAIL: the ones that
read context). Each case is the conversation of probe J1: the client's text gives the
context, the model's answer names the value by its placeholder, the client gets it
restored and sends it back, where nothing around it says what it is."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import pipeline
from disguiselib.apis.registry import recognise
from disguiselib.base import copies
from disguiselib.config import build_config
from disguiselib.rules.session import Session

API = recognise("POST", "/v1/messages")
HEADERS = [("content-type", "application/json")]
CFG = build_config([], True, [])

# (what the client wrote, the original a rule found there by its context, the model's
# answer as the client reads it: the original without that context)
CASES = [
    ('db_password = "hunter2xyz9Q"', "hunter2xyz9Q", "Your value hunter2xyz9Q is weak"),
    ("export STRIPE_SECRET=Xk29fLq0ZbA7pWm3", "Xk29fLq0ZbA7pWm3", "Rotate Xk29fLq0ZbA7pWm3 now"),
    ("write to bob@corp-mail.com", "bob@corp-mail.com", "The bob@corp-mail.com-related thread is open"),
]


def mask(messages: list, **extra: object) -> pipeline.Verdict:
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": messages, **extra}).encode()
    return pipeline.mask_request(API, body, CFG, "/v1/messages", HEADERS)


@pytest.mark.parametrize(("said", "original", "answer"), CASES)
def test_the_answer_sent_back_is_masked_as_the_model_wrote_it(said: str, original: str, answer: str) -> None:
    got = mask([{"role": "user", "content": said}, {"role": "assistant", "content": answer},
                {"role": "user", "content": "ok"}])  # fmt: skip
    assert isinstance(got, pipeline.Masked), got
    sent = json.loads(got.body)["messages"]
    placeholder = next(p for p, o in got.session.placeholders.items() if o == original)
    assert original not in got.body.decode()
    assert sent[1]["content"] == answer.replace(original, placeholder)


@pytest.mark.parametrize(("said", "original", "answer"), CASES)
def test_a_copy_before_its_context_is_masked_too(said: str, original: str, answer: str) -> None:
    """The copy comes first (a system prompt, a tool result printed earlier): masked all the same."""
    got = mask([{"role": "user", "content": said}], system=answer)
    assert isinstance(got, pipeline.Masked), got
    assert original not in got.body.decode()


def test_a_copy_where_masking_reads_nothing_goes_as_it_came() -> None:
    """A signed thinking block is the provider's own, sent back byte-identical: a copy in
    it is neither masked nor refused."""
    thinking = {"type": "thinking", "thinking": "The value hunter2xyz9Q is weak.", "signature": "c2ln"}
    got = mask([{"role": "user", "content": 'db_password = "hunter2xyz9Q"'},
                {"role": "assistant", "content": [thinking, {"type": "text", "text": "Weak."}]}])  # fmt: skip
    assert isinstance(got, pipeline.Masked), got
    assert json.loads(got.body)["messages"][1]["content"][0] == thinking


def test_a_copy_no_reading_finds_is_refused() -> None:
    """Written with escapes JSON reads as the same text, a copy is still the original."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": 'db_password = "hunter2xyz9Q"'},
        {"role": "assistant", "content": "Your value HUNTER is weak"}]}).replace("HUNTER", "\\u0068unter2xyz9Q")  # fmt: skip
    got = pipeline.mask_request(API, body.encode(), CFG, "/v1/messages", HEADERS)
    assert isinstance(got, pipeline.Masked) and "hunter2xyz9Q" not in json.loads(got.body)["messages"][1]["content"] \
        or isinstance(got, pipeline.Refused), got  # fmt: skip


def test_left_over_reads_edits_and_replacements() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1" y pw1'
    assert copies.left_over(text, [(3, 6, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}
    assert copies.left_over(text, [(3, 6, "[PASSWORD_1]"), (10, 13, "[PASSWORD_1]")], s) == {}
    again = 'x "[PASSWORD_1]" y pw1' + " " * 64  # a token encoded again whole: its new text read too
    assert copies.left_over(text, [(0, 13, again)], s) == {"pw1": "PASSWORD"}
    assert copies.left_over('x "pw1" \\/', [(3, 6, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}  # an odd escape
    assert copies.left_over(text, [], Session()) == {}


def test_add_keeps_what_masking_replaced() -> None:
    s = Session()
    ph = s.placeholder("PASSWORD", "pw1")
    edits = copies.add("pw1 and pw1x", [(0, 3, ph)], {"pw1": "PASSWORD"}, s)
    assert edits == [(0, 3, ph), (8, 11, ph)]
    assert copies.spellings('a"b') == ('a\\"b',) and copies.spellings("é") == ("é", "\\u00e9")


_filler = st.sampled_from(["the", "value", "is", "weak", "\n", "é", '"', "ok", "see"])
_words = st.lists(_filler, max_size=5).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), before=_words, after=_words, where=st.sampled_from(["system", "assistant", "tool"]))
def test_no_copy_of_a_found_original_leaves(case: tuple[str, str, str], before: str, after: str, where: str) -> None:
    said, original, _ = case
    copy = f"{before} {original} {after}"
    messages: list[dict] = [{"role": "user", "content": said}]
    extra: dict = {}
    if where == "system":
        extra["system"] = copy
    elif where == "assistant":
        messages.append({"role": "assistant", "content": copy})
    else:
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": copy}]}]  # fmt: skip
    got = mask(messages, **extra)
    assert isinstance(got, pipeline.Masked), got
    assert original not in got.body.decode("utf-8")
    assert json.dumps(original)[1:-1] not in got.body.decode("utf-8")



class _BigToken:
    """masking._Token as left_over reads it: where its text begins in s, its own edits."""

    def __init__(self, start: int, edits: list) -> None:
        self.start, self.edits = start, edits


def test_left_over_counts_characters_not_bytes() -> None:
    """A body with non-ASCII text before the copies: places in characters."""
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'é ü "pw1" 😀 pw1'
    first, second = text.index("pw1"), text.rindex("pw1")
    assert copies.left_over(text, [(first, first + 3, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}
    covered = [(first, first + 3, "[PASSWORD_1]"), (second, second + 3, "[PASSWORD_1]")]
    assert copies.left_over(text, covered, s) == {}


def test_left_over_reads_a_big_texts_own_edits_and_every_replacement() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1 and pw1" y'
    token = _BigToken(3, [(0, 3, "[PASSWORD_1]")])  # the second copy, at 11, no edit of the token covers
    assert copies.left_over(text, [(3, 14, token)], s) == {"pw1": "PASSWORD"}
    token = _BigToken(3, [(0, 3, "[PASSWORD_1]"), (8, 11, "[PASSWORD_1]")])
    assert copies.left_over(text, [(3, 14, token)], s) == {}
    again = "y" * 63 + "\\/"  # a token encoded again whole, holding an odd escape: all found originals
    assert copies.left_over("x pw1", [(2, 5, again)], s) == {"pw1": "PASSWORD"}


def test_left_over_sees_an_original_inside_another() -> None:
    """Two found originals overlapping in the text: each occurrence is looked at."""
    s = Session()
    s.placeholder("A", "abc")
    s.placeholder("B", "bcd")
    assert copies.left_over("abcd", [(0, 3, "[A_1]")], s) == {"bcd": "B"}


def test_left_over_reads_lone_surrogates() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    assert copies.left_over('"\ud800 pw1"', [], s) == {"pw1": "PASSWORD"}


def test_add_replaces_every_uncovered_copy_counted() -> None:
    s = Session()
    ph = s.placeholder("PASSWORD", "pw1")
    s.count("PASSWORD", "pw1")
    edits = copies.add("pw1 pw1 pw1pw1", [(4, 7, ph)], {"pw1": "PASSWORD"}, s)
    assert edits == [(0, 3, ph), (4, 7, ph), (8, 11, ph), (11, 14, ph)]
    assert s.counts == {"PASSWORD": 4} and s.masked == 4 and not s.literals
    assert copies.add("xpw1", [(0, 1, "[X_1]")], {"pw1": "PASSWORD"}, s) == [(0, 1, "[X_1]"), (1, 4, ph)]
    assert copies.add("pw1", [(0, 2, "[X_1]")], {"pw1": "PASSWORD"}, s) == [(0, 2, "[X_1]")]


def test_a_copy_gets_the_originals_fake() -> None:
    """With fakes on, a copy is given the fake its original was given, not a placeholder."""
    from disguiselib.rules import mappings, rules

    fakes = rules.Rules(mappings.from_dict({"patterns": [{"name": "EMAIL", "regex": r"\b[a-z]+@[a-z]+\.example\.com\b"}]}),
                        b"copies-fakes-key")  # fmt: skip
    s = Session()
    fake = s.placeholder("EMAIL", "ann@a.example.com", fakes.faker)
    assert not fake.startswith("[")
    got = copies.add("ann@a.example.com-x", [], {"ann@a.example.com": "EMAIL"}, s, fakes.faker)
    assert got == [(0, 17, fake)]
    s2 = Session()
    assert copies.add("ann@a.example.com", [], {"ann@a.example.com": "EMAIL"}, s2, fakes.faker)[0][2] == fake


def test_left_over_places_each_original_in_order_of_place() -> None:
    """Two originals found, the one found later standing first, in non-ASCII text; an
    occurrence an edit covers only in part is not covered."""
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    s.placeholder("SECRET", "qq2")
    text = 'é "qq2" ü "pw1" qq2'
    q, p = text.index("qq2"), text.index("pw1")
    assert copies.left_over(text, [(q, q + 3, "[SECRET_1]"), (p, p + 3, "[PASSWORD_1]")], s) == {"qq2": "SECRET"}
    last = text.rindex("qq2")
    edits = [(q, q + 3, "[SECRET_1]"), (p, p + 3, "[PASSWORD_1]"), (last, last + 2, "[SECRET_1]")]
    assert copies.left_over(text, edits, s) == {"qq2": "SECRET"}


def test_left_over_places_a_big_texts_edits_from_its_start() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1 ab" y'
    assert copies.left_over(text, [(3, 9, _BigToken(3, [(4, 6, "[Z_1]")]))], s) == {"pw1": "PASSWORD"}


def test_left_over_encodes_what_holds_a_lone_surrogate() -> None:
    s = Session()
    s.placeholder("PASSWORD", "x\ud800y")
    assert copies.left_over("a x\ud800y", [], s) == {"x\ud800y": "PASSWORD"}
    s.placeholder("A", "abc")
    s.placeholder("B", "bcd")
    again = "\ud800" + "y" * 64 + "abcd"  # a token encoded again whole: every original in it, overlapping too
    assert copies.left_over("z", [(0, 1, again)], s) == {"abc": "A", "bcd": "B"}


# The one-pass search (rules/knowing.Originals) against the search it replaced, one
# original at a time: the same pieces, the same edits in the same order, the same
# numbering, on texts made of the originals' own pieces (overlaps, repeats, one inside
# another, non-ASCII of every width, a lone surrogate).
_ALPHABET = st.sampled_from(["a", "b", "ab", "é", "€", "𝄞", "\ud800", " ", "x"])
_ORIGINAL = st.lists(_ALPHABET, min_size=1, max_size=4).map("".join)
_TEXT = st.lists(_ALPHABET, max_size=30).map("".join)


def _holding_one_by_one(pieces: list[str], known: dict[str, str]) -> list[int]:
    return [k for k, p in enumerate(pieces) if any(o in p for o in known)]


def _add_one_by_one(text: str, edits: list, known: dict[str, str], session: Session) -> list:
    import bisect

    more = []
    taken = [(a, b) for a, b, _ in edits]
    for original, name in known.items():
        i = text.find(original)
        while i >= 0:
            j = i + len(original)
            k = bisect.bisect_left(taken, (j,))
            if k == 0 or taken[k - 1][1] <= i:
                more.append((i, j, session.placeholder(name, original)))
                session.count(name, original)
                bisect.insort(taken, (i, j))
            i = text.find(original, j)
    return sorted([*edits, *more], key=lambda e: e[0]) if more else edits


@settings(max_examples=400, deadline=None)
@given(originals=st.lists(_ORIGINAL, min_size=1, max_size=4, unique=True), pieces=st.lists(_TEXT, max_size=6))
def test_holding_finds_the_pieces_a_search_per_original_finds(originals: list[str], pieces: list[str]) -> None:
    known = {o: f"R{k}" for k, o in enumerate(originals)}
    assert copies.holding(pieces, known) == _holding_one_by_one(pieces, known)


@settings(max_examples=400, deadline=None)
@given(originals=st.lists(_ORIGINAL, min_size=1, max_size=4, unique=True), text=_TEXT, cut=st.data())
@example(originals=["aa"], text="aaa", cut=[0, 1])  # the copy after one the edit took is no copy: it overlaps that one
@example(originals=["ab", "b"], text="abab", cut=[4, 4])
@example(originals=["aa", "b"], text="aaab", cut=[0, 1])  # and the originals after it are still looked for
def test_add_makes_the_edits_a_search_per_original_makes(originals: list[str], text: str, cut: st.DataObject | list[int]) -> None:
    known = {o: f"R{k % 2}" for k, o in enumerate(originals)}
    # an edit masking made before: a piece of the text, or none
    a, b = cut if isinstance(cut, list) else (a := cut.draw(st.integers(0, len(text))), cut.draw(st.integers(a, len(text))))
    edits = [(a, b, "[X_1]")] if b > a else []
    s1, s2 = Session(), Session()
    got = copies.add(text, list(edits), known, s1)
    assert got == _add_one_by_one(text, list(edits), known, s2)
    assert s1.placeholders == s2.placeholders and s1.counts == s2.counts


def _every_place(needles: list, text: str | bytes) -> list[tuple[int, int, int]]:
    """(k, start, end) of every place needle k is in text, overlapping ones too, by a
    search per needle (the reference the tests below hold the one-pass searches to)."""
    each = []
    for k, p in enumerate(needles):
        i = text.find(p)
        while i >= 0:
            each.append((k, i, i + len(p)))
            i = text.find(p, i + 1)
    return each


@settings(max_examples=300, deadline=None)
@given(originals=st.lists(_ORIGINAL, min_size=1, max_size=4, unique=True), text=_TEXT)
@example(originals=["aa", "a"], text="aaa")  # every place, overlapping ones too
def test_the_guard_finds_every_copy_a_search_per_original_finds(originals: list[str], text: str) -> None:
    from disguiselib.rules.knowing import Originals

    known = Originals({o: f"R{k}" for k, o in enumerate(originals)})
    assert known.matches(text) == sorted(_every_place(originals, text))


def test_masking_again_stops_when_nothing_new_is_spelled_and_is_bounded() -> None:
    """copies.more: None where the masked text spells no original known does not hold;
    the originals to mask again with, known's too, where it does; MaskError at the
    COPY_ROUNDS-th masking again that still reveals one."""
    from disguiselib.errors import MaskError
    from disguiselib.rules.knowing import Originals

    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1" y "pw1"'  # the second copy no edit covers
    assert copies.more(text, [(3, 6, "[PASSWORD_1]")], Session(), Originals()) is None  # nothing found
    got = copies.more(text, [(3, 6, "[PASSWORD_1]")], s, Originals({"pw0": "PASSWORD"}))
    assert got == {"pw0": "PASSWORD", "pw1": "PASSWORD"}
    assert copies.more(text, [(3, 6, "[PASSWORD_1]")], s, got) is None  # known already
    last = Session(copied=copies.COPY_ROUNDS)
    last.placeholder("PASSWORD", "pw1")
    with pytest.raises(MaskError, match="round after round"):
        copies.more(text, [(3, 6, "[PASSWORD_1]")], last, Originals())


# left_over's search (copies.Places: the short spellings by a Hyperscan literal database or
# the automaton, the long ones by bytes.find) against a search per spelling, LONG made small
# so that both kinds meet
_BYTES = st.lists(st.sampled_from([b"a", b"b", b"ab", b"\xc3\xa9", b" "]), max_size=30).map(b"".join)
_NEEDLE = st.lists(st.sampled_from([b"a", b"b", b"ab", b"\xc3\xa9"]), min_size=1, max_size=5).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(patterns=st.lists(_NEEDLE, min_size=1, max_size=5, unique=True), text=_BYTES, long=st.integers(1, 6))
@example(patterns=[b"aa", b"a"], text=b"aaa", long=2)  # every place, overlapping ones too, of both kinds
def test_places_finds_what_a_search_per_spelling_finds(patterns: list[bytes], text: bytes, long: int) -> None:
    each = _every_place(patterns, text)
    old = copies.Places.LONG
    copies.Places.LONG = long
    try:
        got = copies.Places(patterns).places(text)
    finally:
        copies.Places.LONG = old
    assert sorted(got) == sorted(each)
    assert [i for _, i, _ in got] == sorted(i for _, i, _ in each)  # in order of place


def test_left_over_builds_no_automaton_of_a_long_original(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private key found (1.7 kB) is looked for by bytes.find: an automaton (or a
    Hyperscan database) of it cost more to build than the scan of a 1 MB body it was built for. Its copies are found as
    before: the one no edit covers, not the one masked."""
    key = "MIIEow" + "Q" * 1700
    s = Session()
    ph = s.placeholder("PRIVATE_KEY", key)
    s.placeholder("PASSWORD", "pw1")
    built: list[list[bytes]] = []
    real = copies.ahocorasick_rs.BytesAhoCorasick

    def spy(patterns: list[bytes], **k: object) -> object:
        built.append(list(patterns))
        return real(patterns, **k)

    real_db = copies.leftmost.database
    monkeypatch.setattr(copies.ahocorasick_rs, "BytesAhoCorasick", spy)
    monkeypatch.setattr(copies.leftmost, "database", lambda keys: built.append(list(keys)) or real_db(keys))
    text = f'é "{key}" "pw1" x {key} y' + " " * copies.Places.SHORT  # (a shorter text: neither built at all)
    a, p = text.index(key), text.index("pw1")
    edits = [(a, a + len(key), ph), (p, p + 3, "[PASSWORD_1]")]
    assert copies.left_over(text, edits, s) == {key: "PRIVATE_KEY"}
    assert built and all(len(x) < 1000 for patterns in built for x in patterns)
    last = text.rindex(key)
    assert copies.left_over(text, [*edits, (last, last + len(key), ph)], s) == {}


@settings(max_examples=400, deadline=None)
@given(patterns=st.lists(_NEEDLE, min_size=1, max_size=6), texts=st.lists(_BYTES, min_size=1, max_size=3),
       long=st.integers(1, 6), short=st.integers(0, 12))  # fmt: skip
@example(patterns=[b"ab", b"b", b"ab", b"a"], texts=[b"abab"], long=9, short=99)  # one place of two, in k's order
def test_a_lazy_places_finds_the_automatons_places_in_its_order(patterns, texts, long, short) -> None:  # noqa: ANN001
    """Places(lazy=True) searches a text under SHORT bytes string by string: the very
    list the automaton gives (duplicates, overlaps, the long ones), and once a longer
    text came, the automaton's."""
    old = copies.Places.LONG, copies.Places.SHORT
    copies.Places.LONG, copies.Places.SHORT = long, short
    try:
        lazy, eager = copies.Places(patterns, lazy=True), copies.Places(patterns)
        for text in texts:
            assert lazy.places(text) == eager.places(text)
    finally:
        copies.Places.LONG, copies.Places.SHORT = old


def test_left_over_of_a_short_text_builds_no_automaton(monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 29: a next turn's new messages (turns.py: a kB or two) are read for the
    copies of the ~40 originals its conversation's rules found: string by string, not by
    an automaton of them all (0.26 ms to build, on the event loop); the same answer."""
    s = Session()
    originals = [f"user{i}@corp{i}.example.com" for i in range(40)]
    for o in originals:
        s.placeholder("EMAIL", o)
    built: list[int] = []
    real = copies.ahocorasick_rs.BytesAhoCorasick
    monkeypatch.setattr(copies.ahocorasick_rs, "BytesAhoCorasick", lambda p, **k: built.append(len(p)) or real(p, **k))
    real_db = copies.leftmost.database  # (or a Hyperscan database of them)
    monkeypatch.setattr(copies.leftmost, "database", lambda keys: built.append(len(keys)) or real_db(keys))
    text = json.dumps({"content": f"write to {originals[7]} and [EMAIL_1]"})
    a = text.index("[EMAIL_1]")
    assert copies.left_over(text, [(a, a + 9, "[EMAIL_1]")], s) == {originals[7]: "EMAIL"} and built == []
    long = text + " " * copies.Places.SHORT
    assert copies.left_over(long, [(a, a + 9, "[EMAIL_1]")], s) == {originals[7]: "EMAIL"} and built


@settings(max_examples=200, deadline=None)
@given(originals=st.lists(_ORIGINAL, min_size=1, max_size=4, unique=True), text=_TEXT, cut=st.data())
def test_left_over_reads_the_bytes_given_as_it_reads_the_text(originals: list[str], text: str, cut: st.DataObject) -> None:
    """raw (the body's bytes, which masking holds): the same answer as s encoded."""
    s = Session()
    for k, o in enumerate(originals):
        s.placeholder(f"R{k}", o)
    a = cut.draw(st.integers(0, len(text)))
    b = cut.draw(st.integers(a, len(text)))
    edits = [(a, b, "[X_1]")] if b > a else []
    raw = text.encode("utf-8", "surrogatepass")
    assert copies.left_over(text, edits, s, raw) == copies.left_over(text, edits, s)


def test_masking_hands_left_over_the_body_it_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The body's bytes are what left_over reads: the masked JSON text is not encoded again
    (1 MB: half a millisecond)."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": 'db_password = "hunter2xyz9Q" é'}]}).encode()  # fmt: skip
    seen: list[object] = []
    real = copies.left_over

    def spy(s: str, edits: object, session: Session, raw: bytes | None = None) -> object:
        seen.append(raw)
        return real(s, edits, session, raw)  # type: ignore[arg-type]

    monkeypatch.setattr(copies, "left_over", spy)
    got = pipeline.mask_request(API, body, CFG, "/v1/messages", HEADERS)
    assert isinstance(got, pipeline.Masked) and b"hunter2xyz9Q" not in got.body
    assert seen and all(r is body for r in seen)


def test_odd_escapes_are_where_left_over_reads_an_escape_no_writer_makes() -> None:
    b = rb'{"a":"x\/y \u0041 \u00e9 \\\/ \u001b"}'
    got = copies.odd_escapes(b)
    assert got == [b.index(rb"\/"), b.index(rb"\u0041"), b.index(rb"\\\/") + 2]
    assert copies.odd_escapes(b'{"a":"plain \\u00e9"}') == []


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(_NEEDLE, min_size=1, max_size=5, unique=True), text=_BYTES, long=st.integers(1, 6))
@example(patterns=[b"aa", b"a"], text=b"aaa", long=9)  # one start, two ends: the shorter first
def test_places_by_hyperscan_are_the_automatons_in_the_same_order(
    patterns: list[bytes], text: bytes, long: int
) -> None:
    """Where Hyperscan reads the short spellings (every match, reported by its end), the
    places are the automaton's (the reference: matches dense enough that the scan stops),
    in the very same order: by start, then end, the long ones after."""
    old = copies.Places.LONG, copies.leftmost.DENSE, copies.leftmost.LEAST
    copies.Places.LONG = long
    try:
        places = copies.Places(patterns)
        assert places._scan is not None or all(len(p) >= long for p in patterns)
        got = places.places(text)
        copies.leftmost.DENSE, copies.leftmost.LEAST = 1 << 30, -1  # any match is too many
        assert places.places(text) == got
    finally:
        copies.Places.LONG, copies.leftmost.DENSE, copies.leftmost.LEAST = old

