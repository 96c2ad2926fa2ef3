"""Vertex's streamed function-call arguments (`functionCall.partialArgs`, apis/google/
calls.py): a window per (candidate, call, jsonPath), so that the pieces a client joins per
path are what whole-value restoring of the joined text gives, however the pieces, the
chunks and the bytes are cut, with several calls, paths and candidates interleaved; held
tails go out in the path's last piece, spliced into the ending call, in the finishing
chunk, or at the stream's end, never into another channel."""

from __future__ import annotations

import json

import pytest
from google_util import USAGE, sse_chunks, to_array, to_sse
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.apis.google import array as gemini_array
from disguiselib.apis.google import stream as gemini_stream
from disguiselib.inspect import sseview
from strategies import PLACEHOLDERS, RULES, byte_splits, splits, texts

R = RULES.restorer(PLACEHOLDERS)
CLASSES = [gemini_stream.GeminiStream, gemini_array.GeminiArrayStream]
PATHS = ["$.thread_id", "$.path", "$.deep[0].note", "$['Zenith Labs']"]


def chunk(k: int, parts: list[dict] | None, finish: bool = False) -> dict:
    c: dict = {"content": {"role": "model", "parts": parts}} if parts is not None else {}
    if finish:
        c["finishReason"] = "STOP"
    c["index"] = k
    return {"candidates": [c], "usageMetadata": USAGE, "modelVersion": "gemini-2.5-pro", "responseId": "r1"}


def fc(**members) -> dict:
    return {"functionCall": members}


@st.composite
def plans(draw):
    """Per candidate (one or two) one or two calls in a row, each with one or two
    string paths (random texts cut into pieces) and maybe a number; a call's pieces go
    out in parts of one to three pieces, its paths interleaved; the candidates' chunks
    interleaved. Returns the chunks and what each (candidate, call, path) must join to."""
    want: dict = {}
    queues = []
    for k in range(draw(st.integers(1, 2))):
        q: list[dict] = []
        for n in range(draw(st.integers(1, 2))):
            fid = draw(st.sampled_from([None, f"call-{k}-{n}"]))
            every_id = draw(st.booleans())  # the id on every part of the call, or on its first only
            ident = {"id": fid} if fid else {}
            # calls in a row name other functions: one that never says it ends is ended by the next
            q.append(chunk(k, [fc(name=("crm_lookup", "fetch")[n % 2], **ident, willContinue=True)]))
            streams = []
            for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=2, unique=True)):
                text = draw(texts)
                pieces = draw(splits(text))
                want[(k, n, R.value(path))] = R.value(text)
                ends = draw(st.booleans())  # the last piece says the path ends (or the call's end does)
                streams.append([{"jsonPath": path, "stringValue": p, "willContinue": i < len(pieces) - 1 or not ends}
                                for i, p in enumerate(pieces)])  # fmt: skip
            if draw(st.booleans()):
                streams.append([{"jsonPath": "$.n", "numberValue": 1.5}])
            order = []
            while any(streams):
                s = draw(st.sampled_from([s for s in streams if s]))
                order.append(s.pop(0))
            while order:
                take = draw(st.integers(1, 3))
                part = {"partialArgs": order[:take], "willContinue": True, **(ident if every_id else {})}
                order = order[take:]
                q.append(chunk(k, [fc(**part)]))
            how = draw(st.sampled_from(["own", "last", "never"]))  # how the call ends
            if how == "own":
                q.append(chunk(k, [fc(**(ident if every_id else {}))]))
            elif how == "last":
                q[-1]["candidates"][0]["content"]["parts"][0]["functionCall"].pop("willContinue")
        finish = draw(st.sampled_from([[fc()], [], None, [{"text": ""}]]))
        q.append(chunk(k, finish, finish=True))
        queues.append(q)
    chunks = []
    while any(queues):
        q = draw(st.sampled_from([q for q in queues if q]))
        chunks.append(q.pop(0))
    return chunks, want


def reassemble(chunks: list[dict]) -> dict:
    """As a client joins streamed arguments: a part with a `name` opens the candidate's
    next call, a part without one continues its latest; string pieces join per path."""
    got: dict = {}
    calls: dict = {}
    finished: set = set()
    for c in chunks:
        assert "error" not in c, c
        for cd in c.get("candidates", []):
            k = cd.get("index", 0)
            for p in (cd.get("content") or {}).get("parts") or []:
                assert k not in finished, "a part after its candidate's finishReason"
                call = p.get("functionCall")
                if call is None:
                    continue
                if "name" in call:
                    assert call["name"] in ("acme_lookup", "fetch")
                    calls[k] = calls.get(k, -1) + 1
                for piece in call.get("partialArgs", []):
                    if "stringValue" in piece:
                        key = (k, calls[k], piece["jsonPath"])
                        got[key] = got.get(key, "") + piece["stringValue"]
            if cd.get("finishReason"):
                finished.add(k)
    return got


