"""The command line (cli.py, `python -m disguiselib`): audit, share and show on flow files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import tflow, tutils

from conftest import REPO
from disguiselib import cli
from disguiselib.inspect.record import META, SIDES, side


def write(tmp_path: Path, upstream_sent: bytes) -> tuple[str, str]:
    (tmp_path / "m.yaml").write_text("literals: {Acme Corp: Zenith Labs}\n")
    f = tflow.tflow(resp=tutils.tresp(content=b'{"content": [{"type": "text", "text": "Acme Corp"}]}'))
    f.request.method, f.request.host, f.request.path = "POST", "api.anthropic.com", "/v1/messages"
    f.request.headers["x-api-key"] = "sk-ant-secret"
    f.request.content = upstream_sent
    f.response.headers["content-type"] = "application/json"
    f.metadata[META] = {"api": "anthropic.messages", "masked": 1, "counts": {"literals": 1}}
    f.metadata[SIDES] = {"client_request": side(b'{"messages": "Acme Corp"}'),
                         "upstream_response": side(b'{"content": [{"type": "text", "text": "Zenith Labs"}]}')}  # fmt: skip
    p = tmp_path / "s.flows"
    with open(p, "wb") as fo:
        io.FlowWriter(fo).add(f)
    return str(p), str(tmp_path / "m.yaml")


def test_audit_passes_a_clean_session_and_fails_a_leak_without_printing_it(tmp_path: Path, capsys) -> None:
    flows, m = write(tmp_path, b'{"messages": [{"role": "user", "content": "Zenith Labs"}]}')
    assert cli.main(["--mappings", m, "audit", flows]) == 0
    flows, m = write(tmp_path, b'{"messages": [{"role": "user", "content": "Acme Corp"}]}')
    assert cli.main(["--mappings", m, "audit", flows]) == 1
    out = capsys.readouterr().out
    assert "LEAK upstream" in out and "Acme Corp" not in out
    assert cli.main(["--mappings", m, "audit", "--show-originals", flows]) == 1
    assert "Acme Corp" in capsys.readouterr().out  # only when asked


def test_share_writes_the_provider_side_or_refuses(tmp_path: Path, capsys) -> None:
    flows, m = write(tmp_path, b'{"messages": [{"role": "user", "content": "Zenith Labs"}]}')
    out = tmp_path / "shared.flows"
    assert cli.main(["--mappings", m, "share", flows, str(out)]) == 0
    assert "1 flows written" in capsys.readouterr().out and out.exists()
    (g,) = io.read_flows_from_paths([str(out)])
    assert "x-api-key" not in g.request.headers
    leaky, m = write(tmp_path, b'{"messages": [{"role": "user", "content": "Acme Corp"}]}')
    assert cli.main(["--mappings", m, "share", leaky, str(tmp_path / "no.flows")]) == 1
    assert "would not pass the audit" in capsys.readouterr().err and not (tmp_path / "no.flows").exists()


def test_show_prints_both_views_of_each_side(tmp_path: Path, capsys) -> None:
    flows, m = write(tmp_path, b'{"messages": [{"role": "user", "content": "Zenith Labs"}]}')
    assert cli.main(["--mappings", m, "show", flows, "1"]) == 0
    out = capsys.readouterr().out
    assert "===== flow 1 request: view 'Disguise' =====" in out
    assert "===== flow 1 response: view 'Disguise other side' =====" in out and "Zenith Labs" in out


def test_bad_mappings_and_bad_files_exit_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("literals: {Acme: 'a\"b'}")
    with pytest.raises(SystemExit, match="disguise: mappings: .*bad.yaml"):
        cli.main(["--mappings", str(tmp_path / "bad.yaml"), "audit", "x.flows"])
    (tmp_path / "junk.flows").write_bytes(b"not a flow file")
    with pytest.raises(SystemExit, match="cannot read flows"):
        cli.main(["--mappings", str(REPO / "mappings"), "audit", str(tmp_path / "junk.flows")])


def test_python_m_disguiselib_runs_the_cli() -> None:
    r = subprocess.run([sys.executable, "-m", "disguiselib", "--help"], capture_output=True, text=True, timeout=120,
                       cwd=REPO, env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 0 and "audit" in r.stdout and "share" in r.stdout
