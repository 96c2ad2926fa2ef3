"""Gemini streams' citations (sans I/O): where a chunk's grounding supports and citation
sources point once the candidate's streamed text is restored.

What they count is gemini.py's (UTF-8 bytes of the text as the model wrote it). In a
stream they come in a chunk of their own candidate, usually its last, and count the
candidate's whole streamed text, not the chunk's piece. So each candidate's window notes
what restoring moved (base/offsets.TrackedWindow, in bytes), the text of the chunks that
pass unparsed is counted (quiet_range, passed), and a chunk that cites (CITE_MARKERS make it
parsed) gets its offsets moved. Left as they came: a bound past what the candidate has
released (its window still holds that text; the chunk is not its last), a segment that
names a part other than 0 (which text a streamed part index counts is not documented),
and thought parts, which are not counted (they are not the answer's text).

Counting costs: a chunk that passes unparsed is read from its bytes where its candidates
list is in a layout the API writes (_LAYOUTS: one candidate, index 0, one text part),
with a few searches and no object built, which also tells which candidates it names
(the `"index"` scan otherwise: names_open); else it is parsed (json.loads) to be counted.
Measured (bench/gemini.py, whose text has no escapes): about what that scan cost alone;
text with escapes adds a search or two per chunk, a `\\u` escape a json.loads of its string.
"""

from __future__ import annotations

import json
import re

from ...base.channels import channel_index
from ...base.holdback import Window, window_for
from ...base.offsets import Offsets, TrackedWindow
from ...rules.rules import Restorer
from ...wire.jsonspan import escaped_name
from ...wire.sse import parse_event, split
from .gemini import _dumps

# A chunk that cites is parsed (a key: inside a string its quotes would be escaped).
CITE_MARKERS = (b'"groundingSupports"', b'"citationSources"')
# where each kind of citation is in a candidate, and the member holding its bounds
_WHERE = (("groundingMetadata", "groundingSupports", "segment"), ("citationMetadata", "citationSources", ""))


# A chunk's candidates list as the API writes it when it holds candidate 0 with one text
# part: the bytes after the key `"candidates"` up to the text's string body, and those
# after the body through the list's end, for an answer's part and a thought's (with their
# lengths, as read_layout reads them).
_Layout = tuple[bytes, bytes, bytes, int, int, int]


def _layout(head: bytes, tail: bytes, thought: bytes) -> _Layout:
    return (head, tail, thought, len(head), len(tail), len(thought))


# As recorded (tests/fixtures/real/gemini): the Gemini API's `alt=sse` events
# (stream_sse_*.sse) and its JSON array's pretty-printed elements (stream_json_array.json);
# Vertex's `alt=sse` events as a public capture shows them (role first, index 0 left out:
# the candidate holds its content alone; not recorded here, its thought part by analogy).
# Others (Code Assist's, if they differ) are parsed to be counted.
_LAYOUTS = (
    _layout(b': [{"content": {"parts": [{"text": "', b'"}],"role": "model"},"index": 0}]',
            b'","thought": true}],"role": "model"},"index": 0}]'),
    _layout(b': [\n    {\n      "content": {\n        "parts": [\n          {\n            "text": "',
            b'"\n          }\n        ],\n        "role": "model"\n      },\n      "index": 0\n    }\n  ]',
            b'",\n            "thought": true\n          }\n        ],\n        "role": "model"\n      },\n'
            b'      "index": 0\n    }\n  ]'),
    _layout(b': [{"content": {"role": "model","parts": [{"text": "', b'"}]}}]', b'","thought": true}]}}]'),
)  # fmt: skip
_SSE, _ARRAY, _VERTEX = _LAYOUTS
_KEY = b'"candidates"'
_KEY_LEN = len(_KEY)
_INDEX = re.compile(rb'"index"\s*:\s*(\d+(?![.eE\d]))?')  # (`0.0`, `0E0`: parsed)


def _index(cand: dict) -> int:
    return channel_index(cand.get("index", 0))  # (a candidate without one is candidate 0)


