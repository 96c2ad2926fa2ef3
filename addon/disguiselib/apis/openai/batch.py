"""OpenAI Batch files: the input file masked line by line, the results restored line by
line (sans I/O).

https://platform.openai.com/docs/guides/batch: the input is a JSON-lines file uploaded
with `POST /v1/files` (multipart/form-data, `purpose=batch`); each line is one request,
`{"custom_id", "method", "url", "body"}`, whose body is read by the API its `url` names
(`/v1/chat/completions`, `/v1/responses`, `/v1/embeddings`, `/v1/completions`, ...).
Each line's body is masked with that API's own table, every other byte of the upload
kept. The results come back with `GET /v1/files/{id}/content`, one line per request:
`{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`, the
body an answer of the API (told by its `object`), restored line by line.

Placeholders: the batch runs later and its results are fetched by another request, so
nothing ties them to the upload (no state is kept between requests): literals are
restored in the results, placeholders (`[EMAIL_1]`) stay as they are. One numbering
runs through the whole file.

A file uploaded for another purpose (fine-tuning, assistants, vision) is not a batch:
it is handled as a request to an endpoint disguise does not transform (NotTransformed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import quote, unquote

from ...base.bodies import Part, Reading, boundary, media_type, parameters, split_multipart
from ...base.bodies import readings as body_readings
from ...base.document import repeated
from ...base.fields import CLIENT_ID, GENERIC, ID, META, TEXT, loads
from ...base.masking import as_text, mask_doc, mask_fn
from ...base.media import decode_text
from ...base.restore import JsonLineError, edit_json_lines, restore_body
from ...base.wirespec import JSON_LINES, WireSpec
from ...errors import MaskError, NotTransformed
from ...rules.rules import Restorer, Rules, Session
from ...wire import jsonspan
from ...wire.jsonspan import Rule
from . import chat as openai_chat
from . import legacy
from . import responses as openai_responses


class BatchLine(Rule):
    """One line of a batch input file: its body is read with the table of the API its
    method and url name (route); a url no table knows: everything in the body masked."""

    string = True
    kind = "unknown"

    def __init__(self, route: Callable[[str, str], Rule | None]) -> None:
        self.route = route
        self._rules: dict[Rule | None, jsonspan.Obj] = {}

    def resolve(self, value: object) -> Rule:
        if not isinstance(value, dict):
            return GENERIC.resolve(value)
        method, url = value.get("method"), value.get("url")
        body = self.route(method, url) if isinstance(method, str) and isinstance(url, str) else None
        rule = self._rules.get(body)
        if rule is None:
            rule = self._rules[body] = jsonspan.Obj(
                {"custom_id": CLIENT_ID, "method": META, "url": META, "body": body or GENERIC}, default=GENERIC
            )
        return rule


class _ResultBody(Rule):
    """A batch result's body: an answer of the API its `object` names."""

    string = True
    kind = "unknown"

    def resolve(self, value: object) -> Rule:
        obj = value.get("object") if isinstance(value, dict) else None
        return _BODIES.get(obj, GENERIC).resolve(value)  # type: ignore[arg-type]


_BODIES: dict[str, Rule] = {
    "chat.completion": openai_chat.CHAT_RESPONSE,
    "response": openai_responses.RESPONSE_OBJECT,
    legacy.OBJECT: legacy.COMPLETIONS_RESPONSE,
    "list": legacy.EMBEDDINGS_RESPONSE,
}
RESULT_LINE = jsonspan.Obj(
    {
        "id": ID,
        "custom_id": CLIENT_ID,
        "response": jsonspan.Obj({"status_code": META, "request_id": ID, "body": _ResultBody()}, default=GENERIC),
        "error": GENERIC,
    },
    default=GENERIC,
    # A Responses result says what its request asked for in its own `text.format`: where
    # that is JSON, its answer's text is JSON text (base/restore.py, line by line). A Chat
    # Completions result says nothing, and no state ties results to the batch's requests:
    # its answer stays text.
    json_answer=tuple((("response", "body", *p), w) for p, w in openai_responses.RESPONSES_REQUEST.json_answer),
)


