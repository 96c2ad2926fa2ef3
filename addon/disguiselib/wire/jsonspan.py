"""Raw JSON span scanner: transform chosen string tokens, splice, keep every other byte.

A body is parsed once with `json.loads` (C speed; it also validates and lets a rule look
at a whole object, e.g. a content block's `type`, whatever the key order). Then the raw
text is walked token by token — a regex jumps to the next quote or bracket, and
`json.decoder.scanstring` decodes a string literal at C speed and says where it ends
(the CPython scanner's own primitive). A subtree a rule skips is jumped over whole.
Only the string tokens whose value changes are re-encoded and spliced in; whitespace,
key order, numbers (`1.0`, `1e3`, `12345678901234567890`), `\\u00e9`-style escapes and
unrelated strings stay byte-identical.

Rules say, per position, what to do with a string value and with object keys: `Skip`
(nothing inside; its kind says why: an identifier, opaque data, binary media, metadata,
base/fields.py), `VALUES` (every string value inside), `USER` (every key and value: JSON
the user defined), `Obj(fields, default)` (an object with known fields, its other keys
transformed where default transforms keys), `Arr(item)`, `Typed(table, default)` (by its
"type" member), `Either(string, container)`. A string rule may carry a `media` codec
(base64 text, a data: URL): fn decodes, transforms and encodes again the string in it.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Mapping

from ..errors import MaskError
from . import tokenmap
from .loose import transform_loose  # noqa: F401 (JSON text that does not parse, read as JSON is)
from .text import Columns, json_literal, splice, splice_encoded

_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_raw_decode = json.JSONDecoder(parse_int=str).raw_decode  # finds where a skipped subtree ends (any int)
_TOK = re.compile(r'["{}\[\]:,]')
_WS = re.compile(r"[ \t\n\r]*")
_STR_TAIL = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"')  # the rest of a string token, past its opening quote
# One escape of a string token's body; a valid surrogate pair decodes to one character.
_ESCAPE = re.compile(r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)")

# A letter, digit, `_`, `-` or `.` written as a `\u` escape (`"sequence_n\u0075mber"`): the
# only way JSON spells a key or type name the providers' fast paths look for in raw text
# otherwise (no other escape yields these characters): a raw lookup would miss what
# json.loads reads, so code matching keys in raw text declines (parses) or decodes.
_ESCAPED_NAME = r"\\u00(?:2[dDeE]|3[0-9]|4[1-9a-fA-F]|5[0-9aAfF]|6[1-9a-fA-F]|7[0-9aA])"
_ESCAPED_NAME_STR = re.compile(_ESCAPED_NAME)
_ESCAPED_NAME_BYTES = re.compile(_ESCAPED_NAME.encode())


def escaped_name(s: str | bytes, end: int | None = None) -> bool:
    """Could s (up to end) spell a key or a type name with escapes (a lookup in its raw text
    may miss it: read it parsed)? A substring search first: most text has no `\\u` at all."""
    if isinstance(s, str):
        return "\\u" in s and _ESCAPED_NAME_STR.search(s, 0, len(s) if end is None else end) is not None
    n = len(s) if end is None else end
    return s.find(b"\\u", 0, n) >= 0 and _ESCAPED_NAME_BYTES.search(s, 0, n) is not None


def member_span(s: str, key: str) -> tuple[int, int] | None:
    """Where the value of the top-level member `key` of the JSON object text s is (the last
    one, as json.loads keeps), keys read as JSON reads them (`"sequence_n\\u0075mber"` is
    `sequence_number`); None where there is none. Nested values are stepped over at C speed."""
    n = len(s)
    i = _WS.match(s, 0).end()  # type: ignore[union-attr]
    if i >= n or s[i] != "{":
        return None
    found = None
    i += 1
    while True:
        i = _WS.match(s, i).end()  # type: ignore[union-attr]
        if i >= n or s[i] != '"':
            return found
        k, i = _scanstring(s, i + 1)
        i = _WS.match(s, i).end()  # type: ignore[union-attr]
        if i >= n or s[i] != ":":
            return found
        start = _WS.match(s, i + 1).end()  # type: ignore[union-attr]
        try:
            end = _raw_decode(s, start)[1]
        except ValueError:
            return found
        if k == key:
            found = (start, end)
        i = _WS.match(s, end).end()  # type: ignore[union-attr]
        if i >= n or s[i] != ",":
            return found
        i += 1


# Above this many backslashes in a string token, a change re-encodes it whole (walking escapes is slow)
_SPLICE_MAX_ESCAPES = 64
_PLAIN = tokenmap.PLAIN  # text a JSON string holds as it is, in any style
JsonAnswer = tuple[tuple[tuple[str, ...], frozenset[str]], ...]
# What transform() applies to each selected string: a new value, or Spans of its edits.
TransformFn = Callable[["str", "Rule"], "str | Spans"]


class Spans(list):  # noqa: FURB189 - a marker type: a list is what it holds
    """What a transform fn may return instead of a new string: the (start, end, replacement)
    edits of the decoded value, sorted and disjoint, each spliced into the raw token: its other
    bytes (escapes too) stay as they came, a long string with one change is not re-encoded."""


class Rule:
    """Base rule: strings untouched, keys untouched, children skipped."""

    string = False  # transform this value when it is a string
    prose = False  # the string is text a user reads (strip rules apply on the way back)
    json_text = False  # the string holds JSON text (OpenAI `arguments`): masked as JSON
    mark: object = None  # walk() records where containers with a mark start
    keys = False  # transform the keys of this object (except those in `known`)
    known: Mapping[str, object] | frozenset[str] = frozenset()  # keys that are the API's own words
    skip = False  # jump over this container without looking inside
    kind = "metadata"  # what a value here is (base/fields.py KINDS); a skipped one says why
    media: object = None  # the codec a string is stored in (fields.Media), fn's business
    cited = False  # the string is a request's document an answer may cite by offsets (base/offsets.py)
    # What an object or array is read with where this rule was made for one value (a string,
    # a number; None for Obj, Arr, ...): an exemption holds only for the shape it was made
    # for, a container in its place is content nobody described (UNKNOWN), never passed whole.
    tree: Rule | None = None
    prompt: tuple[str, ...] = ()  # a request's members in its prompt's order (base/prompt.py); (): the body's
    state: tuple[str, ...] = ()  # its members naming stored state it continues: keyed numbers (base/prompt.py)
    json_answer: JsonAnswer = ()  # (members' path, its values asking for JSON): base/jsonanswer.py
    echo = False  # text an answer gave unrestored that the client sends back (base/fields.ECHO)

    def resolve(self, value: object) -> Rule:
        """The rule for this exact value (dispatch on type or shape): the rule itself,
        or `tree`'s for an object or array where the rule expects one value."""
        t = self.tree
        if t is not None and isinstance(value, (dict, list)):
            return t.resolve(value)
        return self

    def child(self, key: str | int) -> Rule:
        return SKIP


