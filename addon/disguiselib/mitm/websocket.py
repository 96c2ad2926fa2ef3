"""Realtime APIs over WebSocket (adapter-level): mitmproxy's WebSocket hooks driving one
sans-I/O realtime.Connection per flow.

mitmproxy reassembles each WebSocket message and calls `websocket_message` with it as
`flow.websocket.messages[-1]`; what the hook leaves in `.content` is sent on (in the
message's own type: text or binary), unless it is `.drop()`ped. So:

- a frame nothing changes is left alone (byte-identical, even its fragmentation);
- a changed frame gets its new content; a frame whose text is all held back is dropped;
- one frame that becomes several (a held tail released as a synthetic delta right before
  its `.done`): mitmproxy has no way to send two messages from one hook, so the frame is
  dropped and its replacements are injected (`inject.websocket`). Injected messages are
  queued behind anything mitmproxy already holds for the connection, so from then on
  every server frame is dropped and injected too, in order, until the injected ones have
  all come back through this hook (they do, flagged `injected`): nothing overtakes.
- a refused client event or a server event that cannot be restored: the frame is
  dropped, the client gets the API's error event (injected), and when it has gone out
  the connection is closed with the Connection's code (1008, 1011). mitmproxy offers no
  call for that; the close event is put into its WebSocket layer's queue right behind
  the error (see `_close_after`). Should that fail, the connection stays open but
  forwards nothing, either way, ever again.

Control frames reach no hook: mitmproxy's WebSocket layer forwards a ping or a pong the
moment wsproto reads it, and a close before `websocket_end` runs. Yet the client's carry
text upstream (a ping's payload, a close's reason). So at `websocket_start`, before any
frame is read, the layer's reader of the client side is wrapped (`_watch_controls`): each
control frame it yields has its payload masked first (pipeline.client_control), and what
the layer then forwards, logs and records (`close_reason`) is the masked one. What the
layer sends the client goes through a wrapper too: a pong echoing a rewritten ping, and
the answer to the client's own close, carry the client's payload back (Connection.echoed);
upstream's ping and close reach the client restored (Connection.restore_control), while
the layer logs, records and answers upstream with upstream's own (no original in
mitmproxy's log lines); the client's pong to a restored ping goes upstream with
upstream's own payload (pipeline.client_control).
Internal to mitmproxy like `_close_after`; should the layer not be found, the
connection is closed rather than left to forward the client's control frames unread.

Upstream's close, too, is forwarded before any hook runs; so the layer's reader of the
server side is wrapped as well (`_watch_server`): right before it yields upstream's
close, it yields what the client is still owed as messages from upstream: injected
messages not yet sent, every held tail (restored, as at a `.done`) and, where a channel
was still open, the API's error event (Connection.end). The layer hands each to the
websocket_message hook, which lets it pass (RealtimeFlow.passing), sends it to the
client, then sends the close: a stream the provider cut delivers its held text, then the
error. A client's close leaves nothing owed (the client stopped reading);
`websocket_end` says what was left held back then.

Replays: mitmproxy refuses a client replay of a WebSocket flow itself; a server replay
of an upgrade and an offline run (`-nr`) are refused or skipped here, with a message.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator

from mitmproxy import ctx, http

from ..apis.registry import RealtimeApi
from ..base.realtime import Connection, Control, Frame, Result, State
from ..errors import log_internal
from ..inspect.record import FAILED_MARK, META, SIDES, counts_text, destination, set_fakes, summary_text
from ..pipeline import client_control, client_frame, leak_scan, realtime_connection
from ..state import FlowRecord, Phase, RealtimeFlow
from .flows import leaving_headers

log = logging.getLogger("disguise")


class Realtime:
    """The WebSocket half of the Disguise addon (it calls these from its hooks). The
    per-flow state is the flow's record (state.FlowRecord.realtime), which the Guard keeps
    for the process: a reloaded script carries on with its connections, and what no
    Disguise looked at, the Guard drops."""

    def __init__(self) -> None:
        self.capture_limit = 8 * 1024 * 1024

    # -- the upgrade request ------------------------------------------------------------------

    def handshake(self, flow: http.HTTPFlow, rec: FlowRecord, api: RealtimeApi) -> str | None:
        """At the request hook of an upgrade to a realtime API: None when the connection
        may go ahead (the record is MASKED, its Connection set up), else why it is
        refused."""
        r = flow.request
        assert rec.config is not None  # a record without one is refused before (Disguise._request)
        hit = leak_scan(r.path, leaving_headers(r), None, rec.config.rules, api, dest=destination(flow))
        if hit is not None:
            return f"an original ({hit}) would have left unmasked"
        conn = realtime_connection(api, rec.config)
        rec.api = api
        rec.realtime = RealtimeFlow(api, conn)
        rec.session = conn.session
        rec.restorer = conn.restorer
        rec.checked_body = r.raw_content
        rec.to(Phase.MASKED)
        flow.metadata.setdefault(META, {})["websocket"] = True
        return None

    def response_headers(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        """The upgrade's answer: a 101 opens the connection (STREAMING); anything else
        is an HTTP answer with nothing of ours in it (upstream never saw a disguise from
        this flow), passed as it is."""
        resp = flow.response
        assert resp is not None
        rec.to(Phase.STREAMING if resp.status_code == 101 else Phase.RECEIVING)

    def response(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        """The response hook. A 101 that mitmproxy does not turn into a WebSocket (its
        `websocket` option off) would leave the client talking to upstream unexamined:
        the flow is killed."""
        if rec.phase is Phase.MASKED:  # no responseheaders hook came
            self.response_headers(flow, rec)
        if rec.phase is Phase.RECEIVING:
            rec.to(Phase.RESTORED)
            return
        if rec.phase is Phase.STREAMING and flow.websocket is None:
            why = "a WebSocket upgrade to a realtime API would not be examined (mitmproxy's websocket option is off)"
            log.error("disguise: %s: connection closed", why)
            if flow.killable:
                flow.kill()
            rec.to(Phase.FAILED, why)

    def start(self, flow: http.HTTPFlow, rec: FlowRecord | None) -> None:
        """websocket_start (rec: the flow's record, None or not a realtime one: not
        ours): the client's control frames masked from the first one on (see the module
        docstring). Where the layer cannot be found, the connection is closed (FAILED)
        before a frame of the client's is forwarded."""
        if rec is None or rec.realtime is None or not flow.live:
            return  # not ours, or an offline run (-nr) of a recorded flow: nothing is sent
        flow_state = rec.realtime
        try:
            from mitmproxy.proxy.layers.websocket import WebsocketLayer

            layer = _find_layer(flow, WebsocketLayer)
            if layer is None:
                raise LookupError("no WebSocket layer for the flow")
            _watch_controls(layer.client_ws, flow_state.connection, flow_state.api.name)
            _watch_server(layer.server_ws, flow_state)
        except Exception as e:  # noqa: BLE001 - unread control frames must not go upstream
            why = f"the client's control frames could not be examined ({type(e).__name__})"
            log.error("disguise: %s: %s: the connection is closed", flow_state.api.name, why)
            flow_state.connection.close()
            _close_connections(flow)
            if rec.can(Phase.FAILED):
                rec.to(Phase.FAILED, why)

    # -- messages -------------------------------------------------------------------------------

    def message(self, flow: http.HTTPFlow, rec: FlowRecord | None) -> None:
        """websocket_message (rec as for start)."""
        ws = flow.websocket
        if rec is None or rec.realtime is None or ws is None or not ws.messages or not flow.live:
            return  # not ours, or an offline run (-nr) of a recorded flow: nothing is sent
        flow_state = rec.realtime
        msg = ws.messages[-1]
        flow_state.handled = msg
        if not msg.from_client and flow_state.passing and flow_state.passing[0] == msg.content:
            flow_state.passing.popleft()  # delivered before upstream's close (_watch_server)
            return
        if msg.injected and not msg.from_client and flow_state.pending and flow_state.pending[0].data == msg.content:
            flow_state.pending.popleft()  # one of ours, going out now
            if not flow_state.pending and flow_state.close is not None:
                _close_after(flow, flow_state.close)
            return
        try:
            self._message(flow, rec, flow_state, msg)
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            log_internal(log, "websocket message", e)
            msg.drop()
            flow_state.connection.close()

    def _message(self, flow: http.HTTPFlow, rec: FlowRecord, flow_state: RealtimeFlow, msg) -> None:
        frame = Frame(msg.content, msg.is_text)
        conn = flow_state.connection
        res = client_frame(conn, frame) if msg.from_client else conn.server(frame)
        if conn.exc is not None:
            log_internal(log, f"{flow_state.api.name}: {conn.failure}", conn.exc)
            conn.exc = None
        if res.close is not None:
            msg.drop()
            self._end_with(flow, rec, flow_state, res)
            return
        outs = res.frames
        if msg.from_client:
            if not outs:
                msg.drop()
            elif outs[0] is not frame:
                self._keep(flow, flow_state, msg.content)
                msg.content = outs[0].data
                self._summary(flow, flow_state)  # the flow comment follows what was masked, live
            flow_state.left = msg.content
            return
        if flow_state.pending or len(outs) != 1:
            msg.drop()  # replaced by injected messages, in order (see the module docstring)
            if outs:
                self._keep(flow, flow_state, msg.content)
            for f in outs:
                self._inject(flow, flow_state, f)
        elif outs[0] is not frame:
            self._keep(flow, flow_state, msg.content)
            msg.content = outs[0].data

    def recheck(self, flow: http.HTTPFlow, rec: FlowRecord) -> None:
        """A client message another addon changed after Disguise masked it (the Guard, last,
        saw it): the leak guard once more on what now leaves, as a client event's path
        reads it. An original there (masking would change it) ends the connection as a
        refused event does; nothing of it leaves."""
        flow_state, ws = rec.realtime, flow.websocket
        if flow_state is None or ws is None or not ws.messages:
            return
        msg, conn = ws.messages[-1], flow_state.connection
        frame = Frame(msg.content, msg.is_text)
        try:
            res = client_frame(conn, frame)
            if res.close is None and res.frames and res.frames[0] is not frame:
                res = conn.refuse("an event another addon changed after masking holds an original", None)
        except Exception as e:  # noqa: BLE001 - the check failing is a refusal too
            log_internal(log, "websocket message", e)
            res = conn.refuse(f"internal error ({type(e).__name__})", None)
        if res.close is not None or not res.frames:
            msg.drop()
        if res.close is not None:
            self._end_with(flow, rec, flow_state, res)
        else:
            flow_state.left = msg.content

    def _inject(self, flow: http.HTTPFlow, flow_state: RealtimeFlow, f: Frame) -> None:
        flow_state.pending.append(f)
        ctx.master.commands.call("inject.websocket", flow, True, f.data, f.text)

    def _end_with(self, flow: http.HTTPFlow, rec: FlowRecord, flow_state: RealtimeFlow, res: Result) -> None:
        """The addon ends the connection: the error to the client, then the close."""
        conn = flow_state.connection
        code = res.close[0] if res.close else 0
        log.error("disguise: %s: %s; the connection is closed (%d)", flow_state.api.name, conn.failure, code)
        flow_state.close = res.close
        if res.error is not None:
            self._inject(flow, flow_state, res.error)
        elif flow_state.close is not None and not flow_state.pending:
            _close_after(flow, flow_state.close)
        if rec.can(Phase.FAILED):
            rec.to(Phase.FAILED, conn.failure)
        self._summary(flow, flow_state)

    def _keep(self, flow: http.HTTPFlow, flow_state: RealtimeFlow, other: bytes) -> None:
        """Keep the other side of the message about to change (the client's original, or
        upstream's event), bounded like every kept side."""
        if flow.websocket is None:
            return
        index = len(flow.websocket.messages) - 1
        if flow_state.kept_bytes + len(other) > self.capture_limit:
            flow.metadata.setdefault(META, {})["cut"] = self.capture_limit
            return
        flow_state.kept.append([index, bytes(other)])
        flow_state.kept_bytes += len(other)

    # -- the end ----------------------------------------------------------------------------

    def end(self, flow: http.HTTPFlow, rec: FlowRecord | None, error: bool = False) -> None:
        """websocket_end (or error; rec as for start): what was left held back, the summary."""
        if rec is None or rec.realtime is None or rec.realtime.ended:
            return
        flow_state = rec.realtime
        flow_state.ended = True
        held = flow_state.connection.held_chars
        res = flow_state.connection.end()
        meta = flow.metadata.setdefault(META, {})
        if flow_state.cut is not None:
            meta["end"] = flow_state.cut
        if res.frames or res.error is not None:
            log.warning(
                "disguise: %s: the connection closed with the model's output unfinished; %d held-back "
                "character(s) were not delivered (a close cannot be followed by more messages)",
                flow_state.api.name, held,
            )  # fmt: skip
            meta["end"] = f"connection closed with the output unfinished ({held} held-back characters not delivered)"
        elif error:
            meta["end"] = f"ERROR: {flow.error.msg if flow.error is not None else 'error'}"
        if flow_state.pending:
            log.error("disguise: %s: the connection closed before %d restored message(s) went out",
                      flow_state.api.name, len(flow_state.pending))  # fmt: skip
        if rec.can(Phase.RESTORED):
            rec.to(Phase.RESTORED)
        self._summary(flow, flow_state, final=True)

    def _summary(self, flow: http.HTTPFlow, flow_state: RealtimeFlow, final: bool = False) -> None:
        conn = flow_state.connection
        meta = flow.metadata.setdefault(META, {})
        c = conn.counts
        meta.update(
            api=flow_state.api.name, websocket=True, masked=conn.session.masked, counts=dict(conn.session.counts),
            placeholders=len(conn.session.placeholders), restored=conn.restorer.restored,
            stripped=conn.restorer.stripped, events=c.client_in + c.server_in,
            events_changed=c.client_changed + c.server_changed,
        )  # fmt: skip
        set_fakes(meta, conn.session)
        if conn.failure:
            meta["failed"] = conn.failure
            flow.marked = FAILED_MARK
        if final:
            meta.setdefault("end", "completed")
            sides = flow.metadata.setdefault(SIDES, {})
            sides["websocket_other"] = flow_state.kept
        flow.comment = summary_text(meta)
        if final:
            log.info("disguise: %s websocket: %s", flow_state.api.name, counts_text(meta))


