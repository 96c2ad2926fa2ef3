"""A large client side's pieces shared with a recent side's (inspect/record.py's _recent,
packing.chunked): a conversation's next turn compresses only its new part, and every
way of reading a side gives its body back as it came."""

from __future__ import annotations

import ast
import contextlib
import copy
import gc
import json
import random
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mitmproxy.io import tnetstring

from disguiselib.inspect import packing, record
from disguiselib.inspect.record import side


@contextlib.contextmanager
def _capture(piece: int | None = None, background: int | None = None) -> Iterator[list[int]]:
    """No recent side of another test's; packing.PIECE and record.BACKGROUND as given; the
    sizes packing.pack is called with meanwhile."""
    record.settle(60)
    packed: list[int] = []
    real = packing.pack
    with pytest.MonkeyPatch.context() as m:
        m.setattr(record, "_recent", [])
        m.setattr(packing, "pack", lambda d, level=packing.LEVEL: packed.append(len(d)) or real(d, level))
        if piece is not None:
            m.setattr(packing, "PIECE", piece)
        if background is not None:
            m.setattr(record, "BACKGROUND", background)
        try:
            yield packed
        finally:
            record.settle(60)


def _client_side(body: bytes, held: bool = False) -> record.Side:
    """body as the Inspector keeps a client request: held back, compressed once it left
    (held: the rule set's turns remember the request by this very object)."""
    later: list = []
    s = side(body, headers=[("content-type", "application/json")], later=later)
    record.compress_held(later, (lambda b: b is body) if held else None)
    record.settle(60)
    return s  # type: ignore[return-value]


def _reads_back(s: record.Side, body: bytes) -> None:
    plain = {"size": len(body), "cut": False, "content": body, "headers": [["content-type", "application/json"]]}
    assert s["content"] == body and s.get("content") == body and dict(s) == {**s} == s.copy() == plain
    assert s == plain and dict(s.items()) == plain and body in list(s.values())
    assert ast.literal_eval(repr(s)) == plain
    c = copy.deepcopy({"x": s})["x"]  # mitmproxy copies metadata before it saves a flow, then serializes it
    assert type(c) is dict and c == plain and tnetstring.loads(tnetstring.dumps({"x": s})) == {"x": plain}


