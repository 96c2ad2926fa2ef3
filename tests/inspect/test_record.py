"""What is kept of a flow (inspect/record.py): bounded copies, serializable sides, the Tee
around a stream callable, and the summary's wording."""

from __future__ import annotations

import ast
import copy
import json
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mitmproxy.io import tnetstring

from disguiselib.inspect import record, tee
from disguiselib.inspect.record import Kept, Side, Tee, counts_text, is_credential, side, summary_text
from disguiselib.rules.rules import LITERALS


def test_kept_keeps_the_first_limit_bytes_and_counts_them_all() -> None:
    k = Kept(5)
    for piece in (b"ab", b"cde", b"fg", b""):
        k.add(piece)
    assert k.buf == b"abcde" and k.size == 7 and k.cut and k.kept == 5
    k2 = Kept(5)
    k2.add(b"abcde")
    assert k2.buf == b"abcde" and not k2.cut
    assert Kept(0).buf == b"" and not Kept(3).cut
    none = Kept(0)
    none.add(b"x")
    assert none.buf == b"" and none.cut and none.size == 1


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(0, 4000), st.integers(1, 700))
def test_kept_holds_less_than_a_chunk_as_it_came_and_every_reader_gets_each_byte(pieces, limit, chunk) -> None:
    """A side under way is compressed chunk by chunk: what it holds as it came stays
    under CHUNK bytes, and the body comes back exact (whole, and held by a Side: read,
    copied as mitmproxy saves a flow, serialized)."""
    with mock.patch.object(tee, "CHUNK", chunk), mock.patch.object(tee, "LONG", 3 * chunk):
        k = Kept(limit)
        for p in pieces:
            k.add(p)
            # the pieces since the last chunk, by reference (a long side's chunks are longer)
            assert k.npend == sum(map(len, k.pending)) < (chunk if k.kept < 3 * chunk else tee.LONG_CHUNK)
        whole = b"".join(pieces)
        s = side(k.zipped(), k.size, cut=k.cut)
        assert s["content"] == k.buf == whole[:limit] and k.size == len(whole) and k.cut == (len(whole) > limit)
    plain = {"content": whole[:limit], "size": len(whole), "cut": len(whole) > limit}
    assert s == plain and dict(s) == plain and copy.deepcopy({"x": s})["x"] == plain
    assert tnetstring.loads(tnetstring.dumps({"x": s})) == {"x": plain}
    k.add(b"more")  # read, and more came
    assert k.buf == (whole + b"more")[:limit] and k.size == len(whole) + 4


@given(st.lists(st.lists(st.binary(min_size=1, max_size=300), max_size=20), max_size=12), st.integers(1, 700))
def test_kept_takes_a_list_of_pieces_as_it_adds_them_one_by_one(batches, chunk) -> None:
    """Kept.took (the compiled read's queue, not joined): the same bytes, size and room as
    each piece added, and what it holds as it came stays under a chunk."""
    with mock.patch.object(tee, "CHUNK", chunk), mock.patch.object(tee, "LONG", 3 * chunk):
        one, many = Kept(1 << 20), Kept(1 << 20)
        for b in batches:
            for p in b:
                one.add(p)
            many.took(list(b), sum(map(len, b)))
            assert many.npend == sum(map(len, many.pending)) < (chunk if many.kept < 3 * chunk else tee.LONG_CHUNK)
            assert (many.size, many.kept, many.cut) == (one.size, one.kept, one.cut)
        assert many.buf == one.buf == b"".join(p for b in batches for p in b)


def test_a_long_side_is_compressed_in_longer_chunks() -> None:
    """A zstd call costs ~2.5 us whatever its size: a side past LONG bytes (a long
    stream) is compressed LONG_CHUNK at a time (0.37 -> 0.17 us a delta of bench (a)'s
    Chat stream, and fewer bytes held), a short one CHUNK at a time (what a burst of
    short streams holds under way stays as it was)."""
    from disguiselib.inspect.packing import unpack

    events = [b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(12_000)]
    k = Kept(1 << 24)
    for e in events:
        k.add(e)
    sizes = [len(unpack(c)) for c in k.chunks]
    short = [n for n in sizes if n < tee.LONG_CHUNK]
    assert sum(short) >= tee.LONG - tee.CHUNK and all(tee.CHUNK <= n < tee.CHUNK + 60 for n in short)
    assert len(sizes) - len(short) >= 20 and all(tee.LONG_CHUNK <= n < tee.LONG_CHUNK + 60 for n in sizes[len(short) :])
    assert k.npend < tee.LONG_CHUNK and k.buf == b"".join(events)


def test_a_side_is_serializable_metadata() -> None:
    s = side(b"body", headers=[("a", "1")], status=200)
    assert s == {"content": b"body", "size": 4, "cut": False, "headers": [["a", "1"]], "status": 200}
    assert tnetstring.loads(tnetstring.dumps(s)) == s
    assert side(b"bo", 10, cut=True)["size"] == 10


