"""The bench must not rot: its builders make what they claim, its checks pass on correct
output and fail on wrong output, and its fake provider answers. No timing is asserted
(figures belong to bench/bench.py, printed, never tested)."""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
import common  # noqa: E402
import context  # noqa: E402
import report  # noqa: E402
import sec_a_proxies  # noqa: E402
import streams  # noqa: E402
from material import Material, loadable, make_literals, ordinary_literals  # noqa: E402

import bench as entry  # noqa: E402
from disguiselib import errors  # noqa: E402
from disguiselib.apis.anthropic import messages as anthropic  # noqa: E402
from disguiselib.apis.openai import chat as openai_chat  # noqa: E402
from disguiselib.base import masking  # noqa: E402


@pytest.fixture(scope="module")
def ctx() -> context.Ctx:
    return context.Ctx(argparse.Namespace(quick=True, seed=7, profile=False, budget=1.0, streams=10,
                                          provider="asyncio", client="asyncio"))  # fmt: skip


def _restore(cls, rules, ph: dict[str, str], st: dict, chunk: int | None = None) -> bytes:
    s = cls(rules.restorer(ph))
    data = st["bytes"]
    chunks = st["events"] if chunk is None else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    return streams.run_loop(s, chunks)


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_stream_builders_and_checks(ctx: context.Ctx, api: str) -> None:
    rule, build, cls, _, _ = context.APIS[api]
    sess = masking.mask_body(ctx.requests[api], rule, ctx.R_default)[1]
    st = build(3, 3_000, list(sess.placeholders.items()), 5)
    assert st["api"] == api and st["n_text"] > 50
    # provider bytes are masked: the check must fail on them...
    assert streams.check(st, st["bytes"])
    # ...and pass on what the engine restores, one event per feed and in odd chunks
    assert streams.check(st, _restore(cls, ctx.R_default, sess.placeholders, st)) == []
    assert streams.check(st, _restore(cls, ctx.R_default, sess.placeholders, st, chunk=997)) == []
    assert "".join(streams.text_deltas(st)) == st["sent"][0]


