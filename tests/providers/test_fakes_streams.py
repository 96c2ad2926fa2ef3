"""Every API's stream properties once more with disguise_fakes: the same property tests
(random texts, random delta splits, random byte fragmentation, every split point of the
short cases) with a rule set that has a fakes key and a flow that issued fakes beside its
placeholders (tests/strategies.py under DISGUISE_TEST_FAKES=1), in a child pytest: the
strategies are module-level, built once per process. The test_fastpath properties take
fakes as a parameter of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
# the stream and window properties of every API (HTTP streams, WebSockets, event-stream)
FILES = [
    "providers/test_anthropic_stream.py", "providers/test_openai_chat.py", "providers/test_openai_responses.py",
    "providers/test_legacy.py", "providers/test_gemini_stream.py", "providers/test_gemini_array.py",
    "providers/test_bedrock_stream.py", "providers/test_openai_realtime.py", "providers/test_gemini_live.py",
    "providers/test_stream.py", "providers/test_stream_endings.py", "providers/test_channels.py",
    "providers/test_escaped_keys.py", "providers/test_fields_streams.py", "providers/test_logprobs.py",
    "providers/test_restore.py", "core/test_holdback.py", "core/test_decoding.py",
]  # fmt: skip


def test_strategies_switch_to_fakes() -> None:
    code = "import strategies as s; print(s.FAKES, sorted(k for k in s.PLACEHOLDERS if not k.startswith('[')))"
    env = {**os.environ, "DISGUISE_TEST_FAKES": "1", "PYTHONPATH": f"{ROOT / 'addon'}{os.pathsep}{TESTS}"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("True") and "bob7q@mail.example" in out


@pytest.mark.parametrize("group", [FILES[:9], FILES[9:]], ids=["apis", "shared"])
def test_every_stream_property_with_fakes(group: list[str]) -> None:
    env = {**os.environ, "DISGUISE_TEST_FAKES": "1", "PYTHONPATH": f"{ROOT / 'addon'}{os.pathsep}{TESTS}"}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *[str(TESTS / f) for f in group]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
