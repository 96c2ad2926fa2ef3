"""Request masking: a JSON body through its API's field rules (sans I/O)."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Protocol

from ..core import jsonspan
from ..core.rules import Rules, Session
from ..errors import MaskError
from .fields import media_of


class _Api(Protocol):
    """What masking needs of an API (registry.Api): its table, or its body model."""

    @property
    def request_rule(self) -> jsonspan.Rule | None: ...

    @property
    def request_body(self) -> Any: ...


def present_placeholders(s: str, rules: Rules) -> frozenset[str]:
    """Placeholder-shaped strings ("[EMAIL_3]") already in a request's JSON text s,
    also where the client wrote them with \\u escapes."""
    names = tuple(p.name for p in rules.mappings.patterns)
    if not names or "[" not in s and "\\u" not in s:
        return frozenset()
    rx = _placeholder_rx(names)
    found = set(rx.findall(s))
    if "\\u" in s:
        found.update(rx.findall(_ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), s)))
    return frozenset(found)


@functools.lru_cache(maxsize=8)
def _placeholder_rx(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\[(?:" + "|".join(map(re.escape, names)) + r")_[1-9][0-9]*\]")


_ASCII_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])")


def mask_request_body(raw: bytes, api: _Api, rules: Rules, content_type: str = "") -> tuple[bytes, Session]:
    """Mask a request body of api: one JSON document read with its request_rule, or a
    body with a model of its own (api.request_body: the batch upload). Raises MaskError,
    or NotTransformed for a body the API's route does not transform after all."""
    if api.request_body is not None:
        return api.request_body.mask(raw, content_type, rules)
    return mask_body(raw, api.request_rule, rules)


def mask_body(raw: bytes, root: jsonspan.Rule | None, rules: Rules) -> tuple[bytes, Session]:
    """Mask a request body. Returns the new body (raw itself if nothing changed) and the
    session holding this request's placeholders, numbered around any placeholder string
    the request already holds. root None: a request whose body the provider does not
    read as model input (a retrieval); it goes out as it came. Raises MaskError."""
    if root is None:
        return raw, Session()
    s, doc = jsonspan.parse(raw)
    if not isinstance(doc, dict):
        raise MaskError("body is not a JSON object")
    session = Session(present_placeholders(s, rules))
    fn = mask_fn(rules, session)
    try:
        new, changed = jsonspan.transform(s, doc, root, fn)
    except (KeyError, IndexError, TypeError) as e:
        # The raw walk and json.loads disagree only where an object repeats a key with
        # values of different shapes: which one the provider reads is not ours to guess.
        raise MaskError("body repeats a key with values of different shapes") from e
    except RecursionError as e:
        raise MaskError("a string holds JSON nested too deeply to be read") from e
    return (new.encode("utf-8") if changed else raw), session


def mask_fn(rules: Rules, session: Session) -> jsonspan.TransformFn:
    """fn for jsonspan.transform: masks a string the way the model will read it.

    Wherever a string holds JSON text (tool arguments, and any value that is a JSON
    object or array: a tool_result holding a JSON document, say), the provider's model
    reads that JSON decoded, so an original spelled with escapes (`C:\\\\Users`,
    `M\\u00fcller`) must be found decoded: the text is masked as JSON, keys and values,
    every other byte of it kept. JSON text that does not parse (arguments cut short) is
    masked literal by literal, decoded. A string stored in a codec (`rule.media`: base64
    or a data: URL of text) is decoded, masked (as JSON when its type is JSON) and
    encoded again. Anything else is masked as text. fields.texts() reads a string the
    same way for the leak guard and the audit (tests/providers/test_field_parity.py).
    """

    def text(v: str) -> str:
        return rules.mask(v, session)

    def spans(v: str, context: tuple[str, str] | None = None) -> jsonspan.Spans:
        return jsonspan.Spans(rules.mask_spans(v, session, context))

    # In user-defined JSON (tool input, JSON text in a string) a value is read with its
    # key: `{"aws_secret_access_key": "..."}` must meet the rules anchored on the key.
    # The walk hands over an object's key right before that key's string value.
    key: list[str | None] = [None]

    def fn(v: str, rule: jsonspan.Rule) -> str | jsonspan.Spans:
        if rule is jsonspan.KEY:
            key[0] = v
            return spans(v)
        k, key[0] = key[0], None
        if rule.media is not None or rule.kind == "unknown":
            codec, declared = media_of(v, rule)
            if codec is not None:
                got = codec.decode(v)
                if got is None and declared:
                    return v  # binary media: passes as it came
                if got is not None and (declared or codec.decoded(got[1])):
                    as_rule = jsonspan.JSON_TEXT if codec.is_json() else jsonspan.VALUES
                    t = got[0]
                    new = as_text(t, fn(t, as_rule))
                    return v if new == t else codec.encode(new, got[1])
        if rule.json_text or jsonspan.looks_like_json(v):
            try:
                inner = jsonspan.loads(v)
            except ValueError:
                if rule.json_text or jsonspan.looks_like_json(v):
                    return jsonspan.transform_loose(v, text)
                return text(v)
            return jsonspan.Spans(jsonspan.walk(v, inner, jsonspan.USER, fn))
        if k is not None:
            return spans(v, (json.dumps(k, ensure_ascii=False) + ': "', '"'))
        return spans(v)

    return fn


def as_text(v: str, new: str | jsonspan.Spans) -> str:
    return jsonspan.splice(v, list(new)) if isinstance(new, jsonspan.Spans) else new
