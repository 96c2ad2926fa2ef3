"""Errors a user meets in a mapping file name the right place (issue 15): a YAML syntax
error points at the line the parser was reading, not the line after; a regex RE2 refuses
says which construct, where, and what to write instead; a regex RE2 would read
otherwise than it was meant is refused. No message quotes an original."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.errors import MappingError
from disguiselib.rules import linear, mappings, rxsyntax


def refusal(tmp_path: Path, text: str) -> str:
    f = tmp_path / "m.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(MappingError) as e:
        mappings.load(f)
    assert e.value.__cause__ is None  # a chained PyYAML error would quote the line
    return str(e.value)


# -- YAML ------------------------------------------------------------------------------------

# (file text, the line the mistake is on, words the message must hold). "SecretCustomer"
# stands for an original: never quoted.
YAML_MISTAKES = [
    # a key without its colon: PyYAML noticed it on the next line
    ("literals:\n  Acme Corp: Zenith Labs\n  SecretCustomer Nova\n  Other: Thing\n", 3, "has no ':'"),
    ("literals:\n  Acme Corp: Zenith Labs\n  SecretCustomer Nova\n", 3, "has no ':'"),
    # a quote never closed: noticed at the end of the file
    ('literals:\n  SecretCustomer: "Nova\n  b: c\n', 2, "quoted value"),
    ("literals:\n  SecretCustomer: 'Nova\n  b: c\n", 2, "close it"),
    # a [ or { never closed: noticed where the next key begins
    ("literals:\n  Acme Corp: Zenith Labs\n  SecretCustomer: [Nova\n  b: c\n", 3, "[list]"),
    ("literals: {SecretCustomer: Nova\nb: c\n", 1, "{mapping}"),
    # a key whose colon lacks its space runs on into the next line
    ("literals:\n  SecretCustomer:Nova\n  b: c\n", 2, "runs on into line 3"),
    # a backslash escape in double quotes: the line itself
    ('patterns:\n  - name: X\n    regex: "\\d+@SecretCustomer"\n', 3, "single quotes"),
    # a value holding ': ' on its own line
    ("literals:\n  SecretCustomer: Nova: Labs\n", 2, "quote a value"),
    # a line indented less than its siblings
    ("literals:\n    a: bbbb\n  SecretCustomer: Nova\n", 3, "indentation"),
    # a regex that begins with [ unquoted
    ("patterns:\n  - name: X\n    regex: [a-z]+SecretCustomer\n", 3, "quote it"),
    ("literals:\n\tSecretCustomer: Nova\n", 2, "cannot start any token"),
]


@pytest.mark.parametrize("text, line, words", YAML_MISTAKES)
def test_yaml_syntax_error_names_the_line_of_the_mistake(tmp_path: Path, text: str, line: int, words: str) -> None:
    msg = refusal(tmp_path, text)
    assert f"m.yaml: malformed YAML at line {line}," in msg, msg
    assert words in msg, msg
    assert "SecretCustomer" not in msg and "Nova" not in msg


def test_yaml_error_says_where_the_parser_gave_up_too(tmp_path: Path) -> None:
    msg = refusal(tmp_path, "literals:\n  Acme Corp: Zenith Labs\n  SecretCustomer Nova\n  Other: Thing\n")
    assert "at line 3, column 3" in msg and "(noticed at line 4, column 3)" in msg


# -- regexes RE2 refuses ------------------------------------------------------------------------

REFUSED = [
    ("SecretCustomer(?=-\\d)", "lookahead (?=...) at character 14", "`group`"),
    ("SecretCustomer(?!x)", "negative lookahead (?!...) at character 14", "character class"),
    ("(?<=id: )SecretCustomer", "lookbehind (?<=...) at character 0", "`group`"),
    ("(?<!x)SecretCustomer", "negative lookbehind (?<!...) at character 0", "\\b"),
    ("(['\"])SecretCustomer\\1", "backreference \\1 at character 20", "alternatives"),
    ("(?P<q>')SecretCustomer(?P=q)", "backreference (?P=name) at character 22", "alternatives"),
    ("(?<q>')SecretCustomer\\k<q>", "backreference \\k<name> at character 21", "alternatives"),
    ("SecretCustomer\\d++", "possessive quantifier ++ at character 16", "drop the last +"),
    ("SecretCustomer\\d{2}+", "possessive quantifier {2}+ at character 16", "drop the last +"),
    ("(?>SecretCustomer)", "atomic group (?>...) at character 0", "(?:...)"),
    ("SecretCustomer\\Z", "\\Z at character 14", "\\z"),
    ("Secret\\u00e9Customer", "\\u escape at character 6", "\\x{hhhh}"),
    ("(?x) Secret Customer", "verbose flag (?x) at character 0", "without spaces"),
    ("(?(1)a|SecretCustomer)", "conditional", "alternatives"),
    ("SecretCustomer[a-", "a [ at character 14 is never closed", ""),
    ("(SecretCustomer", "a ( at character 0 is never closed", ""),
    ("SecretCustomer{1001}", "repetition count over 1000", ""),
    ("SecretCustomer\\p{Nope}", "unknown Unicode class", "\\p{L}"),
]


@pytest.mark.parametrize("rx, says, instead", REFUSED)
def test_refused_regex_names_the_construct_and_what_to_write(rx: str, says: str, instead: str) -> None:
    with pytest.raises(linear.RegexError) as e:
        linear.check(rx)
    msg = str(e.value)
    assert says in msg, msg
    assert instead in msg, msg
    assert "SecretCustomer" not in msg and "Customer" not in msg  # the rest of the rule is not quoted


def test_a_refusal_in_a_mapping_file_names_file_rule_and_construct(tmp_path: Path) -> None:
    msg = refusal(tmp_path, "patterns:\n  - name: TICKET\n    regex: '(?<=ticket )[0-9]+'\n")
    assert msg.startswith(f"{tmp_path / 'm.yaml'}:2: pattern #1 (TICKET): regex does not compile: lookbehind")
    assert "instead" in msg


@pytest.mark.parametrize("rx", ["[0-9]{,4}", "x{,}", "(?:ab){,2}c"])
def test_open_minimum_repetition_is_refused_not_read_as_text(rx: str) -> None:
    """Python and PCRE2 read `{,n}` as `{0,n}`; RE2 reads the text "{,n}": the rule
    would match far less than meant, silently."""
    assert linear.Regex(rx).search(b"1234") is None or rx.startswith("x")  # what RE2 would have done
    with pytest.raises(linear.RegexError, match=r"literal text \{,\d*\} in RE2, not a repetition; write \{0,"):
        linear.check(rx)


@pytest.mark.parametrize("rx", [r"\{,3}", "[{,3}]", r"\Q{,3}\E", "[]{,3}]"])
def test_open_minimum_as_text_passes(rx: str) -> None:
    linear.check(rx)


# RE2's own words for what it refuses: none of them may reach the user untranslated.
_RAW = ("invalid perl operator", "bad repetition operator", "invalid escape sequence", "missing argument")
_FRAGMENTS = [
    "a", "b", "[0-9]", "\\d", "+", "*", "?", "{2}", "{2,3}", "(", ")", "(?:", "|", "(?=", "(?!", "(?<=", "(?<!",
    "(?>", "\\1", "(?P<n>", "(?P=n)", "\\k<n>", "++", "*+", "?+", "\\Z", "\\z", "\\u0041", "\\h", "\\e", "\\G",
    "\\K", "(?x)", "(?i)", "(?#c)", "(?(1)", "\\N{X}", "\\cA", "\\R",
]  # fmt: skip


@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=8).map("".join))
def test_every_refusal_is_explained(rx: str) -> None:
    try:
        linear.Regex(rx)
    except linear.RegexError as e:
        msg = str(e)
        assert not any(msg.startswith(raw) for raw in _RAW), f"{rx!r}: {msg}"


# -- strip rules: RE2 syntax Python's parser reads otherwise ----------------------------------


@pytest.mark.parametrize(
    "rx, says",
    [
        ("[[:alpha:]]+:", "POSIX classes"),
        ("x[^[:digit:]]", "POSIX classes"),
        ("\\p{L}+:", "Unicode classes"),
        ("\\Q[[\\E", "\\Q...\\E"),
        ("\\x{5b}\\x{5b}", "\\x{...}"),
        ("(?U)\\[\\[.+\\]\\]", "U flag"),
        ("(?<tag>x)y", "(?P<name>...)"),
    ],
)
def test_strip_rule_syntax_python_reads_otherwise_is_refused_saying_so(rx: str, says: str) -> None:
    linear.Regex(rx)  # RE2 takes it
    with pytest.raises(rxsyntax.SyntaxRefused) as e:
        rxsyntax.bounded(rx)
    assert says in str(e.value)
    assert not re.search(r"does not parse|bad escape|unknown extension", str(e.value))


def test_strip_rule_with_a_bracket_in_a_class_still_works() -> None:
    b = rxsyntax.bounded("a[[]:x")  # a `[` in a class: not a POSIX class
    assert linear.Regex(b.regex).search(b"a[:x") == (0, 4)


# -- every refusal, with an original planted where the mistake is ---------------------------------

# Each case: files (name -> text) loaded as one layered set, and what the message must
# say. "Zenith" is an original of the set (or of the rule the file meant to write) and is
# planted in the refused text: no message may hold it (G4: "disguise 'Zenith Labs' contains
# the original of ...", where that original was Zenith).
Z = "Zenith"
EVERY_REFUSAL: dict[str, tuple[dict[str, str], str]] = {
    "no-file": ({}, "no such file or folder"),
    "empty-path": ({"": ""}, "holds an empty path"),  # (`--set disguise_mappings=`: no file is named "")
    "top-level": ({"m.yaml": f"- {Z}\n"}, "top level must be a mapping"),
    "unknown-section": ({"m.yaml": f"{Z} Corp: Qqqq Labs\n"}, "unknown section (the sections are"),
    "literals-not-mapping": ({"m.yaml": f"literals: [{Z}]\n"}, "literals must be a mapping"),
    "not-strings": ({"m.yaml": f"literals:\n  {Z}: [1]\n"}, "original and disguise must both be strings"),
    "empty-original": ({"m.yaml": f"literals:\n  '': {Z}x\n  {Z}: Qqqq\n"}, "original is empty"),
    "patterns-not-list": ({"m.yaml": f"patterns: {{{Z}: 1}}\n"}, "patterns must be a list"),
    "pattern-keys": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, {Z}: 1}}\n"}, "each pattern needs 'name' and 'regex'"),
    "pattern-name": ({"m.yaml": f"patterns:\n  - {{name: {Z}, regex: x}}\n"}, "name must match"),
    "regex-not-string": ({"m.yaml": f"patterns:\n  - {{name: X, regex: [{Z}]}}\n"}, "regex must be a string"),
    "strip-not-list": ({"m.yaml": f"strip: {Z}\n"}, "strip must be a list"),
    "strip-keys": ({"m.yaml": f"strip:\n  - {{regex: x, {Z}: 1}}\n"}, "each strip rule needs 'regex'"),
    "strip-name": ({"m.yaml": f"strip:\n  - {{regex: x, name: {Z}}}\n"}, "name must match"),
    "group": ({"m.yaml": f"patterns:\n  - {{name: X, regex: 'a(b)', group: [{{{Z}: 1}}]}}\n"}, "group must be"),
    "group-name": ({"m.yaml": f"patterns:\n  - {{name: X, regex: 'a(?P<v>b)', group: {Z}}}\n"}, "is not a group of its regex"),
    "validator": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, validator: {Z}}}\n"}, "validator must be one of"),
    "keywords": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, keywords: {Z}}}\n"}, "keywords must be"),
    "window-alone": ({"m.yaml": "patterns:\n  - {name: X, regex: x, window: 5}\n"}, "window only applies"),
    "window": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, keywords: [k], window: {Z}}}\n"}, "window must be"),
    "prefilter": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, prefilter: [{Z}]}}\n"}, "prefilter must be a regex"),
    "fake": ({"m.yaml": f"patterns:\n  - {{name: X, regex: x, fake: {Z}}}\n"}, "fake must be false or one of"),
    "regex": ({"m.yaml": f"patterns:\n  - {{name: X, regex: '{Z}(?P<{Z}'}}\n"}, "regex does not compile"),
    "strip-regex": ({"m.yaml": f"strip:\n  - regex: '(?P<{Z}>x)\\b'\n"}, "strip rule refused"),
    "empty-disguise": ({"m.yaml": f"literals:\n  {Z}: ''\n"}, "disguise is empty"),
    "bad-char": ({"m.yaml": f"literals:\n  {Z}: 'q{Z}\"'\n"}, "(disguises must read the same raw and JSON-escaped"),
    "repeat": ({"a.yaml": f"literals:\n  {Z}: Qqqq\n", "b.yaml": f"literals:\n  {Z}: Wwww\n"}, "original repeats"),
    "shared": ({"m.yaml": f"literals:\n  Acme: x{Z}x\n  {Z}: Qqqq\n  Beta: x{Z}x\n"}, "disguise is shared with"),
    "pattern-twice": ({"m.yaml": "patterns:\n  - {name: X, regex: x}\n  - {name: X, regex: y}\n"}, " is used twice (also "),
    "strip-twice": ({"m.yaml": "strip:\n  - {name: X, regex: x}\n  - {name: X, regex: y}\n"}, " is used twice (also "),
    "chain": ({"m.yaml": f"literals:\n  Acme Corp: {Z} Labs\n  {Z}: Qqqqrst\n"}, "disguise contains the original of"),
    "own": ({"m.yaml": f"literals:\n  {Z}: masked_{Z}\n"}, "disguise contains the original of"),
    "in-placeholder": ({"m.yaml": "literals:\n  MAIL_: Qqqq\npatterns:\n  - {name: EMAIL, regex: x}\n"},
                       "original occurs inside the placeholders of"),
    "joined": ({"m.yaml": f"literals:\n  Acme Corp: {Z} Qq\n  Team {Z}: Tmqqz\n"}, "spells the original of"),
    "placeholder-shaped": ({"m.yaml": f"literals:\n  {Z}: '[EMAIL_1]'\npatterns:\n  - {{name: EMAIL, regex: x}}\n"},
                           "or begins or ends with a piece of one"),
    "key-repeats": ({"m.yaml": f"literals:\n  {Z}: Qqqq\n  {Z}: Wwww\n"}, " (each key once)"),
    "key-not-plain": ({"m.yaml": f"literals:\n  ? [{Z}, x]\n  : Qqqq\n"}, "a key must be a plain value"),
    "not-utf8": ({"m.yaml": f"literals:\n  {Z}\xff: Qqqq\n"}, "not UTF-8 (byte offset "),
    "yaml": ({"m.yaml": f"literals:\n  {Z}: \"Q\\q\"\n"}, "malformed YAML "),
    "yaml-alias": ({"m.yaml": f"literals:\n  a: *{Z}\n"}, "malformed YAML "),
}  # fmt: skip
# Raised where no mapping file's text is (a path, a missing install): no case needed.
NO_TEXT = {"the shipped default mappings are missing", "no mapping files: the defaults are off", "cannot read (",
           "folder has no *.yaml or *.yml files"}  # fmt: skip


def _every_refusal(tmp_path: Path, case: str) -> str:
    files, _ = EVERY_REFUSAL[case]
    folder = tmp_path / case
    folder.mkdir()
    for name, text in files.items():
        if name:
            (folder / name).write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text
                                        else text.encode("latin-1"))  # fmt: skip
    paths = [folder / n if n else n for n in files] or [folder / "missing.yaml"]
    with pytest.raises(MappingError) as e:
        mappings.load_layers(paths, defaults=False)
    assert e.value.__cause__ is None
    return str(e.value)


@pytest.mark.parametrize("case", list(EVERY_REFUSAL))
def test_every_refusal_names_its_reason_and_never_the_text(tmp_path: Path, case: str) -> None:
    msg = _every_refusal(tmp_path, case)
    assert EVERY_REFUSAL[case][1] in msg, msg
    assert Z not in msg.replace(str(tmp_path), ""), msg


def test_the_cases_reach_every_refusal_the_load_has(tmp_path: Path) -> None:
    """Every `raise MappingError(...)` of the load (its longest fixed piece of text) is
    met by a case above: a refusal added later gets a case with an original planted."""
    import ast

    from disguiselib.rules import overlaps, yamlfile

    pieces = []
    for mod in (mappings, yamlfile, overlaps):
        for n in ast.walk(ast.parse(Path(mod.__file__).read_text())):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "MappingError" and n.args:
                fixed = [a.value for a in ast.walk(n.args[0]) if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                pieces.append(max(fixed, key=len).strip(": "))
    said = [_every_refusal(tmp_path, case) for case in EVERY_REFUSAL]
    missed = [p for p in pieces if not any(p in m for m in said) and not any(p.startswith(x) for x in NO_TEXT)]
    assert len(pieces) > 35 and not missed, missed
