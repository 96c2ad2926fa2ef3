"""OpenAI's Assistants (beta) run stream: its wire vocabulary and its stream (sans I/O).

A run created with `stream: true` (`POST /v1/threads/{id}/runs`, `/v1/threads/runs`,
`/v1/threads/{id}/runs/{id}/submit_tool_outputs`) answers with SSE events named by their
`event:` line (the `openai` SDK's `types/beta/assistant_stream_event.py`):
`thread.created`, `thread.run.*`, `thread.run.step.*`, `thread.message.*`, `error`, and
`done` (`data: [DONE]`), the stream's last. Whole objects (a run, a step, a message) are
restored with apis/openai/stored.py's tables. The deltas carry the text in pieces:
`thread.message.delta`'s `delta.content[].text.value` (and `refusal`), one window per
message id and content `index`; `thread.run.step.delta`'s
`delta.step_details.tool_calls[].function.arguments` (JSON text, restored escaped) and
`code_interpreter.input`, one window per step id and tool call `index`. Any other event
(a message or a step completed, the run requiring action) first gets every held tail as
synthetic deltas of its channel, so the client has the whole text before the object that
repeats it.
"""

from __future__ import annotations

import json

from ...base.fields import GENERIC, ID, META, obj
from ...base.holdback import Window, window_for
from ...base.restore import restore_fn
from ...base.stream import SSEStream
from ...base.wirespec import SSE, WireSpec
from ...wire import jsonspan
from ...wire.jsonspan import JSON_TEXT, PROSE, VALUES, Arr, Obj, Rule, Typed
from ...wire.sse import Event
from .stored import _ANNOTATIONS, RUN, RUN_STEP, THREAD_MESSAGE

MESSAGE_DELTA_EVENT = "thread.message.delta"
STEP_DELTA_EVENT = "thread.run.step.delta"
_RUN = ("created", "queued", "in_progress", "requires_action", "completed", "incomplete", "failed",
        "cancelling", "cancelled", "expired")  # fmt: skip
