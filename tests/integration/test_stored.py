"""Endpoints that return stored text, logprobs, and what decides a response's shape,
black-box through real mitmdump with the official `openai` and `google-genai` SDKs as
clients (issue 26): every OpenAI endpoint that gives back stored text comes back
restored (apis/openai/stored.py); Completions and Gemini logprobs never spell a
disguise, and Completions' `text_offset` points into the restored text; a downloaded
file is a file whatever its first bytes, and a response whose label contradicts its
endpoint fails closed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

LITERALS = {"Acme Corp": "Zenith Labs", "Bluebird": "Redwing"}


def reply(obj: object, ctype: str = "application/json") -> Reply:
    return Reply([json.dumps(obj).encode()], headers={"Content-Type": ctype}, framing="length")


def raw(body: bytes, ctype: str) -> Reply:
    return Reply([body], headers={"Content-Type": ctype}, framing="length")


CONV_ITEM = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Zenith Labs ships Redwing", "annotations": []}]}  # fmt: skip
USER_ITEM = {"type": "message", "id": "msg_0", "role": "user", "status": "completed",
             "content": [{"type": "input_text", "text": "Ask Zenith Labs"}]}  # fmt: skip
THREAD_MESSAGE = {"id": "msg_1", "object": "thread.message", "created_at": 1, "thread_id": "thread_1",
                  "role": "assistant", "status": "completed", "attachments": [], "metadata": {},
                  "assistant_id": "asst_1", "run_id": "run_1", "incomplete_details": None, "completed_at": 1,
                  "incomplete_at": None,
                  "content": [{"type": "text", "text": {"value": "Zenith Labs wrote", "annotations": []}}]}  # fmt: skip
RUN = {"id": "run_1", "object": "thread.run", "created_at": 1, "thread_id": "thread_1", "assistant_id": "asst_1",
       "status": "requires_action", "model": "gpt-4o", "instructions": "Help Zenith Labs", "tools": [],
       "parallel_tool_calls": True, "metadata": {},
       "required_action": {"type": "submit_tool_outputs", "submit_tool_outputs": {"tool_calls": [
           {"id": "call_1", "type": "function", "function": {"name": "lookup",
                                                             "arguments": json.dumps({"who": "Zenith Labs"})}}]}}}  # fmt: skip
STEP = {"id": "step_1", "object": "thread.run.step", "created_at": 1, "run_id": "run_1", "assistant_id": "asst_1",
        "thread_id": "thread_1", "type": "tool_calls", "status": "completed",
        "step_details": {"type": "tool_calls", "tool_calls": [
            {"id": "ci_1", "type": "code_interpreter",
             "code_interpreter": {"input": "print('Zenith Labs')",
                                  "outputs": [{"type": "logs", "logs": "Zenith Labs"}]}}]}}  # fmt: skip
YAML = b"id: zenith\nkind: ConfigMap\ndata:\n  owner: Zenith Labs\n"
CSS = b":root { --brand: 'Zenith Labs'; }\n"


def _page(*items: object) -> dict:
    return {"object": "list", "data": list(items), "first_id": "a", "last_id": "b", "has_more": False}


def completion(rec: Recorded) -> Reply:
    """Upstream's answer to a Completions request with logprobs, whole or streamed."""
    tokens = ["Hi", " Zen", "ith", " Labs", " and", " Red", "wing", ".", " Thanks", " for", " asking", "."]
    base = 7
    offs, o = [], base
    for t in tokens:
        offs.append(o)
        o += len(t)
    lp = {"tokens": tokens, "token_logprobs": [-0.5] * len(tokens), "text_offset": offs,
          "top_logprobs": [{t: -0.5, **({" Zenith Labs": -3.0} if i == 0 else {})} for i, t in enumerate(tokens)]}
    # (one alternative holds a disguise: the chunks after a restoration hold none, and
    # their offsets must move all the same)
    head = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "davinci-002"}
    if not json.loads(rec.body).get("stream"):
        return reply({**head, "choices": [{"index": 0, "text": "".join(tokens), "logprobs": lp,
                                           "finish_reason": "stop"}]})  # fmt: skip
    chunks = []
    for i, t in enumerate(tokens):
        part = {k: v[i : i + 1] for k, v in lp.items()}
        done = "stop" if i == len(tokens) - 1 else None
        chunks.append(b"data: " + json.dumps({**head, "choices": [
            {"index": 0, "text": t, "logprobs": part, "finish_reason": done}]}).encode() + b"\n\n")  # fmt: skip
    chunks.append(b"data: [DONE]\n\n")
    return Reply(chunks, headers={"Content-Type": "text/event-stream"})


