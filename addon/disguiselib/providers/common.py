"""Rules shared by every provider: the fail-closed generic rule and JSON Schema."""

from __future__ import annotations

from ..jsonspan import SKIP, USER, VALUES, Arr, Obj, Rule

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


def _obj(fields: dict[str, Rule]) -> Obj:
    base = {k: SKIP for k in ("type", "cache_control")}
    base.update(fields)
    return Obj(base, default=GENERIC)


# JSON Schema (tool input_schema): property names, required, enum values, descriptions.
# Keywords whose values are JSON Schema vocabulary ("type": "string") stay as they are.
SCHEMA = Obj({}, default=VALUES)
_PROPS = Obj({}, default=SCHEMA, keys=True)
SCHEMA.fields.update(
    {
        "type": SKIP, "format": SKIP, "$schema": SKIP, "$id": SKIP,
        "properties": _PROPS, "patternProperties": _PROPS, "$defs": _PROPS,
        "definitions": _PROPS, "dependentSchemas": _PROPS,
        "items": SCHEMA, "additionalProperties": SCHEMA, "additionalItems": SCHEMA,
        "unevaluatedProperties": SCHEMA, "contains": SCHEMA, "propertyNames": SCHEMA,
        "not": SCHEMA, "if": SCHEMA, "then": SCHEMA, "else": SCHEMA,
        "anyOf": Arr(SCHEMA), "oneOf": Arr(SCHEMA), "allOf": Arr(SCHEMA),
        "prefixItems": Arr(SCHEMA),
        "required": VALUES, "enum": USER, "const": USER, "default": USER, "examples": USER,
        "example": USER,  # OpenAPI's (Gemini's Schema): user JSON, keys included
        "description": VALUES, "title": VALUES, "$ref": VALUES,
    }
)  # fmt: skip

