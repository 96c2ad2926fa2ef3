"""OpenAI Realtime through realtime.Connection (sans I/O): client events masked with only
the strings that hold originals changed, server events restored per channel whatever
the delta splits, fail-closed refusals and failures."""

from __future__ import annotations

import base64
import itertools
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.apis.openai.realtime import OpenAIRealtime
from disguiselib.base.realtime import INTERNAL_ERROR, POLICY_VIOLATION, Connection, Frame, State
from disguiselib.pipeline import client_frame
from realtime_util import OpenAIScript, check_openai, openai_channel, read_openai
from strategies import FAKE_DISGUISES, PLACEHOLDERS, RULES, make_rules, splits, texts

ORIGINALS_EVENT = {
    "type": "conversation.item.create",
    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "mail bob@corp.example.com"}]},
}  # fmt: skip


def conn(rules=RULES) -> Connection:
    """A connection whose session issued [EMAIL_1] and [EMAIL_2] (as PLACEHOLDERS): the
    first from a client event, the second (an original that needs JSON escaping, which
    the e-mail pattern would not match) put into the session directly."""
    c = Connection(OpenAIRealtime, rules)
    out = client_frame(c, Frame(json.dumps(ORIGINALS_EVENT).encode()))
    assert out.close is None
    c.session.placeholder("EMAIL", PLACEHOLDERS["[EMAIL_2]"])
    c.session.placeholders.update(FAKE_DISGUISES)  # DISGUISE_TEST_FAKES: the connection's fakes
    assert c.session.placeholders == PLACEHOLDERS
    return c


def client(c: Connection, ev: dict | bytes) -> bytes:
    data = ev if isinstance(ev, bytes) else json.dumps(ev).encode()
    r = client_frame(c, Frame(data))
    assert r.close is None, r
    assert len(r.frames) == 1 and r.frames[0].text
    return r.frames[0].data


def server(c: Connection, events: list[dict], compact: bool = False) -> list[dict]:
    """Events through the connection. compact=True: the API's own compact JSON (deltas
    take the regex path); False: spaced JSON (every event is parsed)."""
    out = []
    seps = (",", ":") if compact else (", ", ": ")
    for ev in events:
        r = c.server(Frame(json.dumps(ev, separators=seps).encode()))
        assert r.close is None, r
        out.extend(json.loads(f.data) for f in r.frames)
    return out


# -- client events -------------------------------------------------------------------------