def _close_after(flow: http.HTTPFlow, close: tuple[int, str]) -> None:
    """Close both sides of the WebSocket with close = (code, reason), right after the
    message now going out: the close event goes into the WebSocket layer's queue of
    events from the server, which it works through right after this hook (it is working
    on our injected message from that queue). The layer then sends the close to both
    sides and ends the flow, as when upstream closes. Internal to mitmproxy (checked on
    11 and 12: proxy/layers/websocket.py and wsproto's `_events`)."""
    try:
        import wsproto.events
        from mitmproxy.proxy.layers.websocket import WebsocketLayer

        layer = _find_layer(flow, WebsocketLayer)
        if layer is None:
            raise LookupError("no WebSocket layer for the flow")
        layer.server_ws._events.append(wsproto.events.CloseConnection(code=close[0], reason=close[1]))
    except Exception as e:  # noqa: BLE001 - the connection then forwards nothing (State.CLOSED)
        log.error("disguise: could not close the WebSocket (%s): it stays open but forwards nothing", type(e).__name__)


def _watch_controls(ws, conn: Connection, api: str) -> None:
    """Wrap `ws`, the wsproto connection mitmproxy's WebSocket layer reads the client
    with (its `client_ws`), on the instance: the client's ping, pong and close events
    come out of `ws.events()` with their payload masked (the layer forwards, logs and
    records what it gets), and the pong and close `ws.send` is given for the client
    carry the client's own payload back where they echo one rewritten; upstream's ping
    and close go with their payload restored (Connection.to_client). Internal to
    mitmproxy and wsproto (checked on 11 with wsproto 1.2 and 12 with wsproto 1.3:
    proxy/layers/websocket.py reads only `events()` and writes only `send()`)."""
    import wsproto.events as wse

    kinds: dict[type, Control] = {wse.Ping: Control.PING, wse.Pong: Control.PONG, wse.CloseConnection: Control.CLOSE}
    events: Callable[[], Iterator[object]] = ws.events
    send: Callable[[object], bytes] = ws.send

    def masked(ev: object) -> object:
        kind = kinds.get(type(ev))
        if kind is None:
            return ev  # a message: the websocket_message hook's
        try:
            return _with_payload(ev, kind, _control_out(conn, kind, _payload(ev, kind), api))
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            log_internal(log, "websocket control frame", e)
            return _with_payload(ev, kind, b"")

    def restored(ev: object) -> object:
        kind = kinds.get(type(ev))
        if kind is None:
            return ev
        try:
            return _with_payload(ev, kind, conn.to_client(kind, _payload(ev, kind)))
        except Exception as e:  # noqa: BLE001 - never hand the client a disguise unrestored
            log_internal(log, "websocket control frame to the client", e)
            return _with_payload(ev, kind, b"")

    def masked_events() -> Iterator[object]:
        for ev in events():
            yield masked(ev)

    def restoring_send(ev: object) -> bytes:
        return send(restored(ev))

    ws.events = masked_events
    ws.send = restoring_send


