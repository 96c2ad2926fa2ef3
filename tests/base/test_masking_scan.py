"""The body is the unit: masking that scans the whole body once and masks only the
strings a candidate was found in gives exactly what masking every string gives
(`mask_doc(every=True)`), for random rule sets and random request bodies.

The scan (Rules.prescan) reads what masking each string would read: the string, the
string with its key around it in user-defined JSON (`"password": "..."`), every key and
value of JSON text inside a string, and text that does not parse as JSON piece by piece.
The rule sets have literals that need JSON escaping, patterns anchored at a string's
start or end, patterns that reach into the key context, keywords and groups; the bodies
spell strings with and without escapes, hold JSON text, lone surrogates, keys that
are originals, and text stored in base64 (a document of a text type, an unknown field
whose value decodes to text), which masking reads decoded. A piece the scan forgets, or a rule the prefilter reads differently,
makes an example differ.
"""

from __future__ import annotations

import base64
import contextlib
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.base.masking import mask_body, mask_doc
from disguiselib.base.present import present_placeholders
from disguiselib.errors import MaskError
from disguiselib.rules import bigtext, mappings, prescan
from disguiselib.rules.found import Found
from disguiselib.rules.rules import Rules, Session
from disguiselib.wire import jsonspan

_LITERALS = {
    "Acme Corp": "Zenith Labs",
    'C:\\Users\\a "b"': "WINPATH",  # needs escaping in JSON
    "line\nbreak": "LINEBRK",  # a line break: `\n` on the wire
    "Müller": "Mueller_X",  # non-ASCII: `\u00fc` when escaped
    "x/y": "slashy",  # may come as `x\/y`
    "tok": "tk_one",
}
_PATTERNS = [
    {"name": "EMAIL", "regex": r"[a-z]+@[a-z]+\.io"},
    {"name": "LEAD", "regex": r"^secret[0-9]+"},  # a string's start only
    {"name": "TAIL", "regex": r"[0-9]{3}$"},  # a string's end only
    {"name": "PASSWORD", "regex": r'(?i)password"?\s*[:=]\s*"?(?P<v>[a-z0-9]+)', "group": "v"},  # reaches the key
    {"name": "PHONE", "regex": r"[0-9]{4}-[0-9]{4}", "keywords": ["phone"], "window": 12},
    {"name": "WORD", "regex": r"\bkey[A-Z]+\b"},
]

