"""What an OpenAI Chat stream holds back and where it goes (sans I/O; apis/openai/chat.py's
ChatStream): a tool name that may still continue, with the events waiting behind it
(`ToolNames`), and the held tails put back into a chunk (`_insertion`, `_merge_tails`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...base.channels import Chan, ChannelStream, channel_index
from ...base.holdback import Window
from ...rules.rules import json_escape
from ...wire.jsonspan import Rule
from ...wire.sse import Event

if TYPE_CHECKING:  # (the stream it is mixed into, for the checker: ChatStream(ToolNames, ChannelStream))
    _Stream = ChannelStream
else:
    _Stream = object

# Events one stream may keep waiting behind a tool name that may still continue (see
# ChatStream.waiting): a server that streams a name in pieces sends the next piece of it
# within a few events; past this many the name is taken as whole, rather than keeping
# every other choice's text waiting without bound.
MAX_WAITING = 1024


class ToolNames(_Stream):
    """ChatStream's tool names (see its docstring): a name piece that would leave a tail
    held keeps its event, and the events after it, waiting (`waiting`) until the stream
    says whether the name goes on."""

    waiting: list[tuple[Event, object]]
    _releasing: bool
    _set_aside: Any  # the compiled per-read step (SSEStream._pass), set aside while events wait
    if TYPE_CHECKING:

        def _chunk(self, ev: Event, data: str, obj: dict, whole: frozenset = frozenset()) -> list[bytes]: ...

    def _names_fn(self, finishing: frozenset, whole: frozenset):
        """channel_fn, and a tool name's window ended where its piece holds nothing
        back (a name sent whole, as OpenAI sends it: restored at once, in its event) or
        where it is known to be whole (its tail flushed into this piece)."""
        fn = self.channel_fn(finishing)

        def names(v: str, rule: Rule) -> str:
            out = fn(v, rule)
            if isinstance(rule, Chan) and rule.key[1] == "name":
                w = self.windows.get(rule.key)
                if w is not None and (not w.held or rule.key in whole):
                    out += w.flush()
                    del self.windows[rule.key]
            return out

        return names

    def _names_held(self, obj: dict) -> list[tuple]:
        """The tool name channels whose pieces in chunk obj would leave a tail held (of
        choices that do not finish in it: those are flushed into it)."""
        out = []
        choices = obj.get("choices")
        for c in choices if isinstance(choices, list) else ():
            if not isinstance(c, dict) or c.get("finish_reason") is not None:
                continue
            d = c.get("delta")
            calls = d.get("tool_calls") if isinstance(d, dict) else None
            if not isinstance(calls, list):
                continue
            k = channel_index(c.get("index", 0))
            pieces: dict = {}
            for tc in calls:
                f = tc.get("function") if isinstance(tc, dict) else None
                name = f.get("name") if isinstance(f, dict) else None
                if isinstance(name, str):  # (an empty piece matters only where a tail is held)
                    key = (k, "name", channel_index(tc.get("index", 0)))  # type: ignore[union-attr]
                    pieces[key] = pieces.get(key, "") + name
            for key, text in pieces.items():
                w = self.windows.get(key)
                if w.holds(text) if w is not None else self.restorer.holds(text, Window.VALUE, 0):
                    out.append(key)
        return out

    def _name_ends(self, key: tuple) -> bool | None:
        """Does tool name channel key end with its latest piece (the head of `waiting`)?
        True or False as the events waiting after it say; None: none of them says yet."""
        k, _, j = key
        for _ev, doc in self.waiting[1:]:
            if not isinstance(doc, dict) or "error" in doc:
                return True
            choices = doc.get("choices")
            for c in choices if isinstance(choices, list) else ():
                if not isinstance(c, dict) or c.get("index", 0) != k:
                    continue
                d = c.get("delta")
                calls = d.get("tool_calls") if isinstance(d, dict) else None
                for tc in calls if isinstance(calls, list) else ():
                    if isinstance(tc, dict) and tc.get("index", 0) == j:
                        f = tc.get("function")
                        return not (isinstance(f, dict) and isinstance(f.get("name"), str))
                if c.get("finish_reason") is not None:
                    return True
        return None

    def _release(self, end: bool = False) -> list[bytes]:
        """The waiting events, from the first, whose tool names the stream has decided
        (end: the stream ends, every name is whole), each as on_event gives it."""
        out: list[bytes] = []
        if self._releasing:
            return out
        self._releasing = True
        try:
            while self.waiting:
                ev, doc = self.waiting[0]
                whole = set()
                if isinstance(doc, dict):
                    for key in self._names_held(doc):
                        ends = True if end or len(self.waiting) > MAX_WAITING else self._name_ends(key)
                        if ends is None:
                            return out
                        if ends:
                            whole.add(key)
                del self.waiting[0]
                if isinstance(doc, dict):
                    out.extend(self._chunk(ev, ev.data or "", doc, frozenset(whole)))
                else:
                    out.extend(self.not_object(ev))
        finally:
            self._releasing = False
            if not self.waiting and self._set_aside is not None:
                self._pass, self._set_aside = self._set_aside, None
        return out

    def fail(self, message: str) -> bytes:
        # Events waiting behind a tool name go with the held text (SSEStream.fail): the
        # error says the stream is incomplete.
        self.waiting = []
        if self._set_aside is not None:
            self._pass, self._set_aside = self._set_aside, None
        return super().fail(message)


def _insertion(tails: dict, delta: object, parted: bool) -> str:
    """The members to insert at the start of a Chat delta object for held tails, or ""
    when one of them would repeat a key the delta already has. parted: the choice's
    content came as parts, so its tail goes as a text part."""
    if not isinstance(delta, dict):
        return ""
    members = []
    calls = []
    for sub, tail in tails.items():
        esc = '"' + json_escape(tail) + '"'
        if sub in (("content",), ("refusal",)):
            if sub[0] in delta:
                return ""
            if sub == ("content",) and parted:
                esc = '[{"type":"text","text":' + esc + "}]"
            members.append(f'"{sub[0]}":{esc}')
        elif sub == ("transcript",):
            if "audio" in delta:
                return ""
            members.append(f'"audio":{{"transcript":{esc}}}')
        elif sub == ("fc",):
            if "function_call" in delta:
                return ""
            members.append(f'"function_call":{{"arguments":{esc}}}')
        elif sub[0] == "name":  # (a name's tail goes into its own event): _merge_tails rebuilds
            return ""
        else:
            calls.append(f'{{"index":{json.dumps(sub[1])},"function":{{"arguments":{esc}}}}}')
    if calls:
        if "tool_calls" in delta:
            return ""
        members.append('"tool_calls":[' + ",".join(calls) + "]")
    return ",".join(members) + ("," if delta else "")


def _merge_tails(delta: dict, tails: dict, parted: bool) -> None:
    """Append each held tail to its field of a Chat delta, adding an index-only
    tool_calls entry where the delta names none for that tool call; a content tail of a
    choice whose content came as parts goes as a text part."""
    for sub, tail in tails.items():
        if sub == ("content",) and (parted or isinstance(delta.get("content"), list)):
            parts = delta.get("content")
            if isinstance(parts, str):
                parts = [{"type": "text", "text": parts}] if parts else []
            delta["content"] = [*(parts or []), {"type": "text", "text": tail}]
        elif sub in (("content",), ("refusal",)):
            delta[sub[0]] = (delta.get(sub[0]) or "") + tail
        elif sub == ("transcript",):
            audio = delta.get("audio")
            if not isinstance(audio, dict):
                audio = delta["audio"] = {}
            audio["transcript"] = (audio.get("transcript") or "") + tail
        elif sub == ("fc",):
            fc = delta.get("function_call")
            if not isinstance(fc, dict):  # absent, or null as some servers send every member
                fc = delta["function_call"] = {}
            fc["arguments"] = (fc.get("arguments") or "") + tail
        else:  # ("tool", j) or ("name", j)
            j = sub[1]
            calls = delta.get("tool_calls")
            if not isinstance(calls, list):
                calls = delta["tool_calls"] = []
            entry = next((c for c in calls if isinstance(c, dict) and c.get("index") == j), None)
            if entry is None:
                entry = {"index": j, "function": {}}
                calls.append(entry)
            f = entry.get("function")
            if not isinstance(f, dict):
                f = entry["function"] = {}
            field = "name" if sub[0] == "name" else "arguments"
            f[field] = (f.get(field) or "") + tail