# Each client event kind, with originals where the model reads them; expected: the same
# bytes with only those strings replaced (json.dumps writes every string plainly here,
# so a text replacement of the raw JSON is exactly the splice).
CLIENT_CASES = {
    "session.update": {
        "type": "session.update", "event_id": "evt_1",
        "session": {
            "type": "realtime", "model": "gpt-realtime", "output_modalities": ["audio"],
            "instructions": "You are Acme Corp's agent; escalate to bob@corp.example.com.",
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000},
                                "transcription": {"model": "gpt-4o-transcribe", "prompt": "Names: Acme Corp"}},
                      "output": {"voice": "marin"}},
            "tools": [{"type": "function", "name": "acme_lookup", "description": "Look up an Acme Corp account",
                       "parameters": {"type": "object", "properties": {"session_id": {"type": "string"}},
                                      "required": ["session_id"]}}],
            "tool_choice": {"type": "function", "name": "acme_lookup"},
        },
    },
    "conversation.item.create message": {
        "type": "conversation.item.create", "previous_item_id": None,
        "item": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "I am with Acme Corp"},
            {"type": "input_audio", "audio": "QWNtZSBDb3Jw", "transcript": "Acme Corp calling"}]},
    },
    "conversation.item.create function_call_output": {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1",
                 "output": "{\"owner\": \"Acme Corp\", \"session_id\": \"s-1\"}"},
    },
    "conversation.item.create function_call": {
        "type": "conversation.item.create",
        "item": {"type": "function_call", "call_id": "call_1", "name": "acme_lookup",
                 "arguments": "{\"session_id\": \"Acme Corp\"}"},
    },
    "response.create": {
        "type": "response.create",
        "response": {"conversation": "none", "output_modalities": ["text"],
                     "instructions": "Summarise for Acme Corp",
                     "input": [{"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "bob@corp.example.com asks"}]}],
                     "metadata": {"topic": "Acme Corp"}},
    },
}  # fmt: skip


@pytest.mark.parametrize("name", list(CLIENT_CASES))
def test_client_event_kinds_mask_only_strings_holding_originals(name: str) -> None:
    c = Connection(OpenAIRealtime, RULES)
    raw = json.dumps(CLIENT_CASES[name])
    out = client(c, raw.encode()).decode()
    expected = (
        raw.replace("Acme Corp", "Zenith Labs")
        .replace("session_id", "thread_id")
        .replace("acme_lookup", "crm_lookup")
        .replace("bob@corp.example.com", "[EMAIL_1]")
    )
    assert out == expected
    assert "Acme Corp" not in out and "bob@corp" not in out


def test_unchanged_client_event_is_the_same_frame() -> None:
    c = Connection(OpenAIRealtime, RULES)
    f = Frame(b'{"type":"response.create","response":{"instructions":"Be brief."}}')
    assert client_frame(c, f).frames[0] is f


def test_audio_append_is_byte_identical_and_not_read_by_the_leak_guard() -> None:
    # base64 audio that happens to spell an original: media, not text
    rules = make_rules(literals={"AcmeCorp": "ZenithLabs"})
    c = Connection(OpenAIRealtime, rules)
    audio = base64.b64encode(b"\x00\x01" * 30).decode() + "AcmeCorp" + "A" * 8
    f = Frame(json.dumps({"type": "input_audio_buffer.append", "audio": audio}).encode())
    assert client_frame(c, f).frames[0] is f


def test_placeholders_numbered_per_connection_and_stable() -> None:
    c = Connection(OpenAIRealtime, RULES)
    one = client(c, {"type": "response.create", "response": {"instructions": "a@b.io then c@d.io"}})
    two = client(c, {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "c@d.io, e@f.io, a@b.io"}]}})  # fmt: skip
    assert b"[EMAIL_1] then [EMAIL_2]" in one
    assert b"[EMAIL_2], [EMAIL_3], [EMAIL_1]" in two
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["to [EMAIL_3] and [EMA", "IL_1]"])
    reader = read_openai(server(c, evs))
    assert reader[0][("r1", "i1", 0, 0, "text")] == "to e@f.io and a@b.io"


def test_client_typed_placeholder_is_never_issued() -> None:
    c = Connection(OpenAIRealtime, RULES)
    out = client(c, {"type": "response.create", "response": {"instructions": "[EMAIL_1] is a@b.io"}})
    assert b"[EMAIL_1] is [EMAIL_2]" in out


def test_unknown_client_event_with_an_original_is_refused_and_the_connection_closes() -> None:
    c = conn()
    r = client_frame(c, Frame(b'{"type":"future.event","event_id":"e9","note":"Acme Corp"}'))
    assert r.frames == [] and r.close is not None and r.close[0] == POLICY_VIOLATION
    err = json.loads(r.error.data)
    assert err["type"] == "error" and err["error"]["code"] == "disguise_refused"
    assert err["error"]["event_id"] == "e9"
    assert "Acme Corp" not in err["error"]["message"] and "Acme Corp" not in r.close[1]
    assert len(r.close[1].encode()) <= 123
    check_openai([err])
    assert c.state is State.CLOSED
    # nothing passes any more, either way
    assert client_frame(c, Frame(b'{"type":"response.create"}')).frames == []
    assert c.server(Frame(b'{"type":"response.created"}')).frames == []


def test_unknown_clean_client_event_is_forwarded_as_is() -> None:
    c = conn()
    f = Frame(b'{"type":"future.event","n":1,"note":"hello"}')
    assert client_frame(c, f).frames[0] is f
    assert c.counts.client_unknown == 1


@pytest.mark.parametrize("data", [b"not json Acme Corp", b"\xff\xfeAcme Corp", b'["Acme Corp"]'])
def test_unreadable_client_frame_with_an_original_is_refused(data: bytes) -> None:
    c = conn()
    r = client_frame(c, Frame(data, text=False))
    assert r.close is not None and r.close[0] == POLICY_VIOLATION


