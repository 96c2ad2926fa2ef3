"""Helpers for the next-turn tests (turns.py against the full path): a conversation's
bodies masked turn by turn with the turns remembered, each checked against the verdict
pipeline.mask_request gives without them, and the warnings it logs."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator

from hypothesis import strategies as st

from disguiselib import pipeline, turns
from disguiselib.apis.registry import recognise
from disguiselib.config import build_config
from disguiselib.rules.rules import Session

API = recognise("POST", "/v1/messages")
HDRS = [("content-type", "application/json")]
MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Müller: Mueller_X
"""


def config(tmp_path_factory, fakes: bool):  # noqa: ANN001, ANN201
    """MAPPING's configuration (with disguise_fakes where fakes)."""
    d = tmp_path_factory.mktemp("m")
    (d / "m.yaml").write_text(MAPPING)
    return build_config([str(d / "m.yaml")], True, [], b"f" * 32 if fakes else None)


@contextlib.contextmanager
def any_size() -> Iterator[None]:
    """Bodies of any size remembered and cut (turns.MIN_BYTES 0)."""
    was = turns.MIN_BYTES
    turns.MIN_BYTES = 0
    try:
        yield
    finally:
        turns.MIN_BYTES = was


@contextlib.contextmanager
def no_turns() -> Iterator[None]:
    turns.ON = False
    try:
        yield
    finally:
        turns.ON = True


def state(s: Session) -> tuple:
    return (list(s.placeholders.items()), list(s._by_key.items()), dict(s._count), s.masked, dict(s.counts),
            s.literals, s.fakes, s.reserved, s.keyed, s.copied, s.json_out, s.documents, s.cited)  # fmt: skip


def verdict(v: pipeline.Verdict) -> tuple:
    if isinstance(v, pipeline.Masked):
        return ("masked", v.body, state(v.session), v.headers)
    return (type(v).__name__, v)


CUT: list[int] = []  # next turns cut, over every conversation (test_the_property_test_cuts)


class Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(record.getMessage())


def turn_by_turn(cfg, bodies: list[bytes], api=API, path: str = "/v1/messages") -> int:  # noqa: ANN001
    """Each body (a request of api to path) masked with the turns remembered, checked
    against the full path (its verdict, and the warnings it logs); the number of next
    turns cut."""
    cfg.rules.found.turns = None
    said = Said()
    log = logging.getLogger("disguise")
    log.addHandler(said)
    try:
        for body in bodies:
            was = turns.turns_of(cfg.rules)
            hits, n = (was.hits if was is not None else 0), turns.tail(cfg.rules, api, body, cfg.disguises)
            got = pipeline.mask_request(api, body, cfg, path, HDRS)
            now = turns.turns_of(cfg.rules)
            if now is not None and now.hits > hits:  # cut: turns.tail said so, and how much it masked
                assert n is not None and 0 < n < len(body)
            warned, said.said = said.said, []
            with no_turns():
                want = pipeline.mask_request(api, body, cfg, path, HDRS)
            assert verdict(got) == verdict(want)
            assert warned == said.said
            said.said = []
    finally:
        log.removeHandler(said)
    store = turns.turns_of(cfg.rules)
    CUT.append(store.hits if store is not None else 0)
    return CUT[-1]


_PIECES = [
    "plain words ", "Acme Corp", "Müller", " bob@corp.example.com", " x@y.io ", "password: abc123XYZ", "+1 415 555 2671",
    " 10.1.2.3", "é", "😀", "\n", " ", "x/y", "more text ",
]  # fmt: skip
# what only the whole body tells (a text holds one now and then): placeholders and fakes the
# client typed, a literal's disguise, a copy of a password bare, escapes no JSON writer makes
# (an escape no writer makes, with any original found: every turn the full path's, copied once)
_RARE = ["[EMAIL_1]", "[EMAIL_2]", "Zenith Labs", " abc123XYZ", "carol@mail.example"] * 2 + ["a\\/b", "\\u0041"]
_text = st.tuples(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5),
                  st.sampled_from(_RARE + [""] * 16 * len(_RARE)), st.integers(0, 5)).map(
    lambda t: " ".join(t[0][: t[2]] + [t[1]] + t[0][t[2] :]))  # fmt: skip