def run(cls, body: bytes, pieces: list[bytes]) -> list[dict]:
    s = cls(RULES.restorer(PLACEHOLDERS))
    out = b"".join(s.feed(p) for p in pieces) + s.flush()
    if cls is gemini_array.GeminiArrayStream:
        doc = json.loads(out)  # one valid JSON array
        assert isinstance(doc, list)
        return doc
    return sse_chunks(out)  # every event parses


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=60, deadline=None)
@given(plan=plans(), data=st.data())
def test_streamed_arguments_reassemble_to_the_whole_value_result(cls, plan, data) -> None:
    chunks, want = plan
    body = to_sse(chunks) if cls is gemini_stream.GeminiStream else to_array(chunks, pretty=data.draw(st.booleans()))
    got = reassemble(run(cls, body, data.draw(byte_splits(body, 40))))
    assert {k: v for k, v in got.items() if v or k in want} == {k: v for k, v in want.items() if v or k in got}


def _call_stream(pieces: list[dict], end: dict | None) -> list[dict]:
    out = [chunk(0, [fc(name="crm_lookup", id="c1", willContinue=True)])]
    out += [chunk(0, [fc(partialArgs=[p], willContinue=True)]) for p in pieces]
    if end is not None:
        out.append(end)
    return out


@given(st.integers(0, 40))
@example(17)
def test_a_disguise_cut_between_two_chunks_is_restored_at_every_cut(cut: int) -> None:
    text = "Zenith Labs mails [EMAIL_1] from WINPATH"
    cut = min(cut, len(text))
    pieces = [{"jsonPath": "$.thread_id", "stringValue": text[:cut], "willContinue": True},
              {"jsonPath": "$.thread_id", "stringValue": text[cut:]}]  # fmt: skip
    body = to_sse(_call_stream(pieces, chunk(0, [fc()], finish=True)))
    assert reassemble(run(gemini_stream.GeminiStream, body, [body])) == {(0, 0, "$.session_id"): R.value(text)}


def test_a_held_tail_goes_out_in_the_paths_last_piece() -> None:
    pieces = [{"jsonPath": "$.a", "stringValue": "at Zen", "willContinue": True},
              {"jsonPath": "$.a", "stringValue": "ith Labs, [EMA"}]  # fmt: skip
    chunks = sse_chunks(_sse(_call_stream(pieces, chunk(0, [fc()], finish=True))))
    args = [c["candidates"][0]["content"]["parts"][0]["functionCall"].get("partialArgs") for c in chunks]
    assert args == [None, [{"jsonPath": "$.a", "stringValue": "at ", "willContinue": True}],
                    [{"jsonPath": "$.a", "stringValue": "Acme Corp, [EMA"}], None]  # fmt: skip


def _sse(chunks: list[dict]) -> bytes:
    s = gemini_stream.GeminiStream(RULES.restorer(PLACEHOLDERS))
    return s.feed(to_sse(chunks)) + s.flush()


def test_a_path_that_ends_without_a_piece_of_its_own_gets_one_spliced_into_the_ending_call() -> None:
    pieces = [{"jsonPath": "$.a", "stringValue": "write to [EMA", "willContinue": True},
              {"jsonPath": "$.b", "stringValue": "x", "willContinue": True}]  # fmt: skip
    end = chunk(0, [fc(partialArgs=[{"jsonPath": "$.b", "stringValue": "y"}])])
    out = _sse(_call_stream(pieces, end) + [chunk(0, [{"text": "ok"}], finish=True)])
    last_call = sse_chunks(out)[3]["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert last_call["partialArgs"] == [{"jsonPath": "$.a", "stringValue": "[EMA"}, {"jsonPath": "$.b", "stringValue": "y"}]
    assert b'{"functionCall": {"partialArgs": [{"jsonPath":"$.a","stringValue":"[EMA"},{"jsonPath": "$.b"' in out


def test_a_call_still_holding_text_at_finish_gets_a_part_first_in_the_finishing_chunk() -> None:
    pieces = [{"jsonPath": "$.a", "stringValue": "write to [EMA", "willContinue": True}]
    out = sse_chunks(_sse(_call_stream(pieces, chunk(0, [{"text": "done"}], finish=True))))
    assert out[-1]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"id": "c1", "partialArgs": [{"jsonPath": "$.a", "stringValue": "[EMA"}]}}, {"text": "done"}]