def test_a_sides_headers_held_as_the_flows_pairs_read_as_lists_of_str() -> None:
    fields = ((b"Content-Type", b"application/json"), (b"Content-Length", b"12"), (b"Authorization", b"Bearer x"),
              (b"X-Name", "caf\u00e9".encode()), (b"X-Raw", b"\xff"))  # fmt: skip
    p = record.pairs(fields, drop=b"content-length", hide=True)
    assert p[0] is fields[0] and p[2] is fields[3] and p[1] == (b"Authorization", b"(not kept)")
    s = side(b"body", headers=p, status=200)
    plain = {"content": b"body", "size": 4, "cut": False, "status": 200,
             "headers": [["Content-Type", "application/json"], ["Authorization", "(not kept)"], ["X-Name", "caf\u00e9"],
                         ["X-Raw", "\udcff"]]}  # fmt: skip
    assert s == plain and s["headers"] == plain["headers"] and s.get("headers") == plain["headers"]
    assert dict(s) == plain and copy.deepcopy({"x": s})["x"] == plain and ast.literal_eval(repr(s)) == plain
    assert json.loads(json.dumps(s["headers"][:3])) == plain["headers"][:3]
    t = side(b"", headers=record.pairs(fields[:4]))  # (a lone surrogate is no more serializable than before)
    assert tnetstring.loads(tnetstring.dumps({"x": t}))["x"]["headers"] == [[k.decode(), v.decode()] for k, v in fields[:4]]
    assert record.pairs(fields) == fields and type(record.pairs(fields)) is record.Pairs
    # held: the flow's pairs and one tuple of them (the lists of str held ~2 KiB a flow)
    import sys

    assert sys.getsizeof(dict.__getitem__(s, "headers")) < 100


def _stored(s: dict) -> bytes:
    """What a side holds in memory for its body (past Side's reading)."""
    return dict.__getitem__(s, "content")


@given(st.binary(max_size=3000) | st.text(max_size=2000).map(str.encode))
def test_a_side_holds_its_body_compressed_and_every_read_gives_it_back(body: bytes) -> None:
    s = side(body, headers=[("a", "1")], status=200)
    plain = {"content": body, "size": len(body), "cut": False, "headers": [["a", "1"]], "status": 200}
    assert s["content"] == body and s.get("content") == body and s.get("nope", 1) == 1
    assert dict(s) == {**s} == s.copy() == plain and s == plain and not s != plain
    assert dict(s.items()) == plain and sorted(map(repr, s.values())) == sorted(map(repr, plain.values()))
    assert ast.literal_eval(repr(s)) == plain
    # mitmproxy copies metadata (deepcopy) before it saves a flow, and serializes it
    c = copy.deepcopy({"x": s})["x"]
    assert type(c) is dict and c == plain
    assert tnetstring.loads(tnetstring.dumps({"x": s})) == {"x": plain}
    assert json.loads(json.dumps(Side(n=1, m=[2]))) == {"n": 1, "m": [2]}
    if body:
        assert _stored(s) != body  # held compressed, not as it came
    assert s.pop("content") == body and "content" not in s
    s.update(content=body)
    assert s["content"] == body and s.setdefault("content", b"x") == body


def test_a_side_of_a_repetitive_stream_is_held_small() -> None:
    body = b"".join(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                    b'"delta":{"type":"text_delta","text":"w%d "}}\n\n' % i for i in range(2000))  # fmt: skip
    s = side(body)
    assert s["content"] == body and len(_stored(s)) * 8 < len(body)


def test_a_side_can_share_the_flows_own_body() -> None:
    body = b"one body for both sides"
    s = side(body, compress=False)
    assert _stored(s) is body and s["content"] is body and isinstance(s, Side)


def test_credential_header_names() -> None:
    for n in ("Authorization", "x-api-key", "Cookie", "OpenAI-Organization", "openai-project", "x-goog-api-key",
              "Proxy-Authorization", "x-session-id"):  # fmt: skip
        assert is_credential(n), n
    for n in ("content-type", "user-agent", "x-request-id", "anthropic-version"):
        assert not is_credential(n), n


class _Inner:
    def __init__(self, outs):
        self.outs = list(outs)
        self.dead = False

    def __call__(self, data: bytes):
        return self.outs.pop(0)


def test_tee_keeps_both_sides_and_never_hands_out_an_empty_piece() -> None:
    t = Tee(_Inner([b"A", [], [b"", b"B", bytearray(b"C")], b""]), limit=100)
    assert t(b"a") == [b"A"] and t(b"b") == [] and t(b"c") == [b"B", b"C"] and t(b"") == []
    assert t.up.buf == b"abc" and t.down.buf == b"ABC"
    assert all(type(p) is bytes for p in t.last)
    assert not t.dead
    t.inner.dead = True
    assert t.dead


