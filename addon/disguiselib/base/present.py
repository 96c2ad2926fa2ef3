"""What the client's request already holds (sans I/O): the placeholders and the fakes a
request's text holds as the client's own, which masking must not issue for an original
(its numbering skips them, a fake among them is not used: base/masking.py).

They are looked for in exactly the texts masking reads, as it reads them (Held: the
texts its walk lists, masking.reads): a percent-encoded URL decoded, a base64 text
document decoded, JSON text in a string its keys and values; and nowhere else. A
thinking block, a signature, an id went out masked and come back as they were: the
disguises they hold are ours, not the client's (pipeline._warn_present_disguise leaves
them out too). Read in the body's raw text they were taken for the client's, and the
same original got another placeholder or fake on the next turn (the conversation's
prefix changed: prompt caching missed, and the model's own copy of the first disguise
reached the client unrestored); a disguise the client wrote encoded was not seen, and
an original got the very fake the client's URL or document held."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import ahocorasick_rs

from ..rules.rules import Rules, Session
from ..wire import percent, spanwalk
from ..wire.jsonspan import Rule
from ..wire.spanwalk import Reads
from ..wire.text import left_out_texts, utf8

# the last rule set's pattern names (its patterns tuple: frozen, read by identity)
_NAMES: tuple[object, frozenset[str]] = ((), frozenset())


def pattern_names(rules: Rules) -> frozenset[str]:
    """The names of rules' patterns, made once a rule set (every request read them: ~20 µs)."""
    global _NAMES
    pats = rules.mappings.patterns
    key, names = _NAMES  # (one read: another thread may set it meanwhile)
    if key is not pats:
        names = frozenset(p.name for p in pats)
        if type(pats) is tuple:  # (a rule set's: never changed once made)
            _NAMES = (pats, names)
    return names


def present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """Placeholder-shaped strings ("[EMAIL_3]") anywhere in a request's JSON text s,
    also where written with \\u escapes (a superset of what its texts hold, for Held's
    texts a raw pass left out, which are s's own characters): the compiled scan
    (spanwalk.c_shapes), or py_present_placeholders where it is not built or s holds an
    escape of printable ASCII (tests/base/test_present.py holds the two to one answer)."""
    names = pattern_names(rules)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    if spanwalk.c_shapes is not None:
        got = spanwalk.c_shapes(s, names)
        if got is not None:
            return frozenset(got)
    return _present(s, names)


def py_present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """present_placeholders' reference: two regexes and a substring search over s."""
    names = pattern_names(rules)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    return _present(s, names)


def _present(s: str, names: frozenset[str]) -> frozenset[str]:
    found = {m.group() for m in _PLACEHOLDER_SHAPE.finditer(s) if m.group(1) in names}
    if "\\u00" in s:  # what _ASCII_ESCAPE reads begins so (half the time of looking for `\u`)
        t = _ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)
        found.update(m.group() for m in _PLACEHOLDER_SHAPE.finditer(t) if m.group(1) in names)
    return frozenset(found)


# Any pattern name (mappings: [A-Z][A-Z0-9_]*) with a number: one look at each `[` (an
# alternation of every name was tried at each `[` of a body: 3.5 ms a megabyte), then
# the name is looked up. The number has no `_`, so the name is all up to the last `_`.
_PLACEHOLDER_SHAPE = re.compile(r"\[([A-Z][A-Z0-9_]*)_[1-9][0-9]*\]")
# A printable ASCII character spelled `\\u0020`..`\\u007f`: the second-to-last hex digit of
# such an escape (what these escapes may spell: a placeholder here, a copy of an original
# in base/copies.py)
ASCII_ESCAPE_DIGITS = "234567"
_ASCII_ESCAPE = re.compile(rf"\\u00([{ASCII_ESCAPE_DIGITS}][0-9a-fA-F])")


