"""The guard's trust in a list the masker's walk left out whole (base/fieldwalk.py:
Clean.left_out, the compiled guard's twin): a wire/text.LeftOut in the raw run names the
document's own list object, and the guard skips that object unread. That is sound only
while the list the guard reads still says what leaves: no string of it changed in place
between the walk and the guard (base/masking.py: _drop_old and masked_doc write only into
the owners of the tokens masking changed, and every element of a LeftOut's list was left
out of the tokens), and the bytes sent holding, where the guard's document holds it, a
list equal to it. These tests pin that, with both walks and both guards."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.base import fields, fieldwalk, masking
from disguiselib.base.document import Dup
from disguiselib.errors import MaskError
from disguiselib.rules import rawscan
from disguiselib.rules.found import Memo
from disguiselib.wire import jsonspan, spanwalk
from disguiselib.wire.jsonspan import SKIP, USER, VALUES, Obj
from disguiselib.wire.text import LeftOut
from strategies import make_rules

RULES = make_rules()
ORIGINAL = "Acme Corp"
# clean short strings (the raw pass leaves them out), the original, strings the walk
# reads one by one (an escape once written, JSON-looking), a number, an inner list
_element = st.one_of(
    st.sampled_from(["ab", "v1q", "tool", "x y", ORIGINAL, "é", "a\nb", "[1]", "Acme"]),
    st.integers(0, 9),
    st.lists(st.sampled_from(["cd", ORIGINAL, "é"]), min_size=1, max_size=3),
)
# a tool input's members as written: (key, value, the value again under the same key
# written the other way: escaped (ensure_ascii) where the first was not, or not at all)
_members = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.lists(_element, min_size=1, max_size=5), st.booleans()),
    min_size=1,
    max_size=4,
)
# enough clean short strings for the raw pass to be made (rules/rawscan.py)
FILLER = [f"v{i:x}q" for i in range(rawscan.STRINGS_MIN)]


def _body(members: list) -> bytes:
    parts = [f'"fill": {json.dumps(FILLER)}']
    for key, value, again in members:
        parts.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
        if again:  # the same value under the same key (no clash), its non-ASCII escaped
            parts.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=True)}")
    tool = '{"type": "tool_use", "id": "t", "name": "f", "input": {' + ", ".join(parts) + "}}"
    return ('{"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [' + tool + "]}]}").encode()


def _lists_beside(guard: object, sent: object) -> list[tuple[list, list]]:
    """Every list of the guard's document beside the list at its place in the document
    of the bytes sent (a repeated key's pairs each, as the guard reads them)."""
    out, stack = [], [(guard, sent)]
    while stack:
        g, s = stack.pop()
        if isinstance(g, dict):
            gp = g.pairs if type(g) is Dup else list(g.items())
            sp = s.pairs if type(s) is Dup else list(s.items())  # type: ignore[attr-defined]
            assert [k for k, _ in gp] == [k for k, _ in sp]
            stack += [(a, b) for (_, a), (_, b) in zip(gp, sp, strict=True)]
        elif isinstance(g, list):
            assert isinstance(s, list) and len(s) == len(g)
            out.append((g, s))
            stack += list(zip(g, s, strict=True))
    return out


@pytest.fixture(params=["python", "compiled"])
def engines(request, monkeypatch) -> str:
    """The masker's walk and the guard's walk of one engine (the compiled ones where built)."""
    if request.param == "python":
        monkeypatch.setattr(spanwalk, "collect", spanwalk.py_collect)
        monkeypatch.setattr(leakguard, "first_unread", fieldwalk.py_first_unread)
    elif spanwalk.c_collect is None or fieldwalk._c_first is None:
        pytest.skip("the compiled engine is not built")
    else:
        monkeypatch.setattr(spanwalk, "collect", spanwalk.c_collect)
        monkeypatch.setattr(leakguard, "first_unread", fieldwalk.c_first_unread)
    return request.param


def _masked(body: bytes, monkeypatch) -> tuple[bytes, object, Memo, list] | None:
    """body masked as the pipeline masks it: (the bytes sent, the masker's document the
    guard walks, or None where it parses the bytes itself, the memo it reads, the lists
    masking wrote a changed string into); None where masking refuses the body."""
    written: list = []
    real = masking.masked_doc

    def spy(s: str, out: str, doc: object, trace: dict) -> object | None:
        written.extend(trace["toks"].owners[t] for t, _ in trace["ranges"])
        return real(s, out, doc, trace)

    monkeypatch.setattr(masking, "masked_doc", spy)
    memo, parsed = Memo(), []
    try:
        out, _ = masking.mask_request_body(body, ANTHROPIC_MESSAGES, RULES, "application/json", memo, parsed)
    except MaskError:
        return None
    memo.read = None
    masking.forget_changed(memo)
    if not parsed:  # (masked_doc could not show its document is the bytes': the guard parses them)
        return out, None, memo, written
    assert parsed[0][0] is out  # the guard walks the masker's document of these bytes
    return out, parsed[0][1], memo, written


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(_members)
@example([("a", ["ab", "é"], True), ("b", [ORIGINAL, "ab"], False)])
@example([("a", [ORIGINAL], True), ("a", [ORIGINAL], False)])
def test_a_list_the_guard_skips_is_never_written_and_says_what_leaves(engines, monkeypatch, members) -> None:
    """A tool input of lists (clean ones, ones holding the original, escapes, a key
    repeated with its value written the other way) masked with the raw pass: no list
    masking wrote a changed string into is a LeftOut's; each LeftOut's list is in the
    guard's document, as long as it says, and the bytes sent hold an equal list at its
    place, with no original in it; and the guard reading the masker's run answers as a
    guard reading every string of the bytes sent does (a key repeated with an original
    in its list: masked_doc hands no document, base/test_masking.py)."""
    got = _masked(_body(members), monkeypatch)
    if got is None:
        return
    out, shared, memo, written = got
    whole = [m for m in memo.raw or [] if type(m) is LeftOut]
    assert whole, "the filler at least is left out whole"
    assert not any(m.items is w for m in whole for w in written)
    handed = shared is not None
    shared = shared if handed else fields.loads(out.decode())  # (then no list of it is a LeftOut's)
    beside = _lists_beside(shared, fields.loads(out.decode()))
    for m in whole:
        places = [sent for g, sent in beside if g is m.items]
        assert (bool(places) == handed) and m.n == len(m.items)
        assert all(sent == m.items for sent in places)
        assert ORIGINAL not in m.items
    trusting = leakguard.scan_json(shared, RULES, MESSAGES_REQUEST, memo)
    reading_all = leakguard.scan_json(fields.loads(out.decode()), RULES, MESSAGES_REQUEST)
    assert (trusting is None) == (reading_all is None)


def test_a_repeated_key_s_lists_the_walk_reads_as_one_the_guard_reads_apart(engines, monkeypatch) -> None:
    """A key repeated with the same list, first with an escape, then plainly: the parse
    keeps both lists (Dup), and the masker's walk reads both written arrays against the
    last one (doc[key]): the plain one is a LeftOut of that list, and the escaped one's
    tokens are owned by it too. So a token of the first array masking changed would be
    written into the list the guard skips. Masking cannot change it (the same strings,
    which the raw pass leaves out only where it marks nothing); were it to (a raw pass
    that misses the second copy, planted here), the guard still reads the first pair's
    own list, which holds the original, and refuses."""
    first = json.dumps(["ab", "Acme\u0020Corp", "é"]).replace("Acme Corp", "Acme\\u0020Corp")
    second = json.dumps(["ab", ORIGINAL, "é"], ensure_ascii=False)
    plain_first = first.replace("Acme\\u0020Corp", "v0q")  # the same strings, clean
    plain_second = second.replace(ORIGINAL, "v0q")
    body = _body([]).replace(b'"fill"', f'"k": {plain_first}, "k": {plain_second}, "fill"'.encode())
    out, shared, memo, written = _masked(body, monkeypatch)  # type: ignore[misc]
    assert shared is not None
    inp = shared["messages"][0]["content"][0]["input"]  # type: ignore[index]
    assert type(inp) is Dup
    ours = [m.items for m in memo.raw or [] if type(m) is LeftOut]
    (l1, l2) = [v for k, v in inp.pairs if k == "k"]
    assert any(x is l2 for x in ours) and not any(x is l1 for x in ours) and not written
    assert leakguard.scan_json(shared, RULES, MESSAGES_REQUEST, memo) is None

    body = _body([]).replace(b'"fill"', f'"k": {first}, "k": {second}, "fill"'.encode())
    s = body.decode()
    at = s.index("Acme\\u0020Corp")
    monkeypatch.setattr(rawscan, "hot", lambda *a: array("q", [at, at + 15]))  # the second copy missed
    out, shared, memo, written = _masked(body, monkeypatch)  # type: ignore[misc]
    assert shared is not None
    inp = shared["messages"][0]["content"][0]["input"]  # type: ignore[index]
    (l1, l2) = [v for k, v in inp.pairs if k == "k"]
    assert any(w is l2 for w in written) and any(m.items is l2 for m in memo.raw if type(m) is LeftOut)
    assert ORIGINAL in l1 and ORIGINAL.encode() in out  # the planted miss: the second copy leaves as it came
    assert leakguard.scan_json(shared, RULES, MESSAGES_REQUEST, memo) is not None


class _Told(jsonspan.Rule):
    """An array's rule that tells each element's by its index and the element itself
    (an index that is not one, or an element that is neither a string nor the array:
    SKIP)."""

    def child(self, key: str | int) -> jsonspan.Rule:
        return self if isinstance(key, int) else SKIP

    def resolve(self, value: object) -> jsonspan.Rule:
        return VALUES if isinstance(value, str) else self if isinstance(value, list) else SKIP


def test_clean_finds_a_list_left_out_in_the_raw_run_s_window_spelled_out() -> None:
    """Clean.left_out, a call at a time, as said_nothing reads the raw run: the next AHEAD
    entries from where it goes on, then the BEHIND before them, the run going on after
    the LeftOut found; a list is that LeftOut's only if it is its very object, as long as
    it says, each element read (index and value) with its rule. Where a LeftOut is not
    found the guard reads its list element by element (only work: no element is in the
    run), so these are what the guard's cost rests on."""
    lists = [[f"e{i}", "x"] for i in range(30)]
    raw: list = [LeftOut(items, VALUES, 2) for items in lists[:20]] + [f"t{i}" for i in range(20, 30)]
    memo = Memo()
    memo.raw = raw
    c = fieldwalk.Clean(memo)
    assert (fieldwalk.AHEAD, fieldwalk.BEHIND, c.raw_at) == (8, 16, 0)
    told = _Told()
    steps = [  # (the list, found?, where the raw run goes on after)
        (8, False, 0),  # 8 ahead of the start: past the window
        (7, True, 8),
        (16, False, 8),  # 8 ahead again
        (15, True, 16),
        (16, True, 17),
        (16, True, 17),  # the one just before: read back
        (0, False, 17),  # 17 behind: past the window
        (1, True, 2),  # 16 behind
        (0, True, 1),  # behind, to the run's first entry
    ]
    for i, found, at in steps:
        assert (c.left_out(lists[i], told), c.raw_at) == (found, at), i
    assert c.said_nothing("t20") is False and c.raw_at == 1  # 19 ahead: a miss
    c.raw_at = 13
    assert c.said_nothing("t20") is True and c.raw_at == 21  # a text of the raw run, as the run's
    assert c.left_out(lists[19], told) is True and c.raw_at == 20
    assert c.left_out(list(lists[18]), told) is False  # an equal list, not the object
    lists[17].append("y")
    assert c.left_out(lists[17], told) is False  # longer than it says
    lists[17].pop()
    assert c.left_out(lists[17], USER) is False  # each element read with another rule
    lists[17][1] = 5
    assert c.left_out(lists[17], told) is False  # an element the rule reads otherwise (not a string)
    lists[17][1] = "x"
    assert c.left_out(lists[17], told) is True and c.raw_at == 18
    assert fieldwalk.Clean({}).left_out(lists[0], told) is False  # no raw run: nothing left out


@pytest.mark.parametrize("walk", ["python", "compiled"])
def test_the_fields_after_a_list_left_out_whole_are_read(walk) -> None:
    """The guard leaves a LeftOut's list out and goes on: an original after it (in the
    same tool input, a list not left out whole for its number; in a later message), put
    there after masking, is found."""
    first = fieldwalk.py_first_unread if walk == "python" else fieldwalk.c_first_unread
    if walk == "compiled" and fieldwalk._c_first is None:
        pytest.skip("the compiled engine is not built")
    body = _body([("z", ["ab", 5], False)])
    memo, parsed = Memo(), []
    masking.mask_request_body(body, ANTHROPIC_MESSAGES, RULES, "application/json", memo, parsed)
    masking.forget_changed(memo)
    shared = parsed[0][1]
    fill = shared["messages"][0]["content"][0]["input"]["fill"]
    assert any(m.items is fill for m in memo.raw if type(m) is LeftOut)

    def hit(f: fields.Field) -> str | None:
        return fields.path_text(f.path) if ORIGINAL in str(f.value) else None

    assert first(shared, MESSAGES_REQUEST, memo, hit) is None
    shared["messages"][0]["content"][0]["input"]["z"][0] = ORIGINAL
    assert first(shared, MESSAGES_REQUEST, memo, hit) is not None
    shared["messages"][0]["content"][0]["input"]["z"][0] = "ab"
    shared["messages"].append({"role": "user", "content": ORIGINAL})
    assert first(shared, MESSAGES_REQUEST, memo, hit) is not None


def test_walk_reads_each_element_with_the_rule_its_index_gives() -> None:
    """fields.walk hands a list's element the rule child(index) gives (here SKIP for any
    other key: an element read as another's would be skipped)."""
    assert [f.value for f in fields.walk({"k": ["a", "b"]}, Obj({"k": _Told()}))] == ["a", "b"]
