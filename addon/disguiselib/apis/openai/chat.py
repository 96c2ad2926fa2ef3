"""OpenAI Chat Completions: what to mask, how to reverse (sans I/O).

Chat: https://platform.openai.com/docs/api-reference/chat (chunks: `choices[].delta`
with `content`, `refusal`, `tool_calls[].function.{name,arguments}`, `finish_reason`,
then a usage chunk and `data: [DONE]`). Responses:
https://platform.openai.com/docs/api-reference/responses-streaming (typed events with a
`sequence_number`). Both on any host, so OpenAI-compatible providers work too; their
reasoning fields (`reasoning_content`, `reasoning`) pass untouched in responses, like
thinking, and are masked in requests (no signature covers them: _REASONING_OUT).
"""

from __future__ import annotations

import json
import re

from ...base import fields, readpass
from ...base.channels import Chan, ChannelStream, channel_index
from ...base.channels import dumps_bytes as _dumps
from ...base.exempt import COUNTERS, MODEL, SIGNED
from ...base.fields import DATA_URL, ECHO, GENERIC, ID, MEDIA, META, OPAQUE, SCHEMA, SETTING, Shape, Vocabulary, obj
from ...base.holdback import Window
from ...base.logprobs import clean_alternatives
from ...base.offsets import Cited
from ...base.offsets import register as register_cited
from ...base.restore import restore_fn
from ...base.stream import StreamState
from ...base.wirespec import SSE, WireSpec
from ...rules.rules import Restorer
from ...wire import jsonspan
from ...wire.jsonspan import JSON_TEXT, PROSE, VALUES, Arr, Either, Obj, Rule, Typed, escaped_name
from ...wire.sse import Event
from ...wire.text import is_utf8
from .chatheld import ToolNames, _insertion, _merge_tails

_REASONING = {"reasoning_content": OPAQUE, "reasoning": OPAQUE, "reasoning_details": SIGNED}
# A message's reasoning on the way out (compatible providers: DeepSeek's and vLLM's
# `reasoning_content`, OpenRouter's `reasoning` and `reasoning_details`): text the client
# sends, on a message of any role, that no signature covers, so masked. What came back in
# a response holds disguises, not originals, and goes out again as it came; where an API
# restored it (Bedrock's gpt-oss and Jamba streams), an original sent back is masked again,
# and a user message cannot carry one out under the name. OpenRouter's entries keep their
# signed or encrypted members (`signature`, `data`) byte-identical; their text is masked.
_REASONING_DETAIL = obj(
    {"id": ID, "format": META, "index": META, "signature": OPAQUE, "data": OPAQUE, "text": ECHO, "summary": ECHO}
)
_REASONING_OUT = {"reasoning_content": ECHO, "reasoning": ECHO, "reasoning_details": Arr(_REASONING_DETAIL)}

# -- Chat Completions requests --------------------------------------------------------

_CHAT_PART = Typed(
    {
        "text": obj({"text": VALUES}),
        "image_url": obj({"image_url": obj({"url": DATA_URL, "detail": META})}),
        "input_audio": obj({"input_audio": obj({"data": MEDIA, "format": META})}),  # wav, mp3
        # file_data: a data: URL (a PDF: binary, untouched; text: decoded, masked)
        "file": obj({"file": obj({"file_data": DATA_URL, "file_id": ID, "filename": VALUES})}),
        "refusal": obj({"refusal": VALUES}),
        "thinking": obj({"thinking": ECHO}),  # an answer's (Mistral's: untouched there) sent back
    },
    default=GENERIC,
)
_CHAT_CONTENT = Either(VALUES, Arr(_CHAT_PART))
_FUNCTION_CALL = obj({"name": VALUES, "arguments": JSON_TEXT})
_CHAT_TOOL_CALL = obj(
    {"id": ID, "function": _FUNCTION_CALL, "custom": obj({"name": VALUES, "input": VALUES})}
)
_CHAT_MESSAGE = Obj(
    {
        "role": META, "content": _CHAT_CONTENT, "name": VALUES, "refusal": VALUES,
        "tool_calls": Arr(_CHAT_TOOL_CALL), "tool_call_id": ID, "function_call": _FUNCTION_CALL,
        "audio": obj({"id": ID}), **_REASONING_OUT,
    },
    default=GENERIC,
)  # fmt: skip
_FUNCTION_DEF = obj(
    {"name": VALUES, "description": VALUES, "parameters": SCHEMA, "output_schema": SCHEMA, "strict": META}
)
_CHAT_TOOL = obj({"function": _FUNCTION_DEF, "custom": obj({"name": VALUES, "description": VALUES})})
_TOOL_CHOICE = Either(
    Vocabulary(("auto", "none", "required")),  # anything else is masked
    obj({"function": obj({"name": VALUES}), "custom": obj({"name": VALUES}), "name": VALUES,
          "mode": META, "tools": GENERIC}),
)  # fmt: skip
_JSON_SCHEMA_FORMAT = obj({"name": VALUES, "description": VALUES, "schema": SCHEMA, "strict": META})