def placeholders_in(texts: list[str], rules: Rules) -> frozenset[str]:
    """The placeholder-shaped strings ("[EMAIL_3]" of a pattern's name) in texts, each
    read as it is (texts masking reads: their escapes are decoded already). The compiled
    scan (spanwalk.c_shapes) over the texts joined (_joined), or py_placeholders_in."""
    names = pattern_names(rules)
    if not names:
        return frozenset()
    found: set[str] = set()
    for t in _joined(texts):
        if "[" in t:
            got = spanwalk.c_shapes(t, names) if spanwalk.c_shapes is not None else None
            found.update(got if got is not None else _shapes(t, names))  # (None: the text holds `\u00..` as text)
    return frozenset(found)


def py_placeholders_in(texts: list[str], rules: Rules) -> frozenset[str]:
    """placeholders_in's reference: a regex over each text."""
    names = pattern_names(rules)
    return frozenset(x for t in texts for x in _shapes(t, names)) if names else frozenset()


def _shapes(t: str, names: frozenset[str]) -> set[str]:
    return {m.group() for m in _PLACEHOLDER_SHAPE.finditer(t) if m.group(1) in names}


def fakes_in(texts: list[str], session: Session) -> frozenset[str]:
    """The fakes session issued that texts hold, as they are or as a URL writes them (the
    restorer turns `carol%40mail.example` back too: percent.in_urls): one Aho–Corasick
    pass (overlapping matches: "Zenith Labs Inc" holds two) over the texts joined."""
    fakes = [k for k in session.placeholders if not k.startswith("[")]
    if not fakes:
        return frozenset()
    of = {f: f for f in fakes}
    for f in fakes:
        of.update(dict.fromkeys(percent.in_urls({f: f}, {}), f))
    keys = list(of)
    # (a fake holding the separator, a control character copied from its original: each text alone)
    parts = _joined(texts) if not any(_SEP in k for k in keys) else iter(texts)
    try:
        ac = ahocorasick_rs.AhoCorasick(keys, matchkind=ahocorasick_rs.MatchKind.Standard)
        return frozenset(of[keys[k]] for t in parts for k, _, _ in ac.find_matches_as_indexes(t, overlapping=True))
    except UnicodeEncodeError:  # a text holds a lone surrogate (`\\ud83d`): read as bytes, each text alone
        bac = ahocorasick_rs.BytesAhoCorasick([utf8(k) for k in keys], matchkind=ahocorasick_rs.MatchKind.Standard)
        found = (bac.find_matches_as_indexes(utf8(t), overlapping=True) for t in texts)
        return frozenset(of[keys[k]] for got in found for k, _, _ in got)


# The texts are scanned joined (a C join: a million short elements are not a million
# calls), CHUNK at a time, a chunk of more than JOIN_MAX characters text by text (a big
# text is not copied); _SEP between two (no placeholder holds it, nor a fake but one
# whose original did: fakes_in).
CHUNK, JOIN_MAX, _SEP = 4096, 1 << 20, "\x00"


def _joined(texts: list[str]) -> Iterator[str]:
    for i in range(0, len(texts), CHUNK):
        chunk = texts[i : i + CHUNK]
        if len(chunk) == 1 or sum(map(len, chunk)) <= JOIN_MAX:
            yield _SEP.join(chunk)  # (a chunk of one: that text itself)
        else:
            yield from chunk


def _clients(
    found: frozenset[str], pieces: list[str], seen: list[str] | None, echo: Callable[[int], bool] | None,
    search: Callable[[list[str]], frozenset[str]],
) -> frozenset[str]:
    """Those of found (placeholders or fakes, as search finds them in texts) that a text
    of the client's holds: a piece that is no echo (an answer's text sent back as it
    came), or a text a raw pass left out (seen: whose field is not known). Looked for
    again only where found holds any."""
    if not found or echo is None:
        return found
    got = search([p for k, p in enumerate(pieces) if not echo(k)])
    return got | search(left_out_texts(seen)) if seen else got


