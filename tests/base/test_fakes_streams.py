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
    "apis/anthropic/test_messages_stream.py", "apis/openai/test_chat.py", "apis/openai/test_responses.py",
    "apis/openai/test_legacy.py", "apis/google/test_stream.py", "apis/google/test_array.py",
    "apis/bedrock/test_stream.py", "apis/openai/test_realtime.py", "apis/google/test_live.py",
    "base/test_stream.py", "base/test_stream_endings.py", "base/test_channels.py",
    "base/test_escaped_keys.py", "base/test_fields_streams.py", "base/test_logprobs.py",
    "base/test_restore.py", "base/test_holdback.py", "wire/test_decoding.py",
]  # fmt: skip


def test_strategies_switch_to_fakes() -> None:
    code = "import strategies as s; print(s.FAKES, sorted(k for k in s.PLACEHOLDERS if not k.startswith('[')))"
    env = {**os.environ, "DISGUISE_TEST_FAKES": "1", "PYTHONPATH": f"{ROOT / 'addon'}{os.pathsep}{TESTS}"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("True") and "bob7q@mail.example" in out


# The second configuration of properties the suite runs whole with 100 examples each: half
# as many here (hypothesis' "reference" profile, as the Python engine's rerun), where no
# profile of fewer was asked for (`make mutation`'s). Every split point of the short cases
# and every recorded stream still run whole. (The largest item of CI's suite: 96 and 95 s
# on its two sides with 100 examples; alone at idle 57.7 s, 35.0 s with 50.)
CHILD_PROFILE = "mutation" if os.environ.get("HYPOTHESIS_PROFILE") == "mutation" else "reference"


@pytest.mark.parametrize("group", [FILES[:9], FILES[9:]], ids=["apis", "shared"])
def test_every_stream_property_with_fakes(group: list[str]) -> None:
    env = {**os.environ, "DISGUISE_TEST_FAKES": "1", "PYTHONPATH": f"{ROOT / 'addon'}{os.pathsep}{TESTS}",
           "HYPOTHESIS_PROFILE": CHILD_PROFILE}  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *[str(TESTS / f) for f in group]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
