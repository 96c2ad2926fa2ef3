"""Gemini streams (sans I/O): `streamGenerateContent?alt=sse` as SSE events, and without
`alt=sse` as the elements of one JSON array arriving piece by piece (GeminiArrayStream).
The field rules are google.py's; see its docstring for the channels and endings."""

from __future__ import annotations

import json

from ...base.channels import Chan
from ...base.fields import GENERIC
from ...base.holdback import Window
from ...base.restore import restore_fn, restore_json
from ...base.stream import SSEStream, StreamState
from ...base.wirespec import JSON_ARRAY, SSE, WireSpec
from ...errors import StreamError
from ...rules.rules import Restorer
from ...wire import jsonspan
from ...wire.jsonspan import SKIP, Arr, Obj, Rule
from ...wire.sse import Event, Shape, parse_event, sniff
from .calls import Calls, StreamCall, view_call
from .cites import CITE_MARKERS, CitedStream, _index
from .cites import _is_text as _is_text_part
from .gemini import (
    _CANDIDATE_FIELDS,
    _RESP_PART,
    _RESPONSE_FIELDS,
    RESPONSE,
    _both,
    _dumps,
    _Part,
    error_chunk,
    gemini_whole,
)


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one GenerateContentResponse chunk (inspect/sseview.Builder):
    per candidate its text, thoughts and calls. The stream is complete when every
    candidate it named gave its finishReason (or the prompt was blocked)."""
    cands = doc.get("candidates")
    feedback = doc.get("promptFeedback")
    if not isinstance(cands, list) and not isinstance(feedback, dict) and "usageMetadata" not in doc:
        return False
    notes = []
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        notes.append(f"blockReason {feedback['blockReason']}")
        b.terminal = True
    for ci, cand in enumerate(cands if isinstance(cands, list) else ()):
        if not isinstance(cand, dict):
            continue
        k = cand.get("index", 0)
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for pi, part in enumerate(parts if isinstance(parts, list) else ()):
            if not isinstance(part, dict):
                continue
            path = f"candidates[{ci}].content.parts[{pi}]"
            if isinstance(part.get("text"), str) and part["text"]:
                thought = part.get("thought") is True
                kind = "thinking" if thought else "text"
                b.add(ev, f"candidate {k} {'thought' if thought else 'text'}", kind, part["text"], f"{path}.text")
            call = part.get("functionCall") or part.get("function_call")
            if isinstance(call, dict):  # whole: one channel per call; streamed: one per argument (calls.py)
                view_call(b, ev, k, call, f"{path}.functionCall")
        reason = cand.get("finishReason") or cand.get("finish_reason")
        if reason:
            notes.append(f"candidate {k} finishReason {reason}")
            b.open.discard(("g", k))
            b.finished.add(("g", k))
        elif ("g", k) not in b.finished:
            b.open.add(("g", k))
        b.terminal = not b.open
    ev.note = "; ".join(notes)
    return True


# Gemini's stream vocabulary (base/wirespec.py): untyped chunks, told by their
# members, as SSE events (`alt=sse`) or a streamed JSON array's elements; the stream is
# complete when every candidate gave its finishReason, or the prompt was blocked.
SPEC = WireSpec(
    "google.gemini",
    ("apis.google.gemini", "apis.google.stream", "apis.google.array"),
    (SSE, JSON_ARRAY),
    type_member=None,
    members=frozenset({"candidates", "usageMetadata", "promptFeedback"}),
    stop_members=("finishReason", "blockReason"),
    view=view,
)


class _StreamParts(Rule):
    string = True

    def __init__(self, stream: GeminiStream, k: int, last: int, finishing: bool) -> None:
        self.stream = stream
        self.key = (k, "text")
        self.last = last  # the index of the part that gets the held tail, or -1
        self.finishing = finishing

    def child(self, key: str | int) -> Rule:
        chan = Chan(self.key, Window.OUTPUT, flush=key == self.last)  # a candidate's text; flushed where it finishes
        mark = ("part", self.key[0], key)
        call = StreamCall(self.stream.calls, self.key[0], self.finishing, mark)  # streamed arguments (calls.py)
        fields = {**_RESP_PART.part.fields, "text": chan, "functionCall": call, "function_call": call}  # type: ignore[attr-defined]
        part = Obj(fields, default=GENERIC)
        part.mark = mark
        return _Part(part)


class _StreamCandidate(Rule):
    """A streamed candidate, bound to its index; one that finishes in this chunk is
    noted, and its last text part gets the held tail."""

    string = True

    def __init__(self, stream: GeminiStream) -> None:
        self.stream = stream

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC
        k = _index(value)
        last = -1
        finishing = value.get("finishReason") is not None
        if finishing:
            content = value.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            if isinstance(parts, list):
                for i, p in enumerate(parts):
                    if _is_text_part(p):
                        last = i
            self.stream._finishing[k] = value
        parts_rule = _StreamParts(self.stream, k, last, finishing)
        parts_rule.mark = ("parts", k)
        content_rule = Obj(_both({"role": SKIP, "parts": parts_rule}), default=GENERIC)
        content_rule.mark = ("content", k)
        cand = Obj({**_CANDIDATE_FIELDS, "content": content_rule}, default=GENERIC)
        cand.mark = ("cand", k)
        return cand


def _is_json(s: str) -> bool:
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


# Keys that end a candidate or the stream (finishReason, blockReason) and errors: the
# chunks that hold them are always parsed. (A key; inside a string its quotes would be
# escaped.) So are function calls: which call a streamed argument's piece belongs to is
# told by the parts before it (calls.py), and citations (cites.py).
END_MARKERS = (b'Reason"', b'"error"')
STREAM_MARKERS = (*END_MARKERS, b'"functionCall"', b'"function_call"', *CITE_MARKERS)


_WS_BYTES = b" \t\r\n"


class GeminiStream(CitedStream, SSEStream):
    """A `streamGenerateContent?alt=sse` stream: a window per candidate's text.

    A body that is one JSON document rather than SSE (the API answers errors that way,
    even with `content-type: text/event-stream`) is restored whole at its end.
    """

    MARKERS = STREAM_MARKERS
    WHOLE: Rule = RESPONSE  # the rule of a body that is one document (not SSE)

    # Where a chunk's GenerateContentResponse is: the chunk itself here; an API that
    # wraps it (codeassist.py: {"response": ..., "traceId": ...}) says so in these three.
    def _body(self, chunk: object) -> dict:
        """The GenerateContentResponse a parsed chunk holds."""
        return chunk if isinstance(chunk, dict) else {}

    def _wrap(self, response: dict) -> dict:
        """A synthetic chunk holding this GenerateContentResponse."""
        return response

    def _wrap_rule(self, rule: Rule) -> Rule:
        """The rule of a chunk whose GenerateContentResponse is read with rule."""
        return rule

    def __init__(self, restorer: Restorer) -> None:
        SSEStream.__init__(self, restorer)
        CitedStream.__init__(self)  # where citations point in the restored text (cites.py)
        self.windows: dict[tuple, Window] = {}
        self._finishing: dict[int, dict] = {}  # candidates finishing in the chunk at hand
        self._open: set = set()  # candidates seen without their finishReason yet
        self._ended = False  # a finishReason or blockReason was seen
        self._errored = False  # an error chunk was seen: the stream ends there
        self.shape = Shape.UNDECIDED  # until the first bytes tell (core.sse.sniff)
        self._doc: list[bytes] = []  # json mode: the body so far
        self._doc_len = 0
        self._eol: str | None = None  # the line end synthetic events use: as upstream's first
        self._last: dict = {}  # modelVersion, responseId (for synthetic chunks)
        self._read_first = False  # the first chunk was read (for _last)
        chunk = Obj({**_RESPONSE_FIELDS, "candidates": Arr(_StreamCandidate(self))}, default=GENERIC)
        self._chunk_rule = self._wrap_rule(chunk)
        self._partial: list[bytes] = []  # output of a feed that then failed
        self._touched: set = set()  # candidates whose text the chunk at hand changed or held
        self.calls = Calls(self)  # Vertex's streamed function-call arguments (calls.py)

    # -- bytes in, bytes out ---------------------------------------------------------------

    def feed(self, data: bytes) -> bytes:
        if self.finished or not data:
            return b""
        try:
            if self.shape is not Shape.STREAM:
                data = self._sniff(data)
                if not data:
                    return b""
            return self.feed_stream(data)
        except StreamError as e:
            partial, self._partial = b"".join(self._partial), []
            return partial + self.fail(str(e))

    def feed_stream(self, data: bytes) -> bytes:
        out: list[bytes] = []
        try:
            self._feed_events(data, out)
        except StreamError:
            self._partial = out  # what went out before the failure still goes, then the error
            raise
        return out[0] if len(out) == 1 else b"".join(out)

    def _sniff(self, data: bytes, final: bool = False) -> bytes:
        """Decide by the first bytes (core.sse.sniff, as for every body) whether this is
        a stream or one JSON document; returns what the stream framer should get (b"" for
        none)."""
        if self.shape is Shape.DOCUMENT:
            self._keep(data)
            return b""
        self._keep(data)
        kept = b"".join(self._doc)
        if not kept.strip(_WS_BYTES):  # nothing yet: at the end, an empty body (an error)
            self.shape = Shape.DOCUMENT if final else Shape.UNDECIDED
            return b""
        self.shape = Shape.of(sniff(kept, "text/event-stream", final=final, array=self.array))
        if self.shape is not Shape.STREAM:  # undecided, or one document
            return b""
        self._doc = []
        self._doc_len = 0
        return kept

    def _keep(self, data: bytes) -> None:
        self._doc.append(data)
        self._doc_len += len(data)
        if self._doc_len > self.framer.max_event_bytes:
            raise StreamError(f"a response body exceeds {self.framer.max_event_bytes} bytes")

    array = False  # GeminiArrayStream: a `[` starts the stream itself

    def flush(self) -> bytes:
        if self.finished:
            return b""
        try:
            return self._flush()
        except StreamError as e:
            return self.fail(str(e))

    def _flush(self) -> bytes:
        if self.finished:
            return b""
        if self.shape is Shape.UNDECIDED:
            head = self._sniff(b"", final=True)
            if head:
                return self.feed_stream(head) + self._flush()
        if self.shape is not Shape.STREAM:
            whole = self._whole_document()
            self.to(StreamState.FAILED if self._whole_failed else StreamState.DONE)
            return whole
        out: list[bytes] = []
        for raw in self.framer.flush_raw():
            # An event the connection cut before its blank line: passed on, terminated so
            # that what follows stays a separate event, if its data is a whole chunk;
            # dropped if not (half a JSON document restores nothing and parses nowhere;
            # the error below says the stream was cut).
            data = parse_event(raw).data
            if data is None or not _is_json(data):
                continue
            eol = (self._eol or "\r\n").encode()
            self._events([raw.rstrip(b"\r\n") + eol + eol], out)
        out.extend(self.drain())
        if not self._errored and (not self._ended or self._open):
            self.to(StreamState.FAILED)
            out.append(
                self.error_event("disguise: the stream ended before its last chunk (no finishReason): it was cut short")
            )
        else:
            self.to(StreamState.DONE)
        return b"".join(out)

    def _whole_document(self) -> bytes:
        body = b"".join(self._doc)
        self._doc = []
        self._whole_failed = False
        if not body.strip(_WS_BYTES):
            # nothing but whitespace arrived: not a complete stream
            self._whole_failed = True
            return body + self.error_event("disguise: the stream ended before its first chunk")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StreamError(f"response body is not UTF-8 (byte offset {e.start})") from e
        new = restore_json(text, self.WHOLE, self.restorer)
        if new is None:
            try:
                json.loads(text)
            except ValueError as e:
                raise StreamError("response body is neither a stream nor valid JSON") from e
            return body
        self.events_changed += 1
        return new.encode("utf-8")

    def quiet(self) -> bool:
        # Nothing passes unparsed before the first chunk was read (it names the model
        # and response for synthetic chunks, and its line end theirs), nor in a body
        # that is one JSON document.
        return self.shape is Shape.STREAM and self._read_first and super().quiet()

    # -- one chunk ---------------------------------------------------------------------------

    def on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        if self._eol is None:  # the first chunk's line end is the one synthetic chunks use
            self._eol = "\n" if ev.raw.endswith(b"\n\n") and not ev.raw.endswith(b"\r\n\r\n") else "\r\n"
        pre, new = self.chunk(data)
        out = [self.frame(s) for s in pre]
        out.append(ev.raw if new is None else ev.with_data(new))
        return out

    def frame(self, data: str) -> bytes:
        """A synthetic chunk as an event of this stream."""
        eol = self._eol or "\r\n"
        return f"data: {data}{eol}{eol}".encode()

    def chunk(self, data: str) -> tuple[list[str], str | None]:
        """One chunk's JSON text: the synthetic chunks to send before it, and its new
        text (None: unchanged)."""
        self._touched = set()  # candidates whose text this chunk changed or held
        pre, new = self._chunk(data)
        new = self._cited(data, new)  # its citations, once its windows took its text (cites.py)
        if '"logprobsResult"' in data:
            fixed = self._logprobs(new if new is not None else data)
            if fixed is not None:
                self.events_changed += new is None
                new = fixed
        return pre, new

    def _logprobs(self, data: str) -> str | None:
        """Each candidate's `logprobsResult` where it must change (logprobs.py, as Chat's
        stream): a candidate whose text this chunk changed or held loses its tokens and
        their steps; the others lose the alternatives that hold a whole disguise."""
        try:
            doc = json.loads(data)
        except ValueError:
            return None
        changed = False
        for cand in self._body(doc).get("candidates") or ():
            result = cand.get("logprobsResult") if isinstance(cand, dict) else None
            if not isinstance(result, dict):
                continue
            if _index(cand) in self._touched:
                new: dict | None = {**result, "chosenCandidates": [], "topCandidates": []}
            else:
                new = gemini_whole(result, "", self.restorer)
            if new is not None and new != result:
                cand["logprobsResult"] = new
                changed = True
        return _dumps(doc) if changed else None

    def _chunk(self, data: str) -> tuple[list[str], str | None]:
        try:
            obj = json.loads(data)
        except ValueError:
            new = self.restorer.value(data)  # not JSON: still nothing passes unrestored
            return [], (new if new != data else None)
        if not isinstance(obj, dict):
            new, changed = jsonspan.transform(data, obj, GENERIC, restore_fn(self.restorer))
            return [], (new if changed else None)
        if not self._read_first:
            self._read_first = True
            body = self._body(obj)
            self._last = {k: body[k] for k in ("modelVersion", "responseId") if isinstance(body.get(k), str)}
        if "error" in obj:
            # An error chunk ends the stream (the SDK raises at it): held text first.
            self._errored = True
            self._note_end()
            pre = self.drain_chunks()
            new, changed = jsonspan.transform(data, obj, GENERIC, restore_fn(self.restorer))
            return pre, (new if changed else None)
        self._finishing = {}
        self.calls.chunk()
        marks: list[tuple[object, int]] = []
        edits = jsonspan.walk(data, obj, self._chunk_rule, self._fn, marks)
        self._track(self._body(obj))
        self._note_end()
        where = dict(marks)
        inserts = self.calls.splices(where)
        rebuild: dict = {}
        for k, cand in self._finishing.items():
            # the held tails of its text and of its calls, as parts put first into its parts
            w = self.windows.pop((k, "text"), None)
            tail = w.flush() if w is not None else ""
            parts = ([{"text": tail}] if tail else []) + self.calls.tails(k)
            self.calls.end_candidate(k)
            if not parts:
                continue
            self._touched.add(k)
            ins = _insertion(k, cand, parts, where)
            if ins is None:
                rebuild[k] = parts
            else:
                inserts.append(ins)
        if rebuild:
            doc = json.loads(jsonspan.splice(data, sorted(edits + inserts)))
            for cand in self._body(doc).get("candidates") or []:
                if isinstance(cand, dict) and _index(cand) in rebuild:
                    _merge_tail(cand, rebuild[_index(cand)])
            self.events_changed += 1
            return [], _dumps(doc)
        if inserts:
            edits = sorted(edits + inserts)
        if not edits:
            return [], None
        self.events_changed += 1
        return [], jsonspan.splice(data, edits)

    def _fn(self, v: str, rule: Rule) -> str:
        if isinstance(rule, Chan):
            w = self._window(rule.key, rule.mode)
            held = w.held
            out = w.feed(v)
            if w.held:
                self.events_held += 1
            if rule.flush:
                out += w.flush()
                del self.windows[rule.key]
            if out != v or held or w.held:
                self._touched.add(rule.key[0])
            return out
        return restore_fn(self.restorer)(v, rule)

    def _track(self, obj: dict) -> None:
        """Note which candidates are still open and whether the stream has ended."""
        if "error" in obj:
            self._errored = True
        fb = obj.get("promptFeedback")
        if isinstance(fb, dict) and fb.get("blockReason") is not None:
            self._ended = True
        cands = obj.get("candidates")
        if not isinstance(cands, list):
            return
        for c in cands:
            if not isinstance(c, dict):
                continue
            k = _index(c)
            if c.get("finishReason") is not None:
                self._open.discard(k)
                self._ended = True
            else:
                self._open.add(k)

    def _note_end(self) -> None:
        """Every candidate the stream named gave its finishReason (or the prompt was
        blocked, or an error came): the API's last chunk went by (FINISHING)."""
        if self.state is StreamState.OPEN and (self._errored or (self._ended and not self._open)):
            self.to(StreamState.FINISHING)

    # -- ends --------------------------------------------------------------------------------

    def drain_chunks(self) -> list[str]:
        """Every held tail as a synthetic chunk of its own, in candidate order: a
        candidate's text, then its calls' pieces (calls.py)."""
        out = []
        for k in sorted({key[0] for key in self.windows}, key=repr):
            w = self.windows.pop((k, "text"), None)
            tail = w.flush() if w is not None else ""
            parts = ([{"text": tail}] if tail else []) + self.calls.tails(k)
            for part in parts:
                cand = {"content": {"parts": [part], "role": "model"}, "index": k}
                out.append(_dumps(self._wrap({"candidates": [cand], **self._last})))
                self.events_changed += 1
        return out

    def drain(self) -> list[bytes]:
        return [self.frame(s) for s in self.drain_chunks()]

    def error_event(self, message: str) -> bytes:
        return self.frame(error_chunk(message))


def _insertion(k: object, cand: dict, parts: list[dict], where: dict) -> tuple[int, int, str] | None:
    """A splice that puts parts (held tails) into candidate cand as its first parts;
    None when only rebuilding can do it."""
    part = ",".join(_dumps(p) for p in parts)
    content = cand.get("content")
    if isinstance(content, dict):
        old = content.get("parts")
        if isinstance(old, list) and ("parts", k) in where:
            at = where[("parts", k)] + 1
            return (at, at, part + ("," if old else ""))
        if "parts" not in content and "content" in cand and ("content", k) in where:
            at = where[("content", k)] + 1
            return (at, at, '"parts":[' + part + "]" + ("," if content else ""))
        return None
    if "content" not in cand and ("cand", k) in where:
        at = where[("cand", k)] + 1
        return (at, at, '"content":{"parts":[' + part + '],"role":"model"}' + ("," if cand else ""))
    return None


def _merge_tail(cand: dict, parts: list[dict]) -> None:
    content = cand.get("content")
    if not isinstance(content, dict):
        content = cand["content"] = {"role": "model"}
    old = content.get("parts")
    if not isinstance(old, list):
        old = content["parts"] = []
    old[:0] = parts