# The request's settings: masked as settings (numbers pass, words and keys only where
# they hold an original: a `logit_bias` key is a token id); the model name is untouched.
_CHAT_SETTINGS = (
    "stream", "n", "temperature", "top_p", "max_tokens", "max_completion_tokens",
    "seed", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
    "service_tier", "store", "parallel_tool_calls", "reasoning_effort", "stream_options",
    "modalities", "audio", "verbosity",
)  # fmt: skip
# End-user identifiers (`user`, `safety_identifier`, `prompt_cache_key`) are not in the
# skipped lists: like Anthropic `metadata.user_id` they are masked (values), so an
# identifier that is an original (an e-mail as user id) never leaves; see docs/fields.md.
# Each is read alone, not with its key: the rules anchored on a key took
# `prompt_cache_key` for a `*_key =` assignment, and Codex's conversation id left as
# [SECRET_1], one cache key for every session behind the proxy.
IDENTIFIERS = dict.fromkeys(("user", "safety_identifier", "prompt_cache_key"), fields.CLIENT_ID)
CHAT_REQUEST = Obj(
    {
        "model": MODEL,
        **IDENTIFIERS,
        **dict.fromkeys(_CHAT_SETTINGS, SETTING),
        # a voice's name is a setting, a custom voice's id untouched
        "audio": Obj({"voice": Shape(Obj({"id": ID}, default=SETTING), SETTING, SETTING)}, default=SETTING),
        "messages": Arr(_CHAT_MESSAGE),
        "tools": Arr(_CHAT_TOOL),
        "functions": Arr(_FUNCTION_DEF),
        "tool_choice": _TOOL_CHOICE,
        "function_call": _TOOL_CHOICE,
        "response_format": obj({"json_schema": _JSON_SCHEMA_FORMAT}),
        "prediction": obj({"content": _CHAT_CONTENT}),
    },
    default=GENERIC,
    # the prompt: the tool definitions (rendered before the conversation), the messages last
    prompt=("tools", "functions", "messages"),
    # an answer asked for as JSON (structured outputs: base/jsonanswer.py)
    json_answer=((("response_format", "type"), frozenset({"json_schema", "json_object"})),),
)


_TOOL_CALL_OUT = obj({"id": ID, "function": obj({"name": VALUES, "arguments": JSON_TEXT}),
                       "custom": obj({"name": VALUES, "input": VALUES})})
# Compatible providers (Mistral) send content as parts; thinking parts pass untouched.
_CHAT_OUT_PART = Typed({"text": obj({"text": fields.ANSWER}), "thinking": SIGNED}, default=GENERIC)
_AUDIO_OUT = obj({"id": ID, "data": MEDIA, "expires_at": META, "transcript": PROSE})
_ENVELOPE = {**dict.fromkeys(("object", "created", "model", "system_fingerprint", "service_tier"), META),
             "usage": COUNTERS,
             "id": ID}  # fmt: skip
CHAT_RESPONSE = Obj(
    {
        **_ENVELOPE,
        "choices": Arr(Obj({
            "index": META, "finish_reason": META, "logprobs": META,
            "message": Obj({
                "role": META, "content": Either(fields.ANSWER, Arr(_CHAT_OUT_PART)), "refusal": PROSE,
                "tool_calls": Arr(_TOOL_CALL_OUT),
                "function_call": obj({"name": VALUES, "arguments": JSON_TEXT}),
                "audio": _AUDIO_OUT, "annotations": GENERIC, **_REASONING,
            }, default=GENERIC),
        }, default=GENERIC)),
    },
    default=GENERIC,
)  # fmt: skip

# A message's web-search citations count characters of its content
# (`{"type": "url_citation", "url_citation": {"start_index", "end_index", "url", "title"}}`):
# moved to the restored content in whole answers (base/offsets.py). A streamed chunk's
# `delta` holds a piece of the content: its citations are not moved.
register_cited(Cited("annotations", "content", ("start_index", "end_index"), inner=("url_citation",), pieces="delta"))

