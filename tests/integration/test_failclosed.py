"""Fail closed, through real mitmdump/mitmweb processes: every way of ending up with no
masking while the proxy keeps forwarding (issue 6), checked by what the fake upstream
received.

Each test asserts on `FakeUpstream.requests`: an original that reached it is the
failure this file exists to catch.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from integration_util import (
    ADDON,
    MITMDUMP,
    FakeUpstream,
    Mitmdump,
    Recorded,
    Reply,
    free_port,
    mitmdump_cmd,
    run_mitmdump,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MITMWEB = MITMDUMP.parent / "mitmweb"
BOB = "bob@corp.example.com"
ORIGINALS = ("Acme Corp", "Bluebird", BOB)
MAPPING = {"literals": {"Acme Corp": "Zenith Labs"}}  # EMAIL comes from the shipped defaults
TEXT = f"Acme Corp writes to {BOB}"


def messages(text: str = TEXT, model: str = "m", **extra: object) -> bytes:
    return json.dumps({"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": text}],
                       **extra}).encode()  # fmt: skip


def json_reply(obj: object, headers: dict[str, str] | None = None) -> Reply:
    return Reply([json.dumps(obj).encode()], headers={"Content-Type": "application/json", **(headers or {})},
                 framing="length")  # fmt: skip


def echo(rec: Recorded) -> Reply:
    """Answers with the text the upstream received (so restoration shows)."""
    try:
        doc = rec.json
        text = json.dumps(doc.get("messages") or doc.get("input") or doc.get("prompt") or doc)
    except ValueError:
        text = "not json"
    return json_reply({"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]})


def post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None,
         method: str = "POST") -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body, headers={"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def leaked(up: FakeUpstream, since: int = 0) -> list[str]:
    """Every original found in what the upstream received (raw, decoded, URL, headers)."""
    out = []
    for r in up.requests[since:]:
        blob = r.body + r.raw + r.path.encode() + json.dumps(r.headers).encode()
        out += [o for o in ORIGINALS if o.encode() in blob]
    return out


def write(path: Path, doc: object) -> Path:
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


@pytest.fixture
def up() -> Iterator[FakeUpstream]:
    with FakeUpstream() as u:
        u.on("m", echo)
        yield u


@contextmanager
def mitmdump(up: FakeUpstream, tmp: Path, mapping: Path | None, *extra: str, script: Path = ADDON) -> Iterator[Mitmdump]:
    cmd = mitmdump_cmd(up.port, tmp / "conf", mapping or tmp, *extra)
    cmd[cmd.index(str(ADDON))] = str(script)
    if mapping is None:  # no disguise_mappings on the command line
        i = cmd.index(f"disguise_mappings={tmp}")
        del cmd[i - 1 : i + 1]
    m = Mitmdump(cmd)
    try:
        yield m
    finally:
        m.stop()
        print(m.output[-6000:])


def script_copy(tmp: Path) -> Path:
    """A script of its own (mitmproxy watches its mtime) that builds the addon the way
    addon/disguise.py does."""
    script = tmp / "disguise_copy.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ADDON.parent)!r})\n"
        "from disguiselib.mitm.addon import Disguise\naddons = [Disguise()]\n"
    )
    return script


def wait_for(pred, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


# -- 1, 2, 7: options on the command line ----------------------------------------------------


def test_mappings_option_given_twice_loads_both_files_on_top_of_the_defaults(up: FakeUpstream, tmp_path: Path) -> None:
    """`make run ARGS="--set disguise_mappings=mine.yaml"` used to make mitmproxy drop the
    script (the Makefile set the option too) and forward everything unmasked."""
    a = write(tmp_path / "a.yaml", MAPPING)
    b = write(tmp_path / "b.yaml", {"literals": {"Bluebird": "Heron"}})
    with mitmdump(up, tmp_path, a, "--set", f"disguise_mappings={b}") as m:
        status, _, body = post(m.port, "/v1/messages", messages(TEXT + " on Bluebird"))
    assert status == 200
    sent = up.requests[-1].json["messages"][0]["content"]
    assert sent == "Zenith Labs writes to [EMAIL_1] on Heron"  # EMAIL: the shipped pattern
    assert not leaked(up)
    assert TEXT in json.loads(body)["content"][0]["text"]


@pytest.mark.parametrize(
    "extra",
    [
        ("--set", "disguise_fail_open=yes"),
        ("--set", "disguise_allow_unknown=true", "--set", "disguise_allow_unknown=false"),
    ],
    ids=["bad-bool", "bool-twice"],
)
def test_bad_option_value_stops_mitmdump_with_the_reason(up: FakeUpstream, tmp_path: Path, extra) -> None:
    a = write(tmp_path / "a.yaml", MAPPING)
    cmd = mitmdump_cmd(up.port, tmp_path / "conf", a, *extra)
    rc, out = run_mitmdump(cmd, timeout=30)
    assert rc == 1, out
    name = extra[1].split("=")[0]
    assert f"disguise: option {name}" in out
    assert not up.requests


@pytest.mark.parametrize("name", ["disguise_decoded_limit", "disguise_offload_bytes", "disguise_capture_limit"])
def test_a_negative_size_stops_mitmdump_naming_it(up: FakeUpstream, tmp_path: Path, name: str) -> None:
    """G1: disguise_decoded_limit=-1 was taken (and the decoded-size bound with it)."""
    a = write(tmp_path / "a.yaml", MAPPING)
    rc, out = run_mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", a, "--set", f"{name}=-1"), timeout=30)
    assert rc == 1, out
    assert f"{name}: must be 0 or more, not -1" in out
    assert not up.requests


def test_defaults_stay_unless_turned_off(up: FakeUpstream, tmp_path: Path) -> None:
    """Pointing disguise_mappings at one's own file used to drop the shipped secret
    patterns without a word."""
    a = write(tmp_path / "a.yaml", MAPPING)
    key = "sk-ant-api03-" + "x" * 30
    with mitmdump(up, tmp_path, a) as m:
        post(m.port, "/v1/messages", messages(f"{TEXT} {key}"))
    assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs writes to [EMAIL_1] [ANTHROPIC_KEY_1]"
    with mitmdump(up, tmp_path, a, "--set", "disguise_defaults=false") as m:
        post(m.port, "/v1/messages", messages(f"{TEXT} {key}"))
        assert m.saw("rules loaded: no defaults + 1 file (a.yaml): ")
    assert up.requests[-1].json["messages"][0]["content"] == f"Zenith Labs writes to {BOB} {key}"


def test_user_pattern_replaces_the_shipped_one_by_name(up: FakeUpstream, tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", {**MAPPING, "patterns": [{"name": "EMAIL", "regex": "bob@[a-z.]+"}]})
    with mitmdump(up, tmp_path, a) as m:
        post(m.port, "/v1/messages", messages("bob@corp.example.com and eve@corp.example.com"))
        assert m.saw("pattern EMAIL:") and m.saw("replaced by")
    assert up.requests[-1].json["messages"][0]["content"] == "[EMAIL_1] and eve@corp.example.com"


# -- 3: reloads -----------------------------------------------------------------------------


def test_script_reload_with_a_broken_mapping_keeps_the_previous_rules(up: FakeUpstream, tmp_path: Path) -> None:
    """mitmproxy reloads `-s` scripts when they change; a new instance whose configure
    fails used to run with no rules and forward everything unmasked."""
    script = script_copy(tmp_path)
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, script=script) as m:
        assert post(m.port, "/v1/messages", messages())[0] == 200
        write(a, "literals: {Acme Corp: 'bad\"quote'}\n")
        os.utime(script, times=(time.time() + 5, time.time() + 5))
        wait_for(lambda: m.output.count("Loading script") >= 2 and "previous rule set stays" in m.output)
        n = len(up.requests)
        status, _, body = post(m.port, "/v1/messages", messages())
        assert status == 200
        assert up.requests[n].json["messages"][0]["content"] == "Zenith Labs writes to [EMAIL_1]"
        assert TEXT in json.loads(body)["content"][0]["text"]
    assert not leaked(up)


def test_mapping_files_are_watched(up: FakeUpstream, tmp_path: Path) -> None:
    """A valid change is in force for the next request; an invalid one keeps the rules."""
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a) as m:
        post(m.port, "/v1/messages", messages("Acme Corp on Bluebird"))
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs on Bluebird"
        write(a, {"literals": {"Acme Corp": "Zenith Labs", "Bluebird": "Heron"}})
        post(m.port, "/v1/messages", messages("Acme Corp on Bluebird"))
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs on Heron"
        assert m.saw("rules reloaded")
        write(a, "literals:\n  Acme Corp: Zenith Labs\n  Acme Corp: Other\n")  # a repeated key
        status, _, _ = post(m.port, "/v1/messages", messages("Acme Corp on Bluebird"))
        assert status == 200
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs on Heron"
        assert m.saw("do not load; the previous rule set stays in force")
        assert m.saw("a.yaml:3: key repeats line 2")
        (tmp_path / "a.yaml").unlink()
        post(m.port, "/v1/messages", messages("Acme Corp on Bluebird"))
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs on Heron"
    assert not leaked(up, since=1)  # Bluebird became an original with the second request


class Web:
    """mitmweb's REST API: the token (mitmweb 12; 11 has no auth) and tornado's XSRF
    double-submit check (a cookie and a header carrying the same value; the cookie is
    `_xsrf` on 11, `_mitmproxy_xsrf` on 12)."""

    XSRF = "disguise-test-xsrf"

    def __init__(self, port: int, token: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = token

    def put_options(self, opts: dict) -> tuple[int, str]:
        r = urllib.request.Request(self.base + "/options", data=json.dumps(opts).encode(), method="PUT")
        r.add_header("Authorization", f"Bearer {self.token}")
        r.add_header("Content-Type", "application/json")
        r.add_header("Cookie", f"_xsrf={self.XSRF}; _mitmproxy_xsrf={self.XSRF}")
        r.add_header("X-XSRFToken", self.XSRF)
        try:
            with urllib.request.urlopen(r, timeout=20) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


@contextmanager
def mitmweb(up: FakeUpstream, tmp: Path, *extra: str) -> Iterator[tuple[Mitmdump, Web]]:
    wport = free_port()
    cmd = [str(MITMWEB), "--mode", f"reverse:http://127.0.0.1:{up.port}", "--listen-host", "127.0.0.1",
           "--listen-port", "0", "--web-host", "127.0.0.1", "--web-port", str(wport), "--no-web-open-browser",
           "--set", f"confdir={tmp / 'conf'}", "--set", "web_password=t0ken", *extra]  # fmt: skip
    m = Mitmdump(cmd)
    try:
        wait_for(lambda: "Web server listening" in m.output)
        yield m, Web(wport, "t0ken")
    finally:
        m.stop()
        print(m.output[-6000:])


@pytest.mark.skipif(not MITMWEB.exists(), reason="no mitmweb")
def test_mitmweb_options_api(up: FakeUpstream, tmp_path: Path) -> None:
    """A bad file through the options API: 400, the previous rules stay. A good one:
    in force for the next request. A mistyped host: 400 naming the entry."""
    a = write(tmp_path / "a.yaml", MAPPING)
    bad = write(tmp_path / "bad.yaml", "literals: {Acme Corp: ''}\n")
    good = write(tmp_path / "good.yaml", {"literals": {"Acme Corp": "Orion"}})
    with mitmweb(up, tmp_path, "-s", str(ADDON), "--set", f"disguise_mappings={a}") as (m, web):
        status, text = web.put_options({"disguise_mappings": [str(bad)]})
        assert status == 400 and "bad.yaml:1: literal #1: disguise is empty" in text
        post(m.port, "/v1/messages", messages())
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs writes to [EMAIL_1]"
        status, text = web.put_options({"disguise_hosts": ["https://api.anthropic.com/"]})
        assert status == 400 and "'https://api.anthropic.com/'" in text
        for name in ("disguise_decoded_limit", "disguise_capture_limit"):  # G1: the first was taken
            status, text = web.put_options({name: -1})
            assert status == 400 and f"{name}: must be 0 or more, not -1" in text, text
        assert web.put_options({"disguise_mappings": [str(good)]})[0] == 200
        post(m.port, "/v1/messages", messages())
        assert up.requests[-1].json["messages"][0]["content"] == "Orion writes to [EMAIL_1]"
    assert not leaked(up)


@pytest.mark.skipif(not MITMWEB.exists(), reason="no mitmweb")
def test_script_dropped_by_mitmproxy_at_runtime_means_no_traffic(up: FakeUpstream, tmp_path: Path) -> None:
    """A script added while mitmweb runs, with a bad value waiting for one of its
    options: mitmproxy drops the script without a word. The Guard it left behind
    refuses every protected request."""
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmweb(up, tmp_path, "--set", "disguise_fail_open=yes", "--set", f"disguise_mappings={a}",
                 "--set", "stream_large_bodies=4k") as (m, web):  # fmt: skip
        web.put_options({"scripts": [str(ADDON)]})
        wait_for(lambda: "disguise: option disguise_fail_open" in m.output)
        status, headers, body = post(m.port, "/v1/messages", messages())
        assert status == 503 and headers.get("x-disguise") == "refused"
        err = json.loads(body)
        assert err["type"] == "error" and "option disguise_fail_open" in err["error"]["message"]
        status, _, _ = post(m.port, "/v1/chat/completions", json.dumps({"model": "m", "messages": []}).encode())
        assert status == 503
        assert m.saw("request refused")
        # a body mitmproxy would stream upstream as it comes: the connection is closed instead
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            post(m.port, "/v1/messages", messages("x" * 20_000))
    assert not up.requests


def test_with_the_script_gone_a_request_ending_in_an_error_is_printed_without_its_original(
    up: FakeUpstream, tmp_path: Path
) -> None:
    """The Guard alone (the script's file went): a client that gives up during its body
    ends its flow in an error, and mitmdump's line for it printed the URL as the client
    wrote it (the Guard's error hook comes after the Dumper's; Disguise's, which came
    before it, is gone). The Guard's look at an error is first in the chain (found by a
    review, 2026-12-08)."""
    import socket

    script = script_copy(tmp_path)
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, script=script) as m:
        script.unlink()
        wait_for(lambda: "Removing script" in m.output)
        with socket.create_connection(("127.0.0.1", m.port), timeout=20) as s:
            # its head, then the end (read in that order: the flow under way, then its error)
            s.sendall(b"POST /v1/messages?org=Acme%20Corp HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                      b"content-length: 500\r\n\r\n{}")  # fmt: skip
        wait_for(lambda: "without sending complete message body" in m.output)
        out = m.output
    assert "Acme" not in out and not up.requests, out[-3000:]


def test_script_removed_while_running_means_no_traffic(up: FakeUpstream, tmp_path: Path) -> None:
    """mitmproxy unloads a script whose file disappears; requests must not then go out
    unmasked."""
    script = script_copy(tmp_path)
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, script=script) as m:
        assert post(m.port, "/v1/messages", messages())[0] == 200
        n = len(up.requests)
        script.unlink()
        wait_for(lambda: "Removing script" in m.output)
        status, _, body = post(m.port, "/v1/messages", messages())
        assert status == 503 and b"no valid disguise configuration" in body
        assert len(up.requests) == n
    assert not leaked(up)


def test_make_run_is_a_local_reverse_proxy(up: FakeUpstream, tmp_path: Path) -> None:
    """The README's first command: `make run`, then ANTHROPIC_BASE_URL at it. Started
    here with the upstream swapped for the fake one (UPSTREAM) and a free port."""
    import re
    import signal
    import subprocess

    venv = Path(sys.executable).parent.parent  # `-o`: make installs nothing, this venv has it all
    write(tmp_path / "local.yaml", MAPPING)
    cmd = ["make", "-s", "-o", f"{venv}/.installed-run", "run", f"PY={sys.executable}", f"VENV={venv}",
           f"UPSTREAM=http://127.0.0.1:{up.port}", "PORT=0",
           f"ARGS=--set confdir={tmp_path / 'conf'} --set disguise_mappings={tmp_path / 'local.yaml'}"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ADDON.parent.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"reverse proxy to http://127\.0\.0\.1:\d+ listening at (\S+):(\d+)", line)
            if m:
                break
        assert m, "".join(lines)
        assert m.group(1) == "127.0.0.1"  # not an open proxy on every interface
        status, _, _ = post(int(m.group(2)), "/v1/messages", messages())
        assert status == 200
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs writes to [EMAIL_1]"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


# -- 4: scope ---------------------------------------------------------------------------------


def test_hosts_are_normalised(up: FakeUpstream, tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", MAPPING)
    hosts = f"Example.ORG., 127.0.0.1:{up.port}"
    with mitmdump(up, tmp_path, a, "--set", f"disguise_hosts={hosts}") as m:
        post(m.port, "/v1/messages", messages())
        assert m.saw(f"scope: example.org, 127.0.0.1:{up.port}")
        assert up.requests[-1].json["messages"][0]["content"] == "Zenith Labs writes to [EMAIL_1]"
    # in reverse mode the host is the upstream's: a scope without it is refused at start-up
    # (issue 15; tests/integration/test_config_errors.py)
    rc, out = run_mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", a, "--set", "disguise_hosts=api.anthropic.com"))
    assert rc == 1 and f"does not name the reverse-mode target 127.0.0.1:{up.port}" in out
    assert not up.requests[1:]


def test_mistyped_host_stops_mitmdump_naming_it(up: FakeUpstream, tmp_path: Path) -> None:
    entry = "https://api.anthropic.com"  # every other kind: tests/apis/test_registry.py
    a = write(tmp_path / "a.yaml", MAPPING)
    rc, out = run_mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", a, "--set", f"disguise_hosts={entry}"))
    assert rc == 1 and repr(entry) in out




# -- 5: endpoints -------------------------------------------------------------------------------


class Shared:
    """One mitmdump for the tests below that need nothing but MAPPING (and a low
    stream_large_bodies, which small requests with a length never reach): fewer
    process starts. Each test asserts on the upstream requests it caused."""

    def __init__(self, up: FakeUpstream, m: Mitmdump) -> None:
        self.up = up
        self.m = m
        self.port = m.port


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    tmp = tmp_path_factory.mktemp("shared")
    with FakeUpstream() as u:
        u.on("m", echo)
        with mitmdump(u, tmp, write(tmp / "a.yaml", MAPPING), "--set", "stream_large_bodies=4k") as m:
            yield Shared(u, m)


def test_endpoints(shared: Shared) -> None:
    """Documented endpoints that carry conversation content are masked; others on a
    protected host are refused when they hold an original, and pass when they do not."""
    up, m = shared.up, shared.m
    # Cohere's v1 chat: an LLM API this addon does not transform (its v2 chat is, since
    # apis/cohere/chat.py)
    up.on("/v1/chat", echo)
    up.on("/v1/files", lambda r: json_reply({"ok": True}))
    start = len(up.requests)
    cases = {
        "/v1/completions": {"model": "m", "prompt": [TEXT, "x"]},
        "/v1/embeddings": {"model": "m", "input": TEXT},
        "/v1/responses/input_tokens": {"model": "m", "input": TEXT},
        "/v1/responses/compact": {"model": "m", "input": [{"role": "user", "content": TEXT}]},
    }
    for path, doc in cases.items():
        status, _, _ = post(m.port, path, json.dumps(doc).encode())
        assert status == 200, path
        assert up.requests[-1].path == path
        assert "Zenith Labs writes to [EMAIL_1]" in up.requests[-1].body.decode(), path
    n = len(up.requests)
    cohere = {"model": "command-r", "messages": [{"role": "user", "content": [{"type": "text", "text": TEXT}]}]}
    status, headers, body = post(m.port, "/v1/chat", json.dumps(cohere).encode())
    assert status == 400 and headers["x-disguise"] == "refused"
    msg = json.loads(body)["error"]["message"]
    assert "literal in body $.messages[0].content[0].text" in msg and "Acme" not in msg
    status, _, _ = post(m.port, "/v1/files?purpose=x", b"", {"x-note": BOB})
    assert status == 400
    status, _, body = post(m.port, f"/v1/files?owner={BOB.replace('@', '%40')}", b"")
    assert status == 400 and b"EMAIL in url" in body
    assert len(up.requests) == n
    status, _, _ = post(m.port, "/v1/chat", b'{"messages": []}')
    assert status == 200 and len(up.requests) == n + 1
    # a WebSocket to an endpoint that is not a realtime API disguise knows (test_realtime.py has those)
    status, _, _ = post(m.port, "/v1/threads/stream", b"", {"upgrade": "websocket", "connection": "upgrade"}, "GET")
    assert status == 400 and len(up.requests) == n + 1
    assert not leaked(up, start)


def test_unknown_endpoint_allowed_by_option_warns(up: FakeUpstream, tmp_path: Path) -> None:
    up.on("/v1/chat", echo)
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, "--set", "disguise_allow_unknown=true") as m:
        status, _, _ = post(m.port, "/v1/chat", json.dumps({"t": TEXT}).encode())
        assert status == 200
        # mitmproxy prints an addon's log line from its event loop: it can come after the reply
        wait_for(lambda: "forwarded (disguise_allow_unknown)" in m.output)
    assert up.requests[-1].json == {"t": TEXT}


# -- 6: bodies that do not arrive whole -----------------------------------------------------------


def big_text(n: int = 40_000) -> str:
    return (TEXT + ". ") * (n // len(TEXT))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_stream_large_bodies_request_masked_completely(shared: Shared, chunked: bool) -> None:
    up, start = shared.up, len(shared.up.requests)
    body = messages(big_text())
    conn = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=20)
    if chunked:
        conn.request("POST", "/v1/messages", body=iter([body[:5000], body[5000:]]),
                     headers={"content-type": "application/json"}, encode_chunked=True)  # fmt: skip
    else:
        conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json"})
    resp = conn.getresponse()
    out = resp.read()
    conn.close()
    assert resp.status == 200
    sent = up.requests[-1].json["messages"][0]["content"]
    assert sent == big_text().replace("Acme Corp", "Zenith Labs").replace(BOB, "[EMAIL_1]")
    assert not leaked(up, start)
    assert big_text() in json.loads(json.loads(out)["content"][0]["text"])[0]["content"]


@pytest.mark.parametrize("how", ["content-length", "chunked", "gzip", "url"])
def test_stream_large_bodies_a_header_copying_an_original_the_body_keys_never_leaves(shared: Shared, how: str) -> None:
    """A streamed body gives a value its key (`password=...`, a shipped rule) and a header
    copies it: only masking the body knows it is an original. The request is refused and
    nothing of it reaches upstream, not even its headers with an empty body (they were
    held back till the body's end), whether the body went to the worker as it came or
    (gzip: decoded whole first) was taken whole here. The client is told the rule and
    where, never the value."""
    up, start, heads = shared.up, len(shared.up.requests), len(shared.up.heads)
    body = messages("db password=hunter2xyz9Q " + big_text())
    conn = http.client.HTTPConnection("127.0.0.1", shared.port, timeout=20)
    headers = {"content-type": "application/json", "x-note": "hunter2xyz9Q"}
    if how == "chunked":
        conn.request("POST", "/v1/messages", body=iter([body[:5000], body[5000:]]), headers=headers, encode_chunked=True)
    elif how == "gzip":  # (past stream_large_bodies compressed too: text gzip cannot shrink much)
        body = messages("db password=hunter2xyz9Q " + os.urandom(12_000).hex())
        conn.request("POST", "/v1/messages", body=gzip.compress(body), headers={**headers, "content-encoding": "gzip"})
    elif how == "url":  # (the copy in the URL instead: it leaves with the headers)
        headers.pop("x-note")
        conn.request("POST", "/v1/messages?note=hunter2xyz9Q", body=body, headers=headers)
    else:
        conn.request("POST", "/v1/messages", body=body, headers=headers)
    resp = conn.getresponse()
    out = resp.read()
    conn.close()
    assert resp.status == 400 and resp.getheader("x-disguise") == "refused"
    assert (b"PASSWORD in url" if how == "url" else b"PASSWORD in header x-note") in out and b"hunter2xyz9Q" not in out
    assert len(up.requests) == start and len(up.heads) == heads  # nothing reached upstream, not its headers


LATE_HEADER = """
class Late:  # after disguise in the chain: adds a header in its own requestheaders hook
    def requestheaders(self, flow):
        if flow.request.headers.get("x-add-late"):
            flow.request.headers["x-late"] = "Acme Corp"
addons = [Late()]
"""


@pytest.mark.parametrize("how", ["content-length", "gzip", "unknown endpoint"])
def test_stream_large_bodies_a_header_a_later_addon_adds_is_checked_before_it_leaves(
    up: FakeUpstream, tmp_path: Path, how: str
) -> None:
    """An addon after disguise adds a header holding an original to a request whose body
    mitmproxy streams: its headers leave with the body, once masked, and the check reads
    them as they leave, not as they were at disguise's own headers hook. Refused, nothing
    upstream; without the late header the same request is masked and leaves."""
    late = write(tmp_path / "late.py", LATE_HEADER)
    with mitmdump(up, tmp_path, write(tmp_path / "a.yaml", MAPPING), "-s", str(late),
                  "--set", "stream_large_bodies=4k") as m:  # fmt: skip
        for add in ("1", ""):
            heads = len(up.heads)
            body = messages(big_text()) if how == "content-length" else messages(os.urandom(12_000).hex())
            hdrs = {"x-add-late": add} if add else {}
            if how == "gzip":
                hdrs["content-encoding"] = "gzip"
                body = gzip.compress(body)
            path = "/v1/messages"
            if how == "unknown endpoint":  # (scanned, not masked)
                up.on("/v1/uploads", lambda r: json_reply({"ok": True}))
                path, hdrs["content-type"] = "/v1/uploads", "text/plain"
            status, headers, out = post(m.port, path, body, hdrs)
            if add:
                assert status == 400 and headers["x-disguise"] == "refused" and b"literal in header x-late" in out
                assert len(up.heads) == heads  # nothing reached upstream
            else:
                assert status == 200 and len(up.heads) == heads + 1 and "x-late" not in up.heads[-1][2]
    assert not leaked(up)


def test_stream_large_bodies_unmaskable_request_never_leaves(shared: Shared) -> None:
    start = len(shared.up.requests)
    body = b'{"model": "m", "messages": [{"role": "user", "content": "' + big_text().encode() + b'"'  # cut JSON
    status, headers, out = post(shared.port, "/v1/messages", body)
    assert status == 400 and headers["x-disguise"] == "refused"
    assert b"not valid JSON" in out and b"Acme" not in out
    assert not leaked(shared.up, start)


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_stream_large_bodies_response_restored(shared: Shared, framing: str) -> None:
    big = "Zenith Labs. " * 5000
    shared.up.on(f"big-{framing}", lambda r: Reply(
        [json.dumps({"type": "message", "content": [{"type": "text", "text": big}]}).encode()],
        headers={"Content-Type": "application/json"}, framing=framing))  # fmt: skip
    status, _, out = post(shared.port, "/v1/messages", messages(model=f"big-{framing}"))
    assert status == 200
    assert json.loads(out)["content"][0]["text"] == big.replace("Zenith Labs", "Acme Corp")


def test_stream_large_bodies_unknown_endpoint_scanned_whole(shared: Shared) -> None:
    up, start = shared.up, len(shared.up.requests)
    up.on("/v1/uploads", lambda r: json_reply({"ok": True, "bytes": len(r.body)}))
    status, headers, out = post(shared.port, "/v1/uploads", ("x" * 5000 + BOB).encode(), {"content-type": "text/plain"})
    assert status == 400 and headers["x-disguise"] == "refused" and b"EMAIL in body" in out
    status, _, out = post(shared.port, "/v1/uploads", b"y" * 5000, {"content-type": "text/plain"})
    assert status == 200 and json.loads(out)["bytes"] == 5000
    assert not leaked(up, start)


def test_fail_open_is_the_same_for_a_body_mitmproxy_streams(up: FakeUpstream, tmp_path: Path) -> None:
    """disguise_fail_open forwards a body that cannot be masked unchanged, whether it came
    whole to the request hook or mitmproxy would have streamed it (stream_large_bodies:
    taken whole, mitm/streamed.py): one function applies the pipeline's verdict to both
    (mitm/outcome.py). A body that can be masked is masked on both."""
    up.on("/v1/messages", echo)
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, "--set", "disguise_fail_open=true", "--set", "stream_large_bodies=4k") as m:
        for size in (100, 40_000):  # under and over stream_large_bodies
            cut = b'{"model": "m", "messages": [{"role": "user", "content": "Acme Corp ' + b"x" * size + b'"'
            n = len(up.requests)
            status, _, out = post(m.port, "/v1/messages", cut)
            assert status == 200, (size, out[:300])
            assert len(up.requests) == n + 1 and up.requests[-1].body == cut, size
            status, _, out = post(m.port, "/v1/messages", messages(big_text(size)))
            assert status == 200 and "Acme" not in up.requests[-1].body.decode(), size
        wait_for(lambda: m.output.count("(forwarded unchanged: disguise_fail_open)") == 2)


def test_body_size_limit_refuses_without_forwarding(up: FakeUpstream, tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", MAPPING)
    with mitmdump(up, tmp_path, a, "--set", "body_size_limit=2k", "--set", "stream_large_bodies=1k") as m:
        status, _, _ = post(m.port, "/v1/messages", messages(big_text()))
        assert status == 413
        conn = http.client.HTTPConnection("127.0.0.1", m.port, timeout=20)
        body = messages(big_text())
        conn.request("POST", "/v1/messages", body=iter([body[:500], body[500:]]),
                     headers={"content-type": "application/json"}, encode_chunked=True)  # fmt: skip
        resp = conn.getresponse()
        resp.read()
        conn.close()
        assert resp.status == 400
    assert not leaked(up)


# -- leak guard, placeholders ----------------------------------------------------------------------


def test_leak_guard_refuses_what_the_tables_missed(up: FakeUpstream, tmp_path: Path) -> None:
    """Originals the masking tables do not reach: a header, a JSON number, a key that a
    later addon (mitmproxy's modify_body, after the script) puts back."""
    a = write(tmp_path / "a.yaml", {**MAPPING, "patterns": [{"name": "CARD", "regex": r"\b4[0-9]{15}\b"}]})
    with mitmdump(up, tmp_path, a, "--set", "modify_body=/~q/Zenith Labs/Acme Corp") as m:
        status, _, body = post(m.port, "/v1/messages", messages("hello"), {"x-customer": BOB})
        assert status == 400 and b"EMAIL in header x-customer" in body
        status, _, body = post(m.port, "/v1/messages", messages("hello", metadata={"n": 4111111111111111}))
        assert status == 400 and b"CARD in body $.metadata.n" in body
        status, _, body = post(m.port, "/v1/messages", messages("Acme Corp"))
        assert status == 400 and b"leak guard" in body and b"$.messages[0].content" in body
        # the whole card number: a part as short as "4111" can be a port in the log (41114)
        assert b"Acme" not in body and b"4111111111111111" not in body
        assert "Acme" not in m.output and "4111111111111111" not in m.output
    assert not up.requests


def test_placeholders_skip_the_clients_own_text(shared: Shared) -> None:
    up, m = shared.up, shared.m
    up.on("ph", lambda r: json_reply({"type": "message", "content": [
        {"type": "text", "text": "[EMAIL_1] is yours, [EMAIL_2] is Zenith Labs'"}]}))  # fmt: skip
    status, _, out = post(m.port, "/v1/messages",
                          messages(f"Keep [EMAIL_1] as is; write to {BOB}. Zenith Labs?", model="ph"))  # fmt: skip
    wait_for(lambda: "already holds a disguise (at body $.messages[0].content)" in m.output)
    assert up.requests[-1].json["messages"][0]["content"] == "Keep [EMAIL_1] as is; write to [EMAIL_2]. Zenith Labs?"
    assert json.loads(out)["content"][0]["text"] == f"[EMAIL_1] is yours, {BOB} is Acme Corp'"


def test_compressed_unknown_endpoint_is_scanned_decoded(shared: Shared) -> None:
    n = len(shared.up.requests)
    status, _, body = post(shared.port, "/v1/batches", gzip.compress(json.dumps({"x": TEXT}).encode()),
                           {"content-encoding": "gzip"})  # fmt: skip
    assert status == 400 and b"literal in body $.x" in body
    assert len(shared.up.requests) == n



@pytest.mark.parametrize("path", ["/v1/messages", "/v1/files"])
def test_what_a_compressed_bodys_container_carries_never_leaves(shared: Shared, path: str) -> None:
    """A gzip member's file name (`gzip -c "Acme Corp.json"`) is no part of the body
    the guard checks: a body that needed no masking (a Messages request; an endpoint
    disguise does not transform, scanned) went on byte for byte with it. Its container
    is made again from the checked body; a plain one leaves as it came."""
    shared.up.on("/v1/files", lambda r: json_reply({"ok": True}))
    n = len(shared.up.requests)
    body = messages("hello") if path == "/v1/messages" else json.dumps({"purpose": "clean"}).encode()
    plain = gzip.compress(body, mtime=0)
    named = plain[:3] + bytes([plain[3] | 0x08]) + plain[4:10] + b"Acme Corp.json\0" + plain[10:]
    for raw in (named, plain):
        status, _, out = post(shared.port, path, raw, {"content-encoding": "gzip"})
        assert status == 200, out
        got = shared.up.requests[-1]
        if raw is plain:
            assert got.raw == raw
        else:
            assert b"Acme" not in got.raw and gzip.decompress(got.raw) == body
    assert len(shared.up.requests) == n + 2

def test_a_key_repeated_with_values_that_differ_is_refused(shared: Shared) -> None:
    """A block whose `type` says text and then thinking: json.loads reads the last (a
    thinking block, left as it came), a provider may read the first (text with an
    original). Refused naming the place, never the values; the same value twice passes
    masked."""
    n = len(shared.up.requests)
    body = (b'{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":'
            b'[{"type":"text","type":"thinking","text":"Acme Corp","thinking":"t","signature":"s"}]}]}')  # fmt: skip
    status, _, out = post(shared.port, "/v1/messages", body)
    assert status == 400 and json.loads(out)["type"] == "error"
    assert b"repeats the key at $.messages[1].content[0].type with values that differ" in out and b"Acme" not in out
    assert len(shared.up.requests) == n
    status, _, _ = post(shared.port, "/v1/messages", body.replace(b'"type":"thinking"', b'"type":"text"'))
    assert status == 200 and b'"text":"Zenith Labs"' in shared.up.requests[-1].body
    assert not leaked(shared.up, n)


def test_a_refusal_is_in_the_shape_of_the_provider_the_headers_name(shared: Shared) -> None:
    """No API recognised for the request (or another provider's on a shared path): the
    error's shape is that of the provider its credential headers name (its host's, where
    the host is one: a reverse proxy's Host is its upstream's), not its path's guess."""
    n = len(shared.up.requests)
    anthropic = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    status, _, out = post(shared.port, "/v1/models/Acme%20Corp", b"", anthropic, method="GET")
    assert status == 400 and json.loads(out)["type"] == "error", out  # not Google's
    status, _, out = post(shared.port, "/v1/files", json.dumps({"purpose": "Acme Corp"}).encode(), anthropic)
    assert status == 400 and json.loads(out)["type"] == "error", out  # not OpenAI Files'
    status, _, out = post(shared.port, "/v1/chat/completions/c1/messages", b'{"x": "Acme Corp"}', {"api-key": "k"})
    doc = json.loads(out)
    assert status == 400 and "type" not in doc and "status" not in doc["error"], out  # OpenAI's, not Anthropic's
    assert len(shared.up.requests) == n


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))


