"""End to end, Google side: the official google-genai SDK (Gemini API and Vertex AI
modes), raw HTTP for the streamed JSON array, and the anthropic SDK's AnthropicVertex
client -> mitmdump running the addon -> a fake upstream.

Nothing is mocked: a real `mitmdump` process in reverse mode, a real threaded HTTP/1.1
server that records what reached "the provider" and answers in small separate writes
re-cut at awkward offsets, and the real SDKs parsing what the client got.

No network and no Google account: the SDKs take a fake key or token. google-genai's
Vertex mode takes `credentials=google.oauth2.credentials.Credentials(token="...")`
(a token with no expiry is valid, so it is never refreshed); AnthropicVertex takes
`access_token="..."` (with it, google-auth is never asked for credentials).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator

import pytest

from integration_util import (
    MITMDUMP,
    Proxy,
    Recorded,
    Reply,
    cut,
    http_post,
    running_proxy,
    sse,
)

genai = pytest.importorskip("google.genai")
anthropic = pytest.importorskip("anthropic")
from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types  # noqa: E402
from google.oauth2.credentials import Credentials  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
STRIP_RX = r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"
WINQ = 'C:\\Users\\"acme"'  # backslashes and quotes: JSON-escaped wherever it lands
LITERALS = {"Acme Corp": "Zenith Labs", "session_id": "thread_id", "acme_lookup": "crm_lookup", WINQ: "WINPATH"}
MAPPINGS = {"literals": LITERALS, "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}], "strip": [{"regex": STRIP_RX}]}
BOB = "bob@corp.example.com"
ORIGINALS = [*LITERALS, BOB]
DISGUISES = [*LITERALS.values(), "[EMAIL_"]
PH = re.compile(r"\[EMAIL_[0-9]+\]")
# A thought signature as the SDK sends it back (base64 of bytes), containing a disguise
# and an original by chance: it must travel byte-identical both ways.
SIG_BYTES = b"\x12\x34signed Zenith Labs and Acme Corp\xff\xfe"
GEMINI = "/v1beta/models/{}:streamGenerateContent"


def placeholder_in(rec: Recorded) -> str:
    found = PH.findall(rec.body.decode("utf-8"))
    return found[0] if found else "[EMAIL_1]"


def assert_no_original(text: str, what: str, keep: tuple[str, ...] = ()) -> None:
    for k in keep:
        text = text.replace(k, "")
    for o in ORIGINALS:
        for form in (o, json.dumps(o)[1:-1]):
            assert form not in text, f"{o!r} reached upstream in {what}"


def assert_no_disguise(text: str, what: str) -> None:
    for d in DISGUISES:
        assert d not in text, f"{what} shows the disguise {d!r}: {text!r}"


def gemini_sse(chunks: list[dict]) -> list[bytes]:
    """Events as the API writes them: `data: ` + JSON with `": "` after keys, CRLF."""
    return [f"data: {json.dumps(c, separators=(',', ': '), ensure_ascii=False)}\r\n\r\n".encode() for c in chunks]


def text_chunk(text: str, finish: str | None = None, thought: bool = False, **part) -> dict:
    p: dict = {"text": text, **part}
    if thought:
        p["thought"] = True
    c: dict = {"content": {"parts": [p], "role": "model"}, "index": 0}
    if finish:
        c["finishReason"] = finish
    return {"candidates": [c], "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 12},
            "modelVersion": "gemini-2.5-flash", "responseId": "r-1"}


def call_chunk(name: str, args: dict, sig: str) -> dict:
    c = text_chunk("")
    c["candidates"][0]["content"]["parts"] = [{"functionCall": {"name": name, "args": args}, "thoughtSignature": sig}]
    return c


SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
JSON_HEADERS = {"Content-Type": "application/json; charset=UTF-8"}




@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-google"), MAPPINGS) as p:
        yield p


def _http_options(proxy: Proxy, api_version: str):
    return types.HttpOptions(base_url=proxy.base_url, api_version=api_version, client_args={"trust_env": False},
                             retry_options=types.HttpRetryOptions(attempts=1), timeout=20_000)  # fmt: skip


def gemini_client(proxy: Proxy):
    return genai.Client(api_key="test-key", http_options=_http_options(proxy, "v1beta"))


def vertex_client(proxy: Proxy):
    return genai.Client(vertexai=True, project="proj", location="us-central1",
                        credentials=Credentials(token="fake-token"), http_options=_http_options(proxy, "v1"))  # fmt: skip


# -- the main conversation: history with a signed function call, tools, a stream -----------

TOOLS = [{"function_declarations": [{
    "name": "acme_lookup",
    "description": "Look up an Acme Corp record by its session_id.",
    "parameters": {"type": "OBJECT", "properties": {
        "session_id": {"type": "STRING", "description": "the session_id"},
        "path": {"type": "STRING", "enum": [WINQ]}}, "required": ["session_id"]},
}]}]  # fmt: skip


def history() -> list:
    return [
        types.Content(role="user", parts=[types.Part(text=f"I work at Acme Corp; mail {BOB}; files in {WINQ}.")]),
        types.Content(role="model", parts=[
            types.Part(text="The user at Zenith Labs wants crm_lookup.", thought=True),
            types.Part(function_call=types.FunctionCall(name="acme_lookup", args={"session_id": "s-1", "path": WINQ}),
                       thought_signature=SIG_BYTES),
        ]),
        types.Content(role="user", parts=[
            types.Part.from_function_response(name="acme_lookup", response={"session_id": "s-1", "owner": BOB}),
            types.Part(text="Thanks. Once more for Acme Corp."),
        ]),
    ]  # fmt: skip


def main_chunks(ph: str) -> list[dict]:
    sig = "c2lnbmVkIGJ5IHRoZSBwcm92aWRlcg=="
    pieces = ["Hello from Zen", "ith La", "bs! Mail ", ph[:4], ph[4:], " today. [", "[reply_", "to_current",
              f"]] \"{'WIN'}", 'PATH" and Zen']  # fmt: skip
    return [
        text_chunk("Plan: ask Zenith Labs about thread_id via crm_lookup for [EMAIL_1].", thought=True),
        *[text_chunk(p) for p in pieces],
        call_chunk("crm_lookup", {"thread_id": "t-42 for Zenith Labs", "path": "WINPATH", "note": f'say "hi" to {ph}'},
                   sig),
        text_chunk("ith Labs", finish="STOP"),
    ]


def test_gemini_stream_through_the_sdk(proxy: Proxy) -> None:
    model = "gemini-main"

    def handler(rec: Recorded) -> Reply:
        return Reply(cut(gemini_sse(main_chunks(placeholder_in(rec))), seed=3), headers=SSE_HEADERS)

    proxy.upstream.on(GEMINI.format(model), handler)
    client = gemini_client(proxy)
    config = types.GenerateContentConfig(
        system_instruction="You are the assistant of Acme Corp.", tools=TOOLS,
        tool_config={"function_calling_config": {"mode": "AUTO"}},
        automatic_function_calling={"disable": True}, stop_sequences=["Acme Corp"],
    )  # fmt: skip
    chunks = list(client.models.generate_content_stream(model=model, contents=history(), config=config))

    rec = proxy.upstream.for_path(GEMINI.format(model) + "?alt=sse")[-1]
    up = rec.body.decode("utf-8")
    doc = json.loads(up)
    thought = "The user at Zenith Labs wants crm_lookup."
    assert_no_original(up, "the Gemini request")
    assert doc["systemInstruction"]["parts"][0]["text"] == "You are the assistant of Zenith Labs."
    c = doc["contents"]
    assert c[0]["parts"][0]["text"] == "I work at Zenith Labs; mail [EMAIL_1]; files in WINPATH."
    assert c[1]["parts"][0] == {"text": thought, "thought": True}
    fc = c[1]["parts"][1]
    assert fc["functionCall"] == {"name": "crm_lookup", "args": {"thread_id": "s-1", "path": "WINPATH"}}
    sent_sig = fc["thoughtSignature"]
    assert sent_sig == types.Part(thought_signature=SIG_BYTES).model_dump(mode="json")["thought_signature"]
    assert c[2]["parts"][0]["functionResponse"] == {"name": "crm_lookup",
                                                     "response": {"thread_id": "s-1", "owner": "[EMAIL_1]"}}
    fd = doc["tools"][0]["functionDeclarations"][0]
    assert fd["name"] == "crm_lookup" and fd["description"] == "Look up an Zenith Labs record by its thread_id."
    assert list(fd["parameters"]["properties"]) == ["thread_id", "path"]
    assert fd["parameters"]["properties"]["path"]["enum"] == ["WINPATH"]
    assert doc["generationConfig"]["stopSequences"] == ["Zenith Labs"]

    text = "".join(ch.text or "" for ch in chunks if ch.candidates and not _only_thoughts(ch))
    assert text == f'Hello from Acme Corp! Mail {BOB} today.  "{WINQ}" and Acme Corp'
    thoughts = [p.text for ch in chunks for p in ch.candidates[0].content.parts if p.thought]
    assert thoughts == ["Plan: ask Zenith Labs about thread_id via crm_lookup for [EMAIL_1]."]  # untouched
    calls = [fc for ch in chunks for fc in (ch.function_calls or [])]
    assert [(f.name, f.args) for f in calls] == [
        ("acme_lookup", {"session_id": "t-42 for Acme Corp", "path": WINQ, "note": f'say "hi" to {BOB}'})]
    sigs = [p.thought_signature for ch in chunks for p in ch.candidates[0].content.parts if p.thought_signature]
    assert sigs == [b"signed by the provider"]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    for ch in chunks:
        for p in ch.candidates[0].content.parts:
            if not p.thought and p.text:
                assert_no_disguise(p.text, "a text part")


def _grounded(ph: str) -> tuple[str, list[dict]]:
    """A grounded answer's text and chunks: the last chunk cites with UTF-8 byte offsets
    into the candidate's whole streamed text as the model wrote it (the placeholder, and
    "Zenith Labs" cut across chunks; the chunks after the placeholder hold nothing to
    restore: they pass unparsed, their text counted from their bytes)."""
    text = f"Zenith Labs (café ☕) mailed {ph}. It makes rockets, fast ones, \"quiet\" ones."
    pieces = ["Zen", "ith Labs (café", " ☕) mailed ", ph[:4], ph[4:] + ".", " It makes", " rockets,",
              " fast ones,", ' "quiet"', " ones."]  # fmt: skip
    assert "".join(pieces) == text
    n = lambda s: len(s.encode())  # noqa: E731
    at = text.index(ph)
    spans = [(0, n("Zenith Labs")), (n(text[:at]), n(text[:at] + ph + ".")), (n(text[: text.index("It")]), n(text))]
    chunks = [text_chunk(p) for p in pieces[:-1]] + [text_chunk(pieces[-1], "STOP")]
    chunks[-1]["candidates"][0]["groundingMetadata"] = {
        "groundingChunks": [{"web": {"uri": "https://news.example/", "title": "news"}}],
        "groundingSupports": [{"segment": {"startIndex": a, "endIndex": b, "text": text.encode()[a:b].decode()},
                               "groundingChunkIndices": [0]} for a, b in spans]}  # fmt: skip
    chunks[-1]["candidates"][0]["citationMetadata"] = {"citationSources": [{"startIndex": a, "endIndex": b}
                                                                           for a, b in spans]}  # fmt: skip
    return text, chunks


_GROUNDED = f'Acme Corp (café ☕) mailed {BOB}. It makes rockets, fast ones, "quiet" ones.'
_CITED = ["Acme Corp", f"{BOB}.", 'It makes rockets, fast ones, "quiet" ones.']


def test_gemini_streamed_grounding_points_into_the_restored_text(proxy: Proxy) -> None:
    """SSE through the SDK: the citations' offsets point into the text the client
    reassembles, however the stream was cut."""
    model = "gemini-grounded"
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(cut(gemini_sse(_grounded(placeholder_in(rec))[1]),
                                                                  seed=5), headers=SSE_HEADERS))  # fmt: skip
    client = gemini_client(proxy)
    chunks = list(client.models.generate_content_stream(model=model, contents=f"Acme Corp: {BOB}"))
    text = "".join(ch.text or "" for ch in chunks if ch.candidates)
    assert text == _GROUNDED
    (cand,) = [ch.candidates[0] for ch in chunks if ch.candidates[0].grounding_metadata]
    b = text.encode()
    sups = cand.grounding_metadata.grounding_supports
    assert [b[s.segment.start_index or 0 : s.segment.end_index].decode() for s in sups] == _CITED
    assert [s.segment.text for s in sups] == _CITED
    srcs = cand.citation_metadata.citations
    assert [b[c.start_index or 0 : c.end_index].decode() for c in srcs] == _CITED


def test_json_array_streamed_grounding_points_into_the_restored_text(proxy: Proxy) -> None:
    """The streamed JSON array (no alt=sse), its elements as the API pretty-prints them."""
    model = "gemini-grounded-array"
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(cut(array_pieces(_grounded(placeholder_in(rec))[1]),
                                                                  seed=7), headers=JSON_HEADERS))  # fmt: skip
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": f"Acme Corp {BOB}"}]}]}).encode()
    doc = json.loads(read_stream(proxy.port, GEMINI.format(model), body))
    text = "".join(p["text"] for c in doc for p in c["candidates"][0]["content"]["parts"])
    assert text == _GROUNDED
    cand = doc[-1]["candidates"][0]
    b = text.encode()
    for s in cand["groundingMetadata"]["groundingSupports"]:
        seg = s["segment"]
        assert b[seg.get("startIndex", 0) : seg["endIndex"]].decode() == seg["text"]
    assert [b[c.get("startIndex", 0) : c["endIndex"]].decode() for c in cand["citationMetadata"]["citationSources"]
            ] == _CITED  # fmt: skip


def _only_thoughts(ch) -> bool:
    return all(p.thought for p in ch.candidates[0].content.parts)


def test_gemini_whole_response_and_count_tokens(proxy: Proxy) -> None:
    model = "gemini-whole"
    body = {"candidates": [{"content": {"parts": [
        {"text": "thinking of Zenith Labs", "thought": True},
        {"text": "Zenith Labs owns [EMAIL_1]. [[reply_to_current]]"},
        {"functionCall": {"name": "crm_lookup", "args": {"thread_id": "WINPATH"}}}], "role": "model"},
        "finishReason": "STOP", "index": 0}], "modelVersion": "gemini-2.5-flash"}  # fmt: skip
    # a grounding support counts UTF-8 bytes of the part it names, as the model wrote it
    cited = "[EMAIL_1]."
    at = len("Zenith Labs owns ")
    body["candidates"][0]["groundingMetadata"] = {
        "groundingChunks": [{"web": {"uri": "https://news.example/", "title": "news"}}],
        "groundingSupports": [{"segment": {"partIndex": 1, "startIndex": at, "endIndex": at + len(cited), "text": cited},
                               "groundingChunkIndices": [0]}]}  # fmt: skip
    proxy.upstream.on(f"/v1beta/models/{model}:generateContent",
                      lambda rec: Reply([json.dumps(body, indent=2).encode()], headers=JSON_HEADERS, framing="length"))
    proxy.upstream.on(f"/v1beta/models/{model}:countTokens",
                      lambda rec: Reply([b'{"totalTokens": 7}'], headers=JSON_HEADERS, framing="length"))
    client = gemini_client(proxy)
    got = client.models.generate_content(model=model, contents=f"Acme Corp: {BOB}")
    parts = got.candidates[0].content.parts
    assert parts[0].text == "thinking of Zenith Labs"
    assert parts[1].text == f"Acme Corp owns {BOB}. "
    assert parts[2].function_call.name == "acme_lookup" and parts[2].function_call.args == {"session_id": WINQ}
    seg = got.candidates[0].grounding_metadata.grounding_supports[0].segment
    assert seg.text == f"{BOB}." == parts[1].text.encode()[seg.start_index : seg.end_index].decode()
    n = client.models.count_tokens(model=model, contents=f"Acme Corp: {BOB}")
    assert n.total_tokens == 7
    for path in ("generateContent", "countTokens"):
        rec = proxy.upstream.for_path(f"/v1beta/models/{model}:{path}")[-1]
        assert_no_original(rec.body.decode(), path)
        assert "Zenith Labs: [EMAIL_1]" in rec.body.decode()


def test_tts_speakers_meet_their_voices_through_the_sdk(proxy: Proxy) -> None:
    model = "gemini-tts"
    proxy.upstream.on(f"/v1beta/models/{model}:generateContent",
                      lambda rec: Reply([b'{"candidates": []}'], headers=JSON_HEADERS, framing="length"))
    speakers = [types.SpeakerVoiceConfig(speaker=name, voice_config=types.VoiceConfig(
        prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=voice))) for name, voice in (("Acme Corp", "Kore"),
                                                                                                  ("Jane", "Puck"))]
    config = types.GenerateContentConfig(response_modalities=["AUDIO"], speech_config=types.SpeechConfig(
        multi_speaker_voice_config=types.MultiSpeakerVoiceConfig(speaker_voice_configs=speakers)))
    client = gemini_client(proxy)
    client.models.generate_content(model=model, contents="Acme Corp: hi Jane.\nJane: hi.", config=config)
    up = proxy.upstream.for_path(f"/v1beta/models/{model}:generateContent")[-1].body.decode()
    assert_no_original(up, "the TTS request")
    doc = json.loads(up)
    assert doc["contents"][0]["parts"][0]["text"] == "Zenith Labs: hi Jane.\nJane: hi."
    # (google-genai spells what is inside speechConfig the proto way)
    got = doc["generationConfig"]["speechConfig"]["multi_speaker_voice_config"]["speaker_voice_configs"]
    assert [(s["speaker"], s["voice_config"]["prebuilt_voice_config"]["voice_name"]) for s in got] == [
        ("Zenith Labs", "Kore"), ("Jane", "Puck")]


def _upload_reply(base_url: str, rec: Recorded) -> Reply:
    """Google's resumable upload, as the Files API answers it."""
    command = rec.headers.get("x-goog-upload-command", "")
    if command == "start":
        url = base_url.rstrip("/") + "/upload/v1beta/files?upload_id=UP1&upload_protocol=resumable"
        return Reply([b""], headers={"x-goog-upload-url": url, "x-goog-upload-status": "active"}, framing="length")
    if "finalize" not in command:
        return Reply([b""], headers={"x-goog-upload-status": "active"}, framing="length")
    file = {"file": {"name": "files/abc", "mimeType": "text/plain", "sizeBytes": str(len(rec.body)), "state": "ACTIVE"}}
    return Reply([json.dumps(file).encode()], headers={**JSON_HEADERS, "x-goog-upload-status": "final"},
                 framing="length")


