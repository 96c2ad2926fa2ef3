"""What pyproject.toml cannot say: the wheel carries the repository's
mappings/default.yaml as package data (disguiselib/data/default.yaml), so that an
installed disguise finds its shipped defaults (shipped.DEFAULTS_FILE) while the
repository keeps them where users and the docs look. One file, copied at build time;
an editable install reads the checkout's file and needs no copy."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DEFAULTS = Path("mappings") / "default.yaml"


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


setup(cmdclass={"build_py": BuildPy})
