"""Who serves OpenAI's APIs, and where their clients put credentials (sans I/O): OpenAI,
Azure OpenAI / AI Foundry and the OpenAI-compatible providers (base/wirespec.Provider;
the APIs' tables and streams are openai_chat, openai_responses, legacy, batch and
openai_realtime)."""

from __future__ import annotations

from ...base.wirespec import BINARY, HOSTED, MASKED, REFUSED, RESTORED, SCANNED, Endpoint, Provider

# OpenAI: a key in Authorization (ChatGPT's backend: a cookie); a browser's Realtime
# WebSocket carries it as a subprotocol (`realtime, openai-insecure-api-key.<key>`).
OPENAI = Provider(
    "openai", hosts=("api.openai.com", "chatgpt.com"),
    headers=frozenset({"authorization", "openai-api-key", "cookie"}),
    subprotocols=("openai-insecure-api-key.",),
)  # fmt: skip
# Azure OpenAI and Azure AI Foundry: `{resource}.openai.azure.com`,
# `{resource}.cognitiveservices.azure.com`, `{resource}.services.ai.azure.com` (the
# deployments, `/openai/v1/...`, Assistants `/openai/threads`, `/openai/assistants`); the
# key in api-key (an API Management gateway: ocp-apim-subscription-key), an Entra token
# in Authorization; a Realtime WebSocket from a browser: `?api-key=` (documented there
# only: on Azure's hosts and on Azure's Realtime path, `/openai/realtime`,
# `/openai/v1/realtime`; OpenAI's `/v1/realtime` is not Azure's).
AZURE = Provider(
    "azure", hosts=("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com"),
    headers=frozenset({"api-key", "authorization", "ocp-apim-subscription-key"}),
    ws_params=frozenset({"api-key"}), paths=r"(?:^|/)openai/(?:v1/)?realtime\Z",
)  # fmt: skip
# The other providers of OpenAI-compatible (and Cohere's) APIs: a key in Authorization.
COMPATIBLE = Provider(
    "openai-compatible",
    hosts=("openrouter.ai", "api.deepseek.com", "api.mistral.ai", "api.groq.com", "api.together.xyz",
           "api.fireworks.ai", "api.x.ai", "api.cohere.com", "api.cohere.ai", "api.perplexity.ai"),
    headers=frozenset({"authorization"}),
)  # fmt: skip


# -- OpenAI's endpoints ---------------------------------------------------------------------

# A part is checked alone: an original cut by a part boundary would pass as two halves.
UPLOAD_PART_REFUSED = (
    "a part of a multi-part upload (/v1/uploads/{id}/parts) cannot be checked alone: an original cut by a part "
    "boundary would pass as two halves; upload the file in one request to /v1/files instead "
    "(or set disguise_allow_unknown to forward parts unchecked)"
)
# WebRTC: the SDP offer is the only request that passes the proxy; the call's audio and its
# data channel (every client and server event, conversation text included) then go between
# the client and OpenAI directly, where nothing can mask them.
WEBRTC_REFUSED = (
    "a Realtime WebRTC call (/v1/realtime/calls) sends its events over a data channel that does not pass "
    "through this proxy, so nothing in it could be masked; connect over WebSocket (/v1/realtime) instead "
    "(or set disguise_allow_unknown to forward it)"
)
# The Live API's WebRTC session, the same way (its WebSocket, on the same path, is an
# unknown WebSocket: refused too).
LIVE_REFUSED = (
    "a Live WebRTC session (/v1/live/sessions) sends its events over a data channel that does not pass through "
    "this proxy, so nothing in it could be masked; use the Realtime WebSocket (/v1/realtime) instead "
    "(or set disguise_allow_unknown to forward it)"
)

