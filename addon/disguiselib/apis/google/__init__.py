"""Google's Gemini API (and Vertex): field tables, the SSE and JSON-array streams, Live."""
