"""OpenAI Chat streams whose tool names arrive in pieces (apis/openai/chatheld.py, the name
channel): some compatible servers send `"crm_"` then `"lookup"` and the SDKs join them.
The joined name the client reads is the whole name restored; a name sent whole (as
OpenAI sends it) still goes out whole, in the delta that opens its call."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import chatheld
from disguiselib.base import readpass
from disguiselib.wire.sse import Framer
from openai_util import chat_chunk
from strategies import PLACEHOLDERS, RULES, byte_splits, restore_value, splits, texts

R = RULES.restorer(PLACEHOLDERS)

# Whole disguises, one inside a longer name, names that end like the start of a disguise
# (`lookup_t`: `thread_id`; `get_nov`: `nova`), a placeholder, plain names.
NAMES = ["crm_lookup", "thread_id", "x_crm_lookup_y", "lookup_t", "get_nov", "get_nova", "nova.cloud",
         "[EMAIL_1]", "plain", "f"]  # fmt: skip


def run(body: bytes, pieces: list[bytes] | None = None) -> bytes:
    s = openai_chat.ChatStream(RULES.restorer(PLACEHOLDERS))
    return b"".join(s.feed(p) for p in (pieces or [body])) + s.flush()


def tool_delta(k: int, j: int, name: str | None, args: str | None, opens: bool = False) -> bytes:
    fn: dict = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    call: dict = {"index": j, **({"id": f"call_{k}_{j}", "type": "function"} if opens else {}), "function": fn}
    return chat_chunk([{"index": k, "delta": {"tool_calls": [call]}, "logprobs": None, "finish_reason": None}])


def content_delta(k: int, text: str) -> bytes:
    return chat_chunk([{"index": k, "delta": {"content": text}, "logprobs": None, "finish_reason": None}])


def finish(k: int) -> bytes:
    return chat_chunk([{"index": k, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}])


def call_events(k: int, j: int, name_pieces: list[str], args_pieces: list[str], last_with_args: bool) -> list[bytes]:
    """One tool call: the first name piece opens it (with `"arguments":""`, as servers
    send it), the other pieces follow, then the arguments; last_with_args: the last name
    piece carries the first arguments piece (`{"name":"lookup","arguments":"{}"}`)."""
    out = [tool_delta(k, j, name_pieces[0], "", opens=True)]
    rest = list(args_pieces)
    for i, p in enumerate(name_pieces[1:], 2):
        out.append(tool_delta(k, j, p, rest.pop(0) if last_with_args and i == len(name_pieces) and rest else None))
    out += [tool_delta(k, j, None, a) for a in rest]
    return out


def read(body: bytes) -> tuple[dict, dict, dict, dict]:
    """As the openai SDK accumulates: per (choice, tool index) the name pieces joined and
    the arguments; per choice the content. Also the deltas that carried a non-empty name
    piece per call, and whether the first of them opened the call. Every event parses;
    nothing of a choice comes after its finish_reason."""
    f = Framer()
    events = f.feed(body) + f.flush()
    assert events[-1].data == "[DONE]"
    names: dict = {}
    args: dict = {}
    content: dict = {}
    named: dict = {}
    finished: set = set()
    for ev in events[:-1]:
        d = json.loads(ev.data)
        for c in d.get("choices", []):
            k = c["index"]
            delta = c.get("delta") or {}
            assert k not in finished or not (delta.get("content") or delta.get("tool_calls")), "after finish"
            content[k] = content.get(k, "") + (delta.get("content") or "")
            for tc in delta.get("tool_calls") or []:
                key = (k, tc["index"])
                fn = tc.get("function") or {}
                names[key] = names.get(key, "") + (fn.get("name") or "")
                args[key] = args.get(key, "") + (fn.get("arguments") or "")
                if fn.get("name"):
                    named.setdefault(key, []).append("id" in tc)
            if c.get("finish_reason"):
                finished.add(k)
    return names, args, content, named


@st.composite
def split_name_streams(draw):
    """One or two choices, each with content and two tool calls whose names are cut at
    random points (a name in one piece: as OpenAI sends it), every call's and the
    content's deltas interleaved at random on the wire, a choice finishing after its last."""
    n = draw(st.integers(1, 2))
    plan = {}
    queues = []
    for k in range(n):
        text = draw(texts)
        q = [[content_delta(k, p) for p in draw(splits(text, 4))]]
        calls = {}
        for j in range(2):
            name = draw(st.one_of(st.sampled_from(NAMES), st.text(alphabet="crm_lookupnva.[]EMAIL1", min_size=1,
                                                                   max_size=12)))
            name_pieces = draw(splits(name, 4))
            a = json.dumps({"thread_id": draw(texts)})
            q.append(call_events(k, j, name_pieces, draw(splits(a, 4)), draw(st.booleans())))
            calls[j] = (name, len(name_pieces), a)
        plan[k] = (text, calls)
        queues.append((k, q))
    steps = []
    while any(any(q) for _, q in queues):
        i = draw(st.sampled_from([i for i, (_, q) in enumerate(queues) if any(q)]))
        k, q = queues[i]
        steps.append(q[draw(st.sampled_from([x for x, sub in enumerate(q) if sub]))].pop(0))
        if not any(q):
            steps.append(finish(k))
    return plan, steps