_piece = st.one_of(
    st.sampled_from([*_LITERALS, "ab@cd.io", "secret42", "x 123", "password: abc", "phone 1234-5678",
                     "keyABC", "to", "Acme", "é", "😀", "\ud83d", '"', "\\", "\n", " ", "/",
                     "Zenith Labs", "tk_one", "slashy", "LINEBRK"]),  # disguises a client may type  # fmt: skip
    st.text(alphabet="acdeiknoprstwxy@.:= 0123456789\"\\{}[],", max_size=8),
)
_text = st.lists(_piece, max_size=8).map("".join)
_keys = st.sampled_from(["password", "note", "Acme Corp", "phone", "k", "tok"])
_json_value = st.recursive(
    st.one_of(_text, st.integers(0, 999), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def rule_sets(draw) -> Rules:
    lits = draw(st.lists(st.sampled_from(sorted(_LITERALS)), max_size=6, unique=True))
    pats = draw(st.lists(st.sampled_from(_PATTERNS), max_size=6, unique_by=lambda p: p["name"]))
    return Rules(mappings.from_dict({"literals": {k: _LITERALS[k] for k in lits}, "patterns": pats}))


def _b64(t: str) -> str:
    return base64.b64encode(t.encode("utf-8", "surrogatepass")).decode()


@st.composite
def bodies(draw) -> bytes:
    def text_or_json() -> object:
        if draw(st.booleans()):
            return draw(_text)
        j = json.dumps(draw(_json_value), ensure_ascii=draw(st.booleans()))  # JSON text in a string
        return j[: draw(st.integers(1, len(j)))] if draw(st.booleans()) else j  # cut short: does not parse

    doc = {
        "model": "m",
        "system": draw(_text),
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": draw(_text)},
                {"type": "tool_result", "tool_use_id": "t1", "content": text_or_json()},
                {"type": "document", "source": {"type": "base64", "data": _b64(draw(_text)),  # text media: decoded
                 "media_type": draw(st.sampled_from(["text/plain", "application/json", "image/png"]))}},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": draw(_text), "input": draw(st.dictionaries(_keys, _json_value,
                                                                                                      max_size=4))},
                {"type": "thinking", "thinking": draw(_text), "signature": "c2ln"},
            ]},
        ],
        "tools": [{"name": "crm", "description": draw(_text),
                   "input_schema": {"type": "object", "properties": draw(st.dictionaries(_keys, st.just({}), max_size=3))}}],
        "extra": {"data": draw(st.sampled_from(["", "data:text/plain;base64,"])) + _b64(draw(_text))},  # unknown: sniffed
    }  # fmt: skip
    raw = json.dumps(doc, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    if draw(st.booleans()):
        raw = raw.replace("/", "\\/")
    return raw.encode("utf-8", "surrogatepass") if "\ud83d" in raw else raw.encode("utf-8")


def _both(rules: Rules, raw: bytes) -> tuple[object, object]:
    try:
        s, doc = jsonspan.parse(raw)
    except Exception:  # noqa: BLE001 - a lone surrogate raw in UTF-8 is no body: nothing to compare
        return ("", {}, {}), ("", {}, {})
    out = []
    for every in (False, True):
        if every:  # the reference: nothing remembered from the run before it (Found)
            rules.found = Found(limit=0)
        sess = Session(present_placeholders(s, rules))
        try:
            new, _ = mask_doc(s, doc, MESSAGES_REQUEST, rules, sess, every=every)
        except MaskError as e:  # text media whose bytes are not text: refused either way
            out.append(str(e))
            continue
        out.append((new, sess.placeholders, sess.counts))
    return out[0], out[1]


@settings(max_examples=300, deadline=None)
@given(rule_sets(), bodies())
@example(Rules(mappings.from_dict({"patterns": [_PATTERNS[1]]})), json.dumps({"system": "secret42"}).encode())
@example(Rules(mappings.from_dict({"patterns": [_PATTERNS[3]]})),
         json.dumps({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n",
                                                                      "input": {"password": "abc"}}]}]}).encode())  # fmt: skip
def test_scanning_the_body_once_masks_what_masking_every_string_masks(rules: Rules, raw: bytes) -> None:
    fast, every = _both(rules, raw)
    assert fast == every


