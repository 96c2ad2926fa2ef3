"""OpenAI's endpoints that give back stored text: their inventory and response tables
(sans I/O).

Besides the calls that run a model (Chat, Responses, Completions: their own modules),
OpenAI stores what a model read or wrote and hands it back later: the items of a
Conversation (the masked turns the Responses API stored), files and their names (a
batch upload's, masked on the way out), the files Code Interpreter wrote in a container
and their paths, the parsed content of a vector store's files and what a search
of it finds, the Assistants API's messages, runs and run steps. Each is declared here
once, by method and path (the `openai` SDK's resources: `conversations/items.py`,
`files.py`, `containers/files/*.py`, `vector_stores/*.py`, `beta/threads/**`), with what it
answers (wirespec.DOCUMENT: JSON, never an event stream; wirespec.FILE: a file's bytes,
restored as text when it is UTF-8, passed as it came otherwise; wirespec.STREAMS: a run,
JSON or the Assistants event stream) and the table its
answer is restored with. apis/registry.py registers every entry as an endpoint.

They are retrievals: literals are restored, an earlier request's placeholders are gone
with it. Their requests carry no model input this addon masks (request table None): a
body that holds an original is refused by the leak guard, as on any endpoint it does not
transform. The endpoints that start or continue a run answer STREAMS: a streamed run
(`stream: true`, labelled `text/event-stream`) is read by apis/openai/assistants.py,
whose events are declared there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.exempt import COUNTERS
from ...base.fields import GENERIC, ID, META, SCHEMA, obj
from ...base.offsets import Cited
from ...base.offsets import register as register_cited
from ...base.wirespec import DOCUMENT, FILE, STREAMS
from ...wire.jsonspan import JSON_TEXT, PROSE, VALUES, Arr, Obj, Rule
from .responses_fields import ANY_ITEM


def _list(item: Rule) -> Obj:
    """A page of a list endpoint: `{"object": "list", "data": [...], "first_id", ...}`."""
    return Obj({"object": META, "first_id": ID, "last_id": ID, "has_more": META, "data": Arr(item)}, default=GENERIC)


_META = {**dict.fromkeys(("object", "created_at", "completed_at", "started_at", "expires_at", "cancelled_at",
                          "failed_at", "incomplete_at", "status", "role", "type", "model"), META),
         "usage": COUNTERS}  # fmt: skip
_IDS = dict.fromkeys(("id", "thread_id", "assistant_id", "run_id", "step_id", "file_id", "message_id",
                      "vector_store_id", "conversation_id", "container_id"), ID)  # fmt: skip

# Files: a file's object, as the upload answers it and GET /v1/files/{id} and the list
# give it back. Its `filename` is the name it was uploaded under, masked on the way out
# when it was a batch upload (apis/openai/batch.py): the provider stores the disguise.
FILE_OBJECT = Obj({"id": ID, "object": META, "purpose": META, "status": META, "bytes": META,
                   "created_at": META, "expires_at": META, "filename": VALUES, "status_details": VALUES},
                  default=GENERIC)  # fmt: skip
# Code Interpreter's container files: `path` names the file in the container, a name the
# model chose from the masked text it read (`/mnt/data/Zenith Labs report.csv`) or an
# uploaded file's; `source` says who wrote it (`user`, `assistant`).
CONTAINER_FILE = Obj({**_IDS, "object": META, "created_at": META, "bytes": META, "path": VALUES,
                      "source": META}, default=GENERIC)  # fmt: skip

# Conversations: an item is what the Responses API stores (an input or output item).
CONVERSATION_ITEMS = _list(ANY_ITEM)

# Vector stores: a file's parsed content (a page of `{"type": "text", "text"}`) and the
# results of a search (each with its file's name, attributes and content).
_CONTENT_PART = obj({"type": META, "text": PROSE})
VECTOR_STORE_FILE_CONTENT = Obj({**_IDS, "object": META, "has_more": META, "next_page": ID,
                                 "data": Arr(_CONTENT_PART)}, default=GENERIC)  # fmt: skip
VECTOR_STORE_SEARCH = Obj({"object": META, "search_query": VALUES, "has_more": META, "next_page": ID,
                           "data": Arr(obj({**_IDS, "filename": VALUES, "score": META, "attributes": GENERIC,
                                             "content": Arr(_CONTENT_PART)}))}, default=GENERIC)  # fmt: skip

# Assistants (beta): a message's content parts, a run (its instructions and tools, the
# tool calls it waits on), a run step (the calls the model made and their outputs).
# A text part's citations count characters of its `value`: moved to the restored value
# in whole messages (base/offsets.py); a `thread.message.delta`'s pieces are not read.
register_cited(Cited("annotations", "value", ("start_index", "end_index"), pieces="delta"))
_ANNOTATIONS = Arr(obj({"type": META, "text": VALUES, "start_index": META, "end_index": META,
                         "file_citation": obj({"file_id": ID}), "file_path": obj({"file_id": ID})}))  # fmt: skip
_MESSAGE_PART = obj({"type": META, "text": obj({"value": PROSE, "annotations": _ANNOTATIONS}),
                      "refusal": PROSE, "image_file": obj({"file_id": ID, "detail": META}),
                      "image_url": obj({"url": GENERIC, "detail": META})})  # fmt: skip
THREAD_MESSAGE = Obj({**_META, **_IDS, "content": Arr(_MESSAGE_PART), "attachments": GENERIC,
                      "incomplete_details": META, "metadata": GENERIC}, default=GENERIC)  # fmt: skip
_FUNCTION = obj({"name": VALUES, "arguments": JSON_TEXT, "output": VALUES})
_CODE_OUTPUT = obj({"type": META, "logs": VALUES, "image": obj({"file_id": ID})})
_TOOL_CALL = obj({"id": ID, "type": META, "function": _FUNCTION,
                   "code_interpreter": obj({"input": VALUES, "outputs": Arr(_CODE_OUTPUT)}),
                   "file_search": GENERIC})  # fmt: skip
_TOOL = obj({"type": META, "function": obj({"name": VALUES, "description": VALUES, "parameters": SCHEMA,
                                              "strict": META})})  # fmt: skip
RUN = Obj({**_META, **_IDS, "instructions": VALUES, "tools": Arr(_TOOL),
           "required_action": obj({"type": META, "submit_tool_outputs": obj({"tool_calls": Arr(_TOOL_CALL)})}),
           "last_error": obj({"code": META}), "incomplete_details": META, "metadata": GENERIC,
           "temperature": META, "top_p": META, "max_prompt_tokens": META, "max_completion_tokens": META,
           "truncation_strategy": META, "tool_choice": GENERIC, "parallel_tool_calls": META,
           "response_format": GENERIC}, default=GENERIC)  # fmt: skip
RUN_STEP = Obj({**_META, **_IDS, "last_error": obj({"code": META}), "metadata": GENERIC,
                "step_details": obj({"type": META, "message_creation": obj({"message_id": ID}),
                                      "tool_calls": Arr(_TOOL_CALL)})}, default=GENERIC)  # fmt: skip


@dataclass(frozen=True)
class Stored:
    """One endpoint that answers with stored text: `methods` and `path` (a regex of the
    path's end, `{id}` one segment), what it answers, and its table (for a FILE: the
    table of a JSON-lines file's lines; apis/openai/batch.restore_results reads it)."""

    name: str
    methods: str
    path: str
    answers: str
    rule: Rule | None = None


_ID = "[^/]+"
ENDPOINTS: tuple[Stored, ...] = (
    Stored("openai.conversations.items", "GET POST", rf"/conversations/{_ID}/items", DOCUMENT, CONVERSATION_ITEMS),
    Stored("openai.conversations.item", "GET", rf"/conversations/{_ID}/items/{_ID}", DOCUMENT, ANY_ITEM),
    Stored("openai.files.list", "GET", r"(?:/v1|/openai)/files", DOCUMENT, _list(FILE_OBJECT)),
    Stored("openai.files.file", "GET", rf"(?:/v1|/openai)/files/{_ID}", DOCUMENT, FILE_OBJECT),
    Stored("openai.containers.files", "GET", rf"/containers/{_ID}/files", DOCUMENT, _list(CONTAINER_FILE)),
    Stored("openai.containers.file", "GET POST", rf"/containers/{_ID}/files(?:/{_ID})?", DOCUMENT, CONTAINER_FILE),
    Stored("openai.containers.file_content", "GET", rf"/containers/{_ID}/files/{_ID}/content", FILE),
    Stored("openai.vector_stores.file_content", "GET", rf"/vector_stores/{_ID}/files/{_ID}/content", DOCUMENT,
           VECTOR_STORE_FILE_CONTENT),
    Stored("openai.vector_stores.search", "POST", rf"/vector_stores/{_ID}/search", DOCUMENT, VECTOR_STORE_SEARCH),
    Stored("openai.threads.messages", "GET", rf"/threads/{_ID}/messages", DOCUMENT, _list(THREAD_MESSAGE)),
    Stored("openai.threads.message", "GET POST", rf"/threads/{_ID}/messages(?:/{_ID})?", DOCUMENT, THREAD_MESSAGE),
    Stored("openai.threads.runs", "GET", rf"/threads/{_ID}/runs", DOCUMENT, _list(RUN)),
    Stored("openai.threads.run_stream", "POST",
           rf"/threads/(?:runs|{_ID}/runs(?:/{_ID}/submit_tool_outputs)?)", STREAMS, RUN),
    Stored("openai.threads.run", "GET POST", rf"/threads/{_ID}/runs/{_ID}(?:/cancel)?", DOCUMENT, RUN),
    Stored("openai.threads.run_steps", "GET", rf"/threads/{_ID}/runs/{_ID}/steps", DOCUMENT, _list(RUN_STEP)),
    Stored("openai.threads.run_step", "GET", rf"/threads/{_ID}/runs/{_ID}/steps/{_ID}", DOCUMENT, RUN_STEP),
)  # fmt: skip
