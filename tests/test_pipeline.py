"""The one path (pipeline.py): mask, then the leak check, for every request; one choice
of a response's reverser, by path, label and content."""

from __future__ import annotations

import functools
import gzip
import json
import logging
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib import leakguard, pipeline
from disguiselib.apis import registry
from disguiselib.apis.google.array import GeminiArrayStream
from disguiselib.apis.google.stream import GeminiStream
from disguiselib.base.bodystream import BodyStream
from disguiselib.base.realtime import POLICY_VIOLATION, Frame
from disguiselib.config import build_config
from disguiselib.errors import LeakError, MaskError, NotTransformed, StreamError
from disguiselib.rules.found import RUN_MIN
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


@pytest.mark.parametrize(("client", "rule"), [("Acme Corp Inc", "literal"), ("Team Acme Corp", "literal")])
def test_an_original_a_disguise_spells_with_the_clients_text_is_refused(client: str, rule: str) -> None:
    """G6: under `Acme Corp -> Zenith Labs` and `Labs Inc` (or `Team Zenith`), the client's
    `Acme Corp Inc` went upstream as `Zenith Labs Inc`, holding the original `Labs Inc`.
    Such a set is refused at load; built without that check, the guard refuses it."""
    from disguiselib import config
    from disguiselib.rules import mappings

    ms = mappings.MappingSet(literals=(
        mappings.Literal("Acme Corp", "Zenith Labs", "m.yaml:2: literal #1"),
        mappings.Literal("Labs Inc", "Qorvexq", "m.yaml:3: literal #2"),
        mappings.Literal("Team Zenith", "Tmqqz", "m.yaml:4: literal #3"),
    ), files=("m.yaml",))  # fmt: skip
    rules, disguises = config.compiled(ms, None, streams=False)
    joined = config.Config(rules, (), ("m.yaml",), False, (), disguises)
    v = pipeline.mask_request(registry.OPENAI_CHAT, chat(client), joined, "/v1/chat/completions", [])
    with pytest.raises(LeakError, match=rf"^an original \({rule} in body \$\.messages\[0\]\.content\)") as e:
        v.unwrap()
    assert "Labs Inc" not in str(e.value) and "Team Zenith" not in str(e.value)


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
    assert caplog.messages == ["disguise: the request already holds a disguise (at body $.messages[0].content): in the "
                               "answer it will be restored to its original like the ones disguise put there"]
    caplog.clear()
    thinking = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Zenith Labs", "signature": "s"}]}]}).encode()  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="disguise"):
        pipeline.mask_request(registry.ANTHROPIC_MESSAGES, thinking, cfg, "/v1/messages", []).unwrap()
    assert caplog.text == ""  # signed thinking holds disguises by design


def test_a_disguise_typed_among_many_short_elements_is_warned_about(cfg, caplog) -> None:
    """The texts masking read include the short ones its memo lists in a run (a tool
    input of RUN_MIN elements: rules/found.Memo), not only its entries: a disguise the
    client typed there is seen by the warning's one pass."""
    items = [f"v{i:05d}" for i in range(RUN_MIN + 10)]
    items[7], items[3000] = "Acme Corp", "Zenith Labs"
    raw = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": {"items": items}}]}]}).encode()  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="disguise"):
        m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, raw, cfg, "/v1/messages", []).unwrap()
    assert b"Acme" not in m.body
    assert caplog.messages == ["disguise: the request already holds a disguise (at body "
                               "$.messages[0].content[0].input.items[3000]): in the answer it will be restored to its "
                               "original like the ones disguise put there"]  # fmt: skip


def test_a_disguise_typed_in_a_text_masking_changed_is_warned_about_once(cfg, caplog) -> None:
    """The warning's pass runs inside masking once it changed something (before the
    changed texts leave the scan's memo), else after it: a disguise typed in the very
    text masking changed is still seen, and one in a text it left is warned about once,
    not on both turns. (The other text keeps the memo from being empty, where the pass
    would read the body.)"""
    for i, (system, user) in enumerate([("be brief", "Acme Corp, we are Zenith Labs"),
                                        ("we are Zenith Labs", "Acme Corp")]):
        raw = json.dumps({"model": "m", "messages": [{"role": "system", "content": system},
                                                     {"role": "user", "content": user}]}).encode()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="disguise"):
            m = pipeline.mask_request(registry.OPENAI_CHAT, raw, cfg, "/v1/chat/completions", []).unwrap()
        assert "Acme" not in m.body.decode()
        assert caplog.messages == [f"disguise: the request already holds a disguise (at body $.messages[{1 - i}].content): "
                                   "in the answer it will be restored to its original like the ones disguise put there"]


