"""Bedrock Runtime's field model derived from botocore's service model (sans I/O).

`data/bedrock_runtime.json` holds the shapes of the Converse, ConverseStream and
CountTokens bodies as botocore's `bedrock-runtime` model declares them (its version is
recorded in the file; `python tools/inventory.py` writes it again). `Shapes.rule` builds
a jsonspan rule tree from them, member by member, deciding each by its botocore type:

    structure, union   an object of its members; a member the model does not have: unknown
    list, map          an array of, a map to (its keys the client's: masked) the member's rule
    string             text (masked, restored); an enum: the API's own word (untouched)
    document           free JSON the user wrote (keys and values)
    blob               unknown: its base64 read decoded when it is text
    numbers, booleans, timestamps   untouched

and, where that is not what the member is, by a classification the API module gives
(apis/bedrock/runtime.py: an id, signed reasoning, a JSON schema, base64 media, a document
read by its format): `{"Shape.member": rule}` or `{"Shape": rule}`. A blob or a document
is never decided by its type alone (tests/apis/bedrock/test_runtime_request.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from ...base.fields import GENERIC, META
from ...wire.jsonspan import USER, VALUES, Arr, Obj, Rule

DATA = Path(__file__).resolve().parent / "data" / "bedrock_runtime.json"

# What a member of each botocore type is, when nothing else is said of it.
_SCALARS = frozenset({"boolean", "integer", "long", "float", "double", "timestamp", "bigdecimal", "biginteger"})
# botocore types the type alone does not decide (binary or text, user JSON or a schema)
UNDECIDED = frozenset({"blob", "document"})


@cache
def load(path: Path = DATA) -> Mapping:
    return json.loads(path.read_text(encoding="utf-8"))


class Shapes:
    """The shape tree of one service model, built into rules with one classification."""

    def __init__(self, model: Mapping, classified: Mapping[str, Rule], text: Rule = VALUES) -> None:
        self.shapes: Mapping[str, Mapping] = model["shapes"]
        self.source: Mapping[str, str] = model["source"]
        self.classified = classified
        self.text = text  # a string member's rule (a response's text: restored)
        self._built: dict[str, Rule] = {}

    def rule(self, name: str) -> Rule:
        """The rule of a shape (built once; a shape that holds itself is unknown inside)."""
        if name in self.classified:
            return self.classified[name]
        got = self._built.get(name)
        if got is not None:
            return got
        self._built[name] = GENERIC  # a shape reached again while it is being built
        s = self.shapes[name]
        kind = s["type"]
        out: Rule
        if kind == "structure" and s.get("document"):
            out = USER
        elif kind == "structure":
            out = Obj({m: self.member(name, m) for m in s["members"]}, default=GENERIC)
        elif kind == "list":
            out = Arr(self.rule(s["member"]))
        elif kind == "map":
            out = Obj({}, default=self.rule(s["value"]), keys=True)
        elif kind == "string":
            out = META if s.get("enum") else self.text
        elif kind in _SCALARS:
            out = META
        else:  # blob, or a type this model did not have when this was written
            out = GENERIC
        self._built[name] = out
        return out

    def member(self, shape: str, member: str) -> Rule:
        rule = self.classified.get(f"{shape}.{member}")
        return rule if rule is not None else self.rule(self.shapes[shape]["members"][member])

    def fields(self, name: str) -> dict[str, Rule]:
        """The member rules of a structure or union shape."""
        rule = self.rule(name)
        assert isinstance(rule, Obj), name
        return rule.fields

    def undecided(self, roots: tuple[str, ...]) -> list[str]:
        """Every member reachable from roots (not through a classified one) whose type
        alone decides nothing (UNDECIDED) and that no classification names."""
        out: list[str] = []
        seen: set[str] = set()
        todo = [r for r in roots if r not in self.classified]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            s = self.shapes[name]
            refs = [(f"{name}.{m}", t) for m, t in s.get("members", {}).items()]
            refs += [(f"{name}[]", s["member"])] if "member" in s else []
            refs += [(f"{name}{{}}", s["value"])] if "value" in s else []
            for where, target in refs:
                if where in self.classified or target in self.classified:
                    continue
                t = self.shapes[target]
                if t["type"] in UNDECIDED or (t["type"] == "structure" and t.get("document")):
                    out.append(f"{where} ({'document' if t.get('document') else t['type']})")
                else:
                    todo.append(target)
        return sorted(out)