class Skip(Rule):
    """Nothing in the value is touched. kind names why (an identifier, opaque provider
    data, binary media, the API's own metadata): the field model's consumers read it.
    The exemption is for one value (a string, a number, a boolean): an object or array
    in its place is UNKNOWN (see Rule.tree), unless whole (a block the provider signed,
    declared as such: nothing in it may change)."""

    skip = True

    def __init__(self, kind: str, whole: bool = False) -> None:
        self.kind = kind
        self.tree = None if whole else UNKNOWN

    def __repr__(self) -> str:
        return f"Skip({self.kind}{', whole' if self.tree is None else ''})"


class Word(Skip):
    """The API's own word (a role, a type, an enum): a number or a boolean passes as it
    is, a string is read with `word` (masked like a setting's word: it changes only where
    it holds an original, and the leak guard checks it), a container is UNKNOWN."""

    def __init__(self, kind: str, word: Rule) -> None:
        super().__init__(kind)
        self.word = word

    def resolve(self, value: object) -> Rule:
        if type(value) is str:
            return self.word
        return Rule.resolve(self, value)


class Deep(Rule):
    """Every string value inside, and every key too when keys (a subtree of one kind).
    Without keys (text values), an object or array is read with its keys too (`tree`):
    keys a client wrote where the API expects text are its words as much as the values."""

    def __init__(self, keys: bool, name: str, kind: str = "text") -> None:
        self.string = True
        self.keys = keys
        self.kind = kind
        self._name = name
        self.tree = None if keys else Deep(True, name + "+KEYS", kind)

    def child(self, key: str | int) -> Rule:
        return self

    def __repr__(self) -> str:
        return self._name


