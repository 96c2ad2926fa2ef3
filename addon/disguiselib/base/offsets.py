"""Offsets into a text that restoring changes (sans I/O).

A provider that points into the text it wrote (Cohere's citations: `start`/`end`,
characters of the answer) counts characters of the disguised text; the client reads the
restored one, where every restored original that differs in length from its disguise
moves what follows it. `Offsets` keeps the edits restoring made to one text, in order,
in the disguised text's coordinates, and says where a disguised offset lands in the
restored text. It is built whole (`Offsets.of`) or piece by piece as a stream's window
releases text (`TrackedWindow`); an offset inside a restored span (a citation that
starts or ends within a disguise) widens to the whole original. The one reading for
whole bodies and streams.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..rules.restorer import Restorer
from ..wire import spanwalk
from ..wire.jsonspan import Deep, Rule
from ..wire.text import Columns
from .holdback import Window


class Offsets:
    """The edits of one restored text: (start, end) in the disguised text, the length of
    what replaced it, and the shift (restored minus disguised length) after each. In
    characters, or with utf8 in UTF-8 bytes (Gemini's offsets count bytes)."""

    __slots__ = ("_starts", "_ends", "_lens", "_shifts", "length", "utf8", "_rends")

    def __init__(self, utf8: bool = False) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._lens: list[int] = []
        self._shifts: list[int] = []
        self.length = 0  # disguised characters (bytes) accounted for so far
        self.utf8 = utf8
        self._rends: list[int] = []  # each edit's end in the restored text (back: made when needed)

    @classmethod
    def of(cls, text: str, r: Restorer) -> Offsets:
        """The edits whole-text reversal (TEXT mode, strip rules included) makes to text."""
        o = cls()
        o._add(text, r.edits(text), 0)
        o.length = len(text)
        return o

    @property
    def moved(self) -> bool:
        """Did any edit change a length (else every offset stays as it is)?"""
        return any(self._shifts)

    def add(self, disguised: str, restored: str, r: Restorer, after: str = "") -> None:
        """The next piece of the text: disguised, released by a window as restored, with
        `after` the text the window still holds (read as context: whole-text reversal of
        a piece alone would take a `[[` at its end for a strip match cut short)."""
        if disguised != restored:
            n = len(disguised)
            edits = [x for x in r.edits(disguised + after) if x[1] <= n] if after else r.edits(disguised)
            if _apply(disguised, edits) != restored:  # never expected: the piece as one edit
                edits = [(0, n, restored)]
            self._add(disguised, edits, self.length)
        self.length += _utf8_len(disguised) if self.utf8 else len(disguised)

    def skip(self, n: int) -> None:
        """n characters (bytes) of the text passed unrestored (nothing in them could change)."""
        self.length += n

    def _add(self, text: str, edits: list[tuple[int, int, str]], base: int) -> None:
        if not self.utf8:
            self._add_lengths(((s, e, len(rep)) for s, e, rep in edits), base)
            return
        out: list[tuple[int, int, int]] = []
        c = b = 0  # a character offset of text and its byte offset, moving forward
        for s, e, rep in edits:  # character offsets of text to its bytes
            b += _utf8_len(text[c:s])
            c, s = s, b
            b += _utf8_len(text[c:e])
            c, e = e, b
            out.append((s, e, _utf8_len(rep)))
        self._add_lengths(out, base)

    def _add_lengths(self, edits: Iterable[tuple[int, int, int]], base: int) -> None:
        """Edits (start, end, length of what replaced it), in order, from base on."""
        shift = self._shifts[-1] if self._shifts else 0
        for s, e, n in edits:
            shift += n - (e - s)
            self._starts.append(base + s)
            self._ends.append(base + e)
            self._lens.append(n)
            self._shifts.append(shift)

    def at(self, offset: int, end: bool = False) -> int:
        """Where offset of the disguised text lands in the restored text. Inside an edit
        (strictly after its start, before its end): its restored start, or with end its
        restored end, so that a span cut by a disguise covers its whole original."""
        i = bisect_right(self._ends, offset)  # the edits that end at or before offset
        before = self._shifts[i - 1] if i else 0
        if i < len(self._starts) and self._starts[i] < offset:
            start = self._starts[i] + before
            return start + self._lens[i] if end else start
        return offset + before

    @property
    def restored_length(self) -> int:
        """The length of the restored text (of what was accounted for)."""
        return self.length + (self._shifts[-1] if self._shifts else 0)

    def back(self, offset: int, end: bool = False) -> int:
        """at's inverse: where offset of the restored text lands in the disguised text.
        Inside an edit's restored span: its disguised start, or with end its disguised
        end, so that a span cut by an original covers its whole disguise."""
        if len(self._rends) != len(self._ends):  # each edit's restored end: its end plus the shift after it
            self._rends = [e + d for e, d in zip(self._ends, self._shifts, strict=True)]
        i = bisect_right(self._rends, offset)  # the edits whose original ends at or before offset
        before = self._shifts[i - 1] if i else 0
        if i < len(self._starts) and self._starts[i] + before < offset:
            return self._ends[i] if end else self._starts[i]
        return offset - before


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for s, e, rep in edits:
        out += [text[pos:s], rep]
        pos = e
    out.append(text[pos:])
    return "".join(out)


class TrackedWindow(Window):
    """A hold-back window that notes in `offsets` what it released and how it was
    restored (Window's property holds: what it releases is unchanged)."""

    __slots__ = ("offsets",)

    def __init__(self, restorer: Restorer, mode: int, offsets: Offsets) -> None:
        super().__init__(restorer, mode)
        self.offsets = offsets

    def feed(self, text: str) -> str:
        buf = self.held + text
        out = super().feed(text)
        n = len(buf) - len(self.held)
        self.offsets.add(buf[:n], out, self._r, buf[n:])
        return out

    def flush(self) -> str:
        buf = self.held
        out = super().flush()
        self.offsets.add(buf, out, self._r)
        return out


# -- offsets a document's own members count: citations into a text beside them -------------
#
# An answer that cites its sources says where in its text each citation sits, counting
# characters of the text the provider wrote: the disguised one. Restoring moves what
# follows every original that differs in length from its disguise, so each such offset
# is moved to the restored text (Offsets.at: a bound inside a restored original widens to
# the whole original). The API's module says where its citations are (`register`): a
# dict holding a list of citations (`items`, a member or a path of members) beside the
# text they count (`text`, likewise), each citation's bounds in itself or in one of its
# members (`inner`), and where it counts one position rather than a span (`points`). A
# text can be one of a list of parts (`part`: Gemini's `content.parts`, told by the
# citation's `partIndex`), and offsets can count UTF-8 bytes rather than characters
# (`utf8`). Texts under a member that holds a stream's pieces (`pieces`: a delta's text is
# a piece, its offsets count the whole text) are not read here: a whole document's
# offsets only.


@dataclass(frozen=True)
class Cited:
    items: str | tuple[str, ...]  # the member (or path of members) holding the list of citations
    text: str | tuple[str, ...]  # the member (or path) beside it holding the text they count
    bounds: tuple[str, str]  # a citation's start and (exclusive) end members
    inner: tuple[str, ...] = ()  # members of a citation that hold its bounds instead
    pieces: str = ""  # a member whose texts are a stream's pieces: not read
    points: tuple[str, ...] = ()  # members holding one position in the text (not a span's bound)
    marks: tuple[str, ...] = ()  # members telling a document may hold these (default: bounds, points)
    utf8: bool = False  # offsets count UTF-8 bytes of the text, not characters
    # `text` leads to a list of parts: (the member of a bounds' holder naming the part, 0
    # when absent as proto3 JSON leaves zeros out; the part's member holding its text). An
    # empty first name: the citation names no part, and is read only when there is one.
    part: tuple[str, str] | None = None


CITED: list[Cited] = []
_MARKERS: set[str] = set()


def register(cited: Cited) -> None:
    """Where an API's documents hold citations with offsets into a text (restore_doc)."""
    CITED.append(cited)
    _MARKERS.update(f'"{b}"' for b in cited.marks or (*cited.bounds, *cited.points))


def citing(s: str) -> bool:
    """Could the JSON text s hold a registered citation's bounds (a cheap first look)?"""
    return any(m in s for m in _MARKERS)


def citation_fixes(doc: object, out: object, r: Restorer) -> list[tuple[tuple, object]]:
    """Where the bounds of the citations in doc (the upstream document) move once its
    texts are restored as they are in out (the restored document, the same shape):
    (path, new offset) pairs for base.logprobs.apply_fixes. A text out does not hold at
    the same place is left alone (its citations keep their offsets)."""
    fixes: list[tuple[tuple, object]] = []
    for path, x in _objects(doc, {c.pieces for c in CITED if c.pieces}):
        for c in CITED:
            items = _at(x, _path(c.items))
            if isinstance(items, list) and items:
                fixes += _Moved(path, c, x, out, r).fixes(items)
    return fixes


def _objects(doc: object, skip: set | frozenset = frozenset()) -> Iterator[tuple[tuple, dict]]:
    """Every object in doc with its path, depth first (a member named in skip not entered)."""
    stack: list[tuple[tuple, object]] = [((), doc)]
    while stack:
        path, x = stack.pop()
        if isinstance(x, list):
            stack.extend(((*path, i), v) for i, v in enumerate(x) if isinstance(v, (dict, list)))
        elif isinstance(x, dict):
            yield path, x
            stack.extend(((*path, k), v) for k, v in x.items() if k not in skip and isinstance(v, (dict, list)))


def _path(p: str | tuple[str, ...]) -> tuple[str, ...]:
    return (p,) if isinstance(p, str) else p


def _at(doc: object, path: tuple) -> object:
    try:
        for k in path:
            doc = doc[k]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    return doc


class _Moved:
    """The moved bounds of one list of citations: the texts they count (one, or one per
    part), upstream and restored, with the edits restoring made to each."""

    def __init__(self, path: tuple, c: Cited, holder: dict, out: object, r: Restorer) -> None:
        self.path, self.c, self.r = path, c, r
        self.text = _at(holder, _path(c.text))
        self.restored = _at(out, (*path, *_path(c.text)))
        self.offsets: dict[int, tuple[Offsets, str, str] | None] = {}

    def fixes(self, items: list) -> list[tuple[tuple, object]]:
        c = self.c
        out: list[tuple[tuple, object]] = []
        base = (*self.path, *_path(c.items))
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            holders = [((), item)] + [((k,), item[k]) for k in c.inner if isinstance(item.get(k), dict)]
            for sub, h in holders:
                members = [(c.bounds[0], False), (c.bounds[1], True), *((p, False) for p in c.points)]
                if not any(isinstance(h.get(b), int) for b, _ in members):
                    continue
                texts = self._texts(h)
                if texts is None:
                    continue
                o, text, restored = texts
                for b, end in members:
                    v = h.get(b)
                    if isinstance(v, int) and not isinstance(v, bool):
                        w = self._at(o, text, restored, v, end)
                        if w is not None and w != v:
                            out.append(((*base, i, *sub, b), w))
        return out

    def _texts(self, h: dict) -> tuple[Offsets, str, str] | None:
        """The edits of the text this holder's bounds count, with that text upstream and
        restored; None when there is none, or restoring moved nothing in it."""
        part = self.c.part
        k = 0
        if part is not None:
            if part[0]:
                k = h.get(part[0], 0)
                if not isinstance(k, int) or isinstance(k, bool):
                    return None
            elif not isinstance(self.text, list) or len(self.text) != 1:
                return None
        if k not in self.offsets:
            self.offsets[k] = self._edits(k)
        return self.offsets[k]

    def _edits(self, k: int) -> tuple[Offsets, str, str] | None:
        text, restored = self.text, self.restored
        part = self.c.part
        if part is not None:
            if k < 0:  # _at would read from the list's end
                return None
            text, restored = (_at(x, (k, part[1])) if isinstance(x, list) else None for x in (text, restored))
        if not isinstance(text, str) or not isinstance(restored, str) or restored == text:
            return None
        o = Offsets()
        o.add(text, restored, self.r)
        return (o, text, restored) if o.moved else None

    def _at(self, o: Offsets, text: str, restored: str, v: int, end: bool) -> int | None:
        """Where offset v of text lands in restored (None: v is not an offset of text)."""
        if not self.c.utf8:
            return o.at(v, end) if 0 <= v <= len(text) else None
        b = text.encode("utf-8", "surrogatepass")
        if not 0 <= v <= len(b):
            return None
        try:
            chars = len(b[:v].decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:  # inside a character: not a place in the text
            return None
        return len(restored[: o.at(chars, end)].encode("utf-8", "surrogatepass"))


# -- offsets a request's own documents count: citations of a document the client sent ------
#
# An answer can cite the documents of its request (Anthropic's `char_location`:
# `start_char_index`/`end_char_index` in the `document_index`-th document), counting
# characters of the document the provider read: the masked one. The client holds the
# original, where every original that differs in length from its disguise moves what
# follows it. So masking notes, for each string of a document (its table's CITED_TEXT)
# it changed, its edits as an Offsets of the masked text (masking_edits: the masked
# text is the "disguised" one, the original the "restored" one); which document it is
# (the containers whose rule is marked DOCUMENT, counted in the request's order:
# documents) keys it in the session, and the flow's restorer carries them
# (pipeline.Masked.restorer). The answer's citations are moved by them (quote_fixes),
# whole and streamed alike, with Offsets.at's rule: a bound inside a disguise widens to
# its whole original. A document masked in another flow (a Files API upload) has none.

DOCUMENT = "document"  # the mark (jsonspan.Rule.mark) of a request's document container
CITED_TEXT = Deep(False, "CITED_TEXT")  # the text of a document: VALUES, its edits noted
CITED_TEXT.cited = True


def masking_edits(v: str, new: object) -> Offsets | None:
    """Masking's edits of the string v (masking.mask_fn gave new: Spans or Columns of
    (start, end, replacement), or the new value) as an Offsets of the masked text
    (where each replacement is, the length of what it replaced); None: unchanged. A new
    value (a text read as media, or as loose JSON) is one edit from the first to the
    last character that changed."""
    if isinstance(new, str):
        if new == v:
            return None
        p, m = 0, min(len(v), len(new))
        while p < m and v[p] == new[p]:
            p += 1
        q = 0
        while q < m - p and v[-1 - q] == new[-1 - q]:
            q += 1
        edits: Iterable[tuple[int, int, str]] = [(p, len(v) - q, new[p : len(new) - q])]
    elif isinstance(new, (list, Columns)) and len(new):
        edits = new
    else:
        return None
    o, grown = Offsets(), 0  # how much longer the masked text is up to here
    starts, ends, lens, shifts = o._starts, o._ends, o._lens, o._shifts
    for a, b, rep in edits:  # one pass (a 1 MB document with 8000 originals: about 1 ms)
        n, at = len(rep), a + grown
        starts.append(at)
        ends.append(at + n)
        lens.append(b - a)
        grown += n - b + a
        shifts.append(-grown)
    o.length = len(v) + grown
    return o


def documents(s: str, doc: object, root: Rule, cited: list[tuple[int, Offsets | None]]) -> dict[int, Offsets]:
    """cited (the place of a CITED_TEXT string's token in the JSON text s, its edits or
    None where masking changed nothing, masking_edits) by
    the index of the document holding it: the containers root marks DOCUMENT, counted in
    their order in s (one walk over s, parsed: doc)."""
    marks: list[tuple[object, int]] = []
    spanwalk.walk(s, doc, root, lambda v, rule: v, marks)
    starts = [i for m, i in marks if m == DOCUMENT]
    out: dict[int, Offsets] = {}
    for at, o in cited:
        k = bisect_right(starts, at) - 1
        if k >= 0 and o is not None and o.moved:
            out[k] = o
    return out


@dataclass(frozen=True)
class Quoted:
    """Where an API's answers cite its request's documents: an object whose `type` is
    kind, naming its document in `index`, with its bounds (start, exclusive end)."""

    kind: str
    index: str
    bounds: tuple[str, str]


QUOTED: list[Quoted] = []
QUOTED_MARKERS: tuple[bytes, ...] = ()  # what an event holding one holds (its kind, quoted)


def register_quoted(quoted: Quoted) -> None:
    """Where an API's answers cite the request's documents (quote_fixes)."""
    global QUOTED_MARKERS
    QUOTED.append(quoted)
    QUOTED_MARKERS = (*QUOTED_MARKERS, f'"{quoted.kind}"'.encode())


def quoting(s: str) -> bool:
    """Could the JSON text s cite a request's document (a cheap first look)?"""
    return any(f'"{q.kind}"' in s for q in QUOTED)


def quote_fixes(doc: object, docs: dict[int, Offsets]) -> list[tuple[tuple, object]]:
    """Where the bounds of doc's citations of the request's documents (docs: their
    edits, by index) move in the documents the client holds: (path, new offset) pairs
    for base.logprobs.apply_fixes. A bound outside its masked document stays."""
    fixes: list[tuple[tuple, object]] = []
    for path, x in _objects(doc):
        for q in QUOTED:
            k = x.get(q.index)
            o = docs.get(k) if x.get("type") == q.kind and type(k) is int else None
            if o is None:
                continue
            for b, end in ((q.bounds[0], False), (q.bounds[1], True)):
                v = x.get(b)
                if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= o.length:
                    w = o.at(v, end)
                    if w != v:
                        fixes.append(((*path, b), w))
    return fixes
