"""`mutmut run` as run.py starts it: mutmut's own CLI, with the lines its coverage run
found executed written to `covered.json` (mutmut keeps them in memory only), so that
run.py can count and list the mutants of the lines no selected test executes: mutmut
does not create those (`mutate_only_covered_lines`), and run.py counts them as
survivors."""

from __future__ import annotations

import json
import sys

import mutmut.__main__ as cli
from mutmut.state import state

_store = cli.store_lines_covered_by_tests


def _store_and_save() -> None:
    _store()
    covered = state()._covered_lines or {}
    with open("covered.json", "w", encoding="utf-8") as f:
        json.dump({path: sorted(lines) for path, lines in covered.items()}, f)


cli.store_lines_covered_by_tests = _store_and_save

if __name__ == "__main__":
    sys.argv = ["mutmut", *sys.argv[1:]]
    cli.cli()
