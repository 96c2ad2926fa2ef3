"""A conversation's next turn cut in the proxy's process from a request the masking worker
masked (mitm/offload.py `cut`, turns.adopt): the worker sends back what it remembered of
the request but its bytes, the proxy keeps it with the bytes it sent and got back, and
the next turn is cut in a thread of its own, no hand-off: the same verdict as the full
path. A real worker process."""

from __future__ import annotations

import asyncio
import json

import pytest

from disguiselib import pipeline, turns
from disguiselib.apis.registry import ANTHROPIC_MESSAGES, OPENAI_CHAT
from disguiselib.config import build_config
from disguiselib.mitm.offload import Offload

HEADERS = [("content-type", "application/json")]
PAD = "plain words of a long tool result, nothing to mask in them. " * 1500  # (over turns.MIN_BYTES)


def body(*texts: str) -> bytes:
    messages = [{"role": "user", "content": [{"type": "text", "text": PAD}]}]
    messages += [{"role": "user", "content": [{"type": "text", "text": t}]} for t in texts]
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # type: ignore[index]
    doc = {"model": "m", "messages": messages, "system": "Acme Corp writes", "tools": [], "max_tokens": 9}
    return json.dumps(doc, separators=(",", ":")).encode()


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):  # noqa: ANN201
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    return build_config([str(d / "m.yaml")], True, [])


@pytest.fixture(scope="module")
def off():  # noqa: ANN201
    o = Offload()
    yield o
    o.close()


def chat_body(*texts: str) -> bytes:
    messages = [{"role": "system", "content": "Acme Corp writes"}, {"role": "user", "content": PAD}]
    messages += [{"role": "user", "content": t} for t in texts]
    return json.dumps({"model": "m", "messages": messages, "stream": True}, separators=(",", ":")).encode()


def full(cfg, raw: bytes, api=ANTHROPIC_MESSAGES, path: str = "/v1/messages") -> pipeline.Verdict:  # noqa: ANN001
    turns.ON = False
    try:
        return pipeline.mask_request(api, raw, cfg, path, HEADERS)
    finally:
        turns.ON = True


@pytest.mark.parametrize(("api", "path", "make"), [
    (ANTHROPIC_MESSAGES, "/v1/messages", body), (OPENAI_CHAT, "/v1/chat/completions", chat_body),
], ids=["messages", "chat"])  # fmt: skip
def test_the_next_turn_of_a_body_the_worker_masked_is_cut_here(off, cfg, api, path, make) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    one, two = make("mail bob@corp.example.com"), make("mail bob@corp.example.com", "and x@y.io, Acme Corp")
    assert len(one) >= turns.MIN_BYTES
    first = asyncio.run(off.mask(api, one, cfg, path, HEADERS))
    assert isinstance(first, pipeline.Masked) and first.turn is not None  # (what the worker remembered)
    assert turns.holds(cfg.rules, api)
    got = asyncio.run(Offload.cut(api, two, cfg, path, HEADERS))
    want = full(cfg, two, api, path)
    assert isinstance(got, pipeline.Masked) and isinstance(want, pipeline.Masked)
    assert got.body == want.body and b"x@y.io" not in got.body
    assert list(got.session.placeholders.items()) == list(want.session.placeholders.items())
    assert (got.session.counts, got.session.literals) == (want.session.counts, want.session.literals)
    assert turns.turns_of(cfg.rules).hits == 1  # type: ignore[union-attr]


def test_a_body_that_continues_nothing_remembered_goes_to_the_worker(off, cfg) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    asyncio.run(off.mask(ANTHROPIC_MESSAGES, body("hello"), cfg, "/v1/messages", HEADERS))
    other = body("hello").replace(b'"system":"Acme Corp writes"', b'"system":"another system"')
    assert asyncio.run(Offload.cut(ANTHROPIC_MESSAGES, other, cfg, "/v1/messages", HEADERS)) is None


def test_what_the_worker_sends_back_holds_no_bytes_of_the_body(off, cfg) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    got = asyncio.run(off.mask(ANTHROPIC_MESSAGES, body("hi"), cfg, "/v1/messages", HEADERS))
    light = got.turn  # type: ignore[union-attr]
    kept = turns.turns_of(cfg.rules).turns[-1]  # type: ignore[union-attr]
    assert isinstance(light, turns.Turn) and light.raw == light.masked == b"" and light.disguises is None
    assert kept.disguises is cfg.disguises and kept.raw == body("hi") and kept.masked == got.body  # type: ignore[union-attr]


def test_bytes_that_are_not_the_ones_noted_are_not_kept(cfg) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    got = pipeline.mask_request(ANTHROPIC_MESSAGES, body("hi"), cfg, "/v1/messages", HEADERS)
    assert isinstance(got, pipeline.Masked) and got.turn is not None
    cfg.rules.found.turns = None
    turns.adopt(cfg.rules, got.turn, body("hi", "more"), got.body, cfg.disguises)
    assert turns.turns_of(cfg.rules) is None
    turns.adopt(cfg.rules, got.turn, body("hi"), got.body, cfg.disguises)
    assert turns.holds(cfg.rules, ANTHROPIC_MESSAGES)


