"""End to end, disguise_fakes: the official anthropic SDK -> a real mitmdump running the
addon with the shipped defaults and `--set disguise_fakes=true --set
disguise_fakes_key=FILE` -> the fake upstream of integration_util.

An e-mail address and an AWS access key id reach the upstream as fakes of the same kind
(not placeholders, not the originals); the same original gets the same fake in a second
request and in a second mitmdump with the same key file, another fake with another key;
the fakes streamed back split into 3-character deltas, and inside a tool_use input, read
as the originals; without the option the placeholders are as before.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from integration_util import MITMDUMP, REPO, FakeUpstream, Recorded, Reply, cut, running_proxy, sse

anthropic = pytest.importorskip("anthropic")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL = "dana.whitfield@northwind-logistics.com"
AWS = "AKIAZ3MPLQW8RT5YUX2B"
PROMPT = f"Write to {EMAIL} about the key {AWS} please."
SEEN = re.compile(r"Write to (\S+) about the key (\S+) please\.")
MODEL = "claude-fakes"


def _events(email: str, key: str) -> list[bytes]:
    """The answer: the disguises the request carried, echoed in 3-character text deltas
    and inside a tool_use input (its JSON cut into 3-character pieces too)."""
    text = f"Sure: {email} and {key}."
    args = json.dumps({"to": email, "key": key})
    return [
        sse({"type": "message_start", "message": {"id": "msg_f", "type": "message", "role": "assistant",
             "model": MODEL, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *[sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i : i + 3]}})
          for i in range(0, len(text), 3)],
        sse({"type": "content_block_stop", "index": 0}),
        sse({"type": "content_block_start", "index": 1,
             "content_block": {"type": "tool_use", "id": "toolu_f", "name": "send", "input": {}}}),
        *[sse({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": args[i : i + 3]}})
          for i in range(0, len(args), 3)],
        sse({"type": "content_block_stop", "index": 1}),
        sse({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 20}}),
        sse({"type": "message_stop"}),
    ]  # fmt: skip


def _handler(rec: Recorded) -> Reply:
    m = SEEN.search(rec.json["messages"][0]["content"])
    assert m is not None
    return Reply(cut(_events(m.group(1), m.group(2)), seed=7),
                 headers={"Content-Type": "text/event-stream; charset=utf-8"})  # fmt: skip


def _ask(base_url: str) -> tuple[str, dict]:
    """One streamed request through the SDK: (the text, the tool_use input) it read."""
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-test", max_retries=0)
    with client.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": PROMPT}]) as s:
        msg = s.get_final_message()
    text = "".join(b.text for b in msg.content if b.type == "text")
    tool = next(b.input for b in msg.content if b.type == "tool_use")
    return text, tool  # type: ignore[return-value]


def _sent(up: FakeUpstream) -> tuple[str, str]:
    """The (e-mail, key) disguises the last request carried upstream."""
    m = SEEN.search(up.for_model(MODEL)[-1].json["messages"][0]["content"])
    assert m is not None
    return m.group(1), m.group(2)


def _session(tmp: Path, key: Path | None, requests: int = 1, *more: str) -> list[tuple[str, str]]:
    tmp.mkdir(parents=True, exist_ok=True)
    extra = ("--set", "disguise_fakes=true", "--set", f"disguise_fakes_key={key}") if key else ()
    extra += more
    out = []
    with FakeUpstream() as up, running_proxy(tmp, {}, *extra, upstream=up) as proxy:
        up.on(MODEL, _handler)
        for _ in range(requests):
            text, tool = _ask(proxy.base_url)
            assert text == f"Sure: {EMAIL} and {AWS}."  # restored from 3-character deltas
            assert tool == {"to": EMAIL, "key": AWS}  # and inside the tool_use input
            out.append(_sent(up))
            raw = up.for_model(MODEL)[-1].body.decode()
            assert EMAIL not in raw and AWS not in raw
    return out


def test_fakes_same_kind_keyed_deterministic_restored(tmp_path: Path) -> None:
    key1, key2 = tmp_path / "k1.key", tmp_path / "k2.key"
    first = _session(tmp_path / "a", key1, requests=2)
    email, key = first[0]
    # same-kind fakes, neither placeholders nor the originals
    assert "[" not in email + key and email != EMAIL and key != AWS
    assert re.fullmatch(r"[a-z][a-z0-9]+@[a-z]+\.example", email)
    assert key.startswith("AKIA") and len(key) == len(AWS) and re.fullmatch(r"[A-Z0-9]+", key)
    assert first[1] == first[0]  # a second request: the same fakes
    assert key1.stat().st_mode & 0o777 == 0o600  # the key file, created once
    assert _session(tmp_path / "b", key1) == [first[0]]  # a second mitmdump, the same key file
    other = _session(tmp_path / "c", key2)[0]
    assert other[0] != email and other[1] != key  # another key, other fakes


def test_without_the_option_nothing_changes(tmp_path: Path) -> None:
    assert _session(tmp_path, None) == [("[EMAIL_1]", "[AWS_ACCESS_KEY_1]")]


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m disguiselib ...` from the checkout (shipped defaults, no key: what a
    session recorded with fakes says of itself is enough)."""
    return subprocess.run([sys.executable, "-m", "disguiselib", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": "addon", "PATH": "/usr/bin:/bin"})  # fmt: skip


def test_audit_share_show_on_a_session_recorded_with_fakes(tmp_path: Path) -> None:
    flows = tmp_path / "session.flows"
    [(email, key)] = _session(tmp_path / "s", tmp_path / "k.key", 1, "-w", str(flows))
    r = _cli("audit", str(flows))
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout + r.stderr  # fakes upstream are no originals
    shared = tmp_path / "shared.flows"
    r = _cli("share", str(flows), str(shared))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("audit", str(shared))
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout + r.stderr
    r = _cli("show", str(flows), "1")
    assert r.returncode == 0, r.stderr
    assert f"⟦{email}⟧" in r.stdout and f"⟦{key}⟧" in r.stdout  # marked like placeholders


HELD = "claude-held"


def _held(rec: Recorded) -> Reply:
    """The answer to the requests below: for a conversation, thinking that names the
    disguise of the first message's address (turn 2: the one its thinking named) and a
    text using it; for a URL or a document, the client's text (decoded) echoed."""
    msgs = rec.json["messages"]
    first = msgs[0]["content"]
    if isinstance(first, list):
        doc = base64.b64decode(first[0]["source"]["data"]).decode()
        blocks = [{"type": "text", "text": f"doc: {doc} | {first[1]['text']}"}]
    elif "://" in first:
        blocks = [{"type": "text", "text": first}]
    else:
        x = first.split()[-1] if len(msgs) == 1 else msgs[1]["content"][0]["thinking"].split()[-1].rstrip(".")
        blocks = [{"type": "thinking", "thinking": f"The address is {x}.", "signature": "c2lnbmF0dXJl"},
                  {"type": "text", "text": f"Writing to {x}"}]  # fmt: skip
    body = {"id": "msg_h", "type": "message", "role": "assistant", "model": HELD, "content": blocks,
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    return Reply([json.dumps(body).encode()], headers={"Content-Type": "application/json"}, framing="length")


def test_disguises_in_thinking_are_ours_and_encoded_ones_the_clients(tmp_path: Path) -> None:
    """Contract §2, §9, through a real mitmdump with fakes: (1) turn 2 sends turn 1 back
    with the answer's thinking (which names the fake): the first message goes upstream
    with the same fake (the same bytes), and the answer's use of it is restored; (2) the
    fake the client wrote percent-encoded in a URL, (3) in a base64 text document, is
    the client's own: the original beside it gets another, and the answer's copy of
    the client's text comes back as the client wrote it."""
    key = tmp_path / "k.key"
    with FakeUpstream() as up, running_proxy(tmp_path, {}, "--set", "disguise_fakes=true", "--set",
                                             f"disguise_fakes_key={key}", upstream=up) as proxy:  # fmt: skip
        up.on(HELD, _held)
        client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sk-test", max_retries=0)

        def ask(messages: list) -> list:
            msg = client.messages.create(model=HELD, max_tokens=64, messages=messages,
                                         thinking={"type": "enabled", "budget_tokens": 1024})  # fmt: skip
            return [b.model_dump(exclude_none=True) for b in msg.content]

        first = {"role": "user", "content": f"my mail is {EMAIL}"}
        blocks = ask([first])
        x = up.for_model(HELD)[-1].json["messages"][0]["content"].split()[-1]
        assert x != EMAIL and "[" not in x and blocks[0]["thinking"] == f"The address is {x}."  # (thinking: as it came)
        blocks = ask([first, {"role": "assistant", "content": blocks}, {"role": "user", "content": "go on"}])
        turns = [r.raw for r in up.for_model(HELD)]
        assert turns[1].startswith(turns[0][: turns[0].index(b"}]") + 1])  # the first message: the same bytes
        assert blocks[1]["text"] == f"Writing to {EMAIL}"
        url = f"see https://crm.test/contact?to={quote(x, safe='')}"
        blocks = ask([{"role": "user", "content": f"{url} and {EMAIL}"}])
        sent = unquote(up.for_model(HELD)[-1].json["messages"][0]["content"])
        assert sent.count(x) == 1 and EMAIL not in sent and blocks[0]["text"] == f"{url} and {EMAIL}"
        doc = {"type": "document", "source": {"type": "base64", "media_type": "text/plain",
                                              "data": base64.b64encode(f"Contact: {x}".encode()).decode()}}  # fmt: skip
        blocks = ask([{"role": "user", "content": [doc, {"type": "text", "text": f"mail {EMAIL}"}]}])
        assert blocks[0]["text"] == f"doc: Contact: {x} | mail {EMAIL}"
        assert up.for_model(HELD)[-1].json["messages"][0]["content"][1]["text"] != f"mail {x}"
