"""Folders that name their concerns (issue 25): move `addon/disguiselib/core/` and
`providers/` into `wire/` (framers, the JSON scanner), `rules/` (the rule engine),
`base/` (the field model, masking and restoring, the stream base classes, the wire
specs) and `apis/<family>/` (one package per API family, above them), with
`apis/registry.py` above them all; rewrite every import, dotted name and path that
names a moved module; move the tests to mirror the source; set the new floors.

    python tools/relayout.py            # on a clean checkout: moves, rewrites, stages (git add)
    python tools/relayout.py --check    # only the plan: every module and test file maps (exit 1 if not)
    python tools/relayout.py --commit   # the same as the first, and commits

Run it with the project's venv (its ruff sorts the rewritten imports), after every branch
is merged: `.venv/bin/python tools/relayout.py --commit`, then the whole suite.

It runs on a clean tree only, and is idempotent: on a tree already laid out it says so
and does nothing. A module in `core/` or `providers/` no rule below places, an import it
cannot read (a star import, `import disguiselib.providers`), a path it cannot adjust
makes it stop before it changes anything, with the place named.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHITECTURE_MD = HERE / "relayout" / "architecture.md"
# Files the move adds (from tools/relayout/): the OpenAI providers' module had its tests
# only by name prefix (test_openai_*.py); in its own package it gets its own.
NEW_FILES = {"tests/apis/openai/test_providers.py": HERE / "relayout" / "test_providers.py"}

# Where each module goes, first match wins: (old path under addon/disguiselib, new path).
# A `*` in the old path is one name part, `{}` in the new one what it matched: a new
# module from another branch (providers/cohere_*.py) lands by its API's prefix.
MOVES: list[tuple[str, str]] = [
    # wire/: bytes in, bytes out, no rules: the framers, Content-Encoding, the JSON scanner
    ("core/sse.py", "wire/sse.py"),
    ("core/eventstream.py", "wire/eventstream.py"),
    ("core/jsonarray.py", "wire/jsonarray.py"),
    ("core/decoding.py", "wire/decoding.py"),
    ("core/jsonspan.py", "wire/jsonspan.py"),
    ("core/text.py", "wire/text.py"),
    # rules/: mapping files -> compiled matchers, the forward and reverse engines
    *[(f"core/{m}.py", f"rules/{m}.py") for m in (
        "mappings", "yamlfile", "rules", "accept", "restorer", "session", "fakes", "triggers", "found",
        "linear", "rxsyntax", "validators", "tlds", "words",
    )],  # fmt: skip
    # base/: what every API is built from: specs, the field model, masking, restoring,
    # the stream and channel base classes, hold-back windows, realtime connections
    ("core/holdback.py", "base/holdback.py"),
    *[(f"providers/{m}.py", f"base/{m}.py") for m in (
        "wirespec", "fields", "media", "bodies", "masking", "restore", "stream", "channels", "realtime", "logprobs",
    )],  # fmt: skip
    # apis/: one package per API family; the registry that lists them all above them
    ("providers/registry.py", "apis/registry.py"),
    ("providers/inventory.py", "apis/inventory.py"),  # every provider's endpoints: beside the registry
    ("providers/anthropic.py", "apis/anthropic/messages.py"),
    ("providers/anthropic_*.py", "apis/anthropic/{}.py"),
    ("providers/openai.py", "apis/openai/providers.py"),
    ("providers/openai_chat.py", "apis/openai/chat.py"),
    ("providers/openai_responses.py", "apis/openai/responses.py"),
    ("providers/responses_fields.py", "apis/openai/responses_fields.py"),
    ("providers/legacy.py", "apis/openai/legacy.py"),
    ("providers/batch.py", "apis/openai/batch.py"),
    ("providers/openai_*.py", "apis/openai/{}.py"),
    ("providers/google.py", "apis/google/gemini.py"),
    ("providers/gemini_*.py", "apis/google/{}.py"),
    ("providers/bedrock.py", "apis/bedrock/runtime.py"),
    ("providers/bedrock_*.py", "apis/bedrock/{}.py"),
    ("providers/cohere.py", "apis/cohere/chat.py"),
    ("providers/cohere_*.py", "apis/cohere/{}.py"),
]
OLD_DIRS = ("core", "providers")
# Files other than modules in core/ or providers/ (the inventory's service models), by the
# same kind of rule; their paths are rewritten wherever they are named.
DATA_MOVES: list[tuple[str, str]] = [
    ("providers/data/bedrock_*.json", "apis/bedrock/data/bedrock_{}.json"),
    ("providers/data/anthropic_*.json", "apis/anthropic/data/anthropic_{}.json"),
    ("providers/data/openai_*.json", "apis/openai/data/openai_{}.json"),
    ("providers/data/google_*.json", "apis/google/data/google_{}.json"),
    ("providers/data/gemini_*.json", "apis/google/data/gemini_{}.json"),
    ("providers/data/cohere_*.json", "apis/cohere/data/cohere_{}.json"),
]
# Each new package's docstring (its __init__.py holds nothing else).
PACKAGES = {
    "wire": "Bytes on the wire (sans I/O): SSE and JSON-array framing, AWS event-stream frames,\n"
    "Content-Encoding, the raw JSON span scanner and its text helpers. No rules, no API.",
    "rules": "The rule engine (sans I/O): mapping files -> validated rules -> compiled matchers;\n"
    "the forward (mask) and reverse (restore) engines, a request's session, fakes.",
    "base": "What every API is built from (sans I/O): wire specs, the field model and its walk,\n"
    "masking and restoring, the stream and channel base classes, hold-back windows, realtime\n"
    "connections. Names no API's words.",
    "apis": "One package per API family (sans I/O), each built from the public names of base/ and the floors below;\n"
    "`registry` lists every API and provider.",
    "apis.anthropic": "Anthropic's Messages API: field tables, stream, spec, provider.",
    "apis.openai": "OpenAI's APIs: Chat, Responses, legacy Completions/Embeddings, Assistants, stored\n"
    "objects, Realtime, batches and files; who serves them (OpenAI, Azure, compatible).",
    "apis.google": "Google's Gemini API (and Vertex): field tables, the SSE and JSON-array streams, Live.",
    "apis.bedrock": "AWS Bedrock Runtime: Converse, InvokeModel and its model families, event streams.",
    "apis.cohere": "Cohere's v2 Chat API.",
}
# Test files whose name is no module's (tests/<old>/test_<stem>.py): where they go.
TEST_HOMES = {
    "providers/test_openai_request.py": "apis/openai/test_chat_request.py",
}
DEFAULT_TEST_HOME = {"core": "rules", "providers": "base"}
# Texts that name the old folders themselves, and what they become (file, old, new).
SPECIAL = [
    ("bench/looplag.py",
     '    ("disguiselib/providers", "stream engine"),\n    ("disguiselib/core", "engine (core)"),\n',
     '    ("disguiselib/apis", "API streams"),\n    ("disguiselib/base", "stream engine"),\n'
     '    ("disguiselib/rules", "rule engine"),\n    ("disguiselib/wire", "framers"),\n'),
]  # fmt: skip
# The README's layout listing: its own words; when another change rewrote them, the
# script says so and the listing is left to be edited by hand.
SOFT = [
    ("README.md", '        core/                    the sans-IO engine: mappings, rules (linear, rxsyntax, validators, tlds,\n                                 words), jsonspan, sse, eventstream (AWS frames), jsonarray, holdback, decoding\n        providers/               per API: field rules, streams (anthropic, openai_chat, openai_responses,\n                                 legacy, google + gemini_stream/gemini_array, bedrock + bedrock_stream); realtime\n                                 WebSocket connections (realtime, openai_realtime, gemini_live); the shared vocabulary\n                                 (fields), masking, restore, stream, channels, logprobs; registry (which API)\n',
     "        wire/                    bytes on the wire (sans I/O): sse, jsonarray, eventstream (AWS frames),\n                                 decoding, jsonspan (the raw JSON scanner), text\n        rules/                   the rule engine: mappings, rules (linear, rxsyntax, validators, tlds, words),\n                                 accept, restorer, session, fakes, triggers, found\n        base/                    what every API is built from: wirespec, fields (the field model), media, bodies,\n                                 masking, restore, logprobs, stream, channels, holdback, realtime\n        apis/                    one package per API family, on the public names below: anthropic/,\n                                 openai/ (chat, responses, legacy, assistants, stored, realtime, batch), google/\n                                 (gemini, stream, array, live), bedrock/ (runtime, stream, models, chunks);\n                                 registry.py above them (which API a request is; every spec and provider)\n"),
    ("README.md", 'mirrors the package: core/ providers/ mitm/ inspect/ integration/ (real\n', 'mirrors the package: wire/ rules/ base/ apis/ mitm/ inspect/ (real\n'),
    ("README.md", '`tests/` mirrors `addon/disguiselib/`: `core/x.py` is tested in `tests/core/test_x.py`\n', '`tests/` mirrors `addon/disguiselib/`: `wire/x.py` is tested in `tests/wire/test_x.py`\n'),
]  # fmt: skip
# Private names imported across packages today, made public by the move (old module, name, new name).
PUBLIC = [("providers/fields.py", "_obj", "obj")]

SKIP_TEXT = ("CHANGELOG.md", "tests/corpus/", "tests/fixtures/", "tools/relayout", "tests/tools/test_relayout.py")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".sh", ".yml", ".yaml", ".in", ".txt", ""}


class Stop(SystemExit):
    def __init__(self, msg: str) -> None:
        super().__init__(f"relayout: {msg}")


# -- the plan ------------------------------------------------------------------------------


def _match(pattern: str, target: str, rel: str) -> str | None:
    rx = "^" + re.escape(pattern).replace(r"\*", r"([\w-]+)") + "$"
    m = re.match(rx, rel)
    if not m:
        return None
    return target.format(*m.groups())


def dotted(rel: str) -> str:
    """addon/disguiselib-relative path -> module name under disguiselib."""
    parts = list(Path(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@dataclass
class Plan:
    root: Path
    modules: dict[str, str] = field(default_factory=dict)  # old rel path -> new rel path (under disguiselib)
    data: dict[str, str] = field(default_factory=dict)  # the same, for files that are no module
    tests: dict[str, str] = field(default_factory=dict)  # old rel path -> new (under tests/)

    @property
    def pkg(self) -> Path:
        return self.root / "addon" / "disguiselib"

    def new_module(self, old: str) -> str:
        """Old dotted name (under disguiselib) -> new; unmoved names map to themselves."""
        for o, n in self.modules.items():
            if dotted(o) == old:
                return dotted(n)
        return old


def make_plan(root: Path) -> Plan:
    plan = Plan(root)
    pkg = plan.pkg
    unplaced = []
    for d in OLD_DIRS:
        for p in sorted((pkg / d).glob("*.py")) if (pkg / d).is_dir() else []:
            rel = p.relative_to(pkg).as_posix()
            if p.name == "__init__.py":
                continue
            new = next((t for pat, tgt in MOVES if (t := _match(pat, tgt, rel))), None)
            if new is None:
                unplaced.append(rel)
            else:
                plan.modules[rel] = new
        for p in sorted((pkg / d).rglob("*")) if (pkg / d).is_dir() else []:
            if p.is_file() and p.suffix != ".pyc" and p.parent.name != "__pycache__" and p.parent != pkg / d:
                rel = p.relative_to(pkg).as_posix()
                new = next((t for pat, tgt in DATA_MOVES if (t := _match(pat, tgt, rel))), None)
                if new is None:
                    unplaced.append(rel)
                else:
                    plan.data[rel] = new
    if unplaced:
        raise Stop(
            "no rule in tools/relayout.py MOVES (DATA_MOVES) places these files (add a line for each, by concern):\n  "
            + "\n  ".join(unplaced)
        )
    for top in sorted({Path(n).parts[0] for n in plan.modules.values()}):
        if (pkg / f"{top}.py").exists():
            raise Stop(f"addon/disguiselib/{top}.py exists: it and the new package {top}/ cannot both be; rename one")
    seen: dict[str, str] = {}
    for old, new in [*plan.modules.items(), *plan.data.items()]:
        if new in seen:
            raise Stop(f"{old} and {seen[new]} would both become {new}: add a rule for one of them")
        if (pkg / new).exists():
            raise Stop(f"{old} would become {new}, which exists already")
        seen[new] = old
    # tests/<old>/test_<stem>.py -> the new module's folder, test_<new name><rest>.py
    tests = root / "tests"
    for d in OLD_DIRS:
        if not (tests / d).is_dir():
            continue
        names = {Path(o).stem: n for o, n in plan.modules.items() if o.startswith(d + "/")}
        for p in sorted((tests / d).iterdir()):
            if p.name == "__pycache__":
                continue
            rel = p.relative_to(tests).as_posix()
            if p.is_dir() or not (p.name.startswith("test_") and p.suffix == ".py"):
                raise Stop(f"tests/{rel}: not a test_*.py file; place it by hand or add it to TEST_HOMES")
            if rel in TEST_HOMES:
                plan.tests[rel] = TEST_HOMES[rel]
                continue
            stem = p.stem.removeprefix("test_")
            owners = [m for m in names if stem == m or stem.startswith(m + "_")]
            if owners:
                m = max(owners, key=len)
                new = names[m]
                plan.tests[rel] = f"{Path(new).parent.as_posix()}/test_{Path(new).stem}{stem[len(m):]}.py"
            else:  # a test of several modules (test_fastpath, test_detect): with its folder's engine
                plan.tests[rel] = f"{DEFAULT_TEST_HOME[d]}/{p.name}"
    seen = {}
    for old, new in plan.tests.items():
        if new in seen:
            raise Stop(f"tests/{old} and tests/{seen[new]} would both become tests/{new}")
        if (tests / new).exists():
            raise Stop(f"tests/{old} would become tests/{new}, which exists already")
        seen[new] = old
    return plan


# -- imports -------------------------------------------------------------------------------


@dataclass
class Where:
    old: str | None  # the file's module name under disguiselib before the move (None: not in the package)
    new: str | None
    is_pkg: bool = False


def _package_of(mod: str, is_pkg: bool) -> list[str]:
    parts = ["disguiselib", *mod.split(".")] if mod else ["disguiselib"]
    return parts if is_pkg else parts[:-1]


def _emit(level: int, base: str, names: list[tuple[str, str | None]], indent: str) -> str:
    head = "from " + "." * level + base + " import "
    items = [n if a is None else f"{n} as {a}" for n, a in names]
    one = head + ", ".join(items)
    if len(indent) + len(one) <= 120:
        return one
    inner = indent + "    "
    return head + "(\n" + inner + (",\n" + inner).join(items) + "\n" + indent + ")"  # no magic trailing comma


def rewrite_imports(src: str, where: Where, plan: Plan, known: set[str], path: str) -> str:
    """The file's imports, pointed at the new places (relative ones stay relative,
    recomputed from where the file is now)."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    edits: list[tuple[int, int, str]] = []

    def pos(line: int, col: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode()[:col].decode())

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("disguiselib.") and a.name.removeprefix("disguiselib.").split(".")[0] in OLD_DIRS:
                    if a.asname is None:
                        raise Stop(f"{path}:{node.lineno}: `import {a.name}` without `as`: rewrite it by hand first")
            new_names = []
            changed = False
            for a in node.names:
                if a.name.startswith("disguiselib."):
                    n = "disguiselib." + plan.new_module(a.name.removeprefix("disguiselib."))
                    changed |= n != a.name
                    new_names.append(n if a.asname is None else f"{n} as {a.asname}")
                else:
                    new_names.append(a.name if a.asname is None else f"{a.name} as {a.asname}")
            if changed:
                edits.append((pos(node.lineno, node.col_offset), pos(node.end_lineno, node.end_col_offset),
                              "import " + ", ".join(new_names)))  # fmt: skip
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if not (node.module or "").startswith("disguiselib"):
                continue
            base_old = (node.module or "").removeprefix("disguiselib").lstrip(".")
        else:
            if where.old is None:
                raise Stop(f"{path}:{node.lineno}: a relative import outside the package")
            pkg = _package_of(where.old, where.is_pkg)[1:]
            up = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            base_old = ".".join([*up, *([node.module] if node.module else [])])
        groups: dict[str, list[tuple[str, str | None]]] = {}
        for a in node.names:
            if a.name == "*":
                raise Stop(f"{path}:{node.lineno}: a star import: name what it imports first")
            full = f"{base_old}.{a.name}" if base_old else a.name
            if full in known:  # a module
                new = plan.new_module(full)
                nbase, _, nname = new.rpartition(".")
                groups.setdefault(nbase, []).append((nname, a.asname or (a.name if nname != a.name else None)))
            else:
                if base_old.split(".")[0] in OLD_DIRS and base_old not in known:
                    raise Stop(f"{path}:{node.lineno}: imports {a.name} from {base_old}, which is no module")
                if base_old in OLD_DIRS:
                    raise Stop(f"{path}:{node.lineno}: imports {a.name} from the package {base_old}")
                groups.setdefault(plan.new_module(base_old), []).append((a.name, a.asname))
        new_pkg = _package_of(where.new, where.is_pkg) if where.new is not None else None
        stmts = []
        for nbase, names in groups.items():
            target = ["disguiselib", *([p for p in nbase.split(".") if p])]
            if node.level == 0:
                stmts.append((0, ".".join(target), names))
            else:
                assert new_pkg is not None
                c = 0
                while c < min(len(new_pkg), len(target)) and new_pkg[c] == target[c]:
                    c += 1
                stmts.append((len(new_pkg) - c + 1, ".".join(target[c:]), names))
        orig = [(node.level, node.module or "", [(a.name, a.asname) for a in node.names])]
        if stmts == orig:
            continue
        indent = " " * node.col_offset
        tail = lines[node.end_lineno - 1][len(lines[node.end_lineno - 1].encode()[: node.end_col_offset].decode()) :]
        comment = tail.strip() if tail.strip().startswith("#") else ""
        end = pos(node.end_lineno, node.end_col_offset)
        if comment == "# noqa: E402":  # put back on every line by ruff --add-noqa once isort has run
            end += len(tail.rstrip("\r\n"))
            comment = ""
        text = ("  " + comment + "\n" + indent if comment else "\n" + indent).join(
            _emit(level, base, names, indent) for level, base, names in stmts
        )
        edits.append((pos(node.lineno, node.col_offset), end, text))
    for a, b, text in sorted(edits, reverse=True):
        src = src[:a] + text + src[b:]
    return src