def test_leak_guard_reads_the_table_the_masker_reads() -> None:
    # `previous_item_id` is an id the table exempts: the leak check reads the same table
    # as the masker (issue 15's one field model), so it lets pass what the masker left
    c = conn()
    r = client_frame(c, Frame(json.dumps({"type": "conversation.item.create", "previous_item_id": "Acme Corp",
                                   "item": {"type": "message", "role": "user", "content": []}}).encode()))  # fmt: skip
    assert r.close is None and b"Acme Corp" in r.frames[0].data
    # and an original in a field it masks never leaves
    r = client_frame(c, Frame(json.dumps({"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Acme Corp"}]}}).encode()))
    assert r.close is None and b"Acme Corp" not in r.frames[0].data


# -- server events ---------------------------------------------------------------------------


def test_session_updated_echo_is_restored() -> None:
    c = conn()
    masked = json.loads(client(c, CLIENT_CASES["session.update"]))
    s = OpenAIScript()
    ev = s.session("session.updated", masked["session"]["instructions"], masked["session"]["tools"])
    check_openai([ev])
    got = server(c, [ev])[0]["session"]
    assert got["instructions"] == CLIENT_CASES["session.update"]["session"]["instructions"]
    assert got["tools"][0]["name"] == "acme_lookup"
    assert "session_id" in got["tools"][0]["parameters"]["properties"]


def test_function_call_arguments_split_restored_and_escaped() -> None:
    c = conn()
    s = OpenAIScript()
    evs, _ = s.function_call("r1", "i1", 0, "call_1", "crm_lookup",
                             ['{"thr', 'ead_id": "WIN', 'PATH", "to": "[EMA', 'IL_2]"}'])  # fmt: skip
    out = server(c, evs)
    check_openai(out)
    deltas, dones, problems = read_openai(out)
    key = ("r1", "i1", 0, None, "arguments")
    want = {"session_id": 'C:\\Users\\a "b"', "to": 'q"uote\\d@x.io'}
    assert json.loads(deltas[key]) == want and json.loads(dones[key]) == want and not problems
    added = [e for e in out if e["type"] == "response.output_item.added"][0]
    assert added["item"]["name"] == "acme_lookup"
    done_item = [e for e in out if e["type"] == "response.output_item.done"][0]["item"]
    assert json.loads(done_item["arguments"]) == want


def test_held_tail_goes_in_a_synthetic_delta_right_before_done() -> None:
    c = conn()
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["Hello nova"])  # `nova` may grow into nova.cloud: held
    out = server(c, evs)
    types = [e["type"] for e in out]
    i = types.index("response.output_text.done")
    assert types[i - 1] == "response.output_text.delta" and out[i - 1]["delta"] == "nova-internal"
    assert out[i - 1]["event_id"].startswith("event_disguise_")
    assert [e["delta"] for e in out if e["type"] == "response.output_text.delta"] == ["Hello ", "nova-internal"]
    check_openai(out)


def test_audio_deltas_pass_byte_identical() -> None:
    c = conn()
    s = OpenAIScript()
    audio = [base64.b64encode(b"Zenith Labs [EMAIL_1]" * 20).decode(), "WmVuaXRo"]
    evs, _ = s.message("r1", "i1", 0, ["Zen", "ith Labs"], kind="transcript", audio=audio)
    for ev in evs:
        f = Frame(json.dumps(ev).encode())
        r = c.server(f)
        if ev["type"] == "response.output_audio.delta":
            assert r.frames == [f] and r.frames[0] is f


def test_input_transcription_split_and_completed() -> None:
    c = conn()
    s = OpenAIScript()
    out = server(c, s.input_transcription("item_u", ["I work at Zen", "ith La", "bs"]))
    deltas, dones, _ = read_openai(out)
    assert deltas[("input", "item_u", 0)] == "I work at Acme Corp" == dones[("input", "item_u", 0)]


def test_unknown_server_event_strings_restored_whole() -> None:
    c = conn()
    out = server(c, [{"type": "future.event", "note": {"who": "Zenith Labs", "mail": "[EMAIL_1]"}}])
    assert out == [{"type": "future.event", "note": {"who": "Acme Corp", "mail": "bob@corp.example.com"}}]


def test_unchanged_server_event_is_the_same_frame() -> None:
    c = conn()
    f = Frame(json.dumps({"type": "response.output_text.delta", "response_id": "r", "item_id": "i",
                          "output_index": 0, "content_index": 0, "delta": "plain words"}).encode())  # fmt: skip
    assert c.server(f).frames[0] is f


