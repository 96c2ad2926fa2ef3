"""pip install of the project into fresh virtual environments — from a built wheel, from
a clone, and editable — and `disguise run` masking with the shipped defaults from a
folder that is not the checkout, an official SDK as the client. (`mitmdump -s
addon/disguise.py` from the checkout is what every other integration test runs.)

Kept fast: the environments are made without pip (the test's own pip installs into them
with --python), the engine is compiled twice, not four times (`installs` says which
build proves what), and only the wheel's environment resolves the dependencies from the
package index (pip's cache makes that local); the others install the project alone
(built as a user's pip builds it, the build backend fetched into an isolated build
environment, but the one without a compiler) and borrow the dependencies of the test's
own environment through a .pth file."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import disguiselib
from inspect_util import anthropic_handler
from integration_util import REPO, FakeUpstream

anthropic = pytest.importorskip("anthropic")

# (the module's installs are its first test's set-up, under pytest's 900 s a test: the module took
# 977 s in a fresh-clone CI run on a slow, loaded two-core machine, 2026-12-07; 103 s there idle)
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

BOB = "bob@corp.example.com"
KEY = "sk-ant-api03-" + "Q" * 93 + "AA"
PROMPT = f"Mail {BOB} the key {KEY} please."
_LISTENING = re.compile(r"listening at (?:http://)?127\.0\.0\.1:(\d+)")


def sh(*cmd: str | Path, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> str:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def clean_env() -> dict[str, str]:
    """No virtual environment, no PYTHONPATH, no engine forced, no proxy: what a new shell has."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "DISGUISE_ENGINE")
    env = {k: v for k, v in os.environ.items() if k not in drop and "proxy" not in k.lower()}
    env["PATH"] = "/usr/bin:/bin"
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files a clone of this checkout holds (tracked, and new ones not ignored: the
    work in progress too), copied: nothing generated or ignored comes along."""
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a git checkout: which files a clone holds is unknown")
    names = sh("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    dst = tmp_path_factory.mktemp("clone") / "disguise"
    for n in filter(None, names):
        src = REPO / n
        if src.is_file():
            (dst / n).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / n)
    return dst


def venv(path: Path) -> Path:
    sh(sys.executable, "-m", "venv", "--without-pip", path)
    return path / "bin" / "python"


def pip(python: Path, *args: str | Path) -> str:
    """(A build is a minute of one core; on a loaded two-core machine it took past 10.)
    A connection to the registry that stalls is dropped after 30 s and tried again (this
    machine's environment gives pip 180 s and five tries: one stalled download held the
    module's installs past pytest's 15 minutes, 2026-12-07; run again, 103 s in all)."""
    return sh(sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check", "--timeout", "30",
              *args, timeout=1800)  # fmt: skip


def borrow_dependencies(python: Path) -> None:
    """The test environment's packages, after the venv's own (a .pth line appends a
    folder to sys.path; the test environment holds disguise only as an editable
    finder, which a .pth path line does not load)."""
    sp = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (sp / "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")


@pytest.fixture(scope="module")
def installs(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """kind -> the python of a fresh venv holding disguise installed that way.

    Two compiles of the engine, not four (each is half a minute of one core: Cython, then
    the C compiler over 14 modules):
    - "clone": `pip install .` of a fresh copy, as the Quick start says: pip builds it in
      an isolated build environment (setuptools and Cython fetched), compiling the engine
      in the copy's build/ folder;
    - "wheel": `pip wheel` of that same folder afterwards, as a user's pip builds a wheel
      (isolated too): the same build backend over the same sources, which finds the
      extensions built and up to date and packs them (what is proved here is what the
      wheel carries and that installing it resolves the dependencies; that the build
      compiles is proved by "clone");
    - "editable": `pip install -e` of the clone itself, compiled again: its build goes to
      a temporary folder and its extensions into the checkout (setup.py's in-place
      path), side by side with the two above;
    - "nocompiler": a wheel built with no working C compiler (Cython runs, every C
      compile fails): the install succeeds and the Python engine runs."""
    tmp = tmp_path_factory.mktemp("installs")

    def source(kind: str) -> Path:
        return Path(shutil.copytree(clone, tmp / f"src-{kind}" / "disguise"))

    def clone_then_wheel() -> tuple[Path, Path]:
        src = source("clone")
        python = venv(tmp / "clone")
        pip(python, "install", "--no-deps", src)  # built as a user's pip builds it (setuptools, Cython fetched)
        borrow_dependencies(python)
        dist = tmp / "dist"
        pip(Path(sys.executable), "wheel", "--no-deps", "-w", dist, src)  # the same folder: its extensions built already
        [whl] = dist.glob("disguise-*.whl")
        wheel = venv(tmp / "wheel")
        pip(wheel, "install", whl)  # the dependencies resolved as a user's pip resolves them
        return python, wheel

    def editable() -> Path:
        python = venv(tmp / "editable")
        pip(python, "install", "--no-deps", "-e", clone)  # built as a user's pip builds it (setuptools fetched)
        borrow_dependencies(python)
        return python

    def without_compiler() -> Path:
        """A machine where the compiled engine cannot be built (no working C compiler):
        the install still succeeds, and the Python engine runs."""
        dist = tmp / "dist-nocompiler"
        sh(sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps", "--no-build-isolation",
           "-w", dist, source("nocompiler"), env=dict(os.environ, CC="false"), timeout=1800)  # fmt: skip
        [whl] = dist.glob("disguise-*.whl")
        python = venv(tmp / "nocompiler")
        pip(python, "install", "--no-deps", whl)
        borrow_dependencies(python)
        return python

    # independent installs, mostly waiting on pip and the C compiler: side by side
    with ThreadPoolExecutor(3) as pool:
        both, edit, nocc = pool.submit(clone_then_wheel), pool.submit(editable), pool.submit(without_compiler)
        (from_clone, wheel) = both.result()
        return {"wheel": wheel, "clone": from_clone, "editable": edit.result(), "nocompiler": nocc.result()}


class Proxy:
    """A `disguise run` (or any command) that prints mitmdump's log; port once listening."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.lines: list[str] = []
        self.port: int | None = None
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env or clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)  # fmt: skip
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        deadline = time.monotonic() + 90
        while self.port is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"{cmd} did not start:\n{self.output}")
            time.sleep(0.05)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            m = _LISTENING.search(line)
            if m and self.port is None:
                self.port = int(m.group(1))

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._t.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        up.on("m", anthropic_handler)
        yield up


