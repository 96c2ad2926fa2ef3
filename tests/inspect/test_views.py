"""The contentviews as a person reads them, through the installed mitmproxy's own view
API (11: `get_message_content_view` lines of styled segments; 12: `prettify_message`
text): the summary first, one row per stream event with its channel and delta (no
envelope), marked spans, blank lines kept, Gemini channels; and the flow-list marker.

Flows go through every hook of the real adapter in-process, with recorded provider
traffic (tests/fixtures/real) or streams built like it, fed in small pieces."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from google_util import build_chunks, to_array
from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import contentviews
from mitmproxy.test import tflow, tutils

from anthropic_util import build_stream
from disguiselib.inspect import render, sseview, views
from disguiselib.inspect.record import FAILED_MARK, MASKED_MARK, marker
from disguiselib.mitm.addon import Disguise
from views_util import NEW_API, adapter, registered, shown, through

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"

MAPPING = """
literals:
  Acme Corp: Zenith Labs
  Bluebird: "4200"
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
"""
PROMPT = "Acme Corp, bob@corp.example.com"
# What the model writes back: a disguise and a placeholder, each split across deltas,
# and a paragraph break (a blank line in the reassembled text).
DELTAS = ["Zen", "ith Labs writes to [EMA", "IL_1].\n\nSecond", " paragraph."]


def anthropic_flow(a: Disguise):
    body = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": PROMPT}]}).encode()  # fmt: skip
    answer = build_stream([("text", DELTAS)])
    return through(a, "/v1/messages", "api.anthropic.com", body, answer, "text/event-stream")


def gemini_flow(a: Disguise, array: bool = False):
    """The recorded Gemini stream (tests/fixtures/real/gemini/stream_sse_text.*): the
    client asked about "Bluebird", which went upstream as "4200", as recorded; the
    answer writes "4200" three times, once split across its two chunks."""
    recorded = json.loads((REAL / "gemini" / "stream_sse_text.request.json").read_bytes())
    sent = json.dumps(recorded).replace("4200", "Bluebird").encode()
    answer = (REAL / "gemini" / "stream_sse_text.sse").read_bytes()
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    if array:
        chunks = [json.loads(e.data) for e in sseview.parse_stream(answer).events]
        return through(a, path, "generativelanguage.googleapis.com", sent, to_array(chunks), "application/json")
    return through(a, path + "?alt=sse", "generativelanguage.googleapis.com", sent, answer, "text/event-stream")


def shown_lines_11(f, message, name: str) -> list[list[tuple[str, str]]]:
    _, lines, err = contentviews.get_message_content_view(name, message, f)
    assert err is None, err
    return [list(line) for line in lines]


def rows(text: str) -> list[str]:
    """The event rows of a rendering (after the `#  event  channel  text` header)."""
    lines = text.split("\n")
    i = lines.index("── events ──")
    return lines[i + 2 :]


# -- the Disguise view of a restored Anthropic stream ------------------------------------------


def test_summary_first_then_channels_then_one_row_per_event(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = anthropic_flow(a)
        text = shown(f, f.response, "Disguise")
    lines = text.split("\n")
    assert lines[0] == f.comment  # the summary, where a user looks first
    assert lines[0].startswith("disguise anthropic.messages: masked 2 originals (EMAIL×1, literals×1); restored 2 originals")
    assert "response as the client received it (restored)" in lines[1]
    assert "── block 0 text · text · " in text
    events = sseview.parse_stream(f.response.content).events
    evrows = [r for r in rows(text) if r[:1] != " " or r.strip()[:1].isdigit()]
    assert len(evrows) == len(events)
    for r in rows(text):
        assert '"type"' not in r and '"index"' not in r and "msg_1" not in r, r  # envelope folded away
    deltas = [r for r in rows(text) if "content_block_delta" in r]
    assert deltas and all("block 0 text" in r for r in deltas)


def test_restored_spans_are_marked_in_channel_and_rows(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = anthropic_flow(a)
        text = shown(f, f.response, "Disguise")
        up = shown(f, f.response, "Disguise other side")
    body = text[text.index("── block 0 text") :]
    assert "⟦Acme Corp⟧ writes to ⟦bob@corp.example.com⟧." in body
    assert "marked: ⟦…⟧ originals (the client reads these)" in text
    # the provider's side: the disguise and the placeholder, split across rows, marked in each
    assert "marked: ⟦…⟧ disguises and placeholders (as the provider wrote them)" in up
    assert "⟦Zenith Labs⟧ writes to ⟦[EMAIL_1]⟧." in up
    r = rows(up)
    assert any('"⟦Zen⟧"' in x for x in r) and any('"⟦ith Labs⟧ writes to ⟦[EMA⟧"' in x for x in r)
    assert any('"⟦IL_1]⟧.⏎⏎Second"' in x for x in r)


def test_blank_lines_are_kept(tmp_path: Path) -> None:
    """Between the two paragraphs: an empty line in the text; on mitmproxy 11 a line
    holding one space, since mitmweb 11 draws an empty line with no height."""
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = anthropic_flow(a)
        text = shown(f, f.response, "Disguise")
        lines11 = None if NEW_API else shown_lines_11(f, f.response, "Disguise")
    assert "bob@corp.example.com⟧.\n\nSecond paragraph." in text.replace("\n \n", "\n\n")
    if NEW_API:
        assert "⟧.\n\nSecond paragraph." in text
    else:
        i = next(k for k, ln in enumerate(lines11) if "".join(t for _, t in ln).endswith("⟧."))
        assert lines11[i + 1] == [("text", " ")]
        assert "".join(t for _, t in lines11[i + 2]) == "Second paragraph."
        assert all(line and "".join(t for _, t in line) for line in lines11), "an empty line collapses in mitmweb 11"
        # marked spans carry a style of their own there
        assert ("Token_Literal_String", "⟦Acme Corp⟧") in [s for ln in lines11 for s in ln]


def test_request_view_marks_what_went_upstream_and_what_the_client_sent(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = anthropic_flow(a)
        req = shown(f, f.request, "Disguise")
        other = shown(f, f.request, "Disguise other side")
    assert '"content": "⟦Zenith Labs⟧, ⟦[EMAIL_1]⟧"' in req
    assert '"content": "⟦Acme Corp⟧, ⟦bob@corp.example.com⟧"' in other


# -- Gemini ---------------------------------------------------------------------------------


@pytest.mark.parametrize("array", [False, True], ids=["alt=sse", "json array"])
def test_gemini_channels_are_reassembled(tmp_path: Path, array: bool) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = gemini_flow(a, array)
        text = shown(f, f.response, "Disguise")
        up = shown(f, f.response, "Disguise other side")
    head = text.split("\n")
    assert head[0].startswith("disguise google.gemini") and "restored 3" in head[0], head[0]
    stream_head = next(ln for ln in head if " events, " in ln)
    assert stream_head.startswith("2 events, 1 channel") and "no final event" not in stream_head
    assert "── candidate 0 text · text · 2 deltas ──" in text
    assert "sum of ⟦Bluebird⟧ + 42, we can align" in text
    assert "\n  ⟦Bluebird⟧\n+   42\n------\n  4242\n" in text.replace("\n \n", "\n\n")
    assert "So, ⟦Bluebird⟧ + 42 = **4242**." in text
    assert "So, ⟦4200⟧ + 42 = **4242**." in up
    r = rows(up)
    assert r[0].startswith("1  chunk  candidate 0 text") and r[0].endswith('So, ⟦42⟧"')
    assert '"⟦00⟧ + 42 = **4242**."' in r[1] and "candidate 0 finishReason STOP" in r[1]
    assert "usageMetadata" not in up.split("── events ──")[1]


def test_gemini_cut_stream_says_no_final_event() -> None:
    body = (REAL / "gemini" / "stream_sse_text.sse").read_bytes()
    first = body[: body.index(b"\r\n\r\n") + 4] if b"\r\n\r\n" in body else body[: body.index(b"\n\n") + 2]
    s = sseview.parse_stream(first)
    assert s.channels["candidate 0 text"].text.startswith("To find the sum") and not s.terminal
    assert "no final event" in render.render_stream(first).split("\n")[0]
    cut = to_array([json.loads(e.data) for e in sseview.parse_stream(body).events])[:-40]
    s = sseview.parse_array(cut)
    assert s is not None and len(s.events) == 1 and not s.terminal


def test_gemini_function_calls_and_thoughts_are_channels() -> None:
    s = sseview.parse_stream((REAL / "gemini" / "stream_sse_function_calls.sse").read_bytes())
    calls = [c for c in s.channels.values() if c.key.startswith("candidate 0 call")]
    assert [c.name for c in calls] == ["secret_retrieval_tool"] * 2
    assert [json.loads(c.text) for c in calls] == [{"password": "mellon"}, {"password": "radiance"}]
    assert s.terminal
    s = sseview.parse_stream((REAL / "gemini" / "stream_sse_thinking.sse").read_bytes())
    assert s.channels["candidate 0 thought"].kind == "thinking" and s.channels["candidate 0 text"].text


def test_gemini_candidates_each_need_their_finish() -> None:
    chunks = build_chunks([("text", 0, "a"), ("text", 1, "b"), ("finish", 0, "alone")])
    s = sseview.parse_array(to_array(chunks))
    assert s is not None and not s.terminal
    s = sseview.parse_array(to_array([*chunks, *build_chunks([("finish", 1, "text:c")])]))
    assert s is not None and s.terminal and s.channels["candidate 1 text"].text == "bc"


def test_every_recorded_stream_renders_one_row_per_event() -> None:
    for f in sorted(REAL.glob("*/*.sse")) + [REAL / "gemini" / "stream_json_array.json"]:
        body = f.read_bytes()
        s = sseview.parse_any(body, "text/event-stream" if f.suffix == ".sse" else "application/json")
        assert s is not None and s.events and s.channels, f.name
        assert s.terminal or "max_tokens" in f.name, f.name
        text = render.text_of(render.stream_lines(s))
        r = [x for x in rows(text) if x.strip()[:1].isdigit()]
        assert len(r) == len(s.events), f.name


# -- marks survive any split ----------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab Z\n", max_size=40), st.lists(st.integers(0, 40), max_size=8))
def test_row_marks_are_the_channel_marks_cut_at_the_deltas(text: str, cuts: list[int]) -> None:
    """Whatever the deltas, the marked characters of the rows, in order, are the
    marked characters of the channel's whole text."""
    points = sorted({c for c in cuts if 0 < c < len(text)})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)] or [""]
    body = build_stream([("text", pieces)])

    def mark(t: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in re.finditer(r"Z+|ab", t)]

    s = sseview.parse_stream(body)
    lines = render.stream_lines(s, mark)
    marked_rows = "".join(t[1:-1] for ln in lines[lines.index([(render.HEAD, "── events ──")]) :]
                          for st_, t in ln if st_ == render.MARK)  # fmt: skip
    expected = "".join(text[a:b] for a, b in mark(text)).translate(str.maketrans({"\n": "⏎"}))
    assert marked_rows == expected
    assert s.channels["block 0 text"].text == text


