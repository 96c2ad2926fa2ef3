"""Request masking for the Gemini API and Vertex AI; routes; Bedrock refused."""

from __future__ import annotations

import json

import pytest
from google_util import GEMINI_FIXTURES

from disguiselib.apis import registry as engine
from disguiselib.apis.bedrock import runtime as bedrock
from disguiselib.apis.google.gemini import GENERATE_REQUEST
from disguiselib.base.masking import mask_body
from strategies import RULES

EMAIL = "bob@corp.example.com"
# base64 that contains an original: it must still go out as it came
SIG = "CikB0e2Kbw5tJ9dwYB9mAcme Corp1I9W28H1Pvbhg7iFnlQJMZT9ndxhy_OJBT3V9QptAdH=="
PNG = "iVBORw0KGgoAAAANSUhEUgAcme Corpbob@corp.example.com=="


def mask(doc, rule=GENERATE_REQUEST):
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    out, session = mask_body(raw, rule, RULES)
    return json.loads(out), session.placeholders, out


def request(camel: bool = True) -> dict:
    """A request using every field the issue lists; camel=False spells the fields the
    proto way (system_instruction, function_call, ...), which the API accepts too."""
    def k(name: str) -> str:
        if camel:
            return name
        return "".join("_" + c.lower() if c.isupper() else c for c in name)

    return {
        "contents": [
            {"role": "user", "parts": [
                {"text": f"I work at Acme Corp, mail {EMAIL}"},
                {k("inlineData"): {k("mimeType"): "image/png", "data": PNG}},
                {k("fileData"): {k("mimeType"): "application/pdf", k("fileUri"): "https://x/files/Acme Corp.pdf"}},
            ]},
            {"role": "model", "parts": [
                {"text": "Thinking about Acme Corp", "thought": True, k("thoughtSignature"): SIG},
                {k("functionCall"): {"name": "acme_lookup", "args": {"session_id": "Acme Corp", "n": 1.0e3,
                                                                       "deep": [{"session_id": EMAIL}]}},
                 k("thoughtSignature"): SIG},
            ]},
            {"role": "user", "parts": [
                {k("functionResponse"): {"name": "acme_lookup", "id": "call-Acme Corp",
                                          "response": {"session_id": f"owner {EMAIL}", "ok": True}}},
                {k("executableCode"): {"language": "PYTHON", "code": "print('Acme Corp')"}},
                {k("codeExecutionResult"): {"outcome": "OUTCOME_OK", "output": "Acme Corp"}},
                {"text": "Acme Corp again", "unknownField": "Acme Corp"},
            ]},
        ],
        k("systemInstruction"): {"role": "user", "parts": [{"text": "You serve Acme Corp."}]},
        "tools": [
            {k("functionDeclarations"): [{
                "name": "acme_lookup",
                "description": "Look up Acme Corp records",
                "parameters": {"type": "OBJECT", "properties": {
                    "session_id": {"type": "STRING", "description": "the Acme Corp session", "enum": ["Acme Corp"]},
                    "deep": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"session_id": {"type": "STRING"}}}}},
                    "required": ["session_id"], k("propertyOrdering"): ["session_id", "deep"],
                    "example": {"session_id": "Acme Corp"}},
            }, {
                "name": "acme_lookup",
                k("parametersJsonSchema"): {"type": "object", "properties": {"session_id": {"type": "string"}},
                                            "additionalProperties": False},
            }]},
            {k("googleSearch"): {}},
        ],
        k("toolConfig"): {k("functionCallingConfig"): {"mode": "ANY", k("allowedFunctionNames"): ["acme_lookup"]}},
        k("generationConfig"): {"temperature": 0.5, k("stopSequences"): ["Acme Corp"],
                                k("responseMimeType"): "application/json",
                                k("responseSchema"): {"type": "OBJECT", "properties": {"session_id": {"type": "STRING"}}},
                                k("thinkingConfig"): {k("includeThoughts"): True, k("thinkingBudget"): 1024}},
        k("safetySettings"): [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        k("cachedContent"): "cachedContents/Acme Corp-123",
        "labels": {"team": "Acme Corp"},
    }


