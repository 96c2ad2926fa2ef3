"""Compiled matchers: forward (mask), reverse (restore), strip and hold-back.

Every matcher here runs in time linear in its input:

- Forward. Literals are found by an Aho–Corasick automaton (ahocorasick-rs,
  leftmost-longest), patterns by RE2 (`linear.py`). One pass of an RE2 set over a
  string says which patterns match anywhere in it; only those are searched for their
  spans. Semantics: the leftmost match wins; at the same start a literal wins, then the
  pattern listed first; after a match every rule goes on from its end (a rule whose next
  match started inside it is searched again from there).
- Reverse. What is restored is a finite set of strings — the disguises, and the
  placeholders `[NAME_n]` one request issued — so complete matches come from another
  Aho–Corasick automaton and a bounded placeholder regex, and the hold-back point (the
  leftmost position where a match may still be in progress at the end of the text so
  far) from a trie regex of their proper prefixes, searched over the last (longest − 1)
  characters only: its cost does not depend on how much text went before. A trie regex
  tries one branch per next character, so the stdlib engine runs it in time bounded by
  the trie's depth at each position. Strip rules stay regexes: RE2 with their
  prefix closure (`rxsyntax.py`); every strip match is at most `width` long, so neither
  the search nor what a window holds grows past that.

Whole-text reversal (`Restorer.text`, `.json_text`, `.value`) and the streaming
windows (`holdback.Window`) share one primitive, `Restorer.run`, which is why a
stream's output cannot depend on how it was cut.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import ahocorasick_rs

from . import linear, rxsyntax, validators
from .mappings import MappingSet, Pattern

_SURROGATE = re.compile("[\ud800-\udfff]")
_LEFTMOST_LONGEST = ahocorasick_rs.MatchKind.LeftmostLongest
# Aho-Corasick as a DFA scans about twice as fast as the library's default choice
# (bench, 1,000 literals: 2.4 against 5.5 ms a megabyte) but takes memory in
# proportion to the total length of the strings: up to this many characters.
_DFA_MAX_CHARS = 200_000


def _automaton(cls, keys: list, total: int):
    impl = ahocorasick_rs.Implementation.DFA if total <= _DFA_MAX_CHARS else None
    return cls(keys, matchkind=_LEFTMOST_LONGEST, implementation=impl)

# Window modes (holdback.Window uses the same numbers).
TEXT = 0  # decoded text a user reads: disguises, placeholders and strip rules
VALUE = 1  # a complete decoded string (tool name, key, value): no strip rules
JSON = 2  # JSON text (tool arguments): originals inserted JSON-escaped; escape-aware

LITERALS = "literals"  # the label of every literal in counts and find()

# A placeholder's number has at most this many digits (a request with a billion
# e-mail addresses is not a request).
_MAX_DIGITS = 9


def json_escape(s: str) -> str:
    """The body of a JSON string literal for s (UTF-8 kept; lone surrogates escaped)."""
    out = json.dumps(s, ensure_ascii=False)[1:-1]
    if _SURROGATE.search(out):
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def _utf8(s: str) -> bytes:
    # A decoded JSON string can hold a lone surrogate (half of a pair cut between two
    # deltas); it is carried through as its 3-byte form and decoded back the same way.
    return s.encode("utf-8", "surrogatepass")


def _char_offsets(b: bytes, offsets: Iterable[int]) -> list[int]:
    """Character offsets of increasing byte offsets into b, in one pass."""
    out = []
    last_b = last_c = 0
    for off in offsets:
        last_c += len(b[last_b:off].decode("utf-8", "surrogatepass"))
        last_b = off
        out.append(last_c)
    return out


def _trie(words: Iterable[str]) -> dict:
    trie: dict = {}
    for w in words:
        t = trie
        for ch in w:
            t = t.setdefault(ch, {})
        t[""] = {}
    return trie


def _proper_prefixes(t: dict) -> str:
    """A regex for the non-empty strings u such that (path to t) + u is a proper prefix
    of a word of trie t: every node that has children, shaped as a trie."""
    alts = []
    for ch, sub in sorted(t.items()):
        if ch and any(sub):
            inner = _proper_prefixes(sub)
            alts.append(re.escape(ch) + (f"(?:{inner})?" if inner else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _all_prefixes(t: dict, end: str) -> str:
    """A regex for every non-empty prefix of a word of trie t, a whole word followed
    optionally by `end`."""
    alts = []
    for ch, sub in sorted(t.items()):
        if not ch:
            continue
        inner = _all_prefixes(sub, end)
        if "" in sub:
            inner = f"(?:{inner}|{end})" if inner else end
        alts.append(re.escape(ch) + (f"(?:{inner})?" if inner else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _esc_advance(s: str, i: int, j: int, st: int) -> int:
    """JSON escape state after s[i:j], starting in state st.

    0: not in an escape; -1: just after a backslash; k > 0: k hex digits of a \\u escape
    still to come.
    """
    while i < j:
        if st == 0:
            k = s.find("\\", i, j)
            if k < 0:
                return 0
            st = -1
            i = k + 1
        elif st == -1:
            st = 4 if s[i] == "u" else 0
            i += 1
        else:
            take = min(st, j - i)
            st -= take
            i += take
    return st


class Session:
    """One request's placeholders, numbered by first appearance (contract §2)."""

    __slots__ = ("placeholders", "_by_key", "_count", "masked", "counts", "reserved", "literals")

    def __init__(self, reserved: frozenset[str] = frozenset()) -> None:
        # Placeholder strings the request already holds as the client's own text: never
        # issued, or the response would "restore" the client's text into an original.
        self.reserved = reserved
        self.placeholders: dict[str, str] = {}  # "[EMAIL_1]" -> original
        self._by_key: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}
        self.masked = 0  # how many replacements were made (for the flow comment)
        # replacements per rule: a pattern's name, or LITERALS for every literal
        self.counts: dict[str, int] = {}
        self.literals: set[str] = set()  # the literals' originals that were replaced

    def count(self, label: str, original: str | None = None) -> None:
        self.masked += 1
        self.counts[label] = self.counts.get(label, 0) + 1
        if label == LITERALS and original is not None:
            self.literals.add(original)

    def placeholder(self, name: str, original: str) -> str:
        key = (name, original)
        ph = self._by_key.get(key)
        if ph is None:
            n = self._count.get(name, 0) + 1
            ph = f"[{name}_{n}]"
            while ph in self.reserved:
                n += 1
                ph = f"[{name}_{n}]"
            self._count[name] = n
            self._by_key[key] = ph
            self.placeholders[ph] = original
        return ph


