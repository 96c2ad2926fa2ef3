"""A conversation's next turn masked from the turn before it (sans I/O; issue 29).

A client sends its whole conversation at every turn: the next request is the one before
with an exchange more at the end of its conversation (Claude Code also moves
`cache_control` from the last message it sent to the newest one). An API says its
conversation is sent so (registry.Api.turns: Anthropic Messages, Claude on Vertex AI and
Bedrock, Chat Completions, Mistral on Vertex AI, Gemini's contents, Bedrock Converse). The full path reads all
of it again (parse, walk, scan, splice, the leak guard). Here a rule set remembers its
last requests of a conversation (KEEP of them, MAX_BYTES together): the bytes that came
(R1), those that left (M1), the session after the body (S1), and for each of the last
CUTS elements of the conversation where it begins in R1 and in M1 and the session when
masking reached it, and its end likewise (the `]`, the session after the body). A new
body R2 that is R1 up to the start of one of those elements (k) and from the
conversation's closing `]` on is cut there: only its elements from k on (the tail) are
parsed and masked, in a copy of that session, and
M2 = M1[:k's place] + masked tail + M1[from the `]`]; one that is R1 with elements
appended (a comma at the `]`) is cut at the end, R1's last element not masked again.

Why that is the full path's result, to the byte (each condition unmet: the full path):

- Placeholders are numbered by first appearance in prompt order, the conversation last
  (base/prompt.py), and nothing of one request is another's (contract §2): masking is a
  function of the rule set and the texts in that order. Rules.find is one of the rule
  set and the text alone (Found remembers its answers; remask replays them, giving the
  same edits and session calls): nothing a rule set learns from a request changes what
  masking makes of another. So the full path, reading R2, makes every call it made for
  R1 up to k (the same members first, the same elements before k), reaches k with the
  session R1's masking had there (Marks: taken only where every string after the
  conversation's first is the conversation's), and goes on with the tail's strings, in
  the body's order, read with the conversation's element rule (the same Arr's item,
  the table's one fact) as masking the tail alone reads them.
- Nothing whole-body changes that: R1 and the tail hold no placeholder of the client's
  (Held: the session reserves none) and no fake the session issued (Held(every): the
  tail looked at for every fake it holds, R1 reserved none), the tail issues no new fake
  (a fake issued there could be text the unchanged part holds), R1 copied no original
  (copied 0), and R2's copies (base/copies.left_over) are none: no odd escape anywhere
  once a pattern found an original, none in the tail (its own left_over), none across
  the cuts, and an original the tail found first spelled nowhere in the unchanged part
  of M1 (a copy no edit covers is there as R1 has it; one in a token an edit wrote again
  whole, in that token). No document cited (citeback.may_cite on M2 from where M1 and the tail
  hold its markers), no numbering key, no session of headers, no declared text headers,
  top-level keys written once.
- The leak guard reads text by text (leakguard.scan_json through the table): each text of
  the unchanged part it read in M1 with S1's disguises and found nothing. S2 holds every
  disguise of S1 (same original) and the tail's new ones, placeholders only, none of which
  R1's text or readings hold (Held.shapes: every shape in the body's text and in the
  texts the walk read): in each such text the guard finds the same. The tail is read by
  it in full (any hit: the full path, which words the refusal); URL and headers as ever
  (pipeline). The disguises' warning pass: a request it warned of is not remembered; a
  tail holding one goes the full path, which warns. Thinking blocks and signatures lie in
  the unchanged part: their bytes are M1's.

A request cut so is remembered in its turn (its cuts before k kept, the tail's added), so
a conversation is read in full once. Remembered only where the verdict was Masked. Kept
on the rule set (Found.turns): a reload starts with none, Found.clear forgets them; a
session is copied in and out, never shared by two flows. Property tests against the full
path: tests/test_turns.py.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
import threading
from dataclasses import dataclass
from typing import Any

from . import leakguard
from .base import citeback, copies
from .base.fields import loads
from .base.masking import mask_doc
from .base.present import Held
from .base.received import Received
from .rules.knowing import of_session
from .rules.rules import Rules, Session
from .rules.session import PH_OPEN
from .wire import spanwalk
from .wire.jsonspan import Arr, Obj
from .wire.text import splice

# The cut in use (tests and bench turn it off to set the full path beside it). Which
# APIs' conversations are cut, the API says (registry.Api.turns): its request rule's
# last prompt member, an array (Anthropic's and Chat Completions' `messages`, Gemini's
# `contents`).
ON = True
CUTS = 4  # element starts remembered per request (the client may change its last ones)
KEEP = 4  # requests remembered per rule set
MIN_BYTES = 64 * 1024  # smaller bodies: the full path (a few ms at most)
MAX_BYTES = 32 << 20  # the remembered requests' bytes, as they came and masked, together
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")


@dataclass(frozen=True, eq=False)
class Cut:
    """Where an element of the conversation begins in a request remembered (the last cut:
    where the conversation ends, its `]`)."""

    raw: int  # in the body that came (bytes)
    masked: int  # in the body that left
    session: Session  # when masking reached it (copied out, never changed or handed on: shared)
    changed: bool  # masking changed the body before it


@dataclass(frozen=True, eq=False)
class Turn:
    """A request remembered (module docstring)."""

    api: str
    disguises: object  # the warning pass's rule set it was masked with (by identity)
    raw: bytes
    masked: bytes
    session: Session  # after the body (never changed: the end's Cut's too)
    cuts: tuple[Cut, ...]  # the last CUTS elements' starts, then the end
    close: int  # the conversation's closing `]` in raw
    close_masked: int  # in masked
    after_changed: bool  # masking changed the body from the `]` on
    shapes: frozenset[str]  # every placeholder shape in the body and its texts' readings
    odd: tuple[int, ...]  # where raw holds an escape no JSON writer makes (copies.odd_escapes)
    cites: tuple[tuple[int, int], ...]  # (where in masked, which of citeback.markers)


class Turns:
    """A rule set's requests remembered, the newest last (KEEP, MAX_BYTES)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.turns: list[Turn] = []
        self.hits = 0  # next turns cut (bench, tests)

    def put(self, turn: Turn, parent: Turn | None = None) -> None:
        """turn remembered, the newest; parent (the request it was cut from) forgotten:
        the conversation goes on from turn (a request sent again is cut from it too)."""
        with self.lock:
            kept = [t for t in self.turns if t.raw is not turn.raw and t is not parent][-(KEEP - 1) :] + [turn]
            while len(kept) > 1 and sum(len(t.raw) + len(t.masked) for t in kept) > MAX_BYTES:
                kept.pop(0)
            self.turns = kept

    def of(self, api: str, disguises: object) -> list[Turn]:
        with self.lock:
            return [t for t in reversed(self.turns) if t.api == api and t.disguises is disguises]