def test_a_leak_check_that_fails_is_a_refusal(cfg, monkeypatch, caplog) -> None:
    def boom(*a, **k):
        raise RuntimeError("bob@corp.example.com")

    monkeypatch.setattr(leakguard, "scan_request", boom)
    with caplog.at_level(logging.INFO, logger="disguise"):
        hit = pipeline.leak_scan("/", [], b"{}", cfg.rules)
    assert hit is not None and str(hit) == "internal error in RuntimeError"
    assert "disguise: leak guard: internal error (RuntimeError)" in caplog.text and "bob@" not in caplog.text
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


# -- what the adapter reads of a refusal -------------------------------------------------------


def test_a_leak_or_a_body_the_client_signed_is_never_forwarded_under_fail_open() -> None:
    """disguise_fail_open forwards only a body that could not be masked: an original
    still there (LeakError) or a body only the client could sign (NeverForward) is
    refused whatever the option, with the exception's own message for the client."""
    from disguiselib.errors import NeverForward

    cases = [(LeakError("an original (literal in url) would have left"), pipeline.Refusal.LEAK, LeakError),
             (NeverForward("a presigned AWS request cannot be re-signed"), pipeline.Refusal.NEVER, NeverForward),
             (MaskError("not JSON"), pipeline.Refusal.UNMASKABLE, MaskError)]  # fmt: skip
    for e, refusal, kind in cases:
        r = pipeline.Refused.of(e)
        assert (r.reason, r.refusal, r.may_fail_open) == (str(e), refusal, refusal is pipeline.Refusal.UNMASKABLE)
        assert type(r.error()) is kind and str(r.error()) == str(e)