@pytest.mark.parametrize("data", [b"not json Zenith Labs", b"\xffZenith", b'{"type":"response.output_text.delta"'])
def test_unparsable_server_frame_ends_the_connection_without_held_text(data: bytes) -> None:
    c = conn()
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["Hello Zenith"])
    server(c, evs[:4])  # "Hello " out, "Zenith" held
    r = c.server(Frame(data))
    assert r.frames == [] and r.close is not None and r.close[0] == INTERNAL_ERROR
    err = json.loads(r.error.data)
    assert err["error"]["code"] == "disguise_error" and b"Zenith" not in r.error.data
    assert c.server(Frame(json.dumps(evs[4]).encode())).frames == []


def test_end_mid_text_gives_held_tail_then_an_error() -> None:
    c = conn()
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, ["Hi [EMAIL_1] and Zen"])
    server(c, evs[:4])
    assert c.held_chars == 3
    r = c.end()
    tails = [json.loads(f.data) for f in r.frames]
    assert [t["delta"] for t in tails] == ["Zen"] and r.error is not None
    assert c.end().frames == []


def test_channel_limit_is_an_explicit_failure() -> None:
    c = conn()
    evs = [{"type": "response.output_text.delta", "response_id": "r", "item_id": f"i{k}", "output_index": k,
            "content_index": 0, "delta": "nova"} for k in range(300)]  # fmt: skip
    results = [c.server(Frame(json.dumps(e).encode())) for e in evs]
    assert any(r.close is not None and r.close[0] == INTERNAL_ERROR for r in results)


# -- the streaming property --------------------------------------------------------------------


@st.composite
def responses(draw):
    """One response: an output text message, an audio message with its transcript and a
    function call, each split at random into deltas, their events interleaved."""
    s = OpenAIScript()
    text = draw(texts)
    transcript = draw(texts)
    args = json.dumps({"thread_id": draw(texts), "path": "WINPATH"})
    a, item_a = s.message("r1", "i1", 0, draw(splits(text)))
    b, item_b = s.message("r1", "i2", 1, draw(splits(transcript)), kind="transcript", audio=["AAAA", "ZW5k"])
    f, item_f = s.function_call("r1", "i3", 2, "call_1", "crm_lookup", draw(splits(args, 6)))
    queues = [a, b, f]
    steps = [s.response_created("r1")]
    while any(queues):
        i = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        steps.append(queues[i].pop(0))
    steps.append(s.response_done("r1", [item_a, item_b, item_f]))
    return {("r1", "i1", 0, 0, "text"): text, ("r1", "i2", 1, 0, "transcript"): transcript,
            ("r1", "i3", 2, None, "arguments"): args}, steps  # fmt: skip


@given(responses(), st.booleans())
@example(({("r1", "i1", 0, 0, "text"): "nova.cloud", ("r1", "i2", 1, 0, "transcript"): "",
           ("r1", "i3", 2, None, "arguments"): '{"a": "WINPATH"}'}, None), True)  # fmt: skip
def test_channels_reassemble_to_the_whole_result(plan, compact: bool) -> None:
    want, steps = plan
    if steps is None:  # the @example: build its steps unsplit
        s = OpenAIScript()
        a, ia = s.message("r1", "i1", 0, ["nova", ".cl", "oud"])
        b, ib = s.message("r1", "i2", 1, [], kind="transcript")
        f, i_f = s.function_call("r1", "i3", 2, "c", "f", ['{"a": "WIN', 'PATH"}'])
        steps = [*a, *b, *f, s.response_done("r1", [ia, ib, i_f])]
    c = conn()
    r = RULES.restorer(c.session.placeholders)
    out = server(c, steps, compact)
    check_openai(out)
    deltas, dones, problems = read_openai(out)
    assert not problems
    for key, whole in want.items():
        expect = r.json_text(whole) if key[-1] == "arguments" else r.text(whole)
        assert deltas.get(key, "") == expect
        assert dones[key] == expect
    done = [e for e in out if e["type"] == "response.done"][0]["response"]["output"]
    assert done[0]["content"][0]["text"] == r.text(want[("r1", "i1", 0, 0, "text")])
    assert not c.proto.windows  # every channel ended with its response


def _text_events(pieces: list[str]) -> list[dict]:
    s = OpenAIScript()
    evs, _ = s.message("r1", "i1", 0, pieces)
    return evs