_STEP = ("created", "in_progress", "delta", "completed", "failed", "cancelled", "expired")
_MESSAGE = ("created", "in_progress", "delta", "completed", "incomplete")
EVENTS = frozenset(
    {"thread.created", "error", "done"}
    | {f"thread.run.{e}" for e in _RUN}
    | {f"thread.run.step.{e}" for e in _STEP}
    | {f"thread.message.{e}" for e in _MESSAGE}
)


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one event's data (inspect/sseview.Builder): a message delta's
    text per message and content index, a step delta's arguments and code input per step
    and tool call index; a whole object is noted by its status."""
    obj, oid = doc.get("object"), doc.get("id")
    delta = doc.get("delta")
    delta = delta if isinstance(delta, dict) else {}
    if obj == MESSAGE_DELTA_EVENT:
        for i, p in enumerate(delta.get("content") or ()):
            if not isinstance(p, dict):
                continue
            idx, t = p.get("index", i), p.get("text")
            if isinstance(t, dict) and isinstance(t.get("value"), str) and t["value"]:
                b.add(ev, f"message {oid} part {idx}", "text", t["value"], f"delta.content[{i}].text.value")
            if isinstance(p.get("refusal"), str) and p["refusal"]:
                b.add(ev, f"message {oid} part {idx} refusal", "text", p["refusal"], f"delta.content[{i}].refusal")
        return True
    if obj == STEP_DELTA_EVENT:
        details = delta.get("step_details")
        details = details if isinstance(details, dict) else {}
        for i, c in enumerate(details.get("tool_calls") or ()):
            if not isinstance(c, dict):
                continue
            idx, f, ci = c.get("index", i), c.get("function"), c.get("code_interpreter")
            if isinstance(f, dict) and isinstance(f.get("arguments"), str) and f["arguments"]:
                path = f"delta.step_details.tool_calls[{i}].function.arguments"
                b.add(ev, f"step {oid} call {idx}", "json", f["arguments"], path)
            if isinstance(ci, dict) and isinstance(ci.get("input"), str) and ci["input"]:
                path = f"delta.step_details.tool_calls[{i}].code_interpreter.input"
                b.add(ev, f"step {oid} call {idx} input", "text", ci["input"], path)
        return True
    if isinstance(obj, str) and obj.startswith("thread") and "status" in doc:
        ev.note = f"{obj} {doc['status']}"
        return True
    return False


# The Assistants stream's wire vocabulary (base/wirespec.py): events told by their
# `event:` line (their data's `object` says the object, not the event), ended by `done`.
SPEC = WireSpec(
    "openai.assistants",
    ("apis.openai.assistants",),
    (SSE,),
    events=EVENTS,
    terminal=frozenset({"done"}),
    error_event="error",
    type_member=None,
    done="[DONE]",
    view=view,
)

# A message delta (`MessageDeltaEvent`): content parts by `index`.
_PART_DELTA = obj({"index": META, "text": obj({"value": PROSE, "annotations": _ANNOTATIONS}), "refusal": PROSE,
                    "image_file": obj({"file_id": ID, "detail": META}),
                    "image_url": obj({"url": GENERIC, "detail": META})})  # fmt: skip
MESSAGE_DELTA = Obj({"id": ID, "object": META, "delta": obj({"role": META, "content": Arr(_PART_DELTA)})},
                    default=GENERIC)  # fmt: skip
# A run step delta (`RunStepDeltaEvent`): tool calls by `index`.
_CALL_DELTA = obj({"index": META, "id": ID,
                    "function": obj({"name": VALUES, "arguments": JSON_TEXT, "output": VALUES}),
                    "code_interpreter": obj({"input": PROSE, "outputs": Arr(obj({"index": META, "logs": VALUES,
                                                                                    "image": obj({"file_id": ID})}))}),
                    "file_search": GENERIC})  # fmt: skip
STEP_DELTA = Obj({"id": ID, "object": META,
                  "delta": obj({"step_details": obj({"message_creation": obj({"message_id": ID}),
                                                       "tool_calls": Arr(_CALL_DELTA)})})},
                 default=GENERIC)  # fmt: skip


# One event's data told by its `object` (for those who read a recorded stream without
# its `event:` lines: the audit, the views).
STREAM_EVENT: Rule = Typed({MESSAGE_DELTA_EVENT: MESSAGE_DELTA, STEP_DELTA_EVENT: STEP_DELTA, "thread.run": RUN,
                            "thread.run.step": RUN_STEP, "thread.message": THREAD_MESSAGE},
                           GENERIC, field="object")  # fmt: skip


def event_rule(name: str | None) -> Rule:
    """The table of one event's data, by its `event:` name."""
    if name == MESSAGE_DELTA_EVENT:
        return MESSAGE_DELTA
    if name == STEP_DELTA_EVENT:
        return STEP_DELTA
    if name is None:
        return GENERIC
    if name.startswith("thread.run.step."):
        return RUN_STEP
    if name.startswith("thread.run."):
        return RUN
    if name.startswith("thread.message."):
        return THREAD_MESSAGE
    return GENERIC


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "disguise_error"}}).encode()


