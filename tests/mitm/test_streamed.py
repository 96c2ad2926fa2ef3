"""A request body mitmproxy would stream (mitm/streamed.py), taken whole: masked,
scanned, or refused when it carries a transfer coding; in-process through the addon's
requestheaders hook with stream_large_bodies set (the black-box cases are in
tests/integration/test_leaks_outside.py and test_failclosed.py)."""

from __future__ import annotations

import gzip
import json
from typing import Optional

import pytest
from mitmproxy.test import taddons, tflow

from disguiselib import turns
from disguiselib.errors import LeakError
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.callables import Buffered
from disguiselib.state import Passed, Phase


@pytest.fixture
def addon(tmp_path):
    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            # a proxyserver option: declared here as mitmproxy's Proxyserver declares it
            tctx.options.add_option("stream_large_bodies", Optional[str], None, "")  # noqa: UP045
            # bodies taken whole (Masker); one fed to the worker as it arrives: test_spooled.py
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_offload_bytes=0)
            yield a, tctx
        finally:
            tctx.master.event_loop.close()

DOC = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp, bob@corp.example.com"}]}


def streamed_flow(path: str, body: bytes, **headers: str):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", path, "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    for k, v in headers.items():
        f.request.headers[k.replace("_", "-")] = v
    f.request.content = body
    del f.request.headers["content-length"]  # its length unknown: mitmproxy may stream it
    return f


def work_of(a, tctx, f):
    tctx.options.stream_large_bodies = "1k"
    a.requestheaders(f)
    assert isinstance(f.request.stream, Buffered)
    return f.request.stream.work, a.guard.records[f.id]


def test_an_api_body_is_masked_whole(addon) -> None:
    a, tctx = addon
    f = streamed_flow("/v1/messages", b"")
    work, rec = work_of(a, tctx, f)
    out = json.loads(work(json.dumps(DOC).encode()))
    assert out["messages"][0]["content"] == "Zenith Labs, [EMAIL_1]" and rec.phase is Phase.MASKED
    gz = streamed_flow("/v1/messages", b"", content_encoding="gzip")
    work, rec = work_of(a, tctx, gz)
    assert b"Zenith Labs" in gzip.decompress(work(gzip.compress(json.dumps(DOC).encode())))


def test_a_transfer_coded_body_is_refused_never_read_as_it_stands(addon) -> None:
    """Refused before anything leaves; where the user let such bodies through
    (disguise_fail_open, disguise_allow_unknown), still never read as it stands."""
    a, tctx = addon
    tctx.options.stream_large_bodies = "1k"
    for path in ("/v1/messages", "/v1/batches"):
        f = streamed_flow(path, b"", transfer_encoding="gzip, chunked")
        a.requestheaders(f)
        assert f.error is not None and a.guard.records[f.id].phase is Phase.REFUSED
    tctx.options.disguise_fail_open = True  # forwarded as it came, as the live path does (mitm/outcome.py)
    f = streamed_flow("/v1/messages", b"", transfer_encoding="gzip, chunked")
    work, rec = work_of(a, tctx, f)
    coded = gzip.compress(json.dumps(DOC).encode())
    assert work(coded) == coded and rec.phase is Phase.PASSED and rec.passed is Passed.FAIL_OPEN
    assert "Content-Encoding instead" in (rec.reason or "")
    tctx.options.disguise_fail_open = False
    f = streamed_flow("/v1/messages", b"", transfer_encoding="gzip, chunked")
    a.requestheaders(f)
    assert f.error is not None and a.guard.records[f.id].phase is Phase.REFUSED
    tctx.options.disguise_allow_unknown = True
    f = streamed_flow("/v1/batches", b"", transfer_encoding="gzip, chunked")
    work, rec = work_of(a, tctx, f)
    assert work(coded) == coded and rec.phase is Phase.PASSED  # forwarded as a body that cannot be read


def test_another_endpoint_is_scanned_and_passes_clean(addon) -> None:
    a, tctx = addon
    f = streamed_flow("/v1/batches", b"")
    work, rec = work_of(a, tctx, f)
    assert work(b'{"x": "clean"}') == b'{"x": "clean"}' and rec.phase is Phase.PASSED
    f = streamed_flow("/v1/batches", b"")
    work, _ = work_of(a, tctx, f)
    with pytest.raises(LeakError, match=r"literal in body \$\.x"):
        work(b'{"x": "Acme Corp"}')
    tctx.options.disguise_allow_unknown = True
    f = streamed_flow("/v1/batches", b"")
    work, _ = work_of(a, tctx, f)
    assert work(b'{"x": "Acme Corp"}') == b'{"x": "Acme Corp"}'


