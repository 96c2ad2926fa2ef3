"""Several instances behind a real HAProxy behave like one (contract §6), started the way
a user starts them: `python deploy/balance.py` (three `mitmdump -s deploy/health.py -s
addon/disguise.py` instances and HAProxy in front), the official anthropic SDK as the
client, a fake provider that echoes the masked prompt back in small deltas.

- 500 streams open at once through the balancer, every one restored exactly, none of
  its originals upstream, every instance taking its share;
- a mapping added to the shared folder is used by every instance at its next request;
- one instance killed mid-stream (SIGKILL) costs exactly the streams it carried: each of
  those ends with an error at the client (an incomplete chunked body: never a clean end,
  never a disguise in the text it got), every other stream completes, and new streams go
  to the survivors at once; one stopped (SIGTERM) drains and costs nothing;
- HTTPS clients through a TLS-terminating bind;
- regular mode (HAProxy balancing TCP connections): every instance presents the one
  shared CA, so an HTTPS client that trusts it works whichever instance it lands on.
"""

from __future__ import annotations

import asyncio
import datetime
import http.client
import ipaddress
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from integration_util import MITMDUMP, REPO, FakeUpstream, Recorded, Reply, sse, write_mappings

anthropic = pytest.importorskip("anthropic")

HAPROXY = shutil.which("haproxy")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
    pytest.mark.skipif(
        HAPROXY is None,
        reason="HAProxy is not installed here (apt-get install -y haproxy; .ci/run installs it before the tests)",
    ),  # fmt: skip
]

sys.path.insert(0, str(REPO / "deploy"))
import balance  # noqa: E402