def test_a_resumable_upload_in_chunks_is_refused_a_whole_one_is_scanned(
    proxy: Proxy, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # google-genai sends a file over 8 MiB in 8 MiB chunks: an original cut by the boundary
    # would leave as two clean halves, so the first chunk is refused and nothing of the file
    # leaves. (Chunks of 64 KiB here: the same requests, smaller.)
    from google.genai import _api_client

    chunk = 64 * 1024
    monkeypatch.setattr(_api_client, "CHUNK_SIZE", chunk)
    proxy.upstream.on("/upload/v1beta/files", lambda rec: _upload_reply(proxy.base_url, rec))
    client = gemini_client(proxy)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (chunk - 4) + b"Acme Corp is the customer.\n")
    with pytest.raises(genai_errors.ClientError) as exc:
        client.files.upload(file=str(big), config={"mime_type": "text/plain"})
    assert "a chunk of a resumable upload" in str(exc.value)
    assert not [r for r in proxy.upstream.for_path("/upload/v1beta/files?upload_id=UP1&upload_protocol=resumable")]
    small = tmp_path / "small.txt"
    small.write_bytes(b"nothing secret here\n")
    got = client.files.upload(file=str(small), config={"mime_type": "text/plain"})
    assert got.name == "files/abc"
    (sent,) = proxy.upstream.for_path("/upload/v1beta/files?upload_id=UP1&upload_protocol=resumable")
    assert sent.headers["x-goog-upload-command"] == "upload, finalize" and sent.body == small.read_bytes()


