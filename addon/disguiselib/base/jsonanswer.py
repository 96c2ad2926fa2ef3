"""Whether a request asks for its answer as JSON (structured outputs), as its top-level
rule declares it (`Obj(..., json_answer=...)`, beside `prompt=` and `state=`; sans I/O).

A structured output (OpenAI's `response_format`/`text.format`, Anthropic's
`output_config.format`, Gemini's `responseMimeType`) is JSON text in the answer's text
channel, which the client parses (`chat.completions.parse`, `response.parsed`). Restored
as text, an original with a backslash or a quote broke it (`"owner": "CORP\\jsmith"` is an
invalid escape, `C:\\new` a line break): in such an answer the text is restored as JSON
text, originals JSON-escaped (Restorer.output, fields.ANSWER, holdback.Window.OUTPUT).

The one reading of the declaration: masking (the request's), and a stored answer that
says its format itself (a Responses object's `text.format`, read with the request's
table: the same member at the same path)."""

from __future__ import annotations

from ..wire import jsonspan


def answers_json(doc: object, root: jsonspan.Rule) -> bool:
    """Does doc (read with root, an API's top-level rule) ask for a JSON answer: one of
    the values root.json_answer names at its path, or, in a member that is a request of
    its own (Code Assist's `request`), one its rule names there."""
    if _asks(doc, root.json_answer):
        return True
    fields = root.fields if isinstance(root, jsonspan.Obj) else {}
    if type(doc) is dict:
        for k, v in doc.items():
            rule = fields.get(k)
            if rule is not None and rule.json_answer and _asks(v, rule.json_answer):
                return True
    return False


def _asks(doc: object, declared: jsonspan.JsonAnswer) -> bool:
    for path, values in declared:
        v = doc
        for key in path:
            v = v.get(key) if type(v) is dict else None
        if type(v) is str and v in values:
            return True
    return False


__all__ = ["answers_json"]
