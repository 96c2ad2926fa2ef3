"""Bedrock InvokeModel per model family (sans I/O): each family's documented request
(tests/fixtures/real/bedrock/models, from the AWS model-parameters pages) masked where
the model reads text, its documented response restored, and a model id of a family
that is not declared refused, naming its family prefix and nothing of the body."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from aws_util import images_of, inject
from disguiselib import leakguard
from disguiselib.apis.bedrock import models as bedrock_models
from disguiselib.apis.registry import recognise
from disguiselib.base.masking import mask_body
from disguiselib.base.restore import restore_body
from disguiselib.errors import QuotingMaskError
from strategies import LITERALS, PLACEHOLDERS, RULES, make_rules

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "bedrock" / "models"
FIXTURES = sorted(FIX.glob("*.json"))
ORIGINAL = " Acme Corp bob@corp.example.com"
DISGUISE = " Zenith Labs [EMAIL_1]"


def load(p: Path) -> dict:
    return json.loads(p.read_text(encoding="utf-8"))


def path_for(model: str, op: str = "invoke") -> str:
    return f"/model/{model.replace(':', '%3A')}/{op}"


def test_every_family_has_a_fixture_and_every_fixture_a_family() -> None:
    fams = {load(p)["family"] for p in FIXTURES}
    declared = {f.name for f in bedrock_models.FAMILIES} - {"anthropic.claude"}  # Claude: fixtures/real/anthropic
    assert fams == declared


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda p: p.stem)
def test_documented_request_masked(fx: Path) -> None:
    f = load(fx)
    api = recognise("POST", path_for(f["model"]))
    assert api is not None and api.name == f"aws.bedrock.invoke.{f['family']}" and api.signed
    raw = json.dumps(inject(f["request"], ORIGINAL)).encode()
    out, session = mask_body(raw, api.request_rule, RULES)
    text = out.decode()
    assert "Acme Corp" not in text and "bob@corp.example.com" not in text
    masked = json.loads(out)
    # the API's own words went as they came
    assert {k: v for k, v in masked.items() if not isinstance(v, (str, list, dict))} == {
        k: v for k, v in f["request"].items() if not isinstance(v, (str, list, dict))
    }


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda p: p.stem)
def test_documented_response_restored(fx: Path) -> None:
    f = load(fx)
    api = recognise("POST", path_for(f["model"]))
    body = json.dumps(inject(f["response"], DISGUISE), ensure_ascii=False).encode()
    out = restore_body(body, api.response_rule, RULES.restorer(PLACEHOLDERS))
    assert json.loads(out) == inject(f["response"], ORIGINAL)


@pytest.mark.parametrize(
    ("mid", "prefix"),
    [
        ("amazon.nova-reel-v1:1", "amazon.nova-reel"),  # video: StartAsyncInvoke only
        ("luma.ray-v2:0", "luma.ray"),
        ("amazon.rerank-v1:0", "amazon.rerank"),
        ("us.twelvelabs.pegasus-1-2-v1:0", "twelvelabs.pegasus"),
        ("arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123", "provisioned-model"),
        ("arn:aws:bedrock:us-east-1:123456789012:imported-model/acme-corp-model", "imported-model"),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/x1", "application-inference-profile"),
    ],
)
def test_unknown_family_refused_naming_its_prefix(mid: str, prefix: str) -> None:
    api = recognise("POST", path_for(mid.replace("/", "%2F")))
    assert api is not None and api.name == "aws.bedrock.invoke.unknown"
    with pytest.raises(QuotingMaskError) as e:
        mask_body(json.dumps({"prompt": "Acme Corp" + ORIGINAL}).encode(), api.request_rule, RULES)
    assert "model family <not shown> is not one" in str(e.value)  # without the rules: never shown
    msg = e.value.naming(lambda t: leakguard.shown(t, RULES) == t)  # what the pipeline says
    assert repr(prefix) in msg and "Acme" not in msg and "bob@" not in msg and "acme-corp-model" not in msg


@pytest.mark.parametrize(
    "mid", ["acme_lookup.model-v1", "arn:aws:bedrock:us-east-1:1:foundation-model/tok_acme_lookup", "x.Acme Corp-v1"]
)
def test_unknown_family_that_holds_an_original_is_withheld(mid: str) -> None:
    rules = make_rules(literals={**LITERALS, "acme_lookup": "crm_lookup"})
    api = recognise("POST", path_for(mid.replace("/", "%2F").replace(" ", "%20")))
    assert api is not None and api.name == "aws.bedrock.invoke.unknown"
    with pytest.raises(QuotingMaskError) as e:
        mask_body(b'{"prompt": "hi"}', api.request_rule, rules)
    msg = e.value.naming(lambda t: leakguard.shown(t, rules) == t)
    assert "model family <original> is not one" in msg and "acme" not in msg.lower(), msg


@pytest.mark.parametrize(
    ("mid", "family"),
    [
        ("meta.llama3-70b-instruct-v1:0", "meta.llama"),
        ("us.meta.llama4-maverick-17b-instruct-v1:0", "meta.llama"),
        ("eu.mistral.pixtral-large-2502-v1:0", "mistral"),
        ("arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-premier-v1:0", "amazon.titan-text"),
        ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0", "amazon.nova"),
        ("apac.amazon.nova-micro-v1:0", "amazon.nova"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude"),
        ("anthropic.claude-instant-v1", "anthropic.claude-v2"),
        ("cohere.command-light-text-v14", "cohere.command"),
        ("cohere.command-r-v1:0", "cohere.command-r"),
        ("amazon.titan-image-generator-v1", "amazon.titan-image"),
        ("us.amazon.nova-canvas-v1:0", "amazon.titan-image"),
        ("stability.sd3-large-v1:0", "stability.sd3"),
        ("us.stability.stable-image-core-v1:1", "stability.sd3"),
        ("stability.stable-diffusion-xl-v1", "stability.sdxl"),
        ("arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0", "cohere.rerank"),
        ("amazon.titan-embed-image-v1", "amazon.titan-embed-image"),
        ("amazon.titan-embed-text-v2:0", "amazon.titan-embed"),
        ("us.amazon.nova-2-multimodal-embeddings-v1:0", "amazon.nova-embed"),
    ],
)
def test_model_id_forms_name_their_family(mid: str, family: str) -> None:
    fam = bedrock_models.family_of(mid)
    assert fam is not None and fam.name == family


IMAGE_FIXTURES = [p for p in FIXTURES if any(k in p.read_text(encoding="utf-8") for k in ('"image', '"base64"'))]


# The rules read the PNG's first bytes as an original, and a disguise inside an answer's
# image: were an image read as text, the request's would be masked, the answer's restored.
PNG_HEAD = "iVBORw0KGgo"
IMAGE_RULES = make_rules(literals={**LITERALS, PNG_HEAD: "PNGHEADER"})


@pytest.mark.parametrize("fx", IMAGE_FIXTURES, ids=lambda p: p.stem)
def test_images_pass_as_they_are(fx: Path) -> None:
    """An image (base64 bytes) in a request or an answer is media: it goes out and comes
    back byte for byte, whatever rules are in force, while the prompts beside it are masked."""
    f = load(fx)
    api = recognise("POST", path_for(f["model"]))
    images = images_of
    out, _ = mask_body(json.dumps(inject(f["request"], ORIGINAL)).encode(), api.request_rule, IMAGE_RULES)
    assert "Acme Corp" not in out.decode() and images(json.loads(out)) == images(f["request"])
    answer = json.loads(json.dumps(inject(f["response"], DISGUISE)).replace(PNG_HEAD, "PNGHEADER"))
    restored = restore_body(json.dumps(answer).encode(), api.response_rule, IMAGE_RULES.restorer(PLACEHOLDERS))
    assert images(json.loads(restored)) == images(answer) and all("PNGHEADER" in i for i in images(answer))


def test_rerank_echoed_documents_restored() -> None:
    """Rerank echoes the documents it was given (return_documents): the client reads them restored."""
    f = load(FIX / "cohere.rerank.documents.json")
    api = recognise("POST", path_for(f["model"]))
    out, _ = mask_body(json.dumps(inject(f["request"], ORIGINAL)).encode(), api.request_rule, RULES)
    sent = json.loads(out)
    assert all("Acme" not in d["text"] and "Acme" not in d["title"] for d in sent["documents"])
    answer = {"id": "x", "results": [{"index": 0, "relevance_score": 0.5, "document": sent["documents"][1]}]}
    back = json.loads(restore_body(json.dumps(answer).encode(), api.response_rule, RULES.restorer(PLACEHOLDERS)))
    assert back["results"][0]["document"] == inject(f["request"]["documents"][1], ORIGINAL)


def test_nova_embed_text_given_as_bytes_is_read_as_text() -> None:
    """Nova Multimodal Embeddings takes a text as a file's base64 bytes too: those are
    text, masked inside their base64 (an image's, audio's, video's bytes pass)."""
    api = recognise("POST", path_for("amazon.nova-2-multimodal-embeddings-v1:0"))
    raw = base64.b64encode(("notes:" + ORIGINAL).encode()).decode()
    body = {"taskType": "SINGLE_EMBEDDING",
            "singleEmbeddingParams": {"embeddingPurpose": "GENERIC_INDEX",
                                      "text": {"truncationMode": "END", "source": {"bytes": raw}}}}  # fmt: skip
    out, _ = mask_body(json.dumps(body).encode(), api.request_rule, RULES)
    sent = base64.b64decode(json.loads(out)["singleEmbeddingParams"]["text"]["source"]["bytes"]).decode()
    assert sent.startswith("notes:") and "Acme Corp" not in sent and "bob@" not in sent


@pytest.mark.parametrize("model", ["openai.gpt-oss-120b-1:0", "ai21.jamba-1-5-large-v1:0"])
def test_reasoning_restored_in_the_stream_is_masked_when_sent_back(model: str) -> None:
    """gpt-oss's and Jamba's streams restore `delta.reasoning_content`: the client sends
    the original back next turn, and it leaves masked."""
    api = recognise("POST", path_for(model))
    assert api is not None
    doc = {"messages": [{"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "x", "reasoning_content": f"thinking of{ORIGINAL}"},
                        {"role": "user", "content": "more"}]}  # fmt: skip
    out, _ = mask_body(json.dumps(doc).encode(), api.request_rule, RULES)
    assert json.loads(out)["messages"][1]["reasoning_content"] == f"thinking of{DISGUISE}"
