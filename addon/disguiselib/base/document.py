"""A JSON document as the tables read it (sans I/O): numbers as their own text, an
object that repeats a key kept with every pair, and the repeats whose values differ
found while parsing, in the one parse a body gets.

RFC 8259 §4: "The names within an object SHOULD be unique. [...] When the names within
an object are not unique, the behavior of software that receives such an object is
unpredictable. Many implementations report the last name/value pair only. Other
implementations report an error or fail to parse the object, and some implementations
report all of the name/value pairs, including duplicates." Python's json keeps the
last; a provider (or a gateway before it) may keep the first. Where the values of a
repeated key differ, a key that decides what a block is (`type`, `media_type`, Gemini's
`thought`) can make the masker read the block as a thinking block, binary media or a
thought part and leave it as it came, while the provider reads it as model text. Which
one the provider reads is not ours to guess: such a request is refused (masking.py);
a key repeated with the same value twice reads the same either way and is masked pair
by pair.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..errors import PlacedMaskError


class Num(str):
    """A JSON number's own text (parse_int / parse_float): a pattern can match digits
    the masker never touches (it cannot turn a number into a string)."""


class Dup(dict):
    """A JSON object that repeats a key: every (key, value) pair kept in `pairs`
    (json.loads keeps only the last value, and a provider might read the first)."""

    pairs: list


def _object(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    dup = Dup(pairs)
    dup.pairs = pairs
    return dup


def _checking(clashes: list[tuple[Dup, str]]) -> Callable[[list], dict]:
    """_object that also notes, in clashes, each object repeating a key whose values
    differ (with that key). The common case (no repeat) costs what _object costs."""

    def hook(pairs: list) -> dict:
        d = dict(pairs)
        if len(d) == len(pairs):
            return d
        dup = Dup(pairs)
        dup.pairs = pairs
        key = differing(d, pairs)
        if key is not None:
            clashes.append((dup, key))
        return dup

    return hook


def loads(text: str, clashes: list[tuple[Dup, str]] | None = None) -> object:
    """A JSON document for fields.walk(): numbers as Num, repeated keys kept (Dup).
    clashes: a list that receives (object, key) for each object repeating a key with
    values that differ, innermost first (json builds an object after its members).
    Raises ValueError (not JSON) or RecursionError."""
    hook = _object if clashes is None else _checking(clashes)
    return json.loads(text, object_pairs_hook=hook, parse_int=Num, parse_float=Num)


def differing(last: dict, pairs: list) -> str | None:
    """The first key of pairs whose values are not all the same (see same); last: the
    object as dict(pairs) builds it, each key with its last value."""
    for key, value in pairs:
        if not same(value, last[key]):
            return key  # type: ignore[no-any-return]
    return None


def same(a: object, b: object) -> bool:
    """Do two parsed values read the same to any reader: the same types all the way
    down (a number's text against a string's is not), the same members in the same
    order (a repeated key's pairs as written). Compares without recursion (a value
    nested as deep as json parses it). Each repeated value is compared with the last
    one once: a document costs at most its size per level of repeats it nests, which
    doubles its size each time."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            px = x.pairs if type(x) is Dup else list(x.items())
            py = y.pairs if type(y) is Dup else list(y.items())  # type: ignore[attr-defined]
            if len(px) != len(py):
                return False
            for (kx, vx), (ky, vy) in zip(px, py, strict=True):
                if kx != ky:
                    return False
                stack.append((vx, vy))
        elif isinstance(x, list):
            if len(x) != len(y):  # type: ignore[arg-type]
                return False
            stack.extend(zip(x, y, strict=True))  # type: ignore[call-overload]
        elif x != y:
            return False
    return True


def path_to(doc: object, target: object) -> object:
    """The linked path (fields.path_text) of the object target inside doc (by identity),
    None for doc itself or one not in it. A walk of the document: made only for a
    refusal's message."""
    stack: list[tuple[object, object]] = [(doc, None)]
    while stack:
        v, path = stack.pop()
        if v is target:
            return path
        if isinstance(v, dict):
            items = v.pairs if type(v) is Dup else list(v.items())
            stack.extend((x, (path, k)) for k, x in reversed(items))
        elif isinstance(v, list):
            stack.extend((v[i], (path, i)) for i in range(len(v) - 1, -1, -1))
    return None


def repeated(doc: object, clashes: list[tuple[Dup, str]], what: str) -> PlacedMaskError:
    """The refusal of a document (what: "body", "batch file line 3") in which an object
    repeats a key with values that differ (clashes: see loads), naming the first such
    key's place, never its values."""
    obj, key = clashes[0]
    return PlacedMaskError(what + " repeats the key at {} with values that differ", (path_to(doc, obj), key))
