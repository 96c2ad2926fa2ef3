"""The per-read step (base/readpass.py): the compiled pass, its Python reference (on_raw
on every event) and the Python engine's own per-read path (triggers) give the same
bytes, read by read, and leave the same state, on the stream generators' texts with
random delta splits and random read boundaries (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.apis.openai.chat import ChatStream
from disguiselib.apis.openai.responses import ResponsesStream
from disguiselib.base import readpass
from disguiselib.rules import mappings, rules
from openai_util import build_chat, build_responses, read_chat, read_responses
from strategies import LITERALS, PLACEHOLDERS, RULES, _piece, byte_splits, short_escaped_json, splits

# Literals alone (no placeholder, no strip rule), with disguises that begin like the
# escapes of JSON text (`\nab`, `\u00e9`): the compiled step does the whole work. Some
# originals hold what JSON escapes in either style (a control character, DEL, beyond
# ASCII, beyond U+FFFF): restored into an ASCII delta they are written as json.dumps
# writes them (`\u007f`, a surrogate pair), into one that is not, kept (encode_like).
LITERAL_RULES = rules.Rules(mappings.from_dict({"literals": {**LITERALS, "Ö": "nov", "Jörg": "Zenith", "Ñ": "nab",
                                                              "Ø": "u00e9x", "Zoë\x7f😀": "zqx",
                                                              "ctl\x01\x1f\x08\x0c\r\t\u2028end": "ctlz"}}))  # fmt: skip
# The shared texts, and escapes right before a disguise, placeholders issued or not and
# their beginnings, control characters, DEL and a line separator.
texts = st.lists(st.one_of(_piece, st.sampled_from(["\nab", "\nova", "\\nab", "\u00e9x", "é", "[EMAIL_1]",
                                                    "[EMAIL_9]", "[EMAIL_", "[EM", "x[EMAIL_2] ", "zqx", "ctlz",
                                                    "\x01", "\t", "\x7f", "\r", "\x08\x0c\x1f", "\u2028", "Ω"])),
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
    # (Responses) each channel's fields for its synthetic deltas, in order: on_raw keeps
    # them for every delta, the Python path only for those it parses (a channel that holds
    # text) and the rest never reads them
    where = list(getattr(s, "where", {}).items()) if way != "python" else None
    return (outs, s.events_in, s.events_changed, s.events_held, s.restorer.restored, s.restorer.stripped,
            s.state, held, getattr(s, "last_seq", None), where)  # fmt: skip


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
    assert run(api, rs, ph, chunks, "reference")[:-1] == run(api, rs, ph, chunks, "python")[:-1]


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
    assert run("anthropic", LITERAL_RULES, {}, chunks, "compiled")[:-1] == run("anthropic", LITERAL_RULES, {}, chunks, "python")[:-1]


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
        assert got[:-1] == run("anthropic", rs, ph, chunks, "python")[:-1]
        out = b"".join(got[0])
        deltas = [json.loads(ln[6:])["delta"] for ln in out.split(b"\n") if ln.startswith(b"data: ") and b"_delta" in ln]
        assert "".join(d["text"] for d in deltas if "text" in d) == text
        assert json.loads("".join(d["partial_json"] for d in deltas if "partial_json" in d)) == {"session_id": value}


@compiled
@pytest.mark.parametrize("api", sorted(STREAMS))
def test_a_restored_text_is_escaped_as_json_dumps_writes_it_in_the_deltas_style(api: str) -> None:
    """Each character JSON escapes (a quote, a backslash, control characters, DEL, beyond
    ASCII, beyond U+FFFF), restored into a delta that was ASCII (written as json.dumps
    writes it: `\\u007f`, `\\u00eb`, a surrogate pair, in lower case) and into one that was
    not (UTF-8 kept, DEL kept): the compiled pass writes what the reference writes, and
    the client reads the originals."""
    pieces = ["zqx", " é zqx", "ctlz", " Ω ctlz", '"q\\ zqx\x7f', "\x01\x0c ctlz"]
    args = json.dumps({"thread_id": "zqx ctlz", "p": "é zqx"}, ensure_ascii=False)
    if api == "anthropic":
        body = build_stream([("text", pieces), ("tool", [args[:9], args[9:30], args[30:]])])
    elif api == "chat":
        steps = [("content", 0, p) for p in pieces]
        steps += [("tool", 0, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate([args[:9], args[9:]])]
        body = build_chat(steps + [("finish", 0, "tool_calls")])
    else:
        body = build_responses(pieces, [args[:9], args[9:30], args[30:]])
    chunks = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    got = run(api, LITERAL_RULES, {}, chunks, "compiled")
    assert got == run(api, LITERAL_RULES, {}, chunks, "reference")
    out = b"".join(got[0])
    assert "\\u00eb\\u007f\\ud83d\\ude00" in out.decode()  # "zqx" alone: an ASCII delta
    assert "Zoë\x7f😀" in out.decode()  # beside "é": kept as it is
    assert b"ctl\\u0001\\u001f\\b\\f\\r\\t\\u2028end" in out  # "ctlz" alone
    assert "ctl\\u0001\\u001f\\b\\f\\r\\t\u2028end" in out.decode()  # beside "Ω"


# Chat envelopes a stream's chunks may carry: the compiled pass reads a chunk that begins
# with the envelope it read last from the choices on (_readpass: ReadPass.c_env); one that
# differs anywhere, is longer or shorter, holds a backslash (declined) or non-ASCII text,
# is read whole again.
_ENVELOPES = [
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt"},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 12, "model": "gpt"},
    {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "gpt"},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt", "service_tier": "default"},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-ö"},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": 'g\\"pt'},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt", "system_fingerprint": None},
    {"id": "chatcmpl-1"},
]


@compiled
@SETTINGS
@given(st.data())
def test_a_chat_chunk_read_from_the_envelope_read_before_gives_the_references_bytes(data) -> None:
    """The compiled pass skips parsing a Chat chunk's envelope where it is byte for byte
    the one it read before: on chunks whose envelopes change from chunk to chunk (and in
    cases only just: a digit, a member more, a backslash, non-ASCII), split at random
    reads, it gives the reference's bytes and state."""
    pieces = data.draw(splits(data.draw(texts)))
    envs = data.draw(st.lists(st.integers(0, len(_ENVELOPES) - 1), min_size=len(pieces) + 1, max_size=len(pieces) + 1))
    body = b"".join(
        b"data: " + json.dumps({**_ENVELOPES[e], "choices": [{"index": 0, "delta": {"content": p}, "logprobs": None,
                                                              "finish_reason": None}]},
                               ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n\n"
        for e, p in zip(envs, pieces, strict=False)
    ) + b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    chunks = data.draw(st.one_of(byte_splits(body, 30), st.just([e + b"\n\n" for e in body.split(b"\n\n") if e])))
    rs, ph = data.draw(st.sampled_from([(LITERAL_RULES, {}), (RULES, PLACEHOLDERS)]))
    assert run("chat", rs, ph, chunks, "compiled") == run("chat", rs, ph, chunks, "reference")


@compiled
def test_a_choice_whose_content_came_as_parts_then_as_text_through_the_pass_ends_as_text() -> None:
    """A compatible provider (Mistral) sends a choice's content as parts, then as plain
    strings: the strings go through the compiled pass, which must take the choice off the
    stream's parts (its very set, kept by the pass) as the reference does, so that the
    tail held at the end goes out as text, not as a text part."""
    from openai_util import chat_chunk

    rs = rules.Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))
    parts = chat_chunk([{"index": 0, "delta": {"content": [{"type": "text", "text": "Dear "}]}, "logprobs": None,
                         "finish_reason": None}])  # fmt: skip
    body = parts + build_chat([("content", 0, "Hello "), ("content", 0, "from Zen"), ("finish", 0, "stop")])
    chunks = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    got, ref = run("chat", rs, {}, chunks, "compiled"), run("chat", rs, {}, chunks, "reference")
    assert got == ref
    out = b"".join(got[0])
    assert b'"content":"Zen"' in out and b'"text":"Zen"' not in out  # the held tail, as text


