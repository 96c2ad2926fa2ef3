"""mitmproxy entry point of the package, wherever it is installed:

    mitmdump -s "$(disguise script)"

Builds the addon and nothing else (`disguise run` loads this file too). mitmproxy
loads a script by its path, with only the script's own folder added to sys.path: the
package is imported as installed, or from the checkout this file sits in."""

import sys
from pathlib import Path

try:
    from disguiselib.launch import addons as _addons
except ImportError:  # a checkout that is not installed: addon/ holds the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from disguiselib.launch import addons as _addons

addons = _addons()
