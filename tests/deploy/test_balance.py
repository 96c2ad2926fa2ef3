"""deploy/balance.py as a user runs it (issue 31): with a `python3` that has no
mitmproxy, the CA is still made (by mitmdump's own Python); a mappings path that does
not exist, or an instance that does not start, ends it with one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from integration_util import MITMDUMP, REPO

BALANCE = REPO / "deploy" / "balance.py"
# this test's Python, with mitmproxy hidden: what a system python3 is
WITHOUT_MITMPROXY = "import runpy, sys; sys.modules['mitmproxy'] = None; sys.argv[0] = {path!r}; " \
                    "runpy.run_path({path!r}, run_name='__main__')"  # fmt: skip


def balance(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    code = WITHOUT_MITMPROXY.format(path=str(BALANCE))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)  # fmt: skip


def test_without_mitmproxy_in_this_python_the_ca_is_made_by_mitmdumps(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "deploy"))
    try:
        import balance as b
    finally:
        sys.path.remove(str(REPO / "deploy"))
    assert b._interpreter([str(MITMDUMP)]) == str(Path(sys.executable))  # its `#!` line: this venv's Python
    probe = (f"import sys; sys.modules['mitmproxy'] = None; sys.path.insert(0, {str(REPO / 'deploy')!r}); "
             f"import balance; balance.ensure_ca(__import__('pathlib').Path({str(tmp_path / 'conf')!r}), "
             f"[{str(MITMDUMP)!r}])")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "conf" / "mitmproxy-ca.pem").is_file()


def test_without_mitmproxy_and_without_mitmdump_it_says_what_to_do(tmp_path: Path) -> None:
    mappings = tmp_path / "m"
    mappings.mkdir()
    r = balance("--instances", "1", "--listen", "127.0.0.1:0", "--confdir", str(tmp_path / "conf"),
                "--mitmdump", str(tmp_path / "no-mitmdump"), "--", "--set", f"disguise_mappings={mappings}")  # fmt: skip
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "cannot create mitmproxy's CA" in r.stderr and "deploy/balance.py" in r.stderr


def test_a_missing_mappings_folder_is_named_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "srv" / "disguise" / "mappings"
    for extra in (["--set", f"disguise_mappings={missing}"], [f"--set=disguise_mappings={missing}"]):
        r = balance("--instances", "1", "--listen", "127.0.0.1:0", "--confdir", str(tmp_path / "conf"),
                    "--mitmdump", str(MITMDUMP), "--", *extra)  # fmt: skip
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"disguise_mappings: {missing}: no such file or folder" in r.stderr


def test_an_instance_that_does_not_start_ends_it_in_one_line(tmp_path: Path) -> None:
    mappings = tmp_path / "m"
    mappings.mkdir()
    (mappings / "bad.yaml").write_text("literals: [oops\n")
    r = balance("--instances", "1", "--listen", "127.0.0.1:0", "--confdir", str(tmp_path / "conf"),
                "--mitmdump", str(MITMDUMP), "--logs", str(tmp_path / "logs"), "--",
                "--set", f"disguise_mappings={mappings}")  # fmt: skip
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "exited with" in r.stderr and str(tmp_path / "logs") in r.stderr
    assert "bad.yaml" in (tmp_path / "logs" / "d1.log").read_text()