_thinking = st.lists(st.sampled_from(["I should ", "[EMAIL_1]", "[PASSWORD_1]", "Zenith Labs", "look", "\n"] * 10
                                     + [" bob@corp.example.com"]), min_size=1, max_size=5).map("".join)


@st.composite
def message(draw, role: str | None = None) -> dict:  # noqa: ANN001
    role = role or draw(st.sampled_from(["user", "assistant"]))
    if role == "user":
        if draw(st.booleans()):
            return {"role": "user", "content": draw(_text)}
        blocks = [{"type": "text", "text": draw(_text)}]
        if draw(st.booleans()):
            blocks.insert(0, {"type": "tool_result", "tool_use_id": "toolu_1", "content": draw(_text)})
        return {"role": "user", "content": blocks}
    blocks = []
    if draw(st.booleans()):  # sent back as it came: what the model read, disguised (an original now and then)
        t = draw(_thinking)
        blocks.append({"type": "thinking", "thinking": t, "signature": "sig-" + t[::-1]})
    blocks.append({"type": "text", "text": draw(_text)})
    if draw(st.booleans()):
        blocks.append({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": draw(_text)}})
    return {"role": "assistant", "content": blocks}


def cache_last(messages: list[dict]) -> list[dict]:
    """cache_control moved to the newest message, as Claude Code does."""
    out = []
    for m in messages:
        m = json.loads(json.dumps(m))
        if isinstance(m["content"], list):
            for b in m["content"]:
                b.pop("cache_control", None)
        out.append(m)
    if out and isinstance(out[-1]["content"], list):
        out[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


@st.composite
def chat_message(draw, role: str | None = None) -> dict:  # noqa: ANN001
    """A Chat Completions message: text or content parts, a tool call (its arguments a
    JSON document in a string), a tool's result."""
    role = role or draw(st.sampled_from(["user", "user", "assistant", "tool"]))
    if role == "user":
        if draw(st.booleans()):
            return {"role": "user", "content": draw(_text)}
        return {"role": "user", "content": [{"type": "text", "text": draw(_text)}]}
    if role == "tool":
        return {"role": "tool", "tool_call_id": "call_1", "content": draw(_text)}
    m: dict = {"role": "assistant", "content": draw(_text) if draw(st.booleans()) else None}
    if m["content"] is None or draw(st.booleans()):
        args = json.dumps({"command": draw(_text)}, ensure_ascii=draw(st.booleans()))
        m["tool_calls"] = [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": args}}]
    return m


@st.composite
def gemini_message(draw, role: str | None = None) -> dict:  # noqa: ANN001
    """A Gemini content: text parts, a function call (a thought signature beside it) or
    its response."""
    role = role or draw(st.sampled_from(["user", "model"]))
    if role == "user":
        parts: list = [{"text": draw(_text)}]
        if draw(st.booleans()):
            parts.insert(0, {"functionResponse": {"name": "bash", "response": {"output": draw(_text)}}})
        return {"role": "user", "parts": parts}
    parts = [{"text": draw(_text)}]
    if draw(st.booleans()):
        t = draw(_thinking)
        parts.append({"functionCall": {"name": "bash", "args": {"command": draw(_text)}}, "thoughtSignature": t[::-1]})
    return {"role": "model", "parts": parts}


@st.composite
def converse_message(draw, role: str | None = None) -> dict:  # noqa: ANN001
    """A Bedrock Converse message: text, reasoning with its signature, a tool's use and
    its result."""
    role = role or draw(st.sampled_from(["user", "assistant"]))
    if role == "user":
        blocks: list = [{"text": draw(_text)}]
        if draw(st.booleans()):
            blocks.insert(0, {"toolResult": {"toolUseId": "t1", "content": [{"text": draw(_text)}]}})
        return {"role": "user", "content": blocks}
    blocks = []
    if draw(st.booleans()):
        t = draw(_thinking)
        blocks.append({"reasoningContent": {"reasoningText": {"text": t, "signature": "sig-" + t[::-1]}}})
    blocks.append({"text": draw(_text)})
    if draw(st.booleans()):
        blocks.append({"toolUse": {"toolUseId": "t1", "name": "bash", "input": {"command": draw(_text)}}})
    return {"role": "assistant", "content": blocks}


def _anthropic_doc(draw, system: str, messages: list, tools: str, first: bool, head: dict | None) -> dict:  # noqa: ANN001
    doc: dict = {**(head or {"model": "claude-x"}), "max_tokens": 1024}
    cached = cache_last(messages) if draw(st.booleans()) else messages
    system_ = [{"type": "text", "text": system}]
    tools_ = [{"name": "bash", "description": tools, "input_schema": {"type": "object"}}]
    if first:  # the messages before system and tools (Claude Code) or after
        doc.update(messages=cached, system=system_, tools=tools_)
    else:
        doc.update(system=system_, tools=tools_, messages=cached)
    return {**doc, "stream": True}


def _chat_doc(draw, system: str, messages: list, tools: str, first: bool, head: dict | None) -> dict:  # noqa: ANN001
    doc: dict = {"model": "gpt-x"}
    conv = [{"role": "system", "content": system}, *messages]
    tools_ = [{"type": "function", "function": {"name": "bash", "description": tools}}]
    doc.update({"messages": conv, "tools": tools_} if first else {"tools": tools_, "messages": conv})
    return {**doc, "stream": True, "stream_options": {"include_usage": True}}


def _gemini_doc(draw, system: str, messages: list, tools: str, first: bool, head: dict | None) -> dict:  # noqa: ANN001
    sys_ = {"parts": [{"text": system}]}
    doc = {"contents": messages, "systemInstruction": sys_} if first else {"system_instruction": sys_, "contents": messages}
    return {**doc, "tools": [{"functionDeclarations": [{"name": "bash", "description": tools}]}],
            "generationConfig": {"temperature": 0}}  # fmt: skip


def _converse_doc(draw, system: str, messages: list, tools: str, first: bool, head: dict | None) -> dict:  # noqa: ANN001
    doc: dict = {"system": [{"text": system}], "messages": messages} if first else {"messages": messages}
    tool = {"toolSpec": {"name": "bash", "description": tools, "inputSchema": {"json": {"type": "object"}}}}
    doc["toolConfig"] = {"tools": [tool]}
    if not first:
        doc["system"] = [{"text": system}]
    return {**doc, "inferenceConfig": {"maxTokens": 100}}


# each API's message, and its body from (draw, the system text, messages, the tool's
# description, a layout flag, the members first)
SHAPES = {
    "anthropic": (lambda: message(), _anthropic_doc),
    "chat": (lambda: chat_message(), _chat_doc),
    "gemini": (lambda: gemini_message(), _gemini_doc),
    "converse": (lambda: converse_message(), _converse_doc),
}


@st.composite
def api_conversation(draw, shape: str, head: dict | None = None) -> list[bytes]:  # noqa: ANN001
    """A conversation's bodies, turn by turn, in one of SHAPES: messages appended, an
    earlier one now and then edited or the last dropped, the system text changed;
    head: the Anthropic body's members before max_tokens (Claude on Vertex AI and
    Bedrock: anthropic_version, no model)."""
    message, doc_of = SHAPES[shape]
    ascii_, first = draw(st.booleans()), draw(st.booleans())
    system, tools = draw(_text), draw(_text)
    messages = draw(st.lists(message(), min_size=1, max_size=3))
    bodies = []
    for _ in range(draw(st.integers(2, 5))):
        body = doc_of(draw, system, messages, tools, first, head)
        bodies.append(json.dumps(body, ensure_ascii=ascii_, separators=(",", ":")).encode())
        change = draw(st.sampled_from(["append", "append", "append", "edit", "drop", "system"]))
        if change == "edit":
            messages[draw(st.integers(0, len(messages) - 1))] = draw(message())
        elif change == "drop" and len(messages) > 1:
            messages.pop()
        elif change == "system":
            system = draw(_text)
        messages = messages + draw(st.lists(message(), min_size=1, max_size=3))
    return bodies


def conversation(head: dict | None = None) -> st.SearchStrategy[list[bytes]]:
    """An Anthropic Messages conversation's bodies, turn by turn (cache_control moved to
    the newest message now and then, as Claude Code does)."""
    return api_conversation("anthropic", head)