def turns_of(rules: Rules, make: bool = False) -> Turns | None:
    """The requests rules remember (made with make)."""
    got = rules.found.turns
    if got is None and make:
        got = rules.found.turns = Turns()
    return got  # type: ignore[return-value]


def applies(api: Any, start: Session | None) -> bool:
    """May a request of api (with start, its headers' session) be cut or remembered?"""
    fresh = start is None or not (start.placeholders or start.reserved or start.keyed or start.masked)
    return fresh and ON and api.turns and not api.headers and api.request_body is None


def _rule(api: Any) -> tuple[str, Arr] | None:
    root = api.request_rule
    if not isinstance(root, Obj) or not root.prompt:
        return None
    member = root.prompt[-1]
    arr = root.fields.get(member)
    return (member, arr) if isinstance(arr, Arr) else None


def _start(e: tuple) -> int:
    return e[0]


def _bytes(raw: bytes | Received) -> bytes | None:
    """raw's bytes; None for a Received (a streamed body the worker gathered: let go once
    decoded, never kept here, masked the full path)."""
    return raw if type(raw) is bytes else None


class Marks:
    """The session where each of the conversation's last elements begins (at: their
    starts in the text; lo, hi: the conversation's span), taken as masking reaches each
    (masking.mask_doc); ok False where a string outside the conversation came after one
    of it (the conversation not last in the order masking numbers in)."""

    def __init__(self, lo: int, hi: int, at: list[int], members: tuple | None = None) -> None:
        self.lo, self.hi, self.at, self.members = lo, hi, at, members  # (members: the text's, prompt.py)
        self.took: list[Session] = []
        self.ok = True

    def watching(self, fn: Any, order: list[int], where: Any, session: Session) -> Any:
        took: list[Session] = []
        at, lo, hi = self.at, self.lo, self.hi
        self.took, self.ok = took, True
        it = iter(order)
        inside = False

        def watched(v: str, rule: Any, key: str | None) -> Any:
            nonlocal inside
            i = where[2 * next(it)]
            if lo <= i < hi:
                inside = True
                k = len(took)
                while len(took) < len(at) and at[len(took)] <= i:
                    took.append(took[-1] if len(took) > k else session.copy())  # (one copy: none is changed)
            elif inside:
                self.ok = False
            return fn(v, rule, key)

        return watched

    def done(self, session: Session) -> None:
        if len(self.took) < len(self.at):
            self.took += [session.copy()] * (len(self.at) - len(self.took))


