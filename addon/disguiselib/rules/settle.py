"""The masker's second look at what it made (sans I/O): masking one original can leave
another that the text did not show before.

The rules read each original with what stands around it, so a replacement changes what
they find beside it:
- PHONE passes over `+1 415 555 2671` followed by more digits (`10.1.2.3`); once those
  are a `[PRIVATE_IP_1]`, the number stands alone, and is a phone number;
- at one place a literal wins over a pattern, so under `password` the masker replaces
  `Acme Corp` of `Acme Corp Hunter2xyz9` and PASSWORD never reads the rest; in
  `Zenith Labs Hunter2xyz9` it does;
- PASSWORD takes `vault:` for a password once the e-mail after it is a placeholder.

The leak guard reads the masked text as it will go out (leakguard.py, with the request's
disguises known: knowing.py) and would refuse each of these. So the masker reads its
output the same way, in the same context, and masks what that finds: each span widened
to the whole replacements it touches, its original the client's text under it (so that
the placeholder restores exactly what the client wrote), until nothing is found. Each
round only masks more; after ROUNDS the text is left as it is, and the guard refuses it.
A span found there that is a literal (a disguise joined with the client's text beside it
can spell one: knowing.py) is left to the guard, which refuses the request: a literal
has no placeholder, and the client's text under it holds no original to mask.

A text nothing was replaced in is never read again, so a body without originals costs
nothing more; the guard's find() of a text the masker read here is then answered by the
rule set's memory of it (found.Found). Nor is a text of LONGEST characters or more (a
file of a MiB in a tool result): its result read whole once more would be one more copy
of it held beside the body, its text and its document (tests/base/test_masking_scan.py
bounds them); the guard decides for it, as for a text whose rounds ran out.

The whole result is read again, not only the places of its edits: a rule repeating a
class that holds line breaks without bound matches from lines before the first edit to
lines after the last, where a match ends decides where the next begins, and the
prefilter says whether a pattern may match in a text, not where (docs/engine.md: what
this reading costs, and why no reading of the edits' places alone gives find()'s answer).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..wire.text import splice
from .knowing import Knowing
from .session import LITERALS

if TYPE_CHECKING:
    from .session import Session

# How many times a text is read again at most (each a find() of the whole text): the
# cases above settle in one.
ROUNDS = 4
# A text this long or longer is not read again (module docstring): a MiB of characters,
# where a text's matches and edits are kept in columns too (bigtext.BIG).
LONGEST = 1 << 20

Edit = tuple[int, int, str]


def in_context(
    find: Callable[[str, dict | None], list[tuple[str, int, int]]],
    text: str,
    context: tuple[str, str] | None = None,
    memo: dict | None = None,
) -> list[tuple[str, int, int]]:
    """find's spans in text read in context, as the masker reads it (Rules.mask_spans) and
    the leak guard and the audit check it (leakguard.spans): (label, start, end) in text,
    a pattern's match reaching into the context cut there; where a literal found would
    reach into it, the spans of text alone."""
    if context:
        k, n = len(context[0]), len(text)
        found = [(lab, a, b) for lab, a, b in find(context[0] + text + context[1], memo) if b > k and a < k + n]
        if not any(lab == LITERALS and (a < k or b > k + n) for lab, a, b in found):
            return [(lab, max(a, k) - k, min(b - k, n)) for lab, a, b in found]
    return find(text, memo)


def settle(
    rules: Any, text: str, edits: Any, session: Session, context: tuple[str, str] | None, memo: dict | None,
    log: list | None = None,
) -> Any:
    """edits (sorted, apart: what Rules.mask_spans made of text; a list, or a big text's
    Columns), with what their result, read as the leak guard reads it, still shows
    masked too (module docstring). Where it shows nothing, edits themselves. log: see
    widened."""
    for _ in range(ROUNDS):
        out = splice(text, edits)
        own = Knowing(rules, frozenset(rep for _, _, rep in edits))
        found = in_context(functools.partial(own.find, new=True), out, context, memo)  # (out: made just now)
        if not found or any(label == LITERALS for label, _, _ in found):
            return edits
        edits = widened(text, list(edits), list(found), session, rules, log)  # (a big text's in Columns: read as lists)
    return edits


def widened(
    text: str, edits: list[Edit], found: list[tuple[str, int, int]], session: Session, rules: Any,
    log: list | None = None,
) -> list[Edit]:
    """edits with each span found in their result (label, start, end there) made one
    edit of text: the span, widened to the whole of every replacement it touches, back
    in text's offsets; the edits under it dropped; spans that then overlap joined (the
    first one's label). log: gets (label, start, end, disguise) of each placeholder
    made, in order (rules/remask.py)."""
    # where each edit's replacement lies in the result
    starts, ends, shift = [], [], [0]  # shift[i]: what the edits before edit i added
    for a, b, rep in edits:
        s = a + shift[-1]
        starts.append(s)
        ends.append(s + len(rep))
        shift.append(shift[-1] + len(rep) - (b - a))
    regions: list[list] = []  # [start, end in text, label]
    i = 0
    for label, x, y in found:
        while i < len(edits) and ends[i] <= x:
            i += 1
        j = i  # the edits the span touches: i .. j-1
        while j < len(edits) and starts[j] < y:
            j += 1
        ta = edits[i][0] if i < j and starts[i] <= x else x - shift[i]
        tb = edits[j - 1][1] if i < j and y <= ends[j - 1] else y - shift[j]
        if regions and ta < regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], tb)
        else:
            regions.append([ta, tb, label])
    out: list[Edit] = []
    k = 0
    for ta, tb, label in regions:
        while k < len(edits) and edits[k][1] <= ta:
            out.append(edits[k])
            k += 1
        while k < len(edits) and edits[k][0] < tb:  # under the region: it takes their place
            k += 1
        original = text[ta:tb]
        ph = session.placeholder(label, original, rules.faker)
        out.append((ta, tb, ph))
        session.count(label, original)
        if log is not None:
            log.append((label, ta, tb, ph))
    out.extend(edits[k:])
    return out
