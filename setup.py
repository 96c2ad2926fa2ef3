"""What pyproject.toml cannot say.

1. The wheel carries the repository's mappings/default.yaml as package data
   (disguiselib/data/default.yaml), so that an installed disguise finds its shipped
   defaults (shipped.DEFAULTS_FILE) while the repository keeps them where users and the
   docs look. One file, copied at build time; an editable install reads the checkout's
   file and needs no copy.
2. The compiled engine (disguiselib/engine.py, docs/engine.md): the modules listed in
   engine.COMPILED, compiled by Cython as they are, into disguiselib/_compiled/ (never
   beside their .py files, which they would shadow), with the manifest engine.py checks.
   A build that fails (no compiler, no Cython) is reported and the install goes on: the
   Python engine runs, and says why.
"""

import ast
import hashlib
import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

DEFAULTS = Path("mappings") / "default.yaml"
PACKAGE = Path("addon") / "disguiselib"


def compiled_modules(name: str = "COMPILED") -> list[str]:
    """engine.COMPILED (or engine.NATIVE), read from the file (the package's dependencies
    need not be here)."""
    tree = ast.parse((PACKAGE / "engine.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"engine.py: {name} not found")


def source(m: str) -> Path:
    """A compiled module's source: its .py, or for engine.NATIVE its .pyx."""
    return PACKAGE / (m.replace(".", "/") + (".pyx" if m in compiled_modules("NATIVE") else ".py"))


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "disguiselib" / "data" / "default.yaml"
        self.mkpath(str(target.parent))
        self.copy_file(str(DEFAULTS), str(target))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        out = super().get_outputs(include_bytecode)
        if not self.editable_mode:
            out.append(str(Path(self.build_lib) / "disguiselib" / "data" / "default.yaml"))
        return out


class BuildEngine(build_ext):
    """Cython over engine.COMPILED; every failure is caught, written into the manifest
    (engine.py then names it: `engine: python (compiled part not built: ...)`) and printed."""

    def _base(self) -> Path:
        if self.inplace or getattr(self, "editable_mode", False):  # the checkout's own folder
            return Path(self.get_finalized_command("build_py").get_package_dir("disguiselib")) / "_compiled"
        return Path(self.build_lib) / "disguiselib" / "_compiled"

    def _manifest(self) -> Path:
        return self._base() / f"build-{sysconfig.get_config_var('SOABI') or sys.implementation.cache_tag}.json"

    @staticmethod
    def _moved(name: str) -> str:
        # disguiselib.base.holdback -> disguiselib._compiled.base.holdback
        if name.startswith("disguiselib.") and not name.startswith("disguiselib._compiled."):
            return "disguiselib._compiled." + name[len("disguiselib.") :]
        return name

    def get_ext_fullpath(self, ext_name: str) -> str:
        return super().get_ext_fullpath(self._moved(ext_name))

    def get_ext_filename(self, fullname: str) -> str:
        return super().get_ext_filename(self._moved(fullname))

    def copy_extensions_to_source(self) -> None:
        # a new file renamed into place, never the old one overwritten: a process that
        # has the old extension loaded (a running proxy, a test run) keeps it intact
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace, regular = self._get_inplace_equivalent(build_py, ext)
            Path(inplace).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(regular, inplace + ".new")
            os.replace(inplace + ".new", inplace)

    def _get_inplace_equivalent(self, build_py: build_py, ext: Extension) -> tuple[str, str]:
        # in place (build_ext --inplace, pip install -e): into _compiled/ too, never beside the .py
        filename = self.get_ext_filename(self.get_ext_fullname(ext.name))
        inplace = Path(build_py.get_package_dir("disguiselib")).parent / filename
        return str(inplace), str(Path(self.build_lib) / filename)

    def get_outputs(self) -> list[str]:
        return [*super().get_outputs(), str(self._manifest())]

    def finalize_options(self) -> None:
        self._failed: list[str] = []
        self._error = ""
        self._cython = ""
        try:
            import Cython
            from Cython.Build import cythonize

            self._cython = Cython.__version__
            # the same semantics as the .py (binding: functions stay introspectable and
            # patchable; annotations are not C types: a subclass of list or set passes
            # where the hint says list, as in Python)
            directives = {"language_level": 3, "binding": True, "annotation_typing": False}
            self.distribution.ext_modules = cythonize(
                self.distribution.ext_modules, build_dir="build/cython", quiet=True, compiler_directives=directives
            )
        except Exception as e:  # noqa: BLE001 - no Cython, a Cython error: the Python engine
            self._error = f"Cython: {e.__class__.__name__}: {e}"
            self.distribution.ext_modules = []
        super().finalize_options()

    def run(self) -> None:
        mf = self._manifest()
        for m in (*compiled_modules(), *compiled_modules("NATIVE")):  # the folders the extensions are copied into
            (self._base() / m.replace(".", "/")).parent.mkdir(parents=True, exist_ok=True)
        if mf.exists():
            mf.unlink()  # a failed build never leaves an older manifest behind
        if self._error:
            self._fail(self._error)
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any build failure leaves the Python engine
            self._failed.append(f"{e.__class__.__name__}: {e}")
        if self._failed:
            more = f" (and {len(self._failed) - 1} more)" if len(self._failed) > 1 else ""
            self._fail(self._failed[0] + more)
            return
        sources = {m: hashlib.sha256(source(m).read_bytes()).hexdigest()
                   for m in (*compiled_modules(), *compiled_modules("NATIVE"))}  # fmt: skip
        mf.write_text(json.dumps({"cython": self._cython, "sources": sources}, indent=1) + "\n")
        print(f"disguise: compiled engine built (Cython {self._cython}, {len(sources)} modules)")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001 - no compiler, a compile error: recorded
            first = str(e).splitlines()[0] if str(e) else ""
            self._failed.append(f"{ext.name}: {e.__class__.__name__}" + (f": {first[:80]}" if first else ""))

    def _fail(self, why: str) -> None:
        self._manifest().write_text(json.dumps({"error": why[:300]}) + "\n")
        print(f"disguise: WARNING: the compiled engine was not built ({why}); the Python engine will run")


# -O1, no debug information: a third of the C compiler's time at -O3 -g (every install
# compiles; CI installs several times), for code that is mostly calls into CPython
ENGINE = [
    Extension(f"disguiselib.{m}", [str(source(m))], extra_compile_args=["-O1", "-g0"])
    for m in (*compiled_modules(), *compiled_modules("NATIVE"))
]

setup(cmdclass={"build_py": BuildPy, "build_ext": BuildEngine}, ext_modules=ENGINE)