def test_embeddings_through_the_sdk(proxy: Proxy) -> None:
    """google-genai's embed_content: the Gemini API's :batchEmbedContents, Vertex's :predict
    (text-embedding-005) and :embedContent (a Gemini embedding model). The texts and titles
    go out masked (they were refused: the path was unknown, and the whole body scanned),
    and the SDK reads the vectors as the API sent them."""
    vertex_base = "/v1/projects/proj/locations/us-central1/publishers/google/models/"
    vec = [0.25, -0.5, 1.0]
    answers = {
        "/v1beta/models/gemini-embedding-001:batchEmbedContents": {"embeddings": [{"values": vec}, {"values": vec}]},
        vertex_base + "text-embedding-005:predict": {"predictions": [
            {"embeddings": {"values": vec, "statistics": {"truncated": False, "token_count": 4}}}] * 2,
            "metadata": {"billableCharacterCount": 30}},
        vertex_base + "gemini-embedding-2:embedContent": {"embedding": {"values": vec},
                                                          "usageMetadata": {"promptTokenCount": 4}},
    }  # fmt: skip
    for path, body in answers.items():
        proxy.upstream.on(path, lambda rec, b=body: Reply([json.dumps(b).encode()], headers=JSON_HEADERS,
                                                          framing="length"))  # fmt: skip
    texts = [f"Acme Corp pays {BOB}", "what does acme_lookup do"]
    config = types.EmbedContentConfig(title="Acme Corp handbook", task_type="RETRIEVAL_DOCUMENT")
    n = len(proxy.upstream.requests)
    gemini, vertex = gemini_client(proxy), vertex_client(proxy)  # held: a client collected closes its connections
    got = [gemini.models.embed_content(model="gemini-embedding-001", contents=texts, config=config)]
    got.append(vertex.models.embed_content(model="text-embedding-005", contents=texts, config=config))
    got.append(vertex.models.embed_content(model="gemini-embedding-2", contents=texts[0],
                                           config=types.EmbedContentConfig(title="Acme Corp handbook")))  # fmt: skip
    assert [[e.values for e in g.embeddings] for g in got] == [[vec, vec], [vec, vec], [vec]]
    sent = proxy.upstream.requests[n:]
    assert [r.path for r in sent] == list(answers)
    for rec in sent:
        body = rec.body.decode()
        assert_no_original(body, rec.path)
        assert "Zenith Labs" in body and "Zenith Labs handbook" in body
    batch, predict, embed = (json.loads(r.body) for r in sent)
    assert [q["content"]["parts"][0]["text"] for q in batch["requests"]] == [
        f"Zenith Labs pays {placeholder_in(sent[0])}", "what does crm_lookup do"]
    assert [i["content"] for i in predict["instances"]] == [
        f"Zenith Labs pays {placeholder_in(sent[1])}", "what does crm_lookup do"]
    assert embed["content"]["parts"][0]["text"].startswith("Zenith Labs pays [EMAIL_")


