"""A conversation's next turn cut from the turn before (turns.py) on every API that
declares its conversation sent whole at every turn (registry.Api.turns): Claude on
Vertex AI and on Bedrock (the Messages body, anthropic_version in it), OpenAI's Chat
Completions and Mistral on Vertex AI (its body). Random conversations, and the recorded
Chat bodies sent turn by turn, against the full path: the same bytes, session and
refusals (tests/turns_util.py). Anthropic's own: tests/test_turns.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from turns_util import CUT, chat_conversation, conversation, turn_by_turn

from disguiselib import turns
from disguiselib.apis import registry
from disguiselib.config import build_config

REAL = Path(__file__).parent / "fixtures" / "real" / "openai"
MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Müller: Mueller_X
"""
VERTEX = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"
BEDROCK = "/model/anthropic.claude-x-v1:0/invoke-with-response-stream"
CHAT = "/v1/chat/completions"
MISTRAL = "/v1/projects/p/locations/us-central1/publishers/mistralai/models/mistral-x:streamRawPredict"
CLAUDE = [
    pytest.param(registry.VERTEX_ANTHROPIC, VERTEX, {"anthropic_version": "vertex-2023-10-16"}, id="vertex"),
    pytest.param(registry.BEDROCK_INVOKE, BEDROCK, {"anthropic_version": "bedrock-2023-05-31"}, id="bedrock"),
]
CHATS = [
    pytest.param(registry.OPENAI_CHAT, CHAT, id="chat"),
    pytest.param(registry.VERTEX_MISTRAL, MISTRAL, id="mistral"),
]


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


def test_the_apis_that_declare_it_are_those_cut_and_each_has_a_conversation() -> None:
    """registry.Api.turns is the one place that says so; each API that does has a
    conversation turns.py can cut (its request rule's last prompt member, an array), no
    text headers and one JSON body (else applies() would leave it inert)."""
    apis = {a.name: a for a in [*registry.BY_NAME.values(), *registry.BEDROCK_FAMILIES.values()]}
    cut = sorted(n for n, a in apis.items() if a.turns)
    assert cut == ["anthropic.messages", "aws.bedrock.invoke", "openai.chat", "vertex.anthropic", "vertex.mistral"]
    for n in cut:
        assert turns._rule(apis[n]) is not None and turns.applies(apis[n], None), n
    assert not turns.applies(registry.OPENAI_CHAT_UPDATE, None)  # a stored completion's metadata: no conversation


@pytest.mark.parametrize(("api", "path", "head"), CLAUDE)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_turn_of_claude_elsewhere_is_what_the_full_path_makes_of_it(cfg, api, path, head, data) -> None:  # noqa: ANN001
    turn_by_turn(cfg, data.draw(conversation(head)), api, path)


@pytest.mark.parametrize(("api", "path"), CHATS)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies=chat_conversation())
def test_every_turn_of_a_chat_is_what_the_full_path_makes_of_it(cfg, api, path, bodies: list[bytes]) -> None:  # noqa: ANN001
    turn_by_turn(cfg, bodies, api, path)


@pytest.mark.parametrize(("api", "path", "bodies", "least"), [
    pytest.param(registry.OPENAI_CHAT, CHAT, chat_conversation(), 10, id="chat"),
    pytest.param(registry.VERTEX_MISTRAL, MISTRAL, chat_conversation(), 10, id="mistral"),
    *(pytest.param(p.values[0], p.values[1], conversation(p.values[2]), 10, id=p.id) for p in CLAUDE),
])  # fmt: skip
def test_the_property_tests_cut(cfg, api, path, bodies, least: int) -> None:  # noqa: ANN001
    """The conversations above are cut, not only sent the full path: 60 of them, drawn
    alike on every run (derandomized: neither the profile nor DISGUISE_EXAMPLES' share
    changes their count), cut at least `least` times."""
    CUT.clear()

    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(bodies)
    def run(bs: list[bytes]) -> None:
        turn_by_turn(cfg, bs, api, path)

    run()
    assert len(CUT) >= 60 and sum(CUT) >= least, (len(CUT), sum(CUT))


def test_the_recorded_chats_turn_by_turn(cfg) -> None:  # noqa: ANN001
    """The recorded Chat Completions requests (tests/fixtures/real/openai), their
    messages sent one more a turn; a long tool result in each (over turns.MIN_BYTES
    as a client's would be: here MIN_BYTES is 0) changes nothing."""
    hits = 0
    for p in sorted(REAL.glob("chat_*.request.json")):
        doc = json.loads(p.read_text())
        if len(doc.get("messages", [])) < 2:
            continue
        n = len(doc["messages"])
        bodies = [json.dumps({**doc, "messages": doc["messages"][:k]}, separators=(",", ":")).encode()
                  for k in range(1, n + 1)]  # fmt: skip
        hits += turn_by_turn(cfg, bodies, registry.OPENAI_CHAT, CHAT)
    assert hits >= 2