def _is_text(p: object) -> bool:
    return isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("thought") is not True


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def read_layout(
    block: bytes, start: int, end: int, escapes: bool = True, first: _Layout = _SSE
) -> tuple[int, bool] | None:
    """The UTF-8 bytes of answer text candidate 0 gets in the whole chunks block[start:end],
    and whether any of them names a candidate, read from their bytes: every `"candidates"`
    key there must open a list in one of _LAYOUTS (so the list holds candidate 0 alone,
    with one part whose only members are its text and perhaps `"thought": true`). None
    where one does not (or a string's escapes cannot be read so). Exact: a string body
    ends at the first quote after an even run of backslashes, and each escape other than
    `\\uXXXX` is two bytes for one (escapes: there may be a `\\u` in block[start:end]; first:
    the layout tried first)."""
    find, startswith = block.find, block.startswith
    n = 0
    p = find(_KEY, start, end)
    named = p >= 0
    while p >= 0:
        p += _KEY_LEN
        head, tail, thought, nh, nt, nth = first
        if not startswith(head, p):
            for head, tail, thought, nh, nt, nth in _LAYOUTS:  # noqa: B007 - the one that matched is used below
                if startswith(head, p):
                    break
            else:
                return None
        i = p + nh
        q = find(b'"', i, end)
        if q > 0 and block[q - 1] == 92:
            q = _closing(block, q, end)
        if startswith(tail, q):
            p = q + nt
            b = find(b"\\", i, q)
            if b < 0:
                n += q - i
            elif escapes and find(b"\\u", b, q) >= 0:  # (or an escaped backslash before a u: decoded alike)
                try:
                    n += _utf8_len(json.loads(b'"' + block[i:q] + b'"'))
                except ValueError:
                    return None
            else:  # \\\\ is one escape, each other backslash starts one
                n += q - i - block.count(b"\\", b, q) + block.count(b"\\\\", b, q)
        elif startswith(thought, q):
            p = q + nth
        else:  # (also no closing quote: q is -1)
            return None
        p = find(_KEY, p, end)
    return n, named


def _closing(block: bytes, q: int, end: int) -> int:
    """The quote that closes the string whose body holds block[q - 1], a backslash,
    with q the first quote after the body's start (-1: none)."""
    while q > 0 and block[q - 1] == 92:  # escaped where the run of backslashes before it is odd
        k = q - 2
        while block[k] == 92:
            k -= 1
        if (q - k) % 2:
            break
        q = block.find(b'"', q + 1, end)
    return q