def test_legacy_completions_stream_through_the_openai_sdk(shared: Shared) -> None:
    """The official SDK reads a legacy Completions stream whose disguises are split
    across chunks: it gets the originals, and the prompt went out masked."""
    openai = pytest.importorskip("openai")

    def chunk(text: str, finish: str | None = None) -> bytes:
        doc = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "cmpl",
               "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}  # fmt: skip
        return f"data: {json.dumps(doc)}\n\n".encode()

    pieces = ["Dear Zen", "ith La", "bs, mail [EMA", "IL_1", "] today. Zen"]
    shared.up.on("cmpl", lambda r: Reply([*(chunk(p) for p in pieces), chunk("ith", "stop"), b"data: [DONE]\n\n"],
                                         headers={"Content-Type": "text/event-stream"}))  # fmt: skip
    http_client = openai.DefaultHttpxClient(trust_env=False)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{shared.port}/v1", api_key="test", max_retries=0,
                               http_client=http_client)  # fmt: skip
        text = "".join(c.choices[0].text for c in client.completions.create(model="cmpl", prompt=TEXT, stream=True))
    finally:
        http_client.close()
    assert text == f"Dear Acme Corp, mail {BOB} today. Zenith"
    assert shared.up.for_model("cmpl")[-1].json["prompt"] == "Zenith Labs writes to [EMAIL_1]"