def test_an_original_in_what_leaves_first_closes_the_connection(addon) -> None:
    """Its URL and headers go upstream before the body: checked in requestheaders."""
    a, tctx = addon
    tctx.options.stream_large_bodies = "1k"
    for path, hdr in (("/v1/batches/Acme%20Corp", {}), ("/v1/messages", {"x_note": "bob@corp.example.com"}),
                      ("/v1/uploads/u1/parts", {}),
                      ("/upload/v1beta/files?upload_id=U1", {"x_goog_upload_command": "upload", "x_goog_upload_offset": "0"}),
                      ):  # fmt: skip
        f = streamed_flow(path, b"", **hdr)
        a.requestheaders(f)
        assert f.error is not None and not isinstance(f.request.stream, Buffered), path
        assert a.guard.records[f.id].phase is Phase.REFUSED


def test_a_whole_file_of_a_resumable_upload_is_streamed_and_scanned(addon) -> None:
    a, tctx = addon
    f = streamed_flow("/upload/v1beta/files?upload_id=U1", b"", x_goog_upload_command="upload, finalize",
                      x_goog_upload_offset="0")  # fmt: skip
    work, _ = work_of(a, tctx, f)
    assert work(b"clean text") == b"clean text"
    with pytest.raises(LeakError):
        work_of(a, tctx, streamed_flow("/upload/v1beta/files?upload_id=U2", b"", x_goog_upload_command="upload, finalize",
                                       x_goog_upload_offset="0"))[0](b"Acme Corp")


# -- the body's slow part off the event loop (mitm/bodyhook.py awaits Buffered.complete) ---------


def _through(tctx, stream: Buffered, raw: bytes, prepare: bool) -> bytes:
    for i in range(0, len(raw), 700):
        assert stream(raw[i : i + 700]) == []
    if prepare:
        assert stream.wants_completion()
        tctx.master.event_loop.run_until_complete(stream.complete())
    return b"".join(stream(b""))


@pytest.mark.parametrize("enc", ["", "gzip"])
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/batches"])
def test_a_body_prepared_off_the_loop_leaves_as_one_masked_at_the_call(addon, monkeypatch, enc, path) -> None:
    """complete() masks (or scans) the body in a thread before mitmproxy's last call; the
    call then applies that verdict, and what leaves is byte for byte what the call alone
    would send."""
    from disguiselib import pipeline
    from disguiselib.mitm import streamed

    a, tctx = addon
    calls: list[str] = []
    for name in ("mask_request", "scan_unknown"):
        real = getattr(pipeline, name)
        monkeypatch.setattr(pipeline, name, lambda *args, _real=real, _n=name: (calls.append(_n), _real(*args))[1])
    doc = dict(DOC, messages=[{"role": "user", "content": "Acme Corp " * 300}]) if path.endswith("messages") else {
        "requests": []}  # fmt: skip
    raw = json.dumps(doc).encode()
    raw = gzip.compress(raw) if enc else raw
    outs = []
    for prepare in (False, True):
        f = streamed_flow(path, b"", **({"content_encoding": enc} if enc else {}))
        tctx.options.stream_large_bodies = "1k"
        a.requestheaders(f)
        stream = f.request.stream
        assert isinstance(stream, Buffered)
        assert isinstance(stream.work, streamed.Masker if path.endswith("messages") else streamed.Scanner)
        del calls[:]
        out = _through(tctx, stream, raw, prepare)
        assert len(calls) == 1  # masked (or scanned) once: in complete() when prepared, else at the call
        outs.append(out)
    assert outs[0] == outs[1]
    plain = gzip.decompress(outs[1]) if enc else outs[1]
    assert (b"Zenith Labs" in plain and b"Acme Corp" not in plain) if path.endswith("messages") else plain == (
        gzip.decompress(raw) if enc else raw)  # fmt: skip


