"""The field model: what a field of a request or response is, declared once per API and
read by everyone (sans I/O).

Each API's module (anthropic/messages.py, openai/chat.py, openai/responses.py, legacy.py,
google.py, batch.py) declares its bodies as jsonspan rule trees built from the kinds
below: per field path, one rule that says what the field is. The rule trees *are* the
table; nothing else says what a field is:

- the masker (masking.py) transforms, on the raw bytes, the strings and keys a rule
  selects (`rule.string`, `rule.keys`), the rest stays byte-identical;
- the leak guard (leakguard.py) walks the outgoing body with the same rules (`walk`
  below, on the parsed document) and checks exactly what the masker would have
  masked, and the unknown-endpoint scan walks any body with GENERIC (everything);
- the audit (inspect/audit.py) and the contentviews (inspect/sseview.py) walk recorded
  bodies the same way: an original where the table says "masked" is a leak, one in a
  field the table exempts is a note that names the kind.

tests/base/test_field_parity.py walks every table row and every SDK-derived path
through all of them. Adding an API is declaring its rule tree with these kinds.

The kinds (`Rule.kind`):

    text        model-visible text: masked (VALUES; PROSE where it is model output)
    json-text   a string holding JSON text: masked as JSON, keys too, on decoded characters
    user-json   JSON the user wrote (tool input, schemas' property names): keys and values
    unknown     a field the table does not know: keys and values masked, whatever it is
                called (GENERIC: failing closed is the privacy-safe direction)
    media-text  base64 or a data: URL holding text: decoded, masked, encoded again
    identifier  an id the API or the client assigned: passes untouched
    opaque      provider data that must pass byte-identical (signatures, encrypted
                content, thinking and thought parts)
    media       base64 media whose MIME type is binary: passes untouched
    credential  the client's credential in its own place
    model       the model name: passes untouched
    metadata    the API's own words and numbers (enums, a role, a `type`): numbers pass,
                a word is masked (it changes only where it holds an original)
    name        a key sent as written (names the API matches: `names`, or a member a
                table does not know of an object whose keys it keeps): never masked,
                read by the leak guard and refused when it holds an original

Each exemption (base/exempt.py) holds only for the shape of value it was made for (a
string id, a number, a boolean, base64 text): an object or array in its place is unknown
(jsonspan.Rule.tree), so every consumer reads the same decision from the one rule.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ..wire import jsonspan, percent
from ..wire.jsonspan import KEY, UNKNOWN, USER, VALUES, Arr, Deep, Obj, Rule, looks_like_json, transform_loose
from .document import Dup, Num, loads
from .exempt import KEY_META, MEDIA, META, NAME, NUMBER
from .media import DATA_URL_CODEC, Codec, base64_codec, data_url_class, media_class

# isort: split
# the exemptions the tables declare fields with (base/exempt.py), read from here with the rest
from .exempt import COUNTERS, ID, KINDS, MODEL, OPAQUE, SETTING, SIGNED, WORD, Vocabulary  # noqa: F401

TEXT = VALUES
CLIENT_ID = VALUES
"""An identifier the client chose (a batch request's key for its result, a document's
name, an end-user id): not the API's, so an original in it would leave as written. Masked like any value (a literal
becomes its disguise, the same on every request, and is restored where the API echoes
it: a batch's results); one that holds no original goes out unchanged."""
ECHO: Rule = Deep(False, "ECHO")
"""Text an answer gave the client unrestored (a compatible provider's reasoning, no
signature over it), sent back as it came: masked like any value (an original there is
masked), but the placeholders and fakes it holds are the provider's own, from the turn
that wrote them, not the client's (base/present.Held does not skip or reserve them: the
conversation's numbering stays as it was, turn after turn)."""
ECHO.echo = ECHO.tree.echo = True  # type: ignore[union-attr]


class _Answer(type(jsonspan.PROSE)):  # type: ignore[misc]
    answer = True  # restore_fn: Restorer.answer

    def __repr__(self) -> str:
        return "ANSWER"


