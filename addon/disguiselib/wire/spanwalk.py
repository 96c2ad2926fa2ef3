"""The span walk the masker runs over a body: the compiled one (wire/_spanwalk.pyx) or
the reference (jsonspan.walk), chosen once, at import, as CPython's json chooses its
scanner (`c_make_scanner or py_make_scanner`).

The compiled walk is there when the compiled engine is (disguiselib/engine.py builds it
with the engine's modules and loads it only when its source is the one compiled); with
DISGUISE_ENGINE=python, or where it was not built, jsonspan.walk runs. Both give the
same edits, marks, where and at for every text (tests/wire/test_spanwalk.py).

`collect` is the masker's first walk (masking.mask_doc): every selected string, its
key, and what reading it reads, in bulk. The compiled one makes no Python call per
string but for the strings that are not read as they are (JSON text, media, text that
only looks like JSON: `reads`) and those whose plainness its own test does not settle
(`plain`); py_collect is its reference (tests/wire/test_spanwalk.py: the same tokens,
keys, pieces and owners).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable

from . import jsonspan
from .jsonspan import KEY, Rule, Tokens
from .text import LeftOut, splice

try:
    from ._spanwalk import collect as c_collect  # type: ignore[import-not-found]
    from ._spanwalk import elements as c_elements  # type: ignore[import-not-found]
    from ._spanwalk import members as c_members  # type: ignore[import-not-found]
    from ._spanwalk import shapes as c_shapes  # type: ignore[import-not-found]
    from ._spanwalk import walk as c_walk  # type: ignore[import-not-found]
except ImportError:
    c_walk = c_collect = c_shapes = c_members = c_elements = None

py_walk = jsonspan.walk
walk = c_walk or py_walk

Reads = Callable[[str, Rule, "str | None", list[str]], None]


def transform(s: str, doc: object, root: Rule, fn: jsonspan.TransformFn) -> tuple[str, int]:
    """jsonspan.transform through this module's walk: the compiled one hands fn each
    string the document holds without reading it from the text again and steps over
    the rest at C speed (a Responses `response.created` of 1 kB: ~160 -> ~20 us)."""
    edits = walk(s, doc, root, fn)
    return splice(s, edits), len(edits)


class Keyed:
    """The key each selected string is read with, told in document order (fields.walk's
    reading): in user-defined JSON, a key the walk hands over is read with its member's
    value when that value is a string, the string the walk hands over next in the same
    place (its container and slot: jsonspan.walk's `at`). Not with the strings of an
    array or object that is its value."""

    __slots__ = ("key", "home")

    def __init__(self) -> None:
        self.key: str | None = None
        self.home: object = None

    def __call__(self, v: str, rule: Rule, place: tuple[object, str | int, bool]) -> str | None:
        container, slot, _ = place
        if rule is KEY:
            self.key, self.home = v, container
            return None
        k, self.key = self.key, None
        return k if k is not None and container is self.home and slot == k else None


def keys_of(toks: list[tuple[str, Rule]], at: list[tuple[object, str | int, bool]]) -> list[str | None]:
    """Per selected string, the key it is read with (Keyed); at: each string's place."""
    keyed = Keyed()
    return [keyed(v, rule, place) for (v, rule), place in zip(toks, at, strict=True)]


def py_collect(
    s: str, doc: object, root: Rule, pieces: list[str], reads: Reads, plain: Callable[[str, Rule], bool],
    context: Callable[[str], tuple[str, str]], owner: array[int] | None = None, places: bool = False,
    hot: array[int] | None = None, seen: list[str] | None = None,
) -> Tokens:
    """Every string root's rules select in s (parsed: doc), in order (jsonspan.Tokens:
    with places, where each is in doc too); reads(value, rule, key, pieces) appends to
    pieces what reading each reads, and owner (when given: an array('q'), as the
    spans are one) gets each piece's string's index. plain and context (fields.plain,
    fields.key_context) are what the compiled collect reads the plain strings with
    itself.

    seen (a list) with hot, the spans of s a scan of the body's raw bytes marked
    (rules/rawscan.py: (start, end) after one another, in order): a string read as it
    is and alone (a key, or a value read without its key: fields.plain), written
    without escapes, that no marked span reaches into is left out (not a token, no
    piece) and its text appended to seen, in order. Its text is bytes of the body as
    they stand, between two quotes, which the scan read: what it found nothing in (the
    leak guard reads seen as a memo's run of clean texts: rules/found.Memo.raw). A list
    of doc every element of which is a string so left out, all read with one rule, is
    listed in seen as one LeftOut (wire/text.py) in their place, not as its texts."""
    vals: list[str] = []
    rules: list[Rule] = []
    where: list[tuple[int, int]] = []
    at: list[tuple[object, str | int, bool]] = []

    def note(v: str, rule: Rule) -> str:
        vals.append(v)
        rules.append(rule)
        return v

    jsonspan.walk(s, doc, root, note, where=where, at=at)
    keys = keys_of(list(zip(vals, rules, strict=True)), at)
    kept: list[int] = []
    left: list[int] = []  # the strings left out
    h = 0
    for t, v in enumerate(vals):
        if seen is not None:
            assert hot is not None
            i, end = where[t]
            while h < len(hot) and hot[h + 1] <= i:
                h += 2
            cold = h >= len(hot) or hot[h] >= end
            if cold and (rules[t] is KEY or (keys[t] is None and plain(v, rules[t]))) and "\\" not in s[i:end]:
                left.append(t)
                continue
        n = len(pieces)
        reads(v, rules[t], keys[t], pieces)
        if owner is not None:
            owner.extend([len(kept)] * (len(pieces) - n))
        kept.append(t)
    if seen is not None:
        seen.extend(_left_out(left, vals, rules, at))
        vals, rules, keys = [vals[t] for t in kept], [rules[t] for t in kept], [keys[t] for t in kept]
        where, at = [where[t] for t in kept], [at[t] for t in kept]
    spans = array("q", [x for ie in where for x in ie])
    if not places:
        return Tokens(vals, rules, keys, spans, None, None)
    return Tokens(vals, rules, keys, spans, [o for o, _, _ in at], [k for _, k, _ in at])


def _left_out(left: list[int], vals: list[str], rules: list[Rule], at: list[tuple[object, str | int, bool]]) -> list:
    """seen of py_collect: the texts of the strings left (their indexes, in order), those
    of a list all of whose elements they are, read with one rule, as one LeftOut."""
    out: list = []
    k = 0
    while k < len(left):
        t = left[k]
        c, _, is_key = at[t]
        j = k + 1
        if not is_key and type(c) is list:
            while j < len(left) and at[left[j]][0] is c and not at[left[j]][2] and rules[left[j]] is rules[t]:
                j += 1
            if j - k == len(c):
                out.append(LeftOut(c, rules[t], len(c)))
                k = j
                continue
        out.extend(vals[left[x]] for x in range(k, j))
        k = j
    return out


collect = c_collect or py_collect

# a JSON text's tokens as py_members reads them: a string, or a structural character
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]')


