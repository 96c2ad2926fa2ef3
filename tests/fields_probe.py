"""Probes what the code does with one field path: a document holding a sentinel at that
path goes through the real masker or reverser; the answer is the observed decision."""

from __future__ import annotations

import json
import re

from disguiselib import leakguard
from disguiselib.apis import registry as engine
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base import fields
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.rules import mappings, rules
from disguiselib.wire.sse import Framer

ORIG, DISG = "Acme Corp", "Zenith Labs"
WIN, WIN_D = 'C:\\Users\\a "b"', "WINPATH"
RULES = rules.Rules(mappings.from_dict({"literals": {ORIG: DISG, WIN: WIN_D}}))

_SEG = re.compile(r"\.([^.\[<{]+)|\[\]|\{\}#key|\{\}|<([^>]+)>")

REQUEST = {"anthropic-request": anthropic.MESSAGES_REQUEST, "anthropic-batch": anthropic.BATCH_REQUEST,
           "chat-request": openai_chat.CHAT_REQUEST, "responses-request": openai_responses.RESPONSES_REQUEST}  # fmt: skip
RESPONSE = {"anthropic-response": anthropic.MESSAGE_RESPONSE, "chat-response": openai_chat.CHAT_RESPONSE,
            "responses-response": openai_responses.RESPONSE_OBJECT}  # fmt: skip
STREAM = {"anthropic-stream": anthropic.AnthropicStream, "chat-stream": openai_chat.ChatStream,
          "responses-stream": openai_responses.ResponsesStream}  # fmt: skip


