"""The flow's state machine (state.py): every transition it allows, none it doesn't, and
the observer told after each one."""

from __future__ import annotations

import itertools

import pytest

from disguiselib.errors import StateError
from disguiselib.state import ENDED, TRANSITIONS, FlowRecord, Kind, Phase


def test_every_phase_has_its_transitions_and_ended_phases_have_none() -> None:
    assert set(TRANSITIONS) == set(Phase)
    for p in ENDED:
        assert TRANSITIONS[p] == frozenset()
    # every phase but the first is reachable from CLASSIFIED
    seen, todo = {Phase.CLASSIFIED}, [Phase.CLASSIFIED]
    while todo:
        for n in TRANSITIONS[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    assert seen == set(Phase)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(Phase, Phase)))
def test_transition_allowed_exactly_when_the_table_says(a: Phase, b: Phase) -> None:
    told = []
    rec = FlowRecord(Kind.API, (), observer=told.append)
    rec.phase = a
    if b in TRANSITIONS[a]:
        rec.to(b, "why")
        assert rec.phase is b and rec.reason == "why" and told == [rec]
    else:
        with pytest.raises(StateError):
            rec.to(b)
        assert rec.phase is a and told == []


def test_a_masked_request_walks_to_restored() -> None:
    phases = []
    rec = FlowRecord(Kind.API, (), observer=lambda r: phases.append(r.phase))
    for p in (Phase.MASKED, Phase.STREAMING, Phase.RESTORED):
        rec.to(p)
    assert phases == [Phase.MASKED, Phase.STREAMING, Phase.RESTORED]
    assert not rec.can(Phase.FAILED)
