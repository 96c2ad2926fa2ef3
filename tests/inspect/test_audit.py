"""The SSE reader behind the views and the audit, and the audit itself, sans I/O: on the
recorded provider streams, and as properties over random splits."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.masking import mask_body
from disguiselib.inspect import audit, render, sseview
from strategies import LITERALS, RULES, make_rules

DISGUISES = ["Zenith Labs", "thread_id", "crm_lookup", "[EMAIL_1]"]


def anthropic_sse(pieces: list[str]) -> bytes:
    out = [b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n']
    for p in pieces:
        d = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        out.append(f"event: content_block_delta\ndata: {json.dumps(d)}\n\n".encode())
    out.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return b"".join(out)


def chat_sse(pieces: list[str]) -> bytes:
    out = []
    for p in pieces:
        d = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": p}}]}
        out.append(f"data: {json.dumps(d)}\n\n".encode())
    return b"".join(out) + b"data: [DONE]\n\n"


def cuts(text: str, points: list[int]) -> list[str]:
    ps = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in zip(ps, ps[1:], strict=False) if b > a]


def record(received: bytes, sent: bytes = b'{"messages":[{"role":"user","content":"[EMAIL_1]"}]}') -> audit.Record:
    return audit.Record(1, "POST /v1/messages", "anthropic.messages", sent, received, "text/event-stream")


@given(st.lists(st.sampled_from(["hi ", "Zen", "ith", " Labs", "[EMAIL_1]", "[EMA", "IL_1]", "x"]), min_size=1, max_size=12),
       st.lists(st.integers(0, 200), max_size=8), st.booleans())  # fmt: skip
def test_every_disguise_the_client_got_is_found_however_it_is_split(parts, points, chat) -> None:
    text = "".join(parts)
    body = (chat_sse if chat else anthropic_sse)(cuts(text, points))
    s = sseview.parse_stream(body)
    [channel] = s.channels.values()
    assert channel.text == text and s.terminal
    found = audit.audit([record(body)], RULES).leaks
    expected = sum(text.count(d) for d in ("Zenith Labs", "[EMAIL_1]"))
    assert len(found) == expected
    assert all(f.side == "client" for f in found)


def test_a_placeholder_never_issued_is_not_a_leak() -> None:
    body = anthropic_sse(["mail [EMAIL_", "9] now"])
    assert audit.audit([record(body)], RULES).leaks == []
    assert len(audit.audit([record(body, b'{"x":"[EMAIL_9]"}')], RULES).leaks) == 1


def test_originals_upstream_are_found_by_field_and_never_printed() -> None:
    sent = json.dumps({"system": "you work for Acme Corp",
                       "messages": [{"role": "user", "content": [{"type": "text", "text": "mail bob@x.example.org"}]}],
                       "tools": [{"name": "acme_lookup", "input_schema": {"properties": {"session_id": {}}}}]}).encode()  # fmt: skip
    rep = audit.audit([audit.Record(1, "POST /v1/messages", "anthropic.messages", sent, None)], RULES)
    fields = sorted(f.field.split(" [")[0] for f in rep.leaks)
    # the key that is an original is withheld from its own path (as the leak guard's hits)
    assert fields == ["messages[0].content[0].text", "system", "tools[0].input_schema.properties[<key>] (key)",
                      "tools[0].name"]  # fmt: skip
    text = rep.text()
    assert "bob@x.example.org" not in text and "Acme Corp" not in text and "session_id" not in text
    assert "literal (disguise 'Zenith Labs') at system [13:22]" in text
    assert rep.exit_code() == 1


def test_a_findings_field_never_spells_an_original_its_keys_spell_together() -> None:
    rules = make_rules(literals={**LITERALS, "build.internal.acme.io": "host-a.example"})
    sent = json.dumps({"metadata": {"build": {"internal": {"acme": {"io": "Acme Corp"}}}},
                       "x": json.dumps({"build": {"internal": {"acme": {"io": "Acme Corp"}}}}), "messages": []}).encode()  # fmt: skip
    rep = audit.audit([audit.Record(1, "POST /v1/messages", "anthropic.messages", sent, None)], rules)
    fields = sorted(f.field.split(" [")[0] for f in rep.leaks)
    assert fields == ["[<key>][<key>][<key>][<key>][<key>]", "x (JSON text)"]
    assert "build.internal.acme.io" not in rep.text()
    # a body no table describes (an endpoint disguise does not transform): the same
    sent = json.dumps({"build": {"internal": {"acme": {"io": "Acme Corp"}}}, "session_id": 1}).encode()
    rep = audit.audit([audit.Record(1, "POST /v1/assistants", None, sent, None)], rules)
    fields = sorted(f.field.split(" [")[0] for f in rep.leaks)
    assert fields == ["[<key>] (key)", "[<key>][<key>][<key>][<key>]"]
    assert "build.internal.acme.io" not in rep.text() and "session_id" not in rep.text()


def test_masked_requests_pass(fixtures: Path) -> None:
    """Every recorded request, masked, carries no original the audit can find."""
    from disguiselib.apis.registry import ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES

    apis = {"anthropic": ANTHROPIC_MESSAGES, "openai": OPENAI_CHAT}
    n = 0
    for f in sorted(fixtures.glob("*/*.request.json")):
        provider = f.parent.name
        if provider not in apis:
            continue
        api = OPENAI_RESPONSES if f.name.startswith("responses") else apis[provider]
        raw = f.read_bytes()
        doc = json.loads(raw)
        doc["x_probe"] = "Acme Corp bob@corp.example.com"  # an unknown field: masked too (fail closed)
        raw = json.dumps(doc).encode()
        masked, _ = mask_body(raw, api.request_rule, RULES)
        rep = audit.audit([audit.Record(1, f.name, api.name, masked, None)], RULES)
        assert rep.leaks == [], (f.name, rep.text())
        assert audit.audit([audit.Record(1, f.name, api.name, raw, None)], RULES).leaks, f.name
        n += 1
    assert n >= 20


def test_recorded_streams_reassemble(fixtures: Path) -> None:
    """Every recorded SSE stream parses; its channels and final event are found."""
    for f in sorted(fixtures.glob("*/*.sse")):
        s = sseview.parse_stream(f.read_bytes())
        assert s.events and s.channels, f.name
        assert s.terminal or "max_tokens" in f.name or "length" in f.name, f.name
        text = render.render_stream(f.read_bytes())
        assert "── events ──" in text


def test_render_marks_a_stream_without_final_event() -> None:
    out = render.render_stream(anthropic_sse(["a"])[: -len(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')])
    assert "no final event" in out.splitlines()[0]


# -- sessions recorded with disguise_fakes -----------------------------------------------------


def _faked() -> tuple[object, bytes, list[str]]:
    """Shipped rules with fakes; a request holding a card number and an AWS key masked."""
    from disguiselib.apis.registry import recognise
    from disguiselib.config import build_config

    rules = build_config([], True, [], b"audit-key-0123456789abcdef").rules
    client = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "card 4539 1488 0343 6467 key AKIAZ3MPLQW8RT5YUX2B"}]}).encode()  # fmt: skip
    sent, session = mask_body(client, recognise("POST", "/v1/messages").request_rule, rules)  # type: ignore[union-attr]
    fakes = sorted(k for k in session.placeholders if not k.startswith("["))
    assert len(fakes) == 2
    return rules, sent, fakes


def test_a_session_recorded_with_fakes_audits_clean_and_fakes_the_client_got_are_found() -> None:
    rules, sent, fakes = _faked()
    restored = anthropic_sse(["card 4539 1488 ", "0343 6467 ok"])
    r = audit.Record(1, "POST /v1/messages", "anthropic.messages", sent, restored, "text/event-stream",
                     fakes=frozenset(fakes))  # fmt: skip
    assert audit.audit([r], rules).leaks == []  # the fakes upstream are no originals
    # without the summary's list the fakes look like originals of their kind
    r.fakes = frozenset()
    assert {f.what for f in audit.audit([r], rules).leaks} >= {"CARD_NUMBER match"}
    # a fake the client received, split across two events, is a disguise not restored
    half = len(fakes[0]) // 2
    r = audit.Record(1, "POST /v1/messages", "anthropic.messages", sent,
                     anthropic_sse(["x " + fakes[0][:half], fakes[0][half:] + " y"]), "text/event-stream",
                     fakes=frozenset(fakes))  # fmt: skip
    leaks = audit.audit([r], rules).leaks
    assert len(leaks) == 1 and leaks[0].side == "client" and leaks[0].what.startswith("fake")
    assert fakes[0] not in leaks[0].what  # named by kind and length, not quoted


# -- AWS event streams (Bedrock) and tool arguments written with escapes ----------------------

ES_TYPE = "application/vnd.amazon.eventstream"


def invoke_es(pieces: list[str]) -> bytes:
    """InvokeModelWithResponseStream: Anthropic's events, base64 in `chunk` frames."""
    from aws_util import chunk_frame

    evs = [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    evs += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    evs += [{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    return b"".join(chunk_frame(e) for e in evs)


def converse_es(pieces: list[str], tool: bool = False) -> bytes:
    """ConverseStream: each frame's payload the event of its `:event-type`."""
    from aws_util import converse_frame

    f = [converse_frame("messageStart", {"role": "assistant"})]
    if tool:
        f.append(converse_frame("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
            "toolUseId": "t1", "name": "f"}}}))  # fmt: skip
    for p in pieces:
        delta = {"toolUse": {"input": p}} if tool else {"text": p}
        f.append(converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta}))
    f += [converse_frame("contentBlockStop", {"contentBlockIndex": 0}), converse_frame("messageStop", {"stopReason": "end_turn"})]
    return b"".join(f)


