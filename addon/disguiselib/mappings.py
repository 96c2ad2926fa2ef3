"""YAML mapping files -> one validated, frozen rule set (contract §2).

This is the only module that imports YAML. A set is either loaded whole or refused
with a `MappingError` naming the file, the rule and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import linear, rxsyntax, validators
from .errors import MappingError

# Disguises must read the same raw and JSON-escaped: then a disguise can be found in
# escaped text and never straddles an escape sequence.
_BAD_DISGUISE = re.compile(r'["\\\x00-\x1f\x7f]|[^\x00-\x7f]')
_PATTERN_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")


@dataclass(frozen=True)
class Literal:
    original: str
    disguise: str
    source: str  # "file: literal 'name'" for messages, never logged with the original


@dataclass(frozen=True)
class Pattern:
    name: str
    regex: str
    source: str
    # Per-rule options (README "Pattern options"; the engine applies them in
    # rules._accept): the capture groups whose span is masked (the first that took part;
    # empty: the whole match), a validator from validators.NAMES, and keywords of which
    # one must occur, case-insensitively, within `window` characters of the match.
    group: tuple[int | str, ...] = ()
    validator: str | None = None
    keywords: tuple[str, ...] = ()
    window: int = 0


@dataclass(frozen=True)
class Strip:
    regex: str
    source: str


@dataclass(frozen=True)
class MappingSet:
    literals: tuple[Literal, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    strips: tuple[Strip, ...] = ()
    files: tuple[str, ...] = ()


def load(path: str | Path) -> MappingSet:
    """Load a YAML file, or every `*.yaml`/`*.yml` in a folder in file-name order.

    Raises MappingError for anything the contract refuses; never returns a partial set.
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml") and f.is_file())
        if not files:
            raise MappingError(f"{p}: folder has no *.yaml or *.yml files")
    elif p.is_file():
        files = [p]
    else:
        raise MappingError(f"{p}: no such file or folder")
    literals: list[Literal] = []
    patterns: list[Pattern] = []
    strips: list[Strip] = []
    for f in files:
        _parse_file(f, literals, patterns, strips)
    ms = MappingSet(tuple(literals), tuple(patterns), tuple(strips), tuple(str(f) for f in files))
    validate(ms)
    return ms


def from_dict(doc: object, source: str = "<inline>") -> MappingSet:
    """Build and validate a set from an already parsed YAML document (tests, bench)."""
    literals: list[Literal] = []
    patterns: list[Pattern] = []
    strips: list[Strip] = []
    _parse_doc(doc, source, literals, patterns, strips)
    ms = MappingSet(tuple(literals), tuple(patterns), tuple(strips), (source,))
    validate(ms)
    return ms


def _parse_file(f: Path, literals: list, patterns: list, strips: list) -> None:
    try:
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise MappingError(f"{f}: not UTF-8 (byte offset {e.start})") from e
    except yaml.YAMLError as e:
        # Only the position and the kind of problem: PyYAML's own message quotes the
        # offending line, which may hold an original.
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise MappingError(f"{f}: malformed YAML{where}: {problem}") from None
    _parse_doc(doc, str(f), literals, patterns, strips)


def _parse_doc(doc: object, f: str, literals: list, patterns: list, strips: list) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise MappingError(f"{f}: top level must be a mapping with literals/patterns/strip")
    unknown = set(doc) - {"literals", "patterns", "strip"}
    if unknown:
        raise MappingError(f"{f}: unknown section(s) {sorted(map(str, unknown))}")
    lits = doc.get("literals") or {}
    if not isinstance(lits, dict):
        raise MappingError(f"{f}: literals must be a mapping of original: disguise")
    for n, (orig, disg) in enumerate(lits.items(), 1):
        src = f"{f}: literal #{n}"
        if not isinstance(orig, str) or not isinstance(disg, str):
            raise MappingError(f"{src}: original and disguise must both be strings (quote them)")
        if not orig:
            raise MappingError(f"{src}: original is empty")
        literals.append(Literal(orig, disg, src))
    pats = doc.get("patterns") or []
    if not isinstance(pats, list):
        raise MappingError(f"{f}: patterns must be a list of {{name, regex}}")
    for n, item in enumerate(pats, 1):
        src = f"{f}: pattern #{n}"
        if not isinstance(item, dict) or set(item) - _PATTERN_KEYS or "regex" not in item or "name" not in item:
            extra = sorted(map(str, set(item) - _PATTERN_KEYS)) if isinstance(item, dict) else []
            raise MappingError(
                f"{src}: each pattern needs 'name' and 'regex' (optional: {', '.join(_PATTERN_OPTIONS)})"
                + (f"; unknown: {', '.join(extra)}" if extra else "")
            )
        name, rx = item.get("name"), item["regex"]
        if not isinstance(name, str) or not _PATTERN_NAME.match(name):
            raise MappingError(f"{src}: name must match [A-Z][A-Z0-9_]* (got {name!r})")
        if not isinstance(rx, str):
            raise MappingError(f"{src} ({name}): regex must be a string")
        patterns.append(Pattern(name, rx, f"{src} ({name})", **_pattern_options(item, rx, f"{src} ({name})")))
    sts = doc.get("strip") or []
    if not isinstance(sts, list):
        raise MappingError(f"{f}: strip must be a list of {{regex}}")
    for n, item in enumerate(sts, 1):
        src = f"{f}: strip #{n}"
        if not isinstance(item, dict) or set(item) != {"regex"} or not isinstance(item["regex"], str):
            raise MappingError(f"{src}: each strip rule needs exactly 'regex' (a string)")
        strips.append(Strip(item["regex"], src))


