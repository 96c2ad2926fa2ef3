"""The masking worker process (mitm/offload.py, worker.py): a body masked there is masked
exactly as in the proxy's process (same bytes, same placeholders, same refusals), with the
rule set of the flow's own generation; and every way the worker can fail refuses the
request. A real worker process throughout (no mitmdump: tests/integration/test_offload.py
runs it through mitmdump)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disguiselib import pipeline, worker
from disguiselib.apis.registry import ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES
from disguiselib.config import Config, build_config
from disguiselib.errors import MaskError
from disguiselib.mitm import offload as offload_mod
from disguiselib.mitm.offload import Offload
from disguiselib.rules import fakes
from disguiselib.worker import OffloadError

LITERALS = {"Acme Corp": "Zenith Labs", "nova-internal": "nova", 'C:\\Users\\a "b"': "WINPATH", "Ünïcødé GmbH": "Uni"}
HEADERS = [("content-type", "application/json")]


def _config(
    tmp: Path, literals: dict[str, str], name: str = "m.yaml", key: bytes | None = None, defaults: bool = True
) -> Config:
    """defaults=False: the literals alone, without the shipped rule set (each build of which
    reads and compiles some 12,000 rules), for the tests of the generation table that mask
    nothing or only the literals they name."""
    path = tmp / name
    path.write_text(yaml.safe_dump({"literals": literals}, allow_unicode=True), encoding="utf-8")
    return build_config([str(path)], defaults, [], key)


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("offload")


@pytest.fixture(scope="module")
def configs(tmp_module: Path) -> dict[str, Config]:
    return {
        "placeholders": _config(tmp_module, LITERALS),
        "fakes": _config(tmp_module, LITERALS, "f.yaml", fakes.new_key() if hasattr(fakes, "new_key") else b"k" * 32),
    }


@pytest.fixture(scope="module")
def off():
    o = Offload()
    yield o
    o.close()


def run(coro):
    return asyncio.run(coro)


def never(v: object) -> bool:
    """v is the refusal a worker's failure gives: never forwarded, even under fail-open."""
    return isinstance(v, pipeline.Refused) and v.refusal is pipeline.Refusal.NEVER


def same(a: object, b: object) -> None:
    """The worker's result a is the in-process result b."""
    if isinstance(b, pipeline.Refused | pipeline.NotOurs):
        assert a == b, (a, b)
        return
    assert isinstance(a, pipeline.Masked), a
    assert a.body == b.body
    assert a.session.placeholders == b.session.placeholders
    assert a.session.counts == b.session.counts and a.session.literals == b.session.literals


# -- what a generated body is made of --------------------------------------------------------