def _places(text: str, edits: list, xs: list[int], base: int, mbase: int) -> list[tuple[int, int, bool]] | None:
    """Each char offset of xs (outside every edit) as (its byte offset in text's UTF-8 +
    base, in the masked text's + mbase, an edit before it); None where an edit's
    replacement is no str (a big text's Token)."""
    out: list[tuple[int, int, bool]] = []
    ascii_ = text.isascii()
    e = grow = 0
    for x in xs:
        while e < len(edits) and edits[e][0] < x:
            a, b, r = edits[e]
            if type(r) is not str:
                return None
            grow += len(r.encode("utf-8", "surrogatepass")) - len(text[a:b].encode("utf-8", "surrogatepass"))
            e += 1
        at = x if ascii_ else len(text[:x].encode("utf-8", "surrogatepass"))
        out.append((base + at, mbase + at + grow, e > 0))
    return out


def _growth(text: str, a: int, b: int, r: object) -> int:
    """How many bytes longer the edit (a, b, r) of text makes its UTF-8."""
    if type(r) is not str:
        raise TypeError("a big text's Token")
    old = text[a:b]
    return (len(r) if r.isascii() else len(r.encode("utf-8", "surrogatepass"))) - (
        len(old) if old.isascii() else len(old.encode("utf-8", "surrogatepass"))
    )


class Note:
    """What the full path's masking tells of a body (masking.mask_body's note), for it to
    be remembered (remember)."""

    def __init__(self, api: Any, raw: bytes, member: str) -> None:
        self.api, self.raw, self.member = api, raw, member
        self.m: Marks | None = None
        self.got: tuple | None = None
        self.at: tuple[list[int], int] | None = None  # masked: the cuts' and the `]`'s bytes offsets

    def marks(self, s: str, doc: object, root: Any) -> Marks | None:
        starts, keys = spanwalk.members(s)
        if type(doc) is not dict or len(set(keys)) != len(keys) or self.member not in keys:
            return None
        value = doc[self.member]
        if type(value) is not list or not value:
            return None
        key_end = json_string_end(s, starts[keys.index(self.member)])
        at = _COLON.match(s, key_end).end()  # type: ignore[union-attr]
        if s[at : at + 1] != "[":
            return None
        el, close = spanwalk.elements(s, at)
        if close < 0 or len(el) != len(value):
            return None
        self.m = Marks(at, close, list(el[-CUTS:]), (starts, keys))
        return self.m

    def masked(self, s: str, edits: list, session: Session, held: Held) -> None:
        """What remember needs of the masked text: each cut's (and the `]`'s) growth in
        bytes from there to the end, whether an edit is before it; their bytes offsets."""
        m = self.m
        if m is None or not m.ok or len(m.took) != len(m.at):
            return
        xs = [*m.at, m.hi]
        first = bisect.bisect_left(edits, xs[0], key=_start)  # (sorted, disjoint: none across a cut)
        try:
            late = [(a, _growth(s, a, b, r)) for a, b, r in edits[first:]]
        except TypeError:
            return
        grown = [sum(g for a, g in late if a >= x) for x in xs]
        before = [bool(edits) and edits[0][0] < x for x in xs]
        self.got = (grown, before, list(m.took), bool(late) and late[-1][0] >= m.hi, held.shapes)
        self.at = tail_offsets(s, self.raw, xs)


