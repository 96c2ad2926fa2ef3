"""A finished stream's client body held compressed on flow.response (inspect/held.py,
issue 29): held in far fewer bytes than it has, and every reader — raw_content, content,
the contentview, the audit's record, flow.copy(), a saved flow file — gets the very bytes
the client got, with the headers it got."""

from __future__ import annotations

import io as _io
import zlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import http, io
from mitmproxy.io import tnetstring
from mitmproxy.test import tflow, tutils

from anthropic_util import build_stream
from disguiselib.inspect import flowfile, held, record
from views_util import adapter, registered, shown, through

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
PROMPT = b'{"model": "m", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "Acme Corp, bob@corp.example.com"}]}'


def saved(f) -> bytes:
    buf = _io.BytesIO()
    io.FlowWriter(buf).add(f)
    return buf.getvalue()


def read_back(data: bytes):
    [g] = list(io.FlowReader(_io.BytesIO(data)).stream())
    return g


def long_stream():
    """A restored stream of a few hundred deltas (disguises split across them): what a
    finished flow of the burst holds."""
    deltas = ["Zen", "ith Labs writes to [EMA", "IL_1] about the launch plan. "] * 120
    return build_stream([("text", deltas)])


def test_a_finished_streams_client_body_is_held_compressed_and_read_back_exact_by_every_reader(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        got: list[bytes] = []
        f = through(a, "/v1/messages", "api.anthropic.com", PROMPT, long_stream(), "text/event-stream", 97, got)
        client = b"".join(got)
        assert b"Acme Corp" in client and b"Zenith Labs" not in client and b"bob@corp.example.com" in client
        assert f.response.raw_content == client
        # held compressed: a fraction of the body, in the chunks the Tee compressed as it streamed
        assert held.is_held(f.response)
        body = vars(f.response.data)["content"]
        assert type(body) is record._Chunks and sum(map(len, body)) * 4 < len(client)
        headers = f.response.headers.fields
        assert "content-encoding" not in f.response.headers  # nothing of ours on the headers the client got
        # every reader: the same bytes, the same headers
        assert f.response.content == client and f.response.get_text() == client.decode()
        assert f.response.get_state()["content"] == client and f.copy().response.raw_content == client
        assert flowfile.record(1, f).received == client
        file = saved(f)
        g = read_back(file)
        assert g.response.raw_content == client and g.response.headers.fields == headers
        assert type(g.response.data) is http.ResponseData
        assert shown(f, f.response, "Disguise") == shown(g, g.response, "Disguise")  # the view, live and from the file
        # the file is byte for byte what a plain response with the same body writes
        f.response = f.response.copy()
        assert type(f.response.data) is http.ResponseData and f.response.raw_content == client
        assert saved(f) == file


def test_writing_the_body_makes_the_data_plain_again() -> None:
    r = tutils.tresp(content=None)
    held.hold(r, record._Chunks([zlib.compress(b"abc"), zlib.compress(b"def")]))
    assert held.is_held(r) and r.raw_content == b"abcdef"
    keys = list(vars(r.data))
    r.content = b"new"
    assert type(r.data) is http.ResponseData and r.raw_content == b"new" and list(vars(r.data)) == keys
    held.hold(r, record._Chunks([zlib.compress(b"x")]))
    r.set_state(tutils.tresp(content=b"from a state").get_state())
    assert type(r.data) is http.ResponseData and r.raw_content == b"from a state"
    held.hold(r, record._Chunks())  # nothing went out: an empty body, held as it is
    assert type(r.data) is http.ResponseData and r.raw_content == b""


def test_a_held_body_read_twice_in_one_turn_of_the_loop_is_decompressed_once() -> None:
    """mitmdump's flow line reads raw_content twice in one hook: the body is decompressed
    once, kept until that turn of the event loop ends, never past it; a body written or
    held again in the turn is read as it is then."""
    import asyncio
    from unittest import mock

    from disguiselib.inspect import packing

    async def turn() -> None:
        r = tutils.tresp(content=None)
        held.hold(r, record._Chunks([zlib.compress(b"abc"), zlib.compress(b"def")]))
        with mock.patch.object(packing, "unpack", side_effect=packing.unpack) as unpack:
            assert r.raw_content == b"abcdef" and len(r.raw_content) == 6 and r.content == b"abcdef"
        assert unpack.call_count == 2  # its two chunks, once
        held.hold(r, record._Chunks([zlib.compress(b"xyz")]))
        assert r.raw_content == b"xyz"
        r.content = b"new"
        assert r.raw_content == b"new"
        held.hold(r, record._Chunks([zlib.compress(b"again")]))
        assert r.raw_content == b"again" and held._turn
        await asyncio.sleep(0)
        assert not held._turn  # the turn ended: nothing kept

    asyncio.run(turn())
    r = tutils.tresp(content=None)
    held.hold(r, record._Chunks([zlib.compress(b"off the loop")]))
    assert r.raw_content == b"off the loop" and not held._turn


def test_only_the_body_read_last_is_kept_in_a_turn_of_the_loop() -> None:
    """One turn of the loop can end many streams, each one's body read for its flow line:
    only the one read last is kept (a burst's peak memory), and a body read again after
    another is decompressed again, exact."""
    import asyncio

    async def turn() -> None:
        rs = [tutils.tresp(content=None) for _ in range(3)]
        for i, r in enumerate(rs):
            held.hold(r, record._Chunks([zlib.compress(b"body %d" % i)]))
        for i, r in enumerate(rs):
            assert r.raw_content == b"body %d" % i
            assert list(held._turn) == [id(r.data)]  # this one, no other
        assert rs[0].raw_content == b"body 0" and list(held._turn) == [id(rs[0].data)]
        await asyncio.sleep(0)
        assert not held._turn

    asyncio.run(turn())


def test_a_held_body_equals_a_plain_one_both_ways() -> None:
    plain = tutils.tresp(content=b"abcdef")
    r = tutils.tresp(content=b"abcdef")
    held.hold(r, record._Chunks([zlib.compress(b"abc"), zlib.compress(b"def")]))
    assert r.data == plain.data and plain.data == r.data and not (r.data != plain.data)
    other = tutils.tresp(content=b"abcdeX")
    assert r.data != other.data and other.data != r.data
    assert repr(r.data).partition("(")[2] == repr(plain.data).partition("(")[2]  # the body as it came


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 700))
def test_a_held_body_is_saved_byte_for_byte_as_the_plain_one(body: bytes, chunk: int) -> None:
    k = record.Kept(1 << 20)
    for i in range(0, len(body), chunk):
        k.add(body[i : i + chunk])
    f = tflow.tflow(resp=True)
    f.response.raw_content = b""
    plain = f.response.copy()
    held.hold(f.response, k.zipped())
    plain.raw_content = body
    assert f.response.raw_content == body and held.is_held(f.response) == bool(body)
    assert tnetstring.dumps(f.response.get_state()) == tnetstring.dumps(plain.get_state())  # what a file holds
    assert read_back(saved(f)).response.raw_content == body
