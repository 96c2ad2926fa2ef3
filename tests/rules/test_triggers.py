"""The trigger scan (rules/triggers.py): one Aho–Corasick pass over a stream's raw bytes
that says where an event may take part in a reverse match.

Three properties, each against plain code:

- complete: where the decoded text of a JSON string value holds a disguise (of a rule
  set's, or of the turned set config.py builds, quotes and non-ASCII included) or a
  placeholder's start (`[NAME_`), ends in a proper prefix of one, could begin a strip
  match, or ends in a backslash, a reported match overlaps those bytes, however the
  value is spelled on the wire (UTF-8 or `\\u` escapes, upper or lower case hex, `\\/`,
  short escapes), whatever follows it, wherever its event lies in a read;
- exact: the scan reports exactly the leftmost-longest, non-overlapping occurrences of
  the trigger strings the module docstring defines (written out here position by
  position from JSON's own spelling of each character), so it reports nothing where
  none occurs;
- quiet: in recorded provider streams an event is reported only for a marker, an
  escape that is a trigger by itself, or text that can take part in a match.

tests/base/test_fastpath.py checks the streams that rely on this: a stream that
passes trigger-free reads unparsed gives the bytes of one that parses every event.
"""

from __future__ import annotations

import functools
import json

import pytest
import regex  # test-only oracle: partial matching ("could a strip match begin here?")
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.rules import mappings
from disguiselib.rules.restorer import strip_starts
from disguiselib.rules.rules import Rules
from disguiselib.rules.triggers import Triggers, raw_forms, raw_text, rule_patterns
from disguiselib.wire import sse

VALUE_END = b",}] \t\r\n"  # what can follow a JSON string value (never `:`: that is a key)

# Disguises are ASCII without quotes, backslashes or controls; some are made of what the
# stream's own syntax is made of.
_disguise = st.text(alphabet="abnz019[]{}:,_-. A/u", min_size=1, max_size=6).filter(lambda d: d.strip() == d or len(d) > 1)
STRIPS = [
    r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]",
    r"\n-{3}\n",  # begins with a line break: `\n` on the wire
    r'"q"',  # begins with a quote: `\"` on the wire
    r"\\z",  # begins with a backslash: `\\` on the wire
    r"/x/",  # `/` may come as `\/`
    r"%.",  # anything (a non-ASCII character too) may follow its first character
    r"é+!",  # a non-ASCII start in the BMP: every non-ASCII byte may begin one
    r"😀+!",  # a start past the BMP: its UTF-8 lead byte
]
STRIP_EXAMPLES = ["[[reply_to_current]]", "[[ reply_to:1 ]]", "\n---\n", '"q"', "\\z", "/x/", "%é", "éé!", "😀!"]
# The disguises of the turned rule set (config.py: the originals as disguises, to find
# disguises a client typed): anything, quotes, backslashes and non-ASCII included.
TURNED = ["Ünïcødé GmbH", 'C:\\Users\\a "b"', "tab\there", "a/b", "é", "x\\", "nova"]


class RuleSet:
    """A rule set built from these disguises, placeholder names and strip rules, with
    its trigger automaton for these markers."""

    def __init__(
        self, disguises: list[str], names: list[str], strips: list[str], markers: tuple[bytes, ...] = (), turned=False
    ):
        if turned:  # built as config.py builds it, without from_dict's checks of disguises
            lits = tuple(mappings.Literal(f"O{i}", d, "test") for i, d in enumerate(disguises))
            ms = mappings.MappingSet(literals=lits)
        else:
            ms = mappings.from_dict({
                "literals": {f"Ö{i}é": d for i, d in enumerate(disguises)},  # originals never inside a disguise
                "patterns": [{"name": n, "regex": "Ö@[a-z]+"} for n in names],
                "strip": [{"regex": s} for s in strips],
            })  # fmt: skip
        self.rules = Rules(ms)
        self.disguises = list(self.rules.lit_reverse)
        self.names = list(self.rules.pattern_names)
        self.strips = strips
        self.words = [*self.disguises, *(f"[{n}_" for n in self.names)]
        self.markers = markers
        self.triggers = self.rules.stream_triggers(markers)


