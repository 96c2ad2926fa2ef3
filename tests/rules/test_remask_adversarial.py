"""What masking made of a text it met before, replayed (rules/remask.py), against masking
with nothing remembered, where the conversation test (test_remask.py) does not reach:
the shipped patterns, whose second look widens spans (settle.py), read in every
context a caller gives; sessions numbered by a key, reserving placeholders, or holding
some issued before; tokens each of whose characters is spelled one way or another
(`\\/`, `\\u` in either case, a pair or a lone surrogate); JSON text in a string (tool
arguments: keys and values), tool names and schema keys (OpenAI chat); two threads
masking with one rule set; a text of more than 65,536 literals (counted in batches).
Each gives the same edits or bytes, placeholders, counts, checked document and guard
verdict as masking with nothing remembered, with and without disguise_fakes."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disguiselib.apis.openai.chat import CHAT_REQUEST
from disguiselib.apis.registry import OPENAI_CHAT
from disguiselib.config import build_config
from disguiselib.rules import mappings, remask
from disguiselib.rules.found import Found
from disguiselib.rules.rules import Rules, Session
from tests.rules.test_remask import _RULES, _body, _masked, _remembering, _text

_FAKES_KEY = b"f" * 32
# the shipped patterns (SECRET, PASSWORD, PHONE, PRIVATE_IP, EMAIL, ...) and three literals
_SHIPPED = dataclasses.replace(
    build_config([], True, []).rules.mappings,
    literals=mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs", "Müller": "Mueller_X", "x/y": "slashy"}}).literals,
)
_PIECES = [
    "+1 415 555 2671", " 10.1.2.3", "Acme Corp", " Hunter2xyz9", "vault:", "bob@corp.example.com", "[EMAIL_1]",
    "[PHONE_1]", "[PRIVATE_IP_1]", "Zenith Labs", " ", "é", "😀", "\n", "password: abc123XYZ", "192.168.1.1",
    "Müller", "x/y", " plain text ", "AKIAIOSFODNN7EXAMPLE", "ghp_" + "a" * 36, "\ud800",
]  # fmt: skip
_CONTEXTS = [None, ('"password": "', '"'), ('"note": "', '"'), ('"api_key": "', '"'), ("", ""), ('{"x": "', '"}')]
_ISSUED = ["[EMAIL_1]", "[EMAIL_2]", "[PHONE_1]", "[PRIVATE_IP_1]", "[PASSWORD_1]"]
_ORIGINALS = ["bob@corp.example.com", "x@y.io", "+1 415 555 2671", "10.1.2.3", "abc123XYZ"]


def _memories(ms: mappings.MappingSet, limit: int, fakes: bytes | None) -> tuple[Rules, Rules]:
    """A rule set that remembers (small memories: generations swap), one that does not."""
    rules, fresh = Rules(ms, fakes), Rules(ms, fakes)
    fresh.found = Found(limit=0)
    if limit:
        rules.found.masked = remask.Remembered(limit=limit, edit_limit=12 * limit, char_limit=300 * limit)
    return rules, fresh


def _state(s: Session) -> tuple:
    return (list(s.placeholders.items()), list(s._by_key.items()), dict(s._count), s.masked, dict(s.counts),
            s.literals, s.fakes)  # fmt: skip


def _spans_turn(rules: Rules, pool: list[str], turn: tuple) -> tuple:
    calls, reserved, keyed, before = turn
    session = Session(reserved, b"k" * 32 if keyed else None)
    for label, original in before:  # placeholders issued before (another text of the request)
        session.placeholder(label, original, rules.faker)
    texts = [(pool[k % len(pool)], c) for k, c in calls]
    memo = rules.prescan([t if c is None else c[0] + t + c[1] for t, c in texts])[1]
    return [rules.mask_spans(t, session, c, memo) for t, c in texts], _state(session)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map(lambda p: "".join(p) + " padding to be remembered"),
             min_size=1, max_size=4),
    st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(_CONTEXTS)), min_size=1, max_size=6),
                       st.frozensets(st.sampled_from(_ISSUED), max_size=3), st.booleans(),
                       st.lists(st.tuples(st.sampled_from(["EMAIL", "PHONE", "PRIVATE_IP", "PASSWORD"]),
                                          st.sampled_from(_ORIGINALS)), max_size=3)),
             min_size=2, max_size=5),
    st.integers(0, 3),
    st.sampled_from([None, _FAKES_KEY]),
)  # fmt: skip
def test_texts_in_any_context_and_any_session_are_masked_as_with_nothing_remembered(pool, turns, limit, fakes) -> None:
    """mask_spans itself, with the shipped patterns (a phone number beside an address, a
    password after an e-mail: settle's widened spans, whose placeholders are calls too),
    in any context (a key a rule reads, none, an empty one), in sessions numbered by a
    key, reserving placeholders, or holding originals issued before: the same edits and
    the same session, call by call."""
    rules, fresh = _memories(_SHIPPED, limit, fakes)
    for turn in turns:
        assert _spans_turn(rules, pool, turn) == _spans_turn(fresh, pool, turn)


def _spelled(v: str, rnd: random.Random, ascii_only: bool) -> str:
    """A JSON string token of v, each character spelled one of the ways the parser reads."""
    out = []
    for ch in v:
        c, r = ord(ch), rnd.random()
        u = "\\u%04x" if rnd.random() < 0.5 else "\\u%04X"
        if ch in '"\\\n\r\t\b\f':
            out.append(json.dumps(ch)[1:-1] if r < 0.7 else u % c)
        elif c < 0x20 or 0xD800 <= c <= 0xDFFF:
            out.append(u % c)
        elif ch == "/":
            out.append("/" if r < 0.6 else "\\/")
        elif c > 0xFFFF and (ascii_only or r < 0.5):
            out.append(u % (0xD800 + ((c - 0x10000) >> 10)) + u % (0xDC00 + ((c - 0x10000) & 0x3FF)))
        elif (c > 0x7E and (ascii_only or r < 0.3)) or r < 0.05:
            out.append(u % c)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _respelled(doc: object, rnd: random.Random, ascii_only: bool) -> str:
    if isinstance(doc, str):
        return _spelled(doc, rnd, ascii_only)
    if isinstance(doc, list):
        return "[" + ", ".join(_respelled(x, rnd, ascii_only) for x in doc) + "]"
    if isinstance(doc, dict):
        return "{" + ", ".join(_respelled(k, rnd, ascii_only) + ": " + _respelled(x, rnd, ascii_only) for k, x in doc.items()) + "}"
    return json.dumps(doc)


_MORE = st.lists(st.sampled_from(["a/b/c", "😀x", "\ud83d", "\\\\", "\u2028", "\x7f", "Zenith Labs", "[EMAIL_1] "]), max_size=3)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.tuples(_text, _MORE).map(lambda t: t[0] + "".join(t[1])), min_size=1, max_size=4),
    st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=6), st.lists(st.integers(0, 4), max_size=2),
                       st.integers(0, 10**6), st.booleans(), st.booleans()), min_size=2, max_size=4),
    st.integers(0, 3),
    st.sampled_from([None, _FAKES_KEY]),
)  # fmt: skip
def test_tokens_spelled_character_by_character_are_masked_as_with_nothing_remembered(pool, turns, limit, fakes) -> None:
    """The same texts in tokens each of whose characters is spelled one way or another
    (a token's raw edits are reused only for the one spelling of its length, the masked
    token's reading only for its very text), a lone surrogate among them: the same bytes,
    session, checked document and verdict."""
    rules, fresh = _remembering(limit, fakes), Rules(_RULES.mappings, fakes)
    fresh.found = Found(limit=0)
    for order, keyed, seed, ascii_only, canonical in turns:
        doc = json.loads(_body([pool[k % len(pool)] for k in order], [pool[k % len(pool)] for k in keyed], True, False, False))
        spelled = _respelled(doc, random.Random(seed), ascii_only) if not canonical else json.dumps(doc, ensure_ascii=ascii_only)
        raw = spelled.encode("utf-8", "surrogatepass")  # (a lone surrogate written as it is: no UTF-8, refused)
        assert _masked(rules, raw) == _masked(fresh, raw)


def _chat_masked(rules: Rules, raw: bytes) -> object:
    return _masked(rules, raw, CHAT_REQUEST, OPENAI_CHAT)


def _chat(pool: list[str], parts: int, ascii_only: bool, slash: bool, seed: int) -> bytes:
    """An OpenAI chat request whose texts are the pool's: in a tool's name, its JSON
    arguments (keys, values, under keys a rule reads), its schema's property keys."""
    rnd = random.Random(seed)

    def t() -> str:
        return pool[rnd.randrange(len(pool))]

    args = {t(): t(), "password": t(), "nested": {t(): [t(), {"api_key": t()}]}}
    call = {"id": "c", "type": "function", "function": {"name": t(), "arguments": json.dumps(args, ensure_ascii=rnd.random() < 0.5)}}
    tool = {"type": "function", "function": {"name": t(), "description": t(),
                                             "parameters": {"type": "object", "properties": {t(): {"type": "string"}}}}}
    doc = {"model": "gpt", "tools": [tool], "messages": [
        {"role": "system", "content": t()}, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": t()},
        {"role": "user", "content": [{"type": "text", "text": t()} for _ in range(parts)]},
    ]}  # fmt: skip
    raw = json.dumps(doc, ensure_ascii=ascii_only)
    return (raw.replace("/", "\\/") if slash else raw).encode("utf-8", "surrogatepass")


_SETTLING = st.sampled_from(["+1 415 555 2671", " 10.1.2.3", " Hunter2xyz9", "vault:", "bob@corp.example.com", "password: abc1"])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.tuples(_text, st.lists(_SETTLING, max_size=3)).map(lambda t: "".join(t[1]) + t[0]), min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.booleans(), st.integers(0, 10**6)), min_size=2, max_size=4),
    st.integers(0, 3),
    st.sampled_from([None, _FAKES_KEY]),
    st.booleans(),
)  # fmt: skip
def test_json_text_in_a_string_and_names_are_masked_as_with_nothing_remembered(pool, turns, limit, fakes, shipped) -> None:
    """A text met as a tool's name, as a key and a value of JSON text in a string (read
    with its key there), as a schema's property key: the same text under other readings
    in one request and the next."""
    ms = _SHIPPED if shipped else _RULES.mappings
    rules, fresh = _memories(ms, limit, fakes)
    for parts, ascii_only, slash, seed in turns:
        raw = _chat(pool, parts, ascii_only, slash, seed)
        assert _chat_masked(rules, raw) == _chat_masked(fresh, raw)


