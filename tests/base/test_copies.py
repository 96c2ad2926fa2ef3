"""base/copies.py: an original a rule found only by its context (a key, a keyword, where
a domain ends) is masked wherever the request copies it, and the leak guard refuses a
copy masking could not reach.

The shipped rules are in force (PASSWORD, SECRET, PHONE_NATIONAL, EMAIL: the ones that
read context). Each case is the conversation of probe J1: the client's text gives the
context, the model's answer names the value by its placeholder, the client gets it
restored and sends it back, where nothing around it says what it is."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import pipeline
from disguiselib.apis.registry import recognise
from disguiselib.base import copies
from disguiselib.config import build_config
from disguiselib.rules.session import Session

API = recognise("POST", "/v1/messages")
HEADERS = [("content-type", "application/json")]
CFG = build_config([], True, [])

# (what the client wrote, the original a rule found there by its context, the model's
# answer as the client reads it: the original without that context)
CASES = [
    ('db_password = "hunter2xyz9Q"', "hunter2xyz9Q", "Your value hunter2xyz9Q is weak"),
    ("export STRIPE_SECRET=Xk29fLq0ZbA7pWm3", "Xk29fLq0ZbA7pWm3", "Rotate Xk29fLq0ZbA7pWm3 now"),
    ("write to bob@corp-mail.com", "bob@corp-mail.com", "The bob@corp-mail.com-related thread is open"),
]


def mask(messages: list, **extra: object) -> pipeline.Verdict:
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": messages, **extra}).encode()
    return pipeline.mask_request(API, body, CFG, "/v1/messages", HEADERS)


@pytest.mark.parametrize(("said", "original", "answer"), CASES)
def test_the_answer_sent_back_is_masked_as_the_model_wrote_it(said: str, original: str, answer: str) -> None:
    got = mask([{"role": "user", "content": said}, {"role": "assistant", "content": answer},
                {"role": "user", "content": "ok"}])  # fmt: skip
    assert isinstance(got, pipeline.Masked), got
    sent = json.loads(got.body)["messages"]
    placeholder = next(p for p, o in got.session.placeholders.items() if o == original)
    assert original not in got.body.decode()
    assert sent[1]["content"] == answer.replace(original, placeholder)


@pytest.mark.parametrize(("said", "original", "answer"), CASES)
def test_a_copy_before_its_context_is_masked_too(said: str, original: str, answer: str) -> None:
    """The copy comes first (a system prompt, a tool result printed earlier): masked all the same."""
    got = mask([{"role": "user", "content": said}], system=answer)
    assert isinstance(got, pipeline.Masked), got
    assert original not in got.body.decode()


def test_a_copy_where_masking_reads_nothing_goes_as_it_came() -> None:
    """A signed thinking block is the provider's own, sent back byte-identical: a copy in
    it is neither masked nor refused."""
    thinking = {"type": "thinking", "thinking": "The value hunter2xyz9Q is weak.", "signature": "c2ln"}
    got = mask([{"role": "user", "content": 'db_password = "hunter2xyz9Q"'},
                {"role": "assistant", "content": [thinking, {"type": "text", "text": "Weak."}]}])  # fmt: skip
    assert isinstance(got, pipeline.Masked), got
    assert json.loads(got.body)["messages"][1]["content"][0] == thinking


def test_a_copy_no_reading_finds_is_refused() -> None:
    """Written with escapes JSON reads as the same text, a copy is still the original."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": 'db_password = "hunter2xyz9Q"'},
        {"role": "assistant", "content": "Your value HUNTER is weak"}]}).replace("HUNTER", "\\u0068unter2xyz9Q")  # fmt: skip
    got = pipeline.mask_request(API, body.encode(), CFG, "/v1/messages", HEADERS)
    assert isinstance(got, pipeline.Masked) and "hunter2xyz9Q" not in json.loads(got.body)["messages"][1]["content"] \
        or isinstance(got, pipeline.Refused), got  # fmt: skip


