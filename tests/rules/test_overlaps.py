"""The load's refusals of disguises that, beside the text around them, make an original
or a placeholder (rules/overlaps.py): each names both rules and quotes neither text; a
large set is still checked in about linear time."""

from __future__ import annotations

import time

import pytest

from disguiselib.errors import MappingError
from disguiselib.rules import mappings
from disguiselib.rules.session import Session

EMAIL = {"name": "EMAIL", "regex": "[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+"}


def refusal(doc: dict) -> str:
    with pytest.raises(MappingError) as e:
        mappings.from_dict(doc, "m.yaml")
    return str(e.value)


# -- a disguise joined with a word beside it -----------------------------------------------


@pytest.mark.parametrize(
    ("literals", "refused", "names"),
    [
        # G6: "Acme Corp Inc" went out as "Zenith Labs Inc": the original "Labs Inc"
        ({"Acme Corp": "Zenith Labs", "Labs Inc": "Qorvexq"}, "literal #1", "literal #2"),
        # and "Team Acme Corp" as "Team Zenith Labs": the original "Team Zenith"
        ({"Acme Corp": "Zenith Labs", "Team Zenith": "Tmqqz"}, "literal #1", "literal #2"),
        # a joint at a word's edge other than a space: `_`, `.`, `-`
        ({"session_id": "thread_id", "id_token": "ident_q"}, "literal #1", "literal #2"),
        ({"Kestrel": "host-a.zenith", "zenith.example": "Qzex"}, "literal #1", "literal #2"),
        ({"Kestrel": "host-a.zenith", "Obscura host": "Qzex"}, "literal #1", "literal #2"),
        # the rule itself (its disguise's end begins its own original)
        ({"Labs Inc": "Zenith Labs"}, "literal #1", "literal #1"),
        # whole words at both ends of the joint, more than one of them
        ({"Acme Corp": "Zenith Labs Group", "Labs Group Inc": "Qqqq"}, "literal #1", "literal #2"),
        ({"Acme Corp": "Zenith Labs Group", "Team Zenith Labs": "Qqqq"}, "literal #1", "literal #2"),
    ],
)
def test_a_disguise_that_spells_an_original_with_its_neighbour_is_refused(
    literals: dict, refused: str, names: str
) -> None:
    msg = refusal({"literals": literals})
    assert msg.startswith(f"m.yaml: {refused}: disguise ") and f"spells the original of m.yaml: {names}" in msg
    for text in (*literals, *literals.values()):
        assert text not in msg


@pytest.mark.parametrize(
    "literals",
    [
        {"Acme Corp": "Zenith Labs", "session_id": "thread_id"},  # "Zenith Labs" + "ession_id": mid-word
        {"nova-internal": "nova", "nova-internal.cloud": "nova.cloud"},  # a disguise that begins an original
        # a joint inside a word of the original: "Labs" + "co", "A" + "cme Corp" (the client
        # would glue the rest of a word to a disguise; the guard refuses that request)
        {"Acme Corp": "Zenith Labs", "Labsco": "Qqqq"},
        {"Acme Corp": "Zenith Labs", "tok_9f8e7d6c5b4a3921": "TOKEN_REDACTED_A"},
        {"Acme Corp": "Zenith Labs", "acme-corp.internal": "zenith.example", "Project Bluebird": "Project Heron",
         "build01.acme-corp.internal": "host-a.zenith.example", "acme_customer_lookup": "crm_lookup"},
    ],
)  # fmt: skip
def test_a_joint_inside_a_word_of_the_disguise_loads(literals: dict) -> None:
    """Only a joint at a word's edge in the disguise and in the original counts: what else
    would join into an original needs the client to glue the rest of a word to a
    disguise (the guard's)."""
    mappings.from_dict({"literals": literals}, "m.yaml")


def test_the_shipped_example_set_loads() -> None:
    from pathlib import Path

    mappings.load(Path(__file__).resolve().parents[2] / "examples" / "literals.yaml")


def test_a_hundred_thousand_literals_are_checked_in_about_linear_time() -> None:
    """bench/reload.py's set, 100,000 literals: the check must not be the load's cost."""
    from disguiselib.rules import overlaps

    def lits(n: int) -> list[mappings.Literal]:
        return [mappings.Literal(f"Customer {i:06d} Ltd", f"Zq{i:06d} xk-{i}", f"f:{i}: literal #{i}") for i in range(n)]

    def took(n: int) -> float:
        ls = lits(n)
        t = time.thread_time()
        overlaps.joined(ls)
        return time.thread_time() - t

    # 8 times the literals: linear takes 8 times as long, a pairwise check 64 (the best
    # of a few runs each, in this thread's CPU time: a wall clock counted the other
    # processes' turns on a shared machine, and CI's two suites side by side read 29x,
    # 2.36 s against 0.08; this thread's CPU, quiet or loaded, 12-14x)
    small, big = min(took(12_500) for _ in range(4)), min(took(100_000) for _ in range(2))
    assert big < 10.0 and big < 24 * small, (small, big)


# -- a disguise shaped like a placeholder -----------------------------------------------------


@pytest.mark.parametrize(
    "disguise",
    [
        "[EMAIL_1]",  # G7: the request's first e-mail would get the same token
        "x[EMAIL_12]y",  # holds one
        "[EMAIL",  # G8: the model's [EMAIL_1] came back as "Alice_1]"
        "Bob [EMAIL_",
        "Bob [EMAIL_3",
        "Bob [",
        "Bob [EM",
        "1] Bob",  # the end of one, then text
        "_1]Bob",
        "IL_1] Bob",
        "0] Bob",
        "] Bob",
        "[EMAIL_1] Bob",
    ],
)
def test_a_disguise_with_a_placeholders_shape_is_refused(disguise: str) -> None:
    msg = refusal({"literals": {"Alice": disguise}, "patterns": [EMAIL]})
    assert msg.startswith("m.yaml: literal #1: disguise holds a placeholder of m.yaml: pattern #1 (EMAIL) ([EMAIL_n])")
    assert "Alice" not in msg and disguise not in msg.replace("([EMAIL_n])", "")


@pytest.mark.parametrize("disguise", ["[Bob]", "Bob [x]", "[EMAILS]", "[EMAIL_0]", "EMAIL_1", "MAIL", "Bob_1", "a]b"])
def test_brackets_that_make_no_placeholder_load(disguise: str) -> None:
    """(`[EMAIL_0]`: numbers begin at 1; `a]b` ends no placeholder: `a` is no digit.)"""
    mappings.from_dict({"literals": {"Alice": disguise}, "patterns": [EMAIL]}, "m.yaml")


def test_the_check_reads_the_placeholders_as_the_session_spells_them() -> None:
    """A placeholder the session issues, as a disguise, is refused for each pattern name."""
    names = ["EMAIL", "API_KEY", "X"]
    patterns = [{"name": n, "regex": f"{n.lower()}=[0-9]+"} for n in names]
    for n in names:
        ph = Session().placeholder(n, "whatever")
        msg = refusal({"literals": {"Alice": ph}, "patterns": patterns})
        assert f"({n}) ([{n}_n])" in msg
    msg = refusal({"literals": {"Alice": "q[API_KEY_7"}, "patterns": patterns})
    assert "(API_KEY)" in msg
