"""Bytes -> the elements of a streamed JSON array of objects, sans I/O.

Google's `streamGenerateContent` without `alt=sse` answers with one JSON array whose
elements (GenerateContentResponse objects) arrive one by one over the connection:

    [{
      "candidates": [...]
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

Scanning jumps from one structural byte to the next with a regex (never a Python loop
per character): outside strings `{ } [ ] "`, inside strings `" \\`. Multi-byte UTF-8
sequences never contain those bytes, so a character cut across reads needs no care.
An element is validated later, by whoever parses it (`json.loads`); the framer only
counts nesting, which is enough to find where an object ends in valid JSON.
"""

from __future__ import annotations

import re

from .errors import StreamError

# Pieces handed out by feed(): (kind, raw bytes).
SEP = 0  # `[`, `,`, whitespace: no text in them
ELEMENT = 1  # one whole object
END = 2  # the closing `]` (with the whitespace before it)

# The largest element, as for an SSE event (sse.MAX_EVENT_BYTES): a whole-response
# element can be a few MB; past this the stream ends with an explicit error.
MAX_ELEMENT_BYTES = 16 * 1024 * 1024

_STRUCT = re.compile(rb'[{}\[\]"]')
_IN_STRING = re.compile(rb'["\\]')
_WS = re.compile(rb"[ \t\r\n]*")

# states
_BEFORE = 0  # before the opening `[`
_FIRST = 1  # after `[`: an element or `]`
_IN = 2  # inside an element
_AFTER = 3  # after an element: `,` or `]`
_NEXT = 4  # after `,`: an element
_DONE = 5  # after `]`: only whitespace


class ArrayFramer:
    """Incremental framer for a JSON array of objects.

    `feed(bytes) -> [(kind, raw)]` with kind SEP, ELEMENT or END; `flush()` at the
    end of the stream. Raises StreamError when the bytes are not such an array (the
    message names the byte offset) or an element exceeds `max_element_bytes`.
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
                raise StreamError(
                    f"streamed JSON array: unexpected byte {bytes([c])!r} at offset {self._offset + pos}"
                    f" ({_EXPECTED[st]} expected)"
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
        struct = _STRUCT.search
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
            m = struct(data, pos)
            if m is None:
                pos = n
                break
            c = data[m.start()]
            pos = m.end()
            if c == 0x22:  # "
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


_EXPECTED = {
    _BEFORE: "'['",
    _FIRST: "'{' or ']'",
    _AFTER: "',' or ']'",
    _NEXT: "'{'",
    _DONE: "nothing but whitespace after ']'",
}
