"""The one path (pipeline.py): mask, then the leak check, for every request; one choice
of a response's reverser, by path, label and content."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from anthropic_util import build_stream, read_stream
from disguiselib import leakguard, pipeline
from disguiselib.apis import registry
from disguiselib.apis.google.array import GeminiArrayStream
from disguiselib.apis.google.stream import GeminiStream
from disguiselib.base.stream import BodyStream
from disguiselib.config import build_config
from disguiselib.errors import LeakError, MaskError, StreamError
from disguiselib.wire.decoding import Decoded

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    d: Path = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], False, [])


def chat(content: str, **extra) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": content}], **extra}).encode()


def test_mask_request_masks_then_checks(cfg) -> None:
    raw = chat("Acme Corp, bob@corp.example.com")
    m = pipeline.mask_request(registry.OPENAI_CHAT, raw, cfg, "/v1/chat/completions", [("x-a", "1")]).unwrap()
    assert json.loads(m.body)["messages"][0]["content"] == "Zenith Labs, [EMAIL_1]"
    assert m.session.placeholders == {"[EMAIL_1]": "bob@corp.example.com"}
    same = chat("nothing")
    assert pipeline.mask_request(registry.OPENAI_CHAT, same, cfg, "/v1/chat/completions", []).unwrap().body is same


@pytest.mark.parametrize(
    ("body", "path", "headers", "where"),
    [
        (chat("x"), "/v1/chat/completions?user=bob@corp.example.com", [], "url"),
        (chat("x"), "/v1/chat/completions", [("x-user", "bob@corp.example.com")], "header x-user"),
    ],
)
def test_an_original_that_would_still_leave_is_a_leak_error(cfg, body, path, headers, where) -> None:
    # (In the body the guard reads the masker's own table: they agree by construction,
    # tests/base/test_field_parity.py. What the masker never touches is the URL
    # and the headers.)
    with pytest.raises(LeakError, match=where.replace("$", r"\$").replace("?", r"\?")) as e:
        pipeline.mask_request(registry.OPENAI_CHAT, body, cfg, path, headers).unwrap()
    assert "bob@" not in str(e.value) and "Acme" not in str(e.value)


def test_what_cannot_be_masked_is_a_mask_error(cfg) -> None:
    with pytest.raises(MaskError):
        pipeline.mask_request(registry.OPENAI_CHAT, b"{not json", cfg, "/v1/chat/completions", []).unwrap()
    bedrock = json.dumps({"anthropic_version": "bedrock-2023-05-31", "messages": [
        {"role": "user", "content": "Acme Corp"}]}).encode()  # fmt: skip
    m = pipeline.mask_request(registry.BEDROCK_INVOKE, bedrock, cfg, "/model/m/invoke", []).unwrap()
    assert b"Zenith Labs" in m.body and b"Acme" not in m.body  # a Bedrock body, masked like any other
    e = pipeline.mask_request(registry.OPENAI_CHAT, b"[]", cfg, "/v1/chat/completions", [])
    assert isinstance(e, pipeline.Refused) and isinstance(e.error(), MaskError)
    ok = pipeline.mask_request(registry.OPENAI_CHAT, chat("Acme Corp"), cfg, "/v1/chat/completions", [])
    assert isinstance(ok, pipeline.Masked)


def test_a_disguise_the_client_typed_is_warned_about_without_quoting(cfg, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="disguise"):
        pipeline.mask_request(registry.OPENAI_CHAT, chat("we are Zenith Labs"), cfg, "/v1/chat/completions", []).unwrap()
    assert "already holds a disguise (at body $.messages[0].content)" in caplog.text
    caplog.clear()
    thinking = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Zenith Labs", "signature": "s"}]}]}).encode()  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="disguise"):
        pipeline.mask_request(registry.ANTHROPIC_MESSAGES, thinking, cfg, "/v1/messages", []).unwrap()
    assert caplog.text == ""  # signed thinking holds disguises by design


def test_a_leak_check_that_fails_is_a_refusal(cfg, monkeypatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("bob@corp.example.com")

    monkeypatch.setattr(leakguard, "scan_request", boom)
    hit = pipeline.leak_scan("/", [], b"{}", cfg.rules)
    assert hit is not None and str(hit) == "internal error in RuntimeError"
    with pytest.raises(LeakError, match="internal error"):
        pipeline.mask_request(registry.OPENAI_CHAT, chat("x"), cfg, "/v1/chat/completions", []).unwrap()


def test_scan_unknown_looks_everywhere_and_an_undecodable_body_is_a_hit(cfg) -> None:
    assert pipeline.scan_unknown("/v1/files", [], None, cfg.rules) is not None
    assert pipeline.scan_unknown("/v1/files", [], b'{"a": "clean"}', cfg.rules) is None
    body = json.dumps({"type": "thinking", "thinking": "Acme Corp"}).encode()
    assert str(pipeline.scan_unknown("/v1/files", [], body, cfg.rules)) == "literal in body $.thinking"


# -- the reverser -----------------------------------------------------------------------------


def test_reverser_for_picks_by_path_label_and_encoding(cfg) -> None:
    r = cfg.rules.restorer({})
    gem = registry.GOOGLE_GEMINI
    arr = "/v1beta/models/g:streamGenerateContent"
    assert type(pipeline.reverser_for(gem, r, "application/json", arr)) is GeminiArrayStream
    assert type(pipeline.reverser_for(gem, r, "text/event-stream", arr + "?alt=sse")) is GeminiStream
    assert pipeline.reverser_for(gem, r, "application/json", "/v1beta/models/g:generateContent") is None
    whole = pipeline.reverser_for(gem, r, "application/json", "/v1beta/models/g:generateContent", buffered=True)
    assert isinstance(whole, BodyStream)
    api = registry.ANTHROPIC_MESSAGES
    assert pipeline.reverser_for(api, r, "application/problem+json") is None  # buffered, restored whole
    assert isinstance(pipeline.reverser_for(api, r, "text/event-stream"), BodyStream)
    assert isinstance(pipeline.reverser_for(api, r, ""), BodyStream)  # told by content
    assert isinstance(pipeline.reverser_for(api, r, "text/event-stream", encoding="gzip"), Decoded)
    with pytest.raises(StreamError, match="'compress'"):
        pipeline.reverser_for(api, r, "text/event-stream", encoding="compress")
    rev = pipeline.reverser_for(api, r, "text/event-stream")
    assert rev is not None and pipeline.decoded(rev, "identity") is rev


def test_restore_whole_is_the_live_reverser_run_on_the_whole_body(cfg) -> None:
    body = build_stream([("text", ["Zenith Labs and ", "[EMAIL_1]"])])
    ph = {"[EMAIL_1]": "bob@corp.example.com"}
    api = registry.ANTHROPIC_MESSAGES
    for ctype in ("text/event-stream", "application/json", ""):  # the label decides
        whole = pipeline.restore_whole(api, cfg.rules.restorer(ph), body, ctype, "/v1/messages")
        live = pipeline.reverser_for(api, cfg.rules.restorer(ph), ctype, "/v1/messages", buffered=True)
        assert live is not None
        fed = b"".join(live.feed(body[i : i + 11]) for i in range(0, len(body), 11)) + live.flush()
        assert whole == fed
        if ctype == "text/event-stream":
            assert read_stream(whole)[0][0]["text"] == "Acme Corp and bob@corp.example.com"
        else:  # an event stream labelled otherwise: refused, not guessed at
            assert b"event stream labelled" in whole and b"Zenith" not in whole
    gz = pipeline.restore_whole(api, cfg.rules.restorer(ph), gzip.compress(body), "text/event-stream", encoding="gzip")
    assert read_stream(gz)[0][0]["text"] == "Acme Corp and bob@corp.example.com"
    doc = b'{"type":"message","content":[{"type":"text","text":"Zenith Labs"}]}'
    assert json.loads(pipeline.restore_whole(api, cfg.rules.restorer({}), doc, "application/json"))["content"][0][
        "text"] == "Acme Corp"  # fmt: skip


# -- what a request's outcome is (mutation survivors) -------------------------------------------
#
# Every test below reads mask_request through `outcome`, the one place that knows how it
# reports: ("masked", body, session) or ("refused", message).


def outcome(api, raw: bytes, cfg, path: str, headers=()) -> tuple:
    m = pipeline.mask_request(api, raw, cfg, path, list(headers))
    if isinstance(m, pipeline.Refused):
        return ("refused", m.reason)
    assert isinstance(m, pipeline.Masked), m
    return ("masked", m.body, m.session)


def test_a_refusal_names_the_rule_and_the_place(cfg) -> None:
    got = outcome(registry.OPENAI_CHAT, chat("x"), cfg, "/v1/chat/completions?user=bob@corp.example.com")
    assert got == ("refused", "an original (EMAIL in url) would have left unmasked")


def test_realistic_fakes_the_masker_put_in_are_not_refused(tmp_path: Path) -> None:
    """With disguise_fakes a masked e-mail is a realistic fake e-mail: the leak guard
    knows the flow's own fakes and lets them leave."""
    (tmp_path / "m.yaml").write_text(MAPPING)
    fk = pipeline_fakes_key(tmp_path)
    cfg = build_config([str(tmp_path / "m.yaml")], False, [], fk)
    got = outcome(registry.OPENAI_CHAT, chat("write to bob@corp.example.com"), cfg, "/v1/chat/completions")
    assert got[0] == "masked", got
    text = json.loads(got[1])["messages"][0]["content"]
    assert "bob@corp" not in text and "@" in text  # a fake e-mail went out
    assert list(got[2].placeholders.values()) == ["bob@corp.example.com"]


