"""Realtime APIs over WebSocket, the adapter (mitm/websocket.py) in-process: the upgrade,
client frames masked in place, server frames restored in place, a frame nothing changes
left alone, a held tail injected in order, a refusal dropped and answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mitmproxy import flow as mflow
from mitmproxy import websocket as mws
from mitmproxy.test import taddons, tflow, tutils

from disguiselib.mitm.addon import Disguise
from disguiselib.state import Phase
from realtime_util import OpenAIScript, dumps
from strategies import splits

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""


@pytest.fixture
def env(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    injected: list[tuple[bool, bytes, bool]] = []
    with taddons.context(a) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_defaults=False)

            def inject(flow: mflow.Flow, to_client: bool, message: bytes, is_text: bool = True) -> None:
                injected.append((to_client, message, is_text))  # what mitmproxy would send

            tctx.master.commands.add("inject.websocket", inject)
            yield a, injected
        finally:
            tctx.master.event_loop.close()


def upgraded(a: Disguise):
    f = tflow.twebsocketflow(messages=False)
    f.request.method, f.request.host, f.request.path = "GET", "api.openai.com", "/v1/realtime?model=gpt-realtime"
    f.request.headers["upgrade"] = "websocket"
    f.response = None
    a.requestheaders(f)
    a.request(f)
    assert f.response is None
    f.response = tutils.tresp(status_code=101)
    a.responseheaders(f)
    assert a.guard.records[f.id].phase is Phase.STREAMING
    return f


def send(a: Disguise, f, data: dict | bytes, from_client: bool, text: bool = True) -> mws.WebSocketMessage:
    content = data if isinstance(data, bytes) else dumps(data).encode()
    m = mws.WebSocketMessage(1 if text else 2, from_client, content)
    f.websocket.messages.append(m)
    a.websocket_message(f)
    return m


def test_client_events_are_masked_in_place_and_clean_ones_left_alone(env) -> None:
    a, injected = env
    f = upgraded(a)
    clean = send(a, f, {"type": "input_audio_buffer.commit"}, True)
    assert clean.content == b'{"type":"input_audio_buffer.commit"}' and not clean.dropped
    ev = {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
          "content": [{"type": "input_text", "text": "Acme Corp, bob@corp.example.com"}]}}  # fmt: skip
    m = send(a, f, ev, True)
    assert json.loads(m.content)["item"]["content"][0]["text"] == "Zenith Labs, [EMAIL_1]" and not m.dropped
    assert injected == [] and "masked 2" in f.comment


def test_server_events_are_restored_and_a_held_tail_goes_out_before_its_done(env) -> None:
    a, injected = env
    f = upgraded(a)
    send(a, f, {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "mail bob@corp.example.com"}]}}, True)  # fmt: skip
    s = OpenAIScript()
    events, _ = s.message("resp_1", "item_1", 0, ["Zenith Labs to [EMA", "IL_1]", " and Zen"])
    msgs = [send(a, f, ev, False) for ev in events]
    out_text = ""
    for ev, m in zip(events, msgs):
        if ev["type"] == "response.output_text.delta" and not m.dropped:
            out_text += json.loads(m.content)["delta"]
    for _to_client, data, _ in injected:  # the tail, injected right before the .done
        d = json.loads(data)
        if d["type"] == "response.output_text.delta":
            out_text += d["delta"]
    assert out_text == "Acme Corp to bob@corp.example.com and Zen"
    done = next(m for ev, m in zip(events, msgs) if ev["type"] == "response.output_text.done")
    assert done.dropped  # one frame became two: dropped, replaced by injected messages, in order
    types = [json.loads(d)["type"] for _, d, _ in injected]
    assert types.index("response.output_text.delta") < types.index("response.output_text.done")
    assert all(to_client for to_client, _, _ in injected)


def test_an_unknown_client_event_holding_an_original_is_dropped_and_answered(env) -> None:
    a, injected = env
    f = upgraded(a)
    m = send(a, f, {"type": "some.future.event", "note": "Acme Corp"}, True)
    assert m.dropped or b"Acme Corp" not in m.content


def test_an_upgrade_url_holding_an_original_is_refused(env) -> None:
    a, _ = env
    f = tflow.twebsocketflow(messages=False)
    f.request.method, f.request.host = "GET", "api.openai.com"
    f.request.path = "/v1/realtime?model=gpt-realtime&user=bob@corp.example.com"
    f.request.headers["upgrade"] = "websocket"
    f.response = None
    a.requestheaders(f)
    a.request(f)
    assert f.response is not None and f.response.status_code >= 400 and b"EMAIL in url" in f.response.content


def wsproto_pair():
    """A client and the proxy's side of it (what mitmproxy's layer calls `client_ws`),
    both wsproto connections, opened."""
    import wsproto
    from wsproto.events import AcceptConnection, Request

    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    proxy = wsproto.Connection(wsproto.ConnectionType.SERVER)
    client.receive_data(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        b"Sec-WebSocket-Accept: " + _accept(client.send(Request(host="h", target="/"))) + b"\r\n\r\n")  # fmt: skip
    assert any(isinstance(e, AcceptConnection) for e in client.events())
    return client, proxy


def _accept(handshake: bytes) -> bytes:
    import base64
    import hashlib
    import re

    key = re.search(rb"(?i)sec-websocket-key: *(\S+)", handshake).group(1)  # type: ignore[union-attr]
    return base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())


def test_the_client_side_reader_masks_control_frames_and_the_writer_echoes_them_back(env) -> None:
    from wsproto.events import CloseConnection, Ping, Pong

    from disguiselib.mitm.websocket import _watch_controls

    a, _ = env
    f = upgraded(a)
    conn = a.guard.records[f.id].realtime.connection
    client, proxy = wsproto_pair()
    _watch_controls(proxy, conn, "openai.realtime")
    proxy.receive_data(client.send(Ping(b"ping Acme Corp")) + client.send(Pong(b"bob@corp.example.com")))
    assert list(proxy.events()) == [Ping(b"ping Zenith Labs"), Pong(b"[EMAIL_1]")]
    client.receive_data(proxy.send(Pong(b"ping Zenith Labs")))  # upstream's pong, sent on to the client
    assert list(client.events()) == [Pong(b"ping Acme Corp")]
    proxy.receive_data(client.send(CloseConnection(1000, "bye from Acme Corp")))
    close = list(proxy.events())
    assert close == [CloseConnection(1000, "bye from Zenith Labs")]
    client.receive_data(proxy.send(close[0]))  # the layer answers the client's close with the same event
    assert list(client.events()) == [CloseConnection(1000, "bye from Acme Corp")]


def test_a_websocket_whose_layer_cannot_be_found_is_closed_before_a_client_frame_passes(env) -> None:
    a, _ = env
    f = upgraded(a)
    f.live = True
    a.websocket_start(f)  # no proxy server here: no layer to wrap
    rec = a.guard.records[f.id]
    assert rec.phase is Phase.FAILED and "control frames could not be examined" in (rec.reason or "")
    assert send(a, f, {"type": "input_audio_buffer.commit"}, True).dropped  # nothing passes any more


def test_the_client_side_writer_restores_upstreams_ping_and_close_and_the_pong_goes_back_as_upstream_sent(env) -> None:
    from wsproto.events import CloseConnection, Ping, Pong

    from disguiselib.mitm.websocket import _watch_controls

    a, _ = env
    f = upgraded(a)
    conn = a.guard.records[f.id].realtime.connection
    client, proxy = wsproto_pair()
    _watch_controls(proxy, conn, "openai.realtime")
    client.receive_data(proxy.send(Ping(b"ping Zenith Labs")))  # upstream's ping, sent on to the client
    ping = list(client.events())
    assert ping == [Ping(b"ping Acme Corp")]
    proxy.receive_data(client.send(ping[0].response()))  # the client's pong
    assert list(proxy.events()) == [Pong(b"ping Zenith Labs")]  # upstream gets its own back
    client.receive_data(proxy.send(CloseConnection(1000, "bye Zenith Labs")))  # upstream's close
    assert list(client.events()) == [CloseConnection(1000, "bye Acme Corp")]


def _upstream_pair():
    """Upstream and the proxy's side of it (what the layer calls `server_ws`), opened."""
    import wsproto

    return wsproto.Connection(wsproto.ConnectionType.SERVER), wsproto.Connection(wsproto.ConnectionType.CLIENT)