def ask(port: int) -> str:
    with anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="sk-ant-test", max_retries=0,
                             timeout=30.0, http_client=anthropic.DefaultHttpxClient(trust_env=False)) as a:  # fmt: skip
        msg = a.messages.create(model="m", max_tokens=20, messages=[{"role": "user", "content": PROMPT}])
    return msg.content[0].text


def masks_through(cmd: list[str], cwd: Path, upstream: FakeUpstream, env: dict[str, str] | None = None) -> str:
    """Start the proxy, send the prompt through it; what went upstream was masked by the
    shipped defaults and the client read its originals back. Returns the proxy's log."""
    p = Proxy(cmd, cwd, env)
    try:
        assert p.port is not None
        n = len(upstream.requests)
        assert ask(p.port) == PROMPT
        [seen] = upstream.requests[n:]
        assert seen.json["messages"][0]["content"] == "Mail [EMAIL_1] the key [ANTHROPIC_KEY_1] please."
    finally:
        p.stop()
    return p.output


@pytest.mark.parametrize("kind", ["wheel", "clone", "editable"])
def test_installed_disguise_runs_from_any_folder(kind: str, installs, clone, upstream, tmp_path: Path) -> None:
    python = installs[kind]
    bin_ = python.parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env()
    version = sh(bin_ / "disguise", "--version", cwd=elsewhere, env=env)
    assert version.startswith(f"disguise {disguiselib.__version__} ")
    # the compiled engine was built by the install and runs (engine.py), from the install's own folder
    assert "; engine: compiled (cython 3." in version, version
    assert sh(python, "-c", "from disguiselib.base import stream; print(stream.__file__)", cwd=elsewhere,
              env=env).strip().endswith(".so")  # fmt: skip
    where = sh(python, "-c", "from disguiselib import shipped; print(shipped.DEFAULTS_FILE, shipped.SCRIPT, "
               "shipped.USER_MAPPINGS)", cwd=elsewhere, env=env).split()  # fmt: skip
    home = clone / "addon" if kind == "editable" else python.parents[1]
    defaults, script = Path(where[0]), Path(where[1])
    assert defaults.is_file() and script.is_file()
    assert script == Path(sh(bin_ / "disguise", "script", cwd=elsewhere, env=env).strip())
    if kind == "editable":  # the checkout's own file, and its mappings/ folder for local*.yaml
        assert defaults == clone / "mappings" / "default.yaml" and where[2] == f"('{clone / 'mappings'}',)"
    else:  # the wheel's copy, byte for byte the repository's file; no repository folder
        assert defaults.is_relative_to(home) and defaults.read_bytes() == (REPO / "mappings" / "default.yaml").read_bytes()
        assert where[2] == "()"
    assert script.is_relative_to(home)

    out = masks_through(
        [str(bin_ / "disguise"), "run", "--mode", f"reverse:http://127.0.0.1:{upstream.port}", "--listen-port", "0",
         "--set", f"confdir={tmp_path / 'conf'}"],
        elsewhere, upstream,
    )  # fmt: skip
    assert "listening at 127.0.0.1:" in out  # on loopback without being told
    assert re.search(r"rules loaded: defaults: 0 literals, \d+ patterns", out), out
    assert "masked 2 originals (ANTHROPIC_KEY×1, EMAIL×1); restored 2 originals" in out
    assert BOB not in out and KEY not in out
    assert "disguise: engine: compiled (cython 3." in out  # the startup log names the engine


