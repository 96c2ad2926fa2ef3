"""The addon's options (mitm/options.py): declared from the one table, a bad deferred
value found before mitmproxy drops the script, and passthrough of a protected host
refused."""

from __future__ import annotations

import contextlib

import pytest
from mitmproxy.addonmanager import Loader
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons

from disguiselib.config import OPTION_NAMES
from disguiselib.errors import ScopeError
from disguiselib.mitm import options
from disguiselib.scope import parse_hosts


@contextlib.contextmanager
def context():
    with taddons.context(Proxyserver()) as tctx:
        try:
            yield tctx
        finally:
            tctx.master.event_loop.close()


def test_declare_adds_every_option_but_the_inspectors_and_the_metrics() -> None:
    with context() as tctx:
        options.declare(Loader(tctx.master))
        have = set(tctx.master.options.keys())
        own = options.INSPECTOR_OPTIONS | options.METRICS_OPTIONS
        assert OPTION_NAMES - own <= have
        assert not own & have
        options.declare(Loader(tctx.master), options.INSPECTOR_OPTIONS)
        options.declare(Loader(tctx.master), options.METRICS_OPTIONS)
        assert OPTION_NAMES <= set(tctx.master.options.keys())


@pytest.mark.parametrize(("setting", "bad"), [("disguise_fail_open=yes", True), ("disguise_fail_open=true", False),
                                              ("disguise_capture_limit=lots", True), ("disguise_hosts=a.b", False)])  # fmt: skip
def test_a_bad_deferred_value_is_found_and_named(setting: str, bad: bool) -> None:
    with context() as tctx:
        tctx.master.options.set(setting, defer=True)
        options.declare(Loader(tctx.master), OPTION_NAMES)
        failure = options.check_deferred(tctx.master.options)
        name = setting.split("=")[0]
        if bad:
            assert failure is not None and failure.startswith(f"option {name}:") and "refused" in failure
        else:
            assert failure is None


def test_passthrough_of_a_protected_host_is_refused_naming_it() -> None:
    with context() as tctx:
        options.check_passthrough(())  # neither option set
        tctx.options.update(ignore_hosts=["openai"])
        with pytest.raises(ScopeError, match="api.openai.com is passed through unintercepted \\(ignore_hosts\\)"):
            options.check_passthrough(())
        options.check_passthrough(parse_hosts(["api.anthropic.com"]))  # the scope is elsewhere
        tctx.options.update(ignore_hosts=[], allow_hosts=["anthropic"])
        with pytest.raises(ScopeError, match="allow_hosts"):
            options.check_passthrough(parse_hosts(["api.example.com"]))
        options.check_passthrough(parse_hosts(["api.anthropic.com"]))


def test_fakes_key_off_default_file_and_given_file(tmp_path) -> None:
    """disguise_fakes off: no key (nothing read or created); on: the key file named by
    disguise_fakes_key, else one in the confdir, created once with mode 0600; one that
    cannot be made refuses the configuration (MappingError)."""
    from disguiselib.errors import MappingError
    from disguiselib.rules import fakes

    class Opts:
        disguise_fakes = False
        disguise_fakes_key = ""
        confdir = str(tmp_path / "conf")

    o = Opts()
    assert options.fakes_key(o) is None and not (tmp_path / "conf").exists()
    o.disguise_fakes = True
    k = options.fakes_key(o)
    assert k is not None and (tmp_path / "conf" / fakes.KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert options.fakes_key(o) == k
    o.disguise_fakes_key = str(tmp_path / "mine.key")
    assert options.fakes_key(o) not in (None, k)
    (tmp_path / "blocked").write_text("a file, not a folder")
    o.disguise_fakes_key = str(tmp_path / "blocked" / "x.key")
    with pytest.raises(MappingError, match="disguise_fakes_key"):
        options.fakes_key(o)


def test_check_values_refuses_a_negative_size_of_the_updated_options_only() -> None:
    with context() as tctx:
        options.declare(Loader(tctx.master), OPTION_NAMES)
        tctx.options.update(disguise_stream_bytes=-5)
        options.check_values(tctx.options, {"disguise_hosts"})  # not among the updated: not checked here
        with pytest.raises(ScopeError, match="^disguise_stream_bytes: must be 0 or more, not -5$"):
            options.check_values(tctx.options, {"disguise_hosts", "disguise_stream_bytes"})


def test_the_command_lines_own_options_are_read_from_argv() -> None:
    argv = ["--mode", "regular", "--set", "disguise_mappings=a.yaml", "--set=disguise_mappings=b.yaml",
            "--set", "confdir=/x", "--set", "disguise_fail_open", "--set", "disguise_hosts=h=1", "-s", "--set"]  # fmt: skip
    assert options.set_on_command_line(argv) == {
        "disguise_mappings": ["a.yaml", "b.yaml"], "disguise_fail_open": [], "disguise_hosts": ["h=1"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("cli", "file", "conflict"),
    [
        (["disguise_mappings=mine.yaml"], {"disguise_mappings": ["team.yaml"]}, True),
        (["disguise_mappings=team.yaml"], {"disguise_mappings": ["team.yaml"]}, False),
        (["disguise_defaults=true"], {"disguise_defaults": False}, True),
        (["disguise_defaults=false"], {"disguise_defaults": False}, False),
        (["disguise_capture_limit=5"], {"disguise_capture_limit": 5}, False),
        ([], {"disguise_mappings": ["team.yaml"]}, False),
        (["disguise_mappings=mine.yaml"], {}, False),
    ],
)
def test_an_option_config_yaml_would_take_from_the_command_line_is_named(
    cli: list[str], file: dict, conflict: bool
) -> None:
    """mitmproxy sets --set first, then config.yaml over it: for a script's options the
    file's value silently wins (kept in `deferred` until the script declares them)."""
    with context() as tctx:
        opts = tctx.master.options
        opts.set(*cli, defer=True)
        opts.update_defer(**file)  # what optmanager.load_paths does with config.yaml
        options.declare(Loader(tctx.master), OPTION_NAMES)
        argv = [a for spec in cli for a in ("--set", spec)]
        failure = options.check_config_file(opts, argv)
        if conflict:
            name = cli[0].split("=")[0]
            assert failure is not None and failure.startswith(f"option {name} is set on the command line")
            assert "config.yaml" in failure and "mine.yaml" not in failure and "team.yaml" not in failure
        else:
            assert failure is None


def test_the_options_that_let_more_through_are_named_when_on(caplog: pytest.LogCaptureFixture) -> None:
    with context() as tctx:
        options.declare(Loader(tctx.master), OPTION_NAMES)
        opts = tctx.master.options
        assert options.relaxed(opts) == ""
        opts.update(disguise_fail_open=True, disguise_aws_resign=True)
        assert options.relaxed(opts) == "; on: disguise_fail_open, disguise_aws_resign"
        with caplog.at_level("INFO", logger="disguise"):
            options.log_relaxed(opts, {"disguise_fail_open", "disguise_capture_limit"})
            opts.update(disguise_fail_open=False)
            options.log_relaxed(opts, {"disguise_fail_open"})
        assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
            ("WARNING", "disguise: option disguise_fail_open is now on"),
            ("INFO", "disguise: option disguise_fail_open is now off"),
        ]