# -- dotted names, paths, specs ------------------------------------------------------------


def rewrite_text(text: str, plan: Plan, path: str) -> str:
    mods = {Path(o).with_suffix("").as_posix(): Path(n).with_suffix("").as_posix() for o, n in plan.modules.items()}

    # test paths first: tests/providers/test_x.py, providers/test_x.py (relative to tests/)
    def test_path(m: re.Match) -> str:
        rel = f"{m.group(2)}/{m.group(3)}.py"
        if rel not in plan.tests:
            return m.group(0)
        return (m.group(1) or "") + plan.tests[rel]

    text = re.sub(r"(?<![\w./-])(tests/)?(core|providers)/(test_\w+)\.py", test_path, text)

    def mod_path(m: re.Match) -> str:
        key = f"{m.group(2)}/{m.group(3)}"
        return m.group(1) + mods[key] + (m.group(4) or "") if key in mods else m.group(0)

    text = re.sub(r"(?<![\w./-])((?:addon/)?(?:disguiselib/)?)(core|providers)/(\w+)(\.py)?\b", mod_path, text)

    def mod_dotted(m: re.Match) -> str:
        key = f"{m.group(1)}/{m.group(2)}"
        if key in mods:
            return "disguiselib." + mods[key].replace("/", ".")
        raise Stop(f"{path}: `{m.group(0)}` names no module the plan knows")

    def from_import(m: re.Match) -> str:  # an import inside a string (a child process's -c)
        key = f"{m.group(1)}/{m.group(2)}"
        if key not in mods:
            raise Stop(f"{path}: `{m.group(0)}` names no module the plan knows")
        base, _, name = mods[key].rpartition("/")
        alias = f" as {m.group(2)}" if name != m.group(2) else ""
        return f"from disguiselib.{base.replace('/', '.')} import {name}{alias}"

    text = re.sub(r"from disguiselib\.(core|providers) import (\w+)(?![\w,])", from_import, text)
    text = re.sub(r"disguiselib\.(core|providers)\.(\w+)", mod_dotted, text)

    def quoted_dotted(m: re.Match) -> str:  # "core.sse" as a string of its own: a module's name
        key = f"{m.group(2)}/{m.group(3)}"
        return m.group(1) + mods[key].replace("/", ".") + m.group(1) if key in mods else m.group(0)

    if path.endswith(".py"):
        text = re.sub(r"""(["'])(core|providers)\.(\w+)\1""", quoted_dotted, text)
    for old, new in plan.data.items():
        text = re.sub(rf"(?<![\w./-])((?:addon/)?(?:disguiselib/)?){re.escape(old)}", lambda m, n=new: m.group(1) + n, text)
    text = text.replace('"providers/data/*.json"', '"apis/*/data/*.json"')
    # the data folder itself, when all its files went to one new folder
    homes = {Path(n).parent.as_posix() for o, n in plan.data.items() if o.startswith("providers/data/")}
    if len(homes) == 1:
        home = homes.pop()
        text = re.sub(r"(?<![\w./-])((?:addon/)?(?:disguiselib/)?)providers/data/", lambda m: m.group(1) + home + "/", text)
        parts = " / ".join(f'"{x}"' for x in home.split("/"))
        text = text.replace('"disguiselib" / "providers" / "data"', f'"disguiselib" / {parts}')
    # the one f-string over the specs' module names (which become full dotted names below)
    text = text.replace('f"disguiselib.providers.{m}"', 'f"disguiselib.{m}"')
    bad = re.search(r"disguiselib[./](core|providers)\b(?![\w/])", text)
    if bad and path.endswith(".py"):
        line = text[: bad.start()].count("\n") + 1
        raise Stop(f"{path}:{line}: `{bad.group(0)}` names the old package itself: rewrite it by hand")
    return text


