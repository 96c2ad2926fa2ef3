"""The request headers an API declares its clients fill with their own text (Api.headers:
Codex's `x-codex-turn-metadata`, JSON text of the user's working directory, git branch,
...): masked by pipeline.mask_request with the body's session, numbered after it, read
by the leak guard as masked; every other header holding an original still refused; a
header that cannot be masked refused, never forwarded."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline, worker
from disguiselib.apis import registry
from disguiselib.base.masking import mask_body
from disguiselib.config import build_config
from disguiselib.rules.rules import Session

MAPPING = """
literals:
  acme-corp: zenith-labs
  Jörg Müller: Jane Doe
patterns:
  - name: USER
    regex: 'jsmith[0-9]*'
"""
HEADER = "x-codex-turn-metadata"
ORIGINALS = ("acme-corp", "jsmith", "Jörg Müller")
META = {
    "session_id": "019cc1fd-99ba-7962-b000-f2bda295b1b7",
    "turn_id": "019cc1fd-aaaa-7962-b000-f2bda295b1b7",
    "cwd": "/Users/jsmith/acme-corp/api",
    "git_branch": "acme-corp/fix",
    "os": "macos",
    "terminal": "iTerm.app",
}
RESPONSES = [registry.OPENAI_RESPONSES, registry.OPENAI_RESPONSES_COMPACT, registry.OPENAI_RESPONSES_INPUT_TOKENS]


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    d: Path = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text(MAPPING, encoding="utf-8")
    return build_config([str(d / "m.yaml")], False, [])


def body(text: str = "hi", meta: str | None = None) -> bytes:
    doc: dict = {"model": "m", "input": text, "store": False}
    if meta is not None:
        doc["client_metadata"] = {HEADER: meta}
    return json.dumps(doc).encode()


def sent(m: pipeline.Masked, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers as the adapter sets them (mitm/outcome.set_headers)."""
    values = {n: list(v) for n, v in m.headers}
    return [(n, values[n.lower()].pop(0)) if n.lower() in values else (n, v) for n, v in headers]


def test_the_responses_apis_declare_the_codex_turn_metadata_header() -> None:
    for api in RESPONSES:
        assert [h.name for h in api.headers] == [HEADER]
        assert api.headers[0].rule.json_text
    assert registry.recognise("POST", "/backend-api/codex/responses") is registry.OPENAI_RESPONSES
    assert registry.OPENAI_CHAT.headers == ()


@pytest.mark.parametrize("api", RESPONSES, ids=lambda a: a.name)
def test_the_header_is_masked_with_the_bodys_session_and_stays_the_json_it_was(cfg, api) -> None:
    meta = json.dumps(META)
    headers = [("Content-Type", "application/json"), ("X-Codex-Turn-Metadata", meta), ("x-other", "1")]
    m = pipeline.mask_request(api, body("jsmith9 asks", meta), cfg, "/v1/responses", headers).unwrap()
    assert [n for n, _ in m.headers] == [HEADER]
    (value,) = m.headers[0][1]
    assert value.isascii() and "\r" not in value and "\n" not in value
    assert not any(o in value for o in ORIGINALS)
    got = json.loads(value)
    # (client_metadata is numbered before the conversation: base/prompt.py)
    assert got["cwd"] == "/Users/[USER_1]/zenith-labs/api" and got["git_branch"] == "zenith-labs/fix"
    assert {k: v for k, v in got.items() if k not in ("cwd", "git_branch")} == {
        k: v for k, v in META.items() if k not in ("cwd", "git_branch")
    }
    # the body's copy of the same text: masked the same way (the same session)
    assert json.loads(json.loads(m.body)["client_metadata"][HEADER]) == got
    assert m.session.placeholders == {"[USER_1]": "jsmith", "[USER_2]": "jsmith9"}
    # the other headers are left alone; the leak guard passes what leaves
    out = sent(m, headers)
    assert out[0] == headers[0] and out[2] == headers[2] and out[1][0] == "X-Codex-Turn-Metadata"
    assert pipeline.leak_scan("/v1/responses", out, m.body, cfg.rules, api) is None


def test_placeholders_only_in_the_header_are_numbered_after_the_bodys(cfg) -> None:
    meta = json.dumps({"cwd": "/home/jsmith2", "branch": "jsmith3"})
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, body("jsmith1 here"), cfg, "/v1/responses",
                              [(HEADER, meta)]).unwrap()  # fmt: skip
    assert json.loads(m.body)["input"] == "[USER_1] here"
    assert json.loads(m.headers[0][1][0]) == {"cwd": "/home/[USER_2]", "branch": "[USER_3]"}
    assert m.session.placeholders == {"[USER_1]": "jsmith1", "[USER_2]": "jsmith2", "[USER_3]": "jsmith3"}
    # the restorer knows them all: one placeholder, one original, in the whole request
    assert m.restorer(cfg.rules).text("[USER_3]") == "jsmith3"


