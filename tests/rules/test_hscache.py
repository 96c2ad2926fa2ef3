"""The prefilter's compiled databases kept on disk (rules/hscache.py): where, in what
form, and what a write that never finished leaves for prune()."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from disguiselib.rules import hscache, linear

hyperscan = pytest.importorskip("hyperscan")


def test_the_cache_is_where_the_environment_says(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path / "own"))
    assert hscache.cache_dir() == tmp_path / "own"
    monkeypatch.delenv("DISGUISE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hscache.cache_dir() == tmp_path / "xdg" / "disguise"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hscache.cache_dir() == tmp_path / "home" / ".cache" / "disguise"


def _db() -> object:
    return linear._compile([rb"\d{3}-\d{4}"], [0], hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH)


def test_an_entry_is_read_back_with_the_patterns_always_searched(monkeypatch, tmp_path) -> None:
    """A database and the indices of the patterns searched always (those Hyperscan
    refused) come back as they were stored, into a folder made for them."""
    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path / "a" / "b"))
    hscache.store("k1", _db(), (1, 3, 12))
    got = hscache.load("k1")
    assert got is not None and got[1] == (1, 3, 12)
    hits: list[int] = []
    got[0].scan(b"call 555-1234", match_event_handler=lambda i, *_: hits.append(i), scratch=hyperscan.Scratch(got[0]))
    assert hits == [0]
    hscache.store("k2", _db(), ())
    assert hscache.load("k2")[1] == ()  # type: ignore[index]
    assert hscache.load("k3") is None  # none stored: compiled


def test_a_write_that_never_finished_is_left_as_prune_finds_it(monkeypatch, tmp_path) -> None:
    """An entry is written beside its place under a name of its own and moved there
    whole; a write that fails leaves that file in the cache, named as prune() looks for
    (and removes once it is old), never a half entry in an entry's place."""
    monkeypatch.setenv("DISGUISE_CACHE", str(tmp_path))

    def fail(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    hscache.store("k", _db(), ())
    left = [p.name for p in Path(tmp_path).iterdir()]
    assert len(left) == 1 and left[0].startswith(".prefilter-") and hscache.load("k") is None
