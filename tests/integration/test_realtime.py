"""End to end, realtime APIs over WebSocket: the `websockets` client, the official
`openai` SDK's realtime client (OpenAI and Azure paths) and google-genai's live client
(Gemini API and Vertex AI paths) -> mitmdump running the addon -> a fake realtime
upstream (the `websockets` library) that records every frame it receives and sends
scripted events, disguises split across two and three deltas.

Nothing is mocked: a real mitmdump in reverse mode, real WebSocket connections on
127.0.0.1 (TLS for google-genai, which only speaks wss://: the client trusts mitmdump's
CA). The scripted server events validate against the SDKs' own types
(realtime_util.check_openai / check_gemini).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from integration_util import MITMDUMP, Mitmdump, mitmdump_cmd, write_mappings
from realtime_util import (
    FakeRealtime,
    OpenAIScript,
    Peer,
    check_gemini,
    check_openai,
    gemini_audio,
    gemini_flag,
    gemini_text,
    gemini_tool_call,
    gemini_transcript,
    read_gemini,
    read_openai,
)

websockets = pytest.importorskip("websockets")
openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
from websockets.asyncio.client import connect as ws_connect  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
WINQ = 'C:\\Users\\"acme"'  # backslashes and quotes: JSON-escaped wherever it lands
LITERALS = {"Acme Corp": "Zenith Labs", "session_id": "thread_id", "acme_lookup": "crm_lookup", WINQ: "WINPATH"}
# PASSWORD: found only by its key (a copy of its value elsewhere is found by no rule)
PASSWORD = {"name": "PASSWORD", "regex": "password=(?P<v>[A-Za-z0-9]{8,})", "group": "v"}
MAPPINGS = {"literals": LITERALS, "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}, PASSWORD]}
BOB = "bob@corp.example.com"
ORIGINALS = [*LITERALS, BOB]
DISGUISES = [*LITERALS.values(), "[EMAIL_"]
PH = re.compile(r"\[EMAIL_[0-9]+\]")
AUDIO = [base64.b64encode(b"\x00Zenith Labs\x01" * 40).decode(), base64.b64encode(b"[EMAIL_1]" * 9).decode()]


def mask(raw: str) -> str:
    """raw with every original replaced as the addon does (plain JSON strings here)."""
    for o, d in LITERALS.items():
        once = json.dumps(o)[1:-1]  # in a JSON string; twice: in JSON text inside a JSON string
        raw = raw.replace(json.dumps(once)[1:-1], d).replace(once, d)
    return raw.replace(BOB, "[EMAIL_1]")


def assert_no_original(data: bytes, what: str) -> None:
    text = data.decode("utf-8", "replace")
    for o in ORIGINALS:
        for form in (o, json.dumps(o)[1:-1]):
            assert form not in text, f"{o!r} reached upstream in {what}"


def assert_no_disguise(text: str, what: str) -> None:
    for d in DISGUISES:
        assert d not in text, f"{what} shows the disguise {d!r}: {text!r}"


@dataclass
class Env:
    up: FakeRealtime
    md: Mitmdump
    confdir: Path

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.md.port}"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.confdir / "mitmproxy-ca-cert.pem"))


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Iterator[Env]:
    d = tmp_path_factory.mktemp("realtime")
    maps = write_mappings(d, MAPPINGS)
    with FakeRealtime() as up:
        md = Mitmdump(mitmdump_cmd(up.port, d, maps, "--set", "disguise_defaults=false"))
        try:
            yield Env(up, md, d)
        finally:
            md.stop()
        assert not up.errors, up.errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def collect(ws, until: str | None = None) -> tuple[list, object]:
    """Frames the client receives (data, is_text) until an event of type `until` or the
    close; returns them and the close frame (or None)."""
    got = []
    try:
        while True:
            m = await ws.recv()
            got.append((m, isinstance(m, str)))
            if until is not None and json.loads(m).get("type") == until:
                return got, None
    except websockets.ConnectionClosed as e:
        return got, e.rcvd


def send_all(env: Env, model: str, raws: list[str]) -> tuple[list, object]:
    """raws sent on one connection (scenario_record's), then the client's goodbye; what
    came back until the ack, and how the connection closed."""

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model={model}") as ws:
            for raw in raws:
                await ws.send(raw)
            await ws.send(json.dumps({"type": "output_audio_buffer.clear"}))
            return await collect(ws, until="output_audio_buffer.cleared")

    return run(go())


def events(got: list) -> list[dict]:
    return [json.loads(m) for m, _ in got]


# -- OpenAI Realtime: scenarios ----------------------------------------------------------------

CLIENT_EVENTS = [
    {"type": "session.update", "event_id": "evt_1", "session": {
        "type": "realtime", "output_modalities": ["audio"],
        "instructions": f"You are Acme Corp's agent; escalate to {BOB}. Files live in {WINQ}.",
        "audio": {"input": {"transcription": {"model": "gpt-4o-transcribe", "prompt": "Names: Acme Corp"}}},
        "tools": [{"type": "function", "name": "acme_lookup", "description": "Look up an Acme Corp account",
                   "parameters": {"type": "object", "properties": {"session_id": {"type": "string"}}}}]}},
    {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": f"I am with Acme Corp, write to {BOB}"}]}},
    {"type": "conversation.item.create", "item": {"type": "function_call", "call_id": "call_1",
                                                  "name": "acme_lookup", "arguments": "{\"session_id\": \"Acme Corp\"}"}},
    {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "call_1",
                                                  "output": json.dumps({"owner": "Acme Corp", "path": WINQ})}},
    {"type": "input_audio_buffer.append", "audio": AUDIO[0]},
    {"type": "response.create", "response": {"instructions": "Answer Acme Corp briefly",
                                             "input": [{"type": "message", "role": "user",
                                                        "content": [{"type": "input_text", "text": BOB}]}]}},
]  # fmt: skip


def scenario_record(peer: Peer) -> None:
    """Receive until the client says goodbye (`output_audio_buffer.clear`), then ack."""
    while True:
        _, data = peer.recv()
        if json.loads(data).get("type") == "output_audio_buffer.clear":
            peer.send({"type": "output_audio_buffer.cleared", "event_id": "event_x"})
            return


def reply_events(ph: str) -> tuple[list[dict], dict]:
    """A response with output text (3 deltas), an audio transcript (2 deltas, audio
    between) and function-call arguments (3 deltas), disguises split across deltas."""
    s = OpenAIScript()
    text = ["Hi Zen", f"ith Labs, mail {ph[:4]}", f"{ph[4:]} now"]
    transcript = ["Calling Zenith", " Labs for you"]
    args = ['{"thr', 'ead_id": "WIN', 'PATH", "to": "' + ph + '"}']
    a, ia = s.message("resp_1", "item_a", 0, text)
    b, ib = s.message("resp_1", "item_b", 1, transcript, kind="transcript", audio=list(AUDIO))
    f, if_ = s.function_call("resp_1", "item_f", 2, "call_9", "crm_lookup", args)
    evs = [s.response_created("resp_1"), *a, *b, *f, s.response_done("resp_1", [ia, ib, if_])]
    check_openai(evs)
    return evs, {"text": "".join(text), "transcript": "".join(transcript), "args": "".join(args)}


def scenario_respond(peer: Peer) -> None:
    peer.send(OpenAIScript().session("session.created", "You are a helpful assistant."))
    ph = "[EMAIL_1]"
    while True:
        _, data = peer.recv()
        ev = json.loads(data)
        if ev["type"] == "session.update":
            s = OpenAIScript()
            peer.send(s.session("session.updated", ev["session"]["instructions"], ev["session"].get("tools")))
        elif ev["type"] == "conversation.item.create":
            found = PH.findall(data.decode())
            ph = found[0] if found else ph
            peer.send(OpenAIScript().ev("conversation.item.added", previous_item_id=None,
                                        item={**ev["item"], "id": "item_u", "object": "realtime.item",
                                              "status": "completed"}))  # fmt: skip
        elif ev["type"] == "response.create":
            for e in reply_events(ph)[0]:
                peer.send(e)
            return


def scenario_cut(peer: Peer) -> None:
    """Upstream closes mid-text: the last delta ends with the start of a disguise."""
    s = OpenAIScript()
    evs, _ = s.message("resp_c", "item_c", 0, ["All good with Acme", " Corp? Ask Zen"])
    peer.send(s.response_created("resp_c"))
    for e in evs[:5]:  # the item and part added, both deltas; no .done
        peer.send(e)
    time.sleep(0.2)
    peer.close(1011, "upstream went away")


def scenario_garbage(peer: Peer) -> None:
    s = OpenAIScript()
    evs, _ = s.message("resp_g", "item_g", 0, ["Ok Zen"])
    for e in evs[:4]:
        peer.send(e)
    peer.send("upstream said Zenith Labs without JSON")
    try:
        peer.recv(timeout=5)
    except Exception:  # noqa: BLE001 - the proxy closes the connection
        pass


def scenario_echo_all(peer: Peer) -> None:
    """Echo every client event back as an unknown server event (restored whole)."""
    while True:
        _, data = peer.recv()
        peer.send({"type": "future.echo", "event_id": "e", "echo": json.loads(data)})


# -- OpenAI Realtime: the websockets client ---------------------------------------------------


def test_each_client_event_kind_masked_only_where_originals_are(env: Env) -> None:
    env.up.on("record", scenario_record)
    raws = [json.dumps(ev) for ev in CLIENT_EVENTS]
    send_all(env, "record", raws)
    got = env.up.frames("/v1/realtime")[-len(raws) - 1 : -1]
    assert [d.decode() for _, d in got] == [mask(r) for r in raws]
    assert all(text for text, _ in got)  # text frames stay text
    audio = [d for _, d in got if b"input_audio_buffer.append" in d]
    assert audio == [raws[4].encode()]  # byte-identical
    for _, d in got:
        assert_no_original(d, "a client event")


def test_output_text_transcript_and_arguments_restored(env: Env) -> None:
    env.up.on("respond", scenario_respond)

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=respond") as ws:
            await ws.send(json.dumps(CLIENT_EVENTS[1]))
            await ws.send(json.dumps({"type": "response.create"}))
            return await collect(ws, until="response.done")

    got, _ = run(go())
    assert all(is_text for _, is_text in got)
    evs = events(got)
    check_openai(evs)
    deltas, dones, problems = read_openai(evs)
    assert not problems
    text = f"Hi Acme Corp, mail {BOB} now"
    assert deltas[("resp_1", "item_a", 0, 0, "text")] == text == dones[("resp_1", "item_a", 0, 0, "text")]
    assert deltas[("resp_1", "item_b", 1, 0, "transcript")] == "Calling Acme Corp for you"
    args = deltas[("resp_1", "item_f", 2, None, "arguments")]
    assert json.loads(args) == {"session_id": WINQ, "to": BOB} == json.loads(dones[("resp_1", "item_f", 2, None, "arguments")])
    audio = [e["delta"] for e in evs if e["type"] == "response.output_audio.delta"]
    assert audio == AUDIO  # byte-identical, disguise-looking base64 and all
    visible = json.dumps([e for e in evs if e["type"] != "response.output_audio.delta"], ensure_ascii=False)
    assert_no_disguise(visible, "the client")
    done = [e for e in evs if e["type"] == "response.done"][0]
    assert done["response"]["output"][0]["content"][0]["text"] == text


def test_unknown_client_event_with_an_original_never_leaves(env: Env) -> None:
    env.up.on("record2", scenario_record)
    secret = {"type": "future.event", "event_id": "evt_x", "note": "Acme Corp"}

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=record2") as ws:
            await ws.send(json.dumps({"type": "future.event", "note": "harmless"}))
            await ws.send(json.dumps(secret))
            await ws.send(json.dumps({"type": "response.create", "response": {"instructions": "after"}}))
            return await collect(ws)

    got, close = run(go())
    evs = events(got)
    assert evs[-1]["type"] == "error" and evs[-1]["error"]["code"] == "disguise_refused"
    assert evs[-1]["error"]["event_id"] == "evt_x"
    check_openai(evs[-1:])
    assert close is not None and close.code == 1008
    time.sleep(0.3)
    sent = [d for _, d in env.up.frames("model=record2")]
    assert sent == [b'{"type": "future.event", "note": "harmless"}']  # nothing from the refusal on


def test_a_copy_of_a_keyed_value_an_earlier_event_sent_is_masked_and_the_connection_goes_on(env: Env) -> None:
    """A value found by its key in one event and sent bare in a later one (no rule finds
    it there) reaches upstream as the same placeholder in both, and the connection goes
    on (at c7d6a52 it ended, 1008)."""
    env.up.on("copies", scenario_record)

    def said(text: str) -> str:
        return json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": text}]}})  # fmt: skip

    raws = [said("db password=hunter2xyz9Q"), said("it was hunter2xyz9Q, ok?")]
    got, close = send_all(env, "copies", raws)
    assert close is None and [e["type"] for e in events(got)] == ["output_audio_buffer.cleared"]
    sent = [d.decode() for _, d in env.up.frames("model=copies")][:2]
    assert sent == [r.replace("hunter2xyz9Q", "[PASSWORD_1]") for r in raws]


def test_upstream_closing_mid_text(env: Env) -> None:
    env.up.on("cut", scenario_cut)

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=cut") as ws:
            return await collect(ws)

    got, close = run(go())
    evs = events(got)
    # a stream the provider cut delivers its held text (`Zen`), then the error, then its close
    assert evs[-1]["type"] == "error" and "closed before the model's output ended" in evs[-1]["error"]["message"]
    deltas, _, _ = read_openai(evs[:-1])
    assert deltas[("resp_c", "item_c", 0, 0, "text")] == "All good with Acme Corp? Ask Zen"
    assert close is not None and (close.code, close.reason) == (1011, "upstream went away")  # upstream's own close
    assert env.md.saw("held-back character(s) delivered, then an error event")


def scenario_cut_normally(peer: Peer) -> None:
    """Upstream closes normally (1000) right after a delta ending with a disguise's start."""
    s = OpenAIScript()
    evs, _ = s.message("resp_n", "item_n", 0, ["ok Zenith Lab"])
    for e in evs[:4]:
        peer.send(e)
    time.sleep(0.2)
    peer.close(1000, "")


def test_upstream_closing_normally_mid_text_still_delivers_the_held_tail_then_an_error(env: Env) -> None:
    env.up.on("cutok", scenario_cut_normally)

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=cutok") as ws:
            return await collect(ws)

    got, close = run(go())
    evs = events(got)
    assert [e["type"] for e in evs[-2:]] == ["response.output_text.delta", "error"]
    assert "".join(e.get("delta", "") for e in evs) == "ok Zenith Lab"
    assert close is not None and close.code == 1000


def test_unparsable_server_frame_ends_the_connection_with_an_error(env: Env) -> None:
    env.up.on("garbage", scenario_garbage)

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=garbage") as ws:
            return await collect(ws)

    got, close = run(go())
    evs = events(got)
    assert evs[-1]["type"] == "error" and evs[-1]["error"]["code"] == "disguise_error"
    assert close is not None and close.code == 1011
    assert_no_disguise(json.dumps(evs), "the client")
    assert "Zen" not in "".join(e.get("delta", "") for e in evs)


def scenario_greet(peer: Peer) -> None:
    """Greet, then read until the client closes (the library answers its pings)."""
    peer.send(OpenAIScript().session("session.created", "You are a helpful assistant."))
    while True:
        peer.recv(timeout=60)


def test_client_control_frames_reach_upstream_masked_and_their_echoes_come_back_as_sent(env: Env) -> None:
    env.up.on("controls", scenario_greet)
    long = b"Acme Corp " * 12 + b"Acme"  # 124 bytes: masked, more than a ping holds

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=controls", ping_interval=None) as ws:
            await ws.recv()  # the greeting: upstream records control frames from here on
            for payload in (b"are you there, Acme Corp?", long):
                await asyncio.wait_for(await ws.ping(payload), 10)  # a pong echoing it, byte for byte
            await ws.pong(b"unsolicited Acme Corp")
            await ws.close(1000, "bye from Acme Corp")
            return ws.protocol.close_rcvd

    rcvd = run(go())
    assert rcvd is not None and (rcvd.code, rcvd.reason) == (1000, "bye from Acme Corp")  # the answer echoes it
    _wait_for(lambda: any(k == "close" for p, k, _ in env.up.controls if "model=controls" in p))
    got = [(k, d) for p, k, d in env.up.controls if "model=controls" in p]
    assert got == [("ping", b"are you there, Zenith Labs?"), ("ping", b""), ("pong", b"unsolicited Zenith Labs"),
                   ("close", b"\x03\xe8bye from Zenith Labs")]  # fmt: skip
    for _, d in got:
        assert_no_original(d, "a control frame")
    # mitmproxy's own lines name what it forwarded: the masked payloads
    assert env.md.saw("WebSocket ping from client (payload: b'are you there, Zenith Labs?')")
    assert env.md.saw("closed by client: 1000 bye from Zenith Labs")
    assert env.md.saw("without its payload: masked, it is 148 bytes; a ping frame holds 125")
    lines = [ln for ln in env.md.output.splitlines() if "from client" in ln or "closed by client" in ln]
    assert not [ln for ln in lines if "Acme Corp" in ln]


def scenario_server_controls(peer: Peer) -> None:
    """Greet, wait for the client's first event (it records every frame from then on),
    ping with a disguise in the payload (the pong must echo it), then close with one in
    the reason."""
    peer.send(OpenAIScript().session("session.created", "You are a helpful assistant."))
    peer.recv()
    if not peer.ws.ping(b"ping Zenith Labs").wait(10):
        raise AssertionError("no pong echoing upstream's ping")
    peer.close(1000, "bye Zenith Labs")


def test_server_control_frames_reach_the_client_restored_and_upstream_gets_its_own_echoes(env: Env) -> None:
    env.up.on("srvcontrols", scenario_server_controls)
    seen: list = []

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=srvcontrols", ping_interval=None) as ws:
            process = ws.process_event  # every frame the client reads, control frames too

            def recording(event) -> None:
                seen.append((event.opcode.name, bytes(event.data)))
                process(event)

            ws.process_event = recording
            # (a frame read with the handshake's answer was processed before the recorder
            # was set: the ping is sent only once upstream has this event)
            await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
            return await collect(ws)

    got, close = run(go())
    assert close is not None and (close.code, close.reason) == (1000, "bye Acme Corp")
    assert ("PING", b"ping Acme Corp") in seen
    _wait_for(lambda: any(k == "close" for p, k, _ in env.up.controls if "model=srvcontrols" in p))
    back = [(k, d) for p, k, d in env.up.controls if "model=srvcontrols" in p]
    assert back == [("pong", b"ping Zenith Labs"), ("close", b"\x03\xe8bye Zenith Labs")]  # its own, as it sent them
    # mitmproxy's own lines name what upstream sent: disguises, never an original
    assert env.md.saw("closed by server: 1000 bye Zenith Labs")
    lines = [ln for ln in env.md.output.splitlines() if "from server" in ln or "closed by server" in ln]
    assert not [ln for ln in lines if "Acme Corp" in ln]


def test_placeholders_stable_for_the_whole_connection(env: Env) -> None:
    env.up.on("echo", scenario_echo_all)
    first = {"type": "response.create", "response": {"instructions": f"{BOB} and c@d.io"}}
    second = {"type": "response.create", "response": {"instructions": f"c@d.io, e@f.io, {BOB}"}}

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=echo") as ws:
            out = []
            for ev in (first, second):
                await ws.send(json.dumps(ev))
                out.append(json.loads(await ws.recv()))
            return out

    echoes = run(go())
    up = [json.loads(d) for _, d in env.up.frames("model=echo")]
    assert up[0]["response"]["instructions"] == "[EMAIL_1] and [EMAIL_2]"
    assert up[1]["response"]["instructions"] == "[EMAIL_2], [EMAIL_3], [EMAIL_1]"
    assert [e["echo"] for e in echoes] == [first, second]  # restored, every placeholder


def held_events() -> list[dict]:
    """Two messages whose last delta ends with the start of a disguise (`Zen`, held back
    until the `.done`), then many more events at once."""
    s = OpenAIScript()
    a, ia = s.message("resp_h", "item_1", 0, ["Hello Zen"])
    b, ib = s.message("resp_h", "item_2", 1, ["Then Zenith", " Labs and Zen"])
    evs = [s.response_created("resp_h"), *a, *b, s.response_done("resp_h", [ia, ib])]
    evs += [s.ev("rate_limits.updated", rate_limits=[{"name": "requests", "limit": 100, "remaining": k,
                                                      "reset_seconds": 1.0}]) for k in range(40)]  # fmt: skip
    return [*evs, {"type": "future.last", "event_id": "event_last"}]


def scenario_held_at_done(peer: Peer) -> None:
    """The held tail must go out as a delta right before its `.done`, and nothing may
    overtake anything (all events are sent at once)."""
    for e in held_events():
        peer.send(e)
    peer.recv(timeout=10)


def test_held_tails_released_before_done_in_order(env: Env) -> None:
    env.up.on("held", scenario_held_at_done)

    async def go():
        async with ws_connect(f"{env.url}/v1/realtime?model=held") as ws:
            got, _ = await collect(ws, until="future.last")
            await ws.send(json.dumps({"type": "response.cancel"}))
            return got

    evs = events(run(go()))
    check_openai([e for e in evs if e["type"] != "future.last"])
    ids = [e["event_id"] for e in evs if not e["event_id"].startswith("event_disguise_")]
    assert ids == [e["event_id"] for e in held_events()]  # nothing overtook anything
    deltas, dones, problems = read_openai(evs)
    assert not problems  # no delta after its .done
    assert deltas[("resp_h", "item_1", 0, 0, "text")] == "Hello Zen" == dones[("resp_h", "item_1", 0, 0, "text")]
    assert deltas[("resp_h", "item_2", 1, 0, "text")] == "Then Acme Corp and Zen"
    types = [e["type"] for e in evs]
    for i, t in enumerate(types):
        if t == "response.output_text.done":
            assert types[i - 1] == "response.output_text.delta" and evs[i - 1]["delta"] == "Zen"
            assert evs[i - 1]["event_id"].startswith("event_disguise_")


def test_original_in_the_upgrade_url_is_refused(env: Env) -> None:
    async def go():
        await ws_connect(f"{env.url}/v1/realtime?model=record&note=Acme%20Corp")

    with pytest.raises(websockets.InvalidStatus) as e:
        run(go())
    assert e.value.response.status_code == 400
    assert b"EMAIL" not in e.value.response.body and b"Acme" not in e.value.response.body
    # nothing of this connection reached upstream (another test's last frames may still arrive)
    assert not [p for p, _, _ in list(env.up.received) if "note=" in p]


# -- OpenAI Realtime: the official SDK ------------------------------------------------------------


async def _sdk_session(conn) -> list:
    await conn.session.update(session={
        "type": "realtime", "instructions": f"You are Acme Corp's agent; escalate to {BOB}.",
        "tools": [{"type": "function", "name": "acme_lookup", "description": "Look up Acme Corp",
                   "parameters": {"type": "object", "properties": {"session_id": {"type": "string"}}}}]})  # fmt: skip
    await conn.conversation.item.create(item={"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": f"I am {BOB}"}]})  # fmt: skip
    await conn.response.create()
    got = []
    async for ev in conn:
        got.append(ev)
        if ev.type == "response.done":
            break
    return got


