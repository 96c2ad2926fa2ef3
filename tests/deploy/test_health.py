"""deploy/health.py and deploy/balance.py's HAProxy configuration, without a balancer:
the health check says healthy only while a Disguise runs with a valid rule set, is
answered by the instance itself, and touches no other request."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy.test import taddons, tflow

from disguiselib.mitm.addon import Disguise
from integration_util import MITMDUMP, REPO, FakeUpstream, write_mappings

sys.path.insert(0, str(REPO / "deploy"))
import balance  # noqa: E402
import health  # noqa: E402

MAPPING = {"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [{"name": "EMAIL", "regex": r"[a-z]+@[a-z]+\.com"}]}


def check(master, method: str = "GET", path: str = health.PATH):
    f = tflow.tflow()
    f.request.method, f.request.path = method, path
    with_ctx = health.DisguiseHealth()
    with_ctx.requestheaders(f)
    return f.response


def test_healthy_only_with_a_disguise_and_valid_rules(tmp_path: Path) -> None:
    m = write_mappings(tmp_path, MAPPING)
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            # not configured yet: no rule set in force
            assert health.status(tctx.master) == (False, "unhealthy: no valid mapping set is in force")
            tctx.configure(a, disguise_mappings=[str(m)], disguise_defaults=False)
            assert health.status(tctx.master) == (True, "ok: 1 literals, 1 patterns")
            r = check(tctx.master)
            assert r is not None and r.status_code == 200 and r.content == b"ok: 1 literals, 1 patterns\n"
            assert check(tctx.master, "POST") is None  # only GET/HEAD of the one path
            assert check(tctx.master, "GET", "/v1/messages") is None
            assert check(tctx.master, "GET", health.PATH + "/x") is None
            h = health.DisguiseHealth()
            h.draining = True  # after SIGTERM: the balancer is told at once
            f = tflow.tflow()
            f.request.method, f.request.path = "GET", health.PATH
            h.requestheaders(f)
            assert f.response.status_code == 503 and f.response.content == b"unhealthy: stopping (draining)\n"
            a.guard.failure = "option disguise_hosts: bad"
            ok, why = health.status(tctx.master)
            assert not ok and "option disguise_hosts: bad" in why
            assert check(tctx.master).status_code == 503
        finally:
            tctx.master.event_loop.close()


def test_unhealthy_without_the_addon() -> None:
    with taddons.context() as tctx:
        try:
            assert health.status(tctx.master) == (False, "unhealthy: the disguise addon is not loaded")
            assert check(tctx.master).status_code == 503
        finally:
            tctx.master.event_loop.close()


@pytest.mark.integration
@pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}")
def test_an_instance_whose_addon_script_is_dropped_never_becomes_healthy(tmp_path: Path) -> None:
    """A bad value for a script option makes mitmproxy drop the disguise script without a
    word; the addon notices it while loading and mitmdump exits. balance.py never hands
    such an instance to HAProxy, and nothing reached upstream."""
    m = write_mappings(tmp_path, MAPPING)
    with FakeUpstream() as up:
        port = balance.free_port()
        cmd = balance.instance_cmd([str(MITMDUMP)], port, tmp_path / "conf", f"reverse:http://127.0.0.1:{up.port}",
                                   ["--set", f"disguise_mappings={m}", "--set", "disguise_fail_open=yes"])  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.STDOUT)  # fmt: skip
        try:
            with pytest.raises(RuntimeError, match="exited with 1|not healthy"):
                balance.wait_healthy("127.0.0.1", port, proc, timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert up.requests == []


@pytest.mark.skipif(
    shutil.which("haproxy") is None, reason="HAProxy is not installed here (apt-get install -y haproxy)"
)
@pytest.mark.parametrize("mode", ["reverse", "regular"])
def test_haproxy_accepts_the_configuration(tmp_path: Path, mode: str) -> None:
    servers = [balance.Server(f"d{i}", "127.0.0.1", 40000 + i) for i in (1, 2, 3)]
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(balance.haproxy_config("127.0.0.1", 39999, servers, mode))
    r = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    text = cfg.read_text()
    assert f"uri {'' if mode == 'reverse' else 'http://disguise-health'}{health.PATH} " in text
    assert text.count(" check inter 1s") == 1 and text.count("    server d") == 3
    assert ("x-disguise-instance" in text) == (mode == "reverse")


def test_a_port_picked_for_later_is_outside_the_range_connections_draw_from():
    """balance.free_port (the instances' ports, the walkthroughs' and the tests'): a port
    from `bind(0)` lies in the kernel's ephemeral range, where any outgoing connection on
    the machine may take it before the process that was given it binds it (CI: "Address
    already in use" with two test runs side by side). The pick is free and below it."""
    import socket

    low, high = balance._ephemeral()
    ports = {balance.free_port() for _ in range(50)}
    assert all(not low <= p <= high for p in ports), sorted(ports)
    assert len(ports) > 10  # drawn at random: two callers seldom get the same
    for p in list(ports)[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_process_is_never_given_one_port_twice_and_draws_from_its_own_share_first(monkeypatch):
    """The walkthroughs' test draws every walkthrough's ports before any binds one, and
    CI runs two suites side by side: a port drawn twice was bound by the first taker and
    the second stopped ("port 24156 is in use", CI, 2026-12-04). With the random draw
    made to give the same port every time, each call still gets a port of its own; and
    two processes draw from different shares of the pool."""
    import random

    monkeypatch.setattr(balance, "_GIVEN", set())
    monkeypatch.setattr(random, "choice", lambda seq: seq[0])  # the same port, again and again
    # a process whose share does not begin with the pool's first port (a pid that is a
    # multiple of _SHARES draws that port first from both: its second call then falls
    # back to bind(0), and the test failed by the pid it ran under)
    monkeypatch.setattr(balance.os, "getpid", lambda: 1)
    ports = [balance.free_port() for _ in range(3)]
    assert len(set(ports)) == 3, ports
    assert ports[0] != ports[1] and ports[0] in balance._GIVEN and ports[1] in balance._GIVEN

    monkeypatch.undo()
    monkeypatch.setattr(balance, "_GIVEN", set())
    low, high = balance._ephemeral()
    pool = range(10000, low) if low > 11000 else range(high + 1, 65536)
    drawn = {}
    for pid in (101, 102):
        monkeypatch.setattr(balance.os, "getpid", lambda pid=pid: pid)
        drawn[pid] = {balance.free_port() for _ in range(20)}
        assert all((p - pool.start) % balance._SHARES == pid % balance._SHARES for p in drawn[pid]), drawn
    assert not drawn[101] & drawn[102]
