"""The headers an API declares carry the client's text (Codex's `x-codex-turn-metadata`),
masked by the pipeline, on every path a masked request takes to the wire, in-process
through the addon's hooks: the request hook (on the loop, and in a thread), a body
mitmproxy would stream (its headers leave first: masked at requestheaders, the body's
masking continuing their session), the Guard's last check, client replay and the offline
re-run. The masking worker and a body fed to it as it arrives: tests/integration/
test_turn_metadata.py."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Optional

from mitmproxy.test import taddons, tflow, tutils

from disguiselib.inspect import replay
from disguiselib.inspect.record import META, SIDES
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.callables import Buffered
from disguiselib.state import Phase

MAPPING = "literals:\n  acme-corp: zenith-labs\npatterns:\n  - name: USER\n    regex: 'jsmith[0-9]*'\n"
HEADER = "x-codex-turn-metadata"
META_DOC = {"session_id": "s-1", "cwd": "/Users/jsmith/acme-corp/api", "git_branch": "acme-corp/fix", "os": "macos"}
MASKED_DOC = {**META_DOC, "cwd": "/Users/[USER_1]/zenith-labs/api", "git_branch": "zenith-labs/fix"}
TURN = json.dumps(META_DOC)


def body(text: str = "hello", pad: int = 0) -> bytes:
    doc = {"model": "gpt-5-codex", "input": text, "instructions": "x" * pad, "client_metadata": {HEADER: TURN}}
    return json.dumps(doc).encode()


@contextlib.contextmanager
def addon(tmp_path: Path, **opts):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            tctx.options.add_option("stream_large_bodies", Optional[str], None, "")  # noqa: UP045 - as Proxyserver's
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_defaults=False, **opts)
            yield a, tctx
        finally:
            tctx.master.event_loop.close()


def flow(content: bytes | None = None, path: str = "/backend-api/codex/responses", **extra: str):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", path, "chatgpt.com"
    f.request.headers["content-type"] = "application/json"
    f.request.headers["X-Codex-Turn-Metadata"] = TURN
    for k, v in extra.items():
        f.request.headers[k.replace("_", "-")] = v
    f.request.content = body() if content is None else content
    return f


def through(a: Disguise, tctx, f) -> None:
    """The request hooks, Disguise's then the Guard's (last in the chain)."""
    a.requestheaders(f)
    a.guard.requestheaders(f)
    pending = a.request(f)
    if pending is not None:
        tctx.master.event_loop.run_until_complete(pending)
    if f.response is None:
        pending = a.guard.request(f)
        if pending is not None:
            tctx.master.event_loop.run_until_complete(pending)


def leaves_masked(f) -> None:
    assert f.response is None and f.error is None, f.response and f.response.content
    value = f.request.headers[HEADER]
    assert "jsmith" not in value and "acme-corp" not in value and value.isascii()
    assert json.loads(value) == MASKED_DOC
    assert json.loads(json.loads(f.request.content)["client_metadata"][HEADER]) == MASKED_DOC
    names = [n for n, _ in f.request.headers.fields]
    assert names.count(b"X-Codex-Turn-Metadata") == 1 and names.index(b"X-Codex-Turn-Metadata") == 3  # in its place


def test_the_request_hook_sets_the_masked_header(tmp_path: Path) -> None:
    with addon(tmp_path) as (a, tctx):
        f = flow()
        through(a, tctx, f)
        leaves_masked(f)
        rec = a.guard.records[f.id]
        assert rec.phase is Phase.MASKED and rec.session is not None
        assert rec.session.placeholders == {"[USER_1]": "jsmith"}
        # the capture's client side keeps what the client sent; upstream's is the flow's
        kept = dict(f.metadata[SIDES]["client_request"]["headers"])
        assert kept["X-Codex-Turn-Metadata"] == TURN


def test_a_large_body_masked_in_a_thread_sets_the_masked_header(tmp_path: Path) -> None:
    with addon(tmp_path, disguise_offload_bytes=0) as (a, tctx):
        f = flow(body(pad=70_000))
        f.live = True  # a large body is masked off the loop only in a live flow
        through(a, tctx, f)
        leaves_masked(f)


def test_an_original_in_another_header_is_still_refused(tmp_path: Path) -> None:
    with addon(tmp_path) as (a, tctx):
        f = flow(x_note="jsmith")
        through(a, tctx, f)
        assert f.response is not None and f.response.status_code == 400
        assert b"header x-note" in f.response.content and b"jsmith" not in f.response.content


def test_the_guard_refuses_a_header_a_later_addon_put_an_original_back_in(tmp_path: Path) -> None:
    with addon(tmp_path) as (a, tctx):
        f = flow()
        a.requestheaders(f)
        a.guard.requestheaders(f)
        a.request(f)
        leaves_masked(f)
        f.request.headers[HEADER] = TURN  # another addon, after the script
        a.guard.request(f)
        assert f.response is not None and f.response.status_code == 400
        assert b"header x-codex-turn-metadata" in f.response.content and b"jsmith" not in f.response.content


def test_a_streamed_bodys_headers_are_masked_before_they_leave(tmp_path: Path) -> None:
    """mitmproxy sends the headers of a body it streams before the body: they are masked
    at requestheaders, and the body's masking continues their session."""
    with addon(tmp_path, disguise_offload_bytes=0) as (a, tctx):
        tctx.options.stream_large_bodies = "1k"
        f = flow(b"")
        del f.request.headers["content-length"]  # its length unknown: mitmproxy may stream it
        a.requestheaders(f)
        assert isinstance(f.request.stream, Buffered) and f.error is None
        assert json.loads(f.request.headers[HEADER]) == MASKED_DOC  # before anything leaves
        rec = a.guard.records[f.id]
        out = json.loads(f.request.stream.work(body("jsmith2 and jsmith")))
        assert rec.phase is Phase.MASKED
        assert out["input"] == "[USER_2] and [USER_1]"  # the header's [USER_1] means the same here
        assert json.loads(out["client_metadata"][HEADER]) == MASKED_DOC
        assert rec.session is not None and rec.session.placeholders == {"[USER_1]": "jsmith", "[USER_2]": "jsmith2"}


