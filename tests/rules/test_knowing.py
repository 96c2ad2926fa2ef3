"""The leak guard's rule set for one request (rules/knowing.py): what the request's own
disguises make is not an original; what the client wrote beside them still is."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.config import build_config
from disguiselib.rules import mappings
from disguiselib.rules.knowing import Knowing, knowing
from disguiselib.rules.rules import Rules
from disguiselib.rules.session import Session

CTX = ('"token": "', '"')
PW = ('"password": "', '"')


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Rules:
    """A literal, with the shipped patterns (SECRET, PASSWORD, EMAIL, ...) beside it."""
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    return build_config([str(d / "m.yaml")], True, []).rules


def _session(rules: Rules, *texts: str) -> Session:
    s = Session()
    for t in texts:
        rules.mask(t, s)
    return s


def test_without_disguises_the_rules_are_the_rules(rules: Rules) -> None:
    assert knowing(rules, None) is rules
    assert knowing(rules, Session()) is rules
    assert isinstance(knowing(rules, _session(rules, "Acme Corp")), Knowing)  # a literal's disguise is one


def test_what_a_placeholder_makes_is_no_original(rules: Rules) -> None:
    """`:bob@corp.example.com` is no token (too short without a digit); `:[EMAIL_1]` is one
    to SECRET, by the placeholder's digit. The rules alone refuse it; knowing the request
    does not (nor `Xy7kP9qLm2Zt:[EMAIL_1]`: SECRET takes no token in what the client
    wrote there either). The client's own original beside a placeholder is refused."""
    k = knowing(rules, _session(rules, "bob@corp.example.com"))
    assert leakguard.first(rules, ":bob@corp.example.com", CTX) == "EMAIL"
    for v, ctx in ((":", CTX), ("vault:", PW), ("mailto:", CTX), ("Xy7kP9qLm2Zt:", CTX)):
        assert rules.find(ctx[0] + v + "bob@corp.example.com" + ctx[1])[0][0] == "EMAIL", v  # as masked
        assert leakguard.first(rules, v + "[EMAIL_1]", ctx) is not None, v
        assert leakguard.first(k, v + "[EMAIL_1]", ctx) is None, v
    assert leakguard.first(k, "[EMAIL_1] and bob@corp.example.com") == "EMAIL"


def test_a_literals_disguise_is_no_password_but_what_follows_it_is(rules: Rules) -> None:
    """`"password": "Acme Corp"` goes out as `Zenith Labs`, which PASSWORD finds alone: not
    refused. A password written on after the literal (the literal won the place, so
    PASSWORD did not mask it) is: what the client wrote is there for the rule."""
    k = knowing(rules, _session(rules, "Acme Corp"))
    assert leakguard.first(rules, "Zenith Labs", PW) == "PASSWORD"
    assert leakguard.first(k, "Zenith Labs", PW) is None
    for rest in (" ", "9", ".", ";"):  # nothing of a password left beside the disguise
        assert leakguard.first(rules, "Zenith Labs" + rest, PW) == "PASSWORD"
        assert leakguard.first(k, "Zenith Labs" + rest, PW) is None, rest
    assert leakguard.first(k, "Zenith Labs Hunter2xyz9", PW) == "PASSWORD"
    assert leakguard.first(k, "Hunter2xyz9", PW) == "PASSWORD"  # no disguise: as the rules say


def test_a_fake_is_no_original_and_a_span_equal_to_one_is_dropped_at_once() -> None:
    rules = Rules(mappings.from_dict({"patterns": [{"name": "NUM", "regex": "[0-9]{6,}"}]}))
    s = Session()
    s.placeholders["123456"] = "987654"  # a fake (as disguise_fakes makes them)
    k = knowing(rules, s)
    assert rules.find("id 123456") and k.find("id 123456") == []
    assert k.find("id 123456 and 555555") == [("NUM", 14, 20)]
    # a span reaching past the fake into the client's own digits: an original where those
    # are enough for the rule alone, not where they are not
    assert k.find("id 123456777777") == [("NUM", 3, 15)]
    assert rules.find("id 123456777") and k.find("id 123456777") == []


