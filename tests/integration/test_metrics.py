"""The metrics endpoint (`disguise_metrics`) of real mitmdump processes, three of them behind
a real HAProxy, started the way docs/operations.md says (deploy/balance.py, each instance
with `disguise_metrics=127.0.0.1:0`: a free port each, logged), the official anthropic SDK
as the client: each instance's /metrics is scraped, and the counts of all three add up to
what was sent; no original planted in a request ever appears in a scrape.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from integration_util import ADDON, MITMDUMP, FakeUpstream, Recorded, Reply, run_mitmdump, sse, write_mappings

anthropic = pytest.importorskip("anthropic")
text_string_to_metric_families = pytest.importorskip("prometheus_client.parser").text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_haproxy as th  # noqa: E402  (the balancer's harness; its marks skip where HAProxy is missing)

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}")]
NEEDS_HAPROXY = th.pytestmark[-1]

MAPPINGS = {
    "literals": {"Acme Corp": "Zenith Labs"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
STREAMS = 24
WHOLE = 9
REFUSED = 6
PASSED = 3
SECRET = "Acme Corp"


def prompt(i: int) -> str:
    return f"{SECRET} case {i}: write to agent{i}@planted.example.org today"


def originals(i: int) -> list[str]:
    return [SECRET, f"agent{i}@planted.example.org", "planted.example.org"]


def echo(rec: Recorded) -> Reply:
    """The fake provider: the masked prompt back, four characters a delta (or whole)."""
    doc = rec.json
    if "messages" not in doc:  # an endpoint disguise does not transform
        return Reply([b'{"id": "file_1", "type": "file"}'], headers={"content-type": "application/json"},
                     framing="length")  # fmt: skip
    text = doc["messages"][-1]["content"]
    if not doc.get("stream"):
        body = {"id": "msg_1", "type": "message", "role": "assistant", "model": doc["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        return Reply([json.dumps(body).encode()], headers={"content-type": "application/json"}, framing="length")

    def events():
        yield sse({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": doc["model"], "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})  # fmt: skip
        yield sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        for k in range(0, len(text), 4):
            yield sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[k : k + 4]}})
        yield sse({"type": "content_block_stop", "index": 0})
        yield sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": 9}})  # fmt: skip
        yield sse({"type": "message_stop"})

    return Reply(events(), headers={"content-type": "text/event-stream"}, delay=0.001)


def metrics_urls(logs: Path, names: list[str], timeout: float = 60) -> dict[str, str]:
    """Each instance's metrics URL, from the line it logs when its endpoint is up."""
    urls: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while len(urls) < len(names) and time.monotonic() < deadline:
        for n in names:
            log = logs / f"{n}.log"
            m = re.search(r"disguise: metrics at (http://127\.0\.0\.1:\d+/metrics)", log.read_text() if log.exists() else "")
            if m:
                urls[n] = m.group(1)
        time.sleep(0.1)
    assert len(urls) == len(names), urls
    return urls


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.headers.get("content-type", "").startswith("text/plain")
        return r.read().decode()


def total(texts: list[str], name: str, **labels: str) -> float:
    """A sample's sum over every instance (PromQL's `sum without(instance)`)."""
    out = 0.0
    for text in texts:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    out += s.value
    return out


