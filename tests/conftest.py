import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
# Recorded provider traffic, with its provenance in tests/fixtures/real/SOURCES.md.
# DISGUISE_FIXTURES points the tests at another copy.
FIXTURES = Path(os.environ.get("DISGUISE_FIXTURES") or REPO / "tests" / "fixtures" / "real")

# The prefilter databases the tests compile (rules/hscache.cache_dir) are kept in the
# checkout's .cache/hsdb, not in the user's cache, in this process and in every
# mitmdump it starts: the suite compiles dozens of rule sets, and the cache keeps only
# the ones used last (hscache.CACHE_KEEP, CACHE_BYTES), so they would push out the
# user's own. A DISGUISE_CACHE set outside (mutation/run.py's) is left as given.
os.environ.setdefault("DISGUISE_CACHE", str(REPO / ".cache" / "hsdb"))

# CI runs the suite on two interpreters side by side within 15 minutes: 100 examples a
# property there as here (200 took the run to 19 minutes; the CPU since won back, by
# starting the masking worker lazily in the tests' mitmdumps and compiling the engine
# less often, is the margin: not enough for 200 examples, nor for the install tests on
# both interpreters, .ci/run).
# Tests that need more say so.
settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
# `make test-python-engine`: the property tests again with the Python engine, after the
# whole suite ran them with the compiled one (test_both_engines_give_the_same_bytes and
# test_readpass hold the two to the same bytes)
settings.register_profile("reference", max_examples=50, deadline=None)
# `make mutation` (mutation/run.py): a few examples per property, per mutant
settings.register_profile("mutation", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# DISGUISE_EXAMPLES=0.5: every property runs that share of its examples, its own
# @settings' count as well as the profile's (at least MIN_EXAMPLES). .ci/run gives the
# whole count on one interpreter and a share on the other, where the same properties run
# again over other random examples (what a second full count found was not worth its
# ~200 s of CPU in a 15-minute run), and a share to the Python engine's rerun.
MIN_EXAMPLES = 10


def examples_share() -> float:
    raw = os.environ.get("DISGUISE_EXAMPLES", "1")
    try:
        share = float(raw)
    except ValueError:
        raise pytest.UsageError(f"DISGUISE_EXAMPLES={raw!r}: a number, the share of each property's examples") from None
    if not 0 < share <= 1:
        raise pytest.UsageError(f"DISGUISE_EXAMPLES={raw!r}: a share, above 0 and at most 1")
    return share


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    share = examples_share()
    if share == 1:
        return
    done: set[int] = set()  # a parametrized test's items share one function: scaled once
    for item in items:
        fn = getattr(item, "obj", None)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if own is None or id(fn) in done:
            continue
        done.add(id(fn))
        fn._hypothesis_internal_use_settings = settings(own, max_examples=max(MIN_EXAMPLES, round(own.max_examples * share)))  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"recorded fixtures not found at {FIXTURES}")
    return FIXTURES