def test_a_prepared_refusal_is_refused_at_the_call(addon) -> None:
    """A body that cannot be read, prepared off the loop: the call refuses it (nothing
    leaves), as it would alone."""
    a, tctx = addon
    f = streamed_flow("/v1/messages", b"", content_encoding="gzip")
    tctx.options.stream_large_bodies = "1k"
    a.requestheaders(f)
    stream = f.request.stream
    assert isinstance(stream, Buffered)
    assert _through(tctx, stream, b"not gzip at all" * 100, prepare=True) == b""
    assert stream.error is not None and "cannot decode" in stream.error


@pytest.mark.parametrize("held_back", [True, False], ids=["headers-held-back", "headers-left"])
def test_a_body_refused_for_a_header_copying_its_original_is_answered_here_when_nothing_left(
    addon, held_back: bool
) -> None:
    """The body gives a value its key (password=...), a header copies it: only masking the
    body knows it is an original, and refuses the request. When nothing of the request
    left (its headers held back: bodyhook), the request hook answers it with the error,
    which names the rule and the place, never the value; when its headers had left (no
    hook in place), upstream's answer is replaced by that error at responseheaders."""
    from disguiselib.state import Answer

    a, tctx = addon
    pw = "hunter2xyz9Q"
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"db password={pw}"}]}
    f = streamed_flow("/v1/messages", b"", x_note=pw)
    tctx.options.stream_large_bodies = "1k"
    a.requestheaders(f)
    stream = f.request.stream
    assert isinstance(stream, Buffered)
    assert _through(tctx, stream, json.dumps(doc).encode(), prepare=True) == b""
    assert "PASSWORD in header x-note" in (stream.error or "")
    stream.held_back = held_back  # (bodyhook says so at the body's end)
    a.request(f)
    rec = a.guard.records[f.id]
    assert rec.phase is Phase.REFUSED
    if held_back:
        assert f.response is not None and f.response.status_code == 400 and rec.answer is not Answer.REPLACED
        assert b"PASSWORD in header x-note" in f.response.content and pw.encode() not in f.response.content
    else:
        assert f.response is None and rec.answer is Answer.REPLACED


def test_a_paced_body_leaves_in_pieces_no_larger_than_piece() -> None:
    """What the worker sends back (its own, larger pieces) is cut again: one piece is one
    turn of the event loop (bodyhook), its copies into the socket's buffer bounded."""
    from disguiselib.mitm.offload import PIECE
    from disguiselib.mitm.streamed import _pieces

    parts = [b"a" * (4 * PIECE + 3), b"", b"b" * 5, b"c" * PIECE]
    whole = b"".join(parts)
    out = list(_pieces(list(parts)))
    assert b"".join(out) == whole and all(0 < len(p) <= PIECE for p in out)
    assert len(out) == 5 + 1 + 1