@st.composite
def rule_sets(draw, markers: tuple[bytes, ...] = ()):
    if draw(st.integers(0, 4)) == 0:
        turned = draw(st.lists(st.one_of(st.sampled_from(TURNED), _disguise), min_size=1, max_size=3, unique=True))
        return rule_set(tuple(turned), (), (), markers, True)
    disguises = draw(st.lists(_disguise, max_size=4, unique=True))
    names = draw(st.lists(st.sampled_from(["EMAIL", "K", "AB_C"]), max_size=2, unique=True))
    strips = draw(st.lists(st.sampled_from(STRIPS), max_size=3, unique=True))
    return rule_set(tuple(disguises), tuple(names), tuple(strips), markers)


@functools.lru_cache(maxsize=256)
def rule_set(disguises: tuple, names: tuple, strips: tuple, markers: tuple, turned: bool = False) -> RuleSet:
    try:
        return RuleSet(list(disguises), list(names), list(strips), markers, turned)
    except mappings.MappingError:
        return RuleSet(["zz"], list(names), list(strips), markers)


# -- complete: every value that can take part in a match is found, however spelled ---------


def reasons(v: str, rs: RuleSet) -> list[tuple[int, int | None]]:
    """Where this decoded string value can take part in a reverse match, by the
    definition on decoded text: character ranges (end None: on to the value's end, its
    closing quote and what follows it)."""
    out: list[tuple[int, int | None]] = []
    for w in rs.words:
        out += [(i, i + len(w)) for i in range(len(v)) if v.startswith(w, i)]  # a whole disguise, `[NAME_`
        out += [(len(v) - k, None) for k in range(1, len(w)) if v.endswith(w[:k])]  # the next delta may complete it
    if v.endswith("\\"):
        out.append((len(v) - 1, None))  # JSON text cut inside an escape
    for rx in rs.strips:
        r = regex.compile(rx)  # a strip match may begin at i (or does): its first two characters say so
        out += [(i, i + 2 if i + 1 < len(v) else None) for i in range(len(v)) if r.match(v, i, partial=True) is not None]
    return out


def needs_work(v: str, rs: RuleSet) -> bool:
    return bool(reasons(v, rs))


def spellings(c: str) -> list[str]:
    """Every way JSON may write c inside a string."""
    if 0xD800 <= ord(c) < 0xE000:  # a lone surrogate: only as an escape
        return [f"\\u{ord(c):04x}", f"\\u{ord(c):04X}"]
    units = [ord(c)]
    if ord(c) >= 0x10000:  # past the BMP: a surrogate pair
        hi, lo = divmod(ord(c) - 0x10000, 0x400)
        units = [0xD800 + hi, 0xDC00 + lo]
    out = {
        json.dumps(c, ensure_ascii=False)[1:-1],  # UTF-8, short escapes where JSON needs them
        json.dumps(c)[1:-1],  # ASCII only: short escapes, else \u escapes
        "".join(f"\\u{u:04x}" for u in units),
        "".join(f"\\u{u:04X}" for u in units),
    }
    if c == "/":
        out.add("\\/")
    return sorted(out)


def spelled(data, v: str) -> list[str]:
    """v as a JSON string's body, character by character: as json.dumps writes it (UTF-8
    or ASCII only), or each character in any of its spellings."""
    style = data.draw(st.sampled_from(["utf-8", "utf-8", "ascii", "any"]))
    if style == "any":
        return [data.draw(st.sampled_from(spellings(c))) for c in v]
    return [spellings(c)[0] if 0xD800 <= ord(c) < 0xE000 else json.dumps(c, ensure_ascii=style == "ascii")[1:-1] for c in v]


def _values(words: list[str]):
    """A value: text around one thing that can take part in a match (a word, its start
    ending the value, a strip rule's example or its first characters, a backslash at
    the end) or none, and now and then anything the rules are made of."""
    noise = st.text(alphabet="abnz 019._é", max_size=4)
    starts = st.sampled_from(words).flatmap(lambda w: st.integers(1, len(w)).map(lambda k: w[:k]))
    focused = st.one_of(
        st.tuples(noise, st.sampled_from(words), noise),
        st.tuples(noise, starts, st.just("")),  # ending the value
        st.tuples(noise, st.sampled_from(STRIP_EXAMPLES).map(lambda x: x[:2]), noise),
        st.tuples(noise, st.sampled_from(["\\", "x\\"]), st.just("")),
        st.tuples(noise, st.just(""), st.just("")),
    ).map("".join)
    piece = st.one_of(
        st.sampled_from(words),
        starts,
        st.sampled_from(words).flatmap(lambda w: st.integers(0, len(w) - 1).map(lambda k: w[k:])),  # its end
        st.sampled_from([" ", "a", "\n", '"', "\\", "é", "😀", "\ud83d", "[", "{", ":", "]", "/", "u", "%", "-"]),
    )
    return st.one_of(focused, focused, st.lists(piece, max_size=4).map("".join))


