"""A big text's literal matches, kept compactly (sans I/O).

A 200 MB request string with an original every line holds millions of literal matches;
as the automaton returns them (a list of tuples, about 130 bytes each) they took twice
the body, and the spans and edits made of them as much again. From BIG bytes on a text
is scanned in windows and its matches, spans and edits are held in columns (wire.text.
Columns: 24 bytes a match). Small texts keep the automaton's own list, as before."""

from __future__ import annotations

from collections.abc import Iterator

from ..wire.text import Columns

# From this many bytes of a text its matches are held in columns.
BIG = 1 << 20
# The bytes the automaton reads at once (plus the longest literal, less one).
WINDOW = 1 << 20


class Ascii:
    """A big ASCII text read as its UTF-8 bytes a window at a time, never encoded whole:
    what a rule set with literals alone (no pattern prefilter: the disguises of the
    warning pass, pipeline) scans a 200 MB string as, while the body, its masked text
    and its document are held. len and a slice are the bytes'; ASCII: one byte a
    character, so the offsets are the same."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __len__(self) -> int:
        return len(self.text)

    def __getitem__(self, i: slice) -> bytes:
        return self.text[i].encode("ascii")

    def windows(self) -> Iterator[bytes]:
        """The bytes in order, WINDOW at a time."""
        for i in range(0, len(self.text), WINDOW):
            yield self.text[i : i + WINDOW].encode("ascii")


try:
    from ..wire._tokenmap import AsciiBytes  # type: ignore[import-not-found]
except ImportError:  # the Python engine: encoded
    AsciiBytes = None


def ascii_bytes(text: str) -> bytes | memoryview:
    """An ASCII text's bytes: from BIG characters on, where the compiled engine runs, a
    read-only view of the str's own characters (wire/_tokenmap.pyx: AsciiBytes), not a
    copy (a 200 MB string: once more the body, held beside the body's text and its
    document while the scans read it); else encoded. The automaton, Hyperscan and the
    digest read a view as they read bytes."""
    if AsciiBytes is not None and len(text) >= BIG:
        return memoryview(AsciiBytes(text))
    return text.encode("ascii")


def encoded(text: str, windowed: bool) -> bytes | Ascii:
    """text's UTF-8 bytes (raises UnicodeEncodeError for a lone surrogate); windowed: a
    big ASCII text as Ascii instead (read a window at a time)."""
    if windowed and len(text) >= BIG and text.isascii():
        return Ascii(text)
    return text.encode("utf-8")


def lit_matches(ac, b: bytes | memoryview | Ascii, longest: int, start: int = 0, window: int = 0) -> list | Columns:  # noqa: ANN001 - ahocorasick_rs.BytesAhoCorasick
    """The automaton's leftmost-longest matches (index, start, end) in b[start:], offsets
    in b. A big b is read in windows, with the same result: a window is read from r to
    WINDOW bytes further plus the longest literal (less one), so that every match that
    starts in its first WINDOW bytes lies in it whole; those are taken, and the next
    window starts where the last of them ended, or at the window's end when that lies
    after it (no match starts between: the automaton would have found it). window: the
    windows' size (tests: a few bytes)."""
    n = len(b)
    window = window or WINDOW
    if n - start < BIG:
        got = ac.find_matches_as_indexes(b[start:] if start or isinstance(b, Ascii) else b)
        return [(k, s + start, e + start) for k, s, e in got] if start else got
    out = Columns()
    ks, ss, es = out.cols
    r = start
    while r < n:
        stop = r + window
        last = stop
        for k, s, e in ac.find_matches_as_indexes(b[r : stop + longest - 1]):
            if r + s >= stop:
                break
            ks.append(k)
            ss.append(r + s)
            es.append(r + e)
            last = r + e
        r = max(stop, last)
    return out


def literal_spans(label: str, lits: list | Columns) -> list | Columns:
    """find()'s spans for literal matches alone: (label, start, end) each. A big text's
    columns of offsets are shared with lits, not copied (neither is changed after: a
    text's matches are read once, by its find)."""
    if isinstance(lits, Columns):
        return Columns(cols=([label] * len(lits), lits.cols[1], lits.cols[2]))
    return [(label, s, e) for _, s, e in lits]


def spans_like(lits: list | Columns) -> list | Columns:
    """An empty list of spans, kept as lits is."""
    return Columns("oqq") if isinstance(lits, Columns) else []


def edits_like(spans: list | Columns) -> list | Columns:
    """An empty list of (start, end, replacement) edits, kept as spans is."""
    return Columns("qqo") if isinstance(spans, Columns) else []
