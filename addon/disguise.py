"""mitmproxy entry point from a checkout: `mitmdump -s addon/disguise.py`.

Builds the addon and nothing else; the code lives in the `disguiselib` package next to
this file (imported by path, since mitmproxy loads scripts without a package). An
installed package has its own copy of this entry point: `mitmdump -s "$(disguise script)"`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from disguiselib.launch import addons as _addons  # noqa: E402

addons = _addons()  # the Disguise addon and its Inspector (capture option, commands, contentviews)
