"""rules/rawscan.py: one pass of each engine over a body's raw bytes, and the strings the
walk then leaves out. Whatever the body, masking with the pass gives the bytes, the
session, the refusal and the warning masking without it gives, and every text the pass
hands the leak guard as clean (the memo's run) is one in which the rules find nothing."""

from __future__ import annotations

import base64
import json
import logging
import random
from array import array

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis import registry
from disguiselib.config import build_config
from disguiselib.rules import leftmost, rawscan
from disguiselib.rules.found import Memo
from disguiselib.wire.text import left_out_texts

# Literals that begin with common letters, one holding a quote and a comma (it matches
# across strings in the raw bytes, never in one), one not ASCII; a pattern anchored on
# the whole text (the gate reads each string as a line: a quote is a line break).
MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Bluebird: Kestrel
  'x", "y': XY
  Ünïcode Ltd: Other Ltd
  om: QZ
patterns:
  - name: ACCT
    regex: '^ACCT-[0-9]{4}$'
"""


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], True, [])


# every reading a string can have: plain, an original inside or alone, a disguise, the
# anchored pattern alone and not, an e-mail, a card number, URLs percent-coded, base64
# and data: URLs of an original, JSON text, text that begins like JSON, non-ASCII
_WORDS = [
    "plain", "Acme Corp", "we met Acme Corp today", "Acme", " Corp", "Bluebird", "Zenith Labs", "Kestrel",
    "ACCT-1234", "x ACCT-1234", "ACCT-12345", "bob@corp.example.com", "4111111111111111", "x", "y", "om", "room",
    "https://h.example/?q=Acme%20Corp", "https://h.example/?q=Acme+Corp", "Acme%20Corp",
    base64.b64encode(b"Acme Corp wrote this").decode(), "data:text/plain;base64," + base64.b64encode(b"Acme Corp").decode(),
    '{"k": "Acme Corp"}', "[1, 2]", "{not json", "Ünïcode Ltd", "naïve café", "😀", "password", "sk-ant-api03-" + "A" * 93,
    "", " ", "a\nb", 'say "x", "y"', "\\", "Acme\u2028Corp", "api_key", "token", "hunter2!Xyz9q", "a8f3k2l9d8s7f6g5h4j3",
]  # fmt: skip
_word = st.sampled_from(_WORDS) | st.text(st.sampled_from('AcmeCorp omxy"\\é-@.'), max_size=10)
_json = st.recursive(
    st.one_of(_word, st.integers(-5, 5), st.sampled_from([4111111111111111, 1.5, None, True])),
    lambda c: st.one_of(st.lists(c, max_size=6), st.dictionaries(_word, c, max_size=4)),
    max_leaves=30,
)


def _spell(doc: object, rnd: random.Random) -> str:
    """doc as JSON text, each string spelled one of several ways: as json.dumps writes
    it (ASCII or not), or with some of its characters \\u-escaped."""
    if isinstance(doc, dict):
        return (
            "{"
            + ",".join(_spell(k, rnd) + rnd.choice([":", ": ", " : "]) + _spell(v, rnd) for k, v in doc.items())
            + "}"
        )
    if isinstance(doc, list):
        return "[" + rnd.choice([",", ", ", ",\n  "]).join(_spell(x, rnd) for x in doc) + "]"
    if isinstance(doc, str):
        how = rnd.randrange(4)
        if how == 3 and doc:
            k = rnd.randrange(len(doc))
            return json.dumps(doc[:k])[:-1] + "".join(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else ch for ch in doc[k : k + 1]) + json.dumps(doc[k + 1 :])[1:]  # fmt: skip
        return json.dumps(doc, ensure_ascii=how == 2)
    return json.dumps(doc)


def _body(doc: object, seed: int) -> bytes:
    rnd = random.Random(seed)
    tool = '{"type": "tool_use", "id": "t1", "name": "f", "input": {"items": ' + _spell(doc, rnd) + "}}"
    return (
        '{"model": "m", "max_tokens": 5, "system": ' + _spell(rnd.choice(_WORDS), rnd) + ', "messages": ['
        '{"role": "user", "content": "hi"}, {"role": "assistant", "content": [' + tool + "]}]}"
    ).encode()


def _always(monkeypatch, region: int = rawscan.REGION_MIN) -> None:
    """The pass made on any body, however small (the thresholds that choose it: off),
    the gate's regions narrowed down to region bytes (a few: a small body's strings are
    then marked one by one, as a large body's are by the shipped size)."""
    monkeypatch.setattr(rawscan, "STRINGS_MIN", 1)
    monkeypatch.setattr(rawscan, "BYTES_PER_STRING", 1 << 40)
    monkeypatch.setattr(rawscan, "MATCHES_PER_STRING", 0)
    monkeypatch.setattr(rawscan, "GATE_BUDGET", 1 << 20)
    monkeypatch.setattr(rawscan, "REGION_DENSE", 0)
    monkeypatch.setattr(rawscan, "REGION_MIN", max(region, 1))
    monkeypatch.setattr(rawscan, "REGION_BLOCK", 8 * max(region, 1))
    if region == 0:  # the gate's every match end instead (where its ranges would be everywhere)
        monkeypatch.setattr(rawscan, "regions", lambda *a: None)