def event(data, parts: list[str]) -> tuple[bytes, list[int]]:
    """An SSE event with one string value in it (its body spelled as parts), followed by
    what may follow a value; and the byte offset of each character of the value in it
    (and of its closing quote)."""
    # every byte that can follow a value: `}` `,` `]` and whitespace (a line break: data
    # on two lines)
    shape = data.draw(st.sampled_from(['{"type":"x","delta":%s}', '{"delta":%s,"index":0}', '{"delta":[%s]}',
                                       '{ "delta" : %s }', '{"delta":[%s,"z"]}', '{"delta":%s\t}',
                                       '{"delta":%s\ndata: }', '{"delta":%s\r\ndata: }']))  # fmt: skip
    eol = data.draw(st.sampled_from(["\n\n", "\r\n\r\n"]))
    head = ("data: " + shape.split("%s")[0] + '"').encode()
    offsets = [len(head)]
    for p in parts:
        offsets.append(offsets[-1] + len(p.encode()))
    return ("data: " + shape % ('"' + "".join(parts) + '"') + eol).encode(), offsets


@settings(deadline=None)
@given(st.data())
@example(None)
def test_a_value_that_can_take_part_is_found_where_it_can_however_spelled(data) -> None:
    if data is None:  # a disguise written with a \u escape: the escape is a trigger by itself
        rs = RuleSet(["nova"], [], [])
        ev = b'data: {"delta":"n\\u006fva"}\n\n'
        assert rs.triggers.any(ev)
        return
    rs = data.draw(rule_sets())
    values = _values([*rs.words, *STRIP_EXAMPLES] or ["a"])
    v = data.draw(values)
    ev, offsets = event(data, spelled(data, v))
    # the event somewhere in a read, between others of any content
    before = b"".join(event(data, spelled(data, data.draw(values)))[0] for _ in range(data.draw(st.integers(0, 2))))
    after = b"".join(event(data, spelled(data, data.draw(values)))[0] for _ in range(data.draw(st.integers(0, 2))))
    read = before + ev + after
    matches = [(s, e) for _, s, e in rs.triggers.scan(read)]
    base = len(before)
    for i, j in reasons(v, rs):
        # bytes from the i-th character's spelling to the j-th's (None: past the closing
        # quote and the byte after it); a match there, or one overlapping it (leftmost-
        # longest matches do not overlap: an occurrence is hidden only by one that does)
        lo, hi = base + offsets[i], base + (offsets[j] if j is not None else offsets[-1] + 2)
        assert any(s < hi and e > lo for s, e in matches), (v, (i, j), read[lo:hi], ev)


@pytest.mark.parametrize(
    ("strip", "value"),
    [
        (r"\n-{3}\n", "a\n---\nb"),  # `\n` on the wire
        (r"\n-{3}\n", "a\n"),  # its first character ends the value: the next delta may go on
        (r'"q"', 'say "q" now'),  # `\"` on the wire
        (r"\\z", "C:\\z"),  # `\\` on the wire
        (r"/x/", "a/x/b"),
        (r"%.", "%é"),  # anything may follow: the first character alone
        (r"é+!", "wow éé!"),
        (r"😀+!", "yes 😀!"),
    ],
)
def test_strip_rules_starting_with_characters_json_escapes(strip: str, value: str) -> None:
    rs = RuleSet([], [], [strip])
    for ascii_only in (False, True):
        raw = json.dumps({"delta": value}, ensure_ascii=ascii_only).encode()
        assert rs.triggers.any(b"data: " + raw + b"\n\n"), (strip, raw)


# -- exact: the scan reports the defined occurrences, leftmost-longest, and nothing else -----