BEDROCK = {
    "invoke": ("POST /model/anthropic.claude-3-5-sonnet-20240620-v1:0/invoke-with-response-stream", "aws.bedrock.invoke",
               invoke_es),
    "converse": ("POST /model/m/converse-stream", "aws.bedrock.converse", converse_es),
    "converse tool": ("POST /model/m/converse-stream", "aws.bedrock.converse", lambda ps: converse_es(ps, tool=True)),
}  # fmt: skip


@given(st.lists(st.sampled_from(["hi ", "Zen", "ith", " Labs", "[EMAIL_1]", "[EMA", "IL_1]", "x"]), min_size=1, max_size=12),
       st.lists(st.integers(0, 200), max_size=8), st.sampled_from(sorted(BEDROCK)), st.booleans())  # fmt: skip
def test_every_disguise_in_a_bedrock_event_stream_is_found_however_it_is_split(parts, points, kind, labelled) -> None:
    """Issue D3: the frames are read (a chunk's base64 `bytes` decoded), each event
    through its table and each block's text across frames, labelled or not."""
    text = "".join(parts)
    label, api, build = BEDROCK[kind]
    body = build(cuts(text, points))
    r = audit.Record(1, label, api, b'{"messages":[{"role":"user","content":"[EMAIL_1]"}]}', body,
                     ES_TYPE if labelled else "")  # fmt: skip
    found = audit.audit([r], RULES).leaks
    assert len(found) == sum(text.count(d) for d in ("Zenith Labs", "[EMAIL_1]"))
    assert all(f.side == "client" for f in found)