def test_dense_stream(ctx: context.Ctx) -> None:
    disg = [(d, o) for o, d in ctx.ordinary.items()]
    st = streams.build_dense_stream(5, 300, disg)
    assert st["n_text"] == 300
    # every delta carries a disguise or a piece of one
    masked = st["sent"][0]
    covered = bytearray(len(masked))
    for m in re.finditer("|".join(sorted((re.escape(d) for d, _ in disg), key=len, reverse=True)), masked):
        covered[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    pos = 0
    for p in streams.text_deltas(st):
        assert any(covered[pos : pos + len(p)]), p
        pos += len(p)
    assert pos == len(masked)
    out = _restore(anthropic.AnthropicStream, ctx.R_ordinary, {}, st)
    assert streams.check(st, out) == []


def test_ordinary_literals_are_ordinary() -> None:
    lits = ordinary_literals(random.Random(1), 100)
    assert len(set(lits.values())) == 100
    assert {"nova", "fetch_record", "acct_ref"} <= set(lits.values())


@pytest.mark.parametrize("seed", [20250101, 7, 1])  # bench.py's default seed first
def test_the_engines_sections_literals_load(ctx: context.Ctx, seed: int) -> None:
    """bench (engines) runs mitmdump on the 1,000 literals and the 100 ordinary ones
    together: drawn apart, one's disguise can spell the other's original at a word's
    edge, which the load refuses (rules/overlaps.py), and `bench.py --quick` stopped
    there. loadable() leaves out only what the load refuses."""
    both = {**make_literals(random.Random(seed), 1000), **ordinary_literals(random.Random(seed * 1000 + 2), 100)}
    kept = loadable(both)
    ctx.with_literals(kept, "both")  # loads (raises MappingError otherwise)
    assert set(kept) <= set(both) and len(kept) >= len(both) - 5
    for gone in set(both) - set(kept):  # each one left out is refused beside what is kept
        with pytest.raises(errors.MappingError):
            ctx.with_literals({**kept, gone: both[gone]}, "both")


def test_issue_stream_and_peer_numbering(ctx: context.Ctx) -> None:
    body, emails, st = sec_a_proxies.issue_stream(ctx)
    assert st["n_disg_text"] == sec_a_proxies.N_SPLIT and 2_500 < st["n_text"] < 3_100
    assert all(1 <= len(p) <= 4 for p in streams.text_deltas(st))
    # a proxy that numbers the e-mails in reverse (as the peer does): the expectation follows it
    sent = json.loads(body)
    text = sent["messages"][-1]["content"]
    rev = {f"[EMAIL_{len(emails) - i}]": e for i, e in enumerate(emails)}
    for t, e in rev.items():
        text = text.replace(e, t)
    sent["messages"][-1]["content"] = text
    proxy_map = sec_a_proxies.issued(json.dumps(sent).encode(), emails)
    assert proxy_map == rev
    want = sec_a_proxies.expectation(st, {f"[EMAIL_{i + 1}]": e for i, e in enumerate(emails)}, proxy_map)
    out = _restore(openai_chat.ChatStream, ctx.R_default, proxy_map, st)
    assert streams.check(want, out) == []
    assert sec_a_proxies.restored(out, emails) == (st["n_disg_text"], 0)


def test_unclosed_strip_stream_matches_whole_text(ctx: context.Ctx) -> None:
    st = streams.build_unclosed_strip_stream(9, 8_000)
    assert st["sent"][0].startswith("[[reply_to:") and "]" not in st["sent"][0] and "\n" not in st["sent"][0]
    whole = ctx.R_default.restorer({}).text(st["sent"][0])
    got = streams.channels(_restore(anthropic.AnthropicStream, ctx.R_default, {}, st)).get(0, "")
    assert got == whole


def test_latex_args_restore(ctx: context.Ctx) -> None:
    disg = [(d, o) for o, d in list(ctx.ordinary.items())[:10]]
    m, o = streams.latex_tool_args(random.Random(2), 20_000, disg)
    assert 18_000 < len(m) < 24_000 and m.count("\\\\") > 1000
    json.loads(m)
    assert ctx.R_ordinary.restorer({}).json_text(m) == o


def test_request_and_adversarial_bodies(ctx: context.Ctx) -> None:
    rng = random.Random(4)
    lits = make_literals(rng, 50)
    mat = Material(rng, lits)
    raw, info = bodies.build_request(1, 150_000, mat)
    assert 140_000 < len(raw) < 300_000 and info["tool_results"] > 0
    masked = masking.mask_body(raw, anthropic.MESSAGES_REQUEST, ctx.R_default)[0].decode()
    assert not [e for e in mat.emails if e in masked]
    for gen in (bodies.base64url_then_email, bodies.minified_css, bodies.pem_grep_listing):
        text = gen(rng, 20_000)
        assert 19_000 <= len(text) <= 20_500, gen.__name__
        json.loads(bodies.tool_result_body(text))
    css = bodies.minified_css(rng, 40_000)
    assert "@media" in css and "@import" in css and "\n" not in css
    assert "END" not in bodies.pem_grep_listing(rng, 5_000)
    m = masking.mask_body(bodies.tool_result_body(bodies.base64url_then_email(rng, 2_000)), anthropic.MESSAGES_REQUEST,
                       ctx.R_default)[0]  # fmt: skip
    assert b"ops-team@example.com" not in m


def test_upstream_answers_and_records(tmp_path: Path) -> None:
    from proxies import Client, Upstream

    ev = b'event: ping\ndata: {"type": "ping"}\n\n'
    f = tmp_path / "s.sse"
    f.write_bytes(ev * 20)
    up = Upstream([f"/v1/messages={f}"], per_write=3)
    try:
        cl = Client(up.port)
        assert cl.post(b'{"x": 1}', 3)[2] == ev * 20
        assert cl.post(b"{}", 1, headers={"x-bench-stream": "tiny"})[2].startswith(b"event: ping")
        cl.close()
        assert up.last_body() == b"{}"
    finally:
        up.stop()


def test_capped_and_report() -> None:
    # (a budget the fork and its answer never come near, whatever the machine's load: the
    # call returns as soon as the copy answers; a fresh-clone CI beside two busy benches
    # once waited more than 5 s for the copy's ZeroDivisionError)
    assert common.capped(lambda: None, 120) is not None
    t0 = time.perf_counter()
    assert common.capped(lambda: time.sleep(10), 0.3) is None
    assert time.perf_counter() - t0 < 5
    with pytest.raises(RuntimeError):
        common.capped(lambda: 1 / 0, 120)
    assert report.at_most(1.0, 1.15)[1] == "PASS"
    assert report.at_most(2.3, 1.15)[1].startswith("MISS")
    assert entry.selected("abd") == ["a", "b", "d"] and entry.selected("a,leakguard") == ["a", "leakguard"]
    with pytest.raises(SystemExit):
        entry.selected("z")


def test_realtime_builders(ctx: context.Ctx) -> None:
    """bench/realtime.py: the same deltas as SSE and as WebSocket events; both restore to
    the original text through the engine, and the provider's own text is not it."""
    import realtime as rt

    from disguiselib.apis.openai.realtime import OpenAIRealtime
    from disguiselib.base.realtime import Connection, Frame

    orig, pieces = rt._material(ctx)
    assert "".join(pieces) != orig and len(pieces) > 500
    conn = Connection(OpenAIRealtime, ctx.R_ordinary)
    ws = [f.data for e in rt.ws_events(pieces) for f in conn.server(Frame(e)).frames]
    assert rt._ws_text(ws) == orig
    assert rt._ws_text(rt.ws_events(pieces)) == "".join(pieces)
    s = context.openai_responses.ResponsesStream(ctx.R_ordinary.restorer({}))
    assert rt._sse_text([s.feed(e) for e in rt.sse_events(pieces)]) == orig