def rewrite_spec_modules(src: str, plan: Plan, path: str) -> str:
    """WireSpec(name, ("anthropic",), ...) -> ("apis.anthropic.messages",): a spec names
    the modules that own its words by their full name under disguiselib."""
    olds = {Path(o).stem: dotted(n) for o, n in plan.modules.items() if o.startswith("providers/")}
    tree = ast.parse(src)
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "WireSpec"):
            continue
        arg = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "modules"), None)
        if arg is None:
            continue
        if not isinstance(arg, ast.Tuple) or not all(isinstance(e, ast.Constant) for e in arg.elts):
            raise Stop(f"{path}:{node.lineno}: a WireSpec whose modules are no tuple of literals")
        for e in arg.elts:
            assert isinstance(e, ast.Constant)
            if e.value in olds:
                edits.append((e.lineno, e.col_offset, e.end_col_offset, repr(olds[e.value]).replace("'", '"')))
            elif path.startswith("addon/") and not str(e.value).startswith("apis."):
                raise Stop(f"{path}:{e.lineno}: WireSpec module {e.value!r} is no module the plan moves")
    lines = src.splitlines(keepends=True)
    for ln, a, b, text in sorted(edits, reverse=True):
        s = lines[ln - 1].encode()
        lines[ln - 1] = (s[:a] + text.encode() + s[b:]).decode()
    return "".join(lines)