def _verdict(cfg, body: bytes, caplog) -> tuple:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="disguise"):
        v = pipeline.mask_request(
            registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", [("content-type", "application/json")]
        )
    warned = [r.getMessage() for r in caplog.records]
    if isinstance(v, pipeline.Masked):
        return ("masked", v.body, v.session.placeholders, warned)
    return (type(v).__name__, getattr(v, "reason", None), warned)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(_json, st.integers(0, 1 << 30), st.sampled_from([0, 1, 2, 5, 16, 512]))
@example(["ACCT-1234", "x", "bob@corp.example.com", "Acme Corp"], 0, 0)
@example(["Acme", " Corp", "x", "y"], 0, 512)
@example(["ACCT-1234", "x ACCT-1234"], 0, 512)
@example({"Bluebird": ["plain"], "k": "Acme Corp"}, 0, 512)
@example({"password": "hunter2!Xyz9q", "api_key": "a8f3k2l9d8s7f6g5h4j3"}, 0, 512)
@example([base64.b64encode(b"Acme Corp wrote this").decode(), "Ünïcode Ltd", "om"], 1, 512)
@example(["plain", "Zenith Labs", "x"], 0, 512)  # a disguise the client typed: the warning
@example(["plain"] * 20 + ["ACCT-1234"] + ["x"] * 20 + ["Acme Corp"] + ["y"] * 20, 0, 1)
@example(["v" * 8 for _ in range(30)] + ["ACCT-1234", "Bluebird"] + ["w" * 8 for _ in range(30)], 0, 2)
# a literal's span inside the gate's region (merged, not shrunk); the anchored pattern
# where a region is cut, again and again (each half scanned whole, to its line break)
@example(["Acme Corp", "bob@corp.example.com"], 0, 512)
@example(["x", "Acme Corp", "y", "bob@corp.example.com", "Bluebird", "z", "ACCT-1234"], 0, 512)
@example(["ACCT-1234" if i % 3 == 0 else "xx" for i in range(60)], 0, 16)
@example(["ACCT-1234" if i % 4 == 1 else "x" for i in range(80)], 3, 5)
@example(["ACCT-1234" if i % 5 == 2 else "xyz" for i in range(100)], 5, 2)
def test_masking_with_the_raw_pass_is_masking_without_it(cfg, monkeypatch, caplog, doc, seed, region) -> None:
    """region: the gate's regions narrowed down to so many bytes (a few: each string
    marked alone, a literal's span inside or beside a region's, merged); 0: the end of
    each match the gate may make marks its string (Prefilter.gate_ends)."""
    body = _body(doc, seed)
    if region == 0:
        assert cfg.rules._prefilter.gate_ends(b"", 0, wait=300) is not None  # (made in a thread)
    with monkeypatch.context() as m:
        m.setattr(rawscan, "hot", lambda *a, **k: None)
        want = _verdict(cfg, body, caplog)
    runs: list[list[str]] = []
    real = leakguard.scan_request

    def spy(*a, **k):
        memo = a[6] if len(a) > 6 else k.get("memo")
        if type(memo) is Memo and memo.raw is not None:
            runs.append(left_out_texts(memo.raw))  # (a list left out whole: its texts)
        return real(*a, **k)

    with monkeypatch.context() as m:
        _always(m, region)
        m.setattr(leakguard, "scan_request", spy)
        got = _verdict(cfg, body, caplog)
    assert got == want
    for run in runs:  # what the guard is told is clean is clean
        assert [t for t in run if cfg.rules.find(t)] == []