def pipeline_fakes_key(tmp_path: Path) -> bytes:
    from disguiselib.rules import fakes

    return fakes.load_key(str(tmp_path / "fakes.key"))


def test_no_disguise_warning_without_literals(tmp_path: Path, caplog) -> None:
    """Rules without literals have no disguises a client could type: nothing is looked
    for, nothing is warned about (a pattern's placeholder typed by the client is
    numbered around, not warned)."""
    (tmp_path / "m.yaml").write_text("patterns:\n  - name: EMAIL\n    regex: '[a-z]+@[a-z]+\\.com'\n")
    cfg = build_config([str(tmp_path / "m.yaml")], False, [])
    assert cfg.disguises is None
    with caplog.at_level(logging.WARNING, logger="disguise"):
        got = outcome(registry.OPENAI_CHAT, chat("[EMAIL_1] and bob@corp.com"), cfg, "/v1/chat/completions")
    assert got[0] == "masked" and caplog.text == ""


def test_a_disguise_typed_in_a_field_masking_does_not_read_is_not_warned(cfg, caplog) -> None:
    """Only the texts masking reads are looked at for a typed disguise (here the model
    name, the API's own word, is not)."""
    with caplog.at_level(logging.WARNING, logger="disguise"):
        got = outcome(registry.OPENAI_CHAT, json.dumps({"model": "Zenith Labs", "messages": [
            {"role": "user", "content": "hello"}]}).encode(), cfg, "/v1/chat/completions")  # fmt: skip
    assert got[0] == "masked" and caplog.text == ""