class _Options:
    """A pattern's per-rule options, resolved for the engine (see _accept)."""

    __slots__ = ("groups", "validator", "keywords", "window")

    def __init__(self, groups: tuple[int, ...], validator: str | None, keywords: tuple[str, ...], window: int):
        self.groups = groups
        self.validator = validator
        self.keywords = keywords
        self.window = window

    @staticmethod
    def of(p: Pattern, groupindex: Mapping[str, int]) -> _Options | None:
        """None when p has no options (the whole match is masked, as it is)."""
        if not (p.group or p.validator or p.keywords):
            return None
        groups = tuple(g if isinstance(g, int) else groupindex[g] for g in p.group)
        return _Options(groups, p.validator, p.keywords, p.window)


def _boundary(b: bytes, i: int, step: int) -> int:
    """i moved (by step: -1 left, +1 right) to the start of a UTF-8 character."""
    n = len(b)
    while 0 < i < n and (b[i] & 0xC0) == 0x80:
        i += step
    return max(0, min(i, n))


def _accept(opts: _Options, spans: list[tuple[int, int]], b: bytes, text: str | None) -> tuple[int, int] | None:
    """The byte span to mask for one candidate match (spans: the match's and every
    group's byte spans), or None to reject it.

    Semantics (kept from the mapping format's definition, in characters):
    1. Span: with `group`, the span of the first listed group that took part in the match
       (a group that did not take part, or matched empty, is skipped); no such group
       rejects the candidate. Without `group`, the whole match.
    2. Keywords: one of them (lower-cased at load) must occur in the match with `window`
       characters either side of it (clipped to the text), case-insensitively.
    3. Validator: validators.check(name, text, a, b) on the span must be true.
    The accepted span, not the match, is what find() compares for leftmost selection
    (ties: the earlier rule) and what mask() replaces; the rest of the match (context
    such as `password: `) stays. A rejected candidate makes find() search the same rule
    again from the match's start + 1 character.
    Cost: O(match length + window) per candidate: a validator reads its span and a few
    characters around it; only a slice around the match is decoded, never the text.
    text is the decoded string when it is ASCII (offsets in bytes and characters agree),
    else None.
    """
    ms, me = spans[0]
    if opts.groups:
        for g in opts.groups:
            a, e = spans[g]
            if a >= 0 and e > a:
                break
        else:
            return None
    else:
        a, e = ms, me
    if opts.keywords:
        w = opts.window
        if text is not None:
            near = text[max(0, ms - w) : me + w].lower()
        else:  # w characters are at most 4w bytes: decode that much, then count characters
            lo = _boundary(b, max(0, ms - 4 * w), 1)
            hi = _boundary(b, me + 4 * w, -1)
            before = _decode(b[lo:ms])[-w:] if w else ""
            near = (before + _decode(b[ms:me]) + _decode(b[me:hi])[:w]).lower()
        if not any(k in near for k in opts.keywords):
            return None
    if opts.validator is not None:
        if text is not None:
            ok = validators.check(opts.validator, text, a, e)
        else:  # validators read their span and a few characters around it
            lo = _boundary(b, max(0, a - 64), 1)
            hi = _boundary(b, e + 64, -1)
            pre = _decode(b[lo:a])
            ok = validators.check(opts.validator, pre + _decode(b[a:hi]), len(pre), len(pre) + len(_decode(b[a:e])))
        if not ok:
            return None
    return a, e