def test_a_streamed_bodys_header_that_cannot_be_masked_closes_the_connection(tmp_path: Path, monkeypatch) -> None:
    from disguiselib import pipeline

    monkeypatch.setattr(pipeline, "mask_fn", lambda rules, session, memo=None: lambda v, rule, k: v + "\r\n")
    with addon(tmp_path, disguise_offload_bytes=0) as (a, tctx):
        tctx.options.stream_large_bodies = "1k"
        f = flow(b"")
        del f.request.headers["content-length"]
        a.requestheaders(f)
        assert f.error is not None and a.guard.records[f.id].phase is Phase.REFUSED
        assert "valid header value" in (a.guard.records[f.id].reason or "")


def test_client_replay_masks_the_header_again(tmp_path: Path) -> None:
    """A client replay of a flow recorded with the addon: the client's body is put back and
    masked afresh; the header, as recorded (here as the client sent it: an edit), masked."""
    with addon(tmp_path) as (a, tctx):
        f = flow()
        through(a, tctx, f)
        leaves_masked(f)
        f.response = tutils.tresp(content=b'{"id": "r", "object": "response", "output": []}')
        f.response.headers["content-type"] = "application/json"
        a.responseheaders(f)
        a.response(f)
        g = f.copy()
        g.live, g.is_replay, g.response = True, "request", None
        g.request.headers[HEADER] = TURN
        through(a, tctx, g)
        leaves_masked(g)


def test_the_offline_rerun_sets_the_masked_header_and_says_it_differs(tmp_path: Path) -> None:
    with addon(tmp_path) as (a, tctx):
        f = flow()
        through(a, tctx, f)
        f.response = tutils.tresp(content=b'{"id": "r", "object": "response", "output": []}')
        f.response.headers["content-type"] = "application/json"
        a.responseheaders(f)
        a.response(f)
        f.live = False  # read back from a file (`mitmdump -nr`)
        g = f.copy()
        a.request(f)  # as recorded: the masked header
        assert f.metadata[META]["replay"] == "re-run offline: equals the live run", f.metadata[META]
        g.request.headers[HEADER] = TURN  # a recording whose header holds the original
        replay.offline(g, a.config, a.classify, a.inspect.limit)
        assert "DIFFERS from the live run in the request" in g.metadata[META]["replay"]
        assert json.loads(g.request.headers[HEADER]) == MASKED_DOC
