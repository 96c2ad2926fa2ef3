"""The tests' mitmdumps come from a fork server (tests/mitmdump_zygote.py): one is seen as
an exec'd one is, by the harness and the tests that read it — its own pid, its output
until it ends, its exit status (a startup error's 1, -N for a signal), its working
folder and environment."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from integration_util import (
    MITMDUMP,
    REPO,
    FakeUpstream,
    Forked,
    Mitmdump,
    clean_env,
    mitmdump_cmd,
    run_mitmdump,
    start_mitmdump,
    write_mappings,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
    pytest.mark.skipif(bool(os.environ.get("DISGUISE_TEST_EXEC")), reason="DISGUISE_TEST_EXEC: no fork server"),
]


def test_a_startup_error_reads_as_from_an_exec_d_mitmdump(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("literals:\n  Acme Corp: [Zenith Labs\n", encoding="utf-8")
    cmd = mitmdump_cmd(9, tmp_path / "conf", bad)
    forked = run_mitmdump(cmd)
    p = subprocess.run(cmd, cwd=REPO, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert forked[0] == p.returncode == 1, (forked, p.stdout + p.stderr)
    last = lambda out: [x.split("] ", 1)[1] for x in out.splitlines() if "malformed YAML" in x]  # after the time
    assert last(forked[1]) == last(p.stdout + p.stderr) != [], forked[1]


def test_a_running_one_has_its_own_pid_folder_and_environment_and_dies_of_its_signal(tmp_path: Path) -> None:
    with FakeUpstream() as up:
        env = {**clean_env(), "DISGUISE_ENGINE": "python"}  # the addon names its engine, and why
        m = Mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", write_mappings(tmp_path, {"literals": {"Acme Corp": "Zenith Labs"}})),
                     env=env)  # fmt: skip
        try:
            assert isinstance(m.proc, Forked)
            assert m.proc.pid != os.getpid() and m.proc.poll() is None
            assert Path(f"/proc/{m.proc.pid}/cwd").resolve() == REPO
            deadline = time.monotonic() + 60  # the rules load (and the engine is named) after the listening line
            while "disguise: engine: " not in m.output and time.monotonic() < deadline:
                time.sleep(0.1)
            m.proc.send_signal(signal.SIGKILL)
            assert m.proc.wait(30) == -signal.SIGKILL
        finally:
            m.stop()
    assert "listening at" in m.output  # read until the pipe ended
    assert "engine: python (DISGUISE_ENGINE=python)" in m.output, m.output


def test_an_environment_of_another_interpreter_setting_is_exec_d(tmp_path: Path) -> None:
    env = {**clean_env(), "PYTHONHASHSEED": "7"}
    p = start_mitmdump([str(MITMDUMP), "--version"], env)
    try:
        assert isinstance(p, subprocess.Popen)
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and "Mitmproxy" in out, out
    finally:
        if p.poll() is None:
            p.kill()
