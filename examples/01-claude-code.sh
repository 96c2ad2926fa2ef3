#!/usr/bin/env bash
# Walkthrough 1: Claude Code through the addon in reverse-proxy mode.
#
# Claude Code talks to whatever ANTHROPIC_BASE_URL names. Point it at mitmdump running
# the addon in reverse mode, and mitmdump forwards to the provider:
#
#   mitmdump --mode reverse:https://api.anthropic.com -s addon/disguise.py
#   ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude
#
# Here the provider is examples/echo_provider.py, which repeats your prompt back and
# prints what it received — what Anthropic would have seen. With Claude Code installed
# (`npm install -g @anthropic-ai/claude-code`) and USE_CLAUDE=1 this runs `claude -p`;
# otherwise the official anthropic SDK stands in for it (it reads the same variables).
source "$(dirname "$0")/lib.sh"

start_provider
start_mitmdump --mode "reverse:http://127.0.0.1:$PROVIDER_PORT"

export ANTHROPIC_BASE_URL=http://127.0.0.1:$PROXY_PORT
export ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY:-sk-ant-walkthrough-not-a-real-key}
PROMPT="Acme Corp asks: mail jane.doe@example.com about Project Bluebird."

show "the client asks: $PROMPT"
if [ "${USE_CLAUDE:-0}" = 1 ] && command -v claude >/dev/null; then
  claude -p "$PROMPT"
else
  "$PYTHON" examples/clients/ask_anthropic.py "$PROMPT"
fi

show "what the provider received (masked):"
cat "$WORK/provider.log" | grep "provider received"
show "mitmdump's line for the flow (counts only, never an original):"
grep "disguise: anthropic.messages" "$WORK/mitmdump.log"
