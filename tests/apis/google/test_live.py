"""Gemini Live through realtime.Connection (sans I/O): client messages masked, server
messages restored per channel whatever the splits, tails released inside the message
that ends the turn, binary frames kept binary."""

from __future__ import annotations

import base64
import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disguiselib.apis.google.live import GeminiLive
from disguiselib.base.realtime import INTERNAL_ERROR, POLICY_VIOLATION, Connection, Frame
from disguiselib.pipeline import client_frame
from realtime_util import (
    check_gemini,
    gemini_audio,
    gemini_flag,
    gemini_text,
    gemini_tool_call,
    gemini_transcript,
    read_gemini,
)
from strategies import FAKE_DISGUISES, PLACEHOLDERS, RULES, restore_value, splits, texts


def conn() -> Connection:
    c = Connection(GeminiLive, RULES)
    r = client_frame(c, Frame(json.dumps({"realtimeInput": {"text": "I am bob@corp.example.com"}}).encode()))
    assert r.close is None
    c.session.placeholder("EMAIL", PLACEHOLDERS["[EMAIL_2]"])
    c.session.placeholders.update(FAKE_DISGUISES)  # DISGUISE_TEST_FAKES: the connection's fakes
    assert c.session.placeholders == PLACEHOLDERS
    return c


def server(c: Connection, messages: list[dict], binary: bool = True) -> list[dict]:
    out = []
    for m in messages:
        r = c.server(Frame(json.dumps(m).encode(), text=not binary))
        assert r.close is None, r
        for f in r.frames:
            assert f.text is (not binary)
            out.append(json.loads(f.data))
    return out


CLIENT_CASES = {
    "setup": {"setup": {
        "model": "models/gemini-live-2.5-flash-preview",
        "generationConfig": {"responseModalities": ["AUDIO"], "speechConfig": {"voiceConfig": {}}},
        "systemInstruction": {"parts": [{"text": "You are Acme Corp's assistant"}]},
        "tools": [{"functionDeclarations": [{"name": "acme_lookup", "description": "Find an Acme Corp order",
                                             "parameters": {"type": "OBJECT",
                                                            "properties": {"session_id": {"type": "STRING"}}}}]}],
        "inputAudioTranscription": {}, "outputAudioTranscription": {}}},
    "client_content": {"client_content": {"turns": [{"role": "user", "parts": [
        {"text": "Write to bob@corp.example.com for Acme Corp"},
        {"inlineData": {"mimeType": "image/png", "data": "QWNtZSBDb3Jw"}}]}], "turnComplete": True}},
    "realtimeInput": {"realtimeInput": {"text": "Acme Corp here"}},
    "realtime_input audio": {"realtime_input": {"audio": {"data": "QWNtZSBDb3Jw", "mimeType": "audio/pcm;rate=16000"}}},
    "tool_response": {"tool_response": {"functionResponses": [
        {"id": "fc_1", "name": "acme_lookup", "response": {"session_id": "Acme Corp", "owner": "bob@corp.example.com"}}]}},
}  # fmt: skip


@pytest.mark.parametrize("name", list(CLIENT_CASES))
def test_client_messages_mask_only_strings_holding_originals(name: str) -> None:
    c = Connection(GeminiLive, RULES)
    raw = json.dumps(CLIENT_CASES[name])
    r = client_frame(c, Frame(raw.encode()))
    assert r.close is None
    expected = (
        raw.replace("Acme Corp", "Zenith Labs")
        .replace("session_id", "thread_id")
        .replace("acme_lookup", "crm_lookup")
        .replace("bob@corp.example.com", "[EMAIL_1]")
    )
    if "audio" in name:
        assert r.frames[0].data == raw.encode()  # base64 media: untouched
    else:
        assert r.frames[0].data.decode() == expected


def test_unknown_client_message_with_an_original_is_refused() -> None:
    c = conn()
    r = client_frame(c, Frame(b'{"futureInput": {"text": "Acme Corp"}}'))
    assert r.close is not None and r.close[0] == POLICY_VIOLATION
    err = json.loads(r.error.data)
    assert err["code"] == 400 and "Acme Corp" not in err["message"]
    assert r.error.text is False  # the API's own frame type


def test_unknown_clean_client_message_is_forwarded() -> None:
    c = conn()
    f = Frame(b'{"futureInput": {"n": 1}}')
    assert client_frame(c, f).frames[0] is f


