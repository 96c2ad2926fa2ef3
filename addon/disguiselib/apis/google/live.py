"""Gemini Live over WebSocket: what to mask in client messages, how to restore server
messages (sans I/O). The connection machinery is realtime.py's; the Content, Tool and
GenerationConfig tables are google.py's.

Paths: `/ws/google.ai.generativelanguage.{v1beta,v1alpha}.GenerativeService.BidiGenerateContent`
(also `...BidiGenerateContentConstrained`, ephemeral tokens) on the Gemini API, and
`/ws/google.cloud.aiplatform.{v1,v1beta1}.LlmBidiService/BidiGenerateContent` on Vertex
AI. Messages are proto3 JSON (https://ai.google.dev/api/live): the client's as text
frames, the server's as binary frames holding JSON text (both are read either way, and
every frame keeps its type). Field names are known in both spellings, like google.py's
(the google-genai SDK sends `{"client_content": {"turns": ...}}`).

Client messages (one of): `setup` (systemInstruction, tools, generationConfig),
`clientContent` (turns of Content), `realtimeInput` (`text`; audio, video and media
chunks are base64 blobs: binary ones untouched, text ones read decoded), `toolResponse`
(functionResponses), `contextUpdate` (systemInstruction, tools). A message with any
other top-level field is unknown: it is scanned (realtime.Connection).

Server messages (one of): `serverContent`, `toolCall` (functionCalls with their `args`:
keys and values restored), `toolCallCancellation`, `setupComplete`, `goAway`,
`sessionResumptionUpdate`, `usageMetadata`, ...; anything else has its strings
restored whole. A call whose arguments stream (`partialArgs` pieces, `willContinue`:
Vertex's streamed function-call arguments, calls.py) has a window per (call, jsonPath),
as in a Gemini stream; a path's held tail goes out in its last piece, spliced into the
call that ends it, or in a `toolCall` message of its own before the message that ends
the turn (`turnComplete`, `interrupted`) or when the connection ends. In
`serverContent`, three channels have a hold-back window each: the
model turn's text parts (thought parts pass byte-identical), `outputTranscription.text`
and `inputTranscription.text`. A channel's held tail goes out inside the message that
ends it, so no message is added: the model turn's text at `generationComplete`,
`turnComplete` or `interrupted` (in that message's last text part, or a text part put
first into its model turn, or a model turn put into it), the output transcription at
`turnComplete` or `interrupted`, the input transcription at `finished`, `turnComplete`
or `interrupted`. `serverContent` is one branch of the message's oneof, so a tail
never rides in a `toolCall` message: it waits for the next text or the turn's end.
"""

from __future__ import annotations

from ...base.channels import Chan
from ...base.fields import GENERIC
from ...base.realtime import Protocol
from ...base.restore import dumps, restore_doc, restore_fn
from ...base.wirespec import WEBSOCKET, WireSpec
from ...errors import StreamError
from ...rules.rules import Restorer, json_escape
from ...wire import jsonspan
from ...wire.jsonspan import SKIP, VALUES, Arr, Either, Obj, Rule
from .calls import Calls, StreamCall
from .gemini import (
    _FUNCTION_CALL,
    _FUNCTION_RESPONSE,
    _GENERATION_CONFIG,
    _INLINE_DATA,
    _RESP_PART,
    _TOOL,
    _TOOL_CONFIG,
    CONTENT,
    USER_CONTENT,
    _both,
    _Part,
    obj,
)

# -- client messages -------------------------------------------------------------------------

