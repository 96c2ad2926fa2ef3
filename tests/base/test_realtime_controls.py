"""A realtime client's control frames (base/realtime.py, pipeline.client_control): a
ping's or a pong's payload and a close's reason go upstream masked with the
connection's rules and session, or empty where masked they would not fit or the leak
guard still finds an original; never as the client wrote them. The echo of a rewritten
ping (its pong) and of the client's close carry the client's own payload back."""

from __future__ import annotations

import json

from disguiselib.apis.openai.realtime import OpenAIRealtime
from disguiselib.base.realtime import MAX_PINGS_AWAITED, Connection, Control, ControlOut, Frame, State
from disguiselib.pipeline import client_control, client_frame
from strategies import RULES

PING, PONG, CLOSE = Control.PING, Control.PONG, Control.CLOSE


def conn() -> Connection:
    return Connection(OpenAIRealtime, RULES)


def test_a_ping_holding_an_original_goes_masked_and_its_pong_brings_the_clients_payload_back() -> None:
    c = conn()
    out = client_control(c, PING, b"are you there, Acme Corp?")
    assert out.data == b"are you there, Zenith Labs?" and out.refused is None
    assert c.echoed(PONG, out.data) == b"are you there, Acme Corp?"
    assert c.echoed(PONG, out.data) == out.data  # answered once: a second pong is upstream's own


def test_a_payload_with_nothing_to_mask_goes_as_the_very_bytes_and_nothing_is_remembered() -> None:
    c = conn()
    data = b"\x8a\x01\xff\x07"  # a keepalive's random bytes, not UTF-8
    out = client_control(c, PING, data)
    assert out.data is data and out.refused is None
    assert not c.pings and c.echoed(PONG, data) is data


def test_a_close_reason_goes_masked_and_the_answer_to_the_clients_close_echoes_its_own() -> None:
    c = conn()
    out = client_control(c, CLOSE, b"bye from Acme Corp")
    assert out.data == b"bye from Zenith Labs"
    assert c.echoed(CLOSE, b"bye from Zenith Labs") == b"bye from Acme Corp"
    assert c.echoed(CLOSE, b"server's own reason") == b"server's own reason"


def test_a_pong_of_the_clients_holding_an_original_goes_masked() -> None:
    c = conn()
    assert client_control(c, PONG, b"bob@corp.example.com").data == b"[EMAIL_1]"


def test_placeholders_are_numbered_with_the_connections_events() -> None:
    c = conn()
    ev = {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
          "content": [{"type": "input_text", "text": "mail carol@x.io and bob@corp.example.com"}]}}  # fmt: skip
    client_frame(c, Frame(json.dumps(ev).encode()))
    assert client_control(c, PING, b"bob@corp.example.com").data == b"[EMAIL_2]"


def test_bytes_that_are_not_utf8_stay_around_the_text_masked() -> None:
    c = conn()
    out = client_control(c, PING, b"\xff\xfeAcme Corp\x80")
    assert out.data == b"\xff\xfeZenith Labs\x80"
    assert c.echoed(PONG, out.data) == b"\xff\xfeAcme Corp\x80"


def test_a_payload_too_long_once_masked_goes_empty_and_its_pong_still_brings_it_back() -> None:
    c = conn()
    data = b"Acme Corp " * 12 + b"Acme"  # 124 bytes; masked 148
    assert len(data) <= PING.limit
    out = client_control(c, PING, data)
    assert out.data == b"" and out.refused == "masked, it is 148 bytes; a ping frame holds 125"
    assert c.echoed(PONG, b"") == data


def test_a_close_reason_too_long_once_masked_goes_empty_and_keeps_no_text_in_the_why() -> None:
    c = conn()
    reason = ("Acme Corp " * 12 + "Acm").encode()  # 123 bytes, a close's most
    out = client_control(c, CLOSE, reason)
    assert out.data == b"" and "Acme" not in (out.refused or "") and "close frame holds 123" in (out.refused or "")