def _tool_result(content: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": content}]}]}).encode()  # fmt: skip


def test_json_text_is_read_decoded() -> None:
    """JSON text in a string is read as the model reads it: its strings decoded (an
    original spelled `M\\u00fcller` inside it), its values with their keys, and
    JSON text cut short piece by piece."""
    lit = Rules(mappings.from_dict({"literals": {"Müller": "Mueller_X"}}))
    pw = Rules(mappings.from_dict({"patterns": [_PATTERNS[3]]}))
    for rules, content in (
        (lit, json.dumps({"who": "Müller"})),  # `\u00fc` inside the JSON text
        (lit, json.dumps({"who": "Müller"})[:-2]),  # the same, cut short
        (pw, json.dumps({"password": "abc"}, separators=(",", ":"))),  # the key context, compact
    ):
        fast, every = _both(rules, _tool_result(content))
        assert fast == every
        assert every[2], content  # something was masked


def test_only_strings_with_candidates_are_masked() -> None:
    """The work grows with the candidates: a body with one original masks one string."""
    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    doc = {"model": "m", "messages": [{"role": "user", "content": f"plain text {i}"} for i in range(200)]}
    doc["messages"][117]["content"] = "see Acme Corp"
    calls = []
    orig = rules.mask_spans

    def spy(text, *a, **k):
        calls.append(text)
        return orig(text, *a, **k)

    rules.mask_spans = spy  # type: ignore[method-assign]
    out, sess = mask_body(json.dumps(doc).encode(), MESSAGES_REQUEST, rules)
    assert calls == ["see Acme Corp"]
    assert b"Zenith Labs" in out and b"Acme Corp" not in out and sess.masked == 1


def _guard(rules: Rules, body: bytes, scanned: dict | None) -> object:
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES
    from disguiselib.leakguard import scan_body

    try:
        return scan_body(body, rules, ANTHROPIC_MESSAGES, "application/json", scanned)
    except Exception as e:  # noqa: BLE001 - compared, not judged: the same either way
        return type(e).__name__


@settings(max_examples=300, deadline=None)
@given(rule_sets(), bodies(), st.booleans())
def test_the_leak_guard_reusing_the_scan_says_what_a_scan_of_its_own_says(rules: Rules, raw: bytes, masked: bool) -> None:
    """The leak guard reads the masked body with what masking's one scan found per text
    (`scanned`): its verdict equals the guard's scanning every text itself, on the
    masked body and on the client's body as it came (where every original is still in
    place: the texts masking would change are in `scanned` too, so a memo that hid an
    original would show here)."""
    scanned: dict = {}
    try:
        out, _ = mask_body(raw, MESSAGES_REQUEST, rules, scanned)
    except Exception:  # noqa: BLE001 - a body that cannot be masked is not checked
        return
    body = out if masked else raw
    got = _guard(rules, body, scanned)
    rules.found = Found(limit=0)  # the reference scans everything itself
    assert got == _guard(rules, body, None)


def test_the_leak_guard_reusing_the_scan_still_finds_an_original_left_in_place() -> None:
    """A masker that forgot a string (the body the client sent, checked with the memo
    its masking made) is still refused, by the same rule."""
    from disguiselib.rules.mappings import from_dict

    rules = Rules(from_dict({"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [_PATTERNS[0]]}))
    for text in ("see Acme Corp", "write to ab@cd.io"):
        raw = _tool_result(text)
        scanned: dict = {}
        mask_body(raw, MESSAGES_REQUEST, rules, scanned)
        assert scanned  # the scan's findings were handed on
        hit = _guard(rules, raw, scanned)
        rules.found = Found(limit=0)
        assert hit is not None and hit == _guard(rules, raw, None)


@settings(max_examples=200, deadline=None)
@given(rule_sets(), st.lists(bodies(), min_size=1, max_size=4), st.integers(0, 4))
def test_a_body_met_again_is_masked_as_the_first_time(rules: Rules, raws: list[bytes], limit: int) -> None:
    """What a rule set remembers of the texts it met (Rules.found: a conversation sends
    its history again at every turn) changes nothing: bodies masked one after the other,
    each twice, by one rule set (a small memory of either kind: generations swap often; 0: none) give
    what a rule set that remembers nothing gives, and what the leak guard says of each
    is what it says remembering nothing."""
    rules.found = Found(limit=limit, span_limit=2 * limit, char_limit=40 * limit)  # clean texts: ~one a generation
    fresh = Rules(rules.mappings)
    fresh.found = Found(limit=0)
    for raw in [*raws, *raws]:
        try:
            s, doc = jsonspan.parse(raw)
        except Exception:  # noqa: BLE001 - a lone surrogate raw in UTF-8 is no body
            continue
        got = []
        for r in (rules, fresh):
            sess = Session(present_placeholders(s, r))
            try:
                new, _ = mask_doc(s, doc, MESSAGES_REQUEST, r, sess)
            except MaskError as e:
                got.append(str(e))
                continue
            got.append((new, sess.placeholders, sess.counts, _guard(r, new.encode("utf-8", "surrogatepass"), None),
                        _guard(r, raw, None)))  # fmt: skip
        assert got[0] == got[1]


@settings(max_examples=300, deadline=None)
@given(rule_sets(), bodies())
@example(Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}})), _tool_result("\ud83dZenith Labs"))  # not UTF-8
def test_disguises_the_client_typed_are_found_in_the_texts_masking_read(rules: Rules, raw: bytes) -> None:
    """The check for disguises a client typed itself (pipeline._warn_present_disguise)
    looks for them in the texts masking read (its scan's memo) in one pass; the body is
    walked again only to say where. It finds one exactly where the walk through the
    API's table (leakguard.scan_body with the literals turned around) finds one (a
    text that is not UTF-8, a lone surrogate, is left to the walk)."""
    from disguiselib.rules.mappings import Literal, MappingSet

    turned = tuple(Literal(x.disguise, x.original, x.source) for x in rules.mappings.literals)
    if not turned:
        return
    disguises = Rules(MappingSet(literals=turned))
    disguises.found = Found(limit=0)
    scanned: dict = {}
    try:
        mask_body(raw, MESSAGES_REQUEST, rules, scanned)
    except Exception:  # noqa: BLE001 - a body that cannot be masked is not checked
        return
    hot, memo = disguises.prescan(list(scanned))
    # as the pipeline calls it: the digests read from masking's memo, not computed again
    assert disguises.prescan(list(scanned), scanned) == (hot, memo)
    hit = _guard(disguises, raw, None)
    assert hot or hit is None  # it never misses one (a text that is not UTF-8 is looked at by the walk)
    assert hot == set() or hit is not None or any(not t.isascii() and not _utf8(t) for t in scanned)