# A Blob, as in generateContent: base64 data untouched when its MIME type is binary,
# decoded, masked and encoded again when it is text.
_BLOB = _INLINE_DATA
_SYSTEM = Either(VALUES, USER_CONTENT)
SETUP = obj(
    {
        "model": SKIP,
        "generationConfig": _GENERATION_CONFIG,
        "systemInstruction": _SYSTEM,
        "tools": Arr(_TOOL),
        "toolConfig": _TOOL_CONFIG,
        "sessionResumption": obj({"handle": SKIP, "transparent": SKIP}),  # a handle the server issued
        "safetySettings": SKIP,
        "realtimeInputConfig": SKIP,  # activity detection: enums and numbers
        "contextWindowCompression": SKIP,
        "inputAudioTranscription": GENERIC,
        "outputAudioTranscription": GENERIC,
        "proactivity": SKIP,
        "explicitVadSignal": SKIP,
    },
    # a session resumed: the server holds what the connections before numbered from 1
    # (base/prompt.numbers_key, base/realtime.py)
    state=("sessionResumption",),
)
CLIENT_MESSAGES: dict[str, Rule] = _both(
    {
        "setup": SETUP,
        "clientContent": obj({"turns": Arr(CONTENT), "turnComplete": SKIP}),
        "realtimeInput": obj(
            {
                "mediaChunks": Arr(_BLOB), "audio": _BLOB, "video": _BLOB, "text": VALUES,
                "activityStart": SKIP, "activityEnd": SKIP, "audioStreamEnd": SKIP,
            }
        ),  # fmt: skip
        "toolResponse": obj({"functionResponses": Arr(_FUNCTION_RESPONSE)}),
        "contextUpdate": obj({"systemInstruction": _SYSTEM, "tools": obj({"tools": Arr(_TOOL)})}),
    }
)

# -- server messages -------------------------------------------------------------------------

SERVER_MESSAGE = obj(
    {
        "toolCall": obj({"functionCalls": Arr(_FUNCTION_CALL)}),
        "toolCallCancellation": SKIP,  # ids
        "setupComplete": SKIP,
        "usageMetadata": SKIP,
        "goAway": SKIP,
        "sessionResumptionUpdate": SKIP,  # a handle and indices
        "voiceActivityDetectionSignal": SKIP,
        "voiceActivity": SKIP,
    }
)
_FLAGS = ("turnComplete", "generationComplete", "interrupted", "turnCompleteReason", "waitingForInput",
          "interactionStatus")  # fmt: skip
_CONTENT_FIELDS = _both(
    {
        **{k: SKIP for k in _FLAGS},
        "interimInputTranscription": obj({"text": VALUES, "finished": SKIP}),
        "groundingMetadata": GENERIC,
        "urlContextMetadata": GENERIC,
    }
)
MODEL, OUTPUT, INPUT = ("model",), ("output",), ("input",)
CALLS = "calls"  # the one "candidate" a connection's streamed calls belong to (calls.Calls)
_STREAMED = ("partialArgs", "partial_args", "willContinue", "will_continue")


class _Calls(Arr):
    """`toolCall.functionCalls`: each element one of the connection's streamed calls."""

    def __init__(self, calls: Calls) -> None:
        super().__init__(GENERIC)
        self.call = StreamCall(calls, CALLS, False, None)  # part None: a call on its own

    def child(self, key: str | int) -> Rule:
        return self.call


class _Parts(Rule):
    """A model turn's parts: the channel's last text part in a message that ends the
    channel gets the held tail."""

    string = True

    def __init__(self, last: int) -> None:
        self.last = last

    def child(self, key: str | int) -> Rule:
        chan = Chan(MODEL, flush=key == self.last)
        return _Part(Obj({**_RESP_PART.part.fields, "text": chan}, default=GENERIC))  # type: ignore[attr-defined]


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


def _field(d: dict, camel: str) -> tuple[str | None, object]:
    """(the key as spelled in d, its value) of a field known in both spellings."""
    if camel in d:
        return camel, d[camel]
    s = _snake(camel)
    if s in d:
        return s, d[s]
    return None, None


def _text_parts(turn: object) -> tuple[bool, int]:
    """(has a parts array, index of its last text part or -1)."""
    if not isinstance(turn, dict):
        return False, -1
    _, parts = _field(turn, "parts")
    if not isinstance(parts, list):
        return False, -1
    last = -1
    for i, p in enumerate(parts):
        if isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("thought") is not True:
            last = i
    return True, last


