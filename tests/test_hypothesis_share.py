"""DISGUISE_EXAMPLES (tests/conftest.py): a share of every property's examples, for the
second interpreter's run in CI and the Python engine's rerun."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MIN_EXAMPLES, pytest_collection_modifyitems


def properties() -> tuple[list[int], object, object]:
    calls: list[int] = []

    @settings(max_examples=200, deadline=None, database=None)
    @given(st.integers())
    def own(n: int) -> None:
        calls.append(n)

    @given(st.integers())
    def profile(n: int) -> None:
        calls.append(n)

    return calls, own, profile


def test_every_property_runs_its_share_of_examples_once_scaled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, own, profile = properties()
    before = profile._hypothesis_internal_use_settings.max_examples  # type: ignore[attr-defined]
    monkeypatch.setenv("DISGUISE_EXAMPLES", "0.25")
    # a parametrized test: several items, one function
    pytest_collection_modifyitems([SimpleNamespace(obj=own), SimpleNamespace(obj=own), SimpleNamespace(obj=profile)])  # type: ignore[list-item]
    assert own._hypothesis_internal_use_settings.max_examples == 50  # type: ignore[attr-defined]
    assert profile._hypothesis_internal_use_settings.max_examples == max(MIN_EXAMPLES, round(before * 0.25))  # type: ignore[attr-defined]
    own()  # type: ignore[operator]
    assert 0 < len(calls) <= 50  # hypothesis stops early only when it has run out of examples


def test_the_whole_count_without_it_and_a_bad_share_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _, own, _ = properties()
    monkeypatch.delenv("DISGUISE_EXAMPLES", raising=False)
    pytest_collection_modifyitems([SimpleNamespace(obj=own)])  # type: ignore[list-item]
    assert own._hypothesis_internal_use_settings.max_examples == 200  # type: ignore[attr-defined]
    for bad in ("half", "0", "2"):
        monkeypatch.setenv("DISGUISE_EXAMPLES", bad)
        with pytest.raises(pytest.UsageError, match="DISGUISE_EXAMPLES"):
            pytest_collection_modifyitems([SimpleNamespace(obj=own)])  # type: ignore[list-item]