def test_text_split_across_messages_released_by_turn_complete() -> None:
    c = conn()
    msgs = [gemini_text("Hello Zen"), gemini_text("ith La"), gemini_text("bs and [EMA"), gemini_text("IL_1"),
            gemini_flag("turnComplete")]  # fmt: skip
    out = server(c, msgs)
    assert read_gemini(out)["model"] == "Hello Acme Corp and [EMAIL_1"
    # `[EMAIL_1` never completed: at the turn's end it goes out as it is
    assert out[-1]["serverContent"]["turnComplete"] is True
    assert out[-1]["serverContent"]["modelTurn"]["parts"][0]["text"] == "[EMAIL_1"
    check_gemini(out)


def test_generation_complete_releases_model_text_into_its_own_message() -> None:
    c = conn()
    out = server(c, [gemini_text("see nova"), gemini_flag("generationComplete"), gemini_flag("turnComplete")])
    assert out[1]["serverContent"]["modelTurn"]["parts"] == [{"text": "nova-internal"}]
    assert "modelTurn" not in out[2]["serverContent"]
    check_gemini(out)


def test_transcriptions_split_and_restored() -> None:
    c = conn()
    msgs = [gemini_transcript("inputTranscription", "it's Zen"), gemini_transcript("inputTranscription", "ith", True),
            gemini_audio("AAAA"), gemini_transcript("outputTranscription", "Hi [EMA"),
            gemini_transcript("outputTranscription", "IL_2] at Zenith"), gemini_flag("turnComplete")]  # fmt: skip
    out = server(c, msgs)
    got = read_gemini(out)
    assert got["input"] == "it's Zenith"  # `Zenith` alone is no disguise: finished releases it as it is
    assert got["output"] == 'Hi q"uote\\d@x.io at Zenith'
    check_gemini(out)


def test_tool_call_args_restored_keys_and_values() -> None:
    c = conn()
    call = {"id": "fc_1", "name": "crm_lookup", "args": {"thread_id": "WINPATH", "to": ["[EMAIL_1]", 3]}}
    out = server(c, [gemini_tool_call([call])])
    assert out[0]["toolCall"]["functionCalls"][0] == {"id": "fc_1", **restore_value(
        {"name": "crm_lookup", "args": call["args"]})}  # fmt: skip


def test_audio_and_thoughts_byte_identical() -> None:
    c = conn()
    audio = base64.b64encode(b"Zenith Labs [EMAIL_1]" * 10).decode()
    for m in [gemini_audio(audio),
              {"serverContent": {"modelTurn": {"parts": [{"text": "Zenith Labs", "thought": True}]}}}]:  # fmt: skip
        f = Frame(json.dumps(m).encode(), text=False)
        assert c.server(f).frames[0] is f


def test_text_frames_stay_text() -> None:
    c = conn()
    out = server(c, [gemini_text("Zenith Labs"), gemini_flag("turnComplete")], binary=False)
    assert read_gemini(out)["model"] == "Acme Corp"


def test_setup_complete_and_unknown_messages() -> None:
    c = conn()
    f = Frame(b'{"setupComplete": {}}', text=False)
    assert c.server(f).frames[0] is f
    out = server(c, [{"futureMessage": {"note": "Zenith Labs"}}])
    assert out == [{"futureMessage": {"note": "Acme Corp"}}]


def test_unparsable_binary_frame_ends_the_connection() -> None:
    c = conn()
    server(c, [gemini_text("Hi Zenith")])
    r = c.server(Frame(b"\x00\x01Zenith", text=False))
    assert r.close is not None and r.close[0] == INTERNAL_ERROR
    assert json.loads(r.error.data)["code"] == 500 and b"Zenith" not in r.error.data


@st.composite
def turns(draw):
    model, output, inp = draw(texts), draw(texts), draw(texts)
    queues = [
        [gemini_text(p) for p in draw(splits(model))],
        [gemini_transcript("outputTranscription", p) for p in draw(splits(output))],
        [gemini_transcript("inputTranscription", p) for p in draw(splits(inp))],
        [gemini_audio("AAAA"), gemini_audio("ZW5k")],
    ]
    steps = []
    while any(queues):
        i = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        steps.append(queues[i].pop(0))
    ending = draw(st.sampled_from([["generationComplete", "turnComplete"], ["turnComplete"], ["interrupted"]]))
    steps += [gemini_flag(e) for e in ending]
    return {"model": model, "output": output, "input": inp}, steps


