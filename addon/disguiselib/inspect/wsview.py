"""A readable account of a realtime WebSocket connection, sans I/O: one row per event
and the reassembled text of each channel (what the client read), for the contentviews,
`disguise show` and the audit (a disguise split across two deltas is in neither event
alone).

A connection is given as its messages in order, each `Msg(from_client, content,
state)`; state tells what the addon did with it: "sent" (went on, maybe changed),
"dropped" (not forwarded: held whole, replaced by injected events, or refused),
"injected" (an event the addon sent in place of dropped ones). Channels, tolerantly (an
unknown event is listed, never an error), are each realtime API's to say: its spec's
`view` (base/wirespec.py; OpenAI Realtime's and Gemini Live's in their modules).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..apis.registry import SPECS
from ..base.wirespec import WEBSOCKET
from .record import plural
from .sseview import MAX_EVENT_CHARS, Channel

# Each realtime API's reader of a server event; the first that answers True wins.
_READERS = tuple(spec.view for spec in SPECS if WEBSOCKET in spec.framings and spec.view is not None)

SENT, DROPPED, INJECTED = "sent", "dropped", "injected"


@dataclass
class Msg:
    from_client: bool
    content: bytes
    state: str = SENT


@dataclass
class WsEvent:
    number: int  # 1-based position among the connection's messages
    msg: Msg
    doc: object  # the content parsed as JSON, None when it is not JSON


@dataclass
class WsStream:
    events: list[WsEvent]
    channels: dict[str, Channel]  # what the client received, per channel


def _doc(content: bytes) -> object:
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def received(m: Msg) -> bool:
    """Did the client receive this message?"""
    return not m.from_client and m.state != DROPPED


def sent_upstream(m: Msg) -> bool:
    """Did upstream receive this message?"""
    return m.from_client and m.state != DROPPED


def parse(msgs: list[Msg]) -> WsStream:
    """Every message as an event; the channels of what the client received."""
    events: list[WsEvent] = []
    channels: dict[str, Channel] = {}
    for i, m in enumerate(msgs, 1):
        doc = _doc(m.content)
        events.append(WsEvent(i, m, doc))
        if received(m) and isinstance(doc, dict):
            _channels(doc, i, channels)
    return WsStream(events, channels)


def _chan(channels: dict[str, Channel], key: str, kind: str) -> Channel:
    c = channels.get(key)
    if c is None:
        c = channels[key] = Channel(key, kind)
    return c


def _channels(doc: dict, n: int, channels: dict[str, Channel]) -> None:
    def chan(key: str, kind: str) -> Channel:
        return _chan(channels, key, kind)

    for read in _READERS:
        if read(doc, n, chan):
            return


def _name(doc: object) -> str:
    if not isinstance(doc, dict):
        return "(not JSON)"
    t = doc.get("type")
    if isinstance(t, str):
        return t
    if len(doc) == 1:
        k = next(iter(doc))
        v = doc[k]
        if isinstance(v, dict) and v:  # a message told by its one member: what it holds
            return f"{k}:" + ",".join(v)
        return k
    return ",".join(doc)


def row(e: WsEvent) -> str:
    m = e.msg
    arrow = "→ upstream" if m.from_client else "← client  "
    state = {SENT: "", DROPPED: " [dropped]", INJECTED: " [injected by disguise]"}[m.state]
    text = m.content.decode("utf-8", "replace")
    if len(text) > MAX_EVENT_CHARS:
        text = text[:MAX_EVENT_CHARS] + f"… ({len(m.content)} bytes)"
    return f"{e.number:>5} {arrow} {_name(e.doc):<40}{state} {text}"


def render_connection(msgs: list[Msg], title: str = "") -> str:
    """Text for a contentview or `disguise show`: the client's channels reassembled,
    then one row per event."""
    s = parse(msgs)
    out: list[str] = []
    n_up = sum(sent_upstream(m) for m in msgs)
    n_down = sum(received(m) for m in msgs)
    out.append((title + ": " if title else "") + f"{plural(len(msgs), 'message')}: {n_up} went upstream, "
               f"{n_down} reached the client, {plural(len(s.channels), 'channel')}")  # fmt: skip
    for c in s.channels.values():
        out.append("")
        out.append(f"── {c.label} · {c.kind} · {len(c.pieces)} pieces ──")
        text = c.text
        if c.kind == "json":
            try:
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            except ValueError:
                pass
        out.append(text)
    out.append("")
    out.append("── events ──")
    out.extend(row(e) for e in s.events)
    return "\n".join(out)


def render_message(content: bytes) -> str:
    """One message: pretty JSON, or its text."""
    doc = _doc(content)
    if doc is None:
        return content.decode("utf-8", "replace")
    return json.dumps(doc, indent=2, ensure_ascii=False)
