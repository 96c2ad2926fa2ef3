"""The inputs that used to cost more than linear time (issue: linear time on every
input) give the right answer. How long they take is measured in bench/, doubling the
input; here, that the answer is right at a size that used to take seconds."""

from __future__ import annotations

import json
import os
import random
import re
import string
import time
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.base.holdback import Window
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules, Session

DEFAULT = Rules(mappings.load(mappings.Path(__file__).resolve().parents[2] / "mappings"))
rng = random.Random(5)
B64URL = string.ascii_letters + string.digits + "-_"


def test_email_after_a_long_run_of_local_part_characters() -> None:
    run = "".join(rng.choice(B64URL) for _ in range(64_000))
    text = f"data={run} contact jane.doe@corp.example.com now"
    s = Session()
    out = DEFAULT.mask(text, s)
    assert run in out  # the run is not an address: untouched
    assert "jane.doe@corp.example.com" not in out
    assert list(s.placeholders.values()) == ["jane.doe@corp.example.com"]


def test_minified_css_keeps_its_at_rules() -> None:
    rules = ".a{color:red}@media (max-width:600px){.b{margin:0}}@import url(x.css);@font-face{font-family:x}"
    css = "".join(f".c{i}{{padding:{i}px}}" + rules for i in range(600))  # ~60 KB
    text = css + "/* owner: ops@corp.example.com */"
    out = DEFAULT.mask(text, Session())
    assert out.startswith(css)
    assert "ops@corp.example.com" not in out


def test_many_pem_begin_lines_without_an_end() -> None:
    listing = "".join(f"src/f{i}.py:12: -----BEGIN RSA PRIVATE KEY-----\n" for i in range(3000))
    body = "\n".join("".join(rng.choice(string.ascii_letters + "+/") for _ in range(64)) for _ in range(10))
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    s = Session()
    out = DEFAULT.mask(listing + key + " tail", s)
    assert body.split("\n")[3] not in out
    assert out.endswith("] tail")
    assert len(s.placeholders) == 1


def test_unclosed_strip_start_releases_text_past_the_rule_width() -> None:
    prose = [f"word{i} " for i in range(2000)]
    body = build_stream([("text", ["Sure [[reply_to:", *prose])])
    st = AnthropicStream(DEFAULT.restorer({}))
    events = body.split(b"\n\n")
    out = []
    for e in events[:-4]:  # everything up to the last delta
        out.append(st.feed(e + b"\n\n"))
    emitted = read_stream(b"".join(out) + b"")[0][0]["text"]
    # the tag never closed: once it is longer than any strip match can be, the text
    # goes out as text instead of being held to the end
    assert len(emitted) > len("".join(prose)) - 2000
    rest = b"".join(st.feed(e + b"\n\n") for e in events[-4:] if e) + st.flush()
    full = read_stream(b"".join(out) + rest)[0][0]["text"]
    assert full == "Sure [[reply_to:" + "".join(prose)
    assert full == DEFAULT.restorer({}).text("Sure [[reply_to:" + "".join(prose))


def test_json_text_with_many_backslashes_and_disguises() -> None:
    R = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs", "C:\\Users\\al": "WINPATH"}}))
    r = R.restorer({})
    latex = r"\frac{\alpha}{\beta} + \sum_{i=0}^{n} \mathbb{R}^{n} \\ "
    doc = {"tex": [latex * 20 + f" Zenith Labs {i} WINPATH" for i in range(300)]}  # ~300 KB of JSON text
    text = json.dumps(doc)
    out = r.json_text(text)
    parsed = json.loads(out)
    assert parsed["tex"][7].endswith(" Acme Corp 7 C:\\Users\\al")
    assert r.restored == 600
    # and streamed in pieces, through a window, the same
    w = Window(R.restorer({}), Window.JSON)
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    assert "".join(w.feed(p) for p in pieces) + w.flush() == out


# -- the prefilter's compiled database, kept on disk -------------------------------------


def test_prefilter_database_is_cached_and_a_broken_entry_is_compiled_again(tmp_path, monkeypatch) -> None:
    from disguiselib.rules import linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    pats = (r"[a-z]+@[a-z]+\.example", r"sk-[A-Za-z0-9]{20}", "(?i)stra\u00dfe")  # the last: always searched
    linear._hyperscan.cache_clear()
    db1, always1 = linear._hyperscan(pats)
    (entry,) = tmp_path.glob("prefilter-*.hsdb")
    compiled = []
    real = linear._compile
    monkeypatch.setattr(linear, "_compile", lambda *a: compiled.append(1) or real(*a))
    linear._hyperscan.cache_clear()
    db2, always2 = linear._hyperscan(pats)
    assert compiled == [] and always1 == always2 == (2,)  # loaded, not compiled
    text = b"write to bob@corp.example or use sk-" + b"a" * 20
    for db in (db1, db2):
        hits: set[int] = set()
        db.scan(text, match_event_handler=linear._collect, context=hits, scratch=linear.hyperscan.Scratch(db))
        assert hits == {0, 1}
    entry.write_bytes(b"\x00\x00\x00\x00garbage")
    linear._hyperscan.cache_clear()
    db3, _ = linear._hyperscan(pats)
    assert compiled and db3 is not None  # a broken entry: compiled again


