"""Rules.prescan: where in many texts a rule set can find anything, in one go (sans I/O).

A body's texts are scanned together: one Aho–Corasick pass over them joined by a NUL,
the patterns' prefilter over them in blocks (Prefilter.match_many). Its Python is per
text, and a tool input of a million short array elements is a million texts (issue 27:
run twice, by masking and by the warning pass): what is done per text is done by C
loops (encoding, lengths, the memo's entries made at once), and a text's own steps
(its digest, the look-up of what was found in it before, where it lies in the joined
bytes) are taken only for the texts that need them."""

from __future__ import annotations

import bisect
from itertools import accumulate, compress, filterfalse
from operator import and_, not_
from typing import Any

from ..wire.text import Columns
from . import bigtext
from .bigtext import ascii_bytes, encoded, lit_matches
from .found import CLEAN_MAX, NOTHING, RUN_MIN, Found, Known, Memo, digest_of

Rules = Any  # rules.Rules (which imports this module)

# Rules.prescan joins the texts of a body for one Aho–Corasick pass; a text of this many
# bytes or more is scanned on its own (no copy of it, no shifted copy of its matches).
JOIN_MAX = 1 << 16
# A text shorter than this many bytes is scanned again rather than remembered (Found): a
# digest, a look-up and an entry cost more than its scan in a block (a 1M-element array).
REMEMBER_MIN = 32
# From this many texts on, a text said again is scanned once (prescan): below it the
# look for repeats costs more than it can save.
DEDUP_MIN = 1024
# From this many short texts beside longer ones on, the short ones are scanned apart
# (prescan); below it the split costs more than it saves.
SPLIT_MIN = 256


def prescan(
    rules: Rules, pieces: list[str], digests: dict | None = None, into: dict | None = None, clean: bool = True
) -> tuple[set[int], dict[str, object]]:
    """Rules.prescan (its docstring says what it returns)."""
    if len(pieces) >= DEDUP_MIN and _repeats(pieces):
        distinct = list(dict.fromkeys(pieces))  # a C loop; each str's hash is kept in it
        if len(distinct) < len(pieces):
            # a text said again (a long array of a few values) is scanned once: what
            # the scan says of a text is its own (the memo is keyed by text; a literal
            # reaching out of a text into the next is found in the join of these, and
            # its texts then get no memo entry, as below). Every place of a marked text
            # is hot.
            got, made = prescan(rules, distinct, digests, into, clean)
            again = {distinct[j] for j in got}
            if type(made) is Memo and made.run is not None and len(made.run) + len(got) == len(distinct):
                # a run of every text not marked lists each place of them, as the guard
                # meets them (a record's keys, said again at every record): C loops
                made.run = list(filterfalse(again.__contains__, pieces))
            del distinct
            if not got:
                return got, made
            return set(compress(range(len(pieces)), map(again.__contains__, pieces))), made
        del distinct
    memo: dict[str, object] = {} if into is None else into  # (literals, patterns, digest), NOTHING or Known
    longest = max(map(len, pieces), default=0)
    n = len(pieces)
    if n >= SPLIT_MIN and longest >= REMEMBER_MIN:
        # many short ASCII texts (under REMEMBER_MIN bytes: a long array's elements)
        # beside long ones: scanned apart, joined once and in C loops, as _scan reads a
        # body of short texts only, rather than one by one in its loop because the body
        # also holds a long text (a system prompt beside a tool input of 200,000
        # elements: 0.9 us an element against 0.7 without it); and never looked up in
        # the clean memory, which holds none so short. In another order, a literal
        # holding a NUL may reach between other neighbours: such texts are marked
        # (_literals), whatever the order.
        short = list(map(and_, map(str.isascii, pieces), map(REMEMBER_MIN.__gt__, map(len, pieces))))
        k = short.count(True)
        if SPLIT_MIN <= k < n:
            s_at = list(compress(range(n), short))
            l_at = list(compress(range(n), map(not_, short)))
            got_s, _ = _scan(rules, list(map(pieces.__getitem__, s_at)), digests, memo, clean, REMEMBER_MIN - 1)
            got_l = _unmet(rules, list(map(pieces.__getitem__, l_at)), digests, memo, clean, longest)
            return {s_at[j] for j in got_s} | {l_at[j] for j in got_l}, memo
    return _unmet(rules, pieces, digests, memo, clean, longest), memo


