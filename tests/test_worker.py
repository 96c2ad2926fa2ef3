"""The masking worker's side (worker.py), in this process: generations asked for and
built, the waiting body masked with the generation it named, results and exceptions as
plain data, a bug answered by its type. The worker as a process: tests/mitm/test_offload.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from disguiselib import worker
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.config import build_config
from disguiselib.errors import DisguiseError, LeakError, MaskError
from disguiselib.worker import OffloadError

HEADERS = [("content-type", "application/json")]


def _config(tmp: Path):
    path = tmp / "m.yaml"
    path.write_text(yaml.safe_dump({"literals": {"Acme Corp": "Zenith Labs"}}), encoding="utf-8")
    return build_config([str(path)], True, [])


def test_the_worker_side_asks_for_a_generation_it_has_not_built(tmp_path) -> None:
    w = worker.Worker()
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    body = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Acme Corp"}]}'
    assert w.handle(("mask", 7, 1, job), body) == ((worker.NEED, 7), [])
    reply, blobs = w.handle(("build", 7, worker.Spec.of(_config(tmp_path))))
    assert reply[0] == "masked" and reply[1] == 7 and reply[2] == 1  # the waiting body, masked with 7
    assert b"Zenith Labs" in worker.decode(reply[3], blobs, body).body
    assert w.handle(("mask", 8, 2, job), body)[0] == (worker.NEED, 8)


def test_encode_decode_round_trip_of_exceptions() -> None:
    for e in (MaskError("m"), LeakError("l"), KeyError("an original")):
        payload, blobs = worker.encode(e, b"")
        back = worker.decode(payload, blobs, b"")
        if isinstance(e, DisguiseError):
            assert type(back) is type(e) and str(back) == str(e)
        else:  # its text might hold an original: only its type crosses
            assert isinstance(back, OffloadError) and "KeyError" in str(back) and "original" not in str(back)


def test_a_bug_in_the_worker_is_answered_by_its_type_only(monkeypatch) -> None:
    """An exception escaping the worker's handling is answered as an error naming its type
    (the proxy refuses the body), never printed, never its text (it might hold an original)."""
    import threading
    from multiprocessing import Pipe

    def broken(self, msg, raw=b""):
        raise KeyError("Acme Corp")

    monkeypatch.setattr(worker.Worker, "handle", broken)
    ours, theirs = Pipe()
    th = threading.Thread(target=worker.serve, args=(theirs,), daemon=True)
    th.start()
    ours.send(("mask", 3, 1, worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)))
    ours.send_bytes(b"{}")
    assert ours.poll(30)
    assert ours.recv() == ("error", 3, "internal error (KeyError)")
    ours.close()
    th.join(10)


def test_the_worker_builds_its_rules_without_the_streams_trigger_patterns(tmp_path) -> None:
    """The worker masks requests only: its rule sets are built without the streams'
    trigger patterns (with 1,000 literals 12-16 MiB of the worker's idle memory) and mask
    as the proxy's do."""
    import pytest

    cfg = _config(tmp_path)
    built = worker.build(worker.Spec.of(cfg))
    for rules in (built.rules, built.disguises):
        assert rules is not None
        with pytest.raises(TypeError, match="restores no stream"):
            rules.stream_triggers(())
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    body = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Acme Corp"}]}'
    assert worker.mask(built, job, body).body == worker.mask(cfg, job, body).body


def test_a_set_no_stream_is_restored_with_holds_no_automaton_for_restoring_until_asked(tmp_path) -> None:
    """The worker's rule sets and the proxy's literals turned around (streams=False) restore
    no response: the disguises' automata (some 10 MiB at 1,000 literals, each) are built
    only when something asks (disguise_fakes: may a fake stand for an original?), with the
    same answers; the proxy's own set has them from the start (never built at a first
    stream, on the loop). The worker masks as the proxy does."""
    proxy = _config(tmp_path)
    built = worker.build(worker.Spec.of(proxy))
    assert built.disguises is not None and proxy.disguises is not None
    for rules in (built.rules, built.disguises, proxy.disguises):
        assert "_reverse_automata" not in vars(rules) and "_dis_ac" not in vars(rules)
    assert vars(proxy.rules)["_dis_ac"] is not None
    for fake, clean in (("Zenith Labs", False), ("Quux Harbour", True)):
        assert built.rules._fake_clean(fake) is proxy.rules._fake_clean(fake) is clean
    assert vars(built.rules)["_dis_ac"] is not None  # asked: built now
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    body = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Acme Corp and Zenith Labs"}]}'
    assert worker.mask(built, job, body).body == worker.mask(proxy, job, body).body  # type: ignore[attr-defined]


def _streamed(w: worker.Worker, body: bytes, jid: int) -> tuple[object, list[bytes]]:
    """body sent in pieces and ended, as the proxy streams it: the verdict and the bytes
    sent after it."""
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    for i in range(0, len(body), 5):
        w.handle(("chunk", 0, jid), body[i : i + 5])
    answer = w.handle(("end", 1, jid, job, len(body)))
    assert answer is not None
    reply, blobs = answer
    assert reply[0] == "masked" and reply[5] == len(blobs)
    return worker.decode(reply[3], blobs, b""), blobs


def test_a_streamed_body_let_go_once_decoded_goes_back_exactly_as_it_came(tmp_path) -> None:
    """A streamed body is handed to masking as gathered (received.Received), and its bytes
    are let go once decoded: what sends it on as it came (nothing masked; a refusal that
    may fail open) gets exactly the bytes that came, made again from the text; a masked
    body is sent alone."""
    from disguiselib import pipeline

    w = worker.Worker()
    w.built[1] = worker.build(worker.Spec.of(_config(tmp_path)))
    clean = '{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "h\u00e9 \U0001f600 \\u00e9"}]}'
    got, blobs = _streamed(w, clean.encode(), 1)
    assert isinstance(got, pipeline.Masked) and got.body == clean.encode() and type(got.body) is bytes
    for body in (b"[1, 2]", b'{"messages": "\xff\xfe Acme Corp"}', b'{"model": "m", "messages": [{"role": "user", '):
        got, blobs = _streamed(w, body, 2)
        assert isinstance(got, pipeline.Refused) and got.may_fail_open, got
        assert blobs[-1] == body  # what fail-open forwards
    got, blobs = _streamed(w, b'{"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}]}', 3)
    assert isinstance(got, pipeline.Masked) and b"Zenith Labs" in got.body and len(blobs) == 1


def test_a_refusal_that_may_fail_open_after_the_body_was_let_go_is_never_forwarded(tmp_path, monkeypatch) -> None:
    """Once masking changed a streamed body, what came is no longer held: a refusal that
    may fail open after that point cannot forward it, and is refused closed instead."""
    from disguiselib import pipeline

    def broken(*a, **k):  # noqa: ANN002, ANN003, ANN202 - after the body was masked
        raise MaskError("cannot be masked")

    monkeypatch.setattr(pipeline, "of_session", broken)
    w = worker.Worker()
    w.built[1] = worker.build(worker.Spec.of(_config(tmp_path)))
    got, blobs = _streamed(w, b'{"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}]}', 1)
    assert isinstance(got, pipeline.Refused) and not got.may_fail_open and got.refusal is pipeline.Refusal.NEVER
    assert "cannot be masked" in got.reason and blobs == [b""]


def test_the_collector_is_paused_while_a_body_is_masked_and_only_then(monkeypatch) -> None:
    """The worker pauses the cyclic collector for the handling of a body (worker.MASKS:
    each full collection walked the body's document again), and turns it back on after
    it, a bug's exception too; a rule set's build runs with it on, and a collector the
    process had turned off stays off."""
    import gc
    import threading
    from multiprocessing import Pipe

    seen: list[tuple[str, bool]] = []

    def spy(self, msg, raw=b""):
        seen.append((msg[0], gc.isenabled()))
        if msg[2] == 2:
            raise KeyError("Acme Corp")
        return ("built", msg[1]), []

    monkeypatch.setattr(worker.Worker, "handle", spy)
    ours, theirs = Pipe()
    th = threading.Thread(target=worker.serve, args=(theirs,), daemon=True)
    assert gc.isenabled()
    th.start()
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    try:
        for msg in (("mask", 3, 1, job), ("mask", 3, 2, job), ("build", 3, 3), ("end", 3, 4, job, 0)):
            ours.send(msg)
            if msg[0] == "mask":
                ours.send_bytes(b"{}")
            assert ours.poll(30)
            ours.recv()
            assert gc.isenabled()
        gc.disable()
        ours.send(("mask", 3, 5, job))
        ours.send_bytes(b"{}")
        assert ours.poll(30)
        ours.recv()
        assert not gc.isenabled()
    finally:
        gc.enable()
        ours.close()
        th.join(10)
    assert seen == [("mask", False), ("mask", False), ("build", True), ("end", False), ("mask", False)]


def test_a_request_continuing_stored_state_is_numbered_in_the_worker_as_in_the_proxy(tmp_path, monkeypatch) -> None:
    """Its numbers are keyed (rules/session.Session.keyed) with the proxy's own key: the
    worker, another process with a key of its own, is given the proxy's (Spec), so a big
    request of a conversation is numbered as its small ones are."""
    from disguiselib.apis.registry import recognise
    from disguiselib.rules import rules as rules_module

    cfg = _config(tmp_path)
    spec = worker.Spec.of(cfg)
    monkeypatch.setattr(rules_module, "_PROCESS_KEY", b"another process" * 2)  # the worker's own
    built = worker.build(spec)
    assert built.rules.numbers_key == cfg.rules.numbers_key
    job = worker.Job(recognise("POST", "/v1/responses").name, "/v1/responses", HEADERS)
    body = b'{"model": "m", "previous_response_id": "resp_1", "input": "mail ann@a.example.com"}'
    masked = worker.mask(built, job, body).body
    assert masked == worker.mask(cfg, job, body).body and b"[EMAIL_1]" not in masked and b"ann@" not in masked


def test_the_worker_keeps_nothing_of_a_turn_it_sends_back(tmp_path) -> None:
    """What masking remembered for the next turn goes back (Masked.turn) for the proxy to
    keep and cut from (tests/mitm/test_offload_turns.py); the worker holds no copy of
    the bytes as they came and masked (up to turns.MAX_BYTES a rule set)."""
    import json

    from disguiselib import pipeline, turns

    w = worker.Worker()
    cfg = _config(tmp_path)
    w.handle(("build", 1, worker.Spec.of(cfg)))
    job = worker.Job(ANTHROPIC_MESSAGES.name, "/v1/messages", HEADERS)
    pad = "plain words of a long tool result. " * 3000
    doc = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "text", "text": pad}]},
                                                      {"role": "user", "content": "Acme Corp"}]}  # fmt: skip
    body = json.dumps(doc).encode()
    assert len(body) >= turns.MIN_BYTES
    reply, blobs = w.handle(("mask", 1, 1, job), body)
    got = worker.decode(reply[3], blobs, body)
    assert isinstance(got, pipeline.Masked) and isinstance(got.turn, turns.Turn)  # remembered, and sent back
    assert turns.turns_of(w.built[1].rules) is None  # and not kept here