class CitedStream:
    """GeminiStream's citation bookkeeping (a base class beside SSEStream): per candidate,
    the edits restoring made to its streamed text (bytes), and the text of the chunks
    that pass unparsed."""

    # the stream's (GeminiStream)
    restorer: Restorer
    windows: dict
    array: bool
    events_changed: int
    _open: set

    def _body(self, chunk: object) -> dict:
        raise NotImplementedError

    def __init__(self) -> None:
        self._zero = Offsets(utf8=True)  # candidate 0's, the one chunks read from their bytes name
        self.offsets: dict[int | str, Offsets] = {0: self._zero}
        self._layout = _ARRAY if self.array else _SSE  # the layout tried first
        self._counted: tuple[bytes, int, int, int, dict | None] | None = None  # quiet_range's count, for passed

    def _window(self, key: tuple, mode: int = Window.TEXT) -> Window:
        """The window for channel key: a candidate's text one notes its edits."""
        if key in self.windows or key[1:] != ("text",):
            return window_for(self.windows, key, self.restorer, mode, "candidates")
        window_for(self.windows, key, self.restorer, mode, "candidates")  # makes room, or StreamError
        w = self.windows[key] = TrackedWindow(self.restorer, mode, self._offsets(key[0]))
        return w

    def _offsets(self, k: int | str) -> Offsets:
        o = self.offsets.get(k)
        if o is None:
            o = self.offsets[k] = Offsets(utf8=True)
        return o

    # -- chunks that pass unparsed ------------------------------------------------------------

    def quiet_range(self, block: bytes, start: int, end: int) -> bool:
        """Can the whole chunks block[start:end], free of triggers and markers (those that
        end a candidate or the stream are parsed), pass unparsed? A key spelled with
        escapes could hide from every byte search: no. Otherwise yes where every
        candidate they name is open already (a chunk that names one not yet open changes
        the stream's state) and their text is counted (for passed): from their bytes
        (read_layout), or parsed."""
        find = block.find
        escapes = find(b"\\", start, end) >= 0 and find(b"\\u", start, end) >= 0  # (a backslash first: memchr)
        if escapes and escaped_name(block[start:end]):
            return False
        got = read_layout(block, start, end, escapes, self._layout)
        if got is not None:  # they name candidate 0 alone, if any
            if got[1] and 0 not in self._open:
                return False
            self._counted = (block, start, end, got[0], None)
            return True
        if not self.names_open(block, start, end):
            return False
        counts = self._count(block, start, end)
        self._counted = None if counts is None else (block, start, end, 0, counts)
        return counts is not None

    def names_open(self, block: bytes, start: int, end: int) -> bool:
        """Is every candidate index the whole chunks block[start:end] name open already
        (one without an index is candidate 0)? Conservative: an `"index"` key anywhere counts."""
        for m in _INDEX.finditer(block, start, end):
            v = m.group(1)
            if v is None or int(v) not in self._open:
                return False
        return 0 in self._open or block.find(b'"candidates"', start, end) < 0

    def passed(self, block: bytes, start: int, end: int) -> None:
        """The whole chunks block[start:end] went out unparsed: their text is counted."""
        got, self._counted = self._counted, None
        if got is None or got[0] is not block or got[1] != start or got[2] != end:
            # (never expected: quiet_range counted these chunks just before)
            got = (block, start, end, 0, self._count(block, start, end) or {})
        self._zero.length += got[3]
        for k, n in (got[4] or {}).items():
            self._offsets(k).length += n

    def _count(self, block: bytes, start: int, end: int) -> dict | None:
        """The UTF-8 bytes of text each candidate gets in the whole chunks
        block[start:end] (SSE events, or one element of a JSON array), parsed; None where
        they do not parse."""
        if block.find(b'"text"', start, end) < 0:  # (a key spelled with escapes: quiet_range said no)
            return {}
        counts: dict = {}
        for raw in [block[start:end]] if self.array else split(block[start:end]):
            data = raw if self.array else parse_event(raw).data
            if data is None:
                continue
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError):
                return None
            cands = self._body(doc).get("candidates") if isinstance(doc, dict) else None
            for cand in cands if isinstance(cands, list) else ():
                content = cand.get("content") if isinstance(cand, dict) else None
                parts = content.get("parts") if isinstance(content, dict) else None
                n = sum(_utf8_len(p["text"]) for p in parts if _is_text(p)) if isinstance(parts, list) else 0
                if n:
                    counts[_index(cand)] = counts.get(_index(cand), 0) + n
        return counts

    # -- a chunk that cites -----------------------------------------------------------------

    def _cited(self, data: str, new: str | None) -> str | None:
        """A parsed chunk (its JSON text data, restored as new, None: unchanged), once
        its windows took its text: new with its citations' offsets moved."""
        if not self.offsets or ('"groundingSupports"' not in data and '"citationSources"' not in data):
            return new
        try:
            doc = json.loads(new if new is not None else data)
        except ValueError:
            return new
        changed = False
        cands = self._body(doc).get("candidates") if isinstance(doc, dict) else None
        for cand in cands if isinstance(cands, list) else ():
            o = self.offsets.get(_index(cand)) if isinstance(cand, dict) else None
            if o is None or not o.moved:
                continue
            for meta, items, inner in _WHERE:
                m = cand.get(meta)
                for item in (m.get(items) if isinstance(m, dict) else None) or ():
                    h = item.get(inner) if inner and isinstance(item, dict) else item
                    if isinstance(h, dict) and h.get("partIndex", 0) == 0:
                        changed |= _move(h, o)
        if not changed:
            return new
        self.events_changed += new is None
        return _dumps(doc)


def _move(h: dict, o: Offsets) -> bool:
    """h's startIndex/endIndex (bytes) moved by o; did one move? (An absent start is 0,
    which never moves.)"""
    changed = False
    for b, end in (("startIndex", False), ("endIndex", True)):
        v = h.get(b)
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= o.length:
            w = o.at(v, end)
            if w != v:
                h[b] = w
                changed = True
    return changed
