"""Loading and every refusal of contract §2, with file, rule and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from disguiselib.errors import MappingError
from disguiselib.rules import mappings


def load_text(tmp_path: Path, text: str) -> mappings.MappingSet:
    f = tmp_path / "m.yaml"
    f.write_text(text)
    return mappings.load(f)


def test_default_mappings_load_and_are_useful() -> None:
    ms = mappings.load(REPO / "mappings")
    names = {p.name for p in ms.patterns}
    assert {"EMAIL", "ANTHROPIC_KEY", "OPENAI_KEY", "GITHUB_TOKEN", "AWS_ACCESS_KEY",
            "PRIVATE_KEY", "JWT", "SLACK_TOKEN"} <= names
    assert ms.strips


def test_example_literals_load() -> None:
    assert mappings.load(REPO / "examples" / "literals.yaml").literals


def test_folder_is_merged_in_file_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text("literals: {Beta: B2}\n")
    (tmp_path / "a.yaml").write_text("literals: {Alpha: A1}\n")
    (tmp_path / "ignored.txt").write_text("not yaml: [")
    ms = mappings.load(tmp_path)
    assert [lit.original for lit in ms.literals] == ["Alpha", "Beta"]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("literals: {Acme: ''}", "disguise is empty"),
        ("literals: {Acme: 'a\"b'}", "quote, backslash"),
        ("literals: {Acme: 'a\\\\b'}", "quote, backslash"),
        ("literals: {Acme: 'Zénith'}", "non-ASCII"),
        ("literals: {Acme: \"a\\tb\"}", "control"),
        ("literals: {Acme: Z, Beta: Z}", "shared with"),
        ("literals: {Acme: Zeta, Zet: Q}", "contains the original"),
        ("literals: {Acme: AcmeX}", "contains the original"),
        ("patterns: [{name: X, regex: '(unclosed'}]", "does not compile"),
        ("patterns: [{name: X, regex: 'a*'}]", "empty string"),
        ("strip: [{regex: '\\s*'}]", "empty string"),
        ("patterns: [{name: lower, regex: 'a'}]", "name must match"),
        ("literals: [a, b]", "literals must be a mapping"),
        ("literals: {Acme: [1]}", "must both be strings"),
        ("bogus: 1", "unknown section"),
        ("literals: {a: b", "malformed YAML"),
    ],
)
def test_refusals_name_file_rule_and_reason(tmp_path: Path, text: str, reason: str) -> None:
    with pytest.raises(MappingError) as e:
        load_text(tmp_path, text)
    assert reason in str(e.value)
    assert "m.yaml" in str(e.value)


def test_refusal_never_quotes_the_original(tmp_path: Path) -> None:
    with pytest.raises(MappingError) as e:
        load_text(tmp_path, "literals: {SecretCustomer: ''}")
    assert "SecretCustomer" not in str(e.value)


def test_missing_path() -> None:
    with pytest.raises(MappingError, match="no such file"):
        mappings.load("/nonexistent/mappings")


def test_malformed_yaml_names_the_position_not_the_line(tmp_path: Path) -> None:
    with pytest.raises(MappingError) as e:
        load_text(tmp_path, "literals:\n  SecretCustomer: [unclosed\n")
    msg = str(e.value)
    assert "malformed YAML at line" in msg and "SecretCustomer" not in msg
    assert e.value.__cause__ is None  # the chained PyYAML error would quote it too


# -- issue 6: duplicates, lines, layers, warnings ---------------------------------------------


@pytest.mark.parametrize(
    "text, reason",
    [
        ("literals:\n  Acme: Zeta\n  Acme: Other\n", "m.yaml:3: key repeats line 2"),
        ("literals:\n  Acme: Zeta\nliterals:\n  Beta: Q1Q1\n", "m.yaml:3: key 'literals' repeats line 1"),
        ("patterns:\n  - name: X\n    regex: a\n    regex: b\n", "m.yaml:4: key 'regex' repeats line 3"),
        ("literals:\n  ok: fine1\n  Acme: ''\n", "m.yaml:3: literal #2: disguise is empty"),
        ("patterns:\n- name: X\n  regex: 'a'\n- name: Y\n  regex: '('\n", "m.yaml:4: pattern #2 (Y): regex does not compile"),
        ("patterns:\n- {name: X, regex: a}\n- {name: X, regex: b}\n", "m.yaml:3: pattern #2 (X): pattern name X is used twice"),
        ("strip:\n- {name: T, regex: a}\n- {name: T, regex: b}\n", "strip name T is used twice"),
        ("strip:\n- {regex: a, bogus: 1}\n", "m.yaml:2: strip #1"),
    ],
)
def test_repeats_refused_and_errors_carry_the_line(tmp_path: Path, text: str, reason: str) -> None:
    with pytest.raises(MappingError) as e:
        load_text(tmp_path, text)
    assert reason in str(e.value)
    assert "Other" not in str(e.value)  # a repeated key may be an original: never quoted


def test_layers_defaults_first_then_user_files(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("literals: {Acme Corp: Zenith Labs}\n")
    ms = mappings.load_layers([mine])
    assert ms.files == (str(mappings.DEFAULTS_FILE), str(mine))
    assert "EMAIL" in {p.name for p in ms.patterns} and ms.literals[0].original == "Acme Corp"
    assert mappings.load_layers([mine], defaults=False).patterns == ()


def test_user_rules_replace_shipped_ones_by_name_in_place(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("patterns: [{name: EMAIL, regex: 'bob@x'}]\nstrip: [{name: REPLY_TO, regex: 'zz'}]\n")
    default = mappings.load_layers([], True)
    ms = mappings.load_layers([mine])
    names = [p.name for p in ms.patterns]
    assert names == [p.name for p in default.patterns]  # same place, same order
    email = ms.patterns[names.index("EMAIL")]
    assert email.regex == "bob@x" and "mine.yaml:1" in email.source
    assert [s.regex for s in ms.strips] == ["zz"]
    assert any("pattern EMAIL" in r and "replaced by" in r for r in ms.replaced)


def test_defaults_off_leaves_default_yaml_out_of_a_folder() -> None:
    try:
        ms = mappings.load_layers([REPO / "mappings"], defaults=False)
    except MappingError as e:  # a clean checkout: default.yaml is all there is
        assert "no mapping files" in str(e)
        return
    assert str(mappings.DEFAULTS_FILE) not in ms.files  # a developer's local*.yaml only


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("literals: {Acme Corp: Zenith Labs}\n")
    ms = mappings.load_layers([mine, tmp_path, str(mine)])
    assert len(ms.literals) == 1


def test_empty_and_ignored_files_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("# nothing yet\n")
    (tmp_path / "b.yaml.bak").write_text("literals: {Acme: Zeta1}\n")
    (tmp_path / "c.yml").write_text("literals: {}\n")
    ms = mappings.load_layers([tmp_path])
    assert any("a.yaml: empty" in w for w in ms.warnings)
    assert any("c.yml: empty" in w for w in ms.warnings)
    assert any("b.yaml.bak: ignored" in w for w in ms.warnings)


def test_short_and_common_disguises_are_warned_about(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("literals: {Acme: the, Beta Inc: weather, Gamma: ather, Delta: Zyxwvut}\n")
    ws = "\n".join(mappings.load_layers([tmp_path / "m.yaml"], defaults=False).warnings)
    assert "'the' is shorter than 4" in ws
    assert "'weather' is a common word" in ws
    assert "'ather' occurs inside a common word" in ws
    assert "Zyxwvut" not in ws
    assert "Acme" not in ws and "Beta Inc" not in ws  # warnings name the disguise only


def test_snapshot_sees_edits_new_files_and_removals(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("literals: {Acme: Zeta1}\n")
    s0 = mappings.snapshot([tmp_path])
    assert mappings.snapshot([tmp_path]) == s0
    f.write_text("literals: {Acme: Zeta2, Beta: Q2Q2}\n")
    s1 = mappings.snapshot([tmp_path])
    assert s1 != s0
    (tmp_path / "b.yml").write_text("")
    s2 = mappings.snapshot([tmp_path])
    assert s2 != s1
    f.unlink()
    assert mappings.snapshot([tmp_path]) != s2


def test_snapshot_holds_each_thing_load_layers_would_read(tmp_path: Path) -> None:
    """The shipped defaults (only when asked for) and every path, a folder's listing
    (a file that is no mapping file too: a rename to .yaml is a new listing), a single
    file's size, mtime and inode, and a missing path as missing."""
    from disguiselib.shipped import DEFAULTS_FILE

    d, f, missing = tmp_path / "maps", tmp_path / "one.yaml", tmp_path / "nope.yaml"
    d.mkdir()
    (d / "a.yaml").write_text("literals: {Acme: Zeta1}\n")
    f.write_text("literals: {Beta: Q2Q2}\n")
    with_defaults = mappings.snapshot([d, f, missing], True)
    alone = mappings.snapshot([d, f, missing], False)
    st = DEFAULTS_FILE.stat()
    assert with_defaults[0] == (str(DEFAULTS_FILE), st.st_mtime_ns, st.st_size, st.st_ino)
    assert with_defaults[1:] == alone
    assert mappings.snapshot([d, f, missing]) == with_defaults  # as load_layers: the defaults unless told
    fs = f.stat()
    assert alone == (
        (str(d), ("a.yaml",)),
        (str(d / "a.yaml"), *((x := (d / "a.yaml").stat()).st_mtime_ns, x.st_size, x.st_ino)),
        (str(f), fs.st_mtime_ns, fs.st_size, fs.st_ino),
        (str(missing), None),
    )
    (d / "notes.txt").write_text("not a mapping file")
    assert mappings.snapshot([d], False) == ((str(d), ("a.yaml", "notes.txt")), alone[1])
    f.write_text("literals: {Beta: Q2Q2, Gamma: R3R3}\n")
    assert mappings.snapshot([f], False) != alone[2:3]