def _check_sdk_events(got: list) -> None:
    by_type: dict = {}
    for ev in got:
        by_type.setdefault(ev.type, []).append(ev)
    assert by_type["session.updated"][0].session.instructions == f"You are Acme Corp's agent; escalate to {BOB}."
    assert by_type["session.updated"][0].session.tools[0].name == "acme_lookup"
    assert by_type["conversation.item.added"][0].item.content[0].text == f"I am {BOB}"
    text = "".join(e.delta for e in by_type["response.output_text.delta"])
    assert text == f"Hi Acme Corp, mail {BOB} now" == by_type["response.output_text.done"][0].text
    transcript = "".join(e.delta for e in by_type["response.output_audio_transcript.delta"])
    assert transcript == "Calling Acme Corp for you"
    args = "".join(e.delta for e in by_type["response.function_call_arguments.delta"])
    assert json.loads(args) == {"session_id": WINQ, "to": BOB}
    assert by_type["response.output_item.added"][2].item.name == "acme_lookup"
    assert [e.delta for e in by_type["response.output_audio.delta"]] == AUDIO


def test_openai_sdk_realtime_client(env: Env) -> None:
    env.up.on("gpt-realtime-sdk", scenario_respond)

    async def go():
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=f"http://127.0.0.1:{env.md.port}/v1")
        async with client.realtime.connect(model="gpt-realtime-sdk") as conn:
            return await _sdk_session(conn)

    _check_sdk_events(run(go()))
    up = [json.loads(d) for _, d in env.up.frames("model=gpt-realtime-sdk")]
    assert up[0]["session"]["instructions"] == "You are Zenith Labs's agent; escalate to [EMAIL_1]."
    assert up[0]["session"]["tools"][0]["name"] == "crm_lookup"
    assert "thread_id" in up[0]["session"]["tools"][0]["parameters"]["properties"]
    for _, d in env.up.frames("model=gpt-realtime-sdk"):
        assert_no_original(d, "an SDK client event")