def test_an_original_the_leak_guard_reads_where_masking_does_not_sends_the_payload_empty() -> None:
    c = conn()
    data = b'{"a":"Acme\\u0020Corp"}'  # the guard reads it as JSON, its escapes decoded
    out = client_control(c, PING, data)
    assert out.data == b"" and out.refused == "an original (literal in body $.a) would have left unmasked"
    assert c.echoed(PONG, b"") == data


def test_a_pong_answers_the_oldest_ping_it_echoes_and_forgets_the_ones_before() -> None:
    c = conn()
    a = client_control(c, PING, b"1 Acme Corp").data
    b = client_control(c, PING, b"2 Acme Corp").data
    assert c.echoed(PONG, b) == b"2 Acme Corp"  # the latest answered alone (RFC 6455 5.5.3)
    assert not c.pings and c.echoed(PONG, a) == a


def test_pings_awaiting_their_pong_are_bounded() -> None:
    c = conn()
    sent = [client_control(c, PING, f"{i} Acme Corp".encode()).data for i in range(MAX_PINGS_AWAITED + 3)]
    assert len(c.pings) == MAX_PINGS_AWAITED
    assert c.echoed(PONG, sent[0]) == sent[0]  # forgotten: as upstream sent it, masked
    assert c.echoed(PONG, sent[-1]) == f"{MAX_PINGS_AWAITED + 2} Acme Corp".encode()


def test_a_server_ping_passes_to_the_client_as_it_is() -> None:
    c = conn()
    client_control(c, PING, b"Acme Corp")
    assert c.echoed(PING, b"Zenith Labs") == b"Zenith Labs"


def test_nothing_of_the_clients_passes_a_connection_that_is_not_open() -> None:
    closed, ended = conn(), conn()
    closed.refuse("a test", None)
    ended.end()
    for c in (closed, ended):
        assert c.state is not State.OPEN
        assert client_control(c, PING, b"hello").data == b""
        assert client_control(c, CLOSE, b"bye").data == b""


def test_a_payload_masked_to_exactly_the_frames_limit_goes_and_one_byte_more_goes_empty() -> None:
    for kind in (PING, CLOSE):
        pad = kind.limit - len(b"Zenith Labs")
        out = client_control(conn(), kind, b"x" * pad + b"Acme Corp")
        assert out.data == b"x" * pad + b"Zenith Labs" and out.refused is None
        over = client_control(conn(), kind, b"x" * (pad + 1) + b"Acme Corp")
        assert over.data == b"" and over.refused is not None


def test_a_control_frame_whose_masking_fails_goes_empty_and_says_why(monkeypatch, caplog) -> None:
    from disguiselib.errors import MaskError

    c = conn()

    def refuse(data: bytes) -> bytes:
        raise MaskError("a rule could not be applied")

    monkeypatch.setattr(c, "mask_control", refuse)
    assert client_control(c, PING, b"Acme Corp") == ControlOut(b"", "a rule could not be applied")

    def broken(data: bytes) -> bytes:
        raise RuntimeError("Acme Corp")  # a bug: its text is never what the frame or the log says

    monkeypatch.setattr(c, "mask_control", broken)
    out = client_control(c, CLOSE, b"Acme Corp")
    assert out == ControlOut(b"", "internal error (RuntimeError)")
    assert "websocket control frame" in caplog.text and "Acme Corp" not in caplog.text


# -- the server's control frames, to the client --------------------------------------------


def test_a_server_ping_reaches_the_client_restored_and_its_pong_takes_upstreams_own_back() -> None:
    c = conn()
    sent = b"ping Zenith Labs"
    assert c.to_client(PING, sent) == b"ping Acme Corp"
    assert client_control(c, PONG, b"ping Acme Corp") == ControlOut(sent)  # upstream's own, as it was
    assert not c.server_pings


