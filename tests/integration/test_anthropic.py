"""End to end: the official anthropic SDK -> mitmdump running the addon -> a fake upstream.

Nothing is mocked: a real `mitmdump` process in reverse mode, a real threaded HTTP/1.1
server that records what reached "the provider" and answers in small separate writes,
and the real SDK parsing what the client got back.
"""

from __future__ import annotations

import gzip
import http.client
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from mitmproxy.net import encoding

from integration_util import (
    MITMDUMP,
    Compressor,
    FakeUpstream,
    Proxy,
    Recorded,
    Reply,
    all_strings,
    cut,
    find_object_span,
    mitmdump_cmd,
    parse_events,
    run_mitmdump,
    running_proxy,
    sse,
    without_thinking,
    zstd_available,
)

anthropic = pytest.importorskip("anthropic")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
STRIP_RX = r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"
WIN = "C:\\Users\\acme"  # one backslash each, as the user typed it
LITERALS = {
    "Acme Corp": "Zenith Labs",
    "session_id": "thread_id",
    "acme_lookup": "crm_lookup",
    WIN: "WINPATH",
}
MAPPINGS = {
    "literals": LITERALS,
    "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}],
    "strip": [{"regex": STRIP_RX}],
}
BOB = "bob@corp.example.com"
ALICE = "alice@x.example.org"
ORIGINALS = [*LITERALS, BOB, ALICE]
DISGUISES = [*LITERALS.values(), "[EMAIL_"]
PH = re.compile(r"\[EMAIL_[0-9]+\]")
SIGNATURE = "EqQBCkgIBBABGAIiQGx+Zm9v/YmFyYmF6cXV4==sig"


def placeholder_in(rec: Recorded, n: int = 0) -> str:
    """The n-th distinct placeholder the upstream request carries (by first appearance)."""
    found = list(dict.fromkeys(PH.findall(rec.body.decode("utf-8"))))
    return found[n] if len(found) > n else "[EMAIL_1]"


def split_at(s: str, marks: list[tuple[str, int]]) -> list[str]:
    """s cut inside each marker substring (at the given offset in it)."""
    cuts = sorted({s.index(sub) + off for sub, off in marks})
    return [s[a:b] for a, b in zip([0, *cuts], [*cuts, len(s)], strict=True)]


def sse_headers(**extra: str) -> dict[str, str]:
    return {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
            **extra}  # fmt: skip


def message_start(model: str, msg_id: str) -> bytes:
    return sse({
        "type": "message_start",
        "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 42, "output_tokens": 1}},
    })  # fmt: skip


def block_start(index: int, block: dict) -> bytes:
    return sse({"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, kind: str, field: str, value: str, compact: bool = True) -> bytes:
    return sse(
        {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: value}},
        compact=compact,
    )


def text_deltas(index: int, pieces: list[str]) -> list[bytes]:
    # alternate the API's exact shape (the addon's fast path) and a spaced one (slow path)
    return [delta(index, "text_delta", "text", p, compact=n % 2 == 0) for n, p in enumerate(pieces)]


def block_stop(index: int) -> bytes:
    return sse({"type": "content_block_stop", "index": index})


def message_end(stop_reason: str, output_tokens: int = 30) -> list[bytes]:
    return [
        sse({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}}),
        sse({"type": "message_stop"}),
    ]  # fmt: skip


def assert_no_disguise(text: str, what: str, extra: tuple[str, ...] = ()) -> None:
    for d in (*DISGUISES, *extra):
        assert d not in text, f"{what} shows the disguise {d!r}: {text!r}"


# -- fixtures ----------------------------------------------------------------------------




@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise"), MAPPINGS, upstream=upstream) as p:
        yield p


@contextmanager
def sdk(proxy: Proxy, on_request=None, prefix: str = "") -> Iterator[anthropic.Anthropic]:
    """The official client, pointed at the proxy (on_request sees each outgoing request)."""
    hooks = {"request": [on_request]} if on_request else {}
    http_client = anthropic.DefaultHttpxClient(trust_env=False, event_hooks=hooks)
    try:
        with anthropic.Anthropic(
            base_url=proxy.base_url + prefix, api_key="test", max_retries=0, timeout=20.0,
            http_client=http_client,
        ) as client:  # fmt: skip
            yield client
    finally:
        http_client.close()


