"""A realtime connection's states (base/realtime.py): its transitions are one
table; any other is refused (StateError) and leaves the connection as it was, and a
connection that is not open lets nothing through either way."""

from __future__ import annotations

import itertools
import json

import pytest

from disguiselib.apis.openai.realtime import OpenAIRealtime
from disguiselib.base.realtime import TRANSITIONS, Connection, Frame, State
from disguiselib.errors import StateError
from disguiselib.pipeline import client_frame
from strategies import RULES

CLIENT = Frame(json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
               "content": [{"type": "input_text", "text": "mail bob@corp.example.com"}]}}).encode())  # fmt: skip
SERVER = Frame(json.dumps({"type": "response.output_text.delta", "item_id": "i", "output_index": 0,
               "content_index": 0, "delta": "[EMAIL_1]"}).encode())  # fmt: skip


def at(state: State) -> Connection:
    c = Connection(OpenAIRealtime, RULES)
    if state is State.CLOSED:
        c.refuse("a test", None)
    elif state is State.ENDED:
        c.end()
    assert c.state is state
    return c


def test_the_table_is_every_state_and_the_only_way() -> None:
    assert set(TRANSITIONS) == set(State)
    assert TRANSITIONS[State.OPEN] == {State.CLOSED, State.ENDED}


@pytest.mark.parametrize(("old", "new"), list(itertools.product(State, State)))
def test_a_transition_not_in_the_table_is_refused(old: State, new: State) -> None:
    c = at(old)
    if new in TRANSITIONS[old]:
        c.to(new)
        assert c.state is new
        return
    with pytest.raises(StateError, match=f"from {old.value} to {new.value}"):
        c.to(new)
    assert c.state is old  # as it was: a closed connection stays closed


@pytest.mark.parametrize("state", [State.CLOSED, State.ENDED])
def test_nothing_passes_a_connection_that_is_not_open(state: State) -> None:
    c = at(state)
    assert client_frame(c, CLIENT).frames == [] and c.server(SERVER).frames == [] and c.end().frames == []
    c.close()  # the adapter giving up on one that is over already: nothing changes
    assert c.state is state
    with pytest.raises(StateError):
        c.refuse("again", None)  # a refusal of a connection that is over is a bug, reported as one
    assert c.state is state


def test_the_adapter_closes_through_the_table() -> None:
    c = at(State.OPEN)
    c.close()
    assert c.state is State.CLOSED and client_frame(c, CLIENT).frames == [] and c.server(SERVER).frames == []