def test_a_placeholder_the_header_holds_is_not_issued_for_another_original(cfg) -> None:
    meta = json.dumps({"note": "[USER_1] is mine", "cwd": "/home/jsmith"})
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, meta)]).unwrap()
    assert json.loads(m.headers[0][1][0]) == {"note": "[USER_1] is mine", "cwd": "/home/[USER_2]"}


def test_escapes_and_text_that_is_no_json(cfg) -> None:
    # an original written with JSON escapes is read decoded and masked; its neighbours kept
    escaped = '{"cwd": "/Users/J\\u00f6rg M\\u00fcller/acme\\u002dcorp", "n": 1.50}'
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, escaped)]).unwrap()
    value = m.headers[0][1][0]
    assert value == '{"cwd": "/Users/Jane Doe/zenith-labs", "n": 1.50}'
    # text that does not parse as JSON: masked as it is written
    for text in ("plain acme-corp and jsmith", '{"cwd": "/home/jsmith"'):
        m = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, text)]).unwrap()
        assert not any(o in m.headers[0][1][0] for o in ORIGINALS), m.headers


def test_a_repeated_header_is_masked_in_each_place(cfg) -> None:
    headers = [(HEADER, '{"a": "acme-corp"}'), ("x-b", "2"), (HEADER, '{"a": "clean"}'), (HEADER, '"jsmith"')]
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", headers).unwrap()
    assert m.headers == ((HEADER, ('{"a": "zenith-labs"}', '{"a": "clean"}', '"[USER_1]"')),)


def test_nothing_to_mask_changes_nothing(cfg) -> None:
    meta = json.dumps({"cwd": "/srv/app"})
    raw = body("clean", meta)
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, raw, cfg, "/v1/responses", [(HEADER, meta)]).unwrap()
    assert m.headers == () and m.body is raw


@pytest.mark.parametrize(
    ("api", "headers"),
    [
        (registry.OPENAI_RESPONSES, [(HEADER, '{"cwd": "/x"}'), ("x-user", "jsmith")]),  # another header
        (registry.OPENAI_CHAT, [(HEADER, '{"cwd": "/Users/jsmith"}')]),  # an API that does not declare it
        (registry.OPENAI_RESPONSES, [("x-codex-turn-metadata-2", '{"cwd": "/Users/jsmith"}')]),
    ],
)
def test_any_other_header_holding_an_original_is_still_refused(cfg, api, headers) -> None:
    raw = body() if api is not registry.OPENAI_CHAT else b'{"model": "m", "messages": []}'
    v = pipeline.mask_request(api, raw, cfg, "/v1/x", headers)
    assert isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.LEAK, v
    assert "header" in v.reason and not any(o in v.reason for o in ORIGINALS)


def test_a_header_that_cannot_be_masked_is_refused_and_never_forwarded(cfg, monkeypatch) -> None:
    def broken(rules, session, memo=None):
        def fn(v, rule, k):
            raise KeyError("acme-corp")

        return fn

    monkeypatch.setattr(pipeline, "mask_fn", broken)
    v = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, '"acme-corp"')])
    assert isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.NEVER and not v.may_fail_open
    assert "acme-corp" not in v.reason and HEADER in v.reason


@pytest.mark.parametrize("disguise", ["Zenith\r\nX-Evil: 1", "Zénith", "Zenith\x00"])
def test_a_disguise_that_is_no_header_text_is_refused(cfg, monkeypatch, disguise) -> None:
    """Disguises are printable ASCII by contract; the header's masking checks it anyway."""
    real = pipeline.mask_fn

    def fake(rules, session, memo=None):
        inner = real(rules, session, memo)
        return lambda v, rule, k: inner(v, rule, k) if not isinstance(v, str) else v.replace("acme-corp", disguise)

    monkeypatch.setattr(pipeline, "mask_fn", fake)
    v = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, "acme-corp")])
    assert isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.NEVER, v
    assert "valid header value" in v.reason


def test_a_header_that_would_no_longer_parse_is_refused(cfg, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "mask_fn", lambda rules, session, memo=None: lambda v, rule, k: v + "}")
    v = pipeline.mask_request(registry.OPENAI_RESPONSES, body(), cfg, "/v1/responses", [(HEADER, '{"a": 1}')])
    assert isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.NEVER and "JSON text" in v.reason


