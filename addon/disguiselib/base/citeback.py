"""Citations a request sends back (sans I/O).

An answer's citations count characters of what the provider read or wrote, disguised;
restoring moves them to the text the client reads (base/offsets.py: citation_fixes for
the text beside them, quote_fixes for a document of the request). A client that sends
the answer back in its history (an Anthropic text block with its `char_location`
citations, a Responses `output_text` or a Chat message with its annotations) sends
those moved offsets beside a text that masking disguises again: upstream they no longer
point where the provider's own did (`Zenith Labs makes anvils.` cited at the client's
`Acme Corp makes anvils.` bounds, two characters short). They are moved back here, after
masking: an offset of the client's text to the same place in the masked one (Offsets.back,
at's inverse: a bound inside an original widens to its whole disguise), so the provider
gets its citations back as it wrote them. Only the numbers change, spliced where they
stand; every other byte of the masked body stays.

A document's edits are masking's own (the session's documents); a text beside its
citations is restored with the request's restorer to learn where its disguises stand.
Where the numbers cannot be placed with certainty (a key written with escapes, a body
that does not parse), the body is left as masking made it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator

from ..rules.restorer import Restorer
from .copies import Places
from .offsets import CITED, QUOTED, Offsets, _apply, _at, _objects, _path


def may_cite(body: bytes) -> bool:
    """Could the JSON body send a citation's offsets back (a cheap first look)?"""
    from . import offsets  # (the markers as the APIs registered them)

    if any(m in body for m in offsets.QUOTED_MARKERS):
        return True
    # the member listing them, then one of a citation's marks (`"index"` alone is in many
    # a body that holds none, `"file_path"` in every Claude Code body)
    cited = [c for c in _cited() if isinstance(c.items, str)]
    for items in {c.items for c in cited}:
        if f'"{items}"'.encode() in body:
            marks = {m for c in cited if c.items == items for m in c.marks or (*c.bounds, *c.points)}
            if any(f'"{m}"'.encode() in body for m in marks):
                return True
    return False


def markers() -> tuple[bytes, ...]:
    """Every byte string may_cite looks for: it answers of a body as it answers of these
    strings that the body holds, joined (turns.py keeps where a body holds each)."""
    cited = [c for c in _cited() if isinstance(c.items, str)]
    words = {c.items for c in cited} | {m for c in cited for m in c.marks or (*c.bounds, *c.points)}
    from . import offsets  # (the markers as the APIs registered them)

    return (*offsets.QUOTED_MARKERS, *sorted(f'"{w}"'.encode() for w in words))


def held_markers(body: bytes) -> tuple[tuple[int, int], ...]:
    """(where, which of markers()) of each marker body holds: one pass of one automaton
    (turns.py keeps them for a body remembered; may_cite_held answers from them)."""
    return tuple((i, k) for k, i, _ in _marker_places(markers()).places(body))


@functools.lru_cache(maxsize=4)
def _marker_places(ms: tuple[bytes, ...]) -> Places:
    return Places(list(ms))


def may_cite_held(held: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> bool:
    """may_cite of a body whose markers held lists (held_markers': of one body, or of its
    pieces put together), as it answers of those markers joined (markers)."""
    ms = markers()
    return may_cite(b"\0".join(ms[k] for k in {k for _, k in held}))


def moved_back(body: bytes, r: Restorer, documents: dict[int, Offsets]) -> bytes | None:
    """The masked JSON body with the offsets of the citations it sends back moved to the
    masked texts they count; None when nothing moves (or where it cannot be told where a
    number stands). Parsed here as json reads it (the masker's document keeps numbers as
    their text)."""
    try:
        s = body.decode("utf-8")
        doc = json.loads(s)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    fixes = dict(_quote_back(doc, documents))
    fixes.update(_cited_back(doc, r))
    if not fixes:
        return None
    new = splice_numbers(s, doc, fixes)
    return None if new is None else new.encode("utf-8")


def _quote_back(doc: object, documents: dict[int, Offsets]) -> Iterator[tuple[tuple, int]]:
    """Bounds of citations of the request's documents (QUOTED), client -> masked."""
    if not documents:
        return
    for path, x in _objects(doc):
        for q in QUOTED:
            k = x.get(q.index)
            o = documents.get(k) if x.get("type") == q.kind and type(k) is int else None
            if o is None:
                continue
            for b, end in ((q.bounds[0], False), (q.bounds[1], True)):
                v = x.get(b)
                if type(v) is int and 0 <= v <= o.restored_length:
                    w = o.back(v, end)
                    if w != v:
                        yield (*path, b), w


def _cited() -> list:
    """The citations that count characters of the text beside them (CITED) as a request
    sends them back: those of one text (no parts), counted in characters."""
    return [c for c in CITED if c.part is None and not c.utf8]


def _cited_back(doc: object, r: Restorer) -> Iterator[tuple[tuple, int]]:
    """Bounds of citations of the text beside them (CITED), client -> masked."""
    for path, x in _objects(doc):
        for c in _cited():
            items = _at(x, _path(c.items))
            text = _at(x, _path(c.text))
            if not isinstance(items, list) or not items or not isinstance(text, str):
                continue
            edits = r.edits(text)
            if not edits:
                continue
            o = Offsets()
            o.add(text, _apply(text, edits), r)
            if not o.moved:
                continue
            base = (*path, *_path(c.items))
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    continue
                holders = [((), item)] + [((k,), item[k]) for k in c.inner if isinstance(item.get(k), dict)]
                for sub, h in holders:
                    for b, end in ((c.bounds[0], False), (c.bounds[1], True), *((p, False) for p in c.points)):
                        v = h.get(b)
                        if type(v) is int and 0 <= v <= o.restored_length:
                            w = o.back(v, end)
                            if w != v:
                                yield (*base, i, *sub, b), w


_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


def splice_numbers(s: str, doc: object, fixes: dict[tuple, int]) -> str | None:
    """The JSON text s (parsed: doc) with the numbers at these paths replaced, every other
    character kept; None when the number tokens of the members so named cannot be paired
    with doc's one for one (a key written with escapes)."""
    names = sorted({p[-1] for p in fixes}, key=str)
    rx = re.compile(r'"(' + "|".join(re.escape(str(n)) for n in names) + r')"[ \t\r\n]*:[ \t\r\n]*(' + _NUMBER + ")")
    tokens = [(m.start(2), m.end(2)) for m in rx.finditer(s)]
    paths = list(_numbers_named(doc, frozenset(names)))
    if len(tokens) != len(paths):
        return None
    out: list[str] = []
    pos = 0
    for (a, b), p in zip(tokens, paths, strict=True):
        w = fixes.get(p)
        if w is not None:
            out += [s[pos:a], str(w)]
            pos = b
    out.append(s[pos:])
    return "".join(out)


def _numbers_named(doc: object, names: frozenset) -> Iterator[tuple]:
    """The paths of doc's members named in names whose value is a number, in the order
    their text comes in (objects keep their members' order as parsed): depth first."""
    frames: list[tuple[tuple, Iterator, bool]] = [((), _members(doc), isinstance(doc, dict))]
    while frames:
        path, it, named = frames[-1]
        for k, v in it:
            if named and k in names and isinstance(v, int | float) and not isinstance(v, bool):
                yield (*path, k)
            elif isinstance(v, dict | list):
                frames.append(((*path, k), _members(v), isinstance(v, dict)))
                break
        else:
            frames.pop()


def _members(x: object) -> Iterator:
    return iter(x.items()) if isinstance(x, dict) else iter(enumerate(x)) if isinstance(x, list) else iter(())
