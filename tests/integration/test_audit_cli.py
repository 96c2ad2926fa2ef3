"""The audit command on captures real mitmdump runs wrote (the official anthropic SDK as
the client, a fake provider that echoes the prompt): issue 15's cases 8 and 12, the exit
statuses a CI gate reads, `show` of a flow that is not there and a closed pipe — run as
the README writes them: `python -m disguiselib` from a checkout and the installed
`disguise` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from disguiselib import cli
from disguiselib.inspect.audit import CLEAN, LEAK, NOT_PROVEN
from inspect_util import anthropic_handler
from integration_util import MITMDUMP, REPO, FakeUpstream, Mitmdump, free_port, mitmdump_cmd, write_mappings

anthropic = pytest.importorskip("anthropic")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

BOB = "bob@corp.example.com"
PROMPT = f"Acme Corp asks: mail {BOB} about the launch."
MINE = {"literals": {"Acme Corp": "Zenith Labs"}}  # the user's own file: no e-mail rule in it
DISGUISE = Path(sys.executable).parent / "disguise"


def capture(tmp: Path, *extra: str, prompt: str = PROMPT) -> Path:
    """One streamed Anthropic request through a real mitmdump, written with -w."""
    mine = write_mappings(tmp, MINE, "mine.yaml")
    flows = tmp / "session.flows"
    with FakeUpstream() as up:
        up.on("m", anthropic_handler)
        md = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", mine, "-w", str(flows), *extra))
        try:
            with anthropic.Anthropic(base_url=f"http://127.0.0.1:{md.port}", api_key="sk-ant-test", max_retries=0,
                                     http_client=anthropic.DefaultHttpxClient(trust_env=False)) as a:  # fmt: skip
                with a.messages.stream(model="m", max_tokens=20, messages=[{"role": "user", "content": prompt}]) as s:
                    s.get_final_message()
        finally:
            md.stop()
    assert flows.stat().st_size > 0, md.output
    return flows


def checkout(*args: str) -> subprocess.CompletedProcess:
    """`PYTHONPATH=addon python -m disguiselib ...` from the repository, as the README says."""
    return subprocess.run([sys.executable, "-m", "disguiselib", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": "addon", "PATH": "/usr/bin:/bin"})  # fmt: skip


def installed(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """The `disguise` command of the installed package, from another folder."""
    return subprocess.run([str(DISGUISE), *args], cwd=tmp, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"})  # fmt: skip


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """leaky: the proxy ran with the shipped defaults off, so the e-mail went upstream;
    clean: the defaults on, a long prompt (`show` prints well over a pipe's 64 KiB); cut:
    bodies kept only in part."""
    out = {}
    for name, extra, prompt in (("leaky", ["--set", "disguise_defaults=false"], PROMPT),
                                ("clean", [], PROMPT * 400),
                                ("cut", ["--set", "disguise_capture_limit=200"], PROMPT)):  # fmt: skip
        out[name] = capture(tmp_path_factory.mktemp(name), *extra, prompt=prompt)
    return out


def mine(flows: Path) -> str:
    return str(flows.parent / "mine.yaml")


@pytest.fixture(params=["checkout", "installed"])
def run(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "installed" and not DISGUISE.exists():
        pytest.skip(f"no installed disguise command at {DISGUISE} (make test installs it)")
    return (lambda *a: checkout(*a)) if request.param == "checkout" else (lambda *a: installed(tmp_path, *a))


def test_case_8_audit_with_mappings_finds_the_leaked_email(captures, run) -> None:
    """Issue 15, case 8: a capture whose request took an e-mail upstream (the proxy ran
    with the shipped defaults turned off) was reported "clean", exit 0, when audited with
    the user's mappings: the audit loaded that file alone."""
    flows = captures["leaky"]
    for argv in (["audit", str(flows), "--mappings", mine(flows)], ["--mappings", mine(flows), "audit", str(flows)]):
        r = run(*argv)
        assert r.returncode == LEAK, r.stdout + r.stderr
        assert "LEAK upstream: EMAIL match at messages[0].content" in r.stdout
        assert "LEAK: 1 finding in 1 of 1 LLM flow" in r.stdout
        assert BOB not in r.stdout + r.stderr
        assert "rules loaded: defaults + 1 file (mine.yaml)" in r.stderr


def test_case_12_mappings_after_the_flow_files_as_the_readme_writes_it(captures, run) -> None:
    """Issue 15, case 12: `audit session.flows --mappings PATH` failed with
    'unrecognized arguments' and exit 2, the status of "not proven"."""
    flows = captures["clean"]
    r = run("audit", str(flows), "--mappings", mine(flows))
    assert r.returncode == CLEAN, r.stdout + r.stderr
    assert "clean: 1 LLM flow audited, no leak" in r.stdout
    before = run("--mappings", mine(flows), "audit", str(flows))
    assert (before.returncode, before.stdout) == (r.returncode, r.stdout)


def test_rules_that_masked_the_recording_but_are_not_loaded_leave_it_not_proven(captures, tmp_path: Path) -> None:
    """The recording was masked by the shipped EMAIL pattern and the user's literal; an
    audit given other rules (the defaults left out, or the literal gone from the file
    since, as after a mapping reloaded mid-session) cannot see what those rules'
    disguises did on the client's side, and said "clean". It says NOT PROVEN, naming
    what is missing (never an original), as a replay does."""
    flows = captures["clean"]
    other = write_mappings(tmp_path, {"literals": {"Other Co": "Nimbus Co"}}, "other.yaml")
    for argv, gone in ((["--no-defaults", "--mappings", mine(flows)], "pattern EMAIL"),
                       (["--mappings", str(other)], "1 literal")):  # fmt: skip
        r = checkout("audit", str(flows), *argv)
        assert r.returncode == NOT_PROVEN, r.stdout + r.stderr
        assert "flow 1 POST /v1/messages [anthropic.messages]: ok, MASKED BY RULES NOT LOADED" in r.stdout
        assert f"rules that masked the recording are not in force: {gone}" in r.stdout
        assert "NOT PROVEN: 1 of 1 LLM flow masked by rules not loaded here" in r.stdout
        assert "Acme" not in r.stdout + r.stderr
    r = checkout("audit", str(flows), "--mappings", mine(flows))  # the recording's rules: clean
    assert r.returncode == CLEAN, r.stdout + r.stderr


def test_not_proven_and_a_usage_error_are_told_apart(captures) -> None:
    run = checkout
    flows = captures["cut"]
    r = run("audit", str(flows), "--mappings", mine(flows))
    assert r.returncode == NOT_PROVEN, r.stdout + r.stderr
    assert "NOT PROVEN: 1 of 1 LLM flow not kept whole" in r.stdout
    typo = run("audit", str(flows), "--mapping", mine(flows))
    assert typo.returncode == cli.USAGE, typo.stderr
    assert "unrecognized option --mapping: did you mean --mappings?" in typo.stderr


def test_share_leaves_out_a_flow_cut_when_recorded_and_says_so(captures, tmp_path: Path) -> None:
    """Issue D6: the copy of a flow whose upstream answer was kept cut would be served by
    server replay as a whole answer (200, a truncated body): share leaves it out, says
    why, and writes the rest."""
    out = tmp_path / "shared.flows"
    r = checkout("share", str(captures["cut"]), str(out), "--mappings", mine(captures["cut"]))
    assert r.returncode == CLEAN, r.stdout + r.stderr
    assert "0 flows written" in r.stdout
    assert "1 left out (1 upstream response cut at disguise_capture_limit" in r.stdout
    whole = checkout("share", str(captures["clean"]), str(out), "--mappings", mine(captures["clean"]))
    assert "1 flow written" in whole.stdout and "0 left out" in whole.stdout, whole.stdout + whole.stderr


def test_show_of_a_missing_flow_and_a_closed_pipe(captures, tmp_path: Path) -> None:
    flows = captures["clean"]
    r = installed(tmp_path, "show", str(flows), "2")
    assert r.returncode == cli.ERROR and r.stdout == ""
    assert "no flow 2: the file holds 1 flow" in r.stderr
    shown = subprocess.run(f"{sys.executable} -m disguiselib show {flows} 1 | head -n 3", shell=True, cwd=REPO,
                           capture_output=True, text=True, timeout=120,
                           env={"PYTHONPATH": "addon", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert shown.stdout.startswith("===== flow 1 request: view 'Disguise' =====")
    assert shown.stderr == ""


def test_web_serves_the_addon_behind_its_login(tmp_path: Path) -> None:
    """`disguise web`: mitmweb with the addon, on loopback, its token login on where
    mitmproxy has one (11.1 and later); on 11.0, which has none, it says so."""
    import json
    import re
    import time
    import urllib.error
    import urllib.request

    from disguiselib import launch
    from integration_util import _env

    if not DISGUISE.exists():
        pytest.skip(f"no installed disguise command at {DISGUISE} (make test installs it)")
    web_port = free_port()
    with FakeUpstream() as up:
        up.on("m", anthropic_handler)
        proc = subprocess.Popen(
            [str(DISGUISE), "web", "--mode", f"reverse:http://127.0.0.1:{up.port}", "--listen-port", "0",
             "--web-port", str(web_port), "--no-web-open-browser", "--set", f"confdir={tmp_path / 'conf'}"],
            cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + 120
            while not (any("listening at 127.0.0.1:" in ln and "Web server" not in ln for ln in lines)
                       and any("Web server listening at" in ln for ln in lines)):  # fmt: skip
                line = proc.stdout.readline()
                assert line and time.monotonic() < deadline, "".join(lines)
                lines.append(line)
            out = "".join(lines)
            port = int(re.search(r"(?<!Web server )listening at 127\.0\.0\.1:(\d+)", out).group(1))  # type: ignore[union-attr]
            web = re.search(r"Web server listening at (http://127\.0\.0\.1:\d+/)(\?token=\w+)?", out)
            assert web is not None, out
            with anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="sk-ant-test", max_retries=0,
                                     http_client=anthropic.DefaultHttpxClient(trust_env=False)) as a:  # fmt: skip
                got = a.messages.create(model="m", max_tokens=9, messages=[{"role": "user", "content": PROMPT}])
            assert got.content[0].text == PROMPT
            assert up.requests[-1].json["messages"][0]["content"] == "Acme Corp asks: mail [EMAIL_1] about the launch."
            base = web.group(1)
            if launch.web_has_auth():
                assert web.group(2), "mitmweb printed no token"
                with pytest.raises(urllib.error.HTTPError) as denied:
                    urllib.request.urlopen(base + "flows", timeout=10)
                denied.value.close()
                assert denied.value.code in (401, 403)
                with urllib.request.urlopen(base + "flows" + web.group(2), timeout=10) as r:
                    flows = json.load(r)
                assert any("masked 1 original (EMAIL×1)" in (f.get("comment") or "") for f in flows), flows
            else:
                assert "has no login" in out
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
