"""A conversation's next turn masked from the turn before (turns.py) against the full
path: for every turn of random conversations (1-3 messages appended a turn, an earlier
one sometimes edited or the last dropped, cache_control moved to the newest message,
thinking blocks and their signatures, tool calls; texts of literals, the shipped
patterns' originals, a password found by its key and copied without it, placeholders
and fakes the client typed, a literal's disguise, escapes no JSON writer makes), the
verdict pipeline.mask_request gives with the turns remembered is the one it gives
without: the same bytes, session (placeholders -> originals, counts, literals, fakes,
in order) and refusals; with placeholders and with disguise_fakes, each engine (run the
file with DISGUISE_ENGINE=python and compiled). And the real recorded Anthropic bodies,
their conversations sent turn by turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from turns_util import API, CUT, HDRS, any_size, cache_last, config, conversation, turn_by_turn

from disguiselib import pipeline, turns

REAL = Path(__file__).parent / "fixtures" / "real" / "anthropic"


@pytest.fixture(scope="module", params=["placeholders", "fakes"])
def cfg(request, tmp_path_factory):  # noqa: ANN001, ANN201
    return config(tmp_path_factory, fakes=request.param == "fakes")


@pytest.fixture(scope="module", autouse=True)
def small_bodies() -> Iterator[None]:
    with any_size():
        yield


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(conversation())
def test_every_turn_is_what_the_full_path_makes_of_it(cfg, bodies: list[bytes]) -> None:  # noqa: ANN001
    turn_by_turn(cfg, bodies)


def test_the_property_test_cuts(cfg) -> None:  # noqa: ANN001
    """The conversations above are cut, not only sent the full path: 60 of them, drawn
    from a fixed seed (defined here: neither the profile nor DISGUISE_EXAMPLES' share
    changes their count; the property test's own ran 37 and 17 cuts in 60 at a share of
    0.2), cut at least 4 times. Run alone, on 3.11 and 3.12 alike, they are cut 57 and
    42 times; after some other tests in the same process (tests/inspect/test_refusals.py,
    whose `disguise show` imports more of the package) Hypothesis draws other
    conversations from the same seed, cut 18 and 8 times: it mixes into its draws the
    constants it finds in the source of the local modules loaded so far
    (hypothesis.internal.conjecture.providers._get_local_constants), so what ran before
    changes them."""
    CUT.clear()

    @seed(29)
    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(conversation())
    def run(bodies: list[bytes]) -> None:
        turn_by_turn(cfg, bodies)

    run()
    assert len(CUT) >= 60 and sum(CUT) >= 4, (len(CUT), sum(CUT))


def _turns(*texts: str, tail: str = "") -> list[bytes]:
    """A conversation's bodies: each turn one user message more (texts), its last one
    then tail's."""
    out, messages = [], []
    for t in texts:
        messages.append({"role": "user", "content": [{"type": "text", "text": t}]})
        doc = {"model": "m", "messages": cache_last(messages), "system": "Acme Corp sys", "max_tokens": 9}
        out.append(json.dumps(doc, separators=(",", ":")).encode())
    return out


def test_a_conversation_is_cut_turn_after_turn(cfg) -> None:  # noqa: ANN001
    bodies = _turns("hi bob@corp.example.com", "Acme Corp again x@y.io", "and bob@corp.example.com", "ok")
    # (with disguise_fakes a new original's fake goes the full path: the earlier turns may hold it)
    assert turn_by_turn(cfg, bodies) == (3 if cfg.fakes_key is None else 2)
    # a turn cut from the one before takes its place: one request of the conversation kept
    # (with fakes the second went the full path: the first is kept beside it)
    kept = turns.turns_of(cfg.rules).turns  # type: ignore[union-attr]
    assert [t.raw for t in kept] == ([] if cfg.fakes_key is None else [bodies[0]]) + [bodies[-1]]


@pytest.mark.parametrize(
    "last",
    [
        "I typed [EMAIL_1] myself",  # a placeholder the client holds: every number moves
        "the value abc123XYZ again",  # a copy of a password found by its key (base/copies.py)
        "the db_password = hunter2xyz9Q and a\\/b",  # a new original, an escape no writer makes
        "I typed Zenith Labs",  # a literal's disguise: the full path warns
    ],
)
def test_what_only_the_whole_body_tells_is_the_full_path(cfg, last: str) -> None:  # noqa: ANN001
    bodies = _turns("password: abc123XYZ at bob@corp.example.com", "Acme Corp, bob@corp.example.com", last)
    assert turn_by_turn(cfg, bodies) >= 1  # (the second turn is cut: the third checked against the full path)


def test_a_new_original_the_earlier_turns_copied_is_masked_there_too(cfg) -> None:  # noqa: ANN001
    # abc123XYZ stood bare in the first turn (no rule finds it there); the third finds it
    # by its key: the full path masks the first turn's copy too (base/copies.py)
    bodies = _turns("bare abc123XYZ here", "x@y.io", "password: abc123XYZ")
    turn_by_turn(cfg, bodies)


def test_an_escape_no_writer_makes_in_the_earlier_turns_masks_every_copy(cfg) -> None:  # noqa: ANN001
    # no rule found anything in the first turns: their `\\/` did not count; the third's
    # e-mail does (base/copies.left_over: the full path masks the body once more)
    bodies = _turns("path a\\/b here", "Acme Corp", "mail bob@corp.example.com")
    assert turn_by_turn(cfg, bodies) == 1