def raw_post(
    proxy: Proxy, body: bytes, headers: dict[str, str] | None = None, path: str = "/v1/messages"
) -> tuple[int, dict[str, str], bytes]:
    """POST with http.client: the response bytes exactly as the proxy sent them."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=20)
    try:
        hdrs = {"content-type": "application/json", "x-api-key": "test",
                "anthropic-version": "2023-06-01", **(headers or {})}  # fmt: skip
        conn.request("POST", path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


# -- a. the main streamed conversation -----------------------------------------------------

MAIN = "scn-main"
THINKING_BLOCK = {
    "type": "thinking",
    "thinking": f"The Acme Corp user ({BOB}) wants acme_lookup with a session_id under {WIN}.",
    "signature": "c2lnbmVkIGJ5IHRoZSBwcm92aWRlcg==",
}
MAIN_MESSAGES = [
    {"role": "user", "content": f"Hi, I work at Acme Corp. Mail me at {BOB}; files are in "
                                f"{WIN}\\docs. Naïve café ☕ at Acme Corp."},
    {"role": "assistant", "content": [
        THINKING_BLOCK,
        {"type": "text", "text": "Let me look that up for Acme Corp."},
        {"type": "tool_use", "id": "toolu_h1", "name": "acme_lookup",
         "input": {"session_id": "s-1", "path": WIN}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_h1",
         "content": f"Acme Corp record s-1, owner {BOB}"},
        {"type": "text", "text": "Thanks. Once more for Acme Corp, please."},
    ]},
]  # fmt: skip
MAIN_TOOLS = [{
    "name": "acme_lookup",
    "description": "Look up an Acme Corp CRM record by its session_id.",
    "input_schema": {
        "type": "object",
        "properties": {"session_id": {"type": "string", "description": "the session_id"},
                       "path": {"type": "string"}},
        "required": ["session_id"],
    },
}]  # fmt: skip
MAIN_KW = dict(
    model=MAIN, max_tokens=2048, system="You are the assistant of Acme Corp.",
    messages=MAIN_MESSAGES, tools=MAIN_TOOLS, tool_choice={"type": "auto"},
    thinking={"type": "enabled", "budget_tokens": 1024},
)  # fmt: skip

THINKING_PIECES = ["Plan: ask Zen", "ith Labs about thread_id via crm_lookup for ", "[EMAIL_1]."]
MAIN_EXPECTED_TEXT = (
    f"Hello from Acme Corp! Mail {BOB} today.  Bye, Acme Corp \u2014 naïve ☕ \"quoted\"\n"
    "end. Zenith"
)
MAIN_EXPECTED_INPUT = {
    "session_id": "t-42 for Acme Corp",
    "path": WIN,
    "file": WIN + "\\notes.txt",
    "note": f'say "hi" to {BOB}',
    "count": 3,
}


def main_text_pieces(ph: str) -> list[str]:
    # The last "Zenith" could still grow into "Zenith Labs": it is held until the block stops.
    return ["Hello from Zen", "ith La", "bs! Mail ", ph[:4], ph[4:], " today. [", "[reply_",
            "to_current", "]] Bye, Zenith Labs", " \u2014 naïve ☕ \"quoted\"\n", "end. Zen",
            "ith"]  # fmt: skip


def main_tool_pieces(ph: str) -> list[str]:
    doc = json.dumps({"thread_id": "t-42 for Zenith Labs", "path": "WINPATH",
                      "file": "WINPATH\\notes.txt", "note": f'say "hi" to {ph}',
                      "count": 3})  # fmt: skip
    pieces = split_at(doc, [
        ('"thread_id"', 4),        # {"thr | ead_id"
        ("Zenith Labs", 3),        # Zen | ith Labs
        ('"WINPATH"', 4),          # WIN | PATH
        ("WINPATH\\\\", 8),        # the JSON escape \\ cut between its two backslashes
        ('\\"hi', 1),              # the escaped quote \" cut after its backslash
        (ph, 3),                   # [EM | AIL_1]
    ])  # fmt: skip
    assert "".join(pieces) == doc and len(pieces) == 7
    return pieces


def main_events(ph: str) -> list[bytes]:
    """What the fake provider streams for the main conversation (ph: the placeholder the
    request got for BOB)."""
    return [
        message_start(MAIN, "msg_main"),
        sse({"type": "ping"}),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        *[delta(0, "thinking_delta", "thinking", p, compact=n != 1)
          for n, p in enumerate(THINKING_PIECES)],
        delta(0, "signature_delta", "signature", SIGNATURE),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        *text_deltas(1, main_text_pieces(ph)),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_01A", "name": "crm_lookup", "input": {}}),
        *[delta(2, "input_json_delta", "partial_json", p, compact=n % 3 != 2)
          for n, p in enumerate(main_tool_pieces(ph))],
        block_stop(2),
        *message_end("tool_use"),
    ]  # fmt: skip


def main_handler(rec: Recorded) -> Reply:
    return Reply(cut(main_events(placeholder_in(rec)), seed=1), headers=sse_headers())


def mask_raw(raw: str, ph: str) -> str:
    """What masking must do to raw JSON text outside signed blocks, done by hand."""
    for orig, disg in [(json.dumps(WIN)[1:-1], "WINPATH"), *LITERALS.items(), (BOB, ph)]:
        raw = raw.replace(orig, disg)
    return raw


def check_main_request(rec: Recorded, client_body: bytes) -> str:
    """The request as upstream got it: every original masked, the signed thinking block
    byte-identical, every other byte as the client sent it. Returns the placeholder."""
    client = client_body.decode("utf-8")
    a, b = find_object_span(client, THINKING_BLOCK)
    thinking = client[a:b].encode("utf-8")
    up = rec.body
    assert up.count(thinking) == 1, "the signed thinking block did not go out byte-identical"
    i = up.index(thinking)
    outside = up[:i] + up[i + len(thinking) :]
    for orig in ORIGINALS:
        assert orig.encode() not in outside, f"{orig!r} reached upstream"
        assert json.dumps(orig)[1:-1].encode() not in outside, f"{orig!r} reached upstream"
    strings = all_strings(without_thinking(json.loads(up)))
    leaked = [s for s in strings if any(o in s for o in ORIGINALS)]
    assert not leaked, f"originals reached upstream: {leaked!r}"
    ph = placeholder_in(rec)
    assert ph == "[EMAIL_1]"
    for d in ("Zenith Labs", "thread_id", "crm_lookup", "WINPATH", ph):
        assert d.encode() in outside, f"disguise {d!r} missing upstream"
    doc = json.loads(up)
    assert doc["tools"][0]["name"] == "crm_lookup"
    assert list(doc["tools"][0]["input_schema"]["properties"]) == ["thread_id", "path"]
    assert doc["tools"][0]["input_schema"]["required"] == ["thread_id"]
    assert doc["messages"][1]["content"][2]["input"] == {"thread_id": "s-1", "path": "WINPATH"}
    assert doc["messages"][0]["content"].endswith(
        "files are in WINPATH\\docs. Naïve café ☕ at Zenith Labs."
    )
    # span-based: nothing but the masked tokens changed
    expected = mask_raw(client[:a], ph) + client[a:b] + mask_raw(client[b:], ph)
    assert up == expected.encode("utf-8")
    # asked for an uncompressed answer
    assert rec.headers.get("accept-encoding") == "identity"
    return ph


def test_stream_sdk_masks_request_and_restores_split_disguises(proxy: Proxy) -> None:
    proxy.upstream.on(MAIN, main_handler)
    sent: list[bytes] = []

    def on_request(request) -> None:
        if request.url.path.endswith("/v1/messages"):
            sent.append(request.read())

    n_before = len(proxy.upstream.for_model(MAIN))
    with sdk(proxy, on_request) as client:
        with client.messages.stream(**MAIN_KW) as stream:
            events = list(stream)
            final = stream.get_final_message()
            assert stream.response.headers.get("content-type", "").startswith("text/event-stream")

    recs = proxy.upstream.for_model(MAIN)
    assert len(recs) == n_before + 1 and len(sent) == 1
    ph = check_main_request(recs[-1], sent[0])
    assert ph == "[EMAIL_1]"

    # final message: text restored and stripped, tool call restored, thinking untouched
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    thinking, text, tool = final.content
    assert thinking.thinking == "".join(THINKING_PIECES)  # still "Zenith Labs": signed, not ours
    assert "Zenith Labs" in thinking.thinking and thinking.signature == SIGNATURE
    assert text.text == MAIN_EXPECTED_TEXT
    assert tool.name == "acme_lookup" and tool.id == "toolu_01A"
    assert tool.input == MAIN_EXPECTED_INPUT
    assert final.stop_reason == "tool_use"

    # what the SDK yielded along the way
    texts = [e.text for e in events if e.type == "text"]
    assert "".join(texts) == MAIN_EXPECTED_TEXT
    assert len(texts) >= 6, "text was not streamed (buffered or coalesced)"
    assert not [t for t in texts if "[" in t], "a half tag or half placeholder was emitted"
    partial = [e.partial_json for e in events if e.type == "input_json"]
    assert json.loads("".join(partial)) == MAIN_EXPECTED_INPUT
    assert "".join(e.thinking for e in events if e.type == "thinking") == "".join(THINKING_PIECES)
    assert [e.signature for e in events if e.type == "signature"] == [SIGNATURE]
    for e in events:
        shown = json.dumps(without_thinking(e.to_dict()), ensure_ascii=False)
        assert_no_disguise(shown, f"SDK event {e.type}", ("[[", "reply_to"))


def test_stream_raw_bytes_pass_unchanged_events_byte_identical(proxy: Proxy) -> None:
    """The same stream read as bytes: thinking/signature and envelope events arrive
    byte-identical, every event parses, held tails come before their block's stop."""
    proxy.upstream.on(MAIN, main_handler)
    body = json.dumps({**MAIN_KW, "stream": True}, ensure_ascii=False).encode()
    status, headers, data = raw_post(proxy, body)
    assert status == 200, data
    assert headers["content-type"].startswith("text/event-stream")
    assert "content-encoding" not in headers

    ph = placeholder_in(proxy.upstream.for_model(MAIN)[-1])
    upstream_events = [parse_events(e)[0] for e in main_events(ph)]
    got = parse_events(data)
    # events that must not change: the thinking block (index 0) and the envelope
    keep = [e.raw for e in upstream_events
            if e.data.get("index") == 0
            or e.data["type"] in ("message_start", "ping", "message_delta", "message_stop",
                                  "content_block_stop")]  # fmt: skip
    raws = [e.raw for e in got]
    pos = 0
    for k in keep:
        assert k in raws[pos:], f"event changed or reordered: {k!r}"
        pos = raws.index(k, pos) + 1
    thinking = "".join(
        e.data["delta"].get("thinking", "")
        for e in got
        if e.data.get("index") == 0 and e.data["type"] == "content_block_delta"
    )
    assert thinking == "".join(THINKING_PIECES) and "Zenith Labs" in thinking

    def channel(idx: int, field: str) -> list[str]:
        out = []
        stopped = False
        for e in got:
            if e.data.get("index") != idx:
                continue
            if e.data["type"] == "content_block_stop":
                stopped = True
            elif e.data["type"] == "content_block_delta":
                assert not stopped, f"a delta of block {idx} came after its stop"
                out.append(e.data["delta"][field])
        assert stopped
        return out

    texts = channel(1, "text")
    assert "".join(texts) == MAIN_EXPECTED_TEXT
    for t in texts:
        assert_no_disguise(t, "text delta", ("[",))
    parts = channel(2, "partial_json")
    assert json.loads("".join(parts)) == MAIN_EXPECTED_INPUT
    for p in parts:
        assert_no_disguise(p, "input_json_delta")
    starts = {e.data["index"]: e.data["content_block"] for e in got
              if e.data["type"] == "content_block_start"}  # fmt: skip
    assert starts[2]["name"] == "acme_lookup"
    assert [e.data["type"] for e in got][-2:] == ["message_delta", "message_stop"]


