"""Bytes -> the elements of a streamed JSON array of objects, sans I/O.

An API that streams a JSON array (Gemini without `alt=sse`) answers with one JSON
array whose elements (its response objects) arrive one by one over the connection:

    [{
      ...
    }
    ,\r\n{
      ...
    }
    ]

`ArrayFramer.feed(data)` cuts that byte stream into pieces, each kept exactly as it
arrived: separators (`[`, `,`, `]` and the whitespace around them, checked against the
JSON grammar) and whole elements (an object from its `{` to its matching `}`). Concatenated,
the pieces are the input, byte for byte, however the input was cut. An element is only
handed out whole, so whatever is done to it can keep the array valid.

Scanning jumps from one bracket to the next with a regex that steps over whole strings
(never a Python loop per character or per string); a string cut between reads is
finished by looking for its next `"` or `\\`. Multi-byte UTF-8
sequences never contain those bytes, so a character cut across reads needs no care.
An element is validated later, by whoever parses it (`json.loads`); the framer only
counts nesting, which is enough to find where an object ends in valid JSON.
"""

from __future__ import annotations

import re

from ..errors import StreamError

# Pieces handed out by feed(): (kind, raw bytes).
SEP = 0  # `[`, `,`, whitespace: no text in them
ELEMENT = 1  # one whole object
END = 2  # the closing `]` (with the whitespace before it)

# The largest element, as for an SSE event (sse.MAX_EVENT_BYTES): a whole-response
# element can be a few MB; past this the stream ends with an explicit error.
MAX_ELEMENT_BYTES = 16 * 1024 * 1024