def test_the_leak_guard_reads_a_declared_header_as_json(cfg) -> None:
    """An original only JSON's escapes hide: the guard reads the declared header as the
    masker does (a header nobody declares is read as it is, and percent-decoded)."""
    headers = [(HEADER, '{"cwd": "acme\\u002dcorp"}')]
    hit = leakguard.scan_request("/v1/responses", headers, None, cfg.rules, registry.OPENAI_RESPONSES)
    assert hit is not None and hit.where.startswith(f"header {HEADER} (read as JSON_TEXT")
    assert "acme" not in hit.where
    assert leakguard.scan_request("/v1/responses", [("x-a", '{"cwd": "acme\\u002dcorp"}')], None, cfg.rules) is None


def test_a_body_continues_the_session_of_headers_that_left_first(cfg) -> None:
    """A streamed body's headers leave before it (mitm/streamed.mask_headers): its masking
    continues their session, so one placeholder never stands for two originals."""
    start = Session()
    headers, masked = pipeline.mask_headers(registry.OPENAI_RESPONSES.headers, [(HEADER, '"jsmith7"')], cfg.rules,
                                            start)  # fmt: skip
    assert masked == ((HEADER, ('"[USER_1]"',)),)
    m = pipeline.mask_request(registry.OPENAI_RESPONSES, body("jsmith8 and jsmith7"), cfg, "/v1/responses",
                              headers, start=start).unwrap()  # fmt: skip
    assert json.loads(m.body)["input"] == "[USER_2] and [USER_1]"
    assert m.headers == ()  # masked already: nothing more to set
    assert m.session.placeholders == {"[USER_1]": "jsmith7", "[USER_2]": "jsmith8"}
    assert start.placeholders == {"[USER_1]": "jsmith7"}  # continued, not changed
    # a retrieval's (no body table) session continues them too
    assert mask_body(b"{}", None, cfg.rules, start=start)[1].placeholders == start.placeholders


def test_the_masked_headers_cross_the_worker_boundary(cfg, tmp_path: Path) -> None:
    meta = json.dumps(META)
    job = worker.Job(registry.OPENAI_RESPONSES.name, "/v1/responses", [(HEADER, meta)])
    raw = body("jsmith", meta)
    payload, blobs = worker.encode(worker.mask(cfg, job, raw), raw)
    back = worker.decode(payload, blobs, raw)
    assert isinstance(back, pipeline.Masked) and back.headers == pipeline.mask_request(
        registry.OPENAI_RESPONSES, raw, cfg, "/v1/responses", [(HEADER, meta)]).unwrap().headers  # fmt: skip
    assert "jsmith" not in back.headers[0][1][0]
    # and a streamed body's start session reaches the worker's masking
    start = Session()
    start.placeholder("USER", "jsmith5")
    job = worker.Job(registry.OPENAI_RESPONSES.name, "/v1/responses", [], start=start)
    got = worker.mask(cfg, job, body("jsmith6"))
    assert json.loads(got.body)["input"] == "[USER_2]"  # type: ignore[attr-defined]


_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " /-_.:@\\\"é\u00fc\t", max_size=12)
_VALUE = st.one_of(
    st.builds(lambda a, o, b: a + o + b, _TEXT, st.sampled_from([*ORIGINALS, "jsmith42", ""]), _TEXT),
    st.integers(), st.booleans(), st.none(),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["cwd", "git_branch", "remote", "os", "x", "session_id"]), _VALUE, max_size=6),
       st.booleans())  # fmt: skip
def test_property_masked_header_is_clean_ascii_json_with_other_members_identical(cfg, meta, ascii_only) -> None:
    value = json.dumps(meta, ensure_ascii=ascii_only)
    raw = body("jsmith42", value)
    v = pipeline.mask_request(registry.OPENAI_RESPONSES, raw, cfg, "/v1/responses", [(HEADER, value)])
    assert isinstance(v, pipeline.Masked), v
    out = dict(v.headers).get(HEADER, (value,))[0]
    assert not any(o in out for o in ORIGINALS) and "jsmith4" not in out
    assert "\r" not in out and "\n" not in out and (out.isascii() or not value.isascii())
    got = json.loads(out)
    assert got.keys() == meta.keys()
    for k, x in meta.items():
        if not (isinstance(x, str) and any(o in x or o in x.replace("\\", "") for o in (*ORIGINALS, "jsmith"))):
            assert got[k] == x  # a member with nothing to mask: as it was
    # one placeholder, one original, header and body together
    assert len(set(v.session.placeholders.values())) == len(v.session.placeholders)
    assert json.loads(json.loads(v.body)["client_metadata"][HEADER]) == got
