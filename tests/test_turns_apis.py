"""A conversation's next turn cut from the turn before (turns.py) on every API that
declares its conversation sent whole at every turn (registry.Api.turns): Claude on
Vertex AI and on Bedrock (the Messages body, anthropic_version in it), OpenAI's Chat
Completions and Mistral on Vertex AI (its body), Gemini (on the Gemini API and Vertex
AI: its contents, thought signatures) and Bedrock's Converse. Random conversations, and the recorded
Chat bodies sent turn by turn, against the full path: the same bytes, session and
refusals (tests/turns_util.py). Anthropic's own: tests/test_turns.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from turns_util import CUT, any_size, api_conversation, config, conversation, turn_by_turn

from disguiselib import turns
from disguiselib.apis import registry

REAL = Path(__file__).parent / "fixtures" / "real"
VERTEX = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"
BEDROCK = "/model/anthropic.claude-x-v1:0/invoke-with-response-stream"
CHAT = "/v1/chat/completions"
MISTRAL = "/v1/projects/p/locations/us-central1/publishers/mistralai/models/mistral-x:streamRawPredict"
GEMINI = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
VERTEX_GEMINI = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-x:streamGenerateContent"
CONVERSE = "/model/anthropic.claude-x-v1:0/converse-stream"
CLAUDE = [
    pytest.param(registry.VERTEX_ANTHROPIC, VERTEX, {"anthropic_version": "vertex-2023-10-16"}, id="vertex"),
    pytest.param(registry.BEDROCK_INVOKE, BEDROCK, {"anthropic_version": "bedrock-2023-05-31"}, id="bedrock"),
]
OTHERS = [
    pytest.param(registry.OPENAI_CHAT, CHAT, "chat", id="chat"),
    pytest.param(registry.VERTEX_MISTRAL, MISTRAL, "chat", id="mistral"),
    pytest.param(registry.GOOGLE_GEMINI, GEMINI, "gemini", id="gemini"),
    pytest.param(registry.VERTEX_GEMINI, VERTEX_GEMINI, "gemini", id="vertex-gemini"),
    pytest.param(registry.BEDROCK_CONVERSE, CONVERSE, "converse", id="converse"),
]


@pytest.fixture(scope="module", params=["placeholders", "fakes"])
def cfg(request, tmp_path_factory):  # noqa: ANN001, ANN201
    return config(tmp_path_factory, fakes=request.param == "fakes")


@pytest.fixture(scope="module", autouse=True)
def small_bodies() -> Iterator[None]:
    with any_size():
        yield


def test_the_apis_that_declare_it_are_those_cut_and_each_has_a_conversation() -> None:
    """registry.Api.turns is the one place that says so; each API that does has a
    conversation turns.py can cut (its request rule's last prompt member, an array), no
    text headers and one JSON body (else applies() would leave it inert)."""
    apis = {a.name: a for a in [*registry.BY_NAME.values(), *registry.BEDROCK_FAMILIES.values()]}
    cut = sorted(n for n, a in apis.items() if a.turns)
    assert cut == ["anthropic.messages", "aws.bedrock.converse", "aws.bedrock.invoke", "google.gemini", "openai.chat",
                   "vertex.anthropic", "vertex.gemini", "vertex.mistral"]  # fmt: skip
    for n in cut:
        assert turns._rule(apis[n]) is not None and turns.applies(apis[n], None), n
    assert not turns.applies(registry.OPENAI_CHAT_UPDATE, None)  # a stored completion's metadata: no conversation


@pytest.mark.parametrize(("api", "path", "head"), CLAUDE)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_turn_of_claude_elsewhere_is_what_the_full_path_makes_of_it(cfg, api, path, head, data) -> None:  # noqa: ANN001
    turn_by_turn(cfg, data.draw(conversation(head)), api, path)


@pytest.mark.parametrize(("api", "path", "shape"), OTHERS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_turn_of_a_conversation_is_what_the_full_path_makes_of_it(cfg, api, path, shape, data) -> None:  # noqa: ANN001
    turn_by_turn(cfg, data.draw(api_conversation(shape)), api, path)


@pytest.mark.parametrize(("api", "path", "bodies", "least"), [
    *(pytest.param(p.values[0], p.values[1], api_conversation(p.values[2]), 4, id=p.id) for p in OTHERS),
    *(pytest.param(p.values[0], p.values[1], conversation(p.values[2]), 4, id=p.id) for p in CLAUDE),
])  # fmt: skip
def test_the_property_tests_cut(cfg, api, path, bodies, least: int) -> None:  # noqa: ANN001
    """The conversations above are cut, not only sent the full path: 60 of them, drawn
    from a fixed seed (neither the profile nor DISGUISE_EXAMPLES' share changes their
    count), cut at least `least` times: 30 to 74 run alone, 8 to 71 after other tests
    (tests/test_turns.py::test_the_property_test_cuts says why they vary)."""
    CUT.clear()

    @seed(29)
    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(bodies)
    def run(bs: list[bytes]) -> None:
        turn_by_turn(cfg, bs, api, path)

    run()
    assert len(CUT) >= 60 and sum(CUT) >= least, (len(CUT), sum(CUT))


@pytest.mark.parametrize(("api", "path", "glob", "member", "least"), [
    (registry.OPENAI_CHAT, CHAT, "openai/chat_*.request.json", "messages", 1),
    # its tool calls' `password` arguments are copies of the first message's words: each
    # turn copies an original a rule found by its key, the full path's (base/copies.py)
    (registry.GOOGLE_GEMINI, GEMINI, "gemini/*.request.json", "contents", 0),
    (registry.BEDROCK_CONVERSE, CONVERSE, "bedrock/converse_*.request.json", "messages", 1),
], ids=["chat", "gemini", "converse"])  # fmt: skip
def test_the_recorded_conversations_turn_by_turn(cfg, api, path: str, glob: str, member: str, least: int) -> None:  # noqa: ANN001
    """The recorded requests (tests/fixtures/real), their conversations sent one message
    more a turn (thought signatures and reasoning as recorded): each turn the full
    path's verdict, cut at least `least` times."""
    hits = 0
    for p in sorted(REAL.glob(glob)):
        doc = json.loads(p.read_text())
        conv = doc.get(member) if isinstance(doc, dict) else None
        if not isinstance(conv, list) or len(conv) < 2:
            continue
        bodies = [json.dumps({**doc, member: conv[:k]}, separators=(",", ":")).encode() for k in range(1, len(conv) + 1)]
        hits += turn_by_turn(cfg, bodies, api, path)
    assert hits >= least
