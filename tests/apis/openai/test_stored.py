"""OpenAI's endpoints that give back stored text (apis/openai/stored.py): each is
recognised by method and path, restored with its table, and read as what it declares
(a document or a file, never an event stream, whatever its first bytes)."""

from __future__ import annotations

import json
import re

import pytest

from disguiselib import pipeline
from disguiselib.apis import registry
from disguiselib.apis.openai import stored as openai_stored
from disguiselib.base.wirespec import FILE
from strategies import RULES

CONV_ITEM = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Zenith Labs says hi", "annotations": []}]}  # fmt: skip
USER_ITEM = {"type": "message", "id": "msg_0", "role": "user",
             "content": [{"type": "input_text", "text": "Tell Zenith Labs"}]}  # fmt: skip
THREAD_MESSAGE = {"id": "msg_1", "object": "thread.message", "thread_id": "thread_1", "role": "assistant",
                  "content": [{"type": "text", "text": {"value": "Zenith Labs wrote", "annotations": []}}]}  # fmt: skip
RUN = {"id": "run_1", "object": "thread.run", "thread_id": "thread_1", "status": "requires_action",
       "instructions": "Help Zenith Labs",
       "required_action": {"type": "submit_tool_outputs", "submit_tool_outputs": {"tool_calls": [
           {"id": "call_1", "type": "function", "function": {"name": "f",
                                                             "arguments": json.dumps({"who": "Zenith Labs"})}}]}}}  # fmt: skip

FILE_OBJECT = {"id": "file-1", "object": "file", "bytes": 10, "created_at": 1, "filename": "Zenith Labs batch.jsonl",
               "purpose": "batch", "status": "processed"}  # fmt: skip
CONTAINER_FILE = {"id": "cfile_1", "object": "container.file", "container_id": "cntr_1", "created_at": 1, "bytes": 5,
                  "path": "/mnt/data/Zenith Labs report.csv", "source": "assistant"}  # fmt: skip


def restored(method: str, path: str, doc: object, ctype: str = "application/json") -> bytes:
    api = registry.recognise(method, path)
    assert api is not None, path
    return pipeline.restore_whole(api, RULES.restorer({}), json.dumps(doc).encode(), ctype, path)


@pytest.mark.parametrize(
    ("method", "path", "doc"),
    [
        ("GET", "/v1/conversations/conv_1/items", {"object": "list", "data": [USER_ITEM, CONV_ITEM]}),
        ("POST", "/v1/conversations/conv_1/items", {"object": "list", "data": [USER_ITEM]}),
        ("GET", "/v1/conversations/conv_1/items/msg_1", CONV_ITEM),
        ("GET", "/v1/vector_stores/vs_1/files/file_1/content",
         {"object": "vector_store.file_content.page", "data": [{"type": "text", "text": "Zenith Labs notes"}]}),
        ("POST", "/v1/vector_stores/vs_1/search",
         {"object": "vector_store.search_results.page", "search_query": "x",
          "data": [{"file_id": "f", "filename": "Zenith Labs.txt", "score": 1, "attributes": {},
                    "content": [{"type": "text", "text": "Zenith Labs notes"}]}]}),
        # a batch upload's name went out masked: its file object gives back the disguise
        ("POST", "/v1/files", FILE_OBJECT),
        ("GET", "/v1/files/file-1", FILE_OBJECT),
        ("GET", "/v1/files", {"object": "list", "data": [FILE_OBJECT], "has_more": False}),
        ("GET", "/openai/files/file-1", FILE_OBJECT),  # Azure's prefix
        # a file Code Interpreter wrote, named by the model from the masked text it read
        ("GET", "/v1/containers/cntr_1/files", {"object": "list", "data": [CONTAINER_FILE], "has_more": False}),
        ("GET", "/v1/containers/cntr_1/files/cfile_1", CONTAINER_FILE),
        ("POST", "/v1/containers/cntr_1/files", CONTAINER_FILE),
        ("GET", "/v1/threads/thread_1/messages", {"object": "list", "data": [THREAD_MESSAGE]}),
        ("GET", "/v1/threads/thread_1/messages/msg_1", THREAD_MESSAGE),
        ("POST", "/v1/threads/thread_1/messages", THREAD_MESSAGE),
        ("GET", "/v1/threads/thread_1/runs", {"object": "list", "data": [RUN]}),
        ("GET", "/v1/threads/thread_1/runs/run_1", RUN),
        ("POST", "/openai/threads/thread_1/runs/run_1/submit_tool_outputs", RUN),  # Azure's prefix
        ("POST", "/v1/threads/runs", RUN),
        ("GET", "/v1/threads/thread_1/runs/run_1/steps/step_1",
         {"id": "step_1", "object": "thread.run.step", "step_details": {"type": "tool_calls", "tool_calls": [
             {"id": "c", "type": "code_interpreter",
              "code_interpreter": {"input": "print('Zenith Labs')", "outputs": [{"type": "logs", "logs": "Zenith Labs"}]}}]}}),
    ],
)  # fmt: skip
def test_stored_text_comes_back_restored(method: str, path: str, doc: object) -> None:
    out = restored(method, path, doc)
    assert b"Zenith" not in out and b"Acme Corp" in out
    json.loads(out)