# Batch files' vocabulary (base/wirespec.py): JSON lines, each naming its request.
SPEC = WireSpec("openai.batch", ("apis.openai.batch", "apis.anthropic.messages"), (JSON_LINES,), type_member=None,
                members=frozenset({"custom_id"}))  # fmt: skip


def restore_results(raw: bytes, restorer: Restorer) -> bytes:
    """A downloaded file (`GET /v1/files/{id}/content`): batch results restored line by
    line (RESULT_LINE), any other text file as text; a file that is not UTF-8 text (an
    image, a PDF) passes as it came: restoring inside binary bytes could only corrupt it."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    return restore_body(raw, RESULT_LINE, restorer)


# -- the upload ----------------------------------------------------------------------------------


def _filename(part: Part) -> tuple[str, str] | None:
    """(param, value) of the part's file name as its header writes it."""
    d = part.disposition
    if "filename*" in d:
        return "filename*", d["filename*"]
    if "filename" in d:
        return "filename", d["filename"]
    return None


class BatchUpload:
    """The body model of `POST /v1/files`: a multipart form whose `purpose` is `batch`
    and whose `file` is JSON lines of requests (BatchLine); the file name is text, the
    purpose the API's word, any other field unknown (masked)."""

    def __init__(self, line: Rule) -> None:
        self.line = line

    def _parts(self, body: bytes, content_type: str) -> tuple[bytes, list[Part]]:
        if media_type(content_type) != "multipart/form-data":
            raise NotTransformed("not a multipart form")
        bound = boundary(content_type)
        parts = split_multipart(body, bound) if bound else None
        if not parts:
            raise NotTransformed("a multipart form without parts")
        purpose = [p for p in parts if p.name == "purpose"]
        if len(purpose) != 1 or body[purpose[0].body_start : purpose[0].body_end].strip() != b"batch":
            raise NotTransformed("a file upload whose purpose is not batch")
        if sum(p.name == "file" for p in parts) != 1:
            raise MaskError("a batch upload must hold exactly one file part")
        return bound, parts  # type: ignore[return-value]

    # -- what the leak guard reads (the same places the masker masks) --

    def readings(self, body: bytes, content_type: str) -> Iterator[Reading]:
        try:
            _, parts = self._parts(body, content_type)
        except (NotTransformed, MaskError):
            yield from body_readings(body, content_type)  # not a batch: everything
            return
        yield Reading("body (multipart preamble)", _utf8(body[: parts[0].start]), rule=TEXT)
        yield Reading("body (multipart epilogue)", _utf8(body[parts[-1].body_end :]), rule=TEXT)
        for p in parts:
            data = body[p.body_start : p.body_end]
            if p.name == "purpose":
                continue
            fn = _filename(p)
            if fn is not None:
                yield Reading(f"part {p.name!r} {fn[0]}", _filename_text(fn), rule=TEXT)
            if p.name != "file":
                yield Reading(f"part {p.name!r}", _utf8(data), rule=TEXT)
                continue
            text = _file_text(data)[0]
            for n, line in _lines(text):
                try:
                    yield Reading(f"file line {n}", line, loads(line), self.line)
                except (ValueError, RecursionError):
                    yield Reading(f"file line {n}", line)
        # each part's headers, as written and as their parameters decode (a header other
        # than the file name's, a name continued, `filename*0*=`, or in encoded words:
        # nothing masks them, so an original there is refused)
        for i, p in enumerate(parts):
            yield Reading(f"part {i + 1} headers", _utf8(body[p.start : p.body_start]), rule=TEXT)
            yield from parameters(p.headers, f"part {i + 1}")

    # -- masking --

    def mask(self, body: bytes, content_type: str, rules: Rules) -> tuple[bytes, Session]:
        """The upload with every line's request masked as its API's, the file name and
        any field but `purpose` masked as text. Raises NotTransformed (not a batch
        upload), MaskError (a batch file that cannot be read)."""
        bound, parts = self._parts(body, content_type)
        session = Session()
        fn = mask_fn(rules, session)
        delim = b"--" + bound
        edits: list[tuple[int, int, bytes]] = []

        def text_edit(a: int, b: int) -> None:
            t = _utf8(body[a:b])
            new = as_text(t, fn(t, TEXT, None))
            if new != t:
                edits.append((a, b, new.encode("utf-8", "surrogateescape")))

        text_edit(0, parts[0].start)
        for p in parts:
            if p.name == "purpose":
                continue
            fn_param = _filename(p)
            if fn_param is not None:
                edits.extend(_filename_edit(body, p, fn_param, lambda t: as_text(t, fn(t, TEXT, None))))
            if p.name != "file":
                text_edit(p.body_start, p.body_end)
                continue
            new = self._mask_file(body[p.body_start : p.body_end], rules, session)
            if new is not None:
                edits.append((p.body_start, p.body_end, new))
        text_edit(parts[-1].body_end, len(body))
        if not edits:
            return body, session
        out = []
        pos = 0
        for a, b, rep in sorted(edits):
            if delim in rep:
                raise MaskError("the masked batch file would contain the multipart boundary")
            out += [body[pos:a], rep]
            pos = b
        out.append(body[pos:])
        return b"".join(out), session

    def _mask_file(self, data: bytes, rules: Rules, session: Session) -> bytes | None:
        text, bom, codec = _file_text(data)
        masked = 0
        clashes: list = []  # the line's objects that repeat a key with values that differ

        def mask_line(n: int, body: str, doc: object) -> str:
            nonlocal masked
            if clashes:
                raise repeated(doc, clashes, f"batch file line {n}")
            try:
                new, k = mask_doc(body, doc, self.line, rules, session)
            except (KeyError, IndexError, TypeError) as e:
                raise MaskError(f"batch file line {n} repeats a key with values of different shapes") from e
            masked += k
            return new

        try:
            out = edit_json_lines(text, mask_line, lambda line: loads(line, clashes))
        except JsonLineError as e:
            why = "is nested too deeply to be read" if isinstance(e.cause, RecursionError) else "is not JSON"
            raise MaskError(f"batch file line {e.number} {why}") from e
        return (bom + out.encode(codec)) if masked else None