def test_stream_is_streamed_not_buffered(proxy: Proxy) -> None:
    """The client sees restored text while upstream is still holding the rest back."""
    scn = "scn-gate"
    gate = threading.Event()
    released_by_client: list[bool] = []

    def handler(rec: Recorded) -> Reply:
        def pieces() -> Iterator[bytes]:
            yield message_start(scn, "msg_gate")
            yield block_start(0, {"type": "text", "text": ""})
            yield from text_deltas(0, ["Early Zen", "ith Labs, "])
            released_by_client.append(gate.wait(10))
            yield from text_deltas(0, ["late."])
            yield block_stop(0)
            yield from message_end("end_turn")

        return Reply(pieces(), headers=sse_headers())

    proxy.upstream.on(scn, handler)
    seen = []
    with sdk(proxy) as client:
        with client.messages.stream(
            model=scn, max_tokens=20, messages=[{"role": "user", "content": "go"}]
        ) as stream:
            for text in stream.text_stream:
                seen.append(text)
                if "Acme Corp" in "".join(seen):
                    gate.set()
            final = stream.get_final_message()
    assert released_by_client == [True], "the client got nothing until upstream finished"
    assert final.content[0].text == "Early Acme Corp, late."


# -- b. a stream cut by max_tokens inside a tag ----------------------------------------------

CUT = "scn-max-tokens"


@pytest.mark.parametrize("framing", ["chunked", "close", "length"])
def test_stream_cut_by_max_tokens_drops_dangling_half_tag(proxy: Proxy, framing: str) -> None:
    pieces = ["Sure, Zen", "ith Labs will", " reply. [", "[reply_", "to:<"]
    events = [message_start(CUT, "msg_cut"), block_start(0, {"type": "text", "text": ""}),
              *text_deltas(0, pieces), block_stop(0), *message_end("max_tokens")]  # fmt: skip
    proxy.upstream.on(CUT, lambda rec: Reply(cut(events, seed=2), headers=sse_headers(),
                                             framing=framing))  # fmt: skip
    with sdk(proxy) as client:
        with client.messages.stream(
            model=CUT, max_tokens=12, messages=[{"role": "user", "content": "Ask Acme Corp"}]
        ) as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_message()
    assert "Zenith Labs" in proxy.upstream.for_model(CUT)[-1].body.decode()
    assert final.stop_reason == "max_tokens"
    assert final.content[0].text == "Sure, Acme Corp will reply. "
    assert "".join(texts) == final.content[0].text
    assert not [t for t in texts if "[" in t], f"a half tag reached the client: {texts!r}"


# -- other ways a stream ends; disguises that rarely start in the bytes -------------------------


