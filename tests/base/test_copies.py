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

