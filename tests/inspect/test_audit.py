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
