"""Where the files disguise ships with are, installed or in a checkout (no imports of
its own: every floor may read it).

- `DEFAULTS_FILE`: the shipped default mappings. The repository keeps them as
  `mappings/default.yaml`, where users and the docs look for them; a built wheel carries
  that same file as package data (`disguiselib/data/default.yaml`, copied by setup.py
  at build time: one file, never a second copy in the repository). Running from a
  checkout (`mitmdump -s addon/disguise.py`, an editable install) reads the
  repository's file; an installed wheel reads its own.
- `USER_MAPPINGS`: what the `disguise_mappings` option names when it is not set: the
  repository's `mappings/` folder in a checkout (its git-ignored `local*.yaml` files);
  nothing for an installed package, which has no repository.
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
USER_MAPPINGS: tuple[str, ...] = (str(CHECKOUT / "mappings"),) if CHECKOUT is not None else ()
SCRIPT = PACKAGE / "script" / "disguise.py"