GEMINI_TOKENS = ["Hi", " Zen", "ith Labs", " ok"]


def gemini_chunk(tokens: list[str], finish: str | None) -> dict:
    chosen = [{"token": t, "logProbability": -0.5} for t in tokens]
    cand: dict = {"content": {"role": "model", "parts": [{"text": "".join(tokens)}]}, "index": 0,
                  "logprobsResult": {"chosenCandidates": chosen, "topCandidates": [
                      {"candidates": [c, {"token": "Zenith Labs", "logProbability": -4.0}]} for c in chosen]}}  # fmt: skip
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-2.5-flash"}


def gemini(rec: Recorded) -> Reply:
    return reply(gemini_chunk(GEMINI_TOKENS, "STOP"))


def gemini_stream(rec: Recorded) -> Reply:
    chunks = [gemini_chunk([t], "STOP" if i == len(GEMINI_TOKENS) - 1 else None) for i, t in enumerate(GEMINI_TOKENS)]
    return Reply([b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks],
                 headers={"Content-Type": "text/event-stream"})  # fmt: skip


def _sse(name: str, doc: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(doc)}\n\n".encode()


def _text_delta(text: str) -> bytes:
    return _sse("thread.message.delta", {"id": "msg_1", "object": "thread.message.delta", "delta": {
        "content": [{"index": 0, "type": "text", "text": {"value": text, "annotations": []}}]}})  # fmt: skip


def _args_delta(args: str) -> bytes:
    return _sse("thread.run.step.delta", {"id": "step_2", "object": "thread.run.step.delta", "delta": {
        "step_details": {"type": "tool_calls", "tool_calls": [
            {"index": 0, "type": "function", "function": {"arguments": args}}]}}})  # fmt: skip


def run_stream(rec: Recorded) -> Reply:
    """A streamed run: a disguise split across message deltas (and across reads: one
    event per write), a tool call's arguments split across step deltas."""
    queued = {**RUN, "status": "queued", "required_action": None}
    pieces = [_sse("thread.run.created", queued), _sse("thread.message.created", {**THREAD_MESSAGE, "content": []}),
              _text_delta("Hi Zen"), _text_delta("ith La"), _text_delta("bs and Red"), _text_delta("wing."),
              _sse("thread.message.completed", {**THREAD_MESSAGE, "content": [
                  {"type": "text", "text": {"value": "Hi Zenith Labs and Redwing.", "annotations": []}}]}),
              _sse("thread.run.step.created", {**STEP, "id": "step_2", "status": "in_progress",
                                                "step_details": {"type": "tool_calls", "tool_calls": []}}),
              _args_delta('{"who": "Zen'), _args_delta('ith Labs"}'),
              _sse("thread.run.requires_action", RUN), b"event: done\ndata: [DONE]\n\n"]  # fmt: skip
    return Reply(pieces, headers={"Content-Type": "text/event-stream"})


STORED_NAMES: list[str] = []  # the file names the fake OpenAI was sent (masked)


def files(rec: Recorded) -> Reply:
    """The fake Files API: an upload stores the name it was sent; GET gives it back."""
    if rec.method == "POST":
        STORED_NAMES.append(re.search(rb'filename="([^"]*)"', rec.body)[1].decode())  # type: ignore[index]
    obj = {"id": "file-1", "object": "file", "bytes": 10, "created_at": 1, "filename": STORED_NAMES[-1],
           "purpose": "batch", "status": "processed"}  # fmt: skip
    return reply(_page(obj) if rec.method == "GET" and rec.path.split("?")[0] == "/v1/files" else obj)


CONTAINER_FILE = {"id": "cfile_1", "object": "container.file", "container_id": "cntr_1", "created_at": 1, "bytes": 5,
                  "path": "/mnt/data/Zenith Labs report.csv", "source": "assistant"}  # fmt: skip

