"""The last check before a request leaves: is any original still in it? (sans I/O)

It reads the one field model (base/fields.py): for a request of an API the addon
transforms, the outgoing body is walked with that API's table and every string the
masker masks is checked — read as the masker reads it (JSON text decoded, text media
decoded, a value with its key) — while what the table exempts by design (identifiers,
opaque provider data such as signatures and thought parts, binary media, the API's own
words) is not looked at. So the guard can never refuse what the masker produced, and
an original the masker missed (a bug, a body another addon changed) is caught.
Numbers are checked too: the masker cannot turn one into a string, so a number that
matches a pattern is refused.

For an endpoint no table describes, `scan_body` with no API reads the body the way the
receiver will (base/bodies.py: form fields, multipart parts, JSON lines, JSON
escapes, charsets) and checks everything in it: that decides whether such a request
may leave at all.

The URL and the headers are checked too, except the client's credentials in their
own slots, as the providers the request is for declare them (base/wirespec.Provider,
apis/slots.py): a credential header, a query parameter (`?key=` on a Google path or
host, or a Gemini Live WebSocket), a `Sec-WebSocket-Protocol` entry (OpenAI Realtime
from a browser), the headers SigV4 re-signing replaces on a request the proxy re-signs.
The same value anywhere else (a message, another header or parameter, another
provider's credential header) is counted.

A hit names the rule (a pattern's name, or "literal") and where it is (a JSON path
whose keys are shown only when they hold no original, and only while the whole path
spells none: `build`, `internal`, `acme`, `io` are clean alone and not together;
json_place), never the value. Every other
message that names a request's own text (its path, its host, a header's value) names
it through `shown`, which withholds what holds an original.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote_plus

from .apis.registry import RealtimeApi, slots_for
from .base import bodies
from .base.fields import GENERIC, NAME, NUMBER, Field, context_of, loads, path_text, plain, texts
from .base.fieldwalk import first_unread
from .base.wirespec import Destination, Slots, TextHeader
from .rules.rules import LITERALS, Rules
from .rules.settle import in_context
from .wire import grpc, percent
from .wire.jsonspan import Rule, transform_loose

if TYPE_CHECKING:
    from .apis.registry import Api

# The header a WebSocket client lists its subprotocols in (a browser's only header).
_SUBPROTOCOLS = "sec-websocket-protocol"


@dataclass(frozen=True)
class Hit:
    rule: str  # a pattern's name, or "literal"
    where: str  # "body $.messages[0].content", "url", "header x-user"

    def __str__(self) -> str:
        return f"{self.rule} in {self.where}"


def _label(label: str) -> str:
    return "literal" if label == LITERALS else label


def spans(
    rules: Rules, text: str, context: tuple[str, str] | None = None, memo: dict | None = None
) -> list[tuple[str, int, int]]:
    """The spans masking would replace in text, read in context as Rules.mask_spans
    reads it: (label, start, end) in text (a match reaching into the context is cut).
    memo: what Rules.prescan found in the texts it scanned (see scan_request)."""
    return in_context(rules.find, text, context, memo)


def first(rules: Rules, text: str, context: tuple[str, str] | None = None, memo: dict | None = None) -> str | None:
    """The label of the first span masking would replace in text (see spans), or None."""
    found = spans(rules, text, context, memo)
    return _label(found[0][0]) if found else None


def _text_hit(rules: Rules, text: str) -> tuple[str, str] | None:
    """A text no table describes: as it is, with the URLs in it percent-decoded (as a
    string of a JSON body is: wire/percent.py), and with any JSON escapes in it decoded."""
    lab = first(rules, text)
    if lab is not None:
        return lab, ""
    if percent.coded(text):
        lab = first(rules, percent.decoded(text))
        if lab is not None:
            return lab, " (percent-decoded)"
    if "\\" in text:
        pieces: list[str] = []
        transform_loose(text, lambda t: pieces.append(t) or t)  # type: ignore[func-returns-value]
        for p in pieces:
            lab = first(rules, p)
            if lab is not None:
                return lab, " (escapes decoded)"
    return None


# A hit in a key the masker sends as written (fields.NAME: a name the API matches, which
# masking would break): the message says so, and that the client has to rename it.
AS_WRITTEN = " (a key sent as written, a name the API matches: rename it)"


def scan_json(doc: object, rules: Rules, table: Rule = GENERIC, memo: dict | None = None) -> Hit | None:
    """The first original in a parsed document (fields.loads) among the strings, keys and
    numbers the table says the masker masks (GENERIC: all of them), and the keys it sends