ANSWER: Rule = _Answer()
"""The model's answer text: PROSE, restored as JSON text (originals JSON-escaped) where
the request asked for its answer as JSON (base/jsonanswer.py, Restorer.output)."""
GENERIC: Rule = UNKNOWN
"""Unknown shapes fail closed: every key and every string value inside is masked (in a
response: restored), whatever it is called — `data`, `id` and `signature` included."""


class Within(Rule):
    """A subtree the table knows only some member names of, at any depth (server tools'
    outputs, citations): those members get their rule, everything else in it is
    unknown (keys and values masked)."""

    string = True
    keys = True
    kind = "unknown"

    def __init__(self, fields: dict[str, Rule]) -> None:
        self.fields = fields
        self.known = fields

    def child(self, key: str | int) -> Rule:
        return self.fields.get(key, self) if isinstance(key, str) else self  # type: ignore[return-value]


def obj(fields: dict[str, Rule], default: Rule = GENERIC) -> Obj:
    """An object of the API with these fields (its `type` and `cache_control` the API's
    own words); anything else in it as default says (unknown: masked)."""
    base: dict[str, Rule] = {"type": META, "cache_control": META}
    base.update(fields)
    return Obj(base, default=default)


def names(default: Rule) -> Obj:
    """A map whose keys are names the API matches against something of its own (a stored
    prompt's variables, the headers an MCP server reads), each value as default says:
    the keys go out as written whatever default is (masking one would break the match),
    and the leak guard reads each (exempt.NAME: a request where one holds an original is
    refused)."""
    out = Obj({}, default=default)
    out.keys = False
    out.known = frozenset()
    return out


class Shape(Rule):
    """A value whose rule depends on its JSON shape: an object, an array, or anything
    else (a string, most often)."""

    string = True
    kind = "text"

    def __init__(self, obj: Rule, arr: Rule, other: Rule = VALUES) -> None:
        self.obj, self._arr, self._other = obj, arr, other

    def resolve(self, value: object) -> Rule:
        if isinstance(value, dict):
            return self.obj.resolve(value)
        if isinstance(value, list):
            return self._arr.resolve(value)
        return self._other.resolve(value)




# -- media ---------------------------------------------------------------------------------


class MediaText(Rule):
    """A string stored in a codec (base64 of text, a data: URL): the masker decodes it,
    masks the text and encodes it again; the guard and the audit read the text."""

    string = True
    kind = "media-text"

    def __init__(self, codec: Codec) -> None:
        self.media = codec

    def __repr__(self) -> str:
        return f"MediaText({self.media!r})"


_MEDIA_TEXT: dict[str, MediaText] = {}


def media_text(mime: str) -> Rule:
    """The rule of a base64 payload of this MIME type: MEDIA (binary, untouched) or a
    MediaText that reads it."""
    if media_class(mime) == "binary":
        return MEDIA
    r = _MEDIA_TEXT.get(mime)
    if r is None:
        if len(_MEDIA_TEXT) > 256:
            _MEDIA_TEXT.clear()
        r = _MEDIA_TEXT[mime] = MediaText(base64_codec(mime))
    return r


class Media(Rule):
    """An object that carries base64 data and its MIME type (Gemini `inlineData`,
    Anthropic `source` of type base64): the data is exempt only when the MIME type says
    binary. fields: the object's other members."""

    string = True
    kind = "unknown"

    def __init__(self, data: str, mime: tuple[str, ...], fields: dict[str, Rule]) -> None:
        self.data, self.mime = data, mime
        self.fields = {**fields, **dict.fromkeys(mime, META)}
        self._by_mime: dict[str, Obj] = {}

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        mime = next((m for k in self.mime if isinstance(m := value.get(k), str)), "")
        rule = self._by_mime.get(mime)
        if rule is None:
            if len(self._by_mime) > 256:
                self._by_mime.clear()
            rule = self._by_mime[mime] = Obj({**self.fields, self.data: media_text(mime)}, default=GENERIC)
        return rule


