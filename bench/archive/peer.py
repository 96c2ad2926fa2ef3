"""The peer: LLM-Shield-Proxy 1.7.0, a Python masking proxy for OpenAI-compatible APIs,
installed from PyPI into its own venv under $TMPDIR (kept between runs) and run as a
local server in front of the same fake provider.

How it is configured, and why (from its README, core/config.py, engines/):
- STRUCTURAL_TAG masking with ENABLE_SYNTHETIC_SWAPPING=false: it replaces a value with
  `[EMAIL_1]`, `[EMAIL_2]`, ... numbered by first appearance, the same placeholders the
  addon issues, and restores them in the streamed reply ("joins replacement tokens that
  were split across SSE events"). So one upstream stream serves both proxies.
- Its built-in Tier 1 patterns (EMAIL, SSN, PHONE, CREDIT_CARD, IP_ADDRESS, AWS, GitHub,
  Slack, private keys, ...) plus, as BYOR rules (CUSTOM_REGEX_PATH, compiled with RE2),
  the shipped disguise patterns it has no equivalent for: the masking rules match.
- Off, because the addon has no such thing or they would break a benchmark: Tier 2
  entropy detection, the agent-loop circuit breaker (identical turns trip it), usage
  telemetry, the Envoy ext_proc socket. Log level WARNING (the addon logs nothing per
  event either). Everything else stays at its defaults.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

PEER = "llm-shield-proxy"
VERSION = "1.7.0"
KEY = "sk-bench-peer"

# The shipped patterns (mappings/default.yaml) the peer has no built-in rule for, in RE2
# syntax (the peer compiles BYOR rules with google-re2).
BYOR = [
    ("ANTHROPIC_KEY", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("OPENAI_KEY", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("GOOGLE_API_KEY", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("JWT", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("SLACK_WEBHOOK", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("PRIVATE_KEY", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
]


def venv_dir() -> Path:
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"disguise-bench-peer-{VERSION}"


def ensure_installed() -> tuple[Path | None, str]:
    """(the peer's executable, "") once installed, or (None, why not). Installs with pip
    into venv_dir() the first time (~1 min); later runs reuse it."""
    d = venv_dir()
    exe = d / "bin" / PEER
    if exe.exists():
        return exe, ""
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(d)], check=True, capture_output=True, timeout=300)
        r = subprocess.run([str(d / "bin" / "python"), "-m", "pip", "install", "-q", f"{PEER}=={VERSION}"],
                           capture_output=True, text=True, timeout=900)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"could not create its venv: {type(e).__name__}"
    if r.returncode != 0 or not exe.exists():
        tail = [ln for ln in r.stderr.splitlines() if ln.strip() and "is ignored" not in ln][-2:]
        return None, f"pip install {PEER}=={VERSION} failed: {' '.join(tail)[:200]}"
    return exe, ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Peer:
    """The peer as a server process on 127.0.0.1, its upstream the fake provider."""

    def __init__(self, exe: Path, upstream_port: int, tmp: Path) -> None:
        wd = tmp / "peer"
        wd.mkdir(exist_ok=True)  # its working folder: no stray config.yaml / .env / policies.yaml
        (wd / "custom_regex.yaml").write_text(yaml.safe_dump({
            "custom_patterns": [{"name": n, "pattern": p} for n, p in BYOR]}))  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update({
            "UPSTREAM_BASE_URL": f"http://127.0.0.1:{upstream_port}", "UPSTREAM_API_KEY": "unused",
            "VALID_VIRTUAL_KEYS": KEY, "SHIELD_DEFAULT_MASKING_MODE": "STRUCTURAL_TAG",
            "ENABLE_SYNTHETIC_SWAPPING": "false", "ENABLE_TIER2_ENTROPY": "false",
            "CUSTOM_REGEX_PATH": str(wd / "custom_regex.yaml"), "ENABLE_AGENT_BREAKER": "false",
            "ANONYMOUS_USAGE_TRACKING": "false", "TELEMETRY_ENABLED": "false", "ENABLE_EXT_PROC": "false",
            "LOG_LEVEL": "WARNING", "POLICIES_FILE_PATH": str(wd / "policies.yaml"),
        })  # fmt: skip
        self.port = free_port()
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [str(exe), "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"],
            cwd=wd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        )  # fmt: skip
        self.pid = self.proc.pid
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if len(self.log) < 2000:
                self.log.append(line.rstrip())

    def wait(self, timeout: float = 90) -> int:
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self.port
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{PEER} did not start:\n" + "\n".join(self.log[-15:]))

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {KEY}"}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
