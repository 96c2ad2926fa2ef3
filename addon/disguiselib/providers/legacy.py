"""OpenAI's legacy Completions (`/v1/completions`, `prompt` -> `choices[].text`) and
Embeddings (`/v1/embeddings`, `input` -> vectors). Both still carry conversation content
and are served by many OpenAI-compatible hosts (vLLM, llama.cpp, OpenRouter), so their
requests are masked like their siblings'.

Completions: https://platform.openai.com/docs/api-reference/completions (a stream is
data-only chunks `{"choices":[{"text", "index", "finish_reason"}]}`, then `[DONE]`).
Embeddings: https://platform.openai.com/docs/api-reference/embeddings (nothing in the
answer to restore: vectors, or base64 vectors that must not be touched).
"""

from __future__ import annotations

import json

from ..core import jsonspan
from ..core.holdback import Window
from ..core.jsonspan import PROSE, VALUES, Arr, Obj, Rule
from ..core.rules import Restorer
from ..core.sse import Event
from .fields import GENERIC, ID, MEDIA, META
from .restore import restore_fn
from .stream import SSEStream, StreamState
from .wirespec import SSE, WireSpec

_SKIPPED = (
    "model", "stream", "n", "best_of", "temperature", "top_p", "max_tokens", "seed", "logprobs",
    "echo", "presence_penalty", "frequency_penalty", "logit_bias", "stream_options",
    "encoding_format", "dimensions",
)  # fmt: skip

# `prompt` / `input`: a string, a list of strings, or token arrays (numbers: untouched).
COMPLETIONS_REQUEST = Obj(
    {**dict.fromkeys(_SKIPPED, META), "prompt": VALUES, "suffix": VALUES, "stop": VALUES}, default=GENERIC
)
EMBEDDINGS_REQUEST = Obj({**dict.fromkeys(_SKIPPED, META), "input": VALUES}, default=GENERIC)

_CHOICE = Obj({"index": META, "finish_reason": META, "logprobs": META, "text": PROSE}, default=GENERIC)
COMPLETIONS_RESPONSE = Obj(
    {**dict.fromkeys(("object", "created", "model", "system_fingerprint", "usage"), META), "id": ID,
     "choices": Arr(_CHOICE)},
    default=GENERIC,
)  # fmt: skip
# Vectors (or base64 strings of them) and usage: restoring a disguise inside base64
# would corrupt the vector, and nothing the model wrote is in there.
EMBEDDINGS_RESPONSE: Rule = Obj({"error": VALUES}, default=MEDIA)


OBJECT = "text_completion"  # a completion's and a chunk's `object`


def view(doc: dict, ev, b) -> bool:
    """A view's reader of one chunk (inspect/sseview.Builder): per choice its `text`."""
    choices = doc.get("choices")
    if not isinstance(choices, list) or doc.get(SPEC.type_member) not in SPEC.events:
        return False
    notes = []
    for ci, ch in enumerate(choices):
        if not isinstance(ch, dict):
            continue
        idx = ch.get("index", ci)
        if ch.get("finish_reason"):
            notes.append(f"choice {idx} finish_reason {ch['finish_reason']}")
        if isinstance(ch.get("text"), str) and ch["text"]:
            b.add(ev, f"choice {idx} text", "text", ch["text"], f"choices[{ci}].text")
    ev.note = "; ".join(notes)
    return True


# The legacy Completions stream's wire vocabulary (providers/wirespec.py): chunks told
# by their `object`, ended by `data: [DONE]` as Chat's.
SPEC = WireSpec(
    "openai.completions",
    ("legacy",),
    (SSE,),
    events=frozenset({OBJECT}),
    type_member="object",
    done="[DONE]",
    stop_members=("finish_reason",),
    view=view,
)


class CompletionsStream(SSEStream):
    """A legacy Completions stream: one window per choice `index`; a choice's held tail
    rides in the chunk that carries its `finish_reason`, the rest before `[DONE]`."""

    TERMINAL = SPEC.ends
    MARKERS = (*SPEC.markers, b'"error"')

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.windows: dict[int, Window] = {}
        self.last: dict = {}

    def on_event(self, ev: Event) -> list[bytes]:
        data = ev.data
        if data is None:
            return [ev.raw]
        if data.strip() == SPEC.done:
            self.to(StreamState.FINISHING)
            out = self.drain()
            out.append(ev.raw)
            return out
        try:
            obj = json.loads(data)
        except ValueError:
            return self.not_object(ev)
        if isinstance(obj, dict) and "error" in obj:
            self.to(StreamState.FINISHING)  # the SDK raises at it: nothing comes after
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list):
            new = _restore(data, obj, GENERIC, self.restorer)
            return [ev.raw if new is None else ev.with_data(new)]
        self.last = {k: obj[k] for k in ("id", "object", "created", "model") if k in obj}
        # The strings jsonspan visits come in document order: one `text` per choice.
        plan = [
            (c.get("index", 0), c.get("finish_reason") is not None)
            for c in choices
            if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        restore = restore_fn(self.restorer)
        it = iter(plan)

        def fn(v: str, rule: Rule) -> str:
            if not rule.prose:
                return restore(v, rule)
            idx, finishing = next(it, (0, False))
            w = self.windows.get(idx)
            if w is None:
                w = self.windows[idx] = Window(self.restorer, Window.TEXT)
            out = w.feed(v)
            if finishing:
                out += w.flush()
                del self.windows[idx]
            return out

        new, changed = jsonspan.transform(data, obj, COMPLETIONS_RESPONSE, fn)
        if not changed:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(new)]

    def drain(self) -> list[bytes]:
        out = []
        for idx in sorted(self.windows):
            tail = self.windows[idx].flush()
            if tail:
                chunk = {**self.last, "choices": [{"text": tail, "index": idx, "logprobs": None,
                                                   "finish_reason": None}]}  # fmt: skip
                out.append(f"data: {json.dumps(chunk)}\n\n".encode())  # ASCII: surrogate-safe
        self.windows.clear()
        return out

    def error_event(self, message: str) -> bytes:
        err = json.dumps({"error": {"message": message, "type": "disguise_error"}})
        return f"data: {err}\n\ndata: {SPEC.done}\n\n".encode()


def _restore(data: str, obj: object, rule: Rule, r: Restorer) -> str | None:
    new, changed = jsonspan.transform(data, obj, rule, restore_fn(r))
    return new if changed else None
