"""The compiled engine and the Python one (disguiselib/engine.py): chosen once, forced by
DISGUISE_ENGINE, never stale; and the same bytes from both on every input the stream and
masking generators make (the Python engine answers from a process of its own,
tests/engine_oracle.py)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import engine_oracle
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anthropic_util import build_stream
from conftest import REPO
from disguiselib import engine
from openai_util import build_chat, build_responses, responses_events, responses_item, sse_events
from strategies import DISGUISES, byte_splits, short_escaped_json, splits, texts

TESTS = Path(__file__).resolve().parent


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != engine.ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "addon"), str(TESTS)])
    env.update(extra)
    return env


def which(env: dict[str, str], addon: Path = REPO / "addon") -> tuple[str, str]:
    """(engine.describe(), the file AnthropicStream's module was loaded from) in a new process."""
    env = dict(env, PYTHONPATH=str(addon))
    code = "from disguiselib import engine; from disguiselib.apis.anthropic import messages as anthropic; print(engine.describe()); print(anthropic.__file__)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line, path = r.stdout.splitlines()
    return line, path


def test_disguise_engine_python_runs_the_python_source() -> None:
    line, path = which(child_env(DISGUISE_ENGINE="python"))
    assert line == "engine: python (DISGUISE_ENGINE=python)" and path.endswith("messages.py")


needs_compiled = pytest.mark.skipif(engine.NAME != "compiled", reason=f"this process runs {engine.describe()}")


@needs_compiled
def test_by_default_the_compiled_part_runs_from_its_own_folder() -> None:
    line, path = which(child_env())
    assert line.startswith("engine: compiled (cython ")
    assert Path(path).is_relative_to(engine.BUILD_DIR) and path.endswith(".so")


@needs_compiled
def test_an_edited_source_or_a_missing_build_runs_python_and_says_why(tmp_path: Path) -> None:
    """A checkout edited since the build runs its .py files, never the stale C code; a build
    that is missing or failed likewise; DISGUISE_ENGINE=compiled makes it an error."""
    addon = tmp_path / "addon"
    shutil.copytree(REPO / "addon" / "disguiselib", addon / "disguiselib", ignore=shutil.ignore_patterns("__pycache__"))
    assert which(child_env(), addon)[0].startswith("engine: compiled")
    pyx = addon / "disguiselib/wire/_spanwalk.pyx"  # a module written for the compiler (engine.NATIVE)
    kept = pyx.read_text()
    pyx.write_text(kept + "\n# edited\n")
    assert which(child_env(), addon)[0] == ("engine: python (compiled part is stale: wire._spanwalk changed since the "
                                            "build (python setup.py build_ext --inplace))")  # fmt: skip
    pyx.write_text(kept)
    sse = addon / "disguiselib/wire/sse.py"
    sse.write_text(sse.read_text() + "\n# edited\n")
    line, path = which(child_env(), addon)
    assert line == ("engine: python (compiled part is stale: wire.sse changed since the build "
                    "(python setup.py build_ext --inplace))") and path.endswith("messages.py")  # fmt: skip
    manifest = engine.manifest_path(addon / "disguiselib" / "_compiled")
    manifest.write_text(json.dumps({"error": "Cython: no compiler"}))
    assert which(child_env(), addon)[0] == "engine: python (compiled part not built: Cython: no compiler)"
    manifest.unlink()
    assert which(child_env(), addon)[0] == f"engine: python (compiled part not built for {engine.soabi()})"
    r = subprocess.run([sys.executable, "-c", "import disguiselib"], env=dict(child_env(DISGUISE_ENGINE="compiled"),
                       PYTHONPATH=str(addon)), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode != 0 and "DISGUISE_ENGINE=compiled, but compiled part not built" in r.stderr


# -- the same bytes from both engines --------------------------------------------------


class Oracle:
    """The Python engine in a process of its own, answering cases one by one."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(TESTS / "engine_oracle.py")], env=child_env(DISGUISE_ENGINE="python"),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip

    def __call__(self, case: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the Python engine's process ended"
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    o = Oracle()
    yield o
    o.close()


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


@st.composite
def stream_cases(draw) -> dict:
    """A stream of each API the property tests build, its texts split into deltas and its
    bytes into reads at random (strategies.py, anthropic_util, openai_util)."""
    api = draw(st.sampled_from(["anthropic", "chat", "responses"]))
    text, value = draw(texts), draw(texts)
    args = json.dumps({"thread_id": value, "path": "WINPATH", "n": 1.5})
    if api == "anthropic":
        body = build_stream([("thinking", draw(splits(draw(texts)))), ("text", draw(splits(text))),
                             ("tool", draw(splits(args, 12)))])  # fmt: skip
    elif api == "chat":
        # one or two choices interleaved, each with a tool name sent in pieces (one piece:
        # whole, as OpenAI sends it); a piece that may continue keeps events waiting
        queues = []
        for k in range(draw(st.integers(1, 2))):
            names = draw(splits(draw(st.sampled_from(["crm_lookup", "lookup_t", "get_nova"])), 3))
            q = [("content", k, p) for p in draw(splits(text))]
            q += [("tool", k, 0, n, "") for n in names[:-1]]
            q += [("tool", k, 0, names[-1] if i == 0 else None, p) for i, p in enumerate(draw(splits(args, 6)))]
            q.append(("finish", k, draw(st.sampled_from(["tool_calls", "stop", "length"]))))
            queues.append(q)
        steps = []
        while any(queues):
            steps.append(draw(st.sampled_from([q for q in queues if q])).pop(0))
        body = build_chat(steps)
    elif draw(st.booleans()):
        body = build_responses(draw(splits(text)), draw(splits(args, 10)), spaced=draw(st.booleans()))
    else:
        body = responses_items(draw, text, args)
    if draw(st.booleans()):  # a stream cut short
        body = body[: draw(st.integers(0, len(body)))]
    return {"op": "stream", "api": api, "chunks": [b64(c) for c in draw(byte_splits(body, 40))]}


def responses_items(draw, text: str, args: str) -> bytes:
    """A Responses stream of a message (text, refusal), arguments and a reasoning summary,
    in order or with their events merged at random: the held tails wait in the delta
    before them (ResponsesStream.held_event, held by the compiled step too), or, where
    another event came between, go as synthetic deltas that renumber what follows."""
    items = [responses_item(0, ("message", [("output_text", draw(splits(text))), ("refusal", draw(splits(text)))])),
             responses_item(1, ("function_call", draw(splits(args, 10)))),
             responses_item(2, ("reasoning", [draw(splits(text))]))]  # fmt: skip
    if draw(st.booleans()):
        merged = []
        while any(items):
            merged.append(draw(st.sampled_from([q for q in items if q])).pop(0))
        items = [merged]
    return b"".join(sse_events(responses_events(items)))


@st.composite
def body_cases(draw) -> dict:
    """A request body of each API, its strings made of the generators' texts."""
    api = draw(st.sampled_from(["anthropic", "chat", "responses"]))
    t = [draw(texts) for _ in range(3)]
    tool_args = json.dumps({"thread_id": t[2], "q": t[1]})
    if api == "anthropic":
        doc: dict = {
            "model": "m",
            "max_tokens": 9,
            "system": t[0],
            "messages": [
                {"role": "user", "content": t[1]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "tu_1", "name": "acme_lookup", "input": {"thread_id": t[2]}}
                    ],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": t[0]}]},
            ],
        }
    elif api == "chat":
        doc = {
            "model": "m",
            "messages": [
                {"role": "system", "content": t[0]},
                {"role": "user", "content": t[1]},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "acme_lookup", "arguments": tool_args}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": t[2]},
            ],
        }
    else:
        doc = {
            "model": "m",
            "instructions": t[0],
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": t[1]}]},
                {"type": "function_call", "call_id": "c1", "name": "acme_lookup", "arguments": tool_args},
                {"type": "function_call_output", "call_id": "c1", "output": t[2]},
            ],
        }
    raw = json.dumps(doc, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    return {"op": "mask", "api": api, "body": b64(raw)}


@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(stream_cases(), body_cases()))
def test_both_engines_give_the_same_bytes(oracle: Oracle, case: dict) -> None:
    assert engine_oracle.anthropic.__file__.endswith(".so")  # this process: the compiled engine
    assert engine_oracle.run(case) == oracle(case)


