import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
# Recorded provider traffic, with its provenance in tests/fixtures/real/SOURCES.md.
# DISGUISE_FIXTURES points the tests at another copy.
FIXTURES = Path(os.environ.get("DISGUISE_FIXTURES") or REPO / "tests" / "fixtures" / "real")

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


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"recorded fixtures not found at {FIXTURES}")
    return FIXTURES