def view(doc: dict, n: int, chan) -> bool:
    """A view's reader of one server message (inspect/wsview.py; chan(key, kind) is a
    Channel): the model turn's text parts, the output and the input transcription."""
    _, sc = _field(doc, "serverContent")
    if not isinstance(sc, dict):
        return False
    _, turn = _field(sc, "modelTurn")
    if isinstance(turn, dict):
        for j, p in enumerate(turn.get("parts") or ()):
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                kind = "thinking" if p.get("thought") is True else "text"
                where = f"serverContent.modelTurn.parts[{j}].text"
                chan("model turn " + kind, kind).add(p["text"], n, where)
    for name in ("outputTranscription", "inputTranscription"):
        _, tr = _field(sc, name)
        if isinstance(tr, dict) and isinstance(tr.get("text"), str):
            chan(name, "text").add(tr["text"], n, f"serverContent.{name}.text")
    return True


# Gemini Live's server messages (base/wirespec.py): untyped, told by their one
# member.
SPEC = WireSpec(
    "google.live",
    ("apis.google.live",),
    (WEBSOCKET,),
    type_member=None,
    members=frozenset({"serverContent", "modelTurn", "outputTranscription", "inputTranscription",
                       *(k for k in SERVER_MESSAGE.fields if "_" not in k)}),
    view=view,
)  # fmt: skip


