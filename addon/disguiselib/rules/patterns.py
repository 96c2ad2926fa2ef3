"""A pattern rule's next accepted match in a text's bytes (sans I/O): the search
`Rules.find` runs for each pattern a text's prefilter names (rules.py), bounded to
linear time in the text however many candidates the rule's options reject."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MaskError
from . import linear
from .accept import Options, accept

# A text where skip regexes (accept.skip_regex) found this many places the rule then
# rejected is searched without them: each such place costs two searches instead of one
# (`API_KEY=x1 ` repeated: every value short, with a digit). Both ways give the same spans.
_SKIP_WASTE = 32


@dataclass(frozen=True)
class Pattern:
    name: str
    rx: linear.Regex
    opts: Options | None = None
    # where its candidates can be accepted at all (accept.skip_regex), or None
    skip: linear.Regex | None = None


def next_match(p: Pattern, b: bytes, pos: int, text: str | None, spent: list[int]) -> tuple[int, int] | None:
    """The byte span pattern p masks next at or after byte pos, or None (text: b
    decoded, when it is ASCII).

    A rejected candidate makes the search start again one character further, and a
    pattern with an unbounded repetition can then meet the same long run again and
    again (`_y0_abcdefgh` repeated: every `y0_` is a Yandex token's start whose match
    reaches the end of the run, and each is rejected): quadratic time, a 96 kB
    string took 45 s. spent counts the bytes of the rejected candidates of one text
    against a limit of 16 bytes per byte of text (+64 KiB); past it the text is
    refused (MaskError) rather than scanned for minutes. spent[2]: the places of
    this text where a skip regex let the rule be matched in vain (_SKIP_WASTE)."""
    n = len(b)
    while pos <= n:
        if p.opts is None:
            m = p.rx.search(b, pos)
            if m is None:
                return None
            if m[1] > m[0]:
                return m
            start = m[0]
        else:
            reach = 0  # how far the skip regex's match reached
            if p.skip is not None and spent[2] < _SKIP_WASTE:
                # no candidate the rule can accept starts before the skip regex's
                # first match (accept.skip_regex): the rule's match there, or none
                at = p.skip.search(b, pos)
                if at is None:
                    return None
                reach = at[1]
                spans = p.rx.groups_at(b, at[0])
                spent[2] += 1  # taken back below if accepted
                if spans is None:  # the skip regex is looser here (a digit of any class): go on
                    spans = [(at[0], at[0])]
            else:
                spans = p.rx.groups(b, pos)
                if spans is None:
                    return None
            start = spans[0][0]
            if spans[0][1] > start:
                got = accept(p.opts, spans, b, text)
                if got is not None:
                    if reach:
                        spent[2] -= 1
                    return got
            if spans[0][1] > start or reach:
                spent[0] += max(spans[0][1], reach) - start
                if spent[0] > spent[1]:
                    raise MaskError(
                        f"pattern {p.name}: a string of {n} bytes holds more candidates that its rule "
                        "rejects, each reaching far, than can be checked in linear time"
                    )
        # an empty or rejected match: go on one character further
        pos = start + 1
        while pos < n and (b[pos] & 0xC0) == 0x80:
            pos += 1
    return None
