"""`make mutation`: mutmut over the core, one module at a time, each with the tests that
cover it. Prints the score per module and overall; survivors are listed by name (see
one with `cd .mutation/<module> && ../../.venv/bin/mutmut show NAME`).

    python mutation/run.py                 every module below, one after the other
    python mutation/run.py sse holdback    only these
    python mutation/run.py --show sse      the last run's survivors of a module, as diffs
    python mutation/run.py --check sse     those survivors against the tests as they are now
    python mutation/run.py --check sse 2 'x_parse_event__mutmut_1*'   some of them, 2 at a time
    python mutation/run.py --score sse     the last run's score again, from mutmut's records
    python mutation/run.py masking --since REV   only the functions changed since commit REV
    python mutation/run.py masking --only mask_doc,mask_body   only these functions and classes

Why mutmut (3.x) and not cosmic-ray: mutmut runs the test suite once in-process to learn
which tests call which function, then forks per mutant and runs only those tests — no
interpreter start, no collection, no Hyperscan load per mutant — so a module's mutants
cost what its own tests cost. cosmic-ray starts the whole test command per mutant (about
2 s of start-up here before the first test runs). See mutation/README.md for figures.

mutmut names a mutant by the module's path, and knows a `src/` layout but not ours
(`addon/`): each module runs in a staging folder `.mutation/<module>/` whose `src` is a
fresh copy of `addon/` with the shipped mappings as package data (see _stage_source),
with a pyproject that adds the module's [tool.mutmut] section. Hypothesis
runs a few examples per property there (profile "mutation"): a mutant that a property
catches at all, it catches in the first examples; a survivor is then checked by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / ".mutation"
# The prefilter's compiled databases (rules/hscache.cache_dir) the mutants' tests make: kept
# here, never in the user's cache (a mutant of linear.py compiles what the product would not)
CACHE = str(STAGE / "hsdb")
LINKED = ("tests", "mappings", "docs", "bench", "examples", "README.md")

# module (under addon/disguiselib/) -> the tests that cover it
MODULES: dict[str, tuple[str, list[str]]] = {
    "sse": ("wire/sse.py", ["tests/wire/test_sse.py", "tests/base/test_stream.py",
                            "tests/apis/anthropic/test_messages_stream.py", "tests/base/test_fields_streams.py"]),
    "holdback": ("base/holdback.py", ["tests/base/test_holdback.py"]),
    # the order placeholders are numbered in: the prompt's (a wrong one breaks prompt caching)
    "prompt": ("base/prompt.py", ["tests/base/test_prompt.py", "tests/wire/test_spanwalk_members.py"]),
    # copies of an original a rule found by its context: masked too, or refused (a leak if wrong)
    "copies": ("base/copies.py", ["tests/base/test_copies.py", "tests/test_pipeline.py"]),
    # Gemini Code Assist: Gemini's stream read through its wrapper (GeminiStream's hooks)
    "codeassist": ("apis/google/codeassist.py", ["tests/apis/google/test_codeassist.py"]),
    "jsonarray": ("wire/jsonarray.py", ["tests/wire/test_jsonarray.py", "tests/apis/google/test_array.py"]),
    "decoding": ("wire/decoding.py", ["tests/wire/test_decoding.py", "tests/base/test_stream.py"]),
    # a URL read decoded: where each decoded character was written, the edits put back there
    "percent": ("wire/percent.py", ["tests/wire/test_percent.py", "tests/wire/test_spanwalk.py"]),
    "jsonspan": ("wire/jsonspan.py", ["tests/wire/test_jsonspan.py", "tests/base/test_masking.py",
                                      "tests/base/test_restore.py", "tests/base/test_fields_requests.py"]),
    "rxsyntax": ("rules/rxsyntax.py", ["tests/rules/test_rxsyntax.py"]),
    "validators": ("rules/validators.py", ["tests/rules/test_validators.py"]),
    "linear": ("rules/linear.py", ["tests/rules/test_linear.py", "tests/rules/test_rules.py",
                                   # Prefilter.regions: the gate over a body's raw bytes
                                   "tests/rules/test_rawscan.py"]),
    # the raw pass: the strings it shows clean are left out of the walk, and the guard trusts its run
    "rawscan": ("rules/rawscan.py", ["tests/rules/test_rawscan.py", "tests/base/test_fieldwalk.py"]),
    "mappings": ("rules/mappings.py", ["tests/rules/test_mappings.py", "tests/rules/test_words.py"]),
    "rules": ("rules/rules.py", ["tests/rules/test_rules.py", "tests/base/test_holdback.py",
                                "tests/rules/test_linear.py", "tests/base/test_masking.py",
                                "tests/base/test_restore.py",
                                # find()'s NOTHING in the request's memo, which the guard reads
                                "tests/test_shared_parse.py"]),
    # a pattern rule's next accepted match (split out of rules.py: its tests are the same)
    "patterns": ("rules/patterns.py", ["tests/rules/test_patterns.py", "tests/rules/test_rules.py",
                                      "tests/rules/test_accept.py"]),
    # keywords as words, what the prefilter looks for, a candidate's span accepted
    "accept": ("rules/accept.py", ["tests/rules/test_accept.py", "tests/rules/test_rules.py"]),
    # the prefilter's compiled databases on disk
    "hscache": ("rules/hscache.py", ["tests/rules/test_hscache.py", "tests/rules/test_linear.py"]),
    "stream": ("base/stream.py", ["tests/base/test_stream.py", "tests/apis/anthropic/test_messages_stream.py",
                                       "tests/base/test_fields_streams.py", "tests/apis/openai/test_chat.py",
                                       "tests/apis/openai/test_responses.py", "tests/apis/openai/test_legacy.py",
                                       "tests/base/test_fastpath.py", "tests/base/test_bodystream.py"]),
    # a response body as its endpoint declares and its label says (BodyStream, split from stream)
    "bodystream": ("base/bodystream.py", ["tests/base/test_bodystream.py", "tests/base/test_stream.py",
                                          "tests/base/test_fields_streams.py", "tests/test_pipeline.py"]),
    # a Chat stream's tool names waiting for their last piece, held tails put back (split from chat)
    "chatheld": ("apis/openai/chatheld.py", ["tests/apis/openai/test_chatheld.py", "tests/apis/openai/test_chat.py"]),
    # what one scan of a body's texts found: its memo, entries and run, is what the guard trusts
    "prescan": ("rules/prescan.py", ["tests/rules/test_prescan.py", "tests/base/test_masking_scan.py",
                                     "tests/base/test_fieldwalk.py", "tests/rules/test_rules.py",
                                     "tests/test_pipeline.py"]),
    "found": ("rules/found.py", ["tests/rules/test_found.py", "tests/base/test_masking_scan.py",
                                 # the memo's run: listed by prescan, read by the guard and the warning
                                 "tests/rules/test_prescan.py", "tests/base/test_fieldwalk.py",
                                 "tests/test_pipeline.py"]),
    "channels": ("base/channels.py", ["tests/base/test_channels.py", "tests/apis/openai/test_chat.py",
                                           "tests/apis/openai/test_responses.py"]),
    # the modules that decide whether an original leaves
    "leakguard": ("leakguard.py", ["tests/test_leakguard.py", "tests/base/test_masking_scan.py",
                                   "tests/base/test_field_parity.py", "tests/wire/test_percent.py",
                                   # the masker's document handed to the guard (readings' parsed)
                                   "tests/test_shared_parse.py", "tests/base/test_fieldwalk.py"]),
    # what the disguises in a masked text make is no original: the guard's and the audit's
    "knowing": ("rules/knowing.py", ["tests/rules/test_knowing.py", "tests/test_pipeline.py",
                                     "tests/rules/test_fakes.py", "tests/rules/test_settle.py",
                                     "tests/base/test_copies.py"]),
    # one request's numbering: placeholders by first appearance, keyed where it continues stored state
    "session": ("rules/session.py", ["tests/rules/test_session.py", "tests/base/test_prompt.py",
                                     "tests/rules/test_fakes.py", "tests/base/test_copies.py"]),
    # the masker's second look: what masking one original revealed is masked too
    "settle": ("rules/settle.py", ["tests/rules/test_settle.py", "tests/test_pipeline.py",
                                   "tests/rules/test_knowing.py"]),
    "pipeline": ("pipeline.py", ["tests/test_pipeline.py", "tests/base/test_masking_scan.py",
                                 "tests/base/test_stream_endings.py", "tests/mitm/test_addon.py",
                                 "tests/apis/openai/test_realtime.py", "tests/mitm/test_aws.py",
                                 # a realtime client's ping, pong and close (client_control)
                                 "tests/base/test_realtime_controls.py"]),
    # which strings the guard reads: fields.walk less what the masker's scan showed clean
    "fieldwalk": ("base/fieldwalk.py", ["tests/base/test_fieldwalk.py", "tests/test_leakguard.py",
                                        "tests/base/test_masking_scan.py", "tests/test_shared_parse.py",
                                        "tests/base/test_field_parity.py", "tests/base/test_fieldwalk_leftout.py"]),
    "fields": ("base/fields.py", ["tests/base/test_fields.py", "tests/base/test_field_parity.py",
                                  # walk's `whole`: the lists the guard leaves out whole (base/fieldwalk.py)
                                  "tests/base/test_fieldwalk.py", "tests/base/test_fieldwalk_leftout.py",
                                  "tests/apis/openai/test_responses_fields.py", "tests/base/test_restore.py",
                                  # media in fields, the request fields, what masking and the guard read
                                  "tests/base/test_media.py", "tests/base/test_fields_requests.py",
                                  "tests/base/test_masking.py", "tests/test_leakguard.py",
                                  # what the audit and the contentview read of exempt fields
                                  "tests/inspect/test_audit.py", "tests/inspect/test_views_fields.py",
                                  "tests/wire/test_percent.py"]),
    "masking": ("base/masking.py", ["tests/base/test_masking.py", "tests/base/test_masking_scan.py",
                                         "tests/base/test_fields_requests.py", "tests/test_leakguard.py",
                                         "tests/apis/anthropic/test_messages_request.py",
                                         "tests/apis/openai/test_chat_request.py",
                                         # mask_request_body and the fakes a client typed
                                         "tests/test_pipeline.py", "tests/rules/test_fakes.py",
                                         # the masked body's document the leak guard walks (masked_doc)
                                         "tests/test_shared_parse.py",
                                         # text media decoded, masked and encoded again (mask_fn, as_text)
                                         "tests/base/test_fields.py", "tests/base/test_media.py",
                                         # a URL's percent-encoded originals (mask_fn, reads)
                                         "tests/wire/test_percent.py"]),
    "restore": ("base/restore.py", ["tests/base/test_restore.py", "tests/base/test_fields_streams.py",
                                         "tests/apis/openai/test_responses_fields.py", "tests/base/test_stream.py"]),
    "guard": ("mitm/guard.py", ["tests/mitm/test_guard.py", "tests/mitm/test_addon.py"]),
    "resign": ("resign.py", ["tests/test_resign.py", "tests/mitm/test_aws.py"]),
}

# a failing test, pytest's internal error, a timeout; -9: killed by the kernel (its OOM
# killer, were a mutant's memory not bounded: `_bounded`)
KILLED = {1, 3, 36, 24, -24, 152, 255, -9}
TIMEOUT = {36, 24, -24, 152}  # mutmut's wall-clock or CPU limit: rechecked by --check
CHECK_TIMEOUT = 900  # seconds a mutant's tests may take in --check before it counts as killed
SURVIVED = {0, 5, 33}  # every test passed, or no selected test calls the function: both count against

# The address space a mutant's tests may take: a mutant that loops appending
# (re2_spaces' `i -= 2`) then fails on a MemoryError rather than taking the machine's
# memory until the kernel's OOM killer ends it (or something else: 23 GiB, seen).
MEMORY = 8 << 30


def _bounded() -> None:
    """preexec_fn of the tests' processes (and mutmut's, whose forks inherit it): MEMORY."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _mutmut() -> list[str]:
    """mutmut's command: its script beside the interpreter, or `python -m mutmut` where
    it is importable only (installed with `pip --target` and put on PYTHONPATH)."""
    script = Path(sys.executable).parent / "mutmut"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mutmut"]


