"""The mitmproxy adapter: the Disguise addon, the Guard, the stream callables, the
options and the per-flow state. The only place (with inspect/) that imports mitmproxy."""