def test_a_masked_requests_restorer_carries_its_documents_masking_edits(cfg) -> None:
    """Masked.restorer is the one way a response's restorer is made (outcome.keep, replay):
    it carries what masking did to each text document an answer may cite by offsets
    (base/offsets.py), so a char_location into the masked document lands in the client's."""
    doc = "Acme Corp is here. Then more."
    body = json.dumps({"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": doc}},
        {"type": "text", "text": "cite it"}]}]}).encode()  # fmt: skip
    m = pipeline.mask_request(registry.ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", []).unwrap()
    r = m.restorer(cfg.rules)
    masked = json.loads(m.body)["messages"][0]["content"][0]["source"]["data"]
    assert masked == "Zenith Labs is here. Then more." and sorted(r.documents) == [0]
    s = masked.index("Then")
    assert r.documents[0].at(s) == doc.index("Then") != s
    assert r.text("Zenith Labs") == "Acme Corp"  # and its placeholders, as ever


# -- a realtime connection: the WebSocket's request path ----------------------------------------


def realtime_text(text: str, event_id: str = "e1") -> Frame:
    return Frame(json.dumps({"type": "conversation.item.create", "event_id": event_id, "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}).encode())  # fmt: skip


def test_a_realtime_connection_masks_with_the_configured_rules_and_its_api_table(cfg) -> None:
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, realtime_text("Acme Corp, bob@corp.example.com"))
    assert r.close is None and len(r.frames) == 1
    sent = json.loads(r.frames[0].data)
    assert sent["item"]["content"][0]["text"] == "Zenith Labs, [EMAIL_1]"
    # the placeholder came from this connection's session: the answer restores it
    back = conn.server(Frame(json.dumps({"type": "response.output_text.done", "text": "[EMAIL_1]"}).encode()))
    assert b"bob@corp.example.com" in back.frames[0].data


@pytest.mark.parametrize("enc", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-16", "utf-32"])
@pytest.mark.parametrize("api", [registry.OPENAI_REALTIME, registry.GOOGLE_LIVE])
def test_a_client_event_written_in_utf16_or_utf32_is_refused(cfg, api, enc: str) -> None:
    """A binary frame may hold an event in UTF-16/32 (json.loads reads such bytes; without
    a BOM they are valid UTF-8 with zero bytes): the original in it is no UTF-8 text the
    scan of an unknown event could find. Refused, never forwarded as it came."""
    ev = {"type": "session.update", "session": {"instructions": "Acme Corp"}}
    if api is registry.GOOGLE_LIVE:
        ev = {"realtimeInput": {"text": "Acme Corp"}}
    conn = pipeline.realtime_connection(api, cfg)
    r = pipeline.client_frame(conn, Frame(json.dumps(ev).encode(enc), False))
    assert r.frames == [] and r.close is not None and r.error is not None
    assert b"written in" in r.error.data and b"Acme" not in r.error.data


def test_a_binary_frame_that_is_no_json_in_any_encoding_is_scanned_as_it_is(cfg) -> None:
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    audio = bytes([0, 1, 0, 2, 255, 254, 0, 0] * 64)  # zero bytes, as in PCM: not JSON in UTF-16 either
    r = pipeline.client_frame(conn, Frame(audio, False))
    assert r.close is None and [f.data for f in r.frames] == [audio]


def test_a_realtime_event_reserves_the_placeholders_it_holds_where_masking_reads(cfg) -> None:
    """A realtime event's own placeholders are read as masking reads it (base/present.py):
    one percent-encoded in a URL is the client's (skipped), one in the event's id (not
    read by the model, not masked) is not."""
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, realtime_text("see https://crm.test/q?who=%5BEMAIL_1%5D and bob@corp.example.com"))
    assert json.loads(r.frames[0].data)["item"]["content"][0]["text"].endswith(" and [EMAIL_2]")
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, realtime_text("mail bob@corp.example.com", "[EMAIL_1]"))
    assert json.loads(r.frames[0].data)["item"]["content"][0]["text"] == "mail [EMAIL_1]"


def test_a_realtime_client_event_the_leak_guard_flags_is_refused_and_ends_the_connection(cfg, monkeypatch) -> None:
    """A known event the leak check still finds an original in (a masker that missed
    one) never goes upstream: the client gets an error naming the rule and the place
    for its own event, then the close; nothing passes after it."""
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    monkeypatch.setattr(leakguard, "scan_json", lambda *a, **k: leakguard.Hit("literal", "body $.item"))
    r = pipeline.client_frame(conn, realtime_text("Acme Corp", "e7"))
    assert r.frames == [] and r.close is not None and r.close[0] == POLICY_VIOLATION
    err = json.loads(r.error.data)["error"]
    assert err["message"] == "disguise: client event refused: an original (literal in body $.item) would have left unmasked"
    assert err["event_id"] == "e7"
    assert pipeline.client_frame(conn, realtime_text("hello")).frames == []


def test_a_realtime_leak_check_that_fails_refuses_the_event_without_quoting_it(cfg, monkeypatch, caplog) -> None:
    def boom(*a, **k):
        raise RuntimeError("Acme Corp")

    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    monkeypatch.setattr(leakguard, "scan_json", boom)
    with caplog.at_level(logging.INFO, logger="disguise"):
        r = pipeline.client_frame(conn, realtime_text("Acme Corp", "e8"))
    assert r.frames == [] and r.close is not None and r.close[0] == POLICY_VIOLATION
    err = json.loads(r.error.data)["error"]
    assert err["message"] == "disguise: client event refused: internal error (RuntimeError)"
    assert err["event_id"] is None  # the event is not echoed: the check on it broke
    assert "disguise: leak guard: internal error (RuntimeError)" in caplog.text and "Acme" not in caplog.text


# -- what the survivors of the mutation run pointed to -------------------------------------------


def batch_upload(line: dict, purpose: bytes = b"batch") -> bytes:
    return (b"--B0\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + b"\r\n"
            b"--B0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
            b"Content-Type: application/jsonl\r\n\r\n" + json.dumps(line).encode() + b"\n\r\n--B0--\r\n")  # fmt: skip


def test_a_batch_upload_is_masked_and_checked_as_the_multipart_form_its_content_type_says(cfg) -> None:
    """The Content-Type's boundary is what makes the body a form: the masker reads each
    line by its API's table, and the leak guard reads the same form with the same
    table (an id the client chose holding a literal is masked: fields.CLIENT_ID)."""
    line = {"custom_id": "Acme Corp 1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}]}}  # fmt: skip
    ctype = [("Content-Type", "multipart/form-data; boundary=B0")]
    got = outcome(registry.OPENAI_FILES, batch_upload(line), cfg, "/v1/files", ctype)
    assert got[0] == "masked", got
    sent = json.loads(got[1].split(b"\r\n\r\n")[2].split(b"\n")[0])
    assert sent["body"]["messages"][0]["content"] == "Zenith Labs" and sent["custom_id"] == "Zenith Labs 1"
    # a file that is no batch input is not the route's: the adapter scans it as unknown
    other = pipeline.mask_request(registry.OPENAI_FILES, batch_upload(line, b"assistants"), cfg, "/v1/files", ctype)
    assert isinstance(other, pipeline.NotOurs)


def test_a_body_its_route_does_not_take_says_why(cfg) -> None:
    """NotOurs carries the model's reason (the dry run records it: "not transformed
    (...)"), and unwrap raises it as NotTransformed for the callers that raise."""
    line = {"custom_id": "1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}}
    ctype = [("Content-Type", "multipart/form-data; boundary=B0")]
    other = pipeline.mask_request(registry.OPENAI_FILES, batch_upload(line, b"assistants"), cfg, "/v1/files", ctype)
    assert other == pipeline.NotOurs("a file upload whose purpose is not batch")
    with pytest.raises(NotTransformed, match="^a file upload whose purpose is not batch$"):
        other.unwrap()


def test_an_unknown_endpoints_multipart_part_is_read_as_its_content_type_says(cfg) -> None:
    """A base64-coded form part is found only when the body is read as the form its
    Content-Type (with the boundary) says it is."""
    form = (b"--b\r\nContent-Disposition: form-data; name=\"f\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            b"QWNtZSBDb3Jw\r\n--b--\r\n")  # fmt: skip
    hit = pipeline.scan_unknown("/v1/x", [("Content-Type", "multipart/form-data; boundary=b")], form, cfg.rules)
    assert str(hit) == "literal in body part 'f'"


def test_an_undecodable_unknown_body_is_refused_with_a_message_that_says_why(cfg) -> None:
    hit = pipeline.scan_unknown("/v1/files", [], None, cfg.rules)
    assert str(hit) == "unknown in a body whose content or transfer coding cannot be decoded"


def test_a_masking_bug_is_refused_never_forwarded_and_logged_by_type_only(cfg, monkeypatch, caplog) -> None:
    """A bug in masking (not a body that cannot be masked) is INTERNAL: never forwarded,
    even under disguise_fail_open, and logged by its type, never its text; a body that
    cannot be masked is no bug and logs nothing here."""
    def boom(*a, **k):
        raise RuntimeError("Acme Corp")

    with caplog.at_level(logging.INFO, logger="disguise"):
        bad = pipeline.mask_request(registry.OPENAI_CHAT, b"{not json", cfg, "/v1/chat/completions", [])
    assert isinstance(bad, pipeline.Refused) and bad.may_fail_open and caplog.text == ""
    monkeypatch.setattr(pipeline, "mask_request_body", boom)
    with caplog.at_level(logging.INFO, logger="disguise"):
        r = pipeline.mask_request(registry.OPENAI_CHAT, chat("Acme Corp"), cfg, "/v1/chat/completions", [])
    assert isinstance(r, pipeline.Refused) and r.refusal is pipeline.Refusal.INTERNAL and not r.may_fail_open
    assert "Acme" not in r.reason
    assert "disguise: masking failed: internal error (RuntimeError)" in caplog.text and "Acme" not in caplog.text


def test_a_response_labelled_an_event_stream_from_an_endpoint_that_never_streams_is_refused(cfg) -> None:
    """Embeddings answer a document: an answer labelled text/event-stream is not guessed
    at (restored as events), it ends with an explicit error and nothing restored."""
    sse = b'data: {"object":"list","data":[{"object":"embedding","x":"Zenith Labs"}]}\n\n'
    out = pipeline.restore_whole(registry.OPENAI_EMBEDDINGS, cfg.rules.restorer({}), sse, "text/event-stream",
                                 "/v1/embeddings")  # fmt: skip
    assert b"the endpoint answers with a document, the response is labelled text/event-stream" in out
    assert b"Acme" not in out


def test_a_whole_gemini_array_is_restored_by_the_stream_its_path_names(cfg) -> None:
    body = json.dumps([{"candidates": [{"content": {"role": "model", "parts": [{"text": "Zenith Labs"}]}}]}]).encode()
    out = pipeline.restore_whole(registry.GOOGLE_GEMINI, cfg.rules.restorer({}), body, "application/json",
                                 "/v1beta/models/g:streamGenerateContent")  # fmt: skip
    assert json.loads(out)[0]["candidates"][0]["content"]["parts"][0]["text"] == "Acme Corp"


def test_a_disguise_the_client_typed_in_a_batch_upload_is_warned_about_where_it_is(cfg, caplog) -> None:
    line = {"custom_id": "c1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "we are Zenith Labs"}]}}  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="disguise"):
        got = outcome(registry.OPENAI_FILES, batch_upload(line), cfg, "/v1/files",
                      [("Content-Type", "multipart/form-data; boundary=B0")])  # fmt: skip
    assert got[0] == "masked"
    assert "already holds a disguise (at file line 1 $.body.messages[0].content)" in caplog.text


# -- the leak check behind a masker that missed an original (faults planted) -------------------


def test_a_body_the_masker_left_an_original_in_is_refused_by_the_leak_check(cfg, monkeypatch) -> None:
    from disguiselib.rules.rules import Session

    monkeypatch.setattr(pipeline, "mask_request_body", lambda raw, *a, **k: (raw, Session()))
    got = outcome(registry.OPENAI_CHAT, chat("Acme Corp"), cfg, "/v1/chat/completions")
    assert got == ("refused", "an original (literal in body $.messages[0].content) would have left unmasked")


def test_a_realtime_event_the_masker_left_an_original_in_is_refused_by_the_leak_check(cfg, monkeypatch) -> None:
    from disguiselib.base import realtime

    monkeypatch.setattr(realtime, "mask_doc", lambda s, *a, **k: (s, 0))
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, realtime_text("Acme Corp", "e3"))
    assert r.frames == [] and r.close is not None and r.close[0] == POLICY_VIOLATION
    err = json.loads(r.error.data)["error"]
    assert err["message"] == ("disguise: client event refused: an original (literal in "
                              "$.item.content[0].text) would have left unmasked")  # fmt: skip
    assert err["event_id"] == "e3"


def test_a_realtime_event_disguise_does_not_know_is_refused_naming_the_place(cfg) -> None:
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, Frame(b'{"type":"future.event","event_id":"e4","note":"Acme Corp"}'))
    err = json.loads(r.error.data)["error"]
    assert err["message"] == ("disguise: client event refused: an event disguise does not know holds an "
                              "original (literal in body $.note)")  # fmt: skip
    assert err["event_id"] == "e4" and r.close is not None


def test_a_realtime_connections_own_fakes_are_no_originals_to_its_leak_check(tmp_path: Path) -> None:
    """With disguise_fakes an e-mail becomes a realistic fake e-mail, which the e-mail
    rule matches: the leak check knows the connection's fakes and lets them leave."""
    (tmp_path / "m.yaml").write_text(MAPPING)
    cfg = build_config([str(tmp_path / "m.yaml")], False, [], pipeline_fakes_key(tmp_path))
    conn = pipeline.realtime_connection(registry.OPENAI_REALTIME, cfg)
    r = pipeline.client_frame(conn, realtime_text("write to bob@corp.example.com"))
    assert r.close is None, r
    text = json.loads(r.frames[0].data)["item"]["content"][0]["text"]
    assert "bob@corp" not in text and "@" in text


def test_a_big_string_is_masked_and_checked_without_copies_of_it_piling_up(cfg, monkeypatch) -> None:
    """Memory (issue 27: a body peaks at ≤ 4× itself; the worker runs this path): the
    whole path, masking, the warning pass and the leak guard, on one big string with an
    original every line holds a few copies of it at once (traced allocations, no time);
    while the guard reads, the body, the masked document and the guard's bytes of the
    masked string. Each of these held one more through the guard: the old text kept in
    the scan's memo (fn's closure holds it in a cycle, till a collection) or in the
    texts handed to the guard, and the prefilter decoding the masked text to check that
    it is UTF-8."""
    import tracemalloc

    from disguiselib import engine

    guard = pipeline.leak_scan
    peaks: list[int] = []

    def leak_scan(*a, **k):  # noqa: ANN002, ANN003, ANN202 - the guard's own peak
        peaks.append(tracemalloc.get_traced_memory()[1])  # masking's and the warning pass's
        tracemalloc.reset_peak()
        try:
            return guard(*a, **k)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1])

    monkeypatch.setattr(pipeline, "leak_scan", leak_scan)
    unit = "Acme Corp wrote a long line of words for the record, see ticket 12. "
    raw = chat(unit * 60_000)
    tracemalloc.start()
    try:
        m = pipeline.mask_request(registry.OPENAI_CHAT, raw, cfg, "/v1/chat/completions", [])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert b"Acme Corp" not in m.unwrap().body and len(peaks) == 2
    assert peaks[1] < 3.5 * len(raw), peaks[1] / len(raw)  # 3.3×; 4.1× with any one of the three
    peak = max(peak, peaks[0])
    assert peak < (4.8 if engine.NAME == "compiled" else 5.8) * len(raw), peak / len(raw)


# -- what a placeholder makes of the text around it is not an original --------------------


@functools.cache
def _shipped_cfg():  # noqa: ANN202 - a Config
    """MAPPING with the shipped patterns (SECRET, PASSWORD, ...) beside it (built once: the
    property below cannot take a fixture)."""
    d = Path(tempfile.mkdtemp())
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], True, [])