def adjust_depth(src: str, delta: int, path: str) -> str:
    """A moved test's `Path(__file__).resolve().parents[N]`: N follows the new depth."""
    if delta == 0 or "__file__" not in src:
        return src
    out = []
    for i, line in enumerate(src.splitlines(keepends=True), 1):
        if re.search(r"(?<![\w.])__file__\b", line):
            m = re.search(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]", line)
            if not m or len(re.findall(r"(?<![\w.])__file__", line)) != 1:
                raise Stop(f"{path}:{i}: `__file__` used other than as Path(__file__).resolve().parents[N]")
            line = line[: m.start(1)] + str(int(m.group(1)) + delta) + line[m.end(1) :]
        out.append(line)
    return "".join(out)


def make_public(srcs: dict[str, str], owner: str, importers: list[str], old: str, new: str) -> None:
    """Rename one private name in the module that defines it and those that import it."""
    for p in [owner, *importers]:
        toks = list(tokenize.generate_tokens(io.StringIO(srcs[p]).readline))
        tree = ast.parse(srcs[p])
        top = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        if any(isinstance(n, ast.Name) and n.id == new for t in top for n in ast.walk(t)) or any(
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == new for n in tree.body
        ):
            raise Stop(f"{p}: already has a module-level name {new!r}; choose another public name for {old}")
        for fn in ast.walk(tree):  # a local `new` would hide the renamed one where both are used
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                bound = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
                bound |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                if new in bound and old in used:
                    raise Stop(f"{p}:{fn.lineno}: binds {new!r} and uses {old}; choose another public name")
        lines = srcs[p].splitlines(keepends=True)
        for t in sorted((t for t in toks if t.type == tokenize.NAME and t.string == old), key=lambda t: t.start,
                        reverse=True):  # fmt: skip
            ln, col = t.start
            lines[ln - 1] = lines[ln - 1][:col] + new + lines[ln - 1][col + len(old) :]
        srcs[p] = "".join(lines)


