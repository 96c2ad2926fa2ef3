"""The span walk the masker runs over a body: the compiled one (wire/_spanwalk.pyx) or
the reference (jsonspan.walk), chosen once, at import, as CPython's json chooses its
scanner (`c_make_scanner or py_make_scanner`).

The compiled walk is there when the compiled engine is (disguiselib/engine.py builds it
with the engine's modules and loads it only when its source is the one compiled); with
DISGUISE_ENGINE=python, or where it was not built, jsonspan.walk runs. Both give the
same edits, marks, where and at for every text (tests/wire/test_spanwalk.py).
"""

from __future__ import annotations

from . import jsonspan

try:
    from ._spanwalk import walk as c_walk  # type: ignore[import-not-found]
except ImportError:
    c_walk = None

py_walk = jsonspan.walk
walk = c_walk or py_walk

__all__ = ["c_walk", "py_walk", "walk"]