def test_stream_cut_by_the_network_is_not_dressed_up_as_complete(proxy: Proxy) -> None:
    """Upstream drops the connection mid-body while "Zen" is held back: the client gets
    what was held and then the explicit error event of contract §4 (the SDK raises it
    as an API error, issue 27: before, a transport error), never a clean end of stream;
    then the connection is cut as upstream's was."""
    scn = "scn-network-cut"
    events = [message_start(scn, "msg_nc"), block_start(0, {"type": "text", "text": ""}),
              *text_deltas(0, ["Hello Zenith Labs, hello Zen"])]  # fmt: skip
    proxy.upstream.on(scn, lambda rec: Reply(events, headers=sse_headers(), abort=True))
    texts: list[str] = []
    with sdk(proxy) as client, pytest.raises(anthropic.APIStatusError) as exc:
        with client.messages.stream(
            model=scn, max_tokens=20, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for t in stream.text_stream:
                texts.append(t)
    assert "disguise: the stream ended before message_stop" in str(exc.value)
    assert "".join(texts) == "Hello Acme Corp, hello Zen"


def test_a_block_index_written_as_a_float_is_that_block(proxy: Proxy) -> None:
    """`"index": 0.0` is block 0 to every JSON reader (the SDK included): a disguise split
    over deltas spelled 0 and 0.0 comes out whole and in order, and the tail held at a
    stop spelled 0.0 is delivered before it."""
    scn = "scn-float-index"
    events = [message_start(scn, "msg_fi"), block_start(0, {"type": "text", "text": ""}),
              delta(0, "text_delta", "text", "Hi Zen"),
              delta(0, "text_delta", "text", "ith Labs, Zenith La").replace(b'"index":0', b'"index":0.0'),
              block_stop(0).replace(b'"index":0', b'"index":0E0'), *message_end("end_turn")]  # fmt: skip
    assert events[3].count(b'"index":0.0') == 1 and events[4].count(b'"index":0E0') == 1
    proxy.upstream.on(scn, lambda rec: Reply(events, headers=sse_headers()))
    with sdk(proxy) as client, client.messages.stream(
        model=scn, max_tokens=20, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        texts = list(stream.text_stream)
    assert "".join(texts) == "Hi Acme Corp, Zenith La"  # (the tail: no disguise after all)


def test_error_event_mid_stream_is_restored_after_the_held_tail(proxy: Proxy) -> None:
    scn = "scn-error-event"
    events = [message_start(scn, "msg_ee"), block_start(0, {"type": "text", "text": ""}),
              *text_deltas(0, ["Partial Zen"]),
              sse({"type": "error", "error": {"type": "overloaded_error",
                                              "message": "Zenith Labs is overloaded"}}),
              ]  # fmt: skip
    proxy.upstream.on(scn, lambda rec: Reply(events, headers=sse_headers()))
    texts: list[str] = []
    with sdk(proxy) as client, pytest.raises(anthropic.APIStatusError) as exc:
        with client.messages.stream(
            model=scn, max_tokens=20, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for t in stream.text_stream:
                texts.append(t)
    assert "".join(texts) == "Partial Zen"  # the held tail went out before the error
    assert "Acme Corp is overloaded" in str(exc.value.body) + str(exc.value)
    assert "Zenith" not in str(exc.value.body)


QUIET_MAPPINGS = {"literals": {"Acme Corp": "Qorvex Labs", "acme_lookup": "Qrm_lookup",
                                 WIN: "QPATH"}}  # fmt: skip


def test_stream_with_rare_disguise_letters(upstream: FakeUpstream, tmp_path: Path) -> None:
    """With disguises that all begin with "Q" (and no patterns or strip rules), most
    chunks hold nothing that could start a match and may pass as they came; the ones in
    between must still be restored, and thinking must still pass untouched."""
    scn = "scn-quiet"
    tool_pieces = ['{"k": "plain", ', '"path": "QPA', 'TH\\\\x", "n": "Qrm_lookup"}']
    events = [
        message_start(scn, "msg_q"),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, "thinking_delta", "thinking", "Qor"),
        delta(0, "thinking_delta", "thinking", "vex Labs thinks"),
        delta(0, "signature_delta", "signature", SIGNATURE),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        *text_deltas(1, ["Plain words ", "then Qor", "vex Labs", " and more plain words", " in QPA",
                         "TH"]),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_q", "name": "Qrm_lookup", "input": {}}),
        *[delta(2, "input_json_delta", "partial_json", p) for p in tool_pieces],
        block_stop(2),
        *message_end("tool_use"),
    ]  # fmt: skip
    upstream.on(scn, lambda rec: Reply(events, headers=sse_headers(), delay=0.005))
    with running_proxy(tmp_path, QUIET_MAPPINGS, upstream=upstream) as proxy, sdk(proxy) as client:
        with client.messages.stream(
            model=scn, max_tokens=50, messages=[{"role": "user", "content": f"Acme Corp {WIN}"}]
        ) as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_message()
    assert upstream.for_model(scn)[-1].json["messages"][0]["content"] == "Qorvex Labs QPATH"
    thinking, text, tool = final.content
    assert thinking.thinking == "Qorvex Labs thinks" and thinking.signature == SIGNATURE
    assert text.text == f"Plain words then Acme Corp and more plain words in {WIN}"
    assert "".join(texts) == text.text and not [t for t in texts if "Q" in t]
    assert tool.name == "acme_lookup"
    assert tool.input == {"k": "plain", "path": WIN + "\\x", "n": "acme_lookup"}


# -- c. non-streaming -----------------------------------------------------------------------

JSON_SCN = "scn-json"


def json_message(text: str, name: str, key: str, path: str, quote: str, ph1: str) -> dict:
    return {
        "id": "msg_json", "type": "message", "role": "assistant", "model": JSON_SCN,
        "content": [
            {"type": "thinking", "thinking": "Zenith Labs wants thread_id for [EMAIL_1]",
             "signature": SIGNATURE},
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "toolu_02", "name": name,
             "input": {key: path, "quote": quote,
                       "nested": {key: [ph1, 1.0, 12345678901234567890]}}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }  # fmt: skip


def json_handler(rec: Recorded) -> Reply:
    enc = rec.headers.get("x-test-encoding", "identity")
    ph1, ph2 = placeholder_in(rec, 0), placeholder_in(rec, 1)
    text = (f"Zenith Labs mailed {ph2} and {ph1}; [EMAIL_9] stays. "
            "[[reply_to_current]]Done: thread_id.")  # fmt: skip
    body = json.dumps(json_message(text, "crm_lookup", "thread_id", "WINPATH\\x",
                                   'he said "Zenith Labs"', ph1), indent=2).encode()  # fmt: skip
    headers = {"Content-Type": "application/json"}
    if enc == "gzip":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return Reply(cut([body], seed=3), headers=headers, framing="length")


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_non_streaming_create_restores_body(proxy: Proxy, encoding: str) -> None:
    proxy.upstream.on(JSON_SCN, json_handler)
    with sdk(proxy) as client:
        raw = client.messages.with_raw_response.create(
            model=JSON_SCN, max_tokens=100, extra_headers={"x-test-encoding": encoding},
            messages=[{"role": "user", "content": f"Acme Corp: write to {ALICE} and {BOB}."}],
        )  # fmt: skip
        msg = raw.parse()
        got = raw.http_response.content
    rec = proxy.upstream.for_model(JSON_SCN)[-1]
    assert ALICE not in rec.body.decode() and BOB not in rec.body.decode()
    assert (placeholder_in(rec, 0), placeholder_in(rec, 1)) == ("[EMAIL_1]", "[EMAIL_2]")

    text = f"Acme Corp mailed {BOB} and {ALICE}; [EMAIL_9] stays. Done: session_id."
    thinking, block, tool = msg.content
    assert block.text == text
    assert thinking.thinking == "Zenith Labs wants thread_id for [EMAIL_1]"
    assert thinking.signature == SIGNATURE
    assert tool.name == "acme_lookup"
    assert tool.input == {"session_id": WIN + "\\x", "quote": 'he said "Acme Corp"',
                          "nested": {"session_id": [ALICE, 1.0, 12345678901234567890]}}  # fmt: skip
    # only the restored tokens changed: indentation, 1.0 and the big integer are as sent
    expected = json.dumps(json_message(text, "acme_lookup", "session_id", WIN + "\\x",
                                       'he said "Acme Corp"', ALICE), indent=2)  # fmt: skip
    assert got == expected.encode()


def test_upstream_error_message_is_restored(proxy: Proxy) -> None:
    scn = "scn-error"

    def handler(rec: Recorded) -> Reply:
        message = f"Zenith Labs: thread_id for {placeholder_in(rec)} is invalid"
        err = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return Reply([json.dumps(err).encode()], status=400,
                     headers={"Content-Type": "application/json"}, framing="length")  # fmt: skip

    proxy.upstream.on(scn, handler)
    with sdk(proxy) as client, pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(model=scn, max_tokens=5,
                               messages=[{"role": "user", "content": f"I am {BOB}"}])  # fmt: skip
    assert exc.value.status_code == 400
    assert exc.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": f"Acme Corp: session_id for {BOB} is invalid"}}


def test_char_location_citations_point_into_the_client_s_document(proxy: Proxy) -> None:
    # the provider counts characters of the document it read (masked); the client reads
    # its own: each citation's indices moved there, whole and streamed alike
    scn, doc = "scn-citations", f"Acme Corp is great. Mail {BOB} today. Other text here."

    def handler(rec: Recorded) -> Reply:
        body = json.loads(rec.body)
        read = body["messages"][0]["content"][0]["source"]["data"]
        cites = [{"type": "char_location", "cited_text": frag, "document_index": 0, "document_title": "d",
                  "start_char_index": read.index(frag), "end_char_index": read.index(frag) + len(frag)}
                 for frag in ("Zenith Labs is great.", f"Mail {placeholder_in(rec)} today.", "Other text here.")]
        if not body.get("stream"):
            msg = {"id": "m", "type": "message", "role": "assistant", "model": scn, "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
                   "content": [{"type": "text", "text": "Cited.", "citations": cites}]}
            return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")
        events = [message_start(scn, "m"), block_start(0, {"type": "text", "text": "", "citations": []}),
                  *(sse({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta",
                                                                              "citation": c}}) for c in cites),
                  *text_deltas(0, ["Cited."]), block_stop(0), *message_end("end_turn")]
        return Reply([b"".join(events)], headers=sse_headers())  # fmt: skip

    proxy.upstream.on(scn, handler)
    messages = [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": doc},
         "title": "d", "citations": {"enabled": True}},
        {"type": "text", "text": "Summarise with citations"}]}]  # fmt: skip
    with sdk(proxy) as client:
        whole = client.messages.create(model=scn, max_tokens=10, messages=messages)  # type: ignore[arg-type]
        with client.messages.stream(model=scn, max_tokens=10, messages=messages) as s:  # type: ignore[arg-type]
            streamed = s.get_final_message()
    assert "Acme Corp" not in proxy.upstream.for_model(scn)[-1].body.decode()
    want = ["Acme Corp is great.", f"Mail {BOB} today.", "Other text here."]
    for msg in (whole, streamed):
        got = msg.content[0].citations  # type: ignore[union-attr]
        assert [c.cited_text for c in got] == want  # type: ignore[union-attr]
        assert [doc[c.start_char_index : c.end_char_index] for c in got] == want  # type: ignore[union-attr]



