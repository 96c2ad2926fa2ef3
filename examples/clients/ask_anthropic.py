"""Ask through the proxy with the official anthropic SDK, streaming, as Claude Code does.

The SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment, exactly
like Claude Code: `ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude` uses the same path.
"""

import sys

import anthropic

client = anthropic.Anthropic(max_retries=0)
with client.messages.stream(
    model="claude-sonnet-4-5", max_tokens=300, messages=[{"role": "user", "content": sys.argv[1]}]
) as stream:
    for text in stream.text_stream:
        print(text, end="", flush=True)
print()
