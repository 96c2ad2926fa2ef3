"""Compiled matchers: forward (mask), reverse (restore), strip and hold-back.

Forward: literals win over patterns at the same position; the leftmost match wins
otherwise (exactly the semantics of one alternation `literals|pattern1|pattern2...`,
but each rule runs on its own engine so that a pattern with a required literal, like
the `@` of an e-mail, is searched at C speed).

Reverse: one `regex` alternation of every disguise, the flow's placeholders and the
strip rules. A second copy ending in `(?!)` can never match completely, so a
`partial=True` search on it returns exactly the leftmost position where some rule is
still in progress at the end of the text — the start of the tail to hold back. (A plain
partial search is not enough: `regex` prefers a complete `nova` to an unfinished
`nova.cloud`.)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

import regex

from .mappings import MappingSet

_SURROGATE = re.compile("[\ud800-\udfff]")


def json_escape(s: str) -> str:
    """The body of a JSON string literal for s (UTF-8 kept; lone surrogates escaped)."""
    out = json.dumps(s, ensure_ascii=False)[1:-1]
    if _SURROGATE.search(out):
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching any of words, longest first, shaped as a trie.

    A flat alternation of 1,000 literals is tried branch by branch at every position;
    the trie tries one branch per distinct next character (measured 4x faster).
    """
    trie: dict = {}
    for w in words:
        t = trie
        for ch in w:
            t = t.setdefault(ch, {})
        t[""] = True

    def build(t: dict) -> str:
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(t.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in t:  # a word ends here: the longer continuation is tried first
            return "(?:" + body + ")?"
        return body

    return build(trie)


class Session:
    """One request's placeholders, numbered by first appearance (contract §2)."""

    __slots__ = ("placeholders", "_by_key", "_count", "masked", "counts", "reserved")

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

    def count(self, label: str) -> None:
        self.masked += 1
        self.counts[label] = self.counts.get(label, 0) + 1

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


LITERALS = "literals"  # the label of every literal in counts and find()


class Rules:
    """Everything compiled from one MappingSet; shared by all flows, never mutated."""

    def __init__(self, ms: MappingSet) -> None:
        self.mappings = ms
        self.lit_forward = {lit.original: lit.disguise for lit in ms.literals}
        self.lit_reverse = {lit.disguise: lit.original for lit in ms.literals}
        self.pattern_names = tuple(p.name for p in ms.patterns)
        fwd: list[tuple[str | None, object]] = []
        if ms.literals:
            fwd.append((None, re.compile(trie_pattern(self.lit_forward))))
        for p in ms.patterns:
            fwd.append((p.name, regex.compile(p.regex)))
        self._forward = tuple(fwd)

        lit = trie_pattern(self.lit_reverse) if ms.literals else None
        ph = (
            r"\[(?:" + "|".join(map(re.escape, self.pattern_names)) + r")_[1-9][0-9]*\]"
            if ms.patterns
            else None
        )
        strips = [s.regex for s in ms.strips]
        self.has_strips = bool(strips)
        # Text channels: disguises, placeholders and strip rules. JSON text and whole
        # values (tool names, keys): disguises and placeholders only.
        text_alts = _groups(lit, ph, strips)
        value_alts = _groups(lit, ph, [])
        self.rev_text = regex.compile(text_alts)
        self.rev_text_hold = regex.compile("(?:" + text_alts + ")(?!)")
        self.rev_value = regex.compile(value_alts)
        self.rev_value_hold = regex.compile("(?:" + value_alts + ")(?!)")
        self.strip_hold = regex.compile("(?:" + _groups(None, None, strips) + ")(?!)")
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
        """Every span mask() would replace, in order: (label, start, end), where label is
        a pattern's name or LITERALS. For checks that must not change text (leak guard,
        audit)."""
        fwd = self._forward
        nxt = [rx.search(text) for _, rx in fwd]  # type: ignore[attr-defined]
        out: list[tuple[str, int, int]] = []
        if not any(nxt):
            return out
        while True:
            best = None
            bi = -1
            for i, m in enumerate(nxt):
                if m is not None and (best is None or m.start() < best.start()):
                    best, bi = m, i
            if best is None:
                break
            name = fwd[bi][0]
            out.append((LITERALS if name is None else name, best.start(), best.end()))
            pos = best.end()
            for i, m in enumerate(nxt):
                if m is not None and m.start() < pos:
                    nxt[i] = fwd[i][1].search(text, pos)  # type: ignore[attr-defined]
        return out

    def mask(self, text: str, session: Session) -> str:
        """text with every original replaced; placeholders numbered in session."""
        spans = self.find(text)
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for label, a, b in spans:
            found = text[a:b]
            out.append(text[pos:a])
            out.append(self.lit_forward[found] if label == LITERALS else session.placeholder(label, found))
            session.count(label)
            pos = b
        out.append(text[pos:])
        return "".join(out)

    def restorer(self, placeholders: dict[str, str]) -> Restorer:
        return Restorer(self, placeholders)


def _quiet_chunk_regex(
    disguises, names: tuple[str, ...], strips
) -> tuple[re.Pattern[bytes], frozenset[int]]:
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
        starts, bmp = _strip_starts(st.regex)
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


@functools.cache
def _strip_starts(rx_text: str) -> tuple[dict[str, frozenset[str] | None], bool]:
    """For a strip regex: each ASCII character it can begin with, mapped to the ASCII
    characters that can follow it (None when a non-ASCII or no character may follow,
    i.e. "any"), and whether some non-ASCII BMP character can begin it. Every
    character is tried: about 80 ms per regex, once per process."""
    rx = regex.compile(rx_text)
    bmp = any(
        rx.match(chr(c), partial=True) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000
    )
    starts: dict[str, frozenset[str] | None] = {}
    for c1 in map(chr, range(128)):
        if not rx.match(c1, partial=True):
            continue
        m = rx.fullmatch(c1)
        nonascii_next = any(
            rx.match(c1 + chr(c), partial=True) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000
        )
        if m is not None or nonascii_next:
            starts[c1] = None
        else:
            starts[c1] = frozenset(c2 for c2 in map(chr, range(128)) if rx.match(c1 + c2, partial=True))
    return starts, bmp


def _groups(lit: str | None, ph: str | None, strips: list[str]) -> str:
    alts = []
    if lit:
        alts.append(f"(?P<_dL>{lit})")
    if ph:
        alts.append(f"(?P<_dP>{ph})")
    alts.extend(f"(?:{s})" for s in strips)
    return "|".join(alts) if alts else "(?!)"


class Restorer:
    """Reverse mapping for one flow: global literals plus that flow's placeholders."""

    __slots__ = ("rules", "placeholders", "_esc_cache", "restored", "stripped")

    def __init__(self, rules: Rules, placeholders: dict[str, str]) -> None:
        self.rules = rules
        self.placeholders = placeholders
        self._esc_cache: dict[str, str] = {}
        self.restored = 0  # disguises and placeholders turned back into originals
        self.stripped = 0  # strip-rule matches deleted

    def replacement(self, m: regex.Match, escaped: bool) -> str:
        """What replaces match m: its original, "" for a strip match, or m itself for a
        placeholder this flow never issued."""
        # Literal and placeholder groups hold no capturing groups of their own, so
        # lastgroup names them; a strip rule's match has some other lastgroup.
        kind = m.lastgroup
        if kind == "_dL":
            orig = self.rules.lit_reverse[m.group()]
        elif kind == "_dP":
            got = self.placeholders.get(m.group())
            if got is None:
                return m.group()
            orig = got
        else:
            self.stripped += 1
            return ""
        self.restored += 1
        if not escaped:
            return orig
        e = self._esc_cache.get(orig)
        if e is None:
            e = self._esc_cache[orig] = json_escape(orig)
        return e

    def text(self, s: str) -> str:
        """Whole-text reversal of a finished text channel (strip rules included)."""
        from .holdback import Window

        w = Window(self, Window.TEXT)
        return w.feed(s) + w.flush()

    def json_text(self, s: str) -> str:
        """Whole reversal of complete JSON text (tool arguments): originals JSON-escaped."""
        from .holdback import Window

        w = Window(self, Window.JSON)
        return w.feed(s) + w.flush()

    def value(self, s: str) -> str:
        """Whole-value reversal of a complete decoded string (tool name, key, value)."""
        from .holdback import Window

        w = Window(self, Window.VALUE)
        return w.feed(s) + w.flush()
