"""Channel streams: a hold-back window per channel key, and the rule that sends a
JSON string to its channel's window (sans I/O). OpenAI Chat and Responses key their
channels differently (choice x field; item x content index x field); the machinery is
the same."""

from __future__ import annotations

import json

from ..errors import StreamError
from ..rules.rules import Restorer
from ..wire.jsonspan import Rule
from .holdback import MAX_CHANNELS, Window, window_for
from .restore import restore_fn
from .stream import SSEStream


def channel_index(value: object, member: str = "index") -> int:
    """A channel's index member as JSON readers read it, the one reading every stream's
    channel keys use. JSON has one number type: `0`, `0.0` and `0E0` are the same number
    to JSON.parse and to the SDKs (Python's `0 == 0.0`), so an integral float is that
    integer. Anything else (a fraction, a string, a bool, null, an absent member the
    caller gives no default for) names no channel a client files text under: StreamError
    naming the member, never a channel of its own."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise StreamError(f"a channel's `{member}` is not an integer")


class Chan(Rule):
    """A string that belongs to a stream channel: it goes through that channel's window.
    The one channel rule of every stream and realtime connection that sends strings to
    windows by key (Chat, Responses, Gemini's streams, Gemini Live)."""

    string = True
    kind = "text"

    def __init__(self, key: tuple, mode: int = Window.TEXT, parts: bool = False, flush: bool = False) -> None:
        self.key = key
        self.mode = mode
        self.parts = parts  # the text arrives in an array of content parts (Mistral)
        self.flush = flush  # the channel ends with this string: its held tail goes with it


class ChannelStream(SSEStream):
    """An SSEStream whose strings go to windows by channel key (see Chan)."""

    def __init__(self, restorer: Restorer) -> None:
        super().__init__(restorer)
        self.parts: set = set()  # channels whose text came as content parts
        self.touched: set = set()  # channels whose text the current event changed or held

    def window(self, key: tuple, mode: int) -> Window:
        return window_for(self.windows, key, self.restorer, mode)

    def window_raw_for(self, key: tuple, mode: int, raw: bytes, start: int, end: int) -> list[bytes] | None:
        """window_raw through the channel's window (on_raw): a channel without one gets a
        new window as window() makes it, kept only if the delta is read here. None, touching
        nothing, where the delta is left to on_event (which makes room or fails the stream
        when every channel is in use)."""
        w = self.windows.get(key)
        if w is not None:
            return self.window_raw(raw, w, start, end)
        if len(self.windows) >= MAX_CHANNELS:
            return None
        w = Window(self.restorer, mode)
        got = self.window_raw(raw, w, start, end)
        if got is not None:
            self.windows[key] = w
        return got

    def channel_fn(self, finishing: frozenset = frozenset()):
        """fn for jsonspan: a channel's string through its window; a channel of a choice
        that finishes in this very event is flushed into it as well. Every channel whose
        text this event changes or holds is noted in `touched` (its logprobs go)."""
        restore = restore_fn(self.restorer)
        self.touched = set()

        def fn(v: str, rule: Rule) -> str:
            if isinstance(rule, Chan):
                w = self.window(rule.key, rule.mode)
                held = w.held
                out = w.feed(v)
                # the form of a channel's latest piece decides how its held tail goes
                # out (a tail is only held after a piece that was parsed)
                if rule.parts:
                    self.parts.add(rule.key)
                else:
                    self.parts.discard(rule.key)
                if rule.key[0] in finishing:
                    out += w.flush()
                    del self.windows[rule.key]
                if out != v or held or w.held:
                    self.touched.add(rule.key)
                return out
            return restore(v, rule)

        return fn



def dumps_bytes(obj: object) -> bytes:
    """Compact JSON as the APIs send it: UTF-8, or \\u escapes where a lone surrogate
    (half of a pair cut between two deltas) cannot be UTF-8."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode("ascii")