# Outside strings: a run of bytes that are not brackets, braces or quotes, and whole
# strings, in one match (`.match` only: it can always stop where it is, so it never
# backtracks into earlier repetitions; the string pattern is unambiguous, so a string
# left open at the end of a read costs one pass over it). What stops it is a bracket,
# a brace, or the quote of a string that goes on in the next read.
_RUN = re.compile(rb'(?:[^"{}\[\]]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.DOTALL)
_IN_STRING = re.compile(rb'["\\]')
_WS = re.compile(rb"[ \t\r\n]*")

# states
_BEFORE = 0  # before the opening `[`
_FIRST = 1  # after `[`: an element or `]`
_IN = 2  # inside an element
_AFTER = 3  # after an element: `,` or `]`
_NEXT = 4  # after `,`: an element
_DONE = 5  # after `]`: only whitespace


class ArrayError(StreamError):
    """The bytes are not a JSON array of objects. `pieces`: what the same feed() framed
    before the offending byte (so that what a read frames does not depend on how the
    stream was cut)."""

    def __init__(self, message: str, pieces: list[tuple[int, bytes]]) -> None:
        super().__init__(message)
        self.pieces = pieces


class ArrayFramer:
    """Incremental framer for a JSON array of objects.

    `feed(bytes) -> [(kind, raw)]` with kind SEP, ELEMENT or END; `flush()` at the
    end of the stream. Raises ArrayError when the bytes are not such an array (the
    message names the byte offset; the pieces framed before it come with it), and
    StreamError when an element exceeds `max_element_bytes`.
    """

    __slots__ = ("_state", "_elem", "_elem_len", "_depth", "_in_str", "_esc", "_offset", "max_element_bytes")

    def __init__(self, max_element_bytes: int = MAX_ELEMENT_BYTES) -> None:
        self._state = _BEFORE
        self._elem: list[bytes] = []  # the pieces of the element being read
        self._elem_len = 0
        self._depth = 0
        self._in_str = False
        self._esc = False  # inside a string, right after a backslash
        self._offset = 0  # stream offset of the start of the current feed
        self.max_element_bytes = max_element_bytes

    @property
    def started(self) -> bool:
        """The opening `[` has been read."""
        return self._state != _BEFORE

    @property
    def done(self) -> bool:
        """The closing `]` has been read."""
        return self._state == _DONE

    @property
    def inside(self) -> bool:
        """An element has begun and not ended."""
        return self._state == _IN

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        n = len(data)
        pos = 0
        sep_start = 0  # where the separator bytes not yet handed out begin
        while pos < n:
            st = self._state
            if st == _IN:
                end = self._scan(data, pos)
                if end < 0:  # the element goes on in the next read
                    self._add(data[pos:])
                    pos = n
                    break
                self._add(data[pos:end])
                out.append((ELEMENT, b"".join(self._elem)))
                self._elem = []
                self._elem_len = 0
                self._state = _AFTER
                pos = sep_start = end
                continue
            pos = _WS.match(data, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            c = data[pos]
            if st == _BEFORE and c == 0x5B:  # [
                self._state = _FIRST
                pos += 1
            elif (st == _FIRST or st == _NEXT) and c == 0x7B:  # {
                if pos > sep_start:
                    out.append((SEP, data[sep_start:pos]))
                end = _whole_element(data, pos)
                if end > 0:  # the common case: the element is all in this read
                    if end - pos > self.max_element_bytes:
                        raise StreamError(f"a streamed JSON array element exceeds {self.max_element_bytes} bytes")
                    out.append((ELEMENT, data[pos:end]))
                    self._state = _AFTER
                    pos = sep_start = end
                    continue
                self._state = _IN
                self._depth = 0
                self._in_str = False
                self._esc = False
            elif st == _AFTER and c == 0x2C:  # ,
                self._state = _NEXT
                pos += 1
            elif (st == _FIRST or st == _AFTER) and c == 0x5D:  # ]
                out.append((END, data[sep_start : pos + 1]))
                self._state = _DONE
                pos = sep_start = pos + 1
            else:
                if pos > sep_start:
                    out.append((SEP, data[sep_start:pos]))
                raise ArrayError(
                    f"streamed JSON array: unexpected byte {bytes([c])!r} at offset {self._offset + pos}"
                    f" ({_EXPECTED[st]} expected)",
                    out,
                )
        if self._state != _IN and n > sep_start:
            out.append((SEP, data[sep_start:n]))
        self._offset += n
        return out

    def _add(self, piece: bytes) -> None:
        if piece:
            self._elem.append(piece)
            self._elem_len += len(piece)
            if self._elem_len > self.max_element_bytes:
                raise StreamError(f"a streamed JSON array element exceeds {self.max_element_bytes} bytes")

    def _scan(self, data: bytes, pos: int) -> int:
        """Go on scanning the element from data[pos:]; the offset just past its closing
        brace, or -1 when data ends first (the state is kept for the next read)."""
        n = len(data)
        depth = self._depth
        in_str = self._in_str
        esc = self._esc
        run = _RUN.match
        in_string = _IN_STRING.search
        while pos < n:
            if in_str:
                if esc:  # the byte after a backslash is never structural (\" \\ \u...)
                    esc = False
                    pos += 1
                    continue
                m = in_string(data, pos)
                if m is None:
                    pos = n
                    break
                pos = m.end()
                if data[m.start()] == 0x5C:  # backslash
                    esc = True
                else:
                    in_str = False
                continue
            pos = run(data, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            c = data[pos]
            pos += 1
            if c == 0x22:  # " (a string the run could not finish: it ends in a later read)
                in_str = True
            elif c == 0x7B or c == 0x5B:  # { [
                depth += 1
            else:  # } ]
                depth -= 1
                if depth == 0:
                    self._depth, self._in_str, self._esc = 0, False, False
                    return pos
        self._depth, self._in_str, self._esc = depth, in_str, esc
        return -1

    def flush(self) -> bytes:
        """The stream ended. Returns the bytes of an element that never ended (b"" if
        none): they cannot be handed on as an element."""
        rest = b"".join(self._elem)
        self._elem = []
        self._elem_len = 0
        return rest


# An element ends at a `}`. The likely ones: followed by `,` and the next element's `{`,
# by the array's `]` at the end of the read, or by the end of the read. Each is checked
# exactly (_nested), the first few only: past them the scanner above takes over, so no
# input costs more than a few passes.
_CANDIDATE = re.compile(rb"\}(?=[ \t\r\n]*(?:,[ \t\r\n]*\{|\][ \t\r\n]*\Z|\Z))")
_TRIES = 3
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"{}[]')


def _whole_element(data: bytes, start: int) -> int:
    """Where the element that starts at data[start] (a `{`) ends, if it ends within data
    and this finds it at C speed; -1 otherwise (the scanner then reads it)."""
    for i, m in enumerate(_CANDIDATE.finditer(data, start)):
        if i == _TRIES:
            break
        if _nested(data[start : m.end()]):
            return m.end()
    return -1


def _nested(seg: bytes) -> bool:
    """Is seg (from a `{` to a `}`) one JSON object as far as nesting goes: its brackets,
    outside strings, properly nested, and closed only by its last byte? Then the
    scanner's depth count would also first reach 0 there: both cut at the same place."""
    # Escapes go first, pair by pair from the left (seg starts outside any string, so
    # the pairs are the real ones); then every byte but quotes and brackets; then whole
    # strings. What remains must be brackets alone.
    r = _ESCAPE.sub(b"", seg).translate(None, _NOT_STRUCTURE)
    if b'"' in r:
        # no quote is escaped any more: every other piece between quotes is a string
        pieces = r.split(b'"')
        if len(pieces) % 2 == 0:  # a string left open: the `}` was inside it
            return False
        r = b"".join(pieces[0::2])
    inner = r[1:-1]  # without the outer braces: balanced, or the object closed earlier
    while inner:
        n = len(inner)
        inner = inner.replace(b"{}", b"").replace(b"[]", b"")
        if len(inner) == n:
            return False
    return True


_EXPECTED = {
    _BEFORE: "'['",
    _FIRST: "'{' or ']'",
    _AFTER: "',' or ']'",
    _NEXT: "'{'",
    _DONE: "nothing but whitespace after ']'",
}