def test_char_location_citations_sent_back_point_into_the_masked_document(proxy: Proxy) -> None:
    """The answer's text block, citations and all, sent back in the next turn (as the SDK
    gives it): its offsets, moved to the client's document on the way back, are moved to
    the masked document on the way out, so the provider gets its citations as it wrote
    them (they pointed two characters short of each cited text, past one original)."""
    scn, doc = "scn-citations-back", f"Acme Corp is great. Mail {BOB} today. Other text here."
    wrote: list[list[dict]] = []

    def handler(rec: Recorded) -> Reply:
        read = json.loads(rec.body)["messages"][0]["content"][0]["source"]["data"]
        cites = [{"type": "char_location", "cited_text": frag, "document_index": 0, "document_title": "d",
                  "start_char_index": read.index(frag), "end_char_index": read.index(frag) + len(frag)}
                 for frag in ("Zenith Labs is great.", f"Mail {placeholder_in(rec)} today.", "Other text here.")]
        wrote.append(cites)
        msg = {"id": "m", "type": "message", "role": "assistant", "model": scn, "stop_reason": "end_turn",
               "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
               "content": [{"type": "text", "text": "Cited.", "citations": cites}]}
        return Reply([json.dumps(msg).encode()], headers={"Content-Type": "application/json"}, framing="length")  # fmt: skip

    proxy.upstream.on(scn, handler)
    messages: list = [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": doc},
         "title": "d", "citations": {"enabled": True}},
        {"type": "text", "text": "Summarise with citations"}]}]  # fmt: skip
    with sdk(proxy) as client:
        first = client.messages.create(model=scn, max_tokens=10, messages=messages)
        block = first.content[0].model_dump(exclude_none=True)
        assert [doc[c["start_char_index"] : c["end_char_index"]] for c in block["citations"]][1] == f"Mail {BOB} today."
        messages += [{"role": "assistant", "content": [block]}, {"role": "user", "content": "And then?"}]
        client.messages.create(model=scn, max_tokens=10, messages=messages)
    up = json.loads(proxy.upstream.for_model(scn)[-1].body)
    masked = up["messages"][0]["content"][0]["source"]["data"]
    sent = up["messages"][1]["content"][0]["citations"]
    assert [masked[c["start_char_index"] : c["end_char_index"]] for c in sent] == [c["cited_text"] for c in sent]
    assert sent == [{k: c[k] for k in sorted(c)} for c in wrote[0]]

# -- d. compressed SSE ------------------------------------------------------------------------