@settings(max_examples=200, deadline=None)
@given(rule_sets(), bodies())
def test_the_warning_pass_reads_the_digests_of_the_texts_masking_changed(rules: Rules, raw: bytes) -> None:
    """As the pipeline calls it (a Memo; the warning pass inside mask_body, once masking
    changed something): what it finds with the digests masking's scan took, those of the
    texts it changed too (Memo.spent), is what it finds computing them; and they are let
    go with the texts (forget_changed)."""
    from disguiselib.rules.found import Memo, texts
    from disguiselib.rules.mappings import Literal, MappingSet

    turned = tuple(Literal(x.disguise, x.original, x.source) for x in rules.mappings.literals)
    if not turned:
        return
    disguises = Rules(MappingSet(literals=turned))
    got: list = []

    def read() -> None:
        for digests in (scanned, None):
            disguises.found = Found()  # (each pass its own memory: the second meets nothing)
            got.append(disguises.prescan(texts(scanned), digests, clean=False)[0])

    scanned = Memo()
    try:
        mask_body(raw, MESSAGES_REQUEST, rules, scanned, read=read)
    except Exception:  # noqa: BLE001 - a body that cannot be masked is not checked
        return
    assert not got or got[0] == got[1]
    assert scanned.spent == {}


def test_the_warning_pass_digests_no_text_masking_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A text masking changed was digested by its scan; the warning pass reads that digest
    (Memo.spent) rather than taking it again (a 1 MB body: nearly all its characters)."""
    from disguiselib.rules.found import Memo, texts
    from disguiselib.rules.mappings import Literal, MappingSet

    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    disguises = Rules(MappingSet(literals=tuple(Literal(x.disguise, x.original, x.source) for x in rules.mappings.literals)))
    content = "the Acme Corp report, " * 20
    digested: list[bytes] = []
    real = Found.digest

    def read() -> None:
        monkeypatch.setattr(Found, "digest", staticmethod(lambda b: digested.append(bytes(b)) or real(b)))
        try:
            assert disguises.prescan(texts(scanned), scanned, clean=False)[0] == set()
        finally:
            monkeypatch.setattr(Found, "digest", staticmethod(real))

    scanned = Memo()
    out, _ = mask_body(_tool_result(content), MESSAGES_REQUEST, rules, scanned, read=read)
    assert b"Zenith Labs" in out
    assert content.encode() not in digested


def _utf8(t: str) -> bool:
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_text_that_only_looks_like_json_is_masked_as_written_too() -> None:
    """`[C:\\Users\\a "b"` starts like JSON and is none: read literal by literal, the
    original that holds a quote was cut at it and left as it came (found by hypothesis
    in the leak guard's test, which missed it the same way). It is masked as written,
    then literal by literal (an original spelled with escapes inside such text)."""
    rules = Rules(mappings.from_dict({"literals": {'C:\\Users\\a "b"': "WINPATH", "Müller": "Mueller_X"}}))
    for content, gone in (('[C:\\Users\\a "b" tail', 'C:\\Users\\a "b"'), ('{C:\\Users\\a "b"', 'C:\\Users\\a "b"'),
                          ('{"who": "M\\u00fcller', "M\\u00fcller")):  # fmt: skip
        out, sess = mask_body(_tool_result(content), MESSAGES_REQUEST, rules)
        assert gone not in json.loads(out)["messages"][0]["content"][0]["content"] and sess.masked == 1, content
        assert _guard(rules, out, None) is None and _guard(rules, _tool_result(content), None) is not None


def test_a_big_string_is_masked_without_copies_of_it_piling_up() -> None:
    """Memory (issue 27: a body peaks at ≤ 4× itself through the proxy): masking a body
    that is one big string with an original every line, and handing its document to the
    guard, holds at most a few copies of the string at once (traced allocations: no
    time involved). Each of these held one more: the token copied to be spliced, the
    scan's matches of the string kept after it was masked, the edits kept after the
    splice, the parsed text and document kept while the masked text is encoded; and its
    matches, spans and edits as lists of tuples (some 130 bytes a match, each list twice
    the text: rules/bigtext.py keeps a big text's in columns)."""
    import tracemalloc

    from disguiselib import engine
    from strategies import make_rules

    rules = make_rules()
    unit = "Acme Corp wrote a long line of words for the record, see ticket 12. "
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": unit * 60_000}]}).encode()
    tracemalloc.start()
    try:
        parsed: list = []
        mask_body(raw, MESSAGES_REQUEST, rules, {}, parsed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert b"Acme Corp" not in parsed[0][0]
    # 4.44× (the Python engine's walk holds one more copy of the token: 5.44); 6.95×
    # with the matches in lists, 10.1× before the last session's changes
    assert peak < (4.8 if engine.NAME == "compiled" else 5.8) * len(raw), peak / len(raw)


def test_a_big_string_goes_the_whole_request_path_with_fewer_copies_held(tmp_path) -> None:  # noqa: ANN001
    """The same body through the one path a request takes (pipeline.mask_request: the
    masking, the disguise warning's pass, the leak guard), as the masking worker runs
    it: the warning's pass reads the texts before the masked text is made, a big ASCII
    text a window at a time (bigtext.Ascii); the old text is let go before the new one
    is made; a big text's edits are spliced into the body's text at its end (_Token),
    not made into a new token first; find() does not encode a text whose scan found
    literals alone. Traced allocations, the body itself not counted: 3.93× (the Python
    engine 4.93×), 4.46× before (here the scan's windows count; at 200 MB they do not);
    3.86× once the scans read a big ASCII text where it lies (bigtext.ascii_bytes)."""
    import tracemalloc

    from disguiselib import engine, pipeline
    from disguiselib.apis.registry import recognise
    from disguiselib.config import build_config

    m = tmp_path / "m.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(m)], True, [])
    assert cfg.disguises is not None
    api = recognise("POST", "/v1/messages")
    assert api is not None
    headers = [("content-type", "application/json")]
    pipeline.mask_request(api, b'{"model": "m", "messages": []}', cfg, "/v1/messages", headers)  # lazy parts built
    unit = "Acme Corp wrote a long line of words for the record, see ticket 12. "
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": unit * 60_000}]}).encode()
    tracemalloc.start()
    try:
        got = pipeline.mask_request(api, raw, cfg, "/v1/messages", headers)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(got, pipeline.Masked) and b"Acme Corp" not in got.body and b"Zenith Labs" in got.body
    assert peak < (4.2 if engine.NAME == "compiled" else 5.2) * len(raw), peak / len(raw)


def test_a_streamed_body_is_let_go_once_decoded_and_its_big_text_scanned_where_it_lies(tmp_path) -> None:  # noqa: ANN001
    """The same body as the masking worker gets it, streamed: gathered in pieces, then
    ended. It is handed to masking as gathered (received.Received: no bytes(buf) copy) and
    its bytes are let go once decoded; with the compiled engine the scans read a big
    ASCII text's characters where they lie (bigtext.ascii_bytes), not an encoded copy.
    Traced allocations, the gathered body included: 3.86x (the Python engine 4.93x),
    4.93x before (5.93x)."""
    import tracemalloc

    from disguiselib import engine, pipeline, worker
    from disguiselib.config import build_config

    m = tmp_path / "m.yaml"
    m.write_text("literals:\n  Acme Corp: Zenith Labs\n")
    w = worker.Worker()
    w.built[1] = worker.build(worker.Spec.of(build_config([str(m)], True, [])))
    job = worker.Job("anthropic.messages", "/v1/messages", [("content-type", "application/json")])
    unit = "Acme Corp wrote a long line of words for the record, see ticket 12. "
    warm = json.dumps({"model": "m", "messages": [{"role": "user", "content": unit}]}).encode()
    w.handle(("chunk", 0, 1), warm)
    w.handle(("end", 1, 1, job, len(warm)))  # lazy parts built
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": unit * 60_000}]}).encode()
    tracemalloc.start()
    try:
        for i in range(0, len(raw), worker.PIECE):
            w.handle(("chunk", 0, 2), raw[i : i + worker.PIECE])
        answer = w.handle(("end", 1, 2, job, len(raw)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer is not None
    got = worker.decode(answer[0][3], answer[1], b"")
    assert isinstance(got, pipeline.Masked) and b"Acme Corp" not in got.body and b"Zenith Labs" in got.body
    assert peak < (4.3 if engine.NAME == "compiled" else 5.4) * len(raw), peak / len(raw)


@settings(max_examples=200, deadline=None)
@given(rule_sets(), bodies())
@example(Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}})), _tool_result("\ud83dZenith Labs"))  # not UTF-8
def test_the_texts_handed_to_the_guard_are_every_text_masking_read(rules: Rules, raw: bytes) -> None:
    """scanned lists every text masking read (its keys: the warning pass's texts), built
    from the scan's memo and the pieces it marked, not piece by piece: the same set."""
    from disguiselib.base import fields, masking
    from disguiselib.wire import spanwalk

    if rules.is_empty:
        return  # nothing is read
    rules.found = Found(limit=0)
    scanned: dict = {}
    try:
        s, doc = masking._parse(raw)
        mask_doc(s, doc, MESSAGES_REQUEST, rules, Session(), scanned=scanned)
    except MaskError:
        return
    pieces: list = []
    spanwalk.py_collect(s, masking._parse(raw)[1], MESSAGES_REQUEST, pieces, masking.reads, fields.plain, fields.key_context)
    assert set(scanned) == set(pieces)


@contextlib.contextmanager
def _columns_from(big: int, window: int):  # noqa: ANN202 - a context manager
    saved = bigtext.BIG, bigtext.WINDOW
    bigtext.BIG, bigtext.WINDOW = big, window
    try:
        yield
    finally:
        bigtext.BIG, bigtext.WINDOW = saved


_NOT_TEXT = (  # a field masking does not read, holding text media whose bytes are not UTF-8 (what CI's search found)
    b'{"model":"m","system":"","messages":[{"role":"user","content":[{"type":"text","text":""},{"type":"tool_result",'
    b'"tool_use_id":"t1","content":"\\"\\""},{"type":"document","source":{"type":"base64","data":"","media_type":'
    b'"text/plain"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"","input":{}},{"type":'
    b'"thinking","thinking":"","signature":"c2ln"}]}],"tools":[{"name":"crm","description":"","input_schema":{"type":'
    b'"object","properties":{}}}],"extra":{"data":"data:text/plain;base64,7aC9"}}'
)


@settings(max_examples=100, deadline=None)
@given(rule_sets(), bodies(), st.integers(1, 12))
@example(Rules(mappings.from_dict({"literals": {}, "patterns": []})), _NOT_TEXT, 3)  # no rules: masking reads nothing
def test_a_text_held_in_columns_is_masked_and_checked_as_in_lists(rules: Rules, raw: bytes, window: int) -> None:
    """rules/bigtext.py holds a big text's matches, spans and edits in columns, its
    literals found window by window: every text so (BIG 0) and windows of a few bytes,
    a body is masked to the same bytes with the same placeholders, and the guard says
    the same of it and of the body as it came, as with lists (a hit, nothing, or that it
    cannot read the body: a field masking does not read may hold text media that is not
    text, `data:text/plain;base64,7aC9`, which the guard refuses)."""
    from disguiselib import leakguard

    def guard(b: bytes) -> str | tuple[str, str] | None:
        try:
            hit = leakguard.scan_body(b, rules, None, "application/json")
        except MaskError as e:
            return ("refused", str(e))
        return None if hit is None else str(hit)

    def run() -> tuple:
        rules.found = Found(limit=0)
        try:
            out, sess = mask_body(raw, MESSAGES_REQUEST, rules, {})
        except MaskError as e:
            return ("refused", str(e))
        return out, sess.placeholders, sess.masked, [guard(b) for b in (out, raw)]

    want = run()
    with _columns_from(0, window):
        assert run() == want


def test_a_big_ascii_text_is_scanned_where_it_lies_not_encoded_again() -> None:
    """The scans of a big ASCII text (the prescan, and find() without a memo: the guard's
    look at a text masking changed) read its own characters with the compiled engine
    (bigtext.ascii_bytes), not an encoded copy of it: traced allocations well under the
    text (0.03x here: its matches' columns, a window's matches); the Python engine
    encodes (1x more). (A
    text in which a pattern may match is encoded for the regexes still.)"""
    import tracemalloc

    from disguiselib import engine

    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}, "patterns": _PATTERNS[:1]}))
    unit = "Acme Corp wrote this. " + "A long line of words for the record, see ab at cd.io. " * 9
    text = unit * 5_000
    want = [(lab, a, b) for lab, a, b in rules.find(text)]
    for step in (lambda: rules.prescan([text, "Acme Corp"]), lambda: rules.find(text)):
        rules.found = Found(limit=0)
        tracemalloc.start()
        try:
            step()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < (0.3 if engine.NAME == "compiled" else 2.0) * len(text), peak / len(text)
    rules.found = Found(limit=0)
    hot, memo = rules.prescan([text])
    assert hot == {0} and [(lab, a, b) for lab, a, b in rules.find(text, memo)] == want
    assert len(want) == 5_000 and want[1] == ("literals", len(unit), len(unit) + 9)