class _DataUrlRule(Rule):
    """An image or file URL: a `data:` URL with a binary MIME type is base64 payload
    (never touched); a data: URL of text is decoded, masked and encoded again; any other
    URL is masked like text."""

    string = True
    kind = "text"

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, str):
            return GENERIC.resolve(value)
        cls = data_url_class(value)
        if cls == "binary":
            return MEDIA
        if cls:
            return _DATA_URL_TEXT
        return VALUES


_DATA_URL_TEXT = MediaText(DATA_URL_CODEC)
DATA_URL: Rule = _DataUrlRule()

# A string in a field no table knows that looks like base64 (the receiver may decode it:
# a media object of an API the tables do not describe) or a data: URL. Its length, padding
# included, is what sniff() counts: "QWNtZSBDb3JwIQ==" (10 bytes) is 16 characters too.
_B64ISH = re.compile(r"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2,3}={0,2})?|[A-Za-z0-9_-]+={0,2}")
_SNIFFED = base64_codec("")


def sniff(value: str) -> Codec | None:
    """The codec of an unknown field's string that may be media: a data: URL that is not
    binary, or base64 (told by its bytes: text if they are UTF-8); None otherwise. Such a
    string is read decoded when it decodes to text, as it is otherwise (media_of)."""
    if value[:5].lower() == "data:":
        return DATA_URL_CODEC if data_url_class(value) != "binary" else None
    if len(value) >= 16 and _B64ISH.fullmatch(value):
        return _SNIFFED
    return None


def media_of(value: str, rule: Rule) -> tuple[Codec | None, bool]:
    """(codec, declared): the table's codec for this string (declared media), or, in an
    unknown field, one sniffed from the value (read decoded only when it is text)."""
    if rule.media is not None:
        return rule.media, True  # type: ignore[return-value]
    if rule.kind == "unknown":
        return sniff(value), False
    return None, False


# -- JSON Schema -------------------------------------------------------------------------

# JSON Schema (tool input_schema): keywords (keys) and `type`'s values untouched; every
# other value is the client's (`$id`, `$schema`: URLs it chose; `format`): masked, which
# changes only text that holds an original ("date-time" goes out as it came).
SCHEMA = Obj({}, default=GENERIC)
_PROPS = Obj({}, default=SCHEMA, keys=True)
SCHEMA.fields.update(
    {
        "type": META, "format": VALUES, "$schema": VALUES, "$id": VALUES,
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
        "description": VALUES, "title": VALUES, "$ref": VALUES, "pattern": VALUES,
        # Gemini's Schema (OpenAPI 3.0 with its own words): `$defs`, `$ref`, and the
        # order of the properties by name (masked as the names are)
        "defs": _PROPS, "ref": VALUES, "propertyOrdering": VALUES,
    }
)  # fmt: skip


# -- reading a parsed document through a table -------------------------------------------






class Field(NamedTuple):
    """One string of a document as the table sees it. path: a linked (parent, segment)
    tuple (see path_text); rule: its resolved rule (kind, media; `rule.string` or a key
    rule KEY: the masker transforms it, else exempt for rule.kind); key: the member name
    a value is read with (key-anchored rules), when its key is transformed too."""

    path: object
    value: str
    rule: Rule
    key: str | None
    is_key: bool


def selected(f: Field) -> bool:
    """Does the masker transform this string or key? (A number is checked, never masked.)"""
    return f.rule.string or f.rule is NUMBER