class AssistantStream(SSEStream):
    """An Assistants run stream: a window per (message id, content index, kind) and per
    (step id, tool call index, kind); held tails go out before any event that is not a
    delta, and before `done`."""

    TERMINAL = SPEC.ends
    MARKERS = (*SPEC.markers, b"event: error", b"event:error")

    def on_event(self, ev: Event) -> list[bytes]:
        early = self.done_line(ev, SPEC.done)
        if early is not None:
            return early
        data = ev.data or ""  # not None: done_line passed those on
        try:
            obj = json.loads(data)
        except ValueError:
            return self.not_object(ev)
        if not isinstance(obj, dict):
            return self.not_object(ev)
        if ev.name == MESSAGE_DELTA_EVENT or ev.name == STEP_DELTA_EVENT:
            return self._delta(ev, data, obj)
        out = self.drain()
        new, changed = jsonspan.transform(data, obj, event_rule(ev.name), restore_fn(self.restorer))
        if changed:
            self.events_changed += 1
            out.append(ev.with_data(new))
        else:
            out.append(ev.raw)
        return out

    def _delta(self, ev: Event, data: str, obj: dict) -> list[bytes]:
        oid = obj.get("id")
        delta = obj.get("delta")
        texts: list[tuple] = []  # channel keys of the prose strings, in document order
        jsons: list[tuple] = []  # and of the JSON texts
        if ev.name == MESSAGE_DELTA_EVENT:
            rule: Rule = MESSAGE_DELTA
            parts = delta.get("content") if isinstance(delta, dict) else None
            for i, p in enumerate(parts if isinstance(parts, list) else ()):
                if not isinstance(p, dict):
                    continue
                idx = p.get("index", i)
                for k, v in p.items():
                    if k == "text" and isinstance(v, dict) and isinstance(v.get("value"), str):
                        texts.append(("m", oid, idx, "text"))
                    elif k == "refusal" and isinstance(v, str):
                        texts.append(("m", oid, idx, "refusal"))
        else:
            rule = STEP_DELTA
            details = delta.get("step_details") if isinstance(delta, dict) else None
            calls = details.get("tool_calls") if isinstance(details, dict) else None
            for i, c in enumerate(calls if isinstance(calls, list) else ()):
                if not isinstance(c, dict):
                    continue
                idx = c.get("index", i)
                f, ci = c.get("function"), c.get("code_interpreter")
                if isinstance(f, dict) and isinstance(f.get("arguments"), str):
                    jsons.append(("s", oid, idx, "arguments"))
                if isinstance(ci, dict) and isinstance(ci.get("input"), str):
                    texts.append(("s", oid, idx, "input"))
        ti, ji = iter(texts), iter(jsons)
        restore = restore_fn(self.restorer)
        held = False

        def fn(v: str, r: Rule) -> str:
            nonlocal held
            if r.json_text:
                key, mode = next(ji, None), Window.JSON
            elif r.prose:
                key, mode = next(ti, None), Window.TEXT
            else:
                return restore(v, r)
            if key is None:  # not where the plan says: restored whole
                return restore(v, r)
            w = window_for(self.windows, key, self.restorer, mode)  # StreamError past MAX_CHANNELS
            before = w.held
            out = w.feed(v)
            held = held or bool(before or w.held)
            return out

        new, changed = jsonspan.transform(data, obj, rule, fn)
        if not changed:
            return [ev.raw]
        if held:
            self.events_held += 1
        self.events_changed += 1
        return [ev.with_data(new)]

    def drain(self) -> list[bytes]:
        out = []
        for key, w in self.windows.items():
            tail = w.flush() if w is not None else ""
            if not tail:
                continue
            src, oid, idx, kind = key
            if src == "m":
                part = {"index": idx, "type": "text", "text": {"value": tail}} if kind == "text" else \
                    {"index": idx, "type": "refusal", "refusal": tail}  # fmt: skip
                doc = {"id": oid, "object": MESSAGE_DELTA_EVENT, "delta": {"content": [part]}}
                name = MESSAGE_DELTA_EVENT
            else:
                call = {"index": idx, "type": "function", "function": {"arguments": tail}} if kind == "arguments" \
                    else {"index": idx, "type": "code_interpreter", "code_interpreter": {"input": tail}}  # fmt: skip
                doc = {"id": oid, "object": STEP_DELTA_EVENT,
                       "delta": {"step_details": {"type": "tool_calls", "tool_calls": [call]}}}  # fmt: skip
                name = STEP_DELTA_EVENT
            out.append(f"event: {name}\ndata: {json.dumps(doc)}\n\n".encode())  # ASCII: surrogate-safe
        self.windows.clear()
        return out

    def error_event(self, message: str) -> bytes:
        return f"event: error\ndata: {error_body(message).decode()}\n\nevent: done\ndata: {SPEC.done}\n\n".encode()