def wire(c: str) -> list[bytes]:
    """How JSON writes an ASCII character in a string, `\\u` escapes aside (those are
    triggers by themselves): json's own spelling, and `\\/` for `/`."""
    form = json.dumps(c)[1:-1]
    out = [] if form.startswith("\\u") else [form.encode()]
    return [*out, b"\\/"] if c == "/" else out


def json_form(w: str) -> bytes:
    """A disguise as JSON writes it (UTF-8, short escapes), `\\u` escapes aside."""
    return json.dumps(w, ensure_ascii=False)[1:-1].encode()


def occurrences_at(buf: bytes, i: int, rs: RuleSet, markers: bool | None = None) -> list[int]:
    """The lengths of the trigger strings the module docstring defines that occur at i
    (markers: True the stream's markers alone, False the rule set's strings alone, None both)."""
    rest = buf[i:]
    found: list[int] = []

    def at(x: bytes) -> None:
        if rest.startswith(x):
            found.append(len(x))

    if markers is not False:
        for x in rs.markers:
            at(x)
    if markers is True:
        return found
    for x in (b"\\u", b"\\/", b'\\\\"'):
        at(x)
    for w in rs.words:
        b = json_form(w)
        at(b)
        # a disguise with a `%` or `+` past its first byte (one as a URL holds it): its
        # stem through it, anywhere, stands for every longer prefix
        j = min((k for k in (b.find(b"%"), b.find(b"+")) if k > 0), default=0)
        if j:
            at(b[: j + 1])
        for k in range(1, j + 1 if j else len(b)):  # a proper prefix ending a value
            for e in VALUE_END:
                at(b[:k] + b'"' + bytes([e]))
    nonascii = None
    for rx in rs.strips:
        _, bmp, follow = strip_starts(rx)
        for c1, after in follow.items():
            for r1 in wire(c1):
                if after is None:
                    at(r1)
                    continue
                for e in VALUE_END:
                    at(r1 + b'"' + bytes([e]))
                at(r1 + b"\\")
                for c2 in after:
                    for r2 in wire(c2):
                        at(r1 + r2[:1])
        nonascii = 0x80 if bmp or nonascii == 0x80 else 0xF0
    if nonascii is not None and rest and nonascii <= rest[0] < (0x100 if nonascii == 0x80 else 0xF5):
        found.append(1)
    return found


# JSON's syntax and escapes, and bytes of every UTF-8 length (0xF0-0xF4 lead a character
# past the BMP, 0xF5 and up lead none)
_SYNTAX = [b'"', b"\\", b"u", b"/", b"\n", b", ", b"}", b"]", b":", b"\\n", b'\\"', b"\\\\", b"\\/", b"\\u00",
           b"%", b"-", b"q", b"z", b"x", b"["]  # fmt: skip
_BYTES = ["é".encode(), "€".encode(), "😀".encode(), b"\x80", b"\xef", b"\xf0", b"\xf4", b"\xf5", b"\xff"]


@settings(deadline=None)
@given(rule_sets(markers=(b"message_stop", b'"error"')), st.data())
def test_the_scan_reports_exactly_the_leftmost_longest_occurrences(rs: RuleSet, data) -> None:
    words = [json_form(w) for w in rs.words] + [json_form(s) for s in STRIP_EXAMPLES] + list(rs.markers)
    prefix = st.sampled_from(words).flatmap(lambda w: st.integers(1, len(w)).map(lambda k: w[:k]))
    frags = st.one_of(
        st.sampled_from(_SYNTAX),
        st.sampled_from(_BYTES),
        st.sampled_from(words),
        prefix,
        st.tuples(prefix, st.sampled_from(VALUE_END)).map(lambda t: t[0] + b'"' + bytes([t[1]])),  # ending a value
        st.binary(max_size=2),
    )
    buf = b"".join(data.draw(st.lists(frags, min_size=1, max_size=24)))
    # The rule set's strings and the stream's markers are two automata (Rules.stream_triggers:
    # the rule set's built once, the markers' per stream), each reporting its own leftmost-
    # longest occurrences: a marker does not hide a rule set's string inside it (an event
    # parsed that need not be: never one passed that should not).
    want = []
    for markers in ((True, False) if rs.markers else (None,)):
        i = 0
        while i < len(buf):
            lengths = occurrences_at(buf, i, rs, markers)
            if lengths:
                want.append((i, i + max(lengths)))
                i += max(lengths)
            else:
                i += 1
    got = [(s, e) for _, s, e in rs.triggers.scan(buf)]
    assert [s for s, _ in got] == sorted(s for s, _ in got)  # in order
    assert sorted(got) == sorted(want)
    assert rs.triggers.find(buf) == [s for s, _ in got]
    assert rs.triggers.any(buf) == bool(want)


