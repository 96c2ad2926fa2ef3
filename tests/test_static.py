"""Static checks in the test suite (so CI runs them on both mitmproxy versions): the
whole of addon/ type-checks with mypy, and ruff finds nothing in the code, the tests
and the bench."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    exe = BIN / tool if (BIN / tool).exists() else shutil.which(tool)
    assert exe, f"{tool} is not installed (pyproject's test extra installs it)"
    return subprocess.run([str(exe), *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_mypy_on_the_whole_addon() -> None:
    r = _run("mypy", "addon/disguiselib", "addon/disguise.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff() -> None:
    r = _run("ruff", "check", "addon", "tests", "bench", "examples")
    assert r.returncode == 0, r.stdout + r.stderr
