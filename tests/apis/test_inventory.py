"""The endpoint inventories and field models, checked against the providers' own
machine-readable descriptions (tests/inventory/*.json, written by tools/inventory.py
with each source's version): OpenAI's OpenAPI document and its SDK's resources and types,
the Anthropic SDK's resources and types, google-genai's types, botocore's
`bedrock-runtime` service model (whose Converse shapes are tests/apis/bedrock/test_shapes.py's).

A provider that documents a new endpoint, or a new request field of an endpoint disguise
masks, fails here until the endpoint is declared with what disguise does with it (in its
API's module: `ENDPOINTS`) and the field is classified (docs/fields.md and the API's
table). Each committed record is checked, and so is the SDK installed in this venv (the
3.11 and 3.12 venvs pin different SDKs; each has its record)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys

import pytest
from fields_probe import observe
from inventory_util import ROOT, declared, instance, load, sdk_files, tool, unknown_at
from sdk_fields import all_paths, decide, load_tables

from disguiselib.apis import registry
from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.bedrock import runtime as bedrock
from disguiselib.apis.google import gemini as google
from disguiselib.apis.openai import legacy
from disguiselib.apis.openai import providers as openai
from disguiselib.base.wirespec import BINARY, HOSTED, MASKED, REFUSED, RESTORED, SCANNED, Endpoint

OPENAPI = load("openai-openapi.json")
BEDROCK = load("bedrock-runtime.json")
KINDS = {MASKED, RESTORED, SCANNED, BINARY, HOSTED, REFUSED}

# (method, path) of every documented operation per provider, and the prefix its paths
# are sent under.
OPENAI_OPS = sorted({(o["method"], o["path"]) for o in OPENAPI["operations"]}
                    | {(o["method"], o["path"]) for f in sdk_files("openai") for o in f["operations"]})  # fmt: skip
ANTHROPIC_OPS = sorted({(o["method"], o["path"]) for f in sdk_files("anthropic") for o in f["operations"]}
                       | {("GET", "/v1/messages/batches/{id}/results")})  # the batch's results_url  # fmt: skip
BEDROCK_OPS = sorted((o["method"], o["path"]) for o in BEDROCK["operations"])
PROVIDERS = {
    "openai": (openai.ENDPOINTS, OPENAI_OPS, "/v1"),
    "anthropic": (anthropic.ENDPOINTS, ANTHROPIC_OPS, ""),
    "bedrock": (bedrock.ENDPOINTS, BEDROCK_OPS, ""),
}


def test_the_records_name_their_sources() -> None:
    src = OPENAPI["source"]
    assert src["repository"] == "github.com/openai/openai-openapi" and re.fullmatch(r"[0-9a-f]{40}", src["commit"])
    assert len(OPENAPI["operations"]) > 200
    assert BEDROCK["source"]["package"] == "botocore" and len(BEDROCK_OPS) >= 10
    for package in ("openai", "anthropic"):
        files = sdk_files(package)
        assert files and all(f["source"]["package"] == package and len(f["operations"]) > 30 for f in files)


@pytest.mark.parametrize("package", ["openai", "anthropic"])
def test_the_installed_sdk_has_its_record(package: str) -> None:
    """The installed SDK's calls are recorded (run tools/inventory.py under this venv)."""
    version = importlib.metadata.version(package)
    assert version in {f["source"]["version"] for f in sdk_files(package)}, (package, version)