def tail_offsets(s: str, raw: bytes, xs: list[int]) -> tuple[list[int], int] | None:
    """xs (increasing offsets into s, raw decoded) as raw's byte offsets: s encoded from xs[0]
    on (not the body walked again), checked to be raw's tail; None where not (never)."""
    try:
        pieces = [s[a:b].encode("utf-8") for a, b in zip(xs, [*xs[1:], len(s)], strict=True)]
    except UnicodeEncodeError:
        return None
    y, out, mv = len(raw) - sum(map(len, pieces)), [], memoryview(raw)
    for p in pieces:
        if y < 0 or mv[y : y + len(p)] != p:
            return None
        out.append(y)
        y += len(p)
    return out[:-1], out[-1]


def json_string_end(s: str, i: int) -> int:
    """Where the JSON string token beginning at s[i] ends."""
    return json.decoder.scanstring(s, i + 1)[1]  # type: ignore[attr-defined]


def note_for(api: Any, raw: bytes | Received, start: Session | None) -> Note | None:
    """A Note for a request the full path masks whose next turn may be cut from it."""
    if not applies(api, start) or (rule := _rule(api)) is None:
        return None
    b = _bytes(raw)
    if b is None or not MIN_BYTES <= len(b) <= MAX_BYTES // 4:
        return None
    return Note(api, b, rule[0])


def remember(
    rules: Rules, note: Note, body: bytes, session: Session, disguises: object, held: tuple | None = None
) -> Turn | None:
    """The request note was made for, masked into body with session and let through
    (no citation moved, no disguise of the client's warned of), remembered (and given).
    held: citeback.held_markers(body), where the caller made them."""
    if note.got is None or session.reserved or session.copied or session.cited or session.keyed:
        return None
    grown, before, took, after, shapes = note.got
    got = note.at
    if got is None:
        return None
    at, close = got
    total = len(body) - len(note.raw)
    cuts = [Cut(r, r + total - g, s, c) for r, g, s, c in zip(at, grown, took, before, strict=False)]
    close_m = close + total - grown[-1]
    now = session.copy()  # (the end's and the turn's: never changed, one copy)
    cuts.append(Cut(close, close_m, now, before[-1]))  # the end (the conversation last: the body's session)
    turn = Turn(
        note.api.name, disguises, note.raw, body, now, tuple(cuts), close, close_m, after,
        shapes, tuple(copies.odd_escapes(note.raw)), citeback.held_markers(body) if held is None else held,
    )  # fmt: skip
    turns_of(rules, make=True).put(turn)  # type: ignore[union-attr]
    return turn


def light(turn: Turn | None) -> Turn | None:
    """turn without its bytes or rule set (sent back by the masking worker: adopt)."""
    return None if turn is None else dataclasses.replace(turn, raw=b"", masked=b"", disguises=None)


def adopt(rules: Rules, turn: object, raw: bytes, masked: bytes, disguises: object) -> None:
    """A request the masking worker remembered (light), remembered here too with the
    bytes sent to it and back, under this process's rule set of the same configuration:
    the worker masks as pipeline.mask_request here does (worker.py), so what it noted
    of the request is what masking it here notes. Where the bytes are not those it
    noted (a length that disagrees), nothing."""
    if not isinstance(turn, Turn) or not turn.cuts or turn.close >= len(raw) or turn.close_masked >= len(masked):
        return
    if raw[turn.close : turn.close + 1] != b"]" or masked[turn.close_masked : turn.close_masked + 1] != b"]":
        return
    turns_of(rules, make=True).put(  # type: ignore[union-attr]
        dataclasses.replace(turn, raw=raw, masked=masked, disguises=disguises)
    )


def holds(rules: Rules, api: Any) -> bool:
    """Does rules remember a request of api (a next turn may be cut here)?"""
    store = turns_of(rules)
    return store is not None and any(t.api == api.name for t in store.turns)


def tail(rules: Rules, api: Any, raw: bytes, disguises: object) -> int | None:
    """How many bytes of raw a cut would mask (its tail: the work next_turn would do), or
    None where raw continues no request rules remember, or anything fails (the full path
    then): find's last."""
    return None if (at := find(rules, api, raw, disguises)) is None else at[3]


