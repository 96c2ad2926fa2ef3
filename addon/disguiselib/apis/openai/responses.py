"""OpenAI Responses: what to mask, how to reverse (sans I/O).

https://platform.openai.com/docs/api-reference/responses-streaming (typed events with a
`sequence_number`). Reasoning items and `encrypted_content` pass untouched, like thinking.
"""

from __future__ import annotations

import json
import re

from ...base import readpass
from ...base.channels import Chan, ChannelStream, channel_index
from ...base.channels import dumps_bytes as _dumps
from ...base.exempt import SIGNED
from ...base.fields import GENERIC
from ...base.jsonanswer import answers_json
from ...base.logprobs import clean_alternatives
from ...base.restore import decode_field, reencode_field, restore_doc
from ...base.stream import StreamState
from ...base.wirespec import SSE, WireSpec
from ...errors import StreamError
from ...rules.restorer import EITHER, JSON, TEXT
from ...rules.rules import Restorer
from ...wire import jsonspan
from ...wire.jsonspan import Obj, escaped_name
from ...wire.sse import Event, parse_event, split
from ...wire.text import is_utf8
from .chat import _STR
from .responses_fields import (
    _CHANNEL_FIELDS,
    _DELTAS,
    _DONES,
    _ENDS,
    _ENVELOPE_FIELDS,
    _OPAQUE,
    _RESPONSE_EVENT,
    _SNAPSHOT,
    INPUT_ITEMS_LIST,
    RESPONSE_OBJECT,
    RESPONSES_REQUEST,
    STREAM_EVENT,
    event_rule,
)

__all__ = [
    "INPUT_ITEMS_LIST", "RESPONSE_OBJECT", "RESPONSES_REQUEST", "STREAM_EVENT", "ResponsesStream",
    "StoredResponsesStream", "event_rule",
]  # fmt: skip

# -- Responses streams -----------------------------------------------------------------

_SEQ = re.compile(r'(?<!\\)"sequence_number"\s*:\s*(\d+)')
_SEQ_BYTES = re.compile(rb'"sequence_number"\s*:\s*(\d+)')  # a literal first: a fast search


def _seq_span(data: str) -> tuple[int, int] | None:
    """Where the event's own sequence number (its top-level `sequence_number`, an
    integer) is in data, the key read as JSON reads it. The regex finds the plain
    spelling; a spelling with escapes (`"sequence_n\\u0075mber"`), or a second such key
    (nested, or repeated), is found by walking the top level of the event instead."""
    if not escaped_name(data):
        m = _SEQ.search(data)
        if m is None:
            return None
        if data.find('"sequence_number"', m.end()) < 0:
            return m.span(1)
    span = jsonspan.member_span(data, "sequence_number")
    if span is None or not data[span[0] : span[1]].isdigit():
        return None
    return span


_FAST_TYPE = re.compile(
    r'\{"type":"(response\.(?:output_text|refusal|function_call_arguments)\.delta)"'
)
_FAST_FIELDS = {
    "delta": re.compile(r'"delta":' + _STR),
    "item_id": re.compile(r'"item_id":"([^"\\]*)"'),
    "output_index": re.compile(r'"output_index":(\d+)'),
    "content_index": re.compile(r'"content_index":(\d+)'),
}
# Every member a fast delta may have (an escaped name is never read fast); `"name":` is a
# key wherever it shows (inside a string its quotes are escaped).
_FAST_KNOWN = frozenset(("type", "sequence_number", "item_id", "output_index", "content_index", "delta", "logprobs",
                         "obfuscation"))  # fmt: skip