def test_batch_mode_through_the_sdk(proxy: Proxy) -> None:
    """google-genai's batches.create with inline requests (:batchGenerateContent) and
    batches.get (GET batches/{id}): each request masked as generateContent's, its
    metadata (the client's key for the result) too; the operation read back carries the
    responses restored, the metadata with them. (The create was an unknown endpoint:
    refused whenever a request held an original.)"""
    model = "gemini-batch"
    op = {"name": "batches/b-1", "metadata": {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        "model": f"models/{model}", "displayName": "Zenith Labs nightly", "state": "BATCH_STATE_PENDING",
        "name": "batches/b-1"}}  # fmt: skip

    def created(rec: Recorded) -> Reply:
        return Reply([json.dumps(op).encode()], headers=JSON_HEADERS, framing="length")

    def read(rec: Recorded) -> Reply:
        sent = json.loads(proxy.upstream.for_path(f"/v1beta/models/{model}:batchGenerateContent")[-1].body)
        reqs = sent["batch"]["inputConfig"]["requests"]["requests"]
        done = {**op, "done": True, "metadata": {**op["metadata"], "state": "BATCH_STATE_SUCCEEDED", "output": {
            "inlinedResponses": {"inlinedResponses": [{"metadata": r["metadata"], "response": {"candidates": [
                {"content": {"role": "model", "parts": [{"text": f"Done for Zenith Labs ({n})"}]},
                 "finishReason": "STOP"}]}} for n, r in enumerate(reqs)]}}}}  # fmt: skip
        return Reply([json.dumps(done).encode()], headers=JSON_HEADERS, framing="length")

    proxy.upstream.on(f"/v1beta/models/{model}:batchGenerateContent", created)
    proxy.upstream.on("/v1beta/batches/b-1", read)
    client = gemini_client(proxy)
    src = [types.InlinedRequest(contents=f"Write to {BOB} at Acme Corp", metadata={"key": "Acme Corp-1"}),
           types.InlinedRequest(contents="Summarise acme_lookup", metadata={"key": "r-2"},
                                config=types.GenerateContentConfig(system_instruction="You serve Acme Corp."))]  # fmt: skip
    job = client.batches.create(model=model, src=src, config={"display_name": "Acme Corp nightly"})
    assert job.name == "batches/b-1" and job.display_name == "Acme Corp nightly"
    rec = proxy.upstream.for_path(f"/v1beta/models/{model}:batchGenerateContent")[-1]
    assert_no_original(rec.body.decode(), "the batch")
    batch = json.loads(rec.body)["batch"]
    assert batch["displayName"] == "Zenith Labs nightly"
    r1, r2 = batch["inputConfig"]["requests"]["requests"]
    assert r1["request"]["contents"][0]["parts"][0]["text"] == f"Write to {placeholder_in(rec)} at Zenith Labs"
    assert (r1["metadata"], r2["metadata"]) == ({"key": "Zenith Labs-1"}, {"key": "r-2"})
    assert r2["request"]["systemInstruction"]["parts"][0]["text"] == "You serve Zenith Labs."
    got = client.batches.get(name="batches/b-1")
    assert [(r.metadata, r.response.text) for r in got.dest.inlined_responses] == [
        ({"key": "Acme Corp-1"}, "Done for Acme Corp (0)"), ({"key": "r-2"}, "Done for Acme Corp (1)")]