def walk(
    doc: object, root: Rule, exempt: bool = False, whole: Callable[[list, Rule], bool] | None = None
) -> Iterator[Field]:
    """Every string (and number) of a parsed document (see loads) with the rule the table
    gives it, in document order. exempt=False: only what the masker transforms, numbers
    outside exempt subtrees, the keys it leaves as written that are not the API's own
    field names (rule NAME: the leak guard reads them), and nothing inside a skipped
    subtree; exempt=True: every string, key and number, each with the rule that exempts
    it. whole(v, rule): a list v (read with rule) it answers True for when the walk
    reaches it is not walked into (base/fieldwalk.py: its elements shown clean)."""
    stack: list[tuple[object, Rule, object, str | None]] = [(doc, root, None, None)]
    while stack:
        v, rule, path, k = stack.pop()
        rule = rule.resolve(v)
        if isinstance(v, str):
            if type(v) is Num:
                if exempt or not rule.skip:
                    yield Field(path, v, NUMBER if not rule.skip else rule, None, False)
            elif exempt or rule.string:
                yield Field(path, v, rule, k, False)
            continue
        if isinstance(v, dict):
            if rule.skip:
                if exempt:
                    yield from _all(v, rule, path)
                continue
            items = v.pairs if type(v) is Dup else list(v.items())
            keys, known = rule.keys, rule.known
            for key, x in reversed(items):
                masked = keys and key not in known
                stack.append((x, rule.child(key), (path, key), key if masked else None))
            # the keys first, in document order (values come off the stack after them);
            # a key the masker leaves as written that is not one of the API's own field
            # names is a NAME, read by the leak guard all the same (exempt.NAME)
            for key, _ in items:
                if key not in known:
                    yield Field((path, key), key, KEY if keys else NAME, None, True)
                elif exempt:
                    yield Field((path, key), key, KEY_META, None, True)
        elif isinstance(v, list):
            if rule.skip:
                if exempt:
                    yield from _all(v, rule, path)
                continue
            if whole is not None and whole(v, rule):
                continue
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], rule.child(i), (path, i), None))