def test_azure_openai_realtime_path(env: Env) -> None:
    env.up.on("azure-deploy", scenario_respond)

    async def go():
        client = openai.AsyncAzureOpenAI(
            api_key="azure-key", api_version="2025-04-01-preview",
            azure_endpoint=f"http://127.0.0.1:{env.md.port}",
            websocket_base_url=f"ws://127.0.0.1:{env.md.port}/openai",
        )  # fmt: skip
        async with client.realtime.connect(model="azure-deploy", extra_query={"model": "azure-deploy"}) as conn:
            return await _sdk_session(conn)

    _check_sdk_events(run(go()))
    paths = {p for p, _, _ in env.up.received if "azure-deploy" in p}
    assert all(p.startswith("/openai/realtime?") for p in paths), paths


# -- Gemini Live --------------------------------------------------------------------------------


def scenario_gemini(peer: Peer) -> None:
    """Text split across messages, an audio part, transcriptions, a tool call and its
    response, then the turn's end; binary frames, as the API sends them."""
    setup = peer.first  # type: ignore[attr-defined]
    assert "Zenith Labs" in json.dumps(setup)
    peer.send({"setupComplete": {}}, binary=True)
    _, content = peer.recv()
    ph = (PH.findall(content.decode()) or ["[EMAIL_1]"])[0]
    first = [gemini_text("Hello Zen"), gemini_audio(AUDIO[0]), gemini_text(f"ith Labs, {ph[:3]}"),
             gemini_text(f"{ph[3:]}!"), gemini_transcript("outputTranscription", "Hello Zenith"),
             gemini_transcript("outputTranscription", " Labs"),
             gemini_tool_call([{"id": "fc_1", "name": "crm_lookup", "args": {"thread_id": "WINPATH", "to": ph}}])]  # fmt: skip
    check_gemini(first)
    for m in first:
        peer.send(m, binary=True)
    peer.recv()  # the tool response
    last = [gemini_text("Done for Zenith"), gemini_text(" Labs, bye Zen"), gemini_flag("generationComplete"),
            gemini_flag("turnComplete")]  # fmt: skip
    check_gemini(last)
    for m in last:
        peer.send(m, binary=True)
    try:
        peer.recv(timeout=5)
    except Exception:  # noqa: BLE001 - the client closes
        pass


