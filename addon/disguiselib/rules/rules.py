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

import bisect
import functools
import hashlib
import hmac
import os
import re

import ahocorasick_rs

from ..wire import percent
from ..wire.text import char_offsets, decode, json_escape, splice, utf8
from . import bigtext, fakes, leftmost, linear, remask, settle, triggers
from .accept import Options, prefilter_regex, skip_regex
from .bigtext import ascii_bytes, edits_like, lit_matches, literal_spans, spans_like
from .found import CLEAN_MAX, NOTHING, Found, Known, digest_of
from .mappings import MappingSet
from .patterns import Pattern, next_match
from .prescan import REMEMBER_MIN
from .prescan import prescan as _prescan
from .restorer import JSON, TEXT, VALUE, Restorer, all_prefixes, compile_strip, proper_prefixes, strip_starts, trie
from .session import LITERALS, PH_MAX_DIGITS, PH_NUMBER, PH_OPEN, PH_SEP, Session, ph_regex, spelled
from .settle import in_context

# Restorer, json_escape and the window modes live in restorer.py and text.py; they are
# named here too, where the matchers are introduced.
__all__ = ["JSON", "LITERALS", "TEXT", "VALUE", "Restorer", "Rules", "Session", "json_escape"]

_LEFTMOST_LONGEST = ahocorasick_rs.MatchKind.LeftmostLongest
# Aho-Corasick as a DFA scans about twice as fast as the library's default choice
# (bench, 1,000 literals: 2.4 against 5.5 ms a megabyte) but takes memory in
# proportion to the total length of the strings: up to this many characters.
_DFA_MAX_CHARS = 200_000


def _END(m: tuple[int, int, int]) -> int:  # noqa: N802 - a key, named as the constant it is
    return m[2]


def automaton(cls, keys: list, total: int):
    impl = ahocorasick_rs.Implementation.DFA if total <= _DFA_MAX_CHARS else None
    return cls(keys, matchkind=_LEFTMOST_LONGEST, implementation=impl)


# the numbering key of a proxy without a fakes key (Rules.numbers_key): its own, made at
# start, kept over reloads
_PROCESS_KEY = os.urandom(32)


