"""`disguise run` and `disguise web` (launch.py): the mitmproxy command line they build,
options read from any spelling, and a web UI without a login kept on loopback."""

from __future__ import annotations

import pytest

from disguiselib import launch, shipped


def test_given_reads_every_spelling_and_the_last_wins() -> None:
    assert launch.given(["--listen-host", "a", "--listen-host=b"], "--listen-host", "listen_host") == "b"
    assert launch.given(["--set", "listen_host=c"], "--listen-host", "listen_host") == "c"
    assert launch.given(["--set=listen_host=d", "--set", "other=x"], "--listen-host", "listen_host") == "d"
    assert launch.given(["--listen-port", "1"], "--listen-host", "listen_host") is None


def test_mitm_argv_loads_the_script_on_loopback_unless_told() -> None:
    argv = launch.mitm_argv(["--mode", "regular"], ["a.yaml", "b.yaml"], defaults=False)
    assert argv[:2] == ["-s", str(shipped.SCRIPT)] and argv[2:4] == ["--listen-host", launch.LOCAL]
    assert argv[4:] == ["--set", "disguise_mappings=a.yaml", "--set", "disguise_mappings=b.yaml",
                        "--set", "disguise_defaults=false", "--mode", "regular"]  # fmt: skip
    assert "--listen-host" not in launch.mitm_argv(["--listen-host=0.0.0.0"])[:4]


def test_a_web_ui_without_a_login_stays_on_loopback(monkeypatch) -> None:
    monkeypatch.setattr(launch, "web_has_auth", lambda: False)
    assert "has no login" in (launch.check_web([]) or "")
    assert launch.check_web(["--web-host", "::1"]) is not None
    with pytest.raises(launch.LaunchError, match="not served on '0.0.0.0'"):
        launch.check_web(["--web-host", "0.0.0.0"])
    monkeypatch.setattr(launch, "web_has_auth", lambda: True)
    assert launch.check_web(["--web-host", "0.0.0.0"]) is None


def test_addons_are_a_fresh_disguise_its_inspector_between_its_metrics_and_the_listen_queue() -> None:
    from disguiselib.mitm.listen import ListenQueue
    from disguiselib.mitm.metrics import Metrics

    m, a, b, tail, q = launch.addons()
    _, c, _, _, _ = launch.addons()
    assert b is a.inspect and c is not a and isinstance(q, ListenQueue)
    assert isinstance(m, Metrics) and m.disguise is a and tail is m.tail and a.reloaded == m.reloaded
