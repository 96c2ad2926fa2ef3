"""The leak guard's walk (base/fieldwalk.py): fields.walk less what the masker's scan
showed clean. The compiled walk against its reference on every document and memo the
generators give, the reference against fields.walk itself, and a masker that skips a
string still refused by the guard walking on its own."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disguiselib import engine, leakguard, pipeline
from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.base import fields, fieldwalk, masking
from disguiselib.config import Config
from disguiselib.errors import MaskError
from disguiselib.rules import prescan, rawscan
from disguiselib.rules.found import NOTHING, RUN_MIN, Found, Memo
from disguiselib.rules.rules import Rules
from disguiselib.wire import spanwalk
from disguiselib.wire.jsonspan import USER, VALUES, Arr, Obj
from disguiselib.wire.text import LeftOut
from strategies import make_rules

RULES = make_rules()

_text = st.sampled_from([
    "Acme Corp", "plain", "", " [1]", '{"a": "b"}', "[C:\\Users", "data:text/plain;base64,QWNtZQ==",
    "QWNtZSBDb3JwIHdyb3RlIGl0", "dog", "É", "a\u0000b",
]) | st.text(max_size=6)  # fmt: skip
_json = st.recursive(
    st.one_of(_text, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.none(), st.booleans()),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(_text | st.sampled_from(["a", "type", "content"]), c, max_size=4)),
    max_leaves=16,
)
_tables = st.sampled_from([
    fields.GENERIC, VALUES, USER, Obj({"a": fields.ID}, default=USER), MESSAGES_REQUEST,
    # arrays whose items have a rule of their own (the compiled walk takes an Arr's item,
    # and a Deep rule itself, once per container rather than asking child() per member)
    Arr(Obj({"a": fields.ID, "type": VALUES}, default=USER)), Arr(fields.ID), Arr(Arr(VALUES)),
    Obj({"a": Arr(Obj({"type": fields.ID}, default=VALUES)), "content": Arr(USER)}, default=fields.ID),
    # maps whose keys the masker sends as written (a stored prompt's variables, an MCP
    # server's header names): the guard reads each key as a NAME, the API's fields not
    Obj({}, default=VALUES), Obj({"type": VALUES, "a": Obj({}, default=USER)}, default=VALUES),
])  # fmt: skip


def seen(first_unread, doc: object, table, memo: dict | None, stop: int | None = None) -> list:
    """The fields first_unread hands its visit, in order (the visit answers at the
    stop-th one: the walk must stop there)."""
    out: list = []

    def visit(f):  # noqa: ANN001, ANN202
        out.append((f.path, f.value, f.rule, f.key, f.is_key, type(f.value)))
        return "stop" if stop is not None and len(out) == stop else None

    got = first_unread(doc, table, memo, visit)
    assert (got == "stop") == (stop is not None and len(out) == stop)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _tables, st.lists(_text, max_size=6), st.booleans(), st.integers(1, 6))
def test_the_guards_walk_is_fields_walk_less_what_the_scan_showed_clean(doc, table, clean, masked, stop) -> None:
    s = json.dumps(doc)
    d = fields.loads(s)
    memo: dict = {}
    if masked and isinstance(d, dict):  # the memo of the masker's own scan of this body
        masking.mask_doc(s, fields.loads(s), table, RULES, masking.Session(), scanned=memo)
    memo.update(dict.fromkeys(clean, NOTHING))
    memo.update({t + "!": ([], [0]) for t in clean})  # scanned, something may match: not clean
    ref = seen(fieldwalk.py_first_unread, d, table, memo)
    assert ref == [(f.path, f.value, f.rule, f.key, f.is_key, type(f.value))
                   for f in fields.walk(d, table) if not fieldwalk.clean(f, memo)]  # fmt: skip
    assert seen(fieldwalk.py_first_unread, d, table, memo, stop) == ref[:stop]
    if fieldwalk._c_first is not None:
        assert seen(fieldwalk.c_first_unread, d, table, memo) == ref
        assert seen(fieldwalk.c_first_unread, d, table, memo, stop) == ref[:stop]
        assert seen(fieldwalk.c_first_unread, d, table, None) == seen(fieldwalk.py_first_unread, d, table, None)


def test_first_unread_is_chosen_once_by_the_engine() -> None:
    assert (fieldwalk._c_first is not None) == (engine.NAME == "compiled")
    assert fieldwalk.first_unread is (fieldwalk.c_first_unread if fieldwalk._c_first is not None else fieldwalk.py_first_unread)


@pytest.mark.parametrize("drop", ["last", "key", "in a run", "in a raw run"])
def test_a_masker_that_skips_a_string_is_refused_by_the_guards_own_walk(monkeypatch, drop: str) -> None:
    """A masker bug planted in the bulk walk: it loses a string (a value, or a key), so
    that string is neither masked nor in the scan's memo. The guard walks the masked
    document itself and refuses the original ("in a run": among RUN_MIN short elements,
    which the memo lists in a run: the lost one is not in it; "in a raw run": the same
    elements, which a scan of the raw body leaves out of the walk, the original among
    those it reads: what it leaves out is listed, never what the walk loses)."""
    real = spanwalk.collect

    def lossy(s, doc, root, pieces, reads, plain, context, owner=None, places=False, hot=None, seen=None):  # noqa: ANN001, ANN202
        t = real(s, doc, root, pieces, reads, plain, context, owner, places, hot, seen)
        want = "Acme Corp key" if drop == "key" else "Acme Corp"
        at = [i for i, v in enumerate(t.vals) if v == want]
        if at:
            i = at[-1]
            del t.spans[2 * i : 2 * i + 2]
            for col in (t.vals, t.rules, t.keys, t.owners, t.slots):
                if col is not None:
                    del col[i]
            keep = [k for k, p in enumerate(pieces) if owner is None or owner[k] != i]
            pieces[:] = [pieces[k] for k in keep]
            if owner is not None:
                owner[:] = array("q", [owner[k] - (owner[k] > i) for k in keep])
        return t

    monkeypatch.setattr(spanwalk, "collect", lossy)
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": json.dumps({"Acme Corp key": 1})},
        {"type": "text", "text": "hello"}, {"type": "text", "text": "Acme Corp"}]}]}  # fmt: skip
    if drop == "key":
        doc["messages"][0]["content"] = [{"type": "tool_use", "id": "t", "name": "f", "input": {"Acme Corp key": 1}}]
        doc["messages"][0]["role"] = "assistant"
    raws: list = []
    if drop == "in a raw run":
        real_hot = rawscan.hot
        monkeypatch.setattr(rawscan, "hot", lambda *a: raws.append(real_hot(*a)) or raws[-1])
    else:
        monkeypatch.setattr(rawscan, "hot", lambda *a: None)
    if drop.startswith("in a"):
        items = [f"v{i:05d}" for i in range(RUN_MIN + 100)] + ["Acme Corp"] + ["w"] * 3
        doc["messages"][0]["content"] = [{"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}]
        doc["messages"][0]["role"] = "assistant"
        runs: list = []
        real_prescan = Rules.prescan

        def noting(self, pieces, digests=None, into=None, clean=True):  # noqa: ANN001, ANN202
            got = real_prescan(self, pieces, digests, into, clean)
            runs.append(getattr(got[1], "run", None))
            return got

        monkeypatch.setattr(Rules, "prescan", noting)
    cfg = Config(RULES, (), (), False, (), None)
    verdict = pipeline.mask_request(ANTHROPIC_MESSAGES, json.dumps(doc).encode(), cfg, "/v1/messages", [])
    assert isinstance(verdict, pipeline.Refused), verdict
    assert "would have left unmasked" in verdict.reason
    if drop == "in a run":
        assert runs[0] is not None and len(runs[0]) > RUN_MIN  # read from a run, not entries
    if drop == "in a raw run":
        assert raws and raws[0] is not None and len(raws[0]) == 2  # the one literal marked
    monkeypatch.setattr(spanwalk, "collect", real)
    assert isinstance(pipeline.mask_request(ANTHROPIC_MESSAGES, json.dumps(doc).encode(), cfg, "/v1/messages", []), pipeline.Masked)


def test_the_guard_leaves_out_only_a_text_the_scan_showed_clean_as_the_guard_reads_it() -> None:
    """What the walk leaves out, spelled out: a string read as it is whose text (with its
    key around it where it has one) the memo holds as NOTHING. Kept: a value whose text
    alone is clean but is read with its key, a text the scan found something in, JSON
    text, every number (even one whose digits the memo holds as NOTHING)."""
    doc = fields.loads(json.dumps({"password": "hunter2", "n": 5, "j": '{"a": "b"}', "l": ["x", "y"]}))
    memo: dict = dict.fromkeys(["x", "5", '{"a": "b"}', "hunter2", "password", "l"], NOTHING)
    memo["y"] = ([], [0])  # scanned: something may match

    def visited(memo: dict | None) -> list[str]:
        return [v for _, v, *_ in seen(fieldwalk.py_first_unread, doc, fields.GENERIC, memo)]

    assert visited(memo) == ["n", "j", "hunter2", "5", '{"a": "b"}', "y"]
    before, after = fields.key_context("password")
    memo[before + "hunter2" + after] = NOTHING  # the text the guard reads: "password": "hunter2"
    assert visited(memo) == ["n", "j", "5", '{"a": "b"}', "y"]
    everything = ["password", "n", "j", "l", "hunter2", "5", '{"a": "b"}', "x", "y"]
    assert visited(None) == visited({}) == everything  # no memo: every field


def test_the_walk_ends_at_the_first_answer_and_returns_it() -> None:
    doc = fields.loads(json.dumps({"a": "one", "b": "two", "c": "three"}))
    met: list[str] = []

    def visit(f):  # noqa: ANN001, ANN202
        met.append(f.value)
        return ("found", f.value) if f.value == "two" else None

    # (the values: VALUES itself reads an object's keys too, and the keys of Obj({}, default=VALUES), names sent as
    # written, are read as NAME)
    table = Obj(dict.fromkeys("abc", VALUES), default=VALUES)
    assert fieldwalk.py_first_unread(doc, table, {"one": NOTHING}, visit) == ("found", "two")
    assert met == ["two"]
    assert fieldwalk.py_first_unread(doc, table, {}, lambda f: None) is None


@pytest.mark.parametrize("table", [fields.GENERIC, USER, VALUES, Arr(VALUES), Arr(fields.ID), Arr(Arr(USER))])
def test_an_arrays_elements_left_out_without_a_call_each_are_the_ones_the_reference_leaves_out(table) -> None:
    """The compiled walk takes an array's plain strings (its elements' rule kept as it is)
    without a call each: it leaves out exactly what the reference does, with the memo a
    dict or a dict of another class (looked up through its own get)."""
    if fieldwalk._c_first is None:
        pytest.skip("the compiled engine is not in use")
    items = ["x", "y", "5", "", " [1]", "Acme Corp", '{"a": "b"}', "x", ["x", "z"], {"x": "y"}]
    doc = fields.loads(json.dumps({"l": items * 3 + [5, 6.5, None, True]}))
    base = dict.fromkeys(["x", "5", "", " [1]", "l"], NOTHING)
    base["y"] = ([], [0])  # scanned: something may match

    class Memo(dict):
        """A memo of another class: what its own get says counts (z shown clean)."""

        def get(self, key, default=None):  # noqa: ANN001, ANN202
            return NOTHING if key == "z" else super().get(key, default)

    for memo in (base, Memo(base), None):
        ref = seen(fieldwalk.py_first_unread, doc, table, memo)
        assert seen(fieldwalk.c_first_unread, doc, table, memo) == ref
        for stop in range(1, len(ref) + 1, 3):
            assert seen(fieldwalk.c_first_unread, doc, table, memo, stop) == ref[:stop]


def _read(f) -> str | None:  # noqa: ANN001
    """The text the guard reads of f where it may leave f out (fieldwalk.Clean), or None."""
    if f.rule is fields.NUMBER or not fields.plain(f.value, f.rule):
        return None
    if f.key is None:
        return f.value
    before, after = fields.key_context(f.key)
    return before + f.value + after


def _with_miss_max(m: int):  # noqa: ANN202
    """fieldwalk.MISS_MAX set to m where both walks read it (the module, KINDS)."""
    was = fieldwalk.MISS_MAX, fieldwalk.KINDS
    fieldwalk.MISS_MAX, fieldwalk.KINDS = m, (*was[1][:-1], m)
    return was


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _tables, st.randoms(use_true_random=False), st.sampled_from(["order", "shuffled", "gaps", "again", "masker"]),
       st.sampled_from([0, 1, 3, 256]), st.integers(1, 6))  # fmt: skip
def test_a_memos_run_is_read_in_order_by_both_walks_and_leaves_out_only_clean_texts(
    doc, table, rnd, shape: str, miss_max: int, stop: int
) -> None:
    """A memo whose clean short texts are listed (rules/found.Memo's run) rather than
    entered: both walks hand visit the same fields; a field is left out only where its
    text is in the run or an entry NOTHING (the run never hides a text the scan did not
    show clean); a field the entries alone would leave out is at most scanned again;
    and where the run lists the texts in the order the guard reads them, nothing is
    scanned again (the run costs no visit)."""
    s = json.dumps(doc)
    d = fields.loads(s)
    texts = [t for f in fields.walk(d, table) if (t := _read(f)) is not None]
    clean = {t for t in texts if rnd.random() < 0.7}
    run = [t for t in texts if t in clean]  # each place, as prescan lists a body's pieces
    if shape == "masker" and isinstance(d, dict):  # the run the masker's own scan lists
        # (with nothing remembered of earlier tests: the run, and so what is drawn after
        # it, is this document's alone)
        was_min, prescan.RUN_MIN = prescan.RUN_MIN, 1
        was_found, RULES.found = RULES.found, Found(limit=0)
        try:
            scanned = Memo()
            masking.mask_doc(s, fields.loads(s), table, RULES, masking.Session(), scanned=scanned)
        finally:
            prescan.RUN_MIN, RULES.found = was_min, was_found
        run = scanned.run or []
    if shape == "shuffled":
        rnd.shuffle(run)
    elif shape == "gaps":  # texts the guard does not read between, some clean ones missing
        run = [x for t in run for x in ([t, t + "~"] if rnd.random() < 0.3 else [] if rnd.random() < 0.2 else [t])]
    elif shape == "again":  # a text said again listed once (prescan's dedup), and again at the end
        run = list(dict.fromkeys(run)) + run[: len(run) // 2]
    memo = Memo()
    for t in texts:
        if t not in run and rnd.random() < 0.5:
            memo[t] = rnd.choice([NOTHING, ([], [0]), None])  # an entry: clean, marked, changed
    memo.run = run or None
    by_entries = dict(memo)
    by_entries.update(dict.fromkeys(run, NOTHING))
    was = _with_miss_max(miss_max)
    try:
        ref = seen(fieldwalk.py_first_unread, d, table, memo)
        assert seen(fieldwalk.py_first_unread, d, table, memo, stop) == ref[:stop]
        if fieldwalk._c_first is not None:
            assert seen(fieldwalk.c_first_unread, d, table, memo) == ref
            assert seen(fieldwalk.c_first_unread, d, table, memo, stop) == ref[:stop]
    finally:
        fieldwalk.MISS_MAX, fieldwalk.KINDS = was
    every = [(f.path, f.value, f.rule, f.key, f.is_key, type(f.value)) for f in fields.walk(d, table)]
    left_out = [e for e in every if e not in ref]
    assert all((t := _read(fields.Field(*e[:5]))) is not None and (t in run or memo.get(t) is NOTHING) for e in left_out)
    assert set(map(repr, seen(fieldwalk.py_first_unread, d, table, by_entries))) <= set(map(repr, ref))
    if shape == "order":
        assert ref == seen(fieldwalk.py_first_unread, d, table, by_entries)


def _masked_tool_input(items: list) -> tuple[Memo, dict, list]:
    """A tool input of items masked as the pipeline masks it: (the memo of masking's scan,
    the masked document the guard walks, its items). (With the raw pass, or not: the
    raw fixture.)"""
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}]}]}  # fmt: skip
    memo = Memo()
    parsed: list = []
    masking.mask_request_body(json.dumps(doc).encode(), ANTHROPIC_MESSAGES, RULES, "application/json", memo, parsed)
    masking.forget_changed(memo)
    _, shared = parsed[0]
    return memo, shared, shared["messages"][0]["content"][0]["input"]["items"]


@pytest.fixture(params=[False, True], ids=["scan of pieces", "raw pass"])
def raw(request, monkeypatch) -> bool:
    """Masking with or without the pass over the body's raw bytes (rules/rawscan.py),
    which leaves the clean short strings out of the walk (the memo's raw run)."""
    if not request.param:
        monkeypatch.setattr(rawscan, "hot", lambda *a: None)
    return request.param


def _runs(memo: Memo) -> list[str]:
    return (memo.run or []) + (memo.raw or [])


@pytest.mark.parametrize("nested", [False, True])
def test_a_run_of_small_objects_is_read_without_a_miss(nested: bool, raw: bool) -> None:
    """A tool input of RUN_MIN small objects, their keys said again at each (the masker
    lists each member key, value; the guard reads an object's keys, then its values,
    from the texts behind): the guard visits what entries would have it visit, and
    flat records cost no miss but the string masking changed."""
    def record(i: int) -> dict:
        r: dict = {"id": f"r{i:05d}", "name": f"n{i:05d}", "kind": "k"}
        if nested:
            r["meta"] = {"a": f"a{i}", "b": [f"b{i}", "c"]}
        return r

    items = [record(i) for i in range(RUN_MIN + 10)]
    items[99]["name"] = "Acme Corp"
    memo, shared, masked = _masked_tool_input(items)
    assert len(_runs(memo)) > 3 * RUN_MIN and (memo.raw is not None) == raw
    check = fieldwalk.Clean(memo)
    visited = [f.value for f in fields.walk(shared, MESSAGES_REQUEST) if not check(f)]
    changed = masked[99]["name"]
    assert changed != "Acme Corp" and changed in visited
    # what entries would have the guard visit, no more: the changed name, and with the
    # nested arrays each one's first element, which the masker reads with the array's key
    # around it (its run lists that text) and the guard alone (a miss either way)
    by_entries = dict.fromkeys(_runs(memo), NOTHING)
    assert visited == [f.value for f in fields.walk(shared, MESSAGES_REQUEST) if not fieldwalk.clean(f, by_entries)]
    if not nested:
        assert visited == [changed] and check.misses == 1 and check.runset is None
    ref = seen(fieldwalk.py_first_unread, shared, MESSAGES_REQUEST, memo)
    if fieldwalk._c_first is not None:
        assert seen(fieldwalk.c_first_unread, shared, MESSAGES_REQUEST, memo) == ref


def test_a_long_run_in_the_bodys_order_is_read_without_a_set_or_a_visit(raw: bool) -> None:
    """A tool input of RUN_MIN short elements, masked: the memo lists them in a run (no
    entry each), and the guard leaves every one out reading the run in order: it visits
    what the entries would have it visit (the two strings masking changed), misses only
    those, and makes no set of the run. Both walks visit the same."""
    items = [f"item-{i:05d}" for i in range(RUN_MIN + 10)]
    items[17] = items[4000] = "Acme Corp"
    memo, shared, masked = _masked_tool_input(items)
    assert len(_runs(memo)) >= len(items) - 2 and "Acme Corp" not in _runs(memo) and (memo.raw is not None) == raw
    assert masked[17] == masked[4000] != "Acme Corp"
    check = fieldwalk.Clean(memo)
    visited = [f.value for f in fields.walk(shared, MESSAGES_REQUEST) if not check(f)]
    # every element read alone, by the masker as by the guard (the first too: not with
    # the key of the array around it)
    assert visited == [masked[17], masked[4000]]
    by_entries = dict.fromkeys(_runs(memo), NOTHING)
    assert [f.value for f in fields.walk(shared, MESSAGES_REQUEST) if not fieldwalk.clean(f, by_entries)] == visited
    assert check.misses == 2 and check.runset is None
    ref = seen(fieldwalk.py_first_unread, shared, MESSAGES_REQUEST, memo)
    assert [v for _, v, *_ in ref] == visited
    if fieldwalk._c_first is not None:
        assert seen(fieldwalk.c_first_unread, shared, MESSAGES_REQUEST, memo) == ref


def test_clean_reads_the_run_in_windows_spelled_out(monkeypatch) -> None:
    """Clean's reading of a run, a call at a time: the next AHEAD texts, then the BEHIND
    before them, the run going on after the text found; an entry answers for itself
    (NOTHING clean, anything else not, and no miss counted); a text neither holds is a
    miss, scanned again, until MISS_MAX of them (here 3), then the run is a set."""
    monkeypatch.setattr(fieldwalk, "MISS_MAX", 3)
    run = [f"t{i:02d}" for i in range(30)]
    memo = Memo()
    memo.update({"m": ([], [0]), "n": NOTHING})
    memo.run = run
    c = fieldwalk.Clean(memo)
    assert (fieldwalk.AHEAD, fieldwalk.BEHIND) == (8, 16)
    steps = [  # (text, clean?, where the run goes on after, misses so far)
        ("t08", False, 0, 1),  # 8 ahead of the start: past the window
        ("t07", True, 8, 1),
        ("t16", False, 8, 2),  # 8 ahead again
        ("t15", True, 16, 2),
        ("t16", True, 17, 2),
        ("t16", True, 17, 2),  # the text just before: read back
        ("t00", False, 17, 3),  # 17 behind: past the window
        ("t01", True, 2, 3),  # 16 behind
        ("t00", True, 1, 3),  # behind, to the run's first text
        ("m", False, 1, 3),  # an entry of a text something was found in: no miss
        ("n", True, 1, 3),  # an entry NOTHING
    ]
    for text, clean, at, misses in steps:
        assert (c.said_nothing(text), c.at, c.misses, c.runset) == (clean, at, misses, None), text
    assert c.said_nothing("t29") is True and c.misses == 4 and c.runset == set(run)  # the 4th miss: a set
    assert c.said_nothing("zz") is False and c.said_nothing("m") is False
    plain = fieldwalk.Clean({"n": NOTHING})  # no run: every other text is not clean, however many
    assert not any(plain.said_nothing(f"x{i}") for i in range(10)) and plain.said_nothing("n")


_TABLE_ARR = Arr(Obj({"a": fields.ID, "type": VALUES}, default=USER))


def _walks() -> list:
    return [fieldwalk.py_first_unread] + ([fieldwalk.c_first_unread] if fieldwalk._c_first is not None else [])


def test_a_list_the_masker_left_out_whole_is_not_walked_into_until_it_changes() -> None:
    """A tool input of many short clean elements, masked with the raw pass: the masker's
    walk lists the array as one LeftOut (no text an element) and both guards leave it
    out whole, visiting nothing. The list one element longer (an original put in after
    masking), or the LeftOut said of another rule, is read element by element: every
    element is visited (no run names them), the original among them."""
    items = [f"v{i:x}q" for i in range(2 * rawscan.STRINGS_MIN)]
    memo, shared, masked = _masked_tool_input(items)
    whole = [t for t in memo.raw or [] if type(t) is LeftOut]
    assert len(whole) == 1 and whole[0].items is masked and whole[0].n == len(items) and len(memo.raw) < 20
    for walk in _walks():
        assert seen(walk, shared, MESSAGES_REQUEST, memo) == []
    masked.append("Acme Corp")
    for walk in _walks():
        assert [v for _, v, *_ in seen(walk, shared, MESSAGES_REQUEST, memo)] == [*items, "Acme Corp"]
    assert leakguard.scan_json(shared, RULES, MESSAGES_REQUEST, memo) is not None
    masked.pop()
    other = VALUES if whole[0].rule is not VALUES else USER
    memo.raw = [LeftOut(t.items, other, t.n) if type(t) is LeftOut else t for t in memo.raw]
    for walk in _walks():
        assert [v for _, v, *_ in seen(walk, shared, MESSAGES_REQUEST, memo)] == items


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json, _tables, st.lists(st.integers(0, 1 << 12), max_size=8), st.integers(1, 6))
@example({"a": ["x", "y"], "content": [["p", "q"], "r"], "type": ["z"]}, USER, [], 2)
@example([{"a": "i", "type": ["x"]}, {"a": "j", "type": ["y"]}], _TABLE_ARR, [], 3)
def test_both_walks_read_a_raw_run_of_lists_left_out_whole_alike(doc, table, marks, stop) -> None:
    """The raw run the masker's walk lists for a body (texts, and lists left out whole)
    with a raw scan's marks anywhere: both guards' walks visit the same fields."""
    s = json.dumps(doc)
    d = fields.loads(s)
    cuts = sorted({m % (len(s) + 1) for m in marks})
    seen_: list = []
    try:
        spanwalk.py_collect(s, d, table, [], masking.reads, fields.plain, fields.key_context, None, False,
                            array("q", cuts[: len(cuts) // 2 * 2]), seen_)  # fmt: skip
    except (MaskError, KeyError, IndexError, TypeError):
        return
    memo = Memo()
    memo.raw = seen_ or None
    ref = seen(fieldwalk.py_first_unread, d, table, memo)
    if fieldwalk._c_first is not None:
        assert seen(fieldwalk.c_first_unread, d, table, memo) == ref
        assert seen(fieldwalk.c_first_unread, d, table, memo, stop) == ref[:stop]