ENCODINGS = ["gzip", "deflate", "br",
             pytest.param("zstd", marks=pytest.mark.skipif(not zstd_available(), reason="no zstd"))]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_compressed_stream_is_decoded_and_restored(proxy: Proxy, encoding: str) -> None:
    scn = f"scn-{encoding}"

    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        events = [message_start(scn, "msg_z"), block_start(0, {"type": "text", "text": ""}),
                  *text_deltas(0, ["Compressed Zen", "ith", " Labs for ", ph[:2], ph[2:],
                                   " [[reply_to_current]] ok"]),
                  block_stop(0), *message_end("end_turn")]  # fmt: skip
        c = Compressor(encoding)
        pieces = [c.piece(e) for e in events]
        pieces.append(c.finish())
        return Reply(cut(pieces, seed=4, merge_every=3),
                     headers=sse_headers(**{"Content-Encoding": encoding}))  # fmt: skip

    proxy.upstream.on(scn, handler)
    with sdk(proxy) as client:
        with client.messages.stream(
            model=scn, max_tokens=50, messages=[{"role": "user", "content": f"Acme Corp, {BOB}"}]
        ) as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_message()
            assert "content-encoding" not in stream.response.headers
    rec = proxy.upstream.for_model(scn)[-1]
    assert rec.headers.get("accept-encoding") == "identity"
    assert BOB not in rec.body.decode() and placeholder_in(rec) == "[EMAIL_1]"
    assert final.content[0].text == f"Compressed Acme Corp for {BOB}  ok"
    assert "".join(texts) == final.content[0].text
    for t in texts:
        assert_no_disguise(t, "text", ("[",))


# -- e. requests that cannot be masked ---------------------------------------------------------

BAD_BODIES = {
    "truncated-json": (b'{"model":"scn-main","max_tokens":5,"messages":[{"role":"user","content":'
                       b'"mail bob@corp.example.com at Acme Corp"}', {}),
    "not-an-object": (b'["Acme Corp", "bob@corp.example.com"]', {}),
    "not-utf8": (b'{"model":"scn-main","messages":[{"role":"user","content":"Acme Corp \xff"}]}',
                 {}),
    "broken-gzip": (b"\x1f\x8b\x08\x00not gzip at all: Acme Corp bob@corp.example.com",
                    {"content-encoding": "gzip"}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_unmaskable_request_is_refused_with_anthropic_error(proxy: Proxy, case: str) -> None:
    body, headers = BAD_BODIES[case]
    n_before = len(proxy.upstream.requests)
    status, hdrs, data = raw_post(proxy, body, headers)
    assert status == 400, data
    assert hdrs["content-type"].startswith("application/json")
    err = json.loads(data)
    assert set(err) == {"type", "error"} and err["type"] == "error"
    assert err["error"]["type"] == "invalid_request_error"
    msg = err["error"]["message"]
    assert isinstance(msg, str) and "disguise" in msg
    for orig in ORIGINALS:
        assert orig not in msg
    assert len(proxy.upstream.requests) == n_before, "the refused request reached upstream"

    # and through the SDK the refusal is an ordinary API error
    if case == "truncated-json":
        with sdk(proxy) as client, pytest.raises(anthropic.BadRequestError) as exc:
            client.post("/v1/messages", cast_to=object, content=body,
                        options={"headers": {"content-type": "application/json"}})
        assert exc.value.body["error"]["type"] == "invalid_request_error"
        assert len(proxy.upstream.requests) == n_before


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_compressed_request_body_is_masked(proxy: Proxy, enc: str) -> None:
    proxy.upstream.on(JSON_SCN, json_handler)
    body = json.dumps({"model": JSON_SCN, "max_tokens": 5, "messages": [
        {"role": "user", "content": f"Acme Corp mails {ALICE} and {BOB}"}]}).encode()  # fmt: skip
    status, _, data = raw_post(proxy, encoding.encode(body, enc), {"content-encoding": enc})
    assert status == 200, data
    rec = proxy.upstream.for_model(JSON_SCN)[-1]
    assert rec.headers.get("content-encoding") == enc
    assert BOB.encode() not in rec.raw and b"Acme" not in rec.raw  # sent compressed, not plain
    assert rec.body == mask_raw(body.decode(), "[EMAIL_2]").replace(ALICE, "[EMAIL_1]").encode()
    assert json.loads(data)["content"][1]["text"].startswith(f"Acme Corp mailed {BOB} and {ALICE};")


def test_a_tool_input_of_many_short_elements_is_masked_where_its_originals_are(proxy: Proxy) -> None:
    """A tool input of 30,000 short elements, three of them holding originals: the body
    the raw pass reads (each engine once over its bytes; the elements nothing can be
    found in are left out of the walk, and the guard takes them as clean from its run).
    Upstream gets the client's bytes with those three elements masked, nothing else."""
    proxy.upstream.on(JSON_SCN, json_handler)
    ids = [f"{i:06x}" for i in range(30_000)]
    ids[1_000], ids[17_000], ids[29_999] = BOB, "Acme Corp", f"mail {ALICE}"
    sent: list[bytes] = []
    tid = "toolu_01" + "A" * 22
    with sdk(proxy, on_request=lambda r: sent.append(r.content)) as client:
        msg = client.messages.create(model=JSON_SCN, max_tokens=100, messages=[
            {"role": "user", "content": "list them"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "ids", "input": {"ids": ids}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "done"}]}])  # fmt: skip
    rec = proxy.upstream.for_model(JSON_SCN)[-1]
    want = sent[-1].decode().replace(BOB, "[EMAIL_1]").replace("Acme Corp", "Zenith Labs").replace(ALICE, "[EMAIL_2]")
    assert rec.body == want.encode()
    got = json.loads(rec.body)["messages"][1]["content"][0]["input"]["ids"]
    assert (got[1_000], got[17_000], got[29_999]) == ("[EMAIL_1]", "Zenith Labs", "mail [EMAIL_2]")
    assert msg.content[1].text.startswith(f"Acme Corp mailed {ALICE} and {BOB};")


