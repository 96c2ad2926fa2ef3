"""A response body of a recognised flow, read as what its endpoint declares and its
Content-Type says: an event stream (base/stream.SSEStream), or a whole body restored at
its end. Sans I/O."""

from __future__ import annotations

from collections.abc import Callable

from ..wire.sse import sniff
from .bodies import media_type
from .stream import Lifecycle, SSEStream, StreamState
from .wirespec import STREAMS


class BodyStream(Lifecycle):
    """A response body of a recognised flow, read as what its endpoint declares
    (wirespec.STREAMS, DOCUMENT, FILE) and its Content-Type says, never as what its first
    bytes look like: on an endpoint that streams, a body labelled `text/event-stream` goes
    to `stream` event by event; anything else (JSON, JSON lines, a file, text) is
    collected and restored whole (`whole`) when the body ends. A Reverser, like
    SSEStream; its state is its stream's when the body is one.

    Where the declaration and the label disagree the body is not reversed: it ends with
    an explicit error (fail closed), never a guess. That is a body labelled
    `text/event-stream` from an endpoint that never streams (a stored file, a list), and
    a body from a streaming endpoint that is an event stream but labelled otherwise
    (`text/plain`, none): read whole, its disguises would be restored without their JSON
    escaping, and the client would get it at the end instead of as it streams. Its error
    is then an event (its client asked for a stream and reads events; read whole, the
    adapter answers 502 with the API's error document instead). A file
    whose first bytes look like events (a YAML file starting `id:`, CSS starting `:`) is
    a file: restored as one, nothing appended.
    """

    def __init__(self, stream: SSEStream, whole: Callable[[bytes], bytes], error_body: Callable[[str], bytes],
                 content_type: str, answers: str = STREAMS) -> None:  # fmt: skip
        self.stream = stream
        self._whole = whole
        self._error_body = error_body
        self.content_type = content_type
        self.answers = answers
        labelled = media_type(content_type) == "text/event-stream"
        self.is_sse = labelled and answers == STREAMS
        self.sink = stream.feed if self.is_sse else self.feed  # what a read goes to (feed, without a call)
        # the declaration and the label disagree (known from the headers alone): the body
        # is refused (the adapter answers 502 at once; here, at the body's end)
        self.mislabelled = (f"the endpoint answers with a {answers}, the response is labelled text/event-stream"
                            if labelled and not self.is_sse else None)  # fmt: skip
        self._buf: list[bytes] = []
        self._state = StreamState.OPEN  # while not an event stream
        self._failure: str | None = None
        self._past_final = False

    @property  # type: ignore[override]
    def state(self) -> StreamState:
        return self.stream.state if self.is_sse else self._state

    @state.setter
    def state(self, new: StreamState) -> None:
        self._state = new

    @property  # type: ignore[override]
    def past_final(self) -> bool:
        return self.stream.past_final if self.is_sse else self._past_final

    @past_final.setter
    def past_final(self, went: bool) -> None:
        self._past_final = went

    @property  # type: ignore[override]
    def failure(self) -> str | None:
        return self.stream.failure if self.is_sse else self._failure

    @failure.setter
    def failure(self, why: str | None) -> None:
        self._failure = why

    @property
    def events_in(self) -> int:
        return self.stream.events_in

    @property
    def events_changed(self) -> int:
        return self.stream.events_changed

    def feed(self, data: bytes) -> bytes:
        if self.is_sse:  # (its stream says whether it is finished)
            return self.stream.feed(data)
        if self.finished or not data:
            return b""
        self._buf.append(data)
        return b""

    def flush(self) -> bytes:
        """The body ended: an event stream's end (see SSEStream.flush), or the whole
        body restored, or refused where the endpoint and the label disagree. Raises for a
        body that cannot be restored (the caller answers with error_event)."""
        if self.finished:
            return b""
        if self.is_sse:
            return self.stream.flush()
        body = b"".join(self._buf)
        self._buf = []
        if self.mislabelled is not None:
            return self.fail(self.mislabelled)
        if self.answers == STREAMS and sniff(body[:4096], self.content_type, final=True):
            # its client reads events (it asked for a stream): the error is one, in the
            # stream's shape (an error document read as events is none at all: the openai
            # SDK read an empty stream that succeeded)
            message = f"an event stream labelled {media_type(self.content_type) or 'with no content type'!r}"
            self.fail(message)
            return self.stream.error_event(f"disguise: response not reversed: {message}")
        out = self._whole(body)  # raises: the caller answers with error_event (FAILED)
        self.to(StreamState.DONE)
        return out

    def whole(self, body: bytes) -> bytes:
        """A body that arrived in one piece (not streamed, or replayed)."""
        return self.feed(body) + self.flush()

    def error_event(self, message: str) -> bytes:
        """An error in the shape the body has: an event, or an error body."""
        return self.stream.error_event(message) if self.is_sse else self._error_body(message)

    def fail(self, message: str) -> bytes:
        """End now with an explicit error in the body's shape; nothing after it."""
        if self.is_sse:
            return self.stream.fail(message)
        if self.failed:
            return b""
        self.to(StreamState.FAILED)
        self.failure = message
        self._buf = []
        return self.error_event(f"disguise: response not reversed: {message}")
