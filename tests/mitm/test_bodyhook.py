"""mitm/bodyhook.py: mitmproxy's HTTP layer yields BodyCompleteHook at a streamed request's
end of message, before it asks a Buffered stream callable for the body, and only then;
the hook is one Disguise implements. Through a real mitmdump (the body masked in the
worker while the loop serves others): tests/integration/test_pause.py."""

from __future__ import annotations

from types import SimpleNamespace

from mitmproxy.proxy.layers.http import HttpRequestHook, HttpStream, RequestData, RequestEndOfMessage, SendHttp
from mitmproxy.test import tflow

from disguiselib.mitm import bodyhook
from disguiselib.mitm.addon import Disguise
from disguiselib.mitm.bodyhook import BodyCompleteHook
from disguiselib.mitm.callables import Buffered


class Work:
    def __init__(self) -> None:
        self.prepared: bytes | None = None

    async def prepare(self, raw: bytes) -> None:
        self.prepared = raw

    def __call__(self, raw: bytes) -> bytes:
        return b"masked:" + raw


def _stream(stream: object) -> SimpleNamespace:
    f = tflow.tflow()
    f.request.stream = stream
    options = SimpleNamespace(store_streamed_bodies=False)  # mitmproxy 12 reads it
    return SimpleNamespace(flow=f, stream_id=1, request_body_buf=bytearray(),
                           context=SimpleNamespace(server=object(), options=options))  # fmt: skip


def test_installed_once_and_implemented_by_the_addon() -> None:
    assert bodyhook.install() is True
    assert bodyhook.install() is True
    fn = HttpStream.state_stream_request_body
    assert getattr(fn, "_disguise_hook", False) and not getattr(fn.__wrapped__, "_disguise_hook", False)
    assert callable(getattr(Disguise, BodyCompleteHook.name))


def test_the_hook_comes_before_the_last_call_of_a_buffered_body() -> None:
    bodyhook.install()
    buf = Buffered(Work(), lambda msg: b"", None)
    self = _stream(buf)
    assert list(HttpStream.state_stream_request_body(self, RequestData(1, b"body"))) == []
    gen = HttpStream.state_stream_request_body(self, RequestEndOfMessage(1))
    first = next(gen)
    assert isinstance(first, BodyCompleteHook) and first.flow is self.flow
    assert buf.buf == bytearray(b"body")  # not yet asked for what to send
    rest = []
    for c in gen:  # up to mitmproxy's own request hook (what follows needs a real layer)
        rest.append(c)
        if isinstance(c, HttpRequestHook):
            break
    sent = [c.event.data for c in rest if isinstance(c, SendHttp) and isinstance(c.event, RequestData)]
    assert sent == [b"masked:body"] and isinstance(rest[-1], HttpRequestHook)


def test_no_hook_for_other_streams_or_a_body_already_refused() -> None:
    bodyhook.install()
    for stream in (True, lambda data: data):
        first = next(HttpStream.state_stream_request_body(_stream(stream), RequestEndOfMessage(1)))
        assert not isinstance(first, BodyCompleteHook)
    buf = Buffered(Work(), lambda msg: b"", 2)
    buf(b"too long")  # over its limit: refused, nothing to prepare
    first = next(HttpStream.state_stream_request_body(_stream(buf), RequestEndOfMessage(1)))
    assert not isinstance(first, BodyCompleteHook)


def test_between_the_pieces_of_a_paced_body_the_hook_waits_for_the_writes() -> None:
    """A paced body's output (streamed.Spooled) is sent piece by piece with the hook between
    them: the hook returns only once mitmproxy's writers of the flow's connection drained
    (its own backpressure, ConnectionHandler.drain_writers), never queuing the next piece
    behind a backlog in the upstream socket's buffer."""
    import asyncio

    from mitmproxy.addons.proxyserver import Proxyserver
    from mitmproxy.test import taddons

    class Handler:  # mitmproxy's ConnectionHandler, as far as the hook uses it
        def __init__(self) -> None:
            self.writable = asyncio.Event()
            self.drains = 0

        async def drain_writers(self) -> None:
            self.drains += 1
            await self.writable.wait()

    buf = Buffered(Work(), lambda msg: b"", None)
    buf.paced = True
    buf.finished = True  # asked for its output: the hook now comes between its pieces
    f = tflow.tflow()
    f.request.stream = buf

    async def run() -> None:
        ps = Proxyserver()
        with taddons.context(ps):
            handler = Handler()
            ps.connections[f.client_conn.id] = handler
            hook = asyncio.ensure_future(Disguise().disguise_body_complete(f))
            await asyncio.sleep(0.05)
            assert handler.drains == 1 and not hook.done()  # waits while the piece before is unwritten
            handler.writable.set()
            await asyncio.wait_for(hook, 5)

    asyncio.run(run())


