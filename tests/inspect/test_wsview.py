"""WebSocket flows in inspection: channels reassembled from realtime events, one row per
event, and the audit of what went upstream and what the client received."""

from __future__ import annotations

import json

from disguiselib.inspect import audit, wsview
from disguiselib.inspect.wsview import DROPPED, INJECTED, SENT, Msg
from realtime_util import OpenAIScript, gemini_flag, gemini_text, gemini_transcript
from strategies import RULES


def _m(ev: dict, from_client: bool = False, state: str = SENT) -> Msg:
    return Msg(from_client, json.dumps(ev).encode(), state)


def test_openai_channels_reassembled_from_what_the_client_received() -> None:
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["Hello ", "Acme ", "Corp"])
    msgs = [_m(e) for e in evs]
    msgs[4].state = DROPPED  # replaced by the injected event after it
    msgs.insert(5, _m({**evs[4], "delta": "Acme "}, state=INJECTED))
    st = wsview.parse(msgs)
    assert [c.text for c in st.channels.values()] == ["Hello Acme Corp"]
    text = wsview.render_connection(msgs)
    assert "response r1 item i1 output 0 content 0 text" in text and "Hello Acme Corp" in text
    assert "[dropped]" in text and "[injected by disguise]" in text


def test_gemini_channels() -> None:
    msgs = [_m(gemini_text("Hi ")), _m(gemini_transcript("outputTranscription", "Hi")),
            _m(gemini_text("there")), _m(gemini_flag("turnComplete"))]  # fmt: skip
    st = wsview.parse(msgs)
    assert {k: c.text for k, c in st.channels.items()} == {"model turn text": "Hi there", "outputTranscription": "Hi"}


def _record(msgs: list[Msg]) -> audit.Record:
    return audit.Record(1, "WebSocket GET /v1/realtime", "openai.realtime", None, None, messages=msgs)


def test_audit_finds_an_original_upstream_and_a_split_disguise_at_the_client() -> None:
    up = _m({"type": "session.update", "session": {"instructions": "for Acme Corp, [EMAIL_1]"}}, from_client=True)
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["to Zen", "ith Labs"])
    report = audit.audit([_record([up, *(_m(e) for e in evs)])], RULES)
    whats = [(f.side, f.what) for f in report.leaks]
    assert ("upstream", "literal (disguise 'Zenith Labs')") in whats
    assert any(side == "client" and "Zenith Labs" in what for side, what in whats)  # in the done event too
    split = [f for f in report.leaks if "split across events" in f.field]
    assert len(split) == 1


def test_audit_clean_connection_and_dropped_messages_do_not_count() -> None:
    up = _m({"type": "session.update", "session": {"instructions": "for Zenith Labs, [EMAIL_1]"}}, from_client=True)
    refused = _m({"type": "future", "note": "Acme Corp"}, from_client=True, state=DROPPED)
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["to Acme", " Corp"])
    held = _m({**evs[3], "delta": "Zenith"}, state=DROPPED)
    report = audit.audit([_record([up, refused, held, *(_m(e) for e in evs)])], RULES)
    assert report.leaks == [] and report.exit_code() == 0