def test_other_anthropic_routes_are_masked(proxy: Proxy) -> None:
    """count_tokens, batches, the beta client and an API mounted under a path prefix."""
    content = f"Acme Corp asks for {BOB}"
    masked = "Zenith Labs asks for [EMAIL_1]"
    proxy.upstream.on("scn-count", lambda rec: Reply([b'{"input_tokens": 17}'],
                      headers={"Content-Type": "application/json"}, framing="length"))  # fmt: skip
    batch = {"id": "msgbatch_01", "type": "message_batch", "processing_status": "in_progress",
             "request_counts": {"processing": 1, "succeeded": 0, "errored": 0, "canceled": 0,
                                "expired": 0},
             "ended_at": None, "created_at": "2026-01-01T00:00:00Z",
             "expires_at": "2026-01-02T00:00:00Z", "archived_at": None,
             "cancel_initiated_at": None, "results_url": None}  # fmt: skip
    proxy.upstream.on("/v1/messages/batches", lambda rec: Reply(
        [json.dumps(batch).encode()], headers={"Content-Type": "application/json"},
        framing="length"))  # fmt: skip
    proxy.upstream.on(JSON_SCN, json_handler)
    messages = [{"role": "user", "content": content}]
    with sdk(proxy) as client:
        assert client.messages.count_tokens(model="scn-count", messages=messages).input_tokens == 17
        params = {"model": "scn-batch", "max_tokens": 5, "messages": messages}
        got = client.messages.batches.create(requests=[{"custom_id": "req-1", "params": params}])
        assert got.id == "msgbatch_01"
        beta = client.beta.messages.create(model=JSON_SCN, max_tokens=5, messages=messages)
    with sdk(proxy, prefix="/anthropic") as client:
        prefixed = client.messages.create(model=JSON_SCN, max_tokens=5, messages=messages)
    count = proxy.upstream.for_model("scn-count")[-1]
    assert count.path == "/v1/messages/count_tokens"
    assert count.json["messages"][0]["content"] == masked
    batch_rec = proxy.upstream.for_path("/v1/messages/batches")[-1]
    params = batch_rec.json["requests"][0]["params"]
    assert params["messages"][0]["content"] == masked
    assert batch_rec.json["requests"][0]["custom_id"] == "req-1"
    beta_rec, prefixed_rec = proxy.upstream.for_model(JSON_SCN)[-2:]
    assert beta_rec.path.startswith("/v1/messages")
    assert prefixed_rec.path == "/anthropic/v1/messages"
    for rec in (beta_rec, prefixed_rec):
        assert rec.json["messages"][0]["content"] == masked
    for msg in (beta, prefixed):
        # one e-mail in the request: the scenario's second placeholder falls back to [EMAIL_1]
        assert msg.content[1].text == (
            f"Acme Corp mailed {BOB} and {BOB}; [EMAIL_9] stays. Done: session_id."
        )
        assert msg.content[2].name == "acme_lookup"


