"""Bedrock's streamed answers (sans I/O): AWS event-stream frames in, restored frames out.

Two streams, one framing (wire/eventstream.py):

- InvokeStream (InvokeModelWithResponseStream): every `chunk` event's payload is
  `{"bytes": "<base64 of one Anthropic stream event>", "p": "<padding>"}`. The decoded
  event goes through an AnthropicStream, the very class that restores the Messages API's
  SSE stream: one window per content block, tool input restored as JSON text, thinking
  and signatures untouched, held tails delivered before `content_block_stop`.
- ConverseStream: each frame's payload is the event itself (`contentBlockDelta` with
  `delta.text` or `delta.toolUse.input`, `contentBlockStart`, `contentBlockStop`,
  `messageStop`, `metadata`; `reasoningContent` passes byte-identical). One window per
  `contentBlockIndex`; a held tail goes out as a synthetic `contentBlockDelta` before
  its block's `contentBlockStop`, and every tail before `messageStop`.

A frame nobody changed goes out as the bytes that came; a changed one keeps its header
bytes and gets a new payload, lengths and checksums. A frame that fails its checksum, a
body cut inside a frame or before the last event (`message_stop`, `messageStop`), and
anything that cannot be read end the stream with an exception frame
(`:message-type exception`), which boto3 raises as an EventStreamError and the anthropic
SDK as an error: never a silent partial. An exception frame from upstream is passed on
(its message restored) after every held tail, and so is an error frame
(`:message-type error`, its `:error-code` and `:error-message` headers restored).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from abc import abstractmethod

from ...base.channels import channel_index, dumps_bytes
from ...base.fields import GENERIC
from ...base.holdback import Window, window_for
from ...base.restore import decode_field, reencode_field, restore_json
from ...base.stream import SSEStream, StreamState
from ...base.wirespec import EVENT_STREAM, JSON, Channel, ChunkModel, WireSpec
from ...errors import StreamError
from ...rules.rules import Restorer
from ...wire import eventstream, jsonspan
from ...wire.eventstream import Frame
from ...wire.jsonspan import PROSE, SKIP, VALUES, Obj, Rule
from ...wire.sse import Event, is_json_type, parse_event
from ..anthropic.messages import SPEC as ANTHROPIC
from ..anthropic.messages import AnthropicStream

_EVENT_HEADERS = [(":content-type", "application/json"), (":message-type", "event")]
# The exception both streams' unions declare (ResponseStream and ConverseStreamOutput
# in the bedrock-runtime service model), so every client decodes it as an error.
EXCEPTION_TYPE = "internalServerException"
# An exception message's text: its payload's `message`.
_EXCEPTION = Obj({"message": VALUES}, default=GENERIC)
# An error message (`:message-type error`, the framing's own unmodelled error, which
# botocore raises as EventStreamError) carries its text in these string headers.
ERROR_HEADERS = frozenset({":error-code", ":error-message"})


def exception_frame(message: str, kind: str = EXCEPTION_TYPE) -> bytes:
    """An exception message as AWS sends one mid-stream."""
    payload = json.dumps({"message": message}).encode()
    return eventstream.encode(
        [(":exception-type", kind), (":content-type", "application/json"), (":message-type", "exception")],
        payload,
    )


def event_frame(event_type: str, payload: bytes) -> bytes:
    return eventstream.encode([(":event-type", event_type), *_EVENT_HEADERS], payload)


def _json_payload(fr: Frame) -> tuple[str, object]:
    try:
        text = fr.payload.decode("utf-8")
        return text, jsonspan.loads(text)
    except ValueError:
        raise StreamError(f"event stream frame at byte {fr.offset}: payload is not JSON") from None


class FrameStream(SSEStream):
    """Frames in, frames out; the SSEStream interface (feed, flush, whole, fail,
    error_event) over event-stream framing. Subclasses implement on_frame and drain."""

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.frames = eventstream.Decoder()

    def feed(self, data: bytes) -> bytes:
        if self.finished or not data:
            return b""
        out: list[bytes] = []
        try:
            self._frames(data, out)
        except StreamError as e:
            out.append(self.fail(str(e)))
        return b"".join(out)

    def _frames(self, data: bytes, out: list[bytes]) -> None:
        for fr in self.frames.feed(data):
            self.events_in += 1
            out.extend(self.on_frame(fr))

    def flush(self) -> bytes:
        if self.finished:
            return b""
        out: list[bytes] = []
        try:
            self.frames.end()
        except StreamError as e:
            out.append(self.fail(str(e)))
            return b"".join(out)
        out.extend(self.drain())
        if self.terminated:
            self.to(StreamState.DONE)
        else:
            self.to(StreamState.FAILED)
            out.append(self.error_event(f"disguise: the stream ended before {self.TERMINAL}"))
        return b"".join(out)

    def on_event(self, ev: Event) -> list[bytes]:  # SSE events never reach a frame stream
        raise StreamError("an SSE event in an AWS event stream")

    @abstractmethod
    def on_frame(self, fr: Frame) -> list[bytes]:
        """One whole frame restored: the frames to send in its place."""

    def error_event(self, message: str) -> bytes:
        return exception_frame(message)

    def upstream_error(self, fr: Frame) -> list[bytes]:
        """An exception or error message from upstream ends the stream: every held tail
        first, then the message with its text restored (an error message's text is in
        its string headers, an exception's in its payload)."""
        self.to(StreamState.FINISHING)
        out = self.drain()
        out.append(self.restored(fr, _EXCEPTION, ERROR_HEADERS))
        return out

    def restored(self, fr: Frame, rule: Rule, headers: frozenset[str] = frozenset()) -> bytes:
        """fr with the strings rule selects in its JSON payload, and the string headers
        named in headers, restored; fr.raw if nothing changed."""
        block = fr.header_block
        if headers:
            block = eventstream.rewrite_strings(block, headers, self.restorer.value)
        payload = fr.payload
        if payload:
            text, _ = _json_payload(fr)
            new = restore_json(text, rule, self.restorer)
            if new is not None:
                payload = new.encode("utf-8")
        if block is fr.header_block and payload is fr.payload:
            return fr.raw
        self.events_changed += 1
        return eventstream.reframe(block, payload)


# -- a recorded stream, for those who read it (inspect/sseview.py: the views, the audit) ------

_ES_TYPE = "vnd.amazon.eventstream"


def view_events(body: bytes, content_type: str = "") -> list[tuple[str | None, str | None, bytes]] | None:
    """A recorded event-stream body as events (name, data, raw) for the readers, or None
    when it is not one (neither labelled so nor beginning with a valid frame prelude).

    Each frame is read by the one frame reader (wire/eventstream.Decoder), whole frames
    only. A `chunk` frame's data is its `bytes`, base64-decoded (InvokeModel's stream: one
    event of the model's own API, named by its JSON); any other frame's is its JSON payload
    as the member of its type, `{"<event or exception type>": payload}` (the services'
    stream unions, ConverseStreamOutput and ResponseStream, as botocore reads them; Nova's
    chunks have that shape too), named by its type. What is not a whole readable frame (a
    body cut or corrupt from there on) is one last event of raw text: read as text, it is
    searched all the same."""
    labelled = _ES_TYPE in content_type.lower()
    if not labelled and not (
        len(body) >= eventstream.PRELUDE and zlib.crc32(body[:8]) == int.from_bytes(body[8:12], "big")
    ):
        return None
    out: list[tuple[str | None, str | None, bytes]] = []
    d = eventstream.Decoder()
    pos = 0
    while len(body) - pos >= eventstream.PRELUDE:
        total = int.from_bytes(body[pos : pos + 4], "big")
        if total < eventstream.PRELUDE + 4 or len(body) - pos < total:
            break
        try:
            frames = d.feed(body[pos : pos + total])
        except StreamError:
            break
        if len(frames) != 1:
            break
        out.append(_view_event(frames[0]))
        pos += total
    if not out:
        return None
    if pos < len(body):
        rest = body[pos:]
        out.append((None, rest.decode("utf-8", "replace"), rest))
    return out


def _view_event(fr: Frame) -> tuple[str | None, str | None, bytes]:
    try:
        text = fr.payload.decode("utf-8")
    except UnicodeDecodeError:
        return None, fr.payload.decode("utf-8", "replace"), fr.raw
    if fr.message_type in ("exception", "error"):
        kind = str(fr.headers.get(":exception-type") or fr.headers.get(":error-code") or fr.message_type)
        if not text.strip():
            text = json.dumps({"message": str(fr.headers.get(":error-message", ""))})
        return kind, f"{{{json.dumps(kind)}:{text}}}", fr.raw
    if fr.event_type == "chunk":
        try:
            payload = json.loads(text)
            b64 = payload.get("bytes") if isinstance(payload, dict) else None
            if isinstance(b64, str):
                return None, base64.b64decode(b64, validate=True).decode("utf-8"), fr.raw
        except (ValueError, binascii.Error):
            pass
        return fr.event_type, text, fr.raw
    et = fr.event_type
    return et or None, (f"{{{json.dumps(et)}:{text}}}" if et and text.strip() else text), fr.raw


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one ConverseStream event as view_events gives it (the member of
    its type; a Nova InvokeModel chunk is one too): one channel per `contentBlockIndex`
    (text, tool input JSON, reasoning as thinking: signed, passed byte-identical)."""
    if len(doc) != 1:
        return False
    ((et, body),) = doc.items()
    if et not in CONVERSE_SPEC.events or not isinstance(body, dict):
        return False
    i = body.get("contentBlockIndex")
    if et == "contentBlockStart":
        start = body.get("start")
        tool = start.get("toolUse") if isinstance(start, dict) else None
        if isinstance(tool, dict):
            c = b.channel(f"block {i} json", "json")
            if isinstance(tool.get("name"), str):
                c.name = tool["name"]
            ev.note = f"toolUse {c.name}".rstrip()
    elif et == "contentBlockDelta":
        delta = body.get("delta")
        if not isinstance(delta, dict):
            return True
        tool = delta.get("toolUse")
        reasoning = delta.get("reasoningContent")
        if isinstance(delta.get("text"), str):
            b.add(ev, f"block {i} text", "text", delta["text"], "delta.text")
        elif isinstance(tool, dict) and isinstance(tool.get("input"), str):
            b.add(ev, f"block {i} json", "json", tool["input"], "delta.toolUse.input")
        elif isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
            b.add(ev, f"block {i} thinking", "thinking", reasoning["text"], "delta.reasoningContent.text")
    return True


# -- InvokeModelWithResponseStream --------------------------------------------------------------


# InvokeModelWithResponseStream's vocabulary (base/wirespec.py): each `chunk`
# frame carries one event of the model's own API, base64 (Claude: the Messages stream).
INVOKE_SPEC = WireSpec(
    "aws.bedrock.invoke",
    ("apis.bedrock.stream", "apis.bedrock.runtime"),
    (EVENT_STREAM,),
    terminal=ANTHROPIC.terminal,
    error_event=EXCEPTION_TYPE,
    inner=ANTHROPIC,
    frames=view_events,
)


class InvokeStream(FrameStream):
    TERMINAL = INVOKE_SPEC.ends

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.inner = AnthropicStream(restorer)
        self.windows = self.inner.windows

    def on_frame(self, fr: Frame) -> list[bytes]:
        mt = fr.message_type
        if mt in ("exception", "error"):
            return self.upstream_error(fr)
        if fr.event_type != "chunk":
            return [self.restored(fr, GENERIC)]
        _, payload = _json_payload(fr)
        b64 = payload.get("bytes") if isinstance(payload, dict) else None
        try:
            if not isinstance(b64, str):
                raise ValueError
            data = base64.b64decode(b64, validate=True).decode("utf-8")
        except (ValueError, binascii.Error):
            raise StreamError(f"event stream frame at byte {fr.offset}: a chunk without readable bytes") from None
        text = f"data: {data}\n\n"
        ev = Event(text.encode("utf-8"), data=data, text=text, span=(6, 6 + len(data)))
        outs = self.inner.on_event(ev)
        if self.inner.terminated:
            self.to(StreamState.FINISHING)
        res: list[bytes] = []
        for o in outs:
            if o is ev.raw:
                res.append(fr.raw)
                continue
            new = parse_event(o).data or ""
            if o.startswith(b"data: "):  # this event, changed: the frame's other keys kept
                assert isinstance(payload, dict)
                body = {**payload, "bytes": base64.b64encode(new.encode("utf-8")).decode("ascii")}
                res.append(eventstream.reframe(fr.header_block, _dumps(body)))
            else:  # a held tail the Anthropic stream synthesised
                res.append(self._chunk(new))
        if res != [fr.raw] and res:
            self.events_changed += 1
        self.events_held = self.inner.events_held
        return res

    @staticmethod
    def _chunk(data: str) -> bytes:
        body = {"bytes": base64.b64encode(data.encode("utf-8")).decode("ascii")}
        return event_frame("chunk", _dumps(body))

    def drain(self) -> list[bytes]:
        return [self._chunk(parse_event(o).data or "") for o in self.inner.drain()]


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


# -- ConverseStream -------------------------------------------------------------------------------

_DELTA_RULES = {
    "text": Obj({"contentBlockIndex": SKIP, "p": SKIP, "delta": Obj({"text": PROSE}, default=GENERIC)},
                default=GENERIC),
    "toolUse": Obj({"contentBlockIndex": SKIP, "p": SKIP,
                    "delta": Obj({"toolUse": Obj({"input": PROSE}, default=GENERIC)}, default=GENERIC)},
                   default=GENERIC),
}  # fmt: skip
_START = Obj(
    {"contentBlockIndex": SKIP, "p": SKIP,
     "start": Obj({"toolUse": Obj({"toolUseId": SKIP, "name": VALUES, "type": SKIP}, default=GENERIC)},
                  default=GENERIC)},
    default=GENERIC,
)  # fmt: skip
_OTHER_DELTA = Obj({"contentBlockIndex": SKIP, "p": SKIP}, default=GENERIC)
_STOP = Obj({"p": SKIP, "stopReason": SKIP, "additionalModelResponseFields": GENERIC}, default=GENERIC)
_METADATA = Obj({"p": SKIP, "usage": SKIP, "metrics": SKIP, "performanceConfig": SKIP, "serviceTier": SKIP},
                default=GENERIC)  # fmt: skip
_PASS = frozenset({"messageStart"})
# The exact shape Bedrock sends a text or tool-input delta in (see the recordings), so
# the hot path needs no JSON walk; anything else takes the slow path.
_STR = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_FAST_DELTA = re.compile(
    r'\{"contentBlockIndex":(\d+),"delta":\{(?:"text":' + _STR + r'|"toolUse":\{"input":' + _STR + r"\})\}"
    r'(?:,"p":"[A-Za-z0-9]*")?\}\Z'
)


# ConverseStream's vocabulary (base/wirespec.py): a frame's `:event-type` names
# its event, its payload is the event.
CONVERSE_SPEC = WireSpec(
    "aws.bedrock.converse",
    ("apis.bedrock.stream", "apis.bedrock.runtime"),
    (EVENT_STREAM,),
    events=frozenset({"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop",
                      "metadata"}),
    terminal=frozenset({"messageStop"}),
    error_event=EXCEPTION_TYPE,
    type_member=None,
    stop_members=("stopReason",),
    view=view,
    frames=view_events,
)  # fmt: skip


# Amazon Nova's InvokeModelWithResponseStream chunks (the messages-v1 schema) are
# ConverseStream's events, each one the member of its type: `{"contentBlockDelta":
# {"delta": {"text": ...}, "contentBlockIndex": 0}}` (bedrock_models.NOVA,
# bedrock_chunks.ChunkStream).
NOVA_CHUNKS = ChunkModel(
    (Channel(("contentBlockDelta", "delta", "text")),
     Channel(("contentBlockDelta", "delta", "toolUse", "input"), JSON)),
    (("messageStop",),),
    ("contentBlockIndex",),
    "contentBlockStop",
)  # fmt: skip


class ConverseStream(FrameStream):
    TERMINAL = CONVERSE_SPEC.ends

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.windows: dict[int, Window] = {}
        # the blocks whose window reads toolUse input: a held tail drains as toolUse input, any
        # other block's as text (a JSON answer's text window reads JSON text all the same)
        self._tools: set[int] = set()

    def on_frame(self, fr: Frame) -> list[bytes]:
        mt = fr.message_type
        if mt in ("exception", "error"):
            return self.upstream_error(fr)
        et = fr.event_type
        if et in _PASS:
            return [fr.raw]
        if et == "contentBlockDelta":
            return self._delta(fr)
        if et == "contentBlockStart":
            return self._start(fr)
        if et == "contentBlockStop":
            _, obj = _json_payload(fr)
            idx = obj.get("contentBlockIndex") if isinstance(obj, dict) else None
            out = self._drain_one(channel_index(idx, "contentBlockIndex"))
            out.append(fr.raw)
            return out
        if et in CONVERSE_SPEC.terminal:
            self.to(StreamState.FINISHING)
            out = self.drain()
            out.append(self.restored(fr, _STOP))
            return out
        if et == "metadata":
            return [self.restored(fr, _METADATA)]
        return [self.restored(fr, GENERIC)]

    def _window(self, idx: int, mode: int) -> Window:
        """The block's window: toolUse input JSON text, text the model's answer (Window.OUTPUT)."""
        if idx not in self.windows:
            (self._tools.add if mode == Window.JSON else self._tools.discard)(idx)
        return window_for(self.windows, idx, self.restorer, mode, "content blocks")

    def _start(self, fr: Frame) -> list[bytes]:
        _, obj = _json_payload(fr)
        if isinstance(obj, dict):
            idx, start = obj.get("contentBlockIndex"), obj.get("start")
            if isinstance(start, dict) and "toolUse" in start:
                self._window(channel_index(idx, "contentBlockIndex"), Window.JSON)
        return [self.restored(fr, _START)]

    def _delta(self, fr: Frame) -> list[bytes]:
        try:
            data = fr.payload.decode("utf-8")
        except UnicodeDecodeError:
            raise StreamError(f"event stream frame at byte {fr.offset}: payload is not JSON") from None
        m = _FAST_DELTA.match(data)
        if m is not None:
            text_field = m.start(2) >= 0
            g = 2 if text_field else 3
            w = self._window(int(m.group(1)), Window.OUTPUT if text_field else Window.JSON)
            return self._window_field(fr, data, w, m.start(g), m.end(g))
        return self._slow_delta(fr, data)

    def _window_field(self, fr: Frame, data: str, w: Window, start: int, end: int) -> list[bytes]:
        """The string data[start:end] through window w: the frame as it came when nothing
        changed, nothing when everything is held, else the frame with the released text."""
        text = decode_field(data, start, end)
        held_before = w.held
        out = w.feed(text)
        if out == text and not held_before:
            return [fr.raw]
        if w.held:
            self.events_held += 1
        if not out:
            return []
        self.events_changed += 1
        new = reencode_field(data, start, end, data[start:end], out)
        return [eventstream.reframe(fr.header_block, new.encode("utf-8"))]

    def _slow_delta(self, fr: Frame, data: str) -> list[bytes]:
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            raise StreamError(f"event stream frame at byte {fr.offset}: payload is not JSON") from None
        delta = obj.get("delta") if isinstance(obj, dict) else None
        if not isinstance(obj, dict) or not isinstance(delta, dict):
            return [self.restored(fr, GENERIC)]
        if "reasoningContent" in delta:
            return [fr.raw]  # signed or redacted: byte-identical
        if isinstance(delta.get("text"), str):
            kind, mode = "text", Window.OUTPUT
        elif isinstance(delta.get("toolUse"), dict) and isinstance(delta["toolUse"].get("input"), str):
            kind, mode = "toolUse", Window.JSON
        else:
            return [self.restored(fr, _OTHER_DELTA)]  # citations, tool results, images
        w = self._window(channel_index(obj.get("contentBlockIndex"), "contentBlockIndex"), mode)
        r = self.restorer
        released: list[str] = []

        def fn(v: str, rule: Rule) -> str:
            if not rule.prose:
                return r.value(v)
            out = w.feed(v)
            released.append(out)
            return out

        new, changed = jsonspan.transform(data, obj, _DELTA_RULES[kind], fn)
        if w.held:
            self.events_held += 1
        if not changed:
            return [fr.raw]
        if released and not released[0]:
            return []  # everything held: it goes out with a later frame
        self.events_changed += 1
        return [eventstream.reframe(fr.header_block, new.encode("utf-8"))]

    def _drain_one(self, idx: int) -> list[bytes]:
        w = self.windows.pop(idx, None)
        if w is None or not w.held:
            return []
        tail = w.flush()
        if not tail:
            return []
        delta = {"toolUse": {"input": tail}} if idx in self._tools else {"text": tail}
        return [event_frame("contentBlockDelta", dumps_bytes({"contentBlockIndex": idx, "delta": delta}))]

    def drain(self) -> list[bytes]:
        out: list[bytes] = []
        for idx in sorted(self.windows):
            out.extend(self._drain_one(idx))
        return out


def stream_for(path: str, content_type: str) -> type[FrameStream] | None:
    """The frame stream for a Bedrock answer: by its content type, and on the two
    streaming paths for any body not labelled JSON (a JSON error is restored whole)."""
    p = path.split("?", 1)[0].rstrip("/")
    labelled = "vnd.amazon.eventstream" in content_type.lower()
    streaming = p.endswith(("/invoke-with-response-stream", "/converse-stream"))
    if labelled or (streaming and not is_json_type(content_type)):
        return ConverseStream if p.endswith(("/converse", "/converse-stream")) else InvokeStream
    return None
