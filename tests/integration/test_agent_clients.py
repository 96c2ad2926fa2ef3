"""Coding agents' own surface, through a real mitmdump: what OpenAI's Codex CLI sends and
reads besides the plain Responses request.

- Codex opens the Responses API as a WebSocket first (`GET .../responses`, Upgrade:
  websocket) and falls back to HTTP at once only on 426 Upgrade Required
  (codex-rs/core/src/client.rs); any other refusal it retries five times, with backoff,
  before it falls back. disguise cannot mask the WebSocket, so it refuses it with 426.
- Codex replays the compaction items the ChatGPT backend sends it (`compaction`, its alias
  `compaction_summary`, `context_compaction`; codex-rs/protocol/src/models.rs): their
  `encrypted_content` is ciphertext, byte-identical both ways, whatever it happens to hold.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, Proxy, Recorded, Reply, http_post, raw_events, running_proxy, sse

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

# an original and a disguise that can occur in base64 ciphertext
MAPPINGS = {"literals": {"Kestrel9Q": "Falcon42Z"}}
_RND = base64.b64encode(os.urandom(300)).decode()
BLOB_OUT = "gAAAAABp" + _RND[:100] + "Kestrel9Q" + _RND[100:]  # holds the original
BLOB_BACK = "gAAAAABp" + _RND[:100] + "Falcon42Z" + _RND[100:]  # holds the disguise
COMPACTIONS = ("compaction", "compaction_summary", "context_compaction")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-agents"), MAPPINGS, "--set", "keep_host_header=true") as p:
        yield p


def upgrade(port: int, path: str, host: str) -> tuple[int, bytes]:
    """A WebSocket upgrade as Codex sends it; the status and the body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Authorization: Bearer token\r\nOpenAI-Beta: responses_websockets=2026-02-04\r\n"
            "originator: codex_cli_rs\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            assert chunk, f"connection closed: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(h.split(b":", 1)[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
        while len(body) < length:
            chunk = s.recv(65536)
            assert chunk
            body += chunk
    return int(head.split(b" ", 2)[1]), body


@pytest.mark.parametrize(("path", "host"), [("/backend-api/codex/responses", "chatgpt.com"),
                                            ("/v1/responses", "api.openai.com")])  # fmt: skip
def test_codex_responses_websocket_is_refused_with_426_so_codex_uses_http_at_once(
    proxy: Proxy, path: str, host: str
) -> None:
    before = len(proxy.upstream.requests)
    status, body = upgrade(proxy.port, path, host)
    assert status == 426
    msg = json.loads(body)["error"]["message"]
    assert "WebSocket traffic cannot be masked" in msg and "over HTTP" in msg
    assert len(proxy.upstream.requests) == before  # nothing went upstream


def test_another_websocket_is_still_refused_with_400(proxy: Proxy) -> None:
    status, _ = upgrade(proxy.port, "/v1/some/socket", "api.openai.com")
    assert status == 400


def _compact(rec: Recorded) -> Reply:
    items = [{"type": t, "id": "cmp_1", "encrypted_content": BLOB_BACK} for t in COMPACTIONS]
    body = json.dumps({"id": "r", "object": "response.compaction", "output": items}).encode()
    return Reply([body], headers={"Content-Type": "application/json"}, framing="length")


def _stream(rec: Recorded) -> Reply:
    item = {"type": "context_compaction", "id": "cmp_2", "encrypted_content": BLOB_BACK}
    events = [
        {"type": "response.created", "sequence_number": 0,
         "response": {"id": "r2", "object": "response", "status": "in_progress", "output": []}},
        {"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": item},
        {"type": "response.completed", "sequence_number": 2,
         "response": {"id": "r2", "object": "response", "status": "completed", "output": [item]}},
    ]  # fmt: skip
    return Reply([sse(e) for e in events], headers={"Content-Type": "text/event-stream"})


def test_codex_compaction_items_ciphertext_passes_byte_identical_both_ways(proxy: Proxy) -> None:
    up = proxy.upstream
    up.on("codex-compact", _compact)
    up.on("codex-stream", _stream)
    inp = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Kestrel9Q"}]}]
    inp += [{"type": t, "id": "cmp_1", "encrypted_content": BLOB_OUT} for t in COMPACTIONS]
    body = json.dumps({"model": "codex-compact", "input": inp, "instructions": "compact"}).encode()
    status, _, got = http_post(proxy.port, "/backend-api/codex/responses/compact", body,
                               {"authorization": "Bearer token", "host": "chatgpt.com"})  # fmt: skip
    assert status == 200, got
    sent = up.for_model("codex-compact")[-1].json["input"]
    assert sent[0]["content"][0]["text"] == "Falcon42Z"  # the message itself is masked
    assert [i["encrypted_content"] == BLOB_OUT for i in sent[1:]] == [True] * 3
    assert [i["encrypted_content"] == BLOB_BACK for i in json.loads(got)["output"]] == [True] * 3

    body = json.dumps({"model": "codex-stream", "input": "hi", "stream": True, "store": False}).encode()
    status, _, got = http_post(proxy.port, "/backend-api/codex/responses", body,
                               {"authorization": "Bearer token", "host": "chatgpt.com"})  # fmt: skip
    assert status == 200, got
    docs = [json.loads(e.data) for e in raw_events(got) if e.data]
    assert [d["item"]["encrypted_content"] for d in docs if d["type"] == "response.output_item.done"] == [BLOB_BACK]
    assert docs[-1]["response"]["output"][0]["encrypted_content"] == BLOB_BACK
