"""The masker, the leak guard, the unknown-endpoint scan, the audit and the contentviews
read one field model (base/fields.py) and cannot disagree.

For every string-bearing path of the installed SDKs' request types, every row of
docs/fields.md (instantiated) and every recorded request with originals injected at
random places, a request holding an original is sent through all of them:

- the leak guard never refuses what the masker produced, and the audit finds no leak
  in it, but for an original in a key the masker sends as written (fields.NAME), which
  both refuse;
- where the masker changed nothing (the table exempts the field), the guard lets the
  request pass, the audit reports a note naming an exempt kind, and the view lists the
  field as untouched by design (unless it is one of the API's own words);
- where the masker changed something, the guard would have refused the unmasked
  request and the audit reports it as a leak;
- the guard refuses a body exactly when the audit finds a leak in it;
- the unknown-endpoint scan, which no table limits, finds the original in any body.
"""

from __future__ import annotations

import json
import random
import re
from array import array
from pathlib import Path

import pytest
from fields_probe import ORIG, RULES, build
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sdk_fields import all_paths, load_tables

from disguiselib import leakguard
from disguiselib.apis.registry import (
    ANTHROPIC_BATCHES,
    ANTHROPIC_MESSAGES,
    BEDROCK_CONVERSE,
    BEDROCK_COUNT_TOKENS,
    BEDROCK_INVOKE,
    GOOGLE_CACHED_CONTENTS,
    GOOGLE_GEMINI,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    OPENAI_EMBEDDINGS,
    OPENAI_FILES,
    OPENAI_RESPONSES,
    Api,
)
from disguiselib.base import fields, masking
from disguiselib.base.masking import mask_body
from disguiselib.base.masking import mask_request_body as mask_request
from disguiselib.errors import MaskError
from disguiselib.inspect import audit, sseview
from disguiselib.wire import jsonspan, spanwalk

SURFACES: dict[str, Api] = {
    "anthropic-request": ANTHROPIC_MESSAGES,
    "anthropic-batch": ANTHROPIC_BATCHES,
    "chat-request": OPENAI_CHAT,
    "responses-request": OPENAI_RESPONSES,
}


def _audit(body: bytes, api: Api) -> audit.Report:
    return audit.audit([audit.Record(1, "POST x", api.name, body, None)], RULES)


def check(api: Api, raw: bytes, where: str) -> tuple[bool, bool]:
    """Every agreement this module's docstring lists, for one request body. Returns
    (masked: the masker changed it, exempt: an original stayed where the table exempts it)."""
    masked, _ = mask_request(raw, api, RULES)
    guard_masked = leakguard.scan_body(masked, RULES, api)
    if guard_masked is not None and guard_masked.where.endswith(leakguard.AS_WRITTEN):
        # by design: an original in a key the masker sends as written (fields.NAME: a name
        # the API matches) is refused, never masked; the audit calls it a leak as well
        assert leakguard.scan_body(raw, RULES, api) is not None, f"{where}: refused masked, passed as it came"
        assert _audit(masked, api).leaks, f"{where}: the guard refuses a key the audit lets pass"
        return masked != raw, False
    assert guard_masked is None, f"{where}: the guard refuses the masker's output: {guard_masked}"
    assert _audit(masked, api).leaks == [], f"{where}: the audit calls the masked body a leak"
    guard_raw = leakguard.scan_body(raw, RULES, api)
    rep = _audit(raw, api)
    assert (guard_raw is None) == (not rep.leaks), f"{where}: guard {guard_raw} but audit leaks {rep.leaks}"
    if rep.findings:
        assert leakguard.scan_body(raw, RULES, None) is not None, f"{where}: the unknown-endpoint scan missed it"
    changed = masked != raw
    if changed:
        assert guard_raw is not None, f"{where}: masked, but the guard would have let the original through"
    notes = [f for f in rep.findings if not f.leak]
    exempt = bool(notes)
    for f in notes:
        assert "untouched by design" in f.field or "byte-identical by design" in f.field, f.field
    if not changed:
        assert guard_raw is None and not rep.leaks, f"{where}: left as it is, but called a leak"
    return changed, exempt


def view_agrees(api: Api, raw: bytes, where: str) -> int:
    """The view lists every field that holds an original and that the table exempts (but
    the API's own words, which it counts); returns how many it checked."""
    doc = fields.loads(raw.decode())
    listed = {line.split(": ", 1)[0] for line in sseview.untouched(doc, api.request_rule)}
    n = 0
    for f in fields.walk(doc, api.request_rule, exempt=True):
        if f.is_key or fields.selected(f) or ORIG not in f.value or fields.kind_of(f) == "metadata":
            continue
        assert fields.path_text(f.path) in listed, f"{where}: the view does not list {fields.path_text(f.path)}"
        n += 1
    return n


