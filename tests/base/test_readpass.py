"""The per-read step (base/readpass.py): the compiled pass, its Python reference (on_raw
on every event) and the Python engine's own per-read path (triggers) give the same
bytes, read by read, and leave the same state, on the stream generators' texts with
random delta splits and random read boundaries (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.openai.chat import ChatStream
from disguiselib.apis.openai.responses import ResponsesStream
from disguiselib.base import readpass
from disguiselib.rules import mappings, rules
from openai_util import build_chat, build_responses
from strategies import LITERALS, PLACEHOLDERS, RULES, _piece, byte_splits, splits

# Literals alone (no placeholder, no strip rule), with disguises that begin like the
# escapes of JSON text (`\nab`, `\u00e9`): the compiled step does the whole work.
LITERAL_RULES = rules.Rules(mappings.from_dict({"literals": {**LITERALS, "Ö": "nov", "Jörg": "Zenith", "Ñ": "nab",
                                                              "Ø": "u00e9x"}}))  # fmt: skip
# The shared texts, and escapes right before a disguise, placeholders issued or not and
# their beginnings.
texts = st.lists(st.one_of(_piece, st.sampled_from(["\nab", "\nova", "\\nab", "\u00e9x", "é", "[EMAIL_1]",
                                                    "[EMAIL_9]", "[EMAIL_", "[EM", "x[EMAIL_2] "])),
                 max_size=14).map("".join)  # fmt: skip
STREAMS = {"anthropic": AnthropicStream, "chat": ChatStream, "responses": ResponsesStream}
APIS = {"anthropic": readpass.ANTHROPIC, "chat": readpass.CHAT, "responses": readpass.RESPONSES}
compiled = pytest.mark.skipif(readpass.make_pass is None, reason="the compiled engine is not in use")


def run(api: str, rs: rules.Rules, placeholders: dict, chunks: list[bytes], way: str) -> tuple:
    """Every read's output, flush's, and the state left: counters, held tails, restored."""
    s = STREAMS[api](rs.restorer(dict(placeholders)))
    if way == "python":
        s._pass = None
    elif way == "reference":
        s._pass = readpass.PyReadPass(s, APIS[api])
    else:
        assert s._pass is not None
    outs = [s.feed(c) for c in chunks] + [s.flush()]
    held = {k: (w.held if w is not None else None) for k, w in s.windows.items()}
    return (outs, s.events_in, s.events_changed, s.events_held, s.restorer.restored, s.restorer.stripped,
            s.state, held)  # fmt: skip


@st.composite
def cases(draw) -> tuple:
    api = draw(st.sampled_from(sorted(STREAMS)))
    text, value = draw(texts), draw(texts)
    args = json.dumps({"thread_id": value, "path": "WINPATH", "n": 1.5}, ensure_ascii=draw(st.booleans()))
    if api == "anthropic":
        body = build_stream([("thinking", draw(splits(draw(texts)))), ("text", draw(splits(text))),
                             ("tool", draw(splits(args, 12)))])  # fmt: skip
    elif api == "chat":
        steps = [("content", 0, p) for p in draw(splits(text))]
        steps += [("tool", 0, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate(draw(splits(args, 6)))]
        steps.append(("finish", 0, draw(st.sampled_from(["tool_calls", "stop", "length"]))))
        body = build_chat(steps)
    else:
        body = build_responses(draw(splits(text)), draw(splits(args, 10)), spaced=draw(st.booleans()))
    if draw(st.booleans()):  # a stream cut short
        body = body[: draw(st.integers(0, len(body)))]
    chunks = draw(st.one_of(byte_splits(body, 40), st.just([e for e in body.split(b"\n\n")]).map(
        lambda parts: [p + b"\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else []))))  # fmt: skip
    rs, ph = draw(st.sampled_from([(LITERAL_RULES, {}), (RULES, PLACEHOLDERS)]))
    return api, rs, ph, chunks


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases())
def test_the_reference_pass_is_the_python_path(case: tuple) -> None:
    api, rs, ph, chunks = case
    assert run(api, rs, ph, chunks, "reference") == run(api, rs, ph, chunks, "python")


@compiled
@SETTINGS
@given(cases())
def test_the_compiled_pass_gives_the_references_bytes_and_state(case: tuple) -> None:
    api, rs, ph, chunks = case
    assert run(api, rs, ph, chunks, "compiled") == run(api, rs, ph, chunks, "reference")


@compiled
def test_a_read_the_pass_leaves_unchanged_is_the_same_object() -> None:
    body = build_stream([("text", ["Hello ", "there, ", "how are ", "you"])])
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    s = AnthropicStream(LITERAL_RULES.restorer({}))
    for e in events[:-1]:
        s.feed(e)
    read = b"".join(events[2:5])  # three text deltas, nothing to restore
    s2 = AnthropicStream(LITERAL_RULES.restorer({}))
    s2.feed(b"".join(events[:2]))
    assert s2.feed(read) is read


@compiled
def test_the_pass_restores_a_disguise_split_across_deltas_and_escapes_tool_arguments() -> None:
    body = build_stream([("text", ["Ask Zen", "ith Labs about nov", "a.cloud now"]),
                         ("tool", ['{"thread_id": "Zen', 'ith Labs", "p": "WINPATH"}'])])  # fmt: skip
    s = AnthropicStream(LITERAL_RULES.restorer({}))
    out = b"".join(s.feed(e + b"\n\n") for e in body.split(b"\n\n") if e) + s.flush()
    texts_ = [json.loads(ln[6:])["delta"] for ln in out.split(b"\n") if ln.startswith(b"data: ") and b"_delta" in ln]
    assert "".join(d["text"] for d in texts_ if "text" in d) == "Ask Acme Corp about nova-internal.cloud now"
    args = json.loads("".join(d["partial_json"] for d in texts_ if "partial_json" in d))
    assert args == {"session_id": "Acme Corp", "p": 'C:\\Users\\a "b"'}
    chunks = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    assert run("anthropic", LITERAL_RULES, {}, chunks, "compiled") == run("anthropic", LITERAL_RULES, {}, chunks, "python")


@compiled
def test_in_tool_arguments_a_disguise_inside_an_escape_stays_and_a_placeholder_never_issued_stays() -> None:
    """`\\nab` in JSON text is an escape and `ab`, not the disguise `nab`; `[EMAIL_9]` was
    never issued: both go out as they came, the rest restored."""
    args = json.dumps({"thread_id": "\nab x nab [EMAIL_9] [EMAIL_1]"})
    body = build_stream([("text", ["nab [EMAIL_9] [EMA", "IL_1] x"]), ("tool", [args[:20], args[20:]])])
    chunks = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    for rs, ph, text, value in ((LITERAL_RULES, {}, "Ñ [EMAIL_9] [EMAIL_1] x", "\nab x Ñ [EMAIL_9] [EMAIL_1]"),
                                (RULES, PLACEHOLDERS, "nab [EMAIL_9] bob@corp.example.com x",
                                 "\nab x nab [EMAIL_9] bob@corp.example.com")):  # fmt: skip
        got = run("anthropic", rs, ph, chunks, "compiled")
        assert got == run("anthropic", rs, ph, chunks, "python")
        out = b"".join(got[0])
        deltas = [json.loads(ln[6:])["delta"] for ln in out.split(b"\n") if ln.startswith(b"data: ") and b"_delta" in ln]
        assert "".join(d["text"] for d in deltas if "text" in d) == text
        assert json.loads("".join(d["partial_json"] for d in deltas if "partial_json" in d)) == {"session_id": value}