_piece = st.one_of(
    st.sampled_from([*LITERALS, "alice@example.com", "bob.smith+x@corp.example.org", "AKIAIOSFODNN7EXAMPLE",
                     "[EMAIL_1]", "Zenith Labs", " ", "\n", '"', "\\", "{", "}"]),
    st.text(max_size=12),
)  # fmt: skip
_text = st.lists(_piece, max_size=12).map("".join)
_json_value = st.recursive(
    st.one_of(_text, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def anthropic_body(draw) -> bytes:
    blocks = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "tool_use", "tool_result", "json_text"]))
        if kind == "text":
            blocks.append({"type": "text", "text": draw(_text)})
        elif kind == "tool_use":
            blocks.append({"type": "tool_use", "id": f"toolu_{i}", "name": "lookup", "input": draw(
                st.dictionaries(_text, _json_value, max_size=4))})  # fmt: skip
        elif kind == "tool_result":
            blocks.append({"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": draw(_text)})
        else:
            blocks.append({"type": "text", "text": json.dumps(draw(_json_value), ensure_ascii=draw(st.booleans()))})
    doc = {"model": "claude", "max_tokens": 5, "system": draw(_text),
           "messages": [{"role": "user", "content": blocks or draw(_text)}]}  # fmt: skip
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=anthropic_body(), which=st.sampled_from(["placeholders", "fakes"]))
def test_the_worker_masks_exactly_as_the_process_does(off, configs, body, which) -> None:
    cfg = configs[which]
    want = pipeline.mask_request(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", HEADERS)
    got = run(off.mask(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", HEADERS))
    same(got, want)
    if isinstance(want, pipeline.Masked) and want.body is body:
        assert got.body is body  # nothing changed: the client's own bytes object, not a copy


@pytest.mark.parametrize(
    ("api", "body"),
    [
        (ANTHROPIC_MESSAGES, b'{"messages": 1'),  # not JSON: MaskError
        (ANTHROPIC_MESSAGES, b"[1, 2]"),  # not an object
        (OPENAI_CHAT, json.dumps({"model": "m", "messages": [{"role": "user", "content": "Acme Corp"}]}).encode()),
        (OPENAI_RESPONSES, json.dumps({"model": "m", "input": "mail alice@example.com at nova-internal"}).encode()),
    ],
)
def test_refusals_and_other_apis_the_same(off, configs, api, body) -> None:
    cfg = configs["placeholders"]
    path = (
        "/v1/chat/completions" if api is OPENAI_CHAT else "/v1/responses" if api is OPENAI_RESPONSES else "/v1/messages"
    )
    same(run(off.mask(api, body, cfg, path, HEADERS)), pipeline.mask_request(api, body, cfg, path, HEADERS))


def test_a_leak_found_in_the_worker_is_a_leak_error(off, configs) -> None:
    """The leak guard runs in the worker too: an original in the URL refuses the request."""
    cfg = configs["placeholders"]
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}).encode()
    got = run(off.mask(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages?customer=Acme%20Corp", HEADERS))
    assert isinstance(got, pipeline.Refused) and got.refusal is pipeline.Refusal.LEAK and "url" in got.reason


# -- generations -------------------------------------------------------------------------


def test_each_body_is_masked_with_its_own_generation(tmp_path) -> None:
    """A reload makes a new generation: the worker builds it before masking with it, and a
    flow that started under the previous set is still masked with that one."""
    a = _config(tmp_path, {"Acme Corp": "Zenith Labs"}, "a.yaml")
    b = _config(tmp_path, {"Acme Corp": "Zenith Labs", "Globex": "Initech"}, "b.yaml")
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [
        {"role": "user", "content": "Acme Corp and Globex"}]}).encode()  # fmt: skip
    o = Offload()
    try:

        async def go() -> list[object]:
            out = [await o.mask(ANTHROPIC_MESSAGES, body, a, "/v1/messages", HEADERS)]
            o.prepare(b)  # the reload: the running worker builds b
            out.append(await o.mask(ANTHROPIC_MESSAGES, body, b, "/v1/messages", HEADERS))
            out.append(await o.mask(ANTHROPIC_MESSAGES, body, a, "/v1/messages", HEADERS))  # a flow begun under a
            return out

        ra, rb, ra2 = run(go())
        assert o.generation(a) != o.generation(b)
        assert b"Globex" in ra.body and b"Zenith Labs" in ra.body  # a: Globex is no rule
        assert b"Globex" not in rb.body and b"Initech" in rb.body
        assert ra2.body == ra.body
    finally:
        o.close()


def test_a_worker_that_lost_a_generation_is_sent_it_again(tmp_path) -> None:
    """More generations than the worker keeps: an old one is built again, never replaced by
    another (worker.KEEP)."""
    cfgs = [
        _config(tmp_path, {f"Org{i} Ltd": f"Alias{i}"}, f"g{i}.yaml", defaults=False) for i in range(worker.KEEP + 2)
    ]
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [
        {"role": "user", "content": " ".join(f"Org{i} Ltd" for i in range(len(cfgs)))}]}).encode()  # fmt: skip
    o = Offload()
    try:

        async def go() -> list[object]:
            return [await o.mask(ANTHROPIC_MESSAGES, body, c, "/v1/messages", HEADERS) for c in [*cfgs, cfgs[0]]]

        out = run(go())
        for i, r in enumerate(out):
            k = i % len(cfgs)
            text = json.loads(r.body)["messages"][0]["content"]
            assert f"Alias{k}" in text and f"Org{k} Ltd" not in text
            assert all(f"Org{j} Ltd" in text for j in range(len(cfgs)) if j != k)
    finally:
        o.close()