@pytest.mark.parametrize("camel", [True, False])
def test_every_field_of_a_request(camel: bool) -> None:
    doc = request(camel)
    out, ph, raw = mask(doc)

    def k(name: str) -> str:
        return name if camel else "".join("_" + c.lower() if c.isupper() else c for c in name)

    # the request uses a cache: its number is keyed (base/prompt.numbers_key), nine digits;
    # written [EMAIL_1] below
    (bob,) = ph
    assert ph == {bob: EMAIL} and len(bob) == len("[EMAIL_]") + 9
    out = json.loads(json.dumps(out).replace(bob, "[EMAIL_1]"))
    c = out["contents"]
    assert c[0]["parts"][0]["text"] == "I work at Zenith Labs, mail [EMAIL_1]"
    assert c[0]["parts"][1] == doc["contents"][0]["parts"][1]  # inlineData untouched
    # fileData: a file the provider fetches, at a URI the client wrote: masked like text
    assert c[0]["parts"][2] == {k("fileData"): {k("mimeType"): "application/pdf",
                                                k("fileUri"): "https://x/files/Zenith Labs.pdf"}}
    assert c[1]["parts"][0] == doc["contents"][1]["parts"][0]  # a thought part: whole
    fc = c[1]["parts"][1]
    assert fc[k("functionCall")] == {"name": "crm_lookup", "args": {"thread_id": "Zenith Labs", "n": 1.0e3,
                                                                     "deep": [{"thread_id": "[EMAIL_1]"}]}}
    assert fc[k("thoughtSignature")] == SIG
    fr = c[2]["parts"][0][k("functionResponse")]
    assert fr == {"name": "crm_lookup", "id": "call-Acme Corp", "response": {"thread_id": "owner [EMAIL_1]", "ok": True}}
    assert c[2]["parts"][1][k("executableCode")]["code"] == "print('Zenith Labs')"
    assert c[2]["parts"][2][k("codeExecutionResult")] == {"outcome": "OUTCOME_OK", "output": "Zenith Labs"}
    assert c[2]["parts"][3] == {"text": "Zenith Labs again", "unknownField": "Zenith Labs"}  # fail closed
    assert out[k("systemInstruction")]["parts"][0]["text"] == "You serve Zenith Labs."
    fd = out["tools"][0][k("functionDeclarations")]
    assert fd[0]["name"] == "crm_lookup" and fd[0]["description"] == "Look up Zenith Labs records"
    params = fd[0]["parameters"]
    assert list(params["properties"]) == ["thread_id", "deep"]
    assert params["properties"]["thread_id"] == {"type": "STRING", "description": "the Zenith Labs session",
                                                  "enum": ["Zenith Labs"]}
    assert list(params["properties"]["deep"]["items"]["properties"]) == ["thread_id"]
    assert params["required"] == ["thread_id"] and params[k("propertyOrdering")] == ["thread_id", "deep"]
    assert params["example"] == {"thread_id": "Zenith Labs"}
    assert list(fd[1][k("parametersJsonSchema")]["properties"]) == ["thread_id"]
    assert out[k("toolConfig")][k("functionCallingConfig")] == {"mode": "ANY", k("allowedFunctionNames"): ["crm_lookup"]}
    gc = out[k("generationConfig")]
    assert gc[k("stopSequences")] == ["Zenith Labs"]
    assert list(gc[k("responseSchema")]["properties"]) == ["thread_id"]
    assert gc[k("thinkingConfig")] == doc[k("generationConfig")][k("thinkingConfig")]
    assert out[k("safetySettings")] == doc[k("safetySettings")]
    assert out[k("cachedContent")] == "cachedContents/Acme Corp-123"  # a reference: untouched
    assert out["labels"] == {"team": "Zenith Labs"}  # unknown: masked
    # only changed strings were re-encoded: every untouched token is where it was
    assert raw.count(SIG.encode()) == 2 and PNG.encode() in raw