# -- the flow-list marker -----------------------------------------------------------------------


def test_flow_list_marker(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a:
        f = anthropic_flow(a)
        assert f.marked == MASKED_MARK
        plain = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                            "messages": [{"role": "user", "content": "nothing to hide"}]}).encode()  # fmt: skip
        g = through(a, "/v1/messages", "api.anthropic.com", plain, build_stream([("text", ["fine"])]),
                    "text/event-stream")  # fmt: skip
        assert g.marked == "" and "masked 0" in g.comment
    assert marker({"failed": "x", "masked": 3}) == FAILED_MARK
    assert marker({"masked": 0, "restored": 0}) == ""


def test_a_stream_that_fails_closed_is_marked_and_says_so_first(tmp_path: Path) -> None:
    """Upstream claims gzip and sends something else: the client gets an error event,
    the flow list shows the failure marker, the view's first line says so."""
    body = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": PROMPT}]}).encode()  # fmt: skip
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = tflow.tflow()
        f.request.method, f.request.host, f.request.path = "POST", "api.anthropic.com", "/v1/messages"
        f.request.headers["content-type"] = "application/json"
        f.request.content = body
        a.request(f)
        assert f.marked == MASKED_MARK
        f.response = tutils.tresp(content=None)
        f.response.headers["content-type"] = "text/event-stream"
        f.response.headers["content-encoding"] = "gzip"
        a.responseheaders(f)
        out = [*f.response.stream(b"this is not gzip at all" * 4), *f.response.stream(b"")]
        f.response.data.content = b""
        a.response(f)
        text = shown(f, f.response, "Disguise")
    assert b"error" in b"".join(out)
    assert f.marked == FAILED_MARK
    assert text.split("\n")[0].startswith("disguise anthropic.messages: FAILED CLOSED")