HANDLERS = {
    "/v1/files": files,
    "/v1/files/file-1": files,
    "/v1/containers/cntr_1/files": lambda r: reply(_page(CONTAINER_FILE) if r.method == "GET" else CONTAINER_FILE),
    "/v1/containers/cntr_1/files/cfile_1": lambda r: reply(CONTAINER_FILE),
    "/v1/threads/thread_1/runs": run_stream,
    "/v1/threads/thread_1/runs/run_1/submit_tool_outputs": run_stream,
    "/v1/conversations/conv_1/items": lambda r: reply(_page(USER_ITEM, CONV_ITEM)),
    "/v1/conversations/conv_1/items/msg_1": lambda r: reply(CONV_ITEM),
    "/v1/containers/cntr_1/files/cfile_1/content": lambda r: raw(YAML, "application/octet-stream"),
    "/v1/files/file-yaml/content": lambda r: raw(YAML, "application/octet-stream"),
    "/v1/files/file-css/content": lambda r: raw(CSS, "text/css"),
    "/v1/files/file-sse/content": lambda r: raw(b"data: Zenith Labs\n\n", "text/event-stream"),
    "/v1/vector_stores/vs_1/files/vfile_1/content": lambda r: reply({
        "object": "vector_store.file_content.page", "has_more": False, "next_page": None,
        "data": [{"type": "text", "text": "Zenith Labs handbook"}]}),  # fmt: skip
    "/v1/threads/thread_1/messages": lambda r: reply(_page(THREAD_MESSAGE)),
    "/v1/threads/thread_1/runs/run_1": lambda r: reply(RUN),
    "/v1/threads/thread_1/runs/run_1/steps": lambda r: reply(_page(STEP)),
    "davinci-002": completion,
    "gpt-mislabelled": lambda r: raw(b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
                                     b'"choices":[{"index":0,"delta":{"content":"Zenith Labs"}}]}\n\n'
                                     b"data: [DONE]\n\n", "application/json"),
    "/v1beta/models/gemini-2.5-flash:generateContent": gemini,
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent": gemini_stream,
}


class Proxy:
    def __init__(self, upstream: FakeUpstream, mitm: Mitmdump) -> None:
        self.upstream = upstream
        self.base_url = f"http://127.0.0.1:{mitm.port}"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    tmp = tmp_path_factory.mktemp("disguise-stored")
    with FakeUpstream() as upstream:
        for key, handler in HANDLERS.items():
            upstream.on(key, handler)
        mitm = Mitmdump(mitmdump_cmd(upstream.port, tmp / "conf", write_mappings(tmp, {"literals": LITERALS})))
        try:
            yield Proxy(upstream, mitm)
        finally:
            mitm.stop()
            print(mitm.output[-6000:])


def client(proxy: Proxy):
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # fmt: skip


# -- stored text ----------------------------------------------------------------------------


def test_conversation_items_come_back_restored(proxy: Proxy) -> None:
    with client(proxy) as c:
        items = c.conversations.items.list("conv_1").data
        one = c.conversations.items.retrieve("msg_1", conversation_id="conv_1")
    assert items[0].content[0].text == "Ask Acme Corp"
    assert items[1].content[0].text == "Acme Corp ships Bluebird"
    assert one.content[0].text == "Acme Corp ships Bluebird"


def test_a_code_interpreter_file_is_restored_like_a_downloaded_file(proxy: Proxy) -> None:
    with client(proxy) as c:
        via_container = c.containers.files.content.retrieve("cfile_1", container_id="cntr_1").read()
        via_files = c.files.content("file-yaml").read()
    assert via_container == via_files == YAML.replace(b"Zenith Labs", b"Acme Corp")


def test_a_batch_files_name_comes_back_as_it_was_uploaded(proxy: Proxy) -> None:
    """The name went out masked (the provider stores the disguise); the upload's answer,
    retrieve and list give the client its own name back."""
    line = json.dumps({"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
                       "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Acme Corp"}]}})  # fmt: skip
    with client(proxy) as c:
        created = c.files.create(file=("Acme Corp batch.jsonl", line.encode()), purpose="batch")
        assert STORED_NAMES[-1] == "Zenith Labs batch.jsonl"
        got = c.files.retrieve("file-1")
        listed = c.files.list(purpose="batch").data
    assert created.filename == got.filename == listed[0].filename == "Acme Corp batch.jsonl"


