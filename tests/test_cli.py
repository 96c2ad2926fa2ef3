"""The `disguise` command line (cli.py, launch.py): rules loaded as the addon loads them,
exit statuses a CI gate can tell apart, `show` of a flow that is not there, a closed
pipe, and the mitmproxy command lines `run` and `web` build. Real captures through
mitmdump are in tests/integration/test_audit_cli.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import tflow

from disguiselib import cli, engine, launch, shipped
from disguiselib.inspect.audit import CLEAN, LEAK
from integration_util import REPO, write_mappings

BOB = "bob@corp.example.com"


def flows_file(tmp: Path, *texts: str, size: int = 0) -> Path:
    """A flow file of Anthropic requests as they went upstream (recorded without the
    addon: what the audit must judge), one per text; size pads each answer."""
    path = tmp / "session.flows"
    with open(path, "wb") as fo:
        w = io.FlowWriter(fo)
        for t in texts:
            f = tflow.tflow(resp=True)
            f.request.method = "POST"
            f.request.path = "/v1/messages"
            f.request.content = json.dumps({"model": "m", "messages": [{"role": "user", "content": t}]}).encode()
            f.response.headers["content-type"] = "application/json"
            f.response.content = json.dumps({"content": [{"type": "text", "text": "ok " + "x" * size}]}).encode()
            w.add(f)
    return path


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as e:  # argparse's --help / --version, and _fail
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def literal_only(tmp_path: Path) -> Path:
    return write_mappings(tmp_path, {"literals": {"Acme Corp": "Zenith Labs"}}, "acme.yaml")


# -- rules: the shipped defaults plus every --mappings, before or after the command --------


def test_audit_loads_the_shipped_defaults_under_the_given_mappings(capsys, tmp_path, literal_only) -> None:
    """Issue 15, case 8: with --mappings the audit used to load that file alone, so a
    capture that leaked an e-mail was 'clean' with exit 0."""
    flows = flows_file(tmp_path, f"mail {BOB}")
    code, out, err = run(capsys, "audit", str(flows), "--mappings", str(literal_only))
    assert code == LEAK, out
    assert "LEAK upstream: EMAIL match at messages[0].content" in out
    assert BOB not in out  # names rules and fields, never the original
    assert "rules loaded: defaults + 1 file (acme.yaml)" in err


def test_no_defaults_leaves_the_shipped_rules_out(capsys, tmp_path, literal_only) -> None:
    flows = flows_file(tmp_path, f"mail {BOB}")
    code, out, err = run(capsys, "audit", str(flows), "--mappings", str(literal_only), "--no-defaults")
    assert code == CLEAN, out
    assert "rules loaded: no defaults + 1 file (acme.yaml): 1 literal, 0 patterns" in err


@pytest.mark.parametrize("where", ["before", "after", "both"])
def test_mappings_are_taken_before_and_after_the_command(capsys, tmp_path, literal_only, where) -> None:
    """Issue 15, case 12: `audit session.flows --mappings PATH`, as the README wrote it,
    failed with 'unrecognized arguments' and exit 2 (the status of 'not proven')."""
    other = write_mappings(tmp_path, {"literals": {"Bluebird": "Heron"}}, "bird.yaml")
    flows = flows_file(tmp_path, "Acme Corp on Bluebird")
    a, b = ["--mappings", str(literal_only)], ["--mappings", str(other)]
    argv = {"before": [*a, *b, "audit", str(flows)], "after": ["audit", str(flows), *a, *b],
            "both": [*a, "audit", str(flows), *b]}[where]  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == LEAK
    assert "rules loaded: defaults + 2 files (acme.yaml, bird.yaml)" in err  # in the order given
    assert out.count("LEAK upstream: literal") == 2


def test_without_mappings_the_checkout_folder_is_used_like_the_addon(capsys, tmp_path) -> None:
    from disguiselib.config import DEFAULT_MAPPINGS

    assert DEFAULT_MAPPINGS == (str(REPO / "mappings"),) == shipped.USER_MAPPINGS
    assert shipped.DEFAULTS_FILE == REPO / "mappings" / "default.yaml"
    code, _, err = run(capsys, "audit", str(flows_file(tmp_path, "nothing here")))
    assert code == CLEAN and "rules loaded: defaults" in err


# -- exit statuses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[], ["audit"], ["bogus"], ["audit", "f.flows", "--mapings", "x"], ["show", "f.flows", "0"],
     ["show", "f.flows", "three"], ["--mappings"]],
)  # fmt: skip
def test_a_wrong_command_line_has_its_own_exit_status(capsys, argv) -> None:
    code, _, err = run(capsys, *argv)
    assert code == cli.USAGE == 64, err
    assert "usage: disguise" in err


def test_exit_statuses_are_distinct() -> None:
    from disguiselib.inspect.audit import NOT_PROVEN

    assert len({CLEAN, LEAK, NOT_PROVEN, cli.ERROR, cli.USAGE}) == 5


def test_unreadable_input_is_an_error_not_a_verdict(capsys, tmp_path, literal_only) -> None:
    code, _, err = run(capsys, "audit", str(tmp_path / "missing.flows"))
    assert code == cli.ERROR and "missing.flows: No such file or directory" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("literals: [oops\n")
    code, _, err = run(capsys, "audit", str(flows_file(tmp_path, "x")), "--mappings", str(bad))
    assert code == cli.ERROR and "disguise: mappings: " in err and "bad.yaml" in err


def test_show_of_a_flow_that_is_not_there_says_so(capsys, tmp_path) -> None:
    flows = flows_file(tmp_path, "one", "two")
    code, out, err = run(capsys, "show", str(flows), "3")
    assert code == cli.ERROR and out == ""
    assert "no flow 3: the file holds 2 flows" in err
    code, out, _ = run(capsys, "show", str(flows), "2")
    assert code == CLEAN and "===== flow 2 request" in out and "flow 1" not in out


def test_output_into_a_closed_pipe_ends_quietly(tmp_path) -> None:
    flows = flows_file(tmp_path, "hello", size=400_000)  # more than a pipe holds
    for argv in (["show", str(flows)], ["show", str(flows), "1"]):
        with subprocess.Popen([sys.executable, "-m", "disguiselib", *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=tmp_path, env={"PYTHONPATH": str(REPO / "addon")}) as p:  # fmt: skip
            assert p.stdout is not None and p.stderr is not None
            assert p.stdout.read(100)
            p.stdout.close()  # `| head -c 100`
            err = p.stderr.read().decode()
            assert p.wait(60) == 0, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_version_and_script(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal: the line is printed whole, never wrapped
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("disguise 0.") and "mitmproxy 1" in out
    assert out.endswith(f"; engine: {engine.DESCRIPTION})\n")  # which engine runs (engine.py)
    code, out, _ = run(capsys, "script")
    assert code == 0 and Path(out.strip()) == shipped.SCRIPT and shipped.SCRIPT.is_file()


# -- run and web: the mitmproxy command lines ----------------------------------------------


def test_run_listens_on_loopback_unless_told_otherwise() -> None:
    argv = launch.mitm_argv(["--mode", "reverse:https://api.anthropic.com"])
    assert argv[:4] == ["-s", str(shipped.SCRIPT), "--listen-host", "127.0.0.1"]
    assert argv[-2:] == ["--mode", "reverse:https://api.anthropic.com"]
    for told in (["--listen-host", "0.0.0.0"], ["--listen-host=::"], ["--set", "listen_host=10.1.2.3"],
                 ["--set=listen_host=192.0.2.1"]):  # fmt: skip
        argv = launch.mitm_argv(told)
        assert argv.count("127.0.0.1") == 0 and argv[-len(told) :] == told


def test_run_passes_disguise_rule_options_as_addon_options(tmp_path) -> None:
    top, tool, rest = cli._split_mitm(["--mappings", "a.yaml", "run", "-q", "--mappings=b.yaml", "--no-defaults"])
    assert (top, tool) == (["--mappings", "a.yaml"], "run")
    _, paths, no = cli._pull_rules(rest)
    argv = launch.mitm_argv(cli._pull_rules(rest)[0], ["a.yaml", *paths], not no)
    assert argv[4:] == ["--set", "disguise_mappings=a.yaml", "--set", "disguise_mappings=b.yaml",
                        "--set", "disguise_defaults=false", "-q"]  # fmt: skip
    assert cli._split_mitm(["audit", "x.flows"]) is None
    assert cli._split_mitm(["--version", "run"]) is None  # only disguise's rule options go before run


def test_web_without_a_login_is_served_on_loopback_only(monkeypatch) -> None:
    monkeypatch.setattr(launch, "web_has_auth", lambda: False)
    assert "has no login" in (launch.check_web([]) or "")
    assert "has no login" in (launch.check_web(["--web-host", "localhost"]) or "")
    for host in (["--web-host", "0.0.0.0"], ["--set", "web_host=192.0.2.7"]):
        with pytest.raises(launch.LaunchError, match="not served on"):
            launch.check_web(host)
    monkeypatch.setattr(launch, "web_has_auth", lambda: True)
    assert launch.check_web(["--web-host", "0.0.0.0"]) is None  # mitmweb asks for its token


def test_web_auth_follows_the_mitmproxy_version() -> None:
    from mitmproxy.version import VERSION

    major, minor = map(int, VERSION.split(".")[:2])
    assert launch.web_has_auth() == ((major, minor) >= (11, 1))


def test_a_long_audit_shows_its_progress(tmp_path: Path) -> None:
    """Nothing for the first second; then updates on stderr, at most one a second on a
    terminal (rewritten in place), one every 10 s in a log."""
    import io as _io

    class Clock:
        t = 0.0

    clock = Clock()
    real = cli.time.monotonic
    cli.time.monotonic = lambda: clock.t  # type: ignore[assignment]
    try:
        log = _io.StringIO()
        p = cli.Progress("auditing", log)
        for i in range(1, 31):  # 30 flows, half a second each
            clock.t = i * 0.5
            p(i, 30, " flows")
        p.end()
    finally:
        cli.time.monotonic = real  # type: ignore[assignment]
    lines = log.getvalue().splitlines()
    assert lines == ["auditing: 20 of 30 flows (66%)"]  # at 10 s; a log is not a terminal


# -- issue 31: what the command line says ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["--versoin"], "unrecognized option --versoin: did you mean --version?"),
     (["audit", "f.flows", "--mapping", "x.yaml"], "unrecognized option --mapping: did you mean --mappings?"),
     (["audit", "f.flows", "--mapping=x.yaml"], "did you mean --mappings?"),
     (["--no-default", "show", "f.flows"], "did you mean --no-defaults?"),
     (["show", "f.flows", "--show-originals"], "unrecognized option --show-originals")],
)  # fmt: skip
def test_a_mistyped_option_is_named_with_the_nearest_one(capsys, argv, said) -> None:
    code, _, err = run(capsys, *argv)
    assert code == cli.USAGE and said in err, err


def test_a_file_that_is_no_flow_file_is_named(capsys, tmp_path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# not flows\n")
    code, _, err = run(capsys, "audit", str(readme))
    assert code == cli.ERROR and f"{readme}: not a mitmproxy flow file" in err, err


def test_counts_of_one_are_singular(capsys, tmp_path, literal_only) -> None:
    code, out, _ = run(capsys, "audit", str(flows_file(tmp_path, "hello")), "--mappings", str(literal_only))
    assert code == CLEAN and "clean: 1 LLM flow audited" in out, out
    from disguiselib.inspect import render

    body = b'data: {"type": "message_stop"}\n\n'
    assert render.render_stream(body).startswith("1 event, 0 channels")


def test_the_help_lists_every_exit_status(capsys) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for status in ("0 clean", "1 leak", "2 not proven", "3 error", "64 usage error"):
        assert status in " ".join(out.split()), status


def test_a_python_without_the_dependencies_gets_one_line(tmp_path) -> None:
    """README: `python -m disguiselib` in a Python without the dependencies stops at one
    line naming the module, not a traceback (here the Aho-Corasick library is hidden)."""
    hide = "import sys, runpy; sys.modules['ahocorasick_rs'] = None; runpy.run_module('disguiselib', run_name='__main__')"
    r = subprocess.run([sys.executable, "-c", hide, "--version"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(REPO / "addon")}, timeout=120)  # fmt: skip
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("disguise: ") and "ahocorasick_rs" in r.stderr and "dependency" in r.stderr


@pytest.mark.parametrize("argv", [
    ["run", "--mappings"], ["run", "--mappings", "--set", "x=y"], ["--mappings", "--no-defaults", "run"],
    ["run", "--mappings="], ["web", "-q", "--mappings", "-v"],
])  # fmt: skip
def test_mappings_without_a_path_is_a_usage_error(argv: list[str], capsys) -> None:
    """`disguise run --mappings --set x=y` took `--set` for the mapping path and gave
    mitmproxy `x=y` as an argument; at the end the flag went to mitmproxy."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == cli.USAGE
    assert "--mappings needs a file or folder" in capsys.readouterr().err
