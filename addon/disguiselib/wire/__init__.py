"""Bytes on the wire (sans I/O): SSE and JSON-array framing, AWS event-stream frames,
Content-Encoding, the raw JSON span scanner and its text helpers. No rules, no API."""