@given(turns())
def test_channels_reassemble_to_the_whole_result(plan) -> None:
    want, steps = plan
    c = conn()
    r = RULES.restorer(c.session.placeholders)
    out = server(c, steps)
    check_gemini(out)
    got = read_gemini(out)
    for k, whole in want.items():
        assert got.get(k, "") == r.text(whole)
    assert not c.proto.held()


SHORT = "Hi Zenith Labs, [EMAIL_1]."


@pytest.mark.parametrize("n", [2, 3])
def test_every_split_point_of_a_short_text(n: int) -> None:
    r = RULES.restorer(PLACEHOLDERS)
    for cuts in itertools.combinations(range(1, len(SHORT)), n - 1):
        bounds = [0, *cuts, len(SHORT)]
        msgs = [gemini_text(SHORT[a:b]) for a, b in itertools.pairwise(bounds)] + [gemini_flag("turnComplete")]
        assert read_gemini(server(conn(), msgs))["model"] == r.text(SHORT)


def test_a_text_blob_is_masked_inside_and_audio_is_not() -> None:
    """realtimeInput blobs are generateContent's Blob: a text MIME type is what the model
    reads decoded, so an original in it must not leave; audio passes byte-identical."""
    c = Connection(GeminiLive, RULES)
    text = base64.b64encode(b"notes on Acme Corp").decode()
    audio = base64.b64encode(b"Acme Corp").decode()
    msg = {"realtimeInput": {"mediaChunks": [{"mimeType": "text/plain", "data": text},
                                             {"mimeType": "audio/pcm;rate=16000", "data": audio}]}}  # fmt: skip
    r = client_frame(c, Frame(json.dumps(msg).encode()))
    assert r.close is None
    got = json.loads(r.frames[0].data)["realtimeInput"]["mediaChunks"]
    assert base64.b64decode(got[0]["data"]) == b"notes on Zenith Labs"
    assert got[1]["data"] == audio


# -- streamed function-call arguments (`partialArgs`, calls.py) in toolCall messages ----------

CALL_PATHS = ["$.thread_id", "$.path", "$['Zenith Labs']"]


@st.composite
def streamed_calls(draw):
    """One or two calls in a row (the second names another function), each with one or
    two string paths cut into pieces, sent in toolCall messages of one to three pieces;
    a call ends in a message of its own, with its last pieces, or never (the next call
    or the turn's end ends it), maybe with a model text between; then turnComplete.
    Returns the messages and what each (call, path) must join to."""
    want: dict = {}
    msgs: list[dict] = []
    for n in range(draw(st.integers(1, 2))):
        ident = {"id": f"fc_{n}"} if draw(st.booleans()) else {}
        msgs.append(gemini_tool_call([{"name": ("crm_lookup", "fetch")[n], **ident, "willContinue": True}]))
        streams = []
        for path in draw(st.lists(st.sampled_from(CALL_PATHS), min_size=1, max_size=2, unique=True)):
            text = draw(texts)
            pieces = draw(splits(text))
            want[(n, R.value(path))] = R.value(text)
            ends = draw(st.booleans())
            streams.append([{"jsonPath": path, "stringValue": p, "willContinue": i < len(pieces) - 1 or not ends}
                            for i, p in enumerate(pieces)])  # fmt: skip
        order = []
        while any(streams):
            s = draw(st.sampled_from([s for s in streams if s]))
            order.append(s.pop(0))
        while order:
            take = draw(st.integers(1, 3))
            msgs.append(gemini_tool_call([{"partialArgs": order[:take], "willContinue": True, **ident}]))
            order = order[take:]
        how = draw(st.sampled_from(["own", "last", "never"]))
        if how == "own":
            msgs.append(gemini_tool_call([dict(ident)]))
        elif how == "last":
            msgs[-1]["toolCall"]["functionCalls"][0].pop("willContinue")
    if draw(st.booleans()):
        msgs.append(gemini_text("done"))
    msgs.append(gemini_flag("turnComplete"))
    return msgs, want


