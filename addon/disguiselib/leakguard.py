"""The last check before a request leaves: is any original still in it? (sans I/O)

The maskers follow per-API tables of which field holds what; a field a table gets wrong
(a new API field, a shape nobody recorded) would let an original through. This module
knows nothing of those tables: it looks at every key and decoded string value of the
outgoing JSON body, except the spans that are left untouched on purpose — thinking and
reasoning blocks with their signatures, encrypted content, base64 media and `data:`
URLs, ids and the model name — and asks `Rules.find` whether any literal or pattern
matches. It also scans the URL and the headers other than credentials.

The same scanners, without the untouched spans, decide whether a request to an
endpoint the addon does not transform may leave at all.

A hit names the rule (a pattern's name, or "literal") and where it is (a JSON path
whose keys are shown only when they hold no original), never the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote_plus

from .core.jsonspan import transform_loose
from .core.rules import LITERALS, Rules

# Blocks that must go out byte-identical (signed) or that hold opaque data.
UNTOUCHED_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
# Ids, signatures, the model name and opaque payloads: never masked, so never checked.
# (Inside user-defined JSON too: a tool input's own `id` key is a blind spot of this
# check, not of the masking.)
UNTOUCHED_KEYS = frozenset(
    {
        "id", "tool_use_id", "call_id", "item_id", "response_id", "previous_response_id",
        "file_id", "custom_id", "request_id", "signature", "encrypted_content", "encrypted_index",
        "model", "file_data", "input_audio",
    }
)  # fmt: skip
# The client's own credentials go to the provider as they are (an `sk-ant-...` key in
# x-api-key is the point of that header, not a leak).
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
        "cookie", "anthropic-api-key", "openai-api-key", "ocp-apim-subscription-key",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Hit:
    rule: str  # a pattern's name, or "literal"
    where: str  # "body $.messages[0].content", "url", "header x-user"

    def __str__(self) -> str:
        return f"{self.rule} in {self.where}"


def _label(label: str) -> str:
    return "literal" if label == LITERALS else label


def _first(rules: Rules, s: str) -> str | None:
    spans = rules.find(s)
    return _label(spans[0][0]) if spans else None


def _loose_first(rules: Rules, s: str) -> str | None:
    """The first rule that matches JSON text s that does not parse, its string literals
    decoded (an unterminated last one up to where it was cut)."""
    found: list[str] = []

    def look(text: str) -> str:
        if not found:
            lab = _first(rules, text)
            if lab is not None:
                found.append(lab)
        return text

    transform_loose(s, look)
    return found[0] if found else None


def _key_seg(key: str, holds_original: bool) -> str:
    # A key is shown in the path only when it holds no original.
    if holds_original:
        return "[<key>]"
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]"


class _Pairs(list):
    """A JSON object as all its (key, value) pairs: a key given twice keeps both values
    (json.loads would keep only the last, and a provider might read the first)."""


class _Num(str):
    """A JSON number's own text: a pattern can match digits the maskers never touch."""


def _loads(text: str) -> object:
    return json.loads(text, object_pairs_hook=_Pairs, parse_int=_Num, parse_float=_Num)


def _items(v: object) -> list | None:
    if isinstance(v, _Pairs):
        return list(v)
    if isinstance(v, dict):
        return list(v.items())
    return None


def scan_json(doc: object, rules: Rules, untouched: bool = True) -> Hit | None:
    """The first original in a parsed JSON document: in any key, string value or number
    (parsed by scan_body), or in JSON text inside a string (tool `arguments`) once
    decoded. With untouched, the spans deliberately left as they are (see the module
    docstring) are not looked at."""
    stack: list[tuple[object, str]] = [(doc, "$")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, str):
            hit = _first(rules, v)
            if hit is None and v[:1] in "{[" and ("\\" in v or '"' in v):
                # JSON text in a string: its own escapes hide what a raw look would find
                try:
                    inner = _loads(v)
                except (ValueError, RecursionError):
                    inner = None
                    # JSON text that does not parse (arguments cut short): read literal by
                    # literal, decoded, as the masker reads it (jsonspan.transform_loose)
                    loose = _loose_first(rules, v)
                    if loose is not None:
                        return Hit(loose, f"{path} (JSON text)")
                if _items(inner) is not None or isinstance(inner, list):
                    found = scan_json(inner, rules, untouched=False)
                    if found is not None:
                        return Hit(found.rule, f"{path} (JSON text {found.where})")
            if hit is not None:
                return Hit(hit, path)
            continue
        items = _items(v)
        if items is not None:
            types = [x for k, x in items if k == "type"]
            t = types[-1] if types else None
            if untouched and t in UNTOUCHED_TYPES:
                continue
            base64_data = untouched and t != "text"
            for k, x in reversed(items):
                if untouched and (k in UNTOUCHED_KEYS or (k == "data" and base64_data)):
                    continue
                lab = _first(rules, k)
                if lab is not None:
                    return Hit(lab, f"{path}{_key_seg(k, True)} (key)")
                if untouched and isinstance(x, str) and x[:5].lower() == "data:":
                    continue  # a data: URL is base64 media
                stack.append((x, path + _key_seg(k, False)))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{path}[{i}]"))
    return None


def scan_body(raw: bytes, rules: Rules, untouched: bool = True) -> Hit | None:
    """A decoded body: JSON is scanned value by value (see scan_json); anything else as
    UTF-8 text (bytes that do not decode are replaced, so the text around them is still
    looked at)."""
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        doc = _loads(text)
    except (ValueError, RecursionError):
        lab = _first(rules, text)
        return Hit(lab, "body") if lab else None
    hit = scan_json(doc, rules, untouched)
    return None if hit is None else Hit(hit.rule, f"body {hit.where}")


def scan_url(path: str, rules: Rules) -> Hit | None:
    """The request target (path and query), percent-decoded."""
    for text in dict.fromkeys((path, unquote_plus(path))):
        lab = _first(rules, text)
        if lab is not None:
            return Hit(lab, "url")
    return None


def scan_headers(headers: Iterable[tuple[str, str]], rules: Rules) -> Hit | None:
    """Every header but the client's credentials (CREDENTIAL_HEADERS)."""
    for name, value in headers:
        n = name.lower()
        if n in CREDENTIAL_HEADERS:
            continue
        lab = _first(rules, value) or _first(rules, name)
        if lab is not None:
            where = n if _first(rules, n) is None else "<name>"
            return Hit(lab, f"header {where}")
    return None


def scan_request(
    path: str, headers: Iterable[tuple[str, str]], body: bytes | None, rules: Rules, untouched: bool
) -> Hit | None:
    """URL, headers and body, in that order; the first hit or None."""
    return (
        scan_url(path, rules)
        or scan_headers(headers, rules)
        or (scan_body(body, rules, untouched) if body else None)
    )