_PATTERN_OPTIONS = ("group", "validator", "keywords", "window")
_PATTERN_KEYS = {"name", "regex", *_PATTERN_OPTIONS}
MAX_WINDOW = 200  # characters either side searched for a keyword: bounded, so linear


def _pattern_options(item: dict, rx: str, src: str) -> dict:
    """The optional keys of one pattern item, checked: `group` (a group number or name, or
    a list of them, that exists in rx), `validator` (a name in validators.NAMES),
    `keywords` (a non-empty list of non-empty strings, kept lower-cased) and `window`
    (1..MAX_WINDOW characters, default 40; only with keywords)."""
    out: dict = {}
    g = item.get("group")
    if g is not None:
        gs = g if isinstance(g, list) else [g]
        if not gs or not all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in gs):
            raise MappingError(f"{src}: group must be a group number or name, or a list of them")
        try:
            compiled = linear.Regex(rx)
        except linear.RegexError:
            compiled = None  # validate() reports the regex itself
        if compiled is not None:
            for x in gs:
                if (isinstance(x, int) and not 0 <= x <= compiled.ngroups) or (
                    isinstance(x, str) and x not in compiled.groupindex
                ):
                    raise MappingError(f"{src}: group {x!r} is not a group of its regex")
        out["group"] = tuple(gs)
    v = item.get("validator")
    if v is not None:
        if v not in validators.NAMES:
            raise MappingError(f"{src}: validator must be one of {', '.join(sorted(validators.NAMES))}")
        out["validator"] = v
    kw = item.get("keywords")
    if kw is not None:
        if not isinstance(kw, list) or not kw or not all(isinstance(k, str) and k for k in kw):
            raise MappingError(f"{src}: keywords must be a non-empty list of non-empty strings")
        out["keywords"] = tuple(k.lower() for k in kw)
        out["window"] = 40
    w = item.get("window")
    if w is not None:
        if kw is None:
            raise MappingError(f"{src}: window only applies with keywords")
        if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= MAX_WINDOW:
            raise MappingError(f"{src}: window must be a whole number of characters, 1 to {MAX_WINDOW}")
        out["window"] = w
    return out


def _check_regex(rx: str, src: str, strip: bool = False) -> None:
    """Refuse a regex the linear-time engine (RE2) cannot run, or one that can match
    the empty string; a strip rule must also have a streaming form (rxsyntax)."""
    try:
        linear.check(rx)
    except linear.RegexError as e:
        raise MappingError(f"{src}: regex does not compile (RE2 syntax, every rule runs in linear time): {e}") from None
    if strip:
        try:
            rxsyntax.bounded(rx)
        except rxsyntax.SyntaxRefused as e:
            raise MappingError(f"{src}: strip rule refused: {e}") from None


def validate(ms: MappingSet) -> None:
    """Every refusal of contract §2. Messages never quote an original."""
    by_disguise: dict[str, Literal] = {}
    by_original: dict[str, Literal] = {}
    for lit in ms.literals:
        d = lit.disguise
        if not d:
            raise MappingError(f"{lit.source}: disguise is empty")
        if _BAD_DISGUISE.search(d):
            raise MappingError(
                f"{lit.source}: disguise {d!r} contains a quote, backslash, control or "
                "non-ASCII character (disguises must read the same raw and JSON-escaped)"
            )
        if lit.original in by_original:
            raise MappingError(f"{lit.source}: original repeats {by_original[lit.original].source}")
        if d in by_disguise:
            raise MappingError(
                f"{lit.source}: disguise {d!r} is shared with {by_disguise[d].source}"
            )
        by_disguise[d] = lit
        by_original[lit.original] = lit
    names: set[str] = set()
    for p in ms.patterns:
        _check_regex(p.regex, p.source)
        if p.name in names:
            raise MappingError(f"{p.source}: pattern name {p.name} is used twice")
        names.add(p.name)
    for s in ms.strips:
        _check_regex(s.regex, s.source, strip=True)
    # No chains: a disguise must not contain any original (its own included), so a
    # masked text never holds an original and reversal is unambiguous.
    for lit in ms.literals:
        for other in ms.literals:
            if other.original in lit.disguise:
                raise MappingError(
                    f"{lit.source}: disguise {lit.disguise!r} contains the original of "
                    f"{other.source}"
                )
    # Nor may a placeholder: "[NAME_12]" must not contain an original either.
    for p in ms.patterns:
        for lit in ms.literals:
            o = lit.original
            if o in f"[{p.name}_" or o.strip("0123456789") in ("", "]", "_]"):
                raise MappingError(
                    f"{lit.source}: original occurs inside the placeholders of {p.source}"
                )