@given(split_name_streams(), st.data())
@example(({0: ("", {0: ("crm_lookup", 2, "{}"), 1: ("f", 1, "{}")})}, [
    tool_delta(0, 0, "crm_", "", opens=True), tool_delta(0, 1, "f", "", opens=True),
    tool_delta(0, 0, "lookup", "{}"), tool_delta(0, 1, None, "{}"), finish(0)]), None).via("interleaved calls")
def test_split_names_reassemble_to_the_restored_whole(plan_steps, data) -> None:
    plan, steps = plan_steps
    body = b"".join(steps) + b"data: [DONE]\n\n"
    pieces = data.draw(byte_splits(body, 30)) if data is not None else [body]
    names, args, content, named = read(run(body, pieces))
    for k, (text, calls) in plan.items():
        assert content.get(k, "") == R.text(text)
        for j, (name, n_pieces, a) in calls.items():
            assert names[(k, j)] == R.value(name)
            assert json.loads(args[(k, j)]) == restore_value(json.loads(a))
            if n_pieces == 1 and R.value(name):  # sent whole: whole, in the delta that opens the call
                assert named[(k, j)] == [True]


def test_every_split_point_of_a_name() -> None:
    """crm_lookup cut at every pair of points (three pieces, empty ones too), two parallel
    calls interleaved piece by piece, fed whole and one byte at a time."""
    name = "crm_lookup"
    n = len(name)
    for a in range(n + 1):
        for b in range(a, n + 1):
            p = [name[:a], name[a:b], name[b:]]
            e0 = call_events(0, 0, p, ['{"thread_id": "', 'x"}'], True)
            e1 = call_events(0, 1, p, ["{}"], False)
            steps = [e for pair in zip(e0, e1) for e in pair] + e0[len(e1):] + e1[len(e0):]
            body = b"".join(steps) + finish(0) + b"data: [DONE]\n\n"
            for pieces in ([body], [body[i : i + 1] for i in range(len(body))]) if a == 4 else ([body],):
                names, args, _, _ = read(run(body, pieces))
                assert names == {(0, 0): "acme_lookup", (0, 1): "acme_lookup"}, (p, len(pieces))
                assert json.loads(args[(0, 0)]) == {"session_id": "x"} and args[(0, 1)] == "{}"


def test_a_name_sent_whole_goes_out_as_before() -> None:
    """Names sent whole, as OpenAI sends them, even one ending like the start of a
    disguise (`lookup_t`, `get_nov`): every event as whole-value restoring makes it,
    the name in the delta that opens its call, whatever the reads."""
    steps = [tool_delta(0, 0, "lookup_t", "", opens=True), tool_delta(1, 0, "get_nov", "", opens=True),
             tool_delta(0, 1, "crm_lookup", "", opens=True), tool_delta(0, 0, None, '{"a":'),
             tool_delta(1, 0, None, "{}"), tool_delta(0, 0, None, " 1}"), tool_delta(0, 1, None, "{}"),
             finish(0), finish(1)]  # fmt: skip
    body = b"".join(steps) + b"data: [DONE]\n\n"
    want = body.replace(b'"name":"crm_lookup"', b'"name":"acme_lookup"')
    assert run(body) == want
    assert run(body, [body[i : i + 7] for i in range(0, len(body), 7)]) == want


