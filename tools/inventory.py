"""Derive disguise's inventory data from the providers' machine-readable descriptions.

    python tools/inventory.py            # write tests/inventory/*.json
    python tools/inventory.py --check    # exit 1 when a file differs from what it would write

Sources (each file records its source and version):

- openai-openapi.json: the OpenAPI document of github.com/openai/openai-openapi (`openapi.json`
  at a commit: `--openapi FILE --openapi-commit SHA`, or read from a git mirror of the
  repository with `--openapi-git DIR`, by default the one the `fetch` tool makes): every
  path + method, and for each JSON request body the string-bearing property paths of
  its schema ($ref, allOf/anyOf/oneOf resolved).
- openai-sdk-VERSION.json, anthropic-sdk-VERSION.json: the installed `openai` and
  `anthropic` SDKs: the method and path of every call their resources make, one file per
  SDK version (the 3.11 and 3.12 venvs pin different ones: run the script with each).
- google-genai-VERSION.json: the installed google-genai's types: the string-bearing paths
  of a GenerateContent request as it goes on the wire, and of its response.
- bedrock-runtime.json: botocore's `bedrock-runtime` service model: its operations
  (method, path) and the shapes of Converse, ConverseStream and CountTokens, from which
  apis/bedrock/runtime.py builds its Converse field model (that copy is in
  addon/disguiselib/apis/bedrock/data/, which the engine reads).

Paths are written as tests/sdk_fields.py writes them: `.name` a member, `[]` an array
item, `{}` a value of a map, `<t>` the variant of a union whose `type` is t.

--check compares every file the installed versions (and the OpenAPI mirror, when there is
one) would write.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "inventory"
DATA = ROOT / "addon" / "disguiselib" / "apis" / "bedrock" / "data"
MIRROR = Path("/work/.mirror/openai+openai-openapi/repo")
OPENAPI_REPO = "github.com/openai/openai-openapi"

# -- OpenAI: the OpenAPI document ---------------------------------------------------------

_METHODS = ("get", "post", "put", "patch", "delete")


class OpenAPI:
    def __init__(self, doc: dict) -> None:
        self.doc = doc

    def deref(self, s: dict) -> tuple[dict, str | None]:
        name = None
        while "$ref" in s:
            name = s["$ref"].rsplit("/", 1)[-1]
            node: object = self.doc
            for part in s["$ref"].lstrip("#/").split("/"):
                node = node[part]  # type: ignore[index]
            s = node  # type: ignore[assignment]
        return s, name

    def _variants(self, s: dict) -> list[dict]:
        """The alternatives of a schema (anyOf/oneOf flattened), each dereferenced."""
        s, _ = self.deref(s)
        alts = s.get("anyOf") or s.get("oneOf")
        if alts:
            return [v for a in alts for v in self._variants(a)]
        return [s]

    def _props(self, s: dict) -> dict[str, dict]:
        """The properties of an object schema, allOf merged."""
        s, _ = self.deref(s)
        out: dict[str, dict] = {}
        for part in s.get("allOf", []):
            for v in self._variants(part):
                out.update(self._props(v))
        out.update(s.get("properties", {}))
        return out

    def _type_values(self, s: dict) -> list[str]:
        """The values of an object schema's `type` member (a union's variant labels)."""
        t = self._props(s).get("type")
        if t is None:
            return []
        out: list[str] = []
        for v in self._variants(t):
            if "const" in v:
                out.append(str(v["const"]))
            out.extend(str(x) for x in v.get("enum") or [] if x is not None)
        return out

    def paths(self, schema: dict) -> dict[str, str]:
        """Every string-bearing path of a schema: path -> "str" or "json" (free JSON)."""
        out: dict[str, str] = {}
        self._walk(schema, "", (), out)
        return dict(sorted(out.items()))

    def _walk(self, schema: dict, path: str, stack: tuple[str, ...], out: dict[str, str]) -> None:
        s, name = self.deref(schema)
        if name is not None:
            if name in stack:
                return  # recursive: listed where it began
            stack = (*stack, name)
        variants = self._variants(s) if ("anyOf" in s or "oneOf" in s) else [s]
        objs = [v for v in variants if self._is_obj(v)]
        for v in variants:
            if v.get("allOf") and not self._is_obj(v):
                for part in v["allOf"]:
                    self._walk(part, path, stack, out)
                continue
            types = v.get("type")
            types = types if isinstance(types, list) else [types]
            if "const" in v or "enum" in v:
                continue  # the API's own words
            if self._is_obj(v):
                props = self._props(v)
                labels = [""]
                if len(objs) > 1:
                    labels = [f"<{t}>" for t in self._type_values(v)] or [""]
                for label in labels:
                    for k, p in props.items():
                        self._walk(p, f"{path}{label}.{k}", stack, out)
                    extra = v.get("additionalProperties")
                    if isinstance(extra, dict) and extra:
                        out.setdefault(path + label + "{}#key", "str")
                        self._walk(extra, path + label + "{}", stack, out)
                    elif extra is True or (not props and "object" in types):
                        out[path + label] = "json"
            elif "array" in types:
                self._walk(v.get("items", {}), path + "[]", stack, out)
            elif "string" in types:
                if v.get("format") == "binary":
                    continue  # a file's bytes in a form: not JSON
                out.setdefault(path, "str")
            elif v == {} or types == [None] and not v.get("type") and not set(v) - {"description", "title", "x-oaiMeta",
                                                                                   "example", "default", "nullable"}:
                out[path] = "json"  # any JSON

    @staticmethod
    def _is_obj(v: dict) -> bool:
        t = v.get("type")
        return t == "object" or (isinstance(t, list) and "object" in t) or "properties" in v or (
            "allOf" in v and t is None)


def openai(doc: dict, commit: str) -> dict:
    api = OpenAPI(doc)
    ops = []
    for path, item in doc["paths"].items():
        for m, op in item.items():
            if m not in _METHODS:
                continue
            clean = path.split("?", 1)[0]
            content = op.get("requestBody", {}).get("content", {})
            entry: dict = {"method": m.upper(), "path": clean, "request": sorted(content)}
            js = content.get("application/json")
            if js is not None and "schema" in js:
                entry["fields"] = api.paths(js["schema"])
            form = content.get("multipart/form-data")
            if form is not None and "schema" in form:
                entry["form"] = sorted(api._props(form["schema"]))
            ops.append(entry)
    seen: dict[tuple[str, str], dict] = {}
    for e in ops:  # `/responses?beta=true` duplicates `/responses`: one entry
        seen.setdefault((e["method"], e["path"]), e)
    return {
        "source": {"repository": OPENAPI_REPO, "file": "openapi.json", "commit": commit,
                   "version": doc.get("info", {}).get("version")},
        "operations": sorted(seen.values(), key=lambda e: (e["path"], e["method"])),
    }


def read_openapi(args: argparse.Namespace) -> tuple[dict, str] | None:
    if args.openapi:
        return json.loads(Path(args.openapi).read_text()), args.openapi_commit or "unknown"
    git = Path(args.openapi_git)
    if not git.exists():
        return None
    commit = subprocess.run(["git", "--git-dir", str(git), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    raw = subprocess.run(["git", "--git-dir", str(git), "show", "HEAD:openapi.json"], check=True,
                         capture_output=True).stdout  # fmt: skip
    return json.loads(raw), commit


# -- Anthropic: the SDK's resources -------------------------------------------------------

_CALL = re.compile(r'self\._(get|post|put|patch|delete|get_api_list)\(\s*(?:path_template\(\s*)?f?"([^"]+)"')


def sdk_calls(package: str) -> list[dict]:
    """(method, path) of every call the installed SDK's sync resources make (ids as {})."""
    mod = importlib.import_module(package)
    root = Path(mod.__file__).parent / "resources"  # type: ignore[arg-type]
    out: dict[tuple[str, str], str] = {}
    for f in sorted(root.rglob("*.py")):
        sync = f.read_text().split("\nclass Async")[0]
        for m in _CALL.finditer(sync):
            call = sync[m.end() : sync.find("\n        )", m.end())]
            post = m[1] == "post" or 'method="post"' in call
            method = {"get_api_list": "POST" if post else "GET"}.get(m[1], m[1].upper())
            path = re.sub(r"\{[^}]+\}", "{}", m[2])
            path = path.split("?", 1)[0]
            out.setdefault((method, path), str(f.relative_to(root)))
    return [{"method": k[0], "path": k[1], "resource": v} for k, v in sorted(out.items(), key=lambda kv: kv[0][::-1])]


