"""Gemini's streamed JSON array (`streamGenerateContent` without `alt=sse`): the
elements of one JSON array arriving piece by piece, each a GenerateContentResponse
restored like an SSE chunk (sans I/O)."""

from __future__ import annotations

import re

from ...base.stream import StreamState
from ...errors import StreamError
from ...rules.rules import Restorer
from ...wire.jsonarray import ELEMENT, END, SEP, ArrayError, ArrayFramer
from ...wire.sse import Shape
from .gemini import error_chunk
from .stream import GeminiStream


class GeminiArrayStream(GeminiStream):
    """A `streamGenerateContent` stream without `alt=sse`: one JSON array whose elements
    are the chunks. The client's bytes stay a valid JSON array however upstream's bytes
    are cut: elements go out whole, synthetic ones with their own commas, and a stream
    that ends without its `]` gets an error element and the `]`."""

    array = True

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.arr = ArrayFramer(self.framer.max_event_bytes)
        self._opened = False  # the client got the `[`
        self._expect = False  # what the client got so far ends in `[` or `,`: an element is due
        self._closed = False  # the client got the `]`

    def feed_stream(self, data: bytes) -> bytes:
        out: list[bytes] = []
        err: ArrayError | None = None
        # an element begun in an earlier read: its first bytes are not in data, so the
        # pieces of this read are not data even when their lengths add up to it
        carried = self.arr.inside
        try:
            pieces = self.arr.feed(data)
        except ArrayError as e:  # what came before the bad byte still goes out
            pieces, err = e.pieces, e
        same = err is None  # every piece goes out as it came
        try:
            for kind, raw in pieces:
                if kind == SEP:
                    out.append(raw)
                    # a separator piece holds whitespace and at most one `[` or `,`
                    if b"[" in raw or b"," in raw:
                        self._opened = self._expect = True
                elif kind == ELEMENT:
                    self.events_in += 1
                    n = len(out)
                    out.extend(self._element(raw))
                    same = same and len(out) == n + 1 and out[n] is raw
                    self._expect = False
                elif kind == END:
                    for s in self.drain_chunks():
                        same = False
                        out.append(b",\n" + s.encode("utf-8"))
                    out.append(raw)
                    self._closed = True
            if err is not None:
                raise err
        except Exception:
            self._partial = out  # what error_event must follow
            raise
        if same and not carried and sum(map(len, out)) == len(data):
            return data  # the read as it came: whole elements and separators only
        return b"".join(out)

    def _element(self, raw: bytes) -> list[bytes]:
        if self.fast and self.quiet() and not self.triggers.any(raw) and self.quiet_range(raw, 0, len(raw)):
            self.passed(raw, 0, len(raw))  # (its text is counted: cites.py)
            return [raw]  # nothing in it can take part in a match (stream.py, triggers.py)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StreamError(f"a streamed JSON array element is not UTF-8 (byte offset {e.start})") from e
        pre, new = self.chunk(text)
        out = [s.encode("utf-8") + b",\n" for s in pre]
        out.append(raw if new is None else new.encode("utf-8"))
        return out

    def _flush(self) -> bytes:
        if self.finished:
            return b""
        if self.shape is Shape.UNDECIDED:
            head = self._sniff(b"", final=True)
            if head:
                return self.feed_stream(head) + self._flush()
        if self.shape is not Shape.STREAM:
            whole = self._whole_document()
            self.to(StreamState.FAILED if self._whole_failed else StreamState.DONE)
            return whole
        self.arr.flush()  # an element cut short cannot go out: the error below says so
        if self._closed:
            self.to(StreamState.DONE)
            return b""
        self.to(StreamState.FAILED)
        out = []
        for s in self.drain_chunks():
            out.append(self._sep() + s.encode("utf-8"))
        out.append(self._close("disguise: the stream ended before its closing ']': it was cut short"))
        return b"".join(out)

    def _sep(self) -> bytes:
        """What must precede one more element, given what the client got so far; the
        element is then taken as sent."""
        sep = b"" if self._expect else b",\n" if self._opened else b"["
        self._opened = True
        self._expect = False
        return sep

    def _close(self, message: str) -> bytes:
        out = self._sep() + error_chunk(message).encode("utf-8") + b"\n]"
        self._closed = True
        return out

    def error_event(self, message: str) -> bytes:
        partial, self._partial = b"".join(self._partial), []
        if self._closed:
            # The array is complete: nothing can be added to it and stay JSON. What
            # follows is an error document, which a client's parser refuses loudly.
            return partial + b"\n" + error_chunk(message).encode("utf-8")
        return partial + self._close(message)

    def frame(self, data: str) -> bytes:
        return data.encode("utf-8")


def stream_for(path: str, content_type: str) -> type[GeminiStream] | None:
    """The stream class for a response to path with this content type; None: the body is
    restored whole. Without `alt=sse`, streamGenerateContent answers with a JSON array
    (`application/json`) that arrives chunk by chunk."""
    ct = content_type.lower()
    if "text/event-stream" in ct:
        return GeminiStream
    p = path.split("?", 1)[0]
    if re.search(r"(?::|%3[aA])streamGenerateContent$", p) and ("json" in ct or not ct):
        return GeminiArrayStream
    return None
