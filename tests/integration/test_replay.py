"""Replay runs through the live pipeline, through real mitmdump processes.

- A recorded Gemini streamed JSON array (`streamGenerateContent` without `alt=sse`),
  re-run offline with `-nr`, equals the live run: the offline path picks the same
  reverser as the live one (it used not to: the client text of the re-run held
  disguises while the report blamed the request).
- A session recorded under one set of rules and replayed (`-C`, `-nr`) under rules that
  lack one of those that masked it is refused, naming what is missing; nothing of it
  reaches the provider. `disguise_replay_current_rules` replays it with the rules in force.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mitmproxy import http, io

from integration_util import (
    ADDON,
    MITMDUMP,
    FakeUpstream,
    Mitmdump,
    Recorded,
    Reply,
    cut,
    http_post,
    mitmdump_cmd,
    run_mitmdump,
    write_mappings,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
MINE = {"literals": {"Acme Corp": "Zenith Labs"}, "patterns": [{"name": "CUSTOMER_ID", "regex": r"CUST-[0-9]{6}"}]}
BOB = "bob@corp.example.com"
GEMINI = "/v1beta/models/gemini-array:streamGenerateContent"
JSON_HEADERS = {"Content-Type": "application/json; charset=UTF-8"}


def read_flows(path: Path) -> list[http.HTTPFlow]:
    with open(path, "rb") as f:
        return [f for f in io.FlowReader(f).stream() if isinstance(f, http.HTTPFlow)]


def write_flows(path: Path, flows: list[http.HTTPFlow]) -> None:
    with open(path, "wb") as fo:
        w = io.FlowWriter(fo)
        for f in flows:
            w.add(f)


def _chunk(text: str, finish: str | None = None) -> dict:
    cand: dict = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}


def gemini_array_handler(rec: Recorded) -> Reply:
    """Echo the masked prompt back as a streamed JSON array, disguises cut across chunks."""
    prompt = rec.json["contents"][0]["parts"][0]["text"]  # "Zenith Labs mails [EMAIL_1]"
    cuts = [prompt[:3], prompt[3:15], prompt[15:20], prompt[20:]]
    chunks = [_chunk(c) for c in cuts] + [_chunk(" thanks", finish="STOP")]
    bodies = [json.dumps(c, indent=2) for c in chunks]
    pieces = [b"[" + bodies[0].encode() + b"\n"] + [b",\r\n" + b.encode() + b"\n" for b in bodies[1:]] + [b"]"]
    return Reply(cut(pieces, seed=5), headers=JSON_HEADERS)


def array_texts(body: bytes) -> str:
    return "".join(p["text"] for c in json.loads(body) for p in c["candidates"][0]["content"]["parts"])


@pytest.fixture(scope="module")
def gemini_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    tmp = tmp_path_factory.mktemp("replay-gemini")
    mpath = write_mappings(tmp, {**MINE, "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}]})
    flows = tmp / "gemini.flows"
    with FakeUpstream() as up:
        up.on(GEMINI, gemini_array_handler)
        md = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", mpath, "-w", str(flows)))
        try:
            body = json.dumps({"contents": [{"role": "user", "parts": [{"text": f"Acme Corp mails {BOB}"}]}]})
            status, _, got = http_post(md.port, GEMINI, body.encode(), {"x-goog-api-key": "test-key"})
        finally:
            md.stop()  # mitmproxy 11 writes the flows at exit
        assert status == 200, md.output
        sent = up.for_path(GEMINI)[-1].body.decode()
        assert "Acme" not in sent and BOB not in sent
    client = array_texts(got)
    assert client == f"Acme Corp mails {BOB} thanks"
    yield flows, mpath, client


def test_recorded_gemini_array_rerun_offline_equals_the_live_run(gemini_session, tmp_path: Path) -> None:
    flows, mpath, client = gemini_session
    out = tmp_path / "rerun.flows"
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(flows), "--set", f"confdir={tmp_path / 'conf'}",
                            "-s", str(ADDON), "--set", f"disguise_mappings={mpath}", "-w", str(out)])  # fmt: skip
    assert rc == 0, log
    assert "re-run offline: equals the live run" in log, log
    assert "DIFFERS" not in log
    (f,) = read_flows(out)
    assert array_texts(f.response.content) == client  # restored by the array stream, as live
    assert "Zenith" not in f.response.text and "[EMAIL_" not in f.response.text


# -- replay under other rules ---------------------------------------------------------------


def echo_anthropic(rec: Recorded) -> Reply:
    text = rec.json["messages"][0]["content"]
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": rec.json["model"],
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture(scope="module")
def mine_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Recorded with the user's own mappings (a literal and a pattern the shipped
    defaults do not have) on top of the defaults."""
    tmp = tmp_path_factory.mktemp("replay-rules")
    mine = write_mappings(tmp, MINE, "mine.yaml")
    flows = tmp / "session.flows"
    with FakeUpstream() as up:
        up.on("claude-x", echo_anthropic)
        md = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", mine, "-w", str(flows)))
        try:
            body = {"model": "claude-x", "max_tokens": 5,
                    "messages": [{"role": "user", "content": "Acme Corp, account CUST-123456"}]}  # fmt: skip
            status, _, got = http_post(md.port, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "k"})
        finally:
            md.stop()
        assert status == 200, md.output
        sent = up.for_model("claude-x")[-1].body
        assert b"Acme" not in sent and b"CUST-123456" not in sent
    assert json.loads(got)["content"][0]["text"] == "Acme Corp, account CUST-123456"
    return flows, mine