class Held:
    """What one request (or realtime event) already holds, read in the texts masking's
    walk reads. masking.mask_doc walks with `noting(reads)`, calls `read` once its walk
    listed the texts, before it masks anything, and `done` once it has: `read` adds the
    placeholders they hold to the session's reserved ones (its numbering skips them),
    read once for all of a body's maskings; `done` sets `clash`, the fakes the session
    issued that they hold (masking then masks again with those reserved).

    pieces: the walk's texts; seen: those a raw pass left out of it (rules/rawscan.py),
    bytes of the body as they stand (a list left out whole: its LeftOut, read as its
    texts). A text the walk reads as it is (its token decoded, maybe with its key
    around it) and a text of seen holds what s holds there, escapes
    aside, which present_placeholders decodes: where s holds no placeholder, only the
    texts read otherwise (decoded: the pieces `reads` listed, `noting`) are looked at,
    so that a body of a million short strings costs one scan of s, as before, not a
    join of them all. Fakes are looked for in every text (and in seen where s holds one):
    only once masking issued one."""

    __slots__ = ("placeholders", "clash", "shapes", "every", "_read", "_before", "_decoded", "_echo")

    def __init__(self, every: bool = False) -> None:
        self.placeholders: frozenset[str] | None = None
        # every placeholder shape in the body's text and in the texts the walk read, the
        # client's or not (turns.py: what a later turn's new placeholders must not be)
        self.shapes: frozenset[str] = frozenset()
        # every: `done` looks for every fake the session holds, also where masking issued
        # none (a conversation's new elements masked after its earlier ones: turns.py)
        self.every = every
        self.clash: frozenset[str] = frozenset()
        self._read: tuple[str, list[str], list[str] | None] | None = None
        self._before = 0
        self._decoded: list[tuple[int, int]] = []
        self._echo: Callable[[int], bool] | None = None

    def noting(self, reads: Reads) -> Reads:
        """reads (masking.reads), noting which pieces each call lists: the compiled walk
        calls it only for the strings it does not read as they are (spanwalk.collect),
        the reference for every string (then every piece counts as read otherwise)."""
        spans = self._decoded = []

        def noted(v: str, rule: Rule, key: str | None, out: list[str]) -> None:
            n = len(out)
            reads(v, rule, key, out)
            spans.append((n, len(out)))

        return noted

    def read(
        self, s: str, pieces: list[str], seen: list[str] | None, rules: Rules, session: Session,
        echo: Callable[[int], bool] | None = None,
    ) -> None:
        """echo(k): is pieces[k] an answer's text sent back as it came (jsonspan.Rule.echo)?
        The placeholders and fakes such a text alone holds are the provider's own, from
        the turn that wrote it: not the client's (not skipped, not reserved)."""
        self._echo = echo
        if self.placeholders is None:
            shown = present_placeholders(s, rules)
            if shown:
                got = placeholders_in(pieces, rules)
                if seen:
                    got |= placeholders_in(left_out_texts(seen), rules)
            else:
                got = placeholders_in([p for a, b in self._decoded for p in pieces[a:b]], rules)
            self.shapes = shown | got
            self.placeholders = _clients(got, pieces, seen, echo, lambda texts: placeholders_in(texts, rules))
        self._decoded = []
        if self.placeholders:
            session.reserved = session.reserved | self.placeholders
        self._read, self._before = (s, pieces, seen), session.fakes

    def done(self, session: Session) -> None:
        assert self._read is not None
        s, pieces, seen = self._read
        self._read = None
        self.clash = frozenset()
        if session.fakes != self._before or self.every and session.fakes:
            self.clash = fakes_in(pieces, session)
            if seen and fakes_in([s], session):
                self.clash |= fakes_in(left_out_texts(seen), session)
            self.clash = _clients(self.clash, pieces, seen, self._echo, lambda texts: fakes_in(texts, session))
