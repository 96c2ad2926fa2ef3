"""Field paths from the official SDKs' type definitions, and the field tables of
docs/fields.md: what the coverage test (test_fields_coverage.py) compares.

A path names a place in a JSON document: `.name` a member, `[]` an array item, `{}` a
value of a map (`{}#key` its keys), `<t>` the variant of a union whose `type` is t.
"""

from __future__ import annotations

import collections.abc
import functools
import importlib
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Union, get_args, get_origin

import pydantic
import typing_extensions as te

DOC = Path(__file__).resolve().parents[1] / "docs" / "fields.md"

_WRAPPERS = {te.Required, te.NotRequired, typing.Required, typing.NotRequired, getattr(te, "ReadOnly", None)}
_SEQ = {list, collections.abc.Iterable, collections.abc.Sequence, collections.abc.MutableSequence, tuple}
_MAP = {dict, collections.abc.Mapping, collections.abc.MutableMapping}


def _is_td(tp: object) -> bool:
    return isinstance(tp, type) and te.is_typeddict(tp)


def _is_model(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def _strip(tp):
    while True:
        o = get_origin(tp)
        if o is Annotated or (o is not None and o in _WRAPPERS):
            tp = get_args(tp)[0]
        elif hasattr(tp, "__value__") and type(tp).__name__ == "TypeAliasType":
            tp = tp.__value__
        else:
            return tp


def _alias(ann, name: str) -> str:
    while get_origin(ann) in _WRAPPERS:
        ann = get_args(ann)[0]
    for m in getattr(ann, "__metadata__", ()) or ():
        a = getattr(m, "alias", None)
        if a:
            return a
    return name


def _fields(tp) -> list[tuple[str, object]]:
    if _is_td(tp):
        return [(_alias(a, n), a) for n, a in typing.get_type_hints(tp, include_extras=True).items()]
    return [(f.alias or n, f.annotation) for n, f in tp.model_fields.items()]


def _members(tp) -> list:
    tp = _strip(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [m for a in get_args(tp) for m in _members(a)]
    return [tp]


def _type_values(tp) -> list[str]:
    for n, a in _fields(tp):
        if n == "type":
            return [v for m in _members(a) if get_origin(m) is Literal for v in get_args(m)]
    return []


def _walk(tp, path: str, stack: tuple, out: set[tuple[str, str]]) -> None:
    ms = _members(tp)
    objs = [m for m in ms if _is_td(m) or _is_model(m)]
    for m in ms:
        o = get_origin(m)
        if m is str:
            out.add((path, "str"))
        elif m is object or m is typing.Any:
            out.add((path, "json"))
        elif o is Literal or m in (int, float, bool, type(None), None, bytes):
            pass  # a fixed word of the API, a number or no value: nothing to mask
        elif o in _SEQ or m is list:
            args = get_args(m)
            _walk(args[0] if args else object, path + "[]", stack, out)
        elif o in _MAP or m is dict:
            args = get_args(m)
            v = args[1] if len(args) == 2 else object
            if _strip(v) in (object, typing.Any):
                out.add((path, "json"))
            else:
                out.add((path + "{}#key", "str"))
                _walk(v, path + "{}", stack, out)
        elif _is_td(m) or _is_model(m):
            labels = [f"<{v}>" for v in _type_values(m)] if len(objs) > 1 else [""]
            for label in labels or [""]:
                if m in stack:
                    continue  # a recursive type: its fields were listed where it began
                for n, a in _fields(m):
                    _walk(a, f"{path}{label}.{n}", (*stack, m), out)
        # anything else (os.PathLike, IO[bytes]: file uploads) is not JSON


def sdk_paths(tp) -> dict[str, str]:
    """Every string-bearing path of a type: path -> "str" (a string) or "json" (free
    JSON: keys and values). Paths start with "." (a member of the root) or "<" (a
    variant of a root union)."""
    out: set[tuple[str, str]] = set()
    _walk(tp, "", (), out)
    paths: dict[str, str] = {}
    for p, kind in sorted(out):
        paths[p] = "json" if kind == "json" or paths.get(p) == "json" else kind
    return paths


# -- the tables ------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    surface: str
    pattern: str
    decision: str  # masked, untouched, restored, windowed, ... or "see SURFACE PREFIX"
    why: str
    rx: re.Pattern[str]


def _compile(pattern: str) -> re.Pattern[str]:
    """`**`: anything; `*`: a run without `.`, `[`, `<` (inside `<...>`: anything but `>`);
    `<a|b>`: one of the variants."""
    out = []
    i = 0
    angle = False
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append("(.*)")
            i += 2
            continue
        if c == "*":
            out.append("[^>]*" if angle else r"[^.\[<]*")
        elif c == "<":
            angle = True
            out.append("<(?:")
        elif c == ">":
            angle = False
            out.append(")>")
        elif c == "|" and angle:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


_HEADING = re.compile(r"^### `([a-z-]+)`")
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| (.*) \|$")


def load_tables(path: Path = DOC) -> dict[str, list[Row]]:
    """The rows of every table in docs/fields.md, per surface, in order (first match wins)."""
    tables: dict[str, list[Row]] = {}
    surface = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _HEADING.match(line)
        if m:
            surface = m.group(1)
            tables.setdefault(surface, [])
            continue
        m = _ROW.match(line)
        if m and surface is not None:
            pat = m.group(1).replace("\\|", "|")  # a `|` inside a table cell is written `\|`
            decision, why = m.group(2).strip(), m.group(3).strip()
            tables[surface].append(Row(surface, pat, decision, why, _compile(pat)))
    return tables


def decide(tables: dict[str, list[Row]], surface: str, path: str, depth: int = 0) -> tuple[Row, str] | None:
    """The row that decides path (following `see` rows), and the path in that row's
    surface; None when no row matches."""
    for row in tables[surface]:
        m = row.rx.match(path)
        if m is None:
            continue
        if row.decision.startswith("see "):
            _, target, *prefix = row.decision.split()
            rest = m.group(1) if m.groups() else ""
            assert depth < 5, row
            return decide(tables, target, (prefix[0] if prefix else "") + rest, depth + 1)
        return row, path
    return None


# The SDK types each surface is read from.
ROOTS = {
    "anthropic-request": ["anthropic.types.MessageCreateParams", "anthropic.types.MessageCountTokensParams"],
    "anthropic-batch": ["anthropic.types.messages.BatchCreateParams"],
    "anthropic-response": ["anthropic.types.Message"],
    "anthropic-stream": ["anthropic.types.RawMessageStreamEvent"],
    "chat-request": ["openai.types.chat.CompletionCreateParams"],
    "chat-response": ["openai.types.chat.ChatCompletion"],
    "chat-stream": ["openai.types.chat.ChatCompletionChunk"],
    "responses-request": ["openai.types.responses.ResponseCreateParams"],
    "responses-response": ["openai.types.responses.Response"],
    "responses-stream": ["openai.types.responses.ResponseStreamEvent"],
}


@functools.cache
def all_paths() -> list[tuple[str, str, str]]:
    """(surface, path, kind) of every string-bearing field of the ROOTS types."""
    out = []
    for surface, names in ROOTS.items():
        for name in names:
            mod, attr = name.rsplit(".", 1)
            tp = getattr(importlib.import_module(mod), attr)
            out.extend((surface, p, kind) for p, kind in sdk_paths(tp).items())
    return out
