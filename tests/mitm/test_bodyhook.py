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
