"""Gemini Code Assist (`cloudcode-pa.googleapis.com/v1internal`): the API Gemini CLI talks
to when its user logs in with Google (sans I/O).

Its generate methods carry the Gemini API's bodies in a wrapper (gemini-cli's
`packages/core/src/code_assist/converter.ts`):

    POST /v1internal:generateContent, :streamGenerateContent?alt=sse
        {"model", "project", "user_prompt_id", "request": GenerateContentRequest + "session_id"}
    POST /v1internal:countTokens
        {"request": {"model", "contents"}}

and answer `{"response": GenerateContentResponse, "traceId"}`, whole and as each SSE
event (`{"totalTokens"}` for countTokens). So the request is masked by gemini.py's table
under `request`, and the stream is GeminiStream reading each event's `response`: a
window per candidate's text, thoughts and signatures as they came, held tails in a
synthetic event of the same wrapper (gemini-cli reads a chunk without `response` as
one with no candidates). The other v1internal methods (loadCodeAssist, onboardUser,
listExperiments, ...) carry settings, not prompts: they are unknown endpoints, scanned.
"""

from __future__ import annotations

import re

from ...base.exempt import MODEL
from ...base.fields import ID, META
from ...base.wirespec import SSE, Provider, WireSpec
from ...wire.jsonspan import Rule
from .gemini import _GENERATE_FIELDS, COLON, GENERATE_RESPONSE, JSON_ANSWER, PROMPT, _ObjectOrArray, obj
from .stream import GeminiStream
from .stream import view as gemini_view

# Google's Code Assist host; the user's OAuth token in Authorization (google-auth-library)
PROVIDER = Provider("google.code_assist", hosts=("cloudcode-pa.googleapis.com",), headers=frozenset({"authorization"}))
PATH = re.compile(r"/v1internal" + COLON + r"(?:generateContent|streamGenerateContent|countTokens)\Z")

# the project is the user's Google Cloud project (the API's to resolve); the prompt's id
# and the session's are gemini-cli's, random
REQUEST = obj(
    {"model": MODEL, "project": ID, "user_prompt_id": ID,
     "request": obj({**_GENERATE_FIELDS, "session_id": ID}, prompt=PROMPT, json_answer=JSON_ANSWER)}
)  # fmt: skip
EVENT = obj({"response": GENERATE_RESPONSE, "traceId": ID, "totalTokens": META})
RESPONSE: Rule = _ObjectOrArray(EVENT)  # a whole answer (or a stream that arrived whole)


def view(doc: dict, ev, b) -> bool:  # noqa: ANN001 - inspect/sseview.Builder's reader
    """A view's reader of one Code Assist event: its `response` read as Gemini's chunk."""
    inner = doc.get("response")
    return isinstance(inner, dict) and gemini_view(inner, ev, b)


# Its stream's vocabulary (base/wirespec.py): Gemini's chunks, each under `response`
# beside a `traceId`.
SPEC = WireSpec(
    "google.code_assist", ("apis.google.codeassist",), (SSE,), type_member=None, members=frozenset({"traceId"}),
    stop_members=("finishReason", "blockReason"), view=view,
)  # fmt: skip


class CodeAssistStream(GeminiStream):
    """`:streamGenerateContent?alt=sse`: Gemini's stream, each event's GenerateContentResponse
    under `response`; an event it makes (a held tail) carries the last `traceId` seen. An
    error event (`{"error": ...}`, as Google's APIs send it) is not wrapped."""

    WHOLE = RESPONSE
    _trace: str | None = None

    def _body(self, chunk: object) -> dict:
        if not isinstance(chunk, dict):
            return {}
        if isinstance(chunk.get("traceId"), str):
            self._trace = chunk["traceId"]
        inner = chunk.get("response")
        return inner if isinstance(inner, dict) else {}

    def _wrap(self, response: dict) -> dict:
        return {"response": response} if self._trace is None else {"response": response, "traceId": self._trace}

    def _wrap_rule(self, rule: Rule) -> Rule:
        return obj({"response": rule, "traceId": ID})