def test_databases_of_pattern_sets_long_replaced_are_not_kept_in_memory(tmp_path, monkeypatch) -> None:
    """A proxy whose patterns are edited now and then builds a Prefilter of each new set;
    the databases of sets long replaced were kept in memory (32 of them: ~90 MB with the
    shipped patterns, probe Q). At most HS_KEEP are kept; a set used again loads its
    database from the disk cache, not compiled again."""
    from disguiselib.rules import linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    linear._hyperscan.cache_clear()
    sets = [(r"[a-z]+@[a-z]+\.example", f"XQ{k}Z[0-9]{{4}}") for k in range(linear.HS_KEEP + 6)]
    for pats in sets:
        linear.Prefilter(list(pats))
    assert linear._hyperscan.cache_info().currsize <= linear.HS_KEEP <= 8
    compiled = []
    real = linear._compile
    monkeypatch.setattr(linear, "_compile", lambda *a: compiled.append(1) or real(*a))
    assert linear.Prefilter(list(sets[0])).match(b"XQ0Z1234") == [1]
    assert compiled == []  # from the disk
    linear._hyperscan.cache_clear()


def test_a_database_compiled_from_another_spelling_is_never_loaded(tmp_path, monkeypatch) -> None:
    """The cache is named by what Hyperscan compiles (each pattern as re2_spaces spells
    it), not by the patterns: after a change in the spelling (a fix of re2_spaces, an
    upgrade), the same rules get a database of the new spelling, never the old one from
    disk. Keyed by the patterns, a database compiled from a wrong spelling (one that
    names fewer matches than RE2 finds) was loaded by every later start."""
    from disguiselib.rules import linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    pats = (r"key=\S",)
    text = b"key=\x0b"  # RE2's \s holds no vertical tab: \S takes it
    assert linear.Regex(pats[0]).search(text) is not None

    def named(db: object) -> bool:
        hits: set[int] = set()
        db.scan(text, match_event_handler=linear._collect, context=hits, scratch=linear.hyperscan.Scratch(db))  # type: ignore[attr-defined]
        return 0 in hits

    real = linear.re2_spaces
    try:
        monkeypatch.setattr(linear, "re2_spaces", lambda p: p)  # Hyperscan's own \s, with the vertical tab
        linear._hyperscan.cache_clear()
        wrong, _ = linear._hyperscan(pats)
        assert not named(wrong)  # (the fault re2_spaces is there for)
        monkeypatch.setattr(linear, "re2_spaces", real)
        linear._hyperscan.cache_clear()
        right, _ = linear._hyperscan(pats)
        assert named(right)
        assert len(list(tmp_path.glob("prefilter-*.hsdb"))) == 2
        linear._hyperscan.cache_clear()
        assert named(linear._hyperscan(pats)[0])  # and loaded as such
    finally:
        linear._hyperscan.cache_clear()