_KEY = re.compile(r'"([^"\\]*)"\s*:')
# The same deltas as a whole event's bytes, for on_raw: parse_event's one-data-line shape
# (no CR, no line break in the data), with exactly the members the API sends in one of
# its two orders (the documented one, and the alphabetical one of later recordings).
# Each key is there once, so _fast_delta's searches find these groups; ids are narrowed
# to ASCII names, digits to ASCII, the delta's body to what cannot be a line break.
_RAW_TYPE = rb'data: \{"type":"(?P<t>response\.(?:output_text|refusal|function_call_arguments)\.delta)"'
_RAW_D = rb'"delta":"(?P<d>[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*)"'
_RAW_ITEM = rb'"item_id":"(?P<item>[A-Za-z0-9_-]+)"'
_RAW_TAIL = rb'(?:,"logprobs":\[\])?(?:,"obfuscation":"[^"\\\r\n]*")?'
_RAW_DELTAS = tuple(
    re.compile(rb"(?:event: [^\r\n]*\n)?" + _RAW_TYPE + shape + rb"\}\n\n\Z")
    for shape in (
        rb',"sequence_number":(?P<seq>[0-9]+),' + _RAW_ITEM + rb',"output_index":(?P<oi>[0-9]+)'
        rb'(?:,"content_index":(?P<ci>[0-9]+))?,' + _RAW_D + _RAW_TAIL,
        rb'(?:,"content_index":(?P<ci>[0-9]+))?,' + _RAW_D + b"," + _RAW_ITEM + _RAW_TAIL
        + rb',"output_index":(?P<oi>[0-9]+),"sequence_number":(?P<seq>[0-9]+)',
    )
)