@dataclass(frozen=True)
class _Pattern:
    name: str
    rx: linear.Regex
    opts: _Options | None = None


@dataclass(frozen=True)
class _Strip:
    rx: linear.Regex  # the bounded rule
    hold: linear.Regex  # (?:closure)\z: where a match may still be in progress
    width: int


class Rules:
    """Everything compiled from one MappingSet; shared by all flows, never mutated."""

    def __init__(self, ms: MappingSet) -> None:
        self.mappings = ms
        self.lit_forward = {lit.original: lit.disguise for lit in ms.literals}
        self.lit_reverse = {lit.disguise: lit.original for lit in ms.literals}
        self.pattern_names = tuple(p.name for p in ms.patterns)

        # -- forward --
        originals = list(self.lit_forward)
        self._lit_ac = (
            _automaton(ahocorasick_rs.BytesAhoCorasick, [_utf8(o) for o in originals], sum(map(len, originals)))
            if originals
            else None
        )
        self._lit_disguise = [self.lit_forward[o] for o in originals]
        pats = []
        for p in ms.patterns:
            rx = linear.Regex(p.regex)
            pats.append(_Pattern(p.name, rx, _Options.of(p, rx.groupindex)))
        self._patterns = tuple(pats)
        self._prefilter = linear.Prefilter([p.regex for p in ms.patterns]) if ms.patterns else None

        # -- reverse --
        disguises = list(self.lit_reverse)
        total = sum(map(len, disguises))
        self._dis_ac = _automaton(ahocorasick_rs.AhoCorasick, disguises, total) if disguises else None
        self._dis_ac_bytes = (
            _automaton(ahocorasick_rs.BytesAhoCorasick, [_utf8(d) for d in disguises], total) if disguises else None
        )
        self._dis_original = [self.lit_reverse[d] for d in disguises]
        names = sorted(self.pattern_names, key=len, reverse=True)
        self._ph = (
            re.compile(r"\[(?:" + "|".join(map(re.escape, names)) + r")_[1-9][0-9]{0," + str(_MAX_DIGITS - 1) + r"}\]")
            if names
            else None
        )
        # Hold-back: the leftmost non-empty proper prefix of a disguise or placeholder
        # that ends the text. Two variants: a flow that was issued no placeholders
        # need not hold `[EM` back.
        dis_pp = _proper_prefixes(_trie(disguises)) if disguises else ""
        ph_pp = (
            r"\[(?:" + _all_prefixes(_trie(n + "_" for n in names), f"[1-9][0-9]{{0,{_MAX_DIGITS - 1}}}") + ")?"
            if names
            else ""
        )
        self._hold = re.compile("(?:" + dis_pp + r")\Z") if dis_pp else None
        both = "|".join(x for x in (dis_pp, ph_pp) if x)
        self._hold_ph = re.compile("(?:" + both + r")\Z") if both else None
        longest_ph = 2 + max(map(len, names)) + 1 + _MAX_DIGITS if names else 0
        self._hold_span = max([longest_ph, *map(len, disguises)], default=0)

        self._strips = tuple(_compile_strip(s.regex) for s in ms.strips)
        self.has_strips = bool(self._strips)
        self._strip_first = frozenset().union(*(_strip_starts(s.regex)[0] for s in ms.strips))
        self._strip_nonascii = any(_strip_starts(s.regex)[1] for s in ms.strips)
        first = "".join(map(re.escape, sorted(self._strip_first)))
        self._strip_first_rx = re.compile(f"[{first}]" if first else "(?!)")
        self._strip_span = max((s.width for s in self._strips), default=0)

        self.quiet_chunk, starts = _quiet_chunk_regex(self.lit_reverse, self.pattern_names, ms.strips)
        # Every byte that can begin a quiet_chunk match, marked 0 in a translate table:
        # `data.translate(t).find(0)` scans at memchr speed, where even a one-class
        # regex search costs about 7 ns a byte (1.2 us for a 170-byte event).
        self._trigger_table = bytes(0 if b in starts else 1 for b in range(256))

    def suspicious(self, data: bytes, end: int) -> bool:
        """Could anything in data[:end] take part in a reverse match? (See
        _quiet_chunk_regex.) False means those bytes can pass on unparsed."""
        marks = data.translate(self._trigger_table)
        i = marks.find(0, 0, end)
        match = self.quiet_chunk.match
        # Try the first few marked bytes in place (an OpenAI chunk's envelope always has
        # the `[` of `"choices":[`), then let the regex scan the rest.
        for _ in range(4):
            if i < 0:
                return False
            if match(data, i, end) is not None:
                return True
            i = marks.find(0, i + 1, end)
        return i >= 0 and self.quiet_chunk.search(data, i, end) is not None

    # -- forward ---------------------------------------------------------------------

    def find(self, text: str) -> list[tuple[str, int, int]]:
        """Every span mask() would replace, in order: (label, start, end) in characters,
        where label is a pattern's name or LITERALS. For checks that must not change
        text (leak guard, audit)."""
        if not text:
            return []
        b = _utf8(text)
        spans = self._find_bytes(b)
        if not spans or len(b) == len(text):
            return spans
        offs = _char_offsets(b, [x for _, s, e in spans for x in (s, e)])
        return [(label, offs[2 * i], offs[2 * i + 1]) for i, (label, _, _) in enumerate(spans)]

    def _find_bytes(self, b: bytes) -> list[tuple[str, int, int]]:
        n = len(b)
        lits: list = self._lit_ac.find_matches_as_indexes(b) if self._lit_ac is not None else []
        active = sorted(self._prefilter.match(b)) if self._prefilter is not None else []
        if not lits and not active:
            return []
        pats = self._patterns
        text = _decode(b) if active and any(pats[i].opts for i in active) else None
        if text is not None and len(text) != len(b):
            text = None  # offsets differ: options decode slices instead
        nxt = {i: self._next(pats[i], b, 0, text) for i in active}
        out: list[tuple[str, int, int]] = []
        li = 0
        pos = 0
        while True:
            # the next literal at or after pos
            while li < len(lits) and lits[li][1] < pos:
                if lits[li][2] > pos:  # cut by a pattern match: look again from pos
                    lits = [(k, s + pos, e + pos) for k, s, e in self._lit_ac.find_matches_as_indexes(b[pos:])]  # type: ignore[union-attr]
                    li = 0
                    break
                li += 1
            best: tuple[str, int, int] | None = None
            if li < len(lits):
                k, s, e = lits[li]
                best = (LITERALS, s, e)
            for i in active:
                m = nxt[i]
                if m is not None and (best is None or m[0] < best[1]):
                    best = (pats[i].name, m[0], m[1])
            if best is None:
                break
            out.append(best)
            pos = best[2]
            if pos >= n:
                break
            for i in active:
                m = nxt[i]
                if m is not None and m[0] < pos:
                    nxt[i] = self._next(pats[i], b, pos, text)
        return out

    @staticmethod
    def _next(p: _Pattern, b: bytes, pos: int, text: str | None) -> tuple[int, int] | None:
        """The byte span pattern p masks next at or after byte pos, or None (text: b
        decoded, when it is ASCII)."""
        n = len(b)
        while pos <= n:
            if p.opts is None:
                m = p.rx.search(b, pos)
                if m is None:
                    return None
                if m[1] > m[0]:
                    return m
                start = m[0]
            else:
                spans = p.rx.groups(b, pos)
                if spans is None:
                    return None
                start = spans[0][0]
                if spans[0][1] > start:
                    got = _accept(p.opts, spans, b, text)
                    if got is not None:
                        return got
            # an empty or rejected match: go on one character further
            pos = start + 1
            while pos < n and (b[pos] & 0xC0) == 0x80:
                pos += 1
        return None

    def _disguises_in(self, buf: str, pos: int) -> list[tuple[int, int, int]]:
        """Leftmost-longest disguise matches in buf[pos:]: (index, start, end) in buf."""
        part = buf[pos:] if pos else buf
        try:
            found = self._dis_ac.find_matches_as_indexes(part)  # type: ignore[union-attr]
        except UnicodeEncodeError:  # a lone surrogate: through its 3-byte form
            b = _utf8(part)
            raw = self._dis_ac_bytes.find_matches_as_indexes(b)  # type: ignore[union-attr]
            offs = _char_offsets(b, [x for _, s, e in raw for x in (s, e)])
            found = [(k, offs[2 * i], offs[2 * i + 1]) for i, (k, _, _) in enumerate(raw)]
        if pos:
            return [(k, s + pos, e + pos) for k, s, e in found]
        return found

    def mask(self, text: str, session: Session, context: tuple[str, str] | None = None) -> str:
        """mask_spans applied: text with every original replaced."""
        edits = self.mask_spans(text, session, context)
        if not edits:
            return text
        out: list[str] = []
        pos = 0
        for a, b, rep in edits:
            out.append(text[pos:a])
            out.append(rep)
            pos = b
        out.append(text[pos:])
        return "".join(out)

    def mask_spans(
        self, text: str, session: Session, context: tuple[str, str] | None = None
    ) -> list[tuple[int, int, str]]:
        """The (start, end, replacement) edits that mask text, in order; placeholders
        numbered in session.

        context: the text around text where it is read (a JSON member: `"password": "`
        before, `"` after), so that rules anchored on it (`password: …`) match; only
        what lies in text is replaced (a pattern's match reaching into the context is
        cut there; a literal that would, is looked for in text alone)."""
        spans = None
        if context:
            k, n = len(context[0]), len(text)
            found = self.find(context[0] + text + context[1])
            spans = [(label, max(a, k) - k, min(b - k, n)) for label, a, b in found if b > k and a < k + n]
            if any(label == LITERALS and (a < k or b > k + n) for label, a, b in found if b > k and a < k + n):
                spans = None
        if spans is None:
            spans = self.find(text)
        edits: list[tuple[int, int, str]] = []
        for label, a, b in spans:
            original = text[a:b]
            rep = self.lit_forward[original] if label == LITERALS else session.placeholder(label, original)
            edits.append((a, b, rep))
            session.count(label, original)
        return edits

    def restorer(self, placeholders: dict[str, str], growing: bool = False) -> Restorer:
        return Restorer(self, placeholders, growing)