as written that are not the API's own field names (fields.NAME). memo: see
    scan_request; the walk leaves out what it shows clean (base/fieldwalk.py)."""

    def check(f: Field) -> Hit | None:
        r, v = f.rule, f.value
        where = ""
        if r is NUMBER:
            lab = first(rules, v)
        elif plain(v, r):
            lab = first(rules, v, context_of(f.key), memo)  # read as it is (fields.read), as texts() yields it
        else:
            lab = None
            for w, t, ctx in texts(v, r, f.key):
                lab = first(rules, t, ctx, memo)
                if lab is not None:
                    where = w
                    break
        if lab is None:
            return None
        what = (AS_WRITTEN if r is NAME else " (key)") if f.is_key else ""
        return Hit(lab, json_place(rules, f.path, what + where))

    return first_unread(doc, table, memo, check)


# A path inside JSON text, as fields.texts names the place it read (`(JSON text $.a.b)`)
_INNER_PATH = re.compile(r"\(JSON text [$][^)]*\)")
WITHHELD_PATH = "$ (the path withheld: it spells an original)"


def json_place(rules: Rules, path: object, suffix: str = "") -> str:
    """`$.messages[0].content` + suffix for a message: a key that holds an original is
    `[<key>]`; when the whole still spells one (keys clean alone that join into
    `build.internal.acme.io`, or a key inside JSON text the suffix names), every key is
    withheld and the path inside JSON text left out; failing that, WITHHELD_PATH. The
    one way a message names a place in a JSON document (the leak guard's hits, the
    audit's findings)."""
    def hide(k: str) -> bool:
        return first(rules, k) is not None

    inner = _INNER_PATH.sub("(JSON text)", suffix)
    for keys, rest in ((hide, suffix), (hide, inner), (lambda k: True, inner)):
        seg = path_text(path, hide=keys)
        text = "$" + ("" if not seg else seg if seg.startswith("[") else "." + seg) + rest
        if _clean(rules, text):
            return text
    return WITHHELD_PATH


def readings(
    body: bytes, api: Api | None, content_type: str = "", parsed: tuple[bytes, object] | None = None
) -> Iterator[bodies.Reading]:
    """The body as the table of api reads it; with no API (or one that reads no body)
    the way its receiver reads it, every field unknown (GENERIC). parsed: (body, its
    document as loads reads it), from the masker (masking.mask_body), which then is not
    parsed again; the guard's own walk reads it (its independence: fields.walk, not the
    masker's, and the document is exactly the parse of what leaves, masking.masked_doc)."""
    if api is None or api.request_rule is None:
        yield from bodies.readings(body, content_type)
    elif api.request_body is not None:
        yield from api.request_body.readings(body, content_type)
    elif parsed is not None and parsed[0] is body:
        yield bodies.Reading("body", "", parsed[1], api.request_rule)
    else:
        try:
            doc = loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            yield from bodies.readings(body, content_type)  # not what the API reads: everything
            return
        yield bodies.Reading("body", "", doc, api.request_rule)


def scan_body(
    body: bytes, rules: Rules, api: Api | None = None, content_type: str = "", memo: dict | None = None,
    parsed: tuple[bytes, object] | None = None,
) -> Hit | None:
    """The first original in a decoded body read through api's table (see readings).
    memo: see scan_request; parsed: see readings."""
    if not body:
        return None
    for r in readings(body, api, content_type, parsed):
        if r.unread:  # a part a receiver reads that could not be: it cannot be shown clean
            return Hit("unknown", _joined(rules, _place(rules, r.where), f" ({r.unread})"))
        if r.doc is not None:
            hit = scan_json(r.doc, rules, r.rule, memo)
            if hit is not None:
                return Hit(hit.rule, _joined(rules, _place(rules, r.where), " " + hit.where))
        elif not r.rule.skip:
            got = _text_hit(rules, r.text) if r.rule is GENERIC else _first_text(rules, r.text, r.rule)
            if got is not None:
                return Hit(got[0], _joined(rules, _place(rules, r.where), got[1]))
    return None


def _joined(rules: Rules, place: str, rest: str) -> str:
    """A reading's place and what follows it, each shown clean, as one: where the two
    join into an original, the reading's place is `body`, and failing that nothing but."""
    for text in (place + rest, "body" + rest):
        if _clean(rules, text):
            return text
    return "body"


# A name the client wrote, as a reading's place quotes it (bodies.readings: `part 'file'`)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _place(rules: Rules, where: str) -> str:
    """A reading's place as a message may say it: a name the client wrote there (a
    multipart part's, a header parameter's) that holds an original is `<name>`."""
    if first(rules, where) is None:
        return where
    out = _QUOTED.sub(lambda m: "<name>" if first(rules, m.group()) is not None else m.group(), where)
    return out if first(rules, out) is None else "body"


def _first_text(rules: Rules, text: str, rule: Rule) -> tuple[str, str] | None:
    for where, t, ctx in texts(text, rule):
        lab = first(rules, t, ctx)
        if lab is not None:
            return lab, where
    return None


def scan_url(path: str, rules: Rules, slots: Slots | None = None) -> Hit | None:
    """The request target (path and query), percent-decoded; a credential parameter in
    its own slot (a Google API key in `key`) is not looked at. slots: the request's
    (registry.slots_for; by default those of its path)."""
    for text in url_readings(without_credentials(path, slots)):
        lab = first(rules, text)
        if lab is not None:
            return Hit(lab, "url")
    return None


# How many times a URL's text is percent-decoded to be read: a reader decodes it once, a
# URL carried in another's parameter (a redirect target) is decoded again by whoever follows
# it, and `Acme%2520Corp` is an original to both.
URL_DECODINGS = 3


def url_readings(text: str) -> list[str]:
    """text as it is and each time percent-decoded again (`+` a space), while that changes
    it, at most URL_DECODINGS times: every reading a URL's reader may make of it."""
    out = [text]
    for _ in range(URL_DECODINGS):
        nxt = unquote_plus(out[-1])
        if nxt == out[-1]:
            break
        out.append(nxt)
    return out


def without_credentials(path: str, slots: Slots | None = None) -> str:
    """path without the query parameters that hold a credential in their slot (slots:
    the request's, registry.slots_for; by default those of its path)."""
    if slots is None:
        slots = slots_for(path)
    p, sep, query = path.partition("?")
    if not sep or not slots.params:
        return path
    kept = [kv for kv in query.split("&") if unquote_plus(kv.split("=", 1)[0]) not in slots.params]
    return p + ("?" + "&".join(kept) if kept else "")


def _without_subprotocols(value: str, slots: Slots) -> str:
    """A Sec-WebSocket-Protocol list without the entries that carry a credential."""
    if not slots.subprotocols:
        return value
    return ",".join(e for e in value.split(",") if not e.strip().startswith(slots.subprotocols))


def decoded_value(value: str) -> str:
    """A header's value as a reader that percent-decodes it reads it (a cookie's
    `org=Acme%20Corp`, a Referer's `?org=Acme+Corp`: read as the request's URL is), or ""
    when that is the value itself."""
    if "%" not in value and "+" not in value:
        return ""
    d = unquote_plus(value)
    return d if d != value else ""


def binary_value(name: str, value: str) -> str:
    """A gRPC binary header's value (its name ends in `-bin`: base64, padded or not,
    PROTOCOL-HTTP2.md "Binary-Header") as its receiver reads it: decoded, then each string
    field where it is a protobuf message (wire/grpc.strings), one a line; "" for any other
    header, or a value that is not base64 (a gRPC receiver refuses the call)."""
    if not name.lower().endswith("-bin"):
        return ""
    raw = value.strip().encode("ascii", "replace")
    try:
        data = base64.b64decode(raw + b"=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        return ""
    texts = [data]
    try:
        texts += [t for path, t in grpc.strings(data) if path]
    except grpc.Unreadable:
        pass
    return "\n".join(t.decode("utf-8", "replace") for t in texts)


# A header value continued on the next line (obs-fold): mitmproxy keeps the fold in the
# value ("Acme\r\n Corp") and forwards it so; the receiver replaces it by a space (RFC
# 9112 5.2: "replace each received obs-fold with one or more SP octets"; h11 does, with
# one), and reads "Acme Corp".
_FOLD = re.compile(r"\r?\n[ \t]+")


def unfolded(value: str) -> str:
    """A header's value as an HTTP/1.1 receiver reads it: each obs-fold one space."""
    return _FOLD.sub(" ", value) if "\n" in value else value


def without_credential_headers(headers: Iterable[tuple[str, str]], slots: Slots) -> list[tuple[str, str]]:
    """The headers less the client's credentials in their slots (a credential header
    left out, a credential entry of Sec-WebSocket-Protocol taken out of its list), each
    value unfolded as its receiver reads it (unfolded): what the leak guard reads of
    them, and the audit."""
    out = []
    for name, value in headers:
        n = name.lower()
        if n in slots.headers:
            continue
        value = unfolded(value)
        out.append((name, _without_subprotocols(value, slots) if n == _SUBPROTOCOLS else value))
    return out


def _readings(name: str, value: str) -> tuple[str, str, str, str]:
    """What scan_headers reads of a header: its value, its name, its value percent- and
    base64-decoded."""
    return value, name, decoded_value(value), binary_value(name, value)


def scan_headers(headers: Iterable[tuple[str, str]], rules: Rules, slots: Slots | None = None) -> Hit | None:
    """Every header but the client's credentials in their slots (registry.slots_for; by
    default any provider's credential headers): its value as it is and percent-decoded
    (decoded_value), and its name."""
    if slots is None:
        slots = slots_for("")
    # (lower-case name, name, value) of each header read, less those the rule set
    # remembers finding nothing in (a client sends the same ones at every request, and
    # the Guard reads them once more: rules/found.py), unless find() finds more than
    # the rule set does (copies of the request's originals: knowing.Knowing.copies)
    read = [(n, name, value) for name, value in without_credential_headers(headers, slots)
            if (n := name.lower()) != "content-length" or not (value.isascii() and value.isdigit())]  # fmt: skip
    found = rules.found
    if found is not None:
        unmet = found.unmet_headers(read)
        if rules.copies and len(unmet) < len(read):
            # nothing the rules find in those remembered; a copy of the request's
            # originals is found there still (one pass over their readings)
            left = set(map(id, unmet))
            met = [h for h in read if id(h) not in left]
            copied = {met[k // 4] for k in rules.holding([t for h in met for t in _readings(h[1], h[2])])}
            unmet = [h for h in read if id(h) in left or h in copied]
        read = unmet
        if not read:
            return None
    # every value and name scanned in one go (Rules.prescan: one pass of each engine over
    # them all, ~20 short texts a request, each else a find() of its own); only where it
    # marks one is it read exactly, with what the scan found (the memo: the same spans)
    texts = [_readings(name, value) for _, name, value in read]
    hot, memo = rules.prescan([t for four in texts for t in four])
    unmarked: list[tuple[str, str]] = []
    for k, (n, name, value) in enumerate(read):
        if not any(4 * k + i in hot for i in range(4)):
            unmarked.append((name, value))
            continue
        lab = first(rules, value, memo=memo) or first(rules, name, memo=memo)
        how = ""
        for i, said in ((2, " (percent-decoded)"), (3, " (base64-decoded)")):
            if lab is None and 4 * k + i in hot:
                lab, how = first(rules, texts[k][i], memo=memo), said
        if lab is not None:
            where = n if first(rules, n) is None else "<name>"
            return Hit(lab, f"header {where}{how}")
        if found is not None and not any(rules.base.find(texts[k][i]) for i in range(4) if 4 * k + i in hot):
            unmarked.append((name, value))  # (the rule set itself finds nothing there either)
    if found is not None:
        # nothing the rule set finds in these (its scan marked nothing, or its find()
        # found nothing where it did): nothing under any knowing of disguises (which only
        # drops spans: knowing.Knowing) or none. (One read under disguises with nothing
        # found may hold a span they drop: the rule set's own reading decides.)
        found.add_clean_headers(unmarked)
    return None


def scan_text_headers(headers: Iterable[tuple[str, str]], declared: Iterable[TextHeader], rules: Rules) -> Hit | None:
    """The headers an API declares its clients fill with their own text (Api.headers), read
    as their declaration reads them (JSON text decoded: an original written with escapes),
    beside scan_headers' reading of every header as it is: what the masker masked."""
    rule_of = {h.name: h.rule for h in declared}
    for name, value in headers:
        rule = rule_of.get(name.lower())
        hit = scan_json(unfolded(value), rules, rule) if rule is not None else None
        if hit is not None:
            return Hit(hit.rule, f"header {name.lower()} (read as {rule!r}: {hit.where})")
    return None


def scan_trailers(trailers: Iterable[tuple[str, str]], rules: Rules) -> Hit | None:
    """A request's trailer fields (HTTP/2, chunked HTTP/1.1), read as headers are; none of
    them is a credential slot. A hit says `trailer NAME`."""
    hit = scan_headers(trailers, rules, Slots())
    return None if hit is None else Hit(hit.rule, "trailer" + hit.where.removeprefix("header"))


def scan_request(
    path: str,
    headers: Iterable[tuple[str, str]],
    body: bytes | None,
    rules: Rules,
    api: Api | RealtimeApi | None = None,
    content_type: str = "",
    memo: dict | None = None,
    parsed: tuple[bytes, object] | None = None,
    dest: Destination | None = None,
) -> Hit | None:
    """URL, headers and body, in that order; the first hit or None. api: the API whose
    table the body is read with; None for an endpoint nobody transforms (everything).
    The credentials in the slots of the providers the request is for (those of api,
    those of dest's hosts: registry.slots_for) are left alone.

    memo: what one scan of the masker's texts found (Rules.prescan, handed on by
    masking.mask_doc): a text it holds is not scanned again. For a text in it, memo says
    exactly what a scan of that same text would say (its literal matches, the patterns
    that may match), so the verdict cannot change; a text masking changed, or one the
    masker did not read, is not in it and is scanned in full."""
    headers = list(headers)
    slots = slots_for(path, api, dest, headers)
    http_api = None if isinstance(api, RealtimeApi) else api  # a WebSocket upgrade: no body model
    return (
        scan_url(path, rules, slots)
        or scan_headers(headers, rules, slots)
        or (scan_text_headers(headers, http_api.headers, rules) if http_api is not None and http_api.headers else None)
        or (scan_body(body, rules, http_api, content_type, memo, parsed) if body else None)
    )


WITHHELD = "<original>"
_PIECES = re.compile(r"([/?&=#;:@,]+)")  # where a path, a query or a host divides


def _clean(rules: Rules, text: str) -> bool:
    return all(first(rules, t) is None for t in url_readings(text))


def shown(text: str, rules: Rules | None) -> str:
    """A request's own text (a path, a host, a header's value) as a message may show
    it: as it is when masking would replace nothing in it (read percent-decoded too);
    else each piece between separators (`/`, `?`, `&`, `=`, ...) that holds an original
    replaced by <original>, or the whole when an original spans pieces. Without rules
    nothing can be shown to be clean: none of it is shown. The one function every message of
    the addon names request text through."""
    if rules is None:
        return "<not shown: no rules in force>"
    if _clean(rules, text):
        return text
    parts = _PIECES.split(text)
    out = "".join(p if i % 2 or _clean(rules, p) else WITHHELD for i, p in enumerate(parts))
    return out if _clean(rules, out) else WITHHELD


# the methods a message shows as they are where no rules are in force (no other text is)
_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"))


def place(method: str, path: str, rules: Rules | None) -> str:
    """`METHOD /path` for a message, the query left out, the path through `shown`, and
    the method too (it leaves in the request line: a client may put an original there),
    one of HTTP's own shown as it is where no rules are in force."""
    m = method if rules is None and method in _METHODS else shown(method, rules)
    return f"{m} {shown(path.split('?', 1)[0], rules)}"


__all__ = [
    "AS_WRITTEN",
    "WITHHELD",
    "WITHHELD_PATH",
    "json_place",
    "Hit",
    "place",
    "shown",
    "context_of",
    "first",
    "scan_body",
    "scan_json",
    "scan_request",
    "scan_text_headers",
    "scan_trailers",
    "spans",
]