def test_without_a_compiler_the_install_succeeds_and_the_python_engine_runs(installs, upstream,
                                                                            tmp_path: Path) -> None:  # fmt: skip
    bin_ = installs["nocompiler"].parent
    env = {k: v for k, v in clean_env().items() if k != "DISGUISE_ENGINE"}
    version = sh(bin_ / "disguise", "--version", cwd=tmp_path, env=env)
    assert "; engine: python (compiled part not built: " in version, version
    out = masks_through(
        [str(bin_ / "disguise"), "run", "--mode", f"reverse:http://127.0.0.1:{upstream.port}", "--listen-port", "0",
         "--set", f"confdir={tmp_path / 'conf'}"],
        tmp_path, upstream, env=env,
    )  # fmt: skip
    assert "disguise: engine: python (compiled part not built: " in out


def test_mitmdump_loads_the_installed_script(installs, upstream, tmp_path: Path) -> None:
    """`mitmdump -s "$(disguise script)"` with the wheel's mitmdump, from another folder."""
    bin_ = installs["wheel"].parent
    script = sh(bin_ / "disguise", "script", cwd=tmp_path, env=clean_env()).strip()
    masks_through(
        [str(bin_ / "mitmdump"), "-s", script, "--mode", f"reverse:http://127.0.0.1:{upstream.port}",
         "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp_path / 'conf'}"],
        tmp_path, upstream,
    )  # fmt: skip



@pytest.mark.parametrize("kind", ["wheel", "clone"])
def test_a_non_editable_install_loads_the_working_directorys_mappings(kind: str, installs, clone, upstream,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    """Issue 31: after the Quick start's `pip install .` (not editable), `disguise run` in
    the checkout ignored mappings/local.yaml and logged `defaults: 0 literals` while the
    user believed their names covered. Now the working directory's mappings/ folder is
    loaded and named at startup; a folder holding only a copy of the defaults is not."""
    bin_ = installs[kind].parent
    checkout = tmp_path / "checkout"
    (checkout / "mappings").mkdir(parents=True)
    shutil.copy2(clone / "mappings" / "default.yaml", checkout / "mappings" / "default.yaml")
    cmd = [str(bin_ / "disguise"), "run", "--mode", f"reverse:http://127.0.0.1:{upstream.port}", "--listen-port", "0",
           "--set", f"confdir={tmp_path / 'conf'}"]  # fmt: skip
    out = masks_through(cmd, checkout, upstream)  # the copy of the defaults alone: nothing more
    assert re.search(r"rules loaded: defaults: 0 literals", out) and "working directory" not in out, out

    (checkout / "mappings" / "local.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    p = Proxy(cmd, checkout)
    try:
        assert p.port is not None
        n = len(upstream.requests)
        with anthropic.Anthropic(base_url=f"http://127.0.0.1:{p.port}", api_key="sk-ant-test", max_retries=0,
                                 timeout=30.0, http_client=anthropic.DefaultHttpxClient(trust_env=False)) as a:  # fmt: skip
            msg = a.messages.create(model="m", max_tokens=20, messages=[{"role": "user", "content": "Acme Corp asks"}])
        assert msg.content[0].text == "Acme Corp asks"
        [seen] = upstream.requests[n:]
        assert seen.json["messages"][0]["content"] == "Zenith Labs asks"
    finally:
        p.stop()
    out = p.output
    assert f"the working directory's mappings/ folder is loaded ({checkout / 'mappings'})" in out, out
    assert re.search(r"rules loaded: defaults \+ 1 file \(local\.yaml\): 1 literal,", out), out