def _retarget(src: Path, dst: Path, port: int) -> None:
    flows = read_flows(src)
    for f in flows:  # the recorded provider is gone: point the flows at this one
        f.request.port = port
    write_flows(dst, flows)


def test_client_replay_under_rules_missing_the_recordings_is_refused(mine_session, tmp_path: Path) -> None:
    flows, _ = mine_session
    with FakeUpstream() as up:
        up.on("claude-x", echo_anthropic)
        src = tmp_path / "src.flows"
        _retarget(flows, src, up.port)
        # the README's replay command: the shipped defaults only
        rc, log = run_mitmdump([str(MITMDUMP), "-C", str(src), "--listen-host", "127.0.0.1", "--listen-port", "0",
                                "--set", f"confdir={tmp_path / 'conf'}", "-s", str(ADDON)])  # fmt: skip
        assert rc == 0, log
        assert up.requests == [], "a replay under other rules reached the provider"
    assert "cannot replay: rules that masked the recording are not in force" in log, log
    assert "pattern CUSTOMER_ID and 1 literal" in log
    assert "Acme" not in log and "CUST-123456" not in log


def test_client_replay_with_the_current_rules_when_asked(mine_session, tmp_path: Path) -> None:
    flows, mine = mine_session
    with FakeUpstream() as up:
        up.on("claude-x", echo_anthropic)
        src = tmp_path / "src.flows"
        _retarget(flows, src, up.port)
        # with the recording's own rules: replayed, masked as live
        rc, log = run_mitmdump([str(MITMDUMP), "-C", str(src), "--listen-host", "127.0.0.1", "--listen-port", "0",
                                "--set", f"confdir={tmp_path / 'conf'}", "-s", str(ADDON),
                                "--set", f"disguise_mappings={mine}"])  # fmt: skip
        assert rc == 0, log
        assert len(up.requests) == 1 and b"Acme" not in up.requests[0].body
        # with other rules, when the user says so: replayed with those rules
        rc, log = run_mitmdump([str(MITMDUMP), "-C", str(src), "--listen-host", "127.0.0.1", "--listen-port", "0",
                                "--set", f"confdir={tmp_path / 'conf'}", "-s", str(ADDON),
                                "--set", "disguise_replay_current_rules=true"])  # fmt: skip
        assert rc == 0, log
        assert len(up.requests) == 2
        assert b"Acme Corp" in up.requests[1].body  # what the user chose: the defaults don't know it


def test_offline_rerun_under_rules_missing_the_recordings_is_refused(mine_session, tmp_path: Path) -> None:
    flows, _ = mine_session
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(flows), "--set", f"confdir={tmp_path / 'conf'}",
                            "-s", str(ADDON)])  # fmt: skip
    assert rc == 0, log
    assert "re-run refused: rules that masked the recording are not in force: pattern CUSTOMER_ID" in log, log
    assert "Acme" not in log and "CUST-123456" not in log


# -- a decompression bomb saved in a flow file -------------------------------------------------


def test_a_bomb_in_a_flow_file_ends_with_an_explicit_error(gemini_session, tmp_path: Path) -> None:
    """Offline replay (`-nr`) and `disguise audit` read recorded bodies within
    disguise_decoded_limit, never through mitmproxy's unbounded get_content: a response
    saved as 64 MiB of zeros in 64 kB of gzip, read under a 1 MiB limit, ends each with an
    error that names the limit (the re-run's verdict; the audit exits non-zero, never
    "clean") instead of expanding it."""
    import gzip
    import subprocess
    import sys

    flows, mpath, _ = gemini_session
    (f,) = read_flows(flows)
    assert f.response is not None
    f.response.headers["content-encoding"] = "gzip"
    f.response.raw_content = gzip.compress(b'[{"pad": "' + b"0" * (64 << 20) + b'"}]', 6)
    bomb = tmp_path / "bomb.flows"
    write_flows(bomb, [f])
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(bomb), "--set", f"confdir={tmp_path / 'conf'}",
                            "-s", str(ADDON), "--set", f"disguise_mappings={mpath}",
                            "--set", "disguise_decoded_limit=1048576"])  # fmt: skip
    assert rc == 0, log
    assert "re-run: cannot decode the recorded body" in log and "disguise_decoded_limit" in log, log
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-m", "disguiselib", "audit", str(bomb), "--mappings", str(mpath)],
                       cwd=repo, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(repo / "addon")})  # fmt: skip
    assert r.returncode != 0 and "expands past" in r.stderr, r.stdout + r.stderr
