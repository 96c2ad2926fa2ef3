"""Large request bodies masked in the worker process (disguise_offload_bytes), through real
mitmdump and the official anthropic SDK: upstream receives exactly the bytes the
in-process path sends (a mitmdump with the worker off beside it), the answer is restored
the same, and a worker killed mid-body refuses that request (never forwarded) while the
next one gets a fresh worker. Bounds are generous: nothing here times the machine."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Recorded, Reply, running_proxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

LITERALS = {"Acme Corp": "Zenith Labs", "nova-internal": "nova", "Ünïcødé GmbH": "Unicode Ltd"}
MAPPINGS = {
    "literals": LITERALS,
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
ORIGINALS = [*LITERALS, "alice@example.com", "bob@corp.example.org"]
STARTED = re.compile(r"masking worker started \(pid (\d+)\)")


def _reply(rec: Recorded) -> Reply:
    """A whole answer quoting the request's first disguise (restored on the way back)."""
    text = rec.body.decode()
    said = next((d for d in ("Zenith Labs", "[EMAIL_1]") if d in text), "nothing")
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "big", "stop_reason": "end_turn",
           "content": [{"type": "text", "text": f"You said {said}."}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        up.on("big", _reply)
        yield up


@pytest.fixture(scope="module")
def proxies(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proxy]]:
    """Two mitmdumps in front of one upstream: the worker at 64 KiB, and off (0)."""
    with (
        running_proxy(tmp_path_factory.mktemp("on"), MAPPINGS, "--set", "disguise_offload_bytes=65536",
                      upstream=upstream) as on,
        running_proxy(tmp_path_factory.mktemp("off"), MAPPINGS, "--set", "disguise_offload_bytes=0",
                      upstream=upstream) as off,
    ):  # fmt: skip
        yield {"on": on, "off": off}


def _messages(seed: int, size: int) -> list[dict]:
    """A Claude-Code-shaped conversation of about size bytes: prose, a tool call with JSON
    input, a tool result holding a file, originals everywhere."""
    import random

    rng = random.Random(seed)
    words = ["the", "build", "failed", "in", "module", "Acme Corp", "alice@example.com", "nova-internal", "Ünïcødé GmbH",
             "ok", "\\path", '"quoted"', "bob@corp.example.org", "é", "data", "\n"]  # fmt: skip
    out: list[dict] = []
    n = 0
    i = 0
    while n < size:
        text = " ".join(rng.choice(words) for _ in range(400))
        out.append({"role": "user", "content": [{"type": "text", "text": text}]})
        out.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "read_file",
                                                      "input": {"path": f"/src/{rng.choice(words)}.py", "lines": [1, i]}}]})  # fmt: skip
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                 "content": json.dumps({"file": text, "owner": "Acme Corp"})}]})  # fmt: skip
        n += 3 * len(text) + 200
        i += 1
    out.append({"role": "user", "content": "and now?"})
    return out


def _client(proxy: Proxy) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.base_url, api_key="test", max_retries=0, timeout=120.0,
                               http_client=anthropic.DefaultHttpxClient(trust_env=False))  # fmt: skip


def _started(proxy: Proxy) -> list[int]:
    return [int(m.group(1)) for m in STARTED.finditer(proxy.mitm.output)]


def _ready(proxy: Proxy, n: int = 1) -> list[int]:
    """The workers started, once the n-th said its rule set is built (event-driven: its
    log line; generous for a loaded machine)."""
    deadline = time.monotonic() + 120
    while proxy.mitm.output.count("masking worker ready") < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return _started(proxy)


@pytest.mark.parametrize("size", [100_000, 600_000])
def test_the_worker_sends_upstream_exactly_what_the_process_sends(proxies, upstream, size) -> None:
    got: dict[str, bytes] = {}
    answers: dict[str, str] = {}
    for key, proxy in proxies.items():
        before = len(upstream.requests)
        with _client(proxy) as client:
            msg = client.messages.create(model="big", max_tokens=5, messages=_messages(size, size))  # type: ignore[arg-type]
        answers[key] = msg.content[0].text  # type: ignore[union-attr]
        (rec,) = upstream.requests[before:]
        got[key] = rec.body
    assert got["on"] == got["off"]
    assert not any(o.encode() in got["on"] or json.dumps(o).encode()[1:-1] in got["on"] for o in ORIGINALS)
    assert answers["on"] == answers["off"] == "You said Acme Corp."
    assert _started(proxies["on"]), "the worker was not used"
    assert not _started(proxies["off"])


def _post(proxy: Proxy, body: bytes) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=300)
    try:
        conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json", "x-api-key": "t",
                                                                 "anthropic-version": "2023-06-01"})  # fmt: skip
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("fail_open", [False, True])
def test_a_worker_killed_mid_body_refuses_it_and_the_next_gets_a_fresh_worker(tmp_path: Path, fail_open: bool) -> None:
    """Refused even with disguise_fail_open: the worker gave no verdict, nothing is known
    of the body. (mitmdump_cmd's disguise_offload_warm=false: the first large body starts
    the worker, and is masked in a thread of the proxy while the worker starts.)"""
    body = json.dumps({"model": "big", "max_tokens": 5, "messages": _messages(1, 600_000)}).encode()
    assert len(body) > 256 * 1024
    extra = ("--set", "disguise_fail_open=true") if fail_open else ()
    with FakeUpstream() as up:
        up.on("big", _reply)
        with running_proxy(tmp_path, MAPPINGS, *extra, upstream=up) as proxy:  # the default threshold, 256 KiB
            assert not _started(proxy)  # not with the proxy: with the first body that needs it
            assert _post(proxy, body)[0] == 200
            (pid,) = _ready(proxy)  # started by it, in the background: the next body goes to it
            os.kill(pid, signal.SIGSTOP)  # it can no longer answer
            out: dict[str, tuple[int, bytes]] = {}
            th = threading.Thread(target=lambda: out.setdefault("r", _post(proxy, body)))
            th.start()
            time.sleep(5)  # generous: the proxy has handed the body to the stopped worker
            os.kill(pid, signal.SIGKILL)
            th.join(120)
            status, answer = out["r"]
            assert status == 400, answer
            assert b"masking worker failed" in answer
            assert len(up.requests) == 1  # the refused body never went upstream
            status, _ = _post(proxy, body)
            assert status == 200 and len(up.requests) == 2
            assert len(_ready(proxy, 2)) == 2
            pids = _started(proxy)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and os.path.exists(f"/proc/{pids[-1]}"):
            time.sleep(0.1)
        zombie = os.path.exists(f"/proc/{pids[-1]}") and "Z" in Path(f"/proc/{pids[-1]}/stat").read_text().split()[2]
        assert not os.path.exists(f"/proc/{pids[-1]}") or zombie, "the worker outlived mitmdump"
        assert not any(o.encode() in r.body for r in up.requests for o in ORIGINALS)
