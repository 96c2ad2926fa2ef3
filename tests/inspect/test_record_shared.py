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


def _client_side(body: bytes) -> record.Side:
    """body as the Inspector keeps a client request: held back, compressed once it left."""
    later: list = []
    s = side(body, headers=[("content-type", "application/json")], later=later)
    record.compress_held(later)
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
            assert [r() for r in record._recent] == ([] if off == "shared" else [s])
            _reads_back(s, bodies[1])


def test_a_side_is_compressed_whole_when_its_pieces_cannot_be_made(monkeypatch) -> None:
    """Fail closed: anything wrong in taking or making pieces, the side is one frame as any
    other side's, and reads back; it is no recent side for the next turn to share."""

    def broken(body: bytes, like: object = ()) -> tuple:
        raise ValueError("broken")

    bodies = _conversation(random.Random(31), 2, 60_000)
    with _capture():
        _client_side(bodies[0])
        monkeypatch.setattr(record, "chunked", broken)
        s = _client_side(bodies[1])
        assert type(dict.__getitem__(s, "content")) is record._Zipped and len(record._recent) == 1
        _reads_back(s, bodies[1])


@given(
    st.binary(min_size=1, max_size=300),
    st.lists(st.tuples(st.integers(0, 400), st.binary(max_size=120), st.booleans()), min_size=1, max_size=5),
    st.integers(1, 48),
)
@example(b"abcdefgh", [(8, b"ij", False), (4, b"", False), (0, b"abcd", True)], 4)
@settings(max_examples=150, deadline=None)
def test_every_side_of_a_conversation_reads_back_as_it_came(
    first: bytes, turns: list[tuple[int, bytes, bool]], piece: int
) -> None:
    """Random bodies, each the one before up to some byte and a tail more, random piece
    sizes, sharing taken where it can be and failing (chunked raising) where drawn: each
    side reads back its body, through every way of reading it."""
    real = record.chunked

    def maybe(body: bytes, like: object = ()) -> tuple:
        if fail:
            raise ValueError("drawn")
        return real(body, like)  # type: ignore[arg-type]

    with _capture(piece, background=1):
        bodies = [first]
        for k, tail, _ in turns:
            bodies.append(bodies[-1][:k] + tail or b"x")
        fails = [False] + [f for _, _, f in turns]
        sides = []
        for body, fail in zip(bodies, fails, strict=True):
            record.chunked = maybe  # type: ignore[assignment]
            try:
                sides.append(_client_side(body))
            finally:
                record.chunked = real
            held = dict.__getitem__(sides[-1], "content")
            assert type(held) is (record._Zipped if fail else record._Chunks)
        for s, body in zip(sides, bodies, strict=True):
            _reads_back(s, body)