# -- tests/test_architecture.py ------------------------------------------------------------

# The floors, read from the merged test (other branches add modules to them): core/ and
# providers/ become the new folders, every other entry keeps its place among them.
NEW_FLOOR = {0: 0, 1: 1, 2: 4, 3: 6, 4: 7, 5: 8, 6: 9}
EXPAND = {
    "core": [("wire.", 1), ("wire", 1), ("rules.", 2), ("rules", 2), ("base.", 3), ("base", 3)],
    "providers": [("apis.registry", 5), ("apis.inventory", 5), ("apis.", 4), ("apis", 4)],  # the registry above the API packages
}


def floors_block(src: str) -> str:
    m = re.search(r"FLOORS: list\[tuple\[str, int\]\] = (\[\n.*?\])  # fmt: skip\nSANS_IO = (\d+)([^\n]*)", src, re.S)
    if not m:
        raise Stop("tests/test_architecture.py: no FLOORS list (and SANS_IO after it) to rewrite")
    out: list[tuple[str, int]] = []
    for prefix, f in ast.literal_eval(m.group(1)):
        top = prefix.rstrip(".")
        if top in EXPAND:
            out += [e for e in EXPAND[top] if e not in out]
        elif f in NEW_FLOOR:
            out.append((prefix, NEW_FLOOR[f]))
        else:
            raise Stop(f"tests/test_architecture.py: floor {f} of {prefix!r} has no place in the new floors")
    runs: list[list[tuple[str, int]]] = []
    for e in out:
        if runs and runs[-1][-1][1] == e[1]:
            runs[-1].append(e)
        else:
            runs.append([e])
    body = "\n".join("    " + ", ".join(f'("{p}", {f})' for p, f in r) + "," for r in runs)
    sans = NEW_FLOOR[int(m.group(2))]
    text = f"FLOORS: list[tuple[str, int]] = [\n{body}\n]  # fmt: skip\nSANS_IO = {sans}{m.group(3)}"
    return src[: m.start()] + text + src[m.end() :]


