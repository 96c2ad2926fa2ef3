#!/usr/bin/env bash
# Walkthrough 5: capture a session, re-run it offline, audit it, share it, replay it.
#
#   mitmdump --mode reverse:https://api.anthropic.com -s addon/disguise.py -w session.flows
#   mitmdump -nr session.flows -s addon/disguise.py              # re-run offline: equals the live run?
#   disguise audit session.flows                                 # exit 1 on any leak (CI gate)
#   disguise share session.flows shared.flows                    # provider side only, no credentials
#   mitmdump --mode reverse:https://api.anthropic.com -s addon/disguise.py \
#       --server-replay shared.flows                             # answer from the recording
#
# session.flows holds originals (the client side) and your API key: keep it private.
# shared.flows holds what the provider saw and sent, nothing else.
source "$(dirname "$0")/lib.sh"
export ANTHROPIC_BASE_URL=http://127.0.0.1:$PROXY_PORT
export ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY:-sk-ant-walkthrough-not-a-real-key}
PROMPT="Acme Corp asks: mail jane.doe@example.com about Project Bluebird."

show "1. capture: mitmdump -w session.flows"
start_provider
start_mitmdump --mode "reverse:http://127.0.0.1:$PROVIDER_PORT" -w "$WORK/session.flows"
"$PYTHON" examples/clients/ask_anthropic.py "$PROMPT" | tee "$WORK/live.txt"
stop "$MITM_PID"

show "2. re-run offline: mitmdump -nr session.flows -s addon/disguise.py"
"$MITMDUMP" -nr "$WORK/session.flows" --set confdir="$WORK/conf" -s addon/disguise.py \
  --set disguise_mappings="$MAPPINGS" 2>&1 | grep "disguise: anthropic"

show "3. audit: disguise audit session.flows --mappings examples/literals.yaml"
"$DISGUISE" audit "$WORK/session.flows" --mappings "$MAPPINGS"

show "4. share: disguise share session.flows shared.flows"
"$DISGUISE" share "$WORK/session.flows" "$WORK/shared.flows" --mappings "$MAPPINGS"
"$DISGUISE" audit "$WORK/shared.flows" --mappings "$MAPPINGS"

show "5. server replay from the shared copy, the provider stopped"
stop "$PROVIDER_PID"
# The recording matches on the masked request (method, path, body, host, port; see the README).
start_mitmdump --mode "reverse:http://127.0.0.1:$PROVIDER_PORT" --server-replay "$WORK/shared.flows" \
  --set server_replay_reuse=true --set server_replay_extra=kill --set connection_strategy=lazy \
  --set keepserving=true
"$PYTHON" examples/clients/ask_anthropic.py "$PROMPT" | tee "$WORK/replayed.txt"
cmp "$WORK/live.txt" "$WORK/replayed.txt" && echo "the replayed answer equals the live one"
