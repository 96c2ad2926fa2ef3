"""`python -m disguiselib`: the command line (cli.py). A Python without the
dependencies gets one line naming the module it lacks, not a traceback."""

import sys

try:
    from .cli import main
except ModuleNotFoundError as e:
    sys.exit(
        f"disguise: {e} (a dependency of disguise): this Python ({sys.executable}) does not have it; "
        "use the Python of the virtual environment disguise is installed in, or `pip install .` into this one"
    )

sys.exit(main())