def find(rules: Rules, api: Any, raw: bytes, disguises: object) -> tuple[Turn, tuple[int, int, int], bytes, int] | None:
    """(the request raw continues, where: _cut, raw, its tail) or None: next_turn's `at`."""
    store = turns_of(rules)
    try:
        for turn in store.of(api.name, disguises) if store is not None else ():
            if (got := _cut(turn, raw)) is not None:
                return turn, got, raw, got[2] - turn.cuts[got[0]].raw - got[1]
    except Exception:  # noqa: BLE001 - whatever breaks here, the full path decides
        return None
    return None


@dataclass(frozen=True)
class Cutted:
    """A next turn masked from the turn before: its body, session, and its own Turn."""

    body: bytes
    session: Session
    turn: Turn
    parent: Turn  # the request it was cut from
    shared: tuple[int, int] = (0, 0)  # how many first bytes of parent.masked body begins with; of parent.raw, b


def next_turn(api: Any, raw: bytes | Received, rules: Rules, disguises: Rules | None, at: Any = None) -> Cutted | None:
    """raw masked from a remembered request it continues (module docstring), its tail
    read by the leak guard; None where it is not one, or a condition fails (the full
    path then). at: find's for raw, taken while its turn is the newest. Never raises."""
    store = turns_of(rules)
    if store is None or (rule := _rule(api)) is None:
        return None
    try:
        if (b := _bytes(raw)) is None:
            return None
        mine = store.of(api.name, disguises)
        known = at is not None and at[2] is b and bool(mine) and mine[0] is at[0]
        for turn in mine[:1] if known else mine:
            got: tuple[int, int, int] | None = at[1] if known else _cut(turn, b)
            if got is not None:
                out = _mask_tail(turn, *got, b, raw, rule[1], rules, disguises)
                if out is not None:
                    store.hits += 1
                return out
    except Exception:  # noqa: BLE001 - whatever breaks here, the full path decides
        return None
    return None


_COMMA = re.compile(rb"[ \t\n\r]*,[ \t\n\r]*")


def _cut(turn: Turn, b: bytes) -> tuple[int, int, int] | None:
    """(the index of the cut b continues turn's request from, the bytes from it to the
    first element after it, where b's conversation closes) or None. The last cut is the
    conversation's end: b is turn's request with elements appended (after a comma)."""
    r1 = turn.raw
    q = len(b) - (len(r1) - turn.close)
    if q < 0 or not b.endswith(memoryview(r1)[turn.close :]):
        return None
    for j in range(len(turn.cuts) - 1, -1, -1):
        p = turn.cuts[j].raw
        if p < q and b.startswith(memoryview(r1)[:p]):
            if p != turn.close:
                return j, 0, q
            comma = _COMMA.match(b, p, q)
            if comma is not None and comma.end() < q:
                return j, comma.end() - p, q
    return None