def _watch_server(ws, flow_state: RealtimeFlow) -> None:
    """Wrap `ws`, the wsproto connection the layer reads upstream with (its `server_ws`),
    on the instance, for upstream's close: the layer forwards a close the moment it reads
    one, before any hook. Right before the close, `ws.events()` yields what the client is
    still owed, as messages from upstream (_owed): the layer hands each to the
    websocket_message hook, which lets it pass (RealtimeFlow.passing), and sends it to
    the client, then the close. Internal to mitmproxy and wsproto as _watch_controls (the
    layer works through `events()` in order, each message's hook run before it reads
    the next event)."""
    import wsproto.events as wse

    events: Callable[[], Iterator[object]] = ws.events

    def with_owed() -> Iterator[object]:
        for ev in events():
            if isinstance(ev, wse.CloseConnection):
                try:
                    yield from _owed(ws, flow_state, wse)
                except Exception as e:  # noqa: BLE001 - the close then goes on alone: nothing unrestored passes
                    log_internal(log, "websocket close from upstream", e)
            yield ev

    ws.events = with_owed


def _owed(ws, flow_state: RealtimeFlow, wse) -> Iterator[object]:
    """What the client is owed before upstream's close, as wsproto messages: the messages
    injected and not yet sent (mitmproxy would drop them once the layer has closed), then,
    on a connection still open, every held tail restored and, where a channel was still
    open, the API's error event (Connection.end: a stream the provider cut delivers its
    held text, then the error)."""
    conn = flow_state.connection
    out = list(flow_state.pending)
    flow_state.pending.clear()
    if conn.state is State.OPEN:
        held = conn.held_chars
        res = conn.end()
        out += res.frames
        if res.error is not None:
            out.append(res.error)
            flow_state.cut = (
                f"upstream closed with the output unfinished ({held} held-back characters delivered, then an error)"
            )
            log.warning("disguise: %s: upstream closed with the model's output unfinished; %d held-back "
                        "character(s) delivered, then an error event", conn.name, held)  # fmt: skip
    if not out:
        return
    if hasattr(ws, "frame_buf"):
        ws.frame_buf = [b""]  # a message upstream left unfinished is never sent: ours do not join it
    for f in out:
        flow_state.passing.append(f.data)
        if f.text:
            yield wse.TextMessage(data=f.data.decode("utf-8", "replace"), message_finished=True)
        else:
            yield wse.BytesMessage(data=f.data, message_finished=True)