def test_a_batch_requests_own_ids_are_masked_and_its_results_read_with_them(proxy: Proxy) -> None:
    """A batch request's custom_id is the client's words ("Acme Corp-7"), not an id the API
    assigned: masked in the batch (it left as written), and the results the SDK reads
    (batches.results: the batch, then its results_url, JSON lines) carry it restored, so
    the client matches each result to its request as before."""
    batch = {"id": "msgbatch_02", "type": "message_batch", "processing_status": "ended",
             "request_counts": {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 0},
             "ended_at": "2026-01-01T00:00:00Z", "created_at": "2026-01-01T00:00:00Z",
             "expires_at": "2026-01-02T00:00:00Z", "archived_at": None, "cancel_initiated_at": None,
             "results_url": proxy.base_url + "/v1/messages/batches/msgbatch_02/results"}  # fmt: skip

    def results(rec: Recorded) -> Reply:
        sent = json.loads(proxy.upstream.for_path("/v1/messages/batches")[-1].body)["requests"]
        lines = [{"custom_id": r["custom_id"], "result": {"type": "succeeded", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "scn-batch", "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": f"done for Zenith Labs #{n}"}]}}} for n, r in enumerate(sent)]  # fmt: skip
        return Reply(["".join(json.dumps(x) + "\n" for x in lines).encode()],
                     headers={"Content-Type": "application/binary"}, framing="length")  # fmt: skip

    json_headers = {"Content-Type": "application/json"}
    reply = lambda rec: Reply([json.dumps(batch).encode()], headers=json_headers, framing="length")  # noqa: E731
    proxy.upstream.on("/v1/messages/batches", reply)
    proxy.upstream.on("/v1/messages/batches/msgbatch_02", reply)
    proxy.upstream.on("/v1/messages/batches/msgbatch_02/results", results)
    ids = ["Acme Corp-7", "req-2"]
    params = {"model": "scn-batch", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi from Acme Corp"}]}
    with sdk(proxy) as client:
        client.messages.batches.create(requests=[{"custom_id": i, "params": params} for i in ids])
        got = list(client.messages.batches.results("msgbatch_02"))
    sent = proxy.upstream.for_path("/v1/messages/batches")[-1]
    assert "Acme Corp" not in sent.body.decode()
    assert [r["custom_id"] for r in sent.json["requests"]] == ["Zenith Labs-7", "req-2"]
    assert [(r.custom_id, r.result.message.content[0].text) for r in got] == [
        ("Acme Corp-7", "done for Acme Corp #0"), ("req-2", "done for Acme Corp #1")]


def test_one_connection_carries_streams_and_bodies_in_turn(proxy: Proxy) -> None:
    """Rewritten streams keep HTTP/1.1 framing intact: the client's pooled connection
    carries the next request without desync (an empty chunk mid-stream would end the body
    early and leave the rest to be read as the next response)."""
    proxy.upstream.on(MAIN, main_handler)
    proxy.upstream.on(JSON_SCN, json_handler)
    connects_before = proxy.mitm.output.count("client connect")
    with sdk(proxy) as client:
        for _ in range(2):
            with client.messages.stream(**MAIN_KW) as stream:
                assert stream.get_final_message().content[1].text == MAIN_EXPECTED_TEXT
            msg = client.messages.create(model=JSON_SCN, max_tokens=5,
                                         messages=[{"role": "user", "content": BOB}])  # fmt: skip
            assert msg.content[2].name == "acme_lookup"
    # the four requests really shared one client connection
    assert proxy.mitm.output.count("client connect") - connects_before == 1, proxy.mitm.output


# -- placeholders belong to their flow -----------------------------------------------------------


def test_concurrent_streams_restore_their_own_placeholders(proxy: Proxy) -> None:
    scn = "scn-slow"

    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        events = [message_start(scn, "msg_s"), block_start(0, {"type": "text", "text": ""}),
                  *text_deltas(0, ["Reply for ", ph[:3], ph[3:6], ph[6:], ": Zenith", " Labs"]),
                  block_stop(0), *message_end("end_turn")]  # fmt: skip
        return Reply(events, headers=sse_headers(), delay=0.02)

    proxy.upstream.on(scn, handler)
    emails = [BOB, ALICE, "carol@corp.example.com"]
    barrier = threading.Barrier(len(emails))

    def one(email: str) -> str:
        with sdk(proxy) as client:
            barrier.wait(10)
            messages = [{"role": "user", "content": f"I am {email}"}]
            with client.messages.stream(model=scn, max_tokens=20, messages=messages) as s:
                return s.get_final_text()

    with ThreadPoolExecutor(len(emails)) as pool:
        results = list(pool.map(one, emails))
    assert results == [f"Reply for {e}: Acme Corp" for e in emails]
    for rec in proxy.upstream.for_model(scn)[-3:]:
        assert placeholder_in(rec) == "[EMAIL_1]"


def test_large_body_masked_off_the_event_loop_while_a_stream_flows(proxy: Proxy) -> None:
    """A body over OFF_LOOP_BYTES is masked in a worker thread: it is masked all the same
    (every original gone, the answer restored with its placeholders), and a stream that
    runs meanwhile on the same proxy is restored as usual."""
    from disguiselib.pipeline import OFF_LOOP_BYTES

    scn = "scn-big"
    proxy.upstream.on(scn, json_handler)

    def slow(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        events = [message_start("scn-big-stream", "msg_b"), block_start(0, {"type": "text", "text": ""}),
                  *text_deltas(0, ["Reply for ", ph[:3], ph[3:6], ph[6:], ": Zenith", " Labs"]),
                  block_stop(0), *message_end("end_turn")]  # fmt: skip
        return Reply(events, headers=sse_headers(), delay=0.02)

    proxy.upstream.on("scn-big-stream", slow)
    filler = "def f(x):\n    return x  # Acme Corp\n" * (OFF_LOOP_BYTES // 10)
    content = f"Acme Corp: write to {ALICE} and {BOB}.\n" + filler + f"\nalso {BOB}"
    assert len(content) > 2 * OFF_LOOP_BYTES

    def stream() -> str:
        with sdk(proxy) as client:
            messages = [{"role": "user", "content": f"I am {BOB}"}]
            with client.messages.stream(model="scn-big-stream", max_tokens=20, messages=messages) as s:
                return s.get_final_text()

    with ThreadPoolExecutor(2) as pool:
        concurrent = pool.submit(stream)
        with sdk(proxy) as client:
            msg = client.messages.create(model=scn, max_tokens=100,
                                         messages=[{"role": "user", "content": content}])  # fmt: skip
        assert concurrent.result(30) == f"Reply for {BOB}: Acme Corp"
    rec = proxy.upstream.for_model(scn)[-1]
    sent = rec.body.decode()
    assert len(rec.body) > 2 * OFF_LOOP_BYTES
    assert ALICE not in sent and BOB not in sent and "Acme Corp" not in sent
    assert (placeholder_in(rec, 0), placeholder_in(rec, 1)) == ("[EMAIL_1]", "[EMAIL_2]")
    assert msg.content[1].text == f"Acme Corp mailed {BOB} and {ALICE}; [EMAIL_9] stays. Done: session_id."


# -- f. a bad mapping set stops mitmdump --------------------------------------------------------

BAD_MAPPINGS = {
    "quote-in-disguise": ({"literals": {"Acme Corp": 'Zen"ith'}}, ["literal #1", "quote"]),
    "chain": ({"literals": {"Acme Corp": "Zenith Labs", "Zenith": "Nova"}},
              ["literal #1", "contains the original"]),
    "shared-disguise": ({"literals": {"Acme Corp": "Zenith Labs", "Acme Inc": "Zenith Labs"}},
                        ["literal #2", "shared"]),
    "empty-match": ({"patterns": [{"name": "EMAIL", "regex": "[a-z]*"}]},
                    ["pattern #1", "empty string"]),
    "bad-regex": ({"strip": [{"regex": "[[unclosed"}]}, ["strip #1", "does not compile"]),
    # the [ opens on line 2; the parser gives up at the end (line 3): line 2 is named (issue 15)
    "malformed-yaml": ("literals:\n  Acme Corp: [Zenith Labs\n", ["malformed YAML at line 2", "[list]"]),
    # "Acme Corp Inc" would go out as "Zenith Labs Inc", the original of literal #2 (G6)
    "joined": ({"literals": {"Acme Corp": "Zenith Labs", "Labs Inc": "Qorvexq"}},
               ["literal #1", "spells the original of", "literal #2"]),
    # Bobby and the first e-mail would share [EMAIL_1] (G7)
    "placeholder-shaped": ({"literals": {"Bobby": "[EMAIL_1]"}, "patterns": [{"name": "EMAIL", "regex": "[a-z]+@[a-z.]+"}]},
                           ["literal #1", "holds a placeholder of", "pattern #1 (EMAIL)"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_MAPPINGS))
def test_bad_mapping_stops_mitmdump(tmp_path: Path, case: str) -> None:
    doc, needles = BAD_MAPPINGS[case]
    mpath = tmp_path / f"{case}.yaml"
    mpath.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc), encoding="utf-8")
    rc, out = run_mitmdump(mitmdump_cmd(9, tmp_path / "conf", mpath), timeout=20)
    assert rc is not None, f"mitmdump kept running with a bad mapping set:\n{out}"
    assert rc != 0, out
    assert str(mpath) in out, out
    for n in needles:
        assert n in out, f"{n!r} not in:\n{out}"
    assert "Acme Corp" not in out, "the error message quotes an original"
    for original in doc.get("literals", {}) if isinstance(doc, dict) else ():
        assert original not in out, "the error message quotes an original"  # G4: "Zenith" of the chain


# -- logs ---------------------------------------------------------------------------------------


def test_log_holds_no_originals_and_no_addon_errors(proxy: Proxy) -> None:
    # one more masked request and one refused one, so the log has something to show
    proxy.upstream.on(CUT, lambda rec: Reply([b'{"type":"message","content":[]}'],
                                             headers={"Content-Type": "application/json"},
                                             framing="length"))  # fmt: skip
    with sdk(proxy) as client:
        messages = [{"role": "user", "content": f"Acme Corp {BOB} {WIN}"}]
        client.messages.create(model=CUT, max_tokens=5, messages=messages)
    assert raw_post(proxy, BAD_BODIES["truncated-json"][0])[0] == 400
    out = proxy.mitm.output
    assert "/v1/messages" in out  # the flows are logged ...
    for orig in ORIGINALS:
        assert orig not in out, f"{orig!r} in the mitmdump log"  # ... without the originals
    for bad in ("Traceback", "Addon error", "has crashed", "stream could not be reversed"):
        assert bad not in out, f"{bad!r} in the mitmdump log:\n{out}"


def test_undecodable_body_is_refused_without_quoting_it(proxy: Proxy) -> None:
    # contract §6: originals never appear in logs. mitmproxy's decode error text starts
    # with repr(body)[:10] ("... when decoding b'Acme Cor with 'gzip' ..."): the refusal
    # must not pass it on, neither in the log nor in the client's 400.
    status, _, data = raw_post(proxy, b"Acme Corp private", {"content-encoding": "gzip"})
    assert status == 400
    assert b"Acme Cor" not in data
    assert "Acme Cor" not in proxy.mitm.output
