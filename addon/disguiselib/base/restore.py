"""Whole-body restore: a JSON document, JSON lines or text through the reverse rules
(sans I/O). The streams restore field by field with the same functions."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable

from ..errors import StreamError
from ..rules.restorer import JSON
from ..rules.rules import Restorer
from ..wire import jsonspan, spanwalk
from .jsonanswer import answers_json
from .logprobs import apply_fixes, logprob_fixes
from .offsets import citation_fixes, citing, quote_fixes, quoting

_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


def restore_fn(r: Restorer) -> Callable[[str, jsonspan.Rule], str]:
    def fn(v: str, rule: jsonspan.Rule) -> str:
        if rule.media is not None or rule.kind == "metadata":
            # Media in an answer (an echoed input file, generated data) passes as it came:
            # restoring inside base64 could only corrupt it, and the stream classes pass
            # events unparsed where no disguise shows in the raw bytes. So does the API's
            # own word (fields.META: masked in a request, where a client could write one).
            return v
        if rule.prose:
            return r.answer(v) if getattr(rule, "answer", False) else r.text(v)
        if rule.json_text:
            return r.json_text(v)
        return r.value(v)

    return fn


def restore_json(data: str, root: jsonspan.Rule, r: Restorer) -> str | None:
    """Restore the strings root selects in a JSON document; None when nothing changed.
    Text that is not JSON is restored as JSON text or as a value (never passed on as it
    came). Raises RecursionError for nesting too deep to read."""
    try:
        doc = jsonspan.loads(data)
    except ValueError:
        new = r.json_text(data) if jsonspan.looks_like_json(data) else r.value(data)
        return new if new != data else None
    new = restore_doc(data, doc, root, r)
    return None if new is data else new


def restore_doc(s: str, doc: object, root: jsonspan.Rule, r: Restorer) -> str:
    """The JSON text s (parsed: doc) with the strings root selects restored, its
    logprobs cleaned (logprobs.logprob_fixes), its citations' offsets moved to the
    restored text (offsets.citation_fixes) and those of its citations of the request's
    documents to the documents the client sent (offsets.quote_fixes); s itself when
    nothing changed."""
    new, changed = spanwalk.transform(s, doc, root, restore_fn(r))
    # only logprobs have tokens (`"token"`, `"tokens"`): rare, so checked cheaply first
    fixes = logprob_fixes(doc, r) if '"token' in s else []
    cites = changed and citing(s)  # citations count characters of a text restoring changed
    if r.documents and quoting(s):  # citations count characters of a document masking changed
        fixes += quote_fixes(doc, r.documents)
    if fixes or cites:
        out = json.loads(new)
        if cites:
            fixes += citation_fixes(doc, out, r)
        if fixes:
            apply_fixes(out, fixes)
            return dumps(out)
    return new if changed else s


def dumps(obj: object) -> str:
    """Compact JSON as the APIs send it: UTF-8, lone surrogates (half of a pair cut
    between two deltas) as \\u escapes."""
    out = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":"))
    return out


def restore_body(raw: bytes, root: jsonspan.Rule, r: Restorer) -> bytes:
    """A whole (non-streamed) response body, restored; raw itself if unchanged.

    JSON is restored field by field (root); JSON lines (Anthropic batch results) line
    by line; anything else as text. Bytes that are not UTF-8 are kept as they are and
    the text around them restored. Raises RecursionError for JSON nested too deeply to
    read (the caller answers with an error instead). A body in UTF-16 or UTF-32 (a
    byte-order mark, or the zero bytes ASCII leaves: json.detect_encoding, how
    json.loads and so the SDKs read bytes) is restored in its own encoding (_wide).
    """
    codec = json.detect_encoding(raw)
    if codec.startswith(("utf-16", "utf-32")):
        wide = _wide(raw, codec, root, r)
        if wide is not None:
            return wide
    return _restore_utf8(raw, root, r)


def _restore_utf8(raw: bytes, root: jsonspan.Rule, r: Restorer) -> bytes:
    """restore_body of UTF-8 bytes (any other byte kept as it is)."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        t = raw.decode("utf-8", "surrogateescape")
        new_t = r.value(t)
        return raw if new_t == t else new_t.encode("utf-8", "surrogateescape")
    try:
        doc = jsonspan.loads(s)
    except ValueError:
        lines = _json_lines(s, root, r)
        if lines is not None:
            return raw if lines == s else lines.encode("utf-8")
        new = r.json_text(s) if jsonspan.looks_like_json(s) else r.value(s)
        return raw if new == s else new.encode("utf-8")
    new = _restore_said(s, doc, root, r)
    return raw if new is s else new.encode("utf-8")


