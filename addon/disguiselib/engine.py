"""Which engine runs: the Python modules, or the same modules compiled by Cython.

As CPython's json does it (`c_make_scanner or py_make_scanner`): the Python source stays
the reference and the fallback; the compiled part is those very modules (COMPILED)
turned into C extensions by Cython, chosen ONCE, when the package is first imported.

The extensions are not put beside their .py files (an extension there would shadow the
source for every process, whatever was asked); setup.py builds them into `_compiled/`,
with a manifest per interpreter (`_compiled/build-<SOABI>.json`: Cython's version and a
SHA-256 of each source it compiled). `select()` puts a finder first on sys.meta_path
that loads a listed module from its extension, only when

- `DISGUISE_ENGINE` is not `python` (it forces the Python engine; `compiled` makes a
  compiled part that cannot be used an ImportError instead of a fallback), and
- this interpreter's manifest exists, lists every module of COMPILED, each extension
  file is there, and each source is byte for byte the one compiled (an edited .py in a
  checkout runs as Python until `python setup.py build_ext --inplace` again: never stale
  C code).

Otherwise every module runs as Python and `describe()` says why. Dependency-free: setup.py
reads COMPILED from this file without importing the package.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path

# THE list of compiled modules (dotted, under disguiselib): the per-read path of a stream
# (framing, triggers, the API's event readers, windows, restore) and the per-body walk.
# setup.py builds exactly these; a module moved to another folder is renamed here.
COMPILED: tuple[str, ...] = (
    "wire.text",
    "rules.restorer",
    "base.holdback",
    "wire.sse",
    "rules.triggers",
    "wire.jsonspan",
    "base.channels",
    "base.stream",
    "apis.anthropic.messages",
    "apis.openai.chat",
    "apis.openai.responses",
    "base.masking",
)

# Modules written for the compiler: a .pyx under its dotted name, built into _compiled/
# with COMPILED and held to the same manifest; no .py of that name exists. The module
# that imports one falls back to its Python reference when the compiled engine does not
# run (wire/spanwalk.py: jsonspan.walk; base/readpass.py: a stream's per-read step).
NATIVE: tuple[str, ...] = ("wire._spanwalk", "base._readpass", "wire._tokenmap", "inspect._teeread")

PACKAGE = Path(__file__).resolve().parent
BUILD_DIR = PACKAGE / "_compiled"
ENV = "DISGUISE_ENGINE"


def soabi() -> str:
    """sysconfig's SOABI (or the cache tag where there is none), as setup.py names the
    manifest. CPython on POSIX names its extensions `.SOABI.so`, which tells it without
    loading sysconfig's build data (~0.16 MiB the proxy would hold for this one value)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    cpython_posix = sys.implementation.name == "cpython" and os.name == "posix"
    if cpython_posix and suffix.count(".") == 2 and suffix.endswith(".so"):
        return suffix[1:-3]
    import sysconfig

    return str(sysconfig.get_config_var("SOABI") or sys.implementation.cache_tag)


def manifest_path(base: Path = BUILD_DIR) -> Path:
    return base / f"build-{soabi()}.json"


def source_of(mod: str, package: Path = PACKAGE) -> Path:
    return package.joinpath(*mod.split(".")).with_suffix(".pyx" if mod in NATIVE else ".py")


def extension_of(mod: str, base: Path = BUILD_DIR) -> Path:
    """Where setup.py puts mod's extension for this interpreter."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return base.joinpath(*mod.split(".")).with_name(mod.rsplit(".", 1)[-1] + suffix)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Finder(importlib.abc.MetaPathFinder):
    """Loads each compiled module from its extension in _compiled/, under its own name."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        so = self.files.get(fullname)
        if so is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(so))
        return importlib.machinery.ModuleSpec(fullname, loader, origin=str(so))


def _usable() -> tuple[dict[str, Path] | None, str]:
    """(module name -> extension file, "compiled (cython X)") or (None, why not)."""
    mf = manifest_path()
    if not mf.is_file():
        return None, f"compiled part not built for {soabi()}"
    try:
        info = json.loads(mf.read_text())
    except (OSError, ValueError) as e:
        return None, f"compiled part unreadable ({mf.name}: {e.__class__.__name__})"
    if info.get("error"):
        return None, f"compiled part not built: {info['error']}"
    sources = info.get("sources") or {}
    files: dict[str, Path] = {}
    for mod in (*COMPILED, *NATIVE):
        so = extension_of(mod)
        if mod not in sources or not so.is_file():
            return None, f"compiled part not built: {mod} missing"
        src = source_of(mod)
        try:
            same = digest(src) == sources[mod]
        except OSError:
            same = False
        if not same:
            return None, f"compiled part is stale: {mod} changed since the build (python setup.py build_ext --inplace)"
        files[f"{__package__}.{mod}"] = so
    return files, f"compiled (cython {info.get('cython', '?')})"


NAME = "python"  # "compiled" or "python": which engine this process runs
DESCRIPTION = "python"  # the line `disguise --version` and the startup log print
_selected = False


def select() -> str:
    """Choose the engine, once (the package's __init__ calls it before any engine module
    is imported). Returns DESCRIPTION."""
    global NAME, DESCRIPTION, _selected
    if _selected:
        return DESCRIPTION
    _selected = True
    want = os.environ.get(ENV, "").strip().lower()
    if want == "python":
        DESCRIPTION = f"python ({ENV}=python)"
        return DESCRIPTION
    files, why = _usable()
    if files is None:
        if want == "compiled":
            raise ImportError(f"disguise: {ENV}=compiled, but {why}")
        DESCRIPTION = f"python ({why})"
        return DESCRIPTION
    loaded = [m for m in files if m in sys.modules]
    if loaded:  # imported as Python before the choice: mixing is never done
        DESCRIPTION = f"python ({', '.join(loaded)} imported before the engine was chosen)"
        return DESCRIPTION
    sys.meta_path.insert(0, _Finder(files))
    NAME, DESCRIPTION = "compiled", why
    return DESCRIPTION


def describe() -> str:
    return f"engine: {DESCRIPTION}"
