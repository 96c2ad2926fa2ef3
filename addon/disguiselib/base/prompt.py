"""The order a request's placeholders are numbered in: the provider's prompt order, not
the body's (sans I/O).

Placeholders are numbered by first appearance (contract §2) so that a prompt's
unchanged prefix is the same bytes on every turn and the provider's prompt cache keeps
hitting. The body's JSON order is not the prompt's: the official SDKs write the
conversation (`messages`, `input`, `contents`) before `system`, `instructions` and
`tools`, which the provider reads, and caches, first. Numbered in the body's order, a
value first met in the newest turn took the number of one the system prompt holds, and
from then on every turn missed the cache from the system prompt on.

A request's top-level rule declares its members' prompt order, the conversation last
(jsonspan.Rule.prompt, with the API's tables). Masking numbers first the members it does
not name (settings, metadata: nothing of the conversation), in the body's order, then
those it names, in the declared order; the strings of one member in the body's order.

A request that continues state the provider keeps (a stored response it names by
`previous_response_id`, a conversation, a cache: the members its rule declares as
jsonspan.Rule.state) is numbered by a key instead (rules/session.Session.keyed): what the
provider stored was numbered from 1 by the requests before, and the model's answer may
quote those placeholders; this request's must be none of them. The key is the rule set's
(Rules.numbers_key) with the state the request names: the same conversation, the same
numbers; another one, others (no original is linked across conversations by its number)."""

from __future__ import annotations

import bisect
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Sequence
from itertools import pairwise

from ..wire import jsonspan, spanwalk

_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
Rank = Callable[[int], tuple[int, ...]]


def prompt_order(
    s: str, doc: object, root: jsonspan.Rule, marked: list[int], where: Sequence[int], members: tuple | None = None
) -> list[int] | None:
    """The tokens masking will change (marked: their indexes, in the body's order; where:
    each token's start and end in s, after one another) in the order their placeholders
    are numbered, or None when that is the body's order. members: spanwalk.members(s),
    where the caller walked s so (turns.Marks: not walked again)."""
    if len(marked) < 2:
        return None
    rank = _ranker(s, doc, root, members)
    if rank is None:
        return None
    return sorted(marked, key=lambda t: (rank(where[2 * t]), t))


def _ranker(s: str, doc: object, root: jsonspan.Rule, members: tuple | None = None) -> Rank | None:
    """Where a place in s (the text of doc, an object read with root) comes in the
    prompt: a rank per member (the members root.prompt does not name first, -1), and
    within a member that is a request of its own (a rule with a prompt order: Gemini's
    countTokens `generateContentRequest`, Code Assist's `request`), its rank there.
    None when that is the body's order."""
    fields = getattr(root, "fields", None)
    if type(doc) is not dict or not isinstance(fields, dict):
        return None
    order = root.prompt
    nested = {k for k, v in doc.items() if type(v) is dict and k in fields and fields[k].prompt}
    if not order and not nested:
        return None
    rank = {k: i for i, k in enumerate(order)}
    ranks = [rank.get(k, -1) for k in doc]  # (a repeated key: where it was first written)
    if not nested and all(a <= b for a, b in pairwise(ranks)):
        return None  # the body is written in prompt order
    starts, keys = spanwalk.members(s) if members is None else members
    if not starts:
        return None
    inner: dict[int, tuple[int, Rank]] = {}  # per member that is a request: where its value begins, its ranks
    for n, k in enumerate(keys):
        if k in nested:
            at = _COLON.match(s, json.decoder.scanstring(s, starts[n] + 1)[1]).end()  # type: ignore[attr-defined,union-attr]
            r = _ranker(s[at:], doc[k], fields[k])  # (read to its object's end: members stops there)
            if r is not None:
                inner[n] = (at, r)
    if not inner and all(a <= b for a, b in pairwise(ranks)):
        return None
    of = [rank.get(k, -1) for k in keys]

    def ranked(i: int) -> tuple[int, ...]:
        n = max(bisect.bisect_right(starts, i) - 1, 0)
        got = inner.get(n)
        return (of[n], *got[1](i - got[0])) if got is not None and i >= got[0] else (of[n],)

    return ranked


__all__ = ["prompt_order"]


def numbers_key(doc: object, root: jsonspan.Rule, key: bytes) -> bytes | None:
    """The key a request (doc, read with root) is numbered with (Session.keyed): None
    unless it names state the provider keeps (root.state, or the state of a member that
    is a request of its own: Gemini's countTokens `generateContentRequest`, Code Assist's
    `request`); else key with that state."""
    if type(doc) is not dict:
        return None
    fields = root.fields if isinstance(root, jsonspan.Obj) else {}
    named = [doc[k] for k in root.state if k in doc]
    for k, v in doc.items():
        rule = fields.get(k)
        if type(v) is dict and rule is not None and rule.state:
            named += [v[m] for m in rule.state if m in v]
    # what each names its state by (its members' names left out: camelCase and snake_case
    # spellings name one state); an object by its `id`, a continued thread by the
    # `previous_message_id` it continues from, a resumed session by its `handle` (one
    # without, a container or a thread to be made, a session to be resumable, names none)
    state = [n for n in map(_name, named) if n is not None]
    if not state:
        return None
    return hmac.digest(key, json.dumps(state).encode(), hashlib.sha256)  # (ASCII: escapes for the rest)


def _name(v: object) -> object:
    """What a state member's value names its state by (None: nothing)."""
    if type(v) is not dict:
        return v  # (null: None)
    for k in ("id", "previous_message_id"):
        if v.get(k) is not None:
            return v[k]
    return v.get("handle") or None