def segments(path: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(path):
        m = _SEG.match(path, pos)
        assert m is not None, (path, pos)
        tok = m.group(0)
        if tok == "[]":
            out.append(("item", ""))
        elif tok == "{}":
            out.append(("value", "k"))
        elif tok == "{}#key":
            out.append(("key", ""))
        elif m.group(2) is not None:
            out.append(("variant", m.group(2)))
        else:
            out.append(("field", m.group(1)))
        pos = m.end()
    return out


def build(path: str, value: object, root: dict | None = None) -> dict:
    """A document with value at path (and each variant's `type` set)."""
    doc: dict = root if root is not None else {}
    cur: object = doc
    segs = segments(path)
    i = 0
    parent = None
    while i < len(segs):
        kind, name = segs[i]
        last = i == len(segs) - 1
        if kind == "variant":
            if not isinstance(cur, dict):
                cur = {}
                _set(parent, cur)
            cur["type"] = name  # type: ignore[index]
            i += 1
            if last:
                break
            continue
        if kind == "key":  # value goes in as a map key
            assert isinstance(cur, dict)
            cur[value if isinstance(value, str) else "k"] = "v"  # type: ignore[index]
            return doc
        nxt: object = value if last else ([] if segs[i + 1][0] == "item" else {})
        if kind == "field":
            assert isinstance(cur, dict), (path, cur)
            cur[name] = nxt
            parent = (cur, name)
        elif kind == "value":
            assert isinstance(cur, dict)
            cur[name] = nxt
            parent = (cur, name)
        else:  # item
            assert isinstance(cur, list)
            cur.append(nxt)
            parent = (cur, len(cur) - 1)
        cur = nxt
        i += 1
    return doc


def _set(parent, value) -> None:
    c, k = parent
    c[k] = value


def get(doc: object, path: str) -> object:
    cur = doc
    for kind, name in segments(path):
        if kind == "variant":
            continue
        if kind == "key":
            return next(iter(cur)) if isinstance(cur, dict) and cur else None  # type: ignore[arg-type]
        try:
            cur = cur[0] if kind == "item" else cur[name]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


# Fields that hold base64 media with a MIME type beside them (Anthropic `source` with
# `media_type`) or a data: URL (OpenAI `file_data`): probed as media (see _media).
MEDIA_FIELDS = (".source<base64>.data", ".file_data", "<inline>.source.data")


def _media(run_doc, path: str, before: str, after: str) -> str | None:
    """"media" when binary media passes untouched and text media is decoded, masked
    (before -> after) and encoded again; None when the field is not media to the code.
    (Requests only: in an answer media passes as it came, restore.restore_fn.)"""
    import base64

    def with_type(mime: str, payload: bytes) -> object:
        b64 = base64.b64encode(payload).decode()
        if path.endswith(".file_data"):
            return get(run_doc(build(path, f"data:{mime};base64,{b64}")), path)
        doc = build(path, b64)
        parent = get(doc, path.rsplit(".", 1)[0])
        assert isinstance(parent, dict)
        parent["media_type"] = mime
        return get(run_doc(doc), path)

    binary = b"\x89PNG\r\n" + before.encode()
    got_bin = with_type("image/png", binary)
    want_bin = ("data:image/png;base64," if path.endswith(".file_data") else "") + base64.b64encode(binary).decode()
    if got_bin != want_bin:
        return None
    got_txt = with_type("text/plain", f"notes about {before}".encode())
    payload = got_txt.split(",", 1)[1] if isinstance(got_txt, str) and got_txt.startswith("data:") else got_txt
    try:
        decoded = base64.b64decode(payload).decode()  # type: ignore[arg-type]
    except ValueError:
        return "media (text media not encoded again)"
    return "media" if decoded == f"notes about {after}" else "media (text media not transformed)"


def _thinking_turns(doc: object) -> None:
    """A message built without a role that holds thinking is the assistant's: thinking
    comes back only in the model's turn (elsewhere it is unknown content, masked:
    tests/apis/anthropic/test_messages_request.py)."""
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            blocks = v.get("content")
            if "role" not in v and isinstance(blocks, list) and any(
                isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in blocks
            ):
                v["role"] = "assistant"
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _is_key(path: str) -> bool:
    return path.endswith("{}#key")


# -- requests ---------------------------------------------------------------------------------


def request(surface: str, path: str, kind: str) -> str:
    """masked-json, masked-keys, masked, refused (a key sent as written, the request
    refused by the leak guard) or untouched, as observed."""
    rule = REQUEST[surface]

    def run_doc(doc: object) -> object:
        _thinking_turns(doc)
        out, _ = mask_body(json.dumps(doc).encode(), rule, RULES)
        return json.loads(out)

    def run(value: object) -> object:
        return run_doc(build(path, value))

    if kind == "json":
        got = get(run({ORIG: ORIG}), path)
        if got != {DISG: DISG} and got != {ORIG: DISG}:
            return "untouched"
        schema = {"type": "object", "properties": {ORIG: {"type": "string", "description": ORIG}}, "required": [ORIG]}
        want = {"type": "object", "properties": {DISG: {"type": "string", "description": DISG}}, "required": [DISG]}
        # a schema keeps its keywords (`type`, `properties`: the schema language's own
        # words), in a property's schema too, not inside an unknown keyword's value, where
        # the key `type` is the client's; `type`'s value is a word of the language, masked
        # only where it holds an original (fields.META). Its other keywords' values are
        # the client's: masked.
        typed = {"type": "object", "properties": {"p": {"type": "string"}}}
        unknown = {"x-unknown": {"type": ORIG}}
        # (the key `type` is the language's own there, not a key the masker reads, but
        # inside an unknown keyword's value it is the client's: an API's object that keeps
        # `type` at any depth, Within, is no schema)
        def type_keys(doc: object) -> bool:
            return any(f.is_key and f.value == "type" for f in fields.walk(build(path, doc), rule))

        own = not type_keys(typed) and type_keys(unknown)
        keyword = (own and get(run(typed), path) == typed and get(run(unknown), path) != unknown
                   and get(run({"type": ORIG}), path) == {"type": DISG})
        ids = {"$id": ORIG, "$schema": ORIG, "format": ORIG}
        if keyword and get(run(ids), path) != dict.fromkeys(ids, DISG):
            return "schema (`$id`, `$schema` or `format` untouched)"
        if keyword and get(run(schema), path) == want:
            return "schema"
        return "masked-keys" if got == {DISG: DISG} else "masked"
    if path.endswith(MEDIA_FIELDS):
        media = _media(run_doc, path, ORIG, DISG)
        if media is not None:
            return media
    got = get(run(ORIG), path)
    if _is_key(path):
        if got == DISG:
            return "masked"
        # a key sent as written (fields.NAME): the leak guard refuses the request it is in
        out, _ = mask_body(json.dumps(build(path, ORIG)).encode(), rule, RULES)
        hit = _guard(out, rule)
        return "refused" if hit is not None and hit.where.endswith(leakguard.AS_WRITTEN) else "untouched"
    if got != DISG:
        return "untouched"
    # JSON text in the string: masked as JSON on decoded characters, keys too
    text = json.dumps({ORIG: WIN})
    got = get(run(text), path)
    try:
        inner = json.loads(got)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "masked (JSON text broken)"
    return "masked" if inner == {DISG: WIN_D} else "masked (JSON text not decoded)"


def _guard(body: bytes, rule: object) -> leakguard.Hit | None:
    """The leak guard's reading of a request body through the table rule."""
    return leakguard.scan_json(fields.loads(body.decode()), RULES, rule)  # type: ignore[arg-type]


# -- whole responses ------------------------------------------------------------------------


def response(surface: str, path: str, kind: str) -> str:
    rule = RESPONSE[surface]

    def run_doc(doc: object) -> object:
        return json.loads(restore_body(json.dumps(doc).encode(), rule, RULES.restorer({})))

    return _restore_decision(lambda v: run_doc(build(path, v)), path, kind)


def _restore_decision(run, path: str, kind: str) -> str:
    if kind == "json":
        got = get(run({DISG: DISG}), path)
        if got == {ORIG: ORIG}:
            return "restored-keys"
        return "restored" if got == {DISG: ORIG} else "untouched"
    got = get(run(DISG), path)
    if _is_key(path):
        return "restored" if got == ORIG else "untouched"
    if got != ORIG:
        return "untouched"
    got = get(run(json.dumps({"p": WIN_D})), path)
    if got == json.dumps({"p": WIN}):
        return "restored-json"
    if got == '{"p": "' + WIN + '"}':
        return "restored"
    return f"restored (odd: {got!r})"


# -- streams ------------------------------------------------------------------------------------

_EXTRAS = {"index": 0, "sequence_number": 0, "item_id": "it", "output_index": 0, "content_index": 0}


def _events(surface: str, docs: list[dict]) -> list[dict]:
    s = STREAM[surface](RULES.restorer({}))
    body = b""
    for d in docs:
        body += b"data: " + json.dumps(d).encode() + b"\n\n"
    out = s.feed(body) + s.flush()
    f = Framer()
    return [json.loads(e.data) for e in f.feed(out) + f.flush() if e.data and e.data != "[DONE]"]


def _event_doc(surface: str, path: str, value: object, n: int = 0) -> dict:
    root: dict = {} if surface == "chat-stream" else dict(_EXTRAS, sequence_number=n)
    if surface == "chat-stream":
        root = {"id": "c", "object": "chat.completion.chunk", "choices": []}
    doc = build(path, value, root)
    if surface == "chat-stream":
        for c in doc.get("choices", []):
            c.setdefault("index", 0)
            c.setdefault("finish_reason", None)
    return doc


def _same_kind(surface: str, path: str, d: dict) -> bool:
    if surface == "chat-stream":
        return "choices" in d
    segs = segments(path)
    return segs[0][0] != "variant" or d.get("type") == segs[0][1]


def stream(surface: str, path: str, kind: str) -> str:
    """windowed(-json), restored(-json/-keys) or untouched, as observed."""

    def run(value: object) -> object:
        ds = _events(surface, [_event_doc(surface, path, value)])
        return next((d for d in ds if _same_kind(surface, path, d)), {})

    whole = _restore_decision(run, path, kind)
    if kind == "json" or _is_key(path) or not whole.startswith("restored"):
        return whole
    # split across two events: does the text go through a window?
    text = DISG if whole == "restored" else json.dumps({"p": WIN_D})
    cut = text.index("Labs") if whole == "restored" else text.index("PATH")
    ds = _events(surface, [_event_doc(surface, path, text[:cut], 0), _event_doc(surface, path, text[cut:], 1)])
    got = "".join(v for d in ds if _same_kind(surface, path, d) and isinstance(v := get(d, path), str))
    want = ORIG if whole == "restored" else json.dumps({"p": WIN})
    if got == want:
        return "windowed" if whole == "restored" else "windowed-json"
    return whole


PROBES = {**dict.fromkeys(REQUEST, request), **dict.fromkeys(RESPONSE, response), **dict.fromkeys(STREAM, stream)}


def observe(surface: str, path: str, kind: str) -> str:
    return PROBES[surface](surface, path, kind)


__all__ = ["observe", "engine"]