def _unmet(
    rules: Rules, pieces: list[str], digests: dict | None, memo: dict[str, object], clean: bool, longest: int
) -> set[int]:
    """_scan's marked indices of pieces (none longer than longest), the clean texts met
    before left out: a text met before with nothing found in it (Found.clean: the text
    its own key) is not encoded, digested or scanned (a conversation's next turn is
    mostly such texts). None is shorter than REMEMBER_MIN bytes (4 characters at most a
    byte each) or longer than CLEAN_MAX characters (a body holding such a text is looked
    up by digests, as its str would be hashed whole for nothing: a 200 MB string)."""
    met = rules.found.cleans(pieces) if REMEMBER_MIN <= 4 * longest and longest <= CLEAN_MAX else None
    if met is None:
        return _scan(rules, pieces, digests, memo, clean, longest)[0]
    if clean:
        memo.update(dict.fromkeys(compress(pieces, met), NOTHING))
    rest = list(compress(range(len(pieces)), map(not_, met)))
    if not rest:
        return set()
    got, _ = _scan(rules, list(map(pieces.__getitem__, rest)), digests, memo, clean, longest)
    return {rest[j] for j in got}


def _scan(
    rules: Rules, pieces: list[str], digests: dict | None, memo: dict[str, object], clean: bool, longest: int = -1
) -> tuple[set[int], dict[str, object]]:
    """prescan of pieces none of which is a clean text met before. longest: no piece is
    longer (a bound the caller knows: each pass over a million texts' lengths costs
    ~0.02 us a text, as much as their Aho-Corasick scan), or -1."""
    hot: set[int] = set()
    found = rules.found
    if longest < 0:
        longest = max(map(len, pieces), default=0)
    js: str | None = None  # the pieces joined by a NUL, as str (when they may all be short)
    if rules._lit_ac is not None and pieces and longest < REMEMBER_MIN:
        js = "\x00".join(pieces)
    try:
        # a rule set without patterns (the disguises' warning pass) reads a big ASCII
        # text a window at a time, never encoded whole (bigtext.Ascii: memory)
        enc: list[bytes] | None
        if js is not None and js.isascii():
            # short ASCII texts: a piece's bytes are its characters. The literals are
            # found in the join's bytes (_literals reads only each piece's length), the
            # prefilter encodes them a block at a time (match_many): a million pieces are
            # not each encoded
            enc = pieces  # type: ignore[assignment]
        elif longest < bigtext.BIG:
            # no text big enough to be read in windows or as a view (encoded and
            # ascii_bytes give its UTF-8 bytes): one C loop, no frame per text (issue 27)
            enc = list(map(str.encode, pieces))
        elif rules._prefilter is None:
            enc = [encoded(p, len(p) >= JOIN_MAX) for p in pieces]  # type: ignore[misc]
        else:
            # a big ASCII text read where it lies (bigtext.ascii_bytes: no copy)
            enc = [ascii_bytes(p) if len(p) >= bigtext.BIG and p.isascii() else p.encode("utf-8") for p in pieces]  # type: ignore[misc]
    except UnicodeEncodeError:  # a lone surrogate somewhere: found text by text below
        enc = None
    todo: list[int] | range  # the pieces scanned: UTF-8 and not met before
    bs: list[bytes]  # (or pieces themselves: short ASCII texts, whose bytes are their characters)
    ds: list[bytes | None] | None  # None: too short to be remembered (None: all are)
    joined: bytes | None = None  # every piece's bytes joined by a NUL, when all are scanned
    if enc is None:
        js = None
    # all ASCII (str.isascii reads a flag): each piece's bytes are as many as its characters
    if enc is not None and (longest if js is not None and js.isascii() else max(map(len, enc), default=0)) < (
        REMEMBER_MIN
    ):
        todo, bs, ds = range(len(pieces)), enc, None  # short texts (array elements): all scanned
        if rules._lit_ac is not None and bs:
            # the same bytes as b"\x00".join(bs) (UTF-8 encodes a join as the join of the
            # encodings; no piece holds a lone surrogate, or enc would be None), made by
            # str.join: several times faster on a million short texts (issue 27)
            joined = (js if js is not None else "\x00".join(pieces)).encode("utf-8")
    else:
        todo, bs, ds = [], [], []
        for k, p in enumerate(pieces):
            if enc is not None:
                x = enc[k]
            else:
                try:
                    x = p.encode("utf-8")
                except UnicodeEncodeError:
                    hot.add(k)
                    continue
            d = None
            if len(x) >= REMEMBER_MIN:
                d = digest_of(digests.get(p)) if digests else None
                if d is None and type(digests) is Memo:  # a text masking changed: its entry spent, not its digest
                    d = digests.spent.get(p)
                if d is None:
                    d = Found.digest(x)
            if d is not None and (known := found.get(d)) is not None:
                memo[p] = Known(known, d) if known else NOTHING
                if known:
                    hot.add(k)
                continue
            todo.append(k)
            bs.append(x)
            ds.append(d)
    del enc
    lits: dict[int, list | Columns] = {}  # by position in todo
    crossing: set[int] = set()
    if rules._lit_ac is not None and bs:
        _literals(rules, bs, lits, crossing, joined)
        del joined
    pf = rules._prefilter
    # short texts in blocks: far fewer scans (ds None: each of bs is shorter than REMEMBER_MIN bytes)
    actives = None
    if pf is not None:
        if bs is pieces:  # short ASCII texts as they are (above)
            actives = pf.match_many_ascii(pieces, REMEMBER_MIN - 1)
        else:
            actives = pf.match_many(bs, REMEMBER_MIN - 1 if ds is None else -1)
    marked = crossing | lits.keys()
    if actives is not None:
        marked.update(compress(range(len(bs)), actives))
    if len(marked) < len(bs):  # what was found in the others: nothing
        if not clean:
            pass  # the caller reads only hot (Rules.prescan: clean=False)
        elif ds is None and not crossing and type(memo) is Memo and memo.run is None and len(bs) - len(marked) >= (
            RUN_MIN
        ):
            # short texts (todo is every piece), many: listed in the body's order, not
            # entered (Memo). Not where a literal reached from one text into the next
            # (crossing): each text's own verdict is then the same wherever it stands.
            keep = bytearray(b"\x01") * len(bs)
            for j in marked:
                keep[j] = 0
            memo.run = list(compress(pieces, keep))
        elif marked:
            memo.update(dict.fromkeys([pieces[todo[j]] for j in range(len(bs)) if j not in marked], NOTHING))
        else:
            memo.update(dict.fromkeys(pieces if type(todo) is range else [pieces[k] for k in todo], NOTHING))
        if ds is not None:
            met: list[str] = []  # remembered by themselves (Found.add_clean), at once
            for j, d in enumerate(ds):
                if d is not None and j not in marked:
                    p = pieces[todo[j]]
                    if len(p) <= CLEAN_MAX:
                        met.append(p)
                    else:
                        found.put(d, ())
            found.add_clean(met)
    for j in marked:
        k = todo[j]
        hot.add(k)
        if j not in crossing:
            memo[pieces[k]] = (lits.get(j, []), actives[j] if actives is not None else [], ds[j] if ds else None)
    return hot, memo