def test_a_bedrock_stream_cut_inside_a_frame_is_read_up_to_the_cut_and_the_rest_as_text() -> None:
    body = converse_es(["Zenith ", "Labs"])
    r = audit.Record(1, "POST /model/m/converse-stream", "aws.bedrock.converse", b"{}", body[:-5] + b"Zenith Labs",
                     ES_TYPE)  # fmt: skip
    fields = [f.field for f in audit.audit([r], RULES).leaks]
    assert len(fields) == 2 and any("split across events" in f for f in fields) and any("data" in f for f in fields)


def test_reasoning_in_a_converse_stream_is_a_note_not_a_leak() -> None:
    from aws_util import converse_frame

    body = b"".join([converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {
        "text": p}}}) for p in ("Zenith ", "Labs")] + [converse_frame("messageStop", {"stopReason": "end_turn"})])  # fmt: skip
    r = audit.Record(1, "POST /model/m/converse-stream", "aws.bedrock.converse", b"{}", body, ES_TYPE)
    rep = audit.audit([r], RULES)
    assert rep.leaks == [] and any("signed" in f.field for f in rep.findings)


def _chat_args(parts: list[str]) -> bytes:
    def chunk(fn: dict) -> bytes:
        d = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, **({"id": "c1", "type": "function"} if "name" in fn else {}), "function": fn}]}}]}  # fmt: skip
        return f"data: {json.dumps(d)}\n\n".encode()

    return b"".join([chunk({"name": "f", "arguments": parts[0]}), *(chunk({"arguments": p}) for p in parts[1:])]) + (
        b"data: [DONE]\n\n")