def test_left_over_reads_edits_and_replacements() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1" y pw1'
    assert copies.left_over(text, [(3, 6, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}
    assert copies.left_over(text, [(3, 6, "[PASSWORD_1]"), (10, 13, "[PASSWORD_1]")], s) == {}
    again = 'x "[PASSWORD_1]" y pw1' + " " * 64  # a token encoded again whole: its new text read too
    assert copies.left_over(text, [(0, 13, again)], s) == {"pw1": "PASSWORD"}
    assert copies.left_over('x "pw1" \\/', [(3, 6, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}  # an odd escape
    assert copies.left_over(text, [], Session()) == {}


def test_add_keeps_what_masking_replaced() -> None:
    s = Session()
    ph = s.placeholder("PASSWORD", "pw1")
    edits = copies.add("pw1 and pw1x", [(0, 3, ph)], {"pw1": "PASSWORD"}, s)
    assert edits == [(0, 3, ph), (8, 11, ph)]
    assert copies.spellings('a"b') == ('a\\"b',) and copies.spellings("é") == ("é", "\\u00e9")


_filler = st.sampled_from(["the", "value", "is", "weak", "\n", "é", '"', "ok", "see"])
_words = st.lists(_filler, max_size=5).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), before=_words, after=_words, where=st.sampled_from(["system", "assistant", "tool"]))
def test_no_copy_of_a_found_original_leaves(case: tuple[str, str, str], before: str, after: str, where: str) -> None:
    said, original, _ = case
    copy = f"{before} {original} {after}"
    messages: list[dict] = [{"role": "user", "content": said}]
    extra: dict = {}
    if where == "system":
        extra["system"] = copy
    elif where == "assistant":
        messages.append({"role": "assistant", "content": copy})
    else:
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": copy}]}]  # fmt: skip
    got = mask(messages, **extra)
    assert isinstance(got, pipeline.Masked), got
    assert original not in got.body.decode("utf-8")
    assert json.dumps(original)[1:-1] not in got.body.decode("utf-8")



class _BigToken:
    """masking._Token as left_over reads it: where its text begins in s, its own edits."""

    def __init__(self, start: int, edits: list) -> None:
        self.start, self.edits = start, edits


def test_left_over_counts_characters_not_bytes() -> None:
    """A body with non-ASCII text before the copies: places in characters."""
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'é ü "pw1" 😀 pw1'
    first, second = text.index("pw1"), text.rindex("pw1")
    assert copies.left_over(text, [(first, first + 3, "[PASSWORD_1]")], s) == {"pw1": "PASSWORD"}
    covered = [(first, first + 3, "[PASSWORD_1]"), (second, second + 3, "[PASSWORD_1]")]
    assert copies.left_over(text, covered, s) == {}


def test_left_over_reads_a_big_texts_own_edits_and_every_replacement() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1 and pw1" y'
    token = _BigToken(3, [(0, 3, "[PASSWORD_1]")])  # the second copy, at 11, no edit of the token covers
    assert copies.left_over(text, [(3, 14, token)], s) == {"pw1": "PASSWORD"}
    token = _BigToken(3, [(0, 3, "[PASSWORD_1]"), (8, 11, "[PASSWORD_1]")])
    assert copies.left_over(text, [(3, 14, token)], s) == {}
    again = "y" * 63 + "\\/"  # a token encoded again whole, holding an odd escape: all found originals
    assert copies.left_over("x pw1", [(2, 5, again)], s) == {"pw1": "PASSWORD"}


def test_left_over_sees_an_original_inside_another() -> None:
    """Two found originals overlapping in the text: each occurrence is looked at."""
    s = Session()
    s.placeholder("A", "abc")
    s.placeholder("B", "bcd")
    assert copies.left_over("abcd", [(0, 3, "[A_1]")], s) == {"bcd": "B"}


def test_left_over_reads_lone_surrogates() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    assert copies.left_over('"\ud800 pw1"', [], s) == {"pw1": "PASSWORD"}


def test_add_replaces_every_uncovered_copy_counted() -> None:
    s = Session()
    ph = s.placeholder("PASSWORD", "pw1")
    s.count("PASSWORD", "pw1")
    edits = copies.add("pw1 pw1 pw1pw1", [(4, 7, ph)], {"pw1": "PASSWORD"}, s)
    assert edits == [(0, 3, ph), (4, 7, ph), (8, 11, ph), (11, 14, ph)]
    assert s.counts == {"PASSWORD": 4} and s.masked == 4 and not s.literals
    assert copies.add("xpw1", [(0, 1, "[X_1]")], {"pw1": "PASSWORD"}, s) == [(0, 1, "[X_1]"), (1, 4, ph)]
    assert copies.add("pw1", [(0, 2, "[X_1]")], {"pw1": "PASSWORD"}, s) == [(0, 2, "[X_1]")]


def test_a_copy_gets_the_originals_fake() -> None:
    """With fakes on, a copy is given the fake its original was given, not a placeholder."""
    from disguiselib.rules import mappings, rules

    fakes = rules.Rules(mappings.from_dict({"patterns": [{"name": "EMAIL", "regex": r"\b[a-z]+@[a-z]+\.example\.com\b"}]}),
                        b"copies-fakes-key")  # fmt: skip
    s = Session()
    fake = s.placeholder("EMAIL", "ann@a.example.com", fakes.faker)
    assert not fake.startswith("[")
    got = copies.add("ann@a.example.com-x", [], {"ann@a.example.com": "EMAIL"}, s, fakes.faker)
    assert got == [(0, 17, fake)]
    s2 = Session()
    assert copies.add("ann@a.example.com", [], {"ann@a.example.com": "EMAIL"}, s2, fakes.faker)[0][2] == fake


def test_left_over_places_each_original_in_order_of_place() -> None:
    """Two originals found, the one found later standing first, in non-ASCII text; an
    occurrence an edit covers only in part is not covered."""
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    s.placeholder("SECRET", "qq2")
    text = 'é "qq2" ü "pw1" qq2'
    q, p = text.index("qq2"), text.index("pw1")
    assert copies.left_over(text, [(q, q + 3, "[SECRET_1]"), (p, p + 3, "[PASSWORD_1]")], s) == {"qq2": "SECRET"}
    last = text.rindex("qq2")
    edits = [(q, q + 3, "[SECRET_1]"), (p, p + 3, "[PASSWORD_1]"), (last, last + 2, "[SECRET_1]")]
    assert copies.left_over(text, edits, s) == {"qq2": "SECRET"}


def test_left_over_places_a_big_texts_edits_from_its_start() -> None:
    s = Session()
    s.placeholder("PASSWORD", "pw1")
    text = 'x "pw1 ab" y'
    assert copies.left_over(text, [(3, 9, _BigToken(3, [(4, 6, "[Z_1]")]))], s) == {"pw1": "PASSWORD"}


def test_left_over_encodes_what_holds_a_lone_surrogate() -> None:
    s = Session()
    s.placeholder("PASSWORD", "x\ud800y")
    assert copies.left_over("a x\ud800y", [], s) == {"x\ud800y": "PASSWORD"}
    s.placeholder("A", "abc")
    s.placeholder("B", "bcd")
    again = "\ud800" + "y" * 64 + "abcd"  # a token encoded again whole: every original in it, overlapping too
    assert copies.left_over("z", [(0, 1, again)], s) == {"abc": "A", "bcd": "B"}
