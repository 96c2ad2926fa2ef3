#!/usr/bin/env bash
# Walkthrough 2: the OpenAI SDK through the addon in reverse-proxy mode.
#
#   mitmdump --mode reverse:https://api.openai.com -s addon/disguise.py
#   openai.OpenAI(base_url="http://127.0.0.1:8080/v1")
#
# OpenAI-compatible providers (OpenRouter, vLLM, DeepSeek, Azure) work the same way:
# reverse to their URL and keep the path prefix in base_url.
source "$(dirname "$0")/lib.sh"

start_provider
start_mitmdump --mode "reverse:http://127.0.0.1:$PROVIDER_PORT"

export OPENAI_BASE_URL=http://127.0.0.1:$PROXY_PORT/v1
export OPENAI_API_KEY=${OPENAI_API_KEY:-sk-walkthrough-not-a-real-key}
PROMPT="Summarise the Project Bluebird notes for Acme Corp; ping build01.acme-corp.internal."

show "the client asks: $PROMPT"
"$PYTHON" examples/clients/ask_openai.py "$PROMPT"

show "what the provider received (masked):"
grep "provider received" "$WORK/provider.log"
show "mitmdump's line for the flow:"
grep "disguise: openai.chat" "$WORK/mitmdump.log"
