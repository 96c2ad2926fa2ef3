"""Fixtures shared by the rule-set tests."""

from __future__ import annotations

import pytest

from disguiselib.config import build_config
from disguiselib.rules.rules import Rules


@pytest.fixture(scope="session")
def acme_rules(tmp_path_factory) -> Rules:
    """A literal (`Acme Corp` → `Zenith Labs`), with the shipped patterns (SECRET,
    PASSWORD, PHONE, EMAIL, ...) beside it."""
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    return build_config([str(d / "m.yaml")], True, []).rules