def _repeats(pieces: list[str]) -> bool:
    """Do many of pieces look said again? Half or more of an even sample of them (at
    most DEDUP_MIN texts) repeat one another: then looking for repeats (a dict of all
    of them, ~0.15 us a text) is worth it. A guess that decides only how much is
    scanned, never what is found (the scan of repeats is tested against the scan of all)."""
    sample = pieces[:: max(1, len(pieces) // DEDUP_MIN)]
    return 2 * len(set(sample)) <= len(sample)


def _literals(
    rules: Rules, bs: list[bytes], lits: dict[int, list | Columns], crossing: set[int], joined: bytes | None = None
) -> None:
    """The literal matches of each of bs (by index, in lits), and the texts a match
    reaches out of (a literal holding a NUL: into the next text) in crossing. joined:
    b"\\x00".join(bs), when the caller made it (then every one of bs is short)."""
    ac = rules._lit_ac
    if joined is not None or max(map(len, bs)) < JOIN_MAX:
        small: list[int] | range = range(len(bs))
        if joined is None:
            joined = b"\x00".join(bs)
    else:
        # a large piece on its own: its matches as the automaton gives them, not
        # copied with shifted offsets, and no joined copy of it (memory: a 200 MB
        # body holds millions of matches)
        small = [j for j, x in enumerate(bs) if len(x) < JOIN_MAX]
        for j, x in enumerate(bs):
            if len(x) >= JOIN_MAX:
                found_in = lit_matches(ac, x, rules._lit_longest)
                if found_in:
                    lits[j] = found_in
        joined = b"\x00".join([bs[j] for j in small])
    got = ac.find_matches_as_indexes(joined) if joined else ()
    if not got:
        return
    # where each text starts in joined (only when something was found)
    starts = [a + q for q, a in enumerate(accumulate((len(bs[j]) for j in small), initial=0))]
    # the matches come in order: the text they start in is looked up once per text
    q, nxt, base, cur = -1, 0, 0, None
    j = lim = 0
    for m in got:
        if m[1] >= nxt:
            q = bisect.bisect_right(starts, m[1], q + 1) - 1
            nxt, base, j, cur = starts[q + 1], starts[q], small[q], None
            lim = base + len(bs[j])
        if m[2] <= lim:
            if cur is None:
                cur = lits.setdefault(j, [])  # a small text's: a list
            cur.append((m[0], m[1] - base, m[2] - base))
        else:
            crossing.add(j)
            crossing.add(small[bisect.bisect_right(starts, m[2] - 1) - 1])