DELTA = {"type": "response.output_text.delta", "response_id": "r1", "item_id": "i1", "output_index": 0,
         "content_index": 0}  # fmt: skip


def test_upstream_closing_mid_text_gets_the_held_tail_then_an_error_before_its_close(env) -> None:
    from wsproto.events import CloseConnection, TextMessage

    from disguiselib.mitm.websocket import _watch_server

    a, injected = env
    f = upgraded(a)
    rec = a.guard.records[f.id]
    first = send(a, f, {**DELTA, "delta": "ok Zenith Lab"}, False)
    assert json.loads(first.content)["delta"] == "ok "  # "Zenith Lab" held: it may grow into a disguise
    upstream, proxy = _upstream_pair()
    _watch_server(proxy, rec.realtime)
    proxy.receive_data(upstream.send(CloseConnection(1000, "done")))
    evs = list(proxy.events())
    assert [type(e) for e in evs] == [TextMessage, TextMessage, CloseConnection]  # in the order the layer sends
    tail, err = json.loads(evs[0].data), json.loads(evs[1].data)
    assert tail["type"] == "response.output_text.delta" and tail["delta"] == "Zenith Lab"
    assert err["type"] == "error" and "closed before the model's output ended" in err["error"]["message"]
    assert evs[2] == CloseConnection(1000, "done")
    for e in evs[:2]:  # the layer hands each to the hook: passed as they are, to the client
        assert not send(a, f, e.data.encode(), False).dropped
    assert send(a, f, {**DELTA, "delta": "more"}, False).dropped  # anything after: the connection has ended
    a.websocket_end(f)
    assert "held-back characters delivered, then an error" in f.comment
    assert injected == []