def joined_calls(out: list[dict]) -> dict:
    """As a client joins streamed arguments: a call with a `name` opens the next call,
    one without continues the latest; string pieces join per path."""
    got: dict = {}
    n = -1
    for m in out:
        for call in m.get("toolCall", {}).get("functionCalls", []):
            if "name" in call:
                assert call["name"] in ("acme_lookup", "fetch")
                n += 1
            for piece in call.get("partialArgs", []):
                got[(n, piece["jsonPath"])] = got.get((n, piece["jsonPath"]), "") + piece["stringValue"]
    return got


R = RULES.restorer(PLACEHOLDERS)


@given(streamed_calls())
def test_streamed_call_arguments_reassemble_to_the_whole_value_result(plan) -> None:
    msgs, want = plan
    c = conn()
    out = server(c, msgs)
    check_gemini(out)
    got = joined_calls(out)
    assert set(got) <= set(want)
    assert {k: got.get(k, "") for k in want} == want
    assert not c.proto.held()


def test_a_disguise_cut_between_two_tool_call_messages_is_restored() -> None:
    c = conn()
    piece = lambda v, more=True: {"jsonPath": "$.thread_id", "stringValue": v, "willContinue": more}  # noqa: E731
    msgs = [gemini_tool_call([{"name": "crm_lookup", "id": "fc_1", "willContinue": True}]),
            gemini_tool_call([{"id": "fc_1", "willContinue": True, "partialArgs": [piece("for Zenith L")]}]),
            gemini_tool_call([{"id": "fc_1", "willContinue": True, "partialArgs": [piece("abs [EMA")]}]),
            gemini_tool_call([{"id": "fc_1", "partialArgs": [piece("IL_1]", False)]}])]  # fmt: skip
    out = server(c, msgs)
    check_gemini(out)
    assert joined_calls(out) == {(0, "$.session_id"): "for Acme Corp bob@corp.example.com"}
    # a call the connection's end cuts short: its held tail in a toolCall message of its own
    c = conn()
    out = server(c, msgs[:3])
    end = c.end()
    assert joined_calls(out + [json.loads(f.data) for f in end.frames]) == {(0, "$.session_id"): "for Acme Corp [EMA"}
    assert end.error is not None  # the call never ended: an explicit error after its tail


def test_setup_speaker_names_are_masked_as_the_instructions_are() -> None:
    c = Connection(GeminiLive, RULES)
    raw = json.dumps({"setup": {"model": "models/gemini-live", "generationConfig": {"speechConfig": {
        "multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [
            {"speaker": "Acme Corp", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}]}}},
        "systemInstruction": {"parts": [{"text": "You voice Acme Corp"}]}}})  # fmt: skip
    r = client_frame(c, Frame(raw.encode()))
    assert r.close is None
    assert r.frames[0].data.decode() == raw.replace("Acme Corp", "Zenith Labs")


def test_a_resumed_session_is_numbered_apart_from_the_connections_before_it() -> None:
    """The server holds the context of the connections a resumed session continues,
    numbered from 1 by them: the resumed connection's numbers are keyed by its handle
    (base/prompt.numbers_key), so the server's `[EMAIL_1]` quoted back is never this
    connection's original. A setup that only asks for resumable sessions is numbered
    from 1."""
    import re

    def first_email(setup: dict) -> tuple[Connection, str]:
        c = Connection(GeminiLive, RULES)
        assert client_frame(c, Frame(json.dumps({"setup": {"model": "models/m", **setup}}).encode())).close is None
        r = client_frame(c, Frame(json.dumps({"realtimeInput": {"text": "cc alice@corp.example.com"}}).encode()))
        return c, re.search(r"\[EMAIL_[0-9]+\]", r.frames[0].data.decode()).group()

    _, fresh = first_email({"sessionResumption": {}})
    assert fresh == "[EMAIL_1]"
    c, resumed = first_email({"sessionResumption": {"handle": "h-123"}})
    assert re.fullmatch(r"\[EMAIL_[1-9][0-9]{8}\]", resumed)
    assert first_email({"session_resumption": {"handle": "h-123"}})[1] == resumed  # the same handle, the same number
    assert first_email({"sessionResumption": {"handle": "h-456"}})[1] != resumed
    # the server quoting the stored [EMAIL_1]: left as it is; this connection's restored
    out = server(c, [gemini_text(f"I wrote to [EMAIL_1]; now {resumed}."), gemini_flag("turnComplete")])
    assert read_gemini(out)["model"] == "I wrote to [EMAIL_1]; now alice@corp.example.com."