def test_the_records_are_what_the_script_writes() -> None:
    """`tools/inventory.py --check`: every record the installed versions (and the OpenAPI
    mirror, where this machine has one) would write is the committed one."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "inventory.py"), "--check"], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr


# -- endpoints ----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_every_documented_endpoint_is_declared_once(provider: str) -> None:
    endpoints, ops, _ = PROVIDERS[provider]
    missing = [(m, p) for m, p in ops if not declared(endpoints, m, instance(p))]
    assert not missing, f"{provider}: endpoints declared nowhere (declare each in its ENDPOINTS): {missing}"
    twice = [(m, p) for m, p in ops if len(declared(endpoints, m, instance(p))) > 1]
    assert not twice, twice


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_every_declared_endpoint_is_documented(provider: str) -> None:
    endpoints, ops, _ = PROVIDERS[provider]
    # which entries each documented operation routes to: once per operation, not once per
    # entry and operation (it is the same list each time; OpenAI's: 107 entries x 576 operations)
    routed = [(om, declared(endpoints, om, instance(op))) for om, op in ops]
    stale = []
    for e in endpoints:
        assert e.what in KINDS and (e.what != REFUSED or e.why), e
        for m in e.methods.split():
            if not any(e in got for om, got in routed if om == m):
                stale.append(f"{m} {e.path}")
    assert not stale, f"{provider}: declared, but documented nowhere: {stale}"


def _routed_as_declared(e: Endpoint, method: str, path: str) -> str | None:
    """What is wrong with how the engine treats method on path, declared as e (None: nothing)."""
    api = registry.recognise(method, path)
    why = registry.refused(method, path)
    if e.what == MASKED:
        ok = api is not None and (api.request_rule is not None or api.request_body is not None)
        return None if ok else f"not masked (api {api and api.name})"
    if e.what == RESTORED:
        return None if api is not None and api.request_rule is None else f"not restored (api {api and api.name})"
    if api is not None:
        return f"routed to {api.name}"
    if e.what == REFUSED:
        return None if why == e.why else f"not refused ({why})"
    if why is not None:
        return "refused"
    if e.what in (SCANNED, BINARY) and not registry.llm_shaped(path):
        return "not LLM-shaped: a gateway's host would let it pass unscanned"
    return None


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_the_engine_does_what_each_entry_says(provider: str) -> None:
    endpoints, ops, prefix = PROVIDERS[provider]
    wrong = []
    for m, p in ops:
        path = prefix + instance(p)
        (e,) = declared(endpoints, m, instance(p))
        err = _routed_as_declared(e, m, path)
        if err is not None:
            wrong.append(f"{m} {p} declared {e.what}: {err}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("package", ["openai", "anthropic"])
def test_every_call_of_the_installed_sdk_is_declared(package: str) -> None:
    pytest.importorskip(package)
    endpoints, _, _ = PROVIDERS[package]
    calls = tool().sdk_calls(package)
    assert len(calls) > 30
    missing = [(c["method"], c["path"]) for c in calls if not declared(endpoints, c["method"], instance(c["path"]))]
    assert not missing, f"the installed {package} SDK calls endpoints declared nowhere: {missing}"


def test_every_operation_of_the_installed_service_model_is_declared() -> None:
    _, shapes = tool().bedrock()
    installed = tool().bedrock()[0]["operations"]
    missing = [o["name"] for o in installed if not declared(bedrock.ENDPOINTS, o["method"], instance(o["path"]))]
    assert not missing, missing
    assert shapes["shapes"]


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/uploads/up_1/parts"), ("POST", "/v1/realtime/calls"), ("POST", "/openai/v1/realtime/calls"),
     ("POST", "/v1/live/sessions"), ("POST", "/model/amazon.nova-sonic-v1%3A0/invoke-with-bidirectional-stream")],
)  # fmt: skip
def test_refused_endpoints_say_why_and_what_to_do(method: str, path: str) -> None:
    why = registry.refused(method, path)
    assert why is not None and "disguise_allow_unknown" in why
    assert registry.recognise(method, path) is None and registry.refused("GET", path) is None


# -- request fields ------------------------------------------------------------------------------

# The masked JSON endpoints of the OpenAPI document and the docs/fields.md table that
# classifies their request fields (the engine's table is probed against each row by
# tests/base/test_fields_coverage.py; here every field of the description must have
# a row, and behave as it says).
TABLED = {
    ("POST", "/chat/completions"): "chat-request",
    ("POST", "/chat/completions/{completion_id}"): "chat-request",
    ("POST", "/responses"): "responses-request",
    ("POST", "/responses/input_tokens"): "responses-request",
    ("POST", "/responses/compact"): "responses-request",
}
# ... and those whose rule tree is their table (apis/openai/legacy.py): every field named in it.
RULED = {("POST", "/completions"): legacy.COMPLETIONS_REQUEST, ("POST", "/embeddings"): legacy.EMBEDDINGS_REQUEST}
SAME = {("masked", "masked-keys"), ("restored", "restored-keys")}


def _op(method: str, path: str) -> dict:
    return next(o for o in OPENAPI["operations"] if o["method"] == method and o["path"] == path)


def test_every_masked_json_endpoint_has_its_fields_checked() -> None:
    masked = {(m, p) for m, p in OPENAI_OPS if declared(openai.ENDPOINTS, m, instance(p))[0].what == MASKED
              and "application/json" in next((o["request"] for o in OPENAPI["operations"]
                                              if (o["method"], o["path"]) == (m, p)), [])}  # fmt: skip
    assert masked == set(TABLED) | set(RULED)


@pytest.mark.parametrize(("method", "path"), list(TABLED))
def test_every_request_field_of_the_description_has_a_row(method: str, path: str) -> None:
    surface = TABLED[(method, path)]
    fields = _op(method, path)["fields"]
    assert len(fields) > 1
    tables = load_tables()
    missing = [p for p in fields if decide(tables, surface, p) is None]
    assert not missing, f"{method} {path}: fields of the OpenAPI document with no row in docs/fields.md: {missing}"
    wrong = []
    for p, kind in fields.items():
        row = decide(tables, surface, p)
        assert row is not None
        if row[0].decision in ("logprobs", "not-in-body"):
            continue
        got = observe(surface, p, kind)
        if got != row[0].decision and not (kind == "json" and (row[0].decision, got) in SAME):
            wrong.append(f"{p}: row `{row[0].pattern}` says {row[0].decision}, the code: {got}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("method", "path"), list(RULED))
def test_every_request_field_of_the_description_is_in_the_table(method: str, path: str) -> None:
    fields = _op(method, path)["fields"]
    unknown = sorted({u for p in fields if (u := unknown_at(RULED[(method, path)], p)) is not None})
    assert not unknown, f"{method} {path}: fields the table does not name (masked as unknown): {unknown}"


def test_the_field_walk_finds_an_unknown_field() -> None:
    """unknown_at itself (a walk that knew everything would make the others pass)."""
    assert unknown_at(legacy.COMPLETIONS_REQUEST, ".no_such_field") == ".no_such_field"
    assert unknown_at(legacy.COMPLETIONS_REQUEST, ".prompt") is None


# -- the SDKs' types: every committed version's, in every venv ----------------------------------


@pytest.mark.parametrize("package", ["openai", "anthropic"])
def test_every_field_of_every_recorded_sdk_has_its_row(package: str) -> None:
    """tests/base/test_fields_coverage.py checks the installed SDK's types against
    docs/fields.md; this checks the other venv's SDK too, from its record: a field only a
    newer (or older) SDK has needs its row all the same, and behaves as it says."""
    tables = load_tables()
    installed = {(s, p) for s, p, _ in all_paths()}
    missing, wrong, n = [], [], 0
    for f in sdk_files(package):
        for surface, paths in f["fields"].items():
            for p, kind in paths.items():
                n += 1
                row = decide(tables, surface, p)
                if row is None:
                    missing.append(f"{f['source']['version']} {surface} {p}")
                elif (surface, p) not in installed and row[0].decision not in ("logprobs", "not-in-body"):
                    got = observe(surface, p, kind)
                    if got != row[0].decision and not (kind == "json" and (row[0].decision, got) in SAME):
                        wrong.append(f"{surface} {p}: row says {row[0].decision}, the code: {got}")
    assert n > 500
    assert not missing, f"fields of a recorded {package} SDK with no row in docs/fields.md: {missing}"
    assert not wrong, "\n".join(wrong)


# A part's server-side tool call and response: left to the fail-closed default by design
# (their names are Gemini Live's messages, spelled in apis/google/live.py only;
# tests/apis/google/test_gemini_request.py lists them too).
GENAI_DEFAULTED = (".parts[].toolCall", ".parts[].toolResponse")


def _genai_records() -> list[dict]:
    return [json.loads(f.read_text()) for f in sorted((ROOT / "tests" / "inventory").glob("google-genai-*.json"))]


def test_the_installed_google_genai_has_its_record() -> None:
    pytest.importorskip("google.genai")
    name, doc = tool().google_genai()
    assert doc in _genai_records(), f"run python tools/inventory.py under this venv ({name})"


@pytest.mark.parametrize("side", ["request", "response"])
def test_every_google_genai_field_is_in_the_tables(side: str) -> None:
    """Every string-bearing field of a GenerateContent request (as google-genai puts it on
    the wire) and response, of every recorded google-genai version and of the installed
    one, is named in apis/google/gemini.py's tables (or lies in a subtree a table decides
    whole): a field the SDK adds fails here instead of being masked unseen."""
    rule = google.GENERATE_REQUEST if side == "request" else google.RESPONSE
    records = _genai_records()
    if importlib.util.find_spec("google.genai") is not None:
        records.append(tool().google_genai()[1])
    assert len(records) >= 2
    unknown: dict[str, set[str]] = {}
    for r in records:
        assert len(r[side]) > 100
        for p in r[side]:
            u = unknown_at(rule, p)
            if u is not None and not u.endswith(GENAI_DEFAULTED):
                unknown.setdefault(u, set()).add(r["source"]["version"])
    assert not unknown, f"google-genai {side} fields no table names: {sorted(unknown.items())}"