@pytest.fixture
def shipped():  # noqa: ANN201 - a Config
    return _shipped_cfg()


def _tool_input(doc: dict) -> bytes:
    tool = {"type": "tool_use", "id": "t", "name": "f", "input": doc}
    return json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [tool]}]}).encode()


@pytest.mark.parametrize("value", [":bob@corp.example.com", "ref:bob@corp.example.com", "mailto:bob@corp.example.com"])
def test_a_placeholder_beside_text_that_is_no_secret_is_not_refused(shipped, value: str) -> None:
    """`{"token": ":bob@corp.example.com"}`: no secret (SECRET wants a digit in a value
    this short), an e-mail. Masked, the placeholder's digit (`:[EMAIL_1]`) makes the value
    look like a token: the leak guard refused the masker's own output. It takes the
    request's disguises out and reads what is left (rules/knowing.py)."""
    raw = _tool_input({"token": value, "note": "Acme Corp"})
    got = outcome(registry.ANTHROPIC_MESSAGES, raw, shipped, "/v1/messages")
    assert got[0] == "masked", got
    sent = json.loads(got[1])["messages"][0]["content"][0]["input"]
    assert sent == {"token": value.replace("bob@corp.example.com", "[EMAIL_1]"), "note": "Zenith Labs"}
    from disguiselib.inspect import audit  # and the audit of what went upstream agrees

    report = audit.audit([audit.Record(1, "POST /v1/messages", registry.ANTHROPIC_MESSAGES.name, got[1], None)], shipped.rules)
    assert report.leaks == []