@pytest.mark.parametrize("cls", CLASSES)
def test_a_stream_cut_mid_call_delivers_the_held_piece_then_the_error(cls) -> None:
    body = (to_sse if cls is gemini_stream.GeminiStream else to_array)(
        _call_stream([{"jsonPath": "$.a", "stringValue": "to Zen", "willContinue": True}], None))
    if cls is gemini_array.GeminiArrayStream:
        body = body[: body.rindex(b"]")]  # no closing bracket: cut
    chunks = run(cls, body, [body])
    assert chunks[-1]["error"]["message"].endswith("cut short")
    assert chunks[-2]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"id": "c1", "partialArgs": [{"jsonPath": "$.a", "stringValue": "Zen"}]}}]
    assert reassemble(chunks[:-1]) == {(0, 0, "$.a"): "to Zen"}


def test_two_calls_interleaved_by_id_keep_their_own_windows() -> None:
    chunks = [chunk(0, [fc(name="crm_lookup", id="a", willContinue=True)]),
              chunk(0, [fc(id="a", partialArgs=[{"jsonPath": "$.p", "stringValue": "Zen", "willContinue": True}],
                           willContinue=True)]),
              chunk(0, [fc(name="crm_lookup", id="b", willContinue=True)]),
              chunk(0, [fc(id="b", partialArgs=[{"jsonPath": "$.p", "stringValue": "ith Labs"}])]),
              chunk(0, [fc(id="a", partialArgs=[{"jsonPath": "$.p", "stringValue": "ith Labs"}])]),
              chunk(0, [], finish=True)]  # fmt: skip
    got = {}
    for c in sse_chunks(_sse(chunks)):
        for p in c["candidates"][0]["content"]["parts"]:
            for piece in p["functionCall"].get("partialArgs", []):
                got[p["functionCall"]["id"]] = got.get(p["functionCall"]["id"], "") + piece["stringValue"]
    assert got == {"a": "Acme Corp", "b": "ith Labs"}  # b's text never joins a's window


@pytest.mark.parametrize("cls", CLASSES)
def test_calls_opened_and_ended_in_chunks_without_a_trigger_are_still_told_apart(cls) -> None:
    """Chunks in which nothing could be restored pass unparsed, but not those with a
    function call: a call ended and the next opened there, then a piece held back, then
    a third call (of another function) while the second never said it ended."""
    def piece(s: str) -> dict:
        return fc(partialArgs=[{"jsonPath": "$.thread_id", "stringValue": s, "willContinue": True}], willContinue=True)

    chunks = [chunk(0, [fc(name="crm_lookup", willContinue=True)]), chunk(0, [piece("x")]), chunk(0, [fc()]),
              chunk(0, [fc(name="fetch", willContinue=True)]), chunk(0, [piece("Zenit")]),
              chunk(0, [fc(name="crm_lookup", willContinue=True)]), chunk(0, [piece("y")]), chunk(0, [fc()]),
              chunk(0, [fc()], finish=True)]  # fmt: skip
    body = to_sse(chunks) if cls is gemini_stream.GeminiStream else to_array(chunks)
    assert reassemble(run(cls, body, [body])) == {(0, 0, "$.session_id"): "x", (0, 1, "$.session_id"): "Zenit",
                                                  (0, 2, "$.session_id"): "y"}  # fmt: skip


def test_the_view_joins_streamed_arguments_per_call_and_path() -> None:
    """The views and the audit (which looks for a disguise split across events in each
    channel's joined text) read a streamed call's arguments as the client joins them."""
    def piece(p: str, s: str) -> dict:
        return fc(partialArgs=[{"jsonPath": p, "stringValue": s, "willContinue": True}], willContinue=True)

    chunks = [chunk(0, [fc(name="crm_lookup", willContinue=True)]), chunk(0, [piece("$.a", "to Zen")]),
              chunk(0, [piece("$.b", "x")]), chunk(0, [piece("$.a", "ith Labs")]), chunk(0, [fc()]),
              chunk(0, [fc(name="fetch", args={"q": "Zenith Labs"})], finish=True)]  # fmt: skip
    stream = sseview.parse_any(to_sse(chunks), "text/event-stream")
    assert stream is not None
    assert {c.label: c.text for c in stream.channels.values()} == {
        "candidate 0 call 0 $.a (crm_lookup)": "to Zenith Labs", "candidate 0 call 0 $.b (crm_lookup)": "x",
        "candidate 0 call 1 (fetch)": '{"q": "Zenith Labs"}'}  # fmt: skip
    a = next(c for c in stream.channels.values() if c.text == "to Zenith Labs")
    assert [p.event for p in a.pieces] == [2, 4]  # split across two events: the audit's _split sees it