def test_a_json_error_sent_as_an_event_stream_is_shown_as_json() -> None:
    body = (REAL / "gemini" / "error_400_stream.json").read_bytes()
    text = render.render_body(body, "text/event-stream")
    assert "events," not in text.split("\n")[0] and '"error": {' in text, text[:200]


# -- issue 31: wrapped prose, held chunks, a coloured diff ----------------------------------------


def chat_stream(deltas: list[str], first: dict | None = None) -> bytes:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        doc = {"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    out = chunk(first) if first is not None else b""
    out += b"".join(chunk({"content": d}) for d in deltas)
    return out + chunk({}, "stop") + b"data: [DONE]\n\n"


def chat_flow(a: Disguise, deltas: list[str], first: dict | None = None):
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}).encode()
    return through(a, "/v1/chat/completions", "api.openai.com", body, chat_stream(deltas, first), "text/event-stream")


def test_held_chunks_in_chat_say_they_were_held(tmp_path: Path) -> None:
    """Chat's reverser sends a chunk whose text it holds as `"content": ""`: its row says
    so. The provider's own empty first chunk (role, content "") is no hold."""
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = chat_flow(a, DELTAS, first={"role": "assistant", "content": ""})
        text = shown(f, f.response, "Disguise")
    evrows = rows(text)
    held = [r for r in evrows if render.HELD in r]
    assert len(held) == 1 and held[0].split()[0] == "2" and "choice 0 content" in held[0], evrows
    assert render.HELD not in evrows[0], evrows  # event 1: the provider's own empty text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([render.TEXT, render.MARK, render.HEAD]),
                          st.text(alphabet=st.sampled_from("ab ⟦⟧é\t"), max_size=90)), max_size=6),
       st.integers(min_value=8, max_value=100))  # fmt: skip
