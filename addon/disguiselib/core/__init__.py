"""The sans-IO engine: rules and mappings, the JSON span scanner, SSE and JSON-array
framing, hold-back windows, decompression. No mitmproxy import; bytes in, bytes out."""