@settings(max_examples=200, deadline=None)
@given(rule_sets(), bodies(), st.booleans(), st.integers(0, 9))
@example(Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}})), b'{"messages": "\xff"}', True, 0)
@example(Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}})), b'{"extra": {"data": "data:text/plain;base64,7aC9"}}', False, 0)
def test_a_received_body_is_masked_as_its_bytes_and_given_back_exactly_as_it_came(
    rules: Rules, raw: bytes, gathered: bool, window: int
) -> None:
    """A body handed over as received.Received (the worker's streamed body: its bytes let
    go once decoded) is masked to the same bytes, placeholders and refusals as the bytes
    themselves; what came is given back (Received.bytes) exactly, made again from the
    text, when nothing changed or masking refused, and not at all once it changed. With
    window: every text a big one (bigtext.BIG 0: columns, and with the compiled engine
    its ASCII texts read where they lie, bigtext.ascii_bytes)."""
    from disguiselib import leakguard
    from disguiselib.base.masking import Received

    def run(body: bytes | Received) -> tuple:
        rules.found = Found(limit=0)
        try:
            out, sess = mask_body(body, MESSAGES_REQUEST, rules, {})
        except MaskError as e:
            return ("refused", str(e))
        assert type(out) is bytes
        try:  # the guard refuses what it cannot read (text media not in its charset): the same for both
            found = leakguard.scan_body(out, rules, None, "application/json")
        except MaskError as e:
            found = ("guard refused", str(e))
        return out, sess.placeholders, sess.masked, found

    with _columns_from(0, window) if window else contextlib.nullcontext():
        want = run(raw)
        got = Received(bytearray(raw) if gathered else raw)
        assert run(got) == want
    came = got.bytes()
    if want[0] == "refused" or want[0] == raw:
        assert came == raw and type(came) is bytes
    else:
        assert came is None