def _compile_strip(rx: str) -> _Strip:
    try:
        b = rxsyntax.bounded(rx)
        return _Strip(linear.Regex(b.regex), linear.Regex("(?:" + b.closure + r")\z"), b.width)
    except (rxsyntax.SyntaxRefused, linear.RegexError) as e:
        raise ValueError(str(e)) from None


@functools.cache
def _strip_starts(rx_text: str) -> tuple[frozenset[str], bool, dict[str, frozenset[str] | None]]:
    """For a strip rule: the ASCII characters a match can begin with; whether a
    non-ASCII character can begin one; and for each ASCII start, the ASCII characters
    that can follow it (None: any, i.e. a non-ASCII or no character may follow).
    Every character is tried against the rule and its prefix closure: about 0.1 s per
    rule, once per process."""
    b = rxsyntax.bounded(rx_text)
    either = linear.Regex(f"(?:{b.closure})|(?:{b.regex})")
    whole = linear.Regex(b.regex)

    def can(s: str) -> bool:
        return either.fullmatch(_utf8(s))

    bmp = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000]
    first = frozenset(c for c in map(chr, range(128)) if can(c))
    nonascii = any(can(c) for c in bmp)
    follow: dict[str, frozenset[str] | None] = {}
    for c1 in sorted(first):
        if whole.fullmatch(_utf8(c1)) or any(can(c1 + c) for c in bmp):
            follow[c1] = None
        else:
            follow[c1] = frozenset(c2 for c2 in map(chr, range(128)) if can(c1 + c2))
    return first, nonascii, follow


