"""Bedrock's Converse field model derived from botocore's service model
(apis/bedrock/shapes.py, apis/bedrock/data/bedrock_runtime.json): the committed shapes
are botocore's, every member is decided by its type or by bedrock.py's classification,
and a member the shapes gain is decided (or, a blob or a document, fails here)."""

from __future__ import annotations

import copy
import json

import pytest
from inventory_util import tool

from disguiselib.apis.bedrock import runtime as bedrock
from disguiselib.apis.bedrock import shapes as bedrock_shapes
from disguiselib.apis.bedrock.shapes import Shapes
from disguiselib.base.fields import GENERIC, META
from disguiselib.base.masking import mask_body
from disguiselib.wire.jsonspan import USER, VALUES, Arr, Obj
from strategies import RULES

MODEL = bedrock_shapes.load()
REQUEST_ROOTS = ("ConverseRequest", "ConverseStreamRequest", "CountTokensRequest")
RESPONSE_ROOTS = ("ConverseResponse", "ConverseStreamOutput")


def test_the_committed_shapes_are_the_installed_botocore_ones() -> None:
    _, installed = tool().bedrock()
    assert MODEL["source"] == installed["source"], "botocore changed: run python tools/inventory.py"
    assert MODEL["shapes"] == installed["shapes"], "the shapes changed: run python tools/inventory.py"
    assert len(MODEL["shapes"]) > 100


def test_every_member_no_type_decides_is_classified() -> None:
    assert bedrock.REQUEST.undecided(REQUEST_ROOTS) == []
    assert bedrock.RESPONSE.undecided(RESPONSE_ROOTS) == []


def test_every_classification_names_a_member_of_the_shapes() -> None:
    shapes = MODEL["shapes"]
    for key in bedrock.RESPONSE_CLASSES:
        shape, _, member = key.partition(".")
        assert shape in shapes, key
        assert not member or member in shapes[shape]["members"], key


def test_every_member_of_every_structure_has_its_rule() -> None:
    seen = 0
    for name, s in MODEL["shapes"].items():
        if s["type"] != "structure" or s.get("document") or name in bedrock.REQUEST_CLASSES:
            continue
        rule = bedrock.REQUEST.rule(name)
        assert isinstance(rule, Obj) and set(rule.fields) == set(s["members"]), name
        seen += 1
    assert seen > 100


def test_converse_stream_takes_the_converse_request() -> None:
    """One request rule serves /converse and /converse-stream: their members are the
    same, and the stream's guardrail configuration (one member more) is the one read."""
    shapes = MODEL["shapes"]
    assert set(shapes["ConverseStreamRequest"]["members"]) == set(shapes["ConverseRequest"]["members"])
    stream = set(shapes["GuardrailStreamConfiguration"]["members"])
    assert set(shapes["GuardrailConfiguration"]["members"]) <= stream
    assert set(bedrock._CONVERSE_FIELDS["guardrailConfig"].fields) == stream  # type: ignore[attr-defined]


# -- the type rules, on a model of their own ----------------------------------------------------


def _model(**members: dict) -> dict:
    shapes = {
        "Root": {"type": "structure", "members": {k: f"T_{k}" for k in members}},
        **{f"T_{k}": v for k, v in members.items()},
        "Str": {"type": "string"},
    }
    return {"source": {}, "shapes": shapes}


def test_each_type_decides_as_the_module_says() -> None:
    m = _model(text={"type": "string"}, word={"type": "string", "enum": True}, n={"type": "integer"},
               blob={"type": "blob"}, doc={"type": "structure", "members": {}, "document": True},
               items={"type": "list", "member": "Str"}, names={"type": "map", "key": "Str", "value": "Str"},
               inner={"type": "structure", "members": {"x": "Str"}})  # fmt: skip
    s = Shapes(m, {})
    f = s.fields("Root")
    assert f["text"] is VALUES and f["word"] is META and f["n"] is META and f["blob"] is GENERIC
    assert f["doc"] is USER and isinstance(f["items"], Arr)
    assert isinstance(f["names"], Obj) and f["names"].keys and f["names"].default is VALUES
    assert isinstance(f["inner"], Obj) and f["inner"].default is GENERIC
    assert s.undecided(("Root",)) == ["Root.blob (blob)", "Root.doc (document)"]
    assert Shapes(m, {"Root.blob": META, "T_doc": USER}).undecided(("Root",)) == []


def test_a_shape_that_holds_itself_is_unknown_inside() -> None:
    m = {"source": {}, "shapes": {"Node": {"type": "structure", "members": {"next": "Node", "t": "Str"}},
                                  "Str": {"type": "string"}}}  # fmt: skip
    rule = Shapes(m, {}).rule("Node")
    assert isinstance(rule, Obj) and rule.fields["next"] is GENERIC


def test_a_member_botocore_adds_is_masked_or_fails_until_classified() -> None:
    """A string member the shapes gain is text: masked by its type, nothing to add. A new
    blob or document member is not decided by its type: it fails the classification test
    until bedrock.py says what it is."""
    m = copy.deepcopy(dict(MODEL))
    m["shapes"]["ContentBlock"]["members"]["transcript"] = "String"
    m["shapes"]["ContentBlock"]["members"]["attachment"] = "Blob"
    m["shapes"]["Blob"] = {"type": "blob"}
    m["shapes"].setdefault("String", {"type": "string"})
    shapes = Shapes(m, bedrock.REQUEST_CLASSES)
    assert shapes.undecided(REQUEST_ROOTS) == ["ContentBlock.attachment (blob)"]
    body = {"messages": [{"role": "user", "content": [{"transcript": "Acme Corp said"}]}]}
    out, _ = mask_body(json.dumps(body).encode(), shapes.rule("ConverseRequest"), RULES)
    assert b"Acme Corp" not in out and b"Zenith Labs said" in out


@pytest.mark.parametrize("name", ["ConverseRequest", "ConverseResponse", "CountTokensRequest"])
def test_the_engine_reads_the_derived_rules(name: str) -> None:
    engine = {"ConverseRequest": bedrock.CONVERSE_REQUEST, "CountTokensRequest": bedrock.COUNT_TOKENS_REQUEST,
              "ConverseResponse": bedrock.CONVERSE_RESPONSE}[name]  # fmt: skip
    derived = set(MODEL["shapes"][name]["members"])
    assert derived <= set(engine.fields)  # type: ignore[attr-defined]
