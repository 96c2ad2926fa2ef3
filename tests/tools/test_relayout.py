"""tools/relayout.py, the folder move the lead runs after the merge (issue 25): every
module of core/ and providers/ and every test file has its place, a module no rule places
stops it before anything changes, and on a clone of this commit it produces a tree whose
floors, mirror and vocabulary checks hold; run again, it does nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import relayout  # noqa: E402


def test_every_module_and_test_file_has_a_place() -> None:
    if relayout.laid_out(REPO):
        assert relayout.run(REPO, check_only=True) is None  # idempotent: nothing left to move
        return
    plan = relayout.make_plan(REPO)
    pkg = REPO / "addon" / "disguiselib"
    for d in relayout.OLD_DIRS:
        for p in (pkg / d).glob("*.py"):
            if p.name != "__init__.py":
                assert p.relative_to(pkg).as_posix() in plan.modules
        for p in (REPO / "tests" / d).glob("test_*.py"):
            assert p.relative_to(REPO / "tests").as_posix() in plan.tests
    assert {Path(n).parts[0] for n in plan.modules.values()} == {"wire", "rules", "base", "apis"}
    # another branch's API lands by its prefix; Cohere in its own package
    assert relayout._match("providers/cohere_*.py", "apis/cohere/{}.py", "providers/cohere_stream.py") == (
        "apis/cohere/stream.py"
    )


def _clone(tmp_path: Path) -> Path:
    dst = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(REPO), str(dst)], check=True)
    return dst


@pytest.mark.skipif(relayout.laid_out(REPO), reason="already laid out")
def test_a_module_no_rule_places_stops_it_before_anything_moves(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    (repo / "addon/disguiselib/providers/mystery.py").write_text('"""?"""\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], cwd=repo, check=True)
    with pytest.raises(SystemExit, match="providers/mystery.py"):
        relayout.run(repo)
    assert (repo / "addon/disguiselib/providers/anthropic.py").exists() and not (repo / "addon/disguiselib/apis").exists()


@pytest.mark.skipif(relayout.laid_out(REPO), reason="already laid out")
def test_a_dirty_tree_is_refused(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    (repo / "README.md").write_text("edited\n")
    with pytest.raises(SystemExit, match="uncommitted"):
        relayout.run(repo)


@pytest.mark.skipif(relayout.laid_out(REPO), reason="already laid out")
@pytest.mark.skipif(shutil.which("git") is None, reason="git")
def test_on_a_clone_the_new_tree_holds_its_floors_and_a_second_run_does_nothing(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    plan = relayout.run(repo)
    assert plan is not None and not (repo / "addon/disguiselib/core").exists()
    assert not (repo / "addon/disguiselib/providers").exists() and not (repo / "tests/providers").exists()
    assert (repo / "addon/disguiselib/base/fields.py").exists() and (repo / "tests/wire/test_sse.py").exists()
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_architecture.py",
         "tests/apis/openai/test_providers.py"],
        cwd=repo, capture_output=True, text=True, timeout=600,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{repo / 'addon'}", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "laid out"], cwd=repo,
                   check=True)  # fmt: skip
    assert relayout.run(repo) is None