def test_a_new_originals_copy_across_where_the_turns_meet_is_the_full_paths(cfg) -> None:  # noqa: ANN001
    """The new turn finds `true}}]}]}` by its key; the body spells it again in JSON's own
    bytes across the conversation's end (a tool call's input `{"n":true}` last, the
    messages last): the tail's text alone does not show that copy (turns._no_copies
    looks across the places the turns meet). Without that look the cut differs from the
    full path."""
    first = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    new = [
        {"role": "user", "content": "the password: true}}]}]} it is"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "f", "input": {"n": True}}]},
    ]
    bodies = [
        json.dumps({"model": "m", "system": "Acme Corp sys", "max_tokens": 9, "messages": m}, separators=(",", ":"))
        .encode()
        for m in (first, first + new)
    ]
    assert turn_by_turn(cfg, bodies) == 0


def test_a_fake_the_earlier_turns_were_given_typed_in_the_new_one(cfg) -> None:  # noqa: ANN001
    first = _turns("hi bob@corp.example.com", "Acme Corp")
    m = pipeline.mask_request(API, first[0], cfg, "/v1/messages", HDRS)
    fake = next(k for k, v in m.session.placeholders.items() if v == "bob@corp.example.com")
    # the client typed bob's disguise itself: the full path masks again with it reserved
    bodies = _turns("hi bob@corp.example.com", "Acme Corp", f"so {fake} it is")
    assert turn_by_turn(cfg, bodies) == 1


def _real() -> list[dict]:
    out = []
    for p in sorted(REAL.glob("*.request.json")):
        doc = json.loads(p.read_text())
        if len(doc.get("messages", [])) >= 2:
            out.append(doc)
    return out


def test_the_recorded_conversations_turn_by_turn(cfg) -> None:  # noqa: ANN001
    hits = 0
    for doc in _real():
        bodies = []
        for n in range(1, len(doc["messages"]) + 1):
            bodies.append(json.dumps({**doc, "messages": doc["messages"][:n]}, separators=(",", ":")).encode())
        hits += turn_by_turn(cfg, bodies)
        # each turn's cache_control on its newest message
        hits += turn_by_turn(cfg, [json.dumps({**doc, "messages": cache_last(doc["messages"][:n])},
                                              separators=(",", ":")).encode() for n in range(1, len(doc["messages"]) + 1)])
    assert hits >= 2  # (some turns copy a password the turn before sent bare: the full path's)


def test_remembered_only_so_much_and_forgotten_with_the_rule_set(cfg) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    for k in range(turns.KEEP + 3):
        body = _turns("hi", "more")[0].replace(b"Acme Corp sys", f"system {k}".encode())  # (none another's turn)
        assert isinstance(pipeline.mask_request(API, body, cfg, "/v1/messages", HDRS), pipeline.Masked)
    store = turns.turns_of(cfg.rules)
    assert store is not None and len(store.turns) == turns.KEEP
    cfg.rules.found.clear()
    assert turns.turns_of(cfg.rules) is None


def test_a_session_handed_out_is_never_the_one_remembered(cfg) -> None:  # noqa: ANN001
    cfg.rules.found.turns = None
    a, b = _turns("hi bob@corp.example.com", "Acme Corp")
    pipeline.mask_request(API, a, cfg, "/v1/messages", HDRS)
    got = pipeline.mask_request(API, b, cfg, "/v1/messages", HDRS)
    assert turns.turns_of(cfg.rules).hits == 1  # type: ignore[union-attr]
    got.session.placeholders["[EMAIL_9]"] = "evil@example.com"  # (a flow's own: never another's)
    for t in turns.turns_of(cfg.rules).turns:  # type: ignore[union-attr]
        assert "[EMAIL_9]" not in t.session.placeholders
        assert all("[EMAIL_9]" not in c.session.placeholders for c in t.cuts)


def test_where_a_cut_was_found_is_taken_for_those_very_bytes_only(cfg) -> None:  # noqa: ANN001
    """turns.find's answer handed to next_turn (at: the body compared with the turn before
    once, issue 29) is for the bytes it was found in: another body continuing the same
    turn is searched again, and cut as it would be without it."""
    cfg.rules.found.turns = None
    one, two = _turns("hi bob@corp.example.com", "Acme Corp, bob@corp.example.com")
    three = _turns("hi bob@corp.example.com", "bob@corp.example.com, and more words than the other")[1]
    pipeline.mask_request(API, one, cfg, "/v1/messages", HDRS)
    at = turns.find(cfg.rules, API, two, cfg.disguises)
    assert at is not None and at[2] is two and at[3] == turns.tail(cfg.rules, API, two, cfg.disguises)
    got = turns.next_turn(API, three, cfg.rules, cfg.disguises, at)
    want = turns.next_turn(API, three, cfg.rules, cfg.disguises)
    assert got is not None and want is not None and got.body == want.body and got.session.placeholders == want.session.placeholders
    mine = turns.next_turn(API, two, cfg.rules, cfg.disguises, at)
    assert mine is not None and mine.body == turns.next_turn(API, two, cfg.rules, cfg.disguises).body  # type: ignore[union-attr]