SHORT = "Hi Zenith Labs, [EMAIL_1]."


@pytest.mark.parametrize("n", [2, 3])
def test_every_split_point_of_a_short_text(n: int) -> None:
    r = RULES.restorer(PLACEHOLDERS)
    for cuts in itertools.combinations(range(1, len(SHORT)), n - 1):
        bounds = [0, *cuts, len(SHORT)]
        pieces = [SHORT[a:b] for a, b in itertools.pairwise(bounds)]
        out = server(conn(), _text_events(pieces), compact=n == 2)
        deltas, dones, problems = read_openai(out)
        key = openai_channel({"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}, "text")
        assert deltas[key] == r.text(SHORT) == dones[key], pieces
        assert not problems


@given(responses())
def test_regex_path_and_parsing_path_agree(plan) -> None:
    _, steps = plan
    assert server(conn(), steps, compact=True) == server(conn(), steps, compact=False)


# -- disguise_fakes over a connection ----------------------------------------------------------


def test_fakes_issued_over_a_connection_restore_split_anywhere_and_a_typed_one_is_refused() -> None:
    """A realtime connection with fakes: the client event's e-mail goes as a fake (the same
    on the next event), the fake streamed back cut at every point reads as the original,
    and an event that holds, as the client's own text, a fake issued for an original in
    it is refused (its copy in an answer could not be told from ours)."""
    rules = make_rules(patterns=[{"name": "EMAIL", "regex": r"[a-z]+@[a-z]+\.io"}])
    keyed = type(rules)(rules.mappings, b"realtime-fakes-key")
    c = Connection(OpenAIRealtime, keyed)
    ev = {"type": "conversation.item.create",
          "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "mail dan@corp.io"}]}}  # fmt: skip
    sent = json.loads(client(c, ev))["item"]["content"][0]["text"]
    fake = sent.removeprefix("mail ")
    assert fake != "dan@corp.io" and "[" not in fake and c.session.fakes == 1
    assert json.loads(client(c, ev))["item"]["content"][0]["text"] == sent  # the same fake again
    text = f"ok {fake}."
    for i in range(1, len(text)):
        out = server(c, _text_events([text[:i], text[i:]]), compact=True)
        deltas, dones, problems = read_openai(out)
        key = openai_channel({"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}, "text")
        assert deltas[key] == "ok dan@corp.io." == dones[key] and not problems
    c2 = Connection(OpenAIRealtime, keyed)
    typed = {**ev, "item": {**ev["item"], "content": [{"type": "input_text", "text": f"mail dan@corp.io {fake}"}]}}
    r = client_frame(c2, Frame(json.dumps(typed).encode()))
    assert r.close is not None and "fake" in c2.failure  # type: ignore[operator]


def test_a_client_event_repeating_a_key_with_values_that_differ_is_refused() -> None:
    """As an HTTP request is (base/document.py): which value the provider reads is not
    ours to guess. The place is not named here (the connection has no leak guard's
    namer: base/ floor); the same value twice is masked pair by pair."""
    c = conn()
    ev = (b'{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":'
          b'"input_text","type":"input_audio","text":"Acme Corp","audio":"QQ=="}]}}')  # fmt: skip
    r = client_frame(c, Frame(ev))
    assert r.frames == [] and r.close is not None and r.close[0] == POLICY_VIOLATION
    msg = json.loads(r.error.data)["error"]["message"]
    assert "the event repeats the key at $ (the path not shown) with values that differ" in msg and "Acme" not in msg
    same = ev.replace(b'"input_audio"', b'"input_text"')
    assert client(conn(), same) == same.replace(b"Acme Corp", b"Zenith Labs")


_PASSWORD = [{"name": "PASSWORD", "regex": "password=(?P<v>[A-Za-z0-9]{8,})", "group": "v"}]


def _said(text: str) -> dict:
    return {"type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}  # fmt: skip


def _text(data: bytes) -> str:
    return json.loads(data)["item"]["content"][0]["text"]


def _of(c: Connection, original: str) -> str:
    """original's disguise on c (a placeholder, or under DISGUISE_TEST_FAKES its fake)."""
    return {v: k for k, v in c.session.placeholders.items()}[original]


def test_a_copy_of_an_original_an_earlier_event_keyed_is_masked_with_its_disguise() -> None:
    """A value a rule found by its context in one event (a password after its key) is an
    original wherever the connection sends it again (base/copies.py): a later event's copy
    of it, where no rule finds it, is masked with the same disguise, as an HTTP body's
    copies are, and the connection goes on; the model's answer quoting it restores it."""
    c = Connection(OpenAIRealtime, make_rules(patterns=_PASSWORD))
    first = _text(client(c, _said("db password=hunter2xyz9Q")))
    d = _of(c, "hunter2xyz9Q")
    assert first == f"db password={d}"
    assert _text(client(c, _said("again: password=hunter2xyz9Q"))) == f"again: password={d}"
    assert _text(client(c, _said("it was hunter2xyz9Q, ok?"))) == f"it was {d}, ok?"
    assert c.state is State.OPEN and list(c.session.placeholders.values()) == ["hunter2xyz9Q"]
    assert c.restorer.text(f"yes, {d} is weak") == "yes, hunter2xyz9Q is weak"


def test_a_copy_before_its_context_in_one_event_is_masked_and_numbering_goes_on() -> None:
    """Within one event too (the copy first, its context after), and the event masked
    again from where the connection stood: the disguises issued before it stay, the new
    original gets the next one, and nothing of the first pass stays (counts included)."""
    c = Connection(OpenAIRealtime, make_rules(patterns=_PASSWORD))
    client(c, _said("password=aaaaaaaa1"))
    out = _text(client(c, _said("bbbbbbbb2 and aaaaaaaa1, then password=bbbbbbbb2")))
    a, b = _of(c, "aaaaaaaa1"), _of(c, "bbbbbbbb2")
    assert out == f"{b} and {a}, then password={b}"
    assert list(c.session.placeholders.values()) == ["aaaaaaaa1", "bbbbbbbb2"]
    if a.startswith("["):  # (placeholders: numbered by first appearance over the connection)
        assert (a, b) == ("[PASSWORD_1]", "[PASSWORD_2]")
    assert c.session.counts == {"PASSWORD": 4} and c.session.masked == 4
    assert c.session.copied == 1  # (this event's one round of masking again)
    assert _text(client(c, _said("plain words"))) == "plain words" and c.session.copied == 0


def test_a_copy_spelled_with_an_escape_no_writer_makes_is_masked_too() -> None:
    """A copy spelled with an escape no JSON writer makes (`\\u0078` for `x`) is none of
    the spellings a search of the event's bytes finds (base/copies.py: such an escape
    makes every original found a copy to look for): masking reads the text as JSON reads
    it and masks it there, the string's token written again."""
    c = Connection(OpenAIRealtime, make_rules(patterns=_PASSWORD))
    client(c, _said("db password=hunter2xyz9Q"))
    ev = json.dumps(_said("it was hunter2@@@yz9Q, ok?")).replace("@@@", "\\u0078").encode()
    assert json.loads(ev)["item"]["content"][0]["text"] == "it was hunter2xyz9Q, ok?"
    assert _text(client(c, ev)) == f"it was {_of(c, 'hunter2xyz9Q')}, ok?" and c.state is State.OPEN


_VALUES = ["hunter2xyz9Q", "s3cretPass", "zzzzzzzz9"]


@given(st.lists(st.lists(st.tuples(st.sampled_from(["keyed", "bare", "word"]), st.sampled_from(_VALUES)),
                         min_size=1, max_size=5), min_size=1, max_size=5))  # fmt: skip
def test_events_with_keyed_values_and_copies_leave_none_found_and_restore(events) -> None:
    """Events of keyed values (`password=V`), their bare copies and other words, in any
    order over a connection: no event leaves holding a value a rule found by its context
    in it or an earlier one, the connection stays open, each value has one placeholder,
    and each masked text restores to the client's text."""
    c = Connection(OpenAIRealtime, make_rules(patterns=_PASSWORD))
    found: set[str] = set()
    for parts in events:
        text = " ".join(f"password={v}" if k == "keyed" else v if k == "bare" else "words" for k, v in parts)
        found |= {v for k, v in parts if k == "keyed"}
        out = _text(client(c, _said(text)))
        assert not any(v in out for v in found), (text, out)
        assert c.restorer.text(out) == text
    assert c.state is State.OPEN
    assert sorted(c.session.placeholders.values()) == sorted(found)