def _conversation(rng: random.Random, turns: int, words: int) -> list[bytes]:
    """A client's requests of one conversation: each the one before with an exchange more."""
    vocab = [f"w{i}" for i in range(3000)]
    msgs: list[dict] = []
    out = []
    for t in range(turns):
        n = words if t == 0 else words // 20
        msgs.append({"role": "user", "content": " ".join(rng.choice(vocab) for _ in range(n))})
        msgs.append({"role": "assistant", "content": " ".join(rng.choice(vocab) for _ in range(n // 2))})
        out.append(json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}, separators=(",", ":")).encode())
    return out


def test_a_next_turn_compresses_only_its_new_part_and_shares_the_rest() -> None:
    """Each turn's side takes the turn before's pieces for its bytes up to where the two
    part, the very objects (held once), and compresses only the piece where they part and
    what follows; each reads back whole."""
    bodies = _conversation(random.Random(29), 4, 60_000)
    assert len(bodies[0]) >= record.BACKGROUND and len(bodies[-1]) - len(bodies[0]) > packing.PIECE
    with _capture() as packed:
        sides = []
        for i, body in enumerate(bodies):
            del packed[:]
            sides.append(_client_side(body))
            held = dict.__getitem__(sides[-1], "content")
            assert type(held) is record._Chunks
            if i == 0:
                assert sum(packed) == len(body)
                continue
            before = dict.__getitem__(sides[-2], "content")
            whole = (len(bodies[i - 1]) - 2) // packing.PIECE  # (the conversation's `]}` ends the one before)
            assert all(x is y for x, y in zip(held[:whole], before, strict=False)) and held[whole] is not before[whole]
            assert sum(packed) == len(body) - whole * packing.PIECE < len(body) // 2
        for s, body in zip(sides, bodies, strict=True):
            _reads_back(s, body)


def test_with_no_recent_side_a_next_turn_is_compressed_whole() -> None:
    """Sharing off (SHARED 0), or the side before let go (held weakly: the registry keeps
    no body alive), a next turn's side is compressed in full: what the sharing saves."""
    bodies = _conversation(random.Random(30), 2, 60_000)
    for off in ("shared", "let go"):
        with _capture() as packed:
            first = _client_side(bodies[0])
            if off == "shared":
                record.SHARED, real = 0, record.SHARED
            else:
                del first
                gc.collect()
            try:
                del packed[:]
                s = _client_side(bodies[1])
            finally:
                if off == "shared":
                    record.SHARED = real
            assert sum(packed) == len(bodies[1]) and type(dict.__getitem__(s, "content")) is record._Chunks
            assert [e.ref() for e in record._recent] == ([] if off == "shared" else [s])
            _reads_back(s, bodies[1])


def test_a_side_is_compressed_whole_when_its_pieces_cannot_be_made(monkeypatch) -> None:
    """Fail closed: anything wrong in taking or making pieces, the side is one frame as any
    other side's, and reads back; it is no recent side for the next turn to share."""

    def broken(body: bytes, *args: object) -> tuple:
        raise ValueError("broken")

    bodies = _conversation(random.Random(31), 2, 60_000)
    with _capture():
        _client_side(bodies[0], True)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(record, "_recent", None)  # (_match breaks: compared with nothing on the loop)
            later: list = []
            t = side(bodies[1], headers=[("content-type", "application/json")], later=later)
        assert later[0][2] is None
        record.compress_held(later)
        record.settle(60)
        _reads_back(t, bodies[1])  # (its pieces, each compared in the capture's thread)
        monkeypatch.setattr(packing, "chunked", broken)
        s = _client_side(bodies[1])
        assert type(dict.__getitem__(s, "content")) is record._Zipped and len(record._recent) == 2
        _reads_back(s, bodies[1])


@given(
    st.binary(min_size=1, max_size=300),
    st.lists(st.tuples(st.integers(0, 400), st.binary(max_size=120), st.booleans()), min_size=1, max_size=5),
    st.integers(1, 48),
    st.lists(st.booleans(), min_size=6, max_size=6),
)
@example(b"abcdefgh", [(8, b"ij", False), (4, b"", False), (0, b"abcd", True)], 4, [True] * 6)
@example(b"abcdefgh", [(8, b"ij", False), (4, b"", False), (0, b"abcd", True)], 4, [False] * 6)
@settings(max_examples=150, deadline=None)
def test_every_side_of_a_conversation_reads_back_as_it_came(
    first: bytes, turns: list[tuple[int, bytes, bool]], piece: int, held: list[bool]
) -> None:
    """Random bodies, each the one before up to some byte and a tail more, random piece
    sizes, each side's body remembered by turns (its pieces compared on the loop) or not
    (decompressed and compared) as drawn, sharing failing (chunked raising) where drawn:
    each side reads back its body, through every way of reading it."""
    real = packing.chunked

    def maybe(body: bytes, *args: object) -> tuple:
        if fail:
            raise ValueError("drawn")
        return real(body, *args)  # type: ignore[arg-type]

    with _capture(piece, background=1):
        bodies = [first]
        for k, tail, _ in turns:
            bodies.append(bodies[-1][:k] + tail or b"x")
        fails = [False] + [f for _, _, f in turns]
        sides = []
        for body, fail, h in zip(bodies, fails, held, strict=False):
            packing.chunked = maybe  # type: ignore[assignment]
            try:
                sides.append(_client_side(body, h))
            finally:
                packing.chunked = real
            kept = dict.__getitem__(sides[-1], "content")
            assert type(kept) is (record._Zipped if fail else record._Chunks)
        for s, body in zip(sides, bodies, strict=True):
            _reads_back(s, body)


def test_a_next_turn_remembered_by_turns_is_compared_on_the_loop_none_decompressed(monkeypatch) -> None:
    """A side whose request turns remember (the very bytes object) holds it while they do:
    the next turn's body is compared with it when its side is made (a memcmp a piece), and
    its pieces are taken with none decompressed; without it, each is decompressed."""
    bodies = _conversation(random.Random(32), 3, 60_000)
    unpacked: list[int] = []
    real = packing.unpack
    monkeypatch.setattr(packing, "unpack", lambda z: unpacked.append(1) or real(z))
    for held in (True, False):
        with _capture() as packed:
            first = _client_side(bodies[0], held)
            assert record._recent[-1].plain is (bodies[0] if held else None)
            del packed[:], unpacked[:]
            s = _client_side(bodies[1], held)
            whole = (len(bodies[0]) - 2) // packing.PIECE
            assert sum(packed) == len(bodies[1]) - whole * packing.PIECE
            assert len(unpacked) == (0 if held else whole + 1)  # (without: the piece where they part too)
            assert all(x is y for x, y in zip(dict.__getitem__(s, "content")[:whole], dict.__getitem__(first, "content"), strict=False))
            _reads_back(s, bodies[1])


def test_an_entry_holds_a_body_and_its_pieces_only_while_turns_remember_it() -> None:
    """While turns remember a request (the very bytes object), its entry holds that body and
    its pieces, its side let go or not (mitmdump lets a finished flow go): the next turn
    still takes them. Once turns let go of it (keep_only, at each masked request), so does
    the entry; an entry without them holds its side weakly, nothing more."""
    bodies = _conversation(random.Random(33), 3, 60_000)
    with _capture() as packed:
        a = _client_side(bodies[0], True)
        pieces = dict.__getitem__(a, "content")
        b = _client_side(bodies[1], False)
        assert [(e.plain, e.chunks) for e in record._recent] == [(bodies[0], pieces), (None, None)]
        del a, b
        gc.collect()
        assert [e.ref() for e in record._recent] == [None, None] and record._recent[0].chunks is pieces
        del packed[:]
        s = _client_side(bodies[1], True)  # the turn after a's, a let go
        whole = (len(bodies[0]) - 2) // packing.PIECE
        assert all(x is y for x, y in zip(dict.__getitem__(s, "content")[:whole], pieces, strict=False))
        assert sum(packed) == len(bodies[1]) - whole * packing.PIECE
        assert [e.plain for e in record._recent] == [bodies[0], bodies[1]]  # (b's entry: nothing held, gone)
        record.keep_only(lambda x: x is bodies[1])
        assert [(e.plain, e.chunks) for e in record._recent][0] == (None, None) and record._recent[1].plain is bodies[1]
        _reads_back(s, bodies[1])


def test_remembered_tells_the_very_object_turns_hold() -> None:
    from types import SimpleNamespace

    from disguiselib import turns

    body = b"x" * 10
    store = turns.Turns()
    store.turns = [SimpleNamespace(raw=body)]  # type: ignore[list-item]
    rules = SimpleNamespace(found=SimpleNamespace(turns=store))
    held = record.remembered(rules)
    assert held(body) and not held(bytes(bytearray(body))) and not record.remembered(None)(body)


MAPPING = "literals:\n  Acme Corp: Zenith Labs\n"


def test_through_the_addon_a_next_turn_shares_the_pieces_turns_let_it_compare(tmp_path, monkeypatch) -> None:
    """Through the hooks (masked in a thread): the capture's entry holds the very body the
    rule set remembers its request by, and the next turn's side, compared with it on the
    loop, takes the turn before's pieces with none decompressed."""
    from mitmproxy import ctx
    from mitmproxy.test import taddons, tflow, tutils

    from disguiselib.inspect.record import SIDES
    from disguiselib.mitm.addon import Disguise

    unpacked: list[int] = []
    real = packing.unpack
    monkeypatch.setattr(packing, "unpack", lambda z: unpacked.append(1) or real(z))
    likes: list = []  # what the cut told the capture: the turn before's body, and how much of it is known
    real_match = record._match
    monkeypatch.setattr(record, "_match", lambda b, like=None: likes.append(like) or real_match(b, like))
    (tmp_path / "m.yaml").write_text(MAPPING)
    bodies = _conversation(random.Random(34), 2, 60_000)
    bodies = [b.replace(b"w17 ", b"Acme Corp ") for b in bodies]
    a = Disguise()
    with _capture(), taddons.context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
        ctx.options.update(disguise_offload_bytes=0)  # no masking worker process: in a thread
        sides = []
        for body in bodies:
            f = tflow.tflow()
            f.request.method, f.request.path, f.request.host = "POST", "/v1/messages", "api.anthropic.com"
            f.request.headers["content-type"] = "application/json"
            f.request.content = body
            later = a.request(f)
            if later is not None:
                tctx.master.event_loop.run_until_complete(later)
            assert b"Zenith Labs" in f.request.content
            del unpacked[:]
            f.response = tutils.tresp(content=None)
            f.response.headers["content-type"] = "text/event-stream"
            a.responseheaders(f)
            record.settle(60)
            sides.append(f.metadata[SIDES]["client_request"])
            assert sides[-1]["content"] == body
        # the second turn was cut from the first (turns.py), which turns let go of: so did the capture
        assert [e.plain for e in record._recent] == [None, bodies[1]]
        tctx.master.event_loop.close()
    whole = (len(bodies[0]) - 2) // packing.PIECE
    held = [dict.__getitem__(x, "content") for x in sides]
    assert all(x is y for x, y in zip(held[1][:whole], held[0], strict=False)) and unpacked == []
    # the second's pieces up to where the cut compared (the last message's start) not compared again
    assert likes[0] is None and likes[1][0] is bodies[0] and 0 < likes[1][1] < len(bodies[0])
    assert bodies[1][: likes[1][1]] == bodies[0][: likes[1][1]]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40), st.binary(max_size=40), st.integers(0, 50), st.sampled_from([1, 3, 8]))
def test_a_known_prefix_gives_the_pieces_a_comparison_gives(head: bytes, rest: bytes, n: int, piece: int) -> None:
    """_match told that body begins with n bytes of the turn before's (the very object)
    takes those pieces uncompared, and gives what comparing them gives."""
    before = head + b"x" * 20
    body = head + rest
    n = min(n, len(head))  # (what is known is true: body's first n bytes are before's)
    with _capture(piece=piece):
        record._recent.append(record._Recent.__new__(record._Recent))
        e = record._recent[-1]
        e.ref, e.plain, e.chunks, e.piece = (lambda: None), before, tuple(before[i : i + piece] for i in range(0, len(before), piece)), piece
        # (another object, whatever it claims, is not the entry's: compared)
        assert record._match(body, (before, n)) == record._match(body) == record._match(body, (bytes(bytearray(before)), 50))
