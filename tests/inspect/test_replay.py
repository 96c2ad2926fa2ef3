"""Replay (inspect/replay.py) in-process: which rules masked a flow, refusal under rules
that lack them, the offline re-run through the live pipeline (its verdict), a dry run
of a flow recorded without the addon, and the server-replay index."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy.test import taddons, tflow, tutils

from anthropic_util import build_stream, read_stream
from disguiselib.apis import registry
from disguiselib.inspect import replay
from disguiselib.inspect.record import META, SIDES, side
from disguiselib.mitm.addon import Disguise
from disguiselib.rules import mappings
from disguiselib.rules.rules import LITERALS, Rules, Session

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
CLIENT = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                     "messages": [{"role": "user", "content": "Acme Corp, bob@corp.example.com"}]}).encode()  # fmt: skip
UPSTREAM = build_stream([("text", ["Zenith Labs writes to [EMA", "IL_1]"])])


@contextlib.contextmanager
def context(tmp_path: Path, mapping: str = MAPPING, **opts):
    (tmp_path / "m.yaml").write_text(mapping)
    a = Disguise()
    with taddons.context(a) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_defaults=False, **opts)
            yield a
        finally:
            tctx.master.event_loop.close()


def recorded(a: Disguise):
    """A flow as `-w` records it with the addon: masked upstream, restored for the client,
    both other sides in metadata."""
    f = tflow.tflow()
    f.request.method, f.request.host, f.request.path = "POST", "api.anthropic.com", "/v1/messages"
    f.request.content = CLIENT
    a.requestheaders(f)
    a.request(f)
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    a.responseheaders(f)
    out = b"".join(b"".join(f.response.stream(UPSTREAM[i : i + 9])) for i in range(0, len(UPSTREAM), 9))
    out += b"".join(f.response.stream(b""))
    f.response.data.content = b""  # mitmproxy 11 keeps nothing of a streamed body
    a.response(f)
    assert f.response.content == out  # the Inspector puts what the client got back
    assert isinstance(f.metadata.get(SIDES), dict) and "upstream_response" in f.metadata[SIDES]
    f.live = False  # read back from a file: offline
    return f


def test_fingerprint_names_patterns_and_hashes_literals() -> None:
    s = Session()
    s.count("EMAIL")
    s.count(LITERALS, "Acme Corp")
    fp = replay.fingerprint(s)
    assert fp["patterns"] == ["EMAIL"] and len(fp["literals"]) == 1
    assert "Acme" not in json.dumps(fp)  # a hash, never the original


def test_a_literal_is_hashed_once_per_rule_set(monkeypatch) -> None:
    """A Claude Code body replaces hundreds of literals at every turn: each literal's id
    is made once for the rule set, and is the id made without it."""
    rules = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs", "Globex": "Initech"}}))
    s = Session()
    s.count(LITERALS, "Acme Corp")
    s.count(LITERALS, "Globex")
    want = replay.fingerprint(s)
    calls: list[str] = []
    real = replay._literal_id
    monkeypatch.setattr(replay, "_literal_id", lambda o: calls.append(o) or real(o))
    assert replay.fingerprint(s, rules) == want == replay.fingerprint(s, rules)
    assert sorted(calls) == ["Acme Corp", "Globex"]  # the second time: none


def _session(literals) -> Session:  # noqa: ANN001
    s = Session()
    for o in literals:
        s.count(LITERALS, o)
    return s


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.sampled_from([f"Name {i}" for i in range(12)])), max_size=8))
def test_a_requests_literal_ids_are_those_of_a_fresh_sort_whatever_came_before(turns: list[set[str]]) -> None:
    """fingerprint merges a next turn's new literals into a recent request's sorted ids:
    the list is the fresh sort's, whatever requests (supersets, subsets, others) came
    before under the same rule set."""
    rules = Rules(mappings.from_dict({"literals": {f"Name {i}": f"Other {i}" for i in range(12)}}))
    for lits in turns:
        grown = _session(lits)
        assert replay.fingerprint(grown, rules)["literals"] == sorted(map(replay._literal_id, lits))


def test_a_next_turns_literal_ids_are_the_turn_befores_and_its_new_ones(monkeypatch) -> None:
    """issue 29: a conversation's next turn (its literals the turn before's and a few
    more) looks up and sorts only its new literals' ids (0.3 ms of the event loop for
    a Claude Code turn's ~600)."""
    names = [f"Name {i}" for i in range(600)]
    rules = Rules(mappings.from_dict({"literals": {o: o.replace("Name", "Other") for o in names}}))
    replay.fingerprint(_session(names[:590]), rules)
    looked: list[str] = []
    real = replay._id_in
    monkeypatch.setattr(replay, "_id_in", lambda ids, o: looked.append(o) or real(ids, o))
    got = replay.fingerprint(_session(names[:595]), rules)["literals"]
    assert got == sorted(map(replay._literal_id, names[:595])) and sorted(looked) == sorted(names[590:595])