def _anthropic_args(parts: list[str]) -> bytes:
    evs = [{"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f",
                                                                         "input": {}}}]  # fmt: skip
    evs += [{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in parts]  # fmt: skip
    evs += [{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in evs).encode()


def _responses_args(parts: list[str]) -> bytes:
    t = "response.function_call_arguments.delta"
    evs = [{"type": t, "sequence_number": i, "item_id": "fc", "output_index": 0, "delta": p} for i, p in enumerate(parts)]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in evs).encode()


ARGS = {
    "chat": ("POST /v1/chat/completions", "openai.chat", _chat_args),
    "anthropic": ("POST /v1/messages", "anthropic.messages", _anthropic_args),
    "responses": ("POST /v1/responses", "openai.responses", _responses_args),
}
# A disguise as JSON text may write it: each character of it may be a \u escape
# (Go's encoding/json writes `&<>` so; any encoder may), `/` also as `\/`.
WRITTEN = ["Zenith\\u0020Labs", "\\u005aenith Labs", "Zenith Lab\\u0073", "[EMAIL\\u005f1]", "Zenith Labs",
           "\\u005Benith Labs"]  # fmt: skip


@given(st.sampled_from(sorted(ARGS)), st.sampled_from(WRITTEN), st.lists(st.integers(0, 200), max_size=6))
def test_a_disguise_written_with_escapes_in_streamed_arguments_is_found_however_it_is_split(api, written, points) -> None:
    """Issue D3: a tool's arguments are JSON text; the client reads their escapes decoded,
    so the audit searches them decoded (as the restorer matches them), across events and
    inside one whose piece is not JSON on its own."""
    label, name, build = ARGS[api]
    args = json.dumps({"q": "x"})[:-2] + written + '", "n": 1}'
    body = build(cuts(args, points))
    r = audit.Record(1, label, name, b'{"messages":[{"role":"user","content":"[EMAIL_1]"}]}', body,
                     "text/event-stream")  # fmt: skip
    found = audit.audit([r], RULES).leaks
    expected = 0 if written.startswith("\\u005B") else 1  # `[enith Labs` is no disguise
    assert len(found) == expected, [f.field for f in found]


# -- rules that masked a flow, not given to the audit ---------------------------------------------


def test_a_flow_masked_by_rules_the_audit_was_not_given_is_not_proven() -> None:
    """A flow's summary names the rules that masked it (replay.fingerprint: pattern names,
    literals by a hash): an audit without one of them cannot see what its disguises did
    on the client's side, so the flow is not proven (never "clean"), the missing rules
    named and no original quoted; with them all, clean."""
    from disguiselib.inspect.replay import _literal_id

    def rec(masked_by: dict | None) -> audit.Record:
        return audit.Record(1, "POST /v1/messages", "anthropic.messages", b'{"messages": []}', b"{}",
                            "application/json", masked_by=masked_by)  # fmt: skip

    ours = {"patterns": ["EMAIL"], "literals": [_literal_id("Acme Corp")]}
    assert audit.audit([rec(ours)], RULES).exit_code() == audit.CLEAN
    assert audit.audit([rec(None)], RULES).exit_code() == audit.CLEAN  # nothing said: nothing claimed
    for gone, says in (({"patterns": ["PHONE"], "literals": []}, "pattern PHONE"),
                       ({"patterns": [], "literals": [_literal_id("Other Co"), _literal_id("Third Co")]}, "2 literals")):  # fmt: skip
        rep = audit.audit([rec(gone)], RULES)
        assert rep.exit_code() == audit.NOT_PROVEN and rep.unloaded and not rep.leaks
        text = rep.text()
        assert "MASKED BY RULES NOT LOADED" in text and says in text and "Other Co" not in text, text
        assert rep.verdict().startswith("NOT PROVEN: 1 of 1 LLM flow masked by rules not loaded here")
    shared = rec({"patterns": ["PHONE"], "literals": []})
    shared.shared = True  # a shared copy is audited for what it holds, the provider side: every rule given
    assert audit.audit([shared], RULES).exit_code() == audit.CLEAN


def test_a_grpc_body_that_went_upstream_is_read_as_its_server_reads_it() -> None:
    """Probe R: a gRPC call forwarded (clean, or under disguise_allow_unknown) is read
    message by message, decompressed; one in a coding the audit cannot read leaves the flow
    not proven, with why."""
    import gzip

    msg = b"\x0a\x09" + b"Acme Corp"
    zipped = gzip.compress(msg)

    def rec(data: bytes) -> audit.Record:
        body = b"\x01" + len(data).to_bytes(4, "big") + data
        return audit.Record(1, "POST /google.cloud.aiplatform.v1.PredictionService/GenerateContent", None, body, None,
                            sent_type="application/grpc")  # fmt: skip

    rep = audit.audit([rec(zipped)], RULES)
    assert rep.exit_code() == audit.LEAK
    assert [f.field for f in rep.leaks] == ["body message 1 (string fields) [2:11]", "body message 1 (string fields) [12:21]"]
    rep = audit.audit([rec(b"\xff\x06\x00\x00sNaPpY" + b"\x0a\x05hello")], RULES)
    assert rep.exit_code() == audit.NOT_PROVEN and not rep.leaks
    assert "REQUEST BODY NOT READ WHOLE (a gRPC message is compressed in a coding" in rep.text()
    assert "1 of 1 LLM flow sent upstream in a coding disguise does not decode" in rep.verdict()


def test_a_grpc_binary_header_that_went_upstream_is_read_base64_decoded() -> None:
    import base64

    r = audit.Record(1, "POST /google.cloud.aiplatform.v1.PredictionService/GenerateContent", None, b"", None,
                     sent_type="application/grpc")  # fmt: skip
    r.headers = [("request", "x-note-bin", base64.b64encode(b"\x0a\x09Acme Corp").decode())]
    rep = audit.audit([r], RULES)
    assert [f.field for f in rep.leaks] == ["request header 'x-note-bin' (base64-decoded) [2:11]",
                                            "request header 'x-note-bin' (base64-decoded) [12:21]"]  # fmt: skip