def test_a_reply_of_another_generation_is_refused(off, configs, monkeypatch) -> None:
    """A reply for another generation (or another body) is never applied."""
    cfg = configs["placeholders"]
    body = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Acme Corp"}]}'
    real = Offload._reply

    def skewed(self, conn, timeout):
        msg = real(self, conn, timeout)
        return (msg[0], msg[1] + 1, *msg[2:]) if msg[0] == "masked" else msg

    monkeypatch.setattr(Offload, "_reply", skewed)
    got = run(off.mask(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", HEADERS))
    assert never(got) and "out of turn" in got.reason


# -- failing closed ----------------------------------------------------------------------


def _big(n: int) -> bytes:
    words = ("Acme Corp writes to alice@example.com about nova-internal; " * (n // 60 + 1))[:n]
    return json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": words}]}).encode()


def test_a_worker_killed_mid_body_refuses_it_and_the_next_body_gets_a_fresh_one(configs) -> None:
    cfg = configs["placeholders"]
    o = Offload()
    try:

        async def go() -> tuple[object, object, int]:
            await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)  # started, built
            pid = o.pid
            assert pid is not None
            task = asyncio.ensure_future(o.mask(ANTHROPIC_MESSAGES, _big(8_000_000), cfg, "/v1/messages", HEADERS))
            await asyncio.sleep(0.2)  # it receives or masks 8 MB (seconds)
            assert not task.done()
            os.kill(pid, signal.SIGKILL)
            killed = await task
            after = await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)
            return killed, after, pid

        killed, after, pid = run(go())
        assert never(killed) and "stopped" in killed.reason
        assert isinstance(after, pipeline.Masked) and b"Acme Corp" not in after.body
        assert o.started == 2 and o.pid != pid
    finally:
        o.close()


def test_a_hung_worker_is_stopped_and_the_body_refused(configs, monkeypatch) -> None:
    cfg = configs["placeholders"]
    monkeypatch.setattr(offload_mod, "BASE_S", 1.0)
    monkeypatch.setattr(offload_mod, "PER_MB_S", 0.0)
    monkeypatch.setattr(offload_mod, "START_S", 60.0)
    o = Offload()
    try:

        async def go() -> tuple[object, object, float]:
            await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)
            pid = o.pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)  # hangs: never answers
            t = time.monotonic()
            hung = await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)
            waited = time.monotonic() - t
            after = await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)
            return hung, after, waited

        hung, after, waited = run(go())
        assert never(hung) and "no answer" in hung.reason
        assert waited >= 1.0
        assert isinstance(after, pipeline.Masked) and o.started == 2
    finally:
        o.close()


def test_a_worker_that_cannot_start_refuses(configs, monkeypatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    o = Offload()
    try:
        got = run(o.mask(ANTHROPIC_MESSAGES, _big(1000), configs["placeholders"], "/v1/messages", HEADERS))
        assert never(got) and "could not be started" in got.reason
    finally:
        o.close()


def test_after_close_bodies_are_refused(configs) -> None:
    o = Offload()
    o.close()
    got = run(o.mask(ANTHROPIC_MESSAGES, _big(1000), configs["placeholders"], "/v1/messages", HEADERS))
    assert never(got)


def test_worker_errors_are_never_forwarded_even_with_fail_open() -> None:
    """OffloadError is a NeverForward: the adapter refuses it whatever disguise_fail_open says."""
    from disguiselib.errors import NeverForward

    assert issubclass(OffloadError, NeverForward) and issubclass(OffloadError, MaskError)


def test_log_records_of_the_worker_reach_the_proxys_log(off, tmp_path, caplog) -> None:
    """The warning about a disguise the client typed itself is written in the worker and
    logged by the proxy (the same message, which names the place, never the text)."""
    cfg = _config(tmp_path, {"Acme Corp": "Zenith Labs"})
    body = b'{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Zenith Labs"}]}'
    with caplog.at_level("WARNING", logger="disguise"):
        run(off.mask(ANTHROPIC_MESSAGES, body, cfg, "/v1/messages", HEADERS))
    assert any("already holds a disguise" in r.getMessage() for r in caplog.records)


def test_a_worker_is_recycled_after_a_huge_body(configs, monkeypatch) -> None:
    """After a body from RECYCLE_BYTES on, the worker is stopped (its memory goes back);
    the next large body starts a fresh one and is masked as before."""
    monkeypatch.setattr(offload_mod, "RECYCLE_BYTES", 50_000)
    cfg = configs["placeholders"]
    o = Offload()
    try:

        o.prepare(cfg)
        o.running()
        o._pool.submit(lambda: None).result(timeout=120)
        pid = o.pid

        async def go() -> tuple[object, int | None, object, int | None]:
            huge = await o.mask(ANTHROPIC_MESSAGES, _big(60_000), cfg, "/v1/messages", HEADERS)
            after = await o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS)
            return huge, pid, after, o.pid

        huge, pid, after, now = run(go())
        assert isinstance(huge, pipeline.Masked) and b"Acme Corp" not in huge.body
        assert now is not None and now != pid  # stopped once the huge body was done; a fresh one masked the next
        assert isinstance(after, pipeline.Masked) and o.started == 2
    finally:
        o.close()