def _control_out(conn: Connection, kind: Control, data: bytes, api: str) -> bytes:
    out = client_control(conn, kind, data)
    if out.refused is not None:
        log.warning("disguise: %s: a client %s frame went upstream without its payload: %s",
                    api, kind.name.lower(), out.refused)  # fmt: skip
    return out.data


def _payload(ev, kind: Control) -> bytes:
    """A wsproto control event's payload (a close: its reason, UTF-8)."""
    if kind is Control.CLOSE:
        return (ev.reason or "").encode("utf-8")
    return bytes(ev.payload)


def _with_payload(ev, kind: Control, data: bytes):
    """The wsproto control event with data as its payload (itself when it has it)."""
    if data == _payload(ev, kind):
        return ev
    if kind is Control.CLOSE:
        return dataclasses.replace(ev, reason=data.decode("utf-8", "replace"))
    return dataclasses.replace(ev, payload=data)


def _close_connections(flow: http.HTTPFlow) -> None:
    """Close the flow's connection to upstream, and with it the client's (mitmproxy's
    server.ConnectionHandler.close_connection; internal, checked on 11 and 12). Nothing
    when no live connection handler has the flow (an offline run)."""
    try:
        ps = ctx.master.addons.get("proxyserver")
        handler = getattr(ps, "connections", {}).get(flow.client_conn.id)
        if handler is not None:
            handler.close_connection(flow.server_conn)
            handler.close_connection(flow.client_conn)
    except Exception as e:  # noqa: BLE001 - said so; the connection forwards no message (State.CLOSED)
        log.error("disguise: could not close the WebSocket (%s)", type(e).__name__)


def _find_layer(flow: http.HTTPFlow, cls: type):
    ps = ctx.master.addons.get("proxyserver")
    handler = getattr(ps, "connections", {}).get(flow.client_conn.id)
    if handler is None:
        return None
    stack = [getattr(handler, "layer", None)]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, cls) and getattr(x, "flow", None) is flow:
            return x
        stack.extend(getattr(x, a, None) for a in ("layer", "child_layer"))
        streams = getattr(x, "streams", None)
        if isinstance(streams, dict):
            stack.extend(streams.values())
    return None