ARCH_EDITS: list[tuple[str, str]] = [
    (re.escape('p.write_text("from ..mitm import addon\\n")\n    ours, _ = imports("core.x", p)\n'
               '    assert "mitm.addon" in ours and floor("mitm.addon") > floor("core.x")'),
     'p.write_text("from ..mitm import addon\\n")\n    ours, _ = imports("rules.x", p)\n'
     '    assert "mitm.addon" in ours and floor("mitm.addon") > floor("rules.x")'),
    (re.escape('assert files_testing("core.sse") and files_testing("providers.anthropic")\n'
               '    assert not files_testing("core.no_such_module")'),
     'assert files_testing("wire.sse") and files_testing("apis.anthropic.messages")\n'
     '    assert not files_testing("wire.no_such_module")'),
    (re.escape('"""Each word of the APIs\' specs (providers/wirespec.py) -> the modules that may spell\n'
               "    it: its spec's."),
     '"""Each word of the APIs\' specs (base/wirespec.py) -> the modules that may spell\n'
     "    it: those of its spec's packages (apis/<family>/)."),
    (re.escape('return {w: {f"providers.{m}" for m in specs[0].modules} for w, specs in declared.items() '
               "if len(specs) == 1}"),
     "mods = modules()\n"
     '    return {w: {m for m in mods for own in specs[0].modules if m.startswith(own.rpartition(".")[0] + ".")}\n'
     "            for w, specs in declared.items() if len(specs) == 1}  # fmt: skip"),
    (re.escape("def test_an_apis_vocabulary_is_spelled_in_its_own_modules_only() -> None:"),
     "def test_an_apis_vocabulary_is_spelled_in_its_own_package_only() -> None:"),
    (re.escape("spec declares appears, in a string literal, only in that API's own modules: the"),
     "spec declares appears, in a string literal, only in that API's own package: the"),
]
ARCH_TAIL = '''

# -- a package uses only the public names of the others --------------------------------------------


def private_imports() -> list[str]:
    """Every private name (`_x`) a module imports from a module of another package: a
    package's modules share their private names, other packages use the public ones."""
    known = modules()
    out = []
    for mod, path in known.items():
        pkg = mod.rpartition(".")[0] if path.name != "__init__.py" else mod
        up_pkg = pkg.split(".") if pkg else []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0:
                if not (node.module or "").startswith("disguiselib"):
                    continue
                base = (node.module or "").removeprefix("disguiselib").lstrip(".")
            else:
                up = up_pkg[: len(up_pkg) - (node.level - 1)] if node.level > 1 else up_pkg
                base = ".".join([*up, *([node.module] if node.module else [])])
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and f"{base}.{a.name}" not in known:
                    if base.rpartition(".")[0] != pkg:
                        out.append(f"{mod} imports {a.name} from {base}")
    return out


def test_packages_import_only_each_others_public_names() -> None:
    bad = private_imports()
    assert not bad, "\\n".join(bad)
'''


def patch_architecture(src: str) -> str:
    src = floors_block(src)
    for pattern, repl in ARCH_EDITS:
        new, n = re.subn(pattern, lambda _m, r=repl: r, src, count=1, flags=re.S)
        if n != 1:
            raise Stop(f"tests/test_architecture.py: cannot find the text to replace ({pattern[:70]}...)")
        src = new
    return src.rstrip("\n") + "\n" + ARCH_TAIL


# -- docs/architecture.md -----------------------------------------------------------------