# -- tool-argument JSON text with short escapes (`\\n`, `\\"`, `\\\\`...) ---------------------------
# The compiled step matches such text itself (no `\\u`, no backslash that ends it, no
# disguise holding what an escape spells), as Restorer._decoded_edits does in decoded
# space: no match starts at an escape's letter, no held tail does. Disguises here begin
# with each letter an escape may have (`\\nFoo` is `\\n` and `Foo`, `\\\\nFoo` a backslash
# and `nFoo`); SLASH_RULES has one holding `/` (what `\\/` spells): its text goes the
# window's own way.
ESC_LITERALS = {**LITERALS, "Ñ": "nab", "Ö": "nov", "Foo GmbH": "nFoo", "Bär": "bar", "Fjörd": "fjord", "R2": "rtx",
                "Tee Kay": "tab"}  # fmt: skip
ESC_RULES = rules.Rules(mappings.from_dict({"literals": ESC_LITERALS}))
SLASH_RULES = rules.Rules(mappings.from_dict({"literals": {**LITERALS, "Ñ": "nab", "a|b": "ab/c"}}))
ESC_WORDS = ["nab", "nova", "nov", "nFoo", "bar", "fjord", "rtx", "tab", "thread_id", "Zenith Labs", "WINPATH",
             "[EMAIL_1]", "[EMAIL_9]", "ab/c", "nova.cloud"]  # fmt: skip