@pytest.mark.parametrize(("last", "final"), [
    (b'event: message_stop\ndata: {"type": "message_stop"}\n\n', True),
    (b"data: [DONE]\n\n", True), (b'data: {"type":"response.completed"}\n\n', True),
    (b'data: {"type":"response.failed"}\n\n: comment\n\n', True),
    (b'data: {"text": "say \\"type\\": \\"message_stop\\""}\n\n', False), (b"data: x\n\n", False),
])  # fmt: skip
def test_tee_knows_whether_the_final_event_went_out(last: bytes, final: bool) -> None:
    t = Tee(_Inner([b"data: first\n\n", last]), limit=10)
    t(b"1")
    t(b"2")
    assert t.final_sent is final


def test_counts_and_summary_text() -> None:
    meta = {"api": "anthropic.messages", "masked": 7, "counts": {LITERALS: 4, "EMAIL": 2, "AWS": 1},
            "restored": 5, "stripped": 1}  # fmt: skip
    assert counts_text(meta) == "masked 7 originals (AWS×1, EMAIL×2, literals×4); restored 5 originals; removed 1 strip-rule match"
    assert summary_text(meta) == "disguise anthropic.messages: " + counts_text(meta)
    dry = {"dry_run": True, "counts": {"EMAIL": 1}, "restored": 0}
    assert counts_text(dry) == "would mask 1 original (EMAIL×1); would restore 0 originals"
    failed = {"api": "openai.chat", "masked": 0, "failed": "refused", "end": "client gone", "cut": 8}
    assert summary_text(failed) == ("disguise openai.chat: FAILED CLOSED (refused): masked 0 originals; client gone; "
                                    "kept bodies cut at 8 bytes")  # fmt: skip
    assert summary_text({"end": "completed"}) == "disguise ?: masked 0 originals"


def test_tee_keeps_a_stream_that_went_out_unchanged_once() -> None:
    pieces = [b"data: one\n\n", b"data: two\n\n"]
    t = Tee(lambda d: d, limit=100)
    for p in pieces:
        assert t(p) == [p]
    assert t(b"") == []
    assert t.same and t.down_buf == b"".join(pieces)
    assert t.down_buf is t.up.buf and t.down.buf is t.up.buf  # one copy, the pieces let go
    assert t.down.size == t.up.size and not t.down.cut


@pytest.mark.parametrize("outs", [
    [b"data: one\n\n", b"data: TWO\n\n"],  # a piece changed
    [[], b"data: one\n\ndata: two\n\n"],  # held back, then sent with the next
    [b"data: one\n\n", [b"data: two\n\n", b": more\n\n"]],  # more than came
])  # fmt: skip
def test_tee_keeps_what_the_client_got_when_it_differs(outs) -> None:
    t = Tee(_Inner(outs), limit=100)
    got = [p for d in (b"data: one\n\n", b"data: two\n\n") for p in t(d)]
    assert not t.same and t.down_buf == b"".join(got)


def test_tee_unchanged_but_cut_keeps_both_sides_alike() -> None:
    t = Tee(lambda d: [d], limit=5)
    t(b"abc")
    t(b"defg")
    assert t.down_buf == t.up.buf == b"abcde" and t.down.cut and t.up.cut and t.down.size == 7


# -- the final event of every API (its spec, or its reverser) -------------------------------


def _tee_through(reverser, pieces: list[bytes]) -> Tee:
    from disguiselib.mitm.callables import StreamCall

    t = Tee(StreamCall(reverser), 1 << 20)
    for p in pieces:
        t(p)
    return t


def _gemini_body(finish: bool) -> bytes:
    from google_util import cand, chunk, to_sse

    chunks = [chunk([cand(0, [{"text": "owner Zen"}])]), chunk([cand(0, [{"text": "ith Labs"}])])]
    if finish:
        chunks.append(chunk([cand(0, [{"text": "."}], finish="STOP")]))
    return to_sse(chunks)


def _converse_body(stop: bool) -> bytes:
    from aws_util import converse_frame

    frames = [
        converse_frame("messageStart", {"role": "assistant"}),
        converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "owner Zen"}}),
        converse_frame("contentBlockStop", {"contentBlockIndex": 0}),
    ]
    if stop:
        frames.append(converse_frame("messageStop", {"stopReason": "end_turn"}))
    return b"".join(frames)