# The text tools/relayout/architecture.md was written from (main at 0d036cc): when the merged
# docs/architecture.md is still that text, the new one replaces it whole; when another
# branch changed it, its paths are rewritten like every file's, the floors table is the
# new one, and each of the edits below is made where its text is still found (the others
# are named, to be made by hand).
ARCH_BASE_SHA256 = "945fbea284dddc4be39ded3539ec13f360f19a1a6f79110bc99bac99b6e8a1c7"
DOC_EDITS = [
    ("is one module,\n`providers/<api>.py`", "is one package,\n`apis/<family>/`"),
    ("the API's request rule from `providers/<api>.py` — the API's field table — and",
     "the API's request rule from `apis/<family>/<api>.py` — the API's field table — and"),
    ("`openai_chat.py`, `openai_responses.py`, `legacy.py`, `gemini_stream.py`), which",
     "`apis/openai/chat.py`, `responses.py`, `legacy.py`, `apis/google/stream.py`), which"),
    ("`apis/openai/realtime.py` / `gemini_live.py`", "`apis/openai/realtime.py` / `apis/google/live.py`"),
    ("`anthropic.view`). Declare", "`apis/anthropic/messages.view`). Declare"),
    ("`tests/providers/test_<api>*.py`", "`tests/apis/<family>/test_<module>*.py`"),
    ("(`anthropic.PROVIDER`, `openai.OPENAI`/`AZURE`/`COMPATIBLE`, `google.GEMINI`/`VERTEX`,",
     "(`apis/anthropic/messages.PROVIDER`, `apis/openai/providers.OPENAI`/`AZURE`/`COMPATIBLE`,\n"
     "`apis/google/gemini.GEMINI`/`VERTEX`,"),
    ("`bedrock.PROVIDER`", "`apis/bedrock/runtime.PROVIDER`"),
    ("`cohere.PROVIDER`", "`apis/cohere/chat.PROVIDER`"),
    ("`providers/<api>.py`", "`apis/<family>/` (a new family: a new package, its docstring in `__init__.py`)"),
    ("modules that own its words", "modules (by full name, `\"apis.cohere.chat\"`) whose packages own its words"),
    ("`cohere_stream.py`", "`apis/cohere/stream.py`"),
    ("`cohere.py`", "`apis/cohere/chat.py`"),
    ("the checks against the providers' machine-readable descriptions, and the folders.",
     "the checks against the providers' machine-readable descriptions."),
]  # fmt: skip


def architecture_doc(merged: str, rewritten: str) -> str:
    import hashlib

    new = ARCHITECTURE_MD.read_text(encoding="utf-8")
    if hashlib.sha256(merged.encode()).hexdigest() == ARCH_BASE_SHA256:
        return new
    lines, ours = rewritten.splitlines(keepends=True), new.splitlines(keepends=True)

    def table(ls: list[str]) -> tuple[int, int]:
        a = next(i for i, ln in enumerate(ls) if ln.startswith("| floor |"))
        return a, next(i for i in range(a, len(ls)) if not ls[i].startswith("|"))

    a, b = table(lines)
    oa, ob = table(ours)
    oe = next(i for i in range(ob + 1, len(ours)) if not ours[i].strip())  # the paragraph after it
    text = "".join(lines[:a] + ours[oa:oe] + lines[b:])
    for old, repl in DOC_EDITS:
        if old in text:
            text = text.replace(old, repl)
    left = sorted({m for m in re.findall(r"`(?:providers|core)/[^`]*`", text)})
    if left:
        print("relayout: WARNING docs/architecture.md changed on another branch; still to edit by hand: " + ", ".join(left))
    return text


# -- the run -------------------------------------------------------------------------------


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def laid_out(root: Path) -> bool:
    pkg = root / "addon" / "disguiselib"
    return not any((pkg / d).is_dir() and any((pkg / d).glob("*.py")) for d in OLD_DIRS) and (pkg / "base").is_dir()