def test_the_cache_keeps_the_databases_used_last_and_no_more(tmp_path, monkeypatch) -> None:
    """Each change of a rule set's patterns names a new entry; the cache keeps the
    CACHE_KEEP used last, CACHE_BYTES at most (a database loaded counts as used; the
    newest always), and removes the rest and the temporary files of dead writes, so
    that editing a mapping file, or running the tests, does not grow it without end."""
    from disguiselib.rules import hscache, linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    monkeypatch.setattr(hscache, "CACHE_KEEP", 3)
    sets = [(f"key{i}=[a-z]+",) for i in range(4)]

    def entries() -> set[str]:
        return {e.name for e in tmp_path.glob("prefilter-*.hsdb")}

    try:
        names = []
        for pats in sets[:3]:
            before = entries()
            linear._hyperscan.cache_clear()
            linear._hyperscan(pats)
            (name,) = entries() - before
            names.append(name)
        for k, name in enumerate(names):  # written in this order, long ago
            os.utime(tmp_path / name, (1_000 * (k + 1), 1_000 * (k + 1)))
        linear._hyperscan.cache_clear()
        compiled = []
        real = linear._compile
        monkeypatch.setattr(linear, "_compile", lambda *a: compiled.append(1) or real(*a))
        assert linear._hyperscan(sets[0])[0] is not None and not compiled  # the oldest, loaded: used now
        linear._hyperscan.cache_clear()
        linear._hyperscan(sets[3])  # a fourth: the one used longest ago goes
        assert compiled and len(entries()) == 3
        assert names[1] not in entries() and {names[0], names[2]} <= entries()
        # in prune's order (a tie in the clock's granularity: by name)
        newest, second, _ = sorted(tmp_path.glob("prefilter-*.hsdb"), key=lambda e: (e.stat().st_mtime_ns, e.name), reverse=True)
        two = newest.stat().st_size + second.stat().st_size
        monkeypatch.setattr(hscache, "CACHE_BYTES", two)  # the bytes of the two used last, exactly
        hscache.prune(tmp_path)
        assert entries() == {newest.name, second.name}
        monkeypatch.setattr(hscache, "CACHE_BYTES", two - 1)
        hscache.prune(tmp_path)
        assert entries() == {newest.name}
        monkeypatch.setattr(hscache, "CACHE_BYTES", 0)
        hscache.prune(tmp_path)
        assert entries() == {newest.name}  # the newest whatever its size
        (tmp_path / "unrelated.txt").write_text("kept")
        dead, writing = tmp_path / ".prefilter-dead", tmp_path / ".prefilter-writing"
        for t in (dead, writing):
            t.write_bytes(b"half")
        old = time.time() - hscache.STALE_TMP_S - 60
        os.utime(dead, (old, old))  # a write that never finished, an hour ago
        monkeypatch.setattr(hscache, "CACHE_KEEP", 0)
        hscache.prune(tmp_path)
        assert entries() == {newest.name} and (tmp_path / "unrelated.txt").exists()  # only its own entries
        assert not dead.exists() and writing.exists()  # a write under way is left to finish
    finally:
        linear._hyperscan.cache_clear()


def test_a_pattern_hyperscan_refuses_is_searched_always(tmp_path, monkeypatch) -> None:
    from disguiselib.rules import linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    real = linear._compile

    def refuse_second(exprs, ids, flags):
        return None if b"refused" in b"".join(exprs) else real(exprs, ids, flags)

    monkeypatch.setattr(linear, "_compile", refuse_second)
    linear._hyperscan.cache_clear()
    db, always = linear._hyperscan(("abc", "refused", "xyz"))
    assert always == (1,) and db is not None
    linear._hyperscan.cache_clear()


# -- many short texts: the gate over blocks of them (Prefilter.match_many) ------------------

_LINE_PATTERNS = [r"^ab", r"cd$", r"\bef\b", r"(?:^|[^a-z])gh", r"[a-z]+@[a-z]+\.ex", r"x\s*y", r"^q+$"]


@given(
    st.lists(st.text(alphabet="abcdefghqxy@.ex \n", max_size=9), max_size=400), st.booleans(), st.booleans(),
    st.integers(0, 40),
)
def test_many_short_texts_are_named_every_pattern_re2_finds(texts: list[str], anchored: bool, full: bool, slack: int) -> None:
    """Short texts are scanned 128 at a time, joined by line breaks, by a gate reading the
    patterns line by line; a pattern RE2 finds in one text alone (`^ab` at its start,
    `cd$` at its end) is still named for that text. A pattern anchored on the whole text
    (`\\A`) turns the gate off. full: no text empty (blocks then cut without a step per
    text, as a long array's elements are). A bound on the texts' length the caller knows
    (prescan: each shorter than REMEMBER_MIN bytes), however loose, changes nothing."""
    from disguiselib.rules import linear

    if full:
        texts = [t or "z" for t in texts]

    pats = [*_LINE_PATTERNS, r"\Aqq"] if anchored else _LINE_PATTERNS
    pf = linear.Prefilter(pats)
    assert (pf._gate is None) == anchored
    bs = [t.encode() for t in texts]
    got = pf.match_many(bs)
    assert pf.match_many(bs, max(map(len, bs), default=0) + slack) == got
    assert len(got) == len(bs)
    # the same texts as ASCII str (prescan's short texts: each block encoded, not each text)
    assert pf.match_many_ascii(texts, max(map(len, texts), default=0) + slack) == got
    for b, active in zip(bs, got, strict=True):
        for i, p in enumerate(pats):
            if b and linear.Regex(p).search(b) is not None:
                assert i in active, (p, b)
        assert list(active) == sorted(active) and (b or not active)


@given(st.text(alphabet="abcdefghqxy@.ex \n", max_size=40), st.booleans())
def test_one_text_is_named_every_pattern_re2_finds_whatever_its_lines(text: str, anchored: bool) -> None:
    """match() of a text of several lines, alone: every pattern RE2 finds in it is named
    (`^ab` at the text's start, `cd$` at its end). The database match() scans is the
    gate's, which reads `^` and `$` at every line as well: a superset still, and one
    database for both (none where a pattern anchors on the whole text: its own then)."""
    from disguiselib.rules import linear

    pats = [*_LINE_PATTERNS, r"\Aqq"] if anchored else _LINE_PATTERNS
    pf = linear.Prefilter(pats)
    assert (pf._db is pf._gate) != anchored or pf._db is None
    b = text.encode()
    active = pf.match(b)
    for i, p in enumerate(pats):
        if linear.Regex(p).search(b) is not None:
            assert i in active, (p, b)