@pytest.mark.parametrize("limit", [0, 2])
def test_two_threads_masking_with_one_rule_set_mask_as_with_nothing_remembered(limit: int) -> None:
    """The main loop and the offload thread mask two conversations at once with one rule
    set (its memory shared, each Masking's noted edits and reading set by either):
    switched as often as the interpreter can, each body masks as with nothing remembered."""
    rnd = random.Random(limit)
    pool = [f"ab@cd.io and Acme Corp {k}" + "\n" * 70 + " padding to be remembered." for k in range(5)]
    pool += [f"password: abc x/y Müller ef@gh.io 1234-5678 padding {k}" for k in range(5)]
    bodies = [_body(rnd.sample(pool, 4), [rnd.choice(pool)], rnd.random() < 0.5, rnd.random() < 0.3, False) for _ in range(24)]
    fresh = Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    want = [_masked(fresh, b) for b in bodies]
    rules = _remembering(limit)
    wrong: list[int] = []

    def work(order: list[int]) -> None:
        for i in order:
            if _masked(rules, bodies[i]) != want[i]:
                wrong.append(i)

    was = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(o * 2,)) for o in (list(range(24)), list(range(23, -1, -1)))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(was)
    assert wrong == []
    assert rules.found.masked.hits > 0


def test_a_text_of_more_literals_than_a_batch_is_replayed_batch_by_batch() -> None:
    """More than 65,536 literals in a text are counted in batches (Rules.mask_spans); a
    memory that may hold them replays the batches: the same counts and literals."""
    text = "x/y " * 70_000 + "and ab@cd.io, padding to be remembered"
    rules, fresh = _memories(_RULES.mappings, 0, None)
    rules.found.masked = remask.Remembered(edit_limit=1 << 20)
    for reserved in (frozenset(), frozenset(), frozenset({"[EMAIL_1]"})):
        got = []
        for r in (rules, fresh):
            s = Session(reserved)
            got.append((r.mask_spans(text, s, None, r.prescan([text])[1]), _state(s)))
        assert got[0] == got[1]
    assert rules.found.masked.hits == 1  # (the third: another placeholder, masked anew)
