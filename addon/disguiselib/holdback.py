"""Hold-back windows: one per ordered channel of a stream.

`feed(text)` returns the restored text that is safe to emit now and keeps the shortest
tail that could still grow into a disguise, a placeholder or a strip match. `flush()`
ends the channel: it restores what is held and drops a dangling partial strip match
(a stream cut by max_tokens inside `[[reply_to:<`).

The central property (tests/test_holdback.py): for every way of cutting a text into
pieces, ``"".join(feed(p) for p in pieces) + flush() == feed(text) + flush()``.

Modes:
- TEXT: decoded text a user reads; disguises, placeholders and strip rules.
- VALUE: a complete decoded string (tool name, key, value); no strip rules.
- JSON: JSON text (Anthropic `partial_json`, OpenAI `arguments`), decoded once from
  the event. Originals are inserted JSON-escaped, so `C:\\Users\\a "b"` still parses,
  and a match that starts inside an escape sequence (the `nab` of `\\nab`, the hex
  digits of `\\u00e9`) is not a disguise.
"""

from __future__ import annotations

from .rules import Restorer


def _esc_advance(s: str, i: int, j: int, st: int) -> int:
    """JSON escape state after s[i:j], starting in state st.

    0: not in an escape; -1: just after a backslash; k > 0: k hex digits of a \\u escape
    still to come.
    """
    while i < j:
        if st == 0:
            k = s.find("\\", i, j)
            if k < 0:
                return 0
            st = -1
            i = k + 1
        elif st == -1:
            st = 4 if s[i] == "u" else 0
            i += 1
        else:
            take = min(st, j - i)
            st -= take
            i += take
    return st


class Window:
    TEXT = 0
    VALUE = 1
    JSON = 2

    __slots__ = ("_r", "mode", "held", "_esc", "_rx", "_hold", "_end")

    def __init__(self, restorer: Restorer, mode: int) -> None:
        rules = restorer.rules
        self._r = restorer
        self.mode = mode
        self.held = ""
        self._esc = 0  # JSON mode: escape state at the start of `held`
        if mode == Window.TEXT:
            self._rx, self._hold = rules.rev_text, rules.rev_text_hold
            self._end = rules.strip_hold if rules.has_strips else None
        else:
            self._rx, self._hold = rules.rev_value, rules.rev_value_hold
            self._end = None

    @property
    def escaped(self) -> bool:
        """JSON mode: the text so far ends inside an escape sequence."""
        return self._esc != 0

    def feed(self, text: str) -> str:
        """Append text to the channel; return what can be emitted now (restored)."""
        buf = self.held + text if self.held else text
        if not buf:
            return ""
        out, h = self._process(buf, self._hold)
        self.held = buf[h:]
        if self.mode == Window.JSON and (self._esc or "\\" in buf):
            self._esc = _esc_advance(buf, 0, h, self._esc)
        return out

    def flush(self) -> str:
        """End the channel: everything held, restored; a dangling strip match dropped."""
        buf = self.held
        self.held = ""
        if not buf:
            return ""
        out, _ = self._process(buf, self._end)
        self._esc = 0
        return out

    def _process(self, buf: str, hold) -> tuple[str, int]:
        """Restore complete matches that start before the hold point; return the
        restored text up to it and the hold point."""
        n = len(buf)
        h = n
        if hold is not None:
            pm = hold.search(buf, partial=True)
            if pm is not None and pm.start() < n:
                h = pm.start()
        rx = self._rx
        m = rx.search(buf)
        if m is None or m.start() >= h:  # the common case: nothing to restore
            return buf[:h], h
        json_mode = self.mode == Window.JSON
        out: list[str] = []
        pos = 0
        while m is not None and m.start() < h:
            s = m.start()
            if json_mode and _esc_advance(buf, 0, s, self._esc) != 0:
                # inside an escape sequence: not a disguise; look again one further on
                m = rx.search(buf, s + 1)
                continue
            out.append(buf[pos:s])
            out.append(self._r.replacement(m, json_mode))
            pos = m.end()
            if pos > h and hold is not None:
                pm = hold.search(buf, pos, partial=True)
                h = pm.start() if pm is not None and pm.start() < n else n
            elif pos > h:
                h = n
            m = rx.search(buf, pos)
        out.append(buf[pos:h])
        return "".join(out), h