# -- retrievals (stored completions: literals only, see registry.py) -------------------

CHAT_LIST = Obj({"object": META, "first_id": ID, "last_id": ID, "data": Arr(CHAT_RESPONSE)}, default=GENERIC)
_STORED_MESSAGE = Obj(
    {
        "id": ID, "role": META, "content": Either(PROSE, Arr(_CHAT_OUT_PART)), "refusal": PROSE,
        "content_parts": Arr(_CHAT_PART), "name": VALUES, "tool_calls": Arr(_TOOL_CALL_OUT),
        "function_call": obj({"name": VALUES, "arguments": JSON_TEXT}), "audio": _AUDIO_OUT,
        "annotations": GENERIC, **_REASONING,
    },
    default=GENERIC,
)  # fmt: skip
CHAT_STORED_MESSAGES = Obj(
    {"object": META, "first_id": ID, "last_id": ID, "data": Arr(_STORED_MESSAGE)}, default=GENERIC
)


# -- Chat Completions streams ----------------------------------------------------------


class _ChatChoice(Rule):
    """A streamed choice, bound to its `index` so that its strings find their windows."""

    string = True

    def resolve(self, value: object) -> Rule:
        k = channel_index(value.get("index", 0)) if isinstance(value, dict) else 0
        parts = Typed({"text": obj({"text": Chan((k, "content"), Window.OUTPUT, parts=True)}), "thinking": SIGNED},
                      default=GENERIC)  # fmt: skip
        delta = Obj({
            "role": META,
            "content": Either(Chan((k, "content"), Window.OUTPUT), Arr(parts)),
            "refusal": Chan((k, "refusal"), Window.TEXT),
            "audio": obj({"id": ID, "data": MEDIA, "expires_at": META,
                           "transcript": Chan((k, "transcript"), Window.TEXT)}),
            "tool_calls": Arr(_ChatToolCall(k)),
            "function_call": obj({"name": VALUES, "arguments": Chan((k, "fc"), Window.JSON)}),
            **_REASONING,
        }, default=GENERIC)  # fmt: skip
        delta.mark = k  # where held tails can be inserted when this choice finishes
        return Obj({"index": META, "finish_reason": META, "logprobs": META, "delta": delta}, default=GENERIC)


class _ChatToolCall(Rule):
    """A streamed tool call of choice `choice`, bound to its `index`: its arguments are
    one channel, its name another (some compatible servers stream a name in pieces,
    `"crm_"` then `"lookup"`, and the SDKs join them; OpenAI sends it whole)."""

    string = True

    def __init__(self, choice: object) -> None:
        self.choice = choice

    def resolve(self, value: object) -> Rule:
        j = channel_index(value.get("index", 0)) if isinstance(value, dict) else 0
        return obj(
            {
                "index": META, "id": ID,
                "function": obj({"name": Chan((self.choice, "name", j), Window.VALUE),
                                 "arguments": Chan((self.choice, "tool", j), Window.JSON)}),
            }
        )  # fmt: skip


_CHUNK = Obj(
    {**_ENVELOPE, "obfuscation": META, "choices": Arr(_ChatChoice())},
    default=GENERIC,
)  # fmt: skip

STREAM_EVENT: Rule = _CHUNK  # one chunk of a stream (the audit and the views read it too)


def delta_kind(field: str) -> str:
    """The kind of a streamed choice delta's member (reasoning: opaque)."""
    return _REASONING[field].kind if field in _REASONING else "text"