@pytest.mark.parametrize(("value", "sent"), [("Acme Corp", "Zenith Labs"), ("Acme Corp ", "Zenith Labs "), ("Acme Corp.", "Zenith Labs.")])
def test_a_literal_under_a_password_key_is_not_refused(shipped, value: str, sent: str) -> None:
    """`{"password": "Acme Corp"}` goes out as `"Zenith Labs"`, which PASSWORD finds as it
    stands: it was refused. Its disguise taken out, nothing of a password is left. The
    audit of what went upstream agrees."""
    from disguiselib.inspect import audit

    raw = _tool_input({"password": value})
    got = outcome(registry.ANTHROPIC_MESSAGES, raw, shipped, "/v1/messages")
    assert got[0] == "masked", got
    assert json.loads(got[1])["messages"][0]["content"][0]["input"] == {"password": sent}
    report = audit.audit([audit.Record(1, "POST /v1/messages", registry.ANTHROPIC_MESSAGES.name, got[1], None)], shipped.rules)
    assert report.leaks == []


def test_a_password_after_a_literal_is_masked_with_it_and_the_audit_calls_it_sent_alone_a_leak(shipped) -> None:
    """The literal wins its place, so PASSWORD does not read the password written after it
    (`Acme Corp Hunter2xyz9`) in the text as the client wrote it; in what masking made of
    it (`Zenith Labs Hunter2xyz9`) it does, and the guard refused the request. The masker
    reads its output as the guard does and masks what it finds there: the whole value is
    one placeholder, whose original is what the client wrote (rules/settle.py). Sent as
    it was before, the audit calls such a body a leak."""
    from disguiselib.inspect import audit

    got = outcome(registry.ANTHROPIC_MESSAGES, _tool_input({"password": "Acme Corp Hunter2xyz9"}), shipped, "/v1/messages")
    assert got[0] == "masked", got
    assert json.loads(got[1])["messages"][0]["content"][0]["input"] == {"password": "[PASSWORD_1]"}
    assert got[2].placeholders == {"[PASSWORD_1]": "Acme Corp Hunter2xyz9"}
    sent = _tool_input({"password": "Zenith Labs Hunter2xyz9"})
    report = audit.audit([audit.Record(1, "POST /v1/messages", registry.ANTHROPIC_MESSAGES.name, sent, None)], shipped.rules)
    assert [f.what for f in report.leaks] == ["PASSWORD match"]


