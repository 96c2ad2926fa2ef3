"""pytest plugin for mutmut's mutant runs (run.py loads it with `-p fastfirst`).

- A mutant's tests run fastest first, by the durations mutmut measured in its stats
  run: with `-x` the first failing test ends the mutant, so a killed mutant costs its
  cheapest killing test, not a random share of its tests.
- A hypothesis property runs at most MUTATION_MAX_EXAMPLES examples (10) in a mutant's
  run, even where its own `@settings` asks for more: a mutant a property catches at all
  it almost always catches in the first examples. The stats and coverage runs (which
  tests reach which function and line) keep every example; `run.py --check` reruns
  each survivor and timeout in a fresh interpreter, capped the same way.
Nothing here changes what a test checks."""

from __future__ import annotations

import os
from typing import Any

_FULL = ("stats", "mutant_generation", "list_all_tests")


def _in_a_mutant() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST", "") not in _FULL


def pytest_collection_modifyitems(items: list[Any]) -> None:
    if not _in_a_mutant():
        return
    try:
        from mutmut.state import state
    except ImportError:
        return
    took = state().duration_by_test
    items.sort(key=lambda item: took.get(item.nodeid, 0.0))
    cap = int(os.environ.get("MUTATION_MAX_EXAMPLES", "10"))
    from hypothesis import settings

    for item in items:
        fn = getattr(item, "obj", None)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > cap:
            fn._hypothesis_internal_use_settings = settings(own, max_examples=cap)
