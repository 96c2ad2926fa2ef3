"""Codex's `x-codex-turn-metadata` header, end to end: the official openai SDK (the header
as Codex sends it, `extra_headers`) -> a real mitmdump running the addon -> a fake
upstream. The header holds the user's working directory and git branch, where the
user's originals are: it reaches the provider masked (no original, the same JSON, every
other member byte-identical, as the body's client_metadata copy), on every path a
request takes: masked in the request hook, in the masking worker process (the verdict
crosses a process boundary), fed to the worker as it arrives (its headers leave first),
taken whole from mitmproxy's stream (stream_large_bodies). Any other header that holds
an original is still refused. Before the fix every such request was refused (probe K4)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, FakeUpstream, Proxy, Recorded, Reply, running_proxy

openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

HEADER = "x-codex-turn-metadata"
MAPPINGS = {"literals": {"acme-corp": "zenith-labs"}, "patterns": [{"name": "USER", "regex": "jsmith[0-9]*"}]}
META = {
    "session_id": "019cc1fd-99ba-7962-b000-f2bda295b1b7",
    "turn_id": "019cc1fd-aaaa-7962-b000-f2bda295b1b7",
    "cwd": "/Users/jsmith/acme-corp/api",
    "git_branch": "acme-corp/fix",
    "git_remote": "git@github.com:acme-corp/api.git",
    "os": "macos",
    "terminal": "iTerm.app",
}
TURN = json.dumps(META)
# the same text, its originals replaced: every other byte of it as the client wrote it
MASKED = TURN.replace("acme-corp", "zenith-labs").replace("jsmith", "[USER_1]")
# worker from 64 KiB; a body declared from 256 KiB is fed to it as it arrives
WORKER = ("--set", "disguise_offload_bytes=65536", "--set", "disguise_stream_bytes=262144")


def _reply(rec: Recorded) -> Reply:
    doc = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5-codex",
           "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": "ok [USER_1]", "annotations": []}]}],
           "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip
    return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        up.on("gpt-5-codex", _reply)
        yield up


@pytest.fixture(scope="module")
def proxies(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proxy]]:
    with (
        running_proxy(tmp_path_factory.mktemp("worker"), MAPPINGS, *WORKER, upstream=upstream) as worker,
        running_proxy(tmp_path_factory.mktemp("whole"), MAPPINGS, "--set", "disguise_offload_bytes=0",
                      "--set", "stream_large_bodies=100k", upstream=upstream) as whole,
    ):  # fmt: skip
        deadline = time.monotonic() + 120  # the worker's rule set built (its log line)
        while "masking worker ready" not in worker.mitm.output and time.monotonic() < deadline:
            time.sleep(0.05)
        yield {"worker": worker, "whole": whole}


def _create(proxy: Proxy, text: str, **headers: str):
    with openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=120.0,
                       http_client=openai.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
        return client.responses.create(
            model="gpt-5-codex", input=text, store=False,
            extra_headers={HEADER: TURN, **headers}, extra_body={"client_metadata": {HEADER: TURN}},
        )  # fmt: skip


@pytest.mark.parametrize(
    ("which", "size"),
    [("worker", 0), ("worker", 100_000), ("worker", 400_000), ("whole", 200_000)],
    ids=["request-hook", "worker-process", "worker-as-it-arrives", "taken-whole-from-the-stream"],
)
def test_the_header_reaches_upstream_masked(proxies, upstream, which: str, size: int) -> None:
    proxy = proxies[which]
    before = len(upstream.requests)
    text = "jsmith2 asks about acme-corp " + "lorem ipsum " * (size // 12)
    got = _create(proxy, text)
    assert got.output_text == "ok jsmith"  # restored: the header's and the body's [USER_1]
    (rec,) = upstream.requests[before:]
    value = rec.headers[HEADER]
    assert value == MASKED, value  # no original; every other member byte-identical
    assert value.isascii() and "\r" not in value and "\n" not in value
    assert json.loads(value)["cwd"] == "/Users/[USER_1]/zenith-labs/api"
    sent = rec.json
    assert sent["client_metadata"][HEADER] == MASKED  # the body's copy: masked the same way
    assert sent["input"].startswith("[USER_2] asks about zenith-labs")
    assert b"jsmith" not in rec.body and b"acme-corp" not in rec.body
    # a body taken from mitmproxy's stream goes on chunked (its headers left before it)
    streamed = which == "whole" or size >= 400_000
    assert ("transfer-encoding" in rec.headers) is streamed, rec.headers


def test_another_header_holding_an_original_is_still_refused(proxies, upstream) -> None:
    before = len(upstream.requests)
    with pytest.raises(openai.BadRequestError) as e:
        _create(proxies["worker"], "hi", **{"x-note": "jsmith"})
    assert "header x-note" in str(e.value) and "jsmith" not in str(e.value)
    assert len(upstream.requests) == before
