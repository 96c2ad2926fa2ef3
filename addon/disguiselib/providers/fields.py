"""The field vocabulary every provider shares: the fail-closed generic rule, the API
envelope keys, JSON Schema, shape and vocabulary dispatch (sans I/O)."""

from __future__ import annotations

from ..core.jsonspan import SKIP, USER, VALUES, Arr, Obj, Rule, _Skip

# Keys that are the API's own envelope wherever they appear: never masked or restored.
_ENVELOPE = frozenset(
    {
        "type", "id", "tool_use_id", "signature", "cache_control", "media_type",
        "encrypted_content", "encrypted_index", "file_id", "role", "request_id",
        "call_id", "item_id", "response_id", "previous_response_id", "status", "object",
    }
)  # fmt: skip


class _Generic(Rule):
    """Unknown shapes fail closed: every string value is masked, except the envelope
    keys above and the `data` of anything not typed "text" (base64, redacted thinking)."""

    string = True

    def __init__(self, skip_data: bool) -> None:
        self.skip_data = skip_data

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict) and "data" in value:
            return _GENERIC_NODATA if value.get("type") != "text" else _GENERIC
        return _GENERIC

    def child(self, key: str | int) -> Rule:
        if key in _ENVELOPE or (key == "data" and self.skip_data):
            return SKIP
        return _GENERIC


_GENERIC = _Generic(False)
_GENERIC_NODATA = _Generic(True)
GENERIC: Rule = _GENERIC


class _Media(_Skip):
    """Base64 media (audio, images) in a field the API names: never masked or restored,
    and not read by the leak guard of a realtime client event either (random base64
    can look like a pattern's match; what it encodes is not text)."""

    def __repr__(self) -> str:
        return "MEDIA"


MEDIA: Rule = _Media()


def _obj(fields: dict[str, Rule]) -> Obj:
    base = {k: SKIP for k in ("type", "cache_control")}
    base.update(fields)
    return Obj(base, default=GENERIC)


class Shape(Rule):
    """A value whose rule depends on its JSON shape: an object, an array, or anything
    else (a string, most often)."""

    string = True

    def __init__(self, obj: Rule, arr: Rule, other: Rule = VALUES) -> None:
        self._obj, self._arr, self._other = obj, arr, other

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict):
            return self._obj.resolve(value)
        if isinstance(value, list):
            return self._arr.resolve(value)
        return self._other.resolve(value)


class Vocabulary(Rule):
    """A string that is either one of the API's own words ("auto", "none", ...), left
    as it is, or anything else, masked (a tool name where the API expects an object)."""

    string = True

    def __init__(self, words: tuple[str, ...], other: Rule = VALUES) -> None:
        self._words = frozenset(words)
        self._other = other

    def resolve(self, value: object) -> Rule:
        return SKIP if value in self._words else self._other.resolve(value)


# JSON Schema (tool input_schema): property names, required, enum values, descriptions.
# Keywords whose values are JSON Schema vocabulary ("type": "string") stay as they are.
SCHEMA = Obj({}, default=VALUES)
_PROPS = Obj({}, default=SCHEMA, keys=True)
SCHEMA.fields.update(
    {
        "type": SKIP, "format": SKIP, "$schema": SKIP, "$id": SKIP,
        "properties": _PROPS, "patternProperties": _PROPS, "$defs": _PROPS,
        "definitions": _PROPS, "dependentSchemas": _PROPS,
        # `items` and `additionalItems` in their tuple form are arrays of schemas;
        # `dependencies` maps a property name to names (array) or to a schema.
        "items": Shape(SCHEMA, Arr(SCHEMA)), "additionalProperties": SCHEMA,
        "additionalItems": Shape(SCHEMA, Arr(SCHEMA)),
        "dependentRequired": Obj({}, default=VALUES, keys=True),
        "dependencies": Obj({}, default=Shape(SCHEMA, VALUES), keys=True),
        "unevaluatedProperties": SCHEMA, "contains": SCHEMA, "propertyNames": SCHEMA,
        "not": SCHEMA, "if": SCHEMA, "then": SCHEMA, "else": SCHEMA,
        "anyOf": Arr(SCHEMA), "oneOf": Arr(SCHEMA), "allOf": Arr(SCHEMA),
        "prefixItems": Arr(SCHEMA),
        "required": VALUES, "enum": USER, "const": USER, "default": USER, "examples": USER,
        "example": USER,  # OpenAPI's (Gemini's Schema): user JSON, keys included
        "description": VALUES, "title": VALUES, "$ref": VALUES,
    }
)  # fmt: skip
