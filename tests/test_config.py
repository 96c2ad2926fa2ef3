"""One valid configuration (config.py): the rules, the scope, what they came from; the
options table every part reads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from disguiselib import config
from disguiselib.core.rules import Session
from disguiselib.errors import MappingError, ScopeError


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_build_config_compiles_the_layers_and_the_scope(tmp_path: Path) -> None:
    m = _write(tmp_path, "literals: {Acme Corp: Zenith Labs}\npatterns:\n  - {name: TICKET, regex: 'TCK-[0-9]{4}'}\n")
    cfg = config.build_config([m], True, ["API.example.com:8443"])
    assert cfg.rules.mappings.files[-1] == m and len(cfg.rules.mappings.files) == 2  # the defaults first
    assert [str(h) for h in cfg.hosts] == ["api.example.com:8443"]
    assert cfg.paths == (m,) and cfg.defaults is True and cfg.snapshot
    assert cfg.rules.mask("Acme Corp TCK-1234", Session()) == "Zenith Labs [TICKET_1]"
    # the literals turned around: finds a disguise the client typed itself
    assert cfg.disguises is not None and cfg.disguises.find("I work at Zenith Labs") == [("literals", 10, 21)]
    alone = config.build_config([m], False, [])
    assert alone.rules.mappings.files == (m,) and alone.hosts == ()


def test_a_set_without_literals_has_no_disguise_finder(tmp_path: Path) -> None:
    m = _write(tmp_path, "patterns:\n  - {name: TICKET, regex: 'TCK-[0-9]{4}'}\n")
    assert config.build_config([m], False, []).disguises is None


def test_what_does_not_load_raises_naming_it(tmp_path: Path) -> None:
    bad = _write(tmp_path, "literals: {Acme: 'a\"b'}", "bad.yaml")
    with pytest.raises(MappingError, match="bad.yaml"):
        config.build_config([bad], False, [])
    with pytest.raises(ScopeError, match="https://x"):
        config.build_config([_write(tmp_path, "literals: {A1: B2B2}")], False, ["https://x"])


def test_describe_and_the_log_name_rules_never_originals(tmp_path: Path, caplog) -> None:
    m = _write(tmp_path, "literals: {Secret Project Aurora: Zenith Labs, Tk: tok}\n")
    cfg = config.build_config([m], False, ["api.example.com"])
    d = cfg.describe()
    assert "2 literals" in d and "api.example.com" in d and "anthropic.messages" in d
    with caplog.at_level(logging.INFO, logger="disguise"):
        config.log_loaded(cfg, "loaded")
    assert "rules loaded" in caplog.text and "Secret Project" not in caplog.text
    assert "'tok'" in caplog.text  # a warning about a short disguise names the disguise
    assert "every host" in config.build_config([m], False, []).describe()


def test_the_options_table() -> None:
    names = [o.name for o in config.OPTIONS]
    assert len(names) == len(set(names)) and config.OPTION_NAMES == frozenset(names)
    assert all(n.startswith("disguise_") and o.help for n, o in zip(names, config.OPTIONS))
    by = {o.name: o for o in config.OPTIONS}
    assert by["disguise_mappings"].default == [config.DEFAULT_MAPPINGS]
    assert by["disguise_fail_open"].default is False and by["disguise_defaults"].default is True
    assert by["disguise_capture_limit"].default == config.CAPTURE_LIMIT
    assert Path(config.DEFAULT_MAPPINGS, "default.yaml").is_file()