def _client_gone():
    """RequestProtocolError as mitmproxy 11 (a status code) and 12 (an ErrorCode) make it."""
    from mitmproxy.proxy.layers.http import RequestProtocolError, _events

    code = getattr(getattr(_events, "ErrorCode", None), "CLIENT_DISCONNECTED", 502)
    return RequestProtocolError(1, "Client disconnected.", code)


def _deferred_stream(deferred: bool):
    """A real HttpStream in the middle of a request body it streams; deferred: its headers
    held back by the hook (a paced body: nothing went upstream, no server connection made)."""
    from mitmproxy import options
    from mitmproxy.proxy.context import Context
    from mitmproxy.proxy.layers.http import HttpStream

    ctx = Context(tflow.tclient_conn(), options.Options())
    ctx.server = tflow.tserver_conn()
    s = HttpStream(ctx, 1)
    s.flow = tflow.tflow()
    s.client_state = s.state_stream_request_body
    s._disguise_deferred = deferred
    return s


def test_a_client_gone_before_its_deferred_body_ends_gets_the_error_hook_and_upstream_is_told_nothing() -> None:
    """mitmproxy tells the server connection of a streamed request that the client went
    away; a paced body's headers were held back, so there is no such connection in its
    tables: "mitmproxy has crashed!" (a KeyError), the error hook never ran, and the flow's
    record and the worker's copy of the body were kept for good (probe Q: thousands of cut
    uploads). The hook's stream is one mitmproxy reads whole: the error hook, nothing sent."""
    from mitmproxy.proxy.layers.http import HttpErrorHook

    bodyhook.install()
    s = _deferred_stream(True)
    cmds = list(HttpStream.handle_protocol_error(s, _client_gone()))
    assert [type(c) for c in cmds if isinstance(c, (HttpErrorHook, SendHttp))] == [HttpErrorHook]
    assert s.flow.error is not None and not s._disguise_deferred


def test_a_client_gone_mid_body_whose_headers_left_is_told_upstream_as_mitmproxy_does() -> None:
    from mitmproxy.proxy.layers.http import HttpErrorHook

    bodyhook.install()
    s = _deferred_stream(False)
    cmds = list(HttpStream.handle_protocol_error(s, _client_gone()))
    assert [type(c) for c in cmds if isinstance(c, (HttpErrorHook, SendHttp))] == [SendHttp, HttpErrorHook]


def test_a_deferred_body_refused_at_its_end_sends_nothing_and_the_request_hook_answers_it() -> None:
    """A body whose headers were held back and that its last call refuses (a header that
    copies an original the body gave its key: only masking the body knows it) leaves
    nothing at all: no headers, no empty body, no connection. For mitmproxy the body was
    read whole, and its request hook (Disguise._request) answers it."""
    from disguiselib.errors import LeakError

    def refusing(raw: bytes) -> bytes:
        raise LeakError("an original (PASSWORD in header x-note) would have left unmasked")

    bodyhook.install()
    s = _deferred_stream(True)
    buf = Buffered(refusing, lambda msg: b"", None)
    buf(b"db password=hunter2xyz9Q")
    s.flow.request.stream = buf
    cmds = []
    for c in HttpStream.state_stream_request_body(s, RequestEndOfMessage(1)):
        cmds.append(c)
        if isinstance(c, HttpRequestHook):
            break  # (what follows needs a real layer round it)
    assert isinstance(cmds[-1], HttpRequestHook) and not [c for c in cmds if isinstance(c, SendHttp)]
    assert buf.held_back and buf.finished and "PASSWORD in header x-note" in (buf.error or "")
    assert s.client_state == s.state_done and not s._disguise_deferred and s.flow.request.content == b""


def test_a_deferred_body_masked_at_its_end_sends_its_headers_then_the_masked_body() -> None:
    from mitmproxy.proxy.layers.http import GetHttpConnection, RequestHeaders

    bodyhook.install()
    s = _deferred_stream(True)
    if "store_streamed_bodies" not in s.context.options:  # (mitmproxy 12 reads it; its proxyserver declares it)
        s.context.options.add_option("store_streamed_bodies", bool, False, "")
    s.context.options.store_streamed_bodies = True  # (12: the flow keeps what was sent)
    buf = Buffered(lambda raw: b"masked:" + raw, lambda msg: b"", None)
    buf(b"body")
    s.flow.request.stream = buf
    gen = HttpStream.state_stream_request_body(s, RequestEndOfMessage(1))
    cmds, c = [], next(gen)
    while not isinstance(c, HttpRequestHook):
        cmds.append(c)
        c = gen.send((s.context.server, None) if isinstance(c, GetHttpConnection) else None)
    sent = [type(c.event) for c in cmds if isinstance(c, SendHttp)]
    assert isinstance(cmds[0], GetHttpConnection) and sent == [RequestHeaders, RequestData]
    assert cmds[-1].event.data == b"masked:body" and not buf.held_back and buf.finished
    assert bytes(s.request_body_buf) == b"masked:body" or s.flow.request.content == b"masked:body"