def test_vertex_gemini_stream_through_the_sdk(proxy: Proxy) -> None:
    model = "gemini-vertex"
    path = f"/v1/projects/proj/locations/us-central1/publishers/google/models/{model}:streamGenerateContent"

    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        chunks = [text_chunk("Zen"), text_chunk("ith Labs mails "), text_chunk(ph[:3]), text_chunk(ph[3:] + " nova"),
                  text_chunk("", finish="STOP")]  # fmt: skip
        return Reply(cut(gemini_sse(chunks), seed=5), headers=SSE_HEADERS)

    proxy.upstream.on(path, handler)
    client = vertex_client(proxy)
    chunks = list(client.models.generate_content_stream(model=model, contents=f"Acme Corp and {BOB}"))
    rec = proxy.upstream.for_path(path + "?alt=sse")[-1]
    assert rec.headers["authorization"] == "Bearer fake-token"
    assert json.loads(rec.body)["contents"][0]["parts"][0]["text"] == "Zenith Labs and [EMAIL_1]"
    assert "".join(c.text or "" for c in chunks) == f"Acme Corp mails {BOB} nova"


def test_vertex_streamed_function_call_arguments_through_the_sdk(proxy: Proxy) -> None:
    """streamFunctionCallArguments: a call's string arguments in `partialArgs` pieces, a
    disguise cut between two chunks (and two reads); the SDK's user joins the pieces per
    jsonPath and gets the originals."""
    model = "gemini-vertex-partial"
    path = f"/v1/projects/proj/locations/us-central1/publishers/google/models/{model}:streamGenerateContent"

    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)

        def piece(p: str, s: str, more: bool = True) -> dict:
            c = text_chunk("")
            part = {"partialArgs": [{"jsonPath": p, "stringValue": s, "willContinue": more}], "willContinue": True}
            c["candidates"][0]["content"]["parts"] = [{"functionCall": part}]
            return c

        first = text_chunk("")
        first["candidates"][0]["content"]["parts"] = [
            {"functionCall": {"name": "crm_lookup", "id": "call-1", "willContinue": True}, "thoughtSignature": "c2ln"}]
        last = text_chunk("", finish="STOP")
        last["candidates"][0]["content"]["parts"] = [{"functionCall": {}}]
        chunks = [first, piece("$.thread_id", "t-42 for Zen"), piece("$.note", "mail " + ph[:4]),
                  piece("$.thread_id", "ith Labs in WIN"), piece("$.note", ph[4:] + " at Zen", more=False),
                  piece("$.thread_id", "PATH"), last]  # fmt: skip
        return Reply(cut(gemini_sse(chunks), seed=7), headers=SSE_HEADERS)

    proxy.upstream.on(path, handler)
    config = types.GenerateContentConfig(
        tools=TOOLS, automatic_function_calling={"disable": True},
        tool_config={"function_calling_config": {"mode": "AUTO", "stream_function_call_arguments": True}},
    )  # fmt: skip
    client = vertex_client(proxy)  # kept: the stream reads through it
    chunks = list(client.models.generate_content_stream(model=model, contents=f"Acme Corp and {BOB}", config=config))
    rec = proxy.upstream.for_path(path + "?alt=sse")[-1]
    assert_no_original(rec.body.decode(), "the Vertex request")
    fcc = json.loads(rec.body)["toolConfig"]["functionCallingConfig"]  # the SDK writes the proto field name
    assert fcc.get("streamFunctionCallArguments", fcc.get("stream_function_call_arguments")) is True
    args: dict = {}
    names = []
    for ch in chunks:
        for p in ch.candidates[0].content.parts or ():
            if p.function_call is None:
                continue
            names += [p.function_call.name] if p.function_call.name else []
            for a in p.function_call.partial_args or ():
                args[a.json_path] = args.get(a.json_path, "") + (a.string_value or "")
    assert names == ["acme_lookup"]
    assert args == {"$.session_id": f"t-42 for Acme Corp in {WINQ}", "$.note": f"mail {BOB} at Zen"}
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_stream_ending_without_finish_is_an_error_in_the_sdk(proxy: Proxy, framing: str) -> None:
    # upstream ends the body cleanly, but before the chunk with the finishReason
    model = f"gemini-cut-{framing}"
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(
        gemini_sse([text_chunk("Hello Zen"), text_chunk("ith")]), headers=SSE_HEADERS, framing=framing))
    client = gemini_client(proxy)
    got = []
    with pytest.raises(genai_errors.APIError) as exc:
        for ch in client.models.generate_content_stream(model=model, contents="hi"):
            got.append(ch.text)
    assert "".join(got) == "Hello Zenith"  # the held tail arrived before the error
    assert exc.value.code == 500 and "cut short" in exc.value.message


