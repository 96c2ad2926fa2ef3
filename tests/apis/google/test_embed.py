"""Embeddings on Google's APIs: the text to embed is masked like a prompt (the Gemini
API's :embedContent and :batchEmbedContents, Vertex's :embedContent and the :predict of
its embedding models), everything else in the body goes as it came, and the answer (numbers) is
restored as a document. Routes: only an embedding model's :predict is read as one."""

from __future__ import annotations

import json

import pytest

from disguiselib.apis import registry as engine
from disguiselib.apis.google import gemini
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from strategies import RULES

EMAIL = "bob@corp.example.com"
V = "/v1/projects/p/locations/us-central1/publishers/google/models/"


def mask(doc: dict, rule) -> tuple[dict, bytes, dict]:
    out, session = mask_body(json.dumps(doc).encode(), rule, RULES)
    return json.loads(out), out, session.placeholders


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1beta/models/gemini-embedding-001:batchEmbedContents", engine.GOOGLE_EMBED),
        ("/v1beta/models/text-embedding-004:embedContent", engine.GOOGLE_EMBED),
        ("/v1beta/tunedModels/t-1:embedContent", engine.GOOGLE_EMBED),
        (V + "gemini-embedding-2:embedContent", engine.VERTEX_EMBED),
        (V + "text-embedding-005:predict", engine.VERTEX_EMBED_PREDICT),
        (V + "text-multilingual-embedding-002%3Apredict", engine.VERTEX_EMBED_PREDICT),
        (V + "multimodalembedding@001:predict", engine.VERTEX_EMBED_PREDICT),
        ("/v1/publishers/google/models/gemini-embedding-001:predict", engine.VERTEX_EMBED_PREDICT),
        (V + "imagen-3.0-generate-002:predict", None),  # not an embedding model: unknown endpoint
        (V + "text-embedding-005:predictLongRunning", None),
    ],
)
def test_routes(path: str, api: engine.Api | None) -> None:
    assert engine.recognise("POST", path) is api
    assert engine.recognise("GET", path) is None


def test_batch_embed_contents_as_google_genai_sends_it() -> None:
    doc = {"requests": [
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": f"Acme Corp: {EMAIL}"}]},
         "taskType": "RETRIEVAL_DOCUMENT", "title": "Acme Corp handbook", "outputDimensionality": 8},
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "nothing to hide"}]}},
    ]}  # fmt: skip
    out, raw, ph = mask(doc, gemini.EMBED_REQUEST)
    assert ph == {"[EMAIL_1]": EMAIL}
    r0, r1 = out["requests"]
    assert r0["content"] == {"parts": [{"text": "Zenith Labs: [EMAIL_1]"}]} and r0["title"] == "Zenith Labs handbook"
    assert (r0["model"], r0["taskType"], r0["outputDimensionality"]) == ("models/gemini-embedding-001",
                                                                         "RETRIEVAL_DOCUMENT", 8)  # fmt: skip
    assert r1 == doc["requests"][1]
    assert raw.replace(b"Zenith Labs", b"Acme Corp").replace(b"[EMAIL_1]", EMAIL.encode()) == json.dumps(doc).encode()


def test_embed_content_with_its_config_and_an_unknown_member() -> None:
    doc = {"content": {"parts": [{"text": "Acme Corp"}]}, "embedContentConfig": {"title": "Acme Corp",
           "taskType": "RETRIEVAL_QUERY", "autoTruncate": True}, "newThing": "Acme Corp"}  # fmt: skip
    out, _, _ = mask(doc, gemini.EMBED_REQUEST)
    assert out == {"content": {"parts": [{"text": "Zenith Labs"}]}, "embedContentConfig": {"title": "Zenith Labs",
                   "taskType": "RETRIEVAL_QUERY", "autoTruncate": True}, "newThing": "Zenith Labs"}  # fmt: skip


def test_vertex_predict_instances() -> None:
    doc = {"instances": [{"content": "Acme Corp pays", "task_type": "RETRIEVAL_DOCUMENT", "title": "Acme Corp"},
                         {"text": f"mail {EMAIL}", "image": {"bytesBase64Encoded": "iVBORw0KGgo=", "mimeType": "image/png"}}],
           "parameters": {"outputDimensionality": 256, "autoTruncate": False}}  # fmt: skip
    out, _, ph = mask(doc, gemini.EMBED_PREDICT_REQUEST)
    assert out["instances"][0] == {"content": "Zenith Labs pays", "task_type": "RETRIEVAL_DOCUMENT",
                                   "title": "Zenith Labs"}  # fmt: skip
    assert out["instances"][1] == {"text": "mail [EMAIL_1]", "image": doc["instances"][1]["image"]}
    assert out["parameters"] == doc["parameters"] and ph == {"[EMAIL_1]": EMAIL}


def test_the_answers_are_numbers_and_an_error_is_restored() -> None:
    r = RULES.restorer({})
    for doc in ({"embeddings": [{"values": [0.25, -1.5]}]}, {"embedding": {"values": [0.5]}},
                {"predictions": [{"embeddings": {"values": [0.1], "statistics": {"truncated": False, "token_count": 3}}}],
                 "metadata": {"billableCharacterCount": 9}}):  # fmt: skip
        raw = json.dumps(doc).encode()
        assert restore_body(raw, gemini.EMBED_RESPONSE, r) == raw
    err = json.dumps({"error": {"code": 400, "message": "Zenith Labs is too long", "status": "INVALID_ARGUMENT"}})
    got = json.loads(restore_body(err.encode(), gemini.EMBED_RESPONSE, r))
    assert got["error"]["message"] == "Acme Corp is too long"


def test_a_model_name_spelling_embedding_again_and_again_is_read_once() -> None:
    """Vertex's :predict route looks at the model's name once (a look-ahead): the pattern
    it had, `[^/:%]*embedding[^/:%]*`, backtracked over a name holding `embedding` n
    times in n² steps (36 kB of path: 0.5 s; this one: about a minute). Growth on
    doubling: bench/routing.py."""
    name = "embedding" * 30_000
    assert engine.recognise("POST", V + name + ":x") is None
    assert engine.recognise("POST", V + name + ":predict") is engine.VERTEX_EMBED_PREDICT