def _channel(t: str, obj: dict) -> tuple:
    field = _DELTAS[t][0]
    ident = obj.get("item_id")
    if ident is None:  # events that name their item by position only (shell commands, audio)
        ident = ("out", channel_index(obj.get("output_index"), "output_index"))
    if field in ("text", "refusal"):
        return (ident, channel_index(obj.get("content_index", 0), "content_index"), field)
    if field == "command":
        return (ident, channel_index(obj.get("command_index", 0), "command_index"), field)
    return (ident, field)


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one event (inspect/sseview.Builder): every `*.delta` event
    with a string `delta`, per (kind, output_index, content_index or summary_index)."""
    t = doc.get("type")
    if not isinstance(t, str) or not t.startswith(_PREFIX):
        return False
    if t == "response.output_item.added":
        item = doc.get("item") or {}
        if isinstance(item.get("name"), str):
            b.names[("r", doc.get("output_index"))] = item["name"]
        ev.note = " ".join(str(x) for x in (item.get("type"), item.get("name")) if isinstance(x, str))
        return True
    if t.endswith(".delta") and isinstance(doc.get("delta"), str):
        kind_name = t[len(_PREFIX) : -len(".delta")]
        oi = doc.get("output_index")
        sub = doc.get("content_index", doc.get("summary_index"))
        key = f"output {oi} {kind_name}" + (f" [{sub}]" if sub is not None else "")
        kind = "thinking" if event_rule(t, doc).kind == "opaque" else (
            "json" if "arguments" in kind_name or kind_name.endswith("input") else "text"
        )  # fmt: skip
        c = b.add(ev, key, kind, doc["delta"], "delta")
        name = b.names.get(("r", oi))
        if name:
            c.name = name
    return True


_PREFIX = "response."
# The Responses stream's wire vocabulary, for every reader (base/wirespec.py).
SPEC = WireSpec(
    "openai.responses",
    ("apis.openai.responses", "apis.openai.responses_fields"),
    (SSE,),
    events=frozenset({*_DELTAS, *_DONES, *_SNAPSHOT, *_ENDS, *_OPAQUE, "response.created", "response.in_progress",
                      "response.queued", "error"}),
    terminal=_ENDS,
    error_event="error",
    view=view,
)  # fmt: skip


class ResponsesStream(ChannelStream):
    """One Responses stream: a window per (item, content index, field), every event
    numbered as the provider numbered it. A client resuming a background response
    (`GET /v1/responses/{id}?stream=true&starting_after=N`) names the last event it read
    by that number, and the provider replays from its own numbering: an event the addon
    inserted would shift every later number and lose the client text. So a delta after
    which its channel's window holds a tail waits itself (`held_event`: its bytes as they
    would go out) until the next event says where the tail goes: before another delta
    of its channel, as it is (the window puts the tail before that delta's text); before
    the event that ends its channel (`*.done`, `output_item.done`, a terminal event, the
    stream's end), with the tail appended to its `delta`; before any other event, as it
    is. Only a tail whose channel ends with no waiting delta to carry it (another event
    came between: an annotation, interleaved channels) goes as a synthetic delta, and
    every later event is renumbered (`offset`): strictly increasing and gapless still."""

    TERMINAL = SPEC.ends
    MARKERS = (*SPEC.markers, b'"error"')
    # No window reads these (a delta's window reads its `delta` alone): the envelope the
    # table exempts, the event's type, and the padding the delta tables exempt (SKIP).
    OPAQUE = frozenset(k.encode() for k, rule in _ENVELOPE_FIELDS.items() if rule.skip) | {b"type", b"obfuscation"}

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        restorer.remember()  # the done events and the final response say each text again
        if readpass.make_pass is not None and type(self) is ResponsesStream:  # (a subclass: its own on_raw)
            self._pass = readpass.make_pass(self, readpass.RESPONSES, _DELTAS)
        self.offset = 0  # synthetic events inserted so far
        self.held_event: tuple[tuple, bytes] | None = None  # (channel, bytes): see the class
        self.last_seq = -1  # the highest upstream sequence number seen
        self.where: dict[tuple, dict] = {}  # channel -> fields for its synthetic deltas
        self.seen_response = False  # a response object went out (response.created)
        self._shapes = _RAW_DELTAS  # on_raw's two member orders, the one last seen first
        self._ident: tuple = ()  # on_raw: the type, item and indexes of the delta before,
        self._chan: tuple = ()  # and its channel key, fields for where[key], window mode

    def responded(self, response: object) -> None:
        """An event carrying the response object (response.created, ..., the last one), before
        it is restored: a stored stream reads its answer's format there (StoredResponsesStream)."""

    def quiet(self) -> bool:
        # events pass unparsed only while nothing needs renumbering and no delta waits
        return self.offset == 0 and self.held_event is None and super().quiet()

    def passed(self, block: bytes, start: int, end: int) -> None:
        # Events the client saw unparsed still count: a synthetic or error event at the
        # end must continue their numbering. A key spelled with escapes cannot be here
        # (`\u` and `\/` are triggers: such events are parsed); where the plain key
        # shows up more often than there are events (a nested or repeated one), each
        # event is read as a parsed one would be (_seq_span).
        found = [m for m in _SEQ_BYTES.finditer(block, start, end) if not m.start() or block[m.start() - 1] != 0x5C]
        if len(found) > (block.count(b"\n\n", start, end) or block.count(b"\n\r\n", start, end)):
            for raw in split(block[start:end]):
                data = parse_event(raw).data
                span = _seq_span(data) if data is not None else None
                if span is not None:
                    self.last_seq = max(self.last_seq, int(data[span[0] : span[1]]))  # type: ignore[index]
            return
        for m in found:
            self.last_seq = max(self.last_seq, int(m.group(1)))

    def on_event(self, ev: Event) -> list[bytes]:
        prev, held = self.last_seq, self.held_event
        try:
            return self._on_event(ev)
        except StreamError:
            self.last_seq = prev  # the event never went out: the error event takes its number
            self.held_event = held  # still to go, before the error (fail)
            raise

    def _on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [*self._let_go(()), ev.raw]
        fast = self._fast_delta(ev, data)
        if fast is not None:
            return fast
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            return [*self._let_go(()), *self.not_object(ev)]
        seq = obj.get("sequence_number")
        if isinstance(seq, int):
            self.last_seq = max(self.last_seq, seq)
        t = obj.get("type")
        if t in _ENDS or t == SPEC.error_event:
            self.to(StreamState.FINISHING)
        if t in _RESPONDED:
            self.responded(obj.get("response"))
        out: list[bytes] = []
        if t in _DELTAS:
            key = _channel(t, obj)
            self.where[key] = {
                k: obj[k] for k in ("item_id", "output_index", "content_index", "command_index") if k in obj
            }
            self.where[key]["type"] = t
            w = self.window(key, _DELTAS[t][1])
            rule = Obj({**_CHANNEL_FIELDS, "delta": Chan(key, w.mode)}, default=GENERIC)
            new, changed = jsonspan.transform(data, obj, rule, self.channel_fn())
            lp = obj.get("logprobs")
            if isinstance(lp, list) and lp:
                # logprobs of text the window changed or held go (common.py, logprobs)
                cleaned = [] if key in self.touched else clean_alternatives(lp, self.restorer)
                if cleaned is not None:
                    doc = json.loads(new)
                    doc["logprobs"] = cleaned
                    new, changed = _dumps(doc).decode("utf-8"), changed + 1
            if w.held:
                self.events_held += 1
        else:
            ends: list[tuple] = []  # the channels this event ends
            if t in _DONES:
                ends.append(_channel(_DONES[t][0], obj))
            elif t == "response.output_item.done":
                item = obj.get("item")
                item_id = item.get("id") if isinstance(item, dict) else None
                by_pos = ("out", obj.get("output_index"))
                ends = [k for k in self.windows if k[0] == item_id or k[0] == by_pos]
            elif t in _ENDS or t == SPEC.error_event:  # (the provider's error: its held text first)
                ends = list(self.windows)
            out.extend(self._let_go(ends))
            for key in ends:
                out.extend(self._flush(key, seq))
            erule = event_rule(t, obj)
            if erule is SIGNED:
                new, changed = data, 0
            else:
                before = self._counts()
                new = restore_doc(data, obj, erule, self.restorer)
                changed = new is not data
                # what the stream restores again in whole-text events is counted once
                if t in _DONES:
                    self._recount(before, restated=True)
                elif t in _SNAPSHOT:
                    self._recount(before, restated=t.endswith(".done"))
                elif erule is _RESPONSE_EVENT:
                    self._recount(before, restated=self.seen_response, final=t in _ENDS)
                    self.seen_response = True
        if changed:
            self.events_changed += 1
        raw = ev.raw if not changed and not self.offset else self._renumbered(ev, new)
        if t in _DELTAS:
            return self._keep(key, raw)
        out.append(raw)
        return out

    # -- counting: each original the client reads, once ----------------------------------
    # A Responses stream says every text several times: in its deltas, then whole in
    # `*.done`, `content_part.done`, `output_item.done` and the final response object
    # (and response.in_progress repeats response.created). Restoring each is needed;
    # counting each made five masked originals read "restored 25". So an original is
    # counted where it first reaches the client — a delta, an `.added` snapshot, the
    # first response object — and the events that restate text are not counted, except
    # that the final response object (which holds every text once) counts when it holds
    # more than the stream counted (text that only a snapshot carried).

    def _counts(self) -> tuple[int, int]:
        return self.restorer.restored, self.restorer.stripped

    def _recount(self, before: tuple[int, int], restated: bool, final: bool = False) -> None:
        r = self.restorer
        if final:
            r.restored = max(before[0], r.restored - before[0])
            r.stripped = max(before[1], r.stripped - before[1])
        elif restated:
            r.restored, r.stripped = before

    def _fast_delta(self, ev: Event, data: str) -> list[bytes] | None:
        """A delta event without json.loads: its fields found by regex (a `"key":` can
        only be a real key), its text through its window; None for anything unusual."""
        m = _FAST_TYPE.match(data)
        if m is None or ('"logprobs":[' in data and '"logprobs":[]' not in data) or escaped_name(data):
            return None
        t = m.group(1)
        d = _FAST_FIELDS["delta"].search(data)
        item = _FAST_FIELDS["item_id"].search(data)
        oi = _FAST_FIELDS["output_index"].search(data)
        ci = _FAST_FIELDS["content_index"].search(data)
        if d is None or item is None or oi is None or data.count('"delta":') != 1:
            return None
        if not _FAST_KNOWN.issuperset(_KEY.findall(data)):
            return None  # a member the table does not name: restored (on_event)
        fields = {"item_id": item.group(1), "output_index": int(oi.group(1))}
        if t == "response.function_call_arguments.delta":
            key: tuple = (fields["item_id"], "args")
        elif ci is None:
            return None
        else:
            fields["content_index"] = int(ci.group(1))
            key = (fields["item_id"], fields["content_index"], _DELTAS[t][0])
        fields["type"] = t
        self.where[key] = fields
        span = _seq_span(data)
        if span is not None:  # noted before anything goes out: a drained tail numbers after it
            self.last_seq = max(self.last_seq, int(data[span[0] : span[1]]))
        w = self.window(key, _DELTAS[t][1])
        out = self.window_field(ev, w, d.start(1), d.end(1))
        if self.offset and out:
            ev2 = out[0]
            text = ev2.decode("utf-8") if ev2 is not ev.raw else ev.text
            span = _seq_span(text)
            if span is not None:
                n = int(text[span[0] : span[1]])
                out = [(text[: span[0]] + str(n + self.offset) + text[span[1] :]).encode("utf-8")]
        return self._keep(key, out[0] if out else self._empty_delta(ev, d))

    def on_raw(self, raw: bytes) -> list[bytes] | None:
        """A text, refusal or arguments delta in the API's own shape, from its bytes
        (SSEStream.on_raw): _fast_delta's bytes and state, renumbering included."""
        shapes = self._shapes
        m = shapes[0].match(raw)
        if m is None:
            m = shapes[1].match(raw)
            if m is None:
                return None
            self._shapes = shapes[::-1]  # a stream keeps to one order: its own first
        if b"\\u" in raw and escaped_name(raw):
            return None
        if not is_utf8(raw):
            return None  # parsed: it ends the stream
        ident = m.group("t", "item", "oi", "ci")
        if ident == self._ident:  # the channel of the delta before: nearly always
            key, fields, mode = self._chan
        else:
            t = ident[0].decode()
            item = ident[1].decode()
            fields = {"item_id": item, "output_index": int(ident[2])}
            if t == "response.function_call_arguments.delta":
                key = (item, "args")
            elif ident[3] is None:
                return None
            else:
                fields["content_index"] = int(ident[3])
                key = (item, fields["content_index"], _DELTAS[t][0])
            fields["type"] = t
            mode = _DELTAS[t][1]
            self._ident, self._chan = ident, (key, fields, mode)  # fields: never changed in where
        start, end = m.span("d")
        got = self.window_raw_for(key, mode, raw, start, end)
        if got is None:
            return None
        self.where[key] = fields
        seq = int(m.group("seq"))
        self.last_seq = max(self.last_seq, seq)
        out = got[0] if got else raw[:start] + raw[end:]  # all held: an empty delta, no gap
        if self.offset:
            a, b = m.span("seq")
            if a > end:  # past the delta, whose length changed
                a, b = a + len(out) - len(raw), b + len(out) - len(raw)
            out = out[:a] + str(seq + self.offset).encode() + out[b:]
        return self._keep(key, out)

    def _empty_delta(self, ev: Event, d: re.Match) -> bytes:
        """A delta whose text is all held still goes out (with "") so that the numbering
        needs no gap."""
        data = ev.data
        assert data is not None
        return self._renumbered(ev, data[: d.start(1)] + data[d.end(1) :])

    def _renumbered(self, ev: Event, data: str) -> bytes:
        if not self.offset:
            return ev.raw if data is ev.data else ev.with_data(data)
        span = _seq_span(data)
        if span is None:
            return ev.with_data(data)
        n = int(data[span[0] : span[1]])
        self.last_seq = max(self.last_seq, n)
        return ev.with_data(data[: span[0]] + str(n + self.offset) + data[span[1] :])

    def _flush(self, key: tuple, seq: object) -> list[bytes]:
        w = self.windows.pop(key, None)
        if w is None:
            return []
        tail = w.flush()
        if not tail:
            return []
        fields = dict(self.where.get(key, {}))
        t = fields.pop("type", "response.output_text.delta")
        base = seq if isinstance(seq, int) else self.last_seq + 1
        body = {"type": t, "sequence_number": base + self.offset, **fields, "delta": tail}
        if t == "response.output_text.delta":
            body["logprobs"] = []
        self.offset += 1
        self.events_changed += 1
        return [b"event: " + t.encode() + b"\ndata: " + _dumps(body) + b"\n\n"]

    # -- the delta that waits (see the class) ---------------------------------------------

    def _keep(self, key: tuple, raw: bytes) -> list[bytes]:
        """What a delta of channel key gives, its text through the window (raw: its bytes
        as they would go out): the delta that waited, if any, then this one, which waits
        in its turn where its window now holds a tail."""
        prior = self.held_event
        w = self.windows.get(key)
        if w is not None and w.held:
            self.held_event = (key, raw)
            return [] if prior is None else [prior[1]]
        if prior is None:
            return [raw]
        self.held_event = None
        return [prior[1], raw]

    def _let_go(self, ends) -> list[bytes]:
        """The delta that waits, before an event that is no delta: where that event
        ends its channel (ends: the channels it ends), with the channel's tail appended
        to its `delta` (re-encoded as window_field re-encodes one), the window gone."""
        held = self.held_event
        if held is None:
            return []
        self.held_event = None
        key, raw = held
        if key not in ends:
            return [raw]
        w = self.windows.pop(key, None)
        tail = w.flush() if w is not None else ""
        if not tail:
            return [raw]
        ev = parse_event(raw)
        data = ev.data
        span = jsonspan.member_span(data, "delta") if data is not None else None
        assert data is not None and span is not None  # (this stream's delta readers made raw)
        a, b = span[0] + 1, span[1] - 1
        self.events_changed += 1
        return [ev.with_data(reencode_field(data, a, b, data[a:b], decode_field(data, a, b) + tail))]

    def drain(self) -> list[bytes]:
        out = self._let_go(self.windows)  # every channel ends
        for key in list(self.windows):
            out.extend(self._flush(key, None))
        return out

    def error_event(self, message: str) -> bytes:
        # A delta that waits goes before the error, whoever ends the stream (fail, or the
        # adapter on an internal error): its text is restored and holds no part of a
        # disguise (that is its window's tail, which SSEStream.fail drops).
        held, self.held_event = self.held_event, None
        body = {"type": "error", "sequence_number": self.last_seq + self.offset + 1,
                "code": "disguise_error", "message": message, "param": None}  # fmt: skip
        err = f"event: error\ndata: {json.dumps(body)}\n\n".encode()
        return err if held is None else held[1] + err



# The events that carry the response object (its `text.format` says what its answer is)
_RESPONDED = frozenset({"response.created", "response.in_progress", "response.queued", *_ENDS})


class StoredResponsesStream(ResponsesStream):
    """A stored response streamed again (`GET /v1/responses/{id}?stream=true`, a background
    response followed, resumed with `starting_after=N`): the request that asked for a JSON
    answer is gone, the response says it itself, in the `text.format` of the response
    object its stream carries (response.created, .in_progress, .queued, the last event),
    read as the request's is (base/jsonanswer.py). Its answer text is then restored as
    that format says. Text before any such object (a stream resumed past them, mid-text:
    nobody said) goes through both readings, text and JSON text (holdback.Window.EITHER):
    what both give goes out, where they differ the stream ends with an error."""

    MARKERS = (*ResponsesStream.MARKERS, *(f'"{t}"'.encode() for t in sorted(_RESPONDED - _ENDS)))

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        restorer.output = EITHER  # until the response says

    def responded(self, response: object) -> None:
        self.restorer.output = JSON if answers_json(response, RESPONSES_REQUEST) else TEXT
