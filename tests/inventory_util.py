"""Reading the derived inventory data (tests/inventory/*.json, written by
tools/inventory.py) and comparing it with what disguise declares."""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path

from fields_probe import build, segments

from disguiselib.base.fields import Within
from disguiselib.base.wirespec import Endpoint
from disguiselib.wire.jsonspan import Deep, Obj, Rule, Skip, Typed

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "inventory"


@cache
def tool():
    """tools/inventory.py as a module (it reads the installed SDKs the same way)."""
    spec = importlib.util.spec_from_file_location("inventory_tool", ROOT / "tools" / "inventory.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def sdk_files(package: str) -> list[dict]:
    """Every committed record of an SDK's calls (one per SDK version the venvs pin)."""
    return [json.loads(f.read_text()) for f in sorted(DATA.glob(f"{package}-sdk-*.json"))]


def instance(path: str) -> str:
    """A concrete path of a documented template (`{id}` -> an id)."""
    return re.sub(r"\{[^}]*\}", "id_1", path)


def declared(endpoints: tuple[Endpoint, ...], method: str, path: str) -> list[Endpoint]:
    """The entries that declare method on (a concrete) path, the most specific only (the
    most literal segments: `/threads/runs` before `/threads/{thread_id}`, as the
    provider routes them); more than one when they are as specific."""
    found = [e for e in endpoints if method in e.methods.split() and re.fullmatch(e.pattern(), path)]
    best = max((_literal(e) for e in found), default=0)
    return [e for e in found if _literal(e) == best]


def _literal(e: Endpoint) -> int:
    return sum(1 for s in e.path.split("/") if s and not s.startswith("{") and s != "**")


# -- a field path in a rule tree --------------------------------------------------------------


def unknown_at(rule: Rule, path: str) -> str | None:
    """Where the rule tree stops knowing a field path (tests/sdk_fields.py syntax): the
    prefix whose last member or variant falls to its object's default (fails closed:
    masked as unknown), or None when every step is declared (a declared subtree: Deep,
    Skip or Within, decides everything below it)."""
    doc: object = build(path, "x")
    cur, r, done = doc, rule, ""
    for kind, name in segments(path):
        if kind == "variant":
            done += f"<{name}>"
            if isinstance(r, Typed) and name not in r.table:
                return done
            continue
        r = r.resolve(cur)
        if isinstance(r, (Deep, Skip, Within)) or r.skip:
            return None
        key: str | int
        if kind == "field":
            fields = r.fields if isinstance(r, Obj) else getattr(r, "fields", None)
            if isinstance(fields, dict) and name not in fields:
                return done + "." + name
            key, done = name, done + "." + name
        elif kind == "item":
            key, done = 0, done + "[]"
        elif kind == "value":
            key, done = "k", done + "{}"
        else:  # a map's keys: the map's rule says
            return None
        nxt = cur[key] if isinstance(cur, (dict, list)) else None  # type: ignore[index]
        r, cur = r.child(key), nxt
    return None