def test_a_next_turn_with_a_short_tail_is_cut_on_the_loop_a_longer_one_in_a_thread(off, cfg, monkeypatch) -> None:  # noqa: ANN001
    """issue 29: a next turn whose new elements are at most INLINE_TAIL bytes is cut where
    the request hook runs (1-2 ms: less than a hop to a thread and back costs it), a
    longer one in a thread (the loop never paused longer); the same verdict either way,
    the full path's. A body that continues nothing is found so without a thread."""
    import threading

    from disguiselib.mitm import offload

    where: list[bool] = []
    real = pipeline.cut_request
    monkeypatch.setattr(pipeline, "cut_request", lambda *a: where.append(threading.current_thread() is threading.main_thread()) or real(*a))  # fmt: skip
    short = "and x@y.io, Acme Corp"
    long = short + " and more words" * (offload.INLINE_TAIL // 15)
    for text, on_loop in ((short, True), (long, False)):
        cfg.rules.found.turns = None
        one, two = body("mail bob@corp.example.com"), body("mail bob@corp.example.com", text)
        asyncio.run(off.mask(ANTHROPIC_MESSAGES, one, cfg, "/v1/messages", HEADERS))
        n = turns.tail(cfg.rules, ANTHROPIC_MESSAGES, two, cfg.disguises)
        assert n is not None and (n <= offload.INLINE_TAIL) is on_loop
        got = asyncio.run(Offload.cut(ANTHROPIC_MESSAGES, two, cfg, "/v1/messages", HEADERS))
        want = full(cfg, two)
        assert isinstance(got, pipeline.Masked) and isinstance(want, pipeline.Masked) and got.body == want.body
        assert where[-1] is on_loop
    other = body("hello").replace(b'"system":"Acme Corp writes"', b'"system":"another system"')
    where.clear()
    assert turns.tail(cfg.rules, ANTHROPIC_MESSAGES, other, cfg.disguises) is None
    assert asyncio.run(Offload.cut(ANTHROPIC_MESSAGES, other, cfg, "/v1/messages", HEADERS)) is None and where == []


def test_a_cut_that_fails_to_measure_its_tail_leaves_the_body_to_the_worker(off, cfg, monkeypatch) -> None:  # noqa: ANN001
    """turns.tail runs on the event loop: whatever breaks in it, None (the worker masks
    the body in full), never an exception that refuses the request."""
    cfg.rules.found.turns = None
    one, two = body("mail bob@corp.example.com"), body("mail bob@corp.example.com", "and x@y.io")
    asyncio.run(off.mask(ANTHROPIC_MESSAGES, one, cfg, "/v1/messages", HEADERS))
    assert turns.tail(cfg.rules, ANTHROPIC_MESSAGES, two, cfg.disguises) is not None

    def broken(*a: object) -> None:
        raise IndexError("a bug")

    monkeypatch.setattr(turns, "_cut", broken)
    assert turns.tail(cfg.rules, ANTHROPIC_MESSAGES, two, cfg.disguises) is None
    assert asyncio.run(Offload.cut(ANTHROPIC_MESSAGES, two, cfg, "/v1/messages", HEADERS)) is None
    got = asyncio.run(off.mask(ANTHROPIC_MESSAGES, two, cfg, "/v1/messages", HEADERS))
    assert isinstance(got, pipeline.Masked) and got.body == full(cfg, two).body  # type: ignore[union-attr]


def test_a_next_turn_is_compared_with_the_turn_before_once(off, cfg, monkeypatch) -> None:  # noqa: ANN001
    """issue 29: the cut's search (turns._cut: the 1 MB body against the one remembered)
    is made once, where it is decided whether and where to cut (turns.find), and handed to
    the cut (turns.next_turn's at): on the loop and in a thread alike; the same body."""
    from disguiselib.mitm import offload

    calls: list[int] = []
    real = turns._cut
    monkeypatch.setattr(turns, "_cut", lambda turn, b: calls.append(len(b)) or real(turn, b))
    for text in ("and x@y.io, Acme Corp", "Acme Corp and more words" * (offload.INLINE_TAIL // 20)):
        cfg.rules.found.turns = None
        one, two = body("mail bob@corp.example.com"), body("mail bob@corp.example.com", text)
        asyncio.run(off.mask(ANTHROPIC_MESSAGES, one, cfg, "/v1/messages", HEADERS))
        calls.clear()
        got = asyncio.run(Offload.cut(ANTHROPIC_MESSAGES, two, cfg, "/v1/messages", HEADERS))
        assert calls == [len(two)]
        want = full(cfg, two)
        assert isinstance(got, pipeline.Masked) and isinstance(want, pipeline.Masked) and got.body == want.body
