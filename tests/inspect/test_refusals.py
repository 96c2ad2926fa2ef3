"""Every refusal reads the same wherever it is shown (inspect/record.mark_refused): the
flow-list marker, the FAILED CLOSED comment saying "never sent", the Disguise view's
labels (mitmweb and `disguise show`), and the flow read back from a file as
`disguise web -r` / `mitmdump -nr` load it (through the adapter's request hook, not
live) — never "went upstream (masked)", never a dry run "recorded without the addon".

Each refusal path runs through the real adapter in-process: the leak guard on an API
request, an unknown endpoint holding an original (`POST /v1/files` whose upload is no
batch: the case of issue 31), an unknown WebSocket, the Guard with no Disguise."""

from __future__ import annotations

import contextlib
import io as _io
import json
from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import taddons, tflow

from disguiselib import cli
from disguiselib.inspect import views
from disguiselib.inspect.record import FAILED_MARK, META, SIDES
from disguiselib.inspect.render import WRAP_MARK
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.guard import Guard

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
EMAIL = "jane.doe@example.com"


@contextlib.contextmanager
def adapter(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with taddons.context(a, a.inspect) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
            yield a
        finally:
            tctx.master.event_loop.close()


def http_flow(method: str, host: str, path: str, body: bytes, ctype: str = "application/json", **headers: str):
    f = tflow.tflow()
    f.request.method, f.request.host, f.request.path = method, host, path
    f.request.headers["content-type"] = ctype
    for k, v in headers.items():
        f.request.headers[k.replace("_", "-")] = v
    f.request.content = body
    return f


def leak_guard(a: Disguise):
    """An API request whose header holds an original: the leak guard refuses it."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    f = http_flow("POST", "api.anthropic.com", "/v1/messages", body, x_note=EMAIL)
    a.requestheaders(f)
    a.request(f)
    return f


def unknown_files(a: Disguise):
    """POST /v1/files with an e-mail in an upload that is no batch: not transformed,
    scanned as an unknown endpoint, refused."""
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n"
            f"Content-Type: text/plain\r\n\r\nwrite to {EMAIL}\r\n--{boundary}--\r\n").encode()  # fmt: skip
    f = http_flow("POST", "api.openai.com", "/v1/files", body, f"multipart/form-data; boundary={boundary}")
    a.requestheaders(f)
    a.request(f)
    return f


def unknown_endpoint(a: Disguise):
    f = http_flow("POST", "api.anthropic.com", "/v1/something_new", json.dumps({"to": EMAIL}).encode())
    a.requestheaders(f)
    a.request(f)
    return f


def unknown_websocket(a: Disguise):
    f = tflow.twebsocketflow(messages=False)
    f.request.method, f.request.host, f.request.path = "GET", "api.openai.com", "/v1/not_realtime"
    f.request.headers["upgrade"] = "websocket"
    f.response = None
    a.requestheaders(f)
    a.request(f)
    return f


def guard_alone(a: Disguise):
    """No Disguise handled it (its options were refused): the Guard refuses it."""
    f = http_flow("POST", "api.anthropic.com", "/v1/messages", json.dumps({"to": EMAIL}).encode())
    Guard().request(f)
    return f


PATHS = [leak_guard, unknown_files, unknown_endpoint, unknown_websocket, guard_alone]


def roundtrip(f):
    buf = _io.BytesIO()
    io.FlowWriter(buf).add(f)
    buf.seek(0)
    [g] = list(io.FlowReader(buf).stream())
    return g


def assert_refused(f) -> None:
    assert f.response is not None and f.response.status_code in (400, 503), f.response
    assert f.marked == FAILED_MARK, (f.marked, f.comment)
    assert "FAILED CLOSED (request refused" in f.comment and ": never sent" in f.comment, f.comment
    assert "masked" not in f.comment.split(": never sent")[0].split(")")[-1]
    assert EMAIL not in f.comment
    assert SIDES not in f.metadata
    req = views.render("Disguise", f.request.content, f, f.request).replace(WRAP_MARK + "\n", "").split("\n")
    assert f.comment.startswith(req[0]) and req[0].endswith(": never sent"), req[:3]
    this = [ln for ln in req if ln.startswith("this: ")]
    assert len(this) == 1 and "NEVER SENT" in this[0], req[:4]
    assert not any("went upstream" in ln for ln in req), req[:4]
    resp = views.render("Disguise", f.response.content, f, f.response).split("\n")
    this = [ln for ln in resp if ln.startswith("this: ")]
    assert "the addon's refusal" in this[0] and "restored" not in this[0]


@pytest.mark.parametrize("make", PATHS, ids=lambda m: m.__name__)
def test_every_refusal_is_marked_the_same_live(tmp_path: Path, make) -> None:
    with adapter(tmp_path) as a:
        f = make(a)
    assert_refused(f)


@pytest.mark.parametrize("make", PATHS, ids=lambda m: m.__name__)
def test_a_refused_flow_read_back_stays_refused(tmp_path: Path, make) -> None:
    """As `disguise web -r` and `mitmdump -nr` load it: through the adapter's hooks, not
    live. Nothing says it went upstream, nothing dry-runs it."""
    with adapter(tmp_path) as a:
        g = roundtrip(make(a))
        assert not g.live
        a.requestheaders(g)
        a.request(g)
    assert_refused(g)
    assert "dry run" not in g.comment and "would mask" not in g.comment
    assert not g.metadata[META].get("dry_run")


def test_a_refusal_recorded_without_a_summary_is_shown_refused(tmp_path: Path) -> None:
    """A flow file written before refusals had one marking: the refusal headers alone
    (an unknown endpoint's answer) make it a refusal, not a flow recorded without the
    addon."""
    with adapter(tmp_path) as a:
        f = unknown_files(a)
        g = roundtrip(f)
        g.metadata.clear()
        g.marked, g.comment = "", "disguise: request refused: POST /v1/files is not an endpoint disguise transforms"
        a.requestheaders(g)
        a.request(g)
    assert_refused(g)


def test_disguise_show_says_never_sent(tmp_path: Path, capsys) -> None:
    with adapter(tmp_path) as a:
        f = unknown_files(a)
    path = tmp_path / "s.flows"
    with open(path, "wb") as fh:
        io.FlowWriter(fh).add(f)
    assert cli.main(["show", str(path), "1", "--mappings", str(tmp_path / "m.yaml")]) == 0
    out = capsys.readouterr().out
    assert "NEVER SENT" in out and "never sent" in out
    assert "went upstream (masked)" not in out and "recorded without the addon" not in out