async def _genai_session(client, model: str) -> tuple[list, list]:
    from google.genai import types

    config = {"response_modalities": ["TEXT"], "system_instruction": "You serve Acme Corp.",
              "tools": [{"function_declarations": [{"name": "acme_lookup", "description": "Find Acme Corp data",
                                                    "parameters": {"type": "OBJECT", "properties": {
                                                        "session_id": {"type": "STRING"}}}}]}]}  # fmt: skip
    msgs: list = []
    async with client.aio.live.connect(model=model, config=config) as s:
        await s.send_client_content(turns={"role": "user", "parts": [{"text": f"Hello from Acme Corp, {BOB}"}]})
        while not (msgs and msgs[-1].server_content and msgs[-1].server_content.turn_complete):
            async for m in s.receive():  # one model turn, or up to its tool call
                msgs.append(m)
                if m.tool_call:
                    await s.send_tool_response(function_responses=[types.FunctionResponse(
                        id="fc_1", name="acme_lookup", response={"owner": "Acme Corp", "session_id": WINQ})])  # fmt: skip
    return msgs


def _check_genai(env: Env, msgs: list, path_part: str) -> None:
    text = "".join(m.text or "" for m in msgs if m.server_content and m.server_content.model_turn)
    assert text == f"Hello Acme Corp, {BOB}!Done for Acme Corp, bye Zen"
    out_tr = "".join(m.server_content.output_transcription.text for m in msgs
                     if m.server_content and m.server_content.output_transcription)  # fmt: skip
    assert out_tr == "Hello Acme Corp"
    call = [m.tool_call for m in msgs if m.tool_call][0].function_calls[0]
    assert call.name == "acme_lookup" and call.args == {"session_id": WINQ, "to": BOB}
    audio = [p.inline_data.data for m in msgs if m.server_content and m.server_content.model_turn
             for p in m.server_content.model_turn.parts if p.inline_data]  # fmt: skip
    assert audio == [base64.b64decode(AUDIO[0])]
    frames = env.up.frames(path_part)
    assert all(text for text, _ in frames)  # the SDK's text frames stay text
    sent = [json.loads(d) for _, d in frames]
    assert sent[0]["setup"]["systemInstruction"]["parts"][0]["text"] == "You serve Zenith Labs."
    assert sent[0]["setup"]["tools"][0]["functionDeclarations"][0]["name"] == "crm_lookup"
    assert sent[1]["client_content"]["turns"][0]["parts"][0]["text"] == "Hello from Zenith Labs, [EMAIL_1]"
    assert sent[2]["tool_response"]["functionResponses"][0]["response"] == {"owner": "Zenith Labs",
                                                                             "thread_id": "WINPATH"}  # fmt: skip
    for _, d in frames:
        assert_no_original(d, "a Gemini client message")


