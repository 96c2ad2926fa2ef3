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

from ...base.channels import channel_index
from ...base.exempt import COUNTERS
from ...base.fields import GENERIC, ID, META
from ...base.holdback import Window
from ...base.logprobs import completion_chunk
from ...base.restore import dumps, restore_fn
from ...base.stream import SSEStream, StreamState
from ...base.wirespec import SSE, WireSpec
from ...rules.rules import Restorer
from ...wire import jsonspan
from ...wire.jsonspan import PROSE, VALUES, Arr, Obj, Rule, Skip
from ...wire.sse import Event

_SKIPPED = (
    "model", "stream", "n", "best_of", "temperature", "top_p", "max_tokens", "seed", "logprobs",
    "echo", "presence_penalty", "frequency_penalty", "logit_bias", "stream_options",
    "encoding_format", "dimensions",
)  # fmt: skip

# `prompt` / `input`: a string, a list of strings, or token arrays (numbers: untouched).
# `user`: an end-user identifier, masked like any value (docs/fields.md).
COMPLETIONS_REQUEST = Obj(
    {**dict.fromkeys(_SKIPPED, META), "prompt": VALUES, "suffix": VALUES, "stop": VALUES, "user": VALUES},
    default=GENERIC,
)
EMBEDDINGS_REQUEST = Obj({**dict.fromkeys(_SKIPPED, META), "input": VALUES, "user": VALUES}, default=GENERIC)

_CHOICE = Obj({"index": META, "finish_reason": META, "logprobs": META, "text": PROSE}, default=GENERIC)
COMPLETIONS_RESPONSE = Obj(
    {**dict.fromkeys(("object", "created", "model", "system_fingerprint"), META), "usage": COUNTERS, "id": ID,
     "choices": Arr(_CHOICE)},
    default=GENERIC,
)  # fmt: skip
# Vectors (or base64 strings of them) and usage: restoring a disguise inside base64
# would corrupt the vector, and nothing the model wrote is in there.
# vectors (arrays of numbers, or base64 of floats) and their counters: as they came
EMBEDDINGS_RESPONSE: Rule = Obj({"error": VALUES}, default=Skip("media", whole=True))


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


# The legacy Completions stream's wire vocabulary (base/wirespec.py): chunks told
# by their `object`, ended by `data: [DONE]` as Chat's.
SPEC = WireSpec(
    "openai.completions",
    ("apis.openai.legacy",),
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
        # per choice with logprobs: [characters of text received, sent, where the text
        # starts in text_offset's count (None until an offset is seen)]
        self.counts: dict[int, list] = {}

    def quiet(self) -> bool:
        """Once a restoration changed a choice's length, every later chunk's offsets move:
        each is parsed."""
        return super().quiet() and all(c[0] == c[1] for c in self.counts.values())

    def on_event(self, ev: Event) -> list[bytes]:
        early = self.done_line(ev, SPEC.done)
        if early is not None:
            return early
        data = ev.data or ""  # not None: done_line passed those on
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
            (channel_index(c.get("index", 0)), c.get("finish_reason") is not None)
            for c in choices
            if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        restore = restore_fn(self.restorer)
        it = iter(plan)
        texts: list[tuple[str, str, bool]] = []  # per choice text: what came, what goes, touched

        def fn(v: str, rule: Rule) -> str:
            if not rule.prose:
                return restore(v, rule)
            idx, finishing = next(it, (0, False))
            w = self.windows.get(idx)
            if w is None:
                w = self.windows[idx] = Window(self.restorer, Window.TEXT)
            held = w.held
            out = w.feed(v)
            if finishing:
                out += w.flush()
                del self.windows[idx]
            texts.append((v, out, bool(out != v or held or w.held)))
            return out

        new, changed = jsonspan.transform(data, obj, COMPLETIONS_RESPONSE, fn)
        if self.counts or '"tokens"' in data:
            fixed = self._logprobs(new, texts)
            if fixed is not None:
                new, changed = fixed, True
        if not changed:
            return [ev.raw]
        self.events_changed += 1
        return [ev.with_data(new)]

    def _logprobs(self, data: str, texts: list[tuple[str, str, bool]]) -> str | None:
        """The chunk (restored text: data) with each choice's logprobs laid over the text
        it sends (logprobs.completion_chunk); None when none changes."""
        doc = json.loads(data)
        changed = False
        it = iter(texts)
        for c in doc.get("choices") or ():
            if not isinstance(c, dict) or not isinstance(c.get("text"), str):
                continue
            v, out, touched = next(it, ("", "", False))
            idx = channel_index(c.get("index", 0))
            lp = c.get("logprobs")
            st = self.counts.get(idx)
            if st is None:
                if not isinstance(lp, dict):
                    continue
                st = self.counts[idx] = [0, 0, None]
            if isinstance(lp, dict) and isinstance(lp.get("tokens"), list):
                offs = lp.get("text_offset")
                if st[2] is None and isinstance(offs, list) and offs and type(offs[0]) is int:
                    st[2] = offs[0] - st[0]
                start = None if st[2] is None else st[2] + st[1]
                new = completion_chunk(lp, out, touched, st[1] - st[0], start, self.restorer)
                if new != lp:
                    c["logprobs"] = new
                    changed = True
            st[0] += len(v)
            st[1] += len(out)
        return dumps(doc) if changed else None

    def drain(self) -> list[bytes]:
        out = []
        for idx in sorted(self.windows):
            tail = self.windows[idx].flush()
            if tail:
                st = self.counts.get(idx)
                lp = None
                if st is not None:  # the choice has logprobs: one entry for the tail
                    start = None if st[2] is None else st[2] + st[1]
                    lp = {"tokens": [tail], "token_logprobs": [None], "top_logprobs": [None], "text_offset": [start]}
                    st[1] += len(tail)
                chunk = {**self.last, "choices": [{"text": tail, "index": idx, "logprobs": lp,
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