def test_the_pass_leaves_out_the_strings_of_a_long_array(cfg, monkeypatch) -> None:
    """A tool input of many short elements, a few of them originals (an e-mail, a
    literal, the anchored pattern): the pass is made at the shipped thresholds, the
    marked elements are masked and no other is handed to the scan of pieces."""
    items = [f"v{i:x}q" for i in range(20_000)]
    items[5_000], items[12_000], items[15_000] = "bob@corp.example.com", "Acme Corp", "ACCT-1234"
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}, {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}]}]}).encode()  # fmt: skip
    scanned: list[int] = []
    real = cfg.rules.prescan

    def prescan(pieces, *a, **k):
        scanned.append(len(pieces))
        return real(pieces, *a, **k)

    hot = rawscan.hot(body, body.decode(), cfg.rules, cfg.disguises)
    assert hot is not None and 3 <= len(hot) // 2 < 100
    monkeypatch.setattr(cfg.rules, "prescan", prescan)
    m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", []).unwrap()
    out = json.loads(m.body)["messages"][1]["content"][0]["input"]["items"]
    assert (out[5_000], out[12_000], out[15_000]) == ("[EMAIL_1]", "Zenith Labs", "[ACCT_1]")
    assert out[:5_000] == items[:5_000]
    assert scanned and scanned[0] < 2_000  # the marked regions' strings, not 20,000


def test_the_pass_is_not_made_on_a_body_of_few_long_strings(cfg) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "word " * 100_000}]}).encode()
    assert rawscan.hot(body, body.decode(), cfg.rules, cfg.disguises) is None
    # nor on one string of JSON text, however many short strings it holds (escaped quotes)
    text = json.dumps([f"v{i}" for i in range(50_000)])
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    assert rawscan.hot(body, body.decode(), cfg.rules, cfg.disguises) is None
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": json.loads(text)}]}).encode()
    assert rawscan._strings(body.decode()) > 40_000


def test_the_gate_is_narrowed_down_to_whole_lines(cfg) -> None:
    """rawscan.regions: every line holding a match is in a region, each region is cut at
    a quote, a body of clean lines gives none; too many blocks where the gate finds
    something, or a narrowing over its budget, give None."""
    pf = cfg.rules._prefilter
    lines = [f"v{i}" for i in range(4_000)]
    lines[1_234] = "ACCT-1234"

    def regions(lines: list[str], budget: int = 1 << 30) -> list | None:
        raw = ('"' + '","'.join(lines) + '"').encode()
        return rawscan.regions(pf, raw.translate(bytes.maketrans(b'"', b"\n")), raw, budget)

    raw = ('"' + '","'.join(lines) + '"').encode()
    got = regions(lines)
    at = raw.index(b"ACCT-1234")
    assert got and any(a <= at and at + 9 <= e for a, e in got)
    assert all(a == 0 or raw[a - 1 : a] == b'"' for a, _ in got)
    assert sum(e - a for a, e in got) <= 2 * rawscan.REGION_MIN
    assert regions(lines[:1_000]) == []
    assert regions(lines, len(raw)) is None  # over budget
    assert regions(["ACCT-1234" if i % 50 == 0 else x for i, x in enumerate(lines)]) is None  # everywhere


def test_hot_spans_are_characters_of_the_text(cfg, monkeypatch) -> None:
    """In a body that is not ASCII the spans are read in characters, as the walk reads s."""
    _always(monkeypatch)
    s = json.dumps(["é" * 10, "Acme Corp", "ü"], ensure_ascii=False)
    hot = rawscan.hot(s.encode(), s, cfg.rules, None)
    assert hot is not None
    at = s.index("Acme Corp")
    assert list(hot) == [at, at + 9] or any(hot[i] <= at and at + 9 <= hot[i + 1] for i in range(0, len(hot), 2))
    assert isinstance(hot, array)


def test_the_strings_of_a_body_are_counted_from_a_sample() -> None:
    """_strings: the sample's unescaped quotes stand for the whole body's strings (within
    a tenth), a body below the thresholds is 0, and JSON text's quotes are not strings."""
    for n, width in ((10_000, 6), (100_000, 9), (50_000, 40)):
        s = json.dumps([f"{i:0{width}d}" for i in range(n)])
        assert abs(rawscan._strings(s) - n) <= n // 10
    assert rawscan._strings(json.dumps([f"{i:02d}" for i in range(rawscan.STRINGS_MIN - 200)])) == 0  # too few
    assert rawscan._strings(json.dumps(["x" * 60 for _ in range(20_000)])) == 0  # too long on average
    assert rawscan._strings('"' * (2 * rawscan.STRINGS_MIN - 1)) == 0  # too short to be sampled
    assert rawscan._strings(json.dumps([json.dumps(["x"] * 10_000)])) == 0  # one string of JSON text