def test_genai_live_client(env: Env) -> None:
    env.up.on("gemini-live-test", scenario_gemini)
    client = genai.Client(api_key="test-key", http_options={
        "base_url": f"https://127.0.0.1:{env.md.port}", "api_version": "v1beta",
        "async_client_args": {"ssl": env.ssl_context()}})  # fmt: skip
    _check_genai(env, run(_genai_session(client, "gemini-live-test")), "GenerativeService.BidiGenerateContent")


def test_genai_live_vertex_path(env: Env) -> None:
    env.up.on("vertex-live-test", scenario_gemini)
    client = genai.Client(vertexai=True, api_key="test-key", http_options={
        "base_url": f"https://127.0.0.1:{env.md.port}", "api_version": "v1beta1",
        "async_client_args": {"ssl": env.ssl_context()}})  # fmt: skip
    before = len(env.up.received)
    msgs = run(_genai_session(client, "vertex-live-test"))
    assert all("LlmBidiService/BidiGenerateContent" in p for p, _, _ in env.up.received[before:])
    _check_genai(env, msgs, "LlmBidiService")


def test_gemini_binary_frames_stay_binary(env: Env) -> None:
    env.up.on("gemini-raw", scenario_gemini)
    path = "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent"

    async def go():
        async with ws_connect(f"{env.url}{path}") as ws:
            await ws.send(json.dumps({"setup": {"model": "models/gemini-raw",
                                                "systemInstruction": {"parts": [{"text": "Acme Corp"}]}}}))  # fmt: skip
            got = [await ws.recv()]
            await ws.send(json.dumps({"clientContent": {"turns": [{"role": "user", "parts": [{"text": BOB}]}],
                                                        "turnComplete": True}}))  # fmt: skip
            while True:
                m = await ws.recv()
                got.append(m)
                if b"toolCall" in m:
                    break
            await ws.send(b'{"toolResponse": {"functionResponses": [{"id": "fc_1", "name": "acme_lookup"}]}}')
            try:
                while True:
                    m = await ws.recv()
                    got.append(m)
                    if b"turnComplete" in m:
                        break
            finally:
                await ws.close()
            return got

    got = run(go())
    assert all(isinstance(m, bytes) for m in got)  # binary stays binary
    msgs = [json.loads(m) for m in got]
    check_gemini(msgs)
    assert read_gemini(msgs)["model"] == f"Hello Acme Corp, {BOB}!Done for Acme Corp, bye Zen"
    frames = env.up.frames("v1alpha")
    assert frames[-1] == (False, b'{"toolResponse": {"functionResponses": [{"id": "fc_1", "name": "crm_lookup"}]}}')