def test_events_waiting_behind_a_name_go_out_when_the_stream_is_cut() -> None:
    """A name piece that may continue (`lookup_t`: `thread_id` begins so) keeps its event and
    the ones after it waiting; the provider then cuts the stream (no finish, no [DONE]). The
    stream's end decides every name whole: the waiting events go out, their names as sent,
    before the error, and nothing of the content behind them is lost."""
    body = tool_delta(0, 0, "lookup_t", "", opens=True) + content_delta(0, "Zenith Labs here")
    out = run(body)
    docs = [json.loads(e.data) for e in Framer().feed(out) if e.data not in (None, "[DONE]")]
    names = "".join(
        tc["function"].get("name") or ""
        for d in docs for c in d.get("choices", []) for tc in (c.get("delta") or {}).get("tool_calls") or []
    )  # fmt: skip
    text = "".join((c.get("delta") or {}).get("content") or "" for d in docs for c in d.get("choices", []))
    assert names == "lookup_t" and text == "Acme Corp here"
    assert docs[-1]["error"]["message"].startswith("disguise: the stream ended before")


# -- held tails put back into the chunk that finishes their choice (_insertion, _merge_tails)


def chunk(delta: dict, k: int | None = 0, finish_reason: str | None = None) -> bytes:
    """One chunk of one choice (k None: the choice has no `index`, which means 0)."""
    c = {"delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return chat_chunk([c if k is None else {"index": k, **c}])


# A held tail of every channel of choice 0: content, refusal, audio transcript, the legacy
# function_call's arguments, tool call 0's arguments (each ends like the start of a disguise).
HELD = [chunk({"content": "a nova"}), chunk({"refusal": "r Zen"}), chunk({"audio": {"transcript": "t nova"}}),
        chunk({"function_call": {"arguments": '{"a": "Zen'}}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"b": "nov'}}]})]  # fmt: skip
# What the held tails make of the finishing chunk's delta, in the order the channels opened.
TAILS = {"content": "nova-internal", "refusal": "Zen", "audio": {"transcript": "nova-internal"},
         "function_call": {"arguments": "Zen"}, "tool_calls": [{"index": 0, "function": {"arguments": "nov"}}]}


def last_chunk(out: bytes) -> dict:
    """The last chunk before [DONE]; every event of out parses."""
    events = [e.data for e in Framer().feed(out) if e.data is not None]
    assert events[-1] == "[DONE]"
    docs = [json.loads(d) for d in events[:-1]]
    return docs[-1]


def test_held_tails_go_into_a_finishing_delta_whose_fields_are_null() -> None:
    """Some servers (LiteLLM among them) send every delta member, null where unused:
    `{"content":null,"function_call":null,"tool_calls":null,"audio":null}`. A finishing
    chunk so shaped gets each held tail in its field, the nulls replaced, and nothing fails;
    so does one whose only null is the field of the one held tail, and one whose delta is
    null."""
    nulls = {"content": None, "refusal": None, "audio": None, "function_call": None, "tool_calls": None}
    body = b"".join(HELD) + chunk(nulls, finish_reason="stop") + b"data: [DONE]\n\n"
    delta = last_chunk(run(body))["choices"][0]["delta"]
    assert delta == TAILS and list(delta) == list(nulls)
    for held, (field, tail) in zip(HELD, TAILS.items()):
        body = held + chunk({field: None}, finish_reason="stop") + b"data: [DONE]\n\n"
        assert last_chunk(run(body))["choices"][0]["delta"] == {field: tail}, field
    # the finishing choice's delta itself null, or absent
    for fin in (chat_chunk([{"index": 0, "delta": None, "finish_reason": "stop"}]),
                chat_chunk([{"index": 0, "finish_reason": "stop"}])):  # fmt: skip
        out = run(HELD[0] + fin + b"data: [DONE]\n\n")
        assert last_chunk(out)["choices"][0] == {"index": 0, "delta": {"content": "nova-internal"}, "finish_reason": "stop"}
        assert channels(out) == {(0, "content"): "a nova-internal"}
    # the tool call itself named, its function null
    fin = chunk({"tool_calls": [{"index": 0, "function": None}]}, finish_reason="tool_calls")
    delta = last_chunk(run(HELD[4] + fin + b"data: [DONE]\n\n"))["choices"][0]["delta"]
    assert delta == {"tool_calls": [{"index": 0, "function": {"arguments": "nov"}}]}


def test_held_tails_join_what_the_finishing_delta_has_of_their_member() -> None:
    """A finishing delta with the held channel's object but not its string (an audio's
    id, a function call's null members, another tool call, a part that is not text): the
    tail joins that object, whose other members stay."""
    cases = [
        (HELD[2], {"audio": {"id": "audio_1", "transcript": None}},
         {"audio": {"id": "audio_1", "transcript": "nova-internal"}}),
        (HELD[3], {"function_call": {"name": None, "arguments": None}},
         {"function_call": {"name": None, "arguments": "Zen"}}),
        (HELD[4], {"tool_calls": [{"index": 0, "function": {"name": None, "arguments": None}}]},
         {"tool_calls": [{"index": 0, "function": {"name": None, "arguments": "nov"}}]}),
        (HELD[4], {"tool_calls": [{"index": 2, "id": "call_2", "function": {"name": "f", "arguments": "{}"}}]},
         {"tool_calls": [{"index": 2, "id": "call_2", "function": {"name": "f", "arguments": "{}"}},
                         {"index": 0, "function": {"arguments": "nov"}}]}),
        (HELD[0], {"content": [{"type": "thinking", "thinking": "hm"}]},
         {"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "nova-internal"}]}),
    ]  # fmt: skip
    for held, fin, want in cases:
        out = run(held + chunk(fin, finish_reason="stop") + b"data: [DONE]\n\n")
        assert last_chunk(out)["choices"][0]["delta"] == want, fin


def channels(out: bytes) -> dict:
    """Every event of out parses; per (choice, channel) the text a client joins from the
    deltas: content (a string, or the text of its parts), refusal, audio transcript,
    function_call arguments, per tool call its name and its arguments."""
    got: dict = {}

    def add(key: tuple, v: object) -> None:
        if isinstance(v, str):
            got[key] = got.get(key, "") + v

    for e in Framer().feed(out):
        if e.data in (None, "[DONE]"):
            continue
        for c in json.loads(e.data).get("choices") or []:
            k = c.get("index", 0)
            d = c.get("delta") or {}
            parts = d.get("content")
            for p in parts if isinstance(parts, list) else [{"text": parts}]:
                add((k, "content"), p.get("text"))
            add((k, "refusal"), d.get("refusal"))
            add((k, "transcript"), (d.get("audio") or {}).get("transcript"))
            add((k, "fc"), (d.get("function_call") or {}).get("arguments"))
            for tc in d.get("tool_calls") or []:
                fn = tc.get("function") or {}
                add((k, "name", tc.get("index", 0)), fn.get("name"))
                add((k, "tool", tc.get("index", 0)), fn.get("arguments"))
    return got


HELD_TEXTS = {(0, "content"): "a nova", (0, "refusal"): "r Zen", (0, "transcript"): "t nova",
              (0, "fc"): '{"a": "Zen', (0, "tool", 0): '{"b": "nov', (0, "tool", 1): "[EMA"}  # fmt: skip
HELD2 = chunk({"tool_calls": [{"index": 1, "function": {"arguments": "[EMA"}}]})


def restored(texts: dict) -> dict:
    """The whole-text restoration of each channel's text (a tool name: the whole value)."""
    return {key: R.value(t) if key[1] == "name" else R.text(t) for key, t in texts.items()}


def test_held_tails_are_inserted_into_an_empty_finishing_delta() -> None:
    """The finishing chunk's delta names none of the held channels: the tails go in as
    members at its start, the chunk's other bytes as they came; a delta with members of
    its own keeps them after the inserted ones."""
    tails = (b'"content":"nova-internal","refusal":"Zen","audio":{"transcript":"nova-internal"},'
             b'"function_call":{"arguments":"Zen"},"tool_calls":[{"index":0,"function":{"arguments":"nov"}},'
             b'{"index":1,"function":{"arguments":"[EMA"}}]')  # fmt: skip
    for delta, want in (({}, b"{" + tails + b"}"), ({"role": "assistant"}, b"{" + tails + b',"role":"assistant"}')):
        fin = chunk(delta, finish_reason="stop")
        body = b"".join(HELD) + HELD2 + fin + b"data: [DONE]\n\n"
        out = run(body)
        assert out.endswith(fin.replace(json.dumps(delta, separators=(",", ":")).encode(), want) + b"data: [DONE]\n\n")
        assert channels(out) == restored(HELD_TEXTS)


def test_held_tails_drain_into_a_chunk_of_their_own_without_finish() -> None:
    """No finish_reason before [DONE]: every held tail of the choice goes out in one chunk
    of its own, made as a server makes one, before [DONE]."""
    body = b"".join(HELD) + HELD2 + b"data: [DONE]\n\n"
    out = run(body)
    assert last_chunk(out) == {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt",
                               "choices": [{"index": 0, "delta": {
                                   **TAILS, "tool_calls": [*TAILS["tool_calls"],
                                                           {"index": 1, "function": {"arguments": "[EMA"}}]},
                                   "finish_reason": None}]}  # fmt: skip
    assert channels(out) == restored(HELD_TEXTS)


def test_a_tail_of_content_sent_as_parts_goes_as_a_text_part() -> None:
    """A choice whose content came as parts (Mistral): its held tail goes as a text part
    wherever it goes: inserted into the finishing delta (beside a refusal tail, which
    stays a string), into the finishing delta's null content, into the drained chunk.
    Content that came as a string but finishes with an empty list of parts gets a part too."""
    parted = chunk({"content": [{"type": "text", "text": "a nova"}]})
    part = [{"type": "text", "text": "nova-internal"}]
    fin = chunk({}, finish_reason="stop")
    out = run(parted + HELD[1] + fin + b"data: [DONE]\n\n")
    assert out.endswith(fin.replace(b'"delta":{}', b'"delta":{"content":[{"type":"text","text":"nova-internal"}],'
                                                   b'"refusal":"Zen"}') + b"data: [DONE]\n\n")  # fmt: skip
    assert channels(out) == {(0, "content"): "a nova-internal", (0, "refusal"): "r Zen"} == restored(
        {(0, "content"): "a nova", (0, "refusal"): "r Zen"})
    for ending, delta in ((chunk({"content": None}, finish_reason="stop"), {"content": part}),
                          (b"", {"content": part})):  # fmt: skip
        out = run(parted + ending + b"data: [DONE]\n\n")
        assert last_chunk(out)["choices"][0]["delta"] == delta
        assert channels(out) == {(0, "content"): "a nova-internal"}
    out = run(HELD[0] + chunk({"content": []}, finish_reason="stop") + b"data: [DONE]\n\n")
    assert last_chunk(out)["choices"][0]["delta"] == {"content": part}
    assert channels(out) == {(0, "content"): "a nova-internal"}


def test_tails_of_choices_without_an_index_and_of_choice_one() -> None:
    """A choice without `index` is choice 0 (as the SDKs read it); choice 1's tails go
    into choice 1's finishing delta, or its drained chunk, never choice 0's."""
    no_index = chunk({"content": "a nova"}, k=None) + chunk({"content": "b Zen"}, k=1)
    for ending in (chunk({}, k=None, finish_reason="stop") + chunk({}, k=1, finish_reason="stop"), b""):
        out = run(no_index + ending + b"data: [DONE]\n\n")
        assert channels(out) == {(0, "content"): "a nova-internal", (1, "content"): "b Zen"}
        tails = [c for e in Framer().feed(out) if e.data not in (None, "[DONE]")
                 for c in json.loads(e.data)["choices"] if c.get("delta")]  # fmt: skip
        assert tails[-2:] == ([{"delta": {"content": "nova-internal"}, "logprobs": None, "finish_reason": "stop"},
                               {"index": 1, "delta": {"content": "Zen"}, "logprobs": None, "finish_reason": "stop"}]
                              if ending else
                              [{"index": 0, "delta": {"content": "nova-internal"}, "finish_reason": None},
                               {"index": 1, "delta": {"content": "Zen"}, "finish_reason": None}])  # fmt: skip


# -- when events waiting behind a tool name go (ToolNames) ------------------------------


def feeds(events: list[bytes]) -> list[bytes]:
    """What each event, fed alone, gives; then what the end of the body gives."""
    s = openai_chat.ChatStream(RULES.restorer(PLACEHOLDERS))
    return [s.feed(e) for e in events] + [s.flush()]


def choices(*cs: dict, **extra) -> bytes:
    return chat_chunk([{"logprobs": None, "finish_reason": None, **c} for c in cs], **extra)


def calls(*tcs: object, k: int | None = 0, **extra) -> dict:
    """A choice delta of tool calls (k None: the choice has no `index`)."""
    return {**({} if k is None else {"index": k}), "delta": {"tool_calls": list(tcs)}, **extra}


def fn(j: int | None = 0, **f: object) -> dict:
    """A tool call entry (j None: it has no `index`)."""
    return {**({} if j is None else {"index": j}), "function": f}


# `lookup_t` may continue into `lookup_thread_id` (`thread_id` is a disguise): it waits.
NAME0 = tool_delta(0, 0, "lookup_t", "", opens=True)
ARGS0 = choices(calls(fn(arguments="{}")))
DONE = b"data: [DONE]\n\n"
ERROR = b'data: {"error":{"message":"Zenith Labs is overloaded","type":"server_error"}}\n\n'


def test_a_waiting_name_goes_with_the_first_event_that_says_it_ended() -> None:
    """The event after a name piece that may continue says it ended: its choice's
    finish_reason, the same call without a name piece (also where the choice or the call
    has no `index`: 0), an error, an event that is not an object. Both go out with that
    event's read, the name whole in its own event, nothing else changed but restored
    text (an unknown member, a value event)."""
    other_first = choices({"index": 1, "delta": {"content": "x"}}, calls(fn(arguments="{}")), provider="Zenith Labs")
    says = [
        (other_first, other_first.replace(b"Zenith Labs", b"Acme Corp")),
        (choices(calls(fn(arguments="{}"), k=None)), None),
        (choices(calls(fn(1, name="f"), fn(None, arguments="{}"))), None),
        (choices({"index": 0, "delta": {}, "finish_reason": "tool_calls"}), None),
        (ERROR, ERROR.replace(b"Zenith Labs", b"Acme Corp")),
        (b'data: "nova"\n\n', b'data: "nova-internal"\n\n'),
    ]
    for say, want in says:
        assert feeds([NAME0, say]) == [b"", NAME0 + (want or say), b"" if say in (ERROR,) else
                                       b'data: {"error": {"message": "disguise: the stream ended before data: [DONE]", '
                                       b'"type": "disguise_error"}}\n\ndata: [DONE]\n\n'], say  # fmt: skip


def test_events_that_do_not_say_keep_waiting_behind_the_name() -> None:
    """Events that say nothing of the waiting name wait behind it, in order: a chunk
    without choices, a choice without a delta or with a null one, another choice's call of
    the same index, another call of the same choice, calls that are not objects or
    whose function is null. The finish_reason of its choice then sends them all, as
    they came."""
    usage = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","usage":{"total_tokens":3}}\n\n'
    quiet = [usage, choices({"index": 0, "delta": None}), choices({"index": 0}),
             choices(calls(fn(0, name="g"), k=1)), choices(calls(fn(1, arguments="{}"))),
             choices(calls(None, {"index": 1, "function": None}))]  # fmt: skip
    fin = choices({"index": 0, "delta": {}, "finish_reason": "tool_calls"})
    assert feeds([NAME0, *quiet, fin, DONE]) == [b"", *[b""] * len(quiet), NAME0 + b"".join(quiet) + fin, DONE, b""]


def test_a_name_piece_that_may_continue_waits_only_where_its_choice_goes_on() -> None:
    """A piece that may continue (`lookup_t`) waits, also where another choice finishes or
    has no tool calls before it in the chunk, where the choice or the call has no `index`
    (0) or the call is call 1,
    where the piece is two entries of one call (`lookup_t` + `h`: `lookup_th`, while `h`
    alone could not begin a disguise); then the next event of the call says it ended.
    In a chunk that finishes its choice it goes out at once, whole."""
    for head, say in (
        (choices({"index": 1, "delta": {}, "finish_reason": "stop"}, calls(fn(name="lookup_t"))), ARGS0),
        (choices({"index": 1, "delta": {"content": "x"}}, calls(fn(name="lookup_t"))), ARGS0),
        (choices(calls(fn(name="lookup_t"), k=None)), choices(calls(fn(arguments="{}"), k=None))),
        (choices(calls(fn(None, name="lookup_t"))), choices(calls(fn(None, arguments="{}")))),
        (choices(calls(fn(1, name="lookup_t"))), choices(calls(fn(1, arguments="{}")))),
        (choices(calls(fn(name="lookup_t"), fn(name="h"))), ARGS0),
    ):
        assert feeds([head, say, DONE]) == [b"", head + say, DONE, b""], head
    fin = choices(calls(fn(name="lookup_t"), finish_reason="tool_calls"))
    assert feeds([fin, DONE]) == [fin, DONE, b""]


def test_a_name_goes_on_piece_by_piece() -> None:
    """`lookup_t`, then `h` (the name goes on: `lookup_` goes, `th` may still become
    `thread_id`, so its event waits in turn), then arguments: `th` was the name's end."""
    h = choices(calls(fn(name="h")))
    out = feeds([NAME0, h, ARGS0, DONE])
    assert out == [b"", NAME0.replace(b'"lookup_t"', b'"lookup_"'), h.replace(b'"h"', b'"th"') + ARGS0, DONE, b""]


def test_waiting_events_go_when_the_stream_ends() -> None:
    """[DONE], or the end of the body, says every waiting name ended: its event goes out
    as it came, the name whole in it (no chunk of its own for a tail)."""
    content = content_delta(1, "Zenith Labs")
    assert feeds([NAME0, content, DONE]) == [b"", b"", NAME0 + content.replace(b"Zenith Labs", b"Acme Corp") + DONE,
                                             b""]  # fmt: skip
    assert feeds([NAME0])[1].startswith(NAME0 + b'data: {"error": ')


def test_past_max_waiting_events_the_name_is_taken_as_whole() -> None:
    """MAX_WAITING events may wait behind a name; the one after them sends the name whole,
    and every event behind it."""
    other = content_delta(1, "x")
    out = feeds([NAME0, *[other] * chatheld.MAX_WAITING])
    assert out[: chatheld.MAX_WAITING] == [b""] * chatheld.MAX_WAITING
    assert out[chatheld.MAX_WAITING] == NAME0 + other * chatheld.MAX_WAITING


def test_the_read_pass_is_set_aside_while_events_wait() -> None:
    """While events wait behind a name, no per-read pass runs (a compiled one would send a
    later content delta ahead of them): it is set aside, and back once they have gone, or
    once the addon ends the stream (which drops what waits: nothing goes after its error)."""
    content = content_delta(1, "x")
    for ending in ("released", "failed"):
        s = openai_chat.ChatStream(RULES.restorer(PLACEHOLDERS))
        p = s._pass or readpass.PyReadPass(s, readpass.CHAT)  # the compiled pass where built, else the reference
        s._pass = p
        assert s.feed(content_delta(0, "a")) == content_delta(0, "a") and s._pass is p
        assert s.feed(NAME0) == b"" and s._pass is None
        assert s.feed(content) == b"" and s._pass is None
        if ending == "released":
            assert s.feed(ARGS0) == NAME0 + content + ARGS0 and s._pass is p
            assert s.feed(content) == content
        else:
            assert s.fail("a test's reason").startswith(b'data: {"error": ') and s._pass is p and not s.waiting
            assert s.feed(ARGS0) == b"" and s.flush() == b""


def test_an_error_chunk_with_a_name_piece_waits_and_keeps_its_place() -> None:
    """An error chunk (OpenRouter's carry choices) whose name piece may continue waits
    like any chunk; when the next event says, the held tails drain, then the error chunk
    goes, then the event behind it: the drain inside that release sends nothing of what
    still waits (it would go ahead of the error, a call's arguments before its name)."""
    content = content_delta(1, "nova")
    err = chat_chunk([{"index": 0, "delta": {"tool_calls": [fn(name="lookup_t")]}, "logprobs": None,
                       "finish_reason": None}], error={"message": "Zenith Labs is down", "type": "server_error"})
    drained = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":'
               b'[{"index":1,"delta":{"content":"nova-internal"},"finish_reason":null}]}\n\n')  # fmt: skip
    assert feeds([content, err, ARGS0, DONE]) == [b"", b"",
                                                  drained + err.replace(b"Zenith Labs", b"Acme Corp") + ARGS0,
                                                  DONE, b""]  # fmt: skip