def _stage(name: str, source: str, tests: list[str]) -> Path:
    d = STAGE / name
    d.mkdir(parents=True, exist_ok=True)
    for link, target in ((n, REPO / n) for n in LINKED):
        p = d / link
        if not p.is_symlink():
            p.symlink_to(target)
    _stage_source(d / "src")
    conf = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    conf += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src/disguiselib"]\n'
        f'only_mutate = ["src/disguiselib/{source}"]\n'
        f"also_copy = {json.dumps([n for n in LINKED if n != 'tests'])}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "fastfirst"]\n'
        # no mutant for a line no selected test executes: it could only survive, after
        # running every test that calls its function. run.py counts them as survivors
        "mutate_only_covered_lines = true\n"
        # a mutant that loops forever is killed after 3x its tests' time (+5 s), not 15x
        "timeout_multiplier = 3.0\ntimeout_constant = 5.0\n"
    )
    p = d / "pyproject.toml"
    if not p.exists() or p.read_text(encoding="utf-8") != conf:
        p.write_text(conf, encoding="utf-8")
    return d


def _stage_source(src: Path) -> None:
    """`src`: a copy of addon/ laid out as an installed package. Outside a checkout
    (`addon/` is not the package's parent here) disguiselib reads its shipped mappings
    from package data, disguiselib/data/default.yaml, as a built wheel carries them
    (shipped.py, setup.py): copied in, or every test that loads the defaults fails."""
    if src.is_symlink():
        src.unlink()  # an earlier run's link to addon/ itself
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(REPO / "addon", src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    data = src / "disguiselib" / "data"
    data.mkdir(exist_ok=True)
    shutil.copyfile(REPO / "mappings" / "default.yaml", data / "default.yaml")


def _top(key: str) -> str:
    """The top-level function or class a mutant is in, from its mutmut name:
    `...x_mask_doc__mutmut_3` -> mask_doc, `...xǁ_Tokenǁpieces__mutmut_2` -> _Token."""
    tail = key.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    return tail.split("ǁ")[1] if tail.startswith("xǁ") else tail[2:]


def _only(d: Path) -> set[str] | None:
    """The top-level functions and classes a restricted run mutated (`--only`, `--since`),
    or None after a full run."""
    p = d / "only.json"
    return set(json.loads(p.read_text(encoding="utf-8"))) if p.exists() else None


def changed_since(rev: str, source: str) -> list[str]:
    """The top-level functions and classes of addon/disguiselib/<source> whose code
    (its AST: comments and layout aside) differs from what it was at commit rev, new ones
    included: the mutants a run restricted to them makes are the only ones whose verdict
    may have changed since a full run at rev (a mutant is named, numbered and run per
    function; the others are the same mutants of the same code)."""
    import ast

    rel = f"addon/disguiselib/{source}"
    before = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout

    def tops(code: str) -> dict[str, str]:
        return {n.name: ast.dump(n) for n in ast.parse(code).body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}

    old, new = tops(before), tops((REPO / rel).read_text(encoding="utf-8"))
    return sorted(n for n, code in new.items() if old.get(n) != code)


def _classes(source: str) -> set[str]:
    import ast

    code = (REPO / "addon" / "disguiselib" / source).read_text(encoding="utf-8")
    return {n.name for n in ast.parse(code).body if isinstance(n, ast.ClassDef)}


def _results(d: Path, source: str) -> tuple[int, int, list[str], int]:
    """(killed, survived, survivor names, other) from mutmut's own records; survived
    includes the mutants of lines no selected test executed (_uncovered). After a
    restricted run, only the mutants of the functions it ran."""
    meta = d / "mutants" / "src" / "disguiselib" / (source + ".meta")
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    only = _only(d)
    if only is not None:
        codes = {k: c for k, c in codes.items() if _top(k) in only}
    killed = sum(c in KILLED for c in codes.values())
    survivors = sorted(k for k, c in codes.items() if c in SURVIVED)
    unrun = len(_uncovered(d, source))
    return killed, len(survivors) + unrun, survivors, len(codes) - killed - len(survivors)


def _uncovered(d: Path, source: str) -> list[str]:
    """The mutants mutmut did not create because no selected test executes their line
    (`mutate_only_covered_lines`, lines from launch.py's covered.json): each as
    `function: original -> mutated`. Every one of them counts as a survivor."""
    import libcst as cst
    from mutmut.mutation.file_mutation import create_mutations

    saved = d / "covered.json"
    if not saved.exists():
        return []
    path = d / "src" / "disguiselib" / source
    lines = next((set(v) for k, v in json.loads(saved.read_text()).items()
                  if k.endswith("/src/disguiselib/" + source)), set())
    code = path.read_text(encoding="utf-8")

    def described(covered: set[int] | None) -> list[str]:
        module, mutations, _, _ = create_mutations(str(path), code, covered)
        return [f"{fn.name.value}: {module.code_for_node(m.original_node).strip()!r} -> "
                f"{module.code_for_node(m.mutated_node).strip()!r}"
                for m in mutations if isinstance(fn := m.contained_by_top_level_function, cst.FunctionDef)
                and (only is None or fn.name.value in only)]

    only = _only(d)
    if only is not None:  # mutmut names a method's mutants by its class; libcst gives the method
        import ast

        only |= {f.name for n in ast.parse(code).body if isinstance(n, ast.ClassDef) and n.name in only
                 for f in n.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    here = os.getcwd()
    os.chdir(d)  # mutmut reads its configuration (the stage's pyproject) from the working directory
    try:
        left, every = described(lines), described(None)
    finally:
        os.chdir(here)
    out = []
    for m in every:
        if m in left:
            left.remove(m)
        else:
            out.append(m)
    return out


def show(name: str) -> int:
    """Print each survivor of the module's last run as mutmut shows it (a diff)."""
    d = STAGE / name
    for m in (d / "survivors.txt").read_text().split():
        r = subprocess.run([*_mutmut(), "show", m], cwd=d, capture_output=True, text=True)
        print("\n".join(ln for ln in r.stdout.splitlines() if ln.startswith(("# ", "-  ", "+  "))))
    for m in _uncovered(d, MODULES[name][0]):
        print(f"# not executed by any selected test: {m}")
    return 0


def check(name: str, jobs: int = 3, only: list[str] | None = None) -> int:
    """The last run's survivors and timeouts of a module against the tests as they are
    now: each mutant (the same trampolined source mutmut ran) in a fresh interpreter, in
    one pytest run, `jobs` at a time (the integration tests mostly wait). A timeout is
    checked too: mutmut's wall-clock limit (3x the stats run's time) is met by slow
    tests on a loaded machine, not only by a mutant that loops; here a mutant is given
    CHECK_TIMEOUT seconds, and one that is still running then counts as killed. Prints
    each as killed or survived and the new score. only: name patterns (fnmatch, on the
    name after the module's: `x_mask_doc__mutmut_9*`): those survivors and timeouts
    alone (the others are reported as they were; a survivor's tests all run, so on a
    busy machine a whole check can take an hour)."""
    d = STAGE / name
    source, tests = MODULES[name]
    c = d / "check"
    c.mkdir(exist_ok=True)
    for link, target in (("src", d / "mutants" / "src"), ("tests", REPO / "tests"), ("mappings", REPO / "mappings")):
        if not (c / link).is_symlink():
            (c / link).symlink_to(target)
    (c / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src", "tests"]\n')
    k, s, survivors, _ = _results(d, source)
    meta = d / "mutants" / "src" / "disguiselib" / (source + ".meta")
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    timeouts = sorted(m for m, code in codes.items() if code in TIMEOUT)
    here = str(Path(__file__).resolve().parent)  # fastfirst

    def one(m: str) -> tuple[str, bool]:
        env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "MUTANT_UNDER_TEST": m, "DISGUISE_CACHE": CACHE,
               "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
        # the module's own test files whole (new tests in them included), then the other
        # tests mutmut saw calling the mutated function, capped as in the run (fastfirst)
        r = subprocess.run([*_mutmut(), "tests-for-mutant", m], cwd=d, capture_output=True, text=True)
        reach = [ln.strip() for ln in r.stdout.splitlines() if ln.startswith("tests/")]  # ids may hold spaces
        own = tests[:1]
        ids = own + sorted(t for t in reach if t.split("::")[0] not in own)
        cmd = ["nice", "-n", "19", sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
               "-p", "fastfirst", *ids]
        try:
            rc = subprocess.call(cmd, cwd=c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 timeout=CHECK_TIMEOUT, preexec_fn=_bounded)
        except subprocess.TimeoutExpired:
            rc = 24
        if rc in (4, 5):  # a test id pytest cannot find: the files instead
            files = own + sorted({t.split("::")[0] for t in ids} - set(own))
            rc = subprocess.call([*cmd[: -len(ids)], *files], cwd=c, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, preexec_fn=_bounded)
        # 2: pytest could not even collect the tests (the mutant breaks an import): killed
        return m, rc in KILLED or rc == 2

    left = []
    todo = survivors + timeouts
    if only:
        import fnmatch

        todo = [m for m in todo if any(fnmatch.fnmatch(m.rsplit(".", 1)[-1], p) for p in only)]
        left = [m for m in survivors if m not in todo]  # not checked: as the run left them
    with ThreadPoolExecutor(jobs) as pool:
        for m, dead in pool.map(one, todo):
            print(f"{'killed  ' if dead else 'survived'} {m}{' (a timeout in the run)' if m in timeouts else ''}",
                  flush=True)
            if not dead:
                left.append(m)
    unrun = len(_uncovered(d, source))  # never created: they stay survivors
    killed = k + s - unrun - len(left)
    print(f"{name}: {killed} killed {len(left) + unrun} survived ({unrun} of them on lines no selected test "
          f"executes) of {k + s} ({100.0 * killed / (k + s):.1f} %)")
    (d / "survivors-now.txt").write_text("".join(x + "\n" for x in left))
    return 0


def rescore(name: str) -> int:
    """The last run's row from mutmut's records (as the run printed it, or had it been
    cut short after mutmut finished), survivors.txt written again."""
    d = STAGE / name
    k, s, survivors, other = _results(d, MODULES[name][0])
    (d / "survivors.txt").write_text("".join(x + "\n" for x in survivors))
    only, unrun = _only(d), len(_uncovered(d, MODULES[name][0]))
    print(f"{name:<11} {k:>5} killed {s:>4} survived {other:>3} other  {100.0 * k / (k + s) if k + s else 100.0:5.1f} %"
          f"{'' if only is None else ' (only ' + ', '.join(sorted(only)) + ')'}; {unrun} "
          f"of the survivors on lines no selected test executes")
    return 0


def main(names: list[str]) -> int:
    if names[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    options = ("--show", "--score", "--check", "--only", "--since")
    if unknown := [n for n in names if n.startswith("-") and n not in options]:
        print(f"unknown option {unknown[0]} (--help)")
        return 2
    if names[:1] == ["--show"]:
        return show(names[1])
    if names[:1] == ["--score"]:
        return rescore(names[1])
    if names[:1] == ["--check"]:
        return check(names[1], int(names[2]) if len(names) > 2 else 3, names[3:] or None)
    only: list[str] | None = None
    for opt in ("--only", "--since"):
        if opt in names:
            i = names.index(opt)
            arg, names = names[i + 1], names[:i] + names[i + 2:]
            if len(names) != 1:
                print(f"{opt} restricts one module's run: name one module")
                return 2
            only = arg.split(",") if opt == "--only" else changed_since(arg, MODULES[names[0]][0])
            print(f"{names[0]}: mutating only {', '.join(only)}", flush=True)
    here = str(Path(__file__).resolve().parent)  # fastfirst, the pytest plugin
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "DISGUISE_CACHE": CACHE,
           "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    total_k = total_s = 0
    rows = []
    for name in names or list(MODULES):
        source, tests = MODULES[name]
        d = _stage(name, source, tests)
        # mutmut keeps a mutant's result while its function is unchanged, even when the
        # tests changed: every run starts afresh
        shutil.rmtree(d / "mutants", ignore_errors=True)
        (d / "covered.json").unlink(missing_ok=True)
        (d / "only.json").unlink(missing_ok=True)
        t0 = time.monotonic()
        cmd = ["nice", "-n", "19", sys.executable, os.path.join(here, "launch.py"), "run", "--max-children", "1"]
        if only is not None:
            # mutmut's own filter: mutant names (fnmatch), here every mutant of each
            # function (x_NAME...) or class (xǁNAMEǁ...); the same glob picks the tests
            # that reach it for the clean run. Scored over these functions alone
            (d / "only.json").write_text(json.dumps(only))
            prefix = "disguiselib." + source.removesuffix(".py").replace("/", ".")
            cmd += [f"{prefix}.x{'ǁ' + f + 'ǁ' if f in _classes(source) else '_' + f}*" for f in only]
        with open(d / "run.log", "w") as log:
            rc = subprocess.call(cmd, cwd=d, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_bounded)
        if rc != 0:
            print(f"{name}: mutmut failed (exit {rc}), see {d / 'run.log'}")
            return rc
        k, s, survivors, other = _results(d, source)
        total_k, total_s = total_k + k, total_s + s
        score = 100.0 * k / (k + s) if k + s else 100.0
        rows.append((name, k, s, other, score, time.monotonic() - t0))
        (d / "survivors.txt").write_text("".join(x + "\n" for x in survivors))
        print(f"{name:<11} {k:>5} killed {s:>4} survived {other:>3} other  {score:5.1f} %  "
              f"({rows[-1][5]:.0f} s; survivors: {d / 'survivors.txt'})", flush=True)
    if len(rows) > 1:
        score = 100.0 * total_k / (total_k + total_s) if total_k + total_s else 100.0
        print(f"{'overall':<11} {total_k:>5} killed {total_s:>4} survived        {score:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
