"""What a recorded flow says went upstream when mitmproxy streamed the request body
(a chunked body, fed to the masking worker as it arrives; or `stream_large_bodies`),
through real mitmdump (`-w`) and the audit read as the README writes it: mitmproxy keeps
none of such a body, so the flow keeps what left (up to disguise_capture_limit). An
original that went upstream in one — forwarded under disguise_allow_unknown or
disguise_fail_open — is a leak the audit reports; a masked one is kept byte for byte
(the views, the offline re-run and share read it); one larger than the limit is said
not kept: the audit says NOT PROVEN and share leaves it out, never "clean"."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mitmproxy import io as mio

from integration_util import MITMDUMP, REPO, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPING = {"literals": {"Acme Corp": "Zenith Labs"}}
HEADERS = {"content-type": "application/json", "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
# how mitmproxy comes to stream the body: a chunked one (fed to the worker, or scanned
# whole), or any body past stream_large_bodies (sent with a length)
HOW = {"chunked": (), "stream_large_bodies": ("--set", "stream_large_bodies=100")}


def ok(rec: Recorded) -> Reply:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(body).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture
def up() -> Iterator[FakeUpstream]:
    with FakeUpstream() as u:
        for key in ("m", "/v1/files", "/v1/messages"):
            u.on(key, ok)
        yield u


def post(port: int, path: str, body: bytes, chunked: bool) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if chunked:
            conn.request("POST", path, body=iter([body[:40], body[40:]]), headers=HEADERS, encode_chunked=True)
        else:
            conn.request("POST", path, body=body, headers=HEADERS)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def record(up: FakeUpstream, tmp: Path, how: str, bodies: list[tuple[str, bytes]], *extra: str) -> Path:
    flows = tmp / "session.flows"
    m = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", write_mappings(tmp, MAPPING), "-w", str(flows), *HOW[how],
                              *extra))  # fmt: skip
    try:
        for path, body in bodies:
            assert post(m.port, path, body, how == "chunked") == 200
    finally:
        m.stop()
    return flows


def disguise(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", str(tmp / "mappings.yaml"), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip


def saved(flows: Path) -> list:
    with flows.open("rb") as f:
        return list(mio.FlowReader(f).stream())


@pytest.mark.parametrize("how", list(HOW))
def test_an_original_forwarded_in_a_streamed_body_is_a_leak_the_audit_reports(
    up: FakeUpstream, tmp_path: Path, how: str
) -> None:
    """disguise_allow_unknown (an upload to /v1/files) and disguise_fail_open (a body that
    is not JSON) let "Acme Corp" go upstream in a streamed body: the audit finds both."""
    bodies = [("/v1/files", b"notes for Acme Corp " + b"x" * 300),
              ("/v1/messages", b'{"model": "m", "messages": [Acme Corp ' + b"y" * 300)]  # fmt: skip
    flows = record(up, tmp_path, how, bodies, "--set", "disguise_allow_unknown=true",
                   "--set", "disguise_fail_open=true")  # fmt: skip
    assert [b"Acme Corp" in r.body for r in up.requests] == [True, True]  # they did go out
    assert [fl.request.raw_content for fl in saved(flows)] == [r.raw for r in up.requests]
    r = disguise(tmp_path, "audit", str(flows))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "flow 1 POST /v1/files" in r.stdout and "flow 2 POST /v1/messages" in r.stdout
    assert r.stdout.count("LEAK upstream: literal") == 2 and "Acme Corp" not in r.stdout, r.stdout


@pytest.mark.parametrize("how", list(HOW))
def test_a_masked_streamed_body_is_kept_as_it_left(up: FakeUpstream, tmp_path: Path, how: str) -> None:
    """The flow holds the masked body byte for byte (its hash too): the offline re-run
    equals the live run, the audit reads it clean, share copies it."""
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp " + "z" * 300}]}
    flows = record(up, tmp_path, how, [("/v1/messages", json.dumps(doc).encode())])
    (sent,) = [r.body for r in up.requests]
    assert b"Zenith Labs" in sent and b"Acme Corp" not in sent
    (fl,) = saved(flows)
    assert fl.request.raw_content == sent
    r = disguise(tmp_path, "audit", str(flows))
    assert r.returncode == 0 and "clean: 1 LLM flow audited" in r.stdout, r.stdout + r.stderr
    r = disguise(tmp_path, "share", str(flows), str(tmp_path / "shared.flows"))
    assert r.returncode == 0 and "1 flow written" in r.stdout, r.stdout + r.stderr
    assert saved(tmp_path / "shared.flows")[0].request.raw_content == sent
    out = subprocess.run([str(MITMDUMP), "-nr", str(flows), "-s", str(REPO / "addon" / "disguise.py"),
                          "--set", f"disguise_mappings={tmp_path / 'mappings.yaml'}",
                          "--set", f"confdir={tmp_path / 'conf'}"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "re-run offline: equals the live run" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("how", list(HOW))
def test_a_streamed_body_past_the_capture_limit_is_not_proven_clean(up: FakeUpstream, tmp_path: Path,
                                                                     how: str) -> None:  # fmt: skip
    """Larger than disguise_capture_limit, the body is not kept: the audit cannot read
    what went upstream and says so (exit 2), share leaves the flow out saying why, and
    the Disguise view says how much left."""
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp " + "z" * 300}]}
    bodies = [("/v1/files", b"notes for Acme Corp " + b"x" * 300), ("/v1/messages", json.dumps(doc).encode())]
    flows = record(up, tmp_path, how, bodies, "--set", "disguise_allow_unknown=true",
                   "--set", "disguise_capture_limit=300")  # fmt: skip
    assert len(up.requests[0].body) == 320 and len(up.requests[1].body) > 300
    r = disguise(tmp_path, "audit", str(flows))
    assert r.returncode == 2 and r.stdout.count("NOT KEPT WHOLE") == 2, r.stdout + r.stderr
    assert "NOT PROVEN" in r.stdout
    r = disguise(tmp_path, "share", str(flows), str(tmp_path / "shared.flows"))
    assert r.returncode == 0 and "0 flows written" in r.stdout, r.stdout + r.stderr
    assert "request body streamed upstream, larger than disguise_capture_limit" in r.stdout
    r = disguise(tmp_path, "show", str(flows), "1")
    assert "NOT KEPT: 320 bytes streamed upstream" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("how", ["whole", *HOW])
def test_a_request_forwarded_with_an_original_is_marked_in_the_flow_list(up: FakeUpstream, tmp_path: Path,
                                                                         how: str) -> None:  # fmt: skip
    """disguise_allow_unknown lets an upload holding "Acme Corp" go upstream: the log
    said so, but the flow itself had no comment or mark, and the Disguise view called its
    request "as it went upstream (masked)". It is marked ⛔, its comment and view say
    what was let through (the rule and the place, never the value), and the audit's line
    too; an upload that holds none stays unmarked."""
    bodies = [("/v1/files", b"notes for Acme Corp " + b"x" * 300), ("/v1/files", b"notes " + b"x" * 300)]
    flows = record(up, tmp_path, "chunked" if how == "whole" else how, bodies, "--set", "disguise_allow_unknown=true",
                   *(("--set", "disguise_stream_bytes=0") if how == "whole" else ()))  # fmt: skip
    leaked, clean = saved(flows)
    assert leaked.marked == ":no_entry:" and clean.marked == "" and clean.comment == ""
    assert leaked.comment.startswith("disguise: FORWARDED WITH AN ORIGINAL (disguise_allow_unknown): an original "
                                     "(literal in body"), leaked.comment  # fmt: skip
    assert "Acme" not in leaked.comment
    r = disguise(tmp_path, "show", str(flows), "1")
    assert "FORWARDED WITH AN ORIGINAL" in r.stdout and "(NOT masked: disguise_allow_unknown)" in r.stdout, r.stdout
    assert "⟦Acme Corp⟧" in r.stdout  # marked as an original in what went upstream
    assert "marked: ⟦…⟧ originals (they went upstream as they are: NOT masked)" in r.stdout
    r = disguise(tmp_path, "audit", str(flows))
    assert r.returncode == 1 and "flow 1 POST /v1/files [openai.files]: 1 leak (forwarded with an original" in r.stdout