# The shapes nearly every streamed token has: one choice, content only; or one choice,
# one tool call, arguments only. `"choices":[` can only be the real key: a quote inside
# a string is escaped.
_STR = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_FAST_CHAT = re.compile(
    r'"choices":\[\{"index":(\d+),"delta":\{"content":' + _STR + r'\},'
    r'"logprobs":null,"finish_reason":null\}\]'
)
_FAST_CHAT_ARGS = re.compile(
    r'"choices":\[\{"index":(\d+),"delta":\{"tool_calls":\[\{"index":(\d+),'
    r'"function":\{"arguments":' + _STR + r'\}\}\]\},"logprobs":null,"finish_reason":null\}\]'
)
# The same two shapes as a whole event's bytes, for on_raw: parse_event's one-data-line
# shape (`data: `, no CR, no line break in the data), the choice between envelope
# members that are plain (a string without escapes, a number, null, true or false), so
# that `"choices":[` is there once and _FAST_CHAT or _FAST_CHAT_ARGS finds what this
# finds. The string bodies are narrowed to what cannot be a line break, digits to ASCII.
# The envelope before the choice (_RAW_HEAD) is the same in every chunk of a stream.
_RAW_STR = rb'"([^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*)"'
_RAW_MEMBER = rb'"[a-z_]+":(?:"[^"\\\r\n]*"|-?[0-9]+|null|true|false)'
_RAW_HEAD = re.compile(rb"data: \{(?:" + _RAW_MEMBER + rb",)*")
_RAW_CHOICE = re.compile(
    rb'"choices":\[\{"index":([0-9]+),"delta":\{(?:"content":' + _RAW_STR
    + rb'|"tool_calls":\[\{"index":([0-9]+),"function":\{"arguments":' + _RAW_STR + rb"\}\}\])"
    + rb'\},"logprobs":null,"finish_reason":null\}\](?:,' + _RAW_MEMBER + rb")*\}\n\n\Z"
)


