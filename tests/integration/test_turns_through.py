"""A conversation's next turn through real mitmdump processes (turns.py; which APIs,
registry.Api.turns), the official openai SDK as the client: a Chat Completions
conversation of ~100 KB (from turns.MIN_BYTES on) sent turn after turn to one proxy,
whose masking worker masks the first turn (from 64 KiB here) and which cuts each next
turn from the one before; its last turn alone to another proxy, which has seen nothing
of it and masks it the full path. Upstream gets the same bytes from both, with no
original; each proxy's /metrics counts the turns it cut (disguise_next_turns_cut_total).
Bounds are generous: nothing here times the machine."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Recorded, Reply, running_proxy

openai = pytest.importorskip("openai")
parser = pytest.importorskip("prometheus_client.parser")

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}")]

MAPPINGS = {
    "literals": {"Acme Corp": "Zenith Labs", "nova-internal": "vega-unit"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
ORIGINALS = ["Acme Corp", "nova-internal", "alice@example.com", "bob@corp.example.org"]
MODEL = "turns-model"


def _reply(rec: Recorded) -> Reply:
    doc = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": MODEL,
           "choices": [{"index": 0, "message": {"role": "assistant", "content": "noted"}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
    return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")


def conversation(turns: int) -> list[dict]:
    """The system prompt, a long tool result read in the first turn (~100 KB), then an
    exchange a turn; originals everywhere."""
    words = ["the", "build", "Acme Corp", "failed", "alice@example.com", "in", "nova-internal", "é", "ok", "\n"]
    log = " ".join(words[(i * 7) % len(words)] for i in range(14000))
    out: list[dict] = [
        {"role": "system", "content": "You help Acme Corp's engineers (nova-internal)."},
        {"role": "user", "content": "read the build log"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "read_file", "arguments": json.dumps({"path": "/srv/nova-internal/build.log"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": log},
    ]  # fmt: skip
    for n in range(1, turns):
        out.append({"role": "assistant", "content": f"The log names Acme Corp {n} times."})
        out.append({"role": "user", "content": f"mail it to bob@corp.example.org, turn {n}"})
    return out


def metrics_url(proxy: Proxy) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"disguise: metrics at (http://127\.0\.0\.1:\d+/metrics)", proxy.mitm.output)
        if m:
            return m.group(1)
        time.sleep(0.05)
    raise AssertionError("no metrics endpoint logged")


def cut_count(proxy: Proxy) -> float:
    with urllib.request.urlopen(metrics_url(proxy), timeout=10) as r:
        text = r.read().decode()
    return sum(s.value for fam in parser.text_string_to_metric_families(text) for s in fam.samples
               if s.name == "disguise_next_turns_cut_total" and s.labels.get("api") == "openai.chat")  # fmt: skip


def _dir(tmp: Path, name: str) -> Path:
    (tmp / name).mkdir()
    return tmp / name


def _client(proxy: Proxy):  # noqa: ANN202
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=120.0,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # fmt: skip


def test_a_chat_conversations_next_turns_are_cut_and_leave_as_the_full_path_sends_them(tmp_path: Path) -> None:
    with (
        FakeUpstream() as up,
        running_proxy(_dir(tmp_path, "turns"), MAPPINGS, "--set", "disguise_metrics=127.0.0.1:0",
                      "--set", "disguise_offload_bytes=65536", upstream=up) as turns,
        running_proxy(_dir(tmp_path, "fresh"), MAPPINGS, "--set", "disguise_metrics=127.0.0.1:0", upstream=up) as fresh,
    ):  # fmt: skip
        up.on(MODEL, _reply)
        sent: list[bytes] = []
        with _client(turns) as client:
            for n in (1, 2, 3):
                before = len(up.requests)
                answer = client.chat.completions.create(model=MODEL, messages=conversation(n))  # type: ignore[arg-type]
                assert answer.choices[0].message.content == "noted"
                (rec,) = up.requests[before:]
                sent.append(rec.body)
        assert len(sent[0]) > 64 * 1024
        before = len(up.requests)
        with _client(fresh) as client:
            client.chat.completions.create(model=MODEL, messages=conversation(3))  # type: ignore[arg-type]
        (alone,) = up.requests[before:]
        assert sent[2] == alone.body  # the cut's bytes are the full path's
        for body in (*sent, alone.body):
            assert not any(o.encode() in body or json.dumps(o).encode()[1:-1] in body for o in ORIGINALS)
        assert cut_count(turns) == 2 and cut_count(fresh) == 0