@NEEDS_HAPROXY
def test_three_instances_behind_haproxy_count_what_was_sent_and_never_an_original(tmp_path: Path) -> None:
    folder = tmp_path / "mappings"
    folder.mkdir()
    write_mappings(folder, MAPPINGS, "10-team.yaml")
    with FakeUpstream() as up:
        up.on("m", echo)
        up.on("/v1/files", echo)
        proc, port, pids, _ = th.start_balance([
            "--instances", "3", "--listen", "127.0.0.1:0", "--mode", f"reverse:http://127.0.0.1:{up.port}",
            "--confdir", str(tmp_path / "conf"), "--logs", str(tmp_path / "logs"), "--mitmdump", str(MITMDUMP),
            "--", *th.ARGS, "--set", f"disguise_mappings={folder}", "--set", "disguise_metrics=127.0.0.1:0",
        ])  # fmt: skip
        try:
            urls = metrics_urls(tmp_path / "logs", sorted(pids))
            assert len(set(urls.values())) == 3
            served: dict[str, int] = {}
            with anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="sk-ant-test-credential",
                                     max_retries=0, timeout=60.0,
                                     http_client=anthropic.DefaultHttpxClient(trust_env=False)) as client:  # fmt: skip
                for i in range(STREAMS):
                    with client.messages.stream(model="m", max_tokens=50,
                                                messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
                        assert s.get_final_text() == prompt(i)
                        name = s.response.headers.get(th.balance.INSTANCE_HEADER, "")
                        served[name] = served.get(name, 0) + 1
                for i in range(STREAMS, STREAMS + WHOLE):
                    msg = client.messages.create(model="m", max_tokens=50, messages=[{"role": "user", "content": prompt(i)}])
                    assert msg.content[0].text == prompt(i)
                # an endpoint disguise does not transform: refused with an original in it, passed without
                for i in range(REFUSED):
                    with pytest.raises(anthropic.BadRequestError, match="not an endpoint disguise transforms"):
                        client.post("/v1/files", cast_to=object, body={"purpose": "x", "note": prompt(100 + i)})
                for i in range(PASSED):
                    assert client.post("/v1/files", cast_to=object, body={"purpose": f"clean {i}"})["id"] == "file_1"
            assert set(served) == set(pids), served  # every instance took a share of the streams

            sent = STREAMS + WHOLE
            want = {
                ("disguise_requests_total", (("api", "anthropic.messages"), ("outcome", "masked"))): sent,
                ("disguise_requests_total", (("api", "unknown"), ("outcome", "refused"))): REFUSED,
                ("disguise_requests_total", (("api", "unknown"), ("outcome", "passed"))): PASSED,
                ("disguise_requests_total", ()): sent + REFUSED + PASSED,
                ("disguise_masks_total", (("rule", "literals"),)): sent,
                ("disguise_masks_total", (("rule", "EMAIL"),)): sent,
                # each refusal names the rule that found its original: a literal or a pattern, never none
                ("disguise_request_rule_kinds_total", (("outcome", "refused"),)): REFUSED,
                ("disguise_request_rule_kinds_total", (("rule_kind", "none"), ("outcome", "refused"))): 0,
                ("disguise_responses_total", (("body", "stream"), ("outcome", "restored"))): STREAMS,
                ("disguise_responses_total", (("body", "whole"), ("outcome", "restored"))): WHOLE,
                ("disguise_responses_total", (("outcome", "failed"),)): 0,
                ("disguise_restored_total", ()): 2 * sent,
                ("disguise_request_seconds_count", ()): sent + REFUSED + PASSED,
                ("disguise_response_seconds_count", ()): WHOLE,
            }
            # a flow is counted when its last hook ran, a moment after its client had the last byte
            deadline = time.monotonic() + 30
            while True:
                texts = [scrape(u) for u in urls.values()]
                got = {k: total(texts, k[0], **dict(k[1])) for k in want}
                if got == want or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert got == want
            assert total(texts, "disguise_stream_read_seconds_count") >= STREAMS * 10
            assert total(texts, "disguise_stream_events_total") >= STREAMS * 10
            per_instance = [total([t], "disguise_requests_total", outcome="masked") for t in texts]
            assert all(per_instance), per_instance
            for t in texts:
                for i in range(STREAMS + WHOLE + 100 + REFUSED):
                    for o in originals(i):
                        assert o not in t, o
            # the provider saw placeholders only
            for rec in up.for_model("m"):
                assert SECRET not in rec.body.decode() and "planted.example.org" not in rec.body.decode()
        finally:
            th.stop(proc)


@pytest.mark.parametrize("value", ["taken", "9464", "no-such-host.invalid:9464"])
def test_mitmdump_does_not_start_with_metrics_it_cannot_serve(tmp_path: Path, value: str) -> None:
    """Fail closed: no proxy runs without the metrics it was asked for."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        if value == "taken":
            value = f"127.0.0.1:{taken.getsockname()[1]}"
        folder = tmp_path / "m"
        folder.mkdir()
        write_mappings(folder, MAPPINGS)
        code, out = run_mitmdump([str(MITMDUMP), "-s", str(ADDON), "--listen-host", "127.0.0.1", "--listen-port", "0",
                                  "--set", f"confdir={tmp_path / 'conf'}", "--set", f"disguise_mappings={folder}",
                                  *th.ARGS, "--set", f"disguise_metrics={value}"], timeout=60)  # fmt: skip
    assert code == 1, out
    assert f"OptionsError: disguise_metrics={value}" in out.replace("'", ""), out
    want = "is in use on 127.0.0.1" if value.startswith("127.") else "not HOST:PORT" if ":" not in value else "cannot be served"
    assert want in out, out