def run(root: Path, check_only: bool = False, commit: bool = False) -> Plan | None:
    if laid_out(root):
        print("relayout: already laid out (no core/ or providers/ module left); nothing to do")
        return None
    plan = make_plan(root)
    if check_only:
        return plan
    if git(root, "status", "--porcelain", "--untracked-files=normal").strip():
        raise Stop("the tree has uncommitted changes or untracked files: commit or stash them first")
    pkg = plan.pkg
    known = {dotted(p.relative_to(pkg).as_posix()) for p in pkg.rglob("*.py")}
    # what every file becomes, computed before anything moves
    files = [f for f in git(root, "ls-files").splitlines() if (root / f).is_file()]
    srcs: dict[str, str] = {}
    for f in files:
        if f.startswith(SKIP_TEXT) or Path(f).suffix not in TEXT_SUFFIXES:
            continue
        try:
            srcs[f] = (root / f).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    orig = dict(srcs)
    moved: dict[str, str] = {f"addon/disguiselib/{o}": f"addon/disguiselib/{n}" for o, n in plan.modules.items()}
    moved |= {f"tests/{o}": f"tests/{n}" for o, n in plan.tests.items()}
    moved |= {f"addon/disguiselib/{o}": f"addon/disguiselib/{n}" for o, n in plan.data.items()}
    # private names imported across the new packages: public
    for owner_rel, old, new in PUBLIC:
        owner = f"addon/disguiselib/{owner_rel}"
        if owner not in srcs:
            continue
        mod = dotted(owner_rel)
        importers = [f for f in srcs if f.endswith(".py") and f != owner
                     and re.search(rf"\b{re.escape(old)}\b", srcs[f])
                     and (mod.rpartition(".")[2] in srcs[f])]  # fmt: skip
        make_public(srcs, owner, importers, old, new)
    out: dict[str, str] = {}
    for f, src in srcs.items():
        if f == "tests/test_architecture.py":
            src = patch_architecture(src)
        if f.endswith(".py"):
            where = Where(None, None)
            if f.startswith("addon/disguiselib/"):
                rel = f.removeprefix("addon/disguiselib/")
                where = Where(dotted(rel), dotted(plan.modules.get(rel, rel)), rel.endswith("__init__.py"))
            try:
                src = rewrite_imports(src, where, plan, known, f)
            except SyntaxError as e:
                raise Stop(f"{f}: does not parse ({e})") from e
            src = rewrite_spec_modules(src, plan, f)
            if f in moved and f.startswith("tests/"):
                delta = len(Path(moved[f]).parts) - len(Path(f).parts)
                src = adjust_depth(src, delta, f)
        for sf, old, new in SPECIAL:
            if sf == f:
                if src.count(old) != 1:
                    raise Stop(f"{f}: cannot find the text to replace ({old.strip()[:60]}...)")
                src = src.replace(old, new)
        for sf, old, new in SOFT:
            if sf == f:
                if src.count(old) != 1:
                    print(f"relayout: WARNING {f}: its layout listing changed; update it by hand ({old.strip()[:50]}...)")
                src = src.replace(old, new)
        src = rewrite_text(src, plan, f)
        if src != orig[f] or f in moved:
            out[f] = src
    # now move, write, and add the packages
    for old, new in moved.items():
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", old, new)
    for f, src in out.items():
        (root / moved.get(f, f)).write_text(src, encoding="utf-8")
    for d in OLD_DIRS:
        init = pkg / d / "__init__.py"
        if init.exists():
            git(root, "rm", "-q", str(init.relative_to(root)))
        for sub in (*sorted((pkg / d).rglob("*"), reverse=True), pkg / d, root / "tests" / d):
            if sub.is_dir():
                shutil.rmtree(sub / "__pycache__", ignore_errors=True)
                if sub.name != "__pycache__" and not any(sub.iterdir()):
                    sub.rmdir()
    for name, doc in PACKAGES.items():
        d = pkg.joinpath(*name.split("."))
        if d.is_dir() and not (d / "__init__.py").exists():
            (d / "__init__.py").write_text(f'"""{doc}"""\n', encoding="utf-8")
    for d in sorted({Path(n).parent for n in plan.modules.values()}):
        if not (pkg / d / "__init__.py").exists():
            raise Stop(f"addon/disguiselib/{d}: a new package without a docstring in PACKAGES")
    (root / "docs" / "architecture.md").write_text(
        architecture_doc(orig["docs/architecture.md"], out.get("docs/architecture.md", orig["docs/architecture.md"])),
        encoding="utf-8",
    )
    for dst, src_file in NEW_FILES.items():
        if (root / dst).exists():
            raise Stop(f"{dst} exists already")
        shutil.copyfile(src_file, root / dst)
    changed = [moved.get(f, f) for f in out if f.endswith(".py")] + list(NEW_FILES)
    ruff = Path(sys.executable).parent / "ruff"
    exe = str(ruff) if ruff.exists() else shutil.which("ruff")
    if exe is None:
        raise Stop("ruff is not installed: the rewritten imports need sorting (ruff check --fix --select I)")
    subprocess.run([exe, "check", "--quiet", "--fix", "--select", "I", *changed], cwd=root, check=False)
    # scripts that import after setting sys.path: their merged imports keep the noqa
    late = [moved.get(f, f) for f in out if f.endswith(".py") and "noqa: E402" in orig[f]]
    if late:
        subprocess.run([exe, "check", "--quiet", "--select", "E402", "--add-noqa", *late], cwd=root, check=False)
    # nothing may still name the old folders
    left = []
    for f in git(root, "ls-files", "--others", "--cached", "--exclude-standard", "addon", "tests", "bench",
                 "mutation", "tools").splitlines():  # fmt: skip
        if not f.endswith(".py") or f.startswith(SKIP_TEXT) or not (root / f).exists():
            continue
        t = (root / f).read_text(encoding="utf-8")
        if re.search(r"disguiselib\.(core|providers)\b|from \.+(core|providers)\b|\"(core|providers)\"\s*/", t):
            left.append(f)
    if left:
        raise Stop("these files still name core/ or providers/ after the rewrite:\n  " + "\n  ".join(left))
    git(root, "add", "-A", "addon", "tests", "docs", "bench", "mutation", "tools", ".")
    print(f"relayout: moved {len(plan.modules)} modules and {len(plan.tests)} test files, rewrote {len(out)} files")
    if commit:
        git(root, "commit", "-q", "-m", "Folders that name their concerns: wire/, rules/, base/, apis/<family>/ "
            "(tools/relayout.py)")  # fmt: skip
        print("relayout: committed")
    return plan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=HERE.parent, help="the checkout (default: this one)")
    ap.add_argument("--check", action="store_true", help="only print the plan; fail if a module has no place")
    ap.add_argument("--commit", action="store_true", help="commit the result")
    a = ap.parse_args(argv)
    plan = run(a.root.resolve(), check_only=a.check, commit=a.commit)
    if plan is not None and a.check:
        for o, n in plan.modules.items():
            print(f"addon/disguiselib/{o} -> {n}")
        for o, n in plan.tests.items():
            print(f"tests/{o} -> tests/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