def _worker_bodies(a, monkeypatch) -> list[int]:  # noqa: ANN001
    """The sizes of the bodies a's offload sends its worker, as they go."""
    sent: list[int] = []
    real = a.offload.mask

    async def counted(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        sent.append(len(args[1]))
        return await real(*args, **kw)

    monkeypatch.setattr(a.offload, "mask", counted)
    return sent


def _hooked(a, loop, body: bytes) -> bytes:  # noqa: ANN001
    """body to /v1/messages through a's request hook (off the loop: mitmproxy awaits
    what it returns), as it leaves."""
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", "/v1/messages", "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    f.live = True
    a.requestheaders(f)
    pending = a.request(f)
    assert pending is not None  # off the loop
    loop.run_until_complete(pending)
    return f.request.content


def test_a_large_body_before_the_worker_is_ready_is_masked_in_a_thread_meanwhile(addon, monkeypatch) -> None:
    """A worker not running (started lazily: disguise_offload_warm off, or not ready yet, or
    being replaced) costs no body its start and rule build (2-3 s on a loaded machine):
    the body is masked in a thread, as with disguise_offload_bytes 0, while the worker is
    started and built in the background; the next body goes to the worker. Both leave
    masked, byte for byte the same. (A body the request hook masks, and one taken whole
    from mitmproxy's stream: Masker, here gzip-coded.)"""
    a, tctx = addon
    tctx.configure(a, disguise_offload_bytes=256 * 1024)
    sent = _worker_bodies(a, monkeypatch)
    # (the same body again is a next turn the proxy would cut itself, turns.py: not here,
    # where what is tested is the worker's taking a body once it is ready)
    monkeypatch.setattr(turns, "holds", lambda *_: False)
    raw = json.dumps(dict(DOC, messages=[{"role": "user", "content": "Acme Corp said so. " * 16_000}])).encode()
    assert len(raw) > 256 * 1024
    loop = tctx.master.event_loop

    def hook() -> bytes:  # the request hook (mitmproxy awaits what it returns)
        return _hooked(a, loop, raw)

    def taken() -> bytes:  # taken whole from mitmproxy's stream
        f = streamed_flow("/v1/messages", b"", content_encoding="gzip")
        tctx.options.stream_large_bodies = "1k"
        a.requestheaders(f)
        assert isinstance(f.request.stream, Buffered)
        return gzip.decompress(_through(tctx, f.request.stream, gzip.compress(raw), True))

    try:
        outs = [hook()]
        assert sent == [] and a.offload.started <= 1  # masked here; the worker on its way
        a.offload._pool.submit(lambda: None).result(timeout=120)  # started and built
        outs.append(hook())
        assert sent == [len(raw)] and a.offload.started == 1  # the second: in the worker
        a.offload._stop()  # none runs again
        outs.append(taken())
        assert sent == [len(raw)]  # masked here too
        assert outs[0] == outs[1] == outs[2] and b"Acme Corp" not in outs[0] and b"Zenith Labs" in outs[0]
    finally:
        a.offload.close()


def test_the_next_turn_of_a_body_the_worker_masked_is_cut_in_the_proxy(addon, monkeypatch) -> None:
    """turns.py through the adapter: a body the worker masked is remembered in the proxy
    (Masked.turn, turns.adopt), and the conversation's next turn is cut in a thread there
    (Offload.cut), not sent to the worker: byte for byte what the worker would make."""
    a, tctx = addon
    tctx.configure(a, disguise_offload_bytes=256 * 1024)
    sent = _worker_bodies(a, monkeypatch)
    first = [{"role": "user", "content": "Acme Corp said so. " * 16_000}]
    raw = json.dumps(dict(DOC, messages=first), separators=(",", ":")).encode()
    nxt = json.dumps(dict(DOC, messages=[*first, {"role": "user", "content": "and Acme Corp again"}]),
                     separators=(",", ":")).encode()  # fmt: skip
    loop = tctx.master.event_loop

    def hook(body: bytes) -> bytes:
        return _hooked(a, loop, body)

    try:
        assert not a.offload.ready(a.config)  # started and built in the background
        a.offload._pool.submit(lambda: None).result(timeout=120)
        assert a.offload.ready(a.config)
        hook(raw)
        assert sent == [len(raw)]  # the worker's; what it remembered, remembered here
        two = hook(nxt)
        assert sent == [len(raw)] and b"Acme Corp" not in two  # cut here
        with monkeypatch.context() as m:
            m.setattr(turns, "holds", lambda *_: False)
            assert hook(nxt) == two and sent == [len(raw), len(nxt)]  # the worker's own: the same
    finally:
        a.offload.close()


@pytest.mark.parametrize("path", ["/v1/batches", "/v1/files"])
@pytest.mark.parametrize("prepare", [False, True])
def test_a_streamed_body_scanned_clean_leaves_without_what_its_container_carries(addon, path, prepare) -> None:
    """E4 (stop 65), for a body mitmproxy streams: an endpoint no table describes (the
    Scanner) or a route whose model does not take the body (the Masker's NotOurs: a JSON
    body to /v1/files) let it go as it came once its decoded body scanned clean, its
    gzip header's file name with it. Made again from the scanned body; a plain gzip
    body still leaves as it came."""
    a, tctx = addon
    body = json.dumps({"x": "clean " * 300}).encode()
    plain = gzip.compress(body, mtime=0)
    named = plain[:3] + bytes([plain[3] | 0x08]) + plain[4:10] + b"Acme Corp.json\0" + plain[10:]
    for raw, same in ((named, False), (plain, True)):
        f = streamed_flow(path, b"", content_encoding="gzip")
        tctx.options.stream_large_bodies = "1k"
        a.requestheaders(f)
        assert isinstance(f.request.stream, Buffered)
        out = _through(tctx, f.request.stream, raw, prepare)
        assert (out == raw) == same and b"Acme" not in out and gzip.decompress(out) == body