def test_the_same_literals_again_are_the_newest_recent_requests_ids_as_they_are(monkeypatch) -> None:
    """A request whose literals are a recent one's (a turn sent again, a retry) takes its ids
    as they are: nothing looked up, sorted or added to the recent ones a second time."""
    names = [f"Name {i}" for i in range(50)]
    rules = Rules(mappings.from_dict({"literals": {o: o.replace("Name", "Other") for o in names}}))
    first = replay.fingerprint(_session(names[:40]), rules)["literals"]
    replay.fingerprint(_session(names[:10]), rules)
    monkeypatch.setattr(replay, "_id_in", lambda ids, o: pytest.fail("looked up again"))
    again = replay.fingerprint(_session(names[:40]), rules)["literals"]
    assert again == first == sorted(map(replay._literal_id, names[:40]))
    recent = replay._recent(rules)
    assert len(recent) == 2 and recent[0][0] == frozenset(names[:40])  # (the newest now; not twice)


def test_missing_rules_names_what_is_gone(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        rules = a.rules
        assert rules is not None
        s = Session()
        s.count("EMAIL")
        s.count(LITERALS, "Acme Corp")
        meta = {"rules": replay.fingerprint(s)}
        assert replay.missing_rules(meta, rules) is None
        other = Rules(mappings.from_dict({"literals": {"Other Name": "Xyzzy Qq"}}))
        why = replay.missing_rules(meta, other)
        assert why == "rules that masked the recording are not in force: pattern EMAIL and 1 literal"
        assert "older disguise" in (replay.missing_rules({}, rules) or "")


def test_missing_rules_is_waived_when_asked(tmp_path: Path) -> None:
    with context(tmp_path, disguise_replay_current_rules=True) as a:
        assert replay.missing_rules({}, a.rules) is None


def test_an_offline_rerun_equals_the_live_run(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        f = recorded(a)
        live_req, live_resp = f.request.content, f.response.content
        a.request(f)  # what `mitmdump -nr` calls: the flow re-run offline
        meta = f.metadata[META]
        assert meta["replay"] == "re-run offline: equals the live run", meta
        assert f.request.content == live_req and f.response.content == live_resp
        assert read_stream(f.response.content)[0][0]["text"] == "Acme Corp writes to bob@corp.example.com"


def test_an_offline_rerun_under_other_rules_says_how_it_differs_or_refuses(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        f = recorded(a)
    extra = MAPPING + "  - name: NAME\n    regex: 'writes'\n"
    with context(tmp_path, extra) as b:
        g = recorded(b)  # recorded under these rules, re-run under them after the body changed
        g.metadata[SIDES]["upstream_response"] = side(UPSTREAM.replace(b"Zenith Labs", b"Zenith Labs!"))
        b.request(g)
        assert "DIFFERS from the live run in the response" in g.metadata[META]["replay"]
    with context(tmp_path, "literals: {Other Name: Xyzzy Qq}") as c:
        c.request(f)
        assert f.metadata[META]["replay"].startswith("re-run refused: rules that masked the recording")
        assert f.marked == ":no_entry:"


def test_a_side_not_kept_whole_is_not_rerun(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        f = recorded(a)
        f.metadata[SIDES]["client_request"]["cut"] = True
        a.request(f)
        assert f.metadata[META]["replay"] == "not re-run: a side of this flow was not kept whole"


def test_a_flow_recorded_without_the_addon_gets_a_dry_run(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        f = tflow.tflow(resp=tutils.tresp(content=UPSTREAM))
        f.request.method, f.request.host, f.request.path = "POST", "api.anthropic.com", "/v1/messages"
        f.request.content = CLIENT
        f.response.headers["content-type"] = "text/event-stream"
        f.live = False
        a.request(f)
        meta = f.metadata[META]
        assert meta["dry_run"] and meta["masked"] == 2 and meta["counts"] == {"EMAIL": 1, LITERALS: 1}
        assert f.request.content == CLIENT  # left as recorded
        assert f.comment.startswith("disguise dry run (recorded without the addon): would mask 2")
        bad = tflow.tflow(resp=True)
        bad.request.method, bad.request.host, bad.request.path = "POST", "api.anthropic.com", "/v1/messages"
        bad.request.content = b"{not json"
        bad.live = False
        a.request(bad)
        assert bad.metadata[META]["failed"].startswith("would refuse the request")


def test_replay_index_maps_what_the_client_got_to_what_upstream_sent(tmp_path: Path) -> None:
    with context(tmp_path) as a:
        f = recorded(a)
        idx = replay.replay_index([f, tflow.tflow(resp=True), tflow.tflow()])
        assert list(idx.values()) == [f.metadata[SIDES]["upstream_response"]]
        f.metadata[SIDES]["upstream_response"]["cut"] = True
        assert replay.replay_index([f]) == {}


@pytest.mark.parametrize("cut", [True, False])
def test_client_replay_of_a_recorded_flow(tmp_path: Path, cut: bool) -> None:
    with context(tmp_path) as a:
        f = recorded(a)
        masked = f.request.content
        f.live, f.is_replay, f.response = True, "request", None
        if cut:
            f.metadata[SIDES]["client_request"]["cut"] = True
        answered = replay.client_replay(f, registry.ANTHROPIC_MESSAGES, a.inspect)
        if cut:
            assert answered and f.response is not None and b"cut at disguise_capture_limit" in f.response.content
        else:
            assert not answered and f.request.content == CLIENT and masked != CLIENT
