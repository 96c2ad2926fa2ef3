"""Every walkthrough in examples/ runs as a newcomer would run it (real echo provider,
real mitmdump / mitmweb, the official SDKs), and says what it promises."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from integration_util import MITMDUMP, REPO

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

ORIGINALS = ["Acme Corp", "jane.doe@example.com", "Project Bluebird", "acme-corp.internal",
             "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCRIPTS = ["01-claude-code.sh", "02-openai-sdk.sh", "03-regular-proxy.sh", "04-mitmweb.sh",
           "05-capture-replay-audit-share.sh"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Path]]:
    """Every walkthrough, all at once (each on its own ports): stdout and work folder."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    procs = {}
    for name in SCRIPTS:
        work = tmp_path_factory.mktemp(name.split("-")[0])
        e = dict(env, PYTHON=sys.executable, PROVIDER_PORT=str(free_port()), PROXY_PORT=str(free_port()),
                 WEB_PORT=str(free_port()), WORK=str(work))  # fmt: skip
        p = subprocess.Popen(["bash", str(REPO / "examples" / name)], cwd=REPO, env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
        procs[name] = (p, work)
    out = {}
    for name, (p, work) in procs.items():
        try:
            stdout, stderr = p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        logs = "".join(f"\n--- {f.name}\n{f.read_text()}" for f in work.glob("*.log"))
        out[name] = (stdout, work, p.returncode, stdout + stderr + logs)
    return out


def run(name: str, runs) -> str:
    stdout, _, rc, everything = runs[name]
    assert rc == 0, everything
    return stdout


def provider_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("provider received")]


def test_01_claude_code_reverse(runs) -> None:
    out = run("01-claude-code.sh", runs)
    assert "\nAcme Corp asks: mail jane.doe@example.com about Project Bluebird.\n" in out
    [seen] = provider_lines(out)
    assert seen == "provider received /v1/messages: Zenith Labs asks: mail [EMAIL_1] about Project Heron."
    assert "disguise: anthropic.messages 200: masked 3: EMAIL×1, literals×2; restored 3" in out


def test_02_openai_sdk(runs) -> None:
    out = run("02-openai-sdk.sh", runs)
    assert "\nSummarise the Project Bluebird notes for Acme Corp; ping build01.acme-corp.internal.\n" in out
    [seen] = provider_lines(out)
    assert not any(o in seen for o in ORIGINALS)
    assert "Project Heron" in seen and "host-a.zenith.example" in seen
    assert "disguise: openai.chat 200: masked 3: literals×3; restored 3" in out


def test_03_regular_proxy_with_the_mitmproxy_ca(runs) -> None:
    out = run("03-regular-proxy.sh", runs)
    assert "\nAcme Corp: the key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA must never leave this laptop.\n" in out
    [seen] = provider_lines(out)
    assert seen == "provider received /v1/messages: Zenith Labs: the key [ANTHROPIC_KEY_1] must never leave this laptop."
    assert "masked 2: ANTHROPIC_KEY×1, literals×1; restored 2" in out


def test_04_mitmweb(runs) -> None:
    out = run("04-mitmweb.sh", runs)
    assert "comment: disguise anthropic.messages: masked 3: EMAIL×1, literals×2; restored 3" in out
    views = out.split("\n== ")
    req = next(v for v in views if v.startswith("request, view 'Disguise':"))
    # marked: what the provider read, and what the client wrote / reads back
    assert '"content": "⟦Zenith Labs⟧ asks: mail ⟦[EMAIL_1]⟧ about ⟦Project Heron⟧."' in req
    req_other = next(v for v in views if v.startswith("request, view 'Disguise other side':"))
    assert "⟦Acme Corp⟧ asks: mail ⟦jane.doe@example.com⟧ about ⟦Project Bluebird⟧." in req_other
    resp = next(v for v in views if v.startswith("response, view 'Disguise':"))
    assert "── block 0 text · text" in resp and "⟦Acme Corp⟧ asks: mail ⟦jane.doe@example.com⟧" in resp
    resp_other = next(v for v in views if v.startswith("response, view 'Disguise other side':"))
    assert "⟦Zenith Labs⟧ asks: mail ⟦[EMAIL_1]⟧ about ⟦Project Heron⟧." in resp_other


def test_05_capture_replay_audit_share(runs) -> None:
    out = run("05-capture-replay-audit-share.sh", runs)
    tmp_path = runs["05-capture-replay-audit-share.sh"][1]
    assert "re-run offline: equals the live run" in out
    assert out.count("clean: 1 LLM flows audited, no leak") == 2
    assert "1 flows written" in out
    assert "the replayed answer equals the live one" in out
    shared = (tmp_path / "shared.flows").read_bytes()
    for o in [*ORIGINALS, "sk-ant-walkthrough-not-a-real-key"]:
        assert o.encode() not in shared