def test_scan_unknown_reads_the_body_as_its_content_type_says(cfg) -> None:
    form = b"a=1&b=Acme+Corp"
    hit = pipeline.scan_unknown("/v1/x", [("Content-Type", "application/x-www-form-urlencoded")], form, cfg.rules)
    assert hit is not None and hit.rule == "literal" and "form field" in hit.where, hit
    assert pipeline.content_type([("x-a", "1"), ("CONTENT-TYPE", "text/plain"), ("content-type", "x/y")]) == "text/plain"
    assert pipeline.content_type([]) == ""


def test_a_whole_body_is_decoded_to_its_limit_only(cfg) -> None:
    api = registry.ANTHROPIC_MESSAGES
    body = build_stream([("text", ["Zenith Labs " * 2000])])
    out = pipeline.restore_whole(api, cfg.rules.restorer({}), gzip.compress(body), "text/event-stream",
                                 encoding="gzip", limit=4096)  # fmt: skip
    assert len(out) < len(body) and b"error" in out
    whole = pipeline.restore_whole(api, cfg.rules.restorer({}), gzip.compress(body), "text/event-stream",
                                   encoding="gzip")  # fmt: skip
    assert whole == pipeline.restore_whole(api, cfg.rules.restorer({}), body, "text/event-stream")
    assert b"Acme Corp" in whole and b"error" not in whole