def test_the_joint_automaton_is_kept_for_its_disguises_set(cfg, monkeypatch) -> None:
    """The automaton of the literals and the disguises is built once for a rule set and
    its disguises' set; asked with another set (or none) it is built again, for that one."""
    _always(monkeypatch)
    s = json.dumps(["plain", "Zenith Labs", "x"])
    at = s.index("Zenith Labs")
    assert list(rawscan.hot(s.encode(), s, cfg.rules, None)) == []
    marked = rawscan.hot(s.encode(), s, cfg.rules, cfg.disguises)
    assert list(marked) == [at, at + len("Zenith Labs")]
    first = cfg.rules._raw_literals
    assert list(rawscan.hot(s.encode(), s, cfg.rules, cfg.disguises)) == list(marked)
    assert cfg.rules._raw_literals is first  # kept
    assert list(rawscan.hot(s.encode(), s, cfg.rules, None)) == []


def test_a_rule_set_of_patterns_alone_marks_what_its_gate_finds(tmp_path, monkeypatch) -> None:
    """No literals, no disguises' set: the gate alone marks (no automaton); a disguises'
    set with patterns of its own: no pass (the warning pass reads every text)."""
    (tmp_path / "p.yaml").write_text("patterns:\n  - name: ACCT\n    regex: '^ACCT-[0-9]{4}$'\n")
    only = build_config([str(tmp_path / "p.yaml")], False, [])
    _always(monkeypatch, 2)
    s = json.dumps(["plain", "ACCT-1234", "x"])
    hot = rawscan.hot(None, s, only.rules, only.disguises)
    at = s.index("ACCT-1234")
    assert hot is not None and len(hot) == 2 and hot[0] <= at and at + 9 <= hot[1] and hot[1] - hot[0] < 20
    assert rawscan.hot(None, s, only.rules, only.rules) is None


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), max_size=12))
@example([(0, 10), (2, 3)])  # nested
@example([(0, 5), (10, 90), (20, 30)])  # nested in a later one
@example([(0, 5), (10, 20), (15, 40)])  # overlapping a later one
@example([(0, 5), (5, 9), (30, 31)])  # touching
def test_the_marks_are_merged_into_their_union(spans: list) -> None:
    """rawscan.merged: disjoint, in order, covering exactly what the spans cover."""
    spans = [(a, a + w) for a, w in spans]
    flat = rawscan.merged(list(spans))
    pairs = list(zip(flat[::2], flat[1::2], strict=True))
    assert all(a < e for a, e in pairs) and all(e0 < a1 for (_, e0), (a1, _) in zip(pairs, pairs[1:]))
    covered = {x for a, e in spans for x in range(a, e)}
    assert {x for a, e in pairs for x in range(a, e)} == covered


def test_ids_a_pattern_may_match_everywhere_are_marked_one_by_one(cfg, monkeypatch) -> None:
    """A tool input of hex ids, the all-digit ones (about 5 %) a phone number's prefilter
    may match: the gate finds something in every block, so where each match ends marks
    its id; masking reads those ids alone, and gives what it gives without the pass."""
    rng = random.Random(7)
    ids = [f"{rng.getrandbits(24):06x}" for _ in range(20_000)]
    ids[777] = "bob@corp.example.com"
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}, {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"ids": ids}}]}]}).encode()  # fmt: skip
    s = body.decode()
    assert rawscan.regions(cfg.rules._prefilter, body.translate(bytes.maketrans(b'"', b"\n")), body, 1 << 40) is None
    assert cfg.rules._prefilter.gate_ends(b"", 0, wait=300) is not None  # (made in a thread)
    hot = rawscan.hot(body, s, cfg.rules, cfg.disguises)
    assert hot is not None
    pf = cfg.rules._prefilter
    maybe = {i for i, x in enumerate(ids) if pf.match(x.encode(), True)}
    assert 500 < len(maybe) and len(hot) // 2 < 5 * len(maybe)
    spans = list(zip(hot[::2], hot[1::2], strict=True))
    at = s.index('"ids": [') + 8
    for i, x in enumerate(ids):  # each id a pattern may match in is marked
        at = s.index(f'"{x}"', at)
        if i in maybe:
            assert any(a < at + len(x) + 2 and at < e for a, e in spans), x
        at += len(x) + 2
    got = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", [])
    monkeypatch.setattr(rawscan, "hot", lambda *a, **k: None)
    want = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", [])
    assert isinstance(got, pipeline.Masked) and got.body == want.body and b"[EMAIL_1]" in got.body  # type: ignore[union-attr]


