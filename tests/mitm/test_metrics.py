"""The Prometheus metrics (mitm/metrics.py), in-process: the option, the endpoint, what
each outcome counts, and that no series ever carries an original."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons, tflow, tutils
from prometheus_client.parser import text_string_to_metric_families

from anthropic_util import build_stream
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.metrics import Metrics, parse_address

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
ORIGINALS = ("Acme Corp", "bob@corp.example.com", "corp.example.com")


class Stack:
    """The script's addon list (launch.addons) in a mitmproxy test context."""

    def __init__(self, tctx, metrics: Metrics) -> None:
        self.tctx = tctx
        self.m = metrics
        self.d = metrics.disguise
        self.chain = [metrics, self.d, self.d.inspect, metrics.tail]

    def hook(self, name: str, flow) -> None:
        for a in self.chain:
            fn = getattr(a, name, None)
            if fn is not None:
                fn(flow)

    def scrape(self) -> str:
        assert self.m.server is not None
        with urllib.request.urlopen(self.m.server.url, timeout=10) as r:
            return r.read().decode()

    def value(self, name: str, **labels: str) -> float:
        text = self.scrape()
        total = 0.0
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    total += s.value
        return total


@contextlib.contextmanager
def stack(tmp_path: Path, address: str = "127.0.0.1:0"):
    (tmp_path / "m.yaml").write_text(MAPPING)
    d = Disguise()
    m = Metrics(d)
    d.reloaded = m.reloaded
    with taddons.context(m, d, d.inspect, m.tail) as tctx:
        try:
            tctx.configure(d, disguise_mappings=[str(tmp_path / "m.yaml")])
            tctx.configure(m, disguise_metrics=address)
            yield Stack(tctx, m)
        finally:
            m.done()
            tctx.master.event_loop.close()


def messages_flow(content: str, path: str = "/v1/messages", stream: bool = True):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = path
    f.request.host = "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    f.request.content = json.dumps({"model": "m", "max_tokens": 5, "stream": stream,
                                    "messages": [{"role": "user", "content": content}]}).encode()  # fmt: skip
    return f


def send(s: Stack, f) -> None:
    s.hook("requestheaders", f)
    s.hook("request", f)


def stream_back(s: Stack, f, text: str) -> bytes:
    """The response: an Anthropic stream of `text`, three characters a read."""
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    s.hook("responseheaders", f)
    out = b""
    body = build_stream([("text", [text[i : i + 3] for i in range(0, len(text), 3)])])
    for piece in body.split(b"\n\n")[:-1]:
        for chunk in f.response.stream(piece + b"\n\n"):
            out += chunk
    for chunk in f.response.stream(b""):
        out += chunk
    s.hook("response", f)
    return out


def test_the_address_is_host_colon_port() -> None:
    assert parse_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_address(" localhost:0 ") == ("localhost", 0)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    for bad in ("9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:94x", "http://h:1", "::1:9464"):
        with pytest.raises(exceptions.OptionsError, match="not HOST:PORT"):
            parse_address(bad)


def test_off_by_default_and_a_bad_value_or_a_port_in_use_fails_at_configure(tmp_path: Path) -> None:
    d = Disguise()
    m = Metrics(d)
    with taddons.context(m, d) as tctx:
        try:
            assert tctx.options.disguise_metrics == "" and m.server is None
            with pytest.raises(exceptions.OptionsError, match="not HOST:PORT"):
                tctx.configure(m, disguise_metrics="9464")
            with socket.socket() as taken:
                taken.bind(("127.0.0.1", 0))
                taken.listen(1)
                port = taken.getsockname()[1]
                with pytest.raises(exceptions.OptionsError, match=f"port {port} is in use on 127.0.0.1"):
                    tctx.configure(m, disguise_metrics=f"127.0.0.1:{port}")
            with pytest.raises(exceptions.OptionsError, match="cannot be served there"):
                tctx.configure(m, disguise_metrics="no-such-host.invalid:9464")
            assert m.server is None
        finally:
            m.done()
            tctx.master.event_loop.close()


