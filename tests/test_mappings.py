"""Loading and every refusal of contract §2, with file, rule and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from disguiselib import mappings
from disguiselib.errors import MappingError


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