def test_the_worker_starts_and_builds_when_the_proxy_runs(configs) -> None:
    """Once the proxy runs, the worker is started and builds the rules in force in the
    background: the first large body finds it ready (it waited 2.5-5 s for a start and a
    build when the worker was started by it)."""
    cfg = configs["placeholders"]
    o = Offload()
    try:
        o.prepare(cfg)
        o.running()
        o._pool.submit(lambda: None).result(timeout=120)  # the pool's queue done: started, built
        assert o.pid is not None and o.started == 1
        assert o.built == {o.generation(cfg)}  # the worker said "built": the body will not wait for a build
        nice = int(Path(f"/proc/{o.pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
        assert nice == min(19, os.nice(0) + worker.NICE)  # below the proxy: the event loop gets the CPU first
        got = run(o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS))
        assert isinstance(got, pipeline.Masked) and o.started == 1
    finally:
        o.close()


def test_a_failed_worker_is_replaced_at_once(configs) -> None:
    """After a failure the next worker starts in the background, not at the next body."""
    cfg = configs["placeholders"]
    o = Offload()
    try:
        o.prepare(cfg)
        o.running()
        o._pool.submit(lambda: None).result(timeout=120)
        pid = o.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        # the body in flight when the worker died is refused; one sent after its death was
        # seen is masked by a fresh worker (which of the two depends on when the kill lands)
        got = run(o.mask(ANTHROPIC_MESSAGES, _big(1000), cfg, "/v1/messages", HEADERS))
        assert never(got) or (isinstance(got, pipeline.Masked) and b"Acme Corp" not in got.body)
        o._pool.submit(lambda: None).result(timeout=120)
        assert o.pid is not None and o.pid != pid and o.started == 2
        assert o.built == {o.generation(cfg)}
    finally:
        o.close()


def test_a_rule_set_no_flow_uses_is_not_kept_alive_by_its_generation(tmp_path) -> None:
    """The generation table names configurations; it once held them, the last 8, alive: a
    proxy whose mappings were edited held 8 rule sets for good (20,000 literals: 190 MB
    after the load, 420 MB after a few edits; probe Q). A configuration no flow uses is
    freed; one alive keeps its number; one made later never takes an old one's."""
    import gc
    import weakref

    o = Offload()
    try:
        cfgs = [_config(tmp_path, {f"Org{i} Ltd": f"Alias{i}"}, f"w{i}.yaml", defaults=False) for i in range(3)]
        gens = [o.generation(c) for c in cfgs]
        assert len(set(gens)) == 3 and o.generation(cfgs[2]) == gens[2]
        gone = [weakref.ref(c) for c in cfgs[:2]]
        del cfgs[:2]
        gc.collect()
        assert [r() for r in gone] == [None, None]
        later = _config(tmp_path, {"Org9 Ltd": "Alias9"}, "w9.yaml", defaults=False)
        assert o.generation(later) not in gens and o.generation(cfgs[0]) == gens[2]
        o.built = set(gens)  # as the worker said it built them
        for i in range(offload_mod._KEEP + 2):
            o.generation(_config(tmp_path, {f"Org{i}x Ltd": "Alias"}, "w.yaml", defaults=False))
        assert not o.built & set(gens)  # numbers never asked for again are forgotten
    finally:
        o.close()