@pytest.mark.parametrize(
    ("text", "sent", "placeholders"),
    [
        # PHONE passes over a number followed by more digits; once they are a
        # placeholder, the number stands alone
        ("call +1 415 555 2671 10.1.2.3 now", "call [PHONE_1] [PRIVATE_IP_1] now",
         {"[PRIVATE_IP_1]": "10.1.2.3", "[PHONE_1]": "+1 415 555 2671"}),
        ("+1 415 555 2671 (4539 1488 0343 6467", "[PHONE_1] ([CARD_NUMBER_1]",
         {"[CARD_NUMBER_1]": "4539 1488 0343 6467", "[PHONE_1]": "+1 415 555 2671"}),
    ],
)  # fmt: skip
def test_an_original_that_masking_another_revealed_is_masked_too(shipped, text: str, sent: str, placeholders: dict) -> None:
    """The masker's output read as the guard reads it shows an original the text as
    written hid: it is masked as well, not refused, and restores to what was written."""
    got = outcome(registry.OPENAI_CHAT, chat(text), shipped, "/v1/chat/completions")
    assert got[0] == "masked", got
    assert json.loads(got[1])["messages"][0]["content"] == sent
    assert got[2].placeholders == placeholders
    assert shipped.rules.restorer(got[2].placeholders).text(sent) == text


