"""Reverse matching (sans I/O): a flow's Restorer (disguises and that flow's
placeholders back to originals, strip rules, hold-back points) and the strip rules'
compiled forms. The one primitive, Restorer.run, serves whole-text reversal and the
streaming windows (holdback.Window) alike; rules.py explains the matchers."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs

from ..errors import StreamError
from ..wire import percent
from ..wire.text import char_offsets, json_escape, json_text_decoded, raw_offset, utf8
from . import linear, rxsyntax, triggers

# -- the hold-back regexes' building blocks (Rules compiles them) -------------------------------


def trie(words: Iterable[str]) -> dict:
    trie: dict = {}
    for w in words:
        t = trie
        for ch in w:
            t = t.setdefault(ch, {})
        t[""] = {}
    return trie


def proper_prefixes(t: dict) -> str:
    """A regex for the non-empty strings u such that (path to t) + u is a proper prefix
    of a word of trie t: every node that has children, shaped as a trie."""
    alts = []
    for ch, sub in sorted(t.items()):
        if ch and any(sub):
            inner = proper_prefixes(sub)
            alts.append(re.escape(ch) + (f"(?:{inner})?" if inner else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def all_prefixes(t: dict, end: str) -> str:
    """A regex for every non-empty prefix of a word of trie t, a whole word followed
    optionally by `end`."""
    alts = []
    for ch, sub in sorted(t.items()):
        if not ch:
            continue
        inner = all_prefixes(sub, end)
        if "" in sub:
            inner = f"(?:{inner}|{end})" if inner else end
        alts.append(re.escape(ch) + (f"(?:{inner})?" if inner else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# Window modes (holdback.Window uses the same numbers).
TEXT = 0  # decoded text a user reads: disguises, placeholders and strip rules
VALUE = 1  # a complete decoded string (tool name, key, value): no strip rules
JSON = 2  # JSON text (tool arguments): matched in decoded space, originals inserted JSON-escaped
# The model's answer text (a window's mode, never run()'s): TEXT, or JSON where the
# request asked for its answer as JSON (structured outputs: Restorer.output) and the text
# begins as JSON does (answer_mode)
OUTPUT = 3
# Restorer.output (a window's mode) where nobody said which (a stored stream resumed past the
# object that says it): TEXT and JSON, which agree or end the stream (holdback.Window, answer)
EITHER = 4
UNSAID = "the answer's format is not said before its text (a stream resumed), and text and JSON restore it otherwise"


def answer_mode(s: str) -> int | None:
    """The mode of a JSON answer's text by its first character after whitespace: JSON for
    `{` or `[`, TEXT otherwise (a provider that answered prose all the same); None while
    it is blank."""
    t = s.lstrip(" \t\r\n")
    return None if not t else JSON if t[0] in "{[" else TEXT


def esc_advance(s: str, i: int, j: int, st: int) -> int:
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


@dataclass(frozen=True)
class _Strip:
    rx: linear.Regex  # the bounded rule
    hold: linear.Regex  # (?:closure)\z: where a match may still be in progress
    width: int


def compile_strip(rx: str) -> _Strip:
    try:
        b = rxsyntax.bounded(rx)
        return _Strip(linear.Regex(b.regex), linear.Regex("(?:" + b.closure + r")\z"), b.width)
    except (rxsyntax.SyntaxRefused, linear.RegexError) as e:
        raise ValueError(str(e)) from None


@functools.cache
def strip_starts(rx_text: str) -> tuple[frozenset[str], bool, dict[str, frozenset[str] | None]]:
    """For a strip rule: the ASCII characters a match can begin with; whether a
    non-ASCII character can begin one; and for each ASCII start, the ASCII characters
    that can follow it (None: any, i.e. a non-ASCII or no character may follow).
    Every character is tried against the rule and its prefix closure: about 0.1 s per
    rule, once per process."""
    b = rxsyntax.bounded(rx_text)
    either = linear.Regex(f"(?:{b.closure})|(?:{b.regex})")
    whole = linear.Regex(b.regex)

    def can(s: str) -> bool:
        return either.fullmatch(utf8(s))

    bmp = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000]
    first = frozenset(c for c in map(chr, range(128)) if can(c))
    nonascii = any(can(c) for c in bmp)
    follow: dict[str, frozenset[str] | None] = {}
    for c1 in sorted(first):
        if whole.fullmatch(utf8(c1)) or any(can(c1 + c) for c in bmp):
            follow[c1] = None
        else:
            follow[c1] = frozenset(c2 for c2 in map(chr, range(128)) if can(c1 + c2))
    return first, nonascii, follow


# The key under which Restorer._trig keeps the triggers of the flow's fakes alone.
_OWN = (b"",)


class _Fakes:
    """One flow's fakes (disguise_fakes) as the reverse matchers take them: an
    Aho–Corasick automaton of the fakes (leftmost-longest), and for the hold-back point a
    trie regex of their proper prefixes with how far back each last character reaches
    (as Rules builds them for the literals' disguises, per flow here: a flow's fakes are
    its own)."""

    __slots__ = ("ac", "originals", "hold", "reach", "fakes")

    def __init__(self, placeholders: dict[str, str]) -> None:
        own = {k: v for k, v in placeholders.items() if not k.startswith("[")}
        own.update(percent.in_urls(own, {}))  # each as a URL holds it too (`carol%40mail.example`)
        self.fakes = list(own)
        self.originals = list(own.values())
        self.ac = ahocorasick_rs.AhoCorasick(self.fakes, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
        pp = proper_prefixes(trie(self.fakes))
        self.hold = re.compile("(?:" + pp + r")\Z") if pp else None
        reach: dict[str, int] = {}
        for f in self.fakes:
            for i in range(1, len(f)):
                if reach.get(f[i - 1], 0) < i:
                    reach[f[i - 1]] = i
        self.reach = reach

    def find(self, buf: str, pos: int) -> list[tuple[int, int, int]]:
        """Leftmost-longest fake matches in buf[pos:]: (index, start, end) in buf (a fake
        is ASCII: a lone surrogate cannot be part of one, only stand around it)."""
        part = buf[pos:] if pos else buf
        try:
            found = self.ac.find_matches_as_indexes(part)
        except UnicodeEncodeError:
            found = []
            at = 0
            for piece in re.split("([\ud800-\udfff])", part):
                if len(piece) != 1 or not "\ud800" <= piece <= "\udfff":
                    found.extend((k, s + at, e + at) for k, s, e in self.ac.find_matches_as_indexes(piece))
                at += len(piece)
        if pos:
            return [(k, s + pos, e + pos) for k, s, e in found]
        return found


class Restorer:
    """Reverse mapping for one flow: global literals plus that flow's placeholders (and
    fakes)."""

    __slots__ = (
        "rules", "placeholders", "_esc_cache", "restored", "stripped", "_hold", "_reach", "_fk", "_fk_n", "_trig",
        "_whole", "documents", "output",
    )  # fmt: skip

    # remember(): whole texts at least this long are remembered, at most WHOLE_MAX of them
    WHOLE_MIN = 256
    WHOLE_MAX = 8

    # _edits' loop for disguises alone (tests switch it off to compare it with the general one)
    PLAIN_LOOP = True

    # rules: the rules.Rules that built it (typed loosely: rules.py imports this module)
    def __init__(self, rules: Any, placeholders: dict[str, str], growing: bool = False,
                 documents: dict[int, Any] | None = None, output: int = TEXT) -> None:
        self.rules = rules
        # The model's answer text (OUTPUT): TEXT, JSON (the request asked for JSON), EITHER (unsaid)
        self.output = output
        # The request's documents an answer may cite by offsets, by index: masking's edits
        # of each (base/offsets.py, Session.documents); empty: none moved.
        self.documents: dict[int, Any] = documents or {}
        # growing: the dict is a live session's and may still gain placeholders (a
        # realtime connection masks and restores frame by frame over one session), so
        # placeholder prefixes are held back from the start.
        self.placeholders = placeholders
        self._esc_cache: dict[str, str] = {}
        self.restored = 0  # disguises and placeholders turned back into originals
        self.stripped = 0  # strip-rule matches deleted (dangling ones at a channel's end too)
        self._hold = rules._hold_ph if (placeholders or growing) else rules._hold
        self._reach = rules._hold_ph_reach if (placeholders or growing) else rules._hold_reach
        self._fk: _Fakes | None = None  # the flow's fakes' matchers, built for _fk_n placeholders
        self._fk_n = -1
        self._trig: dict[tuple[bytes, ...], Any] = {}  # a stream's triggers with these fakes
        self._whole: dict[tuple, tuple[str, int, int]] | None = None  # remember(): the texts restored whole

    def remember(self) -> None:
        """Remember what whole-text reversal gave for long texts (a Responses stream says
        each text whole up to four times: `*.done`, `content_part.done`,
        `output_item.done`, the final response): a text said again is restored once. The
        reversal is a function of the text, its mode and the flow's placeholders and
        fakes (their number is in the key: a growing session adds some), and what it
        counts is counted again on each saying, as if restored anew."""
        self._whole = {}

    def _fakes(self) -> _Fakes | None:
        """The matchers of the flow's fakes (rebuilt when a growing session added some)."""
        n = len(self.placeholders)
        if n != self._fk_n:
            self._fk_n = n
            fk = None
            if self.rules.faker is not None and any(not k.startswith("[") for k in self.placeholders):
                fk = _Fakes(self.placeholders)
            if fk is None or self._fk is None or fk.fakes != self._fk.fakes:
                self._trig = {}
            self._fk = fk
        return self._fk

    def triggers(self, markers: tuple[bytes, ...]) -> Any:
        """A stream's trigger automaton (rules/triggers.py): the rule set's, and with fakes
        their patterns too (the raw bytes of a fake in an event must be looked at): the
        rule set's automaton, shared, joined with one of the fakes alone."""
        fk = self._fakes()
        if fk is None:
            return self.rules.stream_triggers(markers)
        t = self._trig.get(markers)
        if t is None:
            own = self._trig.get(_OWN)
            if own is None:  # the fakes' own patterns: built once per flow, shared by every markers
                own = self._trig[_OWN] = triggers.Triggers(triggers.rule_patterns(fk.fakes, (), []), ())
            t = self._trig[markers] = triggers.Joined(self.rules.stream_triggers(markers), own)
        return t

    # -- whole texts ---------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Whole-text reversal of a finished text channel (strip rules included)."""
        return self.whole(s, TEXT)

    def json_text(self, s: str) -> str:
        """Whole reversal of complete JSON text (tool arguments): originals JSON-escaped."""
        return self.whole(s, JSON)

    def answer(self, s: str) -> str:
        """Whole reversal of the model's answer text: as text, or as JSON text where the request
        asked for JSON (output) and it is JSON (answer_mode); nobody said (EITHER): both, or StreamError."""
        if self.output != EITHER:
            return self.whole(s, (answer_mode(s) or TEXT) if self.output == JSON else TEXT)
        n = self.restored, self.stripped
        other = self.whole(s, answer_mode(s) or TEXT)
        self.restored, self.stripped = n
        if self.whole(s, TEXT) != other:
            raise StreamError(UNSAID)
        return other

    def value(self, s: str) -> str:
        """Whole-value reversal of a complete decoded string (tool name, key, value)."""
        return self.whole(s, VALUE)

    def whole(self, s: str, mode: int) -> str:
        """run(s, mode, final): remembered for a long text where remember() was called."""
        memo = self._whole
        if memo is None or len(s) < self.WHOLE_MIN:
            return self.run(s, mode, True, 0)[0]
        key = (mode, len(self.placeholders), s)
        got = memo.get(key)
        if got is not None:
            self.restored += got[1]
            self.stripped += got[2]
            return got[0]
        r0, s0 = self.restored, self.stripped
        out = self.run(s, mode, True, 0)[0]
        if len(memo) >= self.WHOLE_MAX:
            memo.clear()
        memo[key] = (out, self.restored - r0, self.stripped - s0)
        return out

    # -- the primitive ---------------------------------------------------------------------

    def run(self, buf: str, mode: int, final: bool, esc: int) -> tuple[str, int]:
        """Restore buf. Returns (output, h): the restored text of buf[:h], and h, where
        buf[h:] must be held back because a match may still be in progress there. With
        final nothing is held (h == len(buf)), except in TEXT mode a dangling partial
        strip match at the end (half a tag of a truncated stream): h is its start and
        buf[h:] is dropped, never shown. esc is the JSON escape state at buf's start
        (JSON mode)."""
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

    def holds(self, buf: str, mode: int, esc: int) -> bool:
        """Would run(buf, mode, False, esc) hold a tail back? Counts nothing (a stream
        asks before it decides where the text goes: OpenAI Chat, a tool name's piece)."""
        return self._edits(buf, mode, False, esc, count=False)[1] < len(buf)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where whole-text reversal of text (TEXT mode) changes it, in order: every
        restored or stripped match, and a dangling strip match at its end. Counts
        nothing (for checks, e.g. which logprobs tokens a restored text no longer has)."""
        edits, h = self._edits(text, TEXT, True, 0, count=False)
        out = [(s, e) for s, e, _ in edits]
        if h < len(text):
            out.append((h, len(text)))
        return out

    def edits(self, text: str) -> list[tuple[int, int, str]]:
        """What whole-text reversal of text (TEXT mode) does, in order: (start, end,
        replacement) per match, "" for a strip and for a dangling strip match at its end.
        Counts nothing (for laying logprobs tokens over the restored text)."""
        edits, h = self._edits(text, TEXT, True, 0, count=False)
        out = [(s, e, rep or "") for s, e, rep in edits]
        if h < len(text):
            out.append((h, len(text), ""))
        return out

    def _edits(
        self, buf: str, mode: int, final: bool, esc: int, count: bool = True
    ) -> tuple[list[tuple[int, int, str | None]], int]:
        """run()'s work: the (start, end, replacement) of every match to restore (None:
        strip it) that starts before the hold point, and the hold point."""
        n = len(buf)
        if not n:
            return [], 0
        if mode == JSON and (esc or "\\" in buf):
            return self._decoded_edits(buf, final, esc, count)
        rules = self.rules
        text_mode = mode == TEXT
        strips = rules._strips if text_mode and rules._strips and self._strip_possible(buf) else ()
        fk = self._fakes() if self.placeholders else None
        h = self._hold_point(buf, 0, strips, final)
        # complete matches: disguises and fakes from automata; placeholders and strips searched
        dis = rules._disguises_in(buf, 0) if rules._dis_ac is not None else []
        fks = fk.find(buf, 0) if fk is not None else []
        ph = rules._ph if (self.placeholders and "[" in buf) else None
        next_ph = ph.search(buf) if ph is not None else None
        sts = self._strip_matches(buf, 0, strips) if strips else []
        edits: list[tuple[int, int, str | None]] = []
        if dis and not fks and next_ph is None and not sts and mode != JSON and self.PLAIN_LOOP:
            # Disguises alone (the common case): the automaton's matches come in order
            # and do not overlap, and none can start inside an escape. The loop below,
            # with only these candidates, takes exactly these steps.
            original = rules._dis_original
            for k, s, e in dis:
                if s >= h:
                    break
                edits.append((s, e, original[k]))
                if e > h:
                    h = self._hold_point(buf, e, strips, final)
        elif dis or fks or next_ph is not None or sts:
            si = di = fi = pos = 0
            # next candidates: (start, end, kind, payload); kind 0 disguise, 1 placeholder,
            # 2 strip, 3 fake
            while True:
                while di < len(dis) and dis[di][1] < pos:
                    if dis[di][2] > pos:  # cut by another match: look again from pos
                        dis = rules._disguises_in(buf, pos)
                        di = 0
                        break
                    di += 1
                while fi < len(fks) and fks[fi][1] < pos:
                    if fks[fi][2] > pos:  # cut by another match: look again from pos
                        fks = fk.find(buf, pos)  # type: ignore[union-attr]
                        fi = 0
                        break
                    fi += 1
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
                if fi < len(fks):
                    k, s, e = fks[fi]
                    if cand is None or s < cand[0] or (s == cand[0] and e > cand[1]):
                        cand = (s, e, 3, k)
                if next_ph is not None and (cand is None or next_ph.start() < cand[0]):
                    cand = (next_ph.start(), next_ph.end(), 1, next_ph.group())
                if si < len(sts) and (cand is None or sts[si][0] < cand[0]):
                    cand = (sts[si][0], sts[si][1], 2, None)
                if cand is None or cand[0] >= h:
                    break
                s, e, kind, payload = cand
                rep: str | None
                if kind == 0:
                    rep = rules._dis_original[payload]  # type: ignore[call-overload]
                elif kind == 3:
                    rep = fk.originals[payload]  # type: ignore[union-attr, call-overload]
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

    def _decoded_edits(
        self, buf: str, final: bool, esc: int, count: bool
    ) -> tuple[list[tuple[int, int, str | None]], int]:
        """_edits of JSON text with escapes: matched in decoded space (field notes:
        "restore in decoded space"), a match replacing the escapes and characters it
        was written with by its original JSON-escaped; every other character as it came.
        The hold point is the decoded text's, and no later than an escape buf cuts
        short. Whole texts and windows alike come here (run): one decoding."""
        dec, at, shift, end = json_text_decoded(buf, esc, final)
        edits, h = self._edits(dec, VALUE, final, 0, count)
        if not at:  # no escape decoded: dec is buf[:end] (or opaque where final cut one)
            return [(s, e, None if rep is None else self._escaped(rep)) for s, e, rep in edits], h
        return [
            (raw_offset(at, shift, s), raw_offset(at, shift, e), None if rep is None else self._escaped(rep))
            for s, e, rep in edits
        ], raw_offset(at, shift, h)

    def _escaped(self, orig: str) -> str:
        e = self._esc_cache.get(orig)
        if e is None:
            e = self._esc_cache[orig] = json_escape(orig)
        return e

    def _strip_possible(self, buf: str) -> bool:
        rules = self.rules
        if rules._strip_nonascii and not buf.isascii():
            return True
        firsts = rules._strip_first_chars
        if firsts is not None:  # a few first characters: `in` scans at memchr speed
            for c in firsts:
                if c in buf:
                    return True
            return False
        return rules._strip_first_rx.search(buf) is not None

    def _hold_point(self, buf: str, start: int, strips: tuple[_Strip, ...], final: bool) -> int:
        """Where the held tail of buf begins, looking only at what follows start: the
        leftmost position from which a disguise, an issued placeholder (not final) or a
        strip match may still be in progress at buf's end."""
        n = len(buf)
        h = n
        if not final and self._hold is not None:
            # a held tail ends buf: it begins no further back than its last character reaches
            lo = n - self._reach.get(buf[-1], 0)
            if lo < n:
                m = self._hold.search(buf, max(start, lo))
                if m is not None:
                    h = m.start()
        fk = self._fk if self.placeholders else None
        if not final and fk is not None and fk.hold is not None:
            lo = n - fk.reach.get(buf[-1], 0)
            if lo < n:
                m = fk.hold.search(buf, max(start, lo))
                if m is not None:
                    h = min(h, m.start())
        if strips:
            lo = max(start, n - self.rules._strip_span)
            tail = buf[lo:]
            tb = utf8(tail)
            for st in strips:
                span = st.hold.search(tb)
                if span is not None and span[0] < len(tb):
                    c = span[0] if len(tb) == len(tail) else char_offsets(tb, [span[0]])[0]
                    h = min(h, lo + c)
        return h

    @staticmethod
    def _strip_matches(buf: str, pos: int, strips: tuple[_Strip, ...]) -> list[tuple[int, int]]:
        """The leftmost-first, non-overlapping strip matches in buf[pos:] (character
        offsets into buf), every rule at once: leftmost wins, then the rule listed first."""
        b = utf8(buf[pos:] if pos else buf)
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
        offs = char_offsets(b, [x for sp in spans for x in sp])
        return [(offs[2 * i] + pos, offs[2 * i + 1] + pos) for i in range(len(spans))]
