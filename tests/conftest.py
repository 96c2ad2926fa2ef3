import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
# The recorded provider traffic lives beside the repository (see its SOURCES.md).
FIXTURES = Path(os.environ.get("DISGUISE_FIXTURES", REPO.parent / "shared" / "fixtures" / "real"))

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"recorded fixtures not found at {FIXTURES}")
    return FIXTURES
