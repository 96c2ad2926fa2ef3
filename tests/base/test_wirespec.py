"""The APIs' wire vocabulary (base/wirespec.py): each spec is what its stream reads
(its last events move it to FINISHING, its error names them), every spec is registered,
and a spec's words are its own."""

from __future__ import annotations

import importlib

import pytest

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.bedrock import stream as bedrock_stream
from disguiselib.apis.cohere import stream as cohere_stream
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import legacy
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.apis.registry import SPECS
from disguiselib.base.wirespec import SSE, WireSpec
from strategies import PLACEHOLDERS, RULES

# Each SSE API's stream class, by its spec.
STREAMS = {
    anthropic.SPEC: anthropic.AnthropicStream,
    openai_chat.SPEC: openai_chat.ChatStream,
    legacy.SPEC: legacy.CompletionsStream,
    openai_responses.SPEC: openai_responses.ResponsesStream,
    cohere_stream.SPEC: cohere_stream.CohereStream,
}


def test_every_spec_is_registered_once_and_names_modules_that_exist() -> None:
    assert len({s.name for s in SPECS}) == len(SPECS)
    for spec in SPECS:
        for m in spec.modules:
            importlib.import_module(f"disguiselib.{m}")
        assert spec.terminal <= spec.events or not spec.events or spec.inner is not None, spec.name
    for spec in STREAMS:
        assert spec in SPECS


@pytest.mark.parametrize("spec", list(STREAMS), ids=lambda s: s.name)
def test_a_streams_last_events_are_its_specs(spec: WireSpec) -> None:
    """Each terminal event (or the done line) of the spec ends the stream (FINISHING),
    and a stream cut before it names them in its error; an event of the spec that is no
    terminal one does not."""
    cls = STREAMS[spec]
    assert cls.TERMINAL == spec.ends and set(spec.markers) <= set(cls.MARKERS)
    lasts = [f"data: {spec.done}\n\n"] if spec.done else [
        f'event: {t}\ndata: {{"type":"{t}"}}\n\n' for t in sorted(spec.terminal)
    ]  # fmt: skip
    for last in lasts:
        s = cls(RULES.restorer(PLACEHOLDERS))
        s.feed(last.encode())
        assert s.terminated, last
    s = cls(RULES.restorer(PLACEHOLDERS))
    out = s.feed(b'data: {"type":"ping"}\n\n') + s.flush()
    assert not s.terminated or spec.done is None and "ping" in spec.terminal
    assert f"ended before {spec.ends}".encode() in out


def test_converse_and_invoke_end_where_their_specs_say() -> None:
    assert bedrock_stream.ConverseStream.TERMINAL == "messageStop" == bedrock_stream.CONVERSE_SPEC.ends
    assert bedrock_stream.InvokeStream.TERMINAL == anthropic.SPEC.ends  # Claude's events inside
    assert not bedrock_stream.INVOKE_SPEC.vocabulary & anthropic.SPEC.vocabulary


def test_ends_markers_and_vocabulary() -> None:
    two = WireSpec("x", ("x",), (SSE,), events=frozenset({"a.start", "a.stop", "b.stop", "ping"}),
                   terminal=frozenset({"b.stop", "a.stop"}), error_event="error",
                   members=frozenset({"widgets"}))  # fmt: skip
    assert two.ends == "a.stop or b.stop" and two.markers == (b"a.stop", b"b.stop")
    # plain English event names are nobody's; members and coined names are the API's
    assert two.vocabulary == {"a.start", "a.stop", "b.stop", "widgets"}
    done = WireSpec("y", ("y",), (SSE,), done="[DONE]")
    assert done.ends == "data: [DONE]" and done.markers == (b"[DONE]",) and done.vocabulary == {"[DONE]"}
    inner = WireSpec("z", ("z",), (SSE,), terminal=frozenset({"a.stop"}), inner=two)
    assert inner.vocabulary == frozenset()