MAPPINGS = {
    "literals": {"Acme Corp": "Zenith Labs"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
INSTANCES = 3
STREAMS = 500
# Only the test's own mappings: the shipped defaults cost several seconds of start-up per
# instance (57 patterns compiled), and nothing here depends on them.
ARGS = ["--set", "disguise_defaults=false"]


def prompt(i: int) -> str:
    return f"Acme Corp ticket {i}: mail user{i}@corp.example.com about it. Acme Corp thanks you."


def originals(i: int) -> list[str]:
    return ["Acme Corp", f"user{i}@corp.example.com"]


# -- the fake provider ---------------------------------------------------------------------


@dataclass
class Gate:
    """Holds every stream of one scenario after its first half until `release`."""

    arrived: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    go: threading.Event = field(default_factory=threading.Event)


def echo(gates: dict[str, Gate], barrier: dict[str, threading.Barrier]):
    def handler(rec: Recorded) -> Reply:
        doc = rec.json
        text = doc["messages"][-1]["content"]
        model = doc["model"]

        def events():
            yield sse({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})  # fmt: skip
            yield sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
            for n, p in enumerate(pieces):
                if n == len(pieces) // 2:
                    if model in barrier:  # every stream of the scenario is open at once here
                        barrier[model].wait()
                    if model in gates:
                        gates[model].arrived.release()
                        gates[model].go.wait(60)
                yield sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
            yield sse({"type": "content_block_stop", "index": 0})
            yield sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 9}})  # fmt: skip
            yield sse({"type": "message_stop"})

        if not doc.get("stream"):
            body = {"id": "msg_2", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
            return Reply([json.dumps(body).encode()], headers={"content-type": "application/json"}, framing="length")
        return Reply(events(), headers={"content-type": "text/event-stream"}, delay=0.001)

    return handler


# -- the balanced cluster, started by deploy/balance.py ---------------------------------------


@dataclass
class Cluster:
    port: int
    pids: dict[str, int]
    ports: dict[str, int]
    proc: subprocess.Popen
    up: FakeUpstream
    mappings: Path
    logs: Path
    gates: dict[str, Gate]
    barrier: dict[str, threading.Barrier]
    tls_port: int
    tls_cert: Path

    def client(self, **kw):
        return anthropic.Anthropic(base_url=f"http://127.0.0.1:{self.port}", api_key="sk-ant-test-credential",
                                   max_retries=0, timeout=60.0, http_client=anthropic.DefaultHttpxClient(trust_env=False),
                                   **kw)  # fmt: skip

    def async_client(self):
        return anthropic.AsyncAnthropic(base_url=f"http://127.0.0.1:{self.port}", api_key="sk-ant-test-credential",
                                        max_retries=0, timeout=60.0,
                                        http_client=anthropic.DefaultAsyncHttpxClient(trust_env=False))  # fmt: skip


def start_balance(args: list[str], timeout: float = 60) -> tuple[subprocess.Popen, int, dict[str, int], dict[str, int]]:
    """Run deploy/balance.py; returns (process, HAProxy's port, pid and port per instance)."""
    env = {
        k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    }
    proc = subprocess.Popen([sys.executable, str(REPO / "deploy" / "balance.py"), *args], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)  # fmt: skip
    pids: dict[str, int] = {}
    ports: dict[str, int] = {}
    result: list[int] = []
    tls: list[int] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.match(r"instance (\w+): pid (\d+), 127\.0\.0\.1:(\d+)", line)
            if m:
                pids[m.group(1)], ports[m.group(1)] = int(m.group(2)), int(m.group(3))
            m = re.match(r"listening at 127\.0\.0\.1:(\d+)", line)
            if m:
                result.append(int(m.group(1)))
            m = re.match(r"TLS listening at 127\.0\.0\.1:(\d+)", line)
            if m:
                tls.append(int(m.group(1)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.reader = reader  # type: ignore[attr-defined]  # joined by stop()
    deadline = time.monotonic() + timeout
    while not result:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError(f"deploy/balance.py did not start (exit {proc.returncode})")
        time.sleep(0.05)
    proc.tls_port = tls[0] if tls else None  # type: ignore[attr-defined]
    return proc, result[0], pids, ports


def stop(proc: subprocess.Popen) -> None:
    """Stop deploy/balance.py (it stops its instances and HAProxy)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.reader.join(10)  # type: ignore[attr-defined]
    if proc.stdout is not None:
        proc.stdout.close()


def health(port: int) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", balance.HEALTH_PATH)
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("haproxy")
    folder = tmp / "mappings"
    folder.mkdir()
    write_mappings(folder, MAPPINGS, "10-team.yaml")
    gates: dict[str, Gate] = {}
    barrier: dict[str, threading.Barrier] = {}
    cert, key = self_signed(tmp)
    (tmp / "haproxy.pem").write_bytes(cert.read_bytes() + key.read_bytes())  # HAProxy: both in one file
    with FakeUpstream() as up:
        up.server.socket.listen(1024)  # 500 connections arrive at once (socketserver listens with 5)
        up.on("m", echo(gates, barrier))
        for k in ("many", "kill", "term", "after"):
            up.on(k, echo(gates, barrier))
        proc, port, pids, ports = start_balance([
            "--instances", str(INSTANCES), "--listen", "127.0.0.1:0", "--mode", f"reverse:http://127.0.0.1:{up.port}",
            "--confdir", str(tmp / "conf"), "--logs", str(tmp / "logs"), "--mitmdump", str(MITMDUMP),
            "--tls-listen", "127.0.0.1:0", "--tls-cert", str(tmp / "haproxy.pem"),
            "--", *ARGS, "--set", f"disguise_mappings={folder}",
        ])  # fmt: skip
        try:
            yield Cluster(port, pids, ports, proc, up, folder, tmp / "logs", gates, barrier, proc.tls_port, cert)
        finally:
            for g in gates.values():
                g.go.set()
            stop(proc)


# -- tests ------------------------------------------------------------------------------------


def test_each_instance_answers_its_health_check_itself(cluster: Cluster) -> None:
    for name, port in cluster.ports.items():
        status, text = health(port)
        assert status == 200 and re.fullmatch(r"ok: \d+ literals, \d+ patterns\n", text), (name, text)
    assert not cluster.up.for_path(balance.HEALTH_PATH), "a health check reached the provider"


def test_500_concurrent_streams_through_the_balancer_are_all_restored(cluster: Cluster) -> None:
    """Every stream is held half-way until all 500 are open at once: a stream that could
    not open (a limit anywhere on the way) breaks the barrier and fails the test."""
    cluster.barrier["many"] = threading.Barrier(STREAMS, timeout=60)

    async def one(client, i: int) -> tuple[str, str]:
        async with client.messages.stream(model="many", max_tokens=50,
                                          messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
            text = await s.get_final_text()
            return text, s.response.headers.get(balance.INSTANCE_HEADER, "")

    async def run():
        async with cluster.async_client() as client:
            return await asyncio.gather(*(one(client, i) for i in range(STREAMS)))

    t0 = time.monotonic()
    got = asyncio.run(run())
    took = time.monotonic() - t0
    for i, (text, _) in enumerate(got):
        assert text == prompt(i), i
    served = {name: sum(1 for _, n in got if n == name) for name in cluster.pids}
    assert all(served.values()), served  # every instance took a share
    upstream = cluster.up.for_model("many")
    assert len(upstream) == STREAMS
    for rec in upstream:
        body = rec.body.decode()
        assert "Zenith Labs ticket" in body and "[EMAIL_1]" in body, body
        assert "Acme Corp" not in body and "@corp.example.com" not in body, body
    print(f"{STREAMS} concurrent streams through HAProxy and {INSTANCES} instances: {took:.1f} s, served {served}")


def test_a_mapping_change_is_used_by_every_instance(cluster: Cluster) -> None:
    write_mappings(cluster.mappings, {"literals": {"Bluebird": "Heron"}}, "20-added.yaml")
    seen: dict[str, int] = {}
    with cluster.client() as client:
        # (until each instance answered once: on a loaded machine HAProxy may hold one back
        # a while, its health check late; 18 requests once missed one)
        for i in range(30 * INSTANCES):
            raw = client.messages.with_raw_response.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": f"Project Bluebird {i}"}]
            )
            assert raw.parse().content[0].text == f"Project Bluebird {i}"
            name = raw.headers.get(balance.INSTANCE_HEADER, "")
            seen[name] = seen.get(name, 0) + 1
            if len(seen) == INSTANCES and i >= 2 * INSTANCES:
                break
    assert set(seen) == set(cluster.pids), seen
    sent = [r.body.decode() for r in cluster.up.for_model("m")]
    assert sent and all("Project Heron" in b and "Bluebird" not in b for b in sent), sent


def test_tls_terminated_at_the_balancer(cluster: Cluster) -> None:
    """Clients speak HTTPS to HAProxy; the instances behind it listen on 127.0.0.1 only."""
    trust = ssl.create_default_context(cafile=str(cluster.tls_cert))
    seen = set()
    with anthropic.Anthropic(base_url=f"https://127.0.0.1:{cluster.tls_port}", api_key="sk-ant-test-credential",
                             max_retries=0, timeout=30.0,
                             http_client=anthropic.DefaultHttpxClient(verify=trust, trust_env=False)) as client:  # fmt: skip
        for i in range(2 * INSTANCES):
            with client.messages.stream(model="m", max_tokens=5,
                                        messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
                assert s.get_final_text() == prompt(i)
                seen.add(s.response.headers.get(balance.INSTANCE_HEADER))
    assert seen <= set(cluster.pids) and len(seen) >= 2, seen


def stop_one_mid_stream(cluster: Cluster, how: signal.Signals, model: str, alive: list[str]) -> str:
    """45 streams half-way through on the instances in `alive`; one of them is stopped
    with `how`; the rest of every stream is then sent. SIGKILL costs exactly the streams
    the instance carried; SIGTERM (deploy/health.py drains) costs nothing. Returns the
    stopped instance."""
    n = 45
    gate = cluster.gates[model] = Gate()
    results: dict[int, dict] = {}

    def one(i: int) -> None:
        r: dict = {"instance": None, "text": "", "error": None}
        results[i] = r
        try:
            with cluster.client() as client, client.messages.stream(
                    model=model, max_tokens=50, messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
                r["instance"] = s.response.headers.get(balance.INSTANCE_HEADER)
                for ev in s:
                    if ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                        r["text"] += ev.delta.text
                r["final"] = s.get_final_text()
        except Exception as e:  # noqa: BLE001 - what the client sees is the point
            r["error"] = e

    def raw(i: int) -> None:
        """The same at the HTTP level: the body the client gets, and how it ends."""
        r: dict = {"instance": None, "text": "", "error": None, "raw": True}
        results[i] = r
        conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=60)
        try:
            body = json.dumps({"model": model, "max_tokens": 50, "stream": True,
                               "messages": [{"role": "user", "content": prompt(i)}]})  # fmt: skip
            conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json",
                                                                     "x-api-key": "sk-ant-test-credential"})  # fmt: skip
            resp = conn.getresponse()
            r["instance"] = resp.getheader(balance.INSTANCE_HEADER)
            r["final"] = r["body"] = resp.read()
        except http.client.IncompleteRead as e:
            r["error"], r["body"] = e, e.partial
        except Exception as e:  # noqa: BLE001
            r["error"] = e
        finally:
            conn.close()

    threads = [threading.Thread(target=raw if i % 9 == 0 else one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for _ in range(n):  # every stream is half-way through, on some instance
        assert gate.arrived.acquire(timeout=60)
    deadline = time.monotonic() + 10
    while any(r["instance"] is None for r in results.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    # the victim: an instance carrying both an SDK stream and a raw one
    kinds = {(r["instance"], bool(r.get("raw"))) for r in results.values()}
    assert {r["instance"] for r in results.values()} <= set(alive), results
    victim = next(name for name in alive if (name, True) in kinds and (name, False) in kinds)
    on_victim = {i for i, r in results.items() if r["instance"] == victim}
    assert len(on_victim) < n, {i: r["instance"] for i, r in results.items()}
    os.kill(cluster.pids[victim], how)
    # SIGKILL: its connections are gone before the others go on. SIGTERM: its streams
    # outlast the drain's delay (3 s), so it must wait for them to finish.
    time.sleep(0.3 if how == signal.SIGKILL else 4.0)
    gate.go.set()
    for t in threads:
        t.join(60)

    lost = on_victim if how == signal.SIGKILL else set()
    for i, r in results.items():
        if i in lost:
            # an explicit error, never a clean end; the text so far is a restored prefix
            assert r["error"] is not None, (i, r)
            assert "final" not in r, (i, r)
            if r.get("raw"):
                assert isinstance(r["error"], http.client.IncompleteRead), repr(r["error"])
                assert b"message_stop" not in r["body"]
            else:
                # the SDK lets httpx's error through (httpx on mitmproxy 11's Python, httpx2 on 12's)
                assert type(r["error"]).__name__ == "RemoteProtocolError", repr(r["error"])
                assert "incomplete chunked read" in str(r["error"]), repr(r["error"])
                assert prompt(i).startswith(r["text"]) and r["text"], (i, r["text"])
                assert "Zenith" not in r["text"] and "[EMAIL" not in r["text"], r["text"]
        else:
            assert r["error"] is None, (i, r["instance"], repr(r["error"]))
            if r.get("raw"):
                assert r["final"].endswith(b'data: {"type":"message_stop"}\n\n'), r["final"][-80:]
            else:
                assert r["final"] == prompt(i), i

    # new streams right after: none is lost (a refused connection is sent on)
    after = []
    with cluster.client() as client:
        for i in range(2 * INSTANCES):
            with client.messages.stream(model="after", max_tokens=50,
                                        messages=[{"role": "user", "content": prompt(1000 + i)}]) as s:  # fmt: skip
                assert s.get_final_text() == prompt(1000 + i)
                after.append(s.response.headers.get(balance.INSTANCE_HEADER))
    survivors = [a for a in alive if a != victim]
    assert set(after) <= set(alive) and set(survivors) <= set(after), after
    if how == signal.SIGKILL:
        assert victim not in after, after
    # and the instance is gone: at once, or after draining
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(cluster.pids[victim], 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"{victim} still runs after {how.name}")
    return victim


def test_an_instance_killed_mid_stream_costs_only_its_streams_and_a_stopped_one_nothing(cluster: Cluster) -> None:
    """SIGKILL (a crash) of one instance, then SIGTERM (a restart, a deploy) of another."""
    alive = sorted(cluster.pids)
    gone = stop_one_mid_stream(cluster, signal.SIGKILL, "kill", alive)
    alive.remove(gone)
    stop_one_mid_stream(cluster, signal.SIGTERM, "term", alive)


# -- regular mode: TCP balancing, one CA ---------------------------------------------------------


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))  # fmt: skip
    pem = tmp / "upstream-cert.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile = tmp / "upstream-key.pem"
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))  # fmt: skip
    return pem, keyfile


def tls_upstream(tmp: Path) -> tuple[FakeUpstream, Path]:
    """A FakeUpstream speaking HTTPS with a self-signed certificate for 127.0.0.1."""
    pem, keyfile = self_signed(tmp)
    up = FakeUpstream()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem, keyfile)
    up.server.socket = ctx.wrap_socket(up.server.socket, server_side=True)
    return up, pem


def test_regular_mode_every_instance_presents_the_shared_ca(tmp_path: Path) -> None:
    folder = tmp_path / "mappings"
    folder.mkdir()
    write_mappings(folder, MAPPINGS, "10-team.yaml")
    up, pem = tls_upstream(tmp_path)
    with up:
        up.on("m", echo({}, {}))
        proc, port, pids, _ = start_balance([
            "--instances", "2", "--listen", "127.0.0.1:0", "--mode", "regular", "--confdir", str(tmp_path / "conf"),
            "--logs", str(tmp_path / "logs"), "--mitmdump", str(MITMDUMP), "--", *ARGS,
            "--set", f"disguise_mappings={folder}", "--set", f"ssl_verify_upstream_trusted_ca={pem}",
        ])  # fmt: skip
        try:
            ca = tmp_path / "conf" / "mitmproxy-ca-cert.pem"
            for i in range(6):  # a new connection each: HAProxy spreads them
                trust = ssl.create_default_context(cafile=str(ca))  # the one CA, whichever instance answers
                http_client = anthropic.DefaultHttpxClient(proxy=f"http://127.0.0.1:{port}", verify=trust,
                                                           trust_env=False)  # fmt: skip
                with anthropic.Anthropic(base_url=f"https://127.0.0.1:{up.port}", api_key="sk-ant-test-credential",
                                         max_retries=0, timeout=30.0, http_client=http_client) as client:  # fmt: skip
                    with client.messages.stream(model="m", max_tokens=5,
                                                messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
                        assert s.get_final_text() == prompt(i)
        finally:
            stop(proc)
    for rec in up.for_model("m"):
        assert "Acme Corp" not in rec.body.decode() and "Zenith Labs" in rec.body.decode()
    served = [n for n in pids if "POST https://127.0.0.1" in (tmp_path / "logs" / f"{n}.log").read_text()]
    assert sorted(served) == sorted(pids), served  # both instances intercepted TLS with the one CA