ESC_SETS = [(ESC_RULES, {}), (RULES, PLACEHOLDERS), (SLASH_RULES, {})]


def args_stream(api: str, pieces: list[str]) -> bytes:
    """A stream of text "hi", then one tool call whose arguments come as pieces."""
    if api == "anthropic":
        return build_stream([("text", ["hi"]), ("tool", pieces)])
    if api == "chat":
        steps = [("tool", 0, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate(pieces)]
        return build_chat([("content", 0, "hi"), *steps, ("finish", 0, "tool_calls")])
    return build_responses(["hi"], pieces)


def client_args(api: str, out: bytes) -> str:
    if api == "anthropic":
        return read_stream(out)[0][1]["json"]
    if api == "chat":
        return read_chat(out)[1][(0, 0)]["arguments"]
    return read_responses(out)["args"]


def check_short_escapes(api: str, rs: rules.Rules, ph: dict, text: str, chunks: list[bytes]) -> tuple:
    """The compiled pass gives the reference's bytes read by read and its state (and the
    Python engine's own path's), and the client's arguments are the whole-text restoration, which parses as the decoded
    strings restored."""
    got = run(api, rs, ph, chunks, "compiled")
    assert got == run(api, rs, ph, chunks, "reference")
    assert got[:-1] == run(api, rs, ph, chunks, "python")[:-1]
    r = rs.restorer(dict(ph))
    whole = r.json_text(text)
    assert client_args(api, b"".join(got[0])) == whole

    def value(v):  # noqa: ANN001, ANN202 - parsed JSON
        if isinstance(v, str):
            return r.value(v)
        if isinstance(v, list):
            return [value(x) for x in v]
        return {value(k): value(x) for k, x in v.items()} if isinstance(v, dict) else v

    assert json.loads(whole) == value(json.loads(text))
    return got


@compiled
@SETTINGS
@given(st.data())
def test_arguments_with_short_escapes_give_the_references_bytes(data) -> None:
    """Random argument texts of disguises, short escapes and backslash runs before a
    disguise or its letter, in random deltas and reads, each rule set."""
    api = data.draw(st.sampled_from(sorted(STREAMS)))
    rs, ph = data.draw(st.sampled_from(ESC_SETS))
    text = data.draw(short_escaped_json(ESC_WORDS))
    body = args_stream(api, data.draw(splits(text, 10)))
    chunks = data.draw(st.one_of(byte_splits(body, 30), st.just([e + b"\n\n" for e in body.split(b"\n\n") if e])))
    check_short_escapes(api, rs, ph, text, chunks)


# Short texts cut at every point and every pair of points: backslash runs of one to four
# before a disguise that begins with an escape's letter, one that ends the text, escapes
# before and inside a held disguise's beginning, a `\\u` beside them (the window's way);
# a disguise with `/` written `ab\\/c` (all the window's: SLASH_RULES).
SHORT_ESC_TEXTS = [
    (ESC_RULES, '{"a": "\\nFoo \\\\nFoo \\\\\\nFoo \\\\\\\\nFoo nFoo"}'),
    (ESC_RULES, '{"\\thread_id": "\\\\tab\\tab\\r\\rtx\\\\", "b": "x\\nov"}'),
    (ESC_RULES, '{"a": "\\bar\\fjord\\"nova\\/nova.cloud \\u006eab \\nab"}'),
    (SLASH_RULES, '{"p": "ab\\/c \\nab ab/c \\\\ab\\/c"}'),
]


@compiled
@pytest.mark.parametrize(("rs", "text"), SHORT_ESC_TEXTS)
def test_arguments_with_short_escapes_cut_at_every_point(rs: rules.Rules, text: str) -> None:
    n = len(text)
    for api in sorted(STREAMS):
        for i in range(n + 1):
            body = args_stream(api, [text[:i], text[i:]])
            check_short_escapes(api, rs, {}, text, [e + b"\n\n" for e in body.split(b"\n\n") if e])
    for i in range(n + 1):
        for j in range(i, n + 1):
            body = args_stream("anthropic", [text[:i], text[i:j], text[j:]])
            check_short_escapes("anthropic", rs, {}, text, [e + b"\n\n" for e in body.split(b"\n\n") if e])


@compiled
@pytest.mark.parametrize("api", sorted(STREAMS))
def test_the_pass_matches_short_escaped_arguments_itself(api: str) -> None:
    """Argument deltas whose escapes are whole short ones are matched by the compiled step
    (n_short_esc), none handed to the window's own feed (n_fed); a delta with a `\\u` or
    ending in a backslash, or any with a backslash where a disguise holds `/`, is. A
    backslash the window held, then its letter in the next delta: that one is the step's."""
    for rs, cut, esc, fed in (
        (ESC_RULES, ["{", '"a": "\\nF', "oo \\\\n", "Foo\\tab", '", "b": "x\\"no', 'v", "c": "nova\\\\', '"}'], 5, 0),
        (ESC_RULES, ["{", '"a": "\\', "nFoo", '\\u006e"}'], 1, 2),
        (SLASH_RULES, ["{", '"a": "\\nF', "oo \\\\n", "Foo\\tab", '", "b": "x\\"no', 'v", "c": "nova\\\\', '"}'], 0, 5),
    ):  # fmt: skip
        text = "".join(cut)
        chunks = [e + b"\n\n" for e in args_stream(api, cut).split(b"\n\n") if e]
        s = STREAMS[api](rs.restorer({}))
        for c in chunks:
            s.feed(c)
        assert (s._pass.n_short_esc, s._pass.n_fed) == (esc, fed), cut
        check_short_escapes(api, rs, {}, text, chunks)
    # `\\nFoo` is a line feed and `Foo`, `\\\\nFoo` a backslash and `nFoo`, `\\tab` a tab and `ab`
    text = '{"a": "\\nFoo \\\\nFoo\\tab", "b": "x\\"nov", "c": "nova\\\\"}'
    assert json.loads(ESC_RULES.restorer({}).json_text(text)) == {"a": "\nFoo \\Foo GmbH\tab", "b": 'x"Ö',
                                                                   "c": "nova-internal\\"}


@compiled
def test_a_rule_set_of_streams_has_its_matcher_built_when_compiled() -> None:
    """config.compiled builds the compiled pass's matcher of the disguises with the rule set
    (off the event loop on a reload), not the first stream's first read; never for a set
    no stream is restored with (the masking worker's), nor one with fakes (no pass)."""
    from disguiselib import config
    from disguiselib.base import _readpass  # type: ignore[attr-defined]

    ms = mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}})
    streamed, _ = config.compiled(ms, None)
    assert _readpass.prepared(streamed)
    workers, _ = config.compiled(ms, None, streams=False)
    assert not _readpass.prepared(workers)
    faked, _ = config.compiled(ms, b"k" * 32)
    assert faked.faker is not None and not _readpass.prepared(faked)
    readpass.prepare(workers)  # what the first stream's pass builds (matcher_for): the same
    assert _readpass.prepared(workers)
