"""Every string-bearing field of the installed SDKs' request, response and stream-event
types has a row in docs/fields.md, and the code does with it what its row says.

A new SDK release with a new field fails here (no row) instead of leaking; a rule change
that contradicts the documented decision fails here too (each path is probed through the
real masker or reverser: tests/fields_probe.py)."""

from __future__ import annotations

import pytest
from fields_probe import observe
from sdk_fields import DOC, ROOTS, all_paths, decide, load_tables

DECISIONS = {
    "masked", "masked-keys", "schema", "untouched", "refused", "not-in-body", "restored", "restored-json", "restored-keys",
    "windowed", "windowed-json", "logprobs", "media",
}  # fmt: skip
# Free JSON (an SDK `object`/`dict` field) that the table does not describe is unknown:
# its keys are masked (restored) with its values (fields.GENERIC), so for such a path a
# row's masked (restored) is observed as masked-keys (restored-keys).
SAME = {("masked", "masked-keys"), ("restored", "restored-keys")}
UNPROBED = {"logprobs", "not-in-body"}  # logprobs: tests/base/test_fields_streams.py


PATHS = all_paths()
TABLES = load_tables()


def test_the_tables_are_well_formed() -> None:
    assert set(TABLES) == set(ROOTS), f"docs/fields.md has tables {sorted(TABLES)}"
    for rows in TABLES.values():
        assert rows
        for row in rows:
            target = row.decision.split()
            if target[0] == "see":
                assert target[1] in TABLES, row
            else:
                assert row.decision in DECISIONS, row
            assert row.why, row


def test_the_sdk_walk_finds_the_fields_we_know() -> None:
    """The walk itself works (a walk that found nothing would make the others pass)."""
    seen = {(s, p) for s, p, _ in PATHS}
    for s, p in [
        ("anthropic-request", ".messages[].content[]<tool_result>.content"),
        ("anthropic-request", ".metadata.user_id"),
        ("chat-request", ".messages[].tool_calls[]<function>.function.arguments"),
        ("responses-request", ".prompt.variables{}"),
        ("responses-stream", "<response.mcp_call_arguments.delta>.delta"),
        ("chat-stream", ".choices[].delta.content"),
    ]:
        assert (s, p) in seen, (s, p)
    assert len(PATHS) > 1000


def test_every_sdk_field_has_a_row() -> None:
    missing = [f"{s} {p} ({k})" for s, p, k in PATHS if decide(TABLES, s, p) is None]
    assert not missing, f"{len(missing)} SDK fields have no row in {DOC.name}:\n" + "\n".join(missing[:50])


@pytest.mark.parametrize("surface", list(ROOTS))
def test_every_field_behaves_as_its_row_says(surface: str) -> None:
    wrong = []
    for s, p, kind in PATHS:
        if s != surface:
            continue
        found = decide(TABLES, s, p)
        if found is None or found[0].decision in UNPROBED:
            continue
        row = found[0]
        got = observe(s, p, kind)
        if got != row.decision and not (kind == "json" and (row.decision, got) in SAME):
            wrong.append(f"{p} ({kind}): row `{row.pattern}` says {row.decision}, the code: {got}")
    assert not wrong, f"{len(wrong)} fields of {surface} behave otherwise than {DOC.name} says:\n" + "\n".join(
        wrong[:50]
    )
