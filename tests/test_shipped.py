"""Where the shipped files are (shipped.py): in a checkout, the repository's own."""

from __future__ import annotations

from conftest import REPO
from disguiselib import shipped


def test_in_a_checkout_the_repositorys_files_are_used() -> None:
    assert shipped.CHECKOUT == REPO
    assert shipped.DEFAULTS_FILE == REPO / "mappings" / "default.yaml" and shipped.DEFAULTS_FILE.is_file()
    assert shipped.USER_MAPPINGS == (str(REPO / "mappings"),)
    assert shipped.SCRIPT.is_file() and shipped.SCRIPT.parent.parent == shipped.PACKAGE


def test_an_installed_package_finds_the_working_directorys_mappings(tmp_path, monkeypatch) -> None:
    """Issue 31: after a non-editable `pip install .`, `disguise run` in the checkout must
    not ignore mappings/local.yaml. A folder of user files counts; a copy of the shipped
    defaults alone, an empty folder or none do not."""
    monkeypatch.chdir(tmp_path)
    assert shipped.working_dir_mappings() == ()
    folder = tmp_path / "mappings"
    folder.mkdir()
    assert shipped.working_dir_mappings() == ()
    (folder / "default.yaml").write_bytes(shipped.DEFAULTS_FILE.read_bytes())
    (folder / "notes.txt").write_text("not a mapping file")
    assert shipped.working_dir_mappings() == ()
    (folder / "local.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    assert shipped.working_dir_mappings() == (str(folder),)
    (folder / "local.yaml").unlink()
    (folder / "default.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")  # edited: the user's now
    assert shipped.working_dir_mappings() == (str(folder),)


def test_a_folders_copy_of_the_shipped_defaults_is_not_read_twice(tmp_path) -> None:
    from disguiselib.rules import mappings

    (tmp_path / "default.yaml").write_bytes(shipped.DEFAULTS_FILE.read_bytes())
    (tmp_path / "local.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    files, _ = mappings.resolve_files([str(tmp_path)], defaults=True)
    assert files == [shipped.DEFAULTS_FILE, tmp_path / "local.yaml"]
    assert not mappings.load_layers([str(tmp_path)], True).replaced
    files, _ = mappings.resolve_files([str(tmp_path)], defaults=False)  # defaults off: the copy is the user's
    assert files == [tmp_path / "default.yaml", tmp_path / "local.yaml"]
