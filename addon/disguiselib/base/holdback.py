"""Hold-back windows: one per ordered channel of a stream.

`feed(text)` returns the restored text that is safe to emit now and keeps the shortest
tail that could still grow into a disguise, a placeholder or a strip match. `flush()`
ends the channel: it restores what is held and drops a dangling partial strip match
(a stream cut by max_tokens inside `[[reply_to:<`).

The central property (tests/test_holdback.py): for every way of cutting a text into
pieces, ``"".join(feed(p) for p in pieces) + flush() == feed(text) + flush()``. It holds
by construction: a window and whole-text reversal (`Restorer.text` etc.) run the same
primitive, `Restorer.run`, and a window only ever re-runs it on its held tail plus the
new piece. What is held is bounded by the longest disguise, placeholder or strip match,
so the cost of a piece does not depend on how much text went before it.

Modes:
- TEXT: decoded text a user reads; disguises, placeholders and strip rules.
- VALUE: a complete decoded string (tool name, key, value); no strip rules.
- OUTPUT: the model's answer text: TEXT, or where its request asked for JSON
  (Restorer.output) JSON once the text begins with `{` or `[` (TEXT otherwise). Where
  nobody said which (Restorer.output EITHER: a stored stream resumed past the response
  object that says it, mid-text), EITHER: the text goes through a TEXT and a JSON
  window side by side; what both release goes out, where they differ the stream ends
  (StreamError): the client gets what the answer's format gives, or an error, never a guess.
- JSON: JSON text (Anthropic `partial_json`, OpenAI `arguments`), decoded once from
  the event. Originals are inserted JSON-escaped, so `C:\\Users\\a "b"` still parses.
  Text with escapes of its own is matched in decoded space (wire/text.py json_text_decoded):
  `Tom\\u0026Jerry` is the disguise `Tom&Jerry`, the `nab` of `\\nab` is none. An
  escape the piece cuts short is held until it is whole, with the proper prefix of a
  disguise before it: a window holds nothing else.
"""

from __future__ import annotations

from ..errors import StreamError
from ..rules import restorer as rules
from ..rules.restorer import Restorer


class Window:
    TEXT = rules.TEXT
    VALUE = rules.VALUE
    JSON = rules.JSON
    OUTPUT = rules.OUTPUT  # the model's answer: TEXT, or JSON where the request asked for JSON
    EITHER = rules.EITHER  # an answer whose format nobody said: TEXT and JSON alike, or StreamError

    __slots__ = ("_r", "mode", "held", "_two")

    def __init__(self, restorer: Restorer, mode: int) -> None:
        self._r = restorer
        # OUTPUT stays until the text's first character says JSON or TEXT (rules.answer_mode)
        if mode == rules.OUTPUT and restorer.output != rules.JSON:
            mode = rules.EITHER if restorer.output == rules.EITHER else rules.TEXT
        self.mode = mode
        self.held = ""  # (JSON mode: it begins outside any escape, an escape cut short is in it)
        self._two = _Two(restorer) if mode == rules.EITHER else None

    def feed(self, text: str) -> str:
        """Append text to the channel; return what can be emitted now (restored)."""
        if self._two is not None:
            out = self._two.feed(text)
            self.held = self._two.held()
            return out
        buf = self.held + text if self.held else text
        if not buf:
            return ""
        if self.mode == rules.OUTPUT:
            mode = rules.answer_mode(buf)
            if mode is None:  # blank so far: nothing to restore, nothing decided
                return buf
            self.mode = mode
        out, h = self._r.run(buf, self.mode, False, 0)
        self.held = buf[h:]
        return out

    def holds(self, text: str) -> bool:
        """Would feed(text) hold a tail back? Changes nothing."""
        if self._two is not None:
            return self._two.holds(text)
        buf = self.held + text
        mode = rules.answer_mode(buf) if self.mode == rules.OUTPUT else self.mode
        return bool(buf) and mode is not None and self._r.holds(buf, mode, 0)

    def flush(self) -> str:
        """End the channel: everything held, restored; a dangling strip match dropped."""
        if self._two is not None:
            self.held = ""
            return self._two.flush()
        buf = self.held
        self.held = ""
        if not buf:
            return ""
        out, _ = self._r.run(buf, self.mode, True, 0)
        return out


class _Two:
    """An EITHER window's two readings: a TEXT and a JSON window fed the same text (the JSON
    one's escape state at the text's start unknown: outside any escape, as a new text's).
    Each one's released text not yet common to both waits (pt, pj); only the TEXT window
    counts what it restores."""

    __slots__ = ("t", "j", "pt", "pj")

    def __init__(self, restorer: Restorer) -> None:
        self.t, self.j = Window(restorer, rules.TEXT), Window(restorer, rules.JSON)
        self.pt = self.pj = ""

    def _j(self, text: str | None) -> str:
        r = self.j._r
        n = r.restored, r.stripped
        try:
            return self.j.feed(text) if text is not None else self.j.flush()
        finally:
            r.restored, r.stripped = n

    def _both(self, a: str, b: str, final: bool) -> str:
        a, b = self.pt + a, self.pj + b
        if a == b:
            self.pt = self.pj = ""
            return a
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        if final or (n < len(a) and n < len(b)):
            raise StreamError(rules.UNSAID)
        self.pt, self.pj = a[n:], b[n:]
        return a[:n]

    def feed(self, text: str) -> str:
        return self._both(self.t.feed(text), self._j(text), False)

    def flush(self) -> str:
        return self._both(self.t.flush(), self._j(None), True)

    def holds(self, text: str) -> bool:
        return bool(self.pt or self.pj) or self.t.holds(text) or self.j.holds(text)

    def held(self) -> str:
        """What the channel has not released (longer of the two readings' waiting text)."""
        return max(self.pt + self.t.held, self.pj + self.j.held, key=len)


# Channels one stream or connection may hold text for at once (a response has a handful:
# choices x content/refusal/tool call, items x content parts, candidates, content
# blocks). Past this it ends with an explicit error rather than merging channels or
# growing state without bound.
MAX_CHANNELS = 256


def window_for(
    windows: dict, key: object, restorer: Restorer, mode: int, what: str = "channels", owner: str = "the stream"
) -> Window:
    """The window of channel `key` in `windows` (a new one if it has none). With every
    channel in use, the empty ones are forgotten first (an empty window is the same as a
    new one); with MAX_CHANNELS holding text, StreamError."""
    w = windows.get(key)
    if w is None:
        if len(windows) >= MAX_CHANNELS:
            for k in [k for k, v in windows.items() if v is not None and not v.held]:
                del windows[k]
            if len(windows) >= MAX_CHANNELS:
                raise StreamError(f"{owner} holds text in more than {MAX_CHANNELS} {what} at once")
        w = windows[key] = Window(restorer, mode)
    return w