@st.composite
def escaped_args_cases(draw) -> dict:
    """A stream of each API whose tool arguments are JSON text with short escapes (`\\n`,
    `\\"`, runs of backslashes) before and inside disguises (strategies.short_escaped_json),
    split into deltas at random, read an event at a time or at random: the compiled read
    pass matches most such deltas itself (_readpass: ReadPass._step)."""
    api = draw(st.sampled_from(["anthropic", "chat", "responses"]))
    pieces = draw(splits(draw(short_escaped_json(DISGUISES)), 10))
    if api == "anthropic":
        body = build_stream([("text", ["hi"]), ("tool", pieces)])
    elif api == "chat":
        steps = [("tool", 0, 0, "crm_lookup" if i == 0 else None, p) for i, p in enumerate(pieces)]
        body = build_chat([("content", 0, "hi"), *steps, ("finish", 0, "tool_calls")])
    else:
        body = build_responses(["hi"], pieces)
    chunks = draw(st.one_of(byte_splits(body, 30), st.just([e + b"\n\n" for e in body.split(b"\n\n") if e])))
    return {"op": "stream", "api": api, "chunks": [b64(c) for c in chunks]}


@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(escaped_args_cases())
def test_both_engines_give_the_same_bytes_on_arguments_with_short_escapes(oracle: Oracle, case: dict) -> None:
    assert engine_oracle.run(case) == oracle(case)


def test_soabi_is_sysconfigs_without_loading_its_build_data() -> None:
    """The manifest's name (setup.py: sysconfig's SOABI) told from the extension suffix:
    choosing the engine does not load sysconfig's build data into the proxy."""
    import sysconfig

    assert engine.soabi() == str(sysconfig.get_config_var("SOABI") or sys.implementation.cache_tag)
    code = "import sys, disguiselib; print(sorted(m for m in sys.modules if m.startswith('_sysconfigdata')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(engine.__file__).parents[1])}).stdout  # fmt: skip
    assert out.strip() == "[]"
