"""A whole response body of a masked flow (mitm/whole.py), through the addon's hooks
in-process: restored; replaced by an error in the provider's shape when it cannot be
decoded or reversed, and then never still labelled with upstream's content-encoding
(the client would try to decode the addon's plain JSON error)."""

from __future__ import annotations

import gzip
import json

import pytest
from mitmproxy.test import taddons, tflow, tutils

from disguiselib import pipeline
from disguiselib.mitm.addon import Disguise
from disguiselib.state import Phase


@pytest.fixture
def addon(tmp_path):
    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
            yield a
        finally:
            tctx.master.event_loop.close()


def masked(a: Disguise):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", "/v1/messages", "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp asks"}]}
    f.request.content = json.dumps(doc).encode()
    a.requestheaders(f)
    a.request(f)
    rec = a.guard.records[f.id]
    assert rec.phase is Phase.MASKED and b"Zenith Labs" in f.request.content
    return f, rec


def answer(f, body: bytes, **headers: str) -> None:
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "application/json"
    for k, v in headers.items():
        f.response.headers[k.replace("_", "-")] = v
    f.response.raw_content = body


MESSAGE = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Zenith Labs says hi"}]}


def test_a_gzip_body_is_restored(addon) -> None:
    f, rec = masked(addon)
    answer(f, gzip.compress(json.dumps(MESSAGE).encode()), content_encoding="gzip")
    addon.responseheaders(f)
    addon.response(f)
    assert rec.phase is Phase.RESTORED
    assert json.loads(f.response.get_content())["content"][0]["text"] == "Acme Corp says hi"


def test_a_body_that_does_not_decode_is_an_error_without_its_coding(addon) -> None:
    f, rec = masked(addon)
    answer(f, b"not gzip at all", content_encoding="gzip")
    addon.responseheaders(f)
    addon.response(f)
    assert rec.phase is Phase.FAILED and f.response.status_code == 502
    assert "content-encoding" not in f.response.headers
    assert b"response not reversed" in f.response.raw_content and b"Zenith" not in f.response.raw_content


def test_a_reverser_that_fails_gives_an_error_the_client_can_read(addon, monkeypatch) -> None:
    f, rec = masked(addon)
    answer(f, gzip.compress(json.dumps(MESSAGE).encode()), content_encoding="gzip")
    addon.responseheaders(f)

    def broken(*args, **kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(pipeline, "reverser_for", broken)
    addon.response(f)
    assert rec.phase is Phase.FAILED and f.response.status_code == 502
    # the addon's error is plain JSON: upstream's gzip label would make the client fail to read it
    assert "content-encoding" not in f.response.headers
    assert json.loads(f.response.raw_content)["error"]["message"].startswith("disguise: response not reversed")


def test_an_event_stream_labelled_json_read_whole_is_a_502_and_an_error_document(addon) -> None:
    """Read whole (labelled JSON), an event stream is refused with a 502 and the API's
    error document: the reverser ends such a body with an error event (what a client
    reading it as it streams reads), which is not what a JSON label promises."""
    f, rec = masked(addon)
    events = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
              b'"role":"assistant","content":[],"model":"m"}}\n\n')  # fmt: skip
    answer(f, events)
    addon.responseheaders(f)
    addon.response(f)
    assert rec.phase is Phase.FAILED and f.response.status_code == 502
    assert f.response.headers["content-type"] == "application/json"
    assert "event stream labelled" in json.loads(f.response.raw_content)["error"]["message"]


@pytest.mark.parametrize(("method", "status", "ctype"), [
    ("POST", 204, ""), ("POST", 304, "text/event-stream"), ("GET", 304, "application/json"),
    ("POST", 103, "text/event-stream"), ("HEAD", 200, "text/event-stream"),
])  # fmt: skip
def test_a_response_without_a_body_is_not_streamed_and_keeps_its_framing(addon, method, status, ctype) -> None:
    """A 1xx, 204 or 304, or the answer to a HEAD, has no body: no stream callable, no
    `transfer-encoding: chunked` (on a 204 mitmproxy then sent the chunked end, read by
    the client as the next response's status line), no error in place of the nothing."""
    f, rec = masked(addon)
    f.request.method = method
    f.response = tutils.tresp(status_code=status, content=b"")
    del f.response.headers["content-length"]
    if ctype:
        f.response.headers["content-type"] = ctype
    before = f.response.headers.copy()
    addon.responseheaders(f)
    assert f.response.stream is False or f.response.stream is None
    assert f.response.headers == before
    addon.response(f)
    assert rec.phase is Phase.RESTORED and f.response.status_code == status and f.response.raw_content == b""