@settings(max_examples=100, deadline=None)
@given(rule_sets(), st.lists(_piece, min_size=1, max_size=6), st.integers(65, 200), st.booleans(), st.booleans())
def test_a_big_texts_many_edits_are_spliced_into_the_body_as_one_new_token(
    rules: Rules, unit: list[str], times: int, ascii: bool, shared: bool
) -> None:
    """A big text's edits (more than jsonspan splices as they are) are kept and spliced
    into the body's text at its end (masking._Token, once the old text is let go) rather
    than made into a new token text at once (jsonspan.token_edits): the same bytes, the
    same placeholders, and the document handed to the guard is what parsing them gives."""
    text = "".join(unit) * times
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}, ensure_ascii=ascii)
    raw_b = raw.encode("utf-8", "surrogatepass")

    def run() -> tuple:
        rules.found = Found(limit=0)
        parsed: list = []
        try:
            out, sess = mask_body(raw_b, MESSAGES_REQUEST, rules, {}, parsed if shared else None)
        except MaskError as e:
            return ("refused", str(e))
        if parsed and out is not raw_b:
            from disguiselib.base.fields import loads

            assert parsed[0][1] == loads(out.decode("utf-8", "surrogatepass"))
        return out, sess.placeholders, sess.masked

    want = run()  # lists: a text's edits spliced by jsonspan.apply
    with _columns_from(0, 7):  # columns: more than 64 edits in a string go through _Token
        assert run() == want
        saved, prescan.JOIN_MAX = prescan.JOIN_MAX, 0  # every text scanned alone (bigtext.Ascii)
        try:
            assert run() == want
        finally:
            prescan.JOIN_MAX = saved