class _Counted(str):
    """A disguise that counts how often it is searched with `in`."""

    calls = 0

    def __contains__(self, other: object) -> bool:
        _Counted.calls += 1
        return str.__contains__(self, other)  # type: ignore[operator]


def test_validate_reads_each_disguise_a_bounded_number_of_times() -> None:
    """Issue 27: the no-chain check compared every literal with every other (2k literals
    2.7 s, 100k never loaded). Counting work, not time: each disguise is searched with
    `in` a bounded number of times, whatever the number of literals."""
    from disguiselib.rules import mappings as m

    for n in (200, 800):
        lits = tuple(m.Literal(f"Customer {i:05d} Ltd", _Counted(f"Zq{i:05d}xk"), f"f:{i}: literal #{i}")
                     for i in range(n))  # fmt: skip
        _Counted.calls = 0
        m.validate(m.MappingSet(literals=lits))
        assert _Counted.calls <= 4 * n, (n, _Counted.calls)


def test_a_chain_is_still_found_among_many_literals() -> None:
    from disguiselib.rules import mappings as m

    lits = [m.Literal(f"Customer {i:05d} Ltd", f"Zq{i:05d}xk", f"f:{i}: literal #{i + 1}") for i in range(3000)]
    lits.append(m.Literal("Kestrel", "Zq01234xk Customer 00017 Ltd", "f:9999: literal #3001"))
    with pytest.raises(MappingError, match=r"literal #3001: disguise contains the original of f:17: literal #18"):
        m.validate(m.MappingSet(literals=tuple(lits)))


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_path_is_refused_not_read_as_the_working_directory(empty: str, tmp_path, monkeypatch) -> None:
    (tmp_path / "stray.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mappings.MappingError, match="holds an empty path"):
        mappings.load_layers([empty])