def _sdk_fields():
    """tests/sdk_fields.py: the walk of SDK types the field-coverage tests use."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        return importlib.import_module("sdk_fields")
    finally:
        sys.path.pop(0)


def sdk(package: str) -> tuple[str, dict]:
    """The file name and content of the installed SDK's calls, and the string-bearing
    field paths of its request and response types that docs/fields.md classifies
    (tests/sdk_fields.ROOTS)."""
    version = importlib.metadata.version(package)
    sf = _sdk_fields()
    fields: dict[str, dict[str, str]] = {}
    for surface, _path, _kind in sf.all_paths():
        # the stream events' paths (thousands) are checked against the installed SDK only
        if sf.ROOTS[surface][0].startswith(package + ".") and not surface.endswith("-stream"):
            fields.setdefault(surface, {})[_path] = _kind
    return f"{package}-sdk-{version}.json", {"source": {"package": package, "version": version},
                                             "operations": sdk_calls(package), "fields": fields}  # fmt: skip


# -- Google: google-genai's types ------------------------------------------------------------

# Members of google-genai's response types that never come over the wire
GENAI_SDK_ONLY = ("automaticFunctionCallingHistory", "parsed", "sdkHttpResponse")


def google_genai() -> tuple[str, dict]:
    """GenerateContent's request as it goes on the wire (google-genai's `_to_mldev` puts
    the config's members at the top) and its response: the string-bearing paths of the
    installed google-genai's types (their aliases: the camelCase wire names)."""
    import typing

    from google.genai import types as t

    sf = _sdk_fields()
    request = typing.TypedDict("GenerateContentRequest", {  # noqa: UP013 - real types, not strings
        "contents": list[t.Content], "systemInstruction": t.Content, "tools": list[t.Tool],
        "toolConfig": t.ToolConfig, "safetySettings": list[t.SafetySetting], "generationConfig": t.GenerationConfig,
        "cachedContent": str, "labels": dict[str, str]}, total=False)  # fmt: skip
    response = {p: k for p, k in sf.sdk_paths(t.GenerateContentResponse).items()
                if not p.startswith(tuple("." + m for m in GENAI_SDK_ONLY))}  # fmt: skip
    version = importlib.metadata.version("google-genai")
    return f"google-genai-{version}.json", {
        "source": {"package": "google-genai", "version": version, "sdk_only": list(GENAI_SDK_ONLY)},
        "request": sf.sdk_paths(request), "response": response,
    }