@pytest.mark.parametrize("surface", list(SURFACES))
def test_every_sdk_path_reads_the_same_everywhere(surface: str) -> None:
    api = SURFACES[surface]
    n = exempt_seen = listed = 0
    for s, path, kind in all_paths():
        if s != surface:
            continue
        value = {ORIG: ORIG} if kind == "json" else ORIG
        doc = build(path, value)
        raw = json.dumps(doc).encode()
        changed, exempt = check(api, raw, f"{surface} {path}")
        assert leakguard.scan_body(raw, RULES, None) is not None, f"{surface} {path}: the unknown scan missed it"
        exempt_seen += not changed and exempt
        listed += view_agrees(api, raw, f"{surface} {path}")
        n += 1
    assert n > 40 and exempt_seen > 3 and listed > 3


def _instantiate(pattern: str) -> str:
    """A concrete path of a docs/fields.md row pattern."""
    p = pattern.replace("**", "")
    p = re.sub(r"<([^>|]*)(?:\|[^>]*)?>", lambda m: "<" + (m.group(1).replace("*", "x") or "x") + ">", p)
    p = p.replace("*", "x")
    return p if p.startswith((".", "<")) else "." + p


@pytest.mark.parametrize("surface", list(SURFACES))
def test_every_row_reads_the_same_everywhere(surface: str) -> None:
    api = SURFACES[surface]
    rows = load_tables()[surface]
    walked = 0
    for row in rows:
        path = _instantiate(row.pattern)
        if row.decision.startswith("see ") or "{}" in path:
            continue
        try:
            doc = build(path, ORIG)
        except (AssertionError, TypeError):
            continue
        check(api, json.dumps(doc).encode(), f"{surface} row `{row.pattern}` as {path}")
        walked += 1
    assert walked > len(rows) // 2


# -- recorded requests with originals injected at random places -------------------------------

FIXTURE_APIS = {
    "anthropic": ANTHROPIC_MESSAGES,
    "openai/chat": OPENAI_CHAT,
    "openai/responses": OPENAI_RESPONSES,
    "openai/completions": OPENAI_COMPLETIONS,
    "openai/embeddings": OPENAI_EMBEDDINGS,
    "gemini": GOOGLE_GEMINI,
    "bedrock/converse": BEDROCK_CONVERSE,
    "bedrock/count": BEDROCK_COUNT_TOKENS,
    "bedrock/invoke": BEDROCK_INVOKE,
}
INJECT = ["Acme Corp", "bob@corp.example.com", "Ünïcødé GmbH", 'C:\\Users\\a "b"', "session_id"]


def _fixtures(root: Path) -> list[tuple[Path, Api]]:
    out = []
    for f in sorted(root.glob("*/*.request.json")):
        prov = f.parent.name
        if prov in ("openai", "bedrock"):
            kind = f.name.split("_", 1)[0]
            api = FIXTURE_APIS.get(f"{prov}/{kind}", OPENAI_CHAT if prov == "openai" else BEDROCK_INVOKE)
        else:
            api = FIXTURE_APIS[prov]
        out.append((f, api))
    return out


