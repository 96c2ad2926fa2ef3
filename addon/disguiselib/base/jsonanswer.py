"""Whether a request asks for its answer as JSON (structured outputs), as its top-level
rule declares it (its `json_answer`; sans I/O).

A structured output (OpenAI's `response_format`/`text.format`, Anthropic's
`output_config.format`, Gemini's `responseMimeType`) is JSON text in the answer's text
channel, which the client parses (`chat.completions.parse`, `response.parsed`). Restored
as text, an original with a backslash or a quote broke it (`"owner": "CORP\\jsmith"` is an
invalid escape, `C:\\new` a line break): in such an answer the text is restored as JSON
text, originals JSON-escaped (Restorer.output, fields.ANSWER, holdback.Window.OUTPUT)."""

from __future__ import annotations

from ..wire import jsonspan


def answers_json(doc: object, root: jsonspan.Rule) -> bool:
    """Does the request doc (read with root, its top-level rule) ask for a JSON answer:
    one of the values root.json_answer names at its path ((path of keys, values) pairs,
    set on an API's top-level rule)."""
    for path, values in getattr(root, "json_answer", ()):
        v = doc
        for key in path:
            v = v.get(key) if type(v) is dict else None
        if type(v) is str and v in values:
            return True
    return False


__all__ = ["answers_json"]