# -- Bedrock: botocore's service model ----------------------------------------------------

BEDROCK_ROOTS = (
    "ConverseRequest", "ConverseStreamRequest", "ConverseResponse", "ConverseStreamOutput", "CountTokensRequest",
)  # fmt: skip


def bedrock() -> tuple[dict, dict]:
    """(the operations, for the tests; the shapes reachable from BEDROCK_ROOTS, for the
    engine): each shape as botocore declares it, reduced to what a field model needs."""
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("bedrock-runtime", "service-2")
    version = importlib.metadata.version("botocore")
    source = {"package": "botocore", "version": version, "service": "bedrock-runtime",
              "apiVersion": model["metadata"]["apiVersion"]}  # fmt: skip
    ops = [{"name": name, "method": op["http"]["method"], "path": op["http"]["requestUri"].split("?", 1)[0],
            "input": op.get("input", {}).get("shape"), "output": op.get("output", {}).get("shape")}
           for name, op in sorted(model["operations"].items())]  # fmt: skip
    shapes = model["shapes"]
    keep: dict[str, dict] = {}
    todo = list(BEDROCK_ROOTS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        s = shapes[name]
        out: dict = {"type": s["type"]}
        if s.get("union"):
            out["union"] = True
        if "enum" in s:
            out["enum"] = True
        if s.get("eventstream"):
            out["eventstream"] = True
        if s.get("document"):
            out["document"] = True
        if s["type"] == "structure":
            out["members"] = {}
            for m, ref in s["members"].items():
                if ref.get("location") in ("uri", "header", "querystring"):
                    out.setdefault("not_in_body", []).append(m)
                    continue
                out["members"][m] = ref["shape"]
                todo.append(ref["shape"])
        elif s["type"] == "list":
            out["member"] = s["member"]["shape"]
            todo.append(s["member"]["shape"])
        elif s["type"] == "map":
            out["key"], out["value"] = s["key"]["shape"], s["value"]["shape"]
            todo += [s["key"]["shape"], s["value"]["shape"]]
        keep[name] = out
    return ({"source": source, "operations": ops},
            {"source": source, "roots": list(BEDROCK_ROOTS), "shapes": dict(sorted(keep.items()))})


# -- writing -----------------------------------------------------------------------------


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compare instead of writing")
    p.add_argument("--openapi", help="an openapi.json file")
    p.add_argument("--openapi-commit", help="the commit that file is of")
    p.add_argument("--openapi-git", default=str(MIRROR), help="a git mirror of openai/openai-openapi")
    args = p.parse_args(argv)
    files: dict[Path, dict] = {}
    spec = read_openapi(args)
    if spec is not None:
        files[OUT / "openai-openapi.json"] = openai(*spec)
    else:
        print(f"openai: no OpenAPI document ({args.openapi_git}); openai-openapi.json kept", file=sys.stderr)
    for package in ("openai", "anthropic"):
        name, doc = sdk(package)
        files[OUT / name] = doc
    name, doc = google_genai()
    files[OUT / name] = doc
    ops, shapes = bedrock()
    files[OUT / "bedrock-runtime.json"] = ops
    files[DATA / "bedrock_runtime.json"] = shapes
    stale = []
    for path, doc in files.items():
        text = dump(doc)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for path in stale:
        print(f"{path.relative_to(ROOT)} is stale: run python tools/inventory.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
