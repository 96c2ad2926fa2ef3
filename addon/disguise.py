"""mitmproxy entry point: `mitmdump -s addon/disguise.py`.

Builds the addon and nothing else; the code lives in the `disguiselib` package next to
this file (imported by path, since mitmproxy loads scripts without a package)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from disguiselib.mitm.addon import Disguise  # noqa: E402
from disguiselib.mitm.listen import ListenQueue  # noqa: E402

_disguise = Disguise()
# the Inspector: capture option, commands, contentviews; ListenQueue: mitmproxy's
# listeners hold a burst of connections (mitm/listen.py)
addons = [_disguise, _disguise.inspect, ListenQueue()]