@pytest.mark.parametrize("value", ["vault:bob@corp.example.com", "ref:bob@corp.example.com", "Acme Corp Hunter2xyz9"])
def test_a_password_masking_made_of_its_value_is_masked_whole(shipped, value: str) -> None:
    """Under `password`, PASSWORD takes `vault:[EMAIL_1]` for a password (the word the
    client wrote is left beside the placeholder): the value is masked whole, one
    placeholder that restores to what the client wrote, and the audit of what went
    upstream finds nothing."""
    from disguiselib.inspect import audit

    got = outcome(registry.ANTHROPIC_MESSAGES, _tool_input({"password": value}), shipped, "/v1/messages")
    assert got[0] == "masked", got
    assert json.loads(got[1])["messages"][0]["content"][0]["input"] == {"password": "[PASSWORD_1]"}
    assert got[2].placeholders["[PASSWORD_1]"] == value
    report = audit.audit([audit.Record(1, "POST /v1/messages", registry.ANTHROPIC_MESSAGES.name, got[1], None)], shipped.rules)
    assert report.leaks == []


_ORIGINALS = ["Acme Corp", "bob@corp.example.com", "Hunter2xyz9", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]
_BESIDE = ["+1 415 555 2671", "10.1.2.3", "4539 1488 0343 6467"]
# one original with what often stands around one in a value: a sigil, a space, a stop (a
# word left beside a disguise under a password's key is read as a password:
# tests/rules/test_knowing.py)
_AROUND = st.sampled_from(["", ":", "=", "<", "(", "@", "x ", ": ", "vault:", " "])
_AFTER = st.sampled_from(["", " ", ".", ";", ")", "9", "\n"])
# and two side by side, one of them a phone number or an address that the other's
# digits hide from its rule until masked (rules/settle.py)
_VALUE = (
    st.builds(lambda a, o, b: a + o + b, _AROUND, st.sampled_from(_ORIGINALS), _AFTER)
    | st.builds(lambda a, o, m, p, b: a + o + m + p + b, _AROUND, st.sampled_from(_ORIGINALS + _BESIDE),
                st.sampled_from(["", " ", " (", ", "]), st.sampled_from(_ORIGINALS + _BESIDE), _AFTER)
    | st.sampled_from(["a", "", "nothing here", "Corp", "{"])
)  # fmt: skip
_KEY = st.sampled_from(["a", "text", "data", "password", "token", "api_key", "client_secret", "secret_ref", "auth"])
_DOC = st.recursive(  # (numbers short of any pattern's: a number that is a card number cannot be masked and is refused)
    _VALUE | st.integers(-(10**6), 10**6) | st.none(), lambda c: st.lists(c, max_size=4) | st.dictionaries(_KEY, c, max_size=4), max_leaves=16)


@settings(max_examples=300, deadline=None)
@given(_DOC, st.sampled_from(["tool input", "tool arguments", "tool result"]))
# (found by hypothesis: the phone's copy masked, an address glued to it is found, and its
# copy in another text was no copy the masker knew of: masked again, base/copies.more)
@example({"v": ["Acme Corp", "Acme Corp10.1.2.3", "Acme Corp +1 415 555 2671", "+1 415 555 267110.1.2.3"]}, "tool input")
def test_the_guard_never_refuses_what_the_masker_sent(doc, where: str) -> None:
    """A tool's input, arguments or result whose values are each one original with what
    often stands around one (a sigil, a space, a stop), under any key (the
    ones the key-anchored rules read too): the request is masked and passes the leak
    guard. A placeholder's own characters (`:[EMAIL_1]`: a digit, a token's length) and a
    literal's disguise (`"password": "Zenith Labs"`) are not taken for an original; nor
    is what masking another original revealed left for the guard to find (settle.py).
    What went out restores to the document the client wrote."""
    if where == "tool input":
        api, path, raw = registry.ANTHROPIC_MESSAGES, "/v1/messages", _tool_input(doc if isinstance(doc, dict) else {"v": doc})
    elif where == "tool arguments":
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": json.dumps(doc)}}
        raw = json.dumps({"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]}).encode()
        api, path = registry.OPENAI_CHAT, "/v1/chat/completions"
    else:
        result = {"type": "tool_result", "tool_use_id": "t", "content": json.dumps(doc)}
        raw = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [result]}]}).encode()
        api, path = registry.ANTHROPIC_MESSAGES, "/v1/messages"
    got = outcome(api, raw, _shipped_cfg(), path)
    assert got[0] == "masked", (raw, got)
    msg = json.loads(got[1])["messages"][0]
    if where == "tool input":
        sent = msg["content"][0]["input"]
        doc = doc if isinstance(doc, dict) else {"v": doc}
    else:
        sent = json.loads(msg["tool_calls"][0]["function"]["arguments"] if where == "tool arguments" else msg["content"][0]["content"])
    assert _restored(sent, _shipped_cfg().rules.restorer(got[2].placeholders)) == doc