def test_network_cut_ends_with_the_error_event_without_disguises(proxy: Proxy) -> None:
    # upstream aborts: what was held, then the explicit error event (contract §4; the
    # SDK raises it), then the client's connection is cut too: never a clean end
    model = "gemini-abort"
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(
        gemini_sse([text_chunk("Hello Zenith Labs, hello Zen")]), headers=SSE_HEADERS, abort=True))
    client = gemini_client(proxy)
    got = []
    with pytest.raises(genai_errors.ServerError) as exc:
        for ch in client.models.generate_content_stream(model=model, contents="hi"):
            got.append(ch.text)
    assert "disguise: the stream ended before its last chunk" in str(exc.value)
    assert "".join(got) == "Hello Acme Corp, hello Zen"


def test_upstream_error_body_on_an_sse_request_is_restored(proxy: Proxy) -> None:
    model = "gemini-error"
    err = {"error": {"code": 400, "message": "Zenith Labs: bad thread_id for [EMAIL_1]", "status": "INVALID_ARGUMENT"}}
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(
        [json.dumps(err, indent=2).encode()], status=400, headers=SSE_HEADERS, framing="length"))
    client = gemini_client(proxy)
    with pytest.raises(genai_errors.ClientError) as exc:
        list(client.models.generate_content_stream(model=model, contents=f"mail {BOB}"))
    assert exc.value.code == 400
    assert exc.value.message == f"Acme Corp: bad session_id for {BOB}"


def test_unmaskable_request_is_refused_in_googles_shape(proxy: Proxy) -> None:
    n = len(proxy.upstream.requests)
    status, headers, data = http_post(proxy.port, "/v1beta/models/x:generateContent",
                                      b'{"contents": [{"parts": [{"text": "Acme Corp"}]}]')
    assert status == 400 and headers["content-type"].startswith("application/json")
    err = json.loads(data)["error"]
    assert err["code"] == 400 and err["status"] == "INVALID_ARGUMENT" and "disguise" in err["message"]
    assert "Acme Corp" not in err["message"]
    assert len(proxy.upstream.requests) == n


# -- the streamed JSON array (no alt=sse): raw HTTP --------------------------------------------


def array_pieces(chunks: list[dict]) -> list[bytes]:
    """As the API writes it: `[{` ... `}\\n` then `,\\r\\n{` ... and a final `]`."""
    bodies = [json.dumps(c, indent=2, ensure_ascii=False) for c in chunks]
    out = [b"[" + bodies[0].encode() + b"\n"]
    out += [b",\r\n" + b.encode() + b"\n" for b in bodies[1:]]
    return out + [b"]"]