def _mask_tail(
    turn: Turn, j: int, skip: int, q: int, b: bytes, raw: bytes | Received, arr: Arr, rules: Rules,
    disguises: Rules | None,
) -> Cutted | None:
    cut = turn.cuts[j]
    p = cut.raw + skip  # where the tail's first element begins (skip: the comma after the end)
    tail = b[p:q].decode("utf-8")
    mini = "[" + tail + "]"
    clashes: list = []
    doc = loads(mini, clashes)
    if clashes or type(doc) is not list or not doc:
        return None
    starts, end = spanwalk.elements(mini, 0)
    if end != len(mini) - 1 or len(starts) != len(doc):
        return None
    session = cut.session.copy()
    held = Held(every=True)
    marks = Marks(0, len(mini), list(starts[-CUTS:]))
    edits, _ = mask_doc(mini, doc, arr, rules, session, spliced=False, held=held, marks=marks)
    if held.placeholders or held.clash or session.reserved or session.cited or not marks.ok:
        return None
    s1 = turn.session.placeholders
    s2 = session.placeholders
    if len(s1) > len(s2) or any(s2.get(k) != v for k, v in s1.items()):
        return None
    if any(not k.startswith(PH_OPEN) or k in turn.shapes for k in s2 if k not in s1):
        return None  # a new fake; a new placeholder the unchanged part may hold
    odd = [o for o in turn.odd if o < cut.raw] + [p + o for o in copies.odd_escapes(b[p:q])]
    shift = len(b) - len(turn.raw)
    odd += [o + shift for o in turn.odd if o >= turn.close]
    if not _no_copies(turn, cut, b, p, q, mini, edits, session, bool(odd)):
        return None
    out = splice(mini, edits)
    if disguises is not None and leakguard.scan_json(doc, disguises, arr) is not None:
        return None  # the client's own disguise: the full path warns of it
    if leakguard.scan_json(loads(out), of_session(rules, session), arr) is not None:
        return None  # the full path refuses it, in its words
    masked_tail = out[1:-1].encode("utf-8")
    m1 = turn.masked
    mp = cut.masked + skip  # where the masked tail goes (the comma's bytes before it as they came)
    mshift = mp + len(masked_tail) - turn.close_masked
    cites = [c for c in turn.cites if c[0] < cut.masked]
    cites += [(mp + i, k) for i, k in citeback.held_markers(masked_tail)]
    cites += [(i + mshift, k) for i, k in turn.cites if i >= turn.close_masked]
    if session.masked and citeback.may_cite_held(cites):
        return None
    changed = cut.changed or turn.after_changed or bool(edits)
    if changed:
        mv = memoryview(m1)
        body = b"".join((mv[: cut.masked], b[cut.raw : p], masked_tail, mv[turn.close_masked :]))
    else:
        body = raw if type(raw) is bytes else b
    session.json_out = turn.session.json_out
    session.documents = {}
    places = _places(mini, edits, list(marks.at), p - 1, mp - 1)
    if places is None or len(marks.took) != len(marks.at):
        return None
    cuts = [c for c in turn.cuts[:j] if c.raw != turn.close]  # (the end's cut is the last: never among these)
    cuts += [Cut(r, m, s, cut.changed or c) for (r, m, c), s in zip(places, marks.took, strict=True)]
    close_m = len(body) - (len(m1) - turn.close_masked)
    after = session.copy()  # (the end's and the turn's: the session after the body, the conversation last)
    new = Turn(
        turn.api, turn.disguises, b, body, after, (*cuts[-CUTS:], Cut(q, close_m, after, changed)), q, close_m,
        turn.after_changed, turn.shapes | held.shapes, tuple(odd), tuple(cites),
    )  # fmt: skip
    return Cutted(body, session, new, turn, (cut.masked, cut.raw))


def _no_copies(
    turn: Turn, cut: Cut, b: bytes, p: int, q: int, mini: str, edits: list, session: Session, odd: bool
) -> bool:
    """No copy of an original a pattern found left in R2 (copies.left_over's answer on
    the whole body, from the tail's own, R1's and the places between; module docstring)."""
    found = session.found()
    if not found:
        return True
    if odd:
        return False
    if copies.left_over(mini, edits, session):
        return False
    forms = [e for o in found for f in copies.spellings(o) if len(e := f.encode("utf-8", "surrogatepass")) > 1]
    for x in {cut.raw, p, q}:  # (a copy across x: in b[x - len + 1 : x + len - 1], found there without a slice)
        pair = b[x - 1 : x + 1] if 0 < x < len(b) else b""  # (such a copy holds these two bytes: a form without, not)
        if pair and any(pair in f and b.find(f, max(0, x - len(f) + 1), x + len(f) - 1) >= 0 for f in forms):
            return False
    old = turn.session.found()
    m1 = turn.masked
    for o in found:
        if o in old:
            continue
        for f in copies.spellings(o):
            # (a copy no edit covers is M1's bytes as R1 has them; one an edit re-encoded, in them)
            e = f.encode("utf-8", "surrogatepass")
            if m1.find(e, 0, cut.masked) >= 0 or m1.find(e, turn.close_masked) >= 0:
                return False
    return True


__all__ = [
    "ON", "Cut", "Cutted", "Marks", "Note", "Turn", "Turns", "adopt", "applies", "find", "holds", "light",
    "next_turn", "note_for", "remember", "tail",
]  # fmt: skip