def _file_text(data: bytes) -> tuple[str, bytes, str]:
    got = decode_text(data, None)
    if got is None:
        raise MaskError("the batch file is not UTF-8 text")
    return got


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a JSON-lines file, numbered from 1 (blank ones too: numbers stay true)."""
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        yield n, line.rstrip("\r\n")


def _filename_text(param: tuple[str, str]) -> str:
    """The file name a receiver reads (RFC 5987 for `filename*`: charset'lang'encoded)."""
    name, value = param
    if name != "filename*":
        return value
    cs, _, rest = value.partition("'")
    return unquote(rest.partition("'")[2], encoding=cs or "utf-8")


def _utf8(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _filename_edit(
    body: bytes, p: Part, param: tuple[str, str], mask: Callable[[str], str]
) -> list[tuple[int, int, bytes]]:
    """The edit that masks a part's file name in its Content-Disposition header."""
    name, value = param
    head = body[p.start : p.body_start]
    if name == "filename*":  # RFC 5987: charset'lang'percent-encoded
        cs, _, rest = value.partition("'")
        lang = rest.partition("'")[0]
        plain = _filename_text(param)
        new = mask(plain)
        if new == plain:
            return []
        old_raw, new_raw = value, f"{cs}'{lang}'{quote(new, encoding=cs or 'utf-8')}"
    else:
        new = mask(value)
        if new == value:
            return []
        old_raw, new_raw = value, new
    m = re.search(re.escape(name.encode()) + rb'\s*=\s*"?' + re.escape(old_raw.encode("utf-8")), head, re.IGNORECASE)
    if m is None:
        raise MaskError("the batch file's name could not be masked in its header")
    a = p.start + m.end() - len(old_raw.encode("utf-8"))
    return [(a, a + len(old_raw.encode("utf-8")), new_raw.replace('"', "%22").encode("utf-8"))]