def test_a_code_interpreter_files_path_comes_back_restored(proxy: Proxy) -> None:
    with client(proxy) as c:
        listed = c.containers.files.list("cntr_1").data
        got = c.containers.files.retrieve("cfile_1", container_id="cntr_1")
        made = c.containers.files.create("cntr_1", file_id="file-1")
    assert listed[0].path == got.path == made.path == "/mnt/data/Acme Corp report.csv"


def test_a_container_file_upload_with_an_original_is_refused(proxy: Proxy) -> None:
    """Declaring the answer changes nothing for the request: an upload disguise does not
    transform is still refused when it holds an original."""
    n = len(proxy.upstream.requests)
    with client(proxy) as c, pytest.raises(openai.APIStatusError):
        c.containers.files.create("cntr_1", file=("notes.txt", b"Acme Corp notes"))
    assert not any(b"Acme" in r.body for r in proxy.upstream.requests[n:])


def test_vector_store_file_content_comes_back_restored(proxy: Proxy) -> None:
    with client(proxy) as c:
        page = c.vector_stores.files.content("vfile_1", vector_store_id="vs_1")
        texts = [p.text for p in page]
    assert texts == ["Acme Corp handbook"]


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
def test_assistants_messages_runs_and_steps_come_back_restored(proxy: Proxy) -> None:
    with client(proxy) as c:
        msgs = c.beta.threads.messages.list("thread_1").data
        run = c.beta.threads.runs.retrieve("run_1", thread_id="thread_1")
        steps = c.beta.threads.runs.steps.list("run_1", thread_id="thread_1").data
    assert msgs[0].content[0].text.value == "Acme Corp wrote"
    assert run.instructions == "Help Acme Corp"
    call = run.required_action.submit_tool_outputs.tool_calls[0]
    assert json.loads(call.function.arguments) == {"who": "Acme Corp"}
    ci = steps[0].step_details.tool_calls[0].code_interpreter
    assert ci.input == "print('Acme Corp')" and ci.outputs[0].logs == "Acme Corp"


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
@pytest.mark.parametrize("how", ["create", "submit_tool_outputs"])
def test_a_streamed_run_comes_back_restored(proxy: Proxy, how: str) -> None:
    with client(proxy) as c:
        if how == "create":
            events = list(c.beta.threads.runs.create("thread_1", assistant_id="asst_1", stream=True))
        else:
            events = list(c.beta.threads.runs.submit_tool_outputs(
                "run_1", thread_id="thread_1", tool_outputs=[{"tool_call_id": "call_1", "output": "ok"}],
                stream=True))  # fmt: skip
    names = [e.event for e in events]
    assert names[0] == "thread.run.created" and names[-1] == "thread.run.requires_action"
    text = "".join(e.data.delta.content[0].text.value for e in events if e.event == "thread.message.delta")
    assert text == "Hi Acme Corp and Bluebird."
    args = "".join(e.data.delta.step_details.tool_calls[0].function.arguments
                   for e in events if e.event == "thread.run.step.delta")  # fmt: skip
    assert json.loads(args) == {"who": "Acme Corp"}
    done = next(e for e in events if e.event == "thread.message.completed")
    assert done.data.content[0].text.value == "Hi Acme Corp and Bluebird."
    assert events[0].data.instructions == "Help Acme Corp"
    final = events[-1].data.required_action.submit_tool_outputs.tool_calls[0]
    assert json.loads(final.function.arguments) == {"who": "Acme Corp"}


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
def test_a_streamed_run_through_the_event_handler_reads_restored_text(proxy: Proxy) -> None:
    with client(proxy) as c, c.beta.threads.runs.stream(thread_id="thread_1", assistant_id="asst_1") as stream:
        text = "".join(stream.text_deltas)
    assert text == "Hi Acme Corp and Bluebird."


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
def test_a_new_thread_message_with_an_original_is_refused(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    with client(proxy) as c, pytest.raises(openai.APIStatusError):
        c.beta.threads.messages.create("thread_1", role="user", content="Tell Acme Corp")
    assert not any(b"Acme" in r.body for r in proxy.upstream.requests[n:])


# -- endpoint and content type decide --------------------------------------------------------


def test_a_file_that_begins_like_an_event_stream_is_a_file(proxy: Proxy) -> None:
    with client(proxy) as c:
        yaml = c.files.content("file-yaml").read()
        css = c.files.content("file-css").read()
    assert yaml == YAML.replace(b"Zenith Labs", b"Acme Corp")  # nothing appended, the disguise restored
    assert css == CSS.replace(b"Zenith Labs", b"Acme Corp")


def test_a_file_labelled_as_an_event_stream_fails_closed(proxy: Proxy) -> None:
    with client(proxy) as c, pytest.raises(openai.APIStatusError) as e:
        c.files.content("file-sse").read()
    assert e.value.status_code == 502
    body = e.value.response.content
    assert b"Zenith" not in body and b"labelled text/event-stream" in body


def test_an_event_stream_labelled_json_fails_closed(proxy: Proxy) -> None:
    """Chat may stream, but only a body labelled text/event-stream is read as a stream;
    this one is labelled JSON and is an event stream: refused, never guessed at."""
    with client(proxy) as c, pytest.raises(openai.APIStatusError) as e:
        c.chat.completions.create(model="gpt-mislabelled", messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 502
    body = e.value.response.content
    assert b"Zenith" not in body and b"event stream labelled 'application/json'" in body


# -- logprobs --------------------------------------------------------------------------------


def check_completion_logprobs(text: str, lp) -> None:
    assert text == "Hi Acme Corp and Bluebird. Thanks for asking."
    assert "".join(lp.tokens) == text
    for tok, off in zip(lp.tokens, lp.text_offset, strict=True):
        assert text[off - 7 : off - 7 + len(tok)] == tok
    assert not any("Zen" in t or "Red" in t for t in lp.tokens)
    assert all(t is None or " Zenith Labs" not in t for t in lp.top_logprobs)


def test_completion_logprobs_are_laid_over_the_restored_text(proxy: Proxy) -> None:
    with client(proxy) as c:
        got = c.completions.create(model="davinci-002", prompt="Say Acme Corp", logprobs=2)
        chunks = list(c.completions.create(model="davinci-002", prompt="Say Acme Corp", logprobs=2, stream=True))
    check_completion_logprobs(got.choices[0].text, got.choices[0].logprobs)
    text = "".join(ch.choices[0].text for ch in chunks)
    joined = type("LP", (), {"tokens": [], "text_offset": [], "top_logprobs": []})()
    for ch in chunks:
        lp = ch.choices[0].logprobs
        if lp is not None:
            joined.tokens += lp.tokens or []
            joined.text_offset += lp.text_offset or []
            joined.top_logprobs += lp.top_logprobs or []
    check_completion_logprobs(text, joined)


def test_gemini_logprobs_never_spell_a_disguise(proxy: Proxy) -> None:
    g = genai.Client(api_key="test-key", http_options=types.HttpOptions(
        base_url=proxy.base_url, api_version="v1beta", client_args={"trust_env": False},
        retry_options=types.HttpRetryOptions(attempts=1), timeout=20_000))  # fmt: skip
    cfg = types.GenerateContentConfig(response_logprobs=True, logprobs=2)
    whole = g.models.generate_content(model="gemini-2.5-flash", contents="hi", config=cfg)
    streamed = list(g.models.generate_content_stream(model="gemini-2.5-flash", contents="hi", config=cfg))
    assert whole.text == "Hi Acme Corp ok"
    assert "".join(ch.text or "" for ch in streamed) == "Hi Acme Corp ok"
    for resp in [whole, *streamed]:
        lr = resp.candidates[0].logprobs_result
        if lr is None:
            continue
        dump = json.dumps(lr.model_dump(mode="json"))
        assert "Zen" not in dump and "Labs" not in dump, dump
    assert [c.token for c in whole.candidates[0].logprobs_result.chosen_candidates] == ["Hi", " ok"]