def scenario_gemini_streamed_call(peer: Peer) -> None:
    """A call whose arguments stream (Vertex's `partialArgs`), a disguise cut between
    its messages; the turn ends after the tool response."""
    peer.send({"setupComplete": {}}, binary=True)
    _, content = peer.recv()
    ph = (PH.findall(content.decode()) or ["[EMAIL_1]"])[0]

    def piece(v: str, more: bool = True) -> dict:
        return {"jsonPath": "$.thread_id", "stringValue": v, "willContinue": more}

    calls = [{"id": "fc_1", "name": "crm_lookup", "willContinue": True},
             {"id": "fc_1", "willContinue": True, "partialArgs": [piece("WIN")]},
             {"id": "fc_1", "willContinue": True, "partialArgs": [piece(f"PATH for {ph[:4]}")]},
             {"id": "fc_1", "partialArgs": [piece(ph[4:], False)]}]  # fmt: skip
    msgs = [gemini_tool_call([c]) for c in calls]
    check_gemini(msgs)
    for m in msgs:
        peer.send(m, binary=True)
    peer.recv()  # the tool response
    peer.send(gemini_text("ok"), binary=True)
    peer.send(gemini_flag("turnComplete"), binary=True)
    try:
        peer.recv(timeout=5)
    except Exception:  # noqa: BLE001 - the client closes
        pass


