"""YAML mapping files -> one validated, frozen rule set (contract §2).

A set is either loaded whole or refused with a `MappingError` naming the file, the line,
the rule and the reason; a message never quotes an original. The YAML itself is read by
yamlfile.py (with line numbers, without silent duplicates).

Layers: the shipped defaults (`mappings/default.yaml`) come first unless turned off,
then the user's files and folders in the order given. A later pattern or named strip
rule with the name of an earlier one replaces it in place; everything else adds up, and
the merged result is validated as one set.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import ahocorasick_rs

from ..errors import MappingError
from ..shipped import DEFAULTS_FILE
from . import linear, overlaps, rxsyntax, validators
from .fakes import GENERATORS
from .session import ph_head
from .words import COMMON_WORDS
from .yamlfile import SECTIONS
from .yamlfile import Map as _Map
from .yamlfile import Seq as _List
from .yamlfile import read_yaml as _read_yaml

# Disguises must read the same raw and JSON-escaped: then a disguise can be found in
# escaped text and never straddles an escape sequence.
_BAD_DISGUISE = re.compile(r'["\\\x00-\x1f\x7f]|[^\x00-\x7f]')
_PATTERN_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_SUFFIXES = (".yaml", ".yml")
# Shorter than this, a disguise turns up inside ordinary words of the model's answer.
SHORT_DISGUISE = 4
# How close (difflib's ratio) an unknown key must be to a known one to be suggested.
_NEAR_KEY = 0.75



@dataclass(frozen=True)
class Literal:
    original: str
    disguise: str
    source: str  # "file:line: literal #n" for messages; never holds the original


@dataclass(frozen=True)
class Pattern:
    name: str
    regex: str
    source: str
    # Per-rule options (README "Pattern options"; the engine applies them in
    # accept.accept): the capture groups whose span is masked (the first that took part;
    # empty: the whole match), a validator from validators.NAMES, and keywords of which
    # one must occur, case-insensitively, within `window` characters of the match.
    group: tuple[int | str, ...] = ()
    validator: str | None = None
    keywords: tuple[str, ...] = ()
    window: int = 0
    # What the many-pattern prefilter looks for instead of regex (None: regex itself): a
    # regex that matches somewhere in every text regex matches in (Rules.prefilter_regex).
    prefilter: str | None = None
    # With disguise_fakes: the generator of this rule's fakes (rules/fakes.GENERATORS),
    # False for placeholders, None: chosen by its validator or name (fakes.kind).
    fake: str | bool | None = None


@dataclass(frozen=True)
class Strip:
    regex: str
    source: str
    name: str | None = None  # a named strip rule can be replaced by a later layer


@dataclass(frozen=True)
class MappingSet:
    literals: tuple[Literal, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    strips: tuple[Strip, ...] = ()
    files: tuple[str, ...] = ()
    # Load-time findings for the log: empty or ignored files, risky disguises,
    # replaced rules. Never an original.
    warnings: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()


# -- files and layers ----------------------------------------------------------------------


def _folder_files(p: Path, skip: Path | None, warnings: list[str]) -> list[Path]:
    files = []
    for f in sorted(p.iterdir()):
        if not f.is_file():
            continue
        if f.suffix in _SUFFIXES and not f.name.startswith("."):
            if skip is None or f.resolve() != skip:
                files.append(f)
        else:
            warnings.append(f"{f}: ignored (only *.yaml and *.yml files in a folder are loaded)")
    return files


def resolve_files(paths: Sequence[str | Path], defaults: bool = True) -> tuple[list[Path], list[str]]:
    """The files a layered set is read from, in order, and warnings about ignored
    files. `defaults` puts the shipped default.yaml first (and, when off, leaves it out
    of any folder listed). A file named twice is read once. Raises MappingError for a
    path that does not exist or when there is no file at all."""
    warnings: list[str] = []
    if defaults and not DEFAULTS_FILE.is_file():
        raise MappingError(f"{DEFAULTS_FILE}: the shipped default mappings are missing: reinstall disguise")
    files: list[Path] = [DEFAULTS_FILE] if defaults else []
    seen = {DEFAULTS_FILE} if defaults else set()
    shipped = DEFAULTS_FILE.read_bytes() if defaults else None
    for entry in paths:
        if not str(entry).strip():
            # (`--set disguise_mappings=`: a Path of it is the working directory, every
            # YAML file in it read as mappings)
            raise MappingError(
                "disguise_mappings holds an empty path: name a file or folder, or leave it out for the defaults alone"
            )
        p = Path(os.path.expanduser(str(entry)))
        if p.is_dir():
            found = _folder_files(p, None if defaults else DEFAULTS_FILE, warnings)
            if not found:
                warnings.append(f"{p}: folder has no *.yaml or *.yml files")
        elif p.is_file():
            found = [p]
        else:
            raise MappingError(f"{p}: no such file or folder")
        for f in found:
            r = f.resolve()
            if r in seen or (p.is_dir() and f.name == DEFAULTS_FILE.name and f.read_bytes() == shipped):
                continue  # read already, or a folder's copy of the shipped defaults (loaded first)
            seen.add(r)
            files.append(f)
    if not files:
        raise MappingError("no mapping files: the defaults are off and no file or folder holds any")
    return files, warnings


def snapshot(paths: Sequence[str | Path], defaults: bool = True) -> tuple:
    """A cheap fingerprint of everything load_layers(paths, defaults) would read: each
    folder's listing and each file's size and modification time (ns). Two equal
    snapshots mean nothing changed. Never raises (a missing path is part of it). Taken
    at every request (mitm/reload.py), on the event loop: strings and os calls only (a
    file's own stat read once), no Path made per file."""
    out: list[object] = []
    entries = [str(DEFAULTS_FILE)] if defaults else []
    entries += [os.path.expanduser(str(e)) for e in paths]
    for p in entries:
        try:
            st = os.stat(p)
            if stat.S_ISDIR(st.st_mode):
                names = sorted(os.listdir(p))
                out.append((p, tuple(names)))
                for n in names:
                    if n.endswith(_SUFFIXES):
                        f = os.path.join(p, n)
                        st = os.stat(f)
                        out.append((f, st.st_mtime_ns, st.st_size, st.st_ino))
            else:
                out.append((p, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((p, None))
    return tuple(out)


def digest(paths: Sequence[str | Path], defaults: bool = True) -> str:
    """SHA-256 of everything load_layers(paths, defaults) would read: each folder's
    listing and each file's bytes. Equal digests read at two times mean the files held
    the same content both times. Never raises (a file that cannot be read is part of it)."""
    h = hashlib.sha256()
    entries = [DEFAULTS_FILE] if defaults else []
    entries += [Path(os.path.expanduser(str(e))) for e in paths]
    for p in entries:
        try:
            if p.is_dir():
                names = sorted(os.listdir(p))
                h.update(repr((str(p), names)).encode("utf-8", "surrogatepass"))
                files = [p / n for n in names if n.endswith(_SUFFIXES)]
            else:
                files = [p]
            for f in files:
                data = f.read_bytes()
                h.update(repr((str(f), len(data))).encode("utf-8", "surrogatepass"))
                h.update(data)
        except OSError as e:
            h.update(repr((str(p), type(e).__name__)).encode())
    return h.hexdigest()


def load_layers(paths: Sequence[str | Path], defaults: bool = True) -> MappingSet:
    """Load the shipped defaults (unless defaults is False) and then every file or
    folder in paths, as one validated set. Raises MappingError; never returns a partial
    set."""
    files, warnings = resolve_files(paths, defaults)
    return _load_files(files, warnings)


def load(path: str | Path) -> MappingSet:
    """Load one YAML file, or every `*.yaml`/`*.yml` in a folder in file-name order (no
    defaults added). Raises MappingError for anything the contract refuses."""
    p = Path(path)
    warnings: list[str] = []
    if p.is_dir():
        files = _folder_files(p, None, warnings)
        if not files:
            raise MappingError(f"{p}: folder has no *.yaml or *.yml files")
    elif p.is_file():
        files = [p]
    else:
        raise MappingError(f"{p}: no such file or folder")
    return _load_files(files, warnings)


class _Builder:
    """Collects rules file by file, applying replacement by name."""

    def __init__(self) -> None:
        self.literals: list[Literal] = []
        self.patterns: list[Pattern] = []
        self.strips: list[Strip] = []
        self.warnings: list[str] = []
        self.replaced: list[str] = []
        self._file: dict[tuple[str, str], str] = {}  # (kind, name) -> file that defined it

    def _same_file(self, kind: str, name: str, file: str) -> bool:
        return self._file.get((kind, name)) == file

    def add_pattern(self, p: Pattern, file: str) -> None:
        for i, old in enumerate(self.patterns):
            if old.name == p.name:
                if self._same_file("pattern", p.name, file):
                    raise MappingError(f"{p.source}: pattern name {p.name} is used twice (also {old.source})")
                self._file[("pattern", p.name)] = file
                self.patterns[i] = p  # in place: earlier patterns win ties at one position
                self.replaced.append(f"pattern {p.name}: {old.source} replaced by {p.source}")
                return
        self._file[("pattern", p.name)] = file
        self.patterns.append(p)

    def add_strip(self, s: Strip, file: str) -> None:
        if s.name is not None:
            for i, old in enumerate(self.strips):
                if old.name == s.name:
                    if self._same_file("strip", s.name, file):
                        raise MappingError(f"{s.source}: strip name {s.name} is used twice (also {old.source})")
                    self._file[("strip", s.name)] = file
                    self.strips[i] = s
                    self.replaced.append(f"strip {s.name}: {old.source} replaced by {s.source}")
                    return
            self._file[("strip", s.name)] = file
        self.strips.append(s)

    def build(self, files: Iterable[str]) -> MappingSet:
        return MappingSet(
            tuple(self.literals), tuple(self.patterns), tuple(self.strips), tuple(files),
            tuple(self.warnings), tuple(self.replaced),
        )  # fmt: skip


def _load_files(files: list[Path], warnings: list[str]) -> MappingSet:
    b = _Builder()
    b.warnings.extend(warnings)
    for f in files:
        doc = _read_yaml(f)
        if doc is None or (isinstance(doc, dict) and not any(doc.get(s) for s in SECTIONS)):
            b.warnings.append(f"{f}: empty: no rules loaded from it")
        _parse_doc(doc, str(f), b)
    ms = b.build(str(f) for f in files)
    validate(ms)
    return MappingSet(
        ms.literals, ms.patterns, ms.strips, ms.files, (*ms.warnings, *disguise_warnings(ms)), ms.replaced
    )


def from_dict(doc: object, source: str = "<inline>") -> MappingSet:
    """Build and validate a set from an already parsed YAML document (tests, bench)."""
    b = _Builder()
    _parse_doc(doc, source, b)
    ms = b.build([source])
    validate(ms)
    return ms


def _line(container: object, key: object = None, index: int | None = None) -> str:
    """":LINE" for a key of a _Map or an item of a _List; "" when unknown (from_dict)."""
    if isinstance(container, _Map) and key is not None:
        n = container.key_lines.get(key)
        return f":{n}" if n else ""
    if isinstance(container, _List) and index is not None:
        return f":{container.item_lines[index]}"
    return ""


def _parse_doc(doc: object, f: str, b: _Builder) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise MappingError(f"{f}: top level must be a mapping with literals/patterns/strip")
    unknown = [k for k in doc if k not in SECTIONS]
    if unknown:
        raise MappingError(
            f"{f}{_line(doc, unknown[0])}: unknown section{_near(unknown[0], SECTIONS)} (the sections are "
            f"{', '.join(SECTIONS)}; a rule written at the top level belongs under one of them)"
        )
    lits = doc.get("literals") or {}
    if not isinstance(lits, dict):
        raise MappingError(f"{f}{_line(doc, 'literals')}: literals must be a mapping of original: disguise")
    for n, (orig, disg) in enumerate(lits.items(), 1):
        src = f"{f}{_line(lits, orig)}: literal #{n}"
        if not isinstance(orig, str) or not isinstance(disg, str):
            raise MappingError(f"{src}: original and disguise must both be strings (quote them)")
        if not orig:
            raise MappingError(f"{src}: original is empty")
        b.literals.append(Literal(orig, disg, src))
    pats = doc.get("patterns") or []
    if not isinstance(pats, list):
        raise MappingError(f"{f}{_line(doc, 'patterns')}: patterns must be a list of {{name, regex}}")
    for n, item in enumerate(pats, 1):
        src = f"{f}{_line(pats, index=n - 1)}: pattern #{n}"
        if not isinstance(item, dict) or set(item) - _PATTERN_KEYS or "regex" not in item or "name" not in item:
            extra = sorted(map(str, set(item) - _PATTERN_KEYS)) if isinstance(item, dict) else []
            raise MappingError(
                f"{src}: each pattern needs 'name' and 'regex' (optional: {', '.join(_PATTERN_OPTIONS)})"
                + (f"; an unknown key{_near(extra[0], _PATTERN_KEYS)}" if extra else "")
            )
        name, rx = item.get("name"), item["regex"]
        if not isinstance(name, str) or not _PATTERN_NAME.match(name):
            raise MappingError(f"{src}: name must match [A-Z][A-Z0-9_]*")
        if not isinstance(rx, str):
            raise MappingError(f"{src} ({name}): regex must be a string")
        b.add_pattern(Pattern(name, rx, f"{src} ({name})", **_pattern_options(item, rx, f"{src} ({name})")), f)
    sts = doc.get("strip") or []
    if not isinstance(sts, list):
        raise MappingError(f"{f}{_line(doc, 'strip')}: strip must be a list of {{regex}}")
    for n, item in enumerate(sts, 1):
        src = f"{f}{_line(sts, index=n - 1)}: strip #{n}"
        if (
            not isinstance(item, dict)
            or "regex" not in item
            or set(item) - {"regex", "name"}
            or not isinstance(item["regex"], str)
        ):
            raise MappingError(f"{src}: each strip rule needs 'regex' (a string) and may have a 'name'")
        name = item.get("name")
        if name is not None and (not isinstance(name, str) or not _PATTERN_NAME.match(name)):
            raise MappingError(f"{src}: name must match [A-Z][A-Z0-9_]*")
        b.add_strip(Strip(item["regex"], f"{src} ({name})" if name else src, name), f)


_PATTERN_OPTIONS = ("group", "validator", "keywords", "window", "prefilter", "fake")
_PATTERN_KEYS = {"name", "regex", *_PATTERN_OPTIONS}
MAX_WINDOW = 200  # characters either side searched for a keyword: bounded, so linear


def _pattern_options(item: dict, rx: str, src: str) -> dict:
    """The optional keys of one pattern item, checked: `group` (a group number or name, or
    a list of them, that exists in rx), `validator` (a name in validators.NAMES),
    `keywords` (a non-empty list of non-empty strings, kept lower-cased) and `window`
    (1..MAX_WINDOW characters, default 40; only with keywords), `prefilter` (a regex)."""
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
                    which = f"group {x}" if isinstance(x, int) else "a group name"
                    raise MappingError(f"{src}: {which} in `group` is not a group of its regex")
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
    pf = item.get("prefilter")
    if pf is not None:
        if not isinstance(pf, str) or not pf:
            raise MappingError(f"{src}: prefilter must be a regex (a string)")
        out["prefilter"] = pf
    fk = item.get("fake")
    if fk is not None:
        if fk is not False and fk not in GENERATORS:
            raise MappingError(f"{src}: fake must be false or one of {', '.join(sorted(GENERATORS))}")
        out["fake"] = fk
    return out


def _near(key: str, known: Iterable[str]) -> str:
    """" (did you mean X?)" for a key close to a known one, else "": the key itself is
    never quoted (a rule written at the wrong level puts an original there)."""
    hit = difflib.get_close_matches(key, sorted(known), n=1, cutoff=_NEAR_KEY) if isinstance(key, str) else []
    return f" (did you mean {hit[0]}?)" if hit else ""


def _kind(c: str) -> str:
    """What a refused character of a disguise is, without the character."""
    if c == '"':
        return "a quote"
    if c == "\\":
        return "a backslash"
    return "a control character" if ord(c) < 0x80 else "a non-ASCII character"


def _check_regex(rx: str, src: str, strip: bool = False) -> None:
    """Refuse a regex the linear-time engine (RE2) cannot run, or one that can match
    the empty string; a strip rule must also have a streaming form (rxsyntax)."""
    try:
        linear.check(rx)
    except linear.RegexError as e:
        raise MappingError(f"{src}: regex does not compile: {e}") from None
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
        if (bad := _BAD_DISGUISE.search(d)) is not None:
            raise MappingError(
                f"{lit.source}: disguise holds {_kind(bad.group())} at character {bad.start()} (disguises "
                "must read the same raw and JSON-escaped: no quote, backslash, control or non-ASCII character)"
            )
        if lit.original in by_original:
            raise MappingError(f"{lit.source}: original repeats {by_original[lit.original].source}")
        if d in by_disguise:
            raise MappingError(f"{lit.source}: disguise is shared with {by_disguise[d].source}")
        by_disguise[d] = lit
        by_original[lit.original] = lit
    names: set[str] = set()
    for p in ms.patterns:
        _check_regex(p.regex, p.source)
        if p.prefilter is not None:
            _check_regex(p.prefilter, p.source + " prefilter")
        if p.name in names:
            raise MappingError(f"{p.source}: pattern name {p.name} is used twice")
        names.add(p.name)
    for s in ms.strips:
        _check_regex(s.regex, s.source, strip=True)
    # No chains: a disguise must not contain any original (its own included), so a
    # masked text never holds an original and reversal is unambiguous. One
    # Aho-Corasick automaton of the originals scans every disguise: linear in the set's
    # size (comparing each literal with each other took 8 s for 8,000 literals).
    if ms.literals:
        first: dict[str, Literal] = {}  # original -> its first literal (repeats were refused above)
        for lit in ms.literals:
            first.setdefault(lit.original, lit)
        originals = list(first)
        ac = ahocorasick_rs.AhoCorasick(originals, matchkind=ahocorasick_rs.MatchKind.Standard)
        for lit in ms.literals:
            hits = ac.find_matches_as_indexes(lit.disguise)
            if hits:
                other = first[originals[hits[0][0]]]
                raise MappingError(f"{lit.source}: disguise contains the original of {other.source}")
    overlaps.joined(ms.literals)  # nor, joined with a word beside it, spell one
    overlaps.placeholder_shaped(ms.literals, ms.patterns)
    # Nor may a placeholder: "[NAME_12]" must not contain an original either. Every
    # piece of every placeholder's fixed start, in one set: a look-up per literal.
    pieces: dict[str, Pattern] = {}
    for p in ms.patterns:
        head = ph_head(p.name)
        for i in range(len(head)):
            for j in range(i + 1, len(head) + 1):
                pieces.setdefault(head[i:j], p)
    for lit in ms.literals:
        o = lit.original
        p_in = pieces.get(o)
        if p_in is None and ms.patterns and o.strip("0123456789") in ("", "]", "_]"):
            p_in = ms.patterns[0]
        if p_in is not None:
            raise MappingError(f"{lit.source}: original occurs inside the placeholders of {p_in.source}")


# The common words one a line: a disguise of letters alone occurs inside one of them when
# it occurs in this text (a substring search of ~2 KB a disguise; the set of every piece of
# every word held ~210 KiB in every process).
_COMMON_TEXT = "\n".join(sorted(COMMON_WORDS))


def disguise_warnings(ms: MappingSet) -> list[str]:
    """Disguises the model is likely to write on its own: very short ones and common
    words (or parts of them). Each would be "restored" inside the model's own prose
    (a disguise `the` turns "weather" into "weaAcmer"). Names the disguise, never the
    original."""
    out = []
    for lit in ms.literals:
        d = lit.disguise
        low = d.lower()
        if len(d) < SHORT_DISGUISE:
            why = f"is shorter than {SHORT_DISGUISE} characters"
        elif low in COMMON_WORDS:
            why = "is a common word"
        elif low.isalpha() and low in _COMMON_TEXT:
            why = "occurs inside a common word"
        else:
            continue
        out.append(
            f"{lit.source}: disguise {d!r} {why}: the model's own text will have it turned back "
            "into the original on the way back; pick a longer, unusual disguise"
        )
    return out
