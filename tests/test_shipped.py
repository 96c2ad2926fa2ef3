"""Where the shipped files are (shipped.py): in a checkout, the repository's own."""

from __future__ import annotations

from conftest import REPO
from disguiselib import shipped


def test_in_a_checkout_the_repositorys_files_are_used() -> None:
    assert shipped.CHECKOUT == REPO
    assert shipped.DEFAULTS_FILE == REPO / "mappings" / "default.yaml" and shipped.DEFAULTS_FILE.is_file()
    assert shipped.USER_MAPPINGS == (str(REPO / "mappings"),)
    assert shipped.SCRIPT.is_file() and shipped.SCRIPT.parent.parent == shipped.PACKAGE
