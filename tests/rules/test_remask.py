"""What masking made of a text it met before, replayed (rules/remask.py): a conversation
whose turns repeat texts is masked to the very bytes, placeholders, counts and checked
document that masking with nothing remembered gives, turn after turn, whatever the
numbering of a turn makes of a text's placeholders, however a turn spells a text
(escaped `/`, ASCII-only, `\\u` escapes in upper case), and with memories small enough
to swap generations; the replay is used (hits, a token's raw edits, its masked
reading), falls back where a placeholder comes out another, and is bounded."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib.apis.anthropic.messages import MESSAGES_REQUEST
from disguiselib.apis.registry import ANTHROPIC_MESSAGES
from disguiselib.base.fields import loads
from disguiselib.base.masking import mask_body
from disguiselib.errors import MaskError
from disguiselib.leakguard import scan_body
from disguiselib.rules import mappings, remask
from disguiselib.rules.found import Found, Memo
from disguiselib.rules.rules import Rules, Session
from disguiselib.wire import jsonspan

_LITERALS = {"Acme Corp": "Zenith Labs", 'C:\\Users\\a "b"': "WINPATH", "Müller": "Mueller_X", "x/y": "slashy"}
_PATTERNS = [
    {"name": "EMAIL", "regex": r"[a-z]+@[a-z]+\.io"},
    {"name": "PASSWORD", "regex": r'(?i)password"?\s*[:=]\s*"?(?P<v>[a-z0-9]+)', "group": "v"},
    {"name": "PHONE", "regex": r"[0-9]{4}-[0-9]{4}"},
    {"name": "TAIL", "regex": r"[0-9]{3}$"},
]
_RULES = Rules(mappings.from_dict({"literals": _LITERALS, "patterns": _PATTERNS}))

_piece = st.sampled_from([
    *_LITERALS, "ab@cd.io", "ef@gh.io", "password: abc", "1234-5678", "[EMAIL_1]", "[EMAIL_2]", "Zenith Labs",
    "é", "😀", '"', "\\", "\n", "\x01", "\x7f", "/", " ", "x 123", "plain words ", "Acme",
])  # fmt: skip
# a text of the conversation: long enough to be remembered by its digest (prescan.REMEMBER_MIN),
# often with more line breaks than a token is mapped escape by escape (tokenmap: escaped_edits)
_text = st.tuples(st.sampled_from(["", "abc "]), st.lists(_piece, min_size=1, max_size=10), st.booleans()).map(
    lambda t: t[0] + "".join(t[1]) + " padding to be remembered." + ("\n" * (jsonspan._SPLICE_MAX_ESCAPES + 1) if t[2] else "")
)
_U_ESCAPE = re.compile(r"\\(u[0-9a-f]{4}|.)", re.DOTALL)


def _body(texts: list[str], keyed: list[str], ascii_only: bool, slash: bool, upper: bool) -> bytes:
    """The texts in the user's turn, the keyed ones in a tool's input before it (under
    a key a rule reads with them, `password`, and another)."""
    content = [{"type": "text", "text": t} if k % 2 else {"type": "tool_result", "tool_use_id": "t", "content": t}
               for k, t in enumerate(texts)]  # fmt: skip
    doc = {"model": "m", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                           "input": {"password": k, "note": k} if k else {}} for k in keyed]},
        {"role": "user", "content": content},
    ]}  # fmt: skip
    raw = json.dumps(doc, ensure_ascii=ascii_only)
    if slash:  # another spelling of the same text: `\/`
        raw = raw.replace("/", "\\/")
    if upper:  # and `\u00E9` for `\u00e9`: the same length, another text
        raw = _U_ESCAPE.sub(lambda m: "\\" + (m.group(1).upper().replace("U", "u", 1) if len(m.group(1)) == 5 else m.group(1)), raw)  # fmt: skip
    return raw.encode("utf-8")


def _masked(rules: Rules, raw: bytes, rule: jsonspan.Rule = MESSAGES_REQUEST, api: object = ANTHROPIC_MESSAGES) -> object:
    """What masking (with the guard's document) and the leak guard make of raw, a body
    of api (its request rule: rule)."""
    parsed: list = []
    scanned = Memo()
    try:
        body, sess = mask_body(raw, rule, rules, scanned, parsed, start=None)
    except MaskError as e:
        return str(e)
    if parsed:  # the masked document read back (masked_doc): what parsing the body gives
        assert parsed[0][1] == loads(body.decode("utf-8"))
    hit = scan_body(body, rules, api, "application/json", scanned)  # type: ignore[arg-type]
    return (body, list(sess.placeholders.items()), list(sess.counts.items()), sess.literals, sess.masked, sess.fakes,
            sess.documents, hit)  # fmt: skip


def _remembering(limit: int, fakes: bytes | None = None) -> Rules:
    rules = Rules(_RULES.mappings, fakes)
    if limit:  # small memories: generations swap often
        rules.found = Found(limit=4 * limit, span_limit=40 * limit, char_limit=400 * limit)
        rules.found.masked = remask.Remembered(limit=limit, edit_limit=12 * limit, char_limit=300 * limit)
    return rules


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_text, min_size=1, max_size=5),
    st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=6), st.lists(st.sampled_from(["", "q1", 0, 1]), max_size=2),
                       st.booleans(), st.booleans(), st.booleans()), min_size=2, max_size=4),
    st.integers(0, 3),
    st.sampled_from([None, b"k" * 32]),
)  # fmt: skip
def test_a_conversation_is_masked_turn_after_turn_as_with_nothing_remembered(pool, turns, limit: int, fakes) -> None:
    """Each turn sends texts of one pool (again, in another order, among others: the
    numbering of a text's placeholders changes), spelled one way or another; each is
    masked by a rule set that remembers (remask and found) and by one that remembers
    nothing: the same bytes, placeholders, counts, literals, checked document and guard
    verdict; with disguise_fakes too (an e-mail's fake, made by first appearance)."""
    rules, fresh = _remembering(limit, fakes), Rules(_RULES.mappings, fakes)
    fresh.found = Found(limit=0)
    for order, keyed, ascii_only, slash, upper in turns:
        texts = [pool[k % len(pool)] for k in order]
        raw = _body(texts, [pool[k % len(pool)] if type(k) is int else k for k in keyed], ascii_only, slash, upper)
        assert _masked(rules, raw) == _masked(fresh, raw)


def _turn(*texts: str) -> bytes:
    return _body(list(texts), [], False, False, False)


_FILE = "see Acme Corp, mail ab@cd.io" + "\n" * 80 + "end"


def test_a_text_met_again_is_replayed_its_token_edits_and_reading_reused() -> None:
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    first = _masked(rules, _turn(_FILE))
    assert first == _masked(fresh, _turn(_FILE))
    (m,) = [*rules.found.masked._new.values()]
    assert m.raw is not None and m.raw[0] > 0  # the token's edits, noted
    assert m.read is not None and "[EMAIL_1]" in m.read[1] and "Zenith Labs" in m.read[1]
    turn = _turn(_FILE, "and ef@gh.io too, padding to be remembered")
    parsed: list = []
    mask_body(turn, MESSAGES_REQUEST, rules, Memo(), parsed)
    assert rules.found.masked.hits == 1
    assert parsed[0][1]["messages"][1]["content"][0]["content"] is m.read[1]  # the string read before
    assert _masked(rules, turn) == _masked(fresh, turn)


def test_a_masked_reading_is_kept_only_where_the_rules_remember_it_clean() -> None:
    """A token's masked reading is kept only where the rule set remembers it as a text it
    found nothing in (Found.holds_clean: masking's second look at it put it there), so a
    masked text that still holds an original (left to the guard) is never kept; a rule
    set that remembers no clean text keeps none."""
    for chars, kept in ((1 << 20, True), (0, False)):
        rules = Rules(_RULES.mappings)
        rules.found = Found(char_limit=chars)
        mask_body(_turn(_FILE), MESSAGES_REQUEST, rules, Memo(), [])
        (m,) = [*rules.found.masked._new.values()]
        assert (m.read is not None) is kept
        assert not rules.found.holds_clean(_FILE)  # (the text itself: originals in it)


def test_a_placeholder_numbered_otherwise_masks_the_text_anew() -> None:
    """The next turn holds another e-mail before the text: [EMAIL_1] is that one's, so
    the replay gives another placeholder, falls back, and the session is as masking
    alone leaves it (no count twice)."""
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    _masked(rules, _turn(_FILE))
    turn = _turn("first ef@gh.io, padding to be remembered", _FILE)
    got = _masked(rules, turn)
    assert got == _masked(fresh, turn)
    assert rules.found.masked.hits == 0
    assert dict(got[1]) == {"[EMAIL_1]": "ef@gh.io", "[EMAIL_2]": "ab@cd.io"}  # type: ignore[index]


def test_a_replay_whose_placeholder_differs_counts_nothing() -> None:
    m = remask.Masking(((4, 12, "[EMAIL_1]"),), (("EMAIL", 4, 12, "[EMAIL_1]"),))
    sess = Session()
    sess.placeholder("EMAIL", "ef@gh.io")
    assert remask.replay(m, "see ab@cd.io", sess, None) is None
    assert sess.counts == {} and sess.masked == 0
    again = Session()
    assert remask.replay(m, "see ab@cd.io", again, None) == [(4, 12, "[EMAIL_1]")]
    assert again.counts == {"EMAIL": 1} and again.placeholders == {"[EMAIL_1]": "ab@cd.io"}


def test_a_token_spelled_otherwise_is_not_taken_for_the_one_before() -> None:
    """The raw edits are reused only for a token as long as the one they were made in
    (module docstring): `\\/` for `/` is longer; and the parser takes no character below
    0x20 written as it is, the one way to write a character shorter."""
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    text = _FILE + " a/b"
    _masked(rules, _turn(text))
    for raw in (_turn(text).replace(b"/", b"\\/"), _body([text], [], True, False, False)):
        assert _masked(rules, raw) == _masked(fresh, raw)
    with pytest.raises(ValueError):
        loads('{"a": "x\ny"}')


def test_a_token_with_u_escapes_is_not_noted() -> None:
    """A token whose text holds `\\u` has another of the same length (`\\u00E9`): its
    edits are not noted, and that other token is masked as it is."""
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    text = _FILE + " Müller é \x01"
    _masked(rules, _body([text], [], True, False, False))
    raw = _body([text], [], True, False, True)
    assert b"\\u00E9" in raw
    assert _masked(rules, raw) == _masked(fresh, raw)


def test_the_same_text_masked_otherwise_in_another_place_is_not_taken_for_the_one_before() -> None:
    """The text met before alone, now also under a key that a rule reads with it (its
    edits others): that token's own edits and reading, not the remembered ones."""
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    text = "abc " + _FILE
    _masked(rules, _turn(text))
    turn = json.dumps({"model": "m", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"password": text}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": text}]},
    ]}).encode()  # fmt: skip
    got = _masked(rules, turn)
    assert got == _masked(fresh, turn)
    assert "PASSWORD" in dict(got[2])  # type: ignore[index]


def test_a_text_in_its_context_is_remembered_by_where_it_lies_in_it() -> None:
    """The same piece (context and text together), cut otherwise: another text, masked
    as itself (the e-mail whole, not the part of it the text held before)."""
    piece, before = '"note": "padding to be remembered, mail ab@cd.io"', '"note": "'
    memo = _RULES.prescan([piece])[1]
    rules, fresh = Rules(_RULES.mappings), Rules(_RULES.mappings)
    fresh.found = Found(limit=0)
    for cut in (len(piece) - 4, len(piece) - 1, len(piece) - 4):
        text, context = piece[len(before) : cut], (before, piece[cut:])
        got = [r.mask_spans(text, Session(), context, dict(memo)) for r in (rules, fresh)]
        assert got[0] == got[1]
    assert rules.found.masked.hits == 1


def test_the_memory_is_bounded_and_emptied() -> None:
    mem = remask.Remembered(limit=2, edit_limit=3, char_limit=10)
    one = remask.Masking(((0, 1, "a"),), ())
    for k in range(5):
        mem.put(bytes([k]), one)
    assert len(mem._new) <= 2 and len(mem) <= 4
    mem.put(b"big", remask.Masking(((0, 1, "a"),) * 4, ()))  # more edits than a generation holds
    assert mem.get(b"big") is None
    m = remask.Masking(((0, 1, "a"),), ())
    mem.put(b"m", m)
    mem.keep_read(m, "x" * 6, "y" * 6)  # more characters than a generation holds: not kept
    assert m.read is None
    mem.keep_read(m, "xx", "yy")
    assert m.read == ("xx", "yy")
    mem.clear()
    assert len(mem) == 0 and mem.get(b"m") is None
    found = Found()
    found.masked.put(b"m", m)
    found.clear()  # the rule set's memory emptied (a reload builds a new Rules: none)
    assert len(found.masked) == 0
    assert len(Rules(_RULES.mappings).found.masked) == 0
    assert len(Found(limit=0).masked) == 0 or Found(limit=0).masked.limit == 0
