"""Mapping files as YAML documents (sans I/O but for reading the file): the only module
that imports YAML. Mappings and lists remember the line of each key and item, a key
repeated in one mapping is refused (PyYAML would keep the last without a word), and a
syntax error names the line of the mistake, never quoting the file (it may hold an
original)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import MappingError, unquoted

# A mapping file's sections (mappings.py reads them; a repeated one is named in the refusal).
SECTIONS = ("literals", "patterns", "strip")


class Map(dict):
    """A YAML mapping that remembers its own line and each key's line (1-based)."""

    line = 0
    key_lines: dict


class Seq(list):
    line = 0
    item_lines: list


class _Loader(yaml.SafeLoader):
    source = "<yaml>"
    last_plain: yaml.Token | None = None  # the last unquoted scalar scanned (see _yaml_problem)

    def scan_plain(self):  # type: ignore[no-untyped-def]
        tok = super().scan_plain()
        self.last_plain = tok
        return tok


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Map:
    # PyYAML keeps the last of two equal keys without a word; a repeated original or a
    # second `literals:` section would silently drop rules. Refuse it, by line only
    # (the key may be an original).
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            first = seen.get(key)
        except TypeError:
            raise MappingError(f"{loader.source}:{line}: a key must be a plain value") from None
        if first is not None:
            what = f"key {key!r}" if key in (*SECTIONS, "name", "regex") else "key"
            raise MappingError(f"{loader.source}:{line}: {what} repeats line {first} (each key once)")
        seen[key] = line
    loader.flatten_mapping(node)
    m = Map()
    for key_node, value_node in node.value:
        m[loader.construct_object(key_node, deep=True)] = loader.construct_object(value_node, deep=True)
    m.line = node.start_mark.line + 1
    m.key_lines = seen
    return m


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> Seq:
    out = Seq(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [n.start_mark.line + 1 for n in node.value]
    return out


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def read_yaml(f: Path) -> object:
    try:
        text = f.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise MappingError(f"{f}: not UTF-8 (byte offset {e.start})") from None
    except OSError as e:
        raise MappingError(f"{f}: cannot read ({e.strerror})") from None
    loader = _Loader(text)
    loader.source = str(f)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        raise MappingError(f"{f}: malformed YAML {_yaml_problem(e, loader)}") from None
    finally:
        loader.dispose()


def _yaml_problem(e: yaml.YAMLError, loader: _Loader) -> str:
    """Where a YAML syntax error is and what it is, as "at line L, column C: what".

    PyYAML marks where it gave up, which for a construct left open is the line after it
    or the end of the file: a key without its `:`, a quote or a `[`/`{` never closed.
    The line it was scanning (the construct's start) is where the mistake is, so that
    is the position given, and where it gave up follows. A value that runs on into the
    next line, where a `:` follows, is the same mistake (a key whose `:` lacks its
    space, or a line indented too far). Only positions and PyYAML's short problem text:
    its full message quotes the line, which may hold an original."""
    problem = unquoted(getattr(e, "problem", None) or type(e).__name__)
    context = getattr(e, "context", None) or ""
    at = getattr(e, "problem_mark", None)
    cm = getattr(e, "context_mark", None)
    what = problem
    opened = next((v for k, v in _OPENED.items() if context.endswith(k)), None)
    if cm is not None and at is not None and opened is not None:
        what = opened if context.endswith("simple key") else f"{opened}: {problem}"
        at = cm
    elif problem == "mapping values are not allowed here" and at is not None and loader.last_plain is not None:
        start, end = loader.last_plain.start_mark, loader.last_plain.end_mark
        if start.line < at.line <= end.line + 1:
            what = (
                f"the value that starts here runs on into line {at.line + 1}, where a ':' follows "
                "(a key whose ':' lacks the space after it, or a line indented too far?)"
            )
            at = start
            problem = "runs on"  # no hint: the text says it
    if at is None:
        return f": {what}"
    pm = getattr(e, "problem_mark", None)
    if pm is not None and pm.line != at.line:
        what += f" (noticed at line {pm.line + 1}, column {pm.column + 1})"
    hint = next((h for k, h in _YAML_HINTS.items() if k in problem), "")
    if not hint and pm is not None and "expected <block end>" in problem:
        line = pm.buffer[pm.buffer.rfind("\n", 0, pm.pointer) + 1 : pm.pointer] if pm.buffer else ""
        hint = (
            "; a value that begins with [ or { is read as a list or a mapping: quote it ('[a-z]+')"
            if re.search(r":\s+[\[{]", line) or line.lstrip().startswith(("- [", "- {"))
            else "; check this line's indentation against the lines above it"
        )
    return f"at line {at.line + 1}, column {at.column + 1}: {what}{hint}"


# PyYAML's context for a construct it was still reading when it gave up -> where it began.
_OPENED = {
    "scanning a simple key": "the key that starts here has no ':' after it",
    "scanning a quoted scalar": "in the quoted value that starts here",
    "scanning a double-quoted scalar": "in the quoted value that starts here",
    "scanning a single-quoted scalar": "in the quoted value that starts here",
    "parsing a flow sequence": "in the [list] that starts here",
    "parsing a flow mapping": "in the {mapping} that starts here",
    "scanning a block scalar": "in the block value that starts here",
    "scanning an anchor": "in the anchor that starts here",
    "scanning an alias": "in the alias that starts here",
    "scanning a tag": "in the tag that starts here",
}
# Advice for the problems a mapping file's author meets most.
_YAML_HINTS = {
    "unknown escape character": (
        "; inside double quotes a backslash starts an escape: write a regex in single quotes ('\\d+')"
    ),
    "cannot start any token": "; quote a value or key that begins with this character",
    "found unexpected end of stream": "; close it",
    "mapping values are not allowed here": "; quote a value that holds ': '",
}