def _quiet_chunk_regex(disguises, names: tuple[str, ...], strips) -> tuple[re.Pattern[bytes], frozenset[int]]:
    """A bytes regex that finds, in raw stream bytes, anything that could take part in a
    reverse match. Events and chunks it finds nothing in, arriving while no window holds
    anything, pass on as they came, unparsed.

    Inside a JSON string the character after a match's first character is either its
    next text character (the same byte when it is plain ASCII), `\\` (an escape) or `"`
    (the string ends there, e.g. at the end of a delta). So a match can only begin at
    one of its possible two-character starts followed that way; a disguise `Zenith`
    makes `Ze`, `Z\\` and `Z"` suspicious, not every `Z`. Also suspicious: a `\\u`
    escape (it could hide such a character); an escaped backslash right before a
    closing quote, i.e. JSON text (tool arguments) whose piece ends inside an escape, so
    that the window must see how it goes on — other escapes end inside their piece and
    leave the window's escape state as it was; and non-ASCII bytes where a strip rule
    could begin with a non-ASCII character.
    """
    follow: dict[str, set[str] | None] = {}  # first char -> possible next chars (None: any)

    def add(first: str, nxt: set[str] | frozenset[str] | None) -> None:
        cur = follow.get(first, set())
        follow[first] = None if cur is None or nxt is None else cur | nxt

    for d in disguises:
        add(d[0], {d[1]} if len(d) > 1 else None)
    if names:
        add("[", {n[0] for n in names})
    nonascii = b""
    nonascii_first: range = range(0)
    for st in strips:
        _first, bmp, starts = _strip_starts(st.regex)
        for first, after in starts.items():
            add(first, after)
        # Characters past the BMP are not enumerated: their UTF-8 lead bytes count as
        # possible starts. A non-ASCII start in the BMP makes every non-ASCII byte one.
        if bmp or nonascii == rb"[\x80-\xff]":
            nonascii, nonascii_first = rb"[\x80-\xff]", range(0x80, 0x100)
        else:
            nonascii, nonascii_first = rb"[\xf0-\xf4]", range(0xF0, 0xF5)
    # a `\u` escape on the wire (it could hide such a character), and an even run of
    # backslashes before an unescaped quote (JSON text ending inside an escape). Each
    # alternative starts with a plain byte, which keeps the regex's fast prefix scan.
    alts = [rb"\\u", rb'\\(?<!\\\\)\\(?:\\\\)*"']
    for first, chars in sorted(follow.items()):
        f = re.escape(first.encode())
        if chars is None:
            alts.append(f)
        else:
            nb = b"".join(re.escape(c.encode()) for c in sorted(chars | {'"', "\\"}))
            alts.append(f + b"[" + nb + b"]")
    if nonascii:
        alts.append(nonascii)
    first_bytes = frozenset({ord("\\")} | {ord(c) for c in follow} | set(nonascii_first))
    return re.compile(b"|".join(alts)), first_bytes