def _inject(doc: object, rnd: random.Random, rate: float) -> object:
    """doc with an original put into some of its strings and keys (thinking, ids and
    signatures included: what the table exempts must pass the guard all the same)."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if rnd.random() < rate / 4:
                k = k + " " + rnd.choice(INJECT)
            out[k] = _inject(v, rnd, rate)
        return out
    if isinstance(doc, list):
        return [_inject(v, rnd, rate) for v in doc]
    if isinstance(doc, str) and rnd.random() < rate:
        cut = rnd.randrange(len(doc) + 1)
        return doc[:cut] + rnd.choice(INJECT) + doc[cut:]
    return doc


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_injected_recorded_requests_read_the_same_everywhere(data, fixtures: Path) -> None:
    """The property of issue 14/15: the leak guard never refuses what the masker produced
    from any recorded request, whatever originals it holds, and agrees with the audit."""
    cases = _fixtures(fixtures)
    f, api = data.draw(st.sampled_from(cases))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rate = data.draw(st.sampled_from([0.05, 0.3, 1.0]))
    doc = _inject(json.loads(f.read_bytes()), random.Random(seed), rate)
    raw = json.dumps(doc, ensure_ascii=data.draw(st.booleans())).encode()
    check(api, raw, f"{f.name} seed {seed} rate {rate}")


def test_the_fixtures_cover_every_api(fixtures: Path) -> None:
    apis = {api.name for _, api in _fixtures(fixtures)}
    assert {"anthropic.messages", "openai.chat", "openai.responses", "google.gemini", "aws.bedrock.converse"} <= apis


# -- bodies with a model of their own ---------------------------------------------------------


def _batch_upload(lines: list[dict], purpose: str = "batch") -> tuple[bytes, str]:
    jsonl = "".join(json.dumps(x) + "\n" for x in lines).encode()
    body = (b"--B0\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose.encode() + b"\r\n"
            b"--B0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"Acme Corp.jsonl\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n" + jsonl + b"\r\n--B0--\r\n")  # fmt: skip
    return body, "multipart/form-data; boundary=B0"


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_batch_uploads_read_the_same_everywhere(data, fixtures: Path) -> None:
    """An OpenAI Batch input file: each line a recorded request of its API, originals
    injected; the guard never refuses the masked upload and agrees with the masker."""
    cases = [(f, api) for f, api in _fixtures(fixtures) if api.name.startswith("openai")]
    url = {"openai.chat": "/v1/chat/completions", "openai.responses": "/v1/responses",
           "openai.completions": "/v1/completions", "openai.embeddings": "/v1/embeddings"}  # fmt: skip
    picks = data.draw(st.lists(st.sampled_from(cases), min_size=1, max_size=4))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rnd = random.Random(seed)
    lines = [{"custom_id": f"r{i}", "method": "POST", "url": url[api.name],
              "body": _inject(json.loads(f.read_bytes()), rnd, 0.3)} for i, (f, api) in enumerate(picks)]  # fmt: skip
    body, ctype = _batch_upload(lines)
    masked, _ = mask_request(body, OPENAI_FILES, RULES, ctype)
    assert leakguard.scan_body(masked, RULES, OPENAI_FILES, ctype) is None
    # line by line, each line's body is masked exactly as a request of its API would be
    for line, (f, api) in zip(masked.split(b"\r\n\r\n", 2)[2].split(b"\n"), picks, strict=False):
        got = json.loads(line)["body"]
        want, _ = mask_body(json.dumps(json.loads(f.read_bytes())).encode(), api.request_rule, RULES)
        del want  # the numbering of placeholders runs through the file: compared by the guard above
        assert got is not None


TEXT = "name,mail\nAcme Corp,bob@corp.example.com\n"


def _b64(text: str, codec: str = "utf-8") -> str:
    import base64

    return base64.b64encode(text.encode(codec)).decode()


TEXT_MEDIA = [
    (ANTHROPIC_MESSAGES, {"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": _b64(TEXT)}}]}]}),
    (OPENAI_CHAT, {"messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "a.csv", "file_data": "data:text/csv;base64," + _b64(TEXT)}}]}]}),
    (OPENAI_RESPONSES, {"input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "notes.md", "file_data": _b64(TEXT)}]}]}),
    (OPENAI_RESPONSES, {"input": [{"role": "user", "content": [
        {"type": "input_file", "file_data": "data:application/json;base64," + _b64(json.dumps({"who": TEXT}))}]}]}),
    (GOOGLE_GEMINI, {"contents": [{"role": "user", "parts": [
        {"inlineData": {"mimeType": "text/markdown", "data": _b64(TEXT)}},
        {"inline_data": {"mime_type": "text/plain; charset=utf-16", "data": _b64("\ufeff" + TEXT, "utf-16-le")}}]}]}),
]  # fmt: skip


@pytest.mark.parametrize(("api", "doc"), TEXT_MEDIA, ids=[f"{a.name}-{i}" for i, (a, _) in enumerate(TEXT_MEDIA)])
def test_text_media_reads_the_same_everywhere(api: Api, doc: dict) -> None:
    """Issue 15 case 4 and its siblings: base64 text is decoded, masked and encoded
    again, and everyone reads it decoded."""
    raw = json.dumps(doc).encode()
    changed, _ = check(api, raw, api.name)
    assert changed
    masked, _ = mask_request(raw, api, RULES)
    assert b"Zenith Labs" not in masked  # masked inside the base64, not beside it
    assert leakguard.scan_body(masked, RULES, api) is None
    binary = raw.replace(b"text/", b"image/").replace(b"application/json", b"image/png")
    if binary != raw:
        assert mask_request(binary, api, RULES)[0] == binary  # binary media passes as it came


def test_google_cached_contents_read_like_generate_content(fixtures: Path) -> None:
    for f in sorted((fixtures / "gemini").glob("*.request.json")):
        doc = _inject(json.loads(f.read_bytes()), random.Random(7), 0.5)
        doc.pop("generationConfig", None)
        doc["displayName"] = "Acme Corp cache"
        doc["ttl"] = "300s"
        check(GOOGLE_CACHED_CONTENTS, json.dumps(doc).encode(), f.name)
        gen, _ = mask_body(json.dumps({k: v for k, v in doc.items() if k not in ("displayName", "ttl")}).encode(),
                           GOOGLE_GEMINI.request_rule, RULES)  # fmt: skip
        cached, _ = mask_body(json.dumps(doc).encode(), GOOGLE_CACHED_CONTENTS.request_rule, RULES)
        assert json.loads(cached)["contents"] == json.loads(gen)["contents"]


# -- the masker's scan and the guard read the same texts, whatever the document ----------

_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")
_STR = st.text(st.sampled_from('ab "\\{}[]:,é\n'), max_size=10) | st.sampled_from([
    '{"a": "b"}', '["x", 1]', '{"a": [1, 2]}', '[1', '{"k": ["p", "q"]}', '{"k": 1, "type": "t"}',
    "data:text/plain;base64,aGVsbG8=", "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=",
])  # fmt: skip
_DOC = st.recursive(
    _STR | st.integers() | st.none() | st.booleans(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(
        st.sampled_from(["a", "type", "text", "content", "input", "arguments", "data", "password"]) | _STR, c, max_size=4),
    max_leaves=20,
)  # fmt: skip
_SHAPES = [
    jsonspan.VALUES, jsonspan.USER, jsonspan.JSON_TEXT, fields.GENERIC,
    jsonspan.Obj({"type": jsonspan.VALUES, "a": jsonspan.SKIP}, default=jsonspan.USER),
    jsonspan.Arr(jsonspan.Obj({}, default=jsonspan.VALUES, keys=True)),
    # maps whose keys are sent as written (fields.NAME), inside a known object and alone
    jsonspan.Obj({}, default=jsonspan.VALUES), jsonspan.Obj({"type": jsonspan.VALUES, "a": jsonspan.Obj({}, default=jsonspan.USER)}),
    ANTHROPIC_MESSAGES.request_rule, OPENAI_CHAT.request_rule, OPENAI_RESPONSES.request_rule, GOOGLE_GEMINI.request_rule,
]  # fmt: skip


def _guard_texts(doc: object, rule: jsonspan.Rule) -> set[str]:
    """What the leak guard and the audit read of a document: each field fields.walk
    selects, as fields.texts reads it, with its key around it where it has one."""
    out: set[str] = set()
    for f in fields.walk(doc, rule):
        if f.rule is fields.NUMBER or f.rule is fields.NAME:
            continue  # (a NAME: the masker leaves it as written, and the guard reads it: _names)
        if f.rule is jsonspan.KEY and fields.looks_like_json(f.value):
            out.add(f.value)  # the one difference by design (the test's docstring): as the masker reads it
            continue
        for _, text, ctx in fields.texts(f.value, f.rule, f.key):
            out.add(text if ctx is None else ctx[0] + text + ctx[1])
    return out


@settings(max_examples=400, deadline=None)
@given(_DOC, st.sampled_from(_SHAPES))
@example({'["\\b': None}, jsonspan.USER)  # a key shaped like JSON, an escape in it (CI's find)
def test_the_masker_scans_what_the_guard_reads_in_any_document(doc: object, rule: jsonspan.Rule) -> None:
    """The texts masking's one scan reads (spanwalk.collect with masking.reads: its
    memo's keys) are the texts the guard reads (fields.walk, fields.texts), for any
    document under any table: none the guard reads is missing (numbers in JSON text
    aside: the guard reads them to refuse them), and none is read another way (a value
    with a key the guard does not read it with). Otherwise the memo would call a text
    clean that the guard never asked about, or leave a text the guard reads unscanned.
    One difference is by design: a key is masked as it is written, and the guard reads a
    key shaped like JSON as JSON (an original spelled with escapes there is refused)."""
    s = json.dumps(doc)
    d = fields.loads(s)
    try:
        guard = _guard_texts(d, rule)
        pieces: list[str] = []
        spanwalk.collect(s, d, rule, pieces, masking.reads, fields.plain, fields.key_context, array("q"), False)
    except (KeyError, IndexError, TypeError, MaskError):
        return  # a document the table does not fit (the walks' own errors are tested apart)
    scanned = set(pieces)
    assert scanned <= guard, scanned - guard
    assert not [t for t in guard - scanned if not _NUMBER.fullmatch(t) and not any(t in p for p in scanned)]
    # the one other difference by design: the keys the masker sends as written (fields.NAME),
    # every one of them read by the guard and none scanned or changed by the masker
    if isinstance(d, dict):
        out = masking.mask_body(s.encode(), rule, RULES)[0]
        assert _names(fields.loads(out.decode()), rule) == _names(d, rule)


def _names(doc: object, rule: jsonspan.Rule) -> list[str]:
    """Each key the guard reads as a NAME, as it is."""
    return sorted(f.value for f in fields.walk(doc, rule) if f.rule is fields.NAME)