def test_other_bytes_stay_identical() -> None:
    raw = b'{ "contents" : [ {"parts":[{"text":"Acme Corp \\u00e9"}, {"text": "x", "n": 1.50}] } ],\n "x": 1e3 }'
    _, _, out = mask(raw)
    assert out == raw.replace(b"Acme Corp \\u00e9", b"Zenith Labs \\u00e9")


def test_system_instruction_as_a_string_and_count_tokens_request() -> None:
    out, _, _ = mask({"systemInstruction": "You serve Acme Corp", "contents": []})
    assert out["systemInstruction"] == "You serve Zenith Labs"
    inner = request()
    out, ph, _ = mask({"generateContentRequest": {"model": "models/gemini-2.5-flash", **inner}})
    (bob,) = ph  # the request it counts uses a cache: a keyed number (base/prompt.numbers_key)
    g = json.loads(json.dumps(out["generateContentRequest"]).replace(bob, "[EMAIL_1]"))
    assert g["model"] == "models/gemini-2.5-flash"
    assert g["contents"][0]["parts"][0]["text"] == "I work at Zenith Labs, mail [EMAIL_1]"
    assert g["tools"][0]["functionDeclarations"][0]["name"] == "crm_lookup"


def test_recorded_requests_mask_and_keep_their_signatures() -> None:
    for f in sorted(GEMINI_FIXTURES.glob("*.request.json")):
        raw = f.read_bytes()
        out, _, body = mask(raw)
        assert body == raw, f.name  # nothing to mask in them: not one byte changes
        injected = raw.replace(b'"text": "', b'"text": "Acme Corp ').replace(b'"text":"', b'"text":"Acme Corp ')
        injected = injected.replace(b'"secret_retrieval_tool"', b'"acme_lookup"').replace(b'"password"', b'"session_id"')
        out, _, body = mask(injected)
        assert b"Acme Corp" not in body and b"acme_lookup" not in body and b"session_id" not in body, f.name
        for sig in json.loads(raw).get("contents", []):
            for p in sig.get("parts", []):
                if "thoughtSignature" in p:
                    assert p["thoughtSignature"].encode() in body
                if "inlineData" in p:
                    assert p["inlineData"]["data"].encode() in body


def test_claude_on_vertex_body() -> None:
    api = engine.recognise("POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict")
    assert api is engine.VERTEX_ANTHROPIC
    doc = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 10, "stream": True,
           "system": "Acme Corp", "messages": [{"role": "user", "content": f"hi {EMAIL}"}]}
    out, ph, _ = mask(doc, api.request_rule)
    assert out["anthropic_version"] == "vertex-2023-10-16" and out["system"] == "Zenith Labs"
    assert out["messages"][0]["content"] == "hi [EMAIL_1]"


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1beta/models/gemini-2.5-flash:generateContent", "google.gemini"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "google.gemini"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "google.gemini"),
        ("/v1beta/models/gemini-2.5-flash:countTokens", "google.gemini"),
        ("/v1/models/gemini-2.5-flash:generateContent", "google.gemini"),
        ("/v1beta/tunedModels/my-model:generateContent", "google.gemini"),
        ("/gateway/google/v1beta/models/gemini-2.5-flash%3AgenerateContent", "google.gemini"),
        ("/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
         "vertex.gemini"),
        ("/v1beta1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:countTokens", "vertex.gemini"),
        ("/v1/projects/p/locations/us-central1/endpoints/123:generateContent", "vertex.gemini"),
        ("/v1/publishers/google/models/gemini-2.5-flash:generateContent", "vertex.gemini"),
        ("/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4%4020250514:rawPredict",
         "vertex.anthropic"),
        ("/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict", "vertex.anthropic"),
        ("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", "aws.bedrock.invoke"),
        ("/model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke-with-response-stream", "aws.bedrock.invoke"),
        ("/model/amazon.nova-pro-v1:0/converse", "aws.bedrock.converse"),
        ("/model/amazon.nova-pro-v1:0/converse-stream", "aws.bedrock.converse"),
        ("/v1/messages", "anthropic.messages"),
        ("/v1/chat/completions", "openai.chat"),
    ],
)  # fmt: skip
def test_routes(path: str, api: str) -> None:
    got = engine.recognise("POST", path)
    assert got is not None and got.name == api
    if api.startswith(("google.", "vertex.", "aws.")):
        assert engine.recognise("GET", path) is None


