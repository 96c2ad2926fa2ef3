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
  (Restorer.output) JSON once the text begins with `{` or `[` (TEXT otherwise).
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

    __slots__ = ("_r", "mode", "held")

    def __init__(self, restorer: Restorer, mode: int) -> None:
        self._r = restorer
        # OUTPUT stays until the text's first character says JSON or TEXT (rules.answer_mode)
        self.mode = rules.TEXT if mode == rules.OUTPUT and restorer.output != rules.JSON else mode
        self.held = ""  # (JSON mode: it begins outside any escape, an escape cut short is in it)

    def feed(self, text: str) -> str:
        """Append text to the channel; return what can be emitted now (restored)."""
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
        buf = self.held + text
        mode = rules.answer_mode(buf) if self.mode == rules.OUTPUT else self.mode
        return bool(buf) and mode is not None and self._r.holds(buf, mode, 0)

    def flush(self) -> str:
        """End the channel: everything held, restored; a dangling strip match dropped."""
        buf = self.held
        self.held = ""
        if not buf:
            return ""
        out, _ = self._r.run(buf, self.mode, True, 0)
        return out


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