@pytest.mark.parametrize("api", ["gemini", "converse"])
def test_the_recorder_sees_the_final_event_of_gemini_and_bedrock(api: str) -> None:
    """The recorder's final event is its API's, as the API's reverser tells it: a Gemini
    stream whose every candidate finished, a Bedrock stream past messageStop (neither
    has a terminal event a byte pattern could name). A stream cut before it is not."""
    from disguiselib.apis.bedrock.stream import ConverseStream
    from disguiselib.apis.google.stream import GeminiStream
    from strategies import PLACEHOLDERS, RULES

    cls, body = (GeminiStream, _gemini_body) if api == "gemini" else (ConverseStream, _converse_body)
    whole = body(True)
    assert _tee_through(cls(RULES.restorer(PLACEHOLDERS)), [whole[:40], whole[40:]]).final_sent
    assert not _tee_through(cls(RULES.restorer(PLACEHOLDERS)), [body(False)]).final_sent


def test_a_large_side_is_compressed_off_the_loop_and_reads_whole_meanwhile(monkeypatch) -> None:
    import threading

    where: list[tuple[int, str]] = []
    real = record.pack

    def compress(data: bytes) -> bytes:
        where.append((len(data), threading.current_thread().name))
        return real(data)

    monkeypatch.setattr(record, "pack", compress)
    body = b"".join(b'data: {"type":"content_block_delta","delta":{"text":"w%d "}}\n\n' % i for i in range(12_000))
    assert len(body) >= record.BACKGROUND
    s = side(body)
    assert s["content"] == body  # at once, compressed yet or not
    record.settle(60)
    assert type(_stored(s)) is record._Zipped and len(_stored(s)) * 8 < len(body) and s["content"] == body
    assert where == [(len(body), where[0][1])] and where[0][1].startswith("disguise-capture")  # not the caller's
    side(b"small")
    assert where[-1] == (5, threading.current_thread().name)  # a small one at once: less than a hand-over
    t = side(body)
    t["content"] = b"set anew"  # before the worker is done: the new body stays
    record.settle(60)
    assert t["content"] == b"set anew"


def test_destination_of_a_flow() -> None:
    """Where a request goes, for its credential slots: its host and its Host header's (in
    reverse mode mitmproxy's host is the upstream's), and whether an upstream proxy reads
    it (upstream mode, plain HTTP: where mitmproxy's upstream_auth puts its credential)."""
    from mitmproxy.proxy.mode_specs import ProxyMode
    from mitmproxy.test import tflow

    f = tflow.tflow()
    f.request.host, f.request.headers["host"] = "GenerativeLanguage.googleapis.com", "localhost:8080"
    f.client_conn.proxy_mode = ProxyMode.parse("reverse:https://generativelanguage.googleapis.com")
    d = record.destination(f)
    assert d.hosts == ("generativelanguage.googleapis.com", "localhost") and not d.via_proxy
    f.client_conn.proxy_mode = ProxyMode.parse("upstream:http://proxy.example:3128")
    f.request.scheme = "http"
    assert record.destination(f).via_proxy
    f.request.scheme = "https"  # tunnelled through the proxy: the server reads the request
    assert not record.destination(f).via_proxy
    f.client_conn.proxy_mode = ProxyMode.parse("regular")
    f.request.scheme = "http"
    assert not record.destination(f).via_proxy


@pytest.mark.parametrize("size", [0, 100, 200_000])
def test_a_digest_in_the_sides_is_read_as_its_string_by_every_reader(size: int) -> None:
    """The capture's upstream_request_sha256 (record.Digest: made once the request has
    left, or by its first reader) reads as the body's SHA-256 whatever reads it: mitmproxy
    saving the flow (deepcopy, tnetstring), a flow's copy, replay's `get`, the views."""
    import hashlib
    import pickle

    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    want = hashlib.sha256(body).hexdigest()
    for read in (
        lambda s: s["upstream_request_sha256"],
        lambda s: s.get("upstream_request_sha256"),
        lambda s: dict(s)["upstream_request_sha256"],
        lambda s: {**s}["upstream_request_sha256"],
        lambda s: dict(s.items())["upstream_request_sha256"],
        lambda s: [v for v in s.values() if isinstance(v, str)][0],
        lambda s: ast.literal_eval(repr(s))["upstream_request_sha256"],
        lambda s: copy.deepcopy({"x": s})["x"]["upstream_request_sha256"],
        lambda s: tnetstring.loads(tnetstring.dumps({"x": s}))["x"]["upstream_request_sha256"],
        lambda s: json.loads(json.dumps(s))["upstream_request_sha256"],
        lambda s: pickle.loads(pickle.dumps(s))["upstream_request_sha256"],
        lambda s: s.pop("upstream_request_sha256"),
    ):
        sides = Side(upstream_request_sha256=record.Digest(body), n=1)
        assert read(sides) == want
        assert sides == {"upstream_request_sha256": want, "n": 1} or "upstream_request_sha256" not in sides
    assert type(copy.deepcopy({"x": Side(d=record.Digest(body))})["x"]) is dict