def _occurrences(keys: list[bytes], raw: bytes) -> set[tuple[int, int]]:
    """Every (start, end) in raw at which one of keys is written (overlapping ones too)."""
    return {(i, i + len(k)) for k in keys for i in range(len(raw) - len(k) + 1) if raw.startswith(k, i)}


_bytes = st.sampled_from([b"a", b"b", b"\x00", "é".encode(), b'"', b"\\"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_bytes, min_size=1, max_size=4).map(b"".join), min_size=1, max_size=6),
       st.lists(_bytes, max_size=40).map(b"".join), st.booleans())  # fmt: skip
@example([b"abab", b"ba", b"b"], b"ababab", True)
# bytes a regular expression reads otherwise: each literal only where it is written, as
# written (case too), overlapping ones too, each span as long as its own literal
@example([b"a.b", b"a+", b"b", b"(x)"], b"a.b axb A.B a+ aa (x) x", True)
@example([b"a\x00b", b"b"], b"xa\x00b a ab", True)  # a NUL: the automaton, not a literal cut at it
def test_the_literals_are_found_wherever_they_are_written(keys, raw, hyperscan: bool) -> None:
    """Literals.spans: with Hyperscan, every place a literal is written (overlapping ones
    too, bytes of any value but NUL); with the automaton (no Hyperscan, or a literal
    holding a NUL, which the Hyperscan wrapper would cut short), a span overlapping each
    (leftmost-longest). Both: nothing that is not a literal's place; past `most` matches,
    None."""
    was = leftmost.hyperscan
    try:
        if not hyperscan:
            leftmost.hyperscan = None
        lits = rawscan.Literals(keys)
        got = lits.spans(raw, len(raw) * len(keys) + 1)
    finally:
        leftmost.hyperscan = was
    assert got is not None
    want = _occurrences(keys, raw)
    assert set(got) <= want
    if hyperscan and was is not None and not any(b"\x00" in k for k in keys):
        assert set(got) == want
    else:
        assert all(any(a < e2 and a2 < e for a2, e2 in got) for a, e in want)
    if got:
        assert lits.spans(raw, len(got) - 1) is None
        assert lits.spans(raw, len(got)) is not None


def test_many_literals_are_found_by_the_automaton(monkeypatch) -> None:
    """More literals than leftmost.MAX_LITERALS (their database's build grows too fast): the
    automaton; as many: the database. Each finds them."""
    keys = [b"Acme Corp", b"Zenith Labs"]
    raw = b'["x", "Acme Corp", "Zenith Labs"]'
    monkeypatch.setattr(leftmost, "MAX_LITERALS", 1)
    many = rawscan.Literals(keys)
    monkeypatch.setattr(leftmost, "MAX_LITERALS", 2)
    few = rawscan.Literals(keys)
    assert many._ac is not None and (few._ac is None) == (leftmost.hyperscan is not None)
    assert many.spans(raw, 10) == few.spans(raw, 10) == [(7, 16), (20, 31)]


def test_a_literal_a_regular_expression_reads_otherwise_is_masked_in_a_body_of_short_strings(tmp_path) -> None:
    """A literal holding bytes a regular expression reads otherwise (`+`, `.`, `(`): the
    raw pass finds it as written among a tool input of short strings (its database is
    one of literals), so masking reads its string, and the request leaves with the
    disguise, never with the original left out of the walk as clean."""
    (tmp_path / "m.yaml").write_text("literals:\n  Acme+Corp (EU).x: Zenith Labs\n")
    cfg = build_config([str(tmp_path / "m.yaml")], False, [])
    items = [f"v{i:x}q" for i in range(rawscan.STRINGS_MIN)]
    items[99] = "Acme+Corp (EU).x"
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}, {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"i": items}}]}]}).encode()  # fmt: skip
    hot = rawscan.hot(body, body.decode(), cfg.rules, cfg.disguises)
    at = body.index(b"Acme+Corp")
    assert hot is not None and any(a <= at < e for a, e in zip(hot[::2], hot[1::2], strict=True))
    got = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", [])
    assert isinstance(got, pipeline.Masked) and b"Acme" not in got.body and b'"Zenith Labs"' in got.body