def test_messages_injected_and_not_yet_sent_go_before_upstreams_close(env) -> None:
    from wsproto.events import CloseConnection, TextMessage

    from disguiselib.mitm.websocket import _watch_server

    a, injected = env
    f = upgraded(a)
    rec = a.guard.records[f.id]
    send(a, f, {**DELTA, "delta": "ok Zenith Lab"}, False)
    done = send(a, f, {"type": "response.output_text.done", **{k: v for k, v in DELTA.items() if k != "type"},
                       "text": "ok Zenith Lab"}, False)  # fmt: skip
    assert done.dropped and len(injected) == 2  # the tail and the .done, injected: not yet out
    upstream, proxy = _upstream_pair()
    _watch_server(proxy, rec.realtime)
    proxy.receive_data(upstream.send(CloseConnection(1000)))
    evs = list(proxy.events())
    assert [e.data.encode() for e in evs if isinstance(e, TextMessage)] == [d for _, d, _ in injected]
    assert isinstance(evs[-1], CloseConnection) and not rec.realtime.pending  # no error: no channel was open
    for e in evs[:-1]:
        assert not send(a, f, e.data.encode(), False).dropped


def test_a_close_with_nothing_owed_goes_alone_and_an_upstream_message_left_unfinished_is_not_joined(env) -> None:
    from wsproto.events import BytesMessage, CloseConnection

    from disguiselib.mitm.websocket import _watch_server

    a, _ = env
    f = upgraded(a)
    rec = a.guard.records[f.id]
    upstream, proxy = _upstream_pair()
    _watch_server(proxy, rec.realtime)
    proxy.receive_data(upstream.send(CloseConnection(1001)))
    assert list(proxy.events()) == [CloseConnection(1001, "")]
    g = upgraded(a)
    send(a, g, {**DELTA, "delta": "ok Zen"}, False)
    upstream, proxy = _upstream_pair()
    proxy.frame_buf = [b"partial"]  # what mitmproxy's WebsocketConnection holds of an unfinished message
    _watch_server(proxy, a.guard.records[g.id].realtime)
    proxy.receive_data(upstream.send(CloseConnection(1000)))
    evs = list(proxy.events())
    assert proxy.frame_buf == [b""] and len(evs) == 3 and not any(isinstance(e, BytesMessage) for e in evs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), pieces=st.lists(st.sampled_from(["Zenith Labs", "Zenith", " Lab", "s", "ok ", "Zen", "é", "x"]),
                                       max_size=8))  # fmt: skip
def test_whatever_the_split_upstreams_close_leaves_the_client_the_whole_text_restored(env, data, pieces) -> None:
    """concat(the client's deltas) == reverse(concat(upstream's)), upstream closing right after the last."""
    from wsproto.events import CloseConnection

    from disguiselib.mitm.websocket import _watch_server

    a, injected = env
    whole = "".join(pieces)
    f = upgraded(a)
    rec = a.guard.records[f.id]
    got = ""
    for d in data.draw(splits(whole)):
        m = send(a, f, {**DELTA, "delta": d}, False)
        got += "" if m.dropped else json.loads(m.content)["delta"]
    upstream, proxy = _upstream_pair()
    _watch_server(proxy, rec.realtime)
    proxy.receive_data(upstream.send(CloseConnection(1000)))
    evs = list(proxy.events())
    assert isinstance(evs[-1], CloseConnection) and injected == []
    owed = [json.loads(e.data) for e in evs[:-1]]
    got += "".join(e.get("delta", "") for e in owed)
    assert got == whole.replace("Zenith Labs", "Acme Corp")
    if any(e.get("delta") for e in owed):  # text was held: the error comes last
        assert owed[-1]["type"] == "error"


def test_gemini_binary_messages_owed_before_upstreams_close_stay_binary(env) -> None:
    from wsproto.events import BytesMessage, CloseConnection

    from disguiselib.mitm.websocket import _watch_server

    a, _ = env
    f = tflow.twebsocketflow(messages=False)
    f.request.method, f.request.host = "GET", "generativelanguage.googleapis.com"
    f.request.path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
    f.request.headers["upgrade"] = "websocket"
    f.response = None
    a.requestheaders(f)
    a.request(f)
    f.response = tutils.tresp(status_code=101)
    a.responseheaders(f)
    rec = a.guard.records[f.id]
    m = send(a, f, {"serverContent": {"modelTurn": {"parts": [{"text": "ok Zenith Lab"}]}}}, False, text=False)
    assert b"Zenith" not in m.content
    upstream, proxy = _upstream_pair()
    _watch_server(proxy, rec.realtime)
    proxy.receive_data(upstream.send(CloseConnection(1000)))
    evs = list(proxy.events())
    assert [type(e) for e in evs] == [BytesMessage, BytesMessage, CloseConnection]
    assert b"Zenith Lab" in evs[0].data and json.loads(evs[1].data)["status"] == "INTERNAL"
    for e in evs[:2]:
        assert not send(a, f, bytes(e.data), False, text=False).dropped