UNKNOWN: Rule = Deep(True, "GENERIC", "unknown")
"""Content no table describes: every key and string value inside is masked (in a
response: restored), whatever it is called (fields.GENERIC)."""
SKIP: Rule = Skip("metadata")
VALUES: Rule = Deep(False, "VALUES")
USER: Rule = Deep(True, "USER", "user-json")


class _Prose(Rule):
    string = True
    prose = True
    kind = "text"
    tree = UNKNOWN

    def __repr__(self) -> str:
        return "PROSE"


PROSE: Rule = _Prose()  # model-written text: strip rules apply when restoring


class _JsonText(Rule):
    string = True
    json_text = True
    kind = "json-text"
    tree = USER  # JSON sent as JSON rather than as its text: keys and values all the same

    def __repr__(self) -> str:
        return "JSON_TEXT"


JSON_TEXT: Rule = _JsonText()  # a string holding JSON text (keys and values masked as JSON)


class _Key(Rule):
    string = True
    kind = "key"

    def __repr__(self) -> str:
        return "KEY"


KEY: Rule = _Key()  # what fn receives for an object key


class Obj(Rule):
    """An object with known fields. keys=True: every key is transformed (a map of the
    user's names); otherwise the keys that are not fields are, when default transforms
    keys (a member the table does not know may be named after anything)."""

    def __init__(self, fields: Mapping[str, Rule], default: Rule = VALUES, keys=False, prompt=(), state=(),  # noqa: ANN001
                 json_answer: JsonAnswer = ()) -> None:
        self.fields = dict(fields)
        self.prompt, self.state, self.json_answer = prompt, state, json_answer
        self.default = default
        _declared(self)
        self.keys = keys or default.keys
        self.known = frozenset() if keys else self.fields
        self.string = default.string
        self.kind = default.kind  # of a string found where this object was expected

    def child(self, key: str | int) -> Rule:
        return self.fields.get(key, self.default)  # type: ignore[arg-type]


def _declared(o: Obj) -> None:
    """A table's declarations name members it has (json_answer's paths: down its objects), else ValueError."""
    bad = [k for k in (*o.prompt, *o.state) if k not in o.fields]
    for path, words in o.json_answer:
        rule: Rule = o
        for key in path:
            bad += [".".join(path)] if isinstance(rule, Obj) and key not in rule.fields else []
            rule = rule.child(key)
        bad += [] if path and words and type(words) is frozenset else [".".join(path) or "()"]
    if bad:
        raise ValueError(f"a declaration names what the table does not have: {', '.join(bad)}")


class Arr(Rule):
    def __init__(self, item: Rule) -> None:
        self.item = item
        self.string = True  # a string where an array was expected: mask (fail closed)
        self.kind = "text"

    def resolve(self, value: object) -> Rule:
        # an object where an array was expected: its keys are nobody's words (UNKNOWN)
        return UNKNOWN if isinstance(value, dict) else self

    def child(self, key: str | int) -> Rule:
        return self.item


class Typed(Rule):
    """An object dispatched on `value[field]`; `default` for unknown or missing types."""

    def __init__(self, table: Mapping[str, Rule], default: Rule, field: str = "type") -> None:
        self.table = dict(table)
        self.default = default
        self.field = field
        self.string = True
        self.kind = "text"

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict):
            t = value.get(self.field)
            rule = self.table.get(t, self.default) if isinstance(t, str) else self.default
            return rule.resolve(value)
        return self.default.resolve(value)


class Either(Rule):
    """A field that may be a string (rule `string`) or a container (rule `container`)."""

    def __init__(self, string: Rule, container: Rule) -> None:
        self._s = string
        self._c = container

    def resolve(self, value: object) -> Rule:
        return self._s.resolve(value) if isinstance(value, str) else self._c.resolve(value)


def plain(value: str) -> bool:
    """Does value read the same as the body of any JSON string literal (printable ASCII
    without `"` and `\\`)?"""
    return _PLAIN.match(value) is not None


def encode_like(value: str, raw: str) -> str:
    """A JSON string literal for value in the style of the raw token it replaces:
    ASCII-only (`\\u` escapes) if the raw token was ASCII, UTF-8 otherwise."""
    return json_literal(value, raw.isascii())


# The strings a walk selected, in order, as lists side by side (spanwalk.collect): each
# one's value, rule (KEY for a key), the key it is read with (or None), its token's place
# (spans[2t], spans[2t + 1]: start, past its end; an array('q')), and with places, where it
# is in the document (owners[t]: its container, None for a document that is one string;
# slots[t]: its key or index). A namedtuple: Cython, which compiles this, keeps no class annotations.
Tokens = collections.namedtuple("Tokens", "vals rules keys spans owners slots")


