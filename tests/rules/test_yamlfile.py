"""Mapping files as YAML documents (rules/yamlfile.py): lines remembered, a repeated key
refused by line, syntax errors placed where the mistake is, never quoting the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from disguiselib.errors import MappingError
from disguiselib.rules.yamlfile import Map, Seq, read_yaml


def write(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "m.yaml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_mappings_and_lists_remember_their_lines(tmp_path: Path) -> None:
    doc = read_yaml(write(tmp_path, "# c\nliterals:\n  Acme Corp: Zenith Labs\npatterns:\n  - name: A\n    regex: a\n"))
    assert isinstance(doc, Map) and doc.line == 2 and doc.key_lines == {"literals": 2, "patterns": 4}
    assert doc["literals"].key_lines == {"Acme Corp": 3}
    pats = doc["patterns"]
    assert isinstance(pats, Seq) and pats.item_lines == [5] and pats[0].line == 5
    assert read_yaml(write(tmp_path, "")) is None


def test_a_repeated_key_is_refused_by_line_without_quoting_an_original(tmp_path: Path) -> None:
    with pytest.raises(MappingError) as e:
        read_yaml(write(tmp_path, "literals:\n  Secret Name: A1\n  Secret Name: B2\n"))
    assert "m.yaml:3: key repeats line 2 (each key once)" in str(e.value) and "Secret" not in str(e.value)
    with pytest.raises(MappingError, match="key 'literals' repeats line 1"):
        read_yaml(write(tmp_path, "literals: {}\nliterals: {}\n"))


@pytest.mark.parametrize(("text", "where", "what"), [
    ('literals:\n  "Secret Name: A1\n  x: y\n', "at line 2, column 3", "quoted value that starts here"),
    ("literals:\n  Secret Name A1\n  x: y\n", "at line 2", "runs on into line 3"),
    ("patterns:\n  - regex: \"\\d+\"\n", "at line 2", "write a regex in single quotes"),
    ("a: [1, 2\nb: c\n", "at line 1", "[list] that starts here"),
])  # fmt: skip
def test_syntax_errors_say_where_the_mistake_is(tmp_path: Path, text: str, where: str, what: str) -> None:
    with pytest.raises(MappingError) as e:
        read_yaml(write(tmp_path, text))
    msg = str(e.value)
    assert "malformed YAML " + where in msg and what in msg and "Secret" not in msg


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="not UTF-8 \\(byte offset 10\\)"):
        read_yaml(write(tmp_path, b"literals: \xff"))
    with pytest.raises(MappingError, match="cannot read"):
        read_yaml(tmp_path / "missing.yaml")