def test_a_server_close_reaches_the_client_restored_and_the_echo_of_the_clients_own_its_own() -> None:
    c = conn()
    assert c.to_client(CLOSE, b"bye Zenith Labs") == b"bye Acme Corp"
    out = client_control(c, CLOSE, b"bye from Acme Corp")
    assert c.to_client(CLOSE, out.data) == b"bye from Acme Corp"


def test_a_server_pong_and_a_payload_with_nothing_to_restore_pass_as_they_are() -> None:
    c = conn()
    data = b"\x8a\x01\xff\x07"
    assert c.to_client(PING, data) is data and not c.server_pings
    assert c.to_client(PONG, b"Zenith Labs") == b"Zenith Labs"  # a pong echoes the client's ping: never rewritten
    assert c.to_client(CLOSE, b"") == b""


def test_a_server_payload_restored_past_the_frames_limit_is_cut_and_its_pong_still_takes_it_back() -> None:
    c = conn()
    client_control(c, PING, b"bob@corp.example.com")  # [EMAIL_1] in the session
    reason = b"[EMAIL_1] " * 12  # 120 bytes; restored 252
    out = c.to_client(CLOSE, reason)
    assert len(out) <= CLOSE.limit and out.endswith(b"...") and out.startswith(b"bob@corp.example.com ")
    ping = b"x" * 11 + b"[EMAIL_1] \xc3\xa9" * 9  # 119 bytes; restored 218, the 125th byte inside an \xe9
    got = c.to_client(PING, ping)
    assert len(got) == 124 and got.decode("utf-8").endswith("com ") and b"[EMAIL_" not in got
    assert client_control(c, PONG, got).data == ping


def test_bytes_that_are_not_utf8_stay_around_the_text_restored() -> None:
    c = conn()
    assert c.to_client(PING, b"\xff\xfeZenith Labs\x80") == b"\xff\xfeAcme Corp\x80"
    assert client_control(c, PONG, b"\xff\xfeAcme Corp\x80").data == b"\xff\xfeZenith Labs\x80"


def test_restored_server_pings_awaiting_their_pong_are_bounded() -> None:
    c = conn()
    for i in range(MAX_PINGS_AWAITED + 3):
        c.to_client(PING, f"{i} Zenith Labs".encode())
    assert len(c.server_pings) == MAX_PINGS_AWAITED
    assert client_control(c, PONG, b"0 Acme Corp").data == b"0 Zenith Labs"  # forgotten: masked anew
    last = MAX_PINGS_AWAITED + 2
    assert client_control(c, PONG, f"{last} Acme Corp".encode()).data == f"{last} Zenith Labs".encode()
    assert not c.server_pings  # the pings before the one answered are forgotten


def test_a_control_frame_holding_a_copy_of_an_original_goes_masked() -> None:
    """A ping's payload that sends again a value an earlier event gave its key (the
    connection's originals) goes masked with its disguise, as an event's copy does, and
    the pong echoing it comes back to the client as the client's own payload."""
    from disguiselib.pipeline import client_frame as event
    from strategies import make_rules

    rules = make_rules(patterns=[{"name": "PASSWORD", "regex": "password=(?P<v>[A-Za-z0-9]{8,})", "group": "v"}])
    c = Connection(OpenAIRealtime, rules)
    said = {"type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "password=hunter2xyz9Q"}]}}  # fmt: skip
    assert event(c, Frame(json.dumps(said).encode())).close is None
    d = {v: k for k, v in c.session.placeholders.items()}["hunter2xyz9Q"]
    out = client_control(c, PING, b"still hunter2xyz9Q?")
    assert out.data == f"still {d}?".encode() and out.refused is None
    assert c.echoed(PONG, out.data) == b"still hunter2xyz9Q?"
    # spelled so that only the leak guard's readings find it (a form's value, percent-encoded:
    # the payload read as a body is): sent empty, the rule said, never the value (a control
    # frame cannot be refused)
    out = client_control(c, PING, b"x=hunter2%78yz9Q")
    assert out.data == b"" and out.refused is not None and "PASSWORD" in out.refused and "hunter2" not in out.refused