def test_wrap_cuts_within_the_width_and_joins_back_to_the_line(line, width) -> None:
    out = render.wrap(line, width)
    texts = ["".join(t for _, t in piece) for piece in out]
    assert all(len(t) <= width for t in texts), texts
    assert all(t.endswith(render.WRAP_MARK) for t in texts[:-1])
    assert "".join(t.removesuffix(render.WRAP_MARK) for t in texts) == "".join(t for _, t in line)
    # every character keeps its style
    kept = [(s_, ch) for piece in out for s_, t in piece if (s_, t) != (render.NOTE, render.WRAP_MARK) for ch in t]
    assert kept == [(s_, ch) for s_, t in line for ch in t]


def test_wrap_is_linear() -> None:
    """Each cut looks back at most the width: doubling the line doubles the cuts."""
    calls = []
    line = [(render.TEXT, "word " * 20_000)]
    for n in (10_000, 20_000):
        calls.append(len(render.wrap([(render.TEXT, line[0][1][: n * 5])])))
    assert calls[1] <= 2 * calls[0] + 1


def test_summary_and_channel_text_wrap_to_the_pane(tmp_path: Path) -> None:
    """At 1400 px mitmweb's flow pane holds about 85 characters: the summary and a
    channel's reassembled text (one long paragraph here) stay within WRAP, and join back
    to exactly the text."""
    long_text = " ".join(["Zenith Labs writes to [EMAIL_1] about the quarterly plan."] * 8)
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = chat_flow(a, [long_text[i : i + 9] for i in range(0, len(long_text), 9)])
        raw = shown(f, f.response, "Disguise", unwrapped=False)
        whole = shown(f, f.response, "Disguise")
    lines = raw.split("\n")
    i = lines.index("── events ──")
    assert all(len(ln) <= render.WRAP for ln in lines[:i]), [ln for ln in lines[:i] if len(ln) > render.WRAP]
    assert sum(ln.endswith(render.WRAP_MARK) for ln in lines[:i]) >= 6
    assert long_text.replace("Zenith Labs", "Acme Corp").replace("[EMAIL_1]", "bob@corp.example.com") in \
        whole.replace("⟦", "").replace("⟧", "")