def test_gemini_streamed_call_arguments_restored_across_messages(env: Env) -> None:
    env.up.on("gemini-streamed-call", scenario_gemini_streamed_call)
    path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

    async def go():
        async with ws_connect(f"{env.url}{path}") as ws:
            await ws.send(json.dumps({"setup": {"model": "models/gemini-streamed-call"}}))
            got = [await ws.recv()]
            await ws.send(json.dumps({"clientContent": {"turns": [{"role": "user", "parts": [{"text": BOB}]}],
                                                        "turnComplete": True}}))  # fmt: skip
            try:
                while b"turnComplete" not in got[-1]:
                    got.append(await ws.recv())
                    fcs = json.loads(got[-1]).get("toolCall", {}).get("functionCalls", [])
                    if any("partialArgs" in c and not c.get("willContinue") for c in fcs):  # the call's last
                        await ws.send(json.dumps({"toolResponse": {"functionResponses": [{"id": "fc_1"}]}}))
            finally:
                await ws.close()
            return got

    msgs = [json.loads(m) for m in run(go())]
    check_gemini(msgs)
    calls = [c for m in msgs for c in m.get("toolCall", {}).get("functionCalls", [])]
    assert calls[0]["name"] == "acme_lookup"
    joined = "".join(p["stringValue"] for c in calls for p in c.get("partialArgs", []))
    assert {p["jsonPath"] for c in calls for p in c.get("partialArgs", [])} == {"$.session_id"}
    assert joined == f"{WINQ} for {BOB}"