class Restorer:
    """Reverse mapping for one flow: global literals plus that flow's placeholders."""

    __slots__ = ("rules", "placeholders", "_esc_cache", "restored", "stripped", "_hold")

    def __init__(self, rules: Rules, placeholders: dict[str, str], growing: bool = False) -> None:
        self.rules = rules
        # growing: the dict is a live session's and may still gain placeholders (a
        # realtime connection masks and restores frame by frame over one session), so
        # placeholder prefixes are held back from the start.
        self.placeholders = placeholders
        self._esc_cache: dict[str, str] = {}
        self.restored = 0  # disguises and placeholders turned back into originals
        self.stripped = 0  # strip-rule matches deleted (dangling ones at a channel's end too)
        self._hold = rules._hold_ph if (placeholders or growing) else rules._hold

    # -- whole texts ---------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Whole-text reversal of a finished text channel (strip rules included)."""
        return self.run(s, TEXT, True, 0)[0]

    def json_text(self, s: str) -> str:
        """Whole reversal of complete JSON text (tool arguments): originals JSON-escaped."""
        return self.run(s, JSON, True, 0)[0]

    def value(self, s: str) -> str:
        """Whole-value reversal of a complete decoded string (tool name, key, value)."""
        return self.run(s, VALUE, True, 0)[0]

    # -- the primitive ---------------------------------------------------------------------

    def run(self, buf: str, mode: int, final: bool, esc: int) -> tuple[str, int]:
        """Restore buf. Returns (output, h): the restored text of buf[:h], and h, where
        buf[h:] must be held back because a match may still be in progress there (h ==
        len(buf) when final). With final, a dangling partial strip match at the end is
        dropped (TEXT). esc is the JSON escape state at buf's start (JSON mode)."""
        edits, h = self._edits(buf, mode, final, esc)
        if not edits:
            return (buf if h == len(buf) else buf[:h]), h
        out: list[str] = []
        pos = 0
        for s, e, rep in edits:
            out.append(buf[pos:s])
            if rep is None:
                self.stripped += 1
            else:
                self.restored += 1
                out.append(rep)
            pos = e
        out.append(buf[pos:h])
        return "".join(out), h

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where whole-text reversal of text (TEXT mode) changes it, in order: every
        restored or stripped match, and a dangling strip match at its end. Counts
        nothing (for checks, e.g. which logprobs tokens a restored text no longer has)."""
        edits, h = self._edits(text, TEXT, True, 0, count=False)
        out = [(s, e) for s, e, _ in edits]
        if h < len(text):
            out.append((h, len(text)))
        return out

    def _edits(
        self, buf: str, mode: int, final: bool, esc: int, count: bool = True
    ) -> tuple[list[tuple[int, int, str | None]], int]:
        """run()'s work: the (start, end, replacement) of every match to restore (None:
        strip it) that starts before the hold point, and the hold point."""
        n = len(buf)
        if not n:
            return [], 0
        rules = self.rules
        text_mode = mode == TEXT
        strips = rules._strips if text_mode and rules._strips and self._strip_possible(buf) else ()
        h = self._hold_point(buf, 0, strips, final)
        # complete matches: disguises from the automaton; placeholders and strips searched
        dis = rules._disguises_in(buf, 0) if rules._dis_ac is not None else []
        ph = rules._ph if (self.placeholders and "[" in buf) else None
        next_ph = ph.search(buf) if ph is not None else None
        sts = self._strip_matches(buf, 0, strips) if strips else []
        edits: list[tuple[int, int, str | None]] = []
        if dis or next_ph is not None or sts:
            esc_at = 0  # JSON mode: esc is the escape state at buf[esc_at]
            si = di = pos = 0
            # next candidates: (start, end, kind, payload); kind 0 disguise, 1 placeholder, 2 strip
            while True:
                while di < len(dis) and dis[di][1] < pos:
                    if dis[di][2] > pos:  # cut by another match: look again from pos
                        dis = rules._disguises_in(buf, pos)
                        di = 0
                        break
                    di += 1
                if next_ph is not None and next_ph.start() < pos:
                    next_ph = ph.search(buf, pos)  # type: ignore[union-attr]
                while si < len(sts) and sts[si][0] < pos:
                    if sts[si][1] > pos:  # cut by another match: look again from pos
                        sts = self._strip_matches(buf, pos, strips)
                        si = 0
                        break
                    si += 1
                cand: tuple[int, int, int, object] | None = None
                if di < len(dis):
                    k, s, e = dis[di]
                    cand = (s, e, 0, k)
                if next_ph is not None and (cand is None or next_ph.start() < cand[0]):
                    cand = (next_ph.start(), next_ph.end(), 1, next_ph.group())
                if si < len(sts) and (cand is None or sts[si][0] < cand[0]):
                    cand = (sts[si][0], sts[si][1], 2, None)
                if cand is None or cand[0] >= h:
                    break
                s, e, kind, payload = cand
                if mode == JSON:
                    # escape state at s, advanced from the last position looked at (never
                    # from buf's start again: matches x backslashes would be quadratic)
                    esc = _esc_advance(buf, esc_at, s, esc)
                    esc_at = s
                    if esc != 0:
                        # inside an escape sequence (the `nab` of `\nab`): not a match here
                        if kind == 0:
                            dis = rules._disguises_in(buf, s + 1)
                            di = 0
                        elif kind == 1:
                            next_ph = ph.search(buf, s + 1)  # type: ignore[union-attr]
                        continue
                rep: str | None
                if kind == 0:
                    rep = rules._dis_original[payload]  # type: ignore[call-overload]
                elif kind == 1:
                    rep = self.placeholders.get(payload)  # type: ignore[call-overload]
                    if rep is None:  # a placeholder this flow never issued: left as it is
                        next_ph = ph.search(buf, s + 1)  # type: ignore[union-attr]
                        continue
                else:
                    rep = None
                if rep is not None and mode == JSON:
                    rep = self._escaped(rep)
                edits.append((s, e, rep))
                pos = e
                if pos > h:
                    h = self._hold_point(buf, pos, strips, final)
        if final and h < n and strips and count:
            self.stripped += 1  # a dangling, unfinished strip match: dropped
        return edits, h

    def _escaped(self, orig: str) -> str:
        e = self._esc_cache.get(orig)
        if e is None:
            e = self._esc_cache[orig] = json_escape(orig)
        return e

    def _strip_possible(self, buf: str) -> bool:
        rules = self.rules
        if rules._strip_nonascii and not buf.isascii():
            return True
        return rules._strip_first_rx.search(buf) is not None

    def _hold_point(self, buf: str, start: int, strips: tuple[_Strip, ...], final: bool) -> int:
        """Where the held tail of buf begins, looking only at what follows start: the
        leftmost position from which a disguise, an issued placeholder (not final) or a
        strip match may still be in progress at buf's end."""
        n = len(buf)
        h = n
        if not final and self._hold is not None:
            m = self._hold.search(buf, max(start, n - self.rules._hold_span))
            if m is not None:
                h = m.start()
        if strips:
            lo = max(start, n - self.rules._strip_span)
            tail = buf[lo:]
            tb = _utf8(tail)
            for st in strips:
                span = st.hold.search(tb)
                if span is not None and span[0] < len(tb):
                    c = span[0] if len(tb) == len(tail) else _char_offsets(tb, [span[0]])[0]
                    h = min(h, lo + c)
        return h

    @staticmethod
    def _strip_matches(buf: str, pos: int, strips: tuple[_Strip, ...]) -> list[tuple[int, int]]:
        """The leftmost-first, non-overlapping strip matches in buf[pos:] (character
        offsets into buf), every rule at once: leftmost wins, then the rule listed first."""
        b = _utf8(buf[pos:] if pos else buf)
        n = len(b)
        nxt = [st.rx.search(b, 0) for st in strips]
        spans: list[tuple[int, int]] = []
        at = 0
        while True:
            best = None
            for m in nxt:
                if m is not None and m[1] > m[0] and (best is None or m[0] < best[0]):
                    best = m
            if best is None:
                break
            spans.append(best)
            at = best[1]
            for i, m in enumerate(nxt):
                if m is not None and m[0] < at:
                    nxt[i] = strips[i].rx.search(b, at) if at < n else None
        if n == len(buf) - pos:
            return [(s + pos, e + pos) for s, e in spans]
        offs = _char_offsets(b, [x for sp in spans for x in sp])
        return [(offs[2 * i] + pos, offs[2 * i + 1] + pos) for i in range(len(spans))]


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogatepass")