def _all(v: object, rule: Rule, path: object) -> Iterator[Field]:
    """Every string, key and number inside an exempt subtree, each with its rule."""
    stack = [(v, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, str):
            yield Field(p, x, rule, None, False)
        elif isinstance(x, dict):
            items = x.pairs if type(x) is Dup else list(x.items())
            for key, _ in items:
                yield Field((p, key), key, rule, None, True)
            stack.extend(((y, (p, key)) for key, y in reversed(items)))
        elif isinstance(x, list):
            stack.extend((x[i], (p, i)) for i in range(len(x) - 1, -1, -1))


def path_text(path: object, hide: object = None) -> str:
    """`messages[0].content[1].text` for a linked path; a key for which hide(key) is
    true is shown as `[<key>]` (it holds an original)."""
    segs: list[str | int] = []
    node = path
    while node is not None:
        pair: tuple = node  # type: ignore[assignment]
        node = pair[0]
        segs.append(pair[1])
    out = []
    for seg in reversed(segs):
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif callable(hide) and hide(seg):
            out.append("[<key>]")
        elif seg.isidentifier():
            out.append(f".{seg}")
        else:
            out.append(f"[{json.dumps(seg)}]")
    s = "".join(out)
    return s[1:] if s.startswith(".") else s


def kind_of(f: Field) -> str:
    """The kind that decides what happened to this string (see KINDS)."""
    if f.rule is NUMBER:
        return "number"
    return f.rule.kind


# -- reading one string as the model reads it ---------------------------------------------


def context_of(key: str | None) -> tuple[str, str] | None:
    """The text around a value read with its key (`"password": "` … `"`), for the rules
    anchored on the key; None for a value read alone."""
    return None if key is None else key_context(key)


@functools.lru_cache(maxsize=4096)
def key_context(key: str) -> tuple[str, str]:
    """The text around a value read with its key (the masker's and the guard's one)."""
    return (json.dumps(key, ensure_ascii=False) + ': "', '"')


# -- reading one string: the one reader the masker, the leak guard and the audit use ----


class As(enum.Enum):
    """How the provider's model reads one string a table selects (read)."""

    TEXT = "text"  # as it is (in user JSON with its key around it)
    BINARY = "binary"  # declared media that is not text: nothing in it is read
    MEDIA = "media"  # base64 or a data: URL holding text: its decoded text, read again
    JSON = "json"  # JSON text: its keys and values
    LOOSE = "loose"  # begins like JSON but does not parse: as written, then literal by literal decoded
    PERCENT = "percent"  # a URL in it holds %XX escapes or a +: as written, then its URLs decoded


@dataclass(frozen=True, slots=True)
class Read:
    """One string as read (read): `text` is what is read — the string itself, or for
    MEDIA its decoded text, read again with `again` (JSON text or text, key None), and
    encoded like `raw` (`codec.encode`) once masked; `doc`: JSON's parsed document."""

    how: As
    text: str
    again: Rule | None = None
    codec: Codec | None = None
    raw: object = None
    doc: object = None


def plain(value: str, rule: Rule) -> bool:
    """Is value read as it is, with no decoding (read's TEXT, without asking it)? The
    cheap first question: no media (declared, or sniffed in an unknown field), no JSON,
    no URL with something percent-encoded (`?who=Acme%20Corp`: wire/percent.py)."""
    return (rule.media is None and not rule.json_text and not looks_like_json(value)
            and (rule.kind != "unknown" or sniff(value) is None) and not percent.coded(value))  # fmt: skip


def read(value: str, rule: Rule, parse: Callable[[str], object] = jsonspan.loads) -> Read:
    """How the provider's model reads value, a string rule selects: the one reading of
    a string (masking.reads and mask_fn mask what it says, texts() below reports it to
    the leak guard and the audit). Media is decoded (text media; binary: nothing), JSON
    text parsed (`parse`: the consumer's parser; text that begins like JSON and does not
    parse is LOOSE), text whose URLs hold escapes read with them decoded too (PERCENT). Raises
    RecursionError for JSON nested too deeply to parse."""
    codec, declared = media_of(value, rule)
    if codec is not None:
        got = codec.decode(value)
        if got is None and declared:
            return Read(As.BINARY, value)
        if got is not None and (declared or codec.decoded(got[1])):
            again = jsonspan.JSON_TEXT if codec.is_json() else VALUES
            return Read(As.MEDIA, got[0], again, codec, got[1])
    if rule.json_text or looks_like_json(value):
        try:
            return Read(As.JSON, value, doc=parse(value))
        except ValueError:
            return Read(As.LOOSE, value)
    if percent.coded(value):
        return Read(As.PERCENT, value)
    return Read(As.TEXT, value)


def texts(value: str, rule: Rule, key: str | None = None, where: str = "") -> Iterator[tuple[str, str, tuple | None]]:
    """The texts the provider's model reads in one string the masker transforms, as
    read() reads it (the masker: masking.mask_fn): (where, text, context). Media is
    decoded (binary yields nothing), JSON text is walked as user JSON (keys and values,
    each value with its key), JSON text that does not parse is read as written and
    literal by literal, decoded; text whose URLs are percent-encoded is read as written
    (with its key) and with its URLs decoded. Raises MaskError for text media that cannot be decoded."""
    if plain(value, rule):
        yield where, value, context_of(key)
        return
    try:
        r = read(value, rule, loads)
    except RecursionError:
        r = Read(As.LOOSE, value)
    if r.how is As.BINARY:
        return  # nothing in it the model reads as text
    if r.how is As.MEDIA:
        assert r.again is not None
        yield from texts(r.text, r.again, None, where + f" (decoded {r.codec})")
        return
    if r.how is As.LOOSE:
        yield where, value, None  # as written (an original may hold a quote)
        pieces: list[str] = []
        transform_loose(value, lambda t: pieces.append(t) or t)  # type: ignore[func-returns-value]
        for p in pieces:
            yield where + " (JSON text)", p, None
        return
    if r.how is As.PERCENT:
        yield where, value, context_of(key)
        yield where + " (percent-decoded)", percent.decoded(value), None
        return
    inner = r.doc
    if isinstance(inner, dict | list):
        for f in walk(inner, USER):
            w = f"{where} (JSON text $.{path_text(f.path)})".replace("$.[", "$[")
            if f.rule is NUMBER:
                yield w, f.value, None
            else:
                yield from texts(f.value, f.rule, f.key, w)
        return
    if isinstance(inner, str) and type(inner) is not Num:
        yield where + " (JSON text)", inner, None
        return
    yield where, value, context_of(key)