def _restore_said(s: str, doc: object, root: jsonspan.Rule, r: Restorer) -> str:
    """restore_doc of a whole document (or one JSON line) whose table declares where it
    says its answer is JSON (root.json_answer: a batch's result line saying what its
    request asked for, base/jsonanswer.py): where it says so, its answer text is restored
    as JSON text, for this document alone."""
    if not root.json_answer or r.output == JSON or not answers_json(doc, root):
        return restore_doc(s, doc, root, r)
    before, r.output = r.output, JSON
    try:
        return restore_doc(s, doc, root, r)
    finally:
        r.output = before


# Byte-order marks, UTF-32's first (its little-endian mark begins with UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))  # fmt: skip


def _wide(raw: bytes, codec: str, root: jsonspan.Rule, r: Restorer) -> bytes | None:
    """raw in UTF-16 or UTF-32 (codec: json.detect_encoding's), decoded as json decodes
    it, restored as a UTF-8 body is, and encoded back in its own encoding, its byte-order
    mark kept; raw itself if unchanged. None where it does not decode in that encoding
    (it is no such text: read as any other bytes). StreamError where the restored text
    cannot be encoded back."""
    bom = b""
    for mark, name in _BOMS:
        if raw.startswith(mark):
            bom, codec = mark, name
            break
    try:
        text = raw[len(bom) :].decode(codec)
    except UnicodeDecodeError:
        return None
    utf8 = text.encode("utf-8")  # (strict decoding left no lone surrogate)
    new = _restore_utf8(utf8, root, r)
    if new is utf8:
        return raw
    try:
        return bom + new.decode("utf-8").encode(codec)
    except UnicodeError:
        raise StreamError(f"the restored body cannot be encoded back in {codec}") from None


def _json_lines(s: str, root: jsonspan.Rule, r: Restorer) -> str | None:
    """s restored as JSON lines (each non-blank line one JSON document); None if some
    line is not JSON."""
    try:
        return edit_json_lines(s, lambda n, body, doc: _restore_said(body, doc, root, r))
    except JsonLineError as e:
        if isinstance(e.cause, RecursionError):
            raise e.cause from None
        return None


class JsonLineError(ValueError):
    """A line of a JSON-lines text that cannot be read (`cause`: jsonspan.loads's error)."""

    def __init__(self, number: int, cause: ValueError | RecursionError) -> None:
        super().__init__(f"line {number}: {cause}")
        self.number = number
        self.cause = cause


def edit_json_lines(
    text: str, edit: Callable[[int, str, object], str], parse: Callable[[str], object] = jsonspan.loads
) -> str:
    """The one reading of a JSON-lines text (batch inputs and results): each non-blank
    line's JSON replaced by edit(its number from 1, its text without the line end, its
    document as parse reads it), the line end and blank lines kept. JsonLineError for a
    line that is not JSON or is nested too deeply to read."""
    out = []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        if not body.strip():
            out.append(line)
            continue
        try:
            doc = parse(body)
        except (ValueError, RecursionError) as e:
            raise JsonLineError(n, e) from e
        out.append(edit(n, body, doc) + line[len(body) :])
    return "".join(out)


def reencode_field(data: str, start: int, end: int, raw: str, value: str) -> str:
    """data with the JSON string body data[start:end] (== raw) replaced by value."""
    if jsonspan.plain(value):  # as it is, in any style (the common case: text held back)
        return data[:start] + value + data[end:]
    return data[:start] + jsonspan.encode_like(value, raw)[1:-1] + data[end:]


def decode_field(data: str, start: int, end: int) -> str:
    """The decoded value of the JSON string body data[start:end]."""
    raw = data[start:end]
    if "\\" not in raw:
        return raw
    return _scanstring(data, start)[0]


