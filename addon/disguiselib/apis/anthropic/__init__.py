"""Anthropic's Messages API: field tables, stream, spec, provider."""
