"""The Inspector (inspect/inspector.py) in-process: what the adapter keeps, replay
decisions, and that an inspection failure never stops masking."""

from __future__ import annotations

import contextlib
import io as _io
import json
from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import taddons, tflow, tutils

from anthropic_util import build_stream
from disguiselib.inspect import inspector as capture
from disguiselib.inspect import replay
from disguiselib.inspect.record import META, SIDES, Tee
from disguiselib.inspect.tee import Kept
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.callables import StreamCall

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
BODY = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                   "messages": [{"role": "user", "content": "Acme Corp, bob@corp.example.com"}]}).encode()  # fmt: skip


def messages_flow(body: bytes):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = "/v1/messages"
    f.request.host = "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    return f


@contextlib.contextmanager
def context(*addons):
    with taddons.context(*addons) as tctx:
        try:
            yield tctx
        finally:
            tctx.master.event_loop.close()


@pytest.fixture
def addon(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
        yield a


def streaming_flow(a: Disguise):
    """A flow through the hooks up to its SSE answer's headers, and that answer's body."""
    f = messages_flow(BODY)
    a.request(f)
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = "text/event-stream"
    a.responseheaders(f)
    return f, build_stream([("text", ["Zen", "ith Labs writes to [EMA", "IL_1]"])])


def live_stream_flow(a: Disguise, chunk: int = 7, seen: list | None = None):
    """A flow through every hook, its SSE answer fed in `chunk`-byte pieces (seen: gets
    the stream callable the response had)."""
    f, body = streaming_flow(a)
    out = []
    for i in range(0, len(body), chunk):
        out.extend(f.response.stream(body[i : i + chunk]))
    out.extend(f.response.stream(b""))
    f.response.data.content = b""  # mitmproxy 11 keeps nothing of a streamed body
    if seen is not None:
        seen.append(f.response.stream)
    a.response(f)
    return f, body, b"".join(out)


def roundtrip(f):
    """Write and read back: one unserializable metadata value and -w writes nothing."""
    buf = _io.BytesIO()
    io.FlowWriter(buf).add(f)
    buf.seek(0)
    [g] = list(io.FlowReader(buf).stream())
    return g


def test_stream_sides_kept_and_serializable(addon) -> None:
    f, upstream, client = live_stream_flow(addon)
    g = roundtrip(f)
    assert g.metadata[SIDES]["upstream_response"]["content"] == upstream
    assert g.response.content == client
    assert json.loads(g.metadata[SIDES]["client_request"]["content"]) == json.loads(BODY)
    assert g.metadata[META]["counts"] == {"EMAIL": 1, "literals": 1}
    assert g.comment == "disguise anthropic.messages: masked 2 originals (EMAIL×1, literals×1); restored 2 originals"
    assert g.marked == ":performing_arts:"


def test_tee_never_returns_an_empty_piece() -> None:
    t = Tee(lambda d: b"", 100)
    assert t(b"abc") == []
    t = Tee(lambda d: [b"", d, b""], 2)
    assert t(b"abc") == [b"abc"] and t.up.cut and t.down.cut and t.down.size == 3


def test_inspection_failure_never_stops_masking(addon, monkeypatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("Acme Corp")

    monkeypatch.setattr(replay, "_sha", boom)
    monkeypatch.setattr(capture, "Tee", boom)
    f = messages_flow(BODY)
    f.is_replay = "request"
    f.metadata[SIDES] = {"client_request": {"content": b"x"}}
    addon.request(f)
    assert b"Zenith Labs" in f.request.content and b"Acme" not in f.request.content
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = "text/event-stream"
    addon.responseheaders(f)
    assert isinstance(f.response.stream, StreamCall)  # unwrapped, still reversing


def test_client_replay_puts_the_original_back(addon) -> None:
    f, _, _ = live_stream_flow(addon)
    masked = f.request.content
    f.is_replay, f.response = "request", None
    addon.request(f)
    assert f.request.content == masked  # masked afresh from the client's body: same bytes
    assert f.response is None


def test_client_replay_of_an_edited_request_sends_the_edit(addon) -> None:
    f, _, _ = live_stream_flow(addon)
    f.is_replay, f.response = "request", None
    f.request.content = f.request.content.replace(b"Zenith Labs", b"Zenith Labs and Acme Corp")
    addon.request(f)
    assert b"Acme" not in f.request.content and f.request.content.count(b"Zenith Labs") == 2


def test_client_replay_of_a_cut_request_is_refused(addon, tmp_path: Path) -> None:
    addon.inspect.limit = 10
    f, _, _ = live_stream_flow(addon)
    f.is_replay, f.response = "request", None
    addon.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert f.marked == ":no_entry:" and "cannot replay" in f.comment


def test_server_replayed_sse_response_is_restored(addon) -> None:
    """Server replay answers in the request hook; mitmproxy then emulates
    responseheaders and never calls a stream callable for that body."""
    f = messages_flow(BODY)
    addon.request(f)
    f.response = tutils.tresp(content=build_stream([("text", ["Zen", "ith Labs, [EMA", "IL_1]"])]))
    f.response.headers["content-type"] = "text/event-stream"
    f.is_replay = "response"
    addon.responseheaders(f)
    assert not f.response.stream
    addon.response(f)
    assert b"Zenith" not in f.response.content and b"[EMAIL_1]" not in f.response.content
    assert b"Acme Corp" in f.response.content and b"bob@corp.example.com" in f.response.content


def test_tee_knows_whether_the_final_event_went_out() -> None:
    t = Tee(lambda d: [d], 10)  # the kept copy is cut: the last pieces still tell
    t(b'data: {"choices":[]}\n\n')
    assert not t.final_sent
    t(b'data: {"text":"say \\"type\\":\\"message_stop\\" [DONE"}\n\n')  # quoted in text: not an event
    assert not t.final_sent
    t(b"data: [DONE]\n\n")
    t(b": bye\n\n")
    assert t.final_sent
    a = Tee(lambda d: [d], 1 << 20)
    a(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert a.final_sent
    r = Tee(lambda d: [d], 1 << 20)
    r(b'event: response.completed\ndata: {"type":"response.completed","response":{"output":[]}}\n\n')
    assert r.final_sent


def test_a_stream_with_nothing_to_restore_is_kept_once(addon) -> None:
    f = messages_flow(BODY)
    addon.request(f)
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = "text/event-stream"
    addon.responseheaders(f)
    body = build_stream([("text", ["Nothing here ", "to restore."])])
    out = [p for ev in body.split(b"\n\n")[:-1] for p in f.response.stream(ev + b"\n\n")]
    out.extend(f.response.stream(b""))
    f.response.data.content = b""
    addon.response(f)
    side = f.metadata[SIDES]["upstream_response"]
    assert b"".join(out) == body == side["content"] == f.response.raw_content
    assert vars(f.response.data)["content"] is dict.__getitem__(side, "content")  # one copy for both sides
    assert roundtrip(f).response.content == body


def test_a_stream_cut_mid_body_lets_go_of_its_callable_once_the_error_hook_ran(addon) -> None:
    """The error hook ends the flow too (upstream cut, client gone): the summary says so,
    what came is kept, and the flow holds no stream callable (mitmproxy calls it no more)."""
    from mitmproxy import flow as mflow

    f, body = streaming_flow(addon)
    out = f.response.stream(body[: len(body) // 2])
    assert callable(f.response.stream) and b"Zenith" not in b"".join(out)
    f.error = mflow.Error("server disconnected")
    addon.error(f)
    assert f.response.stream is True
    assert f.metadata[META]["end"].startswith("ERROR: server disconnected")
    assert f.metadata[SIDES]["upstream_response"]["content"] == body[: len(body) // 2]


def test_a_finished_sides_body_is_held_compressed_and_the_tee_lets_go(addon) -> None:
    """Capture memory (issue 29): at the end of a stream the upstream side and the client's
    request are held compressed, read back whole; the Tee drops its pieces."""
    from disguiselib.inspect import flowfile, views

    seen: list = []
    f, upstream, client = live_stream_flow(addon, seen=seen)
    sides = f.metadata[SIDES]
    up, cr = sides["upstream_response"], sides["client_request"]
    assert dict.__getitem__(up, "content") != upstream and up["content"] == upstream
    assert dict.__getitem__(cr, "content") != BODY and cr["content"] == BODY
    # the flow no longer holds its stream callable (the reverser, the Tee): True, still streamed
    assert f.response.stream is True
    [tee] = seen
    assert isinstance(tee, Tee) and not (tee.up.pending or tee.up.chunks or getattr(tee.down, "pieces", None))
    assert not (tee.down.pending or tee.down.chunks) if type(tee.down) is Kept else tee.down.base is tee.up
    assert not tee.last and tee.final_sent  # the last pieces read once, let go
    assert f.response.raw_content == client
    assert views._other(f, "response")[1] == upstream and views._other(f, "request")[1] == BODY
    shared = flowfile.shared_copy(f)
    assert shared is not None and shared.response.content == upstream
    addon.response(f)  # a second end (an error hook after the response) keeps what is kept
    assert f.metadata[SIDES]["upstream_response"]["content"] == upstream


def test_the_sides_headers_are_the_flows_own_pairs_read_as_lists_of_str(addon) -> None:
    """What a flow alive holds of its sides' headers (bench (e)'s burst: 500 at once): the
    very (name, value) pairs of the flow's own Headers, a credential's value replaced,
    Content-Length left out; every reader (and a flow file) gets [[name, value], ...] of
    str as before. As lists of str they held ~2 KiB a flow."""
    f = messages_flow(BODY)
    f.request.headers["x-api-key"] = "sk-ant-secret"
    f.request.headers["x-t\u00e9st"] = "caf\u00e9"
    addon.request(f)
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = "text/event-stream"
    addon.responseheaders(f)
    body = build_stream([("text", ["Zen", "ith Labs writes to [EMA", "IL_1]"])])
    for i in range(0, len(body), 7):
        f.response.stream(body[i : i + 7])
    f.response.stream(b"")
    f.response.data.content = b""
    addon.response(f)
    cr, up = f.metadata[SIDES]["client_request"], f.metadata[SIDES]["upstream_response"]
    want = [[k, "(not kept)" if k == "x-api-key" else v] for k, v in f.request.headers.items(multi=True)
            if k.lower() != "content-length"]  # fmt: skip
    assert cr["headers"] == want and ["x-t\u00e9st", "caf\u00e9"] in want
    # upstream's as they came (the headers hook's): those the flow still has, shared
    assert ["content-type", "text/event-stream"] in up["headers"]
    assert [p for p in dict.__getitem__(up, "headers") if any(p is q for q in f.response.headers.fields)] == [
        p for p in dict.__getitem__(up, "headers") if p in f.response.headers.fields]  # fmt: skip
    held, own = dict.__getitem__(cr, "headers"), f.request.headers.fields
    assert sum(any(p is q for q in own) for p in held) == len(held) - 1  # all but the credential's
    g = roundtrip(f)
    assert g.metadata[SIDES]["client_request"]["headers"] == want
    assert g.metadata[SIDES]["upstream_response"]["headers"] == up["headers"]
    assert "sk-ant-secret" not in repr(g.metadata) and "sk-ant-secret" not in repr(cr)


def test_a_flow_file_holds_the_sides_as_before_and_such_a_file_still_reads(addon) -> None:
    """A saved flow holds plain dicts with the body as it came (the format files had
    before compression); views, replay and sharing read such a flow as they did."""
    from disguiselib.inspect import flowfile, views

    f, upstream, _ = live_stream_flow(addon)
    masked = f.request.content
    g = roundtrip(f)
    sides = g.metadata[SIDES]
    assert type(sides["upstream_response"]) is dict and sides["upstream_response"]["content"] == upstream
    assert type(sides["client_request"]) is dict and sides["client_request"]["content"] == BODY
    assert views._other(g, "response")[1] == upstream
    shared = flowfile.shared_copy(g)
    assert shared is not None and shared.response.content == upstream
    g.is_replay, g.response = "request", None
    addon.request(g)
    assert g.request.content == masked and g.response is None


@pytest.mark.parametrize("on_loop", [0, 256 << 10])
def test_a_stream_kept_in_chunks_reads_back_exact_through_every_reader(addon, monkeypatch, on_loop) -> None:
    """A changed stream's upstream side is held as the chunks it was compressed in while
    it ran where it is long (from packing.ON_LOOP on: never decompressed and compressed
    again at its end), as one frame where it is short; the flow file, the audit's record,
    the shared copy and the replay index read it whole and exact."""
    from disguiselib.inspect import flowfile, record, tee, views

    monkeypatch.setattr(tee, "CHUNK", 64)
    monkeypatch.setattr(tee, "ON_LOOP", on_loop)
    f, upstream, client = live_stream_flow(addon)
    held = dict.__getitem__(f.metadata[SIDES]["upstream_response"], "content")
    assert type(held) is record._Chunks and (len(held) > 2 if not on_loop else len(held) == 1)
    assert len(upstream) > 3 * 64  # more than one chunk came
    assert f.metadata[SIDES]["upstream_response"]["content"] == upstream and f.response.content == client
    g = roundtrip(f)
    assert g.metadata[SIDES]["upstream_response"]["content"] == upstream and g.response.content == client
    assert flowfile.record(0, g).received == client
    assert views._other(f, "response")[1] == upstream and views._other(g, "response")[1] == upstream
    shared = flowfile.shared_copy(f)
    assert shared is not None and shared.response.content == upstream
    assert replay.replay_index([f])[replay._sha(client)]["content"] == upstream


def _large_flow(addon, monkeypatch) -> tuple:
    """A request whose client side the capture compresses in the background, masked
    (through the request hook), and the sizes packing.pack was called with since (a large
    client side: in packing.PIECE-byte pieces)."""
    from disguiselib.inspect import packing, record

    packed: list[int] = []
    real = packing.pack
    monkeypatch.setattr(packing, "pack", lambda data: packed.append(len(data)) or real(data))
    monkeypatch.setattr(record, "pack", packing.pack)
    monkeypatch.setattr(record, "SHARED", 0)  # (no side of another test's to share pieces with)
    text = "Acme Corp " + "lorem ipsum " * 30_000
    body = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": text}]}).encode()  # fmt: skip
    assert len(body) >= record.BACKGROUND
    from mitmproxy import ctx

    ctx.options.update(disguise_offload_bytes=0)  # no masking worker process: in a thread
    f = messages_flow(body)
    later = addon.request(f)  # masked in a thread: awaited as mitmproxy would
    assert later is not None
    ctx.master.event_loop.run_until_complete(later)
    assert b"Zenith Labs" in f.request.content
    return f, body, packed


def test_a_large_client_side_is_compressed_once_the_request_has_left(addon, monkeypatch) -> None:
    """issue 29: the capture's compression of a large client side does not compete for a
    CPU with the request's way upstream: held as it came (read whole) until the response's
    headers, compressed then."""
    from disguiselib.inspect import packing, record

    f, body, packed = _large_flow(addon, monkeypatch)
    record.settle(60)
    cr = f.metadata[SIDES]["client_request"]
    assert packed == [] and dict.__getitem__(cr, "content") == body and cr["content"] == body
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = "text/event-stream"
    addon.responseheaders(f)
    record.settle(60)
    assert sum(packed) == len(body) and set(packed[:-1]) == {packing.PIECE}
    assert type(dict.__getitem__(cr, "content")) is record._Chunks and cr["content"] == body


def test_a_large_client_side_held_back_is_compressed_when_no_response_comes(addon, monkeypatch) -> None:
    """A flow that fails before any response (the error hook) compresses what it held back."""
    from disguiselib.inspect import record

    f, body, packed = _large_flow(addon, monkeypatch)
    f.error = flow_error()
    addon.error(f)
    record.settle(60)
    cr = f.metadata[SIDES]["client_request"]
    assert sum(packed) == len(body) and type(dict.__getitem__(cr, "content")) is record._Chunks
    assert cr["content"] == body


def flow_error():
    from mitmproxy import flow

    return flow.Error("server disconnected")


def test_a_masked_body_is_hashed_once_the_request_has_left_and_every_copy_carries_its_hash(
    addon, monkeypatch, caplog
) -> None:
    """issue 29: the capture's SHA-256 of the masked body (read by client replay and by
    whatever copies the flow) is not made on the request's way upstream (0.5 ms a 1 MB
    body, in the thread that masked it), but once the request has left, in a thread of
    its own; a flow saved or replayed before that carries the right hash all the same."""
    import hashlib
    import logging
    import threading

    from mitmproxy import ctx

    from disguiselib.inspect import record

    hashed: list[tuple[int, str]] = []
    real = hashlib.sha256

    class Read:  # (a body may be read in parts: digest.Digest's marks)
        def __init__(self, h) -> None:
            self.h = h

        def update(self, data) -> None:
            if len(data):
                hashed.append((len(data), threading.current_thread().name))
            self.h.update(data)

        def copy(self):
            return Read(self.h.copy())

        def hexdigest(self) -> str:
            return self.h.hexdigest()

    def sha256(data: bytes = b"", **kw):
        if len(data) >= 100_000:
            hashed.append((len(data), threading.current_thread().name))
        return Read(real(data, **kw))

    monkeypatch.setattr(hashlib, "sha256", sha256)
    f, _, _ = _large_flow(addon, monkeypatch)
    sent = f.request.raw_content
    assert hashed == []  # masked (in a thread, as a next turn cut or the worker's would be): not hashed
    saved = roundtrip(f)  # saved before it left: hashed by this read
    assert saved.metadata[SIDES]["upstream_request_sha256"] == real(sent).hexdigest()
    g, _, _ = _large_flow(addon, monkeypatch)
    hashed.clear()
    copied = g.copy()  # mitmproxy's client replay of a live flow replays a copy
    copied.is_replay = "request"
    caplog.set_level(logging.INFO, "disguise")
    later = addon.request(copied)  # (a copy is no live flow: masked in the hook)
    if later is not None:
        ctx.master.event_loop.run_until_complete(later)
    assert copied.response is None and copied.request.content == g.request.content  # replayed: masked afresh
    assert "edited" not in caplog.text  # (an edit in mitmweb is sent as it is)
    h, _, _ = _large_flow(addon, monkeypatch)
    hashed.clear()
    h.response = tutils.tresp(content=None)
    h.response.headers["content-type"] = "text/event-stream"
    addon.responseheaders(h)  # the request has left
    for _ in range(300):
        if hashed:
            break
        threading.Event().wait(0.01)
    for _ in range(300):
        if sum(n for n, _ in hashed) >= len(sent):
            break
        threading.Event().wait(0.01)
    assert sum(n for n, _ in hashed) == len(sent) and all(t.startswith("disguise-digest") for _, t in hashed)
    n = len(hashed)
    assert roundtrip(h).metadata[SIDES]["upstream_request_sha256"] == real(h.request.raw_content).hexdigest()
    assert len(hashed) == n and type(dict.__getitem__(h.metadata[SIDES], "upstream_request_sha256")) is record.Digest
