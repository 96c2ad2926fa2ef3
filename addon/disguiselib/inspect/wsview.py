"""A readable account of a realtime WebSocket connection, sans I/O: one row per event
and the reassembled text of each channel (what the client read), for the contentviews,
`disguise show` and the audit (a disguise split across two deltas is in neither event
alone).

A connection is given as its messages in order, each `Msg(from_client, content,
state)`; state tells what the addon did with it: "sent" (went on, maybe changed),
"dropped" (not forwarded: held whole, replaced by injected events, or refused),
"injected" (an event the addon sent in place of dropped ones). Channels, tolerantly (an
unknown event is listed, never an error):
- OpenAI Realtime: every text delta (`response.output_text.delta`, transcripts,
  function-call arguments, the input transcription) per (response, item, output,
  content) channel, as providers/openai_realtime.py keys them;
- Gemini Live: the model turn's text parts, the output and the input transcription.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..providers.openai_realtime import DELTAS
from ..providers.openai_realtime import _key as openai_key
from .record import plural
from .sseview import MAX_EVENT_CHARS, Channel

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
    t = doc.get("type")
    if isinstance(t, str):  # OpenAI Realtime
        if t in DELTAS and isinstance(doc.get("delta"), str):
            key = openai_key(t, doc)
            label = "input transcription " + " ".join(map(str, key[1:])) if key[0] == "input" else (
                f"response {key[0]} item {key[1]} output {key[2]}"
                + (f" content {key[3]}" if key[3] is not None else "") + f" {key[4]}"
            )  # fmt: skip
            _chan(channels, label, "json" if key[-1] == "arguments" else "text").add(doc["delta"], n, "delta")
        return
    sc = doc.get("serverContent") or doc.get("server_content")  # Gemini Live
    if not isinstance(sc, dict):
        return
    turn = sc.get("modelTurn") or sc.get("model_turn")
    if isinstance(turn, dict):
        for j, p in enumerate(turn.get("parts") or ()):
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                kind = "thinking" if p.get("thought") is True else "text"
                where = f"serverContent.modelTurn.parts[{j}].text"
                _chan(channels, "model turn " + kind, kind).add(p["text"], n, where)
    for name, snake in (("outputTranscription", "output_transcription"), ("inputTranscription", "input_transcription")):
        tr = sc.get(name) or sc.get(snake)
        if isinstance(tr, dict) and isinstance(tr.get("text"), str):
            _chan(channels, name, "text").add(tr["text"], n, f"serverContent.{name}.text")


def _name(doc: object) -> str:
    if not isinstance(doc, dict):
        return "(not JSON)"
    t = doc.get("type")
    if isinstance(t, str):
        return t
    if len(doc) == 1:
        k = next(iter(doc))
        v = doc[k]
        if k in ("serverContent", "server_content") and isinstance(v, dict):
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