def test_a_block_where_something_may_match_is_asked_text_by_text() -> None:
    from disguiselib.rules import linear

    pf = linear.Prefilter(_LINE_PATTERNS)
    for at in (0, 63, 64, 70, 127, 128, 255, 256):  # a block's first and last text among them
        bs = [b"zz"] * at + [b"ab"] + [b"zz"] * 5
        got = pf.match_many(bs)
        assert list(got[at]) == [0] and all(not a for j, a in enumerate(got) if j != at), at
        assert pf.match_many_ascii([b.decode() for b in bs], 2) == got


def test_texts_cut_into_blocks_one_by_one_are_answered_as_each_alone() -> None:
    """Where the texts are not all short and non-empty (an empty one, one of 32 bytes or
    more: prescan's long texts), match_many cuts blocks text by text: at most
    _GATE_PIECES texts or _GATE_BYTES bytes a block, a text of _GATE_BYTES or more asked
    alone, an empty one skipped. Each text's answer is match()'s of it alone: a block
    where the gate hits is asked text by text, and one it does not hit answers only the
    patterns always searched. Spelled out, at each edge of a block (a property's few
    examples in a mutant's run rarely reach them: mutation/README.md)."""
    from disguiselib.rules import linear

    pieces, size = linear._GATE_PIECES, linear._GATE_BYTES
    long_clean, long_ab = b"z" * 40, b"z" * 38 + b"ab"  # (`^ab` only at a line's start: no hit)
    hit_at_end = b"z" * 38 + b"cd"  # `cd$`
    for pats in (_LINE_PATTERNS, [*_LINE_PATTERNS, "(?i)zé"]):  # the second: a pattern always searched
        pf = linear.Prefilter(pats)
        assert list(pf._always) == ([7] if len(pats) > 7 else [])
        cases = [
            [b"", b"ab"],
            [b"", b"zz", hit_at_end, long_clean],
            [long_clean] * 5 + [hit_at_end] + [long_clean] * 3,
            [long_clean] * (pieces - 1) + [hit_at_end] + [long_clean] * 3,  # the last text of a full block
            [long_clean] * pieces + [hit_at_end],  # the first of the next
            [long_clean] * (size // 40) + [hit_at_end, long_clean],  # cut by bytes, not by count
            [b"z" * size, hit_at_end, b"z" * (size - 2) + b"cd", long_clean],  # asked alone
            [b"z" * (size - 1), hit_at_end],
            [long_ab, b"", long_clean],
        ]
        for bs in cases:
            want = [sorted(pf.match(b, utf8=True)) if b else () for b in bs]
            assert [list(a) for a in pf.match_many(bs)] == [list(w) for w in want], [len(b) for b in bs]
            assert [list(a) for a in pf.match_many(bs, max(map(len, bs)))] == [list(w) for w in want]
            for b, active in zip(bs, want, strict=True):
                assert (1 in active) == b.endswith(b"cd"), b[-4:]


class _Counted:
    """A Hyperscan database whose scans are listed (the texts of each block scanned)."""

    def __init__(self, db: object, blocks: list[int]) -> None:
        self.db, self.blocks = db, blocks

    def scan(self, data: bytes, **k: object) -> None:
        self.blocks.append(data.count(b"\n") + 1)
        self.db.scan(data, **k)  # type: ignore[attr-defined]


def test_the_blocks_are_cut_at_gate_pieces_texts_or_gate_bytes_bytes() -> None:
    """How match_many cuts texts into blocks for the gate (how many scans a body's
    texts cost): a block ends at _GATE_PIECES texts or once it holds _GATE_BYTES bytes,
    a text of _GATE_BYTES or more is scanned alone (not in a block), an empty one not at
    all; short texts all non-empty (_blocks) are cut every _GATE_PIECES. The number of
    texts of each block the gate scans, spelled out."""
    from disguiselib.rules import linear

    pieces, size = linear._GATE_PIECES, linear._GATE_BYTES
    t40 = b"z" * 40
    pf = linear.Prefilter(_LINE_PATTERNS)
    pf.match_many([b"z"])  # this thread's scratch made (the gate's: the same database)
    pf._local.gate = pf._local.scratch
    blocks: list[int] = []
    real, pf._gate = pf._gate, _Counted(pf._gate, blocks)  # type: ignore[assignment]
    try:
        for bs, want in (
            ([b""] + [b"z" * 20] * (pieces + 1), [pieces, 1]),  # (an empty one: cut text by text)
            ([b""] + [b"z" * 20] * (2 * pieces), [pieces, pieces]),
            ([t40] * 103, [103]),  # 103 x 40 bytes: 4,120 >= _GATE_BYTES, at the 103rd
            ([t40] * 110, [103, 7]),
            ([t40] * 206, [103, 103]),
            ([t40, b"", t40, b"z" * size, t40], [3]),  # the empty one skipped, the long one alone
            ([t40, b"z" * (size - 1), t40], [2, 1]),  # 40 + 4,095 bytes: the block ends there
            ([b"z" * (size - 1), t40], [2]),
            ([b"z" * 64] * 65, [64, 1]),  # 64 x 64 bytes: _GATE_BYTES exactly
            ([b"zz"] * (pieces * 2 + 1), [pieces, pieces, 1]),  # all short: _blocks
        ):
            del blocks[:]
            pf.match_many(bs)
            assert blocks == want, ([len(b) for b in bs][:4], blocks)
    finally:
        pf._gate = real


# -- the prefilter reads \s as RE2 does (a vertical tab is no space there) -------------------

_SPACE_PATTERNS = [r"key[ \t]*:[ \t]*([^\s\",]+)", r"a\sb", r"x\S+y", r"[^\s]{3}", r"[]\sq]z", r"[\S]v"]


@given(st.sampled_from(_SPACE_PATTERNS), st.text(alphabet="key: \t\x0b\x0c\r\n\"abvqxyz,", max_size=24))
def test_the_prefilter_names_every_pattern_re2_finds_whatever_the_spaces(p: str, text: str) -> None:
    """Hyperscan's \\s holds the vertical tab, RE2's does not: spelled as RE2's class for
    Hyperscan, a secret after a vertical tab (`"api_key":\\x0bvalue`) is still named (the
    shipped secret-assignment rule let it through unmasked before)."""
    from disguiselib.rules import linear

    if linear.Regex(p).search(text.encode()) is not None:
        assert 0 in linear.Prefilter([p]).match(text.encode())


def test_re2_spaces_spells_s_as_re2_reads_it() -> None:
    from disguiselib.rules.linear import re2_spaces

    assert re2_spaces(r"a\sb") == "a[\\t\\n\\f\\r ]b"
    assert re2_spaces(r'[^\s"]+') == '[^\\t\\n\\f\\r "]+'
    assert re2_spaces(r"x\S") == "x[^\\t\\n\\f\\r ]"
    assert re2_spaces(r"\\s") == r"\\s"  # an escaped backslash, then s
    assert re2_spaces(r"[]\s]") == "[]\\t\\n\\f\\r ]"
    assert re2_spaces(r"[\S]") is None  # not sayable in a class: that pattern is always searched


def test_a_rule_sets_patterns_hold_no_compiled_regex_until_one_is_searched() -> None:
    """linear.Regex compiles to refuse what RE2 refuses, then lets the compiled regex go
    until its first search: the prefilter names the few patterns that may match a text,
    and the rest (most of the shipped set's 158, in a proxy's life) hold no program and no
    automata (some 2 MiB in every proxy process). Found the same as compiled at once."""
    from disguiselib.rules import linear

    rules = Rules(mappings.load(mappings.Path(__file__).resolve().parents[2] / "mappings"))
    rxs = [p.rx for p in rules._patterns] + [p.skip for p in rules._patterns if p.skip is not None]
    assert len(rxs) > 100 and not any(rx.compiled for rx in rxs)
    text = "write to jane.doe@example.com about it"
    spans = rules.find(text)
    assert [(n, text[a:b]) for n, a, b in spans] == [("EMAIL", "jane.doe@example.com")]
    used = [rx for rx in rxs if rx.compiled]
    assert 1 <= len(used) <= 10 and any("@" in rx.pattern for rx in used)
    # the same answers as a regex searched from the start, also after its first search
    for rx in [p.rx for p in rules._patterns[:20]]:
        again = linear.Regex(rx.pattern)
        for t in (text.encode(), b"AKIA" + b"A" * 16 + b" ghp_" + b"a" * 36, b""):
            assert rx.groups(t) == again.groups(t) and rx.search(t) == again.search(t)
    try:
        linear.Regex("a(?=b)")
    except linear.RegexError as e:
        assert "lookahead" in str(e)
    else:
        raise AssertionError("a lookahead compiled")


def test_a_regex_searches_between_pos_and_end_with_the_bytes_around_as_context() -> None:
    """Regex (RE2): search() and groups() from pos to end, the bytes before pos and after
    end read as context for `\\b` only; groups_at() the match that starts at pos itself,
    None where none does (a rule's skip regex hands it the place: rules._next); a group
    that took no part is (-1, -1). Spelled out (the properties through Rules read them
    only as a whole)."""
    from disguiselib.rules import linear

    rx = linear.Regex(r"\b(ab)(c)?\b")
    b = b"ab xab abc"
    assert rx.search(b) == (0, 2) and rx.search(b, 1) == (7, 10)
    assert rx.search(b, 0, 1) is None and rx.search(b, 7, 9) is None  # "a"; "ab" before "c": no \b there
    assert rx.search(b, 4) == (7, 10)  # "ab" of "xab": a word character before it
    assert rx.groups(b) == [(0, 2), (0, 2), (-1, -1)]
    assert rx.groups(b, 1) == [(7, 10), (7, 9), (9, 10)]
    assert rx.groups(b, 0, 1) is None and rx.groups(b, 8) is None
    assert rx.groups_at(b, 0) == [(0, 2), (0, 2), (-1, -1)]
    assert rx.groups_at(b, 7) == [(7, 10), (7, 9), (9, 10)]
    assert rx.groups_at(b, 1) is None and rx.groups_at(b, 4) is None and rx.groups_at(b, 3) is None
    assert rx.fullmatch(b"abc") and rx.fullmatch(b"ab")
    assert not rx.fullmatch(b"ab ") and not rx.fullmatch(b" ab") and not rx.fullmatch(b"abcab")
    assert linear.Regex("^$").can_match_empty() and linear.Regex("a*").can_match_empty()
    assert not linear.Regex("a+").can_match_empty() and not linear.Regex(r"\bq").can_match_empty()


# -- re2_spaces on any pattern: what RE2 reads is unchanged, and the prefilter names it ----

# Pieces of a pattern, each whole (a class, an escape, a group), so that any sequence of
# them is a pattern RE2 takes: \s and \S outside and inside classes, classes with `^`,
# a `]` first, a POSIX class, escaped brackets and backslashes (`\\s` is a backslash and
# an s), and text after a class (where \s must be read outside it again). Each with the
# texts it is drawn to be read with: some it matches, some it nearly does (a vertical
# tab where \s stands, a `]` or a `[` where a class ends).
_ATOMS: dict[str, str | tuple[str, ...]] = {  # (a str: each of its characters)
    "a": "ab", "b": "ba", " ": " \x0b", ":": ":a", r"\s": " \t\n\x0b\x0c\ra", r"\S": "a]\x0b ",
    r"\\s": ("\\s", "\\", "s"), r"\\": "\\a", r"\[": "[]", r"\]": "][", r"\[\s\]": ("[ ]", "[\x0b]", "[", "]"),
    "[ab]": "abc", r"[\s]": " \t\x0ba", r"[^\s]": "a \x0b]", r"[a\s]": "a \x0bb", r'[^\s",]': 'a,"\x0b ',
    "[]a]": "]a[", r"[]\s]": "] \x0ba", "[^]a]": "b]a ", r"[^]\s]": "b] \x0b",
    "[[:alpha:]]": "a:]1", r"[[:space:]\s]": " \x0ba:", r"[[:alpha:]\s]": "a \x0b]", r"[\]\s]": "] \x0b\\",
    r"[\[a]": "[a]", r"[\\]": "\\s", r"[\S]": "a ", r"[a\Sb]": "ab ", "[:]": ":]", "[[]": "[]",
}  # fmt: skip
_SUFFIXES = {"": (1, 1), "+": (1, 3), "*": (0, 3), "?": (0, 1), "{2}": (2, 2), "{1,3}": (1, 3)}
_NOISE = st.text(alphabet='ab :\t\n\x0b\x0c\r[]\\"s,xé', max_size=4)


@st.composite
def _pattern_and_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A pattern of up to six pieces, sometimes a group round its tail, and texts drawn
    piece by piece from what each piece reads (so most of them match), with noise."""
    parts = draw(st.lists(st.tuples(st.sampled_from(list(_ATOMS)), st.sampled_from(list(_SUFFIXES))),
                          min_size=1, max_size=6))  # fmt: skip
    p = "".join(a + s for a, s in parts)
    if draw(st.booleans()):
        k = draw(st.integers(0, len(parts) - 1))
        head = "".join(a + s for a, s in parts[:k])
        p = head + "(?:" + p[len(head) :] + ")" + draw(st.sampled_from(["", "+", "?"]))
    texts = []
    for _ in range(draw(st.integers(1, 4))):
        t = [draw(_NOISE)]
        for a, s in parts:
            lo, hi = _SUFFIXES[s]
            t += [draw(st.sampled_from(_ATOMS[a])) for _ in range(draw(st.integers(lo, hi)))]
        t.append(draw(_NOISE))
        texts.append("".join(t))
    return p, texts


def _spans(rx: object, b: bytes) -> list[tuple[int, int]]:
    """Every match of rx in b, each search going on after the one before (RE2's reading)."""
    got, pos = [], 0
    while pos <= len(b) and (m := rx.search(b, pos)) is not None:  # type: ignore[attr-defined]
        got.append(m)
        pos = m[1] if m[1] > m[0] else m[0] + 1
    return got


@example((r"[ab]\s", ["a\x0b"]))  # \s after a class is outside it again
@example((r"[[:alpha:]]\sb", ["a b"]))  # a POSIX class's `]` does not close the class
@example((r"[]a]\s", ["] "]))  # a `]` first in a class is itself
@example((r"[^]a]\s", ["b\t"]))
@example((r"[^]\s]", ["b"]))  # ... after a `^` too
@example((r"\\s\s", ["\\s "]))  # an escaped backslash, then s
@example((r"[\]\s]b", [" b"]))
@example((r"[[:alpha:]\s]", ["\t"]))  # \s after a POSIX class, in the class still
@example((r"[a\s[:alpha:]]", ["a"]))  # ... and before one
@example((r"[[:a]\s", ["[ "]))  # `[:` with no `:]` after it: a `[`
@given(_pattern_and_texts())
def test_re2_spaces_changes_nothing_re2_reads(case: tuple[str, list[str]]) -> None:
    """re2_spaces(p) spells \\s and \\S as RE2 reads them: RE2 finds the same matches
    in every text with it as with p (the same pattern to RE2), wherever the \\s stands:
    outside a class, inside one, after one closed."""
    from disguiselib.rules import linear

    p, texts = case
    q = linear.re2_spaces(p)
    if q is None:  # \S inside a class: the pattern is always searched
        assert re.search(r"(?<!\\)(?:\\\\)*\\S", p) is not None
        return
    assert "\\s" not in q.replace("\\\\", "") and "\\S" not in q.replace("\\\\", "")
    rp, rq = linear.Regex(p), linear.Regex(q)
    for t in texts:
        b = t.encode()
        assert _spans(rq, b) == _spans(rp, b), (p, q, t)


@pytest.fixture(scope="module")
def _own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The prefilter's compiled databases (hscache.cache_dir) kept apart: one a pattern."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DISGUISE_CACHE", str(tmp_path_factory.mktemp("hsdb")))
        yield


@pytest.mark.usefixtures("_own_cache")
@settings(max_examples=60)
@example((r"[ab]\s+b", ["a b"]))
@example((r"[[:alpha:]]\sb", ["a\tb"]))
@example((r"[]a]\sb", ["]\nb"]))
@given(_pattern_and_texts())
def test_the_prefilter_names_every_generated_pattern_re2_finds(case: tuple[str, list[str]]) -> None:
    """What decides that a user's pattern is searched at all: wherever RE2 finds a
    match, Hyperscan's prefilter names the pattern (its \\s spelled by re2_spaces), for
    patterns made of classes, escapes, POSIX classes and \\s and \\S in every place."""
    from disguiselib.rules import linear

    p, texts = case
    rx = linear.Regex(p)
    if rx.can_match_empty():
        return  # (a rule that matches the empty string is refused: linear.check)
    hits = [t for t in texts if rx.search(t.encode()) is not None]
    if not hits:
        return
    pf = linear.Prefilter([p])
    for t in hits:
        assert 0 in pf.match(t.encode()), (p, linear.re2_spaces(p), t)
        assert 0 in pf.match_many([t.encode()])[0]


# -- syntax_chars: which characters of a pattern are its syntax ------------------------------

# Pieces of a pattern, each with the offsets of its characters that are syntax (not
# escaped, not inside a class, not quoted by \Q...\E; a class's own brackets are): what
# accept.py reads a rule's groups and classes from to make its prefilter regex, and
# check() its repetitions.
_SYNTAX: dict[str, tuple[int, ...]] = {
    "a": (0,), "(": (0,), ")": (0,), "|": (0,), "{,3}": (0, 1, 2, 3), "+": (0,), "(?P<v>": (0, 1, 2, 3, 4, 5),
    r"\(": (), r"\[": (), r"\\": (), r"\]": (), r"\Q(a|[\E": (), r"\Qx\E": (), r"\Q\E": (), r"\s": (),
    "[ab]": (0, 3), "[(|)]": (0, 4), "[]a]": (0, 3), "[^]a]": (0, 4), "[^a]": (0, 3), "[]]": (0, 2),
    "[[:alpha:]]": (0, 10), "[[:alpha:]x]": (0, 11), r"[\]]": (0, 3), r"[a\\]": (0, 4), "[[]": (0, 2),
    "[^^]": (0, 3), "[{,3}]": (0, 5), r"[\d-]": (0, 4), "[:]": (0, 2),
}  # fmt: skip


# a quote with no \E, and what follows it: the rest of the pattern, quoted
_TO_END = r"\Q(|[)[a]"


@example(["[ab]", "("], False)
@example([r"\Q(a|[\E", "[[:alpha:]]", "|"], False)
@example(["[^]a]", "[]a]", r"[a\\]"], False)
@example([r"\Qx\E", r"\Q(a|[\E", "("], False)  # each quote ends at its own \E
@example([r"\Q\E", "(", r"\Qx\E"], False)
@example(["(", "[ab]"], True)
@example(["[:]", "[[:alpha:]]", "("], False)  # a `:]` before a POSIX class
@example(["[[:alpha:]]", "(", "[:]"], False)  # ... and after one
@given(st.lists(st.sampled_from(list(_SYNTAX)), max_size=8), st.booleans())
def test_syntax_chars_are_the_characters_outside_escapes_classes_and_quotes(pieces: list[str], to_end: bool) -> None:
    """syntax_chars of a pattern made of pieces is each piece's syntax where it stands:
    an escape, a class's content, a quote is never read as a group, an alternation or a
    repetition (a `(` in `[(|)]` read as a group would give accept.py the wrong rule to
    narrow); a quote with no end quotes the rest."""
    from disguiselib.rules.linear import syntax_chars

    p, want, at = "".join(pieces) + (_TO_END if to_end else ""), [], 0
    for x in pieces:
        want += [(at + k, x[k]) for k in _SYNTAX[x]]
        at += len(x)
    assert list(syntax_chars(p)) == want


def test_the_match_ends_database_is_made_in_a_thread_of_its_own(monkeypatch) -> None:
    """gate_ends' database takes seconds to compile for the shipped set; a body masked on
    the event loop must not wait for it: where the disk cache does not hold it, the first
    call starts it in a thread and answers None (the raw pass is then not made), later
    calls use it once made, one thread only."""
    import threading

    from disguiselib.rules import linear

    pf = linear.Prefilter([r"\b\d{3}-\d{4}\b"])
    made, real = threading.Event(), linear._hyperscan
    calls = []
    waited: list[float | None] = []
    join = threading.Thread.join
    monkeypatch.setattr(threading.Thread, "join", lambda self, timeout=None: waited.append(timeout) or join(self, timeout))

    def slow(*a, **k):
        if k.get("stored"):
            return None  # (not on disk)
        if k.get("located"):
            calls.append((threading.current_thread().name, threading.current_thread().daemon))
            assert made.wait(60)
        return real(*a, **k)

    monkeypatch.setattr(linear, "_hyperscan", slow)
    assert pf.gate_ends(b"555-1234", 10) is None  # (not made yet: the caller is not held)
    assert pf.gate_ends(b"555-1234", 10) is None
    assert waited == [0, 0]
    made.set()
    assert pf.gate_ends(b"x 555-1234\nand 555-9876", 10, wait=60) == [10, 23]
    assert pf.gate_ends(b"555-1234 555-9876", 2) == [8, 17]  # as many as the limit
    assert pf.gate_ends(b"555-1234 555-1234 555-1234", 2) is None  # past it
    assert calls == [("disguise-prefilter", True)]  # (a daemon: a process may end while it compiles)

    broken = linear.Prefilter([r"\b\d{5}\b"])
    tried = []
    monkeypatch.setattr(linear, "_hyperscan", lambda *a, **k: None if k.get("stored") else tried.append(1) or 1 / 0 if k.get("located") else real(*a, **k))  # fmt: skip
    assert broken.gate_ends(b"12345", 10, wait=60) is None  # never made: the pass is not made
    assert broken.gate_ends(b"12345", 10, wait=60) is None
    assert tried == [1]  # (not tried again for every body)


def test_the_match_ends_database_on_disk_is_used_at_the_first_call(tmp_path, monkeypatch) -> None:
    """Once compiled on a machine, gate_ends' database is loaded from the disk cache by the
    first call itself (a new process, or a rule set built again): the first body that needs
    it gets it (through mitmdump, a million hex ids were masked without the raw pass,
    3.1 s instead of ~1.3, when each new worker process compiled it in a thread first)."""
    import threading

    from disguiselib.rules import linear

    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))
    patterns = [r"\b\d{3}-\d{5}\b"]
    try:
        linear._hyperscan.cache_clear()
        assert linear.Prefilter(patterns).gate_ends(b"555-12345", 10, wait=60) == [9]
        linear._hyperscan.cache_clear()  # (a new process: only the disk remembers)
        started = []
        monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
        assert linear.Prefilter(patterns).gate_ends(b"x 555-12345", 10) == [11]
        assert started == []
    finally:
        linear._hyperscan.cache_clear()