_PIECE = st.text("ab é😀", max_size=4)
_ORIG = st.sampled_from(["o", "oé", "o😀o😀o😀o😀o😀o😀o😀"])


@settings(max_examples=400, deadline=None)
@given(_PIECE, _PIECE, _PIECE, _ORIG, _ORIG, st.booleans(), st.sampled_from(["[^ ]+", r"[1qéa][^ \]q]*"]))
def test_a_span_is_mapped_to_the_clients_text_wherever_the_disguises_lie(
    before: str, mid: str, after: str, o1: str, o2: str, swap: bool, rx: str
) -> None:
    """One rule (runs of anything but a space; or runs that begin and end inside a
    disguise) over text in one-, two- and four-byte characters, two disguises (`[X_1]`,
    `Zq`), each longer or shorter than its original, side by side or apart: a span
    holding a disguise is an original exactly when, in the text as the client wrote it,
    the rule finds there some of the client's own characters beside the originals, and
    finds something there still with the disguises blanked. Every span that holds no
    disguise is kept."""
    rules = Rules(mappings.from_dict({"patterns": [{"name": "RUN", "regex": rx}]}))
    d1, d2 = ("Zq", "[X_1]") if swap else ("[X_1]", "Zq")
    s = Session()
    s.placeholders.update({d1: o1, d2: o2})
    text = before + d1 + mid + d2 + after
    client = before + o1 + mid + o2 + after
    # each disguise's place in text and its original's in the client's text
    t1, c1 = len(before), len(before)
    t2, c2 = t1 + len(d1) + len(mid), c1 + len(o1) + len(mid)
    places = [(t1, t1 + len(d1), c1, c1 + len(o1)), (t2, t2 + len(d2), c2, c2 + len(o2))]

    def to_client(p: int, end: bool) -> int:
        shift = 0
        for ts, te, cs, ce in places:
            if ts < p < te:
                return ce if end else cs
            if p >= te:
                shift = ce - te
        return p + shift

    theirs = set(range(c1, c1 + len(o1))) | set(range(c2, c2 + len(o2)))
    blanked = before + "\0" * len(d1) + mid + "\0" * len(d2) + after
    kept = knowing(rules, s).find(text)
    for _, a, b in rules.find(text):
        if not any(a < te and b > ts for ts, te, _, _ in places):
            assert ("RUN", a, b) in kept
            continue
        ua, ub = to_client(a, False), to_client(b, True)
        want = any(x < ub and y > ua and set(range(x, y)) - theirs for x, y in rules.rule_spans("RUN", client))
        want = want and any(x < b and y > a for x, y in rules.rule_spans("RUN", blanked))
        assert (("RUN", a, b) in kept) == want, (text, a, b)


def test_spans_are_answered_by_place_touching_is_not_overlapping() -> None:
    """Spans: a span marked when it holds a character outside theirs; a span that ends
    where the asked range begins, or begins where it ends, is not in it; overlapping
    spans are joined, touching ones are not."""
    from disguiselib.rules.knowing import Spans

    s = Spans([(2, 4), (0, 2), (6, 9), (7, 8)], [[2, 4], [6, 9]])
    assert (s.starts, s.ends, s.marks) == ([0, 2, 6], [2, 4, 9], [True, False, False])
    assert not s.any_in(2, 4) and s.any_in(1, 3) and not s.any_in(4, 6) and not s.any_in(6, 20)
    assert Spans([(3, 5)], [[0, 4]]).marks == [True] and Spans([(3, 5)], [[0, 5]]).marks == [False]
    assert Spans([(3, 5)], None).marks == [True] and Spans([], None).any_in(0, 9) is False
    assert not Spans([(6, 8)], None).any_in(4, 6) and not Spans([(2, 4)], None).any_in(4, 6)