def test_keys_and_prose_are_not_triggers() -> None:
    """A key that ends in a disguise's prefix (`"text":`), a prefix inside a value, and
    a line of prose with nothing of a rule in it: nothing to report."""
    rs = RuleSet(["textual", "Zenith"], ["EMAIL"], [r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"])
    quiet = b'data: {"type":"text_delta","text":"Zeni and [E-mail] [x]"}\n\n'
    assert rs.triggers.find(quiet) == []
    for ev, at in [
        (b'data: {"text":"at Zenit"}\n\n', b"Zenit"),  # `Zenit"}`: the value ends in a prefix
        (b'data: {"text":"[EMAIL_"}\n\n', b"[EMAIL_"),
        (b'data: {"text":"a [[b"}\n\n', b"[["),  # a strip rule's first two characters
        (b'data: {"text":"a\\u005b[b"}\n\n', b"\\u"),  # an escape may spell anything
    ]:
        assert rs.triggers.find(ev) == [ev.index(at)], ev


@pytest.mark.parametrize(
    ("strips", "first", "last"),
    [
        ([], None, None),  # no strip rule: no byte alone
        ([STRIPS[0]], 0xF0, 0xF4),  # ASCII starts only: lead bytes past the BMP (not enumerated)
        ([r"😀+!"], 0xF0, 0xF4),
        ([STRIPS[0], r"é+!"], 0x80, 0xFF),  # a non-ASCII start in the BMP: every non-ASCII byte
        ([r"é+!", STRIPS[0]], 0x80, 0xFF),  # in either order
    ],
)
def test_which_non_ascii_bytes_alone_are_triggers(strips: list[str], first: int | None, last: int | None) -> None:
    t = RuleSet([], [], strips).triggers
    alone = [b for b in range(0x80, 0x100) if t.any(bytes([b]))]
    assert alone == ([] if first is None else list(range(first, last + 1)))


def test_raw_forms() -> None:
    assert raw_forms("a") == [b"a"]
    assert raw_forms('"') == [b'\\"'] and raw_forms("\\") == [b"\\\\"]
    assert raw_forms("\n") == [b"\\n"] and raw_forms("\t") == [b"\\t"] and raw_forms("\r") == [b"\\r"]
    assert raw_forms("\b") == [b"\\b"] and raw_forms("\f") == [b"\\f"]
    assert sorted(raw_forms("/")) == [b"/", b"\\/"]
    assert raw_forms("\x01") == []  # only as \u0001, a trigger by itself


def test_raw_text_is_a_disguise_as_json_writes_it() -> None:
    assert raw_text("nova.cloud") == b"nova.cloud"  # a disguise mappings accept: itself
    assert raw_text('C:\\a "b"') == b'C:\\\\a \\"b\\"'  # the turned set's: short escapes
    assert raw_text("tab\t\x01") == b"tab\\t\\u0001"
    assert raw_text("Ünï") == "Ünï".encode()  # UTF-8, not \\u escapes (those are triggers anyway)
    assert raw_text("a/b") == b"a/b"  # `\\/` is a trigger anyway
    for d in ('C:\\a "b"', "Ünï", "tab\t"):
        assert raw_text(d) in rule_patterns([d], (), [])


def test_rule_patterns_always_hold_the_escapes() -> None:
    assert rule_patterns([], (), []) == {b"\\u", b"\\/", b'\\\\"'}


def test_the_automaton_counts_patterns_and_markers_once_and_knows_the_longest() -> None:
    t = Triggers({b"ab", b"abc", b"message_stop"}, (b"message_stop", b"[DONE]"))
    assert t.markers == (b"message_stop", b"[DONE]")
    assert t.size == 4
    assert t.longest == len(b"message_stop")  # the stream re-scans this far back from a read's end
    assert t.find(b"xabcab [DONE]") == [1, 4, 7]
    assert [(s, e) for _, s, e in t.scan(b"xabcab")] == [(1, 4), (4, 6)]  # leftmost-longest
    assert t.any(b"[DONE]") and not t.any(b"a b c")


def test_the_patterns_are_kept_as_one_bytes_object_each_read_back_by_index() -> None:
    """The automaton's patterns, which _settle alone reads, are one bytes object and their
    offsets: pattern i is the i-th the automaton reports (the shipped set's 12,000 held as
    12,000 bytes objects took 634 KiB for 139 KiB of bytes)."""
    import sys

    pats = {b"ab", b"abc", b"message_stop", b"\\u", b'x"', b"\xf0"}
    t = Triggers(pats, (b"[DONE]",))
    got = [t._pat(i) for i in range(t.size)]
    assert got == sorted(pats | {b"[DONE]"})
    buf = b'xabc [DONE] message_stop x"'
    hits = t.scan(buf)
    assert len(hits) == 4
    for i, s, e in hits:
        assert buf[s:e] == got[i]
    big = Triggers({f"pattern{i:05d}".encode() for i in range(10_000)}, ())
    held = sum(sys.getsizeof(getattr(big, n)) for n in ("_blob", "_offs", "_ends"))
    assert held < 10_000 * (len(b"pattern00000") + 8), held


def test_stream_triggers_are_built_once_per_set_of_markers() -> None:
    rs = RuleSet(["nova"], [], [])
    a = rs.rules.stream_triggers((b"[DONE]",))
    assert rs.rules.stream_triggers((b"[DONE]",)) is a
    assert a.any(b"[DONE]") and not rs.rules.stream_triggers(()).any(b"[DONE]")


# -- quiet: recorded streams are mostly passed unparsed ----------------------------------------


def _strings(x: object) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, list):
        return [s for y in x for s in _strings(y)]
    if isinstance(x, dict):
        return [s for k, y in x.items() for s in (k, *_strings(y))]
    return []


MARKERS = {
    "anthropic": (b"message_stop", b'"error"', b"content_block_start", b"content_block_stop"),
    "openai": (b"response.completed", b"response.failed", b"response.incomplete", b'"error"', b"[DONE]"),
    "gemini": (b'Reason"', b'"error"'),
}


def test_recorded_streams_trigger_only_where_they_must(fixtures) -> None:
    """Each recorded event the scan reports holds a marker, an escape that is a trigger
    by itself, or a string that can take part in a match; most are not reported."""
    total = hit = 0
    for api, markers in MARKERS.items():
        rs = RuleSet(["Zenith Labs", "nova", "thread_id"], ["EMAIL"], [STRIPS[0]], markers)
        for f in sorted((fixtures / api).glob("*.sse")):
            body = f.read_bytes()
            framer = sse.Framer()
            for raw in sse.split(framer.whole(body)) + framer.flush_raw():
                total += 1
                if not rs.triggers.any(raw):
                    continue
                hit += 1
                data = [e.data for e in sse.Framer().feed(raw + b"\n\n") if e.data not in (None, "[DONE]")]
                decoded = [s for d in data for s in _strings(json.loads(d))]
                assert (
                    any(m in raw for m in rs.markers)
                    or any(x in raw for x in (b"\\u", b"\\/", b'\\\\"'))
                    or any(needs_work(s, rs) for s in decoded)
                ), (f.name, raw[:200])
    assert total >= 100 and hit < total / 2, (hit, total)  # most events pass unparsed


def test_a_disguise_put_into_one_recorded_event_makes_that_event_reported(fixtures) -> None:
    rs = RuleSet(["Zenith Labs"], [], [])
    for f in sorted(fixtures.glob("*/*.sse")):
        events = sse.split(f.read_bytes())
        quiet = [i for i, raw in enumerate(events) if not rs.triggers.any(raw) and b'"text":"' in raw]
        for i in quiet[:3]:
            injected = b"".join(e.replace(b'"text":"', b'"text":"Zenith Labs ', 1) if j == i else e
                                for j, e in enumerate(events))  # fmt: skip
            a = sum(len(e) for e in events[:i])
            assert any(a <= s < a + len(events[i]) + 12 for s in rs.triggers.find(injected)), f.name


# -- kept: value-end triggers of members no window reads ----------------------------------

_OPAQUE_KEYS = frozenset({b"id", b"model", b"obfuscation"})
_KEPT_RULES = Rules(mappings.from_dict({"literals": {"Ö1é": "nova", "Ö2é": "no va", "Ö3é": "va"},
                                        "patterns": [{"name": "K", "regex": "Ö@[a-z]+"}]}))  # fmt: skip
_member = st.sampled_from(['"id":"x-no"', '"id":"no"', '"model":"gpt-n"', '"text":"no"', '"id": "no"', '"obfuscation":"a\\"no"',
                           '"\\u0069d":"no"', '"id":"[K"', '"note":"nova"', '"x":["no","n","no va"]', '"id":"a\\nno"', '"va"'])  # fmt: skip


@given(st.lists(st.lists(_member, min_size=1, max_size=4), min_size=1, max_size=4), st.integers(0, 3))
def test_kept_is_opaque_end_applied_to_every_hit(events: list[list[str]], k: int) -> None:
    """Triggers.kept reads opaque_end's answer once per `":"` for all the hits after it
    (linear time): it keeps exactly the hits the plain reference keeps."""
    from disguiselib.rules.triggers import opaque_end

    buf = b"".join(b"data: {" + ",".join(m).encode() + b"}\n\n" for m in events)
    k = min(k, len(buf))
    t = Triggers(_KEPT_RULES._trigger_patterns, ())
    hits = t.scan(buf[k:])
    got = t.kept(buf, k, hits, _OPAQUE_KEYS)
    want = []
    one = buf.find(b"\n\n") + 2 == len(buf)
    for i, s, e in hits:
        if not (t._ends[i] and opaque_end(buf, s + k, e + k, _OPAQUE_KEYS)):
            want.append(s + k)
            if one:
                break
    assert got == want


def test_kept_searches_each_byte_back_once_in_an_array_of_short_strings() -> None:
    """Every `"no",` of a long array is a value-end trigger whose member begins far back:
    each used to be searched back for its `":"` again, from the start of the read
    (80 kB: 0.36 s, 3.3x per doubling). What kept searches back is counted."""

    class Counted(bytes):
        searched = 0

        def rfind(self, sub, start=0, end=None):  # type: ignore[override]
            end = len(self) if end is None else end
            Counted.searched += max(0, end - start)
            return super().rfind(sub, start, end)

    t = Triggers(_KEPT_RULES._trigger_patterns, ())
    for n in (1_000, 8_000):
        buf = Counted(b'data: {"x":"a","tools":[' + b",".join([b'"no"'] * n) + b"]}\n\ndata: {}\n\n")
        hits = t.scan(bytes(buf))
        assert len(hits) >= n
        Counted.searched = 0
        t.kept(buf, 0, hits, _OPAQUE_KEYS)
        assert Counted.searched <= 2 * len(buf)  # each byte about once (quadratic: n * len / 2)


def test_a_large_rule_sets_patterns_cost_the_collector_nothing(tmp_path) -> None:
    """8,000 literals make some 700,000 trigger patterns. Held in sets, every collection
    walked them with the GIL held (38 ms a young collection after a reload built off the
    loop, 100 ms a full one): running streams paused. What the collector visits from a
    rule set now grows with its literals, not with its patterns."""
    import gc
    import types

    lits = "".join(f'  "Customer {i:05d} Ltd": "Zq{i:05d}xk"\n' for i in range(2000))
    f = tmp_path / "m.yaml"
    f.write_text("literals:\n" + lits)
    rules = Rules(mappings.load(f))
    rules.stream_triggers(())  # the automaton a stream uses, built as a stream builds it
    gc.collect()  # (a tuple of bytes is untracked once the collector has seen it)
    seen: set[int] = set()
    todo: list[object] = [rules]
    visits = 0
    while todo:
        o = todo.pop()
        if id(o) in seen or not gc.is_tracked(o) or isinstance(o, (type, types.ModuleType, types.FunctionType)):
            continue  # (the rule set's own objects only)
        seen.add(id(o))
        refs = gc.get_referents(o)
        visits += len(refs)
        todo.extend(refs)
    assert visits < 40 * 2000, visits