def test_the_endpoint_serves_metrics_at_its_path_and_stops_on_done(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        server = s.m.server
        assert server is not None
        assert "disguise_requests_total" in s.scrape()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(server.url.replace("/metrics", "/"), timeout=10)
        assert e.value.code == 404
        e.value.close()
        port = server.port
        s.m.done()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_two_instances_in_one_process_keep_their_own_series(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with stack(tmp_path / "a") as a, stack(tmp_path / "b") as b:
        f = messages_flow("Acme Corp")
        send(a, f)
        a.hook("error", f)  # a masked request counts once it has left (the Guard, last, may still refuse it)
        assert a.value("disguise_requests_total", api="anthropic.messages", outcome="masked") == 1
        assert b.value("disguise_requests_total", api="anthropic.messages", outcome="masked") == 0


def test_masked_refused_and_passed_requests_are_counted_and_no_original_is_ever_in_a_scrape(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        f = messages_flow("Acme Corp, write to bob@corp.example.com and Acme Corp")
        send(s, f)
        assert b"Acme Corp" not in f.request.content
        out = stream_back(s, f, json.loads(f.request.content)["messages"][0]["content"])
        assert b"Acme" in out  # restored
        # an endpoint disguise does not transform: with an original refused, clean passed
        refused = messages_flow("bob@corp.example.com", path="/v1/files")
        send(s, refused)
        assert refused.response is not None and refused.response.status_code == 400
        clean = messages_flow("nothing to hide", path="/v1/files")
        send(s, clean)
        s.hook("response", clean)

        v = s.value
        assert v("disguise_requests_total", api="anthropic.messages", outcome="masked") == 1
        assert v("disguise_requests_total", api="unknown", outcome="refused") == 1
        assert v("disguise_requests_total", api="unknown", outcome="passed") == 1
        assert v("disguise_requests_total") == 3
        assert v("disguise_request_rule_kinds_total", rule_kind="literal", outcome="masked") == 1
        assert v("disguise_request_rule_kinds_total", rule_kind="pattern", outcome="masked") == 1
        assert v("disguise_request_rule_kinds_total", rule_kind="pattern", outcome="refused") == 1
        assert v("disguise_request_rule_kinds_total", rule_kind="none", outcome="passed") == 1
        assert v("disguise_masks_total", rule_kind="literal", rule="literals") == 2
        assert v("disguise_masks_total", rule_kind="pattern", rule="EMAIL") == 1
        assert v("disguise_responses_total", api="anthropic.messages", body="stream", outcome="restored") == 1
        assert v("disguise_responses_total", outcome="failed") == 0
        assert v("disguise_restored_total", api="anthropic.messages") == 3
        assert v("disguise_stream_events_total", api="anthropic.messages") > 5
        assert v("disguise_stream_read_seconds_count", api="anthropic.messages") > 5
        assert v("disguise_request_seconds_count", api="anthropic.messages", outcome="masked") == 1
        assert v("disguise_request_seconds_count") == 3
        text = s.scrape()
        for o in ORIGINALS:
            assert o not in text


def test_a_stream_the_addon_could_not_reverse_counts_failed_and_one_the_provider_cut_counts_cut(
    tmp_path: Path,
) -> None:
    with stack(tmp_path) as s:
        f = messages_flow("Acme Corp")
        send(s, f)
        f.response = tutils.tresp(content=b"")
        f.response.headers["content-type"] = "text/event-stream"
        f.response.headers["content-encoding"] = "no-such-coding"  # the addon cannot read it: its own error
        s.hook("responseheaders", f)
        assert b"disguise: cannot decode a" in b"".join(f.response.stream(b"data: x\n\n"))
        s.hook("response", f)
        g = messages_flow("Acme Corp")
        send(s, g)
        g.response = tutils.tresp(content=b"")
        g.response.headers["content-type"] = "text/event-stream"
        s.hook("responseheaders", g)
        g.response.stream(b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"')
        assert b"ended before message_stop" in b"".join(g.response.stream(b""))  # the provider cut it
        s.hook("response", g)
        v = s.value
        assert v("disguise_responses_total", api="anthropic.messages", body="stream", outcome="failed") == 1
        assert v("disguise_responses_total", api="anthropic.messages", body="stream", outcome="cut") == 1
        assert v("disguise_responses_total", outcome="restored") == 0


def test_a_whole_body_restored_is_timed_and_counted(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        f = messages_flow("Acme Corp", stream=False)
        send(s, f)
        body = {"id": "m", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": "Zenith Labs"}], "stop_reason": "end_turn"}  # fmt: skip
        f.response = tutils.tresp(content=json.dumps(body).encode())
        f.response.headers["content-type"] = "application/json"
        s.hook("responseheaders", f)
        s.hook("response", f)
        assert json.loads(f.response.content)["content"][0]["text"] == "Acme Corp"
        assert s.value("disguise_responses_total", api="anthropic.messages", body="whole", outcome="restored") == 1
        assert s.value("disguise_response_seconds_count", api="anthropic.messages") == 1


def test_the_guard_refusing_a_masked_request_counts_it_refused_not_masked(tmp_path: Path) -> None:
    """A later addon put an original back after masking: the Guard (last) refuses it."""
    with stack(tmp_path) as s:
        f = messages_flow("Acme Corp")
        s.hook("requestheaders", f)
        s.hook("request", f)
        f.request.content = f.request.content.replace(b"Zenith Labs", b"Acme Corp")
        s.d.guard.request(f)
        assert f.response is not None
        s.hook("response", f)
        assert s.value("disguise_requests_total", outcome="masked") == 0
        assert s.value("disguise_requests_total", api="anthropic.messages", outcome="refused") == 1
        assert s.value("disguise_request_rule_kinds_total", rule_kind="literal", outcome="refused") == 1


def test_reloads_ok_and_failed(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        # the context loaded the rules of its defaults first: the test's own were a reload
        assert s.value("disguise_reloads_total", outcome="ok") == 1
        assert s.value("disguise_reloads_total", outcome="failed") == 0
        (tmp_path / "m.yaml").write_text(MAPPING + "bogus: 1\n")
        send(s, messages_flow("Acme Corp"))  # mapping files are looked at per request
        assert s.value("disguise_reloads_total", outcome="failed") == 1
        (tmp_path / "m.yaml").write_text(MAPPING.replace("Acme Corp: Zenith Labs", "Acme Corp: Zenith Labs\n  Bluebird: Heron"))
        send(s, messages_flow("Acme Corp"))
        assert s.value("disguise_reloads_total", outcome="ok") == 2
        with pytest.raises(exceptions.OptionsError):
            s.tctx.configure(s.d, disguise_mappings=[str(tmp_path / "missing.yaml")])
        assert s.value("disguise_reloads_total", outcome="failed") == 2


def test_a_fresh_disguise_counts_no_reload_at_its_first_load(tmp_path: Path) -> None:
    d = Disguise()
    m = Metrics(d)
    d.reloaded = m.reloaded
    (tmp_path / "m.yaml").write_text(MAPPING)
    with taddons.context(m, d, options=None) as tctx:
        try:
            d.configure(set(tctx.options.keys()))
            assert m.m.reloads.labels("ok")._value.get() == 0 and d.config is not None
        finally:
            tctx.master.event_loop.close()


def test_a_value_refused_at_run_time_leaves_the_running_endpoint_serving(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        before = s.m.server
        assert before is not None
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            with pytest.raises(exceptions.OptionsError, match="is in use"):
                s.tctx.options.update(disguise_metrics=f"127.0.0.1:{taken.getsockname()[1]}")
        assert s.m.server is before and "disguise_requests_total" in s.scrape()
        assert s.tctx.options.disguise_metrics == "127.0.0.1:0"  # mitmproxy rolled the option back


def test_metrics_off_import_no_prometheus_and_reloads_counted_meanwhile_start_the_counter() -> None:
    """A proxy whose metrics are off never imports prometheus_client nor the WSGI server
    it would serve them with (wsgiref): its idle memory and start-up, also once mitmproxy
    registered the addons (its command scan reads every attribute dir() names); reloads
    counted while off start the counter once they are turned on."""
    import subprocess
    import sys

    import disguiselib

    addon_dir = str(Path(disguiselib.__file__).resolve().parent.parent)
    code = ("import sys; from disguiselib.launch import addons; from mitmproxy.test import taddons; a = addons(); m = a[0]; "
            "t = taddons.context(*a); t.__enter__(); m.reloaded('reloaded'); "
            "m.reloaded('loaded'); assert 'prometheus_client' not in sys.modules, 'imported'; "
            "assert not [n for n in sys.modules if n.startswith('wsgiref')], 'wsgiref imported'; "
            "assert m.m.reloads.labels('ok')._value.get() == 1 and m.m.reloads.labels('failed')._value.get() == 0")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": addon_dir}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_next_turn_cut_from_the_turn_before_is_counted_and_said(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A conversation's next turn masked from the turn before (turns.py) counts in
    disguise_next_turns_cut_total and its flow's summary says so; the turn before, masked
    the full path, does neither."""
    from disguiselib import turns
    from disguiselib.inspect.record import META

    monkeypatch.setattr(turns, "MIN_BYTES", 0)  # (a short body masked on the loop, remembered and cut)
    with stack(tmp_path) as s:
        assert s.value("disguise_next_turns_cut_total", api="anthropic.messages") == 0  # (there from the start)
        said = ["Acme Corp wrote to bob@corp.example.com"]
        for n in range(3):
            f = messages_flow("")
            doc = json.loads(f.request.content)
            doc["messages"] = [{"role": "user", "content": t} for t in said]
            f.request.content = json.dumps(doc).encode()
            send(s, f)
            assert b"Acme Corp" not in f.request.content and b"bob@" not in f.request.content
            assert (f.metadata[META].get("turn") == "cut from the turn before") is (n > 0)
            s.hook("response", f)
            assert s.value("disguise_next_turns_cut_total", api="anthropic.messages") == n
            said.append(f"and Acme Corp again, turn {n}")
        assert s.value("disguise_requests_total", api="anthropic.messages", outcome="masked") == 3