def read_stream(port: int, path: str, body: bytes, until: bytes | None = None,
                gate: threading.Event | None = None) -> bytes:
    """POST and read the response as it comes; with until, set gate once those bytes are
    in (the upstream waits on gate: the first bytes must arrive before the last are sent)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request("POST", path, body=body, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        got = b""
        while True:
            piece = resp.read1(65536)
            if not piece:
                break
            got += piece
            if until is not None and gate is not None and until in got:
                gate.set()
        return got
    finally:
        conn.close()


def code_assist_events(raw: bytes) -> list[dict]:
    """gemini-cli's reading of a Code Assist stream (code_assist/server.ts,
    requestStreamingPost): `data: ` lines gathered, a blank line ends an event, each event
    JSON.parse'd, then converter.ts's fromGenerateContentResponse: the event's `response`
    (an event without one is a response without candidates)."""
    out, lines = [], []
    for line in raw.decode("utf-8").replace("\r\n", "\n").split("\n"):
        if line.startswith("data: "):
            lines.append(line[6:].strip())
        elif line == "" and lines:
            out.append(json.loads("\n".join(lines)))
            lines = []
    return out


def test_gemini_cli_logged_in_with_google_through_code_assist(proxy: Proxy) -> None:
    """Gemini CLI with a Google login talks to cloudcode-pa.googleapis.com/v1internal: the
    generate methods carry Gemini's bodies in a wrapper. Its stream (every disguise split
    across events and reads) comes back restored, every event still wrapped, the held
    tail too; its OAuth token in Authorization is its own credential, not a leak; the
    whole answer and countTokens are read the same way. (The path was an unknown
    endpoint: every prompt holding an original was refused.)"""
    trace = "trace-ca-1"

    def stream(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        chunks = [text_chunk("thinking of Zenith Labs", thought=True), text_chunk("Hello Zen"),
                  text_chunk(f"ith Labs, mail {ph[:4]}"), text_chunk(f"{ph[4:]} via crm_loo"),
                  text_chunk("kup and Zen", finish="STOP")]  # fmt: skip
        return Reply(cut(gemini_sse([{"response": c, "traceId": trace} for c in chunks]), seed=5), headers=SSE_HEADERS)

    def whole(rec: Recorded) -> Reply:
        body = {"response": text_chunk("Zenith Labs answered", finish="STOP"), "traceId": trace}
        return Reply([json.dumps(body).encode()], headers=JSON_HEADERS, framing="length")

    proxy.upstream.on("/v1internal:streamGenerateContent", stream)
    proxy.upstream.on("/v1internal:generateContent", whole)
    proxy.upstream.on("/v1internal:countTokens", lambda rec: Reply([b'{"totalTokens": 9}'], headers=JSON_HEADERS,
                                                                   framing="length"))  # fmt: skip
    token = "ya29.a0AfB_byC" + "x" * 120  # an OAuth access token, as google-auth-library sends it
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    request = {"model": "gemini-2.5-pro", "project": "proj-7", "user_prompt_id": "p-1", "request": {
        "contents": [{"role": "user", "parts": [{"text": f"I am {BOB} at Acme Corp; use acme_lookup"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You help Acme Corp."}]},
        "tools": [{"functionDeclarations": TOOLS[0]["function_declarations"]}], "session_id": "s-1"}}  # fmt: skip
    got = {}
    for method in ("streamGenerateContent?alt=sse", "generateContent", "countTokens"):
        conn = http.client.HTTPConnection("127.0.0.1", proxy.mitm.port, timeout=20)
        try:
            body = request if method != "countTokens" else {"request": {"model": "models/gemini-2.5-pro",
                                                                        "contents": request["request"]["contents"]}}
            conn.request("POST", f"/v1internal:{method}", body=json.dumps(body).encode(), headers=headers)
            resp = conn.getresponse()
            got[method.split("?")[0]] = (resp.status, resp.read())
        finally:
            conn.close()
    for path in ("/v1internal:streamGenerateContent?alt=sse", "/v1internal:generateContent", "/v1internal:countTokens"):
        rec = proxy.upstream.for_path(path)[-1]
        assert rec.headers["authorization"] == f"Bearer {token}"  # its own slot: as it came
        assert_no_original(rec.body.decode(), path, keep=('"session_id": "s-1"',))  # the API's own member name
    sent = json.loads(proxy.upstream.for_path("/v1internal:streamGenerateContent?alt=sse")[-1].body)
    assert sent["request"]["contents"][0]["parts"][0]["text"].endswith("at Zenith Labs; use crm_lookup")
    assert (sent["project"], sent["request"]["session_id"]) == ("proj-7", "s-1")
    status, raw = got["streamGenerateContent"]
    events = code_assist_events(raw)
    assert status == 200 and all(set(e) == {"response", "traceId"} or set(e) == {"response"} for e in events), events
    parts = [p for e in events for c in e["response"].get("candidates", []) for p in c["content"]["parts"]]
    assert "".join(p["text"] for p in parts if not p.get("thought")) == (
        f"Hello Acme Corp, mail {BOB} via acme_lookup and Zen")  # fmt: skip
    assert [p["text"] for p in parts if p.get("thought")] == ["thinking of Zenith Labs"]  # as it came
    assert events[0]["traceId"] == trace
    status, raw = got["generateContent"]
    assert status == 200 and json.loads(raw)["response"]["candidates"][0]["content"]["parts"][0]["text"] == (
        "Acme Corp answered")  # fmt: skip
    assert got["countTokens"] == (200, b'{"totalTokens": 9}')


def test_json_array_stream_is_restored_and_streamed(proxy: Proxy) -> None:
    model = "gemini-array"
    gate = threading.Event()

    def handler(rec: Recorded) -> Reply:
        ph = placeholder_in(rec)
        chunks = [text_chunk("thinking of Zenith Labs", thought=True), text_chunk("Hello Zen"),
                  text_chunk("ith Labs, mail " + ph[:5]), text_chunk(ph[5:] + ' "WIN'),
                  text_chunk('PATH" [[reply_to_current]] and Zen', finish="STOP")]  # fmt: skip
        pieces = cut(array_pieces(chunks), seed=11)

        def gen() -> Iterator[bytes]:
            for i, p in enumerate(pieces):
                if i == len(pieces) - 1:
                    assert gate.wait(15), "the client never got the first chunk: the stream was buffered"
                yield p

        return Reply(gen(), headers=JSON_HEADERS)

    proxy.upstream.on(GEMINI.format(model), handler)
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": f"Acme Corp {BOB}"}]}]}).encode()
    out = read_stream(proxy.port, GEMINI.format(model), body, until=b"Hello ", gate=gate)
    doc = json.loads(out)  # one valid JSON array
    assert isinstance(doc, list) and len(doc) == 5
    texts = [p["text"] for c in doc for p in c["candidates"][0]["content"]["parts"]]
    assert texts[0] == "thinking of Zenith Labs"
    assert "".join(texts[1:]) == f'Hello Acme Corp, mail {BOB} "{WINQ}"  and Zen'
    assert doc[-1]["candidates"][0]["finishReason"] == "STOP"
    rec = proxy.upstream.for_path(GEMINI.format(model))[-1]
    assert_no_original(rec.body.decode(), "the array request")


def test_json_array_cut_short_ends_with_an_error_element(proxy: Proxy) -> None:
    model = "gemini-array-cut"
    pieces = array_pieces([text_chunk("Hello Zen"), text_chunk("ith Labs and more")])
    # upstream ends the body cleanly in the middle of the second element
    proxy.upstream.on(GEMINI.format(model), lambda rec: Reply(pieces[:1] + [pieces[1][:30]], headers=JSON_HEADERS))
    body = json.dumps({"contents": [{"parts": [{"text": "hi"}]}]}).encode()
    out = read_stream(proxy.port, GEMINI.format(model), body)
    doc = json.loads(out)
    assert doc[0]["candidates"][0]["content"]["parts"][0]["text"] == "Hello "
    assert doc[1]["candidates"][0]["content"]["parts"][0]["text"] == "Zen"  # the held tail
    assert doc[-1]["error"]["code"] == 500 and "cut short" in doc[-1]["error"]["message"]


# -- Claude on Vertex ---------------------------------------------------------------------------

VERTEX_CLAUDE = "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/{}:{}"


def anthropic_vertex(proxy: Proxy, sent: list[bytes] | None = None):
    """AnthropicVertex pointed at the proxy; sent collects the bodies it sends."""
    hooks = {"request": [lambda req: sent.append(req.read())]} if sent is not None else {}
    http_client = anthropic.DefaultHttpxClient(trust_env=False, event_hooks=hooks)
    return anthropic.AnthropicVertex(region="us-east5", project_id="proj", access_token="fake-token",
                                     base_url=proxy.base_url + "/v1", max_retries=0, timeout=20.0,
                                     http_client=http_client)  # fmt: skip


def claude_events(ph: str) -> list[bytes]:
    msg = {"id": "msg_v", "type": "message", "role": "assistant", "model": "claude-v", "content": [],
           "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    return [
        sse({"type": "message_start", "message": msg}),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *[sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
          for t in ["Hi from Zen", "ith Labs, ", ph[:3], ph[3:], " nova"]],
        sse({"type": "content_block_stop", "index": 0}),
        sse({"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "crm_lookup", "input": {}}}),
        *[sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}})
          for p in ['{"thr', 'ead_id": "WIN', 'PATH"}']],
        sse({"type": "content_block_stop", "index": 1}),
        sse({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 9}}),
        sse({"type": "message_stop"}),
    ]  # fmt: skip


def test_claude_on_vertex_stream_through_anthropic_vertex(proxy: Proxy) -> None:
    model = "claude-v@20250101"
    path = VERTEX_CLAUDE.format("claude-v@20250101", "streamRawPredict")

    def handler(rec: Recorded) -> Reply:
        return Reply(cut(claude_events(placeholder_in(rec)), seed=7), headers=SSE_HEADERS)

    for p in (path, path.replace("@", "%40")):
        proxy.upstream.on(p, handler)
    tools = [{"name": "acme_lookup", "description": "Acme Corp CRM",
              "input_schema": {"type": "object", "properties": {"session_id": {"type": "string"}}}}]
    sent: list[bytes] = []
    with anthropic_vertex(proxy, sent) as client, client.messages.stream(
        model=model, max_tokens=100, system="You serve Acme Corp.", tools=tools,
        messages=[{"role": "user", "content": f"Mail {BOB} at Acme Corp"}],
    ) as stream:  # fmt: skip
        final = stream.get_final_message()
    rec = [r for r in proxy.upstream.requests if ":streamRawPredict" in r.path][-1]
    assert rec.path.startswith("/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-v")
    assert rec.headers["authorization"] == "Bearer fake-token"
    doc = rec.json
    assert "model" not in doc and doc["anthropic_version"] == json.loads(sent[-1])["anthropic_version"]  # untouched
    assert doc["system"] == "You serve Zenith Labs." and doc["messages"][0]["content"] == "Mail [EMAIL_1] at Zenith Labs"
    assert doc["tools"][0]["name"] == "crm_lookup" and list(doc["tools"][0]["input_schema"]["properties"]) == ["thread_id"]
    assert_no_original(rec.body.decode(), "the Claude-on-Vertex request")
    assert final.content[0].text == f"Hi from Acme Corp, {BOB} nova"
    assert final.content[1].name == "acme_lookup" and final.content[1].input == {"session_id": WINQ}


def test_claude_on_vertex_whole_message_and_count_tokens(proxy: Proxy) -> None:
    path = VERTEX_CLAUDE.format("claude-w", "rawPredict")
    proxy.upstream.on(path, lambda rec: Reply([json.dumps({
        "id": "msg_w", "type": "message", "role": "assistant", "model": "claude-w", "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": f"Zenith Labs has {placeholder_in(rec)}"}]}).encode()],
        headers=JSON_HEADERS, framing="length"))  # fmt: skip
    count = VERTEX_CLAUDE.format("count-tokens", "rawPredict")
    proxy.upstream.on(count, lambda rec: Reply([b'{"input_tokens": 11}'], headers=JSON_HEADERS, framing="length"))
    with anthropic_vertex(proxy) as client:
        msg = client.messages.create(model="claude-w", max_tokens=10,
                                     messages=[{"role": "user", "content": f"Acme Corp {BOB}"}])
        n = client.messages.count_tokens(model="claude-w", messages=[{"role": "user", "content": f"Acme Corp {BOB}"}])
    assert msg.content[0].text == f"Acme Corp has {BOB}"
    assert n.input_tokens == 11
    for p in (path, count):
        rec = proxy.upstream.for_path(p)[-1]
        assert_no_original(rec.body.decode(), p)
        assert "Zenith Labs [EMAIL_1]" in rec.body.decode()


# -- Bedrock, and the log -------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["invoke", "invoke-with-response-stream", "converse", "converse-stream"])
def test_bedrock_is_refused_and_says_why(proxy: Proxy, op: str) -> None:
    n = len(proxy.upstream.requests)
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10,
                       "messages": [{"role": "user", "content": f"Acme Corp {BOB}"}]}).encode()
    status, headers, data = http_post(proxy.port, f"/model/anthropic.claude-3-haiku-20240307-v1%3A0/{op}", body,
                                      {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/x, Signature=ab"})
    assert status == 400
    err = json.loads(data)
    assert "SigV4" in err["message"] and "not forwarded" in err["message"]
    assert len(proxy.upstream.requests) == n


def test_log_holds_no_originals_and_no_addon_errors(proxy: Proxy) -> None:
    test_gemini_whole_response_and_count_tokens(proxy)
    out = proxy.mitm.output
    assert ":generateContent" in out
    for orig in ORIGINALS:
        assert orig not in out, f"{orig!r} in the mitmdump log"
    for bad in ("Traceback", "Addon error", "has crashed", "internal error"):
        assert bad not in out, f"{bad!r} in the mitmdump log:\n{out}"
