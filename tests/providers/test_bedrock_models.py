"""Bedrock InvokeModel per model family (sans I/O): each family's documented request
(tests/fixtures/real/bedrock/models, from the AWS model-parameters pages) masked where
the model reads text, its documented response restored, and a model id of a family
that is not declared refused, naming its family prefix and nothing of the body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aws_util import inject
from disguiselib.errors import MaskError
from disguiselib.providers import bedrock_models
from disguiselib.providers.masking import mask_body
from disguiselib.providers.registry import recognise
from disguiselib.providers.restore import restore_body
from strategies import PLACEHOLDERS, RULES

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "bedrock" / "models"
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
        ("amazon.nova-canvas-v1:0", "amazon.nova-canvas"),
        ("stability.sd3-5-large-v1:0", "stability.sd3"),
        ("us.twelvelabs.pegasus-1-2-v1:0", "twelvelabs.pegasus"),
        ("arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123", "provisioned-model"),
        ("arn:aws:bedrock:us-east-1:123456789012:imported-model/acme-corp-model", "imported-model"),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/x1", "application-inference-profile"),
    ],
)
def test_unknown_family_refused_naming_its_prefix(mid: str, prefix: str) -> None:
    api = recognise("POST", path_for(mid.replace("/", "%2F")))
    assert api is not None and api.name == "aws.bedrock.invoke.unknown"
    with pytest.raises(MaskError) as e:
        mask_body(json.dumps({"prompt": "Acme Corp" + ORIGINAL}).encode(), api.request_rule, RULES)
    msg = str(e.value)
    assert repr(prefix) in msg and "Acme" not in msg and "bob@" not in msg and "acme-corp-model" not in msg


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
    ],
)
def test_model_id_forms_name_their_family(mid: str, family: str) -> None:
    fam = bedrock_models.family_of(mid)
    assert fam is not None and fam.name == family