# -- the house: a reloaded or removed script, the flow file, audit, show, views, -nr ---------------


def _script_copy(tmp: Path) -> Path:
    from integration_util import ADDON

    script = tmp / "disguise_copy.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ADDON.parent)!r})\n"
        "from disguiselib.mitm.addon import Disguise\n_d = Disguise()\naddons = [_d, _d.inspect]\n"
    )
    return script


def _wait_for(pred, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_reload_remove_record_audit_show_and_offline(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from mitmproxy import io

    from disguiselib.inspect import views
    from integration_util import ADDON, run_mitmdump

    maps = write_mappings(tmp_path, MAPPINGS)
    script = _script_copy(tmp_path)
    flows = tmp_path / "session.flows"
    with FakeRealtime() as up:
        up.on("echo", scenario_echo_all)
        cmd = mitmdump_cmd(up.port, tmp_path, maps, "--set", "disguise_defaults=false", "-w", str(flows))
        cmd[cmd.index(str(ADDON))] = str(script)
        md = Mitmdump(cmd)
        try:
            url = f"ws://127.0.0.1:{md.port}/v1/realtime?model=echo"

            async def turn(ws, ev: dict) -> dict:
                await ws.send(json.dumps(ev))
                return json.loads(await ws.recv())

            async def reloaded():
                async with ws_connect(url) as ws:
                    first = await turn(ws, {"type": "response.create", "response": {"instructions": f"Acme Corp {BOB}"}})
                    loads = md.output.count("Loading script")
                    os.utime(script, (time.time() + 5, time.time() + 5))  # mitmproxy reloads a changed script
                    _wait_for(lambda: md.output.count("Loading script") > loads)
                    second = await turn(ws, {"type": "response.create", "response": {"instructions": f"again {BOB}"}})
                    return first, second

            first, second = run(reloaded())
            assert first["echo"]["response"]["instructions"] == f"Acme Corp {BOB}"
            assert second["echo"]["response"]["instructions"] == f"again {BOB}"  # the same session after the reload
            up_frames = [json.loads(d)["response"]["instructions"] for _, d in up.frames("model=echo")]
            assert up_frames[-2:] == ["Zenith Labs [EMAIL_1]", "again [EMAIL_1]"]

            async def removed():
                async with ws_connect(url) as ws:
                    await turn(ws, {"type": "response.create", "response": {"instructions": "hello"}})
                    script.unlink()
                    _wait_for(lambda: "Removing script" in md.output)
                    await ws.send(json.dumps({"type": "response.create", "response": {"instructions": "Acme Corp"}}))
                    await asyncio.sleep(1.0)

            before = len(up.frames("model=echo"))
            run(removed())
            after = [json.loads(d)["response"]["instructions"] for _, d in up.frames("model=echo")[before:]]
            assert after == ["hello"]  # the event with the original never left
            assert md.saw("WebSocket message dropped: the disguise addon is no longer loaded")
        finally:
            md.stop()

    # the flow file: audit, show, contentviews, offline run
    env = {**os.environ, "PYTHONPATH": str(ADDON.parent)}
    audit = subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", str(maps), "audit", str(flows)],
                           capture_output=True, text=True, env=env)  # fmt: skip
    assert "WebSocket GET /v1/realtime" in audit.stdout, audit.stdout + audit.stderr
    assert "LEAK" not in audit.stdout and audit.returncode == 0, audit.stdout + audit.stderr
    show = subprocess.run([sys.executable, "-m", "disguiselib", "show", str(flows)], capture_output=True, text=True,
                          env=env)  # fmt: skip
    assert "→ upstream response.create" in show.stdout and "Zenith Labs [EMAIL_1]" in show.stdout
    assert f"Acme Corp {BOB}" in show.stdout  # the other side: the client's event as it sent it
    with open(flows, "rb") as f:
        recorded = [fl for fl in io.FlowReader(f).stream() if getattr(fl, "websocket", None)]
    fl = recorded[0]
    msg = fl.websocket.messages[0]
    this = views.render(views.NAMES[0], msg.content, fl, None, "", msg)
    other = views.render(views.NAMES[1], msg.content, fl, None, "", msg)
    assert "client event as it went upstream (masked)" in this and "Zenith Labs [EMAIL_1]" in this
    assert f"Acme Corp {BOB}" in other
    assert fl.comment == "disguise openai.realtime: masked 3 originals (EMAIL×2, literals×1); restored 3 originals"
    code, out = run_mitmdump([str(MITMDUMP), "-nr", str(flows), "-s", str(ADDON), "--set",
                              f"disguise_mappings={maps}", "--set", "disguise_defaults=false",
                              "--set", f"confdir={tmp_path}"])  # fmt: skip
    assert "not re-run offline: WebSocket flows are not replayed" in out, out