class _Frame:
    __slots__ = ("rule", "parsed", "is_obj", "key", "idx")

    def __init__(self, rule: Rule, parsed: object, is_obj: bool) -> None:
        self.rule = rule
        self.parsed = parsed
        self.is_obj = is_obj
        self.key: str | None = None
        self.idx = 0


def transform(s: str, doc: object, root: Rule, fn: TransformFn) -> tuple[str, int]:
    """Apply fn(value, rule) to every string token root's rules select; splice changes.

    s is the raw JSON text and doc its `json.loads` value. Returns the new text and
    how many tokens changed (0: the text is s itself). Raises MaskError if s and doc
    disagree (they cannot when doc came from s).
    """
    edits = walk(s, doc, root, fn)
    return splice(s, edits), len(edits)


def walk(
    s: str,
    doc: object,
    root: Rule,
    fn: TransformFn,
    marks: list[tuple[object, int]] | None = None,
    where: list[tuple[int, int]] | None = None,
    at: list[tuple[object, str | int, bool]] | None = None,
) -> list[tuple[int, int, str]]:
    """The edits transform() would splice, in order. With marks, every container whose
    rule has a `mark` is recorded as (mark, offset of its opening bracket); with where,
    the (start, end) of the string token each call of fn is for, in the same order; with
    at (and where), where that string is in doc: (parsed container, key or index, is a key)."""
    edits: list[tuple[int, int, str]] = []
    stack: list[_Frame] = []
    n = len(s)

    def value_at(i: int, rule: Rule, parsed: object) -> int:
        """Handle the value that starts at or after i; return where scanning goes on."""
        i = _WS.match(s, i).end()  # type: ignore[union-attr]
        c = s[i]
        rule = rule.resolve(parsed)
        if c == '"':
            k = s.find('"', i + 1)
            if s.find("\\", i + 1, k) < 0:  # no escape: the token is its value
                end = k + 1
                if rule.string:
                    if where is not None:
                        where.append((i, end))
                        if at is not None:
                            at.append(_place(stack))
                    apply(s, i, end, s[i + 1 : k], fn(s[i + 1 : k], rule), edits)
            elif rule.string:
                v, end = _scanstring(s, i + 1)
                if where is not None:
                    where.append((i, end))
                    if at is not None:
                        at.append(_place(stack))
                apply(s, i, end, v, fn(v, rule), edits)
            else:
                end = _STR_TAIL.match(s, i + 1).end()  # type: ignore[union-attr]
            return end
        if c == "{" or c == "[":
            if rule.skip:
                return _raw_decode(s, i)[1]
            if marks is not None and rule.mark is not None:
                marks.append((rule.mark, i))
            f = _Frame(rule, parsed, c == "{")
            stack.append(f)
            if c == "[":
                j = _WS.match(s, i + 1).end()  # type: ignore[union-attr]
                if s[j] != "]":
                    return value_at(j, rule.child(0), parsed[0])  # type: ignore[index]
            return i + 1
        return i  # number, true, false, null: the token regex steps over it

    i = value_at(0, root, doc)
    while stack:
        m = _TOK.search(s, i)
        if m is None:
            raise MaskError(f"JSON ended inside a container at offset {n}")
        c = m.group()
        j = m.start()
        f = stack[-1]
        if c == '"':  # only a key reaches here: values are consumed by value_at
            key, end = _scanstring(s, j + 1)
            f.key = key
            if f.rule.keys and key not in f.rule.known:
                if where is not None:
                    where.append((j, end))
                    if at is not None:
                        at.append((f.parsed, key, True))
                apply(s, j, end, key, fn(key, KEY), edits)
            i = end
        elif c == ":":
            key = f.key
            i = value_at(j + 1, f.rule.child(key), f.parsed[key])  # type: ignore[index,arg-type]
        elif c == ",":
            if f.is_obj:
                i = j + 1
            else:
                f.idx += 1
                i = value_at(j + 1, f.rule.child(f.idx), f.parsed[f.idx])  # type: ignore[index]
        elif c == "}" or c == "]":
            stack.pop()
            i = j + 1
        else:  # "{" or "[" can only appear as a value, which value_at consumed
            raise MaskError(f"unexpected {c!r} at offset {j}")
    return edits