def test_not_google_routes() -> None:
    # (the embedding methods are routed: tests/apis/google/test_embed.py)
    for p in ["/v1beta/models/gemini-2.5-flash", "/v1beta/models", "/v1beta/models/x:predict",
              "/v1/projects/p/locations/l/publishers/google/models/g:predict"]:
        api = engine.recognise("POST", p)
        assert api is None or not api.name.startswith(("google", "vertex")), p


def test_bedrock_invoke_body_is_masked_as_messages() -> None:
    """An InvokeModel body is the Messages body (tests/providers/test_bedrock.py has the rest)."""
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "messages": [{"role": "user", "content": "Acme Corp"}]})
    out, _ = mask_body(body.encode(), engine.BEDROCK_INVOKE.request_rule, RULES)
    assert b"Acme Corp" not in out and b"bedrock-2023-05-31" in out
    err = json.loads(bedrock.error_body("disguise: request not masked"))
    assert err["__type"] == "ValidationException"


# -- every field the google-genai SDK knows is classified ------------------------------------

# Fields deliberately left to the fail-closed default (values masked on the way out and
# restored on the way in, keys kept): metadata and server-side tool traffic, no payload.
_UNKNOWN_BY_DESIGN = {
    "Part": {"tool_call", "tool_response", "part_metadata", "audio_transcription", "media_processing",
             "speech_metadata", "document_metadata", "spreadsheet_metadata", "audio_metadata"},
    "FunctionCall": {"partial_args"},
    "FunctionResponse": set(),
    "Candidate": {"citation_metadata", "grounding_metadata", "url_context_metadata", "continuation_token"},
    "GenerateContentResponse": {"model_status"},
}
# SDK-side only: never on the wire
_SDK_ONLY = {"automatic_function_calling_history", "parsed", "sdk_http_response"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def test_every_sdk_field_is_classified() -> None:
    # A google-genai release that adds a field fails here until the field is put in a
    # table (masked / untouched) or in _UNKNOWN_BY_DESIGN: a new base64 or signed field
    # must not be masked by default unnoticed.
    types = pytest.importorskip("google.genai.types")
    from disguiselib.apis.google import gemini as google

    tables = {
        "Part": google._REQ_PART.part.fields,
        "FunctionCall": google._FUNCTION_CALL.fields,
        "FunctionResponse": google._FUNCTION_RESPONSE.fields,
        "Candidate": google._CANDIDATE.fields,
        "GenerateContentResponse": google.GENERATE_RESPONSE.fields,
    }
    for cls, known in tables.items():
        fields = set(getattr(types, cls).model_fields) - _SDK_ONLY
        missing = sorted(f for f in fields if _camel(f) not in known and f not in _UNKNOWN_BY_DESIGN[cls])
        assert not missing, f"{cls}: fields in no table: {missing}"
        for f in fields - _UNKNOWN_BY_DESIGN[cls]:
            assert _camel(f) in known and f in known, (cls, f)  # both spellings


def test_tts_speaker_names_are_masked_as_the_prompt_is_and_voices_are_not() -> None:
    # A multi-speaker TTS request names its speakers twice: in the prompt's "Acme Corp:"
    # lines and in speakerVoiceConfigs[].speaker. Both get the same disguise, so the
    # model still meets each speaker's voice; the voices are the API's words.
    wav = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAwF0AAIC7AAACABAAZGF0YQAAAAA="
    voice = {"prebuiltVoiceConfig": {"voiceName": "Kore"}, "voice": "Puck"}
    doc = {
        "contents": [{"role": "user", "parts": [{"text": "Acme Corp: hi Jane.\nJane: hi."}]}],
        "generationConfig": {"responseModalities": ["AUDIO"], "speechConfig": {
            "languageCode": "en-US",
            "voiceConfig": {**voice, "replicatedVoiceConfig": {
                "mimeType": "audio/wav", "voiceSampleAudio": wav, "consentAudio": wav,
                "voiceConsentSignature": {"signature": SIG}}},
            "multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [
                {"speaker": "Acme Corp", "voiceConfig": voice},
                {"speaker": "Jane", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Acme Corp"}}}]},
            "futureSetting": "Acme Corp"}}}  # fmt: skip
    out, _, _ = mask(doc)
    speech = out["generationConfig"]["speechConfig"]
    assert out["contents"][0]["parts"][0]["text"] == "Zenith Labs: hi Jane.\nJane: hi."
    speakers = speech["multiSpeakerVoiceConfig"]["speakerVoiceConfigs"]
    assert speakers[0] == {"speaker": "Zenith Labs", "voiceConfig": voice}
    # a voice: the API's word, masked only where it holds an original (fields.META)
    assert speakers[1]["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"] == "Zenith Labs"
    replicated = speech["voiceConfig"]["replicatedVoiceConfig"]
    assert replicated["voiceConsentSignature"]["signature"] == SIG  # the server's, byte-identical
    assert replicated["voiceSampleAudio"] == replicated["consentAudio"] == wav
    assert speech["futureSetting"] == "Zenith Labs"  # unknown: masked
    assert speech["languageCode"] == "en-US"


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ([("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")], False),
        ([("x-goog-upload-command", "upload, finalize"), ("x-goog-upload-offset", "0")], False),  # the whole file
        ([("X-Goog-Upload-Command", "Finalize,Upload"), ("X-Goog-Upload-Offset", " 0 ")], False),
        ([("X-Goog-Upload-Command", "query")], False),
        ([("X-Goog-Upload-Command", "cancel")], False),
        ([], False),
        # google-genai's chunks of a file over 8 MiB: the first, the last
        ([("X-Goog-Upload-Command", "upload"), ("X-Goog-Upload-Offset", "0")], True),
        ([("X-Goog-Upload-Command", "upload, finalize"), ("X-Goog-Upload-Offset", "8388608")], True),
        ([("X-Goog-Upload-Command", "upload, finalize")], True),  # no offset: where it goes is not said
        ([("X-Goog-Upload-Command", "upload, finalize"), ("X-Goog-Upload-Offset", "0"),
          ("X-Goog-Upload-Offset", "5")], True),
        ([("X-Goog-Upload-Command", "upload"), ("X-Goog-Upload-Command", "finalize"),
          ("X-Goog-Upload-Offset", "0")], True),
    ],
)  # fmt: skip
def test_a_chunk_of_a_resumable_upload_is_refused_the_whole_file_is_not(headers: list, refused: bool) -> None:
    why = engine.refused("POST", "/upload/v1beta/files?upload_id=UP1&upload_protocol=resumable", headers)
    if refused:
        assert why is not None and "upload, finalize" in why and "X-Goog-Upload-Offset: 0" in why
        assert "disguise_allow_unknown" in why
    else:
        assert why is None


def test_a_thought_passes_whole_in_the_models_turn_only() -> None:
    """A thought part (`"thought": true`) is the model's, signed: whole in a model turn; in a
    user turn or a system instruction nobody but the client wrote it (stop 65, probe E)."""
    thought = {"text": "Acme Corp thinks", "thought": True, "thoughtSignature": SIG}
    got, _, _ = mask({"contents": [{"role": "model", "parts": [thought]}]})
    assert got["contents"][0]["parts"][0] == thought
    got, _, out = mask({"contents": [{"role": "user", "parts": [thought]}],
                        "systemInstruction": {"parts": [thought]}})  # fmt: skip
    assert got["contents"][0]["parts"][0]["text"] == "Zenith Labs thinks"
    assert got["systemInstruction"]["parts"][0]["text"] == "Zenith Labs thinks"
    assert got["contents"][0]["parts"][0]["thoughtSignature"] == SIG  # a string signature: as it came
