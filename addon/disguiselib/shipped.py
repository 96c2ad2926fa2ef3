"""Where the files disguise ships with are, installed or in a checkout (no imports of
its own: every floor may read it).

- `DEFAULTS_FILE`: the shipped default mappings. The repository keeps them as
  `mappings/default.yaml`, where users and the docs look for them; a built wheel carries
  that same file as package data (`disguiselib/data/default.yaml`, copied by setup.py
  at build time: one file, never a second copy in the repository). Running from a
  checkout (`mitmdump -s addon/disguise.py`, an editable install) reads the
  repository's file; an installed wheel reads its own.
- `USER_MAPPINGS`: what the `disguise_mappings` option names when it is not set: the
  repository's `mappings/` folder in a checkout (its git-ignored `local*.yaml` files).
  An installed package has no repository: there it is a `mappings/` folder in the
  working directory when that folder holds YAML files of the user's (a checkout after a
  non-editable `pip install .`, where the README says `mappings/local.yaml` is loaded):
  loaded, not ignored, because a user who believes their names are covered must not
  see them go out unmasked (fail closed); the startup line names the folder
  (config.log_loaded). A copy of the shipped defaults alone is no user file.
- `SCRIPT`: the addon script for `mitmdump -s` that works wherever the package is
  importable (`disguise script` prints it).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
_ROOT = PACKAGE.parents[1]
# A checkout: the package sits in addon/ with the repository's mappings/ beside it.
CHECKOUT: Path | None = (
    _ROOT if PACKAGE.parent.name == "addon" and (_ROOT / "mappings" / "default.yaml").is_file() else None
)
DEFAULTS_FILE = CHECKOUT / "mappings" / "default.yaml" if CHECKOUT is not None else PACKAGE / "data" / "default.yaml"
WORKING_DIR_MAPPINGS = "mappings"  # the folder an installed package looks for in the working directory


def working_dir_mappings() -> tuple[str, ...]:
    """(the working directory's mappings/ folder,) when it holds a *.yaml / *.yml file
    that is not a copy of the shipped defaults; () otherwise."""
    d = Path.cwd() / WORKING_DIR_MAPPINGS
    try:
        files = [f for f in d.iterdir() if f.is_file() and f.suffix in (".yaml", ".yml") and not f.name.startswith(".")]
        shipped = DEFAULTS_FILE.read_bytes() if DEFAULTS_FILE.is_file() else None
        user = [f for f in files if f.name != DEFAULTS_FILE.name or f.read_bytes() != shipped]
    except OSError:
        return ()
    return (str(d),) if user else ()


USER_MAPPINGS: tuple[str, ...] = (str(CHECKOUT / "mappings"),) if CHECKOUT is not None else working_dir_mappings()
SCRIPT = PACKAGE / "script" / "disguise.py"
