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