def test_tool_call_arguments_of_a_run_are_restored_as_json() -> None:
    run = json.loads(json.dumps(RUN))
    run["required_action"]["submit_tool_outputs"]["tool_calls"][0]["function"]["arguments"] = '{"who": "WINPATH"}'
    out = json.loads(restored("GET", "/v1/threads/thread_1/runs/run_1", run))
    args = out["required_action"]["submit_tool_outputs"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(args) == {"who": 'C:\\Users\\a "b"'}  # an original that needs escaping, escaped


def test_a_container_file_is_restored_like_a_downloaded_file() -> None:
    body = b"id: Zenith Labs\nkind: ConfigMap\n"  # a YAML file that begins like an event
    for path in ("/v1/containers/cntr_1/files/cfile_1/content", "/v1/files/file-1/content"):
        api = registry.recognise("GET", path)
        assert api is not None and api.answers == FILE
        out = pipeline.restore_whole(api, RULES.restorer({}), body, "application/octet-stream", path)
        assert out == b"id: Acme Corp\nkind: ConfigMap\n"


def test_a_document_labelled_as_an_event_stream_is_refused() -> None:
    api = registry.recognise("GET", "/v1/threads/t/runs/r")
    assert api is not None
    out = pipeline.restore_whole(api, RULES.restorer({}), b"event: thread.run.created\ndata: {}\n\n",
                                 "text/event-stream")  # fmt: skip
    assert b"labelled text/event-stream" in out and json.loads(out)["error"]


def test_every_declared_endpoint_is_registered_once() -> None:
    names = [e.name for e in openai_stored.ENDPOINTS]
    assert len(set(names)) == len(names)
    for e in openai_stored.ENDPOINTS:
        assert registry.BY_NAME[e.name].answers == e.answers


def _sdk_paths() -> list[tuple[str, str]]:
    """(method, path) of every call the installed `openai` SDK makes under the resources
    that give back stored text (its `path_template` / f-string paths, ids as `x`)."""
    import pathlib
    import re

    openai = pytest.importorskip("openai")
    root = pathlib.Path(openai.__file__).parent / "resources"
    out = []
    for sub in ("conversations", "containers", "vector_stores", "beta/threads", "files.py", "uploads", "batches.py"):
        for f in [root / sub] if sub.endswith(".py") else sorted((root / sub).rglob("*.py")):
            sync = f.read_text().split("\nclass Async")[0]
            for m in re.finditer(r'self\._(get|post|delete|get_api_list)\(\s*(?:path_template\(\s*)?f?"([^"]+)"', sync):
                call = sync[m.end() : sync.find("\n        )", m.end())]  # the call's arguments
                post = m[1] == "post" or 'method="post"' in call  # a list fetched by POST (search)
                method = "DELETE" if m[1] == "delete" else "POST" if post else "GET"
                out.append((method, "/v1" + re.sub(r"\{[^}]+\}", "x", m[2])))
    return out


# The calls under those resources whose answers hold no stored text (ids, statuses,
# settings, and names the client gave in a request disguise does not transform, where an
# original is refused: a container's, a vector store's, an upload's `filename`, a
# batch's `metadata`): not declared. Anything else the SDK calls there must be. A
# file's `filename` (a batch upload's, masked) and a container file's `path` (named by
# the model) are stored text.
_NO_TEXT = re.compile(
    r"/v1/conversations(?:/x)?|/v1/containers(?:/x)?"
    r"|/v1/vector_stores(?:/x)?|/v1/vector_stores/x/files(?:/x)?|/v1/vector_stores/x/file_batches(?:/x.*)?"
    r"|/v1/threads(?:/x)?|/v1/uploads(?:/x/(?:parts|cancel|complete))?|/v1/batches(?:/x(?:/cancel)?)?"
)


def test_every_sdk_call_that_returns_stored_text_is_declared() -> None:
    paths = _sdk_paths()
    assert len(paths) > 30  # the SDK was read
    assert ("GET", "/v1/files/x") in paths and ("POST", "/v1/uploads/x/complete") in paths
    missing = [(m, p) for m, p in paths
               if m != "DELETE" and not _NO_TEXT.fullmatch(p) and registry.recognise(m, p) is None]  # fmt: skip
    assert not missing, missing
    # and the exceptions are exceptions: none of them is a declared endpoint
    both = [(m, p) for m, p in paths if _NO_TEXT.fullmatch(p) and registry.recognise(m, p) is not None]
    assert not both, both