class GeminiLive(Protocol):
    """One Gemini Live connection's server side (see the module docstring)."""

    name = "google.live"
    SERVER_TEXT = False  # the API sends its messages as binary frames

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self._restore = restore_fn(restorer)
        self._touched: set = set()  # calls.Calls notes here that it spliced a tail in
        self.calls = Calls(self, wrap=lambda fc: fc)  # streamed arguments (calls.py)

    def client_rule(self, doc: dict) -> Rule | None:
        if not doc or any(k not in CLIENT_MESSAGES for k in doc):
            return None
        return Obj(CLIENT_MESSAGES, default=GENERIC)

    def server_event(self, s: str, doc: dict) -> list[str]:
        key, sc = _field(doc, "serverContent")
        if key is None or not isinstance(sc, dict):
            key, tc = _field(doc, "toolCall")
            if key is not None and self._streamed(tc):
                return [self._tool_call(s, doc, key)]
            return [restore_doc(s, doc, SERVER_MESSAGE, self.restorer)]
        out = [self._content(s, doc, key, sc)]
        if _field(sc, "turnComplete")[1] is True or _field(sc, "interrupted")[1] is True:
            held = self._call_tails()  # calls the turn ends that still hold text: first
            if held is not None:
                out.insert(0, held)
        return out

    def _streamed(self, tc: object) -> bool:
        """Is this `toolCall` part of streamed calls (a piece, or a call still open)?"""
        _, fcs = _field(tc, "functionCalls") if isinstance(tc, dict) else (None, None)
        if not isinstance(fcs, list):
            return False
        return self.calls.current.get(CALLS) is not None or any(
            isinstance(f, dict) and any(m in f for m in _STREAMED) for f in fcs
        )

    def _tool_call(self, s: str, doc: dict, key: str) -> str:
        self.calls.chunk()
        rule = Obj({**SERVER_MESSAGE.fields, key: obj({"functionCalls": _Calls(self.calls)})}, default=GENERIC)
        marks: list[tuple[object, int]] = []
        edits = jsonspan.walk(s, doc, rule, self._fn, marks)
        edits = sorted(edits + self.calls.splices(dict(marks)))
        return jsonspan.splice(s, edits) if edits else s

    def _call_tails(self) -> str | None:
        """The held tails of every streamed call, as a `toolCall` message (None: none)."""
        calls = self.calls.tails(CALLS)
        self.calls.end_candidate(CALLS)
        return dumps({"toolCall": {"functionCalls": calls}}) if calls else None

    def _content(self, s: str, doc: dict, key: str, sc: dict) -> str:
        def flag(name: str) -> bool:
            return _field(sc, name)[1] is True

        ends_turn = flag("turnComplete") or flag("interrupted")
        end_model = ends_turn or flag("generationComplete")
        _, itr = _field(sc, "inputTranscription")
        end_input = ends_turn or (isinstance(itr, dict) and itr.get("finished") is True)
        ends = {MODEL: end_model, OUTPUT: ends_turn, INPUT: end_input}
        _, turn = _field(sc, "modelTurn")
        has_parts, last = _text_parts(turn)
        parts = _Parts(last if end_model else -1)
        parts.mark = "parts"
        _, otr = _field(sc, "outputTranscription")
        out_rule = obj({"text": Chan(OUTPUT, flush=ends_turn), "finished": SKIP})
        out_rule.mark = OUTPUT
        in_rule = obj({"text": Chan(INPUT, flush=end_input), "finished": SKIP})
        in_rule.mark = INPUT
        content = Obj(
            {
                **_CONTENT_FIELDS,
                **_both({
                    "modelTurn": obj({"role": SKIP, "parts": parts}),
                    "outputTranscription": out_rule,
                    "inputTranscription": in_rule,
                }),
            },
            default=GENERIC,
        )  # fmt: skip
        content.mark = "content"
        rule = Obj({**SERVER_MESSAGE.fields, key: content}, default=GENERIC)
        marks: list[tuple[object, int]] = []
        edits = jsonspan.walk(s, doc, rule, self._fn, marks)
        where = dict(marks)
        # Channels this message ends but holds no text of: their tails go in as new fields.
        placed = {
            MODEL: last >= 0,
            OUTPUT: isinstance(otr, dict) and isinstance(otr.get("text"), str),
            INPUT: isinstance(itr, dict) and isinstance(itr.get("text"), str),
        }
        inserts: list[tuple[int, int, str]] = []
        for chan in (MODEL, OUTPUT, INPUT):
            if not ends[chan] or placed[chan]:
                continue
            w = self.windows.pop(chan, None)
            tail = w.flush() if w is not None else ""
            if not tail:
                continue
            part = '{"text":"' + json_escape(tail) + '"}'
            if chan == MODEL and has_parts and "parts" in where:
                at = where["parts"] + 1
                parts_list = _field(turn, "parts")[1]  # type: ignore[arg-type]
                inserts.append((at, at, part + ("," if parts_list else "")))
                continue
            if chan == MODEL and isinstance(turn, dict):
                raise StreamError("a model turn without a parts array ends the turn while text is held back")
            name = {MODEL: "modelTurn", OUTPUT: "outputTranscription", INPUT: "inputTranscription"}[chan]
            tr = otr if chan == OUTPUT else itr
            if chan != MODEL and isinstance(tr, dict) and chan in where:
                # a transcription without text (`{"finished": true}`): the text goes into it
                at = where[chan] + 1
                inserts.append((at, at, '"text":"' + json_escape(tail) + '"' + ("," if tr else "")))
                continue
            if chan != MODEL and _field(sc, name)[0] is not None:
                raise StreamError(f"a {name} that is not an object ends the turn while text is held back")
            body = '{"parts":[' + part + '],"role":"model"}' if chan == MODEL else part
            at = where["content"] + 1
            inserts.append((at, at, f'"{name}":{body}' + ("," if sc else "")))
        if inserts:
            edits = sorted(edits + inserts)
        return jsonspan.splice(s, edits) if edits else s

    def _fn(self, v: str, rule: Rule) -> str:
        if isinstance(rule, Chan):
            w = self.window(rule.key, rule.mode)
            out = w.feed(v)
            if w.held:
                self.events_held += 1
            if rule.flush:
                out += w.flush()
                del self.windows[rule.key]
            return out
        return self._restore(v, rule)

    def drain(self) -> list[str]:
        """Held tails as synthetic messages: the calls' in a toolCall message, then the
        text's in one serverContent message (model text first)."""
        held = self._call_tails()
        sc: dict = {}
        for chan, name in ((MODEL, "modelTurn"), (OUTPUT, "outputTranscription"), (INPUT, "inputTranscription")):
            w = self.windows.pop(chan, None)
            tail = w.flush() if w is not None else ""
            if tail:
                sc[name] = {"parts": [{"text": tail}], "role": "model"} if chan == MODEL else {"text": tail}
        self.windows.clear()
        return ([held] if held is not None else []) + ([dumps({"serverContent": sc})] if sc else [])

    def error_event(self, message: str, refused: dict | None, failed: bool) -> str:
        # google.rpc.Status, as the Live API's clients read an error message: the
        # google-genai SDK raises a message with none of the known fields as an APIError
        # with its top-level `code` (4xx: ClientError, 5xx: ServerError).
        if failed:
            return dumps({"code": 500, "message": message, "status": "INTERNAL"})
        return dumps({"code": 400, "message": message, "status": "INVALID_ARGUMENT"})