class Rules:
    """Everything compiled from one MappingSet; shared by all flows, never mutated but
    for the memory of what it found in texts met before (`Found`)."""

    def __init__(
        self, ms: MappingSet, fakes_key: bytes | None = None, streams: bool = True, numbers_key: bytes | None = None
    ) -> None:
        """streams=False: a set no stream is restored with (the literals turned around that
        pipeline checks requests for; the masking worker's), built without the streams'
        trigger patterns (1,000 literals: some 16 MiB). numbers_key: see below (the
        masking worker's: the proxy's)."""
        self.mappings = ms
        self.found = Found()
        self.lit_forward = {lit.original: lit.disguise for lit in ms.literals}
        # what the restorer turns back: each disguise, and each as a URL holds it
        # (percent.in_urls: `Zenith%20Labs` to `Acme%20Corp`, where the masker wrote it so)
        self.lit_reverse = {lit.disguise: lit.original for lit in ms.literals}
        self.lit_reverse.update(percent.in_urls(self.lit_reverse, self.lit_forward))
        self.pattern_names = tuple(p.name for p in ms.patterns)

        # -- forward --
        originals = list(self.lit_forward)
        self._lit_longest = max((len(utf8(o)) for o in originals), default=1)
        # the automaton, read through a Hyperscan literal database where that is faster
        # (leftmost.py: the same matches)
        keys = [utf8(o) for o in originals]
        self._lit_ac = (
            leftmost.Literals(keys, automaton(ahocorasick_rs.BytesAhoCorasick, keys, sum(map(len, originals))))
            if originals
            else None
        )
        del keys
        # rawscan's one automaton of these literals and a disguises' set's, with that set
        # (built when a body first needs it)
        self._raw_literals: tuple[Rules | None, object] | None = None
        pats = []
        for p in ms.patterns:
            rx = linear.Regex(p.regex)
            skip = skip_regex(p.regex, p.group, rx.groupindex, p.validator)
            pats.append(Pattern(p.name, rx, Options.of(p, rx.groupindex),
                                 linear.Regex(skip, capture=False) if skip is not None else None))  # fmt: skip
        self._patterns = tuple(pats)
        self._prefilter = linear.Prefilter([prefilter_regex(p) for p in ms.patterns]) if ms.patterns else None

        # -- reverse --
        disguises = list(self.lit_reverse)
        if streams:  # built now (off the loop on a reload), not at a first stream; else when first asked
            self._dis_ac, self._dis_ac_bytes = self._reverse_automata
        self._dis_original = [self.lit_reverse[d] for d in disguises]
        names = sorted(self.pattern_names, key=len, reverse=True)
        self._ph = re.compile(ph_regex(names)) if names else None
        # Hold-back: the leftmost non-empty proper prefix of a disguise or placeholder
        # that ends the text. Two variants: a flow that was issued no placeholders
        # need not hold `[EM` back.
        dis_pp = proper_prefixes(trie(disguises)) if disguises else ""
        ph_pp = (
            re.escape(PH_OPEN) + "(?:" + all_prefixes(trie(n + PH_SEP for n in names), PH_NUMBER) + ")?"
            if names
            else ""
        )
        self._hold = re.compile("(?:" + dis_pp + r")\Z") if dis_pp else None
        both = "|".join(x for x in (dis_pp, ph_pp) if x)
        self._hold_ph = re.compile("(?:" + both + r")\Z") if both else None
        longest_ph = len(spelled(max(names, key=len), 10 ** (PH_MAX_DIGITS - 1))) if names else 0
        self._hold_span = max([longest_ph, *map(len, disguises)], default=0)
        # How far back from a text's end a held tail can begin, by the text's last
        # character: the longest proper prefix of a disguise (or placeholder) ending in
        # it. Most text ends where no disguise can (a space, a full stop): no search.
        reach: dict[str, int] = {}
        for d in disguises:
            for i in range(1, len(d)):
                if reach.get(d[i - 1], 0) < i:
                    reach[d[i - 1]] = i
        self._hold_reach = reach
        ph_chars = set("[]_0123456789").union(*names)
        self._hold_ph_reach = {**reach, **{ch: max(reach.get(ch, 0), longest_ph) for ch in ph_chars}}

        self._strips = tuple(compile_strip(s.regex) for s in ms.strips)
        self._strip_first = frozenset().union(*(strip_starts(s.regex)[0] for s in ms.strips))
        self._strip_nonascii = any(strip_starts(s.regex)[1] for s in ms.strips)
        first = "".join(map(re.escape, sorted(self._strip_first)))
        self._strip_first_rx = re.compile(f"[{first}]" if first else "(?!)")
        self._strip_first_chars = tuple(sorted(self._strip_first)) if len(self._strip_first) <= 3 else None
        self._strip_span = max((s.width for s in self._strips), default=0)

        # Stream triggers (triggers.py): the rule set's patterns once, an automaton per
        # set of stream markers (one per API), built when a stream first asks.
        starts = [(strip_starts(s.regex)[2], strip_starts(s.regex)[1]) for s in ms.strips]
        self._trigger_patterns = triggers.rule_patterns(disguises, self.pattern_names, starts) if streams else None
        self._triggers: dict[tuple[bytes, ...], triggers.Triggers | triggers.Joined] = {}
        # the key a request that continues stored state is numbered with (base/prompt.py):
        # from the fakes' key, so that instances sharing it number alike; else the process's
        self.numbers_key = numbers_key or (
            hmac.digest(fakes_key, b"disguise placeholder numbers", hashlib.sha256) if fakes_key else _PROCESS_KEY
        )
        # disguise_fakes: the rule set's fake generator under the key (None: placeholders)
        self.faker = (
            fakes.Faker(
                fakes_key,
                {p.name: fakes.kind(p.name, p.validator, p.fake) for p in ms.patterns},
                {p.name: p.regex for p in ms.patterns},
                self._fake_clean,
            )
            if fakes_key is not None
            else None
        )
        linear.release_memory()  # what building took and freed (linear.release_memory)

    def _fake_clean(self, fake: str) -> bool:
        """May fake stand for an original? No rule finds anything in it but, at most, the
        whole of it (which the leak guard then knows for this request's fake), and it holds
        no literal's disguise and is none (the restorer would read two things into it)."""
        spans = self.find(fake)
        if spans and (len(spans) > 1 or spans[0][0] == LITERALS or spans[0][1:] != (0, len(fake))):
            return False
        if fake in self.lit_forward:
            return False
        return self._dis_ac is None or not self._dis_ac.find_matches_as_indexes(fake)

    @functools.cached_property
    def _reverse_automata(self) -> tuple:
        """The disguises' automata (str, bytes) that find them in a response. A set no
        stream is restored with (streams=False: the literals turned around, the masking
        worker's) never or rarely asks (`_fake_clean`, with disguise_fakes): with 1,000
        literals they take some 10 MiB, which such a set then never holds."""
        disguises = list(self.lit_reverse)
        if not disguises:
            return None, None
        total = sum(map(len, disguises))
        return (automaton(ahocorasick_rs.AhoCorasick, disguises, total),
                automaton(ahocorasick_rs.BytesAhoCorasick, [utf8(d) for d in disguises], total))  # fmt: skip

    @functools.cached_property
    def _dis_ac(self):  # noqa: ANN202 - an ahocorasick_rs.AhoCorasick or None
        return self._reverse_automata[0]

    @functools.cached_property
    def _dis_ac_bytes(self):  # noqa: ANN202 - an ahocorasick_rs.BytesAhoCorasick or None
        return self._reverse_automata[1]

    # find() finds what the rules find, no copy of an original besides (knowing.Knowing's)
    copies = False

    @property
    def base(self) -> Rules:
        """The rule set itself (knowing.Knowing's: the one it knows disguises for)."""
        return self

    def holding(self, texts: list[str]) -> list[int]:
        """The texts holding a copy of an original find() finds besides the rules' own
        (knowing.Knowing.holding): none."""
        return []

    @property
    def is_empty(self) -> bool:
        """No literal and no pattern: nothing to mask."""
        return self._lit_ac is None and not self._patterns

    def prescan(
        self, pieces: list[str], digests: dict | None = None, into: dict | None = None, clean: bool = True
    ) -> tuple[set[int], dict[str, object]]:
        """Where in many texts find() can find anything, in one go: (the indices of the
        pieces where some literal or pattern may match, a memo for find()).

        The literals: one Aho–Corasick pass over all pieces joined by a NUL (a literal
        that holds a NUL, the only one that could reach from one piece into the next,
        marks both). The patterns: the prefilter over the pieces (Prefilter.match_many:
        short ones in blocks). A piece that is not UTF-8 (a lone surrogate) is marked
        and found exactly, later. The memo maps a
        piece's text to what find() would compute first for it (its literal matches and
        the patterns that may match), so find() does not scan it again. A piece met
        before (`self.found`) is not scanned: the memo holds what find() found in it
        (a piece shorter than prescan.REMEMBER_MIN bytes is scanned every time). digests: a memo
        another rule set's prescan made of these pieces, whose digests are read from it
        rather than computed again (the warning pass after masking: pipeline). into: an
        empty dict the memo is made in (masking's `scanned`: not copied there after).
        clean=False: the memo leaves out the texts where nothing was found (a caller
        that reads only the indices: the warning pass; a million short texts' entries)."""
        return _prescan(self, pieces, digests, into, clean)

    def stream_triggers(self, markers: tuple[bytes, ...]) -> triggers.Triggers | triggers.Joined:
        """The trigger automaton of this rule set plus a stream's markers (cached): the rule
        set's own, built once (config.build_config builds it with the set, off the event
        loop: 8,000 literals take half a second), joined with one of the markers alone,
        built in microseconds. One automaton per markers held the event loop that half
        second at the first stream of each API after every reload."""
        t = self._triggers.get(markers)
        if t is None:
            base = self._triggers.get(())
            if base is None:
                if self._trigger_patterns is None:
                    raise TypeError("a rule set built with streams=False restores no stream")
                base = self._triggers[()] = triggers.Triggers(self._trigger_patterns, ())
                # the automaton holds the patterns themselves (Triggers._blob); the set they
                # came in is not read again (the shipped set's: 12,000 of them, two dicts, 1.3 MB)
                self._trigger_patterns = None
            assert isinstance(base, triggers.Triggers)
            t = base if not markers else triggers.Joined(base, triggers.Triggers(set(), markers))
            self._triggers[markers] = t
        return t

    # -- forward ---------------------------------------------------------------------

    def find(self, text: str, memo: dict | None = None, new: bool = False) -> list[tuple[str, int, int]]:
        """Every span mask() would replace, in order: (label, start, end) in characters,
        where label is a pattern's name or LITERALS. For checks that must not change
        text (leak guard, audit). memo: from prescan(); a text it lists in which nothing
        is found is then NOTHING there: the leak guard asks the masker's texts again with
        the same memo (a million short ids, a twentieth of them candidates: more than
        Found keeps, so each was searched twice). new: text was made just now (what
        masking made of a text, read again: rules/settle.py), so it is not looked up by
        its digest (a text nothing is found in is remembered as itself, and looked up
        so): the digest is taken only to remember what is found in it (the guard's look)."""
        spans = self._find(text, memo, new)
        if not spans and memo and text in memo:
            memo[text] = NOTHING
        return spans

    def _find(self, text: str, memo: dict | None = None, new: bool = False) -> list[tuple[str, int, int]]:
        if not text:
            return []
        pre = memo.get(text) if memo else None
        if pre is NOTHING or (pre is None and len(text) <= CLEAN_MAX and self.found.clean(text)):
            return []
        if type(pre) is Known:  # met before (Found keeps character spans): nothing encoded or mapped
            return list(pre.spans)
        # the text's bytes only where they are read: an ASCII text whose prescan found
        # literals alone, with its digest, is not encoded (a 200 MB string: once more
        # the body, while the body, its text and its document are held); nor is a text
        # whose digest prescan took and Found knows
        d = pre[2] if type(pre) is tuple and len(pre) == 3 and pre[2] is not None else None
        b: bytes | memoryview | None = None
        if d is None and not new:
            b = self._bytes(text)
            d = Found.digest(b)  # type: ignore[arg-type]
        known = self.found.get(d) if d is not None else None
        if known is not None:
            return list(known)
        if b is None and (pre is None or pre[1] or not text.isascii()):  # type: ignore[index]  # patterns to search, or not ASCII
            b = self._bytes(text)
        if b is None:  # what _find_bytes gives for literals alone (an ASCII text: bytes are characters)
            spans = literal_spans(LITERALS, pre[0])  # type: ignore[index]
        else:
            spans = self._find_bytes(b, pre, text if len(b) == len(text) else None)
        if spans and not text.isascii():  # byte offsets to characters, once: kept so (Found)
            if b is None or type(b) is memoryview:  # (a view: ASCII)
                b = utf8(text)
            offs = char_offsets(b, [x for _, s, e in spans for x in (s, e)])
            spans = [(label, offs[2 * i], offs[2 * i + 1]) for i, (label, _, _) in enumerate(spans)]
        if not spans and REMEMBER_MIN <= len(text) <= CLEAN_MAX:
            self.found.add_clean((text,))  # the text its own key (found.Found)
        elif len(spans) <= self.found.span_limit:  # more: not kept (never copied to be dropped)
            if d is None:  # (new: not taken above)
                d = Found.digest(b if b is not None else self._bytes(text))  # type: ignore[arg-type]
            self.found.put(d, tuple(spans))
        return spans  # type: ignore[return-value] # Columns for a big ASCII text: read as the list

    def rule_spans(self, label: str, text: str) -> list[tuple[int, int]]:
        """Every span the one rule label (a pattern's name, or LITERALS) finds in text as
        if it were the only rule: (start, end) in characters, each search going on from
        the end of the match before (the leak guard's knowing.py asks what a rule makes
        of the text as the client wrote it)."""
        b = utf8(text)
        ascii_text = text if len(b) == len(text) else None
        got: list[tuple[int, int]] = []
        if label == LITERALS:
            if self._lit_ac is not None:
                got = [(x, y) for _, x, y in lit_matches(self._lit_ac, b, self._lit_longest)]
        else:
            spent = [0, 16 * len(b) + 65536, 0]
            for p in self._patterns:
                pos = 0
                while p.name == label and (m := next_match(p, b, pos, ascii_text, spent)) is not None:
                    got.append((m[0], m[1]))
                    pos = max(m[1], m[0] + 1)
        if got and ascii_text is None:
            ends = sorted({x for sp in got for x in sp})
            at = dict(zip(ends, char_offsets(b, ends), strict=True))
            got = [(at[x], at[y]) for x, y in got]
        return got

    @staticmethod
    def _bytes(text: str) -> bytes | memoryview:
        """text's UTF-8 bytes; a big ASCII text's, where it lies (bigtext.ascii_bytes: no copy)."""
        return ascii_bytes(text) if len(text) >= bigtext.BIG and text.isascii() else utf8(text)

    def _find_bytes(
        self, b: bytes | memoryview, pre: tuple | None = None, ascii_text: str | None = None
    ) -> list[tuple[str, int, int]]:
        """find()'s spans in bytes (pre: prescan's memo entry; ascii_text: b as the str it
        was encoded from, when that is ASCII)."""
        n = len(b)
        if pre is not None:
            lits, active = pre[0], pre[1]
        else:
            lits = lit_matches(self._lit_ac, b, self._lit_longest) if self._lit_ac is not None else []
            active = sorted(self._prefilter.match(b, ascii_text is not None)) if self._prefilter is not None else []
        if not active:  # literals only: Aho–Corasick's leftmost-longest matches are the spans
            return literal_spans(LITERALS, lits)  # type: ignore[return-value] # Columns: read as the list
        if type(b) is memoryview:  # the patterns' regexes read bytes (the same: ASCII)
            assert ascii_text is not None
            b = ascii_text.encode("ascii")
        pats = self._patterns
        text = None
        if any(pats[i].opts for i in active):
            # options read a candidate in text where its offsets are b's (ASCII); else they
            # decode slices (a text that is not ASCII is not decoded whole to be dropped)
            text = ascii_text if ascii_text is not None else decode(b) if b.isascii() else None
        # rejected candidates' bytes, the most allowed, and the skip regexes' matches the
        # rules then rejected (_SKIP_WASTE)
        spent = [0, 16 * n + 65536, 0]
        nxt = {i: next_match(pats[i], b, 0, text, spent) for i in active}
        out = spans_like(lits)
        li = 0
        pos = 0
        while True:
            # the next literal at or after pos
            while li < len(lits) and lits[li][1] < pos:
                if lits[li][2] > pos:  # cut by a pattern match: look again from pos
                    lits = lit_matches(self._lit_ac, b, self._lit_longest, pos)
                    li = 0
                    break
                li += 1
            # the literals that end before any pattern's next match begins are spans, as
            # they are (Aho–Corasick's leftmost-longest: in order, none overlapping)
            first = min([m[0] for m in nxt.values() if m is not None], default=n)
            j = bisect.bisect_right(lits, first, lo=li, key=_END) if li < len(lits) else li
            if j > li:
                out.extend([(LITERALS, s, e) for _, s, e in lits[li:j]])
                li = j
                pos = lits[j - 1][2]
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
                    nxt[i] = next_match(pats[i], b, pos, text, spent)
        return out  # type: ignore[return-value] # Columns for a big text: read as the list

    def _disguises_in(self, buf: str, pos: int) -> list[tuple[int, int, int]]:
        """Leftmost-longest disguise matches in buf[pos:]: (index, start, end) in buf."""
        part = buf[pos:] if pos else buf
        try:
            found = self._dis_ac.find_matches_as_indexes(part)  # type: ignore[union-attr]
        except UnicodeEncodeError:  # a lone surrogate: through its 3-byte form
            b = utf8(part)
            raw = self._dis_ac_bytes.find_matches_as_indexes(b)  # type: ignore[union-attr]
            offs = char_offsets(b, [x for _, s, e in raw for x in (s, e)])
            found = [(k, offs[2 * i], offs[2 * i + 1]) for i, (k, _, _) in enumerate(raw)]
        if pos:
            return [(k, s + pos, e + pos) for k, s, e in found]
        return found

    def disguises_from(self, text: str, pos: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """The literals' disguises in text[pos:end], leftmost-longest: (start, end) in text."""
        if self._dis_ac is None:
            return []
        part = text[pos:end] if pos or end is not None else text
        return [(s + pos, e + pos) for _, s, e in self._disguises_in(part, 0)]

    @functools.cached_property
    def dis_longest(self) -> int:
        """The longest literal's disguise (knowing.union reads text in windows of it)."""
        return max(map(len, self.lit_reverse), default=0)

    def mask(
        self, text: str, session: Session, context: tuple[str, str] | None = None, memo: dict | None = None
    ) -> str:
        """mask_spans applied: text with every original replaced."""
        return splice(text, self.mask_spans(text, session, context, memo))

    def mask_spans(
        self, text: str, session: Session, context: tuple[str, str] | None = None, memo: dict | None = None
    ) -> list[tuple[int, int, str]]:
        """The (start, end, replacement) edits that mask text, in order; placeholders
        numbered in session.

        context: the text around text where it is read (a JSON member: `"password": "`
        before, `"` after), so that rules anchored on it (`password: …`) match; only
        what lies in text is replaced (a pattern's match reaching into the context is
        cut there; a literal that would, is looked for in text alone).

        A text whose piece (the text, or the text in its context) the memo gives a
        digest of (prescan's) and that was masked before so: its masking replayed in
        session (rules/remask.py), not made again."""
        key: object = None
        if memo and remask.worth(text):
            d = digest_of(memo.get(text if context is None else context[0] + text + context[1]))
            key = d if context is None or d is None else (d, len(context[0]), len(context[1]))  # (where text is in it)
            m = self.found.masked.get(key) if key is not None else None
            if m is not None and (got := remask.replay(m, text, session, self.faker)) is not None:
                self.found.masked.hits += 1
                return got
        log: list | None = [] if key is not None else None  # the session's calls, remembered (remask.Op)
        spans = in_context(self.find, text, context, memo)
        edits = edits_like(spans)
        forward = self.lit_forward
        lits: list[str] = []  # the literals' originals, counted at once
        at: list[int] = []  # (with a log) where they are
        for label, a, b in spans:
            original = text[a:b]
            if label == LITERALS:
                edits.append((a, b, forward[original]))
                lits.append(original)
                if log is not None:
                    at += (a, b)
                if len(lits) >= 65536:  # counted in batches: not a list of millions
                    session.count_literals(lits)
                    lits.clear()
                    if log is not None:
                        log.append((None, tuple(at)))
                        at.clear()
            else:
                ph = session.placeholder(label, original, self.faker)
                edits.append((a, b, ph))
                session.count(label, original)
                if log is not None:
                    log.append((label, a, b, ph))
        if lits:
            session.count_literals(lits)
            if log is not None:
                log.append((None, tuple(at)))
        if edits and len(text) < settle.LONGEST:
            edits = settle.settle(self, text, edits, session, context, memo, log)
        if log is not None and edits and type(edits) is list:
            self.found.masked.put(key, remask.Masking(tuple(edits), tuple(log)))  # type: ignore[arg-type]
        return edits  # type: ignore[return-value] # Columns for a big text: read as the list

    def restorer(
        self, placeholders: dict[str, str], growing: bool = False, documents: dict | None = None, output: int = 0
    ) -> Restorer:
        return Restorer(self, placeholders, growing, documents, output)