def _place(stack: list[_Frame]) -> tuple[object, str | int, bool]:
    """Where the string value being read is: its container and its key or index (None,
    0 for a document that is one string)."""
    if not stack:
        return None, 0, False
    f = stack[-1]
    return f.parsed, (f.key if f.is_obj else f.idx), False  # type: ignore[return-value]


def apply(s: str, i: int, end: int, v: str, new: str | Spans, edits: list[tuple[int, int, str]]) -> None:
    """Record what replaces the string token s[i:end] (its value v) when fn gave new."""
    if isinstance(new, (Spans, Columns)):  # Columns: a big text's edits (rules.bigtext)
        if not new:
            return
        if s.count("\\", i + 1, end - 1) <= _SPLICE_MAX_ESCAPES:
            edits.extend(token_edits(s, i, end, new, v))
            return
        # Many escapes (a source file's `\n`s): mapping offsets through each of them costs
        # more than encoding the token again whole, at C speed, unless compiled (tokenmap)
        got = tokenmap.escaped_edits(s, i, end, v, new)
        if got is not None:
            edits.extend(got)
            return
        new = splice(v, list(new))
    if new != v:
        edits.append((i, end, encode_like(new, s[i:end])))


def token_edits(
    s: str, i: int, end: int, spans: list[tuple[int, int, str]], v: str | None = None
) -> list[tuple[int, int, str]]:
    """The edits of s that make the string token s[i:end] hold its value with spans
    (decoded coordinates) applied; each replacement encoded in the token's style. v:
    the token's value, read instead of a copy of the token when it has no escape (a
    200 MB string is not copied to be spliced)."""
    body = v if v is not None and s.find("\\", i + 1, end - 1) < 0 else s[i + 1 : end - 1]
    ascii_token = body.isascii()

    def enc(rep: str) -> str:
        return tokenmap.encode(rep, ascii_token)

    if "\\" not in body:
        if len(spans) <= _SPLICE_MAX_ESCAPES:
            return [(i + 1 + a, i + 1 + b, enc(rep)) for a, b, rep in spans]
        # Many edits (a 200 MB string with an original every line): one edit holding the
        # token's new text, not a tuple of shifted offsets per edit (memory).
        return [(i + 1, end - 1, splice_encoded(body, spans, enc))]
    # decoded offset -> raw offset, walking the escapes once for all the spans
    offs = sorted({x for a, b, _ in spans for x in (a, b)})
    where: dict[int, int] = {}
    r = d = 0
    it = iter(offs)
    want = next(it, None)
    for m in _ESCAPE.finditer(body):
        if want is None:
            break
        plain = m.start() - r
        while want is not None and want <= d + plain:
            where[want] = r + (want - d)
            want = next(it, None)
        d += plain + 1
        r = m.end()
        while want is not None and want == d:
            where[want] = r
            want = next(it, None)
    while want is not None:
        where[want] = r + (want - d)
        want = next(it, None)
    return [(i + 1 + where[a], i + 1 + where[b], enc(rep)) for a, b, rep in spans]


def loads(s: str) -> object:
    """json.loads, and where it refuses valid JSON, the same document with its integers
    kept as digit strings. Python refuses integers of more than 4,300 digits
    (`sys.int_info.str_digits_check_threshold`) that a provider accepts; the parsed
    document only steers the walk (types, shapes), so digits as text are as good.
    Raises ValueError for text that is not JSON, RecursionError for nesting too deep
    for the parser."""
    try:
        return json.loads(s)
    except ValueError as e:
        try:
            return json.loads(s, parse_int=str)
        except ValueError:
            raise e from None


def parse(raw: bytes) -> tuple[str, object]:
    """Decode a body as UTF-8 JSON. Raises MaskError with the reason."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MaskError(f"body is not UTF-8 (byte offset {e.start})") from e
    try:
        return s, loads(s)
    except ValueError as e:
        raise MaskError(f"body is not valid JSON: {e}") from e
    except RecursionError as e:
        raise MaskError("body is nested too deeply to be read") from e


_JSONISH = re.compile(r"[ \t\r\n]*[\[{]")


def looks_like_json(s: str) -> bool:
    """Does s begin like a JSON object or array (after whitespace)? Cheap: no parse, no
    copy of s."""
    return _JSONISH.match(s) is not None