# Every endpoint of OpenAI's API reference (the OpenAPI document of openai/openai-openapi,
# paths under https://api.openai.com/v1; tests/inventory/openai.json), with what disguise
# does with it. The transformed ones are routed in apis/registry.py (and
# openai/stored.py); tests/apis/test_inventory.py checks that every documented
# endpoint is here, that routing does what each entry says, and that every request field
# of the masked ones has a row in docs/fields.md.
ENDPOINTS: tuple[Endpoint, ...] = (
    # Chat Completions (openai/chat.py): a stored completion is read back, updated, listed
    Endpoint("POST", "/chat/completions", MASKED),
    Endpoint("GET", "/chat/completions", RESTORED, "stored completions' metadata"),
    Endpoint("GET", "/chat/completions/{completion_id}", RESTORED),
    Endpoint("POST", "/chat/completions/{completion_id}", MASKED, "new metadata; the stored completion back"),
    Endpoint("DELETE", "/chat/completions/{completion_id}", SCANNED),
    Endpoint("GET", "/chat/completions/{completion_id}/messages", RESTORED),
    # Responses (openai/responses.py)
    Endpoint("POST", "/responses", MASKED),
    Endpoint("POST", "/responses/input_tokens", MASKED),
    Endpoint("POST", "/responses/compact", MASKED),
    Endpoint("GET", "/responses/{response_id}", RESTORED),
    Endpoint("POST", "/responses/{response_id}/cancel", RESTORED),
    Endpoint("DELETE", "/responses/{response_id}", SCANNED),
    Endpoint("GET", "/responses/{response_id}/input_items", RESTORED),
    # legacy.py
    Endpoint("POST", "/completions", MASKED),
    Endpoint("POST", "/embeddings", MASKED),
    Endpoint("POST", "/moderations", SCANNED, "input checked by a classifier: not masked, refused with an original"),
    # Files and Batch (batch.py): a batch input file is masked line by line, results restored
    Endpoint("POST", "/files", MASKED, "multipart: a batch input file masked line by line"),
    Endpoint("GET", "/files/{file_id}/content", RESTORED, "a downloaded file (batch results)"),
    Endpoint("GET", "/files/{file_id}", RESTORED, "a file's object: its filename (a batch upload's, masked)"),
    Endpoint("DELETE", "/files/{file_id}", SCANNED),
    Endpoint("GET", "/files", RESTORED, "file objects: their filenames"),
    Endpoint("GET POST", "/batches", SCANNED, "a batch names its input file; the file is masked on upload"),
    Endpoint("GET", "/batches/{batch_id}", SCANNED),
    Endpoint("POST", "/batches/{batch_id}/cancel", SCANNED),
    Endpoint("POST", "/uploads", SCANNED),
    Endpoint("POST", "/uploads/{upload_id}/cancel", SCANNED),
    Endpoint("POST", "/uploads/{upload_id}/complete", SCANNED),
    Endpoint("POST", "/uploads/{upload_id}/parts", REFUSED, UPLOAD_PART_REFUSED),
    # Conversations (openai/stored.py): stored items are restored
    Endpoint("POST", "/conversations", SCANNED, "initial items: refused with an original"),
    Endpoint("GET POST DELETE", "/conversations/{conversation_id}", SCANNED, "metadata"),
    Endpoint("GET POST", "/conversations/{conversation_id}/items", RESTORED),
    Endpoint("GET", "/conversations/{conversation_id}/items/{item_id}", RESTORED),
    Endpoint("DELETE", "/conversations/{conversation_id}/items/{item_id}", SCANNED),
    # Assistants (beta; openai/stored.py, openai/assistants.py): messages, runs, steps restored
    Endpoint("GET POST", "/assistants", SCANNED, "instructions: refused with an original"),
    Endpoint("GET POST DELETE", "/assistants/{assistant_id}", SCANNED),
    Endpoint("POST", "/threads", SCANNED, "initial messages: refused with an original"),
    Endpoint("GET POST DELETE", "/threads/{thread_id}", SCANNED),
    Endpoint("GET POST", "/threads/{thread_id}/messages", RESTORED),
    Endpoint("GET POST", "/threads/{thread_id}/messages/{message_id}", RESTORED),
    Endpoint("DELETE", "/threads/{thread_id}/messages/{message_id}", SCANNED),
    Endpoint("POST", "/threads/runs", RESTORED, "a run: JSON or the Assistants stream"),
    Endpoint("GET POST", "/threads/{thread_id}/runs", RESTORED),
    Endpoint("GET POST", "/threads/{thread_id}/runs/{run_id}", RESTORED),
    Endpoint("POST", "/threads/{thread_id}/runs/{run_id}/cancel", RESTORED),
    Endpoint("POST", "/threads/{thread_id}/runs/{run_id}/submit_tool_outputs", RESTORED),
    Endpoint("GET", "/threads/{thread_id}/runs/{run_id}/steps", RESTORED),
    Endpoint("GET", "/threads/{thread_id}/runs/{run_id}/steps/{step_id}", RESTORED),
    # Vector stores: parsed file content and search results restored
    Endpoint("GET POST", "/vector_stores", SCANNED),
    Endpoint("GET POST DELETE", "/vector_stores/{vector_store_id}", SCANNED),
    Endpoint("GET POST", "/vector_stores/{vector_store_id}/files", SCANNED),
    Endpoint("GET POST DELETE", "/vector_stores/{vector_store_id}/files/{file_id}", SCANNED),
    Endpoint("GET", "/vector_stores/{vector_store_id}/files/{file_id}/content", RESTORED),
    Endpoint("POST", "/vector_stores/{vector_store_id}/search", RESTORED, "the query is scanned"),
    Endpoint("POST", "/vector_stores/{vector_store_id}/file_batches", SCANNED),
    Endpoint("GET", "/vector_stores/{vector_store_id}/file_batches/{batch_id}", SCANNED),
    Endpoint("POST", "/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel", SCANNED),
    Endpoint("GET", "/vector_stores/{vector_store_id}/file_batches/{batch_id}/files", SCANNED),
    # Containers (Code Interpreter): a file the container wrote is restored
    Endpoint("GET POST", "/containers", SCANNED),
    Endpoint("GET DELETE", "/containers/{container_id}", SCANNED),
    Endpoint("GET POST", "/containers/{container_id}/files", RESTORED,
             "an uploaded file: refused with an original; container files back, their paths restored"),
    Endpoint("GET", "/containers/{container_id}/files/{file_id}", RESTORED, "its path: a name the model chose"),
    Endpoint("DELETE", "/containers/{container_id}/files/{file_id}", SCANNED),
    Endpoint("GET", "/containers/{container_id}/files/{file_id}/content", RESTORED, "a file the container wrote"),
    # Realtime: the WebSocket is realtime.py's; these mint sessions and keys, or place calls
    Endpoint("POST", "/realtime/calls", REFUSED, WEBRTC_REFUSED),
    Endpoint("POST", "/realtime/calls/{call_id}/accept", SCANNED, "a SIP call's session: refused with an original"),
    Endpoint("POST", "/realtime/calls/{call_id}/hangup", SCANNED),
    Endpoint("POST", "/realtime/calls/{call_id}/refer", SCANNED),
    Endpoint("POST", "/realtime/calls/{call_id}/reject", SCANNED),
    Endpoint("POST", "/realtime/client_secrets", SCANNED, "session configuration: refused with an original"),
    Endpoint("POST", "/realtime/sessions", SCANNED),
    Endpoint("POST", "/realtime/transcription_sessions", SCANNED),
    Endpoint("POST", "/realtime/translations/client_secrets", SCANNED),
    # Media: prompts and inputs scanned; what comes back is media, passed as it came
    Endpoint("POST", "/audio/speech", BINARY, "text to speak: refused with an original"),
    Endpoint("POST", "/audio/transcriptions", SCANNED, "audio (and a prompt) in a form"),
    Endpoint("POST", "/audio/translations", SCANNED),
    Endpoint("GET POST", "/audio/voice_consents", SCANNED),
    Endpoint("GET POST DELETE", "/audio/voice_consents/{consent_id}", SCANNED),
    Endpoint("POST", "/audio/voices", SCANNED),
    Endpoint("POST", "/images/generations", BINARY, "a prompt: refused with an original"),
    Endpoint("POST", "/images/edits", BINARY),
    Endpoint("POST", "/images/variations", BINARY),
    Endpoint("GET POST", "/videos", SCANNED, "a prompt: refused with an original"),
    Endpoint("POST", "/videos/characters", SCANNED),
    Endpoint("GET", "/videos/characters/{character_id}", SCANNED),
    Endpoint("POST", "/videos/edits", SCANNED),
    Endpoint("POST", "/videos/extensions", SCANNED),
    Endpoint("GET DELETE", "/videos/{video_id}", SCANNED),
    Endpoint("GET", "/videos/{video_id}/content", BINARY),
    Endpoint("POST", "/videos/{video_id}/remix", SCANNED),
    Endpoint("POST", "/content_provenance_checks", SCANNED),
    # Models, fine-tuning, evals, skills, ChatKit: not transformed
    Endpoint("GET", "/models", SCANNED),
    Endpoint("GET DELETE", "/models/{model}", SCANNED),
    Endpoint("GET POST DELETE", "/fine_tuning/**", SCANNED, "training data is a file: refused with an original"),
    Endpoint("GET POST DELETE", "/evals/**", SCANNED, "prompts and test data: refused with an original"),
    Endpoint("GET POST DELETE", "/skills/**", SCANNED),
    Endpoint("GET POST DELETE", "/chatkit/**", SCANNED),
    # The administration API (an admin key): users, projects, keys, usage, costs
    Endpoint("GET POST DELETE", "/organization/**", HOSTED),
    Endpoint("GET POST DELETE", "/projects/**", HOSTED),
    # Called by `openai` SDKs newer than the OpenAPI document (tests/inventory/openai-sdk-*.json)
    Endpoint("POST", "/live/sessions", REFUSED, LIVE_REFUSED),
    Endpoint("GET POST", "/live/sessions/{session_id}/**", SCANNED, "a SIP call's session: refused with an original"),
    Endpoint("GET POST DELETE", "/agents/**", SCANNED, "instructions, a session's events: refused with an original"),
    Endpoint("POST", "/decisions", SCANNED, "input and questions: refused with an original"),
    Endpoint("DELETE", "/audio/voices/{voice_id}", SCANNED),
    Endpoint("GET", "/safety/**", HOSTED),
    Endpoint("GET POST DELETE", "/vaults/**", HOSTED),
    Endpoint("GET POST DELETE", "/webhook_endpoints/**", HOSTED),
    Endpoint("GET", "/webhook_event_types", HOSTED),
)