def py_members(s: str) -> tuple[array[int], list[str]]:
    """Where each member of the object s is the text of begins (its key's opening
    quote), in order, and each one's key: (starts, keys). s is JSON text the caller has
    parsed (an object); a repeated key is listed each time it is written. The compiled
    members (wire/_spanwalk.pyx) gives the same (tests/wire/test_spanwalk_members.py)."""
    starts: array[int] = array("q")
    keys: list[str] = []
    depth, key_next = 0, False
    for m in _TOKEN.finditer(s):
        c = s[m.start()]
        if c == '"':
            if depth == 1 and key_next:
                starts.append(m.start())
                keys.append(json.decoder.scanstring(s, m.start() + 1)[0])  # type: ignore[attr-defined]
                key_next = False
        elif c in "{[":
            if depth == 0 and c == "[":
                break  # not an object
            depth += 1
            key_next = depth == 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1:  # a comma between two members
            key_next = True
    return starts, keys


members = c_members or py_members

# an array's tokens as py_elements reads them: a string, a structural character, a scalar
_ELEMENT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]|[^\s"{}\[\],]+')


def py_elements(s: str, i: int) -> tuple[array[int], int]:
    """Where each element of the array whose `[` is s[i] begins, in order, and where its
    closing `]` is: (starts, end); end -1 where s ends first. s from i is JSON text the
    caller has parsed (turns.py cuts a conversation at its elements). The compiled
    elements (wire/_spanwalk.pyx) gives the same (tests/wire/test_spanwalk_elements.py)."""
    starts: array[int] = array("q")
    depth, want = 0, False
    for m in _ELEMENT.finditer(s, i):
        c = s[m.start()]
        if c in "{[":
            if depth == 1 and want:
                starts.append(m.start())
                want = False
            depth += 1
            want = want or depth == 1
        elif c in "}]":
            depth -= 1
            if depth <= 0:
                return starts, m.start()
        elif c == ",":
            want = want or depth == 1
        elif depth == 1 and want:  # a string or a scalar
            starts.append(m.start())
            want = False
    return starts, -1


elements = c_elements or py_elements

__all__ = [
    "Keyed", "c_collect", "c_elements", "c_members", "c_shapes", "c_walk", "collect", "elements", "keys_of", "members",
    "py_collect", "py_elements", "py_members", "py_walk", "transform", "walk",
]  # fmt: skip