def _restored(doc: object, r) -> object:
    if isinstance(doc, str):
        return r.text(doc)
    if isinstance(doc, list):
        return [_restored(x, r) for x in doc]
    if isinstance(doc, dict):
        return {r.text(k): _restored(v, r) for k, v in doc.items()}
    return doc


_MANY = ["Acme Corp", "bob@corp.example.com", "Hunter2xyz9", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "+1 415 555 2671",
         "10.1.2.3", "4539 1488 0343 6467", "AKIA" + "IOSFODNN7EXAMPLE", "192.168.0.17", "555 2671", "Acme", "Corp",
         "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]  # fmt: skip
_SEP = ["", " ", ":", "=", "(", ")", ", ", "\n", "x", "9", "@", ".", "-", "/", "password: ", "token="]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_SEP), st.sampled_from(_MANY)), min_size=1, max_size=4),
       st.sampled_from(_SEP), st.sampled_from(["text", "password", "token"]))  # fmt: skip
def test_originals_side_by_side_are_masked_and_restore_to_what_was_written(parts, tail: str, where: str) -> None:
    """Up to four originals of every kind the shipped patterns know, glued by what often
    stands between them, in a message or under a password or token key: the request is
    masked (masking one never leaves another for the guard to refuse: rules/settle.py;
    without it 179 of 3,000 such texts were refused), and what went out restores to the
    text the client wrote."""
    v = "".join(s + o for s, o in parts) + tail
    if where == "text":
        got = outcome(registry.OPENAI_CHAT, chat(v), _shipped_cfg(), "/v1/chat/completions")
    else:
        got = outcome(registry.ANTHROPIC_MESSAGES, _tool_input({where: v}), _shipped_cfg(), "/v1/messages")
    assert got[0] == "masked", (v, got)
    msg = json.loads(got[1])["messages"][0]
    sent = msg["content"] if where == "text" else msg["content"][0]["input"][where]
    assert _shipped_cfg().rules.restorer(got[2].placeholders).text(sent) == v


@pytest.mark.parametrize(
    ("model", "named"),
    [("luma.ray-v2:0", "'luma.ray'"),
     ("Acme Corp.model-v1", "<original>"),  # an original in the family
     ("bob@corp.example.com", "<original>"),  # a pattern's match
     ("arn:aws:bedrock:us-east-1:1:foundation-model/x.Acme Corp-v1", "<original>"),
     ("luma.ray-v2:0?Acme Corp", "<original>")],  # the family clean, the id it came from not
)  # fmt: skip
def test_an_unknown_bedrock_family_is_named_only_where_it_is_no_original(cfg, model: str, named: str) -> None:
    from urllib.parse import quote

    path = f"/model/{quote(model, safe='')}/invoke"
    got = outcome(registry.recognise("POST", path), b'{"prompt": "hi"}', cfg, path)
    assert got[0] == "refused" and f"model family {named} is not one" in got[1], got
    assert "Acme" not in got[1] and "bob@" not in got[1]


def test_a_refusal_naming_a_place_names_it_as_the_leak_guard_does(cfg) -> None:
    """A repeated key whose values differ (base/document.py) is refused naming its place
    through leakguard.json_place: a key that holds an original is withheld."""
    body = (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type":'
            b' "json_schema", "json_schema": {"name": "n", "schema": {"properties": {"Acme Corp": {"type":'
            b' "string", "type": "number"}}}}}}')  # fmt: skip
    v = pipeline.mask_request(registry.OPENAI_CHAT, body, cfg, "/v1/chat/completions", [])
    assert isinstance(v, pipeline.Refused) and v.may_fail_open
    where = "$.response_format.json_schema.schema.properties[<key>].type"
    assert v.reason == f"body repeats the key at {where} with values that differ"
    assert pipeline.Refused.of(v.error()).reason == v.reason


def test_a_mask_error_is_a_refusal_fail_open_may_forward_a_quoting_one_too() -> None:
    from disguiselib.errors import MaskError, QuotingMaskError
    from disguiselib.pipeline import Refusal, Refused

    assert Refused.of(MaskError("x")).refusal is Refusal.UNMASKABLE
    q = QuotingMaskError("model family {} is unknown", "mystery", "mystery.model-v1")
    from strategies import RULES

    r = Refused.of(q, RULES)
    assert r.refusal is Refusal.UNMASKABLE and r.may_fail_open and r.reason == "model family 'mystery' is unknown"