_VIEW_FIELDS = tuple(
    (f, "thinking" if delta_kind(f) == "opaque" else "text") for f in ("content", "refusal", *_REASONING)
    if f != "reasoning_details"
)  # fmt: skip


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one chunk (inspect/sseview.Builder): per choice `index`, its
    `content`, `refusal`, reasoning, and per tool call `index` its `arguments`."""
    choices = doc.get("choices")
    if not isinstance(choices, list) or doc.get(SPEC.type_member, _CHUNK_OBJECT) not in SPEC.events:
        return False
    notes = []
    for ci, ch in enumerate(choices):
        if not isinstance(ch, dict):
            continue
        idx = ch.get("index", ci)
        if ch.get("finish_reason"):
            notes.append(f"choice {idx} finish_reason {ch['finish_reason']}")
        d = ch.get("delta")
        if not isinstance(d, dict):
            continue
        for fld, kind in _VIEW_FIELDS:
            v = d.get(fld)
            if isinstance(v, str) and v:
                b.add(ev, f"choice {idx} {fld}", kind, v, f"choices[{ci}].delta.{fld}")
            elif v == "":  # a channel named with no text (a view tells a held chunk by it)
                ev.empty.append(f"choice {idx} {fld}")
        for ti, tc in enumerate(d.get("tool_calls") or ()):
            if not isinstance(tc, dict):
                continue
            j = tc.get("index", ti)
            fn = tc.get("function") or {}
            c = b.channel(f"choice {idx} tool_call {j} arguments", "json")
            if isinstance(fn.get("name"), str) and fn["name"]:
                c.name = fn["name"]
                notes.append(f"tool_call {j} {c.name}")
            args = fn.get("arguments")
            if isinstance(args, str) and args:
                b.add(ev, c.key, "json", args, f"choices[{ci}].delta.tool_calls[{ti}].function.arguments")
    ev.note = "; ".join(notes)
    return True


_CHUNK_OBJECT = "chat.completion.chunk"
# The Chat stream's wire vocabulary, for every reader (base/wirespec.py): chunks
# are told by their `object`, and `data: [DONE]` ends the stream.
SPEC = WireSpec(
    "openai.chat",
    ("apis.openai.chat",),
    (SSE,),
    events=frozenset({_CHUNK_OBJECT}),
    type_member="object",
    done="[DONE]",
    stop_members=("finish_reason",),
    view=view,
)


class ChatStream(ToolNames, ChannelStream):
    """One Chat Completions stream: a window per (choice, content | refusal | tool call
    arguments | tool call name).

    A tool name is one more channel, in VALUE mode, with one difference: what ends it is
    not in the event that carries its last piece. OpenAI sends a name whole in the delta
    that opens its call (clients such as the Vercel AI SDK and openai-node read it from
    that delta alone); some compatible servers send it in pieces. A name piece whose
    window would hold nothing goes out at once, restored, in its own event: that is every
    name sent whole, unless it ends like the start of a disguise (`get_account` where
    `thread_id` is one). Otherwise the event, and every one after it, waits (`waiting`)
    until the stream says whether the name goes on: a later delta of the same call with
    a `name` piece (it continues: the held tail joins that piece), or with none, the
    choice's finish_reason, an error, `[DONE]` or the end of the body (it was whole: its
    tail is flushed into the very event that carried it, which goes out as it would have
    whole). Other choices' and calls' events wait in order behind it; nothing is reordered.
    """

    TERMINAL = SPEC.ends
    MARKERS = (*SPEC.markers, b'"error"')
    # The chunk's own members the table exempts: ids, model, fingerprint, padding (no
    # window reads them: the windows are the choices' text and arguments).
    OPAQUE = frozenset(k.encode() for k, rule in _CHUNK.fields.items() if rule.skip)

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        if readpass.make_pass is not None and type(self) is ChatStream:  # (a subclass: its own on_raw)
            self._pass = readpass.make_pass(self, readpass.CHAT)
        self.last: dict = {}  # id, created, model of the first chunk (for drain chunks)
        self.remembered = False  # the first chunk was read for them
        self._head = b"\0"  # the envelope before the choice that on_raw last read (_RAW_HEAD)
        # Events (with their parsed data, None: not an object) behind a tool name piece
        # that may continue, in order; the compiled pass is set aside while any wait.
        self.waiting: list[tuple[Event, object]] = []
        self._releasing = False
        self._set_aside = None

    def quiet(self) -> bool:
        # the first chunk is always parsed: it says what drained chunks look like
        return self.remembered and not self.waiting and super().quiet()

    def on_raw(self, raw: bytes) -> list[bytes] | None:
        """A content or tool-arguments delta of one choice in the API's own shape, from
        its bytes (SSEStream.on_raw): on_event's _FAST_CHAT and _FAST_CHAT_ARGS paths.
        Declined before the first chunk (on_event remembers it) and wherever a key
        could be spelled with escapes (on_event then parses it whole), and while events
        wait behind a tool name (on_event queues it)."""
        if self.waiting:
            return None
        head = self._head
        m = _RAW_CHOICE.match(raw, len(head)) if raw.startswith(head) else None
        if m is None:  # another envelope (tool-call chunks put `usage` first), or no delta
            h = _RAW_HEAD.match(raw)
            m = _RAW_CHOICE.match(raw, h.end()) if h is not None else None
            if m is None:
                return None
            self._head = raw[: m.start()]
        if not self.remembered or (b"\\u" in raw and escaped_name(raw)):
            return None
        if not is_utf8(raw):
            return None  # parsed: it ends the stream
        if m.start(2) >= 0:
            key: tuple = (int(m.group(1)), "content")
            mode, start, end = Window.OUTPUT, m.start(2), m.end(2)
        else:
            key = (int(m.group(1)), "tool", int(m.group(3)))
            mode, start, end = Window.JSON, m.start(4), m.end(4)
        got = self.window_raw_for(key, mode, raw, start, end)
        if got is not None and mode == Window.OUTPUT:
            self.parts.discard(key)
        return got

    def on_event(self, ev: Event) -> list[bytes]:
        early = self.done_line(ev, SPEC.done)
        if early is not None:
            return early
        data = ev.data or ""  # not None: done_line passed those on
        if not self.remembered:  # once: what a drained tail's own chunk needs to be valid
            self.remembered = True
            self._remember(data)
        if self.waiting:
            try:
                doc = jsonspan.loads(data)
            except ValueError:
                doc = None
            self.waiting.append((ev, doc))
            return self._release()
        # The fast shapes only where no key can be spelled with escapes: a second
        # `"ch\u006fices"` or an `"err\u006fr"` would be read by json.loads, not by them.
        fast = not escaped_name(data)
        m = _FAST_CHAT.search(data) if fast else None
        if m is not None:
            key = (int(m.group(1)), "content")
            self.parts.discard(key)
            w = self.window(key, Window.OUTPUT)
            return self.window_field(ev, w, m.start(2), m.end(2))
        m = _FAST_CHAT_ARGS.search(data) if fast else None
        if m is not None:
            w = self.window((int(m.group(1)), "tool", int(m.group(2))), Window.JSON)
            return self.window_field(ev, w, m.start(3), m.end(3))
        try:
            obj = jsonspan.loads(data)
        except ValueError:
            return self.not_object(ev)
        if not isinstance(obj, dict):
            return self.not_object(ev)
        if self._names_held(obj):  # a tool name piece that may continue: wait for the stream to say
            self.waiting.append((ev, obj))
            if self._pass is not None:
                self._set_aside, self._pass = self._pass, None
            return self._release()
        return self._chunk(ev, data, obj)

    def _chunk(self, ev: Event, data: str, obj: dict, whole: frozenset = frozenset()) -> list[bytes]:
        """on_event for a chunk parsed (obj); whole: the tool name channels that end with
        their piece in this chunk (a later event said so)."""
        if "error" in obj:
            # A mid-stream error (OpenRouter's may carry a finish_reason too): the SDK
            # raises at it, so every held tail goes out in its own chunk first.
            self.to(StreamState.FINISHING)
            out = self.drain()
            new, changed = jsonspan.transform(data, obj, GENERIC, restore_fn(self.restorer))
            out.append(ev.with_data(new) if changed else ev.raw)
            return out
        choices = obj.get("choices")
        deltas = {
            channel_index(c.get("index", 0)): c.get("delta")
            for c in (choices if isinstance(choices, list) else [])
            if isinstance(c, dict) and c.get("finish_reason") is not None
        }
        # Held text rides inside the chunk that finishes its choice: a client that parses
        # the arguments at finish_reason sees them whole. A channel with a field in this
        # chunk is flushed into that field; the others are inserted into the delta.
        marks: list[tuple[object, int]] = []
        edits = jsonspan.walk(data, obj, _CHUNK, self._names_fn(frozenset(deltas), whole), marks)
        tails = {k: t for k in deltas if (t := self._flush_choice(k))}
        merge = False
        if tails:
            where = dict(marks)
            inserts = [(where[k] + 1, where[k] + 1, _insertion(t, deltas[k], self._parted(k)))
                       for k, t in tails.items() if k in where]  # fmt: skip
            if len(inserts) == len(tails) and all(i[2] for i in inserts):
                edits = sorted(edits + inserts)
            else:  # a field present but null, or tool calls named otherwise: rebuild
                merge = True
        lps = self._logprobs(choices)
        if merge or lps:
            doc = json.loads(jsonspan.splice(data, edits))
            for c in doc["choices"]:
                if not isinstance(c, dict):
                    continue
                k = channel_index(c.get("index", 0))
                if merge and k in tails:
                    delta = c.get("delta")
                    if not isinstance(delta, dict):  # absent, or null: the tails make one
                        delta = c["delta"] = {}
                    _merge_tails(delta, tails[k], self._parted(k))
                if k in lps:
                    c["logprobs"] = lps[k]
            self.events_changed += 1
            return [ev.with_data(_dumps(doc).decode("utf-8"))]
        if not edits:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(jsonspan.splice(data, edits))]

    def _parted(self, k: object) -> bool:
        return (k, "content") in self.parts

    def _logprobs(self, choices: object) -> dict:
        """Per choice of a chunk, its logprobs where they must change: the entries of a
        channel whose text this chunk changed or held are removed (common.py, logprobs),
        alternatives holding a whole disguise dropped from the others."""
        out: dict = {}
        for c in choices if isinstance(choices, list) else []:
            lp = c.get("logprobs") if isinstance(c, dict) else None
            if not isinstance(lp, dict):
                continue
            k = channel_index(c.get("index", 0))
            new = dict(lp)
            for field in ("content", "refusal"):
                entries = lp.get(field)
                if not isinstance(entries, list) or not entries:
                    continue
                if (k, field) in self.touched:
                    new[field] = []
                else:
                    cleaned = clean_alternatives(entries, self.restorer)
                    if cleaned is not None:
                        new[field] = cleaned
            if new != lp:
                out[k] = new
        return out

    def _remember(self, data: str) -> None:
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self.last = {k: obj[k] for k in ("id", "object", "created", "model") if k in obj}

    def _flush_choice(self, k: object) -> dict:
        tails: dict = {}
        for key in [key for key in self.windows if key[0] == k]:
            w = self.windows.pop(key)
            tail = w.flush()
            if tail:
                tails[key[1:]] = tail
        return tails

    def drain(self) -> list[bytes]:
        out = self._release(end=True)  # the stream ends: every tool name is whole
        for k in sorted({key[0] for key in self.windows}, key=repr):
            tails = self._flush_choice(k)
            if tails:
                delta: dict = {}
                _merge_tails(delta, tails, self._parted(k))
                chunk = {**self.last, "choices": [{"index": k, "delta": delta, "finish_reason": None}]}
                chunk.setdefault(SPEC.type_member, _CHUNK_OBJECT)
                out.append(b"data: " + _dumps(chunk) + b"\n\n")
        return out

    def error_event(self, message: str) -> bytes:
        err = json.dumps({"error": {"message": message, "type": "disguise_error"}})
        return f"data: {err}\n\ndata: {SPEC.done}\n\n".encode()



def error_body(message: str, kind: str = "invalid_request_error") -> bytes:
    """A response body in the shape the OpenAI API uses for errors."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()

