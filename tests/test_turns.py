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

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disguiselib import pipeline, turns
from disguiselib.apis.registry import recognise
from disguiselib.config import build_config
from disguiselib.rules.rules import Session

API = recognise("POST", "/v1/messages")
HDRS = [("content-type", "application/json")]
REAL = Path(__file__).parent / "fixtures" / "real" / "anthropic"
MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Müller: Mueller_X
"""


@pytest.fixture(scope="module", params=["placeholders", "fakes"])
def cfg(request, tmp_path_factory):  # noqa: ANN001, ANN201
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], True, [], b"f" * 32 if request.param == "fakes" else None)


@pytest.fixture(scope="module", autouse=True)
def small_bodies() -> Iterator[None]:
    was = turns.MIN_BYTES
    turns.MIN_BYTES = 0
    yield
    turns.MIN_BYTES = was


@contextlib.contextmanager
def no_turns() -> Iterator[None]:
    was = turns.APIS
    turns.APIS = frozenset()
    try:
        yield
    finally:
        turns.APIS = was


def state(s: Session) -> tuple:
    return (list(s.placeholders.items()), list(s._by_key.items()), dict(s._count), s.masked, dict(s.counts),
            s.literals, s.fakes, s.reserved, s.keyed, s.copied, s.json_out, s.documents, s.cited)  # fmt: skip


def verdict(v: pipeline.Verdict) -> tuple:
    if isinstance(v, pipeline.Masked):
        return ("masked", v.body, state(v.session), v.headers)
    return (type(v).__name__, v)


CUT: list[int] = []  # next turns cut, over every conversation (test_the_property_test_cuts)


class Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(record.getMessage())


def turn_by_turn(cfg, bodies: list[bytes]) -> int:  # noqa: ANN001
    """Each body masked with the turns remembered, checked against the full path (its
    verdict, and the warnings it logs); the number of next turns cut."""
    cfg.rules.found.turns = None
    said = Said()
    log = logging.getLogger("disguise")
    log.addHandler(said)
    try:
        for body in bodies:
            was = turns.turns_of(cfg.rules)
            hits, n = (was.hits if was is not None else 0), turns.tail(cfg.rules, API, body, cfg.disguises)
            got = pipeline.mask_request(API, body, cfg, "/v1/messages", HDRS)
            now = turns.turns_of(cfg.rules)
            if now is not None and now.hits > hits:  # cut: turns.tail said so, and how much it masked
                assert n is not None and 0 < n < len(body)
            warned, said.said = said.said, []
            with no_turns():
                want = pipeline.mask_request(API, body, cfg, "/v1/messages", HDRS)
            assert verdict(got) == verdict(want)
            assert warned == said.said
            said.said = []
    finally:
        log.removeHandler(said)
    store = turns.turns_of(cfg.rules)
    CUT.append(store.hits if store is not None else 0)
    return CUT[-1]


_PIECES = [
    "plain words ", "Acme Corp", "Müller", " bob@corp.example.com", " x@y.io ", "password: abc123XYZ", "+1 415 555 2671",
    " 10.1.2.3", "é", "😀", "\n", " ", "x/y", "more text ",
]  # fmt: skip
# what only the whole body tells (a text holds one now and then): placeholders and fakes the
# client typed, a literal's disguise, a copy of a password bare, escapes no JSON writer makes
# (an escape no writer makes, with any original found: every turn the full path's, copied once)
_RARE = ["[EMAIL_1]", "[EMAIL_2]", "Zenith Labs", " abc123XYZ", "carol@mail.example"] * 2 + ["a\\/b", "\\u0041"]
_text = st.tuples(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5),
                  st.sampled_from(_RARE + [""] * 16 * len(_RARE)), st.integers(0, 5)).map(
    lambda t: " ".join(t[0][: t[2]] + [t[1]] + t[0][t[2] :]))  # fmt: skip


_thinking = st.lists(st.sampled_from(["I should ", "[EMAIL_1]", "[PASSWORD_1]", "Zenith Labs", "look", "\n"] * 10
                                     + [" bob@corp.example.com"]), min_size=1, max_size=5).map("".join)


@st.composite
def message(draw, role: str | None = None) -> dict:  # noqa: ANN001
    role = role or draw(st.sampled_from(["user", "assistant"]))
    if role == "user":
        if draw(st.booleans()):
            return {"role": "user", "content": draw(_text)}
        blocks = [{"type": "text", "text": draw(_text)}]
        if draw(st.booleans()):
            blocks.insert(0, {"type": "tool_result", "tool_use_id": "toolu_1", "content": draw(_text)})
        return {"role": "user", "content": blocks}
    blocks = []
    if draw(st.booleans()):  # sent back as it came: what the model read, disguised (an original now and then)
        t = draw(_thinking)
        blocks.append({"type": "thinking", "thinking": t, "signature": "sig-" + t[::-1]})
    blocks.append({"type": "text", "text": draw(_text)})
    if draw(st.booleans()):
        blocks.append({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": draw(_text)}})
    return {"role": "assistant", "content": blocks}


def cache_last(messages: list[dict]) -> list[dict]:
    """cache_control moved to the newest message, as Claude Code does."""
    out = []
    for m in messages:
        m = json.loads(json.dumps(m))
        if isinstance(m["content"], list):
            for b in m["content"]:
                b.pop("cache_control", None)
        out.append(m)
    if out and isinstance(out[-1]["content"], list):
        out[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


@st.composite
def conversation(draw) -> list[bytes]:  # noqa: ANN001
    ascii_ = draw(st.booleans())
    first = draw(st.booleans())  # the messages before system and tools (Claude Code) or after
    system = [{"type": "text", "text": draw(_text)}]
    tools = [{"name": "bash", "description": draw(_text), "input_schema": {"type": "object"}}]
    messages = draw(st.lists(message(), min_size=1, max_size=3))
    bodies = []
    for _ in range(draw(st.integers(2, 5))):
        doc: dict = {"model": "claude-x", "max_tokens": 1024}
        cached = cache_last(messages) if draw(st.booleans()) else messages
        if first:
            doc.update(messages=cached, system=system, tools=tools)
        else:
            doc.update(system=system, tools=tools, messages=cached)
        doc["stream"] = True
        bodies.append(json.dumps(doc, ensure_ascii=ascii_, separators=(",", ":")).encode())
        change = draw(st.sampled_from(["append", "append", "append", "edit", "drop", "system"]))
        if change == "edit":
            messages[draw(st.integers(0, len(messages) - 1))] = draw(message())
        elif change == "drop" and len(messages) > 1:
            messages.pop()
        elif change == "system":
            system = [{"type": "text", "text": draw(_text)}]
        messages = messages + draw(st.lists(message(), min_size=1, max_size=3))
    return bodies


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(conversation())
def test_every_turn_is_what_the_full_path_makes_of_it(cfg, bodies: list[bytes]) -> None:  # noqa: ANN001
    turn_by_turn(cfg, bodies)


def test_the_property_test_cuts(cfg) -> None:  # noqa: ANN001
    """The conversations above are cut, not only sent the full path: 60 of them, drawn
    alike on every run (derandomized, and defined here: neither the profile nor
    DISGUISE_EXAMPLES' share changes their count; the property test's own ran 37 and 17
    cuts in 60 at a share of 0.2, under its 50 for 300), cut at least 10 times."""
    CUT.clear()

    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(conversation())
    def run(bodies: list[bytes]) -> None:
        turn_by_turn(cfg, bodies)

    run()
    assert len(CUT) >= 60 and sum(CUT) >= 10, (len(CUT), sum(CUT))


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