def test_the_diff_colours_what_changed(tmp_path: Path) -> None:
    with adapter(tmp_path, MAPPING) as a, registered(a):
        f = anthropic_flow(a)
        lines = views.render_lines("Disguise diff", f.response.content, f, f.response)
        if not NEW_API:
            shown11 = shown_lines_11(f, f.response, "Disguise diff")
    styles = {t[:1]: st_ for line in lines for st_, t in line if t[:1] in "-+@" and t[:3] not in ("---", "+++")}
    assert styles == {"-": render.REMOVED, "+": render.ADDED, "@": render.NUM}, styles
    if not NEW_API:  # mitmweb 11 draws each style in its own colour
        removed = [cls for line in shown11 for cls, t in line if t.startswith("-") and not t.startswith("---")]
        added = [cls for line in shown11 for cls, t in line if t.startswith("+") and not t.startswith("+++")]
        assert removed and added and set(removed) != set(added) and "text" not in set(removed) | set(added)


# In a fresh interpreter: the addon loaded (its modules, the views registered), then what
# only a view shown needs, first used.
_LAZY = '''
import sys
from mitmproxy.test import tflow
from disguiselib import launch
from disguiselib.inspect import views
from disguiselib.rules.mappings import Literal, MappingSet
from disguiselib.rules.rules import Rules

launch.addons()
views.register()
lazy = ("disguiselib.inspect.audit", "disguiselib.inspect.flowfile", "disguiselib.inspect.wsview")
print(sorted(m for m in lazy if m in sys.modules))
rules = Rules(MappingSet(literals=(Literal("Acme Corp", "Zenith Labs", "test"),)))
mark = views._marker(tflow.tflow(), views.PROVIDER, rules)
print(mark("to Zenith Labs"))
parsed, index = views._ws_parsed(tflow.twebsocketflow())
print(len(parsed.events), len(index))
print(sorted(m for m in lazy if m in sys.modules))
'''


def test_the_proxy_loads_the_views_without_what_only_a_view_shown_needs() -> None:
    """Issue 29 (the proxy's idle RSS): mitmdump shows no view, so loading the addon
    imports the views without the audit that marks a flow's disguises and the flow-file
    and WebSocket readers (~200 KiB of Python, bench/idlemem.py); the first view that
    needs them imports them, and marks and reads as before."""
    r = subprocess.run([sys.executable, "-c", _LAZY], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(views.__file__).parents[2])})  # fmt: skip
    assert r.returncode == 0, r.stderr
    before, marked, ws, after = r.stdout.splitlines()
    assert before == "[]"
    assert marked == "[(3, 14)]"
    assert ws.split()[0] == ws.split()[1] != "0"
    assert after == str(["disguiselib.inspect.audit", "disguiselib.inspect.flowfile", "disguiselib.inspect.wsview"])
